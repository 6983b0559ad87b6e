#!/bin/bash
# Annotated disassembly from the measurement alone (issue 28,
# doc/DISASSEMBLY.md): narwhal-record stores the machine code of the
# sampled functions (code.nwcode), narwhal-report --disasm decodes it.
#
#  - the code file, read by an independent parser of doc/DISASSEMBLY.md's
#    layout (below), holds each sampled function's bytes as the binary has
#    them at that address;
#  - --disasm div_chain (tests/programs/divchain: a loop around a chain of
#    divisions): exactly objdump's instruction addresses, the shares add
#    up to the function's self share, the hottest instruction is the
#    division or the one after it, and it agrees with perf annotate on a
#    recording of the same program (hottest address, its share of the
#    function within sampling noise);
#  - the program deleted, then changed, after recording: the same output;
#  - --sort, --source, jump and call targets, inline marks (inline:
#    inline_burn inlined into inline_caller), --code-cap cuts and the
#    total cap, --no-code;
#  - aarch64: the bytes of a function cross-compiled for aarch64
#    (tests/data/aarch64/code.elf) put into a recorded measurement's code
#    file in place of x86-64 code, decoded as aarch64 with
#    aarch64-linux-gnu-objdump's instructions (tests/data/aarch64/code.objdump);
#  - a checkpoint's pack; a corrupt code file refused with a message that
#    names it (other views unaffected); JIT code from the process.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# nw_codefile FILE CMD [ARGS] : the independent reader/writer of code.nwcode.
#   dump            one line per function: module-path start size nbytes status machine
#   bytes START     the stored bytes of the function at START, as hex
#   put START MACHINE HEXFILE OUT   a copy with that function's bytes and machine replaced
nw_codefile() {
	python3 - "$@" <<'PY'
import struct, sys

path, cmd = sys.argv[1], sys.argv[2]
b = open(path, "rb").read()
pos = 0

def take(n):
    global pos
    if pos + n > len(b):
        sys.exit(f"{path}: truncated at byte {pos}")
    v = b[pos:pos + n]
    pos += n
    return v

def u(n):
    return int.from_bytes(take(n), "little")

def varint(end):
    global pos
    v, shift = 0, 0
    while True:
        if pos >= end:
            sys.exit(f"{path}: varint past its function's lines at byte {pos}")
        c = b[pos]; pos += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v

if take(8) != b"NWCODE01":
    sys.exit(f"{path}: bad magic")
version, nmod, nstr, nfun, nnote, _ = struct.unpack("<6I", take(24))
func_cap, total_cap = struct.unpack("<2Q", take(16))
assert version == 1, version
mods = []
for _ in range(nmod):
    p = take(u(4)).decode()
    bid = take(u(1)).hex()
    mods.append((p, bid))
strings = [take(u(4)).decode() for _ in range(nstr)]
funcs = []
for i in range(nfun):
    rec = pos
    mod, machine, status, origin, start, size, nbytes, nlines, lbytes, ninl = \
        struct.unpack("<IHBBQQIIII", take(40))
    assert mod < nmod and nbytes <= size, (i, mod, nbytes, size)
    code = take(nbytes)
    end = pos + lbytes
    off, line = 0, 0
    for k in range(nlines):
        h = varint(end)
        off += h >> 1
        assert off < size, (i, k, off, size)
        if h & 1:
            assert varint(end) <= nstr
        z = varint(end)
        line += (z >> 1) ^ -(z & 1)
        assert line >= 0
    assert pos == end, (i, pos, end)
    inl = [struct.unpack("<4I", take(16)) for _ in range(ninl)]
    for lo, hi, name, depth in inl:
        assert lo < hi <= size and name < nstr and depth >= 1
    funcs.append(dict(rec=rec, mod=mod, machine=machine, status=status, start=start,
                      size=size, code=code, inl=[strings[x[2]] for x in inl]))
notes = [struct.unpack("<IIQ", take(16)) for _ in range(nnote)]
assert pos == len(b), f"{len(b) - pos} bytes after the notes"
prev = None
for f in funcs:
    if prev and prev["mod"] == f["mod"]:
        assert prev["start"] + prev["size"] <= f["start"], "functions overlap or out of order"
    prev = f

if cmd == "dump":
    for f in funcs:
        print(mods[f["mod"]][0], hex(f["start"]), f["size"], len(f["code"]), f["status"],
              f["machine"], ",".join(f["inl"]) or "-")
elif cmd == "bytes":
    want = int(sys.argv[3], 0)
    print(next(f["code"].hex() for f in funcs if f["start"] == want))
elif cmd == "put":
    want, machine = int(sys.argv[3], 0), int(sys.argv[4])
    new = bytes.fromhex(open(sys.argv[5]).read().strip())
    f = next(f for f in funcs if f["start"] == want)
    n = min(len(new), f["size"]) // 4 * 4
    r = f["rec"]
    old_n = len(f["code"])
    head = bytearray(b[r:r + 40])
    head[4:6] = struct.pack("<H", machine)
    head[24:28] = struct.pack("<I", n)
    out = b[:r] + bytes(head) + new[:n] + b[r + 40 + old_n:]
    open(sys.argv[6], "wb").write(out)
    print(n)
PY
}

