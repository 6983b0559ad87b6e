#!/bin/bash
# --folded --per-thread: the thread as the root frame, "name-tid", as perf
# script | stackcollapse-perf.pl --tid names it; each thread's lines add up
# to its samples in --threads, and without the root frame the lines are
# those of --folded --tid for that thread.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/pt.data
nw_record_ok "$d" "$P/threads"
nw_report "$NW_TMP/pt" "$d" --folded --per-thread
nw_report "$NW_TMP/threads" "$d" --threads

check "every line is 'name-tid;frame;... COUNT'"
grep -Evn '^[^ ;]+-[0-9]+(;[^ ;]+)+ [0-9]+$' "$NW_TMP/pt" >"$NW_TMP/bad" && {
	nw_show "malformed lines" "$NW_TMP/bad"
	fail "--folded --per-thread printed malformed lines"
}
ok "$(wc -l <"$NW_TMP/pt") lines"

check "per thread: the root frame's lines add up to --threads, and are --folded --tid's"
nw_threads_rows "$NW_TMP/threads" | while read -r _ tid samples _ name; do
	root="$name-$tid"
	n=$(awk -v r="$root" 'index($0, r ";") == 1 { s += $NF } END { print s + 0 }' "$NW_TMP/pt")
	[[ $n -eq $samples ]] || fail "lines under $root add up to $n, --threads says $samples"
	nw_report "$NW_TMP/tid" "$d" --folded --tid "$tid"
	awk -v r="$root" 'index($0, r ";") == 1 { print substr($0, length(r) + 2) }' "$NW_TMP/pt" \
		>"$NW_TMP/pt.tid"
	diff -q "$NW_TMP/tid" "$NW_TMP/pt.tid" >/dev/null ||
		fail "$root: lines differ from --folded --tid $tid"
	echo "  ok: $root: $n samples"
done
grep -Eq '^worker-a-[0-9]+;(clone3;)?start_thread;worker_a;spin_a [0-9]+$' "$NW_TMP/pt" ||
	fail "no line worker-a-TID;start_thread;worker_a;spin_a"

check "--per-thread with --comm keeps that thread only"
nw_report "$NW_TMP/b" "$d" --folded --per-thread --comm worker-b
[[ $(cut -d';' -f1 "$NW_TMP/b" | sort -u | sed 's/-[0-9]*$//') == worker-b ]] ||
	fail "--comm worker-b: roots $(cut -d';' -f1 "$NW_TMP/b" | sort -u | tr '\n' ' ')"
ok "worker-b only"

pass
