#!/bin/bash
# --off-cpu: where threads block and for how long.  sleepwork runs two
# threads that each spend 0.5 s computing (compute_part) and 0.5 s asleep
# (sleep_part): per thread, on-CPU time (cpu-clock) plus off-CPU time must
# match its wall time, and the off-CPU time must sit under sleep_part.
# Without the privilege to sample the kernel, the recorder says so and
# records on-CPU only.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/off.data
check "narwhal-record --off-cpu --call-graph dwarf runs sleepwork"
NW_RECORD_OPTS=(--off-cpu --call-graph dwarf)
nw_record_ok "$d" "$P/sleepwork"
grep -q '"off-cpu"' "$d/manifest.json" || fail "the manifest names no off-cpu event"
ok "recorded"

check "--threads: per thread, on-CPU about 0.5 s, and on-CPU plus off-CPU within 5% of its wall time"
msg=
nw_report "$NW_TMP/threads" "$d" --threads
head -n 1 "$NW_TMP/threads" | grep -q 'cpu-clock s.*off-cpu s' ||
	{ nw_show "--threads" "$NW_TMP/threads"; fail "no cpu-clock s / off-cpu s columns"; }
rows=0
while read -r _ _ name _ _ on off; do
	# The program prints each thread's wall time: a loaded machine stretches
	# it with time spent waiting for a CPU, which is off-CPU time too.
	wall=$(awk -v n="$name" '$1 == "wall" && $2 == n { print $3 }' "$d.out")
	[[ -n $wall ]] || fail "sleepwork printed no wall time for $name"
	awk -v on="$on" -v off="$off" -v w="$wall" 'BEGIN { exit !(on >= 0.4 && on <= 0.62 &&
		off >= 0.4 && on + off >= 0.95 * w && on + off <= 1.05 * w) }' ||
		{ nw_show "--threads" "$NW_TMP/threads"; fail "$name: on $on s + off $off s, wall $wall s"; }
	rows=$((rows + 1))
	msg+="$name on $on + off $off = wall $wall; "
done < <(tail -n +2 "$NW_TMP/threads")
((rows == 2)) || fail "$rows thread rows, expected 2"
ok "$msg"

check "the 2 x 0.5 s asleep sit under sleep_part (within 10%; the rest is waiting for a CPU)"
nw_report "$NW_TMP/off.folded" "$d" --folded --metric off-cpu:nanoseconds
slept=$(awk '$1 ~ /;sleep_part;/ { s += $NF } END { printf "%.3f", s / 1e9 }' "$NW_TMP/off.folded")
awk -v s="$slept" 'BEGIN { exit !(s >= 0.9 && s <= 1.1) }' ||
	{ nw_show "folded off-cpu" "$NW_TMP/off.folded"; fail "sleep_part holds $slept s"; }
ok "$slept s under sleep_part"

check "the on-CPU time sits under compute_part (95% or more)"
nw_report "$NW_TMP/on.folded" "$d" --folded --metric cpu-clock:period
share=$(awk '{ t += $NF } $1 ~ /;compute_part(;|$)/ { s += $NF } END { printf "%.1f", t ? 100 * s / t : 0 }' \
	"$NW_TMP/on.folded")
awk -v s="$share" 'BEGIN { exit !(s >= 95) }' || fail "compute_part holds $share%"
ok "$share%"

check "pprof: one sample type per metric, and go tool pprof ranks sleep_part first by off-cpu time"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"
nw_go_env
nw_report "$NW_TMP/out" "$d" --pprof "$NW_TMP/off.pb.gz"
go tool pprof -raw "$NW_TMP/off.pb.gz" >"$NW_TMP/raw" 2>&1 || fail "pprof rejects the profile"
grep -q 'cpu-clock-samples/count cpu-clock/nanoseconds off-cpu-switches/count off-cpu/nanoseconds' \
	"$NW_TMP/raw" || { nw_show "pprof -raw" "$NW_TMP/raw"; fail "sample types"; }
go tool pprof -top -cum -sample_index=off-cpu "$NW_TMP/off.pb.gz" >"$NW_TMP/top" 2>/dev/null ||
	fail "pprof -top failed"
grep -q 'sleep_part' "$NW_TMP/top" || { nw_show "pprof -top" "$NW_TMP/top"; fail "no sleep_part"; }
ok "four sample types; sleep_part in pprof's off-cpu top"

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
if ((paranoid >= 2)) && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	check "as an unprivileged user (perf_event_paranoid=$paranoid): a plain notice, on-CPU only"
	w=$(mktemp -d /tmp/narwhal-offcpu-user.XXXXXX)
	chmod 777 "$w"
	# A copy nobody can run: the build tree may be where nobody cannot
	# go (a clone under /root, mode 700).
	cp "$P/sleepwork" "$w/sleepwork"
	chmod 755 "$w/sleepwork"
	rc=0
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
		"$NW_RECORD" -e cpu-clock --off-cpu -o "$w/u.data" "$w/sleepwork" >/dev/null 2>"$NW_TMP/user.err" || rc=$?
	((rc == 0)) || { nw_show "stderr" "$NW_TMP/user.err"; rm -rf "$w"; fail "exit $rc"; }
	grep -q "off-CPU sampling needs kernel samples.*perf_event_paranoid=$paranoid" "$NW_TMP/user.err" ||
		{ nw_show "stderr" "$NW_TMP/user.err"; rm -rf "$w"; fail "no notice naming perf_event_paranoid"; }
	grep -q '"off-cpu"' "$w/u.data/manifest.json" && { rm -rf "$w"; fail "an off-cpu event was recorded"; }
	rm -rf "$w"
	ok "$(grep -m1 'off-CPU' "$NW_TMP/user.err" | cut -c1-90)..."
fi
pass