# The ELF bytes of @file at ELF address START, N of them, through its program headers.
elf_bytes() {
	python3 - "$@" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
addr, n = int(sys.argv[2], 0), int(sys.argv[3])
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
for i in range(phnum):
    t, flags, off, vaddr, paddr, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
    if t == 1 and vaddr <= addr < vaddr + filesz:
        print(data[off + addr - vaddr:off + addr - vaddr + n].hex())
        break
PY
}

# The addresses (hex, no 0x) of function $2's instructions in a --disasm report $1.
disasm_addrs() {
	awk -v m="$2+0x" '$1 != "Code:" && !/past the stored bytes/ { for (i = 1; i <= NF; i++) { t = $i; sub(/^>/, "", t);
		if (index(t, m) == 1) { print substr(t, length(m) + 1); break } } }' "$1"
}

# objdump's instruction addresses of function $2 in $1.
objdump_addrs() {
	objdump -d --no-show-raw-insn --disassemble="$2" "$1" |
		awk '/^ *[0-9a-f]+:\t/ { a = $1; sub(/:$/, "", a); print a }'
}

# The sum of the SELF% column of the instruction rows of a --disasm report.
self_sum() {
	awk '$1 ~ /%$/ && $2 ~ /%$/ { v = $1; sub(/%/, "", v); s += v } END { printf "%.1f", s }' "$1"
}

# The header's Self% of a --disasm report.
header_self() {
	awk '/^Self:/ { v = $2; sub(/%/, "", v); print v; exit }' "$1"
}

