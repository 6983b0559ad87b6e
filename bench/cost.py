#!/usr/bin/env python3
"""What a recording costs beside perf, as people run both (issue 24).

    bench/cost.py [--build DIR] [--runs N] [--only fixed,short,long,real] [--real-runs N]

Every configuration runs bare, under narwhal-record and under perf record in
turn (A B C A B C ...), RUNS times after one untimed round; the CPU of each
run is the recorder's and the program's together (RUSAGE_CHILDREN), so the
kernel's sampling work, charged to the program, counts too.  What a tool
adds is its run's CPU less the bare run of its round; the table gives the
median added CPU of each tool and the median of the per-round ratios
Narwhal/perf.  Both tools take kernel frames (root) and the same event
(cpu-clock) and rate:

- fp: narwhal-record -g fp against perf record --call-graph fp;
- default: narwhal-record as is (CFI over a 16 KiB stack copy) against
  perf record --call-graph dwarf (perf's default 8 KiB copy).

Sections:

- fixed: narwhal-record -- /bin/true against perf record -g -- /bin/true.
- short: bench/workloads/work.c, 3 threads, about 1.5 s of CPU, at 999 and
  9999 Hz.
- long: the same for about 20 s of CPU.
- real: a g++ -O2 compile, a rustc -O compile, a meson + ninja build of
  this project and headless Chromium loading a page, at 999 Hz (each whose
  tool is installed).
- bpf: the short workload at 999 and 9999 Hz under narwhal-record -g bpf,
  narwhal-record -g dwarf, perf record --call-graph fp and --call-graph
  dwarf, and perf record with no call graph (the floor: what taking and
  delivering a sample costs any tool), all six (with bare) in turn; with
  the recorder's CPU per sample
  and the BPF program's run time per sample (kernel.bpf_stats_enabled on
  for the section).

The recorders' own CPU is given beside: narwhal-record -v's, and perf
record's under perf stat --no-inherit -e task-clock (three runs of their
own).  The rest of what a tool adds is the kernel's sampling work, charged
to the program, which both tools pay alike.

Warm caches: the untimed round fills Narwhal's run cache
($XDG_CACHE_HOME/narwhal) and perf's build-id cache alike.  Prints a
Markdown table per section on stdout (doc/PERFORMANCE.md, "Cost beside
perf"); needs gcc, perf and a built Narwhal, Python 3 only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as bench  # noqa: E402  (bench/run.py's helpers)

SECTIONS = ("fixed", "short", "long", "real", "bpf")


def recorder_cpu(stderr):
    """narwhal-record -v's own CPU: set-up, sampling and writing."""
    m = re.search(r"recorder CPU: ([\d.]+) s set-up, ([\d.]+) s sampling \([\d.]+ us per "
                  r"sample\), ([\d.]+) s writing while recording, ([\d.]+) s writing", stderr)
    return sum(float(x) for x in m.groups()) if m else None


def first_checkpoint(stderr):
    """narwhal-record -v: (CPU ms of the first checkpoint, CPU s of the sampling loop)."""
    m = re.search(r"checkpoint written in [\d.]+ ms \(CPU ([\d.]+) ms building the model, "
                  r"([\d.]+) ms writing\)", stderr)
    s = re.search(r"recorder CPU: [\d.]+ s set-up, ([\d.]+) s sampling", stderr)
    return (float(m.group(1)) + float(m.group(2)) if m else None,
            float(s.group(1)) * 1000 if s else None)


def task_clock(path):
    """perf stat -x, -e task-clock's figure, in seconds."""
    try:
        with open(path) as f:
            for line in f:
                fields = line.strip().split(",")
                if len(fields) > 2 and fields[2] == "task-clock":
                    return float(fields[0]) / 1000
    except (OSError, ValueError):
        pass
    return None


def added(tool_runs, bare_runs):
    return [t["cpu"] - b["cpu"] for t, b in zip(tool_runs, bare_runs)]


def ratio(xs, ys):
    return bench.median(x / y if y > 0 else None for x, y in zip(xs, ys))


