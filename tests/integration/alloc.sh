#!/bin/bash
# narwhal-record --alloc (issue 15, doc/ALLOCATIONS.md): tests/programs/alloc
# allocates known bytes from known call paths (malloc; calloc freed by
# another thread; realloc growth; posix_memalign, aligned_alloc, memalign;
# a malloc-like wrapper; a forked child; a signal handler) and leaks from
# three known sites.  Checked per path: allocated bytes and objects within
# 5 % at the default rate (one sample per 512 KiB on average) and exact at
# --alloc-rate 1, in both call-graph modes and through a shell that execs
# the program; nothing live at the end but the leaks; --leaks lists exactly
# the three leak sites, largest first, exact at rate 1 and within 10 % at
# the default rate; pprof's heap sample types; the flame graph in bytes;
# allocations beside CPU samples in one run; C++ new and delete; -p on a
# running program (the C library probed); clear errors.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

# meson's MALLOC_PERTURB_ would make glibc write every block the programs
# allocate (gigabytes, at the default rate's sizes).
unset MALLOC_PERTURB_

[[ -e /sys/bus/event_source/devices/uprobe/type ]] ||
	fail "this kernel has no uprobe PMU, which --alloc needs"

# rec DIR ARGS... : narwhal-record -o DIR ARGS..., which must exit 0 and lose nothing.
rec() {
	nw_record_lossless "$@"
}

# by_leaf DIR METRIC : "FUNCTION TOTAL" per leaf function of the merged
# stacks (--folded weighed by METRIC) of the threads FILTER selects.
FILTER=()
by_leaf() {
	nw_report "$NW_TMP/folded" "$1" --folded --metric "$2" "${FILTER[@]}"
	awk '{ v = $NF; $NF = ""; n = split($0, f, ";"); leaf = f[n]; sub(/ +$/, "", leaf);
	       s[leaf] += v } END { for (k in s) printf "%s %.0f\n", k, s[k] }' "$NW_TMP/folded" | sort
}

