#!/bin/bash
# narwhal-record exits with the program's exit status: 3 for exit(3)
# (tests/programs/exit3.c), 0 for a clean exit, 1 for false; the
# measurement is written in every case.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

check "exit(3) gives exit status 3"
d=$NW_TMP/exit3.data
nw_record "$d" "$P/exit3"
if [[ $NW_RC -ne 3 ]]; then
	nw_show "narwhal-record stderr" "$d.err"
	fail "exit status $NW_RC, expected 3"
fi
nw_check_measurement "$d"
nw_report "$NW_TMP/flat" "$d" --flat
got=$(nw_flat_cumul "$NW_TMP/flat" exit_work)
nw_near "$got" 100 10 || fail "exit_work holds $got%, expected 90% or more"
ok "status 3, measurement complete, exit_work $got%"

check "a clean exit gives 0"
d=$NW_TMP/alpha.data
nw_record "$d" "$P/burn" alpha
[[ $NW_RC -eq 0 ]] || fail "exit status $NW_RC, expected 0"
nw_check_measurement "$d"
ok "status 0"

check "the program's status is passed on, not narwhal-record's: 'false' gives 1"
d=$NW_TMP/false.data
nw_record "$d" false
[[ $NW_RC -eq 1 ]] || fail "exit status $NW_RC, expected 1"
[[ -s $d/manifest.json ]] || fail "no manifest.json for a run with no samples"
ok "status 1"

check "the program's stdout and arguments reach it unchanged"
d=$NW_TMP/echo.data
nw_record "$d" sh -c 'printf "%s|" "$@"; exit 7' sh 'a b' -c --flat
[[ $NW_RC -eq 7 ]] || fail "exit status $NW_RC, expected 7"
[[ $(cat "$d.out") == 'a b|-c|--flat|' ]] ||
	fail "the program printed '$(cat "$d.out")', expected 'a b|-c|--flat|'"
ok "status 7, arguments intact"

pass