class Cost:
    def __init__(self, build, tmp, runs):
        self.rec = os.path.join(build, "tools", "narwhal-record")
        self.tmp = tmp
        self.runs = runs
        self.rows = {}
        if not os.access(self.rec, os.X_OK):
            sys.exit(f"cost: {self.rec} is missing: build Narwhal first")
        if not shutil.which("perf"):
            sys.exit("cost: perf is not installed (scripts/setup.sh --bench)")

    def cmds(self, prog, mode, hz, cwd=None):
        nout, pout = os.path.join(self.tmp, "n.data"), os.path.join(self.tmp, "perf.data")
        rate = ["-F", str(hz)] if hz else []
        if mode == "fp":
            n = [self.rec, "-v", "-e", "cpu-clock"] + rate + ["-g", "fp", "-o", nout, "--"] + prog
            p = ["perf", "record", "-q", "-e", "cpu-clock"] + rate + ["--call-graph", "fp", "-o",
                                                                     pout, "--"] + prog
        else:
            n = [self.rec, "-v", "-e", "cpu-clock"] + rate + ["-o", nout, "--"] + prog
            p = ["perf", "record", "-q", "-e", "cpu-clock"] + rate + ["--call-graph", "dwarf",
                                                                     "-o", pout, "--"] + prog
        return n, p

    def compare(self, key, prog, mode, hz, runs=None, before=None):
        """bare / narwhal / perf in turn; the medians into self.rows[key]."""
        n_cmd, p_cmd = self.cmds(prog, mode, hz)
        out = {"bare": [], "narwhal": [], "perf": []}

        def one(name, cmd):
            if before:
                before()
            for d in ("n.data", "n.data.old", "perf.data", "perf.data.old"):
                bench.rmtree(os.path.join(self.tmp, d))
            return bench.run(cmd, stdout=subprocess.DEVNULL, check=False)

        runs = runs or self.runs
        for r in range(runs + 1):
            b, n, p = one("bare", prog), one("narwhal", n_cmd), one("perf", p_cmd)
            if r:  # the first round is untimed: caches warm alike
                out["bare"].append(b)
                out["narwhal"].append(n)
                out["perf"].append(p)
        na, pa = added(out["narwhal"], out["bare"]), added(out["perf"], out["bare"])
        # The recorders' own CPU: Narwhal's -v line; perf's from perf stat
        # --no-inherit around it, in runs of their own (perf stat costs too).
        nown = [recorder_cpu(x["stderr"]) for x in out["narwhal"]]
        pown = []
        stat = os.path.join(self.tmp, "stat.txt")
        for _ in range(min(runs, 3)):
            one("perf", ["perf", "stat", "-x,", "--no-inherit", "-e", "task-clock", "-o",
                         stat, "--"] + p_cmd)
            pown.append(task_clock(stat))
        ckpt = [first_checkpoint(x["stderr"]) for x in out["narwhal"]]
        row = {"bare": bench.median(x["cpu"] for x in out["bare"]),
               "ckpt_ms": bench.median(c[0] for c in ckpt),
               "sampling_ms": bench.median(c[1] for c in ckpt),
               "narwhal": bench.median(na), "perf": bench.median(pa), "ratio": ratio(na, pa),
               "narwhal_own": bench.median(nown), "perf_own": bench.median(pown),
               "runs": runs}
        self.rows[key] = row
        bench.log(f"{key}: bare {row['bare']:.3f} s, Narwhal +{row['narwhal']:.3f} s, "
                  f"perf +{row['perf']:.3f} s, ratio {row['ratio']:.2f}; recorders alone "
                  f"{row['narwhal_own'] or 0:.3f} / {row['perf_own'] or 0:.3f} s")
        return row


def bpf_stats(stderr):
    """narwhal-record -v in bpf mode: (ns per program run, instructions verified)."""
    m = re.search(r"program: (\d+) instructions verified, ([\d.]+) ns per run", stderr)
    return (float(m.group(2)), int(m.group(1))) if m else (None, None)


def us_per_sample(stderr):
    m = re.search(r"sampling \(([\d.]+) us per sample\)", stderr)
    return float(m.group(1)) if m else None


