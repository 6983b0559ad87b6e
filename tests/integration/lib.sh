# shellcheck shell=bash disable=SC2034 # (variables used by the sourcing tests)
# Shared helpers for the integration tests: source it first.
#
# meson passes NW_BUILD (build root), NW_PROGRAMS (built tests/programs) and
# NW_SRC (source root).  Each test prints what it checks ("check: ...") and
# either ends with "PASS: <test>" or stops at the first "FAIL: <reason>".
# A failed test's scratch directory is kept and named, for a post-mortem.

set -euo pipefail

: "${NW_BUILD:?NW_BUILD must name the meson build directory}"
: "${NW_PROGRAMS:?NW_PROGRAMS must name the built tests/programs directory}"
: "${NW_SRC:?NW_SRC must name the source directory}"

NW_RECORD=$NW_BUILD/tools/narwhal-record
NW_REPORT=$NW_BUILD/tools/narwhal-report
P=$NW_PROGRAMS
NW_TEST=$(basename "$0" .sh)
NW_TMP=$(mktemp -d "${TMPDIR:-/tmp}/narwhal-$NW_TEST.XXXXXX")
NW_RC=0
export LC_ALL=C
# The run cache of this test alone (doc/ARCHITECTURE.md, "The run cache"):
# what a test sees never depends on what earlier runs left in ~/.cache.
export NARWHAL_CACHE_DIR=$NW_TMP/cache

# No core files from the programs that crash on purpose.
ulimit -c 0

# nw_cleanup [RC] : the EXIT trap; a test that adds its own trap passes the
# status it saw first (RC), since its own commands reset $?.
nw_cleanup() {
	local rc=${1:-$?}

	if [[ $rc -eq 0 ]]; then
		rm -rf "$NW_TMP"
	else
		echo "($NW_TEST: scratch files kept in $NW_TMP)" >&2
	fi
}
trap nw_cleanup EXIT

check() {
	echo "check: $*"
}

ok() {
	echo "  ok: $*"
}

fail() {
	echo "FAIL: $NW_TEST: $*" >&2
	exit 1
}

pass() {
	echo "PASS: $NW_TEST"
}

# Prints a file to stderr under a heading (for failure messages).
nw_show() {
	local title=$1 file=$2

	echo "----- $title ($file) -----" >&2
	if [[ -f $file ]]; then
		head -c 8000 "$file" >&2
	else
		echo "(missing)" >&2
	fi
	echo "-----" >&2
}

for nw_tool in "$NW_RECORD" "$NW_REPORT"; do
	[[ -x $nw_tool ]] || fail "$nw_tool is missing: build the project first (ninja -C $NW_BUILD)"
done
unset nw_tool

