#!/bin/bash
# A program that dies of SIGSEGV (tests/programs/crash.c): narwhal-record
# exits 139 (128 + 11) and still writes a complete measurement in which
# crash_work holds nearly all samples.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/crash.data
check "narwhal-record exits 139 when the program dies of SIGSEGV"
nw_record "$d" "$P/crash"
if [[ $NW_RC -ne 139 ]]; then
	nw_show "narwhal-record stderr" "$d.err"
	fail "exit status $NW_RC, expected 139"
fi
ok "exit status 139"

check "the measurement is complete and the summary line was printed"
nw_check_measurement "$d"
grep -Eq '^narwhal-record: [0-9]+ samples? from 1 thread in 1 process \([0-9]+ lost\) written to .*crash\.data' "$d.err" || {
	nw_show "narwhal-record stderr" "$d.err"
	fail "no summary line for 1 thread in 1 process"
}
ok "complete"

check "--flat shows crash_work with 90% or more"
nw_report "$NW_TMP/flat" "$d" --flat
got=$(nw_flat_cumul "$NW_TMP/flat" crash_work)
if ! nw_near "$got" 100 10; then
	nw_show "narwhal-report --flat" "$NW_TMP/flat"
	fail "crash_work holds $got%, expected 90% or more"
fi
ok "crash_work $got%"

pass