def sec_bpf(c, exe):
    """bare, -g bpf, -g dwarf, perf fp, perf dwarf in turn (RUNS rounds after an untimed one)."""
    units = units_for(exe, 1.5)
    prog = [exe, "3", str(units)]
    nout, pout = os.path.join(c.tmp, "n.data"), os.path.join(c.tmp, "perf.data")
    stats = "/proc/sys/kernel/bpf_stats_enabled"
    try:
        old = open(stats).read().strip()
        open(stats, "w").write("1")
    except OSError:
        old = None
    # perf without a call graph: what taking and delivering a sample costs
    # any sampler, the floor under every mode's share of perf fp's.
    lines = ["| rate | bare CPU s | bpf adds s | dwarf adds s | perf fp adds s | perf dwarf adds s | "
             "perf, no call graph, adds s | **bpf / perf fp** | no call graph / perf fp | "
             "bpf / dwarf | recorder us per sample: bpf / dwarf | BPF program ns per sample |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    try:
        for hz in (999, 9999):
            rate = ["-F", str(hz), "-e", "cpu-clock"]
            tools = {
                "bare": prog,
                "bpf": [c.rec, "-v"] + rate + ["-g", "bpf", "-o", nout, "--"] + prog,
                "dwarf": [c.rec, "-v"] + rate + ["-g", "dwarf", "-o", nout, "--"] + prog,
                "perf fp": ["perf", "record", "-q"] + rate + ["--call-graph", "fp", "-o", pout,
                                                             "--"] + prog,
                "perf dwarf": ["perf", "record", "-q"] + rate + ["--call-graph", "dwarf", "-o",
                                                                pout, "--"] + prog,
                "perf none": ["perf", "record", "-q"] + rate + ["-o", pout, "--"] + prog,
            }
            out = {k: [] for k in tools}
            for r in range(c.runs + 1):
                for k, cmd in tools.items():
                    for d in ("n.data", "n.data.old", "perf.data", "perf.data.old"):
                        bench.rmtree(os.path.join(c.tmp, d))
                    x = bench.run(cmd, stdout=subprocess.DEVNULL, check=False)
                    if r:
                        out[k].append(x)
            add = {k: added(out[k], out["bare"]) for k in tools if k != "bare"}
            ns = bench.median(bpf_stats(x["stderr"])[0] for x in out["bpf"])
            us = [bench.median(us_per_sample(x["stderr"]) for x in out[k]) for k in ("bpf", "dwarf")]
            lines.append(
                f"| {hz} Hz | {bench.median(x['cpu'] for x in out['bare']):.3f} | "
                f"{bench.median(add['bpf']):.3f} | {bench.median(add['dwarf']):.3f} | "
                f"{bench.median(add['perf fp']):.3f} | {bench.median(add['perf dwarf']):.3f} | "
                f"{bench.median(add['perf none']):.3f} | "
                f"**{ratio(add['bpf'], add['perf fp']):.2f}** | "
                f"{ratio(add['perf none'], add['perf fp']):.2f} | "
                f"{ratio(add['bpf'], add['dwarf']):.2f} | "
                f"{us[0] or 0:.2f} / {us[1] or 0:.2f} | {ns or 0:.0f} |")
            bench.log(lines[-1])
    finally:
        if old is not None:
            open(stats, "w").write(old)
    return "\n".join(lines)


def build_work(tmp):
    exe = os.path.join(tmp, "work")
    subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread",
                    os.path.join(HERE, "workloads", "work.c"), "-o", exe], check=True)
    return exe


def units_for(exe, seconds):
    """Units of work.c (3 threads) that take about @seconds of CPU."""
    r = bench.run([exe, "3", "200"])
    cpu = bench.program_usage(r["stdout"])[0]
    return max(1, int(200 * seconds / max(cpu, 1e-3)))


def sec_fixed(c):
    c.compare("fixed /bin/true", ["/bin/true"], "fp", 0)
    c.rows["fixed /bin/true"]["note"] = "narwhal-record -g fp -- /bin/true vs perf record -g"
    # The default mode (bpf as root: the program's load and the tables' maps) at no sample.
    c.compare("fixed /bin/true default", ["/bin/true"], "default", 0)


def sec_workload(c, exe, seconds, label):
    units = units_for(exe, seconds)
    for hz in (999, 9999):
        for mode in ("fp", "default"):
            c.compare(f"{label} {mode} {hz} Hz", [exe, "3", str(units)], mode, hz)


