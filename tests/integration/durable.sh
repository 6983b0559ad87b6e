#!/bin/bash
# A recorder that never loses a measurement (issue 13): narwhal-record
# killed with SIGKILL leaves its last checkpoint, complete and readable,
# which says it is one, and the next run removes the sections' staging
# directory it left; the first checkpoint comes within a second; SIGUSR2
# and --snapshot write snapshots with growing sample counts; the flight
# recorder keeps only the last seconds (phase B of tests/programs/phases);
# --rotate writes one measurement per interval whose samples add up to the
# run's, bounded by --max-files, with a pprof profile per interval; a full
# file system (a small tmpfs) is named as such, keeps the last checkpoint
# readable, and a program that succeeded gives exit status 74.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_go_env

# wait_for FILE SECONDS : until FILE exists (a checkpoint's manifest).
wait_for() {
	local i

	for ((i = 0; i < $2 * 20; i++)); do
		[[ -e $1 ]] && return 0
		sleep 0.05
	done
	return 1
}

# manifest_get DIR KEY : a top-level key of DIR/manifest.json.
manifest_get() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1] + "/manifest.json"))[sys.argv[2]])' "$1" "$2"
}

# Programs started here in the background, killed whatever happens.
pids=()
cleanup_all() {
	local rc=$1

	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	pkill -9 -f "$P/longrun" 2>/dev/null || true
	pkill -9 -f "$P/attachee" 2>/dev/null || true
	if [[ -n ${mnt:-} ]] && mountpoint -q "$mnt"; then
		umount "$mnt" || true
	fi
	nw_cleanup "$rc"
}
trap 'cleanup_all $?' EXIT

check "SIGKILL after about 2.5 s: the last checkpoint is complete, readable, and says it is one"
d=$NW_TMP/killed.data
"$NW_RECORD" -v -e cpu-clock -o "$d" --checkpoint 1 "$P/attachee" "$P/libplug.so" 20 \
	>/dev/null 2>"$NW_TMP/killed.err" &
rec=$!
pids+=("$rec")
sleep 2.5
kill -9 "$rec"
wait "$rec" 2>/dev/null || true
pkill -9 -f "$P/attachee" 2>/dev/null || true
nw_check_measurement "$d"
[[ $(manifest_get "$d" written) == checkpoint ]] || fail "the manifest does not say checkpoint"
[[ $(manifest_get "$d" exit_status) == -1 ]] || fail "a killed run's exit status is not unknown (-1)"
n=$(manifest_get "$d" samples)
((n >= 500)) || fail "only $n samples in the checkpoint of a 2.5 s run"
nw_report "$NW_TMP/killed.flat" "$d" --flat
grep -q '^Status: checkpoint after [0-9.]* s; the recording had not finished (exit status unknown)$' \
	"$NW_TMP/killed.flat" || {
	nw_show "--flat" "$NW_TMP/killed.flat"
	fail "the report does not say it shows a checkpoint"
}
nw_report "$NW_TMP/killed.threads" "$d" --threads
for name in early late; do
	grep -q " $name " "$NW_TMP/killed.threads" || fail "thread $name is missing from the checkpoint"
done
ok "$n samples, threads named, exit status unknown"

check "checkpoints after the first append to a journal; the trees read back hold every sample"
# The second checkpoint (about 2 s in) adds a segment with what changed:
# nodes added, metrics changed, a new epoch's trees (libplug.so) whole.
grep -q '^narwhal-record: checkpoint written in .* as a journal segment of [0-9]* bytes$' \
	"$NW_TMP/killed.err" || {
	nw_show "narwhal-record -v" "$NW_TMP/killed.err"
	fail "no checkpoint was written as a journal segment"
}
# What the views count in the trees (the pack's, extended by any segments)
# is what the manifest counted while recording.
t=$(nw_threads_rows "$NW_TMP/killed.threads" | awk '{ s += $3 } END { print s }')
((t == n)) || {
	nw_show "--threads" "$NW_TMP/killed.threads"
	fail "the trees hold $t samples, the manifest says $n"
}
ok "$(grep -c 'as a journal segment' "$NW_TMP/killed.err") segment(s); $t samples in the trees"