d=$NW_TMP/div.data
check "narwhal-record divchain: the measurement holds code.nwcode"
nw_record_ok "$d" "$P/divchain" 0.6
nw_check_measurement "$d"
[[ -s $d/code.nwcode ]] || fail "no $d/code.nwcode"
nw_codefile "$d/code.nwcode" dump >"$NW_TMP/dump" || fail "code.nwcode does not parse (above)"
start=0x$(nm "$P/divchain" | awk '$3 == "div_chain" { print $1 }')
size=$((16#$(nm -S "$P/divchain" | awk '$4 == "div_chain" { print $2 }')))
row=$(awk -v s="$(printf '%#x' "$start")" -v p="$P/divchain" '$1 == p && $2 == s' "$NW_TMP/dump")
[[ -n $row ]] || {
	nw_show "code.nwcode functions" "$NW_TMP/dump"
	fail "no function at $start of $P/divchain in the code file"
}
read -r _ _ fsize fbytes fstatus fmachine _ <<<"$row"
[[ $fsize == "$size" && $fbytes == "$size" && $fstatus == 0 && $fmachine == 62 ]] ||
	fail "div_chain: size $fsize, $fbytes bytes, status $fstatus, machine $fmachine (expected $size whole, x86-64)"
stored=$(nw_codefile "$d/code.nwcode" bytes "$start")
[[ $stored == "$(elf_bytes "$P/divchain" "$start" "$size")" ]] ||
	fail "the stored bytes of div_chain differ from the binary's"
ok "div_chain's $size bytes as the binary has them ($(wc -l <"$NW_TMP/dump") functions)"

check "--disasm div_chain: exactly objdump's instruction addresses"
nw_report "$NW_TMP/div" "$d" --disasm '^div_chain$'
disasm_addrs "$NW_TMP/div" divchain >"$NW_TMP/ours"
objdump_addrs "$P/divchain" div_chain >"$NW_TMP/theirs"
[[ -s $NW_TMP/theirs ]] || fail "objdump shows no div_chain"
if ! diff -u "$NW_TMP/theirs" "$NW_TMP/ours" >"$NW_TMP/addr.diff"; then
	nw_show "--disasm" "$NW_TMP/div"
	nw_show "objdump vs --disasm" "$NW_TMP/addr.diff"
	fail "--disasm's addresses are not objdump's"
fi
ok "$(wc -l <"$NW_TMP/ours") instructions"

check "--disasm: the instructions' SELF% add up to the function's Self%"
sum=$(self_sum "$NW_TMP/div")
hdr=$(header_self "$NW_TMP/div")
n=$(awk '$1 ~ /%$/ && $2 ~ /%$/' "$NW_TMP/div" | wc -l)
# Each share is rounded to 0.1: at most 0.05 off each.
nw_near "$sum" "$hdr" "$(awk -v n="$n" 'BEGIN { print 0.05 * n + 0.05 }')" ||
	fail "the instructions add up to $sum%, the function's Self is $hdr%"
ok "$sum% over $n sampled instructions, Self $hdr%"

check "--disasm: the hottest instruction is the division or the one after it"
div_at=$(objdump -d --no-show-raw-insn --disassemble=div_chain "$P/divchain" |
	awk '$2 ~ /^div/ { a = $1; sub(/:$/, "", a); print a; exit }')
after=$(objdump -d --no-show-raw-insn --disassemble=div_chain "$P/divchain" |
	awk -v d="$div_at:" 'f { a = $1; sub(/:$/, "", a); print a; exit } $1 == d { f = 1 }')
read -r hot_share hot_addr <<<"$(awk '$1 ~ /%$/ && $2 ~ /%$/ { v = $1; sub(/%/, "", v);
	for (i = 3; i <= NF; i++) if ($i ~ /^>?divchain\+0x/) { a = $i; break }
	sub(/^>?divchain\+0x/, "", a); if (v + 0 > best) { best = v + 0; ba = a } }
	END { print best, ba }' "$NW_TMP/div")"
[[ $hot_addr == "$div_at" || $hot_addr == "$after" ]] ||
	fail "the hottest instruction is at $hot_addr, not the div ($div_at) or the next ($after)"
local_share=$(awk -v h="$hot_share" -v s="$hdr" 'BEGIN { printf "%.1f", 100 * h / s }')
awk -v l="$local_share" 'BEGIN { exit !(l >= 80) }' ||
	fail "the hottest instruction holds $local_share% of div_chain, expected >= 80%"
grep -q "divq   %rsi" "$NW_TMP/div" || fail "no divq in the disassembly"
ok "$hot_addr: $local_share% of the function"

check "perf annotate on a perf record of divchain agrees: hottest address, its share within 5 points"
# -B: perf 6.1's build-id collection aborts at times (util/build-id.c:1010,
# then "stack smashing detected"; it did in a fresh root); annotate finds
# the binary by its path.
if ! perf record -q -B -e cpu-clock -o "$NW_TMP/perf.data" "$P/divchain" 0.6 \
	>"$NW_TMP/perf.out" 2>&1; then
	nw_show "perf record" "$NW_TMP/perf.out"
	fail "perf record failed"
fi
perf annotate -i "$NW_TMP/perf.data" --stdio -s div_chain >"$NW_TMP/annotate" 2>"$NW_TMP/annotate.err" ||
	{ nw_show "perf annotate" "$NW_TMP/annotate.err"; fail "perf annotate failed"; }
read -r perf_share perf_addr <<<"$(awk '$1 ~ /^[0-9.]+$/ && $2 == ":" && $3 ~ /^[0-9a-f]+:$/ {
	a = $3; sub(/:$/, "", a); if ($1 + 0 > best) { best = $1 + 0; ba = a } } END { print best, ba }' \
	"$NW_TMP/annotate")"
