#!/usr/bin/env python3
"""Narwhal beside perf: recording overhead, recorder cost per sample,
post-processing, size on disk, accuracy and scaling, in one run.

    bench/run.py [--build DIR] [--quick] [--runs N] [--only SECTION,...]
                 [--doc FILE] [--no-sysctl]

Builds the workloads of bench/workloads/ (and the generated libraries of the
dlopen workload) in a temporary directory, runs each one bare, under
narwhal-record and under perf record with the same event (cpu-clock, user
space only), frequency or period and call-graph mode, repeats every
configuration --runs times (bare, Narwhal and perf interleaved, after one
untimed warm-up of each), and writes medians, ratios and SVG charts into
doc/PERFORMANCE.md (between its "bench:" markers; the text around them is
kept) and doc/performance/.  --quick is a smoke run of a few minutes with
smaller workloads; it writes to DIR/bench-quick/ unless --doc is given.
Python 3 standard library only; needs gcc and perf.  bench/README.md has
the details.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SECTIONS = ("overhead", "postproc", "accuracy", "threads", "depth", "libs")
EVENT = "cpu-clock"
PERF_EVENT = "cpu-clock:u"  # Narwhal samples user space only: the same attr for perf
MAX_STACK_SYSCTL = "/proc/sys/kernel/perf_event_max_stack"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def du(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def rmtree(path):
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.exists(path):
        os.unlink(path)


def chromium_page(tmp):
    """Headless Chromium loading a page that computes (bench/cost.py, bench/complete.py), or None."""
    chromium = shutil.which("chromium")
    if not chromium:
        return None
    page = os.path.join(tmp, "page.html")
    with open(page, "w") as f:
        f.write("<html><body><script>let s = 0; for (let i = 0; i < 3e7; i++) s += i % 7;"
                " document.body.textContent = s;</script></body></html>")
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={os.path.join(tmp, 'chr')}", "--dump-dom", "file://" + page]


def perf_stacks(data):
    """The stacks of perf.data @data, outermost frame first, as "a;b;c" (perf script)."""
    script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True,
                            text=True).stdout
    stacks, cur = [], []
    for line in script.splitlines() + [""]:
        if line.strip():
            parts = line.split(None, 1)
            cur.append(parts[1].split("+")[0].replace(" (inlined)", "")
                       if len(parts) > 1 else "[unknown]")
        elif cur:
            stacks.append(";".join(reversed(cur)))
            cur = []
    return stacks


def run(cmd, stdout=subprocess.PIPE, env=None, check=True):
    """Runs cmd; returns CPU (its and its descendants'), wall, stdout, stderr."""
    cpu0, t0 = children_cpu(), time.monotonic()
    p = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, env=env)
    wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    if check and p.returncode != 0:
        raise RuntimeError(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    out = p.stdout if stdout == subprocess.PIPE else ""
    return {"cpu": cpu, "wall": wall, "stdout": out or "", "stderr": p.stderr}


def program_usage(stdout):
    """The workload's own 'rusage USER SYS WALL' line: (CPU s, wall s)."""
    for line in stdout.splitlines():
        if line.startswith("rusage "):
            f = line.split()
            return float(f[1]) + float(f[2]), float(f[3])
    return None, None


# --------------------------------------------------------------------------
# The three ways to run a workload


class Tools:
    def __init__(self, build, tmp):
        self.rec = os.path.join(build, "tools", "narwhal-record")
        self.rep = os.path.join(build, "tools", "narwhal-report")
        self.tmp = tmp
        for t in (self.rec, self.rep):
            if not os.access(t, os.X_OK):
                sys.exit(f"bench: {t} is missing: build Narwhal first (ninja -C {build})")
        if not shutil.which("perf"):
            sys.exit("bench: perf is not installed (apt-get install linux-perf)")

    def bare(self, prog):
        r = run(prog)
        r["prog_cpu"], r["prog_wall"] = program_usage(r["stdout"])
        return r

    @staticmethod
    def rate_args(rate):
        """rate: ('F', hz) or ('c', period)."""
        return ["-F" if rate[0] == "F" else "-c", str(rate[1])]

    def narwhal(self, prog, mode, rate, out, stack=None):
        g = mode if not stack or mode == "fp" else f"{mode},{stack}"
        rmtree(out)
        rmtree(out + ".old")
        r = run([self.rec, "-v", "-e", EVENT] + self.rate_args(rate) + ["-g", g, "-o", out, "--"] +
                prog)
        r["prog_cpu"], r["prog_wall"] = program_usage(r["stdout"])
        m = re.search(r"recorder CPU: ([\d.]+) s set-up, ([\d.]+) s sampling \(([\d.]+) us per "
                      r"sample\), ([\d.]+) s writing while recording, ([\d.]+) s writing at the "
                      r"end", r["stderr"])
        if m:
            r["setup"], r["loop"], r["loop_us"], during, end = (float(x) for x in m.groups())
            r["writing"] = during + end
        with open(os.path.join(out, "manifest.json")) as f:
            mf = json.load(f)
        r["samples"], r["lost"] = mf.get("samples", 0), mf.get("lost", 0)
        r["bytes"] = du(out)
        return r

    def perf(self, prog, mode, rate, out, stack=None):
        cg = "fp" if mode == "fp" else f"dwarf,{stack or 16384}"
        rmtree(out)
        r = run(["perf", "record", "-q", "-e", PERF_EVENT] + self.rate_args(rate) +
                ["--call-graph", cg, "-o", out, "--"] + prog)
        r["prog_cpu"], r["prog_wall"] = program_usage(r["stdout"])
        st = run(["perf", "report", "-i", out, "--stats"], check=False)["stdout"]
        m = re.search(r"SAMPLE events:\s+(\d+)", st)
        r["samples"] = int(m.group(1)) if m else 0
        m = re.search(r"LOST events:\s+(\d+)", st)
        r["lost"] = int(m.group(1)) if m else 0
        r["bytes"] = du(out)
        return r


def derive(tool, bare):
    """Adds what a tool's run costs beyond the bare program's (medians of bare)."""
    tool["recorder_cpu"] = tool["cpu"] - (tool["prog_cpu"] or 0)
    tool["added_cpu"] = tool["cpu"] - bare["cpu"]
    tool["prog_added"] = (tool["prog_cpu"] or 0) - (bare["prog_cpu"] or 0)
    tool["recorder_us"] = 1e6 * tool["recorder_cpu"] / max(tool["samples"], 1)
    tool["added_us"] = 1e6 * tool["added_cpu"] / max(tool["samples"], 1)
    return tool


def med(runs, keys=None):
    """Medians over a list of result dicts, key by key (numbers only)."""
    keys = keys or [k for k, v in runs[0].items() if isinstance(v, (int, float))]
    return {k: median(r.get(k) for r in runs) for k in keys}


def compare(tools, prog, mode, rate, runs, stack=None, skip_perf=False):
    """bare / narwhal / perf interleaved, runs times after a warm-up; medians."""
    nout, pout = os.path.join(tools.tmp, "n.data"), os.path.join(tools.tmp, "perf.data")
    tools.bare(prog)
    tools.narwhal(prog, mode, rate, nout, stack)
    if not skip_perf:
        tools.perf(prog, mode, rate, pout, stack)
    b, n, p = [], [], []
    for _ in range(runs):
        b.append(tools.bare(prog))
        n.append(tools.narwhal(prog, mode, rate, nout, stack))
        if not skip_perf:
            p.append(tools.perf(prog, mode, rate, pout, stack))
    # What a tool adds is taken against the bare run of the same round (paired),
    # so that a slow stretch of the machine weighs on both sides alike.
    bare = med(b)
    nm = med([derive(x, y) for x, y in zip(n, b)])
    pm = med([derive(x, y) for x, y in zip(p, b)]) if p else None
    keep = ("cpu", "prog_cpu", "wall", "samples", "loop")
    raw = {"bare": [{k: r.get(k) for k in keep} for r in b],
           "narwhal": [{k: r.get(k) for k in keep} for r in n],
           "perf": [{k: r.get(k) for k in keep} for r in p]}
    # Ratios within each interleaved round, then their median.
    if p:
        nm["ratio_added"] = median(x["added_cpu"] / y["added_cpu"] if y["added_cpu"] > 0 else None
                                   for x, y in zip(n, p))
        nm["ratio_recorder"] = median(x["recorder_cpu"] / y["recorder_cpu"]
                                      if y["recorder_cpu"] > 0 else None for x, y in zip(n, p))
    return {"bare": bare, "narwhal": nm, "perf": pm, "raw": raw}


# --------------------------------------------------------------------------
# Workloads


def build_workloads(tmp):
    src = os.path.join(HERE, "workloads")
    exes = {}
    for name in ("work", "paths", "split", "libs"):
        exe = os.path.join(tmp, name)
        subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread",
                        os.path.join(src, name + ".c"), "-o", exe, "-ldl"], check=True)
        exes[name] = exe
    return exes


