#!/usr/bin/env python3
"""Durable recording: what checkpoints cost, how long one write takes, and
the flight recorder's memory over a long run.

    bench/durable.py [--build DIR] [--seconds N] [--runs N] [--doc FILE] [--no-flight]

- checkpoints: bench/workloads/paths (8 threads, many call paths) for
  --seconds (default 60) under narwhal-record (fp, cpu-clock at 999 Hz)
  with --checkpoint 10 and with --checkpoint 0, interleaved --runs times
  (default 3); the recorder's CPU is its own (getrusage, as -v prints it).
- the cost of the checkpoints: what they add to the recorder's CPU, from
  narwhal-record -v's line per write ("checkpoint written in X ms (CPU M ms
  building the model, W ms writing)"): the CPU writing the checkpoints,
  plus the model building of the run with checkpoints less that of the run
  without (each checkpoint symbolizes the nodes added since the last, which
  the end's build does otherwise, and their parents again as callers);
  median over the pairs of runs, against the recorder's CPU without
  checkpoints.  The recorder's whole CPU with and without is given too,
  but its sampling part swings by 10 % between equal runs here, more than
  the checkpoints cost, and so does the end's write (by 30 ms).
- write time: every write of one run with checkpoints, wall and CPU,
  against the nodes in the trees.
- flight recorder: paths at -F 5000 for 3 x --seconds with
  --flight-recorder 5, and without, the recorder's resident set sampled
  every second from /proc/PID/status.

Writes a markdown section into --doc (default doc/PERFORMANCE.md) between
"<!-- bench-durable: begin -->" and "<!-- bench-durable: end -->", and the
raw results to doc/performance/durable.json.
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
import model  # noqa: E402  (run(), build_workloads(), cpu_per_unit())


def log(msg):
    print(f"bench-durable: {msg}", file=sys.stderr, flush=True)


def units_for(exe, seconds, threads=8):
    """Units of paths work that keep @threads threads busy about @seconds on this machine."""
    per = model.cpu_per_unit([exe, "2", "20000"], 20000)
    cpus = min(os.cpu_count() or 1, threads)
    return max(1000, int(seconds * cpus / per))


def record(rec, args, prog, data):
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(data + ".old", ignore_errors=True)
    r = model.run([rec, "-v", "-e", "cpu-clock", "-g", "fp"] + args + ["-o", data, "--"] + prog,
                  stdout=subprocess.PIPE)
    prog_cpu = 0.0
    for line in r["stdout"].splitlines():
        if line.startswith("rusage "):
            f = line.split()
            prog_cpu = float(f[1]) + float(f[2])
    # Each write as -v gives it: what, wall ms, CPU ms building the model
    # and writing it, nodes, and how a checkpoint went (pack or segment).
    writes = [(w, float(ms), int(n), how or "", int(size or 0), float(mcpu), float(wcpu))
              for w, ms, mcpu, wcpu, n, how, size in
              re.findall(r"narwhal-record: (\w+) written in ([\d.]+) ms \(CPU ([\d.]+) ms building "
                         r"the model, ([\d.]+) ms writing\): (\d+) nodes[^\n]*?"
                         r"(?:, as (a pack|a journal segment) of (\d+) bytes)?\n", r["stderr"])]
    with open(os.path.join(data, "manifest.json")) as f:
        samples = json.load(f)["samples"]
    # The recorder's own CPU (its getrusage, which -v prints): the children's
    # CPU less the program's swings by seconds between equal runs here.
    m = re.search(r"recorder CPU: ([\d.]+) s set-up, ([\d.]+) s sampling .*?, ([\d.]+) s writing "
                  r"while recording, ([\d.]+) s writing at the end", r["stderr"])
    cpu = sum(float(x) for x in m.groups()) if m else r["cpu"] - prog_cpu
    # The recorder's CPU writing, while recording and at the end, apart from
    # its sampling, whose CPU swings by 10 % between equal runs here.
    write = float(m.group(3)) + float(m.group(4)) if m else 0.0
    # What the checkpoints add: writing them, and the model building they
    # add to the end's (the nodes' parents symbolized again as callers).
    ckpt_write = sum(w[6] for w in writes if w[0] != "end") / 1e3
    building = sum(w[5] for w in writes) / 1e3
    return {"recorder_cpu": cpu, "write_cpu": write, "wall": r["wall"], "samples": samples,
            "writes": writes, "ckpt_write_cpu": ckpt_write, "model_cpu": building,
            "end_write_cpu": sum(w[6] for w in writes if w[0] == "end") / 1e3}


def rss_series(cmd, every=1.0):
    """Runs @cmd, sampling its VmRSS (KiB) every @every seconds: [(t, kib)]."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    series = []
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        series.append((time.monotonic() - t0, int(line.split()[1])))
        except OSError:
            pass
        time.sleep(every)
    return series


