#!/bin/bash
# JIT code: tests/programs/jit runs machine code it wrote into an anonymous
# page and names it jit_hot_loop in /tmp/perf-<pid>.map.  The measurement
# must name it (symbols.json), keep a copy of the map in jit/, and the
# report must work after the map in /tmp is gone.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

jit_pid=
nw_rm_map() {
	local rc=$?

	if [[ -n $jit_pid ]]; then
		rm -f "/tmp/perf-$jit_pid.map"
	fi
	(exit "$rc")
	nw_cleanup
}
trap nw_rm_map EXIT

d=$NW_TMP/jit.data
check "narwhal-record runs jit and exits 0"
nw_record "$d" "$P/jit"
jit_pid=$(awk '/^jit pid [0-9]+$/ { print $3 }' "$d.out")
if [[ $NW_RC -eq 77 ]]; then
	echo "SKIP: $NW_TEST: no machine code for this architecture in tests/programs/jit.c"
	exit 77
fi
[[ $NW_RC -eq 0 ]] || { nw_show "narwhal-record stderr" "$d.err"; fail "exit status $NW_RC"; }
[[ -n $jit_pid ]] || fail "jit printed no pid"
[[ -s /tmp/perf-$jit_pid.map ]] || fail "jit wrote no /tmp/perf-$jit_pid.map"
nw_check_measurement "$d"
ok "pid $jit_pid"

check "the measurement keeps the map as jit/perf-$jit_pid.map"
cmp -s "/tmp/perf-$jit_pid.map" "$d/jit/perf-$jit_pid.map" ||
	fail "$d/jit/perf-$jit_pid.map is missing or differs from /tmp/perf-$jit_pid.map"
ok "same bytes"

check "symbols.json names the anonymous code jit_hot_loop"
python3 - "$d/symbols.json" <<'PY' || fail "no jit_hot_loop entry of an anonymous module"
import json, sys
t = json.load(open(sys.argv[1]))
anon = {i for i, m in enumerate(t["modules"]) if m["path"] in ("//anon", "") or m["path"].startswith("[anon")}
sys.exit(0 if any(e["module"] in anon and e["frames"] and e["frames"][0]["function"] == "jit_hot_loop"
                  for e in t["entries"]) else 1)
PY
ok "found"

# Gone from /tmp: the report must not need it.
rm -f "/tmp/perf-$jit_pid.map"

check "--folded: stacks ending in jit_hot_loop hold most samples; jit_cold_stub never ran"
nw_report "$NW_TMP/folded" "$d" --folded
total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/folded")
((total > 0)) || fail "no samples"
n=$(awk '{ k = split($1, f, ";") } f[k] == "jit_hot_loop" { s += $NF } END { print s + 0 }' \
	"$NW_TMP/folded")
share=$(awk -v n="$n" -v t="$total" 'BEGIN { printf "%.1f", 100 * n / t }')
awk -v s="$share" 'BEGIN { exit !(s >= 80) }' || {
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "jit_hot_loop holds $share% of the samples, expected >= 80%"
}
if grep -q 'jit_cold_stub' "$NW_TMP/folded"; then
	fail "jit_cold_stub shows, but its code never ran: the lookup is not by range"
fi
ok "$share%"

check "--flat and --tree show jit_hot_loop"
nw_report "$NW_TMP/flat" "$d" --flat
nw_report "$NW_TMP/tree" "$d" --tree
self=$(nw_flat_self "$NW_TMP/flat" jit_hot_loop)
awk -v s="$self" 'BEGIN { exit !(s >= 80) }' || fail "jit_hot_loop self $self% in --flat"
grep -q 'jit_hot_loop' "$NW_TMP/tree" || fail "jit_hot_loop missing from --tree"
ok "self $self%"

pass
