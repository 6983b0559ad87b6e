#!/usr/bin/env python3
"""Every narwhal-report view and export on a recorded build of this project
(1,000+ short processes), beside perf report on perf's recording of the
same build, with and without call graphs.

    bench/build.py [--build DIR] [--runs N] [--narwhal DIR --perf FILE]
                   [--keep DIR]

Without --narwhal/--perf, both tools record `meson setup B SRC && ninja -C
B` (tests included: about a thousand processes), one after the other, at
999 Hz of cpu-clock with call graphs (Narwhal's default mode, perf -g).
Each report runs --runs times (default 5): median wall and CPU seconds
and the largest peak resident set (what /usr/bin/time says).
Prints a Markdown table (doc/PERFORMANCE.md, "Reports on a recorded
build"); the measurement's size is its files' bytes.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import du, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

VIEWS = [
    ("--tree", []), ("--flat", []), ("--threads", []), ("--folded", []),
    ("--by module", ["--by", "module"]), ("--callers main", ["--callers", "^main$"]),
    ("--lines main", ["--lines", "^main$"]), ("--addresses main", ["--addresses", "^main$"]),
    ("--stack-health", []), ("--timeline", []),
]
EXPORTS = [
    ("--pprof", "p.pb.gz"), ("--speedscope", "s.json"), ("--chrome-trace", "t.json"),
    ("--flamegraph", "f.svg"), ("--html", "r.html"),
]


def timed(cmd, runs):
    """Median wall and CPU seconds of @cmd over @runs runs, and its largest
    peak RSS as /usr/bin/time reports it: the wait4 of a child forked from
    Python counts the Python process it was (16 MiB) until the exec."""
    res = [run(["/usr/bin/time", "-f", "maxrss %M"] + cmd) for _ in range(runs)]
    rss = [int(r["stderr"].rsplit("maxrss ", 1)[1].split()[0]) for r in res]
    return {"wall": statistics.median(r["wall"] for r in res),
            "cpu": statistics.median(r["cpu"] for r in res), "rss_kib": max(rss)}


def log(msg):
    print(f"bench-build: {msg}", file=sys.stderr, flush=True)


def record(build, tmp):
    """Records the build under both tools; returns (narwhal dir, perf.data)."""
    nw, pf = os.path.join(tmp, "build.data"), os.path.join(tmp, "perf.data")
    for tool, out in (("narwhal", nw), ("perf", pf)):
        bdir = os.path.join(tmp, "b-" + tool)
        cmd = f"meson setup {bdir} {ROOT} >/dev/null && ninja -C {bdir} >/dev/null"
        if tool == "narwhal":
            rec = [os.path.join(build, "tools", "narwhal-record"), "-F", "999", "-o", out]
        else:
            rec = ["perf", "record", "-q", "-g", "-F", "999", "-o", out]
        log(f"recording the build under {tool}")
        subprocess.run(rec + ["--", "sh", "-c", cmd], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(bdir, ignore_errors=True)
    return nw, pf


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--narwhal", help="a recorded build (else one is recorded)")
    ap.add_argument("--perf", help="perf's recording of the same build")
    ap.add_argument("--keep", help="keep the recordings in this directory")
    a = ap.parse_args()
    subprocess.run(["ninja", "-C", a.build], check=True, stdout=subprocess.DEVNULL)
    report = os.path.join(a.build, "tools", "narwhal-report")
    tmp = a.keep or tempfile.mkdtemp(prefix="bench-build.")
    os.makedirs(tmp, exist_ok=True)
    try:
        nw, pf = (a.narwhal, a.perf) if a.narwhal and a.perf else record(a.build, tmp)
        size = du(nw)
        env_cache = os.path.join(tmp, "cache")
        os.environ["NARWHAL_CACHE_DIR"] = env_cache
        threads = sum(1 for line in subprocess.run(
            [report, nw, "--threads"], capture_output=True, text=True, check=True
        ).stdout.splitlines() if line.split()[:1] and line.split()[0].isdigit())
        rows = []
        for name, args in VIEWS:
            args = args or [name]
            rows.append((f"`{name}`", timed([report, nw] + args, a.runs)))
        for opt, out in EXPORTS:
            rows.append((f"`{opt}`", timed([report, nw, opt, os.path.join(tmp, out)], a.runs)))
        perf_rows = [
            ("`perf report --stdio` (call graphs)", ["perf", "report", "-i", pf, "--stdio"]),
            ("`perf report --stdio -g none --no-children`",
             ["perf", "report", "-i", pf, "--stdio", "-g", "none", "--no-children"]),
        ]
        perf = [(n, timed(c, a.runs)) for n, c in perf_rows]
        mib = size / 2**20
        print(f"Measurement: {size:,} bytes ({mib:.1f} MiB), about {threads:,} threads; "
              f"perf.data {os.path.getsize(pf) / 2**20:.1f} MiB.  Medians of {a.runs} runs.\n")
        print("| view or export | wall s | CPU s | peak MiB | peak / measurement |")
        print("|---|---|---|---|---|")
        for n, r in rows + perf:
            peak = r["rss_kib"] / 1024
            print(f"| {n} | {r['wall']:.3f} | {r['cpu']:.3f} | {peak:.1f} | {peak / mib:.2f}x |")
        slow = max(r["wall"] for _, r in rows)
        print(f"\nSlowest Narwhal report {slow:.3f} s; perf report without call graphs "
              f"{perf[1][1]['wall']:.3f} s ({perf[1][1]['wall'] / slow:.1f}x), with "
              f"{perf[0][1]['wall']:.3f} s ({perf[0][1]['wall'] / slow:.1f}x).")
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
