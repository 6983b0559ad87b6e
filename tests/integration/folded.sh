#!/bin/bash
# --folded: every line is "frame;frame;... COUNT" (root first, no spaces in
# frames), the counts add up to the samples in --threads, and the known
# stacks of tests/programs/threads.c appear with the right weights.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/folded.data
nw_record_ok "$d" "$P/threads"
nw_report "$NW_TMP/folded" "$d" --folded
nw_report "$NW_TMP/threads" "$d" --threads

check "every line matches 'frame;...;frame COUNT'"
[[ -s $NW_TMP/folded ]] || fail "--folded printed nothing"
if grep -Evn '^[^ ;]+(;[^ ;]+)* [0-9]+$' "$NW_TMP/folded" >"$NW_TMP/bad"; then
	nw_show "malformed lines" "$NW_TMP/bad"
	fail "--folded printed malformed lines"
fi
dups=$(awk '{ print $1 }' "$NW_TMP/folded" | sort | uniq -d | head -n 3)
[[ -z $dups ]] || fail "stacks printed more than once: $dups"
ok "$(wc -l <"$NW_TMP/folded") well-formed lines, each stack once"

check "the counts add up to the samples in --threads"
folded_total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/folded")
threads_total=$(nw_threads_rows "$NW_TMP/threads" | awk '{ s += $3 } END { print s + 0 }')
((threads_total > 0)) || fail "--threads shows no samples"
[[ $folded_total -eq $threads_total ]] ||
	fail "--folded counts add up to $folded_total, --threads to $threads_total"
ok "$folded_total samples"

check "stacks end in spin_a / spin_b / spin_main with 60/20/20% of the samples"
for spec in spin_a:worker_a:60 spin_b:worker_b:20 spin_main:main:20; do
	IFS=: read -r leaf caller want <<<"$spec"
	n=$(awk -v leaf="$leaf" '{ k = split($1, f, ";") } f[k] == leaf { s += $NF }
		END { print s + 0 }' "$NW_TMP/folded")
	share=$(awk -v n="$n" -v t="$folded_total" 'BEGIN { printf "%.1f", 100 * n / t }')
	nw_near "$share" "$want" 5 || fail "stacks ending in $leaf hold $share%, expected $want% +- 5"
	grep -Eq "(^|;)$caller;$leaf [0-9]+\$" "$NW_TMP/folded" ||
		fail "no stack '...;$caller;$leaf': the caller of $leaf is lost"
	ok "$caller;$leaf $share%"
done

check "--folded -o FILE writes the same lines to FILE"
nw_report "$NW_TMP/stdout" "$d" --folded -o "$NW_TMP/out.folded"
cmp -s "$NW_TMP/folded" "$NW_TMP/out.folded" || fail "-o FILE differs from stdout"
[[ ! -s $NW_TMP/stdout ]] || fail "-o FILE still printed the report on stdout"
ok "same"

pass
