#!/bin/bash
# The time dimension (issue 12), on tests/programs/phases: main runs
# phase_a then phase_b (0.6 s of CPU each); "sleeper" sleeps through phase
# A and works (sleeper_work) through phase B; "late" starts with phase B.
# Traces are recorded by default and compact; --time isolates each phase;
# --timeline shows the change of phase in the right column and the late
# thread in its own span; the speedscope export is in time order and the
# Trace Event export nests each thread's stacks over time, both read by
# the speedscope app; pprof carries the range; --no-trace turns traces off
# and --time then says why it cannot work; corrupt traces are refused with
# the file and the byte offset.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_need_js
nw_go_env

d=$NW_TMP/phases.data
check "narwhal-record runs phases with --off-cpu and writes one trace per thread"
nw_record_ok "$d" --off-cpu "$P/phases"
nw_check_measurement "$d"
ntraces=$(find "$d" -name '*.trace' | wc -l)
((ntraces == 3)) || fail "$ntraces trace files, expected 3 (main, sleeper, late)"
python3 - "$d" <<'PY' || fail "the manifest does not name the traces"
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
assert m["traced"] is True and m["clock_end_ns"] > m["clock_start_ns"] > 0
for t in m["threads"]:
    assert os.path.isfile(os.path.join(d, t["trace"])), t
PY
ok "3 traces"

check "traces cost 4 bytes or fewer per sample"
python3 - "$d" >"$NW_TMP/bytes" <<'PY' || fail "cannot size the traces"
import glob, json, os, struct, sys
d = sys.argv[1]
events = body = 0
for f in glob.glob(os.path.join(d, "*.trace")):
    b = open(f, "rb").read()
    magic, ver, tick, pid, tid, t0, n, size = struct.unpack("<8sIIIIQQQ", b[:48])
    assert magic == b"NWTRACE1" and size == len(b) - 48
    events += n
    body += size
print("%.2f %d" % (body / events, events))
PY
read -r per events <"$NW_TMP/bytes"
awk -v b="$per" 'BEGIN { exit !(b <= 4) }' || fail "$per bytes per event"
ok "$per bytes per event over $events events"

# The share of FUNC in a --flat report.
share() {
	nw_flat_self "$1" "$2"
}

check "--time 0,40%: phase A alone (phase_b under 2%)"
nw_report "$NW_TMP/a" "$d" --flat --time 0,40%
grep -q '^Time: 0.000 s to ' "$NW_TMP/a" || {
	nw_show "--flat --time 0,40%" "$NW_TMP/a"
	fail "no 'Time:' line saying which range is shown"
}
a=$(share "$NW_TMP/a" phase_a)
b=$(share "$NW_TMP/a" phase_b)
awk -v a="$a" -v b="$b" 'BEGIN { exit !(a >= 90 && b < 2) }' || {
	nw_show "--flat --time 0,40%" "$NW_TMP/a"
	fail "phase_a $a%, phase_b $b%"
}
ok "phase_a $a%, phase_b $b%"

check "--time 60%,100%: phase B, sleeper_work and late_work; phase_a under 2%"
nw_report "$NW_TMP/b" "$d" --flat --time 60%,100%
a=$(share "$NW_TMP/b" phase_a)
b=$(share "$NW_TMP/b" phase_b)
s=$(share "$NW_TMP/b" sleeper_work)
# Three threads share 2 CPUs here, in shares a loaded machine moves
# (sleeper_work had 18 % beside a second test suite): present is enough.
awk -v a="$a" -v b="$b" -v s="$s" 'BEGIN { exit !(a < 2 && b >= 20 && s >= 5) }' || {
	nw_show "--flat --time 60%,100%" "$NW_TMP/b"
	fail "phase_a $a%, phase_b $b%, sleeper_work $s%"
}
ok "phase_a $a%, phase_b $b%, sleeper_work $s%"

