#!/bin/bash
# The views that find the problem (issue 11), on tests/programs/callers:
# hot() is reached from caller_a (30% of the work) and caller_b (70%), and
# inside hot() the line marked HOT_LINE runs three times the iterations of
# the one marked COLD_LINE.  --callers, --lines, --addresses, --inverted,
# the stack transforms (--focus, --ignore, --hide, --root and the module
# forms), --by module, --pid, and two recordings merged into one report,
# whose samples add up.  pprof and folded exports of a transformed profile
# still read in go tool pprof.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_go_env

src=$NW_SRC/tests/programs/callers.c
hot_line=$(grep -n '/\* HOT_LINE \*/' "$src" | head -1 | cut -d: -f1)
cold_line=$(grep -n '/\* COLD_LINE \*/' "$src" | head -1 | cut -d: -f1)

d=$NW_TMP/callers.data
check "narwhal-record runs callers and exits 0"
nw_record_ok "$d" -F 1000 "$P/callers" 1
nw_check_measurement "$d"
ok "complete"

# The samples of a report: its "Samples: N" line.
samples_of() {
	awk '/^Samples: / { print $2; exit }' "$1"
}

check "--callers hot: caller_b holds 70% of hot, caller_a 30%, heaviest first"
nw_report "$NW_TMP/callers" "$d" --callers '^hot$'
grep -q '^Function: hot (callers.c:' "$NW_TMP/callers" || {
	nw_show "--callers hot" "$NW_TMP/callers"
	fail "no 'Function: hot (callers.c:LINE)' heading"
}
# Rows: ALL% FUNC% NAME; a caller's first row is the direct one (indented
# by one level), its callers follow.
share_of() {
	awk -v f="$2" 'NF == 3 && $3 == f { sub(/%/, "", $2); print $2; exit }' "$1"
}
a=$(share_of "$NW_TMP/callers" caller_a)
b=$(share_of "$NW_TMP/callers" caller_b)
[[ -n $a && -n $b ]] || {
	nw_show "--callers hot" "$NW_TMP/callers"
	fail "no caller_a or caller_b row below hot"
}
nw_near "$b" 70 8 && nw_near "$a" 30 8 || {
	nw_show "--callers hot" "$NW_TMP/callers"
	fail "caller_b $b%, caller_a $a% of hot; expected 70 and 30 (+- 8)"
}
first=$(grep -nE ' caller_[ab]$' "$NW_TMP/callers" | head -1 | awk '{ print $NF }')
[[ $first == caller_b ]] || fail "the heavier caller (caller_b) is not listed first"
# Each caller continues up to the roots: main below both.
[[ $(grep -cE '^ *[0-9.]+% +[0-9.]+% +main$' "$NW_TMP/callers") -eq 2 ]] ||
	fail "main is not the caller of both caller_a and caller_b"
ok "caller_b $b%, caller_a $a%"

check "--peek is --callers"
nw_report "$NW_TMP/peek" "$d" --peek '^hot$'
cmp -s "$NW_TMP/peek" "$NW_TMP/callers" || fail "--peek hot differs from --callers hot"
ok "same output"

check "--callers with no match: a clear error"
rc=0
"$NW_REPORT" "$d" --callers '^no_such_function$' >/dev/null 2>"$NW_TMP/nomatch.err" || rc=$?
[[ $rc -ne 0 ]] || fail "exit 0 for a regex that matches nothing"
grep -q "no_such_function" "$NW_TMP/nomatch.err" || {
	nw_show "stderr" "$NW_TMP/nomatch.err"
	fail "the error does not name the regex"
}
ok "exit $rc: $(head -1 "$NW_TMP/nomatch.err")"

check "--lines hot: HOT_LINE (line $hot_line) holds 75% of hot, COLD_LINE (line $cold_line) 25%, with the source"
nw_report "$NW_TMP/lines" "$d" --lines '^hot$'
# Rows: SELF% TOTAL% LINE SOURCE...
line_self() {
	awk -v l="$2" '$3 == l && $1 ~ /%$/ { sub(/%/, "", $1); print $1; exit }' "$1"
}
hs=$(line_self "$NW_TMP/lines" "$hot_line")
cs=$(line_self "$NW_TMP/lines" "$cold_line")
[[ -n $hs && -n $cs ]] || {
	nw_show "--lines hot" "$NW_TMP/lines"
	fail "no row for line $hot_line or $cold_line"
}
nw_near "$hs" 75 8 && nw_near "$cs" 25 8 || {
	nw_show "--lines hot" "$NW_TMP/lines"
	fail "line $hot_line $hs%, line $cold_line $cs%; expected 75 and 25 (+- 8)"
}
grep -q "$hot_line  .*/\* HOT_LINE \*/" "$NW_TMP/lines" || {
	nw_show "--lines hot" "$NW_TMP/lines"
	fail "the source text of line $hot_line is not beside it"
}
grep -q "^Source: $NW_SRC/tests/programs/callers.c$" "$NW_TMP/lines" ||
	fail "no 'Source: <absolute path of callers.c>' line"
