#!/bin/bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan and UBSan on) and
# runs each for SECONDS (default 30) from its seed corpus in fuzz/corpus/.
# Prints "PASS fuzz:TARGET" or "FAIL fuzz:TARGET" per target, then
# "N passed, N failed"; exits non-zero when any target crashed, leaked,
# hit undefined behaviour or timed out, or when the build failed.
# A crashing input is kept in fuzz/crashes/TARGET-crash-SHA1 (gitignored):
# replay it with BUILDDIR/fuzz/fuzz-TARGET fuzz/crashes/TARGET-crash-SHA1.
#
#   scripts/fuzz.sh [SECONDS]                 # build directory ./build-fuzz
#   NW_FUZZ_BUILDDIR=out scripts/fuzz.sh 60   # another build directory
#   NW_FUZZ_TARGETS="csprof record" scripts/fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

secs=${1:-30}
builddir=${NW_FUZZ_BUILDDIR:-build-fuzz}
read -r -a targets <<<"${NW_FUZZ_TARGETS:-csprof manifest symtab record seclog trace pack delta code}"

if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: scripts/fuzz.sh [SECONDS]" >&2
	exit 2
fi

build_failed() {
	echo "fuzz.sh: $1" >&2
	for t in "${targets[@]}"; do
		echo "FAIL fuzz:$t"
	done
	echo "0 passed, ${#targets[@]} failed"
	exit 1
}

# Debian's clang-14 package installs clang-14; the clang package adds "clang".
clang=$(command -v clang || command -v clang-14) ||
	build_failed "clang is missing (scripts/setup.sh --tests installs it)"
if [[ -f $builddir/build.ninja ]]; then
	meson setup --reconfigure "$builddir" -Dfuzz=true -Dtests=false >/dev/null
else
	CC=$clang meson setup "$builddir" -Dfuzz=true -Dtests=false >/dev/null
fi || build_failed "meson setup $builddir failed (a tree set up with gcc? remove it)"
ninja -C "$builddir" fuzzers >/dev/null || build_failed "building the fuzzers in $builddir failed"

mkdir -p fuzz/crashes
passed=0
failed=0
for t in "${targets[@]}"; do
	exe=$builddir/fuzz/fuzz-$t
	# New inputs go to the first directory (kept between local runs), the
	# seeds in fuzz/corpus/ are only read.
	work=$builddir/fuzz-corpus/$t
	log=$builddir/fuzz-$t.log
	mkdir -p "$work"
	# -timeout: one input running 10 s is a hang; the outer timeout is a
	# safety net should the fuzzer itself not stop.
	timeout -k 10 $((secs + 120)) "$exe" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="fuzz/crashes/$t-" "$work" "fuzz/corpus/$t" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	if [[ $rc -eq 0 ]]; then
		echo "PASS fuzz:$t (${runs:-?} inputs in ${secs} s)"
		passed=$((passed + 1))
	else
		echo "FAIL fuzz:$t (exit $rc; log $log)"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|artifact_prefix|Test unit written)' \
			"$log" | head -n 20 | sed 's/^/  /'
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