[[ -n $perf_addr ]] || { nw_show "perf annotate" "$NW_TMP/annotate"; fail "no rows in perf annotate"; }
[[ $perf_addr == "$hot_addr" ]] || {
	nw_show "perf annotate" "$NW_TMP/annotate"
	fail "perf annotate's hottest is $perf_addr, narwhal's $hot_addr"
}
nw_near "$perf_share" "$local_share" 5 ||
	fail "perf annotate gives $perf_addr $perf_share% of div_chain, narwhal $local_share%"
ok "both $hot_addr: perf $perf_share%, narwhal $local_share%"

check "the program deleted, then changed, after recording: the same disassembly"
victim=$NW_TMP/victim
cp "$P/divchain" "$victim"
dv=$NW_TMP/victim.data
nw_record_ok "$dv" "$victim" 0.3
nw_report "$NW_TMP/v1" "$dv" --disasm '^div_chain$'
# Another program in its place: the stored code wins.
cp "$P/burn" "$victim"
nw_report "$NW_TMP/v2" "$dv" --disasm '^div_chain$'
rm -f "$victim"
nw_report "$NW_TMP/v3" "$dv" --disasm '^div_chain$'
for v in v2 v3; do
	diff -u "$NW_TMP/v1" "$NW_TMP/$v" >"$NW_TMP/$v.diff" || {
		nw_show "before and after" "$NW_TMP/$v.diff"
		fail "--disasm differs once the program was $([[ $v == v2 ]] && echo changed || echo deleted)"
	}
done
grep -q "divq   %rsi" "$NW_TMP/v3" || fail "no divq with the program deleted"
disasm_addrs "$NW_TMP/v3" victim | diff -q "$NW_TMP/theirs" - >/dev/null ||
	fail "the addresses differ from objdump's once the program is deleted"
ok "the same, from the measurement alone"

check "--sort: the hottest instruction first; --source: the source lines between them"
nw_report "$NW_TMP/sorted" "$d" --disasm '^div_chain$' --sort
first=$(awk '$1 ~ /%$/ && $2 ~ /%$/ { for (i = 3; i <= NF; i++) if ($i ~ /divchain\+0x/) {
	a = $i; sub(/^>?divchain\+0x/, "", a); print a; exit } }' "$NW_TMP/sorted")
[[ $first == "$hot_addr" ]] || fail "--sort lists $first first, not $hot_addr"
nw_report "$NW_TMP/source" "$d" --disasm '^div_chain$' --source
grep -q 'divchain\.c:[0-9]*  .*x = x / d + 0x9e3779b97f4a7c15ull;' "$NW_TMP/source" ||
	{ nw_show "--source" "$NW_TMP/source"; fail "--source shows no source line of the division"; }
ok "$first first; the division's source line shown"

check "jump and call targets: the loop's jump by arrow, main's call of div_chain by name"
grep -Eq 'jne +0x[0-9a-f]+ <div_chain\+0x[0-9a-f]+> \^' "$NW_TMP/div" ||
	fail "the loop's backward jump has no '<div_chain+0x..> ^'"
nw_report "$NW_TMP/main" "$d" --disasm '^main$'
grep -Eq 'callq +0x[0-9a-f]+ <div_chain>' "$NW_TMP/main" ||
	{ nw_show "--disasm main" "$NW_TMP/main"; fail "main's call has no <div_chain>"; }
ok "by arrow and by name"