check "--time in seconds: two halves add up to the whole"
nw_report "$NW_TMP/all" "$d" --flat
end=$(python3 -c "import json,sys; m=json.load(open('$d/manifest.json')); print((m['clock_end_ns']-m['clock_start_ns'])/1e9)")
half=$(awk -v e="$end" 'BEGIN { printf "%.3f", e / 2 }')
nw_report "$NW_TMP/h1" "$d" --flat --time ",$half"
nw_report "$NW_TMP/h2" "$d" --flat --time "$half,"
n1=$(awk '/^Samples: / { print $2; exit }' "$NW_TMP/h1")
n2=$(awk '/^Samples: / { print $2; exit }' "$NW_TMP/h2")
na=$(awk '/^Samples: / { print $2; exit }' "$NW_TMP/all")
((n1 + n2 == na)) || fail "$n1 + $n2 samples in the halves, $na in all"
ok "$n1 + $n2 = $na"

check "--timeline: main changes phase in the middle, sleeper idle then busy, late starts late"
nw_report "$NW_TMP/tl" "$d" --timeline=functions --width 40
# Rows: PROCESS TID THREAD |cells| BUSY%; the letters' legend below.
letter_of() {
	awk -v f="$2" '$3 == f && length($1) == 1 { print $1; exit }' "$1"
}
cells_of() {
	awk -v t="$2" '$3 == t { s = $0; sub(/^[^|]*\|/, "", s); sub(/\|.*$/, "", s); print s; exit }' "$1"
}
la=$(letter_of "$NW_TMP/tl" phase_a)
lb=$(letter_of "$NW_TMP/tl" phase_b)
main=$(cells_of "$NW_TMP/tl" phases)
sleeper=$(cells_of "$NW_TMP/tl" sleeper)
late=$(cells_of "$NW_TMP/tl" late)
[[ -n $la && -n $lb && ${#main} -eq 40 ]] || {
	nw_show "--timeline=functions" "$NW_TMP/tl"
	fail "no letters for phase_a and phase_b, or no 40-column row for main"
}
# The last column of phase_a and the first of phase_b: next to each other, near the middle.
last_a=$(awk -v s="$main" -v l="$la" 'BEGIN { for (i = length(s); i > 0; i--) if (substr(s, i, 1) == l) { print i; exit } }')
first_b=$(awk -v s="$main" -v l="$lb" 'BEGIN { for (i = 1; i <= length(s); i++) if (substr(s, i, 1) == l) { print i; exit } }')
((first_b > last_a && first_b - last_a <= 2 && first_b >= 12 && first_b <= 30)) || {
	nw_show "--timeline=functions" "$NW_TMP/tl"
	fail "main: phase_a to column $last_a, phase_b from column $first_b (expected adjacent, mid-run)"
}
# late: blank (not alive) before phase B.
lead=${late%%[! ]*}
((${#lead} >= first_b - 3)) || fail "late is shown alive from column $((${#lead} + 1)), phase B starts at $first_b"
# sleeper: its work only in the second half.
ls=$(letter_of "$NW_TMP/tl" sleeper_work)
first_s=$(awk -v s="$sleeper" -v l="$ls" 'BEGIN { for (i = 1; i <= length(s); i++) if (substr(s, i, 1) == l) { print i; exit } }')
((first_s >= first_b - 3)) || fail "sleeper works from column $first_s, before phase B (column $first_b)"
ok "phase_a to column $last_a, phase_b from $first_b; late from $((${#lead} + 1)); sleeper from $first_s"

check "--timeline: busy cells, and the sleeper blocked (_) through phase A"
nw_report "$NW_TMP/busy" "$d" --timeline --width 40
main=$(cells_of "$NW_TMP/busy" phases)
sleeper=$(cells_of "$NW_TMP/busy" sleeper)
# main computes all along: busy levels.  On a machine busy with other work
# a column where it mostly waited for a CPU reads '_' (preemption is
# off-CPU time, as in offcputime): most of its columns still show work.
busy=$(tr -cd '#0-9.' <<<"$main" | wc -c)
[[ $main =~ ^[#0-9._]+$ ]] && ((busy * 3 >= ${#main} * 2)) ||
	fail "main's cells are not mostly busy levels: '$main'"
blocked=$(tr -cd '_' <<<"${sleeper:0:$((first_b - 2))}" | wc -c)
((blocked >= (first_b - 2) * 2 / 3)) || {
	nw_show "--timeline" "$NW_TMP/busy"
	fail "sleeper blocked in $blocked of the first $((first_b - 2)) columns"
}
ok "sleeper '_' in $blocked columns"

check "speedscope: each thread's samples in time order; the app opens it in Time Order"
nw_report "$NW_TMP/ss.out" "$d" --speedscope "$NW_TMP/p.json"
node "$NW_JS/speedscope-check.mjs" "$NW_TMP/p.json" >"$NW_TMP/ss.folded" 2>"$NW_TMP/ss.err" || {
	nw_show "speedscope-check" "$NW_TMP/ss.err"
	fail "the speedscope file is invalid"
}
python3 - "$NW_TMP/p.json" <<'PY' || fail "main's samples are not phase_a then phase_b"
import json, sys
d = json.load(open(sys.argv[1]))
names = [f["name"] for f in d["shared"]["frames"]]
main = next(p for p in d["profiles"] if p["name"].startswith("phases "))
# Each sample's phase (the stack through phase_a or phase_b; kernel frames
# may stand below it) with its weight: consecutive samples of one stack are
# one sample of their summed weight.
order = []
for s, w in zip(main["samples"], main["weights"]):
    phase = [names[f] for f in s if names[f] in ("phase_a", "phase_b")]
    if phase:
        order.append((phase[0], w))
switch = [p for p, _ in order].index("phase_b")
# Every phase_a sample comes before every phase_b sample, and phase_a holds
# a quarter to three quarters of their weight.
assert "phase_a" not in [p for p, _ in order[switch:]], "phase_a after phase_b"
wa = sum(w for p, w in order[:switch])
total = sum(w for _, w in order)
assert total / 4 < wa < 3 * total / 4, (wa, total)
assert all(w == 1001001 or w > 0 for w in main["weights"])
PY
node "$NW_JS/browser-check.mjs" speedscope "$NW_TMP/p.json" "$NW_TMP/ss-time.png" "Time Order" \
	>"$NW_TMP/app.out" 2>"$NW_TMP/app.err" || {
	nw_show "browser-check" "$NW_TMP/app.err"
	fail "the speedscope app did not open the file in Time Order"
}
nw_keep "$NW_TMP/ss-time.png" time-speedscope.png
ok "valid; screenshot in meson-logs/time-speedscope.png"

check "--chrome-trace: one track per thread, stacks nested over time, off-CPU intervals; speedscope imports it"
nw_report "$NW_TMP/tr.out" "$d" --chrome-trace "$NW_TMP/trace.json"
python3 - "$NW_TMP/trace.json" <<'PY' || fail "the Trace Event file is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert sorted(names.values()) == ["late", "phases", "sleeper"], names
x = [e for e in ev if e["ph"] == "X"]
assert all(e["dur"] >= 0 for e in x)
off = [e for e in x if e["cat"] == "off-cpu"]
assert off, "no off-CPU interval"
# The sleeper's first long off-CPU interval: its sleep, about 0.6 s.
sleeper = [t for t, n in names.items() if n == "sleeper"][0]
longest = max(e["dur"] for e in off if (e["pid"], e["tid"]) == sleeper)
assert 400000 < longest < 900000, longest
# Per thread, events nest: sorted by start, each lies inside the one open around it.
for key in names:
    stack = []
    for e in sorted((e for e in x if (e["pid"], e["tid"]) == key), key=lambda e: (e["ts"], -e["dur"])):
        while stack and stack[-1] <= e["ts"]:
            stack.pop()
        assert not stack or e["ts"] + e["dur"] <= stack[-1] + 1e-3, (e, stack[-1])
        stack.append(e["ts"] + e["dur"])
# main's phase_a ends before its phase_b begins.
main = [k for k, n in names.items() if n == "phases"][0]
a = [e for e in x if (e["pid"], e["tid"]) == main and e["name"] == "phase_a"]
b = [e for e in x if (e["pid"], e["tid"]) == main and e["name"] == "phase_b"]
assert max(e["ts"] + e["dur"] for e in a) <= min(e["ts"] for e in b) + 1
PY
node "$NW_JS/browser-check.mjs" speedscope "$NW_TMP/trace.json" "$NW_TMP/trace.png" "Time Order" \
	>"$NW_TMP/tapp.out" 2>"$NW_TMP/tapp.err" || {
	nw_show "browser-check" "$NW_TMP/tapp.err"
	fail "the speedscope app did not import the Trace Event file"
}
grep -q 'phases (pid' "$NW_TMP/tapp.out" || fail "the app does not name the thread tracks"
nw_keep "$NW_TMP/trace.png" time-chrome-trace.png
ok "nested; screenshot in meson-logs/time-chrome-trace.png"

check "pprof of a range carries its start and length (go tool pprof reads them)"
nw_report "$NW_TMP/pp.out" "$d" --time 0.5,1 --pprof "$NW_TMP/r.pb.gz"
go tool pprof -raw "$NW_TMP/r.pb.gz" >"$NW_TMP/r.raw" 2>"$NW_TMP/r.err" || {
	nw_show "go tool pprof" "$NW_TMP/r.err"
	fail "pprof rejects the profile of a range"
}
grep -Eq '^Duration: 500ms?$' "$NW_TMP/r.raw" || {
	nw_show "go tool pprof -raw" "$NW_TMP/r.raw"
	fail "the duration is not the 500 ms of the range"
}
python3 - "$d" "$NW_TMP/r.raw" <<'PY' || fail "the profile's time is not the start of the range"
import json, re, sys
from datetime import datetime, timezone
m = json.load(open(sys.argv[1] + "/manifest.json"))
line = next(l for l in open(sys.argv[2]) if l.startswith("Time: "))
# "Time: 2026-11-24 12:51:17.003527535 +0000 UTC": to microseconds.
t = re.match(r"Time: (\S+ \d+:\d+:\d+)(?:\.(\d+))? \+0000 UTC", line)
sec = datetime.strptime(t.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
ns = int(sec) * 10**9 + int((t.group(2) or "0").ljust(9, "0")[:9])
want = m["start_ns"] + 500 * 10**6
assert abs(ns - want) < 10**6, (ns, want)
PY
ok "$(grep -E '^(Time|Duration):' "$NW_TMP/r.raw" | tr '\n' ' ')"

check "--no-trace: no trace files, and --time says why it cannot work"
nw_record_ok "$NW_TMP/nt.data" --no-trace "$P/phases"
[[ -z $(find "$NW_TMP/nt.data" -name '*.trace') ]] || fail "trace files with --no-trace"
rc=0
"$NW_REPORT" "$NW_TMP/nt.data" --flat --time 0,50% >/dev/null 2>"$NW_TMP/nt.err" || rc=$?
[[ $rc -ne 0 ]] && grep -q -- '--no-trace' "$NW_TMP/nt.err" || {
	nw_show "stderr" "$NW_TMP/nt.err"
	fail "--time on a --no-trace measurement: exit $rc without naming --no-trace"
}
ok "$(head -1 "$NW_TMP/nt.err")"

check "corrupt and truncated traces: a clear error naming the file and the byte offset"
t=$(find "$d" -name 'sleeper-*.trace')
for how in truncate node; do
	cp -r "$d" "$NW_TMP/bad-$how.data"
	bt="$NW_TMP/bad-$how.data/$(basename "$t")"
	case $how in
	truncate) truncate -s -7 "$bt" ;;
	node) python3 - "$bt" <<'PY' ;;
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
# The first event's head: a node 2^20 away from the root (and tag 0).
b[48:48] = bytes([0x80, 0x80, 0x80, 0x04, 0x00])
import struct
n, size = struct.unpack("<QQ", b[32:48])
b[32:48] = struct.pack("<QQ", n + 1, size + 5)
open(p, "wb").write(b)
PY
	esac
	rc=0
	"$NW_REPORT" "$NW_TMP/bad-$how.data" --timeline >/dev/null 2>"$NW_TMP/bad-$how.err" || rc=$?
	[[ $rc -eq 1 ]] && grep -q "$(basename "$t"): corrupt trace at byte [0-9]" "$NW_TMP/bad-$how.err" || {
		nw_show "stderr ($how)" "$NW_TMP/bad-$how.err"
		fail "$how: exit $rc, no error naming $(basename "$t") and a byte offset"
	}
	ok "$how: $(head -1 "$NW_TMP/bad-$how.err")"
done

pass