def build_libs(tmp, n):
    """libbench0.so .. libbench<n-1>.so, one function each, built two at a time."""
    d = os.path.join(tmp, "libdir")
    os.makedirs(d, exist_ok=True)
    procs = []
    for k in range(n):
        so = os.path.join(d, f"libbench{k}.so")
        if os.path.exists(so):
            continue
        c = os.path.join(d, f"libbench{k}.c")
        with open(c, "w") as f:
            f.write(f"double bench_fn{k}(double x)\n{{\n\tfor (int i = 0; i < 25000; i++)\n"
                    f"\t\tx = x * 0.999999 + 1.0;\n\treturn x;\n}}\n")
        procs.append(subprocess.Popen(["gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-shared",
                                       "-fPIC", c, "-o", so]))
        if len(procs) >= 2:
            if procs.pop(0).wait():
                sys.exit("bench: building the libraries failed")
    for p in procs:
        if p.wait():
            sys.exit("bench: building the libraries failed")
    return d


def calibrate(tools, prog_of, want_cpu):
    """Units for about want_cpu seconds of CPU: prog_of(units) -> argv."""
    units = 200
    for _ in range(4):
        r = tools.bare(prog_of(units))
        cpu = r["prog_cpu"] or r["cpu"]
        if cpu > 0.2:
            break
        units *= 4
    return max(1, int(units * want_cpu / cpu))


# --------------------------------------------------------------------------
# Sections


def sec_overhead(b):
    """Recording overhead and recorder cost per sample: 999/9999 Hz, fp/dwarf, 1/8 threads."""
    cpu = 0.6 if b.quick else 2.0
    rows = []
    prog_of = lambda u, t: [b.exes["work"], str(t), str(u), "10"]
    units = calibrate(b.tools, lambda u: prog_of(u, 1), cpu)
    for threads in (1, 8):
        for hz in (999, 9999):
            for mode in ("fp", "dwarf"):
                log(f"overhead: {threads} thread(s), {hz} Hz, {mode}")
                r = compare(b.tools, prog_of(units, threads), mode, ("F", hz), b.runs)
                r.update(threads=threads, hz=hz, mode=mode)
                rows.append(r)
    b.results["overhead"] = {"units": units, "cpu_s": cpu, "rows": rows, "runs": b.runs}


def count_distinct(tools, data):
    out = run([tools.rep, data, "--folded"])["stdout"]
    return sum(1 for line in out.splitlines() if line.strip())


def time_reports(b, ndata, pdata):
    """narwhal-report views and exports, perf report and perf script: medians of runs."""
    t = b.tools
    pb = os.path.join(b.tmp, "out.pb.gz")
    cmds = {
        "narwhal --tree": ([t.rep, ndata, "--tree"], subprocess.DEVNULL),
        "narwhal --folded": ([t.rep, ndata, "--folded"], subprocess.DEVNULL),
        "narwhal --pprof": ([t.rep, ndata, "--pprof", pb], subprocess.DEVNULL),
    }
    if pdata:
        cmds["perf report --stdio"] = (["perf", "report", "-i", pdata, "--stdio"],
                                       subprocess.DEVNULL)
        cmds["perf script"] = (["perf", "script", "-i", pdata], subprocess.DEVNULL)
    res = {k: [] for k in cmds}
    for _ in range(b.report_runs):
        for k, (cmd, out) in cmds.items():
            r = run(cmd, stdout=out)
            res[k].append({"cpu": r["cpu"], "wall": r["wall"]})
    return {k: med(v) for k, v in res.items()}


