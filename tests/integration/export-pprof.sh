#!/bin/bash
# --pprof FILE: a gzipped perftools.profiles.Profile that Google's pprof
# (Debian's golang-go) accepts, that protoc decodes with Debian's
# profile.proto into the same stacks and counts as --folded, whose
# "pprof -top" shows the same top functions and shares as --flat, and whose
# mappings, labels, period and duration are those of the measurement.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_need_tool protoc readelf
nw_go_env

d=$NW_TMP/pprof.data
nw_record_ok "$d" "$P/threads"
nw_report "$NW_TMP/folded" "$d" --folded
nw_report "$NW_TMP/flat" "$d" --flat
nw_report "$NW_TMP/out" "$d" --pprof "$NW_TMP/p.pb.gz"

check "--pprof writes the file and prints no view"
[[ -s $NW_TMP/p.pb.gz ]] || fail "--pprof wrote nothing"
[[ ! -s $NW_TMP/out ]] || fail "--pprof alone also printed a view"
gzip -t "$NW_TMP/p.pb.gz" || fail "the file is not gzip"
ok "$(stat -c %s "$NW_TMP/p.pb.gz") bytes, gzip"

check "go tool pprof -raw reads it (pprof checks the profile's validity)"
go tool pprof -raw "$NW_TMP/p.pb.gz" >"$NW_TMP/raw" 2>"$NW_TMP/raw.err" || {
	nw_show "pprof -raw" "$NW_TMP/raw.err"
	fail "go tool pprof -raw rejected the profile"
}
for want in '^PeriodType: cpu nanoseconds$' '^samples/count cpu/nanoseconds$' \
	'^Samples:$' '^Locations$' '^Mappings$' 'thread:\[worker-a\]'; do
	grep -Eq "$want" "$NW_TMP/raw" || {
		nw_show "pprof -raw" "$NW_TMP/raw"
		fail "pprof -raw shows no line matching $want"
	}
done
ok "sample types samples/count and cpu/nanoseconds, period type cpu, thread labels"

check "protoc decodes it with Debian's profile.proto into the stacks and counts of --folded"
nw_pprof_folded "$NW_TMP/p.pb.gz" 0 >"$NW_TMP/pprof.folded"
if ! diff -u "$NW_TMP/folded" "$NW_TMP/pprof.folded" >"$NW_TMP/folded.diff"; then
	nw_show "--folded vs the decoded pprof stacks" "$NW_TMP/folded.diff"
	fail "the pprof stacks differ from --folded"
fi
ok "$(wc -l <"$NW_TMP/folded") stacks, identical"

check "the cpu/nanoseconds values are the period metric (--folded --metric cpu-clock:period)"
nw_report "$NW_TMP/folded.period" "$d" --folded --metric cpu-clock:period
nw_pprof_folded "$NW_TMP/p.pb.gz" 1 >"$NW_TMP/pprof.period"
diff -q "$NW_TMP/folded.period" "$NW_TMP/pprof.period" >/dev/null ||
	fail "the pprof cpu values differ from the period metric"
ok "identical"

check "pprof -top shows the top functions and shares of --flat"
go tool pprof -top -sample_index=samples "$NW_TMP/p.pb.gz" >"$NW_TMP/top" 2>"$NW_TMP/top.err" ||
	fail "go tool pprof -top failed: $(head -c 300 "$NW_TMP/top.err")"
# pprof rows: flat flat% sum% cum cum% name; --flat rows: SELF% CUMUL% name (file:line).
awk '$2 ~ /%$/ && $5 ~ /%$/ && NF >= 6 { print $6, $2, $5 }' "$NW_TMP/top" | head -n 3 \
	>"$NW_TMP/top3.pprof"
awk '$1 ~ /^[0-9.]+%$/ && $2 ~ /^[0-9.]+%$/ { print $3, $1, $2 }' "$NW_TMP/flat" | head -n 3 \
	>"$NW_TMP/top3.flat"
