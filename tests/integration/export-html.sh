#!/bin/bash
# --html FILE: one self-contained page (nothing outside it is referred to,
# the profile inside decodes), opened in headless Chromium and Firefox with
# the network blocked (tests/js/html-check.mjs): nothing is fetched, no
# script error, and the numbers the page shows equal narwhal-report's text
# views: a function's self and total (--flat), the call tree (--tree), a
# caller's share (--callers), a line's share (--lines), a thread alone
# (--tid), another metric (--metric), a time range's top function
# (--time), the search's matched share; zoom, Esc, "/", the arrows,
# inversion and the icicle work; --diff BASE gives base and new shares,
# narwhal-report --diff's changes with their noise, greyed within it;
# narwhal-record --html writes the same page at the end of a run; the
# profile is no more than twice the pprof export.  Screenshots of every
# view are kept in meson-logs/html/.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_need_js
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[[ -x $CHROMIUM ]] || fail "$CHROMIUM is missing: run scripts/setup.sh --tests"
FIREFOX=${FIREFOX:-/usr/bin/firefox-esr}
[[ -x $FIREFOX ]] || fail "$FIREFOX is missing: run scripts/setup.sh --tests"
SHOTS=$NW_BUILD/meson-logs/html
mkdir -p "$SHOTS"

# page HTML JSON [BROWSER] : html-check.mjs's readings of the page into HTML.json.
page() {
	local html=$1 opts=$2 browser=${3:-chromium}

	BROWSER=$browser node "$NW_JS/html-check.mjs" "$html" "$SHOTS" "$opts" \
		>"$html.$browser.json" 2>"$html.$browser.err" || {
		nw_show "html-check.mjs ($browser)" "$html.$browser.err"
		fail "the page $html did not pass in $browser"
	}
}

# py SCRIPT ARGS... : runs the Python check SCRIPT (from stdin) with ARGS.
py() {
	python3 - "$@" || fail "$(basename "$1"): the page's numbers differ from the text views (above)"
}

d=$NW_TMP/callers.data
nw_record_ok "$d" "$P/callers"
nw_report "$NW_TMP/out" "$d" --html "$NW_TMP/callers.html" --pprof "$NW_TMP/callers.pb.gz"
[[ -s $NW_TMP/callers.html ]] || fail "--html wrote nothing"
[[ ! -s $NW_TMP/out ]] || fail "--html alone also printed a view"

check "self-contained: nothing outside the file is referred to; the profile decodes"
if grep -Eiq '(src|href|action)=|https?://|url\(|@import' "$NW_TMP/callers.html"; then
	grep -Eion '(src|href|action)=|https?://|url\(|@import' "$NW_TMP/callers.html" | head >&2
	fail "the page refers to something outside itself"
fi
grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$NW_TMP/callers.html" ||
	fail "the page does not forbid loading anything"
# The data between the markers: base64 of gzipped JSON; the rest is the page's code.
html_data() {
	python3 - "$1" <<'PY'
import base64, gzip, json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script id="nw-data" type="application/octet-stream">\n(.*?)</script>', page, re.S)
raw = m.group(1)
d = json.loads(gzip.decompress(base64.b64decode("".join(raw.split()))))
assert d["format"] == "narwhal-html" and d["version"] == 1, "not a narwhal-html profile"
pr = d["profile"]
th = pr["threads"]
assert th and all(len(pr[k]) == len(th) for k in ("parent", "frame", "line", "self", "trace"))
assert all(len(p) == len(f) == len(l) for p, f, l in zip(pr["parent"], pr["frame"], pr["line"]))
# Parents are steps back, 0 for the root: every parent comes before its child.
assert all((d == 0) == (i == 0) and d <= i for p in pr["parent"] for i, d in enumerate(p)), \
    "a parent after its child"
# What pprof holds too: the trees (the traces, the source text and the
# Disassembly panel's instructions are the page's own).
trees = dict(d, sources=[], disasm=[])
trees["profile"]["trace"] = []
small = len(base64.b64encode(gzip.compress(json.dumps(trees, separators=(",", ":")).encode(), 6)))
print(len(raw), small, len(page) - len(raw), len(th), len(d["sources"]))
PY
}
read -r data_size trees_size code_size nthreads nsources < <(html_data "$NW_TMP/callers.html") ||
	fail "the profile in the page does not decode"
pb_size=$(stat -c %s "$NW_TMP/callers.pb.gz")
ok "profile $data_size bytes ($trees_size without the trace and the source text; pprof $pb_size), page code $code_size bytes, $nthreads thread(s), $nsources source file(s)"
[[ $nsources -ge 1 ]] || fail "the source of callers.c is not in the page"
((trees_size <= 2 * pb_size)) ||
	fail "the trees take $trees_size bytes, over twice the pprof export ($pb_size)"