def sec_postproc(b):
    """Post-processing at up to 10^6 samples (10^7 Narwhal-only), sizes, samples scaling."""
    period = 50000  # ns of cpu-clock: 20 kHz per running thread
    counts = [10 ** 4, 10 ** 5] if b.quick else [10 ** 4, 10 ** 5, 10 ** 6]
    if b.huge:
        counts.append(10 ** 7)
    out = {"period_ns": period, "series": {}}
    for wl in ("work", "paths"):
        if wl == "work":
            prog_of = lambda u: [b.exes["work"], "8", str(u), "10"]
            sizes = counts
        else:
            # Many distinct paths: the largest size with perf beside, for the reports.
            prog_of = lambda u: [b.exes["paths"], "8", str(u)]
            sizes = [n for n in counts if n <= 10 ** 6][-1:]
        per_cpu_s = calibrate(b.tools, prog_of, 1.0)
        series = []
        for n in sizes:
            units = int(per_cpu_s * n * period / 1e9)
            prog = prog_of(units)
            log(f"postproc: {wl}, {n} samples ({units} units)")
            nd, pd = os.path.join(b.tmp, f"pp-{wl}-n.data"), os.path.join(b.tmp, f"pp-{wl}.perf")
            skip_perf = n > 10 ** 6
            # 10^7: Narwhal alone, and no bare run (the program's CPU stands in for it).
            bare = b.tools.bare(prog) if not skip_perf else None
            nr = b.tools.narwhal(prog, "fp", ("c", period), nd)
            nr = derive(nr, bare or {"cpu": nr["prog_cpu"], "prog_cpu": nr["prog_cpu"]})
            pr = None if skip_perf else derive(b.tools.perf(prog, "fp", ("c", period), pd), bare)
            reports = time_reports(b, nd, None if skip_perf else pd)
            series.append({
                "target": n, "units": units, "bare": med([bare]) if bare else None,
                "narwhal": med([nr]), "perf": med([pr]) if pr else None,
                "reports": reports, "distinct": count_distinct(b.tools, nd),
            })
            rmtree(nd)
            rmtree(pd)
        out["series"][wl] = series
    b.results["postproc"] = out


def self_shares_narwhal(tools, data):
    out = run([tools.rep, data, "--folded"])["stdout"]
    total, per = 0, {}
    for line in out.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        n = int(n)
        total += n
        leaf = stack.rsplit(";", 1)[-1]
        per[leaf] = per.get(leaf, 0) + n
    return {k: 100.0 * v / total for k, v in per.items()} if total else {}


def self_shares_perf(data):
    out = run(["perf", "report", "-i", data, "--stdio", "--no-children", "-g", "none",
               "--sort", "sym", "-q"])["stdout"]
    per = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+(\S+)", line)
        if m:
            per[m.group(2)] = per.get(m.group(2), 0.0) + float(m.group(1))
    return per


def sec_accuracy(b):
    """A program with a known split; each tool's self share per function."""
    seconds = 1.0 if b.quick else 4.0
    prog = [b.exes["split"], str(seconds)]
    funcs = ("func_a", "func_b", "func_c", "func_d")
    cols = {"program": [], "narwhal fp": [], "narwhal dwarf": [], "perf fp": [], "perf dwarf": []}
    nd, pd = os.path.join(b.tmp, "acc.data"), os.path.join(b.tmp, "acc.perf")
    samples = []
    for i in range(b.runs):
        log(f"accuracy: run {i + 1}")
        for mode in ("fp", "dwarf"):
            r = b.tools.narwhal(prog, mode, ("F", 999), nd)
            samples.append(r["samples"])
            truth = {l.split()[1]: float(l.split()[2]) for l in r["stdout"].splitlines()
                     if l.startswith("split ")}
            cols["program"].append(truth)
            cols[f"narwhal {mode}"].append((truth, self_shares_narwhal(b.tools, nd)))
            r = b.tools.perf(prog, mode, ("F", 999), pd)
            truth = {l.split()[1]: float(l.split()[2]) for l in r["stdout"].splitlines()
                     if l.startswith("split ")}
            cols["program"].append(truth)
            cols[f"perf {mode}"].append((truth, self_shares_perf(pd)))
    rows = []
    for f in funcs:
        row = {"function": f, "program": median(t.get(f) for t in cols["program"])}
        for k in ("narwhal fp", "narwhal dwarf", "perf fp", "perf dwarf"):
            row[k] = median(s.get(f, 0.0) for _, s in cols[k])
            # The error of each run against that run's own truth, then the median.
            row[k + " err"] = median(abs(s.get(f, 0.0) - t[f]) for t, s in cols[k])
        rows.append(row)
    # Sampling noise: the standard deviation of a 50 % share measured with that many samples.
    n = median(samples) or 1
    sigma = 100 * math.sqrt(0.25 / n)
    b.results["accuracy"] = {"seconds": seconds, "hz": 999, "rows": rows, "samples": n, "runs": b.runs,
                             "sigma": sigma}


def sec_threads(b):
    cpu = 0.6 if b.quick else 2.0
    counts = (1, 8, 64) if b.quick else (1, 2, 4, 8, 16, 32, 64)
    modes = ("fp",) if b.quick else ("fp", "dwarf")
    prog_of = lambda u, t: [b.exes["work"], str(t), str(u), "10"]
    units = calibrate(b.tools, lambda u: prog_of(u, 1), cpu)
    rows = []
    for mode in modes:
        for t in counts:
            log(f"threads: {t}, {mode}")
            r = compare(b.tools, prog_of(units, t), mode, ("F", 9999), b.scale_runs)
            r.update(threads=t, mode=mode)
            rows.append(r)
    b.results["threads"] = {"units": units, "hz": 9999, "rows": rows}


def read_max_stack():
    try:
        with open(MAX_STACK_SYSCTL) as f:
            return int(f.read())
    except OSError:
        return None


def write_max_stack(v):
    try:
        with open(MAX_STACK_SYSCTL, "w") as f:
            f.write(str(v))
        return True
    except OSError:
        return False


def sec_depth(b):
    cpu = 0.6 if b.quick else 2.0
    depths = (10, 100, 1000) if b.quick else (10, 30, 100, 300, 1000)
    prog_of = lambda u, d: [b.exes["work"], "1", str(u), str(d)]
    units = calibrate(b.tools, lambda u: prog_of(u, 10), cpu)
    old = read_max_stack()
    raised = b.sysctl and old is not None and old < 1024 and write_max_stack(1024)
    rows = []
    try:
        for mode in ("fp", "dwarf"):
            for d in depths:
                log(f"depth: {d}, {mode}")
                r = compare(b.tools, prog_of(units, d), mode, ("F", 999), b.scale_runs,
                            stack=65528 if mode == "dwarf" else None)
                nd, pd = os.path.join(b.tmp, "n.data"), os.path.join(b.tmp, "perf.data")
                r["reports"] = time_reports(b, nd, pd)
                r.update(depth=d, mode=mode)
                rows.append(r)
    finally:
        if raised:
            write_max_stack(old)
    b.results["depth"] = {"units": units, "hz": 999, "max_stack": 1024 if raised else old,
                          "max_stack_before": old, "rows": rows}


