#!/bin/bash
# narwhal-report --stack-health.  tests/programs/nofp.c (-O2
# -fomit-frame-pointer) spends its time in qsort with a comparator several
# frames below main: --call-graph dwarf unwinds 99% of its samples to a
# thread entry, fp almost none, and the report names the module where fp
# chains stop with its remedy.  recurse.c recursing deeper than the depth
# limit gives truncated fp stacks, and deeper than the stack copy, dwarf
# stacks that stop with "raise the stack copy".
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# share REPORT LABEL : the share (without %) on the "LABEL:" line of a --stack-health report.
share() {
	awk -v l="$2:" '$1 == l { v = $3; sub(/%$/, "", v); print v; exit }' "$1"
}

# first_stop REPORT : "SAMPLES SHARE MODULE" of the first row of the table of stops.
first_stop() {
	awk '/^ SAMPLES  SHARE%  MODULE/ { getline; v = $2; sub(/%$/, "", v); print $1, v, $3; exit }' \
		"$1"
}

d=$NW_TMP/dwarf.data
check "--call-graph dwarf: nofp's stacks are 99% complete or more"
NW_RECORD_OPTS=(--call-graph dwarf)
nw_record_ok "$d" "$P/nofp"
nw_check_measurement "$d"
nw_report "$NW_TMP/dwarf.health" "$d" --stack-health
got=$(share "$NW_TMP/dwarf.health" Complete)
if [[ -z $got ]] || ! awk -v v="$got" 'BEGIN { exit !(v >= 99) }'; then
	nw_show "narwhal-report --stack-health" "$NW_TMP/dwarf.health"
	fail "complete share '$got', expected 99% or more"
fi
grep -q '^Call graph: dwarf (stack copy 16384 bytes' "$NW_TMP/dwarf.health" ||
	fail "the report does not say dwarf mode and its stack copy"
ok "$got% complete"

d=$NW_TMP/fp.data
check "--call-graph fp: nofp's stacks are mostly incomplete, and the report says where they stop"
NW_RECORD_OPTS=(--call-graph fp)
nw_record_ok "$d" "$P/nofp"
nw_report "$NW_TMP/fp.health" "$d" --stack-health
got=$(share "$NW_TMP/fp.health" Complete)
stopped=$(share "$NW_TMP/fp.health" Stopped)
read -r n pct module < <(first_stop "$NW_TMP/fp.health") || true
if [[ -z $got ]] || ! awk -v v="$got" -v s="$stopped" 'BEGIN { exit !(v < 20 && s > 80) }'; then
	nw_show "narwhal-report --stack-health" "$NW_TMP/fp.health"
	fail "complete share '$got', stopped '$stopped': expected a low complete share"
fi
case $module in
*/nofp)
	remedy="build with -fno-omit-frame-pointer" ;;
*/libc.so.6)
	remedy="record with --call-graph dwarf" ;;
*)
	nw_show "narwhal-report --stack-health" "$NW_TMP/fp.health"
	fail "the first stop is in '$module', expected nofp or libc" ;;
esac
awk -v m="$module" -v r="remedy: $remedy" '
	index($0, m) { getline; if (index($0, r)) found = 1; exit }
	END { exit !found }' "$NW_TMP/fp.health" || {
	nw_show "narwhal-report --stack-health" "$NW_TMP/fp.health"
	fail "no '$remedy' below the row of $module"
}
awk -v p="$pct" 'BEGIN { exit !(p >= 30) }' || fail "the first stop holds $pct% only"
ok "$got% complete; $pct% stop in $module ($remedy)"

check "--stack-health --tid selects threads like the other views"
tid=$(nw_threads_rows <("$NW_REPORT" "$d" --threads) | awk 'NR == 1 { print $2 }')
nw_report "$NW_TMP/tid.health" "$d" --stack-health --tid "$tid"
cmp -s "$NW_TMP/fp.health" "$NW_TMP/tid.health" ||
	fail "--tid $tid (the only thread) changed the report"
ok "same report"

limit=$(cat /proc/sys/kernel/perf_event_max_stack 2>/dev/null || echo 127)
d=$NW_TMP/deep.data
check "--call-graph fp, recursion deeper than the depth limit ($limit): about half truncated"
if ((limit > 400)); then
	echo "  skipped: kernel.perf_event_max_stack is $limit"
