#!/usr/bin/env python3
"""The whole machine: narwhal-record -a beside perf record -a -g.

    bench/system.py [--build DIR] [--seconds N] [--runs N] [--doc FILE]

On an idle-ish machine and on a loaded one (bench/workloads/paths keeping
every CPU busy), records the whole machine for --seconds (default 10) at
999 Hz with fp call chains and kernel frames: narwhal-record -a -g fp and
perf record -a -g, interleaved --runs times (default 2).  Reports the
recorder's CPU (its own, from wait4), the bytes on disk, the samples and
the samples lost (perf: "lost" in perf report --stats, Narwhal: its
manifest).

Writes a markdown section into --doc (default doc/PERFORMANCE.md) between
"<!-- bench-system: begin -->" and "<!-- bench-system: end -->", and the
raw results to doc/performance/system.json.
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
sys.path.insert(0, HERE)
import model  # noqa: E402


def log(msg):
    print(f"bench-system: {msg}", file=sys.stderr, flush=True)


def perf_stats(data):
    out = subprocess.run(["perf", "report", "-i", data, "--stats"], capture_output=True,
                         text=True).stdout
    samples = lost = 0
    for line in out.splitlines():
        m = re.match(r"\s*SAMPLE events:\s+(\d+)", line)
        if m:
            samples = int(m.group(1))
        m = re.match(r"\s*LOST events:\s+(\d+)", line)
        if m:
            lost = int(m.group(1))
    return samples, lost


def one(tool, rec, tmp, seconds):
    data = os.path.join(tmp, tool + ".data")
    shutil.rmtree(data, ignore_errors=True)
    if os.path.exists(data):
        os.unlink(data)
    if tool == "narwhal":
        r = model.run([rec, "-q", "-a", "-g", "fp", "-F", "999", "-e", "cpu-clock",
                       "--duration", str(seconds), "-o", data])
        with open(os.path.join(data, "manifest.json")) as f:
            m = json.load(f)
        samples, lost = m["samples"], m["lost"]
    else:
        r = model.run(["perf", "record", "-q", "-a", "-g", "-F", "999", "-e", "cpu-clock",
                       "-o", data, "--", "sleep", str(seconds)])
        samples, lost = perf_stats(data)
    return {"cpu": r["cpu"], "bytes": model.du(data) if os.path.isdir(data)
            else os.path.getsize(data), "samples": samples, "lost": lost}


def markdown(r):
    lines = [f"Measured by `bench/system.py` on {r['date']} ({r['machine']}); "
             f"{r['seconds']} s of the whole machine at 999 Hz, fp call chains with kernel "
             f"frames, medians of {r['runs']} runs."]
    lines.append("")
    lines.append("| machine | recorder | samples | lost | recorder CPU s | bytes on disk |")
    lines.append("|---|---|---|---|---|---|")
    for load in ("idle", "loaded"):
        for tool in ("narwhal", "perf"):
            v = r[load][tool]
            lines.append(f"| {load} | {'narwhal-record -a' if tool == 'narwhal' else 'perf record -a -g'} "
                         f"| {v['samples']:,.0f} | {v['lost']:,.0f} | {v['cpu']:.3f} | "
                         f"{v['bytes'] / 1048576:.2f} MiB |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--doc", default=os.path.join(ROOT, "doc", "PERFORMANCE.md"))
    a = ap.parse_args()
    rec = os.path.join(a.build, "tools", "narwhal-record")
    subprocess.run(["ninja", "-C", a.build], check=True, stdout=subprocess.DEVNULL)
    tmp = tempfile.mkdtemp(prefix="narwhal-bench-system.")
    exes = model.build_workloads(tmp)
    r = {"date": time.strftime("%Y-%m-%d"), "runs": a.runs, "seconds": a.seconds,
         "machine": f"{os.cpu_count()} CPUs, {os.uname().release}"}
    for load in ("idle", "loaded"):
        busy = None
        if load == "loaded":
            units = int(10 * a.seconds * os.cpu_count() /
                        model.cpu_per_unit([exes["paths"], "2", "20000"], 20000))
            busy = subprocess.Popen([exes["paths"], str(os.cpu_count()), str(units)],
                                    stdout=subprocess.DEVNULL)
            time.sleep(0.5)
        res = {"narwhal": [], "perf": []}
        for _ in range(a.runs):
            for tool in ("narwhal", "perf"):
                res[tool].append(one(tool, rec, tmp, a.seconds))
                log(f"{load} {tool}: {res[tool][-1]}")
        if busy:
            busy.kill()
            busy.wait()
        r[load] = {tool: {k: statistics.median(x[k] for x in v) for k in v[0]}
                   for tool, v in res.items()}
    os.makedirs(os.path.join(ROOT, "doc", "performance"), exist_ok=True)
    with open(os.path.join(ROOT, "doc", "performance", "system.json"), "w") as f:
        json.dump(r, f, indent=1)
    text = markdown(r)
    begin, end = "<!-- bench-system: begin -->", "<!-- bench-system: end -->"
    doc = open(a.doc).read() if os.path.exists(a.doc) else ""
    block = f"{begin}\n{text}\n{end}"
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc += "\n## The whole machine\n\n" + block + "\n"
    with open(a.doc, "w") as f:
        f.write(doc)
    shutil.rmtree(tmp, ignore_errors=True)
    print(text)


if __name__ == "__main__":
    main()
