#!/usr/bin/env python3
"""Allocation profiling's costs (doc/ALLOCATIONS.md, doc/PERFORMANCE.md).

    bench/alloc.py [--build DIR] [--runs N] [--millions M] [--threads T] [--only PARTS]

1. The mechanism: build/bench/bench-allocmech times one malloc+free pair
   bare, with libnarwhal-alloc preloaded (default rate; rate 1, markers
   unprobed) and under a uprobe on libc's malloc (sample per call; without
   and with a 16 KiB stack copy, its ring drained by a thread).
2. Against heaptrack (Debian's /usr/bin/heaptrack) on bench/workloads/
   mallocs.c, T threads and M million small allocations: the run time each
   tool adds to the bare run, narwhal-record --alloc at the default rate
   and heaptrack interleaved in rounds, medians, and the ratio within each
   round (its median).
3. --alloc-rate 1: what each allocation costs when every one is recorded
   (a fiftieth of the workload), in both call-graph modes, with the
   records the kernel dropped.
4. Attached (-p --alloc, uprobes on the C library: every call traps): the
   workload (a fiftieth) sleeps while narwhal-record attaches, then its own
   wall time, in each call-graph mode (bpf: every return unwound in the
   kernel; dwarf: a 16 KiB stack copy with each).

Prints Markdown tables.  Python 3 standard library only.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def timed(cmd, env=None, cwd=None):
    """Wall seconds of cmd (which must succeed), and its stdout+stderr."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    t = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}")
    return t, p.stdout


def libc_malloc_offset():
    """malloc's file offset in the C library the bench binaries use."""
    libc = None
    for line in subprocess.run(["ldd", "/bin/true"], stdout=subprocess.PIPE, text=True).stdout.splitlines():
        m = re.search(r"=> (\S*libc\.so\.6)", line)
        if m:
            libc = os.path.realpath(m.group(1))
    syms = subprocess.run(["readelf", "-Ws", "--dyn-syms", libc], stdout=subprocess.PIPE,
                          text=True).stdout
    value = None
    for line in syms.splitlines():
        f = line.split()
        if len(f) > 7 and f[7].startswith("malloc@@"):
            value = int(f[1], 16)
    phdrs = subprocess.run(["readelf", "-lW", libc], stdout=subprocess.PIPE, text=True).stdout
    for line in phdrs.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            off, vaddr, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if vaddr <= value < vaddr + filesz:
                return libc, value - vaddr + off
    sys.exit("malloc not found in " + libc)


def mechanism(build, runs):
    exe = os.path.join(build, "bench", "bench-allocmech")
    lib = os.path.join(build, "src", "alloc", "libnarwhal-alloc.so")
    libc, off = libc_malloc_offset()
    env = dict(os.environ)
    pre = dict(env, LD_PRELOAD=lib)
    pre1 = dict(pre, NARWHAL_ALLOC_RATE="1")
    configs = [
        ("bare", [exe, "5000000"], env),
        ("libnarwhal-alloc preloaded, default rate", [exe, "5000000"], pre),
        ("libnarwhal-alloc preloaded, rate 1 (markers not probed)", [exe, "5000000"], pre1),
        ("uprobe on libc malloc, sample per call", [exe, "200000", "uprobe", libc, hex(off)], env),
        ("uprobe on libc malloc, with registers and 16 KiB stack copy",
         [exe, "200000", "uprobe", libc, hex(off), "stack"], env),
    ]
    res = {name: [] for name, _, _ in configs}
    lost = {}
    for r in range(runs):
        for name, cmd, e in configs:
            _, out = timed(cmd, env=e)
            res[name].append(float(re.search(r"ns_per_pair ([\d.]+)", out).group(1)))
            m = re.search(r"samples (\d+) lost (\d+)", out)
            if m:
                lost[name] = (int(m.group(1)), int(m.group(2)))
    print("\n| mechanism | ns per malloc+free pair (median of %d) |" % runs)
    print("|---|---:|")
    for name, _, _ in configs:
        extra = ""
        if name in lost:
            s, l = lost[name]
            extra = " (%d samples, %d lost)" % (s, l)
        print("| %s | %.1f%s |" % (name, statistics.median(res[name]), extra))


def build_workload(tmp):
    work = os.path.join(tmp, "mallocs")
    subprocess.run(["gcc", "-O2", "-g", "-pthread", "-o", work,
                    os.path.join(HERE, "workloads", "mallocs.c")], check=True)
    return work


