#!/bin/bash
# Golden outputs (issue 25): every view and export of five small committed
# measurements (tests/data/outputs/: demo twice, cxx, alloc, sections) is
# byte for byte what tests/data/outputs/NAME.out holds.  A refactoring
# that changes what users see fails here; a change meant to show runs
# tests/data/outputs/regen.sh and says why in its commit.
. "$(dirname "$0")/lib.sh"

D=$NW_SRC/tests/data/outputs
# shellcheck source=tests/data/outputs/cases.sh
. "$D/cases.sh"

check "each of ${#NW_OUTPUT_CASES[@]} cases gives the committed output"
failed=0
for c in "${NW_OUTPUT_CASES[@]}"; do
	IFS='|' read -r name meas args <<<"$c"
	if ! nw_output_run "$name" "$meas" "$args" "$NW_REPORT" "$D" "$NW_TMP" 2>"$NW_TMP/$name.err"; then
		nw_show "narwhal-report $meas $args" "$NW_TMP/$name.err"
		failed=$((failed + 1))
		continue
	fi
	if ! cmp -s "$D/$name.out" "$NW_TMP/$name.out"; then
		echo "  differs: $name (narwhal-report $meas $args)" >&2
		diff "$D/$name.out" "$NW_TMP/$name.out" | head -20 >&2 || true
		failed=$((failed + 1))
	fi
done
[[ $failed -eq 0 ]] || fail "$failed of ${#NW_OUTPUT_CASES[@]} outputs differ from tests/data/outputs"
ok "${#NW_OUTPUT_CASES[@]} outputs the same"
pass
