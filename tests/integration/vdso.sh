#!/bin/bash
# The vdso: tests/programs/vdsoclock spends its time in clock_gettime,
# which runs in the kernel's vdso without a system call.  Those frames must
# carry the vdso's function name (__vdso_clock_gettime, or its alias
# clock_gettime), not [vdso]+0xOFFSET.  Where the clock source is
# kvm-clock (some virtual machines), __vdso_clock_gettime calls a static
# function of the vdso that reads the paravirtual clock (vread_pvclock):
# the vdso's image names only its exported functions, so that callee stays
# [vdso]+0xOFFSET, below the named caller, as in perf.
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

clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
echo "  clock source: ${clocksource:-unknown}"

# vdso_share FOLDED: "IN STRAY" percentages of the samples whose stack
# goes through the vdso's clock_gettime and ends there or in an unnamed
# frame of the vdso it called; and of the samples with a [vdso]+0xOFFSET
# frame that no named vdso function called (a symbolization failure).
vdso_share() {
	awk -v t="$total" '{
		k = split($1, f, ";"); named = 0; below = 1; stray = 0
		for (i = 1; i <= k; i++) {
			if (f[i] == "__vdso_clock_gettime" || f[i] == "clock_gettime") {
				named = i; below = 1
			} else if (named && f[i] !~ /^\[vdso\]\+0x/) {
				below = 0
			}
			if (f[i] ~ /^\[vdso\]\+0x/ && !(named && named < i))
				stray = 1
		}
		if (named && below) s += $NF
		if (stray) u += $NF
	} END { printf "%.1f %.1f", 100 * s / t, 100 * u / t }' "$1"
}
read -r share raw <<<"$(vdso_share "$NW_TMP/folded")"

check "stacks ending in the vdso's clock_gettime hold most samples"
awk -v s="$share" 'BEGIN { exit !(s >= 40) }' || {
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "the vdso's clock_gettime ends $share% of the stacks, expected >= 40%"
}
ok "$share%"

check "few frames stay [vdso]+0xOFFSET but below a named vdso function"
awk -v s="$raw" 'BEGIN { exit !(s < 10) }' || {
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "stacks with [vdso]+0xOFFSET frames no named vdso function called hold $raw%"
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
