#!/bin/bash
# --diff BASE NEW: two runs of a program whose split changes in a known way
# (alpha 25% / beta 75%, then 75% / 25%) show alpha +50 and beta -50 points
# per function, beyond noise, largest changes first, and per calling context
# with --tree; one phase doubled changes the shares as the settings imply;
# runs of one setting show nothing beyond noise; --diff --folded gives each stack's count in both
# runs (difffolded), equal to each run's --folded; --diff --flamegraph draws
# alpha red (grew) and beta blue (shrank), widths from the new run.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_need_tool cc xmllint

# The program, built here: split A B burns A% of 0.8 s of CPU in alpha, B% in beta.
cat >"$NW_TMP/split.c" <<'EOF'
#include <stdlib.h>

#include "spin.h"

__attribute__((noinline)) static void alpha(double s)
{
	NW_SPIN(s);
}

__attribute__((noinline)) static void beta(double s)
{
	NW_SPIN(s);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	alpha(atof(argv[1]) / 100 * 0.8);
	beta(atof(argv[2]) / 100 * 0.8);
	return 0;
}
EOF
cc -O1 -g -fno-omit-frame-pointer -fno-inline -I"$NW_SRC/tests/programs" "$NW_TMP/split.c" \
	-o "$NW_TMP/split" || fail "cannot build the split program"

nw_record_ok "$NW_TMP/base.data" "$NW_TMP/split" 25 75
nw_record_ok "$NW_TMP/new.data" "$NW_TMP/split" 75 25
nw_report "$NW_TMP/base.folded" "$NW_TMP/base.data" --folded
nw_report "$NW_TMP/new.folded" "$NW_TMP/new.data" --folded

# The rows of a flat diff: DELTA SE Z BASE% NEW% BCUM% NCUM% DCUM FUNCTION [(new)|(gone)].
flat_rows() {
	awk '$1 ~ /^[-+][0-9.]+$/ && $3 ~ /^[-+]([0-9.]+|inf)$/ { print }' "$1"
}

check "--diff: per function, alpha +50 and beta -50 points (within 6), beyond noise, largest first"
nw_report "$NW_TMP/diff" --diff "$NW_TMP/base.data" "$NW_TMP/new.data"
flat_rows "$NW_TMP/diff" >"$NW_TMP/rows"
for spec in alpha:+50:25:75 beta:-50:75:25; do
	IFS=: read -r fn want base new <<<"$spec"
	# Shares with the kernel's frames below (cumulative): a loaded machine
	# moves self time into interrupts, not out of the function's subtree.
	read -r delta se z _ _ bshare nshare dcum name <<<"$(head -n 2 "$NW_TMP/rows" |
		awk -v f="$fn" '$9 == f')"
	[[ $name == "$fn" ]] || {
		nw_show "--diff" "$NW_TMP/diff"
		fail "$fn is not among the first two rows"
	}
	nw_near "$dcum" "$want" 6 || fail "$fn changed by $dcum, expected $want"
	nw_near "${bshare%\%}" "$base" 6 || fail "$fn base share $bshare, expected $base%"
	nw_near "${nshare%\%}" "$new" 6 || fail "$fn new share $nshare, expected $new%"
	awk -v z="$z" 'BEGIN { z = z + 0; exit !(z >= 3 || z <= -3) }' ||
		fail "$fn's change of $delta points has z $z, within noise"
	echo "  ok: $fn $dcum points (self $delta, SE $se, z $z), $bshare -> $nshare"
done
awk '{ d = $1 + 0; if (d < 0) d = -d; if (NR > 1 && d > prev + 1e-9) bad = 1; prev = d }
	END { exit bad }' "$NW_TMP/rows" || fail "rows are not sorted by the size of the change"
grep -q "^Base: $NW_TMP/base.data" "$NW_TMP/diff" || fail "the header does not name BASE"
grep -q "functions\? changed within sampling noise; --all lists them" "$NW_TMP/diff" ||
	fail "no count of the changes within noise"

check "--diff --tree: per calling context, main;alpha +50 points below main"
nw_report "$NW_TMP/tree" --diff "$NW_TMP/base.data" "$NW_TMP/new.data" --tree
read -r delta _ z _ <<<"$(awk '$NF == "alpha"' "$NW_TMP/tree" | head -n 1)"
nw_near "${delta:-0}" 50 6 || {
	nw_show "--diff --tree" "$NW_TMP/tree"
	fail "alpha's context changed by ${delta:-nothing}, expected +50"
}
# (All but the loader's first moments, before main: a sample or two.)
grep -qE "^ +[-+][0-9.]+ +[0-9.]+ +[-+][0-9.]+ +(99\.[5-9]|100\.0)% +(99\.[5-9]|100\.0)% +main$" "$NW_TMP/tree" ||
	fail "main does not hold everything in both runs: $(head -n 8 "$NW_TMP/tree")"
