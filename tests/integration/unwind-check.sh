#!/bin/bash
# The dwarf unwinder's fast path (CFI rows compiled once into cached rules)
# against libdwfl's full unwinder on the same samples: NARWHAL_UNWIND=check
# unwinds every sample both ways and counts where they differ.  Also the
# hybrid mode: CFI over a small stack copy, spliced onto the fp chain.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# checked DIR : "M N" from the "unwind check: M of N samples differ" line.
checked() {
	sed -nE 's/^narwhal-record: unwind check: ([0-9]+) of ([0-9]+) samples differ.*/\1 \2/p' "$1.err"
}

# stacks_complete DIR : the complete share from the summary's stacks line.
stacks_complete() {
	sed -nE 's/^narwhal-record: stacks: ([0-9.]+)% complete.*/\1/p' "$1.err"
}

NW_RECORD_OPTS=(-v --call-graph dwarf)
for prog in "chain-nofp" "qsortcb" "threads" "recurse 30" "dlopener $P/libplug.so"; do
	name=${prog%% *}
	d=$NW_TMP/$name.data
	check "NARWHAL_UNWIND=check on $prog: cached rules and libdwfl agree on every sample"
	# shellcheck disable=SC2086
	NARWHAL_UNWIND=check nw_record_ok "$d" $P/$prog
	read -r diff total <<<"$(checked "$d")"
	[[ -n ${total:-} ]] || { nw_show "stderr" "$d.err"; fail "no unwind check line"; }
	((total >= 100)) || fail "only $total samples checked"
	((diff == 0)) || { grep 'unwind check' "$d.err" | head -5 >&2; fail "$diff of $total samples differ"; }
	ok "0 of $total differ"
done

check "the fast path is used: qsortcb unwinds mostly by cached rules"
d=$NW_TMP/fast.data
nw_record_ok "$d" "$P/qsortcb"
fast=$(sed -nE 's/^narwhal-record: unwinding: ([0-9]+) samples by cached CFI rules, ([0-9]+) by libdwfl.*/\1 \2/p' "$d.err")
read -r nfast nslow <<<"$fast"
((nfast > 0 && nslow * 100 <= nfast)) || { nw_show "stderr" "$d.err"; fail "cached $nfast, libdwfl $nslow"; }
ok "cached rules $nfast, libdwfl $nslow"

check "NARWHAL_UNWIND=libdwfl gives the same stacks (folded) as the fast path, up to sampling noise"
nw_report "$NW_TMP/fast.folded" "$d" --folded
d2=$NW_TMP/slow.data
NARWHAL_UNWIND=libdwfl nw_record_ok "$d2" "$P/qsortcb"
nw_report "$NW_TMP/slow.folded" "$d2" --folded
for f in fast slow; do
	awk '{ t += $NF } $1 ~ /(^|;)main;sort_loop;.*qsort.*;compare_slow$/ { s += $NF }
		END { exit !(t > 0 && s / t >= 0.8) }' "$NW_TMP/$f.folded" ||
		{ nw_show "$f" "$NW_TMP/$f.folded"; fail "$f: main..qsort..compare_slow below 80%"; }
done
ok "both reach main through qsort"

NW_RECORD_OPTS=(-v --call-graph hybrid)
check "--call-graph hybrid: complete stacks through libc's qsort with a 2 KiB copy"
d=$NW_TMP/hybrid.data
nw_record_ok "$d" "$P/qsortcb"
c=$(stacks_complete "$d")
[[ -n $c ]] || { nw_show "stderr" "$d.err"; fail "no stacks line"; }
awk -v c="$c" 'BEGIN { exit !(c >= 99) }' || fail "hybrid: only $c% complete"
grep -Eq '"call_graph": ?"hybrid"' "$d/manifest.json" || fail "manifest does not say hybrid"
grep -Eq '"stack_size": ?2048' "$d/manifest.json" || fail "manifest stack_size is not 2048"
ok "$c% complete"
pass