def markdown(r):
    lines = [f"Measured by `bench/durable.py` on {r['date']} ({r['machine']}); medians of "
             f"{r['runs']} runs of {r['seconds']} s at 999 Hz, fp call chains, kernel frames; "
             f"the recorder's CPU is its own (getrusage, as `narwhal-record -v` prints it)."]
    lines.append("")
    lines.append("| workload | recording | samples | CCT nodes at the end | recorder CPU s | "
                 "µs per sample | model building CPU s | checkpoints' writing CPU s | "
                 "end's writing CPU s | cost of the checkpoints | whole CPU against "
                 "--checkpoint 0 |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for wl, c in r["checkpoints"].items():
        on, off = c["on"], c["off"]
        for name, v in (("--checkpoint 10", on), ("--checkpoint 0", off)):
            whole = cost = ""
            if v is on:
                whole = f"{100 * (on['recorder_cpu'] / off['recorder_cpu'] - 1):+.1f} %"
                cost = (f"{100 * c['cost'] / off['recorder_cpu']:+.1f} % "
                        f"({1e3 * c['cost']:.0f} ms)")
            lines.append(f"| {wl} | {name} | {v['samples']:,.0f} | {v['nodes']:,.0f} | "
                         f"{v['recorder_cpu']:.3f} | "
                         f"{1e6 * v['recorder_cpu'] / max(v['samples'], 1):.2f} | "
                         f"{v['model_cpu']:.3f} | {v['ckpt_write_cpu']:.3f} | "
                         f"{v['end_write_cpu']:.3f} | {cost} | {whole} |")
    if r["writes"]:
        lines.append("")
        lines.append("| write | nodes | written as | bytes | wall ms | CPU ms: model | "
                     "CPU ms: writing |")
        lines.append("|---|---|---|---|---|---|---|")
        for w in r["writes"]:
            lines.append(f"| {w[0]} | {w[2]:,} | {w[3] or 'a directory'} | "
                         f"{f'{w[4]:,}' if w[4] else ''} | {w[1]:.1f} | {w[5]:.1f} | "
                         f"{w[6]:.1f} |")
    f = r["flight"]
    lines.append("")
    lines.append(f"Flight recorder (`--flight-recorder 5`, -F 5000, {f['seconds']} s): the "
                 f"recorder's resident set at 10 %, 50 % and 100 % of the run.")
    lines.append("")
    lines.append("| recording | RSS at 10 % MiB | at 50 % | at 100 % |")
    lines.append("|---|---|---|---|")
    for name in ("flight", "all"):
        s = f[name]
        pick = [s[min(len(s) - 1, int(len(s) * q))][1] / 1024 for q in (0.1, 0.5, 0.999)]
        lines.append(f"| {'--flight-recorder 5' if name == 'flight' else 'whole run'} | "
                     f"{pick[0]:.1f} | {pick[1]:.1f} | {pick[2]:.1f} |")
    return "\n".join(lines)


def write_doc(path, text):
    begin, end = "<!-- bench-durable: begin -->", "<!-- bench-durable: end -->"
    doc = open(path).read() if os.path.exists(path) else ""
    block = f"{begin}\n{text}\n{end}"
    if begin in doc and end in doc:
        doc = doc[:doc.index(begin)] + block + doc[doc.index(end) + len(end):]
    else:
        doc += "\n## Durable recording\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(doc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--doc", default=os.path.join(ROOT, "doc", "PERFORMANCE.md"))
    ap.add_argument("--no-flight", action="store_true",
                    help="keep the flight recorder's numbers of doc/performance/durable.json")
    a = ap.parse_args()

    rec = os.path.join(a.build, "tools", "narwhal-record")
    subprocess.run(["ninja", "-C", a.build], check=True, stdout=subprocess.DEVNULL)
    tmp = tempfile.mkdtemp(prefix="narwhal-bench-durable.")
    exes = model.build_workloads(tmp)
    units = units_for(exes["paths"], a.seconds)
    # work: a few stacks (two leaves 10 frames deep), about as much CPU.
    wunits = int(units * model.cpu_per_unit([exes["paths"], "2", "20000"], 20000) /
                 model.cpu_per_unit([exes["work"], "2", "2000", "10"], 2000))
    progs = {"paths (many stacks)": [exes["paths"], "8", str(units)],
             "work (few stacks)": [exes["work"], "8", str(wunits), "10"]}
    r = {"date": time.strftime("%Y-%m-%d"), "runs": a.runs, "seconds": a.seconds,
         "machine": f"{os.cpu_count()} CPUs, {os.uname().release}", "checkpoints": {}}

    for wl, prog in progs.items():
        res = {"on": [], "off": []}
        for i in range(a.runs):
            for name, args in (("on", ["--checkpoint", "10"]), ("off", ["--checkpoint", "0"])):
                v = record(rec, args, prog, os.path.join(tmp, "d.data"))
                v["nodes"] = v["writes"][-1][2] if v["writes"] else 0
                res[name].append(v)
                log(f"{wl} run {i + 1} checkpoints {name}: {v['samples']} samples, recorder "
                    f"{v['recorder_cpu']:.3f} s CPU ({v['write_cpu']:.3f} s writing), "
                    f"{len(v['writes'])} writes, {v['wall']:.1f} s")
        keys = ("recorder_cpu", "write_cpu", "wall", "samples", "nodes", "ckpt_write_cpu",
                "model_cpu", "end_write_cpu")
        c = {name: {k: statistics.median(x[k] for x in v) for k in keys}
             for name, v in res.items()}
        # The checkpoints' cost, run by run (runs i of both kinds were
        # interleaved): their writes, and the model building they add.
        c["cost"] = statistics.median(
            on["ckpt_write_cpu"] + on["model_cpu"] - off["model_cpu"]
            for on, off in zip(res["on"], res["off"]))
        r["checkpoints"][wl] = c
        if wl.startswith("paths"):
            r["writes"] = res["on"][0]["writes"]

    old_json = os.path.join(ROOT, "doc", "performance", "durable.json")
    if a.no_flight:
        with open(old_json) as f:
            r["flight"] = json.load(f)["flight"]
    fl_units = units_for(exes["paths"], 3 * a.seconds)
    fprog = [exes["paths"], "8", str(fl_units)]
    if not a.no_flight:
        r["flight"] = {"seconds": 3 * a.seconds}
    for name, args in () if a.no_flight else (("flight", ["--flight-recorder", "5"]), ("all", [])):
        data = os.path.join(tmp, "f.data")
        shutil.rmtree(data, ignore_errors=True)
        r["flight"][name] = rss_series([rec, "-q", "-e", "cpu-clock", "-F", "5000", "-g", "fp"] +
                                       args + ["-o", data, "--"] + fprog)
        log(f"flight {name}: RSS {r['flight'][name][0][1]} -> {r['flight'][name][-1][1]} KiB")

    os.makedirs(os.path.join(ROOT, "doc", "performance"), exist_ok=True)
    with open(os.path.join(ROOT, "doc", "performance", "durable.json"), "w") as f:
        json.dump(r, f, indent=1)
    write_doc(a.doc, markdown(r))
    shutil.rmtree(tmp, ignore_errors=True)
    print(markdown(r))


if __name__ == "__main__":
    main()
