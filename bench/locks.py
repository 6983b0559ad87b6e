#!/usr/bin/env python3
"""Lock contention's costs (doc/LOCKS.md, doc/PERFORMANCE.md).

    bench/locks.py [--build DIR] [--runs N] [--pairs N] [--calls N] [--contend N]
                   [--threads T]

1. An uncontended pthread_mutex_lock+unlock pair (bench-lockmech pair):
   bare, under narwhal-record --locks (the kernel's futex tracepoints:
   nothing runs in the program) and with bench-lockinterpose.so preloaded
   (the interposer's way: trylock first, a clock only on contention).
   Runs interleaved, medians.
2. A futex wait that returns at once (bench-lockmech futex: the least a
   contended acquisition's system call costs), per call, bare and under
   each tool below.
3. A contention-heavy program (bench-lockmech contend: T threads, N
   lock+unlock pairs each on two mutexes, critical sections of about
   1 us): its wall time, the CPU seconds of the program (its own
   getrusage: its share of the kernel's work per futex call included) and
   of the tool (RUSAGE_CHILDREN less the program's, where the tool reaps
   it), bare, under narwhal-record --locks at the default rate and at
   --lock-rate 1, under perf trace -e futex (a line per futex call,
   written to /dev/null) and perf lock record (the kernel's own lock
   tracepoints, for the scale; it sees no user-space lock).

Prints Markdown tables.  Python 3 standard library only.
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd, env=None):
    """stdout+stderr of cmd, which must succeed, and the CPU seconds of its processes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.stdout, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--contend", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=50_000_000)
    a = ap.parse_args()
    mech = os.path.join(a.build, "bench", "bench-lockmech")
    interposer = os.path.join(a.build, "bench", "bench-lockinterpose.so")
    record = os.path.join(a.build, "tools", "narwhal-record")
    tmp = tempfile.mkdtemp(prefix="narwhal-bench-locks.")
    out = os.path.join(tmp, "n.data")
    perf = shutil.which("perf")

    ways = {
        "bare": ([], None),
        "narwhal-record --locks": ([record, "-q", "-o", out, "--locks"], None),
        "interposer preloaded": ([], dict(os.environ, LD_PRELOAD=interposer)),
    }
    pair = {k: [] for k in ways}
    for _ in range(a.runs):
        for name, (pre, env) in ways.items():
            text, _ = run(pre + [mech, "pair", str(a.pairs)], env)
            pair[name].append(float(re.search(r"pair ([\d.]+) ns", text).group(1)))
    print("| uncontended lock+unlock pair | ns (median of %d) | added |" % a.runs)
    print("|---|---:|---:|")
    base = statistics.median(pair["bare"])
    for name, v in pair.items():
        m = statistics.median(v)
        print(f"| {name} | {m:.2f} | {m - base:+.2f} |")
    print()

    calls = str(a.calls)
    tools = [("bare", [])]
    tools.append(("narwhal-record --locks (default rate)", [record, "-v", "-o", out, "--locks"]))
    tools.append(("narwhal-record --locks --lock-rate 1",
                  [record, "-v", "-o", out, "--locks", "--lock-rate", "1"]))
    if perf:
        tools.append(("perf trace -e futex", [perf, "trace", "-e", "futex", "-o", os.devnull]))
        tools.append(("perf lock record (kernel locks)",
                      [perf, "lock", "record", "-o", os.path.join(tmp, "perf.data")]))
    fut = {k: [] for k, _ in tools}
    for _ in range(a.runs):
        for name, pre in tools:
            text, _ = run(pre + [mech, "futex", calls])
            fut[name].append(float(re.search(r"futex ([\d.]+) ns", text).group(1)))
    print(f"| a futex wait that returns at once ({a.calls} calls) | ns per call (median of "
          f"{a.runs}) | added |")
    print("|---|---:|---:|")
    base = statistics.median(fut["bare"])
    for name, v in fut.items():
        m = statistics.median(v)
        print(f"| {name} | {m:.0f} | {m - base:+.0f} |")
    print()

    n, thr = str(a.contend), str(a.threads)
    rows = {k: [] for k, _ in tools}
    notes = {}
    for _ in range(a.runs):
        for name, pre in tools:
            text, cpu = run(pre + [mech, "contend", n, thr])
            m = re.search(r"contend ([\d.]+) wall ([\d.]+) cpu", text)
            rows[name].append((float(m.group(1)), float(m.group(2)), cpu))
            w = re.search(r"(\d+) futex waits, (\d+) sampled.*?(\d+) releases seen", text)
            if w:
                notes.setdefault(name, []).append((int(w.group(1)), int(w.group(2)),
                                                    int(w.group(3))))
    print(f"| {thr} threads x {n} lock+unlock pairs on two mutexes | wall s | program CPU s | "
          "tool CPU s | added CPU s | waits (sampled), releases |")
    print("|---|---:|---:|---:|---:|---|")

    def split(r):
        # The tool's own CPU: all of it less the program's, where the tool reaped the
        # program (its CPU then counts in RUSAGE_CHILDREN), else all of it.
        return r[1], (r[2] - r[1] if r[2] >= r[1] else r[2])

    base_prog = statistics.median(split(r)[0] for r in rows["bare"])
    for name, v in rows.items():
        wall = statistics.median(r[0] for r in v)
        prog = statistics.median(split(r)[0] for r in v)
        tool = statistics.median(split(r)[1] for r in v) if name != "bare" else 0.0
        k = notes.get(name)
        extra = ""
        if k:
            extra = "%d (%d), %d" % tuple(statistics.median(x[i] for x in k) for i in range(3))
        print(f"| {name} | {wall:.2f} | {prog:.2f} | {tool:.2f} | "
              f"{prog - base_prog + tool:+.2f} | {extra} |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
