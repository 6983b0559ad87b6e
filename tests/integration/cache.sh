#!/bin/bash
# The run cache (issue 24): kernel symbols per kernel build and boot,
# symbolization results per file build-id, uncompressed copies of
# compressed debug files (as Debian's -dbg packages ship them), in
# NARWHAL_CACHE_DIR.  A cache may
# only make a run cheaper, never change what it records: runs with a cold
# cache, a warm one, --no-cache and a corrupt cache give the same frames
# for every address they share.  --no-cache leaves the cache alone; two
# runs at once share it.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

cache=$NW_TMP/cache
export NARWHAL_CACHE_DIR=$cache
# The kernel's frames and libc's (with its separate, compressed debug
# info): tests/programs/syscalls spends its time in write(2) and in page
# faults, through the C library.
prog=("$P/syscalls" 0.3)

# same A B [MIN] : every (module, build-id, address) of symbols.json A that
# B also holds has the same frames in both, and they share MIN (default
# 10) or more; prints how many were compared, of the kernel, of libc.
same() {
	python3 - "$1/symbols.json" "$2/symbols.json" "${3:-10}" <<'PY'
import json, sys

def table(path):
    t = json.load(open(path))
    mods = [(m["path"], m.get("build_id", "")) for m in t["modules"]]
    return {(mods[e["module"]], e["addr"]): e["frames"] for e in t["entries"]}

a, b = table(sys.argv[1]), table(sys.argv[2])
common = a.keys() & b.keys()
bad = [k for k in common if a[k] != b[k]]
for k in bad[:5]:
    print("  differs at %s %s: %s vs %s" % (k[0][0], k[1], a[k], b[k]), file=sys.stderr)
kernel = sum(1 for k in common if k[0][0] == "[kernel.kallsyms]")
libc = sum(1 for k in common if "libc.so" in k[0][0])
print(len(common), kernel, libc)
if len(common) < int(sys.argv[3]):
    print("  only %d addresses in common" % len(common), file=sys.stderr)
sys.exit(1 if bad or len(common) < int(sys.argv[3]) else 0)
PY
}

check "a cold cache: the run fills it"
nw_record_ok "$NW_TMP/cold.data" "${prog[@]}"
ls "$cache" >"$NW_TMP/files"
grep -q '^kallsyms-' "$NW_TMP/files" && grep -q '^sym-' "$NW_TMP/files" || {
	nw_show "cache files" "$NW_TMP/files"
	fail "no kallsyms-* and sym-* files in $cache"
}
ok "$(wc -l <"$NW_TMP/files") files"

check "a warm cache gives the same frames as the cold one and as --no-cache"
nw_record_ok "$NW_TMP/warm.data" "${prog[@]}"
nw_record_ok "$NW_TMP/none.data" --no-cache "${prog[@]}"
read -r n k c <<<"$(same "$NW_TMP/cold.data" "$NW_TMP/warm.data" 10 2>"$NW_TMP/same")" ||
	fail "cold and warm runs differ: $(head -c 600 "$NW_TMP/same")"
((k > 0 && c > 0)) || fail "the runs share no kernel ($k) or libc ($c) addresses to compare"
read -r n2 _ _ <<<"$(same "$NW_TMP/warm.data" "$NW_TMP/none.data" 10 2>"$NW_TMP/same")" ||
	fail "warm and --no-cache runs differ: $(head -c 600 "$NW_TMP/same")"
ok "$n addresses shared cold/warm ($k kernel, $c libc), $n2 warm/--no-cache"

check "the warm run found libc's names and lines in the cache"
NW_RC=0
"$NW_RECORD" -v -e cpu-clock -o "$NW_TMP/v.data" "${prog[@]}" >/dev/null 2>"$NW_TMP/v.err" || NW_RC=$?
[[ $NW_RC -eq 0 ]] || fail "narwhal-record -v exited $NW_RC"
hits=$(awk '/symbol cache sym-/ { s += $(NF - 3) } END { print s + 0 }' "$NW_TMP/v.err")
((hits > 0)) || {
	nw_show "narwhal-record -v" "$NW_TMP/v.err"
	fail "no symbolization result came from the cache"
}
ok "$hits addresses from the cache"

check "--no-cache neither reads nor writes the cache"
before=$(cd "$cache" && find . -type f -printf '%p %s %T@\n' | sort)
nw_record_ok "$NW_TMP/none2.data" --no-cache "${prog[@]}"
after=$(cd "$cache" && find . -type f -printf '%p %s %T@\n' | sort)
[[ $before == "$after" ]] || fail "--no-cache changed $cache"
ok "unchanged"