ok "line $hot_line $hs%, line $cold_line $cs%"

check "--lines --sort: the hottest line first"
nw_report "$NW_TMP/lines-sorted" "$d" --lines '^hot$' --sort
top=$(awk '$1 ~ /%$/ && $3 ~ /^[0-9]+$/ { print $3; exit }' "$NW_TMP/lines-sorted")
[[ $top == "$hot_line" ]] || {
	nw_show "--lines hot --sort" "$NW_TMP/lines-sorted"
	fail "the first row is line $top, not $hot_line"
}
ok "line $top"

check "--lines without the source file: line numbers alone"
mkdir -p "$NW_TMP/moved"
cp -r "$d" "$NW_TMP/moved/"
# The symbol table keeps absolute paths: hide the file by reading with a
# copy of symbols.json whose paths point nowhere.
sed -i "s|$NW_SRC/tests/programs/callers.c|/nonexistent/callers.c|g" "$NW_TMP/moved/callers.data/symbols.json"
nw_report "$NW_TMP/lines-nosrc" "$NW_TMP/moved/callers.data" --lines '^hot$'
hs2=$(line_self "$NW_TMP/lines-nosrc" "$hot_line")
[[ $hs2 == "$hs" ]] || {
	nw_show "--lines hot, no source" "$NW_TMP/lines-nosrc"
	fail "line $hot_line holds '$hs2', not $hs% as with the source"
}
grep -q "HOT_LINE" "$NW_TMP/lines-nosrc" && fail "source text shown for a file that is not there"
ok "line $hot_line $hs2%, no text"

check "--addresses hot: sampled instructions as module offsets, summing to hot's self"
nw_report "$NW_TMP/addr" "$d" --addresses '^hot$'
rows=$(grep -cE '^ *[0-9.]+% +[0-9.]+% +callers\+0x[0-9a-f]+ +callers.c:[0-9]+$' "$NW_TMP/addr")
sum=$(awk '$3 ~ /^callers\+0x/ { sub(/%/, "", $1); s += $1 } END { print s + 0 }' "$NW_TMP/addr")
# hot's self share (the header's): below 100% by the samples the kernel took under it.
hself=$(awk '/^Self:/ { s = $2; sub(/%/, "", s); print s; exit }' "$NW_TMP/addr")
((rows >= 2)) && [[ -n $hself ]] && awk -v h="$hself" 'BEGIN { exit !(h >= 90) }' &&
	nw_near "$sum" "$hself" 0.5 || {
	nw_show "--addresses hot" "$NW_TMP/addr"
	fail "$rows address rows summing to $sum%, hot's self ${hself:-missing}%"
}
ok "$rows addresses, $sum%"

check "--inverted --folded: the leaf first, hot;caller_b holds 70%"
nw_report "$NW_TMP/inv" "$d" --folded --inverted
total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/inv")
n=$(awk 'index($0, "hot;caller_b;main;") == 1 { s += $NF } END { print s + 0 }' "$NW_TMP/inv")
share=$(awk -v n="$n" -v t="$total" 'BEGIN { printf "%.1f", t ? 100 * n / t : 0 }')
nw_near "$share" 70 8 || {
	nw_show "--folded --inverted" "$NW_TMP/inv"
	fail "hot;caller_b;main;... holds $share%"
}
grep -Eq '(^|;)_start;' "$NW_TMP/inv" && fail "_start is not the last frame of an inverted stack"
ok "$share%"

check "--inverted --tree: hot is the root with its callers below"
nw_report "$NW_TMP/invtree" "$d" --tree --inverted
awk '/FUNCTION$/ { getline; print $NF; exit }' "$NW_TMP/invtree" | grep -qx hot || {
	nw_show "--tree --inverted" "$NW_TMP/invtree"
	fail "the first row is not hot"
}
ok "hot first"