nw_report "$NW_TMP/flat" "$d" --flat
nw_report "$NW_TMP/tree" "$d" --tree --percent-limit 0
nw_report "$NW_TMP/itree" "$d" --tree --inverted --percent-limit 0
nw_report "$NW_TMP/callers" "$d" --callers '^hot$'
nw_report "$NW_TMP/lines" "$d" --lines '^hot$'

check "in Chromium, network blocked: the numbers of --flat, --tree, --callers, --lines; search, zoom, keys"
page "$NW_TMP/callers.html" \
	'{"fn":"hot","search":"^hot$","zoom":"caller_a","full":true,"shots":"callers"}'
py "$NW_TMP/callers.html.chromium.json" "$NW_TMP/flat" "$NW_TMP/tree" "$NW_TMP/callers" \
	"$NW_TMP/lines" "$NW_TMP/itree" <<'PY'
import json, re, sys
pg = json.load(open(sys.argv[1]))
flat, tree, callers, lines, itree = (open(f).read().splitlines() for f in sys.argv[2:7])
bad = []
def near(what, a, b, tol=0.051):
    if abs(a - b) > tol:
        bad.append(f"{what}: page {a}, text {b}")
    else:
        print(f"  ok: {what}: page {a}, text {b}")
assert not pg["requests"], f"the page made requests: {pg['requests']}"
assert not pg["errors"], f"script errors: {pg['errors']}"
print(f"  ok: {pg['version']}: no request, no script error; ready in {pg['timings']['ready']:.0f} ms")
# --flat rows: SELF% CUMUL% FUNCTION (file:line)
text = {}
for l in flat:
    m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+(\S+)", l)
    if m:
        text.setdefault(m.group(3), (float(m.group(1)), float(m.group(2))))
page = {r["name"]: r for r in pg["flat"]}
for name in ["hot", "main", "caller_a", "caller_b"]:
    near(f"{name} self", page[name]["self"], text[name][0])
    near(f"{name} total", page[name]["total"], text[name][1])
# --tree rows: INCL% SELF% then the name indented two spaces a level.
def compare_tree(label, tree, page_rows):
    tpaths = {}
    stack = []
    for l in tree:
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%  ( *)(\S.*)$", l)
        if not m:
            continue
        depth = len(m.group(3)) // 2
        stack[depth:] = [m.group(4)]
        # One name can be two frames (a function and an address of another
        # module, say): each path keeps every row it has.
        tpaths.setdefault(";".join(stack), []).append((float(m.group(1)), float(m.group(2))))
    stack = []
    n = 0
    for r in page_rows:
        stack[r["level"] - 1:] = [r["name"]]
        key = ";".join(stack)
        rows = [t for t in tpaths.get(key, []) if t[0] >= 0.5]
        if not rows:
            continue
        best = min(rows, key=lambda t: abs(t[0] - r["total"]) + abs(t[1] - r["self"]))
        near(f"{label} {key} total", r["total"], best[0])
        near(f"{label} {key} self", r["self"], best[1])
        tpaths[key].remove(best)
        n += 1
    if n < 5:
        bad.append(f"only {n} rows of the page's {label} found in the text view")
compare_tree("tree", tree, pg["tree"])
compare_tree("inverted tree", itree, pg["invertedTree"])
# --callers: "ALL% FUNC% CALLER", the direct callers indented four spaces.
sw = pg["sandwich"]
near("hot self (callers view)", sw["self"], text["hot"][0])
near("hot total (callers view)", sw["total"], text["hot"][1])
direct = {}
# (up to "Callees:", a section --callers leaves out when there are none)
for l in callers[:next((i for i, l in enumerate(callers) if l.startswith("Callees:")), len(callers))]:
    m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%    (\S+)$", l)
    if m:
        direct[m.group(3)] = (float(m.group(1)), float(m.group(2)))
for c in sw["callers"]:
    if c["name"] in direct:
        near(f"caller {c['name']} share of all", c["all"], direct[c["name"]][0])
        near(f"caller {c['name']} share of hot", c["func"], direct[c["name"]][1])
if {c["name"] for c in sw["callers"]} != set(direct):
    bad.append(f"callers differ: page {[c['name'] for c in sw['callers']]}, text {list(direct)}")
# --lines: SELF% TOTAL% LINE SOURCE
tl = {}
for l in lines:
    m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+(\d+)\s", l)
    if m:
        tl[int(m.group(3))] = (float(m.group(1)), float(m.group(2)))