check "inline marks: inline_burn's range marked in inline_caller; inline_burn alone points there"
di=$NW_TMP/inline.data
nw_record_ok "$di" "$P/inline"
nw_report "$NW_TMP/inl" "$di" --disasm '^inline_caller$'
grep -q -- '-- inlined: inline_burn' "$NW_TMP/inl" || fail "no '-- inlined: inline_burn' mark"
hot_line=$(awk '$1 ~ /%$/ && $2 ~ /%$/ { v = $1; sub(/%/, "", v); if (v + 0 > best) { best = v + 0; l = $0 } }
	END { print l }' "$NW_TMP/inl")
[[ $hot_line == *"[inline_burn]"* ]] ||
	{ nw_show "--disasm inline_caller" "$NW_TMP/inl"; fail "the hottest instruction is not marked [inline_burn]"; }
nw_codefile "$di/code.nwcode" dump >"$NW_TMP/inl.dump" || fail "the code file does not parse"
grep -q 'inline_burn' "$NW_TMP/inl.dump" ||
	fail "the code file holds no inlined range named inline_burn"
nw_report "$NW_TMP/burn" "$di" --disasm '^inline_burn$'
grep -q 'inline_burn: inlined into inline_caller' "$NW_TMP/burn" ||
	fail "--disasm inline_burn does not point to inline_caller"
ok "marked"

check "--code-cap 16: div_chain cut after 16 bytes, said so; the samples past them listed"
dc=$NW_TMP/cap.data
NW_RECORD_OPTS=(--code-cap 16)
nw_record_ok "$dc" "$P/divchain" 0.3
NW_RECORD_OPTS=()
nw_report "$NW_TMP/cap" "$dc" --disasm '^div_chain$'
grep -q "the first 16 stored (cut at the per-function cap" "$NW_TMP/cap" ||
	{ nw_show "--disasm" "$NW_TMP/cap"; fail "no word of the cut"; }
grep -q "(past the stored bytes)" "$NW_TMP/cap" || fail "the samples past the 16 bytes are not listed"
sum=$(awk '$1 ~ /%$/ && $2 ~ /%$/ { v = $1; sub(/%/, "", v); s += v } END { printf "%.1f", s }' "$NW_TMP/cap")
nw_near "$sum" "$(header_self "$NW_TMP/cap")" 0.5 || fail "the rows add up to $sum%, not the Self"
ok "cut and said"

check "--code-cap 64K,1: everything left out for the total cap, and said so; --no-code: none"
dt=$NW_TMP/total.data
NW_RECORD_OPTS=(--code-cap 64K,1)
nw_record_ok "$dt" "$P/divchain" 0.2
NW_RECORD_OPTS=(--no-code)
nw_record_ok "$NW_TMP/none.data" "$P/divchain" 0.2
NW_RECORD_OPTS=()
nw_report "$NW_TMP/total" "$dt" --disasm '^div_chain$'
grep -q "not stored (left out: the total cap was reached" "$NW_TMP/total" ||
	{ nw_show "--disasm" "$NW_TMP/total"; fail "no word of the total cap"; }
[[ ! -e $NW_TMP/none.data/code.nwcode ]] || fail "--no-code wrote code.nwcode"
rc=0
"$NW_REPORT" "$NW_TMP/none.data" --disasm div_chain >/dev/null 2>"$NW_TMP/none.err" || rc=$?
[[ $rc -eq 1 ]] && grep -q "holds no machine code" "$NW_TMP/none.err" ||
	fail "--disasm without code: exit $rc, $(cat "$NW_TMP/none.err")"
ok "said"

check "aarch64: a cross-compiled function's bytes in the code file, decoded as aarch64's objdump does"
python3 - "$NW_SRC/tests/data/aarch64/code.elf" >"$NW_TMP/a64.hex" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
def sh(i):
    return struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
names = sh(shstrndx)[4]
for i in range(shnum):
    name, typ, flags, addr, off, size = sh(i)
    n = d[names + name:d.index(b"\0", names + name)]
    if n == b".text":
        print(d[off:off + size].hex())
PY
[[ -s $NW_TMP/a64.hex ]] || fail "no .text in tests/data/aarch64/code.elf"
da=$NW_TMP/a64.data
cp -r "$d" "$da"
# In place of main's code (144 bytes: room for the whole aarch64 function).
mstart=0x$(nm "$P/divchain" | awk '$3 == "main" { print $1 }')
n=$(nw_codefile "$d/code.nwcode" put "$mstart" 183 "$NW_TMP/a64.hex" "$da/code.nwcode") ||
	fail "cannot rewrite the code file"
nw_codefile "$da/code.nwcode" dump >/dev/null || fail "the rewritten code file does not parse"
nw_report "$NW_TMP/a64" "$da" --disasm '^main$'
grep -q "(aarch64)" "$NW_TMP/a64" || { nw_show "--disasm" "$NW_TMP/a64"; fail "not decoded as aarch64"; }
# Mnemonic and first operand of each instruction: --disasm's, and objdump's first n/4.
# (Operands other than registers are written differently: immediates, targets.)
awk -v reg='^([xw]([0-9]+|zr)|sp|[vqdsbh][0-9]+)$' '$1 != "Code:" && /divchain\+0x/ && !/past the stored bytes/ {
	for (i = 1; i <= NF; i++) if ($i ~ /divchain\+0x/) break
	j = i + 1; if ($j == "?") j++; op = $(j + 1); sub(/,$/, "", op)
	# capstone 4.0.2 prints movz where binutils prints its alias, mov.
	print ($j == "movz" ? "mov" : $j), (op ~ reg ? op : "-") }' \
	"$NW_TMP/a64" >"$NW_TMP/a64.ours"
