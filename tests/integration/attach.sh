#!/bin/bash
# Attaching to running programs: -p PID (every thread, and threads created
# later), -t TID (one thread), --duration and Ctrl-C end the recording and
# leave the program running; modules loaded before the attach symbolize
# (the first epoch comes from /proc/PID/maps); clear errors for a PID that
# does not exist; a target that exits ends the recording; the report's
# Command: line names the command line of what was attached to.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# start_attachee SECONDS : runs attachee in the background, waits until it is ready; sets APID.
start_attachee() {
	"$P/attachee" "$P/libplug.so" "$@" >"$NW_TMP/attachee.out" &
	APID=$!
	for _ in $(seq 100); do
		grep -q ready "$NW_TMP/attachee.out" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "attachee did not start"
}

# says_command DIR WORDS : the report's header of DIR says "Command: WORDS".
says_command() {
	nw_report "$NW_TMP/header" "$1"
	grep -qxF "Command: $2" "$NW_TMP/header" ||
		{ nw_show "the tree" "$NW_TMP/header"; fail "the header does not say 'Command: $2'"; }
	ok "Command: $2"
}

check "-p PID --duration 1.5: exit 0, the program runs on, plug_work named, the late thread seen"
start_attachee 4
d=$NW_TMP/p.data
nw_record_ok "$d" -p "$APID" --duration 1.5
kill -0 "$APID" 2>/dev/null || fail "the program did not survive the recording"
nw_report "$NW_TMP/flat" "$d" --flat
nw_report "$NW_TMP/threads" "$d" --threads
plug=$(nw_flat_self "$NW_TMP/flat" plug_work)
# early burns in plug_work all along; late joins about 1 s after the start.
awk -v p="$plug" 'BEGIN { exit !(p >= 40 && p <= 92) }' ||
	{ nw_show "--flat" "$NW_TMP/flat"; fail "plug_work $plug%, expected 40% to 92%"; }
grep -q ' late ' "$NW_TMP/threads" || { nw_show "--threads" "$NW_TMP/threads"; fail "no late thread"; }
grep -q ' early ' "$NW_TMP/threads" || fail "no early thread"
grep -q "libplug.so" "$d/manifest.json" || fail "the manifest lists no libplug.so module"
ok "plug_work $plug%; threads: $(tail -n +2 "$NW_TMP/threads" | awk '{ printf "%s ", $3 }')"
says_command "$d" "$P/attachee $P/libplug.so 4"
wait "$APID" || fail "the program exited with $? after the attach"
ok "the program ran to its end and exited 0"

check "-t TID: only that thread"
start_attachee 3
tid=
for c in /proc/"$APID"/task/*/comm; do
	[[ $(cat "$c") == early ]] && tid=$(basename "$(dirname "$c")")
done
[[ -n $tid ]] || fail "no early thread in /proc/$APID/task"
d=$NW_TMP/t.data
nw_record_ok "$d" -t "$tid" --duration 1.5
nw_report "$NW_TMP/tthreads" "$d" --threads
n=$(tail -n +2 "$NW_TMP/tthreads" | wc -l)
((n == 1)) || { nw_show "--threads" "$NW_TMP/tthreads"; fail "$n threads, expected only early"; }
grep -q " $tid  *early " "$NW_TMP/tthreads" || fail "the thread is not $tid early"
ok "$(tail -n 1 "$NW_TMP/tthreads")"
says_command "$d" "$P/attachee $P/libplug.so 3"
wait "$APID" || fail "the program exited with $?"

check "-p PID1,PID2: the header names the first's command line and counts the other"
start_attachee 3
a1=$APID
start_attachee 2
d=$NW_TMP/two.data
nw_record_ok "$d" -p "$a1,$APID" --duration 1
says_command "$d" "$P/attachee $P/libplug.so 3 (and 1 other process)"
wait "$a1" || fail "the first program exited with $?"
wait "$APID" || fail "the second program exited with $?"

check "SIGINT to an attached recorder: stops, writes, the program runs on"
start_attachee 4
d=$NW_TMP/int.data
"$NW_RECORD" -e cpu-clock -o "$d" -p "$APID" 2>"$d.err" &
rpid=$!
sleep 1
kill -INT "$rpid"
rc=0
wait "$rpid" || rc=$?
((rc == 0)) || { nw_show "stderr" "$d.err"; fail "narwhal-record exited $rc"; }
kill -0 "$APID" 2>/dev/null || fail "the program died with the recording"
nw_check_measurement "$d"
ok "exit 0, measurement written, program alive"
wait "$APID" || fail "the program exited with $?"

check "a target that exits ends the recording, which is written"
start_attachee 1.5
d=$NW_TMP/exit.data
SECONDS=0
nw_record_ok "$d" -p "$APID"
((SECONDS <= 10)) || fail "the recording went on for $SECONDS s for a program of 1.5 s"
nw_check_measurement "$d"
ok "stopped after ${SECONDS}s"
wait "$APID" || true

check "the main thread exits first: the recording follows the others to the end, without spinning"
# The events of an exited thread poll hung up from then on; the recorder
# once polled them in a loop, a CPU's worth, until the last thread ended.
start_attachee 3 mainexit
d=$NW_TMP/mainexit.data
SECONDS=0
nw_record_ok "$d" -v -p "$APID"
wall=$SECONDS
wait "$APID" || fail "the program exited with $?"
nw_report "$NW_TMP/mainexit.folded" "$d" --folded
grep -q 'late_work' "$NW_TMP/mainexit.folded" && ((wall >= 2)) || {
	nw_show "--folded" "$NW_TMP/mainexit.folded"
	fail "the recording of a program of 3 s took $wall s (the main thread exits after 1 s), late_work sampled or not"
}
cpu=$(sed -nE 's/.*recorder CPU: [0-9.]+ s set-up, ([0-9.]+) s sampling.*/\1/p' "$d.err")
# Sampling 2 threads at 999 Hz takes about 0.01 s of CPU a second; spinning, up to a CPU's worth.
awk -v c="${cpu:-9}" -v w="$wall" 'BEGIN { exit !(c <= 0.1 * (w + 1)) }' || {
	nw_show "narwhal-record -v" "$d.err"
	fail "the recorder took ${cpu:-?} s of CPU sampling in a run of $wall s"
}
ok "recorded to the end ($wall s); ${cpu} s of recorder CPU sampling"

