#!/bin/bash
# --flamegraph FILE.svg: valid XML (xmllint), self-contained (no external
# reference), every frame of --folded drawn with its weight (the stacks and
# counts read back from the frames' geometry equal --folded), --per-thread
# roots, and in headless Chromium: it renders (a screenshot kept in
# meson-logs/ for a person to look at), click zooms, Reset Zoom restores,
# the search box highlights matches and prints their share.  On a C++
# compile (g++ -O2), the first 1400x1000 screen shows the root on top and
# is at least 15 % drawn; the page is as tall as its deepest frame a pixel
# wide, and a zoom shows the frames below it.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_need_tool xmllint

d=$NW_TMP/fg.data
nw_record_ok "$d" "$P/threads"
nw_report "$NW_TMP/out" "$d" --flamegraph "$NW_TMP/fg.svg"
nw_report "$NW_TMP/folded" "$d" --folded
[[ -s $NW_TMP/fg.svg ]] || fail "--flamegraph wrote nothing"
[[ ! -s $NW_TMP/out ]] || fail "--flamegraph alone also printed a view"

check "valid XML, an SVG, self-contained"
xmllint --noout "$NW_TMP/fg.svg" 2>"$NW_TMP/xml.err" || {
	nw_show "xmllint" "$NW_TMP/xml.err"
	fail "xmllint rejects the SVG"
}
grep -q '<svg xmlns="http://www.w3.org/2000/svg"' "$NW_TMP/fg.svg" || fail "no <svg> root"
if grep -Eq '(xlink:href|src|href)="(https?:|//)' "$NW_TMP/fg.svg"; then
	fail "the SVG refers to something outside itself"
fi
ok "$(grep -c '<g class="f"' "$NW_TMP/fg.svg") frames"

# fg_folded SVG : the folded stacks of a flame graph, read back from its
# frames: depth, start and width give the nesting; a frame's self weight is
# its width less its children's.
fg_folded() {
	python3 - "$1" <<'PY'
import sys
import xml.etree.ElementTree as ET

ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
frames = []
for g in root.iter("{http://www.w3.org/2000/svg}g"):
    if g.get("class") != "f":
        continue
    name = g.find("s:title", ns).text.split("\n")[0]
    frames.append((int(g.get("data-d")), int(g.get("data-s")), int(g.get("data-w")), name))
frames.sort()
out = {}
for d, s, w, name in frames:
    if d == 0:
        continue
    # The ancestors: the frame one level up whose span holds this one, and so on.
    path, self_w = [name], w
    for dd, ss, ww, nn in frames:
        if dd == d + 1 and s <= ss and ss + ww <= s + w:
            self_w -= ww
    level, lo, hi = d - 1, s, s + w
    while level > 0:
        up = [f for f in frames if f[0] == level and f[1] <= lo and hi <= f[1] + f[2]]
        if len(up) != 1:
            sys.exit("frame %s at depth %d has %d parents" % (name, d, len(up)))
        path.insert(0, up[0][3])
        level -= 1
    if self_w:
        key = ";".join(path)
        out[key] = out.get(key, 0) + self_w
for k in sorted(out):
    print(k, out[k])
PY
}

check "every frame of --folded is drawn, with the weights of --folded"
fg_folded "$NW_TMP/fg.svg" >"$NW_TMP/fg.folded" || fail "cannot read the frames back"
if ! diff -u "$NW_TMP/folded" "$NW_TMP/fg.folded" >"$NW_TMP/fg.diff"; then
	nw_show "--folded vs the flame graph's frames" "$NW_TMP/fg.diff"
	fail "the flame graph's frames differ from --folded"
fi
tr ';' '\n' <"$NW_TMP/folded" | awk '{ print $1 }' | sort -u >"$NW_TMP/names"
while read -r name; do
	grep -qF "<title>$name" "$NW_TMP/fg.svg" || fail "frame $name of --folded has no tooltip"
done <"$NW_TMP/names"
ok "$(wc -l <"$NW_TMP/fg.folded") stacks, $(wc -l <"$NW_TMP/names") distinct frames, identical"

check "tooltips give name, samples and percent; widths follow the samples"
python3 - "$NW_TMP/fg.svg" <<'PY' || fail "tooltips or widths are wrong"
import re
import sys
import xml.etree.ElementTree as ET

S = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
fw, total = float(root.get("data-fw")), int(root.get("data-total"))
n = 0
for g in root.iter(S + "g"):
    if g.get("class") != "f":
        continue
    tip = g.find(S + "title").text.split("\n")
    w = int(g.get("data-w"))
    m = re.fullmatch(r"(\d+) samples \(([0-9.]+)%\)", tip[1])
    assert m and int(m.group(1)) == w, tip
    assert abs(float(m.group(2)) - 100.0 * w / total) < 0.006, tip
    rect = float(g.find(S + "rect").get("width"))
    assert abs(rect - fw * w / total) < 0.006, (tip, rect)
    n += 1
print("  ok: %d frames" % n)
PY

check "--per-thread: each thread is a root frame named name-tid"
nw_report "$NW_TMP/out" "$d" --per-thread --flamegraph "$NW_TMP/pt.svg"
nw_report "$NW_TMP/folded.pt" "$d" --folded --per-thread
xmllint --noout "$NW_TMP/pt.svg" || fail "the --per-thread SVG is not valid XML"
fg_folded "$NW_TMP/pt.svg" >"$NW_TMP/pt.folded" || fail "cannot read the --per-thread frames back"
diff -q "$NW_TMP/folded.pt" "$NW_TMP/pt.folded" >/dev/null || fail "--per-thread frames differ from --folded --per-thread"
for t in threads worker-a worker-b; do
	grep -Eq "<title>$t-[0-9]+$" "$NW_TMP/pt.svg" || fail "no root frame for thread $t"
