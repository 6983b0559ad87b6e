#!/bin/bash
# The whole machine (issue 14): narwhal-record -a --duration samples every
# process on every CPU: one started before the recorder (found through
# /proc: name, mappings, threads) and one started during the run that ends
# before it (followed through fork, exec and exit, named and symbolized
# though it is gone); each keeps its own trees, selectable with --pid;
# the idle task is left out unless --idle; -C records a subset of CPUs.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[[ $(id -u) -eq 0 ]] || fail "system.sh runs as root (system-wide recording)"

bg=()
trap 'rc=$?; for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null || true; done; nw_cleanup "$rc"' EXIT

check "-a --duration 2: a program started before and one started during the run"
"$P/callers" 4 >/dev/null &
before=$!
bg+=("$before")
sleep 0.3
d=$NW_TMP/all.data
"$NW_RECORD" -a --duration 2 -g fp -o "$d" >"$d.out" 2>"$d.err" &
rec=$!
sleep 0.5
"$P/phases" >/dev/null &
during=$!
bg+=("$during")
wait "$during" || fail "phases failed"
wait "$rec" || {
	nw_show "stderr" "$d.err"
	fail "narwhal-record -a exited $?"
}
nw_check_measurement "$d"
grep -q 'recording every process on every CPU' "$d.err" || fail "no notice of the system-wide recording"
nw_report "$NW_TMP/threads" "$d" --threads
for name in callers phases sleeper late; do
	grep -Eq " $name +[0-9]+ " "$NW_TMP/threads" || {
		nw_show "--threads" "$NW_TMP/threads"
		fail "no thread $name"
	}
done
ok "callers (before), phases with its threads (during, gone before the end)"

check "--pid: each process its own trees, symbolized"
nw_report "$NW_TMP/before" "$d" --flat --pid "$before"
nw_report "$NW_TMP/during" "$d" --flat --pid "$during"
hb=$(nw_flat_self "$NW_TMP/before" hot)
awk -v s="$hb" 'BEGIN { exit !(s >= 80) }' || {
	nw_show "--flat --pid $before" "$NW_TMP/before"
	fail "hot holds $hb% of the process started before"
}
grep -Eq ' (phase_a|phase_b|sleeper_work|late_work) \(phases.c:' "$NW_TMP/during" || {
	nw_show "--flat --pid $during" "$NW_TMP/during"
	fail "the process that ended during the run is not symbolized"
}
grep -q ' hot ' "$NW_TMP/during" && fail "callers' hot in phases' profile"
ok "hot $hb% of callers; phases' functions named"

check "the idle task is left out; --idle keeps it"
grep -Eq '^ +0 +0 ' "$NW_TMP/threads" && fail "idle samples (pid 0) without --idle"
# A quiet machine: the idle task runs (its timer samples come irregularly in a VM).
kill -9 "$before" 2>/dev/null || true
wait "$before" 2>/dev/null || true
# The CPUs' idle time over the recording (/proc/stat, in USER_HZ ticks):
# on a machine kept busy by something else there may be none to sample.
idle_ticks() { awk '$1 == "cpu" { print $5 }' /proc/stat; }
i0=$(idle_ticks)
nw_record_ok "$NW_TMP/idle.data" -a --idle --duration 1 -g fp
idle=$(($(idle_ticks) - i0))
nw_report "$NW_TMP/idle.threads" "$NW_TMP/idle.data" --threads
if ! grep -Eq "^ +0 +0 +swapper " "$NW_TMP/idle.threads"; then
	# A fifth of a CPU-second idle is 200 chances to sample the idle task.
	((idle < 20)) || {
		nw_show "--threads" "$NW_TMP/idle.threads"
		fail "no idle samples with --idle, though the CPUs were idle $idle ticks"
	}
	ok "pid 0 never sampled: the CPUs were busy (idle $idle ticks of /proc/stat)"
else
	ok "pid 0 only with --idle (the CPUs idle $idle ticks)"
fi

check "-C 0: only CPU 0"
taskset -c 1 "$P/callers" 1.5 >/dev/null &
on1=$!
bg+=("$on1")
# Until it is callers, pinned: the shell's fork and taskset itself may run
# on CPU 0 first, under the same pid.
for _ in $(seq 100); do
	[[ $(cat "/proc/$on1/comm" 2>/dev/null) == callers ]] && break
	sleep 0.01
done
nw_record_ok "$NW_TMP/c0.data" -C 0 --duration 1 -g fp
wait "$on1" || true
nw_report "$NW_TMP/c0.threads" "$NW_TMP/c0.data" --threads
grep -Eq " $on1 +[0-9]+ +callers " "$NW_TMP/c0.threads" && {
	nw_show "--threads" "$NW_TMP/c0.threads"
	fail "a program pinned to CPU 1 was sampled on CPU 0"
}
ok "callers on CPU 1 not sampled"

pass
