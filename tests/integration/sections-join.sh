#!/bin/bash
# Instrumented sections joined with the samples (doc/SECTIONS.md): a program
# whose sections hold known shares of its CPU time (tests/programs/sections.c
# "shares": alpha 37.5 %, beta 37.5 % with gamma 12.5 % inside it, 25 %
# outside) recorded by narwhal-record; --sections shows each section's
# calls, times and samples, --by-section moves the samples below
# [section NAME] frames in the tree, folded, pprof and flame graph outputs
# (exactly the samples --sections counts); threads and --tid; sections still
# open at exit() and at a crash; a program without sections.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# row FILE NAME : "CALLS SAMPLES INCL SELF TOTAL_SECONDS" of NAME in --sections output.
row() {
	awk -v name="$2" '
		function secs(v, u) { return u == "s" ? v : u == "ms" ? v / 1e3 : u == "us" ? v / 1e6 : v / 1e9 }
		$1 == "CALLS" { table = 1; next }
		{ sub(/  \([0-9]+ open at the end\)$/, "") }
		table && $NF == name && NF == 13 {
			sub(/%/, "", $11); sub(/%/, "", $12)
			print $1, $10, $11, $12, secs($2, $3); found = 1; exit
		}
		table && name == "outside" && /\(outside any section\)/ {
			sub(/%/, "", $2); sub(/%/, "", $3)
			print "-", $1, $2, $3, 0; found = 1; exit
		}
		END { if (!found) print "none" }' "$1"
}

d=$NW_TMP/shares.data
check "narwhal-record runs 'sections shares'; the sections move into the measurement"
nw_record_ok "$d" "$P/sections" shares
nw_check_measurement "$d"
grep -q "^narwhal-record: instrumented sections in $d/sections (narwhal-report --sections" "$d.err" ||
	{ nw_show "narwhal-record stderr" "$d.err"; fail "no line naming $d/sections"; }
