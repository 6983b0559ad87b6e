#!/bin/bash
# --speedscope FILE: valid against the JSON schema shipped in the speedscope
# npm package (checked with ajv), one sampled profile per thread holding the
# stacks and weights of --folded --per-thread (weights in nanoseconds for
# cpu-clock), the same without traces (written as the stacks are merged),
# and it opens in the speedscope app in headless Chromium.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=export-lib.sh
. "$(dirname "$0")/export-lib.sh"

nw_need_js

d=$NW_TMP/ss.data
nw_record_ok "$d" "$P/threads"
nw_report "$NW_TMP/out" "$d" --speedscope "$NW_TMP/p.json"
[[ -s $NW_TMP/p.json ]] || fail "--speedscope wrote nothing"
[[ ! -s $NW_TMP/out ]] || fail "--speedscope alone also printed a view"

check "valid against speedscope's file-format-schema.json; the samples are --folded --per-thread's"
node "$NW_JS/speedscope-check.mjs" "$NW_TMP/p.json" >"$NW_TMP/ss.folded" 2>"$NW_TMP/ss.err" || {
	nw_show "speedscope-check" "$NW_TMP/ss.err"
	fail "the file does not pass the speedscope schema check"
}
nw_report "$NW_TMP/folded" "$d" --folded --per-thread --metric cpu-clock:period
if ! diff -u "$NW_TMP/folded" "$NW_TMP/ss.folded" >"$NW_TMP/ss.diff"; then
	nw_show "--folded --per-thread vs speedscope" "$NW_TMP/ss.diff"
	fail "the speedscope samples differ from --folded --per-thread --metric cpu-clock:period"
fi
ok "$(wc -l <"$NW_TMP/ss.folded") stacks identical"

check "one profile per thread, in nanoseconds, the heaviest opened first"
python3 - "$NW_TMP/p.json" <<'PY' || fail "the profiles are not one per thread in nanoseconds"
import json
import sys

f = json.load(open(sys.argv[1]))
names = sorted(p["name"].split(" (")[0] for p in f["profiles"])
assert names == ["threads", "worker-a", "worker-b"], names
assert all(p["unit"] == "nanoseconds" for p in f["profiles"])
active = f["profiles"][f["activeProfileIndex"]]["name"]
assert active.startswith("worker-a "), active
assert all("name" in fr for fr in f["shared"]["frames"])
assert any(fr.get("file", "").endswith("threads.c") and fr.get("line") for fr in f["shared"]["frames"])
print("  ok:", ", ".join(p["name"] for p in f["profiles"]))
PY

check "the schema check itself rejects a broken file (a unit speedscope does not know)"
sed 's/"nanoseconds"/"fortnights"/' "$NW_TMP/p.json" >"$NW_TMP/bad.json"
if node "$NW_JS/speedscope-check.mjs" "$NW_TMP/bad.json" >/dev/null 2>"$NW_TMP/bad.err"; then
	fail "the checker accepted a file with unit fortnights"
fi
grep -q 'schema' "$NW_TMP/bad.err" || fail "the checker failed, but not on the schema: $(cat "$NW_TMP/bad.err")"
ok "rejected: $(head -n 1 "$NW_TMP/bad.err")"

check "--tid and --metric: one profile, weighed in samples (unit none)"
tid=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print([t["tid"] for t in m["threads"] if t["comm"] == "worker-b"][0])' "$d/manifest.json")
nw_report "$NW_TMP/out" "$d" --tid "$tid" --metric cpu-clock --speedscope "$NW_TMP/b.json"
node "$NW_JS/speedscope-check.mjs" "$NW_TMP/b.json" >"$NW_TMP/b.folded" || fail "the --tid file is invalid"
nw_report "$NW_TMP/folded.b" "$d" --tid "$tid" --folded --per-thread
diff -q "$NW_TMP/folded.b" "$NW_TMP/b.folded" >/dev/null || fail "--tid --metric: stacks differ"
python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); assert [p["unit"] for p in f["profiles"]] == ["none"]' \
	"$NW_TMP/b.json" || fail "--metric cpu-clock (samples): unit is not none"
ok "worker-b ($tid) only, counts"

check "without traces (each thread written as its stacks are merged): valid, the stacks of --folded --per-thread"
nw_record_ok "$NW_TMP/nt.data" --no-trace "$P/threads"
nw_report "$NW_TMP/out" "$NW_TMP/nt.data" --speedscope "$NW_TMP/nt.json"
node "$NW_JS/speedscope-check.mjs" "$NW_TMP/nt.json" >"$NW_TMP/nt.folded" 2>"$NW_TMP/nt.err" || {
	nw_show "speedscope-check" "$NW_TMP/nt.err"
	fail "the file without traces does not pass the speedscope schema check"
}
nw_report "$NW_TMP/folded.nt" "$NW_TMP/nt.data" --folded --per-thread --metric cpu-clock:period
diff -q "$NW_TMP/folded.nt" "$NW_TMP/nt.folded" >/dev/null || fail "without traces: stacks differ"
python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); assert f["profiles"][f["activeProfileIndex"]]["name"].startswith("worker-a ")' \
	"$NW_TMP/nt.json" || fail "without traces: the heaviest thread does not open first"
ok "$(wc -l <"$NW_TMP/nt.folded") stacks identical"

check "the speedscope app opens it (headless Chromium) and shows the heaviest thread"
nw_need_tool chromium
node "$NW_JS/browser-check.mjs" speedscope "$NW_TMP/p.json" "$NW_TMP/speedscope.png" \
	>"$NW_TMP/app.out" 2>"$NW_TMP/app.err" || {
	nw_show "browser-check" "$NW_TMP/app.err"
	fail "the speedscope app did not open the file"
}
grep -q 'worker-a (pid' "$NW_TMP/app.out" || fail "the app does not show worker-a: $(cat "$NW_TMP/app.out")"
grep -q ' - speedscope' "$NW_TMP/app.out" || fail "the app's title does not name the profile"
[[ -s $NW_TMP/speedscope.png ]] || fail "no screenshot"
ok "$(head -c 200 "$NW_TMP/app.out")"
nw_keep "$NW_TMP/speedscope.png" export-speedscope.png

pass