def sec_libs(b):
    cpu = 0.6 if b.quick else 2.0
    counts = (1, 20, 200) if b.quick else (1, 10, 50, 200)
    d = build_libs(b.tmp, max(counts))
    prog_of = lambda u, n: [b.exes["libs"], d, str(n), str(u)]
    units = calibrate(b.tools, lambda u: prog_of(u, 1), cpu)
    rows = []
    for n in counts:
        log(f"libs: {n}")
        r = compare(b.tools, prog_of(units, n), "fp", ("F", 999), b.scale_runs)
        nd, pd = os.path.join(b.tmp, "n.data"), os.path.join(b.tmp, "perf.data")
        r["reports"] = time_reports(b, nd, pd)
        r.update(libs=n)
        rows.append(r)
    b.results["libs"] = {"units": units, "hz": 999, "rows": rows}


# --------------------------------------------------------------------------
# SVG charts, drawn by hand

PALETTE = {"Narwhal": "#1f77b4", "perf": "#d62728", "Narwhal program": "#9ecae1",
           "Narwhal recorder": "#1f77b4", "perf program": "#f4a3a3", "perf recorder": "#d62728",
           "bare": "#7f7f7f"}
EXTRA = ["#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#e377c2"]


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def color(name, i):
    return PALETTE.get(name, EXTRA[i % len(EXTRA)])


def nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.floor(lo / step) * step
    ticks, v = [], start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    return ticks


def fmt_num(v):
    if v == 0:
        return "0"
    if abs(v) >= 1000 or abs(v) < 0.01:
        e = int(math.floor(math.log10(abs(v))))
        m = v / 10 ** e
        return f"{m:g}e{e}" if abs(m - 1) > 1e-9 else f"1e{e}"
    return f"{v:g}"


def svg_bars(path, title, groups, series, ylabel, stacks=None):
    """Grouped bars: groups = labels; series = {name: [value per group]}.
    stacks: {bar name: [series names stacked bottom-up]} to stack series into one bar."""
    stacks = stacks or {name: [name] for name in series}
    W, H, L, R, T, B = 900, 420, 70, 20, 40, 110
    vmax = max((sum(series[s][g] or 0 for s in parts) for parts in stacks.values()
                for g in range(len(groups))), default=1) or 1
    ticks = nice_ticks(0, vmax)
    top = ticks[-1]
    pw, ph = W - L - R, H - T - B
    gw = pw / len(groups)
    bw = min(30, gw * 0.8 / len(stacks))
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{esc(title)}</text>']
    for t in ticks:
        y = T + ph - ph * t / top
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 5}" y="{y + 4:.1f}" text-anchor="end">{fmt_num(t)}</text>')
    o.append(f'<text transform="translate(15,{T + ph / 2}) rotate(-90)" '
             f'text-anchor="middle">{esc(ylabel)}</text>')
    names = list(stacks)
    for g, label in enumerate(groups):
        x0 = L + g * gw + (gw - bw * len(names)) / 2
        for i, bar in enumerate(names):
            y = T + ph
            for k, s in enumerate(stacks[bar]):
                v = series[s][g] or 0
                h = ph * v / top
                y -= h
                o.append(f'<rect x="{x0 + i * bw:.1f}" y="{y:.1f}" width="{bw - 2:.1f}" '
                         f'height="{max(h, 0):.1f}" fill="{color(s, k)}"><title>{esc(s)}: '
                         f'{v:.4g}</title></rect>')
        lx = L + g * gw + gw / 2
        o.append(f'<text transform="translate({lx:.1f},{T + ph + 12}) rotate(30)" '
                 f'font-size="10">{esc(label)}</text>')
    legend = [s for parts in stacks.values() for s in parts]
    for i, s in enumerate(dict.fromkeys(legend)):
        lx = L + 10 + (i % 4) * 200
        ly = H - 28 + (i // 4) * 14
        o.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" '
                 f'fill="{color(s, legend.index(s))}"/><text x="{lx + 14}" y="{ly}">{esc(s)}</text>')
    o.append(f'<line x1="{L}" x2="{L}" y1="{T}" y2="{T + ph}" stroke="black"/>')
    o.append(f'<line x1="{L}" x2="{W - R}" y1="{T + ph}" y2="{T + ph}" stroke="black"/>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def svg_lines(path, title, xlabel, ylabel, series, logx=True, logy=True):
    """series = {name: [(x, y), ...]}; log axes by default."""
    W, H, L, R, T, B = 640, 380, 75, 150, 40, 50
    pts = [(x, y) for s in series.values() for x, y in s if y is not None and (y > 0 or not logy)]
    if not pts:
        return
    fx = (lambda v: math.log10(v)) if logx else (lambda v: v)
    fy = (lambda v: math.log10(v)) if logy else (lambda v: v)
    xs, ys = [fx(x) for x, _ in pts], [fy(y) for _, y in pts]
    x0, x1 = min(xs), max(xs)
    if logy:
        y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
        if y1 == y0:
            y1 += 1
        yt = [10 ** e for e in range(int(y0), int(y1) + 1)]
    else:
        yt = nice_ticks(min(0, min(ys)), max(ys))
        y0, y1 = yt[0], yt[-1]
    if x1 == x0:
        x1 = x0 + 1
    pw, ph = W - L - R, H - T - B
    px = lambda v: L + pw * (fx(v) - x0) / (x1 - x0)
    py = lambda v: T + ph - ph * (fy(v) - y0) / (y1 - y0)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L + pw / 2}" y="20" text-anchor="middle" font-size="14">{esc(title)}</text>']
    for t in yt:
        y = py(t)
        o.append(f'<line x1="{L}" x2="{L + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 5}" y="{y + 4:.1f}" text-anchor="end">{fmt_num(t)}</text>')
    xvals = sorted({x for s in series.values() for x, _ in s})
    for x in xvals:
        o.append(f'<text x="{px(x):.1f}" y="{T + ph + 15}" text-anchor="middle">'
                 f'{fmt_num(x)}</text>')
        o.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{T}" y2="{T + ph}" stroke="#eee"/>')
    o.append(f'<text x="{L + pw / 2}" y="{H - 10}" text-anchor="middle">{esc(xlabel)}</text>')
    o.append(f'<text transform="translate(15,{T + ph / 2}) rotate(-90)" '
             f'text-anchor="middle">{esc(ylabel)}</text>')
    for i, (name, s) in enumerate(series.items()):
        c = color(name, i)
        s = [(x, y) for x, y in s if y is not None and (y > 0 or not logy)]
        dash = ' stroke-dasharray="5,3"' if "perf" in name else ""
        if s:
            d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s)
            o.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
            for x, y in s:
                o.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{c}">'
                         f'<title>{esc(name)}: {x:g}, {y:.4g}</title></circle>')
        ly = T + 10 + i * 16
        o.append(f'<line x1="{L + pw + 10}" x2="{L + pw + 30}" y1="{ly}" y2="{ly}" stroke="{c}" '
                 f'stroke-width="2"{dash}/><text x="{L + pw + 35}" y="{ly + 4}">{esc(name)}</text>')
    o.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


