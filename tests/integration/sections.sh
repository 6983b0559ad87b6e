#!/bin/bash
# Instrumented sections on their own (no narwhal-record): programs linked
# with libnarwhal print Narwhalyzer's three reports at exit, to stderr or to
# the file NARWHAL_REPORT names.  Checks the counts of known programs
# (tests/programs/sections.c, sections-cxx.cpp), nesting, early returns,
# many threads, the depth limit, unbalanced ends, and every way out: return
# from main, exit() inside sections, a fatal signal, fork and exec; the
# shared and the static library; C and C++.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# calls REPORT SECTION : the CALLS column of SECTION's row in the flat summary.
calls() {
	awk -v name="$2" '
		/^Flat summary/ { flat = 1; next }
		flat && /^$/ { flat = 0 }
		flat && $NF == name { print $6; found = 1; exit }
		END { if (!found) print "none" }' "$1"
}

# expect_calls REPORT SECTION N
expect_calls() {
	local got

	got=$(calls "$1" "$2")
	if [[ $got != "$3" ]]; then
		nw_show "report" "$1"
		fail "$2: $got calls in the flat summary of $1, expected $3"
	fi
}

# run_prog NAME OUT ARGS... : runs a program with NARWHAL_REPORT=OUT; sets RC.
run_prog() {
	local prog=$1 out=$2

	shift 2
	RC=0
	NARWHAL_REPORT=$out "$P/$prog" "$@" >"$out.stdout" 2>"$out.stderr" || RC=$?
}

for prog in sections sections-static; do
	check "$prog nest: counts of nested sections, early returns, begin/end, recursion"
	r=$NW_TMP/$prog-nest.txt
	run_prog "$prog" "$r" nest
	[[ $RC -eq 0 ]] || fail "$prog nest exited $RC"
	grep -q '^==== Narwhal sections: pid [0-9]*, wall time .*, 5 sections, 1 thread ====$' "$r" ||
		{ nw_show report "$r"; fail "no report header naming 5 sections and 1 thread"; }
	for spec in outer:3 inner:12 early:10 manual:5 fib:15; do
		expect_calls "$r" "${spec%%:*}" "${spec#*:}"
	done
	grep -q '^  outer  .*(3 calls, self ' "$r" || fail "hierarchy: no top-level outer"
	grep -q '^  `-- inner  .*(12 calls, ' "$r" || fail "hierarchy: inner not below outer"
	grep -q '^    called from: outer (12)$' "$r" || fail "details: inner not called from outer"
	grep -q '^    called from: fib (14), (top level) (1)$' "$r" ||
		fail "details: fib's callers are not itself 14 times and the top level once"
	grep -Eq '^    location:    .*sections\.c:[0-9]+$' "$r" || fail "details: no location"
	[[ ! -s $r.stderr ]] || fail "NARWHAL_REPORT=FILE still printed to stderr"
	ok "outer 3, inner 12 (below outer), early 10, manual 5, fib 15"
done

check "the report goes to stderr by default, nowhere with NARWHAL_REPORT=off"
"$P/sections" nest 2>"$NW_TMP/stderr.txt" >/dev/null
grep -q '^==== Narwhal sections:' "$NW_TMP/stderr.txt" || fail "no report on stderr"
NARWHAL_REPORT=off "$P/sections" nest 2>"$NW_TMP/off.txt" >/dev/null
[[ ! -s $NW_TMP/off.txt ]] || fail "NARWHAL_REPORT=off still printed a report"
ok "stderr, off"

check "8 threads x 5000: every opening counted, none lost between threads"
r=$NW_TMP/threads.txt
run_prog sections "$r" threads 8 5000
[[ $RC -eq 0 ]] || fail "sections threads exited $RC"
expect_calls "$r" work 40000
expect_calls "$r" step 40000
grep -q ', 2 sections, 8 threads ====$' "$r" || { nw_show report "$r"; fail "header does not say 8 threads"; }
grep -q '^  `-- step  .*(40000 calls' "$r" || fail "hierarchy: step not below work"
ok "work 40000, step 40000"

check "return from main closes NARWHAL_FUNC(main)"
r=$NW_TMP/return.txt
run_prog sections "$r" return
[[ $RC -eq 0 ]] || fail "sections return exited $RC"
expect_calls "$r" main 1
expect_calls "$r" in_main 1
! grep -q 'open at exit' "$r" || fail "a section reported open after return from main"
ok "main 1, in_main 1, none open"