awk -F'\t' -v reg='^([xw]([0-9]+|zr)|sp|[vqdsbh][0-9]+)$' '/^ *[0-9a-f]+:\t/ {
	split($3, o, /[ ,]/); print $2, (o[1] ~ reg ? o[1] : "-") }' \
	"$NW_SRC/tests/data/aarch64/code.objdump" | head -n $((n / 4)) >"$NW_TMP/a64.theirs"
if ! diff -u "$NW_TMP/a64.theirs" "$NW_TMP/a64.ours" >"$NW_TMP/a64.diff"; then
	nw_show "--disasm (aarch64)" "$NW_TMP/a64"
	nw_show "objdump vs --disasm" "$NW_TMP/a64.diff"
	fail "the aarch64 instructions differ from aarch64-linux-gnu-objdump's"
fi
ok "$((n / 4)) instructions as objdump decodes them"

check "a corrupt code file: --disasm refuses it naming the file and the byte; --flat still works"
dx=$NW_TMP/corrupt.data
cp -r "$d" "$dx"
truncate -s -3 "$dx/code.nwcode"
rc=0
"$NW_REPORT" "$dx" --disasm div_chain >/dev/null 2>"$NW_TMP/corrupt.err" || rc=$?
[[ $rc -eq 1 ]] || fail "--disasm on a truncated code file exited $rc, expected 1"
grep -q "corrupt.data/code.nwcode: byte [0-9]*: " "$NW_TMP/corrupt.err" ||
	{ nw_show "stderr" "$NW_TMP/corrupt.err"; fail "the message names no file and byte"; }
nw_report "$NW_TMP/corrupt.flat" "$dx" --flat
ok "$(cat "$NW_TMP/corrupt.err")"

check "a checkpoint (after the first, which carries no code): --disasm reads the code from its pack while the recording goes on"
dp=$NW_TMP/pack.data
"$NW_RECORD" -q -e cpu-clock --checkpoint 0.3 -o "$dp" "$P/divchain" 4 >/dev/null 2>"$dp.err" &
rec=$!
for _ in $(seq 100); do
	[[ -f $dp/manifest.json ]] && grep -q '"pack"' "$dp/manifest.json" && break
	sleep 0.1
done
grep -q '"pack"' "$dp/manifest.json" 2>/dev/null || { kill "$rec"; fail "no checkpoint within 10 s"; }
sleep 0.5
nw_report "$NW_TMP/pack" "$dp" --disasm '^div_chain$'
pack=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pack"])' "$dp/manifest.json")
kill -INT "$rec"
wait "$rec" || true
grep -q "divq   %rsi" "$NW_TMP/pack" || { nw_show "--disasm" "$NW_TMP/pack"; fail "no divq from the pack"; }
ok "decoded from $pack"

if [[ $(uname -m) == x86_64 ]]; then
	check "JIT code: read from the process while it ran, jit_hot_loop's loop decoded"
	dj=$NW_TMP/jit.data
	nw_record_ok "$dj" "$P/jit"
	jit_pid=$(awk '/^jit pid/ { print $3 }' "$dj.out")
	rm -f "/tmp/perf-$jit_pid.map"
	nw_report "$NW_TMP/jit" "$dj" --disasm '^jit_hot_loop$'
	grep -q "JIT code read from the process" "$NW_TMP/jit" || fail "no JIT code stored"
	grep -q "subq   \$1, %rax" "$NW_TMP/jit" || { nw_show "--disasm" "$NW_TMP/jit"; fail "no subq"; }
	ok "stored and decoded"
fi

pass
