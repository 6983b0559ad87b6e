#!/bin/bash
# The command lines of both tools: --help, --version, bad options, the
# default event (cycles, else cpu-clock with one notice line), the default
# directory narwhal.data and its rotation to narwhal.data.old, "--", and
# the sampling rate options -F and -c.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

version=$(sed -n "s/^ *version: *'\\([^']*\\)'.*/\\1/p" "$NW_SRC/meson.build" | head -n 1)
[[ -n $version ]] || fail "cannot read the project version from $NW_SRC/meson.build"

for tool in "$NW_RECORD" "$NW_REPORT"; do
	t=${tool##*/}
	check "$t --help: exit 0, a usage text on stdout"
	rc=0
	"$tool" --help >"$NW_TMP/help" 2>&1 || rc=$?
	[[ $rc -eq 0 ]] || fail "$t --help exited $rc"
	grep -qi usage "$NW_TMP/help" || fail "$t --help prints no usage line"
	ok "$(head -n 1 "$NW_TMP/help")"

	check "$t --version: exit 0, prints $version"
	rc=0
	"$tool" --version >"$NW_TMP/version" 2>&1 || rc=$?
	[[ $rc -eq 0 ]] || fail "$t --version exited $rc"
	grep -qF "$version" "$NW_TMP/version" || fail "$t --version does not print $version"
	ok "$(head -n 1 "$NW_TMP/version")"

	check "$t --no-such-option: an error exit (1..125) with a message"
	rc=0
	"$tool" --no-such-option >"$NW_TMP/bad" 2>&1 || rc=$?
	((rc != 0 && rc < 126)) || fail "$t --no-such-option exited $rc"
	[[ -s $NW_TMP/bad ]] || fail "$t --no-such-option printed nothing"
	ok "exit $rc"
done

# One table, three texts (doc/STYLE: getopt's long options, --help and the
# man page's list agree): every option of a tool's option table (the long
# options and their short letters, or getopt's short ones) is named in its
# --help option column and in a tag of its man page's OPTIONS list, and
# neither names one the table does not take.  narwhal-report's table makes
# getopt's options and --help both; this holds its man page to it.
for t in narwhal-record narwhal-report; do
	check "$t: the option table, --help and doc/$t.1 name the same options"
	"$NW_BUILD/tools/$t" --help >"$NW_TMP/$t.help" 2>&1 || fail "$t --help failed"
	python3 - "$t" "$NW_SRC/tools/$t.c" "$NW_TMP/$t.help" "$NW_SRC/doc/$t.1" <<'PY' ||
import re, sys

tool, src, helpf, manf = sys.argv[1:]
code = open(src).read()
entry = r'\{\s*"(?:--)?([a-z][a-z0-9-]*)",\s*(?:no|required|optional)_argument'
table = set(re.findall(entry, code))
# Short options: getopt_long's string, or the letters of the table's entries.
m = re.search(r'getopt_long\([^,]+,[^,]+,\s*"([^"]*)"', code)
short = set(re.sub(r"[^A-Za-z]", "", m.group(1))) if m else set()
short |= {c for _, c in re.findall(entry + r",\s*'([A-Za-z])'", code)}
if len(table) < 3 or not short:
    sys.exit(f"{src}: cannot find the option table or its short options")
table = {"--" + o for o in table} | {"-" + c for c in short}


def names(text):
    """The options a piece of text names: --long and -x."""
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[A-Za-z])(?![\w-])", text))


# --help: the option column of each entry (the text before the description).
help_names = set()
for line in open(helpf):
    if line.lstrip().startswith("-"):
        help_names |= names(re.split(r"\s{2,}", line.strip())[0])

# The man page: the tag line after each .TP of OPTIONS, troff escapes undone.
man_names, in_options, tag_next = set(), False, False
for line in open(manf):
    line = line.rstrip("\n")
    if line.startswith(".SH"):
        in_options = line.split(None, 1)[1:] == ["OPTIONS"]
        continue
    if in_options and tag_next:
        text = re.sub(r"\\f[BIRP]|\\[%&]", "", line).replace("\\-", "-").replace('"', "")
        man_names |= names(re.sub(r"^\.[A-Z]+\s*", "", text))
    tag_next = in_options and line.startswith(".TP")

bad = []
for where, named in (("--help", help_names), (manf.rsplit("/", 1)[-1], man_names)):
    bad += [f"{o} is missing from {where}" for o in sorted(table - named)]
    bad += [f"{where} names {o}, which {tool} does not take" for o in sorted(named - table)]
