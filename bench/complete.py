#!/usr/bin/env python3
"""How complete the stacks are on real programs: -g bpf, -g dwarf and perf (issue 26).

    bench/complete.py [--build DIR] [--only NAME,...] [--freq HZ]

Each program is recorded three times, in turn: narwhal-record -g bpf,
narwhal-record -g dwarf (its 16 KiB copy) and perf record --call-graph
dwarf (perf's 8 KiB copy), all with cpu-clock at the same rate and kernel
frames.  A sample is complete when its outermost frame is a thread entry:
for Narwhal, narwhal-report --stack-health's "Complete" share (which also
says where the others stop); for perf, the same entries at the root of
perf script's stacks.  Narwhal's column for bpf also gives the samples it
handed back to perf's copy and the frames found by frame pointers.

Programs (each whose tool is installed): a g++ -O2 compile of
tests/programs/bigcxx.cpp, a rustc -O compile of tests/programs/rustprog.rs,
headless Chromium loading a page that computes, a meson + ninja build of
this project, a Python and a Node.js workload, xz compressing 24 MiB.
Prints a Markdown table (doc/PERFORMANCE.md, "In-kernel unwinding").
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as bench  # noqa: E402  (bench/run.py's helpers)

ENTRY = re.compile(r"^(_start|__libc_start_main\w*|__libc_start_call_main|main|start_thread|"
                   r"clone3?|__clone3?|thread_start|_dl_start_user)(;|$)")


def programs(tmp, build):
    progs = []
    if shutil.which("g++"):
        progs.append(("g++ -O2 compile", ["g++", "-O2", "-c",
                                          os.path.join(ROOT, "tests/programs/bigcxx.cpp"),
                                          "-o", os.path.join(tmp, "bigcxx.o")]))
    if shutil.which("rustc"):
        progs.append(("rustc -O compile", ["rustc", "-O", "--edition", "2021",
                                           os.path.join(ROOT, "tests/programs/rustprog.rs"),
                                           "-o", os.path.join(tmp, "rustprog")]))
    chromium = bench.chromium_page(tmp)
    if chromium:
        progs.append(("headless Chromium", chromium))
    if shutil.which("meson") and shutil.which("ninja"):
        bdir = os.path.join(tmp, "selfbuild")
        progs.append(("meson + ninja build of Narwhal",
                      ["sh", "-c", f"rm -rf {bdir} && meson setup -Dtests=false {bdir} {ROOT} "
                       f">/dev/null && ninja -C {bdir} >/dev/null"]))
    progs.append(("Python workload", [sys.executable, "-c",
                                      "import json, re\n"
                                      "d = [{'k': i, 'v': str(i) * 5} for i in range(200000)]\n"
                                      "s = json.dumps(d); e = json.loads(s)\n"
                                      "print(sum(len(re.findall(r'1+', x['v'])) for x in e))"]))
    if shutil.which("node"):
        progs.append(("Node.js workload", ["node", "-e",
                                           "let m = new Map(); for (let i = 0; i < 3e6; i++) "
                                           "m.set('k' + (i % 100000), i * 2); "
                                           "console.log(JSON.stringify([...m.entries()]).length)"]))
    if shutil.which("xz"):
        data = os.path.join(tmp, "data.bin")
        with open(data, "wb") as f:
            for name in ("/usr/bin/perf", sys.executable, "/usr/lib/x86_64-linux-gnu/libc.so.6"):
                if os.path.exists(name):
                    f.write(open(os.path.realpath(name), "rb").read()[: 8 << 20])
        progs.append(("xz -6 of 24 MiB", ["xz", "-6", "-k", "-f", "-T1", data]))
    return progs


def narwhal(build, prog, mode, tmp, freq):
    rec, rep = os.path.join(build, "tools/narwhal-record"), os.path.join(build, "tools/narwhal-report")
    out = os.path.join(tmp, "n.data")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([rec, "-v", "-e", "cpu-clock", "-F", str(freq), "-g", mode, "-o", out,
                        "--"] + prog, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    health = subprocess.run([rep, "--stack-health", out], capture_output=True, text=True).stdout
    m = re.search(r"^Complete:\s+\d+\s+([\d.]+)%", health, re.M)
    copies = re.search(r"From a stack copy: (\d+) samples", health)
    fp = re.search(r"Frames by frame pointers: (\d+) of (\d+)", health)
    samples = re.search(r"^Samples: (\d+)", health, re.M)
    stop = re.search(r"^ +\d+ +([\d.]+)% +(.*)$", health.split("Where unwinding stops:")[-1], re.M) \
        if "Where unwinding stops:" in health else None
    return {"complete": float(m.group(1)) if m else None,
            "samples": int(samples.group(1)) if samples else 0,
            "copies": int(copies.group(1)) if copies else 0,
            "fp": (int(fp.group(1)), int(fp.group(2))) if fp else None,
            "stop": f"{stop.group(2)[:70]} ({stop.group(1)}%)" if stop else "",
            "rc": p.returncode}


def perf(prog, tmp, freq):
    out = os.path.join(tmp, "perf.data")
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq), "--call-graph",
                    "dwarf", "-o", out, "--"] + prog, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    stacks = bench.perf_stacks(out)
    done = sum(1 for s in stacks if ENTRY.match(s))
    return 100.0 * done / len(stacks) if stacks else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="")
    ap.add_argument("--freq", type=int, default=999)
    ap.add_argument("--no-perf", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    print("| program | bpf complete % | dwarf complete % | perf dwarf complete % | "
          "bpf: samples from a copy, frames by frame pointers | where bpf stops most |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="narwhal-complete-") as tmp:
        for name, prog in programs(tmp, build):
            if a.only and not any(o in name for o in a.only.split(",")):
                continue
            b = narwhal(build, prog, "bpf", tmp, a.freq)
            d = narwhal(build, prog, "dwarf", tmp, a.freq)
            p = None if a.no_perf or not shutil.which("perf") else perf(prog, tmp, a.freq)
            fp = f"{100.0 * b['fp'][0] / max(b['fp'][1], 1):.1f}% of {b['fp'][1]}" if b["fp"] else "-"
            fmt = lambda v: f"{v:.1f}" if v is not None else "-"  # noqa: E731
            print(f"| {name} | **{fmt(b['complete'])}** | {fmt(d['complete'])} | {fmt(p)} | "
                  f"{b['copies']} of {b['samples']}, {fp} | {b['stop']} |", flush=True)


if __name__ == "__main__":
    main()