check "a target that exits and is not reaped (a zombie) ends the recording"
# Its parent waits for the recorder before it reaps the child: the child
# stays a zombie, whose main thread is still listed in /proc.
python3 - "$P/attachee" "$P/libplug.so" "$NW_RECORD" "$NW_TMP/zombie.data" <<'PY' ||
import subprocess, sys, time
attachee, lib, rec, out = sys.argv[1:]
p = subprocess.Popen([attachee, lib, "1"], stdout=subprocess.PIPE)
p.stdout.readline()                      # "ready"
t = time.time()
try:
    r = subprocess.run([rec, "-e", "cpu-clock", "-o", out, "-p", str(p.pid)],
                       capture_output=True, text=True, timeout=30)
except subprocess.TimeoutExpired:
    sys.exit("the recording went on 30 s after a program of 1 s became a zombie")
p.wait()
if r.returncode:
    sys.exit("narwhal-record exited %d: %s" % (r.returncode, r.stderr))
print("ended %.1f s after the attach" % (time.time() - t))
PY
	fail "the recording did not end with the zombie"
nw_check_measurement "$NW_TMP/zombie.data"
ok "ended, measurement written"

check "no such process: exit 1 with a message naming it, nothing written"
rc=0
"$NW_RECORD" -o "$NW_TMP/none.data" -p 2147483000 2>"$NW_TMP/none.err" || rc=$?
((rc == 1)) || fail "exit $rc"
grep -q "no such process: 2147483000" "$NW_TMP/none.err" || fail "message: $(cat "$NW_TMP/none.err")"
[[ ! -e $NW_TMP/none.data ]] || fail "a measurement directory was made"
ok "$(cat "$NW_TMP/none.err")"

if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	check "an unprivileged user attaching to root's process: exit 1, a message that says what is needed"
	start_attachee 3
	w=$(mktemp -d /tmp/narwhal-attach-user.XXXXXX)
	chmod 777 "$w"
	rc=0
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
		"$NW_RECORD" -e cpu-clock -o "$w/x.data" -p "$APID" 2>"$NW_TMP/denied.err" || rc=$?
	made=$(find "$w" -mindepth 1 | wc -l)
	rm -rf "$w"
	((rc == 1)) || { nw_show "stderr" "$NW_TMP/denied.err"; fail "exit $rc"; }
	grep -q 'not allowed to attach.*root' "$NW_TMP/denied.err" ||
		{ nw_show "stderr" "$NW_TMP/denied.err"; fail "the message does not say what is needed"; }
	grep -q 'perf_event_paranoid is' "$NW_TMP/denied.err" || fail "the message does not quote perf_event_paranoid"
	((made == 0)) || fail "a measurement was written"
	ok "$(head -n 1 "$NW_TMP/denied.err" | cut -c1-90)..."
	kill "$APID"
	wait "$APID" || true
fi

check "-p with a command, -p with a bad list: usage errors (exit 2)"
for args in "-p 1 -- true" "-p 12,x" "-p 1 -t 2"; do
	rc=0
	# shellcheck disable=SC2086
	"$NW_RECORD" -o "$NW_TMP/bad.data" $args 2>/dev/null || rc=$?
	((rc == 2)) || fail "narwhal-record $args exited $rc, expected 2"
done
ok "exit 2"
pass