check "SIGKILL leaves the sections' staging directory beside DIR; the next run removes it"
# (the stage is made for every launched program; nothing ran to remove it)
compgen -G "$d.sections-*" >/dev/null || fail "no $d.sections-* after the SIGKILL: nothing to test"
stale=$(compgen -G "$d.sections-*")
nw_record_ok "$d" "$P/burn" alpha
left=$(compgen -G "$d.sections-*" || true)
[[ -z $left ]] || fail "left behind after the next run: $left"
nw_check_measurement "$d"
# The killed run's checkpoint moved aside, complete and readable.
nw_check_measurement "$d.old"
[[ $(manifest_get "$d.old" written) == checkpoint ]] || fail "$d.old is not the killed run's checkpoint"
nw_report "$NW_TMP/killed-old.threads" "$d.old" --threads
grep -q " early " "$NW_TMP/killed-old.threads" || fail "$d.old lost its threads"
ok "${stale##*/} removed; the checkpoint reads as ${d##*/}.old"

check "the first checkpoint (default interval 10 s) comes within the first seconds"
d=$NW_TMP/first.data
"$NW_RECORD" -e cpu-clock -o "$d" "$P/longrun" 2>"$NW_TMP/first.err" &
rec=$!
pids+=("$rec")
wait_for "$d/manifest.json" 3 || fail "no measurement 3 s into a run with the default checkpoints"
kill -9 "$rec"
wait "$rec" 2>/dev/null || true
pkill -9 -f "$P/longrun" 2>/dev/null || true
nw_check_measurement "$d"
ok "$(manifest_get "$d" samples) samples after the first checkpoint"

check "SIGUSR2, then narwhal-record --snapshot PID: two snapshots, the second with more samples"
d=$NW_TMP/snap.data
"$NW_RECORD" -e cpu-clock -o "$d" --checkpoint 0 "$P/longrun" 2>"$NW_TMP/snap.err" &
rec=$!
pids+=("$rec")
sleep 1
kill -USR2 "$rec"
wait_for "$d/manifest.json" 5 || fail "no snapshot after SIGUSR2"
[[ $(manifest_get "$d" written) == snapshot ]] || fail "the manifest does not say snapshot"
n1=$(manifest_get "$d" samples)
sleep 1
"$NW_RECORD" --snapshot "$rec" 2>"$NW_TMP/ask.err" || {
	nw_show "narwhal-record --snapshot" "$NW_TMP/ask.err"
	fail "--snapshot $rec failed"
}
for ((i = 0; i < 100; i++)); do
	n2=$(manifest_get "$d" samples)
	((n2 > n1)) && break
	sleep 0.05
done
((n2 > n1)) || fail "the second snapshot has $n2 samples, the first $n1"
rc=0
"$NW_RECORD" --snapshot $$ 2>"$NW_TMP/notrec.err" || rc=$?
[[ $rc -ne 0 ]] && grep -q 'not a narwhal-record' "$NW_TMP/notrec.err" ||
	fail "--snapshot of a shell: exit $rc, $(cat "$NW_TMP/notrec.err")"
kill -INT "$rec"
wait "$rec" || true
grep -q '^narwhal-record: while recording: 0 checkpoints, 2 snapshots$' "$NW_TMP/snap.err" || {
	nw_show "stderr" "$NW_TMP/snap.err"
	fail "the summary does not count 2 snapshots"
}
[[ $(manifest_get "$d" written) == end ]] || fail "the final measurement does not say end"
ok "$n1 then $n2 samples; the summary counts 2 snapshots"

