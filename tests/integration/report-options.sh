#!/bin/bash
# narwhal-report's selections and output: --tid N and --comm NAME keep one
# thread's samples only, -o FILE writes the report to FILE, and with no DIR
# it reads ./narwhal.data.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/opts.data
nw_record_ok "$d" "$P/threads"
nw_report "$NW_TMP/threads" "$d" --threads
nw_threads_rows "$NW_TMP/threads" >"$NW_TMP/rows"
tid_b=$(awk '$5 == "worker-b" { print $2 }' "$NW_TMP/rows")
[[ $tid_b =~ ^[0-9]+$ ]] || fail "no worker-b row in --threads"

check "--tid $tid_b (worker-b) keeps spin_b only"
nw_report "$NW_TMP/flat-tid" "$d" --flat --tid "$tid_b"
b=$(nw_flat_cumul "$NW_TMP/flat-tid" spin_b)
nw_near "$b" 100 5 || fail "spin_b has $b% under --tid $tid_b, expected about 100%"
for fn in spin_a spin_main; do
	! nw_flat_has "$NW_TMP/flat-tid" "$fn" || fail "$fn shown under --tid $tid_b"
done
ok "spin_b $b%, spin_a and spin_main absent"

check "--threads --tid $tid_b shows that thread alone"
nw_report "$NW_TMP/threads-tid" "$d" --threads --tid "$tid_b"
rows=$(nw_threads_rows "$NW_TMP/threads-tid")
[[ $(wc -l <<<"$rows") -eq 1 && $(awk '{ print $2 }' <<<"$rows") == "$tid_b" ]] || {
	nw_show "narwhal-report --threads --tid $tid_b" "$NW_TMP/threads-tid"
	fail "expected only thread $tid_b"
}
ok "$rows"

check "--comm worker-a keeps spin_a only"
nw_report "$NW_TMP/flat-comm" "$d" --flat --comm worker-a
a=$(nw_flat_cumul "$NW_TMP/flat-comm" spin_a)
nw_near "$a" 100 5 || fail "spin_a has $a% under --comm worker-a, expected about 100%"
for fn in spin_b spin_main; do
	! nw_flat_has "$NW_TMP/flat-comm" "$fn" || fail "$fn shown under --comm worker-a"
done
ok "spin_a $a%"

check "--tid of a thread that does not exist: an error, or an empty report"
rc=0
"$NW_REPORT" "$d" --flat --tid 999999999 >"$NW_TMP/none" 2>"$NW_TMP/none.err" || rc=$?
if [[ $rc -eq 0 ]]; then
	! nw_flat_has "$NW_TMP/none" spin_a || fail "--tid 999999999 still shows spin_a"
elif ((rc >= 126)); then
	fail "narwhal-report exited $rc (crash?) for an unknown --tid"
fi
ok "exit $rc"

check "--flat -o FILE writes the report to FILE"
nw_report "$NW_TMP/flat-all" "$d" --flat
nw_report "$NW_TMP/stdout" "$d" --flat -o "$NW_TMP/report.txt"
cmp -s "$NW_TMP/flat-all" "$NW_TMP/report.txt" || fail "-o FILE differs from stdout"
[[ ! -s $NW_TMP/stdout ]] || fail "-o FILE still printed the report on stdout"
ok "same as stdout"

check "without DIR, narwhal-report reads ./narwhal.data"
mv "$d" "$NW_TMP/narwhal.data"
(cd "$NW_TMP" && "$NW_REPORT" --flat) >"$NW_TMP/flat-default" 2>"$NW_TMP/flat-default.err" ||
	fail "narwhal-report --flat in a directory holding narwhal.data failed: $(cat "$NW_TMP/flat-default.err")"
cmp -s "$NW_TMP/flat-all" "$NW_TMP/flat-default" || fail "the report of ./narwhal.data differs"
ok "same report"

check "a directory that does not exist: an error exit with a message naming it"
rc=0
"$NW_REPORT" "$NW_TMP/nothing-here" --flat >/dev/null 2>"$NW_TMP/missing.err" || rc=$?
((rc != 0 && rc < 126)) || fail "exit $rc, expected an error status (1..125)"
grep -qF nothing-here "$NW_TMP/missing.err" || fail "the message does not name the directory"
ok "$(head -n 1 "$NW_TMP/missing.err")"

check "a full disk: the view and the exports exit 1 saying so"
d=$NW_TMP/narwhal.data
for args in "--folded" "--folded -o /dev/full" "--flamegraph /dev/full" "--speedscope /dev/full" \
	"--pprof /dev/full"; do
	rc=0
	# shellcheck disable=SC2086 # the options are words
	"$NW_REPORT" $args "$d" >/dev/full 2>"$NW_TMP/full.err" || rc=$?
	((rc == 1)) || fail "narwhal-report $args to /dev/full: exit $rc, expected 1"
	grep -qF "No space left on device" "$NW_TMP/full.err" ||
		fail "narwhal-report $args to /dev/full said: $(cat "$NW_TMP/full.err")"
done
ok "$(head -n 1 "$NW_TMP/full.err")"

pass