all=$(nw_report "$NW_TMP/flat" "$d" --flat && samples_of "$NW_TMP/flat")

check "--focus caller_a keeps 30% of the samples, --ignore caller_a 70%; they add up"
nw_report "$NW_TMP/focus" "$d" --flat --focus '^caller_a$'
nw_report "$NW_TMP/ignore" "$d" --flat --ignore '^caller_a$'
f=$(samples_of "$NW_TMP/focus")
i=$(samples_of "$NW_TMP/ignore")
((f + i == all)) || fail "--focus $f + --ignore $i samples != $all"
fs=$(awk -v f="$f" -v a="$all" 'BEGIN { printf "%.1f", 100 * f / a }')
nw_near "$fs" 30 8 || fail "--focus caller_a keeps $fs%"
grep -q "^Samples: $f of $all kept by the filters" "$NW_TMP/focus" || {
	nw_show "--flat --focus" "$NW_TMP/focus"
	fail "the report does not say how many samples the filter kept"
}
[[ $(nw_flat_self "$NW_TMP/focus" caller_b) == 0.00 ]] || fail "caller_b is left after --focus caller_a"
ok "$f + $i = $all samples ($fs% kept)"

check "--hide 'caller_.': main calls hot directly, stacks merged"
nw_report "$NW_TMP/hide" "$d" --folded --hide '^caller_.$'
grep -q 'caller_' "$NW_TMP/hide" && fail "a caller_ frame is left"
n=$(grep -c ';main;hot ' "$NW_TMP/hide")
[[ $n -eq 1 ]] || {
	nw_show "--folded --hide" "$NW_TMP/hide"
	fail "$n lines end in ;main;hot, expected the two merged into 1"
}
hidden=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/hide")
((hidden == all)) || fail "--hide lost samples: $hidden of $all"
ok "one stack main;hot"

check "--root hot: every stack starts at hot"
nw_report "$NW_TMP/root" "$d" --folded --root '^hot$'
bad=$(grep -Evc '^hot[ ;]' "$NW_TMP/root" || true)
[[ $bad -eq 0 ]] || {
	nw_show "--folded --root hot" "$NW_TMP/root"
	fail "$bad stacks do not start at hot"
}
ok "all start at hot"

check "--focus-module libc keeps every stack through main; --ignore-module keeps none of the program's"
# Every stack through main passes __libc_start_call_main; those of the
# kernel alone (loading the program at exec) do not.
nw_report "$NW_TMP/fm" "$d" --flat --focus-module 'libc\.so'
nw_report "$NW_TMP/fmain" "$d" --flat --focus '^main$'
fm=$(samples_of "$NW_TMP/fm")
fmain=$(samples_of "$NW_TMP/fmain")
((fm >= fmain && fmain >= all * 95 / 100 && fm <= all)) ||
	fail "--focus-module libc kept $fm samples, --focus main $fmain, of $all"
nw_report "$NW_TMP/im" "$d" --flat --ignore-module '/callers$'
(($(samples_of "$NW_TMP/im") < all / 20)) || {
	nw_show "--ignore-module" "$NW_TMP/im"
	fail "--ignore-module /callers$ kept $(samples_of "$NW_TMP/im") of $all samples"
}
ok "$fm (through main $fmain) of $all, and $(samples_of "$NW_TMP/im")"

check "--by module: the program holds nearly all self samples"
nw_report "$NW_TMP/mod" "$d" --by module
row=$(awk '$NF == "callers" { sub(/%/, "", $1); print $1 }' "$NW_TMP/mod")
awk -v s="${row:-0}" 'BEGIN { exit !(s >= 90) }' || {
	nw_show "--by module" "$NW_TMP/mod"
	fail "callers holds ${row:-no}% self"
}
grep -Eq ' libc\.so\.6$' "$NW_TMP/mod" || fail "no libc.so.6 row (on every stack)"
ok "callers $row%"

check "--pid: the recorded process selects everything, another none"
nw_report "$NW_TMP/threads" "$d" --threads
pid=$(nw_threads_rows "$NW_TMP/threads" | awk '{ print $1; exit }')
nw_report "$NW_TMP/pid" "$d" --flat --pid "$pid"
[[ $(samples_of "$NW_TMP/pid") -eq $all ]] || fail "--pid $pid does not keep all samples"
rc=0
"$NW_REPORT" "$d" --flat --pid 1 >"$NW_TMP/pid1" 2>&1 || rc=$?
[[ $rc -ne 0 ]] || grep -q '^Samples: 0 ' "$NW_TMP/pid1" || {
	nw_show "--pid 1" "$NW_TMP/pid1"
	fail "--pid 1 reports samples"
}
ok "pid $pid"

