#!/bin/bash
# narwhal-record --locks (issue 27, doc/LOCKS.md): tests/programs/locks
# measures its own waits per lock with clock_gettime around each lock call
# ("self NAME WAIT_NS ACQUISITIONS").  Narwhal's split of the waiting
# between lock_hot (held 300 us) and lock_cold (held 100 us) must agree
# with the program's within 5 points and its total within 10 %, at the
# default rate and at --lock-rate 1, through pthread_mutex_lock and
# pthread_mutex_timedlock, statically linked, attached (-p) and in a
# process the program forks and execs; the releasing paths are the
# critical sections' functions.  Also: an rwlock (named, both kinds of
# waiters), a semaphore, a heap mutex (named by its address and the
# function that first locked it), std::mutex, condition-variable waits
# left out (the mutex they take back counted),
# the lock metrics beside CPU samples in every view and beside --alloc's,
# Go's contention sample types in pprof, and clear errors.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# rec DIR ARGS... : narwhal-record -o DIR ARGS..., which must exit 0 and lose nothing.
rec() {
	nw_record_lossless "$@"
}

# compare DIR SELF LOCK_A LOCK_B : the waits per lock in DIR's locks.json
# against the program's own lines in SELF: LOCK_A's share of the two within
# 5 points, their total within 10 %.  Prints the numbers.
compare() {
	python3 - "$1/locks.json" "$2" "$3" "$4" <<'PY' || fail "$1: the waits per lock do not match the program's own"
import json, sys
locks = json.load(open(sys.argv[1]))["locks"]
own = {}
for line in open(sys.argv[2]):
    f = line.split()
    if f and f[0] == "self":
        own[f[1]] = int(f[2])
a, b = sys.argv[3], sys.argv[4]
seen = {}
for k in locks:
    if k["name"] in (a, b):
        seen[k["name"]] = seen.get(k["name"], 0) + k["wait_ns"]
if a not in seen or b not in seen:
    sys.exit("locks.json names %s, not both %s and %s" % (sorted(seen), a, b))
ntot, ptot = seen[a] + seen[b], own[a] + own[b]
nsplit, psplit = 100.0 * seen[a] / ntot, 100.0 * own[a] / ptot
print("  %s: narwhal %.1f%% of %.3f s, program %.1f%% of %.3f s" %
      (sys.argv[1], nsplit, ntot / 1e9, psplit, ptot / 1e9))
if abs(nsplit - psplit) > 5:
    sys.exit("split %.1f%% vs the program's %.1f%%" % (nsplit, psplit))
if abs(ntot - ptot) > 0.10 * ptot:
    sys.exit("total %.3f s vs the program's %.3f s" % (ntot / 1e9, ptot / 1e9))
PY
}

# paths DIR LOCK KIND : the paths (frames joined by ';') of KIND (waiters,
# releasers) of LOCK in DIR's locks.json, one a line.
paths() {
	python3 - "$1/locks.json" "$2" "$3" <<'PY'
import json, sys
for k in json.load(open(sys.argv[1]))["locks"]:
    if k["name"] == sys.argv[2]:
        for p in k[sys.argv[3]]:
            print(";".join(p["frames"]))
PY
}

# sections DIR LOCK SECTION : LOCK's waiting and releasing paths all go through SECTION.
sections() {
	local kind

	for kind in waiters releasers; do
		paths "$1" "$2" "$kind" >"$NW_TMP/paths"
		[[ -s $NW_TMP/paths ]] || fail "$1: $2 has no $kind"
		if grep -v ";$3;" "$NW_TMP/paths" >"$NW_TMP/other"; then
			nw_show "$2's other $kind" "$NW_TMP/other"
			fail "$1: a path of $2's $kind does not go through $3"
		fi
	done
}

# two_mutexes DIR ARGS... : records ARGS with --locks into DIR: the split, the
# total and both critical sections.
two_mutexes() {
	local d=$1

	shift
	rec "$d" --locks "$@"
	compare "$d" "$d.out" lock_hot lock_cold
	sections "$d" lock_hot hot_section
	sections "$d" lock_cold cold_section
}

check "two mutexes, the default rate: the split and the total, the critical sections"
d=$NW_TMP/mutex.data
two_mutexes "$d" "$P/locks" mutex
grep -Eq 'futex waits \([0-9]+ more returned at once\), [0-9]+ sampled \(one per 100000 ns' "$d.err" || {
	nw_show "narwhal-record stderr" "$d.err"
	fail "narwhal-record does not tell the lock waits it saw"
}
ok "split, total, waiters and releasers in hot_section and cold_section"