[[ $(wc -l <"$NW_TMP/top3.pprof") -eq 3 ]] || fail "pprof -top shows fewer than 3 functions"
# The same three functions; equal shares may come in another order.
[[ $(cut -d' ' -f1 "$NW_TMP/top3.pprof" | sort) == "$(cut -d' ' -f1 "$NW_TMP/top3.flat" | sort)" ]] ||
	fail "pprof -top's top 3: $(cut -d' ' -f1 "$NW_TMP/top3.pprof" | tr '\n' ' '), --flat's: $(cut -d' ' -f1 "$NW_TMP/top3.flat" | tr '\n' ' ')"
sort "$NW_TMP/top3.pprof" >"$NW_TMP/top3.pprof.s"
sort "$NW_TMP/top3.flat" >"$NW_TMP/top3.flat.s"
paste -d' ' "$NW_TMP/top3.pprof.s" "$NW_TMP/top3.flat.s" | while read -r pn pflat pcum fn fself fcum; do
	[[ $pn == "$fn" ]] || fail "pprof -top lists $pn where --flat lists $fn"
	nw_near "${pflat%\%}" "${fself%\%}" 0.051 ||
		fail "$pn: pprof flat $pflat, --flat self $fself"
	nw_near "${pcum%\%}" "${fcum%\%}" 0.051 || fail "$pn: pprof cum $pcum, --flat cumul $fcum"
	echo "  ok: $pn: pprof flat $pflat cum $pcum, --flat self $fself cumul $fcum"
done
grep -q '^ *[0-9]* *[0-9.]*% .* spin_a$' "$NW_TMP/top" || fail "spin_a is not in pprof -top"

check "the program's mapping: its file, build-id and file offset (readelf), limit past its samples"
prog=$(readlink -f "$P/threads")
build_id=$(readelf -n "$prog" | awk '/Build ID:/ { print $3 }')
text_off=$(readelf -lW "$prog" | awk '$1 == "LOAD" && $(NF-1) == "E" { print $2; exit }')
text_off=$(printf '%x' "$((text_off))")
mline=$(grep -E "^ *[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ $prog " "$NW_TMP/raw" || true)
[[ -n $mline ]] || {
	nw_show "pprof -raw" "$NW_TMP/raw"
	fail "no mapping of $prog"
}
read -r mid range mfile mbuild flags <<<"$mline"
IFS=/ read -r mstart mlimit moff <<<"$range"
[[ $mid == 1: ]] || fail "the program is mapping $mid, expected the first (pprof's main binary)"
[[ $mbuild == "$build_id" ]] || fail "mapping build-id $mbuild, readelf says $build_id"
[[ $moff == "0x$text_off" ]] || fail "mapping file offset $moff, readelf's text segment 0x$text_off"
[[ $flags == *'[FN]'* && $flags == *'[LN]'* ]] || fail "mapping flags '$flags' lack [FN] or [LN]"
((mlimit > mstart)) || fail "mapping limit $mlimit is not above its start $mstart"
python3 - "$NW_TMP/raw" "${mid%:}" "$mstart" "$mlimit" <<'PY' || fail "a location lies outside the program's mapping"
import sys

raw, mid, start, limit = sys.argv[1], sys.argv[2], int(sys.argv[3], 16), int(sys.argv[4], 16)
inloc = False
n = 0
for line in open(raw):
    f = line.split()
    if line.startswith("Locations"):
        inloc = True
    elif line.startswith("Mappings"):
        inloc = False
    elif inloc and len(f) > 2 and f[2] == "M=" + mid:
        n += 1
        if not start <= int(f[1], 16) < limit:
            sys.exit("address outside its mapping: " + line.strip())
if not n:
    sys.exit("no location in the program's mapping")
PY
ok "$mfile $mbuild offset $moff $flags"

