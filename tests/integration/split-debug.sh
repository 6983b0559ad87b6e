#!/bin/bash
# Separate debug info: a copy of tests/programs/burn with its DWARF split
# off (objcopy --only-keep-debug, strip --strip-debug) has no file:line by
# itself; it gets them back from a build-id tree under NARWHAL_DEBUG_PATH,
# and from a .gnu_debuglink file next to it or in its .debug/ directory.
# With libc6-dbg installed, libc's own functions show file:line too.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

unset NARWHAL_DEBUG_PATH DEBUGINFOD_URLS

# flat_row DIR : the --flat row of burn_alpha in the measurement DIR.
flat_row() {
	nw_report "$1.flat" "$1" --flat
	awk '/ burn_alpha( |$)/ { print; exit }' "$1.flat"
}

check "a stripped copy of burn and its split-off debug file"
mkdir -p "$NW_TMP/bin"
cp "$P/burn" "$NW_TMP/bin/burn"
objcopy --only-keep-debug "$NW_TMP/bin/burn" "$NW_TMP/burn.debug"
strip --strip-debug "$NW_TMP/bin/burn"
# Section lists through files: grep -q ending early would fail the pipe under pipefail.
readelf -S "$NW_TMP/bin/burn" >"$NW_TMP/sections"
readelf -S "$NW_TMP/burn.debug" >"$NW_TMP/debug-sections"
grep -q '\.debug_info' "$NW_TMP/sections" && fail "strip left .debug_info in the copy"
grep -q '\.debug_info' "$NW_TMP/debug-sections" || fail "the debug file has no DWARF"
id=$(readelf -n "$NW_TMP/bin/burn" | awk '/Build ID:/ { print $3 }')
[[ $id =~ ^[0-9a-f]{6,}$ ]] || fail "the copy has no build-id ('$id')"
ok "build-id $id"

check "control: without its debug file, burn_alpha has no file:line"
nw_record_ok "$NW_TMP/plain" "$NW_TMP/bin/burn" alpha
row=$(flat_row "$NW_TMP/plain")
[[ -n $row ]] || { nw_show "--flat" "$NW_TMP/plain.flat"; fail "burn_alpha is missing"; }
[[ $row != *"(burn.c:"* ]] || fail "file:line without the debug file: '$row'"
ok "$row"

libc_dbg=0
if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' libc6-dbg 2>/dev/null) == ii* ]]; then
	libc_dbg=1
fi

check "build-id tree under NARWHAL_DEBUG_PATH gives file:line back"
root=$NW_TMP/root/usr/lib/debug
mkdir -p "$root/.build-id/${id:0:2}"
cp "$NW_TMP/burn.debug" "$root/.build-id/${id:0:2}/${id:2}.debug"
NARWHAL_DEBUG_PATH=$NW_TMP/nowhere:$root nw_record_ok "$NW_TMP/buildid" "$NW_TMP/bin/burn" alpha
row=$(flat_row "$NW_TMP/buildid")
if [[ ! $row =~ burn_alpha\ \(burn\.c:[0-9]+\) ]]; then
	nw_show "--flat" "$NW_TMP/buildid.flat"
	fail "no file:line for burn_alpha from the build-id tree: '$row'"
fi
ok "$row"
if ((libc_dbg)); then
	check "with NARWHAL_DEBUG_PATH set, libc6-dbg still gives libc's functions file:line"
	grep -Eq '__libc_start_call_main \(libc_start_call_main\.h:[0-9]+\)' "$NW_TMP/buildid.flat" || {
		nw_show "--flat" "$NW_TMP/buildid.flat"
		fail "no __libc_start_call_main (libc_start_call_main.h:LINE) row"
	}
	ok "__libc_start_call_main has file:line"
else
	echo "  skip: libc6-dbg is not installed (scripts/setup.sh installs it)"
fi

check ".gnu_debuglink: the debug file next to the binary"
mkdir -p "$NW_TMP/dl"
cp "$NW_TMP/bin/burn" "$NW_TMP/dl/burn"
cp "$NW_TMP/burn.debug" "$NW_TMP/dl/burn-split.debug"
objcopy --add-gnu-debuglink="$NW_TMP/dl/burn-split.debug" "$NW_TMP/dl/burn"
readelf -S "$NW_TMP/dl/burn" >"$NW_TMP/dl-sections"
grep -q '\.gnu_debuglink' "$NW_TMP/dl-sections" || fail "objcopy added no .gnu_debuglink"
nw_record_ok "$NW_TMP/debuglink" "$NW_TMP/dl/burn" alpha
row=$(flat_row "$NW_TMP/debuglink")
if [[ ! $row =~ burn_alpha\ \(burn\.c:[0-9]+\) ]]; then
	nw_show "--flat" "$NW_TMP/debuglink.flat"
	fail "no file:line for burn_alpha through .gnu_debuglink: '$row'"
fi
ok "$row"

check ".gnu_debuglink: the debug file in the binary's .debug/ directory"
mkdir -p "$NW_TMP/dl/.debug"
mv "$NW_TMP/dl/burn-split.debug" "$NW_TMP/dl/.debug/burn-split.debug"
nw_record_ok "$NW_TMP/debugdir" "$NW_TMP/dl/burn" alpha
row=$(flat_row "$NW_TMP/debugdir")
[[ $row =~ burn_alpha\ \(burn\.c:[0-9]+\) ]] ||
	fail "no file:line for burn_alpha from .debug/: '$row'"
ok "$row"

if ((libc_dbg)); then
	check "libc6-dbg: libc's static functions have names and file:line by default"
	grep -Eq '__libc_start_call_main \(libc_start_call_main\.h:[0-9]+\)' "$NW_TMP/plain.flat" || {
		nw_show "--flat" "$NW_TMP/plain.flat"
		fail "no __libc_start_call_main (libc_start_call_main.h:LINE) row"
	}
	ok "yes"
fi

pass