# nw_children PID : the pids of PID's child processes, from /proc (procps
# may be missing on a fresh system).
nw_children() {
	local stat line rest ppid

	for stat in /proc/[0-9]*/stat; do
		{ read -r line <"$stat"; } 2>/dev/null || continue
		rest=${line##*) }
		read -r _ ppid _ <<<"$rest"
		if [[ $ppid == "$1" ]]; then
			stat=${stat#/proc/}
			echo "${stat%/stat}"
		fi
	done
}

# nw_record DIR ARGS... : narwhal-record -e cpu-clock -o DIR ARGS...
# Never fails itself; the exit status is left in NW_RC, stderr in DIR.err and
# stdout in DIR.out.  Set NW_RECORD_OPTS (an array) to add options.
nw_record() {
	local dir=$1

	shift
	NW_RC=0
	"$NW_RECORD" -e cpu-clock -o "$dir" "${NW_RECORD_OPTS[@]}" "$@" \
		>"$dir.out" 2>"$dir.err" || NW_RC=$?
}
NW_RECORD_OPTS=()

# nw_record_ok DIR ARGS... : as nw_record, but the run must exit 0.
nw_record_ok() {
	local dir=$1

	nw_record "$@"
	if [[ $NW_RC -ne 0 ]]; then
		nw_show "narwhal-record stderr" "$dir.err"
		fail "narwhal-record $* exited $NW_RC, expected 0"
	fi
}

# nw_record_lossless DIR ARGS... : narwhal-record -o DIR ARGS... (no event
# added), which must exit 0 with nothing lost; stdout in DIR.out, stderr
# in DIR.err.
nw_record_lossless() {
	local dir=$1 rc=0

	shift
	"$NW_RECORD" -o "$dir" "$@" >"$dir.out" 2>"$dir.err" || rc=$?
	if [[ $rc -ne 0 ]]; then
		nw_show "narwhal-record stderr" "$dir.err"
		fail "narwhal-record -o $dir $* exited $rc"
	fi
	grep -q ' (0 lost)' "$dir.err" || {
		nw_show "narwhal-record stderr" "$dir.err"
		fail "the kernel dropped records in narwhal-record $*"
	}
}

# nw_report OUT ARGS... : narwhal-report ARGS... >OUT 2>OUT.err; must exit 0.
nw_report() {
	local out=$1 rc=0

	shift
	"$NW_REPORT" "$@" >"$out" 2>"$out.err" || rc=$?
	if [[ $rc -ne 0 ]]; then
		nw_show "narwhal-report stderr" "$out.err"
		fail "narwhal-report $* exited $rc, expected 0"
	fi
}

# nw_flat_self FLATFILE FUNC : the SELF% of FUNC in a --flat report (0 when absent).
# Rows are " SELF%  CUMUL%  FUNCTION (file:line)"; header lines are skipped.
nw_flat_self() {
	awk -v f="$2" '
		{ s = $1; sub(/%$/, "", s) }
		s ~ /^[0-9]+(\.[0-9]+)?$/ && $3 == f { sum += s }
		END { printf "%.2f\n", sum + 0 }' "$1"
}

# nw_flat_cumul FLATFILE FUNC : the CUMUL% of FUNC in a --flat report (0
# when absent): its own samples and those of what it calls, the kernel
# frames below it included.  A function that does the work a test expects
# "holds" its cumulative share: with kernel frames (as root), the timer
# interrupts, page faults and system calls that land under a spinning
# function take a few percent of its samples, more under ASan.
nw_flat_cumul() {
	awk -v f="$2" '
		{ s = $2; sub(/%$/, "", s) }
		s ~ /^[0-9]+(\.[0-9]+)?$/ && $3 == f { sum += s }
		END { printf "%.2f\n", sum + 0 }' "$1"
}

# nw_flat_has FLATFILE FUNC : true when FUNC has a row in a --flat report.
nw_flat_has() {
	awk -v f="$2" '
		{ s = $1; sub(/%$/, "", s) }
		s ~ /^[0-9]+(\.[0-9]+)?$/ && $3 == f { found = 1 }
		END { exit !found }' "$1"
}

# nw_threads_rows THREADSFILE : the data rows of a --threads report, as
# "PID TID SAMPLES SHARE NAME" (share without %, name last since it may hold
# spaces).  Rows are "PID TID NAME SAMPLES SHARE% PROCESS" (PROCESS one word);
# header lines are skipped.
nw_threads_rows() {
	awk '
		$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 6 {
			share = $(NF - 1); sub(/%$/, "", share)
			name = $3
			for (i = 4; i <= NF - 3; i++)
				name = name " " $i
			print $1, $2, $(NF - 2), share, name
		}' "$1"
}

# nw_near ACTUAL EXPECTED TOLERANCE : true when |ACTUAL - EXPECTED| <= TOLERANCE.
nw_near() {
	awk -v a="$1" -v e="$2" -v t="$3" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(d <= t) }'
}

# nw_check_measurement DIR : the directory holds manifest.json and symbols.json
# (valid JSON) and at least one .csprof file, each of which parses completely
# with the independent reader below.
nw_check_measurement() {
	local dir=$1 f pack

	[[ -d $dir ]] || fail "no measurement directory $dir"
	pack=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("pack", ""))' \
		"$dir/manifest.json" 2>/dev/null) || fail "$dir/manifest.json is not valid JSON"
	if [[ -n $pack ]]; then
		# A checkpoint: its files come out of the pack and journal for the same checks.
		f=$(mktemp -d "$NW_TMP/unpacked.XXXXXX")
		nw_unpack "$dir" "$f"
		cp "$dir/manifest.json" "$f/"
		dir=$f
	fi
	for f in manifest.json symbols.json; do
		[[ -s $dir/$f ]] || fail "$dir/$f is missing or empty"
		python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$dir/$f" ||
			fail "$dir/$f is not valid JSON"
	done
	compgen -G "$dir/*.csprof" >/dev/null || fail "$dir holds no .csprof file"
	nw_csprof summary "$dir"/*.csprof >/dev/null
}

# nw_unpack MEASUREMENT DIR : the files of a checkpoint as files of DIR, read
#     from the layouts in doc/DURABILITY.md alone (not src/format/): the pack
#     its manifest names (magic, data, index, trailer, every offset checked
#     against the size), then each segment of its journal, whose whole
#     entries replace files and whose "NAME+" entries extend them: a csprof
#     delta appends nodes (parents before children) and sets metrics, a
#     trace delta appends events; each checked against the file it extends.
nw_unpack() {
	python3 - "$1" "$2" <<'PY' || fail "checkpoint check failed (see above)"
import json
import os
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
man = json.load(open(os.path.join(src, "manifest.json")))


def bad(where, why):
    print("%s: %s" % (where, why), file=sys.stderr)
    sys.exit(1)


def entries(d, where):
    """The (name, bytes) of the pack in @d."""
    if len(d) < 32 or d[:8] != b"NWPACK01" or d[-8:] != b"NWPKEND1":
        bad(where, "no NWPACK01 magic or NWPKEND1 trailer")
    index, count = struct.unpack_from("<QQ", d, len(d) - 24)
    if not 8 <= index <= len(d) - 24:
        bad(where, "index offset %d outside the pack" % index)
    o, got = index, []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", d, o)
        name = d[o + 4:o + 4 + n].decode()
        at, size = struct.unpack_from("<QQ", d, o + 4 + n)
        if "/" in name or not 8 <= at <= at + size <= index:
            bad(where, "entry %r at %d+%d is outside the data" % (name, at, size))
        got.append((name, d[at:at + size]))
        o += 20 + n
    if o != len(d) - 24:
        bad(where, "the index ends at %d, the trailer starts at %d" % (o, len(d) - 24))
    return got


class Csprof:
    """Just enough of HPC_CSPROF to extend a file: its trees."""

    def __init__(self, d, where):
        self.d, self.o, self.where = d, 0, where
        self.take(24)
        self.string()
        (nm,) = self.u("<I")
        for _ in range(nm):
            self.string()
            self.take(12 + 4 + 8)
        (ne,) = self.u("<I")
        for _ in range(ne):
            (nmod,) = self.u("<I")
            for _ in range(nmod):
                (n,) = self.u("<I")
                self.take(n + 16)
        self.nmetrics = nm
        (nt,) = self.u("<I")
        self.take(8)
        self.head = bytearray(d[:self.o])
        self.trees = []
        for _ in range(nt):
            th = d[self.o:self.o + 36]
            self.take(24)
            (nodes,) = self.u("<Q")
            (epoch,) = self.u("<I")
            size = 32 + 8 * nm
            recs = [bytearray(d[self.o + k * size:self.o + (k + 1) * size]) for k in range(nodes)]
            self.take(nodes * size)
            self.trees.append([th, epoch, recs])
        if self.o != len(d):
            bad(where, "%d bytes after the last tree" % (len(d) - self.o))

    def take(self, n):
        if n > len(self.d) - self.o:
            bad(self.where, "cut short at byte %d" % self.o)
        self.o += n
        return self.d[self.o - n:self.o]

    def u(self, f):
        return struct.unpack(f, self.take(struct.calcsize(f)))

    def string(self):
        self.take(4)
        (n,) = self.u("<I")
        self.take(n)

    def extend(self, d, where):
        if d[:8] != b"NWCSDLT2":
            bad(where, "no NWCSDLT2 magic")
        nm, nt = struct.unpack_from("<II", d, 8)
        if nm != self.nmetrics or nt != len(self.trees):
            bad(where, "%d metrics, %d trees: the file has %d and %d"
                % (nm, nt, self.nmetrics, len(self.trees)))
        o = 16

        def varint():
            nonlocal o
            v, shift = 0, 0
            while True:
                if o >= len(d) or shift > 63:
                    bad(where, "a varint cut short at byte %d" % o)
                v |= (d[o] & 0x7F) << shift
                shift += 7
                o += 1
                if not d[o - 1] & 0x80:
                    return v

        def signed():
            v = varint()
            return (v >> 1) ^ -(v & 1)

        def metrics():
            return b"".join(struct.pack("<Q", varint()) for _ in range(nm))

        for tree in self.trees:
            epoch, base, added, changed = struct.unpack_from("<IIII", d, o)
            o += 16
            recs = tree[2]
            if epoch != tree[1] or base != len(recs):
                bad(where, "a tree of epoch %d and %d nodes extends one of epoch %d and %d"
                    % (epoch, base, tree[1], len(recs)))
            i, ip, sp = -1, 0, 0
            for _ in range(changed):
                i += varint() + 1
                if i >= base:
                    bad(where, "changed node %d is not one of the %d before" % (i, base))
                sp = (sp + signed()) % (1 << 64)
                recs[i][24:32] = struct.pack("<Q", sp)
                recs[i][32:] = metrics()
            sp = 0
            for _ in range(added):
                node = len(recs)
                up = varint()
                has_metrics, up = up & 1, up >> 1
                if not 1 <= up <= node:
                    bad(where, "node %d: parent %d is not an earlier node" % (node, node - up))
                parent = node - up
                ip = (ip + signed()) % (1 << 64)
                sp = (sp + signed()) % (1 << 64)
                met = metrics() if has_metrics else bytes(8 * nm)
                recs.append(bytearray(struct.pack("<QQQQ", node, parent, ip, sp) + met))
        if o != len(d):
            bad(where, "the delta is %d bytes, its trees end at %d" % (len(d), o))

    def bytes(self):
        b = bytearray(self.head)
        for th, _, recs in self.trees:
            b += th[:24] + struct.pack("<Q", len(recs)) + th[32:36]
            for r in recs:
                b += r
        return bytes(b)


def extend_trace(t, d, where):
    if d[:8] != b"NWTRDLT1" or len(t) < 48:
        bad(where, "no NWTRDLT1 magic, or no trace before it")
    be, bb, e, b = struct.unpack_from("<QQQQ", d, 8)
    if (be, bb) != struct.unpack_from("<QQ", t, 32) or bb != len(t) - 48:
        bad(where, "extends a trace of %d events in %d bytes, not this one" % (be, bb))
    if b - bb != len(d) - 40:
        bad(where, "%d bytes of events, %d in the delta" % (b - bb, len(d) - 40))
    return t[:32] + struct.pack("<QQ", e, b) + t[48:] + d[40:]


files = dict(entries(open(os.path.join(src, man["pack"]), "rb").read(), man["pack"]))
if man.get("journal"):
    j = open(os.path.join(src, man["journal"]), "rb").read()
    at = 0
    for k, seg in enumerate(man["segments"]):
        where = "%s segment %d" % (man["journal"], k + 1)
        if at + seg["bytes"] > len(j):
            bad(where, "the journal is cut short")
        for name, data in entries(j[at:at + seg["bytes"]], where):
            if not name.endswith("+"):
                files[name] = data
            elif name[:-1] not in files:
                bad(where, "%s extends no file" % name)
            elif name.endswith(".csprof+"):
                c = Csprof(files[name[:-1]], name[:-1])
                c.extend(data, "%s: %s" % (where, name))
                files[name[:-1]] = c.bytes()
            elif name.endswith(".trace+"):
                files[name[:-1]] = extend_trace(files[name[:-1]], data, "%s: %s" % (where, name))
            else:
                bad(where, "%s: a delta of an unknown kind of file" % name)
        at += seg["bytes"]
for name, data in files.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
PY
}

# nw_csprof summary FILE... : one line per file, "FILE EPOCHS TREES NODES SAMPLES",
#     SAMPLES being the sum over all nodes of the first ":samples" metric
#     (metric 0 when none is so named).
# nw_csprof modules FILE : one line per module of every epoch, "EPOCH PATH".
#
# An HPC_CSPROF reader written from DESIGN.md alone, independent of
# src/format/: it checks every count against the file size, the magic
# strings, tags, node ids in file order, parents before children, epoch indexes,
# and that nothing follows the last tree.  A bad file fails the test with
# its name and the offset.
nw_csprof() {
	python3 - "$@" <<'PY' || fail "HPC_CSPROF check failed (see above)"
import struct
import sys


class Bad(Exception):
    pass


class Reader:
    def __init__(self, data):
        self.d = data
        self.o = 0

    def take(self, n, what):
        if n > len(self.d) - self.o:
            raise Bad("offset %d: %s needs %d bytes, %d left"
                      % (self.o, what, n, len(self.d) - self.o))
        b = self.d[self.o:self.o + n]
        self.o += n
        return b

    def u32(self, what):
        return struct.unpack("<I", self.take(4, what))[0]

    def u64(self, what):
        return struct.unpack("<Q", self.take(8, what))[0]

    def expect(self, raw, what):
        at = self.o
        got = self.take(len(raw), what)
        if got != raw:
            raise Bad("offset %d: %s is %r, expected %r" % (at, what, got, raw))

    def tagged_string(self, tag, what):
        at = self.o
        t = self.u32(what + " tag")
        if t != tag:
            raise Bad("offset %d: %s tag 0x%x, expected 0x%x" % (at, what, t, tag))
        n = self.u32(what + " length")
        return self.take(n, what).decode("utf-8", "replace")

    def tagged_number(self, tag, what):
        at = self.o
        t = self.u32(what + " tag")
        if t != tag:
            raise Bad("offset %d: %s tag 0x%x, expected 0x%x" % (at, what, t, tag))
        return self.u64(what)


def parse(data):
    r = Reader(data)
    r.expect(b"HPC_CSPROF", "file magic")
    r.expect(b"01.01", "file version")
    r.expect(b"l", "endian byte")
    chunks = r.u64("num_chunks")
    if chunks != 3:
        raise Bad("offset 16: num_chunks %d, expected 3" % chunks)
    r.tagged_string(0x00, "target")
    nmetrics = r.u32("num_metrics")
    if nmetrics == 0 or nmetrics > 1024:
        raise Bad("offset %d: implausible num_metrics %d" % (r.o - 4, nmetrics))
    names = []
    for i in range(nmetrics):
        names.append(r.tagged_string(0x30, "metric %d name" % i))
        r.tagged_number(0x51, "metric %d flags" % i)
        r.tagged_number(0x41, "metric %d period" % i)
    nepochs = r.u32("num_epochs")
    epochs = []
    for e in range(nepochs):
        nmod = r.u32("epoch %d num_modules" % e)
        mods = []
        for m in range(nmod):
            n = r.u32("module name length")
            mods.append(r.take(n, "module name").decode("utf-8", "replace"))
            r.u64("module vaddr")
            r.u64("module mapped address")
        epochs.append(mods)
    ntrees = r.u32("num_trees")
    r.u64("tramp_samples")
    sm = next((i for i, n in enumerate(names) if n.endswith(":samples")), 0)
    nodes_total = 0
    samples = 0
    for t in range(ntrees):
        r.expect(b"HPC_CSTREE", "tree %d magic" % t)
        r.expect(b"01.00", "tree version")
        r.expect(b"l", "tree endian byte")
        if r.u32("vma size") != 8 or r.u32("uint size") != 8:
            raise Bad("offset %d: tree %d vma/uint size is not 8" % (r.o - 8, t))
        nnodes = r.u64("num_nodes")
        at = r.o
        ep = r.u32("epoch index")
        if ep >= nepochs:
            raise Bad("offset %d: tree %d epoch index %d of %d epochs" % (at, t, ep, nepochs))
        if nnodes == 0 or nnodes * (32 + 8 * nmetrics) > len(data) - r.o:
            raise Bad("offset %d: tree %d claims %d nodes, more than the file holds"
                      % (at - 8, t, nnodes))
        for i in range(nnodes):
            at = r.o
            nid = r.u64("node id")
            parent = r.u64("node parent")
            r.u64("node ip")
            r.u64("node sp")
            m = [r.u64("node metric") for _ in range(nmetrics)]
            if nid != i:
                raise Bad("offset %d: node id %d, expected %d" % (at, nid, i))
            if (i == 0 and parent != 0) or (i > 0 and parent >= i):
                raise Bad("offset %d: node %d has parent %d" % (at, i, parent))
            samples += m[sm]
        nodes_total += nnodes
    if r.o != len(data):
        raise Bad("offset %d: %d bytes after the last tree" % (r.o, len(data) - r.o))
    return epochs, ntrees, nodes_total, samples


mode, files = sys.argv[1], sys.argv[2:]
for path in files:
    try:
        with open(path, "rb") as f:
            epochs, ntrees, nodes, samples = parse(f.read())
    except Bad as e:
        print("%s: %s" % (path, e), file=sys.stderr)
        sys.exit(1)
    if mode == "summary":
        print(path, len(epochs), ntrees, nodes, samples)
    else:
        for i, mods in enumerate(epochs):
            for m in mods:
                print(i, m)
PY
}