done
ok "roots $(grep -Eo '<title>(threads|worker-[ab])-[0-9]+$' "$NW_TMP/pt.svg" | sed 's/<title>//' | tr '\n' ' ')"

check "in headless Chromium: renders, zooms on click, resets, searches"
nw_need_js
nw_need_tool chromium
nw_report "$NW_TMP/flat" "$d" --flat
node "$NW_JS/browser-check.mjs" svg "$NW_TMP/fg.svg" "$NW_TMP/fg.png" '^spin_a$' \
	>"$NW_TMP/b.out" 2>"$NW_TMP/b.err" || {
	nw_show "browser-check" "$NW_TMP/b.err"
	fail "the flame graph does not work in Chromium"
}
[[ -s $NW_TMP/fg.png ]] || fail "no screenshot"
matched=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["matched"].split()[1].rstrip("%"))' "$NW_TMP/b.out")
cumul=$(awk '$3 == "spin_a" { sub(/%$/, "", $2); print $2 }' "$NW_TMP/flat")
nw_near "$matched" "$cumul" 0.051 || fail "search ^spin_a\$ matched $matched%, --flat says spin_a is $cumul%"
ok "$(cat "$NW_TMP/b.out")"
ok "search ^spin_a\$ matched $matched% (--flat cumul $cumul%)"
nw_keep "$NW_TMP/fg.png" export-flamegraph.png
nw_keep "$NW_TMP/fg-zoomed.png" export-flamegraph-zoomed.png
nw_keep "$NW_TMP/fg-search.png" export-flamegraph-search.png
cp "$NW_TMP/fg.svg" "$NW_BUILD/meson-logs/export-flamegraph.svg"

check "a C++ compile (g++ -O2): an icicle as deep as its frames a pixel wide; the first screen drawn"
# Before: the root at the bottom of a page as tall as the deepest stack
# (1,924 px), the first 1400x1000 screen 0.8 % drawn.
command -v g++ >/dev/null || fail "g++ is missing (build-essential)"
d=$NW_TMP/cxx.data
nw_record_ok "$d" g++ -O2 -c "$NW_SRC/tests/programs/bigcxx.cpp" -o "$NW_TMP/bigcxx.o"
nw_report "$NW_TMP/out" "$d" --flamegraph "$NW_TMP/cxx.svg"
nw_report "$NW_TMP/cxx.folded" "$d" --folded
xmllint --noout "$NW_TMP/cxx.svg" || fail "the SVG of the compile is not valid XML"
total=$(awk '{ s += $NF } END { print s }' "$NW_TMP/cxx.folded")
grep -q "data-total=\"$total\"" "$NW_TMP/cxx.svg" || fail "the compile's flame graph does not weigh the $total samples of --folded"
node "$NW_JS/browser-check.mjs" svg-screen "$NW_TMP/cxx.svg" "$NW_TMP/cxx.png" \
	>"$NW_TMP/cxx.out" 2>"$NW_TMP/cxx.err" || {
	nw_show "browser-check svg-screen" "$NW_TMP/cxx.err"
	fail "the compile's flame graph does not work in Chromium"
}
python3 - "$NW_TMP/cxx.out" <<'PY' || fail "the compile's flame graph does not show the profile in its first screen"
import json, sys
r = json.load(open(sys.argv[1]))
s, z, b = r["screen"], r["zoomed"], r["reset"]
bad = []
if s["share"] < 0.15:
    bad.append(f"the first screen's frames' area is {100 * s['share']:.1f}% drawn")
if s["rootTop"] != s["top"]:
    bad.append(f"the root is at y={s['rootTop']}, not on top ({s['top']})")
if s["deepest"] != s["deepWide"] or not s["hidden"]:
    bad.append(f"frames shown to depth {s['deepest']}, a pixel wide to {s['deepWide']}, {s['hidden']} hidden")
if s["height"] != s["top"] + (s["deepWide"] + 1) * s["fh"] + s["foot"]:
    bad.append(f"the page is {s['height']} px tall for frames to depth {s['deepWide']}")
if not (z["deepWide"] > s["deepWide"] and z["height"] > s["height"] and z["deepest"] == z["deepWide"]):
    bad.append(f"zoomed: frames to depth {z['deepWide']} ({z['deepest']} shown), {z['height']} px")
if b["height"] != s["height"] or b["hidden"] != s["hidden"]:
    bad.append(f"Reset Zoom: {b['height']} px, {b['hidden']} hidden (before {s['height']}, {s['hidden']})")
if bad:
    sys.exit("\n".join("  BAD: " + x for x in bad))
print(f"  ok: {100 * s['share']:.1f}% of the first screen's frames drawn, the root on top; {s['height']} px tall "
      f"(frames a pixel wide to depth {s['deepWide']}, {s['hidden']} narrower ones below hidden); zoomed, "
      f"to depth {z['deepWide']} and {z['height']} px; reset, back")
PY
nw_keep "$NW_TMP/cxx.png" export-flamegraph-cxx.png
nw_keep "$NW_TMP/cxx-zoomed.png" export-flamegraph-cxx-zoomed.png

pass