def real_programs(tmp):
    """(name, command, cwd or None, set-up before each run or None) of what is installed."""
    progs = []
    src = os.path.join(tmp, "prog.cc")
    with open(src, "w") as f:
        f.write("#include <map>\n#include <string>\n#include <vector>\n#include <regex>\n"
                "#include <iostream>\n#include <algorithm>\n"
                "int main(int argc, char **argv) { std::map<std::string, std::vector<int>> m;"
                " std::regex r(argv[0]); for (int i = 0; i < argc; i++) m[argv[i]].push_back(i);"
                " std::cout << m.size() << std::regex_match(\"x\", r) << '\\n'; }\n")
    if shutil.which("g++"):
        progs.append(("g++ -O2 compile", ["g++", "-O2", "-c", src, "-o",
                                          os.path.join(tmp, "prog.o")], None))
    rs = os.path.join(ROOT, "tests", "programs", "rustprog.rs")
    if shutil.which("rustc") and os.path.exists(rs):
        progs.append(("rustc -O compile", ["rustc", "-O", "--edition", "2021", rs, "-o",
                                           os.path.join(tmp, "rustprog")], None))
    if shutil.which("meson") and shutil.which("ninja"):
        bdir = os.path.join(tmp, "selfbuild")
        progs.append(("meson + ninja build of Narwhal",
                      ["sh", "-c", f"rm -rf {bdir} && meson setup -Dtests=false {bdir} {ROOT} "
                       f">/dev/null && ninja -C {bdir} >/dev/null"], None))
    chromium = bench.chromium_page(tmp)
    if chromium:
        progs.append(("headless Chromium", chromium, None))
    return progs


def sec_real(c, runs):
    for name, cmd, _ in real_programs(c.tmp):
        c.compare(f"{name} default 999 Hz", cmd, "default", 999, runs=runs)


def table(c, keys):
    lines = ["| run | bare CPU s | Narwhal adds s | perf adds s | **Narwhal / perf** | "
             "recorder alone s: Narwhal / perf | first checkpoint / sampling, ms |",
             "|---|---|---|---|---|---|---|"]
    for k in keys:
        r = c.rows[k]
        own = (f"{r['narwhal_own']:.3f} / {r['perf_own']:.3f}"
               if r.get("narwhal_own") is not None and r.get("perf_own") is not None else "")
        ck = (f"{r['ckpt_ms']:.1f} / {r['sampling_ms']:.0f}"
              if r.get("ckpt_ms") is not None and r.get("sampling_ms") is not None else "")
        lines.append(f"| {k} | {r['bare']:.3f} | {r['narwhal']:.3f} | {r['perf']:.3f} | "
                     f"**{r['ratio']:.2f}** | {own} | {ck} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--real-runs", type=int, default=3)
    ap.add_argument("--only", default=",".join(SECTIONS))
    a = ap.parse_args()
    sections = [s for s in a.only.split(",") if s]
    for s in sections:
        if s not in SECTIONS:
            sys.exit(f"cost: no section {s} (of {', '.join(SECTIONS)})")
    build = os.path.abspath(a.build)
    subprocess.run(["ninja", "-C", build, "tools/narwhal-record"], check=True,
                   stdout=subprocess.DEVNULL)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="narwhal-cost-") as tmp:
        c = Cost(build, tmp, a.runs)
        exe = build_work(tmp)
        print(f"bench/cost.py, {time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.1f}, "
              f"{a.runs} runs ({a.real_runs} for real programs), medians\n")
        if "fixed" in sections:
            sec_fixed(c)
            print(table(c, ["fixed /bin/true", "fixed /bin/true default"]) + "\n")
        for s, secs in (("short", 1.5), ("long", 20)):
            if s in sections:
                before = set(c.rows)
                sec_workload(c, exe, secs, f"{s} {secs:g} s")
                print(table(c, [k for k in c.rows if k not in before]) + "\n")
        if "real" in sections:
            before = set(c.rows)
            sec_real(c, a.real_runs)
            print(table(c, [k for k in c.rows if k not in before]) + "\n")
        if "bpf" in sections:
            print(sec_bpf(c, exe) + "\n")
    print(f"({(time.time() - t0) / 60:.1f} min, load at the end {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
