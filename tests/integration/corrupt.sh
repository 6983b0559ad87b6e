#!/bin/bash
# A truncated .csprof file: narwhal-report exits 1 with an error naming the
# file and the offset where reading failed, at every truncation point, and
# never crashes.  An intact copy of the measurement still reports.
# --threads reads the manifest alone and still prints the table.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/good.data
nw_record_ok "$d" "$P/burn" alpha
nw_check_measurement "$d"
nw_report "$d.threads" "$d" --threads
files=("$d"/*.csprof)
name=${files[0]##*/}
size=$(stat -c %s "${files[0]}")
((size > 100)) || fail "$name is only $size bytes"

for cut in 0 10 23 24 40 $((size / 2)) $((size - 9)) $((size - 1)); do
	check "$name truncated to $cut of $size bytes: exit 1, error names the file and an offset"
	bad=$NW_TMP/cut$cut.data
	rm -rf "$bad"
	cp -r "$d" "$bad"
	truncate -s "$cut" "$bad/$name"
	rc=0
	"$NW_REPORT" "$bad" --threads >"$bad.threads" 2>"$bad.err" || rc=$?
	[[ $rc -eq 0 ]] && cmp -s "$bad.threads" "$d.threads" || {
		nw_show "narwhal-report --threads stderr" "$bad.err"
		fail "--threads (the manifest alone) exited $rc or differs from the intact one's"
	}
	for view in --flat --tree --folded; do
		rc=0
		"$NW_REPORT" "$bad" "$view" >"$bad.out" 2>"$bad.err" || rc=$?
		if [[ $rc -ne 1 ]]; then
			nw_show "narwhal-report stderr" "$bad.err"
			fail "narwhal-report $view exited $rc, expected 1"
		fi
		grep -qF "$name" "$bad.err" || {
			nw_show "narwhal-report stderr" "$bad.err"
			fail "the error does not name $name"
		}
		grep -Eqi "offset[^0-9a-z]{0,3}(0x[0-9a-f]+|[0-9]+)|$name:[0-9]+" "$bad.err" || {
			nw_show "narwhal-report stderr" "$bad.err"
			fail "the error names no offset"
		}
	done
	ok "$(head -n 1 "$bad.err")"
done

check "a byte appended after the last tree is an error too"
bad=$NW_TMP/trailing.data
cp -r "$d" "$bad"
printf 'x' >>"$bad/$name"
rc=0
"$NW_REPORT" "$bad" --flat >"$bad.out" 2>"$bad.err" || rc=$?
[[ $rc -eq 1 ]] || fail "narwhal-report exited $rc for trailing garbage, expected 1"
grep -qF "$name" "$bad.err" || fail "the error does not name $name"
ok "$(head -n 1 "$bad.err")"

check "each byte of $name set to 0xff in turn: narwhal-report exits 0 or 1, never crashes"
python3 - "$d" "$name" "$NW_REPORT" "$NW_TMP/flip.data" <<'PY' || fail "narwhal-report crashed on a damaged file"
import os
import shutil
import subprocess
import sys

src, name, report, work = sys.argv[1:]
data = open(os.path.join(src, name), "rb").read()
shutil.copytree(src, work)
crashes = []
for pos in range(len(data)):
    if data[pos] == 0xFF:
        continue
    damaged = bytearray(data)
    damaged[pos] = 0xFF
    with open(os.path.join(work, name), "wb") as f:
        f.write(damaged)
    r = subprocess.run([report, work, "--flat"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=30)
    if r.returncode not in (0, 1):
        crashes.append("byte %d: exit %d %s" % (pos, r.returncode,
                                               r.stderr.decode(errors="replace")[:200]))
for c in crashes[:10]:
    print(c, file=sys.stderr)
sys.exit(1 if crashes else 0)
PY
ok "$size damaged copies, no crash"

check "the intact measurement still reports"
nw_report "$NW_TMP/flat" "$d" --flat
nw_flat_has "$NW_TMP/flat" burn_alpha || fail "burn_alpha missing from the intact report"
ok "burn_alpha shown"

pass
