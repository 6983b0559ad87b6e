#!/bin/bash
# Installs what is missing, builds, runs every test suite (unit and
# integration) and ends with one line: "N passed, N failed".
# Exits non-zero when anything failed (a skipped test counts as failed).
#
#   scripts/test.sh                  # build directory ./build
#   NW_BUILDDIR=out scripts/test.sh  # another build directory
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

builddir=${NW_BUILDDIR:-build}

# summary PASSED FAILED: the last line, and the exit status.
summary() {
	echo "$1 passed, $2 failed"
	[[ $2 -eq 0 && $1 -gt 0 ]]
	exit $?
}

if ! scripts/setup.sh; then
	echo "test.sh: scripts/setup.sh failed" >&2
	summary 0 1
fi

if [[ -f $builddir/build.ninja ]]; then
	meson setup --reconfigure "$builddir" >/dev/null
else
	meson setup "$builddir" >/dev/null
fi || {
	echo "test.sh: meson setup $builddir failed" >&2
	summary 0 1
}

if ! ninja -C "$builddir"; then
	echo "test.sh: the build failed" >&2
	summary 0 1
fi

log=$builddir/meson-logs/testlog.json
rm -f "$log"
meson test -C "$builddir" --print-errorlogs
if [[ ! -s $log ]]; then
	echo "test.sh: meson test wrote no $log" >&2
	summary 0 1
fi

# Each line of testlog.json is one test's JSON object; "result" is OK,
# FAIL, SKIP, TIMEOUT, EXPECTEDFAIL, UNEXPECTEDPASS or ERROR.  Only OK passes.
counts=$(python3 - "$log" <<'PY'
import json
import sys

passed = failed = 0
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        result = json.loads(line).get("result")
        if result == "OK":
            passed += 1
        else:
            failed += 1
print(passed, failed)
PY
) || {
	echo "test.sh: cannot read $log" >&2
	summary 0 1
}
read -r passed failed <<<"$counts"
if [[ $passed -eq 0 && $failed -eq 0 ]]; then
	echo "test.sh: no tests ran" >&2
fi
summary "$passed" "$failed"