check "each sample carries its thread's name, tid and pid (compared with --threads)"
nw_report "$NW_TMP/threads" "$d" --threads
nw_threads_rows "$NW_TMP/threads" | while read -r pid tid samples _ name; do
	# The labels follow their sample's line (no pipe into grep -q: under
	# pipefail, a grep that stops reading at the first match fails it).
	awk -v want="thread:[$name]" '/^ +[0-9]+ +[0-9]+: / { s = 1; next }
		s && index($0, want) { found = 1 } /^[A-Z]/ { s = 0 } END { exit !found }' "$NW_TMP/raw" ||
		fail "no sample labelled thread:[$name]"
	grep -q "pid:\[$pid\] tid:\[$tid\]" "$NW_TMP/raw" || fail "no sample labelled tid $tid"
	n=$(go tool pprof -raw -tagfocus="tid=$tid" "$NW_TMP/p.pb.gz" 2>/dev/null |
		awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && $2 ~ /^[0-9]+:$/ { t += $1 }
			END { print t + 0 }')
	[[ $n -eq $samples ]] || fail "samples tagged tid=$tid: $n, --threads says $samples"
	echo "  ok: $name ($pid/$tid): $n samples"
done

check "time and duration are the manifest's"
start_ns=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["start_ns"], m["end_ns"] - m["start_ns"])' "$d/manifest.json")
read -r mstart_ns mdur_ns <<<"$start_ns"
pb_times=$(awk '/^time_nanos:/ { t = $2 } /^duration_nanos:/ { d = $2 } END { print t, d }' \
	"$NW_TMP/p.pb.gz.txt")
[[ $pb_times == "$mstart_ns $mdur_ns" ]] ||
	fail "time/duration $pb_times, the manifest says $mstart_ns $mdur_ns"
ok "start $mstart_ns, $mdur_ns ns"

check "--pprof with --tid keeps that thread only"
tid_a=$(nw_threads_rows "$NW_TMP/threads" | awk '$5 == "worker-a" { print $2 }')
nw_report "$NW_TMP/out" "$d" --tid "$tid_a" --pprof "$NW_TMP/a.pb.gz"
nw_report "$NW_TMP/folded.a" "$d" --tid "$tid_a" --folded
nw_pprof_folded "$NW_TMP/a.pb.gz" 0 >"$NW_TMP/pprof.a"
diff -q "$NW_TMP/folded.a" "$NW_TMP/pprof.a" >/dev/null || fail "--tid: stacks differ from --folded --tid"
grep -q 'spin_b' "$NW_TMP/pprof.a" && fail "--tid $tid_a still holds worker-b's spin_b"
ok "only worker-a ($tid_a)"

check "an unwritable path fails with a message naming it"
rc=0
"$NW_REPORT" "$d" --pprof "$NW_TMP/no/such/dir/p.pb.gz" >/dev/null 2>"$NW_TMP/err" || rc=$?
[[ $rc -ne 0 ]] || fail "writing to a missing directory succeeded"
grep -q "no/such/dir/p.pb.gz" "$NW_TMP/err" || fail "the message does not name the file: $(cat "$NW_TMP/err")"
ok "exit $rc: $(head -n 1 "$NW_TMP/err")"


check "narwhal-record --pprof FILE --flamegraph FILE write both exports at the end of the run"
d2=$NW_TMP/atexit.data
nw_record_ok "$d2" --pprof "$NW_TMP/rec.pb.gz" --flamegraph "$NW_TMP/rec.svg" "$P/threads"
grep -q "^narwhal-record: wrote $NW_TMP/rec.pb.gz $NW_TMP/rec.svg\$" "$d2.err" ||
	{ nw_show "stderr" "$d2.err"; fail "no 'wrote' line"; }
go tool pprof -raw "$NW_TMP/rec.pb.gz" >/dev/null 2>&1 || fail "pprof rejects the recorder's profile"
nw_report "$NW_TMP/rec.folded" "$d2" --folded
nw_pprof_folded "$NW_TMP/rec.pb.gz" 0 >"$NW_TMP/rec.pprof.folded"
diff -q "$NW_TMP/rec.folded" "$NW_TMP/rec.pprof.folded" >/dev/null ||
	fail "the recorder's pprof stacks differ from narwhal-report --folded"
xmllint --noout "$NW_TMP/rec.svg" || fail "the recorder's flame graph is not valid XML"
grep -q 'spin_a' "$NW_TMP/rec.svg" || fail "the recorder's flame graph has no spin_a"
ok "pprof equals --folded; the SVG is valid and names spin_a"

pass
