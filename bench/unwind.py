#!/usr/bin/env python3
"""Unwinding cost beside perf: fp, hybrid and dwarf modes on the same programs.

Builds the workloads in bench/workloads, then for each workload and mode runs
the program bare, under narwhal-record and under perf record (same event,
frequency and stack copy size), RUNS times each, and reports medians of:
  - added CPU per sample: CPU of the whole run minus the bare program's,
    divided by the samples (recorder plus the kernel's sampling work),
  - Narwhal's own recorder CPU per sample in its sampling loop (narwhal-record -v),
  - record + report CPU (report: narwhal-report --tree; perf report --stdio),
  - measurement size on disk,
  - the share of samples whose stack reaches a thread entry (_start, main,
    start_thread, clone...).
Prints a Markdown table (and writes --json FILE).  Needs gcc and perf; run it on
an otherwise idle machine.  Usage: bench/unwind.py [--build build] [--runs 5]
"""
import argparse, json, os, re, resource, shutil, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as bench  # noqa: E402  (bench/run.py's helpers)

ENTRY = re.compile(r"^(_start|__libc_start_main\w*|__libc_start_call_main|main|start_thread|clone3?|__clone3?)(;|$)")


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_measured(cmd):
    """Runs cmd; returns (CPU seconds of it and its children, stderr)."""
    before = cpu_children()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return cpu_children() - before, p.stderr


def du(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def complete_share(stacks):
    """stacks: (root-first frames joined by ';', count) pairs."""
    total = sum(n for _, n in stacks)
    complete = sum(n for s, n in stacks if ENTRY.match(s))
    return 100.0 * complete / total if total else 0.0


def narwhal(build, prog, mode, tmp, freq, bare):
    rec, rep = os.path.join(build, "tools/narwhal-record"), os.path.join(build, "tools/narwhal-report")
    out = os.path.join(tmp, "n.data")
    total, err = run_measured([rec, "-v", "-e", "cpu-clock", "-F", str(freq), "-g", mode,
                               "-o", out, "--"] + prog)
    loop = re.search(r"sampling \(([\d.]+) us per sample\)", err)
    samples = json.load(open(os.path.join(out, "manifest.json")))["samples"]
    rep_cpu, _ = run_measured([rep, out, "--tree"])
    folded = subprocess.run([rep, out, "--folded"], capture_output=True, text=True).stdout
    stacks = [(l.rpartition(" ")[0], int(l.rpartition(" ")[2])) for l in folded.splitlines() if l]
    shutil.rmtree(out + ".old", ignore_errors=True)
    return {"samples": samples, "added_us": 1e6 * (total - bare) / max(samples, 1),
            "loop_us": float(loop.group(1)) if loop else 0.0, "total_s": total - bare + rep_cpu,
            "bytes": du(out), "complete": complete_share(stacks)}


def perf(prog, mode, tmp, freq, bare):
    out = os.path.join(tmp, "perf.data")
    cg = {"fp": "fp", "dwarf": "dwarf,16384", "hybrid": "dwarf,2048"}[mode]
    total, _ = run_measured(["perf", "record", "-q", "-e", "cpu-clock:u", "-F", str(freq),
                             "--call-graph", cg, "-o", out, "--"] + prog)
    rep_cpu, _ = run_measured(["perf", "report", "-i", out, "--stdio", "--no-children"])
    stacks = [(s, 1) for s in bench.perf_stacks(out)]
    return {"samples": len(stacks), "added_us": 1e6 * (total - bare) / max(len(stacks), 1),
            "loop_us": 0.0, "total_s": total - bare + rep_cpu, "bytes": du(out),
            "complete": complete_share(stacks)}


def median_run(fn, runs):
    rs = [fn() for _ in range(runs)]
    return {k: statistics.median([r[k] for r in rs]) for k in rs[0]}


def build_workloads(tmp):
    src = os.path.join(HERE, "workloads")
    exes = {}
    for name, source, flags in (("sort-nofp", "sortwork.c", ["-fomit-frame-pointer"]),
                                ("sort-fp", "sortwork.c", ["-fno-omit-frame-pointer"]),
                                ("deep", "deep.c", ["-fno-omit-frame-pointer"])):
        exe = os.path.join(tmp, name)
        subprocess.run(["gcc", "-O2", "-g"] + flags + [os.path.join(src, source), "-o", exe], check=True)
        exes[name] = exe
    return exes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--freq", type=int, default=999)
    ap.add_argument("--seconds", default="2")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        exes = build_workloads(tmp)
        workloads = {
            "sort, no frame pointers anywhere": [exes["sort-nofp"], a.seconds],
            "sort, program with frame pointers, libc without": [exes["sort-fp"], a.seconds],
            "recursion 100 deep, frame pointers": [exes["deep"], a.seconds, "100"],
        }
        for name, prog in workloads.items():
            bare = statistics.median(run_measured(prog)[0] for _ in range(a.runs))
            for mode in ("fp", "hybrid", "dwarf"):
                n = median_run(lambda: narwhal(a.build, prog, mode, tmp, a.freq, bare), a.runs)
                p = median_run(lambda: perf(prog, mode, tmp, a.freq, bare), a.runs) if mode != "hybrid" else None
                rows.append({"workload": name, "mode": mode, "bare_s": bare, "narwhal": n, "perf": p})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("| workload | mode | added CPU µs/sample (Narwhal / perf) | Narwhal recorder loop µs/sample "
          "| record+report CPU s (Narwhal / perf) | size KiB (Narwhal / perf) | complete stacks % (Narwhal / perf) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        n, p = r["narwhal"], r["perf"]
        dash = "–"
        print(f"| {r['workload']} | {r['mode']} | {n['added_us']:.1f} / {p['added_us']:.1f} | "
              if p else f"| {r['workload']} | {r['mode']} | {n['added_us']:.1f} / {dash} | ", end="")
        print(f"{n['loop_us']:.2f} | {n['total_s']:.3f} / " + (f"{p['total_s']:.3f}" if p else dash) +
              f" | {n['bytes'] / 1024:.0f} / " + (f"{p['bytes'] / 1024:.0f}" if p else dash) +
              f" | {n['complete']:.1f} / " + (f"{p['complete']:.1f}" if p else dash) + " |")


if __name__ == "__main__":
    main()
