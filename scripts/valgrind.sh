#!/bin/bash
# Runs narwhal-report of BUILDDIR (default build) under valgrind on two
# measurements recorded with BUILDDIR's narwhal-record: every view, every
# export and the diff, each one run under
#   valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
# Prints "PASS valgrind:NAME" or "FAIL valgrind:NAME" per run, then
# "N passed, N failed"; exits non-zero when any run failed.  BUILDDIR must
# be built with tests (tests/programs) and without sanitizers.
#
#   scripts/valgrind.sh [BUILDDIR]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

builddir=${1:-build}
record=$builddir/tools/narwhal-record
report=$builddir/tools/narwhal-report
prog=$builddir/tests/programs/threads

tmp=$(mktemp -d "${TMPDIR:-/tmp}/narwhal-valgrind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
pass() {
	echo "PASS valgrind:$1"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL valgrind:$1${2:+ ($2)}"
	failed=$((failed + 1))
}

if ! command -v valgrind >/dev/null 2>&1; then
	fail setup "valgrind is missing (scripts/setup.sh --tests installs it)"
	echo "$passed passed, $failed failed"
	exit 1
fi
for f in "$record" "$report" "$prog"; do
	if [[ ! -x $f ]]; then
		fail setup "$f is missing: build $builddir first"
		echo "$passed passed, $failed failed"
		exit 1
	fi
done

# Two measurements of a program with three threads: the default call graph
# (dwarf) and fp, so that the diff has two sides.
if ! "$record" -q -e cpu-clock -o "$tmp/a.data" -- "$prog" >"$tmp/record-a.log" 2>&1 ||
	! "$record" -q -e cpu-clock -g fp -o "$tmp/b.data" -- "$prog" >"$tmp/record-b.log" 2>&1; then
	fail record "narwhal-record failed: $(tail -n 3 "$tmp"/record-*.log | tr '\n' ' ')"
	echo "$passed passed, $failed failed"
	exit 1
fi
# The last thread (a worker), for --tid.
tid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads"][-1]["tid"])' \
	"$tmp/a.data/manifest.json" 2>/dev/null)

# run NAME ARGS...: narwhal-report ARGS under valgrind; it must exit 0
# with no error and no definite leak.
run() {
	local name=$1 log=$tmp/$1.vg
	shift
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--log-file="$log" "$report" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	local rc=$?
	# 99: valgrind found an error or a definite leak; else the report's own status.
	if [[ $rc -eq 0 ]]; then
		pass "$name"
	else
		fail "$name" "exit $rc$( ((rc == 99)) && echo ': valgrind errors')"
		sed 's/^/  /' "$log" "$tmp/$name.err" | head -n 40
	fi
}

a=$tmp/a.data
b=$tmp/b.data
run tree --tree "$a"
run tree-fold-recursion --tree --fold-recursion --percent-limit 0 "$a"
run flat --flat "$a"
run threads --threads "$a"
run folded --folded "$a"
run folded-per-thread --folded --per-thread "$a"
run stack-health --stack-health "$a"
run disasm --disasm . --source "$a"
run disasm-merged --disasm . --sort "$a" "$b"
run tid-metric --tree --tid "${tid:-0}" --metric cpu-clock:period -o "$tmp/tid.txt" "$a"
run pprof --pprof "$tmp/a.pb.gz" "$a"
run speedscope --speedscope "$tmp/a.speedscope.json" "$a"
run flamegraph --flamegraph "$tmp/a.svg" --per-thread "$a"
run html --html "$tmp/a.html" "$a"
run diff --diff "$b" "$a"
run diff-folded --diff "$b" "$a" --folded
run diff-flamegraph --diff "$b" "$a" --flamegraph "$tmp/diff.svg"
run diff-html --diff "$b" "$a" --html "$tmp/diff.html"
run diff-tree --diff "$b" "$a" --tree --all
run diff-callers --diff "$b" "$a" --callers . --all
run diff-lines --diff "$b" "$a" --lines . --all
run diff-modules --diff "$b" "$a" --by module
# Two runs a side: each run kept apart, Welch's test.
run diff-runs --diff "$b" --diff "$a" "$a" "$b" --all
run diff-runs-lines --diff "$b" --diff "$a" "$a" "$b" --lines . --all
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
