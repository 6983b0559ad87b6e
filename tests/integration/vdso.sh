#!/bin/bash
# The vdso: tests/programs/vdsoclock spends its time in clock_gettime,
# which runs in the kernel's vdso without a system call.  Those frames must
# carry the vdso's function name (__vdso_clock_gettime, or its alias
# clock_gettime), not [vdso]+0xOFFSET.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/vdso.data
check "narwhal-record runs vdsoclock and exits 0"
nw_record_ok "$d" "$P/vdsoclock"
nw_check_measurement "$d"
ok "complete"

nw_report "$NW_TMP/folded" "$d" --folded
total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/folded")
((total > 0)) || fail "no samples"

check "stacks ending in the vdso's clock_gettime hold most samples"
n=$(awk '{ k = split($1, f, ";") }
	f[k] == "__vdso_clock_gettime" || f[k] == "clock_gettime" { s += $NF }
	END { print s + 0 }' "$NW_TMP/folded")
share=$(awk -v n="$n" -v t="$total" 'BEGIN { printf "%.1f", 100 * n / t }')
awk -v s="$share" 'BEGIN { exit !(s >= 40) }' || {
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "the vdso's clock_gettime ends $share% of the stacks, expected >= 40%"
}
ok "$share%"

check "few frames stay [vdso]+0xOFFSET"
n=$(awk '$1 ~ /\[vdso\]\+0x/ { s += $NF } END { print s + 0 }' "$NW_TMP/folded")
raw=$(awk -v n="$n" -v t="$total" 'BEGIN { printf "%.1f", 100 * n / t }')
awk -v s="$raw" 'BEGIN { exit !(s < 10) }' || {
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "stacks with [vdso]+0xOFFSET frames hold $raw%"
}
ok "$raw%"

check "symbols.json holds the name under the [vdso] module"
python3 - "$d/symbols.json" <<'PY' || fail "no named [vdso] entry"
import json, sys
t = json.load(open(sys.argv[1]))
vdso = {i for i, m in enumerate(t["modules"]) if m["path"] == "[vdso]"}
sys.exit(0 if any(e["module"] in vdso and e["frames"] and
                  e["frames"][-1]["function"] in ("__vdso_clock_gettime", "clock_gettime")
                  for e in t["entries"]) else 1)
PY
ok "found"

pass