check "pprof of a focused profile: go tool pprof reads it, with the focused total"
nw_report "$NW_TMP/fp.out" "$d" --pprof "$NW_TMP/focus.pb.gz" --focus '^caller_a$'
go tool pprof -raw "$NW_TMP/focus.pb.gz" >"$NW_TMP/focus.raw" 2>"$NW_TMP/focus.err" || {
	nw_show "go tool pprof stderr" "$NW_TMP/focus.err"
	fail "go tool pprof rejects the focused profile"
}
go tool pprof -top -sample_index=samples "$NW_TMP/focus.pb.gz" >"$NW_TMP/focus.top" 2>/dev/null ||
	fail "go tool pprof -top failed"
grep -q "of $f total" "$NW_TMP/focus.top" || {
	nw_show "go tool pprof -top" "$NW_TMP/focus.top"
	fail "pprof's total is not the $f focused samples"
}
grep -q caller_b "$NW_TMP/focus.raw" && fail "caller_b is in the focused pprof profile"
ok "$f samples"

check "two recordings merged: the samples add up, the split holds"
d2=$NW_TMP/callers2.data
nw_record_ok "$d2" -F 1000 "$P/callers" 0.5
nw_report "$NW_TMP/flat2" "$d2" --flat
second=$(samples_of "$NW_TMP/flat2")
nw_report "$NW_TMP/merged" "$d" "$d2" --flat
merged=$(samples_of "$NW_TMP/merged")
((merged == all + second)) || fail "merged $merged samples, expected $all + $second"
nw_report "$NW_TMP/mcallers" "$d" "$d2" --callers '^hot$'
mb=$(share_of "$NW_TMP/mcallers" caller_b)
nw_near "$mb" 70 8 || fail "merged: caller_b holds $mb% of hot"
nw_report "$NW_TMP/mthreads" "$d" "$d2" --threads
[[ $(grep -cE '^ +[0-9]+ +[0-9]+ +callers ' "$NW_TMP/mthreads") -eq 2 ]] || {
	nw_show "--threads of the merge" "$NW_TMP/mthreads"
	fail "the merged report does not list both runs' threads"
}
ok "$all + $second = $merged samples; caller_b $mb%"

check "merging recordings of different events: a clear error"
d3=$NW_TMP/task.data
"$NW_RECORD" -e task-clock -o "$d3" "$P/callers" 0.2 >/dev/null 2>&1 || fail "recording with task-clock failed"
rc=0
"$NW_REPORT" "$d" "$d3" --flat >/dev/null 2>"$NW_TMP/mixed.err" || rc=$?
[[ $rc -ne 0 ]] || fail "merging cpu-clock with task-clock exited 0"
grep -q "cpu-clock" "$NW_TMP/mixed.err" && grep -q "task-clock" "$NW_TMP/mixed.err" || {
	nw_show "stderr" "$NW_TMP/mixed.err"
	fail "the error does not name both events"
}
ok "$(head -1 "$NW_TMP/mixed.err")"

check "--diff --tree against a merged base (the same program twice): caller_a and caller_b change little"
nw_report "$NW_TMP/diff" --diff "$d" --diff "$d2" "$d" --tree --percent-limit 0 --all
grep -q "^Base: $d,$d2 (" "$NW_TMP/diff" || {
	nw_show "--diff" "$NW_TMP/diff"
	fail "the base is not the two recordings merged"
}
# Rows: DELTA SE Z BASE% NEW% FUNCTION (indented); the base holds caller_b at 70%.
bb=$(awk '$NF == "caller_b" { sub(/%/, "", $4); print $4; exit }' "$NW_TMP/diff")
nw_near "${bb:-0}" 70 8 || {
	nw_show "--diff" "$NW_TMP/diff"
	fail "the merged base holds main;caller_b at ${bb:-no}%"
}
awk '$1 ~ /^[-+][0-9.]+$/ && $3 ~ /^[-+]/ { d = $1 + 0; if (d < -8 || d > 8) bad = 1 }
	END { exit bad }' "$NW_TMP/diff" || fail "a context changed by more than 8 points"
ok "caller_b $bb% in the base"

pass
