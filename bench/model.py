#!/usr/bin/env python3
"""The measurement model at scale: every narwhal-report view and export on
a large recording and on a worst case, beside perf report, and the
recorder's cost per sample against an older build.

    bench/model.py [--build DIR] [--old DIR] [--runs N] [--samples N]
                   [--leaves N] [--doc FILE] [--keep DIR]

- paths: bench/workloads/paths.c (8 threads, 10,000 call patterns 5 to 44
  frames deep) recorded with fp call chains and -c 50000 of cpu-clock:u (user space),
  sized for --samples samples (default 1.1 M); perf record -g with the
  same event and period beside it, for perf report.
- worst: bench-synth's measurement of --leaves distinct deep paths (default
  2^20: about 4.5 M nodes, 210 MiB), one thread.
- recorder: narwhal-record -v on paths and on work (few stacks) with this
  build, with this build and --no-trace, and, with --old, an older build's
  narwhal-record, interleaved; the recorder's CPU per sample is what its -v
  line says (sampling loop) and its whole CPU less the program's own.
- time: the traces' bytes per sample on paths, and narwhal-report --time
  (a middle half of the run) and --timeline on it.

Each command runs --runs times (default 3); medians of wall and CPU
seconds, and the largest peak resident set (ru_maxrss of the child, from
wait4).  Writes a markdown section into --doc (default doc/PERFORMANCE.md)
between "<!-- bench-model: begin -->" and "<!-- bench-model: end -->",
and the raw results to doc/performance/model.json.
"""
import argparse
import json
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
PERIOD = 50000


def log(msg):
    print(f"bench-model: {msg}", file=sys.stderr, flush=True)


