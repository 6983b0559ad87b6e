# shellcheck shell=bash disable=SC2034 # (variables used by the sourcing tests)
# Helpers for the export tests (export-*.sh): source it after lib.sh.
#
# The exports are checked with tools made by others, installed by
# scripts/setup.sh --tests: protoc and Debian's profile.proto, Go's pprof,
# xmllint, Chromium, and the npm packages of tests/js (speedscope, ajv,
# playwright-core).  A missing tool fails the test: it is part of the test
# set-up, not optional.

NW_JS=$NW_SRC/tests/js
NW_PPROF_PROTO_DIR=/usr/share/gocode/src/github.com/google/pprof/proto

# nw_need_tool NAME... : each NAME must be on PATH.
nw_need_tool() {
	local t

	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 ||
			fail "$t is missing: run scripts/setup.sh --tests (it installs the export checkers)"
	done
}

# nw_need_js : node and the packages of tests/js (npm ci there).
nw_need_js() {
	nw_need_tool node
	[[ -d $NW_JS/node_modules/speedscope && -d $NW_JS/node_modules/ajv &&
		-d $NW_JS/node_modules/playwright-core ]] ||
		fail "tests/js/node_modules is incomplete: run scripts/setup.sh --tests (npm ci in tests/js)"
}

# nw_go_env : Go's pprof with a private home and cache, offline.
nw_go_env() {
	nw_need_tool go
	export HOME=$NW_TMP/home GOCACHE=$NW_TMP/home/gocache GOPROXY=off
	export PPROF_TMPDIR=$NW_TMP/home/pprof
	mkdir -p "$HOME" "$GOCACHE" "$PPROF_TMPDIR"
}

# nw_keep FILE NAME : copies FILE to $NW_BUILD/meson-logs/NAME, kept after the
# test for a person to look at (the screenshots).
nw_keep() {
	mkdir -p "$NW_BUILD/meson-logs"
	cp "$1" "$NW_BUILD/meson-logs/$2"
	echo "  kept: $NW_BUILD/meson-logs/$2"
}

# nw_pprof_folded PROFILE.pb.gz [VALUE_INDEX] : the profile decoded by protoc
# with Debian's profile.proto (independent of Narwhal's), printed as folded
# stacks "root;...;leaf COUNT" (sorted, equal stacks summed) from sample value
# VALUE_INDEX (default 0).  Also checks the rules pprof relies on: string 0
# is "", ids are non-zero and unique, every reference resolves.
nw_pprof_folded() {
	local pb=$1 idx=${2:-0}

	nw_need_tool protoc
	[[ -f $NW_PPROF_PROTO_DIR/profile.proto ]] ||
		fail "$NW_PPROF_PROTO_DIR/profile.proto is missing: run scripts/setup.sh --tests"
	gzip -dc "$pb" >"$pb.raw" || fail "$pb is not gzip"
	protoc --decode=perftools.profiles.Profile --proto_path="$NW_PPROF_PROTO_DIR" \
		profile.proto <"$pb.raw" >"$pb.txt" 2>"$pb.protoc.err" || {
		nw_show "protoc --decode" "$pb.protoc.err"
		fail "protoc cannot decode $pb with Debian's profile.proto"
	}
	python3 - "$pb.txt" "$idx" <<'PY' || fail "the decoded profile is inconsistent (see above)"
import codecs
import sys


def parse(lines):
    """protoc's text format into nested dicts of lists."""
    root = {}
    stack = [root]
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
        elif line.endswith("{"):
            child = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(child)
            stack.append(child)
        else:
            key, _, value = line.partition(": ")
            if value.startswith('"'):
                value = codecs.escape_decode(value[1:-1].encode())[0].decode("utf-8")
            elif value in ("true", "false"):
                value = value == "true"
            else:
                value = int(value)
            stack[-1].setdefault(key, []).append(value)
    return root


def one(msg, key, default=0):
    return msg.get(key, [default])[0]


def bad(msg):
    print("decoded profile: " + msg, file=sys.stderr)
    sys.exit(1)


p = parse(open(sys.argv[1]))
idx = int(sys.argv[2])
strings = p.get("string_table", [])
if not strings or strings[0] != "":
    bad("string_table[0] is not the empty string")
tables = {}
for kind in ("mapping", "location", "function"):
    tables[kind] = {}
    for m in p.get(kind, []):
        i = one(m, "id")
        if i == 0 or i in tables[kind]:
            bad("%s id %d is zero or used twice" % (kind, i))
        tables[kind][i] = m
funcs = {}
for i, f in tables["function"].items():
    n = one(f, "name")
    if not 0 <= n < len(strings):
        bad("function %d: name index %d out of range" % (i, n))
    funcs[i] = strings[n]
ntypes = len(p.get("sample_type", []))
stacks = {}
for s in p.get("sample", []):
    if len(s.get("value", [])) != ntypes:
        bad("a sample has %d values for %d sample types" % (len(s.get("value", [])), ntypes))
    names = []
    for lid in reversed(s.get("location_id", [])):
        loc = tables["location"].get(lid)
        if loc is None:
            bad("a sample refers to location %d, which is missing" % lid)
        mid = one(loc, "mapping_id")
        if mid and mid not in tables["mapping"]:
            bad("location %d refers to mapping %d, which is missing" % (lid, mid))
        for ln in reversed(loc.get("line", [])):
            fid = one(ln, "function_id")
            if fid not in funcs:
                bad("location %d refers to function %d, which is missing" % (lid, fid))
            names.append(funcs[fid])
    if names:
        key = ";".join(names)
        stacks[key] = stacks.get(key, 0) + s["value"][idx]
for k in sorted(stacks):
    if stacks[k]:
        print(k, stacks[k])
PY
}