ok "alpha's context $delta points (z $z)"

# Accuracy (issue 30): one phase doubled.  50 50 -> 50 100: alpha 50 -> 33.3 %,
# beta 50 -> 66.7 %, each counted with the kernel frames below it (DCUM); 4999 Hz
# over 1.6 s and 2.4 s: a standard error of 0.7 points.
check "one phase doubled: the deltas the settings imply within 2 points, beyond noise"
nw_record_ok "$NW_TMP/even.data" -F 4999 -- "$NW_TMP/split" 100 100
nw_record_ok "$NW_TMP/double.data" -F 4999 -- "$NW_TMP/split" 100 200
nw_report "$NW_TMP/acc" --diff "$NW_TMP/even.data" "$NW_TMP/double.data"
flat_rows "$NW_TMP/acc" >"$NW_TMP/acc.rows"
for spec in alpha:-16.67 beta:+16.67; do
	IFS=: read -r fn want <<<"$spec"
	read -r delta _ z _ _ _ _ dcum name <<<"$(awk -v f="$fn" '$9 == f' "$NW_TMP/acc.rows")"
	[[ $name == "$fn" ]] || {
		nw_show "--diff" "$NW_TMP/acc"
		fail "$fn is not listed as beyond noise"
	}
	nw_near "$dcum" "$want" 2 || fail "$fn's share changed by $dcum points, expected $want"
	echo "  ok: $fn $dcum points (self $delta, z $z)"
done

# Three pairs of runs of one setting: sampling alone, nothing beyond noise.
# (At |z| >= 3, by chance a function is flagged 0.27 % of the time.)  User
# space only: the kernel's share of a run (interrupts, the scheduler)
# follows the machine's load, which differs from run to run beyond
# sampling, and a diff rightly flags it.
check "the same setting three times over: no function beyond noise"
for i in 1 2 3; do
	nw_record_ok "$NW_TMP/same$i-a.data" --user-only -- "$NW_TMP/split" 25 75
	nw_record_ok "$NW_TMP/same$i-b.data" --user-only -- "$NW_TMP/split" 25 75
	nw_report "$NW_TMP/same$i" --diff "$NW_TMP/same$i-a.data" "$NW_TMP/same$i-b.data"
	flat_rows "$NW_TMP/same$i" >"$NW_TMP/same$i.rows"
	[[ ! -s $NW_TMP/same$i.rows ]] || {
		nw_show "--diff of two runs of split 25 75" "$NW_TMP/same$i"
		fail "pair $i: a change beyond noise between runs of one setting"
	}
	echo "  ok: pair $i: $(grep -o '[0-9]* functions\? changed within sampling noise' "$NW_TMP/same$i")"
done

check "--diff --all lists every change; --diff-absolute compares samples"
nw_report "$NW_TMP/all" --diff "$NW_TMP/same1-a.data" "$NW_TMP/same1-b.data" --all
flat_rows "$NW_TMP/all" | awk '$9 == "alpha"' | grep -q . || fail "--all does not list alpha"
nw_report "$NW_TMP/abs" --diff "$NW_TMP/even.data" "$NW_TMP/double.data" --diff-absolute
read -r delta _ z _ <<<"$(flat_rows "$NW_TMP/abs" | awk '$9 == "beta"')"
# beta: 0.8 s -> 1.6 s at 4999 Hz, about +4000 samples.
awk -v d="${delta:-0}" 'BEGIN { exit !(d > 3000 && d < 5000) }' ||
	fail "--diff-absolute: beta changed by ${delta:-nothing} samples, expected about +4000"
grep -q "in samples" "$NW_TMP/abs" || fail "--diff-absolute does not say it compares samples"
ok "beta $delta samples (z $z)"

check "--diff of a run with itself: no change anywhere"
nw_report "$NW_TMP/same" --diff "$NW_TMP/base.data" "$NW_TMP/base.data" --all
flat_rows "$NW_TMP/same" | awk '$1 != "+0.0" { bad = 1 } END { exit bad }' ||
	fail "a run differs from itself: $(head -n 12 "$NW_TMP/same")"
ok "all +0.0"

