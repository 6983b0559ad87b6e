#!/bin/bash
# 64 threads that start and end at different times: each has its own tree
# (its own .csprof file and row in --threads, under its own name), and at
# 999 Hz with the default rings nothing is lost on 2 cores -- or the loss
# is counted and reported.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

for mode in fp dwarf; do
	d=$NW_TMP/many-$mode.data
	check "narwhal-record --call-graph $mode runs 64 threads"
	NW_RECORD_OPTS=(--call-graph "$mode")
	nw_record_ok "$d" "$P/many" 64
	nw_check_measurement "$d"
	ok "exit 0"

	# Each worker's samples belong to thread_work: to its loop (SELF) or
	# to what it calls (the clock reads of NW_SPIN, and as root the
	# kernel below them and below the loop: timer interrupts, softirqs,
	# about 3% of the samples, up to 10% under ASan).  Of about 40
	# samples, one or two more fall in the thread's start and exit
	# (outside thread_work).  So thread_work's CUMUL% must be 90% or
	# more, and its SELF% 75% or more: samples misattributed out of
	# thread_work fail the first check, into its callees the second.
	check "$mode: 64 worker threads, each with its own file and about 40 samples in thread_work"
	nw_report "$NW_TMP/threads-$mode" "$d" --threads
	n=$(grep -cE ' w-[0-9]+ ' "$NW_TMP/threads-$mode" || true)
	((n == 64)) || { nw_show "--threads" "$NW_TMP/threads-$mode"; fail "$n worker rows, expected 64"; }
	files=$(find "$d" -name 'w-*.csprof' | wc -l)
	((files == 64)) || fail "$files worker .csprof files, expected 64"
	for i in 0 31 63; do
		s=$(awk -v n="w-$i" '$3 == n { print $4 }' "$NW_TMP/threads-$mode")
		# cpu-clock's timer starts again at each switch-in: a thread
		# preempted often (a loaded machine) gets fewer samples than its
		# 40 ms, never more.  The point is that its samples are its own.
		((s >= 10 && s <= 70)) || fail "w-$i has $s samples, expected about 40"
		nw_report "$NW_TMP/w$i" "$d" --comm "w-$i" --flat
		self=$(nw_flat_self "$NW_TMP/w$i" thread_work)
		cumul=$(nw_flat_cumul "$NW_TMP/w$i" thread_work)
		awk -v s="$self" -v c="$cumul" 'BEGIN { exit !(c >= 90 && s >= 75) }' || {
			nw_show "--flat --comm w-$i" "$NW_TMP/w$i"
			fail "w-$i: thread_work holds $cumul% with its callees, $self% itself"
		}
	done
	ok "64 rows and files; w-0, w-31, w-63: thread_work 90% or more with its callees"

	check "$mode: nothing lost, or the loss counted in the manifest and reported"
	lost=$(sed -nE 's/.*"lost": ?([0-9]+).*/\1/p' "$d/manifest.json" | head -n 1)
	[[ -n $lost ]] || fail "the manifest has no lost count"
	if ((lost > 0)); then
		grep -q "($lost lost" "$d.err" || fail "$lost lost but the summary does not say so"
		grep -q 'raise the ring size with -m' "$d.err" || fail "no -m advice for the loss"
		ok "$lost lost, reported with the -m advice"
	else
		ok "0 lost"
	fi
done

check "rings too small (-m 4 with 4 KiB stack copies at 4999 Hz): the loss is counted and the summary says what to do"
d=$NW_TMP/small.data
NW_RECORD_OPTS=(-m 4 --call-graph dwarf,4096 -F 4999)
nw_record_ok "$d" "$P/many" 16
lost=$(sed -nE 's/.*"lost": ?([0-9]+).*/\1/p' "$d/manifest.json" | head -n 1)
((lost > 0)) || { nw_show "stderr" "$d.err"; fail "nothing lost with 4-page rings"; }
grep -q "($lost lost" "$d.err" || fail "the summary does not count the $lost lost"
grep -q 'raise the ring size with -m (now 4 pages)' "$d.err" || fail "no -m advice"
ok "$lost lost; $(grep -m1 'raise the ring' "$d.err" | cut -c1-80)..."
pass