check "a corrupt cache is not used: the same frames as --no-cache"
for f in "$cache"/*; do
	head -c 100 /dev/urandom >"$f"
done
nw_record_ok "$NW_TMP/corrupt.data" "${prog[@]}"
read -r n _ _ <<<"$(same "$NW_TMP/corrupt.data" "$NW_TMP/none.data")" ||
	fail "a run over a corrupt cache differs from --no-cache"
ok "$n addresses shared"

check "a separate debug file with compressed sections: used through an uncompressed copy"
# burn's DWARF split off into a build-id tree, zlib-compressed (as
# Debian's -dbg packages ship theirs), the program itself stripped.
mkdir -p "$NW_TMP/bin"
cp "$P/burn" "$NW_TMP/bin/burn"
id=$(readelf -n "$NW_TMP/bin/burn" | awk '/Build ID:/ { print $3 }')
[[ $id =~ ^[0-9a-f]{6,}$ ]] || fail "burn has no build-id ('$id')"
dbg=$NW_TMP/debug/.build-id/${id:0:2}/${id:2}.debug
mkdir -p "$(dirname "$dbg")"
objcopy --only-keep-debug --compress-debug-sections=zlib "$NW_TMP/bin/burn" "$dbg"
strip --strip-debug "$NW_TMP/bin/burn"
readelf -S -W "$dbg" >"$NW_TMP/dbg-sections"
grep -E '\.debug_info .* C ' "$NW_TMP/dbg-sections" >/dev/null ||
	fail "objcopy left .debug_info uncompressed"
rm -rf "$cache"
export NARWHAL_DEBUG_PATH=$NW_TMP/debug
nw_record_ok "$NW_TMP/zcold.data" "$NW_TMP/bin/burn" alpha
ls "$cache" | grep -q '^dbg-' || fail "no uncompressed copy (dbg-*) of the debug file in $cache"
copy=$(ls "$cache"/dbg-* | head -1)
readelf -S -W "$copy" >"$NW_TMP/copy-sections"
! grep -E '\.debug_[a-z]+ .* C ' "$NW_TMP/copy-sections" >/dev/null ||
	fail "the copy $copy still has compressed sections"
nw_record_ok "$NW_TMP/zwarm.data" "$NW_TMP/bin/burn" alpha
nw_record_ok "$NW_TMP/znone.data" --no-cache "$NW_TMP/bin/burn" alpha
nw_report "$NW_TMP/zwarm.flat" "$NW_TMP/zwarm.data" --flat
grep -Eq 'burn_alpha \(burn\.c:[0-9]+\)' "$NW_TMP/zwarm.flat" || {
	nw_show "--flat" "$NW_TMP/zwarm.flat"
	fail "no file:line for burn_alpha with the copy"
}
# burn's loop: a few addresses of its own, some of libc and the kernel.
same "$NW_TMP/zcold.data" "$NW_TMP/znone.data" 3 >/dev/null 2>"$NW_TMP/zsame" ||
	fail "the copy's frames differ from --no-cache's: $(head -c 600 "$NW_TMP/zsame")"
same "$NW_TMP/zwarm.data" "$NW_TMP/znone.data" 3 >/dev/null 2>"$NW_TMP/zsame" ||
	fail "a warm run differs from --no-cache: $(head -c 600 "$NW_TMP/zsame")"
unset NARWHAL_DEBUG_PATH
ok "$(basename "$copy"), burn_alpha with file:line, the same frames as --no-cache"

check "two runs at once share the cache"
rm -rf "$cache"
"$NW_RECORD" -q -e cpu-clock -o "$NW_TMP/p1.data" "${prog[@]}" 2>"$NW_TMP/p1.err" &
p1=$!
"$NW_RECORD" -q -e cpu-clock -o "$NW_TMP/p2.data" "${prog[@]}" 2>"$NW_TMP/p2.err" &
p2=$!
wait "$p1" || fail "the first of two runs at once failed: $(cat "$NW_TMP/p1.err")"
wait "$p2" || fail "the second of two runs at once failed: $(cat "$NW_TMP/p2.err")"
same "$NW_TMP/p1.data" "$NW_TMP/none.data" >/dev/null || fail "a run at once differs from --no-cache"
! ls -A "$cache" | grep -q '^\.' || fail "temporary files left in $cache: $(ls -A "$cache")"
ok "both complete, no temporary file left"

pass