ls "$d"/*.trace >/dev/null 2>&1 || fail "no trace in $d (the join reads the time of each sample there)"
compgen -G "$d/sections/sections-*.bin" >/dev/null || fail "no interval log in $d/sections"
! compgen -G "$d.sections-*" >/dev/null || fail "the staging directory was left behind"
! grep -q '^==== Narwhal sections' "$d.err" || fail "the program printed its report under narwhal-record"
ok "$d/sections holds the interval log and the sample times"

check "--sections: one call each; samples inside alpha 37.5%, beta 37.5% (self 25%), gamma 12.5%, outside 25%"
nw_report "$NW_TMP/sec" "$d" --sections
grep -q '^Sections: 3 sections, 3 intervals in 1 thread of 1 process image$' "$NW_TMP/sec" ||
	{ nw_show "--sections" "$NW_TMP/sec"; fail "no header for 3 sections in 1 thread"; }
declare -A samples
for spec in alpha:37.5:37.5:0.3 beta:37.5:25:0.3 gamma:12.5:12.5:0.1 outside:25:25:0; do
	IFS=: read -r name incl self secs <<<"$spec"
	read -r c n i s t <<<"$(row "$NW_TMP/sec" "$name")"
	[[ $c != none ]] || { nw_show "--sections" "$NW_TMP/sec"; fail "no row for $name"; }
	[[ $name == outside || $c -eq 1 ]] || fail "$name: $c calls, expected 1"
	nw_near "$i" "$incl" 5 || { nw_show "--sections" "$NW_TMP/sec"; fail "$name: $i% inclusive, expected $incl% +- 5"; }
	nw_near "$s" "$self" 5 || { nw_show "--sections" "$NW_TMP/sec"; fail "$name: $s% self, expected $self% +- 5"; }
	# Sections time wall-clock: at least the CPU time they burn.
	awk -v t="$t" -v m="$secs" 'BEGIN { exit !(t >= m * 0.98) }' ||
		fail "$name: $t s in all, less than the $secs s of CPU it burns"
	samples[$name]=$n
	ok "$name: $n samples, $i% inclusive, $s% self, $t s"
done
grep -q '^ .* gamma$' "$NW_TMP/sec" && grep -q '  gamma$' "$NW_TMP/sec" || fail "gamma not indented below beta"

check "--by-section --folded: the same samples, below [section NAME] frames, as many as --sections counts"
nw_report "$NW_TMP/plain.folded" "$d" --folded
nw_report "$NW_TMP/sec.folded" "$d" --by-section --folded
sum() { awk '{ n += $NF } END { print n + 0 }' "$@"; }
count_prefix() { awk -v p="$2" 'index($0, p) == 1 { n += $NF } END { print n + 0 }' "$1"; }
[[ $(sum "$NW_TMP/plain.folded") -eq $(sum "$NW_TMP/sec.folded") ]] ||
	fail "--by-section changed the total: $(sum "$NW_TMP/plain.folded") -> $(sum "$NW_TMP/sec.folded")"
a=$(count_prefix "$NW_TMP/sec.folded" "[section alpha];")
b=$(count_prefix "$NW_TMP/sec.folded" "[section beta];")
g=$(count_prefix "$NW_TMP/sec.folded" "[section beta];[section gamma];")
o=$(awk 'index($0, "[section ") != 1 { n += $NF } END { print n + 0 }' "$NW_TMP/sec.folded")
[[ $a -eq ${samples[alpha]} && $b -eq ${samples[beta]} && $g -eq ${samples[gamma]} &&
	$o -eq ${samples[outside]} ]] || {
	nw_show "--by-section --folded" "$NW_TMP/sec.folded"
	fail "folded alpha/beta/gamma/outside $a/$b/$g/$o, --sections ${samples[alpha]}/${samples[beta]}/${samples[gamma]}/${samples[outside]}"
}
grep -q '^\[section alpha\];_start;.*;main;shares [0-9]*$' "$NW_TMP/sec.folded" ||
	fail "no [section alpha];_start;...;main;shares stack"
! grep -q '\[section gamma\];' <(grep -v '^\[section beta\];\[section gamma\];' "$NW_TMP/sec.folded") ||
	fail "gamma appears outside beta"
ok "alpha $a, beta $b (gamma $g inside), outside $o: as --sections counts"

check "--by-section --tree: the pseudo-frames at the top with the sections' shares"
nw_report "$NW_TMP/tree" "$d" --by-section --tree --percent-limit 0
for spec in alpha:37.5 beta:37.5; do
	got=$(sed -nE "s/^ *([0-9.]+)% +[0-9.]+%  \[section ${spec%%:*}\]\$/\1/p" "$NW_TMP/tree")
	[[ -n $got ]] || { nw_show "--by-section --tree" "$NW_TMP/tree"; fail "no top-level [section ${spec%%:*}]"; }
	nw_near "$got" "${spec#*:}" 5 || fail "[section ${spec%%:*}] has $got%, expected ${spec#*:}% +- 5"
done
grep -q '^ *[0-9.]*% *[0-9.]*%    \[section gamma\]$' "$NW_TMP/tree" || fail "[section gamma] is not below [section beta]"
nw_report "$NW_TMP/flat" "$d" --by-section --flat
grep -Eq '\[section alpha\] \(sections\.c:[0-9]+\)$' "$NW_TMP/flat" ||
	fail "--flat does not name where section alpha is"
ok "tree and flat"

check "--by-section --pprof: go tool pprof sees the sections"
nw_report "$NW_TMP/pp.out" "$d" --by-section --pprof "$NW_TMP/p.pb.gz"
go tool pprof -top -sample_index=samples "$NW_TMP/p.pb.gz" >"$NW_TMP/top" 2>"$NW_TMP/top.err" ||
	fail "go tool pprof -top failed: $(head -c 300 "$NW_TMP/top.err")"
got=$(awk '$NF == "alpha]" && $(NF-1) == "[section" { sub(/%/, "", $5); print $5; exit }' "$NW_TMP/top")
[[ -n $got ]] || { nw_show "pprof -top" "$NW_TMP/top"; fail "pprof shows no [section alpha]"; }
nw_near "$got" 37.5 5 || fail "pprof: [section alpha] cum $got%, expected 37.5% +- 5"
ok "pprof: [section alpha] $got% cumulative"

check "--by-section --flamegraph: the SVG draws the pseudo-frames"
nw_report "$NW_TMP/fg.out" "$d" --by-section --flamegraph "$NW_TMP/fg.svg"
grep -q '\[section gamma\]' "$NW_TMP/fg.svg" || fail "the flame graph has no [section gamma]"
ok "flame graph"

check "--by-section leaves nothing behind and refuses --stack-health"
before=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'narwhal-by-section.*' | wc -l)
nw_report "$NW_TMP/again" "$d" --by-section --flat
after=$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'narwhal-by-section.*' | wc -l)
[[ $after -le $before ]] || fail "--by-section left a directory in ${TMPDIR:-/tmp}"
rc=0
"$NW_REPORT" --by-section --stack-health "$d" >/dev/null 2>"$NW_TMP/sh.err" || rc=$?
[[ $rc -eq 2 ]] || fail "--by-section --stack-health exited $rc, expected 2"
ok "no temporary directory left; --stack-health refused"

check "threads: 4 x 100000 under narwhal-record; --tid keeps one thread's sections"
d2=$NW_TMP/threads.data
nw_record_ok "$d2" "$P/sections" threads 4 100000
nw_report "$NW_TMP/t.sec" "$d2" --sections
read -r c _ <<<"$(row "$NW_TMP/t.sec" work)"
[[ $c -eq 400000 ]] || { nw_show "--sections" "$NW_TMP/t.sec"; fail "work: $c calls, expected 400000"; }
read -r c _ <<<"$(row "$NW_TMP/t.sec" step)"
[[ $c -eq 400000 ]] || fail "step: $c calls, expected 400000"
tid=$(nw_report "$NW_TMP/t.threads" "$d2" --threads; nw_threads_rows "$NW_TMP/t.threads" |
	awk '$2 != $1 { print $2; exit }')
[[ -n $tid ]] || fail "no worker thread in --threads"
nw_report "$NW_TMP/t1.sec" "$d2" --sections --tid "$tid"
read -r c n _ <<<"$(row "$NW_TMP/t1.sec" work)"
[[ $c -eq 100000 ]] || { nw_show "--sections --tid" "$NW_TMP/t1.sec"; fail "--tid $tid: work $c calls, expected 100000"; }
ok "work 400000 and step 400000 over 4 threads; thread $tid alone: 100000 ($n samples)"

check "exit(3) inside sections under narwhal-record: status 3, the open sections joined"
d3=$NW_TMP/exit.data
nw_record "$d3" "$P/sections" exit
[[ $NW_RC -eq 3 ]] || fail "narwhal-record exited $NW_RC, expected the program's 3"
nw_report "$NW_TMP/e.sec" "$d3" --sections
grep -q ' before_exit  (1 open at the end)$' "$NW_TMP/e.sec" || { nw_show "--sections" "$NW_TMP/e.sec"; fail "before_exit not shown open at the end"; }
read -r c n i _ <<<"$(row "$NW_TMP/e.sec" before_exit)"
awk -v i="$i" 'BEGIN { exit !(i >= 50) }' || fail "only $i% of the samples inside before_exit (it burns 0.05 s of its run)"
ok "before_exit: $n samples, $i%"

check "a crash inside a section under narwhal-record: 139, the section and its samples kept"
d4=$NW_TMP/crash.data
nw_record "$d4" "$P/sections" crash
[[ $NW_RC -eq 139 ]] || fail "narwhal-record exited $NW_RC, expected 139"
nw_report "$NW_TMP/c.sec" "$d4" --sections
read -r c n _ <<<"$(row "$NW_TMP/c.sec" crashing)"
[[ $c -eq 1 && $n -gt 0 ]] || { nw_show "--sections" "$NW_TMP/c.sec"; fail "crashing: $c calls, $n samples"; }
ok "crashing: 1 call, $n samples"

check "fork and exec under narwhal-record: one log per process, one image per exec"
d6=$NW_TMP/fork.data
nw_record_ok "$d6" "$P/sections" fork
logs=$(find "$d6/sections" -name 'sections-*.bin' | wc -l)
[[ $logs -eq 2 ]] || fail "$logs interval logs for a parent and its forked child, expected 2"
nw_report "$NW_TMP/f.sec" "$d6" --sections
grep -q 'in 2 threads of 2 process images$' "$NW_TMP/f.sec" || { nw_show "--sections" "$NW_TMP/f.sec"; fail "not 2 threads of 2 process images"; }
read -r c _ <<<"$(row "$NW_TMP/f.sec" child)"
[[ $c -eq 1 ]] || fail "child: $c calls, expected 1"
read -r c _ <<<"$(row "$NW_TMP/f.sec" parent)"
[[ $c -eq 2 ]] || fail "parent: $c calls (the parent's and the child's, open across fork), expected 2"
d7=$NW_TMP/exec.data
nw_record_ok "$d7" "$P/sections" exec
[[ $(find "$d7/sections" -name 'sections-*.bin' | wc -l) -eq 1 ]] || fail "exec: not one log"
nw_report "$NW_TMP/x.sec" "$d7" --sections
grep -q 'of 2 process images$' "$NW_TMP/x.sec" || { nw_show "--sections" "$NW_TMP/x.sec"; fail "exec: not 2 process images in one log"; }
for name in before_exec in_main main; do
	read -r c _ <<<"$(row "$NW_TMP/x.sec" "$name")"
	[[ $c -eq 1 ]] || fail "exec: $name: $c calls, expected 1"
done
ok "fork: 2 logs, child 1, parent 2; exec: 1 log, 2 images"

check "a program without sections: --sections and --by-section say so (exit 1)"
d5=$NW_TMP/plain.data
nw_record_ok "$d5" "$P/burn" alpha
[[ ! -e $d5/sections ]] || fail "a sections directory for a program without libnarwhal"
! compgen -G "$d5.sections-*" >/dev/null || fail "the staging directory was left behind"
for opt in --sections --by-section; do
	rc=0
	"$NW_REPORT" "$opt" "$d5" >/dev/null 2>"$NW_TMP/none.err" || rc=$?
	[[ $rc -eq 1 ]] || fail "$opt on a measurement without sections exited $rc, expected 1"
	grep -q "has no instrumented sections" "$NW_TMP/none.err" || fail "$opt: no message saying why"
done
ok "no sections directory; both options explain"

pass