src = {r["line"]: r for r in pg["source"]}
hot_line = [r["line"] for r in pg["source"] if "HOT_LINE" in r["text"]]
if not hot_line:
    bad.append("the page's source view does not show the HOT_LINE text")
for ln, (s, t) in tl.items():
    if ln not in src:
        bad.append(f"line {ln} is not in the page's source view")
        continue
    near(f"line {ln} self", src[ln]["self"], s)
    near(f"line {ln} total", src[ln]["total"], t)
near("search ^hot$ matched", pg["matchedShare"], text["hot"][1])
z = pg["zoom"]
if not (abs(z["after"] - z["canvas"]) < 1.5 and z["reset"] and not z["resetAfterEsc"] and abs(z["afterEsc"] - z["before"]) < 0.5):
    bad.append(f"zoom: {z}")
else:
    print(f"  ok: click zooms caller_a from {z['before']:.0f} px to the full {z['canvas']:.0f} px; Esc resets")
if "caller_a" not in z["hover"] or "module:" not in z["hover"] or "callers.c:" not in z["hover"]:
    bad.append(f"hover: {z['hover']!r}")
if pg["slashFocus"] != "search":
    bad.append(f"'/' focused {pg['slashFocus']}, not the search box")
if pg["keys"]["c1"] == pg["keys"]["c0"]:
    bad.append(f"the arrows did not move in the tree: {pg['keys']}")
inv = pg["inverted"]
if inv[0]["name"] != "hot":
    bad.append(f"inverted: {inv[0]['name']} at the base, not hot")
else:
    near("inverted: hot at the base, as wide as its self", inv[0]["share"], text["hot"][0])
if not pg["icicleDefault"] or pg["icicle"] != 0:
    bad.append(f"icicle: not the default ({pg['icicleDefault']}), or the root is at y={pg['icicle']}, not on top")
fr = pg["flameRoot"]
if abs(fr["y"] - (fr["height"] - fr["rowH"])) > 3:
    bad.append(f"flame graph (icicle off): the root is at y={fr['y']}, not at the bottom of {fr['height']} px")
for k in ("read100", "read200"):
    if pg[k]["font"] < 12 or pg[k]["overflow"]:
        bad.append(f"{k}: {pg[k]}")
if not pg["legend"]:
    bad.append("no module legend")