check "--flight-recorder 0.4: only phase B is kept (phase_a under 2%)"
d=$NW_TMP/flight.data
nw_record_ok "$d" --flight-recorder 0.4 "$P/phases"
nw_check_measurement "$d"
nw_report "$NW_TMP/flight.flat" "$d" --flat
a=$(nw_flat_self "$NW_TMP/flight.flat" phase_a)
b=$(nw_flat_self "$NW_TMP/flight.flat" phase_b)
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a < 2 && b > 20) }' || {
	nw_show "--flat" "$NW_TMP/flight.flat"
	fail "phase_a $a%, phase_b $b%"
}
grep -q '^Window: the last 0.400 s of the run (flight recorder)$' "$NW_TMP/flight.flat" ||
	fail "the report does not say it shows a window"
[[ $(manifest_get "$d" window_ns) == 400000000 ]] || fail "no window_ns in the manifest"
ok "phase_a $a%, phase_b $b%"

check "--rotate 0.5: one measurement per interval, their samples add up; --max-files 3; pprof per interval"
d=$NW_TMP/rot.data
nw_record "$d" --rotate 0.5 --rotate-pprof --max-files 3 --duration 2.7 "$P/longrun"
total=$(awk '/samples in all [0-9]+ intervals/ { print $2 }' "$d.err")
nint=$(awk '/samples in all [0-9]+ intervals/ { print $6 }' "$d.err")
[[ -n $total && $nint -ge 5 ]] || {
	nw_show "stderr" "$d.err"
	fail "no 'N samples in all K intervals' line, or fewer than 5 intervals"
}
kept=$(find "$d" -mindepth 1 -maxdepth 1 -type d -name '[0-9][0-9][0-9][0-9]' | sort)
[[ $(wc -l <<<"$kept") -eq 3 ]] || fail "--max-files 3 kept $(wc -l <<<"$kept") intervals"
[[ $(basename "$(tail -1 <<<"$kept")") == $(printf '%04d' "$nint") ]] ||
	fail "the newest interval is not $(printf '%04d' "$nint")"
# The intervals removed took their samples: add up what each wrote as it went.
sum=0
for m in $kept; do
	nw_check_measurement "$m"
	[[ -f $m.pb.gz ]] || fail "no $m.pb.gz"
	go tool pprof -raw "$m.pb.gz" >"$NW_TMP/$(basename "$m").raw" 2>/dev/null ||
		fail "pprof rejects $m.pb.gz"
	sum=$((sum + $(manifest_get "$m" samples)))
done
for m in $(sed '$d' <<<"$kept"); do
	span=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]+"/manifest.json")); print((m["clock_end_ns"]-m["clock_start_ns"])/1e9)' "$m")
	nw_near "$span" 0.5 0.1 || fail "$m covers $span s, not the 0.5 s interval"
	[[ $(manifest_get "$m" written) == rotation ]] || fail "$m does not say rotation"
	# pprof prints 0.488 s as "488." or "488ms": about the interval.
	grep -Eq '^Duration: (4[0-9][0-9]|5[0-9][0-9])(ms|m|\.)?$' "$NW_TMP/$(basename "$m").raw" ||
		fail "$m.pb.gz: $(grep Duration "$NW_TMP/$(basename "$m").raw")"
done
grep -Eq "^narwhal-record: [0-9]+ samples from 1 thread in 1 process \(0 lost\) written to $d/$(printf '%04d' "$nint")$" "$d.err" ||
	fail "the summary does not name the last interval"
# The intervals' directories (DIR/0*/: the .pb.gz files beside them are pprof's).
nw_report "$NW_TMP/rot.merged" "$d"/0*/ --flat
merged=$(awk '/^Samples: / { print $2; exit }' "$NW_TMP/rot.merged")
((merged == sum)) || fail "narwhal-report DIR/0* merges $merged samples, the intervals hold $sum"
ok "$nint intervals, $total samples; the 3 kept hold $sum, merged by narwhal-report"

check "--rotate without --max-files: the intervals' samples add up to the run's"
d=$NW_TMP/rot2.data
nw_record "$d" --rotate 0.4 --duration 1.5 "$P/longrun"
total=$(awk '/samples in all [0-9]+ intervals/ { print $2 }' "$d.err")
sum=0
for m in "$d"/0*/; do
	sum=$((sum + $(manifest_get "$m" samples)))