else
	NW_RECORD_OPTS=(--call-graph fp)
	nw_record_ok "$d" "$P/recurse" $((limit + 60))
	if ! grep -q '"max_stack"' "$d/manifest.json" && ((limit != 127)); then
		echo "  skipped: the manifest has no max_stack and the limit is not the default"
	else
		nw_report "$NW_TMP/deep.health" "$d" --stack-health
		got=$(share "$NW_TMP/deep.health" Truncated)
		c=$(share "$NW_TMP/deep.health" Complete)
		if ! nw_near "$got" 50 12 || ! nw_near "$c" 50 12; then
			nw_show "narwhal-report --stack-health" "$NW_TMP/deep.health"
			fail "truncated $got%, complete $c%: expected about 50% each"
		fi
		grep -q "remedy: raise the depth limit: sysctl kernel.perf_event_max_stack=" \
			"$NW_TMP/deep.health" || fail "no remedy for the truncated stacks"
		ok "$got% truncated, $c% complete"
	fi
fi

d=$NW_TMP/deepd.data
check "--call-graph dwarf,8192, recursion 600 deep: stops where the copy ends"
NW_RECORD_OPTS=(--call-graph dwarf,8192)
nw_record_ok "$d" "$P/recurse" 600
nw_report "$NW_TMP/deepd.health" "$d" --stack-health
read -r n pct module < <(first_stop "$NW_TMP/deepd.health") || true
if [[ $module != */recurse ]] || ! nw_near "$pct" 50 12; then
	nw_show "narwhal-report --stack-health" "$NW_TMP/deepd.health"
	fail "first stop: $pct% in '$module', expected about 50% in recurse"
fi
grep -q "remedy: raise the stack copy .*--call-graph dwarf,16384" "$NW_TMP/deepd.health" || {
	nw_show "narwhal-report --stack-health" "$NW_TMP/deepd.health"
	fail "no 'raise the stack copy' remedy"
}
ok "$pct% stop in recurse"

check "a stripped program (no .symtab, as Debian's /usr/bin tools): complete stacks ending in _start"
cp "$P/callers" "$NW_TMP/stripped"
strip --strip-all "$NW_TMP/stripped"
readelf -S "$NW_TMP/stripped" | grep -q '\.symtab' && fail "strip left a .symtab"
# dwarf (the default): libc's frames below main unwind to the entry point.
NW_RECORD_OPTS=(--call-graph dwarf)
nw_record_ok "$NW_TMP/stripped.data" "$NW_TMP/stripped" 0.5
nw_report "$NW_TMP/stripped.health" "$NW_TMP/stripped.data" --stack-health
got=$(share "$NW_TMP/stripped.health" Complete)
awk -v v="${got:-0}" 'BEGIN { exit !(v >= 95) }' || {
	nw_show "--stack-health of a stripped program" "$NW_TMP/stripped.health"
	fail "complete share '${got:-none}', expected 95% or more"
}
nw_report "$NW_TMP/stripped.folded" "$NW_TMP/stripped.data" --folded
n=$(awk '/^_start;__libc_start_main_impl;__libc_start_call_main;stripped\+0x/ { s += $NF }
	END { print s + 0 }' "$NW_TMP/stripped.folded")
t=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/stripped.folded")
((t > 0 && n * 100 >= t * 95)) || {
	nw_show "--folded of a stripped program" "$NW_TMP/stripped.folded"
	fail "$n of $t stacks start _start;...;stripped+0x..."
}
ok "$got% complete, _start at the root of $n of $t"

check "inside execve: samples named as such, not stops; the loader's stacks complete"
d=$NW_TMP/exec.data
nw_record_ok "$d" -F 4999 "$P/execbig"
nw_report "$NW_TMP/exec.health" "$d" --stack-health
inexec=$(awk '$1 == "In" && $2 == "execve:" { print $3; exit }' "$NW_TMP/exec.health")
stopped=$(share "$NW_TMP/exec.health" Stopped)
# Unmapping 400 MiB takes about 10 ms: dozens of samples at 4999 Hz, while
# the memset before it takes about a second, so their share is near 1 %
# and a count is what to assert.  The rest of the run (memset, the loader,
# /bin/true) unwinds to its entry.
[[ -n $inexec ]] && awk -v e="$inexec" -v s="$stopped" 'BEGIN { exit !(e >= 10 && s < 1) }' || {
	nw_show "--stack-health" "$NW_TMP/exec.health"
	fail "in execve: ${inexec:-none} samples, stopped $stopped%"
}
! grep -Eq '\((__GI_)?execve\): ' "$NW_TMP/exec.health" || {
	nw_show "--stack-health" "$NW_TMP/exec.health"
	fail "execve is listed as a stop"
}
grep -Eq '^Stopped: +0 ' "$NW_TMP/exec.health" && ! grep -q 'taken inside execve' "$d.err" && {
	nw_show "narwhal-record stderr" "$d.err"
	fail "the recorder's summary line counts execve's samples as stops"
}
ok "in execve $inexec samples, stopped $stopped%"

pass