# The other views diff too: the doubled phase through alpha's callers, its
# source line, and per module (the program's share does not move).
check "--diff --callers, --lines, --by module: the doubled phase, each change with SE and Z"
nw_report "$NW_TMP/callers" --diff "$NW_TMP/even.data" "$NW_TMP/double.data" --callers '^alpha$'
read -r delta _ z _ <<<"$(awk '$NF == "total"' "$NW_TMP/callers")"
nw_near "${delta:-0}" -16.67 2 && awk -v z="${z:-0}" 'BEGIN { exit !(z <= -3) }' || {
	nw_show "--diff --callers" "$NW_TMP/callers"
	fail "alpha's total changed by ${delta:-nothing} (z ${z:-none}), expected -16.7 beyond noise"
}
# alpha's callers: main, by as much.
awk '/^Callers:/ { c = 1; next } c && $NF == "main" { print; exit }' "$NW_TMP/callers" |
	grep -qE '^ +-1[4-9]\.[0-9] ' || fail "main is not listed among alpha's callers at -16.7"
echo "  ok: --callers: alpha $delta points (z $z)"
nw_report "$NW_TMP/lines" --diff "$NW_TMP/even.data" "$NW_TMP/double.data" --lines '^(alpha|beta)$'
for spec in alpha:-16.67 beta:+16.67; do
	IFS=: read -r fn want <<<"$spec"
	read -r _ _ z _ _ _ _ dcum _ <<<"$(flat_rows "$NW_TMP/lines" |
		awk -v f="$fn" '$9 == f && $10 ~ /^\(split\.c:/')"
	nw_near "${dcum:-0}" "$want" 2 || {
		nw_show "--diff --lines" "$NW_TMP/lines"
		fail "$fn's line changed by ${dcum:-nothing}, expected $want beyond noise"
	}
	echo "  ok: --lines: $fn's line $dcum points (z $z)"
done
grep -q "lines\? changed within sampling noise" "$NW_TMP/lines" || fail "--lines: no footer"
# The program's module holds every stack in both runs (its self share moves
# only with the kernel's, which follows the machine's load); the modules'
# self changes add up to nothing.
nw_report "$NW_TMP/mod" --diff "$NW_TMP/even.data" "$NW_TMP/double.data" --by module --all
read -r delta se z _ _ _ _ dcum _ <<<"$(flat_rows "$NW_TMP/mod" | awk '$9 == "split"')"
flat_rows "$NW_TMP/mod" | awk -v dc="${dcum:-9}" '{ s += $1 }
	END { exit !(dc > -1 && dc < 1 && s > -0.6 && s < 0.6) }' || {
	nw_show "--diff --by module" "$NW_TMP/mod"
	fail "split's cumulative share changed by ${dcum:-nothing}, or the self changes do not add up"
}
grep -q "^  DELTA     SE      Z .* MODULE$" "$NW_TMP/mod" || fail "--by module: no MODULE column"
ok "--by module: split self $delta points (SE $se, z $z), cumulative $dcum"

# Several runs on each side (issue 30): the noise is their spread (Welch).
check "three runs on each side: the doubled phase beyond run-to-run noise, one setting not"
for i in 2 3; do
	nw_record_ok "$NW_TMP/even$i.data" -F 4999 -- "$NW_TMP/split" 100 100
	nw_record_ok "$NW_TMP/double$i.data" -F 4999 -- "$NW_TMP/split" 100 200
done
nw_report "$NW_TMP/welch" --diff "$NW_TMP/even.data" --diff "$NW_TMP/even2.data" \
	--diff "$NW_TMP/even3.data" "$NW_TMP/double.data" "$NW_TMP/double2.data" \
	"$NW_TMP/double3.data"
grep -q "^Noise: run-to-run spread (Welch, 3 base runs, 3 new runs" "$NW_TMP/welch" || {
	nw_show "--diff of three runs each" "$NW_TMP/welch"
	fail "the header does not say the noise is the spread between runs"
}
flat_rows "$NW_TMP/welch" >"$NW_TMP/welch.rows"
for spec in alpha:-16.67 beta:+16.67; do
	IFS=: read -r fn want <<<"$spec"
	read -r delta se z _ _ _ _ dcum name <<<"$(awk -v f="$fn" '$9 == f' "$NW_TMP/welch.rows")"
	[[ $name == "$fn" ]] || {
		nw_show "--diff of three runs each" "$NW_TMP/welch"
		fail "$fn is not listed as beyond run-to-run noise"
	}
	nw_near "$dcum" "$want" 2 || fail "$fn's share changed by $dcum points, expected $want"
	echo "  ok: $fn $dcum points (self $delta, SE $se, z $z)"
done
# The same setting, three runs against three: sampling and the machine's
# load vary between runs; neither is a change.
nw_report "$NW_TMP/welch-same" --diff "$NW_TMP/same1-a.data" --diff "$NW_TMP/same2-a.data" \
	--diff "$NW_TMP/same3-a.data" "$NW_TMP/same1-b.data" "$NW_TMP/same2-b.data" \
	"$NW_TMP/same3-b.data"
