#!/bin/bash
# debuginfod: a copy of tests/programs/burn stripped of everything (no
# DWARF, no symbol table) symbolizes through a debuginfod server named by
# DEBUGINFOD_URLS.  The server is tests/debuginfod-server.py on 127.0.0.1
# (local only; it stops by itself after a minute) serving the split-off
# debug file by build-id; libdw fetches it into DEBUGINFOD_CACHE_PATH.
# Skipped (77) when libdebuginfod.so.1 is not installed.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

if ! python3 -c 'import ctypes; ctypes.CDLL("libdebuginfod.so.1")' 2>/dev/null; then
	echo "SKIP: $NW_TEST: libdebuginfod.so.1 is not installed (Debian: libdebuginfod1)"
	exit 77
fi
unset NARWHAL_DEBUG_PATH DEBUGINFOD_URLS DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE
# The server is local: no proxy may stand in between.
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY
export no_proxy=127.0.0.1 NO_PROXY=127.0.0.1

srv_pid=
nw_stop_server() {
	local rc=$?

	if [[ -n $srv_pid ]]; then
		kill "$srv_pid" 2>/dev/null || true
		wait "$srv_pid" 2>/dev/null || true
	fi
	(exit "$rc")
	nw_cleanup
}
trap nw_stop_server EXIT

check "a fully stripped copy of burn; its debug file only on the server"
mkdir -p "$NW_TMP/bin" "$NW_TMP/srv"
cp "$P/burn" "$NW_TMP/bin/burn"
objcopy --only-keep-debug "$NW_TMP/bin/burn" "$NW_TMP/burn.debug"
strip --strip-all "$NW_TMP/bin/burn"
readelf -S "$NW_TMP/bin/burn" >"$NW_TMP/sections"
grep -Eq '\.debug_info|\.symtab' "$NW_TMP/sections" && fail "strip left DWARF or .symtab"
id=$(readelf -n "$NW_TMP/bin/burn" | awk '/Build ID:/ { print $3 }')
[[ $id =~ ^[0-9a-f]{6,}$ ]] || fail "the copy has no build-id ('$id')"
mv "$NW_TMP/burn.debug" "$NW_TMP/srv/$id.debug"
ok "build-id $id"

check "control: without DEBUGINFOD_URLS, burn_alpha is unknown (burn+0xOFFSET)"
nw_record_ok "$NW_TMP/plain" "$NW_TMP/bin/burn" alpha
nw_report "$NW_TMP/plain.flat" "$NW_TMP/plain" --flat
if grep -q 'burn_alpha' "$NW_TMP/plain.flat"; then
	nw_show "--flat" "$NW_TMP/plain.flat"
	fail "burn_alpha is known without the debug file: the control proves nothing"
fi
grep -Eq ' burn\+0x[0-9a-f]+' "$NW_TMP/plain.flat" || fail "no burn+0xOFFSET row"
ok "burn+0xOFFSET rows"

check "the local debuginfod server starts"
python3 "$NW_SRC/tests/debuginfod-server.py" --root "$NW_TMP/srv" \
	--port-file "$NW_TMP/port" --log "$NW_TMP/server.log" --lifetime 60 &
srv_pid=$!
for _ in $(seq 50); do
	[[ -s $NW_TMP/port ]] && break
	sleep 0.1
done
[[ -s $NW_TMP/port ]] || fail "the server wrote no port within 5 s"
port=$(cat "$NW_TMP/port")
ok "127.0.0.1:$port"

check "with DEBUGINFOD_URLS, burn_alpha comes back with burn.c:LINE"
DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$NW_TMP/cache \
	DEBUGINFOD_TIMEOUT=10 nw_record_ok "$NW_TMP/dfd" "$NW_TMP/bin/burn" alpha
nw_report "$NW_TMP/dfd.flat" "$NW_TMP/dfd" --flat
if ! grep -Eq ' burn_alpha \(burn\.c:[0-9]+\)' "$NW_TMP/dfd.flat"; then
	nw_show "--flat" "$NW_TMP/dfd.flat"
	nw_show "server log" "$NW_TMP/server.log"
	fail "no 'burn_alpha (burn.c:LINE)' row"
fi
self=$(nw_flat_self "$NW_TMP/dfd.flat" burn_alpha)
awk -v s="$self" 'BEGIN { exit !(s >= 80) }' || fail "burn_alpha self $self%, expected >= 80%"
ok "burn_alpha self $self%"

check "the server was asked for the build-id, and the client cached the file"
grep -q "^GET /buildid/$id/debuginfo 200\$" "$NW_TMP/server.log" || {
	nw_show "server log" "$NW_TMP/server.log"
	fail "no successful GET /buildid/$id/debuginfo"
}
[[ -s $NW_TMP/cache/$id/debuginfo ]] || fail "nothing in DEBUGINFOD_CACHE_PATH/$id/debuginfo"
ok "fetched and cached"

check "the report needs neither the server nor the binary later"
kill "$srv_pid" 2>/dev/null || true
wait "$srv_pid" 2>/dev/null || true
srv_pid=
rm -rf "${NW_TMP:?}/bin" "${NW_TMP:?}/cache"
nw_report "$NW_TMP/later.flat" "$NW_TMP/dfd" --flat
grep -Eq ' burn_alpha \(burn\.c:[0-9]+\)' "$NW_TMP/later.flat" || fail "the names are gone"
ok "still there"

pass
