#!/bin/bash
# Installs what is missing, builds, runs every test suite and ends with one
# line: "N passed, N failed".  Exits non-zero when anything failed (a
# skipped test counts as failed).  doc/TESTING.md says what runs where.
#  1. the unit and integration tests (meson test) in BUILDDIR;
#  2. the same suite again in BUILDDIR-asan, built with ASan and UBSan
#     (-Db_sanitize=address,undefined): each test counts as "asan:NAME";
#  3. every libFuzzer target for NW_FUZZ_SECONDS (default 20) seconds,
#     built with clang in BUILDDIR-fuzz (scripts/fuzz.sh): one test each;
#  4. narwhal-report's views and exports under valgrind
#     (scripts/valgrind.sh): one test each.
#
#   scripts/test.sh                  # build directory ./build
#   NW_BUILDDIR=out scripts/test.sh  # another build directory (and out-asan, out-fuzz)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

builddir=${NW_BUILDDIR:-build}
asandir=${builddir}-asan
fuzzdir=${builddir}-fuzz
fuzz_seconds=${NW_FUZZ_SECONDS:-20}

# summary PASSED FAILED: the last line, and the exit status.
summary() {
	echo "$1 passed, $2 failed"
	[[ $2 -eq 0 && $1 -gt 0 ]]
	exit $?
}

if ! scripts/setup.sh --tests; then
	echo "test.sh: scripts/setup.sh --tests failed" >&2
	summary 0 1
fi

# -Dtests=true (the default) said outright: scripts/demo.sh sets up the
# same directory without the tests.
if [[ -f $builddir/build.ninja ]]; then
	meson setup --reconfigure "$builddir" -Dtests=true >/dev/null
else
	meson setup "$builddir" -Dtests=true >/dev/null
fi || {
	echo "test.sh: meson setup $builddir failed" >&2
	summary 0 1
}

if ! ninja -C "$builddir"; then
	echo "test.sh: the build failed" >&2
	summary 0 1
fi

# count_testlog LOG PREFIX: "PASSED FAILED" of a meson testlog.json.  Each
# line is one test's JSON object; "result" is OK, FAIL, SKIP, TIMEOUT,
# EXPECTEDFAIL, UNEXPECTEDPASS or ERROR.  Only OK passes.  Failed tests are
# named on stderr, with PREFIX.
count_testlog() {
	python3 - "$1" "$2" <<'PY'
import json
import sys

passed = failed = 0
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        test = json.loads(line)
        if test.get("result") == "OK":
            passed += 1
        else:
            failed += 1
            print("test.sh: FAIL %s%s (%s)" % (sys.argv[2], test.get("name"), test.get("result")),
                  file=sys.stderr)
print(passed, failed)
PY
}

log=$builddir/meson-logs/testlog.json
rm -f "$log"
meson test -C "$builddir" --print-errorlogs
if [[ ! -s $log ]]; then
	echo "test.sh: meson test wrote no $log" >&2
	summary 0 1
fi
counts=$(count_testlog "$log" "") || {
	echo "test.sh: cannot read $log" >&2
	summary 0 1
}
read -r passed failed <<<"$counts"
if [[ $passed -eq 0 && $failed -eq 0 ]]; then
	echo "test.sh: no tests ran" >&2
fi
echo "test.sh: unit and integration tests: $passed passed, $failed failed"

# ---- 2. The whole suite with ASan and UBSan (gcc's) ----
# The profiled test programs are built without sanitizers (tests/programs);
# perf_event, libdw and json-c are not instrumented.  Any sanitizer report
# fails the test that made it, leaks included.
asan_passed=0
asan_failed=0
if [[ -f $asandir/build.ninja ]]; then
	meson setup --reconfigure "$asandir" -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
else
	meson setup "$asandir" -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi && ninja -C "$asandir" >/dev/null || {
	echo "test.sh: FAIL asan:build (meson setup or ninja in $asandir failed)" >&2
	asan_failed=1
}
if [[ $asan_failed -eq 0 ]]; then
	asanlog=$asandir/meson-logs/testlog.json
	rm -f "$asanlog"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C "$asandir" --print-errorlogs >"$asandir/test.out" 2>&1
	if counts=$(count_testlog "$asanlog" "asan:") && [[ $counts != "0 0" ]]; then
		read -r asan_passed asan_failed <<<"$counts"
		if [[ $asan_failed -ne 0 ]]; then
			echo "test.sh: sanitizer reports in $asandir/meson-logs/testlog.txt:" >&2
			# With the lines before each: a check's own words on what it saw.
			grep -E -B 6 'ERROR: (Address|Leak)Sanitizer|runtime error:|^FAIL' \
				"$asandir/meson-logs/testlog.txt" | head -n 60 >&2
		fi
	else
		echo "test.sh: FAIL asan:suite (meson test in $asandir ran no tests)" >&2
		asan_failed=1
	fi
fi
echo "test.sh: sanitizer suite: $asan_passed passed, $asan_failed failed"

# ---- 3. Fuzzing (scripts/fuzz.sh) and 4. valgrind (scripts/valgrind.sh) ----
# Both print "PASS NAME" or "FAIL NAME" per test.
# count_lines FILE: "PASSED FAILED" of those lines; a script that printed
# none counts as one failure.
count_lines() {
	local p f
	p=$(grep -c '^PASS ' "$1")
	f=$(grep -c '^FAIL ' "$1")
	if [[ $p -eq 0 && $f -eq 0 ]]; then
		f=1
	fi
	echo "$p $f"
}

out=$(mktemp) || summary "$passed" $((failed + 1))
NW_FUZZ_BUILDDIR=$fuzzdir scripts/fuzz.sh "$fuzz_seconds" | tee "$out"
fuzz_rc=${PIPESTATUS[0]}
read -r fuzz_passed fuzz_failed <<<"$(count_lines "$out")"
if [[ $fuzz_rc -ne 0 && $fuzz_failed -eq 0 ]]; then
	fuzz_failed=1
fi

scripts/valgrind.sh "$builddir" | tee "$out"
vg_rc=${PIPESTATUS[0]}
read -r vg_passed vg_failed <<<"$(count_lines "$out")"
if [[ $vg_rc -ne 0 && $vg_failed -eq 0 ]]; then
	vg_failed=1
fi
rm -f "$out"

summary $((passed + asan_passed + fuzz_passed + vg_passed)) \
	$((failed + asan_failed + fuzz_failed + vg_failed))
