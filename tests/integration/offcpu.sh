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

check "--threads: per thread, on-CPU about 0.5 s, off-CPU about 0.5 s, together its wall time"
nw_report "$NW_TMP/threads" "$d" --threads
head -n 1 "$NW_TMP/threads" | grep -q 'cpu-clock s.*off-cpu s' ||
	{ nw_show "--threads" "$NW_TMP/threads"; fail "no cpu-clock s / off-cpu s columns"; }
rows=0
while read -r _ _ name _ _ on off; do
	# Each thread: 1.0 s of wall time (main also waits a moment in pthread_join).
	awk -v on="$on" -v off="$off" 'BEGIN { exit !(on >= 0.4 && on <= 0.62 && off >= 0.4 &&
		off <= 0.7 && on + off >= 0.92 && on + off <= 1.15) }' ||
		{ nw_show "--threads" "$NW_TMP/threads"; fail "$name: on $on s + off $off s"; }
	rows=$((rows + 1))
done < <(tail -n +2 "$NW_TMP/threads")
((rows == 2)) || fail "$rows thread rows, expected 2"
ok "$(tail -n +2 "$NW_TMP/threads" | awk '{ printf "%s on %s + off %s; ", $3, $6, $7 }')"

check "the off-CPU time sits under sleep_part (90% or more)"
nw_report "$NW_TMP/off.folded" "$d" --folded --metric off-cpu:nanoseconds
share=$(awk '{ t += $NF } $1 ~ /;sleep_part;/ { s += $NF } END { printf "%.1f", t ? 100 * s / t : 0 }' \
	"$NW_TMP/off.folded")
awk -v s="$share" 'BEGIN { exit !(s >= 90) }' ||
	{ nw_show "folded off-cpu" "$NW_TMP/off.folded"; fail "sleep_part holds $share%"; }
ok "$share%"

check "the on-CPU time sits under compute_part (95% or more)"
nw_report "$NW_TMP/on.folded" "$d" --folded --metric cpu-clock:period
share=$(awk '{ t += $NF } $1 ~ /;compute_part$/ { s += $NF } END { printf "%.1f", t ? 100 * s / t : 0 }' \
	"$NW_TMP/on.folded")
awk -v s="$share" 'BEGIN { exit !(s >= 95) }' || fail "compute_part holds $share%"
ok "$share%"

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
if ((paranoid >= 2)) && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	check "as an unprivileged user (perf_event_paranoid=$paranoid): a plain notice, on-CPU only"
	w=$(mktemp -d /tmp/narwhal-offcpu-user.XXXXXX)
	chmod 777 "$w"
	rc=0
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
		"$NW_RECORD" -e cpu-clock --off-cpu -o "$w/u.data" "$P/sleepwork" 2>"$NW_TMP/user.err" || rc=$?
	((rc == 0)) || { nw_show "stderr" "$NW_TMP/user.err"; rm -rf "$w"; fail "exit $rc"; }
	grep -q "off-CPU sampling needs kernel samples.*perf_event_paranoid=$paranoid" "$NW_TMP/user.err" ||
		{ nw_show "stderr" "$NW_TMP/user.err"; rm -rf "$w"; fail "no notice naming perf_event_paranoid"; }
	grep -q '"off-cpu"' "$w/u.data/manifest.json" && { rm -rf "$w"; fail "an off-cpu event was recorded"; }
	rm -rf "$w"
	ok "$(grep -m1 'off-CPU' "$NW_TMP/user.err" | cut -c1-90)..."
fi
pass