check "--locks view: each lock, its waiting and releasing paths"
nw_report "$NW_TMP/view" "$d" --locks
for lock in lock_hot lock_cold; do
	awk -v l="$lock" '$NF == l { on = 1; next } on && /^ +[0-9.]+ +[0-9.]+ +[0-9]+/ { on = 0 }
		on' "$NW_TMP/view" >"$NW_TMP/under"
	sec=${lock#lock_}_section
	grep -q "^      waiting:" "$NW_TMP/under" && grep -q "^      releasing:" "$NW_TMP/under" &&
		[[ $(grep -c "> $sec >" "$NW_TMP/under") -ge 2 ]] || {
		nw_show "--locks" "$NW_TMP/view"
		fail "--locks shows no waiting and releasing paths through $sec under $lock"
	}
done
grep -q '^Locks: 2, ' "$NW_TMP/view" || {
	nw_show "--locks" "$NW_TMP/view"
	fail "--locks does not count two locks (joins or condition variables counted?)"
}
ok "lock_hot and lock_cold with their paths"

check "--lock-rate 1: every wait"
d=$NW_TMP/rate1.data
rec "$d" --locks --lock-rate 1 "$P/locks" mutex 1
compare "$d" "$d.out" lock_hot lock_cold
waits=$(sed -nE 's/.*: ([0-9]+) futex waits \([0-9]+ more returned at once\), ([0-9]+) sampled.*/\1 \2/p' "$d.err")
read -r all sampled <<<"$waits"
[[ -n $all && $all -eq $sampled && $all -gt 100 ]] ||
	fail "--lock-rate 1 sampled $sampled of $all waits"
ok "$all waits, all sampled"

check "pthread_mutex_timedlock"
two_mutexes "$NW_TMP/timed.data" "$P/locks" timed 1
ok "timed locks"

check "a statically linked program"
two_mutexes "$NW_TMP/static.data" "$P/locks-static" mutex 1
ok "static: the same tracepoints"

check "a process the program forks and execs"
d=$NW_TMP/fork.data
two_mutexes "$d" "$P/locks" fork
python3 - "$d/locks.json" "$d/manifest.json" <<'PY' || fail "fork: the locks are not the child's"
import json, sys
pids = {k["pid"] for k in json.load(open(sys.argv[1]))["locks"]}
procs = {p["pid"]: p["ppid"] for p in json.load(open(sys.argv[2]))["processes"]}
if len(pids) != 1:
    sys.exit("locks of pids %s" % sorted(pids))
child = pids.pop()
if procs.get(child) not in procs:
    sys.exit("pid %d is not a child of the launched process (%s)" % (child, procs))
PY
ok "the child's locks"

check "-p: attached to a running program"
"$P/locks" wait 1 >"$NW_TMP/attach.own" &
pid=$!
sleep 0.3
d=$NW_TMP/attach.data
rec "$d" --locks -p "$pid" --duration 10
wait "$pid" || fail "the program attached to failed"
compare "$d" "$NW_TMP/attach.own" lock_hot lock_cold
sections "$d" lock_hot hot_section
ok "attached"

check "an rwlock: named once, writers and readers waiting, writers releasing"
d=$NW_TMP/rw.data
rec "$d" --locks "$P/locks" rw 1
python3 - "$d/locks.json" "$d.out" <<'PY' || fail "rw: the rwlock's waits do not match"
import json, sys
own = sum(int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("self rw_hot"))
ks = [k for k in json.load(open(sys.argv[1]))["locks"] if k["name"] == "rw_hot"]
if len(ks) != 1:
    sys.exit("rw_hot listed %d times" % len(ks))
got = ks[0]["wait_ns"]
print("  rw_hot: narwhal %.3f s, program %.3f s" % (got / 1e9, own / 1e9))
if abs(got - own) > 0.10 * own:
    sys.exit("total %.3f s vs %.3f s" % (got / 1e9, own / 1e9))
PY
paths "$d" rw_hot waiters >"$NW_TMP/rw.waiters"
grep -q ';write_section;' "$NW_TMP/rw.waiters" && grep -q ';read_section;' "$NW_TMP/rw.waiters" ||
	fail "rw: the waiters are not both write_section and read_section"
# (Through a file: grep -q ending early would fail the pipe under pipefail.)
paths "$d" rw_hot releasers >"$NW_TMP/rw.releasers"
grep -q ';write_section;' "$NW_TMP/rw.releasers" ||
	fail "rw: write_section does not release rw_hot"
ok "rw_hot"

check "a semaphore"
d=$NW_TMP/sem.data
rec "$d" --locks "$P/locks" sem 1
python3 - "$d/locks.json" "$d.out" <<'PY' || fail "sem: the semaphore's waits do not match"
import json, sys
own = [int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("self sem_hot")][0]
got = sum(k["wait_ns"] for k in json.load(open(sys.argv[1]))["locks"] if k["name"] == "sem_hot")
print("  sem_hot: narwhal %.3f s, program %.3f s" % (got / 1e9, own / 1e9))
if abs(got - own) > 0.10 * own:
    sys.exit("total %.3f s vs %.3f s" % (got / 1e9, own / 1e9))
PY
sections "$d" sem_hot sem_section
ok "sem_hot"

check "a lock of the heap: its address and the function that first locked it"
d=$NW_TMP/heap.data
rec "$d" --locks "$P/locks" heap 0.5
nw_report "$NW_TMP/heap-view" "$d" --locks
grep -qE '^ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+  0x[0-9a-f]+, first locked in heap_section$' \
	"$NW_TMP/heap-view" || {
	nw_show "--locks" "$NW_TMP/heap-view"
	fail "heap: the lock is not named by its address and heap_section"
}
python3 - "$d/locks.json" "$d.out" <<'PY' || fail "heap: the heap lock's waits do not match"
import json, sys
own = [int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("self heap ")][0]
ks = json.load(open(sys.argv[1]))["locks"]
if len(ks) != 1 or ks[0]["name"] is not None:
    sys.exit("locks %s" % [k["name"] for k in ks])
for kind in ("waiters", "releasers"):
    paths = ks[0][kind]
    if not paths or any("heap_section" not in p["frames"] for p in paths):
        sys.exit("%s not all through heap_section: %s" % (kind, paths))
got = ks[0]["wait_ns"]
print("  heap: narwhal %.3f s, program %.3f s" % (got / 1e9, own / 1e9))
if abs(got - own) > 0.10 * own:
    sys.exit("total %.3f s vs %.3f s" % (got / 1e9, own / 1e9))
PY
ok "0x..., first locked in heap_section"

check "condition-variable waits are no contention"
d=$NW_TMP/cond.data
rec "$d" --locks --lock-rate 1 "$P/locks" cond 0.5
n=$(sed -nE 's/.* ([0-9]+) of them and the joins not for a lock.*/\1/p' "$d.err")
[[ -n $n && $n -gt 100 ]] || {
	nw_show "narwhal-record stderr" "$d.err"
	fail "cond: the condition-variable waits were not seen and left out"
}
if ! why=$(python3 - "$d/locks.json" 2>&1 <<'PY'
import json, sys
# The only lock: the mutex each wait takes back (glibc's lock wait inside
# pthread_cond_wait), never the condition variable's own futex words.
for k in json.load(open(sys.argv[1]))["locks"]:
    if k["name"] != "token_lock":
        sys.exit("lock %s" % (k["name"] or hex(int(k["addr"], 16))))
    for p in k["waiters"]:
        if "__GI___lll_lock_wait" not in p["frames"] and "__lll_lock_wait" not in p["frames"]:
            sys.exit("token_lock waited on outside the low-level lock: %s" % p["frames"])
PY
); then
	fail "cond: a condition-variable wait or a join was counted as contention: $why"
fi
ok "$n condition-variable waits left out; the mutex they take back is token_lock"

check "pthread_once and barrier waits, and futex calls that return at once, are no contention"
# The once waits are in __pthread_once_slow, which only libc's debug file
# names (pthread_once jumps to it); a barrier's wait may expect the value 2,
# as glibc's low-level lock does; the calls on stale_word never sleep.
d=$NW_TMP/once.data
rec "$d" --locks --lock-rate 1 "$P/locks" once
at_once=$(sed -nE 's/.*futex waits \(([0-9]+) more returned at once\).*/\1/p' "$d.err")
left=$(sed -nE 's/.* ([0-9]+) of them and the joins not for a lock.*/\1/p' "$d.err")
[[ -n $at_once && $at_once -ge 200 && -n $left && $left -ge 19 ]] || {
	nw_show "narwhal-record stderr" "$d.err"
	fail "once: $at_once calls returned at once (200 made), $left waits left out (20 pthread_once)"
}
locks=$(python3 -c 'import json, sys; print(" ".join(k["name"] or k["addr"] for k in json.load(open(sys.argv[1]))["locks"]))' "$d/locks.json")
[[ -z $locks ]] || fail "once: counted as locks: $locks"
ok "$at_once calls returned at once, $left waits left out, no lock"

check "C++ std::mutex"
d=$NW_TMP/cxx.data
rec "$d" --locks "$P/locks-cxx"
sections "$d" counter_mutex guarded_section
ok "counter_mutex"

check "--locks -e cpu-clock: both in the same trees, every view by a lock metric"
d=$NW_TMP/both.data
rec "$d" --locks -e cpu-clock "$P/locks" mutex 1
for m in lock-wait lock-contentions lock-delay cpu-clock; do
	nw_report "$NW_TMP/flat-$m" "$d" --flat --metric "$m"
done
nw_flat_has "$NW_TMP/flat-lock-delay" "__GI___lll_lock_wake" ||
	fail "--metric lock-delay: the releasers' futex wake is not the hottest leaf"
nw_report "$NW_TMP/callers" "$d" --callers hot_section --metric lock-delay
nw_report "$NW_TMP/lines" "$d" --lines hot_section --metric lock-wait
nw_report "$NW_TMP/tree" "$d" --tree --metric lock-wait
grep -q 'Metric: lock-wait, total' "$NW_TMP/tree" || fail "--tree --metric lock-wait"
nw_report "$NW_TMP/none" "$d" --metric lock-delay --flamegraph "$NW_TMP/f.svg" \
	--html "$NW_TMP/r.html" --pprof "$NW_TMP/p.pb.gz"
grep -q 'hot_section' "$NW_TMP/f.svg" || fail "the lock-delay flame graph has no hot_section"
nw_report "$NW_TMP/diff" "$d" --diff "$NW_TMP/mutex.data" --metric lock-wait
ok "tree, flat, callers, lines, flame graph, HTML, pprof, diff"

check "pprof: Go's contention sample types"
go tool pprof -raw "$NW_TMP/p.pb.gz" >"$NW_TMP/raw" 2>"$NW_TMP/raw.err" || {
	nw_show "pprof -raw" "$NW_TMP/raw.err"
	fail "go tool pprof rejected the profile"
}
grep -q 'contentions/count delay/nanoseconds' "$NW_TMP/raw" || {
	nw_show "pprof -raw" "$NW_TMP/raw"
	fail "no contentions/count and delay/nanoseconds sample types"
}
nw_report "$NW_TMP/none" "$NW_TMP/mutex.data" --pprof "$NW_TMP/m.pb.gz"
go tool pprof -top -sample_index=delay "$NW_TMP/m.pb.gz" >"$NW_TMP/top" 2>&1 || {
	nw_show "pprof -top" "$NW_TMP/top"
	fail "go tool pprof -top -sample_index=delay failed"
}
grep -q 'Type: delay' "$NW_TMP/top" && grep -q '__GI___lll_lock_wake' "$NW_TMP/top" || {
	nw_show "pprof -top" "$NW_TMP/top"
	fail "pprof's delay is not on the releasers' stacks"
}
ok "contentions/count, delay/nanoseconds on the releasers"

check "--locks --alloc: both sources in one run, each its metrics"
d=$NW_TMP/both-sources.data
rec "$d" --locks --alloc "$P/locks" mutex 1
compare "$d" "$d.out" lock_hot lock_cold
python3 - "$d/manifest.json" <<'PY' || fail "--locks --alloc: not the 7 metrics of both"
import json, sys
names = [m["name"] for m in json.load(open(sys.argv[1]))["metrics"]]
want = ["alloc-objects", "alloc-bytes", "inuse-objects", "inuse-bytes",
        "lock-wait", "lock-contentions", "lock-delay"]
sys.exit(0 if names == want else "metrics %s" % names)
PY
nw_report "$NW_TMP/both-flat" "$d" --flat --metric alloc-bytes
nw_report "$NW_TMP/both-delay" "$d" --flat --metric lock-delay
nw_flat_has "$NW_TMP/both-delay" "__GI___lll_lock_wake" ||
	fail "--locks --alloc: lock-delay is not on the releasers"
grep -q 'allocation samples' "$d.err" && grep -q 'futex waits' "$d.err" ||
	fail "--locks --alloc: the summary does not tell both"
ok "allocations and locks in the same trees"

check "errors: -a, --locks of a CPU recording"
rc=0
"$NW_RECORD" -o "$NW_TMP/e1.data" --locks -a --duration 0.1 >"$NW_TMP/e1" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q 'not with -a' "$NW_TMP/e1" || fail "--locks -a: exit $rc"
"$NW_RECORD" -q -e cpu-clock -o "$NW_TMP/cpu.data" "$P/locks" cond 0.1 >/dev/null 2>&1
rc=0
"$NW_REPORT" --locks "$NW_TMP/cpu.data" >"$NW_TMP/e3" 2>&1 || rc=$?
[[ $rc -eq 1 ]] && grep -q 'no locks recorded' "$NW_TMP/e3" || {
	nw_show "--locks of a CPU recording" "$NW_TMP/e3"
	fail "--locks of a CPU recording: exit $rc"
}
ok "clear errors"

pass