def heaptrack_compare(build, runs, threads, millions, work, tmp):
    rec = os.path.join(build, "tools", "narwhal-record")
    args = [work, str(threads), str(millions)]
    heaptrack = shutil.which("heaptrack")
    if not heaptrack:
        sys.exit("heaptrack is not installed (apt-get install heaptrack)")
    bare, nw, ht, ratio = [], [], [], []
    log("warm-up")
    timed(args)
    for r in range(runs):
        log(f"round {r + 1}/{runs}")
        tb, _ = timed(args)
        tn, out = timed([rec, "-q", "-o", os.path.join(tmp, "nw.data"), "--alloc"] + args)
        th, _ = timed([heaptrack, "-o", os.path.join(tmp, "ht")] + args, cwd=tmp)
        for f in os.listdir(tmp):
            if f.startswith("ht"):
                os.unlink(os.path.join(tmp, f))
        bare.append(tb)
        nw.append(tn)
        ht.append(th)
        ratio.append((tn - tb) / (th - tb) if th > tb else float("nan"))
    allocs = int(millions * 1e6)
    print("\n| %d threads, %g M allocations | wall s (median of %d) | added s | added ns per allocation |"
          % (threads, millions, runs))
    print("|---|---:|---:|---:|")
    mb = statistics.median(bare)
    print("| bare | %.3f | | |" % mb)
    for name, v in (("narwhal-record --alloc (default rate)", nw), ("heaptrack", ht)):
        m = statistics.median(v)
        print("| %s | %.3f | %.3f | %.1f |" % (name, m, m - mb, (m - mb) * 1e9 / allocs))
    print("\nnarwhal-record --alloc adds %.3f of what heaptrack adds (median of the rounds' "
          "ratios; each round: %s)" % (statistics.median(ratio),
                                       ", ".join("%.3f" % x for x in ratio)))


def rate_one(build, runs, threads, millions, work, tmp):
    rec = os.path.join(build, "tools", "narwhal-record")
    m = millions / 50
    args = [work, str(threads), str(m)]
    allocs = int(m * 1e6)
    print("\n| --alloc-rate 1, %d threads, %g M allocations | wall s (median of %d) | "
          "added us per allocation | records lost |" % (threads, m, runs))
    print("|---|---:|---:|---:|")
    res = {"bare": [], "dwarf": [], "fp": []}
    lost = {}
    for r in range(runs):
        res["bare"].append(timed(args)[0])
        for mode in ("dwarf", "fp"):
            t, out = timed([rec, "-o", os.path.join(tmp, "r1.data"), "--alloc-rate", "1", "-g",
                            mode] + args)
            res[mode].append(t)
            lm = re.search(r"\((\d+) lost", out)
            lost[mode] = int(lm.group(1)) if lm else 0
    mb = statistics.median(res["bare"])
    print("| bare | %.3f | | |" % mb)
    for mode in ("dwarf", "fp"):
        md = statistics.median(res[mode])
        print("| -g %s | %.3f | %.2f | %d |" % (mode, md, (md - mb) * 1e6 / allocs, lost[mode]))


def attached(build, runs, threads, millions, work, tmp):
    rec = os.path.join(build, "tools", "narwhal-record")
    m = millions / 50
    allocs = int(m * 1e6)
    modes = ("fp", "dwarf", "bpf")
    res = {k: [] for k in ("bare",) + modes}
    lost = {}

    def own_wall(out):
        w = re.search(r"wall_s ([0-9.]+)", out)
        if not w:
            sys.exit("the workload printed no wall time: " + out)
        return float(w.group(1))

    for r in range(runs):
        log(f"attached round {r + 1}/{runs}")
        res["bare"].append(own_wall(timed([work, str(threads), str(m), "0"])[1]))
        for mode in modes:
            p = subprocess.Popen([work, str(threads), str(m), "1.5"], stdout=subprocess.PIPE,
                                 text=True)
            time.sleep(0.1)
            rp = subprocess.Popen([rec, "-o", os.path.join(tmp, "att.data"), "--alloc", "-g",
                                   mode, "-p", str(p.pid)], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            out, _ = p.communicate()
            rout, _ = rp.communicate()
            if rp.returncode or p.returncode:
                sys.exit("-p --alloc -g %s failed:\n%s" % (mode, rout))
            res[mode].append(own_wall(out))
            lm = re.search(r"\((\d+) lost", rout)
            lost[mode] = int(lm.group(1)) if lm else 0
    print("\n| -p --alloc (default rate), %d threads, %g M allocations | the workload's wall s "
          "(median of %d) | added µs per allocation | records lost |" % (threads, m, runs))
    print("|---|---:|---:|---:|")
    mb = statistics.median(res["bare"])
    print("| not attached | %.3f | | |" % mb)
    for mode in modes:
        md = statistics.median(res[mode])
        print("| -g %s | %.3f | %.2f | %d |" % (mode, md, (md - mb) * 1e6 / allocs, lost[mode]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--millions", type=float, default=10)
    ap.add_argument("--only", default="mechanism,heaptrack,rate1,attached",
                    help="the parts to run, comma-separated (default: all)")
    a = ap.parse_args()
    only = a.only.split(",")
    subprocess.run(["ninja", "-C", a.build], check=True, stdout=subprocess.DEVNULL)
    with open("/proc/loadavg") as f:
        print("load average at the start: " + " ".join(f.read().split()[:3]))
    print("CPUs: %d, kernel %s" % (os.cpu_count(), os.uname().release))
    with tempfile.TemporaryDirectory() as tmp:
        work = build_workload(tmp)
        for name, part in (("mechanism", lambda: mechanism(a.build, a.runs)),
                           ("heaptrack", lambda: heaptrack_compare(a.build, a.runs, a.threads,
                                                                   a.millions, work, tmp)),
                           ("rate1", lambda: rate_one(a.build, a.runs, a.threads, a.millions,
                                                      work, tmp)),
                           ("attached", lambda: attached(a.build, a.runs, a.threads, a.millions,
                                                         work, tmp))):
            if name in only:
                log(name)
                part()
    with open("/proc/loadavg") as f:
        print("\nload average at the end: " + " ".join(f.read().split()[:3]))


if __name__ == "__main__":
    main()
