#!/bin/bash
# Three threads with a known split (tests/programs/threads.c): the shares of
# spin_a/spin_b/spin_main and of the threads, the thread names, one .csprof
# file per thread, and the end-of-run summary line.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/threads.data
check "narwhal-record runs threads and exits 0"
nw_record_ok "$d" "$P/threads"
nw_check_measurement "$d"
ok "measurement is complete and every .csprof file parses"

check "the summary line counts 3 threads in 1 process and names the directory"
summary=$(grep -E '^narwhal-record: [0-9]+ samples? from' "$d.err" | tail -n 1)
re='^narwhal-record: ([0-9]+) samples? from 3 threads in 1 process \(([0-9]+) lost\) written to (.*)$'
if [[ ! $summary =~ $re ]]; then
	nw_show "narwhal-record stderr" "$d.err"
	fail "no summary line like 'narwhal-record: N samples from 3 threads in 1 process (0 lost) written to DIR'"
fi
total=${BASH_REMATCH[1]}
[[ ${BASH_REMATCH[3]} == *threads.data* ]] || fail "summary names '${BASH_REMATCH[3]}', not $d"
# 1.0 s of CPU at 999 Hz: about 1000 samples.
((total >= 500 && total <= 1500)) || fail "summary says $total samples, expected about 1000"
ok "$summary"

check "the summary's stack health line: frame-pointer chains reach start_thread / main"
health=$(grep -E '^narwhal-record: stacks: ' "$d.err" || true)
hre='^narwhal-record: stacks: ([0-9.]+)% complete'
[[ $health =~ $hre ]] || { nw_show "narwhal-record stderr" "$d.err"; fail "no 'stacks: N% complete' line"; }
awk -v c="${BASH_REMATCH[1]}" 'BEGIN { exit !(c >= 99) }' || fail "only ${BASH_REMATCH[1]}% complete: $health"
ok "$health"

check "--flat shares: spin_a 60%, spin_b 20%, spin_main 20% (within 5 points)"
nw_report "$NW_TMP/flat" "$d" --flat
for spec in spin_a:60 spin_b:20 spin_main:20; do
	fn=${spec%%:*}
	want=${spec#*:}
	got=$(nw_flat_cumul "$NW_TMP/flat" "$fn")
	if ! nw_near "$got" "$want" 5; then
		nw_show "narwhal-report --flat" "$NW_TMP/flat"
		fail "$fn holds $got%, expected $want% +- 5"
	fi
	ok "$fn $got%"
done
grep -Eq 'spin_a \(.*threads\.c:[0-9]+\)' "$NW_TMP/flat" ||
	fail "--flat does not show spin_a's source location (threads.c:LINE)"
ok "spin_a's row names threads.c:LINE"

check "--threads: worker-a 60%, worker-b 20%, threads (main) 20%; samples add up"
nw_report "$NW_TMP/threads" "$d" --threads
nw_threads_rows "$NW_TMP/threads" >"$NW_TMP/rows"
[[ $(wc -l <"$NW_TMP/rows") -eq 3 ]] || {
	nw_show "narwhal-report --threads" "$NW_TMP/threads"
	fail "expected 3 thread rows"
}
sum=0
seen=()
while read -r pid tid samples share name <&3; do
	case $name in
	worker-a) want=60 ;;
	worker-b) want=20 ;;
	threads) want=20 ;;
	*)
		nw_show "narwhal-report --threads" "$NW_TMP/threads"
		fail "unexpected thread name '$name'"
		;;
	esac
	nw_near "$share" "$want" 5 || fail "thread $name has $share%, expected $want% +- 5"
	ok "$name (tid $tid) $samples samples, $share%"
	sum=$((sum + samples))
	seen+=("$name")

	check "thread $tid has its own .csprof file whose samples match"
	files=("$d"/*-"$pid"-"$tid".csprof)
	[[ -f ${files[0]} && ${#files[@]} -eq 1 ]] || fail "no single *-$pid-$tid.csprof file in $d"
	read -r _ _ _ _ fsamples < <(nw_csprof summary "${files[0]}")
	[[ $fsamples -eq $samples ]] ||
		fail "${files[0]##*/} holds $fsamples samples, --threads says $samples"
	ok "${files[0]##*/}: $fsamples samples"
done 3<"$NW_TMP/rows"
[[ " ${seen[*]} " == *" worker-a "* && " ${seen[*]} " == *" worker-b "* ]] ||
	fail "thread names worker-a and worker-b not both shown"
[[ $sum -eq $total ]] || fail "--threads samples add up to $sum, the summary said $total"
ok "thread samples add up to $total"

nfiles=$(find "$d" -name '*.csprof' | wc -l)
[[ $nfiles -eq 3 ]] || fail "$nfiles .csprof files, expected 3 (one per thread)"
ok "3 .csprof files"

check "--threads reads the manifest alone: the same table without the tree files"
cp -r "$d" "$NW_TMP/manifest-only.data"
rm "$NW_TMP/manifest-only.data"/*.csprof "$NW_TMP/manifest-only.data"/*.trace
nw_report "$NW_TMP/threads2" "$NW_TMP/manifest-only.data" --threads
cmp -s "$NW_TMP/threads" "$NW_TMP/threads2" || {
	nw_show "with the tree files" "$NW_TMP/threads"
	nw_show "without" "$NW_TMP/threads2"
	fail "--threads differs without the tree files"
}
# A view that needs the trees still says which file is missing.
rc=0
"$NW_REPORT" "$NW_TMP/manifest-only.data" --flat >/dev/null 2>"$NW_TMP/flat.err" || rc=$?
((rc != 0)) && grep -q '\.csprof' "$NW_TMP/flat.err" || {
	nw_show "--flat stderr" "$NW_TMP/flat.err"
	fail "--flat without the tree files: exit $rc"
}
ok "identical; --flat names the missing file"

pass