# compare DIR EXPECT TOLERANCE_PERCENT : every path's alloc-bytes (and
# alloc-objects, within twice the tolerance) against the program's
# "expect FUNC BYTES OBJECTS" lines; 0 tolerance: exactly.  Nothing may be live at the end, and no other
# leaf may hold more than 0.5 % of the bytes (at rate 1: none at all but
# the C library's own stdout buffer).
compare() {
	local dir=$1 expect=$2 tol=$3

	by_leaf "$dir" alloc-bytes >"$NW_TMP/bytes"
	by_leaf "$dir" alloc-objects >"$NW_TMP/objects"
	by_leaf "$dir" inuse-bytes >"$NW_TMP/inuse"
	python3 - "$expect" "$NW_TMP/bytes" "$NW_TMP/objects" "$NW_TMP/inuse" "$tol" <<'PY' || fail "$dir: see above"
import sys

def table(path):
    t = {}
    for line in open(path):
        name, v = line.rsplit(" ", 1)
        t[name] = int(v)
    return t

expect = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "expect":
        expect[f[1]] = (int(f[2]), int(f[3]))
got_b, got_o, inuse = table(sys.argv[2]), table(sys.argv[3]), table(sys.argv[4])
tol = float(sys.argv[5])
bad = []
if len(expect) != 7:
    bad.append("the program printed %d paths, not 7" % len(expect))
for name, (b, o) in sorted(expect.items()):
    gb, go = got_b.get(name, 0), got_o.get(name, 0)
    eb, eo = 100.0 * (gb - b) / b, 100.0 * (go - o) / o
    print("  %-13s bytes %12d of %12d (%+.2f%%)  objects %7d of %7d (%+.2f%%)"
          % (name, gb, b, eb, go, o, eo))
    # Bytes within the tolerance; objects within twice it (a sample of a
    # small block stands for many objects: their estimate varies more).
    if (tol == 0 and (gb != b or go != o)) or abs(eb) > tol or abs(eo) > 2 * tol:
        bad.append("%s: %d bytes in %d objects, expected %d in %d (within %g %%)"
                   % (name, gb, go, b, o, tol))
total = sum(got_b.values())
for name, v in got_b.items():
    if name in expect:
        continue
    # The C library's own: printf's buffer, a new thread's TLS vector (288
    # bytes here; its site is named calloc when the sample stops in the
    # loader's calloc trampoline, as it sometimes does in the sanitizer build).
    if tol == 0 and name in ("_IO_file_doallocate", "__GI__IO_file_doallocate",
                             "allocate_dtv", "_dl_allocate_tls"):
        continue
    if tol == 0 and name == "calloc" and v <= 1024:
        continue
    if tol == 0 or v > 0.005 * total:
        bad.append("unexpected allocation site %s: %d bytes" % (name, v))
for name, v in inuse.items():
    if v and name in expect:
        bad.append("%s: %d bytes still live, but the program freed them" % (name, v))
for b in bad:
    print("FAIL: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

check "default rate: each path's bytes and objects within 5 %, nothing live at the end"
d=$NW_TMP/default.data
# 28 GB allocated in about a second without touching it: 50,000 samples a
# second, far denser than a real program's, 200 MB of records with their
# 4 KiB stack copies (path_signal's handler needs them).  On a machine
# busy with other work the recorder may not run for a while: rings of
# 128 MiB per CPU hold most of the run unread, the program runs at a lower
# priority than the recorder, and no checkpoint stalls the reading.
rec "$d" --alloc -g dwarf,4096 -m 32768 --checkpoint 0 nice -n 10 "$P/alloc" paths 100000
compare "$d" "$d.out" 5
grep -q 'allocation samples (one per 524288 bytes' "$d.err" || {
	nw_show "narwhal-record stderr" "$d.err"
	fail "no summary of the allocation samples"
}
ok "7 paths within 5 %"

check "--alloc-rate 1: every allocation, exactly (dwarf and fp call graphs)"
for mode in dwarf fp; do
	d=$NW_TMP/exact-$mode.data
	rec "$d" --alloc-rate 1 -g "$mode" "$P/alloc" paths 40
	compare "$d" "$d.out" 0
	ok "$mode: exact"
done

check "a shell that forks and execs the program: the preload and the uprobes follow"
d=$NW_TMP/shell.data
rec "$d" --alloc-rate 1 sh -c "'$P/alloc' paths 40; true"
FILTER=(--comm alloc --focus '^paths$')  # not the shell's own, before it execs
compare "$d" "$d.out" 0
FILTER=()
nw_report "$NW_TMP/sh" "$d" --flat --metric alloc-objects --comm sh
[[ -s $NW_TMP/sh ]] || fail "the shell's own allocations are not there"
ok "exact through sh"

check "LD_PRELOAD of the caller is kept, after libnarwhal-alloc"
d=$NW_TMP/preload.data
# (The sanitizer build's narwhal-record runs with that preload too: ASan
# must not insist on coming first.)
LD_PRELOAD=libm.so.6 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
	rec "$d" --alloc sh -c 'echo "$LD_PRELOAD"'
grep -Eq '^/.*/libnarwhal-alloc\.so:libm\.so\.6$' "$d.out" || {
	nw_show "program output" "$d.out"
	fail "LD_PRELOAD in the program is not libnarwhal-alloc.so:libm.so.6"
}
ok "$(cat "$d.out")"

check "C++: new and new[] through malloc, delete through free (rate 1)"
d=$NW_TMP/cxx.data
rec "$d" --alloc-rate 1 "$P/alloc-cxx" 50
for m in alloc-bytes inuse-bytes; do
	nw_report "$NW_TMP/cxx-$m" "$d" --folded --metric "$m"
done
# cxx_objects: 50 Blocks of 4000 bytes, deleted; cxx_arrays: 50 new char[3000], kept.
grep -q ';cxx_objects;operator new(unsigned long) 200000$' "$NW_TMP/cxx-alloc-bytes" &&
	grep -q ';cxx_arrays;operator new(unsigned long) 150000$' "$NW_TMP/cxx-alloc-bytes" &&
	grep -q ';cxx_arrays;operator new(unsigned long) 150000$' "$NW_TMP/cxx-inuse-bytes" &&
	! grep -q ';cxx_objects;operator new(unsigned long) [1-9]' "$NW_TMP/cxx-inuse-bytes" || {
	nw_show "folded alloc-bytes" "$NW_TMP/cxx-alloc-bytes"
	nw_show "folded inuse-bytes" "$NW_TMP/cxx-inuse-bytes"
	fail "C++ allocations are not 200000 and 150000 bytes below operator new"
}
ok "operator new below cxx_objects (200000 bytes, freed) and cxx_arrays (150000, live)"

# leaks_check DIR N TOLERANCE : --leaks lists leak_one, leak_two and
# leak_three (N blocks of 60000, 40000 and 30000 bytes), largest first,
# and nothing else.
leaks_check() {
	local dir=$1 n=$2 tol=$3

	nw_report "$NW_TMP/leaks" "$dir" --leaks
	python3 - "$NW_TMP/leaks" "$n" "$tol" <<'PY' || { nw_show "--leaks" "$NW_TMP/leaks"; fail "$dir: --leaks is wrong"; }
import re
import sys

text = open(sys.argv[1]).read()
n, tol = int(sys.argv[2]), float(sys.argv[3])
want = [("leak_one", 60000 * n), ("leak_two", 40000 * n), ("leak_three", 30000 * n)]
# "BYTES bytes in OBJECTS objects (P%) allocated from:" and the path, leaf first.
blocks = re.findall(r"^(\d+) bytes in (\d+) objects \([^)]*\) allocated from:\n((?:    .*\n)+)",
                    text, re.M)
got = [(b[2].split("\n")[0].split()[0], int(b[0]), int(b[1])) for b in blocks]
print("  " + ", ".join("%s %d bytes in %d objects" % g for g in got))
ok = len(got) == 3
for (name, size), g in zip(want, got):
    err = 100.0 * (g[1] - size) / size
    if g[0] != name or abs(err) > tol or (tol == 0 and (g[1] != size or g[2] != n)):
        ok = False
if not re.search(r"^Leaks: \d+ bytes in \d+ objects still live at exit, from 3 call paths$",
                 text, re.M):
    ok = False
sys.exit(0 if ok else 1)
PY
}

check "--leaks at --alloc-rate 1: exactly the three leak sites and their bytes"
d=$NW_TMP/leaks1.data
rec "$d" --alloc-rate 1 "$P/alloc" leaks 50
leaks_check "$d" 50 0
ok "leak_one, leak_two, leak_three, exact"

check "--leaks at the default rate: the three sites, sizes within 10 %"
d=$NW_TMP/leaks.data
rec "$d" --alloc -g dwarf,4096 --checkpoint 0 "$P/alloc" leaks 20000
leaks_check "$d" 20000 10
ok "three sites within 10 %"

check "pprof: the heap profile's sample types; go tool pprof -sample_index=inuse_space"
nw_go_env
d=$NW_TMP/leaks1.data
nw_report "$NW_TMP/pp" "$d" --pprof "$NW_TMP/heap.pb.gz"
go tool pprof -raw "$NW_TMP/heap.pb.gz" >"$NW_TMP/raw" 2>"$NW_TMP/raw.err" || {
	nw_show "pprof -raw" "$NW_TMP/raw.err"
	fail "go tool pprof -raw rejected the profile"
}
grep -q '^PeriodType: space bytes$' "$NW_TMP/raw" &&
	grep -q '^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes$' \
		"$NW_TMP/raw" || {
	nw_show "pprof -raw" "$NW_TMP/raw"
	fail "not a heap profile's sample types"
}
go tool pprof -sample_index=inuse_space -top "$NW_TMP/heap.pb.gz" >"$NW_TMP/top" 2>&1 || {
	nw_show "pprof -top" "$NW_TMP/top"
	fail "go tool pprof -sample_index=inuse_space -top failed"
}
grep -Eq '^ +2\.86MB +46\.15% +46\.15% +2\.86MB +46\.15% +leak_one$' "$NW_TMP/top" || {
	nw_show "pprof -top" "$NW_TMP/top"
	fail "leak_one does not hold 60000 * 50 bytes (2.86MB, 6/13 of the live bytes) in pprof -top"
}
ok "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes; leak_one 6/13 of inuse_space"

check "the flame graph is in bytes"
nw_report "$NW_TMP/fg" "$d" --flamegraph "$NW_TMP/fg.svg"
grep -q 'alloc-bytes - [0-9]* bytes' "$NW_TMP/fg.svg" && grep -q 'leak_one' "$NW_TMP/fg.svg" || {
	nw_show "flame graph" "$NW_TMP/fg.svg"
	fail "the flame graph's subtitle does not total alloc-bytes in bytes"
}
nw_report "$NW_TMP/fg2" "$d" --flamegraph "$NW_TMP/fg2.svg" --metric inuse-bytes
grep -q 'inuse-bytes - 6500000 bytes' "$NW_TMP/fg2.svg" || fail "--metric inuse-bytes: not 6500000 bytes"
ok "alloc-bytes by default, --metric inuse-bytes"

check "every view takes the four metrics"
for m in alloc-bytes alloc-objects inuse-bytes inuse-objects; do
	for v in --tree --flat --folded --callers=leak_one; do
		nw_report "$NW_TMP/view" "$d" "$v" --metric "$m"
		[[ -s $NW_TMP/view ]] || fail "$v --metric $m printed nothing"
	done
done
ok "--tree, --flat, --folded, --callers"

check "allocations and CPU samples in one run: separate metrics of the same trees"
d=$NW_TMP/both.data
rec "$d" -e cpu-clock --alloc-rate 1 "$P/alloc" paths 40
compare "$d" "$d.out" 0
python3 - "$d/manifest.json" <<'PY' || fail "the metrics are not cpu-clock's and the four of allocations"
import json, sys
names = [m["name"] for m in json.load(open(sys.argv[1]))["metrics"]]
print("  metrics: " + ", ".join(names))
sys.exit(names != ["cpu-clock:samples", "cpu-clock:period", "alloc-objects", "alloc-bytes",
                   "inuse-objects", "inuse-bytes"])
PY
nw_check_measurement "$d"
ok "cpu-clock and allocations; the csprof files read"

check "-p: attached to a running program, every allocation of its C library (rate 1)"
# The probes are defined in tracefs, which a fresh machine has not mounted:
# the recorder runs in a mount namespace of its own where tracefs (and
# debugfs, whose tracing/ is tracefs too) is unmounted first, and must
# mount it itself.  The machine's own mounts are not touched.
"$P/alloc" serve 3 >"$NW_TMP/serve.out" &
pid=$!
sleep 0.5
d=$NW_TMP/attach.data
unshare --mount --propagation private bash -c '
	while umount /sys/kernel/tracing 2>/dev/null || umount /sys/kernel/debug/tracing 2>/dev/null ||
		umount /sys/kernel/debug 2>/dev/null; do :; done
	! grep -qE " (tracefs|debugfs) " /proc/self/mounts || { echo "tracefs is still mounted"; exit 9; }
	"$@" || exit
	grep -q " /sys/kernel/tracing tracefs " /proc/self/mounts || { echo "tracefs not mounted"; exit 9; }
	! grep narwhal_ /sys/kernel/tracing/uprobe_events || { echo "probes left"; exit 9; }
' attach "$NW_RECORD" -o "$d" --alloc-rate 1 -g fp -p "$pid" --duration 1 >"$d.out" 2>"$d.err" || {
	nw_show "narwhal-record stderr" "$d.err"
	fail "narwhal-record -p with tracefs unmounted exited $? (or tracefs was not mounted, or the probes were left)"
}
grep -q ' (0 lost)' "$d.err" || {
	nw_show "narwhal-record stderr" "$d.err"
	fail "the kernel dropped records in narwhal-record -p"
}
wait "$pid" || fail "the program attached to failed (threads created while attached?)"
grep -q '^rounds ' "$NW_TMP/serve.out" || fail "the program attached to did not finish"
for m in alloc-objects inuse-objects alloc-bytes; do
	by_leaf "$d" "$m" >"$NW_TMP/attach-$m"
done
python3 - "$NW_TMP/attach-alloc-objects" "$NW_TMP/attach-inuse-objects" \
	"$NW_TMP/attach-alloc-bytes" <<'PY' || fail "-p: the allocations do not match the program's rounds"
import sys

def table(path):
    return {l.rsplit(" ", 1)[0]: int(l.rsplit(" ", 1)[1]) for l in open(path)}

objs, live, byts = (table(p) for p in sys.argv[1:4])
rounds = objs.get("leak_two", 0)
print("  %d rounds: %s; live %s" % (rounds, objs, live))
ok = rounds > 10
# Per round 3 path_malloc, 2 path_calloc, 1 xmalloc, 1 leak_two: within a
# round of each other (the recording starts and stops mid-round).
for name, per in (("path_malloc", 3), ("path_calloc", 2), ("xmalloc", 1)):
    ok &= abs(objs.get(name, 0) - per * rounds) <= per
ok &= byts.get("path_malloc", 0) == 40000 * objs.get("path_malloc", 0)
ok &= byts.get("leak_two", 0) == 40000 * rounds
# Leaked: every leak_two block; freed (by the program's threads too): all
# but those of the round under way when the recording stopped.
ok &= live.get("leak_two", 0) == rounds
ok &= live.get("path_malloc", 0) <= 1 and live.get("path_calloc", 0) <= 2
ok &= live.get("xmalloc", 0) <= 1
sys.exit(0 if ok else 1)
PY
ok "the rounds' allocations, the leak, frees in threads created while attached; probes removed"

check "errors: -a, a missing library, --leaks of a CPU recording, -p without tracefs"
rc=0
"$NW_RECORD" --alloc -a >"$NW_TMP/e1" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q 'not with -a' "$NW_TMP/e1" || {
	nw_show "stderr" "$NW_TMP/e1"
	fail "--alloc -a: exit $rc"
}
rc=0
NARWHAL_ALLOC_LIBRARY=/nonexistent.so "$NW_RECORD" -o "$NW_TMP/e.data" --alloc true \
	>"$NW_TMP/e2" 2>&1 || rc=$?
[[ $rc -eq 1 ]] && grep -q 'cannot find libnarwhal-alloc.so' "$NW_TMP/e2" || {
	nw_show "stderr" "$NW_TMP/e2"
	fail "a missing library: exit $rc"
}
rc=0
"$NW_REPORT" "$NW_TMP/exact-fp.data" --leaks >"$NW_TMP/e3" 2>&1 || rc=$?
# Everything the paths allocate is freed; the C library keeps printf's
# buffer and a thread's TLS vector.
[[ $rc -eq 0 ]] && ! grep -Eq '^    (path_|xmalloc)' "$NW_TMP/e3" || {
	nw_show "--leaks" "$NW_TMP/e3"
	fail "--leaks of a program that frees its paths' memory lists them"
}
rc=0
"$NW_REPORT" "$NW_TMP/preload.data" --leaks >"$NW_TMP/e4" 2>&1 && rc=0 || rc=$?
[[ $rc -eq 0 ]] || fail "--leaks on an allocation recording exited $rc"
rc=0
"$NW_RECORD" -o "$NW_TMP/cpu.data" -e cpu-clock true >/dev/null 2>&1
"$NW_REPORT" "$NW_TMP/cpu.data" --leaks >"$NW_TMP/e5" 2>&1 || rc=$?
[[ $rc -eq 1 ]] && grep -q 'no allocation metrics' "$NW_TMP/e5" || {
	nw_show "stderr" "$NW_TMP/e5"
	fail "--leaks without allocation metrics: exit $rc"
}
# -p with tracefs unmounted and no right to mount it: the real cause and
# the command to run, not "no C library".
sleep 10 &
pid=$!
rc=0
unshare --mount --propagation private bash -c '
	while umount /sys/kernel/tracing 2>/dev/null || umount /sys/kernel/debug/tracing 2>/dev/null ||
		umount /sys/kernel/debug 2>/dev/null; do :; done
	exec setpriv --bounding-set -sys_admin "$@"' denied \
	"$NW_RECORD" -o "$NW_TMP/e6.data" --alloc -p "$pid" --duration 0.2 >"$NW_TMP/e6" 2>&1 || rc=$?
kill "$pid" 2>/dev/null
[[ $rc -eq 1 ]] && grep -q 'tracefs, which is not mounted and cannot be mounted here' "$NW_TMP/e6" &&
	grep -q 'mount -t tracefs nodev /sys/kernel/tracing' "$NW_TMP/e6" || {
	nw_show "stderr" "$NW_TMP/e6"
	fail "-p without tracefs and without the right to mount it: exit $rc"
}
ok "clear messages"

pass