# --------------------------------------------------------------------------
# The document


def f3(v, nd=3):
    return "–" if v is None else f"{v:.{nd}f}"


def fx(v):
    return "–" if v is None else f"{v:.2f}×"


def machine():
    def sh(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, shell=True).stdout.strip()
        except OSError:
            return ""
    model = sh("lscpu | sed -n 's/^Model name: *//p'")
    hv = sh("lscpu | sed -n 's/^Hypervisor vendor: *//p'")
    mem = sh("awk '/MemTotal/ {printf \"%.1f GiB\", $2/1048576}' /proc/meminfo")
    return {
        "cpu": model + (f" ({hv} virtual machine)" if hv else ""),
        "cores": os.cpu_count(),
        "memory": mem,
        "kernel": platform.release(),
        "os": sh(". /etc/os-release && echo $PRETTY_NAME"),
        "perf": sh("perf --version"),
        "gcc": sh("gcc --version | head -1"),
        "narwhal": sh(f"git -C {ROOT} describe --always --dirty 2>/dev/null"),
        "paranoid": sh("cat /proc/sys/kernel/perf_event_paranoid"),
        "max_stack": sh(f"cat {MAX_STACK_SYSCTL}"),
    }


def md_machine(b):
    m = b.results["machine"]
    la = b.results.get("load", {})
    return "\n".join([
        "| | |", "|---|---|",
        f"| CPU | {m['cpu']}, {m['cores']} cores |",
        f"| memory | {m['memory']} |",
        f"| system | {m['os']}, Linux {m['kernel']} |",
        f"| perf | {m['perf']} |",
        f"| compiler | {m['gcc']} |",
        f"| Narwhal | {m['narwhal']} |",
        f"| run | {b.results['started']}, {b.results['duration_min']:.0f} min, "
        f"{'quick' if b.quick else 'full'}, {b.runs} runs per configuration; load average "
        f"{la.get('start', '?')} at the start, {la.get('end', '?')} at the end |",
        f"| command | `{b.results['command']}` |",
    ] + [f"| section {k} | {v['started']}, {v['minutes']:g} min, `{v['command']}` |"
         for k, v in b.results.get("sections", {}).items()])


