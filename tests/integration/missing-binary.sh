#!/bin/bash
# A command that cannot run: exit 127 when it is not found, 126 when it is
# not executable, with a message naming it, and no crash of narwhal-record.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# expect_status STATUS DESCRIPTION COMMAND...
expect_status() {
	local want=$1 what=$2 d=$NW_TMP/run$RANDOM.data

	shift 2
	check "$what: exit $want with a message naming $1"
	nw_record "$d" "$@"
	if [[ $NW_RC -ne $want ]]; then
		nw_show "narwhal-record stderr" "$d.err"
		fail "$what: exit status $NW_RC, expected $want"
	fi
	grep -qF -- "${1##*/}" "$d.err" || {
		nw_show "narwhal-record stderr" "$d.err"
		fail "$what: the message does not name ${1##*/}"
	}
	grep -Eqi 'segmentation|core dumped|assert|sanitizer' "$d.err" &&
		fail "$what: narwhal-record crashed"
	ok "$(head -n 1 "$d.err")"
}

expect_status 127 "a path that does not exist" "$NW_TMP/no-such-program"
expect_status 127 "a name not found in PATH" narwhal-no-such-command-xyz
printf '#!/bin/sh\necho hi\n' >"$NW_TMP/not-executable"
chmod 644 "$NW_TMP/not-executable"
expect_status 126 "a file without execute permission" "$NW_TMP/not-executable"
expect_status 126 "a directory" "$NW_TMP"

check "a name found in PATH runs (PATH lookup works)"
d=$NW_TMP/path.data
PATH=$P:$PATH nw_record "$d" burn alpha
[[ $NW_RC -eq 0 ]] || fail "'burn alpha' through PATH exited $NW_RC, expected 0"
ok "status 0"

pass