check "exit(3) inside two sections: status 3, both reported, open at exit"
r=$NW_TMP/exit.txt
run_prog sections "$r" exit
[[ $RC -eq 3 ]] || fail "sections exit exited $RC, expected 3"
expect_calls "$r" main 1
expect_calls "$r" before_exit 1
grep -q '^  `-- before_exit .*open at exit)$' "$r" || { nw_show report "$r"; fail "before_exit not open below main"; }
grep -q '^Notes: 2 sections still open at the end' "$r" || fail "no note of 2 open sections"
ok "status 3, main > before_exit, open at exit"

check "SIGSEGV inside a section: the report, then death by the signal (139)"
r=$NW_TMP/crash.txt
run_prog sections "$r" crash
[[ $RC -eq 139 ]] || fail "sections crash exited $RC, expected 139"
grep -q ', 1 section, 1 thread, ended by a signal ====$' "$r" || { nw_show report "$r"; fail "no report of a signal end"; }
expect_calls "$r" crashing 1
ok "status 139, crashing 1"

check "recursion 200 deep: 128 timed, 72 counted as overflow"
r=$NW_TMP/overflow.txt
run_prog sections "$r" overflow
[[ $RC -eq 0 ]] || fail "sections overflow exited $RC"
expect_calls "$r" deep 128
grep -q '^Notes: 72 opened deeper than 128 (not timed);$' "$r" || { nw_show report "$r"; fail "no overflow note"; }
ok "deep 128, 72 overflow"

check "unbalanced: an end without a begin, a begin closed by its scope"
r=$NW_TMP/unbalanced.txt
run_prog sections "$r" unbalanced
expect_calls "$r" scope 1
expect_calls "$r" left_open 1
grep -q '^Notes: 2 unbalanced' "$r" || { nw_show report "$r"; fail "no note of 2 unbalanced"; }
ok "scope 1, left_open 1, 2 unbalanced"

check "fork: parent and child report separately (NARWHAL_REPORT with %p)"
run_prog sections "$NW_TMP/fork.%p" fork
[[ $RC -eq 0 ]] || fail "sections fork exited $RC"
mapfile -t reports < <(find "$NW_TMP" -name 'fork.[0-9]*' ! -name '*.std*' | sort)
[[ ${#reports[@]} -eq 2 ]] || fail "${#reports[@]} report files from fork, expected 2"
child=$(grep -l '^  child$' "${reports[@]}" || true)
[[ -n $child ]] || fail "no report names the child's section"
expect_calls "$child" child 1
expect_calls "$child" parent 1
parent=$(grep -L '^  child$' "${reports[@]}")
expect_calls "$parent" parent 1
[[ $(calls "$parent" child) == none ]] || fail "the parent's report counts the child's section"
ok "child: parent 1 (open across fork) + child 1; parent: parent 1"

check "exec: narwhal_report() before, the new image reports its own"
r=$NW_TMP/exec.txt
run_prog sections "$r" exec
[[ $RC -eq 0 ]] || fail "sections exec exited $RC"
# The new image truncates the file: it holds the second report only.
expect_calls "$r" in_main 1
[[ $(calls "$r" before_exec) == none ]] || fail "the exec'd image reports the old image's section"
"$P/sections" exec 2>"$NW_TMP/exec.stderr" >/dev/null
[[ $(grep -c '^==== Narwhal sections:' "$NW_TMP/exec.stderr") -eq 2 ]] ||
	fail "not two reports on stderr across exec"
grep -q ', so far ====$' "$NW_TMP/exec.stderr" || fail "narwhal_report() not marked 'so far'"
ok "two reports, one per image"

check "C++: member function, template, block, begin/end, sections left by exceptions"
r=$NW_TMP/cxx.txt
run_prog sections-cxx "$r"
[[ $RC -eq 0 ]] || fail "sections-cxx exited $RC"
for spec in area:6 scale:6 loop:3 manual:2 throws:5; do
	expect_calls "$r" "${spec%%:*}" "${spec#*:}"
done
grep -q '^throws: 5 closed, 0 open$' "$r.stdout" || fail "exceptions left sections open: $(cat "$r.stdout")"
ok "area 6, scale 6, loop 3, manual 2, throws 5 (all closed by unwinding)"

pass