def overhead_rows(rows):
    out = ["| threads | Hz | mode | samples (N / perf) | program CPU s: bare / with Narwhal / "
           "with perf | recorder CPU s (N / perf) | recorder ratio | **added CPU s (N / perf)** | "
           "**ratio** | wall s: bare / N / perf |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n, p, b = r["narwhal"], r["perf"], r["bare"]
        out.append(
            f"| {r['threads']} | {r['hz']} | {r['mode']} | {n['samples']:.0f} / {p['samples']:.0f} "
            f"| {f3(b['prog_cpu'])} / {f3(n['prog_cpu'])} / {f3(p['prog_cpu'])} "
            f"| {f3(n['recorder_cpu'])} / {f3(p['recorder_cpu'])} | {f3(n.get('ratio_recorder'), 2)} "
            f"| **{f3(n['added_cpu'])} / {f3(p['added_cpu'])}** | **{f3(n['ratio_added'], 2)}** "
            f"| {f3(b['wall'], 2)} / {f3(n['wall'], 2)} / {f3(p['wall'], 2)} |")
    return "\n".join(out)


def per_sample_rows(rows):
    out = ["| threads | Hz | mode | Narwhal sampling loop µs/sample | Narwhal whole recorder "
           "µs/sample | perf whole recorder µs/sample | added CPU µs/sample (N / perf) |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        n, p = r["narwhal"], r["perf"]
        out.append(f"| {r['threads']} | {r['hz']} | {r['mode']} | **{f3(n.get('loop_us'), 2)}** "
                   f"| {f3(n['recorder_us'], 1)} | {f3(p['recorder_us'], 1)} "
                   f"| {f3(n['added_us'], 1)} / {f3(p['added_us'], 1)} |")
    return "\n".join(out)


def chart_overhead(b, d):
    rows = b.results["overhead"]["rows"]
    groups = [f"{r['threads']}t {r['hz']}Hz {r['mode']}" for r in rows]
    series = {
        "Narwhal program": [1e3 * max(r["narwhal"]["prog_added"], 0) for r in rows],
        "Narwhal recorder": [1e3 * r["narwhal"]["recorder_cpu"] for r in rows],
        "perf program": [1e3 * max(r["perf"]["prog_added"], 0) for r in rows],
        "perf recorder": [1e3 * r["perf"]["recorder_cpu"] for r in rows],
    }
    svg_bars(os.path.join(d, "overhead.svg"),
             "CPU added by recording (program's extra CPU + recorder), medians",
             groups, series, "ms of CPU",
             {"Narwhal": ["Narwhal program", "Narwhal recorder"],
              "perf": ["perf program", "perf recorder"]})


def md_postproc(b):
    pp = b.results["postproc"]
    out = []
    views = ["narwhal --tree", "narwhal --folded", "narwhal --pprof", "perf report --stdio",
             "perf script"]
    out.append("| workload | samples (N / perf) | distinct stacks | " +
               " | ".join(views) + " | perf report / slowest Narwhal |")
    out.append("|---|---|---|" + "---|" * len(views) + "---|")
    for wl, series in pp["series"].items():
        for s in series:
            rep = s["reports"]
            cells = []
            for v in views:
                x = rep.get(v)
                cells.append("–" if not x else f"{x['wall']:.3f} ({x['cpu']:.3f})")
            slow = max(rep[v]["wall"] for v in views[:3])
            speed = (rep["perf report --stdio"]["wall"] / slow
                     if "perf report --stdio" in rep and slow > 0 else None)
            ps = s["perf"]["samples"] if s["perf"] else None
            out.append(f"| {wl} | {s['narwhal']['samples']:.0f} / "
                       f"{'–' if ps is None else f'{ps:.0f}'} | {s['distinct']} | " +
                       " | ".join(cells) + f" | {fx(speed)} |")
    return "\n".join(out)


def md_size(b):
    out = ["| recording | samples (N / perf) | Narwhal KiB | perf.data KiB | perf / Narwhal |",
           "|---|---|---|---|---|"]
    for r in b.results.get("overhead", {}).get("rows", []):
        n, p = r["narwhal"], r["perf"]
        out.append(f"| work, {r['threads']} thread(s), {r['hz']} Hz, {r['mode']} | "
                   f"{n['samples']:.0f} / {p['samples']:.0f} | {n['bytes'] / 1024:.0f} | "
                   f"{p['bytes'] / 1024:.0f} | {p['bytes'] / max(n['bytes'], 1):.1f}× |")
    for wl, series in b.results.get("postproc", {}).get("series", {}).items():
        for s in series:
            n, p = s["narwhal"], s["perf"] or {}
            ps, pb = p.get("samples"), p.get("bytes")
            out.append(f"| {wl}, 8 threads, fp, -c 50000 | {n['samples']:.0f} / "
                       f"{'–' if ps is None else '%.0f' % ps} | {n['bytes'] / 1024:.0f} | "
                       f"{'–' if pb is None else '%.0f' % (pb / 1024)} | "
                       f"{'–' if pb is None else '%.1f×' % (pb / max(n['bytes'], 1))} |")
    return "\n".join(out)


def md_accuracy(b):
    a = b.results["accuracy"]
    ks = ("narwhal fp", "narwhal dwarf", "perf fp", "perf dwarf")
    out = ["| function | program's own share % | " +
           " | ".join(f"{k} % (error)" for k in ks) + " |", "|---|---|" + "---|" * len(ks)]
    for r in a["rows"]:
        out.append(f"| {r['function']} | {r['program']:.2f} | " +
                   " | ".join(f"{r[k]:.2f} ({r[k + ' err']:.2f})" for k in ks) + " |")
    worst = {k: max(r[k + " err"] for r in a["rows"]) for k in ks}
    out.append("| **largest error** | | " + " | ".join(f"**{worst[k]:.2f}**" for k in ks) + " |")
    return "\n".join(out)


def md_scaling(b, key, label):
    sec = b.results[key]
    rows = sec["rows"]
    has_rep = "reports" in rows[0]
    head = (f"| {label} | mode | samples (N / perf) | Narwhal loop µs/sample | recorder CPU s "
            f"(N / perf) | added CPU s (N / perf) | ratio |")
    sep = "|---|---|---|---|---|---|---|"
    if has_rep:
        head += " report CPU s (narwhal --tree / perf report) |"
        sep += "---|"
    out = [head, sep]
    for r in rows:
        n, p = r["narwhal"], r["perf"]
        line = (f"| {r[key]} "
                f"| {r.get('mode', 'fp')} | {n['samples']:.0f} / {p['samples']:.0f} "
                f"| {f3(n.get('loop_us'), 2)} | {f3(n['recorder_cpu'])} / {f3(p['recorder_cpu'])} "
                f"| {f3(n['added_cpu'])} / {f3(p['added_cpu'])} | {f3(n['ratio_added'], 2)} |")
        if has_rep:
            rep = r["reports"]
            line += (f" {f3(rep['narwhal --tree']['cpu'])} / "
                     f"{f3(rep['perf report --stdio']['cpu'])} |")
        out.append(line)
    return "\n".join(out)


def chart_scaling(b, d, key, xlabel, fname):
    rows = b.results[key]["rows"]
    modes = sorted({r.get("mode", "fp") for r in rows}, key=lambda m: m != "fp")
    series = {}
    for m in modes:
        rs = [r for r in rows if r.get("mode", "fp") == m]
        sfx = f" {m}" if len(modes) > 1 else ""
        series[f"Narwhal{sfx} added"] = [(r[key], r["narwhal"]["added_us"]) for r in rs]
        series[f"perf{sfx} added"] = [(r[key], r["perf"]["added_us"]) for r in rs]
        series[f"Narwhal{sfx} loop"] = [(r[key], r["narwhal"].get("loop_us")) for r in rs]
    svg_lines(os.path.join(d, fname), f"Cost per sample against {xlabel}", xlabel,
              "µs of CPU per sample", series)


def chart_postproc(b, d):
    pp = b.results["postproc"]["series"]
    series = {}
    for wl, ss in pp.items():
        for v in ("narwhal --tree", "perf report --stdio", "perf script"):
            name = f"{v} ({wl})"
            series[name] = [(s["narwhal"]["samples"], s["reports"][v]["cpu"]) for s in ss
                            if v in s["reports"]]
    svg_lines(os.path.join(d, "postproc.svg"), "Report CPU time against samples", "samples",
              "CPU seconds", series)


def targets(b):
    """(target, measured, verdict) rows from the results."""
    out = []
    ov = b.results.get("overhead")
    if ov:
        worst = max(ov["rows"], key=lambda r: r["narwhal"]["ratio_added"] or 0)
        ratios = [r["narwhal"]["ratio_added"] for r in ov["rows"]]
        ok = all(x is not None and x <= 0.5 for x in ratios)
        out.append(("CPU added by Narwhal ≤ ½ of perf's (program + recorder)",
                    f"ratio {min(ratios):.2f} to {max(ratios):.2f} (worst: {worst['threads']} "
                    f"thread(s), {worst['hz']} Hz, {worst['mode']})",
                    "met" if ok else f"missed in {sum(1 for x in ratios if x > 0.5)} of "
                    f"{len(ratios)} configurations (worst by {max(ratios) / 0.5:.2f}×)"))
        for mode, lim in (("fp", 1.0), ("dwarf", 20.0)):
            # The marginal cost: the loop at 9999 Hz, where samples outweigh the
            # loop's fixed work (first samples of a process, polling).
            loops = [r["narwhal"].get("loop_us") for r in ov["rows"]
                     if r["mode"] == mode and r["hz"] == 9999]
            loops = [x for x in loops if x is not None]
            if loops:
                out.append((f"recorder cost per sample < {lim:g} µs ({mode})",
                            f"sampling loop {min(loops):.2f}–{max(loops):.2f} µs per sample at "
                            "9999 Hz (1 and 8 threads)",
                            "met" if max(loops) < lim else f"missed by {max(loops) / lim:.2f}×"))
    for wl, series in b.results.get("postproc", {}).get("series", {}).items():
        s = series[-1]
        n = s["narwhal"]
        out.append((f"recorder cost per sample < 1 µs (fp, whole recorder, {wl})",
                    f"{n['recorder_us']:.2f} µs per sample over {n['samples']:.0f} samples "
                    f"(sampling loop {n.get('loop_us', 0):.2f})",
                    "met" if n["recorder_us"] < 1 else f"missed by {n['recorder_us']:.2f}×"))
    pp = b.results.get("postproc")
    if pp:
        for wl, series in pp["series"].items():
            s = [x for x in series if x["perf"]][-1]
            rep = s["reports"]
            slow = max(rep[v]["wall"] for v in ("narwhal --tree", "narwhal --folded",
                                                 "narwhal --pprof"))
            speed = rep["perf report --stdio"]["wall"] / slow
            out.append((f"reports of {s['narwhal']['samples']:.0f} samples ({wl}) < 1 s",
                        f"slowest {slow:.3f} s wall",
                        "met" if slow < 1 else f"missed by {slow:.2f}×"))
            out.append((f"reports ≥ 5× faster than perf report ({wl})", f"{speed:.1f}×",
                        "met" if speed >= 5 else f"missed ({speed / 5:.2f} of the target)"))
    acc = b.results.get("accuracy")
    if acc:
        for tool in ("fp", "dwarf"):
            nerr = max(r[f"narwhal {tool} err"] for r in acc["rows"])
            perr = max(r[f"perf {tool} err"] for r in acc["rows"])
            ok = nerr <= 1.5 and nerr <= perr + acc.get("sigma", 0)
            out.append((f"accuracy ({tool}): error ≤ 1.5 points, no worse than perf",
                        f"largest error {nerr:.2f} (perf {perr:.2f}; sampling noise σ "
                        f"{acc.get('sigma', 0):.2f})",
                        "met" if ok else f"missed ({nerr:.2f} points)"))
    return out


def md_targets(b):
    out = ["| target | measured | verdict |", "|---|---|---|"]
    for t, m, v in targets(b):
        out.append(f"| {t} | {m} | {v} |")
    return "\n".join(out)


SKELETON = """# Performance: Narwhal beside perf

Measured by `bench/run.py` (bench/README.md): every workload bare, under
`narwhal-record` and under `perf record`, same event, rate and call-graph
mode, interleaved, medians of several runs.

## Machine and run

<!-- BEGIN bench:machine -->
<!-- END bench:machine -->

## Targets

<!-- BEGIN bench:targets -->
<!-- END bench:targets -->

## Recording overhead

<!-- BEGIN bench:overhead -->
<!-- END bench:overhead -->

## Recorder cost per sample

<!-- BEGIN bench:per-sample -->
<!-- END bench:per-sample -->

## Post-processing

<!-- BEGIN bench:postproc -->
<!-- END bench:postproc -->

## Size on disk

<!-- BEGIN bench:size -->
<!-- END bench:size -->

## Accuracy

<!-- BEGIN bench:accuracy -->
<!-- END bench:accuracy -->

## Scaling

<!-- BEGIN bench:scaling -->
<!-- END bench:scaling -->
"""


def write_doc(b):
    doc = b.doc
    d = os.path.join(os.path.dirname(doc), "performance")
    os.makedirs(d, exist_ok=True)
    rel = os.path.relpath(d, os.path.dirname(doc))
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump(b.results, f, indent=1, default=str)
    parts = {"machine": md_machine(b)}
    r = b.results
    if "overhead" in r or "postproc" in r or "accuracy" in r:
        parts["targets"] = md_targets(b)
    if "overhead" in r:
        ov = r["overhead"]
        chart_overhead(b, d)
        parts["overhead"] = (
            f"Workload `work THREADS {ov['units']} 10` (about {ov['cpu_s']:g} s of CPU in all "
            f"threads, 10 frames deep), `-e {EVENT}` / `-e {PERF_EVENT}`, `-F HZ`, "
            f"`-g fp|dwarf` / `--call-graph fp|dwarf,16384`; medians of {ov.get('runs', b.runs)} runs.  "
            "*Program CPU* is what the workload reports for itself (getrusage): the kernel's "
            "sampling work lands there.  *Recorder CPU* is the rest of the run's CPU.  "
            "*Added CPU* is the run's CPU minus that of the bare run of the same round; *ratio* is Narwhal's added CPU "
            "over perf's, *recorder ratio* the same for the recorders alone; both are medians of "
            "the per-run ratios.\n\n" +
            overhead_rows(ov["rows"]) + f"\n\n![CPU added by recording]({rel}/overhead.svg)\n")
        parts["per-sample"] = (
            "The *sampling loop* is narwhal-record's own CPU between the start and the end of "
            "recording, per sample (`narwhal-record -v`): reading the rings, decoding, unwinding "
            "and inserting into the CCTs.  The *whole recorder* adds start-up and writing the "
            "measurement (symbolization included), which do not grow with samples.\n\n" +
            per_sample_rows(ov["rows"]) + "\n")
        parts["size"] = md_size(b)
    if "postproc" in r:
        chart_postproc(b, d)
        parts["postproc"] = (
            "Recordings of `work 8 UNITS 10` (few distinct stacks) and `paths 8 UNITS` (10,000 "
            "call patterns 5 to 44 frames deep over 32 functions) with `-c "
            f"{r['postproc']['period_ns']}` of `cpu-clock`, fp; wall seconds (CPU seconds) of "
            f"each report, medians of {b.report_runs} runs; output to /dev/null.  "
            "*Distinct stacks*: lines of `narwhal-report --folded`.  Rows above 10^6 samples "
            "are Narwhal only.\n\n" + md_postproc(b) +
            f"\n\n![Report CPU time against samples]({rel}/postproc.svg)\n")
        if "overhead" not in r:
            parts["size"] = md_size(b)
    if "accuracy" in r:
        a = r["accuracy"]
        parts["accuracy"] = (
            f"Workload `split {a['seconds']:g}`: func_a, func_b, func_c and func_d take about "
            "50, 30, 15 and 5 % of the CPU, measured by the program itself "
            "(CLOCK_THREAD_CPUTIME_ID around each call, over its whole CPU time).  Each tool's "
            f"self share per function at {a['hz']} Hz; error = |tool − program| in points, "
            f"median over {a.get('runs', b.runs)} runs (each run against its own numbers).  With "
            f"{a['samples']:.0f} samples per run, sampling alone gives a 50 % share a standard "
            f"deviation of {a['sigma']:.2f} points (σ below).\n\n" + md_accuracy(b) +
            "\n")
    sc = []
    if "threads" in r:
        chart_scaling(b, d, "threads", "threads", "scaling-threads.svg")
        sc.append(f"### Threads\n\n`work T {r['threads']['units']} 10` at "
                  f"{r['threads']['hz']} Hz (the same total work split over T threads on "
                  f"{os.cpu_count()} cores).\n\n" + md_scaling(b, "threads", "threads") +
                  f"\n\n![threads]({rel}/scaling-threads.svg)\n")
    if "depth" in r:
        dp = r["depth"]
        chart_scaling(b, d, "depth", "stack depth (frames)", "scaling-depth.svg")
        sc.append(f"### Stack depth\n\n`work 1 {dp['units']} D` at {dp['hz']} Hz; dwarf mode with "
                  "a 65528-byte stack copy (`-g dwarf,65528`, `--call-graph dwarf,65528`); "
                  f"kernel.perf_event_max_stack was {dp['max_stack_before']} and "
                  f"{'raised to ' + str(dp['max_stack']) if dp['max_stack'] != dp['max_stack_before'] else 'left'} "
                  "during this section (restored after), so fp chains up to that many frames "
                  "reach the tools.\n\n" + md_scaling(b, "depth", "depth") +
                  f"\n\n![depth]({rel}/scaling-depth.svg)\n")
    if "libs" in r:
        chart_scaling(b, d, "libs", "dlopen'd libraries", "scaling-libs.svg")
        sc.append(f"### Loaded libraries\n\n`libs DIR N {r['libs']['units']}`: N generated "
                  "one-function libraries dlopen'd and all sampled, fp, "
                  f"{r['libs']['hz']} Hz.\n\n" + md_scaling(b, "libs", "libraries") +
                  f"\n\n![libraries]({rel}/scaling-libs.svg)\n")
    if "postproc" in r:
        rows = []
        for s in r["postproc"]["series"].get("work", []):
            n, p = s["narwhal"], s["perf"]
            rows.append(f"| {n['samples']:.0f} | {f3(n.get('loop_us'), 2)} | "
                        f"{f3(n['recorder_cpu'])} / {f3(p['recorder_cpu']) if p else '–'} | "
                        f"{f3(n['added_cpu']) if s['bare'] else '–'} / "
                        f"{f3(p['added_cpu']) if p else '–'} | "
                        f"{f3(s['reports']['narwhal --tree']['cpu'])} / "
                        f"{f3(s['reports']['perf report --stdio']['cpu']) if p else '–'} |")
        sc.append("### Samples\n\n`work 8 UNITS 10`, fp, `-c 50000`, one recording per size "
                  "(the post-processing runs above).\n\n| samples | Narwhal loop µs/sample | "
                  "recorder CPU s (N / perf) | added CPU s (N / perf) | report CPU s "
                  "(narwhal --tree / perf report) |\n|---|---|---|---|---|\n" + "\n".join(rows) +
                  "\n")
    if sc:
        parts["scaling"] = "\n".join(sc)

    text = open(doc).read() if os.path.exists(doc) else SKELETON
    for name, body in parts.items():
        begin, end = f"<!-- BEGIN bench:{name} -->", f"<!-- END bench:{name} -->"
        if begin not in text:
            text += f"\n{begin}\n{end}\n"
        i, j = text.index(begin) + len(begin), text.index(end)
        text = text[:i] + "\n" + body.rstrip() + "\n" + text[j:]
    with open(doc, "w") as f:
        f.write(text)


# --------------------------------------------------------------------------


class Bench:
    pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="Narwhal's build directory (default build)")
    ap.add_argument("--quick", action="store_true", help="smoke run: small workloads, few runs")
    ap.add_argument("--runs", type=int, help="runs per configuration (default 7; quick: 2)")
    ap.add_argument("--only", help="comma-separated sections: " + ",".join(SECTIONS))
    ap.add_argument("--doc", help="the document to update (default doc/PERFORMANCE.md; quick: "
                    "BUILD/bench-quick/PERFORMANCE.md)")
    ap.add_argument("--huge", action="store_true", help="also 10^7 samples (Narwhal only)")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite the document from its results.json")
    ap.add_argument("--no-sysctl", dest="sysctl", action="store_false",
                    help="never raise kernel.perf_event_max_stack for the depth section")
    a = ap.parse_args()
    b = Bench()
    b.quick, b.huge, b.sysctl = a.quick, a.huge, a.sysctl
    b.runs = a.runs or (2 if a.quick else 7)
    b.scale_runs = 1 if a.quick else 3
    b.report_runs = 1 if a.quick else 3
    build = os.path.abspath(a.build if os.path.isdir(a.build) else os.path.join(ROOT, a.build))
    b.doc = os.path.abspath(a.doc) if a.doc else (
        os.path.join(build, "bench-quick", "PERFORMANCE.md") if a.quick
        else os.path.join(ROOT, "doc", "PERFORMANCE.md"))
    os.makedirs(os.path.dirname(b.doc), exist_ok=True)
    sections = a.only.split(",") if a.only else list(SECTIONS)
    for s in sections:
        if s not in SECTIONS:
            sys.exit(f"bench: unknown section {s} ({', '.join(SECTIONS)})")
    if os.path.exists(os.path.join(build, "build.ninja")):
        subprocess.run(["ninja", "-C", build], check=True, stdout=subprocess.DEVNULL)
    t0 = time.time()
    b.results = {"started": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                 "command": " ".join(["bench/run.py"] + sys.argv[1:]),
                 "machine": machine(), "load": {"start": "%.1f" % os.getloadavg()[0]}}
    saved = os.path.join(os.path.dirname(b.doc), "performance", "results.json")
    if a.render:
        with open(saved) as f:
            b.results = json.load(f)
        write_doc(b)
        return
    if os.path.exists(saved) and a.only:
        # A partial run keeps the other sections' results.
        with open(saved) as f:
            old = json.load(f)
        for k in SECTIONS:
            if k in old and k not in sections:
                b.results[k] = old[k]
                if k in old.get("sections", {}):
                    b.results.setdefault("sections", {})[k] = old["sections"][k]
    with tempfile.TemporaryDirectory(prefix="narwhal-bench-") as tmp:
        b.tmp = tmp
        b.tools = Tools(build, tmp)
        b.exes = build_workloads(tmp)
        for s in sections:
            t1 = time.time()
            globals()["sec_" + s](b)
            b.results.setdefault("sections", {})[s] = {
                "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(t1)),
                "minutes": round((time.time() - t1) / 60, 1), "command": b.results["command"]}
            b.results["duration_min"] = (time.time() - t0) / 60
            b.results["load"]["end"] = "%.1f" % os.getloadavg()[0]
            write_doc(b)
    log(f"done in {(time.time() - t0) / 60:.1f} min: {b.doc}")


if __name__ == "__main__":
    main()
