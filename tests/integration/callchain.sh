#!/bin/bash
# Call chains with --call-graph fp (tests/programs/chain.c): the folded
# stacks hold main;chain_outer;chain_middle;chain_inner and four nested
# recurse frames, each with about half of the samples; --tree shows the
# nesting and --percent-limit hides what is below it.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/chain.data
check "narwhal-record --call-graph fp runs chain and exits 0"
NW_RECORD_OPTS=(--call-graph fp)
nw_record_ok "$d" "$P/chain"
NW_RECORD_OPTS=()
nw_check_measurement "$d"
ok "complete"

nw_report "$NW_TMP/folded" "$d" --folded
total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/folded")
((total > 0)) || fail "no samples"

# share PATTERN : percent of the samples in stacks matching the ERE PATTERN.
share() {
	awk -v re="$1" -v t="$total" '$1 ~ re { s += $NF } END { printf "%.1f", 100 * s / t }' \
		"$NW_TMP/folded"
}

check "main;chain_outer;chain_middle;chain_inner holds about 50%"
got=$(share '(^|;)main;chain_outer;chain_middle;chain_inner$')
if ! nw_near "$got" 50 10; then
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "the full chain holds $got%, expected 50% +- 10"
fi
ok "$got%"

check "main;recurse;recurse;recurse;recurse (recursion as nested frames) holds about 50%"
got=$(share '(^|;)main;recurse;recurse;recurse;recurse$')
if ! nw_near "$got" 50 10; then
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "the recursive chain holds $got%, expected 50% +- 10"
fi
ok "$got%"

check "--tree shows chain_outer, chain_middle and chain_inner on separate rows, indented"
nw_report "$NW_TMP/tree" "$d" --tree
for fn in chain_outer chain_middle chain_inner recurse; do
	grep -q "$fn" "$NW_TMP/tree" || {
		nw_show "narwhal-report --tree" "$NW_TMP/tree"
		fail "$fn missing from --tree"
	}
done
# The column where each name starts grows along the chain.
cols=$(for fn in chain_outer chain_middle chain_inner; do
	grep -m1 -ob "$fn" <(grep -m1 "$fn" "$NW_TMP/tree") | cut -d: -f1
done | tr '\n' ' ')
read -r c1 c2 c3 <<<"$cols"
((c1 < c2 && c2 < c3)) || {
	nw_show "narwhal-report --tree" "$NW_TMP/tree"
	fail "chain_outer/middle/inner start at columns $cols: not nested"
}
ok "columns $cols"

check "--tree --percent-limit 60 hides both halves (each about 50%) but keeps main"
nw_report "$NW_TMP/tree60" "$d" --tree --percent-limit 60
grep -q 'main' "$NW_TMP/tree60" || fail "main (100%) hidden by --percent-limit 60"
if grep -Eq 'chain_inner|recurse' "$NW_TMP/tree60"; then
	nw_show "narwhal-report --tree --percent-limit 60" "$NW_TMP/tree60"
	fail "--percent-limit 60 still shows a node of about 50%"
fi
ok "hidden"

pass