if bad:
    print("\n".join("  BAD: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
PY

check "in Firefox (firefox-esr over WebDriver BiDi): the same numbers, nothing fetched"
page "$NW_TMP/callers.html" '{"fn":"hot","search":"^hot$","zoom":"caller_a","shots":"firefox"}' firefox
py "$NW_TMP/callers.html.chromium.json" "$NW_TMP/callers.html.firefox.json" <<'PY'
import json, sys
c, f = (json.load(open(p)) for p in sys.argv[1:3])
assert not f["requests"] and not f["errors"], f"firefox: {f['requests']} {f['errors']}"
for k in ("flat", "sandwich", "source", "matchedShare"):
    assert c[k] == f[k], f"{k} differs: chromium {c[k]!r} firefox {f[k]!r}"
z = f["zoom"]
assert abs(z["after"] - z["canvas"]) < 1.5 and not z["resetAfterEsc"], f"firefox zoom: {z}"
print(f"  ok: {f['version']}: flat, callers, lines and search as in Chromium; ready in {f['timings']['ready']:.0f} ms")
PY

check "threads and metrics: one thread alone equals --tid, cpu-clock:period equals --metric"
d=$NW_TMP/threads.data
nw_record_ok "$d" "$P/threads"
nw_report "$NW_TMP/out" "$d" --html "$NW_TMP/threads.html"
nw_report "$NW_TMP/threads" "$d" --threads
tid=$(nw_threads_rows "$NW_TMP/threads" | awk '$5 == "worker-b" { print $2 }')
[[ -n $tid ]] || fail "no worker-b in --threads"
nw_report "$NW_TMP/tflat" "$d" --flat --tid "$tid"
nw_report "$NW_TMP/mflat" "$d" --flat --metric cpu-clock:period
page "$NW_TMP/threads.html" "{\"tid\":$tid,\"metric\":\"cpu-clock:period\",\"shots\":\"threads\"}"
py "$NW_TMP/threads.html.chromium.json" "$NW_TMP/tflat" "$NW_TMP/mflat" <<'PY'
import json, re, sys
pg = json.load(open(sys.argv[1]))
def rows(f):
    out = []
    for l in open(f):
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+(\S+)", l)
        if m:
            out.append((m.group(3), float(m.group(1)), float(m.group(2))))
    return out
assert not pg["requests"] and not pg["errors"], f"{pg['requests']} {pg['errors']}"
for what, page_rows, text in (("--tid", pg["threadFlat"], rows(sys.argv[2])),
                              ("--metric cpu-clock:period", pg["metricFlat"], rows(sys.argv[3]))):
    top = text[0]
    p = next((r for r in page_rows if r["name"] == top[0]), None)
    assert p and page_rows[0]["name"] == top[0], f"{what}: page's top {page_rows[0]['name']}, text's {top[0]}"
    assert abs(p["self"] - top[1]) <= 0.051 and abs(p["total"] - top[2]) <= 0.051, f"{what}: {p} vs {top}"
    print(f"  ok: {what}: top {top[0]} self {p['self']}% total {p['total']}% (text {top[1]}%, {top[2]}%)")
assert "1 of 3 threads" in pg["threadSummary"], pg["threadSummary"]
assert re.search(r"\d (ms|s)$", pg["metricTitle"]), f"the period is not shown as time: {pg['metricTitle']}"
PY

check "a time range dragged on the timeline equals --time over the same range"
d=$NW_TMP/phases.data
nw_record_ok "$d" "$P/phases"
nw_report "$NW_TMP/out" "$d" --html "$NW_TMP/phases.html"
page "$NW_TMP/phases.html" '{"range":[0.05,0.4],"shots":"phases"}'
range=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["range"]; print("%.6f,%.6f" % (r[0]/1e6, r[1]/1e6))' \
	"$NW_TMP/phases.html.chromium.json")
nw_report "$NW_TMP/rflat" "$d" --flat --time "$range"
py "$NW_TMP/phases.html.chromium.json" "$NW_TMP/rflat" "$range" <<'PY'
import json, re, sys
pg = json.load(open(sys.argv[1]))
text = []
for l in open(sys.argv[2]):
    m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+(\S+)", l)
    if m:
        text.append((m.group(3), float(m.group(1)), float(m.group(2))))
top = pg["rangeFlat"][0]
assert top["name"] == text[0][0], f"range {sys.argv[3]}: page's top {top['name']}, --time's {text[0][0]}"
assert abs(top["self"] - text[0][1]) <= 0.051, f"{top} vs {text[0]}"
assert top["name"] == "phase_a", f"the first 40% of phases should be phase_a, not {top['name']}"
print(f"  ok: range {sys.argv[3]} s: top {top['name']} {top['self']}% (--time: {text[0][1]}%)")
PY

check "--diff BASE: base and new shares side by side, coloured by change"
nw_record_ok "$NW_TMP/callers2.data" "$P/callers"
nw_report "$NW_TMP/out" "$NW_TMP/callers2.data" --html "$NW_TMP/diff.html" --diff "$NW_TMP/callers.data"
nw_report "$NW_TMP/flat2" "$NW_TMP/callers2.data" --flat
page "$NW_TMP/diff.html" '{"diff":true,"shots":"diff"}'
py "$NW_TMP/diff.html.chromium.json" "$NW_TMP/flat" "$NW_TMP/flat2" <<'PY'
import json, re, sys
pg = json.load(open(sys.argv[1]))
def cumul(f, fn):
    for l in open(f):
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+(\S+)", l)
        if m and m.group(3) == fn:
            return float(m.group(2))
assert "red grew, blue shrank" in pg["diffLegend"], pg["diffLegend"]
row = next(r for r in pg["diffFlat"] if r["name"] == "hot")
b, n = cumul(sys.argv[2], "hot"), cumul(sys.argv[3], "hot")
assert abs(row["base"] - b) <= 0.051 and abs(row["now"] - n) <= 0.051, f"{row} vs base {b} new {n}"
assert abs(row["change"] - (row["now"] - row["base"])) <= 0.011, row
print(f"  ok: hot base {row['base']}% new {row['now']}% change {row['change']} (text: {b}%, {n}%)")
PY

check "--diff BASE: the Flat table and flame graph show narwhal-report --diff's changes and Z; within noise grey"
# Another program as the base: its functions gone, callers' new, both beyond
# noise; what the two share (libc, the kernel) moves within it.
nw_report "$NW_TMP/out" "$NW_TMP/callers.data" --html "$NW_TMP/diff2.html" --diff "$NW_TMP/phases.data"
nw_report "$NW_TMP/difftext" "$NW_TMP/callers.data" --diff "$NW_TMP/phases.data" --all --full-names
nw_report "$NW_TMP/difftree" "$NW_TMP/callers.data" --diff "$NW_TMP/phases.data" --all --full-names \
	--tree --percent-limit 0
page "$NW_TMP/diff2.html" '{"diff":true,"shots":"diff-noise"}'
py "$NW_TMP/diff2.html.chromium.json" "$NW_TMP/difftext" "$NW_TMP/difftree" <<'PY'
import json, re, sys
pg = json.load(open(sys.argv[1]))
# The flame graph: each calling context's z as --diff --tree gives it; those
# within noise grey (r = g = b), those beyond red or blue.
tree, path = {}, []
for l in open(sys.argv[3]):
    m = re.match(r"\s*[-+][\d.]+\s+[\d.]+\s+([-+](?:[\d.]+|inf))\s+[\d.]+%\s+[\d.]+%  ( *)(.*)$", l)
    if m:
        depth = len(m.group(2)) // 2
        path = path[:depth] + [m.group(3)]
        tree[";".join(path)] = float(m.group(1))
boxes = pg["diffFlame"]
assert boxes, "no box of the flame graph has narwhal-report's change"
for b in boxes:
    want = tree.get(b["path"])
    assert want is not None, f"{b['path']}: not a context of --diff --tree"
    assert abs(b["z"] - want) <= 0.051 or b["z"] == want, f"{b['path']}: page z {b['z']}, text {want}"
    # (The text rounds z to a tenth: at 3.0 either side of the line is right.)
    assert b["beyond"] == (abs(want) >= 3) or abs(abs(want) - 3) <= 0.051, b
    r_, g_, b_ = b["rgb"]
    grey = max(r_, g_, b_) - min(r_, g_, b_) < 8
    assert grey == (not b["beyond"]), f"{b['path']} (z {want}) drawn rgb{tuple(b['rgb'])}"
print(f"  ok: {len(boxes)} flame graph boxes with --diff --tree's z, "
      f"{sum(not b['beyond'] for b in boxes)} grey within noise, {sum(b['beyond'] for b in boxes)} coloured")
text = {}
for l in open(sys.argv[2]):
    m = re.match(r"\s*([-+][\d.]+)\s+([\d.]+)\s+([-+](?:[\d.]+|inf))\s+(?:[\d.]+%\s+){4}[-+][\d.]+\s+(.*?)(?: \((?:new|gone)\))?$", l)
    if m:
        text[m.group(4)] = tuple(float(m.group(k)) for k in (1, 2, 3))
assert "Noise: sampling (binomial" in pg["diffLegend"], pg["diffLegend"]
rows = [r for r in pg["diffNoise"] if r["self"]]
assert rows, "the Flat table has no column of the diff's changes"
for r in rows:
    want = text.get(r["name"])
    assert want, f"{r['name']} is in the page's diff, not in narwhal-report --diff --all"
    got = (float(r["self"]), float(r["se"]), float(r["z"]))
    # Each rounds to a tenth from its own arithmetic: a value near a half
    # tenth may round either way (z 193.6 on the page, 193.5 in the text).
    assert all(abs(a - b) <= 0.101 or a == b for a, b in zip(got, want)), f"{r['name']}: page {got}, text {want}"
    assert r["grey"] == (abs(want[2]) < 3) or abs(abs(want[2]) - 3) <= 0.051, \
        f"{r['name']} (z {want[2]}) grey: {r['grey']}"
grey = [r for r in rows if r["grey"]]
clear = [r for r in rows if not r["grey"]]
assert grey and clear, f"{len(grey)} rows within noise, {len(clear)} beyond: both expected"
assert {r["color"] for r in grey}.isdisjoint({r["color"] for r in clear}), "grey rows look like the others"
print(f"  ok: {len(rows)} rows as narwhal-report --diff says them; {len(clear)} beyond noise "
      f"(e.g. {clear[0]['name']} {clear[0]['self']}, z {clear[0]['z']}), {len(grey)} grey")
PY

check "a C++ compile (g++ -O2): the first 1400x1000 screen shows the flame graph"
# A real compile's stacks: the parser's recursion and the optimizer's
# passes go 60 and more frames deep in slivers, while the time is in the
# first twenty.  The page opens on an icicle whose height is that of its
# deepest frame a pixel wide: the root and the widest frames are in the
# first screen, and at least 15 % of the flame graph's box in it is drawn
# (before: 0.7 %, the root 2,000 px below, under 2,052 px of slivers).
command -v g++ >/dev/null || fail "g++ is missing (build-essential)"
d=$NW_TMP/cxx.data
nw_record_ok "$d" g++ -O2 -c "$NW_SRC/tests/programs/bigcxx.cpp" -o "$NW_TMP/bigcxx.o"
nw_report "$NW_TMP/out" "$d" --html "$NW_TMP/cxx.html"
for b in chromium firefox; do
	page "$NW_TMP/cxx.html" "{\"screen\":true,\"lean\":true,\"shots\":\"cxx-$b\"}" "$b"
	py "$NW_TMP/cxx.html.$b.json" <<'PY'
import json, sys
pg = json.load(open(sys.argv[1]))
assert not pg["requests"] and not pg["errors"], f"{pg['requests']} {pg['errors']}"
s, f = pg["screen"], pg["screenFlame"]
top, bottom = s["visible"][1], s["visible"][3]
bad = []
if s["share"] < 0.15:
    bad.append(f"only {100 * s['share']:.1f}% of the flame graph in the first screen is drawn")
if bottom - top < 400:
    bad.append(f"only {bottom - top:.0f} px of the flame graph are in the first screen")
if s["rootTop"] is None or not top <= s["rootTop"] <= bottom - s["rowH"]:
    bad.append(f"the root (y={s['rootTop']}) is not in the first screen ({top:.0f}-{bottom:.0f})")
# As deep as the deepest frame a pixel wide, not as the deepest stack.
if s["deepWide"] != s["rows"] - 1 or s["deepest"] > s["deepWide"]:
    bad.append(f"{s['rows']} rows, frames drawn to depth {s['deepest']}, a pixel wide to {s['deepWide']}")
if abs(s["canvasHeight"] - (s["rows"] * s["rowH"] + 2)) > 1:
    bad.append(f"the graph is {s['canvasHeight']} px tall for {s['rows']} rows of {s['rowH']} px")
# Never deeper than the deepest stack (with complete stacks every frame of
# the deepest path may be a pixel wide: then the graph is exactly as deep).
if s["rows"] > s["maxDepth"] + 1:
    bad.append(f"the graph's {s['rows']} rows go deeper than the deepest stack ({s['maxDepth']})")
if bad:
    sys.exit("\n".join("  BAD: " + b for b in bad))
print(f"  ok: {pg['version']}: {100 * s['share']:.1f}% of the {s['visible'][2] - s['visible'][0]:.0f}x{bottom - top:.0f} px of the flame graph "
      f"in the first screen drawn, the root at y={s['rootTop']:.0f}; {s['rows']} rows (frames a pixel wide) "
      f"of a {s['maxDepth'] + 1}-deep tree; as a flame graph (root at the bottom) "
      f"{100 * f['share']:.1f}% drawn, the root at y={f['rootTop']:.0f}")
PY
done

check "300 processes: grouped, the busiest first, the short ones folded; order, filter, selectors"
# forks: 300 processes one after the other, job-I (3 ms each) and every
# 60th heavy-I (four threads of 40 ms).  The heavy ones are the busiest
# (--threads), the jobs light and short: folded into one row.
d=$NW_TMP/forks.data
nw_record_ok "$d" "$P/forks"
nw_report "$NW_TMP/out" "$d" --html "$NW_TMP/forks.html"
nw_report "$NW_TMP/fthreads" "$d" --threads
read -r heavy_pid < <(nw_threads_rows "$NW_TMP/fthreads" | awk '$5 == "heavy-90" { print $1; exit }')
[[ -n $heavy_pid ]] || fail "no heavy-90 in --threads"
nw_report "$NW_TMP/hflat" "$d" --flat --pid "$heavy_pid"
for b in chromium firefox; do
	page "$NW_TMP/forks.html" "{\"groups\":{\"filter\":\"heavy-90\",\"listFilter\":\"job-1\"},\"lean\":true,\"shots\":\"forks-$b\"}" "$b"
	py "$NW_TMP/forks.html.$b.json" "$NW_TMP/fthreads" "$NW_TMP/hflat" <<'PY'
import json, re, sys
pg = json.load(open(sys.argv[1]))
assert not pg["requests"] and not pg["errors"], f"{pg['requests']} {pg['errors']}"
g = pg["groups"]
# --threads: PID TID NAME SAMPLES SHARE% PROCESS
procs = {}
for l in open(sys.argv[2]):
    m = re.match(r"\s*(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+[\d.]+%\s+(\S+)", l)
    if m:
        p = procs.setdefault(int(m.group(1)), {"comm": m.group(5), "threads": 0, "samples": 0, "names": []})
        p["threads"] += 1
        p["samples"] += int(m.group(4))
        p["names"].append(m.group(3))
for pid, p in procs.items():
    p["pid"] = pid
# Busiest first; of equal weight, the one created first.
heavy = sorted((p for p in procs.values() if p["comm"].startswith("heavy-")), key=lambda p: (-p["samples"], p["pid"]))
jobs = [p for p in procs.values() if p["comm"].startswith("job-")]
bad = []
def want(cond, what):
    if cond:
        print(f"  ok: {what}")
    else:
        bad.append(what)
rows = g["initial"]
# The parent (forks), when it has samples at all, lives the whole run: light, not short.
top = [r for r in rows if r["kind"] != "more" and r["depth"] == 0 and r["comm"] != "forks"]
more = [r for r in rows if r["kind"] == "more"]
# The same processes (ties in weight may order either way), the busiest first (below).
want(sorted(r["comm"] for r in top) == sorted(p["comm"] for p in heavy) and
     all(r["threads"] == 4 for r in top),
     f"the {len(heavy)} heavy processes first, four threads each: {[r['comm'] for r in top]}")
want([r["weight"] for r in top] == sorted((r["weight"] for r in top), reverse=True), "the busiest first")
# The parent too, when its few samples came close together (its lifetime as
# the recorder saw it then is short).
parent = [p for p in procs.values() if p["comm"] == "forks"]
parent_shown = any(r["comm"] == "forks" and r["depth"] == 0 for r in rows)
folded = jobs + ([] if parent_shown else parent)
want(len(more) == 1 and more[0]["procs"] == len(folded), f"the {len(jobs)} job processes folded into one row: {more and more[0]['procs']}")
want(f"{len(procs)} processes" in g["count"] and f"{len(folded)} short and light folded" in g["count"], g["count"])
after = g["moreOpen"][next(i for i, r in enumerate(g["moreOpen"]) if r["kind"] == "more") + 1:]
opened = [r for r in after if r["depth"] == 1 and r["kind"] == "thread"]
want(len(opened) == len(folded) and {r["comm"] for r in opened} == {p["comm"] for p in folded},
     f"opening the folded row lists the {len(opened)} job processes")
want(g["moreClosed"] == rows, "closing it again gives the rows of before")
want(abs(len(g["procToggled"]) - len(rows)) == 4 and g["procBack"] == rows, "a process of four threads opens and closes")
created = [r for r in g["created"] if r["kind"] != "more" and r["depth"] == 0 and r["comm"] != "forks"]
# heavy-N is started at N ms: its number is its creation order (pids may wrap).
want([r["comm"] for r in created] == sorted((r["comm"] for r in created), key=lambda c: int(c.split("-")[1]))
     and len(created) == len(top),
     f"creation order: {[r['comm'] for r in created]}")
f = g["filtered"]
want(f[0]["kind"] == "proc" and f[0]["comm"] == "heavy-90" and len(f) == 5 and
     sorted(r["name"] for r in f[1:]) == sorted(next(p for p in heavy if p["comm"] == "heavy-90")["names"]),
     f"the filter heavy-90: {[r['name'] or r['comm'] for r in f]}")
want("4 of " in g["onlySummary"], f"Only these: {g['onlySummary']}")
text = [l for l in open(sys.argv[3]) if re.match(r"\s*[\d.]+%\s+[\d.]+%\s+\S", l)]
m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+(\S+)", text[0])
want(g["onlyFlat"][0]["name"] == m.group(3) and abs(g["onlyFlat"][0]["self"] - float(m.group(1))) <= 0.051,
     f"heavy-90 alone: top {g['onlyFlat'][0]['name']} {g['onlyFlat'][0]['self']}% (--pid: {m.group(3)} {m.group(1)}%)")
opts = [o for o in g["processOptions"] if o["value"] not in ("", "more") and not o["label"].startswith("forks ")]
pcts = [float(o["label"].rsplit(" ", 1)[1].rstrip("%")) for o in opts]
want(sorted(o["label"].split()[0] for o in opts) == sorted(p["comm"] for p in heavy) and
     pcts == sorted(pcts, reverse=True), f"the Process selector: {[o['label'] for o in opts]}")
want(any(o["value"] == "more" and o["label"].startswith(f"{len(folded)} more processes") for o in g["processOptions"]),
     "and the folded ones as one choice")
njobs = sum(p["threads"] for p in folded)
want(g["moreSummary"] == f"{njobs} of {sum(p['threads'] for p in procs.values())} threads", f"which selects them: {g['moreSummary']}")
want(g["listRows"][0] == "all" and g["listRows"].count("group:more") == 1, "the thread list has the same rows")
n1 = sum(1 for p in procs.values() for n in p["names"] if "job-1" in n)
want(g["listFiltered"] == n1 and g["timelineFilter"] == "job-1" and f"only the {n1} matching" in g["listAllLabel"],
     f"its filter job-1: {g['listFiltered']} threads ({n1} in --threads), the timeline's filter too")
want(g["listSummary"].startswith(f"{n1} of "), f"ticking the matching ones: {g['listSummary']}")
if bad:
    sys.exit("\n".join("  BAD: " + b for b in bad))
print(f"  ok: {pg['version']}: ready in {pg['timings']['readyAt']:.0f} ms")
PY
done

check "the Disassembly panel (Chromium, Firefox): the instructions and shares of --disasm; a line marks its instructions; find"
d=$NW_TMP/div.data
nw_record_ok "$d" "$P/divchain" 0.5
nw_report "$NW_TMP/div.out" "$d" --html "$NW_TMP/div.html"
nw_report "$NW_TMP/div.disasm" "$d" --disasm '^div_chain$'
div_line=$(grep -n 'x = x / d + 0x9e3779b97f4a7c15ull;' "$NW_SRC/tests/programs/divchain.c" | cut -d: -f1)
for browser in chromium firefox; do
	page "$NW_TMP/div.html" "{\"fn\":\"div_chain\",\"lean\":true,\"disasm\":{\"find\":\"^div\",\"line\":$div_line},\"shots\":\"disasm-$browser\"}" "$browser"
	py "$NW_TMP/div.html.$browser.json" "$NW_TMP/div.disasm" "$div_line" <<'PY'
import json, re, sys
pg = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().splitlines()
line = int(sys.argv[3])
assert not pg["requests"] and not pg["errors"], (pg["requests"], pg["errors"])
d = pg["disasm"]
# --disasm's rows: SELF% TOTAL% then module+0xADDR (after an optional ">").
rows = []
for l in text:
    m = re.match(r"^\s*(?:([\d.]+)%\s+([\d.]+)%)?\s+>?divchain\+0x([0-9a-f]+)\s", l)
    if m:
        rows.append((m.group(3), float(m.group(1) or 0), float(m.group(2) or 0)))
assert [r["addr"] for r in d["rows"]] == [r[0] for r in rows], \
    f"the page's instructions {[r['addr'] for r in d['rows']]}, --disasm's {[r[0] for r in rows]}"
for (a, s, t), r in zip(rows, d["rows"]):
    assert abs(r["self"] - s) <= 0.051 and abs(r["total"] - t) <= 0.051, (a, r, s, t)
hot = max(rows, key=lambda r: r[1])
assert d["hot"] == hot[0], (d["hot"], hot)
print(f"  ok: {pg['browser']}: {len(rows)} instructions as --disasm, the hottest {hot[0]} {hot[1]}%")
key = next(r["line"] for r in d["rows"] if r["addr"] == d["hot"])
want = [r["addr"] for r in d["rows"] if r["line"] == key]
assert key and [m["addr"] for m in d["marked"]] == want, (key, d["marked"], want)
print(f"  ok: its line {key} marks its {len(want)} instructions")
assert d["matched"] and all(t.startswith("div") for t in d["matched"]) and d["count"].startswith(f"{len(d['matched'])} of "), \
    (d["matched"], d["count"])
print(f"  ok: find ^div: {d['count']}")
fs = d["fromSource"]
assert fs["tab"] == "disasm" and fs["marked"] and all(k == f"divchain.c:{line}" for k in fs["marked"]), fs
print(f"  ok: the Source panel's line {line} marks {len(fs['marked'])} instructions in the Disassembly panel")
PY
done
ok "as --disasm"

check "narwhal-record --html: the page at the end of the run"
d=$NW_TMP/rec.data
nw_record_ok "$d" --html "$NW_TMP/rec.html" "$P/callers"
[[ -s $NW_TMP/rec.html ]] || fail "narwhal-record --html wrote nothing"
grep -q "rec.html" "$d.err" || fail "narwhal-record does not say it wrote the page"
nw_report "$NW_TMP/rflat" "$d" --flat
page "$NW_TMP/rec.html" '{"shots":"record"}'
py "$NW_TMP/rec.html.chromium.json" "$NW_TMP/rflat" <<'PY'
import json, re, sys
pg = json.load(open(sys.argv[1]))
hot = next(r for r in pg["flat"] if r["name"] == "hot")
for l in open(sys.argv[2]):
    m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+hot\b", l)
    if m:
        assert abs(hot["self"] - float(m.group(1))) <= 0.051, (hot, l)
        print(f"  ok: hot self {hot['self']}% as narwhal-report --flat says")
        break
else:
    sys.exit("no hot in --flat")
PY

pass