def run(cmd, stdout=subprocess.DEVNULL, check=True):
    """Runs @cmd: wall and CPU seconds, peak RSS (KiB, its own), stdout, stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out if stdout == subprocess.PIPE else stdout,
                             stderr=err, text=True)
        # wait4, not wait: the child's own rusage (its CPU and its peak RSS).
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = rc = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        o, e = out.read(), err.read()
    if check and rc != 0:
        raise RuntimeError(f"failed ({rc}): {' '.join(cmd)}\n{e[-2000:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_kib": ru.ru_maxrss,
            "stdout": o, "stderr": e}


def timed(cmd, runs):
    res = [run(cmd) for _ in range(runs)]
    return {"wall": statistics.median(r["wall"] for r in res),
            "cpu": statistics.median(r["cpu"] for r in res),
            "rss_kib": max(r["rss_kib"] for r in res)}


def du(path):
    total = 0
    for dp, _, fs in os.walk(path):
        for f in fs:
            total += os.path.getsize(os.path.join(dp, f))
    return total


def build_workloads(tmp):
    exes = {}
    for name in ("paths", "work"):
        exe = os.path.join(tmp, name)
        subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread",
                        os.path.join(HERE, "workloads", name + ".c"), "-o", exe, "-lm"],
                       check=True)
        exes[name] = exe
    return exes


def cpu_per_unit(prog, units):
    """CPU seconds per unit of work of @prog (which does @units), from its rusage line."""
    out = run(prog, stdout=subprocess.PIPE)["stdout"]
    for line in out.splitlines():
        if line.startswith("rusage "):
            f = line.split()
            return (float(f[1]) + float(f[2])) / units
    raise RuntimeError("no rusage line")


# User space only, for every recorder: the model's targets were set on user
# stacks, the older build has no kernel frames, and perf is asked the same
# (kernel frames are measured by bench/system.py).
EVENT = "cpu-clock:u"

VIEWS = [
    ("--tree", []), ("--flat", []), ("--folded", []), ("--threads", []),
    ("--stack-health", []), ("--pprof", ["out.pb.gz"]), ("--speedscope", ["out.json"]),
    ("--flamegraph", ["out.svg"]),
]


def time_views(rep, data, tmp, runs):
    res = {}
    for view, files in VIEWS:
        args = [view] + [os.path.join(tmp, f) for f in files]
        res[view] = timed([rep, data] + args, runs)
        log(f"  {view}: {res[view]['cpu']:.3f} s CPU, {res[view]['rss_kib'] / 1024:.0f} MiB")
    return res


def recorder_cost(rec, prog, data, runs, extra=()):
    """Median loop and whole-recorder microseconds per sample."""
    loops, wholes, samples = [], [], []
    for _ in range(runs):
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(data + ".old", ignore_errors=True)
        r = run([rec, "-v", "-e", EVENT, "-c", str(PERIOD), "-g", "fp", *extra, "-o", data,
                 "--"] + prog, stdout=subprocess.PIPE)
        m = re.search(r"\(([\d.]+) us per sample\)", r["stderr"])
        with open(os.path.join(data, "manifest.json")) as f:
            n = json.load(f)["samples"]
        prog_cpu = None
        for line in r["stdout"].splitlines():
            if line.startswith("rusage "):
                f = line.split()
                prog_cpu = float(f[1]) + float(f[2])
        loops.append(float(m.group(1)) if m else float("nan"))
        wholes.append(1e6 * (r["cpu"] - (prog_cpu or 0)) / max(n, 1))
        samples.append(n)
    return {"loop_us": statistics.median(loops), "whole_us": statistics.median(wholes),
            "samples": int(statistics.median(samples))}


def markdown(r):
    mib = lambda b: b / 1048576
    lines = []
    p, w = r["paths"], r["worst"]
    lines.append(f"Measured by `bench/model.py` on {r['date']} ({r['machine']}); medians of "
                 f"{r['runs']} runs, peak resident set of the report process.")
    lines.append("")
    lines.append(f"- **paths**: {p['samples']:,} samples, {p['distinct']:,} distinct stacks, "
                 f"{p['nodes']:,} tree nodes; measurement {mib(p['bytes']):.0f} MiB "
                 f"(perf.data {mib(p['perf_bytes']):.0f} MiB).")
    lines.append(f"- **worst case**: `bench-synth` with {w['leaves']:,} distinct deep paths, "
                 f"{w['nodes']:,} nodes; measurement {mib(w['bytes']):.0f} MiB.")
    lines.append("")
    lines.append("| view or export | paths: wall s (CPU s) | paths: peak MiB | worst: wall s (CPU s) "
                 "| worst: peak MiB (x size) |")
    lines.append("|---|---|---|---|---|")
    for view, _ in VIEWS:
        a, b = p["views"][view], w["views"][view]
        lines.append(f"| `{view}` | {a['wall']:.3f} ({a['cpu']:.3f}) | {a['rss_kib'] / 1024:.0f} "
                     f"| {b['wall']:.3f} ({b['cpu']:.3f}) | {b['rss_kib'] / 1024:.0f} "
                     f"({b['rss_kib'] * 1024 / w['bytes']:.2f}x) |")
    if p.get("perf_report"):
        pr = p["perf_report"]
        slowest = max(v["wall"] for v in p["views"].values())
        lines.append(f"| `perf report --stdio` (same run) | {pr['wall']:.3f} ({pr['cpu']:.3f}) | "
                     f"{pr['rss_kib'] / 1024:.0f} | | |")
        lines.append("")
        lines.append(f"The slowest Narwhal view or export on paths takes {slowest:.3f} s wall, "
                     f"{pr['wall'] / slowest:.0f}x less than `perf report`.")
    if p.get("trace_bytes"):
        t = p["time"]
        lines.append("")
        lines.append(f"Traces on paths: {p['trace_bytes'] / p['samples']:.2f} bytes per sample "
                     f"({mib(p['trace_bytes']):.1f} MiB of the {mib(p['bytes']):.0f} MiB "
                     f"measurement; perf.data {mib(p['perf_bytes']):.0f} MiB).  "
                     f"`--time 25%,75% --flat` on its {p['samples']:,} samples: "
                     f"{t['range']['wall']:.3f} s wall ({t['range']['cpu']:.3f} s CPU, "
                     f"{t['range']['rss_kib'] / 1024:.0f} MiB); `--timeline`: "
                     f"{t['timeline']['wall']:.3f} s ({t['timeline']['cpu']:.3f} s CPU); "
                     f"`--flat` of the whole run: {p['views']['--flat']['wall']:.3f} s.")
    if r.get("recorder"):
        lines.append("")
        lines.append("Recorder cost per sample (fp, -c 50000, medians): the sampling loop as "
                     "`narwhal-record -v` reports it, and the whole recorder's CPU less the "
                     "program's, per sample.")
        lines.append("")
        lines.append("| workload | build | samples | loop µs/sample | whole recorder µs/sample |")
        lines.append("|---|---|---|---|---|")
        for wl, builds in r["recorder"].items():
            for name, c in builds.items():
                lines.append(f"| {wl} | {name} | {c['samples']:,} | {c['loop_us']:.2f} | "
                             f"{c['whole_us']:.2f} |")
    return "\n".join(lines)


def write_doc(path, text):
    begin, end = "<!-- bench-model: begin -->", "<!-- bench-model: end -->"
    doc = open(path).read() if os.path.exists(path) else ""
    block = f"{begin}\n{text}\n{end}"
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc += "\n## The measurement model at scale\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(doc)


def count_nodes(rep, data):
    out = run([rep, data, "--folded"], stdout=subprocess.PIPE)["stdout"]
    return sum(1 for line in out.splitlines() if line.strip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--old")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--samples", type=int, default=1100000)
    ap.add_argument("--leaves", type=int, default=1 << 20)
    ap.add_argument("--doc", default=os.path.join(ROOT, "doc", "PERFORMANCE.md"))
    ap.add_argument("--keep")
    a = ap.parse_args()

    rec = os.path.join(a.build, "tools", "narwhal-record")
    rep = os.path.join(a.build, "tools", "narwhal-report")
    synth = os.path.join(a.build, "bench", "bench-synth")
    subprocess.run(["ninja", "-C", a.build], check=True, stdout=subprocess.DEVNULL)
    tmp = a.keep or tempfile.mkdtemp(prefix="narwhal-bench-model.")
    os.makedirs(tmp, exist_ok=True)
    exes = build_workloads(tmp)
    r = {"date": time.strftime("%Y-%m-%d"), "runs": a.runs,
         "machine": f"{os.cpu_count()} CPUs, {os.uname().release}"}

    # paths, sized for the samples asked for
    per_unit = cpu_per_unit([exes["paths"], "2", "20000"], 20000)
    units = int(a.samples * PERIOD / 1e9 / per_unit)
    prog = [exes["paths"], "8", str(units)]
    pdata, perfdata = os.path.join(tmp, "paths.data"), os.path.join(tmp, "paths.perf")
    log(f"recording paths 8 {units} with narwhal-record and perf record")
    shutil.rmtree(pdata, ignore_errors=True)
    run([rec, "-q", "-e", EVENT, "-c", str(PERIOD), "-g", "fp", "-o", pdata, "--"] + prog)
    with open(os.path.join(pdata, "manifest.json")) as f:
        got = json.load(f)["samples"]
    # The CPU per unit of 2 threads alone is not that of 8 on 2 CPUs (nor of a
    # loaded machine): sized again from the samples the first recording got.
    if abs(got - a.samples) > 0.1 * a.samples:
        units = max(1000, int(units * a.samples / max(got, 1)))
        prog = [exes["paths"], "8", str(units)]
        log(f"{got} samples, not about {a.samples}: recording paths 8 {units} again")
        shutil.rmtree(pdata, ignore_errors=True)
        run([rec, "-q", "-e", EVENT, "-c", str(PERIOD), "-g", "fp", "-o", pdata, "--"] + prog)
    run(["perf", "record", "-q", "-e", EVENT, "-c", str(PERIOD), "-g", "-o", perfdata,
         "--"] + prog)
    with open(os.path.join(pdata, "manifest.json")) as f:
        samples = json.load(f)["samples"]
    nodes = sum(os.path.getsize(os.path.join(pdata, f)) for f in os.listdir(pdata)
                if f.endswith(".csprof")) // 48
    r["paths"] = {"samples": samples, "bytes": du(pdata), "perf_bytes": os.path.getsize(perfdata),
                  "distinct": count_nodes(rep, pdata), "nodes": nodes}
    r["paths"]["trace_bytes"] = sum(os.path.getsize(os.path.join(pdata, f)) - 48
                                    for f in os.listdir(pdata) if f.endswith(".trace"))
    log(f"paths: {samples} samples, {r['paths']['trace_bytes'] / samples:.2f} trace bytes "
        f"per sample; views:")
    r["paths"]["views"] = time_views(rep, pdata, tmp, a.runs)
    r["paths"]["time"] = {
        "range": timed([rep, pdata, "--time", "25%,75%", "--flat"], a.runs),
        "timeline": timed([rep, pdata, "--timeline"], a.runs)}
    log(f"  --time 25%,75% --flat: {r['paths']['time']['range']['wall']:.3f} s; --timeline: "
        f"{r['paths']['time']['timeline']['wall']:.3f} s")
    r["paths"]["perf_report"] = timed(["perf", "report", "-i", perfdata, "--stdio"], a.runs)

    wdata = os.path.join(tmp, "worst.data")
    shutil.rmtree(wdata, ignore_errors=True)
    run([synth, wdata, str(a.leaves)])
    r["worst"] = {"leaves": a.leaves, "bytes": du(wdata),
                  "nodes": sum(os.path.getsize(os.path.join(wdata, f)) for f in os.listdir(wdata)
                               if f.endswith(".csprof")) // 48}
    log(f"worst case: {r['worst']['bytes'] / 1048576:.0f} MiB; views:")
    r["worst"]["views"] = time_views(rep, wdata, tmp, a.runs)

    r["recorder"] = {}
    # A quarter of the paths run's CPU each; work's units are its own.
    wunits = int(units // 4 * per_unit / cpu_per_unit([exes["work"], "2", "2000", "10"], 2000))
    wprog = {"paths": [exes["paths"], "8", str(units // 4)],
             "work": [exes["work"], "8", str(wunits), "10"]}
    for wl, prg in wprog.items():
        this = os.path.join(a.build, "tools", "narwhal-record")
        builds = {"this": (this, ()), "this, --no-trace": (this, ("--no-trace",))}
        if a.old:
            builds["old"] = (os.path.join(a.old, "tools", "narwhal-record"), ())
        res = {name: [] for name in builds}
        for _ in range(a.runs):
            for name, (path, extra) in builds.items():
                res[name].append(recorder_cost(path, prg, os.path.join(tmp, "rec.data"), 1,
                                               extra))
        r["recorder"][wl] = {name: {k: statistics.median(x[k] for x in v) for k in v[0]}
                             for name, v in res.items()}
        for name, c in r["recorder"][wl].items():
            log(f"recorder {wl} {name}: loop {c['loop_us']:.2f} us, whole {c['whole_us']:.2f} us")

    os.makedirs(os.path.join(ROOT, "doc", "performance"), exist_ok=True)
    with open(os.path.join(ROOT, "doc", "performance", "model.json"), "w") as f:
        json.dump(r, f, indent=1)
    write_doc(a.doc, markdown(r))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    print(markdown(r))


if __name__ == "__main__":
    main()