flat_rows "$NW_TMP/welch-same" >"$NW_TMP/welch-same.rows"
[[ ! -s $NW_TMP/welch-same.rows ]] || {
	nw_show "--diff of three runs of split 25 75 each" "$NW_TMP/welch-same"
	fail "a change beyond run-to-run noise between runs of one setting"
}
grep -q "changed within run-to-run noise" "$NW_TMP/welch-same" || fail "no run-to-run footer"
# Two runs against one: no spread on one side, sampling noise as before.
nw_report "$NW_TMP/mixed" --diff "$NW_TMP/even.data" --diff "$NW_TMP/even2.data" \
	"$NW_TMP/double.data"
grep -q "^Noise: sampling (binomial" "$NW_TMP/mixed" || fail "two runs against one: not binomial"
grep -q "^Base: .* in 2 runs)" "$NW_TMP/mixed" || fail "the header does not count the base's runs"
ok "$(grep -o '[0-9]* functions\? changed within run-to-run noise' "$NW_TMP/welch-same")"

check "--diff --folded: 'stack BASE NEW', the counts of each run's --folded"
nw_report "$NW_TMP/diff.folded" --diff "$NW_TMP/base.data" "$NW_TMP/new.data" --folded
python3 - "$NW_TMP/diff.folded" "$NW_TMP/base.folded" "$NW_TMP/new.folded" <<'PY' ||
import sys


def load(path, cols):
    out = {}
    for line in open(path):
        f = line.rstrip("\n").rsplit(" ", cols)
        out[f[0]] = [int(x) for x in f[1:]]
    return out


diff = load(sys.argv[1], 2)
base = load(sys.argv[2], 1)
new = load(sys.argv[3], 1)
for stack in set(base) | set(new):
    want = [base.get(stack, [0])[0], new.get(stack, [0])[0]]
    if diff.get(stack) != want:
        sys.exit("%s: --diff --folded says %s, the runs say %s" % (stack, diff.get(stack), want))
extra = set(diff) - set(base) - set(new)
if extra:
    sys.exit("stacks in neither run: %s" % sorted(extra)[:3])
print("  ok: %d stacks" % len(diff))
PY
	fail "--diff --folded disagrees with the runs' --folded"

check "--diff --flamegraph: valid XML; alpha red, beta blue; widths from the new run"
nw_report "$NW_TMP/out" --diff "$NW_TMP/base.data" "$NW_TMP/new.data" --flamegraph "$NW_TMP/diff.svg"
[[ ! -s $NW_TMP/out ]] || fail "--diff --flamegraph also printed the text diff"
xmllint --noout "$NW_TMP/diff.svg" || fail "the differential SVG is not valid XML"
python3 - "$NW_TMP/diff.svg" "$NW_TMP/new.folded" <<'PY' || fail "the differential flame graph is wrong"
import re
import sys
import xml.etree.ElementTree as ET

S = "{http://www.w3.org/2000/svg}"
new = {}
for line in open(sys.argv[2]):
    stack, n = line.rsplit(" ", 1)
    for fn in set(stack.split(";")):
        new[fn] = new.get(fn, 0) + int(n)
seen = {}
for g in ET.parse(sys.argv[1]).getroot().iter(S + "g"):
    if g.get("class") != "f":
        continue
    tip = g.find(S + "title").text.split("\n")
    if tip[0] not in ("alpha", "beta"):
        continue
    r, gr, b = map(int, re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", g.find(S + "rect").get("fill")).groups())
    seen[tip[0]] = (r, gr, b, int(g.get("data-w")), tip[1])
a, b = seen["alpha"], seen["beta"]
assert a[0] > a[2] + 80, ("alpha is not red", a)
assert b[2] > b[0] + 80, ("beta is not blue", b)
assert a[3] == new["alpha"] and b[3] == new["beta"], ("widths", a, b, new["alpha"], new["beta"])
assert "change +" in a[4] and "change -" in b[4], (a[4], b[4])
print("  ok: alpha rgb%s %s; beta rgb%s %s" % (a[:3], a[4], b[:3], b[4]))
PY

check "--diff refuses exports and views it cannot show"
rc=0
"$NW_REPORT" --diff "$NW_TMP/base.data" "$NW_TMP/new.data" --pprof "$NW_TMP/x.pb.gz" \
	>/dev/null 2>"$NW_TMP/err" || rc=$?
[[ $rc -eq 2 ]] || fail "--diff --pprof exited $rc, expected 2"
rc=0
"$NW_REPORT" --diff "$NW_TMP/base.data" "$NW_TMP/missing.data" >/dev/null 2>"$NW_TMP/err" || rc=$?
[[ $rc -eq 1 ]] && grep -q missing.data "$NW_TMP/err" ||
	fail "--diff with a missing NEW exited $rc: $(cat "$NW_TMP/err")"
ok "exit 2 for --pprof, 1 naming a missing directory"

pass
