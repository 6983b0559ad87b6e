#!/bin/bash
# --call-graph dwarf (CFI unwinding at record time): full call chains in
# code without frame pointers (tests/programs/chain.c built as chain-nofp)
# and through libc, which Debian builds without frame pointers (qsortcb:
# main -> sort_loop -> qsort -> ... -> compare_slow).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# share FOLDED PATTERN : percent of the samples in stacks matching the ERE PATTERN.
share() {
	awk -v re="$2" '{ t += $NF } $1 ~ re { s += $NF }
		END { printf "%.1f", t ? 100 * s / t : 0 }' "$1"
}

d=$NW_TMP/nofp.data
check "narwhal-record --call-graph dwarf runs chain-nofp and exits 0"
NW_RECORD_OPTS=(--call-graph dwarf)
nw_record_ok "$d" "$P/chain-nofp"
nw_check_measurement "$d"
nw_report "$NW_TMP/nofp.folded" "$d" --folded
ok "complete"

check "without frame pointers: main;chain_outer;chain_middle;chain_inner about 50%"
got=$(share "$NW_TMP/nofp.folded" '(^|;)main;chain_outer;chain_middle;chain_inner$')
nw_near "$got" 50 10 || {
	nw_show "narwhal-report --folded" "$NW_TMP/nofp.folded"
	fail "the chain holds $got%, expected 50% +- 10"
}
ok "$got%"

check "without frame pointers: main;recurse;recurse;recurse;recurse about 50%"
got=$(share "$NW_TMP/nofp.folded" '(^|;)main;recurse;recurse;recurse;recurse$')
nw_near "$got" 50 10 || {
	nw_show "narwhal-report --folded" "$NW_TMP/nofp.folded"
	fail "the recursion holds $got%, expected 50% +- 10"
}
ok "$got%"

d=$NW_TMP/qsort.data
check "through libc: stacks main;sort_loop;...qsort...;compare_slow hold 80% or more"
nw_record_ok "$d" "$P/qsortcb"
nw_check_measurement "$d"
nw_report "$NW_TMP/qsort.folded" "$d" --folded
got=$(share "$NW_TMP/qsort.folded" '(^|;)main;sort_loop;[^ ]*qsort[^ ]*;compare_slow$')
nw_near "$got" 100 20 || {
	nw_show "narwhal-report --folded" "$NW_TMP/qsort.folded"
	fail "stacks through qsort up to main hold $got%, expected 80% or more"
}
ok "$got%"

check "--call-graph dwarf,4096 (a smaller stack copy) works too"
d=$NW_TMP/small.data
NW_RECORD_OPTS=(--call-graph 'dwarf,4096')
nw_record_ok "$d" "$P/chain-nofp"
nw_report "$NW_TMP/small.folded" "$d" --folded
got=$(share "$NW_TMP/small.folded" '(^|;)main;chain_outer;chain_middle;chain_inner$')
nw_near "$got" 50 10 || fail "the chain holds $got% with dwarf,4096, expected 50% +- 10"
ok "$got%"
NW_RECORD_OPTS=()

check "--call-graph with a bad mode or size: an error exit (1..125)"
for mode in dwarf,0 dwarf,999999 bogus; do
	rc=0
	"$NW_RECORD" -e cpu-clock -o "$NW_TMP/bad.data" --call-graph "$mode" "$P/burn" alpha \
		>/dev/null 2>"$NW_TMP/bad.err" || rc=$?
	((rc != 0 && rc < 126)) || fail "--call-graph $mode exited $rc"
	[[ -s $NW_TMP/bad.err ]] || fail "--call-graph $mode printed no message"
done
ok "rejected"

pass