done
# Over several intervals (at 999 Hz, about 1500 on an idle machine).
((sum == total && total > 300)) || fail "the intervals hold $sum samples, the run had $total"
ok "$sum = $total"

check "a recording read while checkpoints replace its pack: every read succeeds"
# Checkpoints every 20 ms; the journal is replaced by a whole pack now and
# then, and the files a manifest names may be gone by the time a report
# opens them: it reads the new manifest.  (Before, 13 to 17 of some 230
# reads failed with "No such file or directory".)
d=$NW_TMP/live.data
"$NW_RECORD" -q -e cpu-clock -F 4999 --checkpoint 0.02 -o "$d" "$P/forks" 600 \
	>/dev/null 2>"$d.err" &
rec=$!
for _ in $(seq 100); do
	[[ -f $d/manifest.json ]] && break
	sleep 0.05
done
reads=0 failed=0
while kill -0 "$rec" 2>/dev/null && ((reads < 150)); do
	reads=$((reads + 1))
	"$NW_REPORT" "$d" --flat --time 0,100% >/dev/null 2>"$NW_TMP/live.rep" || {
		failed=$((failed + 1))
		cp "$NW_TMP/live.rep" "$NW_TMP/live.failed"
	}
done
wait "$rec" || fail "narwhal-record exited $?"
((failed == 0 && reads >= 30)) || {
	[[ -f $NW_TMP/live.failed ]] && nw_show "a failed read" "$NW_TMP/live.failed"
	fail "$failed of $reads reads of the live recording failed (30 reads at least expected)"
}
ok "$reads reads while it recorded, none failed"

check "a full file system: ENOSPC named, the last checkpoint still readable"
mnt=$NW_TMP/small
mkdir -p "$mnt"
mount -t tmpfs -o size=768k tmpfs "$mnt" || fail "cannot mount a tmpfs (the test runs as root)"
d=$mnt/m.data
"$NW_RECORD" -e cpu-clock -o "$d" --checkpoint 0.5 --duration 3 "$P/longrun" 2>"$NW_TMP/full.err" &
rec=$!
pids+=("$rec")
wait_for "$d/manifest.json" 3 || fail "no checkpoint on the tmpfs"
before=$(manifest_get "$d" samples)
dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null || true
rc=0
wait "$rec" || rc=$?
grep -q 'the file system is full (ENOSPC)' "$NW_TMP/full.err" || {
	nw_show "stderr" "$NW_TMP/full.err"
	fail "ENOSPC is not named"
}
grep -q "^narwhal-record: $d still holds the last measurement written" "$NW_TMP/full.err" ||
	fail "the message does not say what was kept"
nw_check_measurement "$d"
after=$(manifest_get "$d" samples)
((after >= before)) || fail "the kept checkpoint has $after samples, fewer than $before"
[[ -z $(find "$mnt" -maxdepth 1 -name 'm.data.new-*') ]] || fail "a half-written directory is left"
# The program was stopped by --duration (SIGINT): its status comes back, 130.
[[ $rc -eq 130 ]] || fail "exit status $rc, expected the program's 130"
ok "kept a checkpoint of $after samples; exit $rc"

check "the end's write fails and the program succeeded: exit status 74"
rm -rf "${d:?}"
dd if=/dev/zero of="$mnt/filler2" bs=4k 2>/dev/null || true
rc=0
"$NW_RECORD" -e cpu-clock -o "$mnt/n.data" "$P/chain" 2>"$NW_TMP/full2.err" || rc=$?
[[ $rc -eq 74 ]] || {
	nw_show "stderr" "$NW_TMP/full2.err"
	fail "exit status $rc, expected 74 (chain exits 0, the write failed)"
}
grep -q 'ENOSPC' "$NW_TMP/full2.err" || fail "ENOSPC is not named"
grep -q 'chain exited with status 0' "$NW_TMP/full2.err" || fail "the program's status is not said"
umount "$mnt"
ok "74, and the program's 0 said"

pass