for b in bad:
    print(f"  {tool}: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
		fail "$t: its option table, --help and man page disagree (above)"
	ok "$(grep -cE '\{ *"[a-z][a-z0-9-]+", *(no|required|optional)_argument' "$NW_SRC/tools/$t.c") long options, each in --help and in the man page"
done

check "narwhal-record with no command: an error exit (1..125)"
rc=0
"$NW_RECORD" >/dev/null 2>&1 || rc=$?
((rc != 0 && rc < 126)) || fail "exit $rc"
ok "exit $rc"

check "defaults: ./narwhal.data, event cycles or cpu-clock with one notice line"
w=$NW_TMP/cwd
mkdir "$w"
rc=0
(cd "$w" && "$NW_RECORD" "$P/burn" alpha) >"$w/1.out" 2>"$w/1.err" || rc=$?
[[ $rc -eq 0 ]] || { nw_show "stderr" "$w/1.err"; fail "exit $rc"; }
nw_check_measurement "$w/narwhal.data"
grep -v -e '^narwhal-record: [0-9]' -e '^narwhal-record: stacks: ' "$w/1.err" >"$w/notes" || true
nnotes=$(grep -c . "$w/notes" || true)
if compgen -G '/sys/bus/event_source/devices/cpu*' >/dev/null ||
	compgen -G '/sys/bus/event_source/devices/armv*' >/dev/null; then
	((nnotes <= 1)) || { nw_show "stderr" "$w/1.err"; fail "$nnotes notice lines, expected 1 at most"; }
	ok "PMU present; $nnotes notice line(s)"
else
	if [[ $nnotes -ne 1 ]] || ! grep -q cpu-clock "$w/notes"; then
		nw_show "stderr" "$w/1.err"
		fail "no PMU here: expected exactly one notice line naming cpu-clock, got $nnotes line(s)"
	fi
	ok "no PMU: $(cat "$w/notes")"
fi
grep -q cpu-clock "$w/narwhal.data/manifest.json" || compgen -G '/sys/bus/event_source/devices/cpu*' >/dev/null ||
	fail "manifest.json does not name cpu-clock"

check "a second run moves narwhal.data to narwhal.data.old"
cp "$w/narwhal.data/manifest.json" "$w/first-manifest.json"
rc=0
(cd "$w" && "$NW_RECORD" -e cpu-clock "$P/burn" beta) >"$w/2.out" 2>"$w/2.err" || rc=$?
[[ $rc -eq 0 ]] || { nw_show "stderr" "$w/2.err"; fail "exit $rc"; }
cmp -s "$w/first-manifest.json" "$w/narwhal.data.old/manifest.json" ||
	fail "narwhal.data.old does not hold the first run's manifest"
nw_check_measurement "$w/narwhal.data"
nw_report "$w/flat" "$w/narwhal.data" --flat
nw_flat_has "$w/flat" burn_beta || fail "the new narwhal.data does not show burn_beta"
nw_flat_has "$w/flat" burn_alpha && fail "the new narwhal.data mixes in the old run (burn_alpha)"
nw_report "$w/flat-old" "$w/narwhal.data.old" --flat
nw_flat_has "$w/flat-old" burn_alpha || fail "narwhal.data.old does not show burn_alpha"
ok "rotated, not mixed"

check "'--' ends narwhal-record's options"
d=$NW_TMP/dashdash.data
rc=0
"$NW_RECORD" -e cpu-clock -o "$d" -- "$P/burn" alpha >/dev/null 2>"$d.err" || rc=$?
[[ $rc -eq 0 ]] || { nw_show "stderr" "$d.err"; fail "exit $rc"; }
nw_check_measurement "$d"
ok "exit 0"

# samples_of DIR : the sample total of --threads.
samples_of() {
	nw_report "$NW_TMP/t" "$1" --threads
	nw_threads_rows "$NW_TMP/t" | awk '{ s += $3 } END { print s + 0 }'
}

check "-F 200 on 1 s of CPU gives about 200 samples"
d=$NW_TMP/f200.data
NW_RECORD_OPTS=(-F 200)
nw_record_ok "$d" "$P/threads"
n=$(samples_of "$d")
((n >= 120 && n <= 300)) || fail "$n samples, expected about 200"
ok "$n samples"

check "-c 4000000 (4 ms of cpu-clock) on 1 s of CPU gives about 250 samples"
d=$NW_TMP/c4ms.data
NW_RECORD_OPTS=(-c 4000000)
nw_record_ok "$d" "$P/threads"
n=$(samples_of "$d")
((n >= 150 && n <= 375)) || fail "$n samples, expected about 250"
ok "$n samples"
NW_RECORD_OPTS=()

check "-e with an unknown event: an error exit (1..125) naming it"
d=$NW_TMP/badevent.data
rc=0
"$NW_RECORD" -e no-such-event-xyz -o "$d" "$P/burn" alpha >/dev/null 2>"$d.err" || rc=$?
((rc != 0 && rc < 126)) || fail "exit $rc"
grep -qF no-such-event-xyz "$d.err" || fail "the message does not name the event"
ok "$(head -n 1 "$d.err")"

pass
