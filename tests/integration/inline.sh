#!/bin/bash
# Inline frames: tests/programs/inline (-O2) burns its CPU in inline_burn, a
# function forced inline into inline_caller.  Every sample there is an
# inline chain; the report must show both functions, the inlined one under
# its caller, in --tree, --folded and --flat, and symbols.json must hold
# the chain with the call site's line.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

check "inline_burn has no code of its own in the binary (it really is inlined)"
# (Through a file: grep -q ending early would fail the pipe under pipefail.)
nm "$P/inline" >"$NW_TMP/nm"
if grep -Eq ' inline_burn(\.|$)' "$NW_TMP/nm"; then
	fail "the compiler kept an out-of-line inline_burn: the test would prove nothing"
fi
grep -q ' inline_caller$' "$NW_TMP/nm" || fail "inline_caller is missing from $P/inline"
ok "only inline_caller is a symbol"

d=$NW_TMP/inline.data
check "narwhal-record runs inline and exits 0"
nw_record_ok "$d" "$P/inline"
nw_check_measurement "$d"
ok "complete"

check "--folded: stacks ending main;inline_caller;inline_burn hold most samples"
nw_report "$NW_TMP/folded" "$d" --folded
total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/folded")
((total > 0)) || fail "no samples"
n=$(awk '$1 ~ /(^|;)main;inline_caller;inline_burn$/ { s += $NF } END { print s + 0 }' \
	"$NW_TMP/folded")
share=$(awk -v n="$n" -v t="$total" 'BEGIN { printf "%.1f", 100 * n / t }')
if ! awk -v s="$share" 'BEGIN { exit !(s >= 80) }'; then
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "main;inline_caller;inline_burn holds $share% of the samples, expected >= 80%"
fi
ok "$share%"

check "--tree: inline_burn on its own row, indented under inline_caller"
nw_report "$NW_TMP/tree" "$d" --tree
# "ROW COLUMN" of the first row naming $1 (nothing when none does).
row_col() {
	awk -v f="$1" 'i = index($0, f) { print NR, i; exit }' "$NW_TMP/tree"
}
read -r caller_line c1 <<<"$(row_col inline_caller)" || true
read -r burn_line c2 <<<"$(row_col inline_burn)" || true
if [[ -z $caller_line || -z $burn_line ]] || ((burn_line != caller_line + 1)); then
	nw_show "narwhal-report --tree" "$NW_TMP/tree"
	fail "inline_burn is not the row right under inline_caller"
fi
((c2 > c1)) || fail "inline_burn (column $c2) is not indented under inline_caller (column $c1)"
ok "rows $caller_line and $burn_line, columns $c1 < $c2"

check "--flat: inline_burn has the self time with inline.c:LINE; inline_caller only cumulative"
nw_report "$NW_TMP/flat" "$d" --flat
grep -Eq 'inline_burn \(inline\.c:[0-9]+\)' "$NW_TMP/flat" || {
	nw_show "narwhal-report --flat" "$NW_TMP/flat"
	fail "no 'inline_burn (inline.c:LINE)' row"
}
self=$(nw_flat_self "$NW_TMP/flat" inline_burn)
caller_self=$(nw_flat_self "$NW_TMP/flat" inline_caller)
awk -v s="$self" -v c="$caller_self" 'BEGIN { exit !(s >= 80 && c < 5) }' ||
	fail "inline_burn self $self% (expected >= 80), inline_caller self $caller_self% (< 5)"
ok "inline_burn self $self%, inline_caller self $caller_self%"

check "symbols.json: chains [inline_burn, inline_caller] with the call site in inline.c"
python3 - "$d/symbols.json" <<'PY' || fail "no inline chain in symbols.json"
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["entries"]:
    f = e["frames"]
    if (len(f) >= 2 and f[0]["function"] == "inline_burn" and f[1]["function"] == "inline_caller"
            and f[1].get("file", "").endswith("inline.c") and f[1].get("line", 0) > 0):
        sys.exit(0)
sys.exit(1)
PY
ok "found"

check "--lines inline_caller: the inlined burn at the call site, and at inline_burn's own line"
nw_report "$NW_TMP/lines" "$d" --lines '^inline_caller$'
src=$NW_SRC/tests/programs/inline.c
call_line=$(grep -n '^	inline_burn(seconds);' "$src" | cut -d: -f1)
spin_line=$(grep -n '^	NW_SPIN(seconds);' "$src" | cut -d: -f1)
# The call site: TOTAL% (the burn's samples), no self of inline_caller's own.
total=$(awk -v l="$call_line" '$3 == l && $2 ~ /%$/ { v = $2; sub(/%/, "", v); print v; exit }' \
	"$NW_TMP/lines")
awk -v t="${total:-0}" 'BEGIN { exit !(t >= 80) }' || {
	nw_show "--lines inline_caller" "$NW_TMP/lines"
	fail "line $call_line (the call of inline_burn) holds ${total:-no}% total, expected >= 80"
}
# The inlined code at its own line, in a section of its own.
own=$(awk -v at="inline.c:$spin_line" '/^Inlined into inline_caller/ { on = 1 }
	on && $3 == at && $4 == "inline_burn" { v = $1; sub(/%/, "", v); print v; exit }' "$NW_TMP/lines")
awk -v t="${own:-0}" 'BEGIN { exit !(t >= 80) }' || {
	nw_show "--lines inline_caller" "$NW_TMP/lines"
	fail "inline_burn at inline.c:$spin_line holds ${own:-no}% self below 'Inlined into inline_caller'"
}
ok "line $call_line $total% total; inline_burn at line $spin_line $own% self"

pass
