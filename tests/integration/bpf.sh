#!/bin/bash
# -g bpf (issue 26): user stacks unwound inside the kernel from CFI tables,
# with no stack copy.  As root: 300 frames of 512 bytes without frame
# pointers (deepframes), all present; a hand-written stack switch with CFI
# (stackswitch) followed to main; code without unwind tables (nocfi)
# walked by frame pointers and counted in stack health; a library loaded
# with dlopen after the start; an attached process; off-CPU samples;
# NARWHAL_UNWIND=check, which unwinds each sample both in the kernel and
# from a stack copy, agrees on the unwinding test programs; allocation
# samples (a uprobe) unwound in the kernel, through a signal frame, and an
# attached process's (tracefs uprobes on the C library); the
# mappings told by the recorder, as on kernels before 5.17.  As nobody: the
# default falls back to dwarf, with one notice saying why.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[[ $(id -u) -eq 0 ]] || fail "bpf.sh runs as root (the BPF program, and a run as nobody)"

# share FOLDED PATTERN : percent of the samples in stacks matching the ERE PATTERN.
share() {
	awk -v re="$2" '{ t += $NF } $1 ~ re { s += $NF }
		END { printf "%.1f", t ? 100 * s / t : 0 }' "$1"
}

# manifest_get DIR KEY : the manifest's value of KEY.
manifest_get() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]))' \
		"$1/manifest.json" "$2"
}

NW_RECORD_OPTS=(-g bpf)

d=$NW_TMP/deep.data
check "deepframes (300 frames of 512 bytes, no frame pointers): every frame, 99% complete"
nw_record_ok "$d" "$P/deepframes"
nw_check_measurement "$d"
[[ $(manifest_get "$d" call_graph) == bpf ]] || fail "the manifest does not say call_graph bpf"
nw_report "$NW_TMP/deep.folded" "$d" --folded
# Of the stacks in deep (not the loader's, execve's or exit's at either
# end of the run): main, then 301 deep frames (deep(300) .. deep(0)).
got=$(awk '$1 ~ /(^|;)deep(;|$)/ { t += $NF; n = gsub(/;deep/, "&", $1) }
	n == 301 && index($1, "main;deep") { s += $NF }
	END { printf "%.1f", t ? 100 * s / t : 0 }' "$NW_TMP/deep.folded")
nw_near "$got" 100 1 || {
	nw_show "--folded (first lines)" <(head -c 3000 "$NW_TMP/deep.folded")
	fail "stacks main;deep x301 hold $got%, expected 99% or more"
}
nw_report "$NW_TMP/deep.health" "$d" --stack-health
grep -q '^Call graph: bpf' "$NW_TMP/deep.health" || {
	nw_show "--stack-health" "$NW_TMP/deep.health"
	fail "stack health does not name the bpf call graph"
}
complete=$(awk '/^Complete:/ { sub(/%/, "", $3); print $3 }' "$NW_TMP/deep.health")
nw_near "${complete:-0}" 100 1 || fail "stack health says ${complete:-?}% complete"
ok "$got% main;deep x301, $complete% complete"

d=$NW_TMP/switch.data
check "stackswitch: the walk follows the switch to the old stack, up to main"
nw_record_ok "$d" "$P/stackswitch"
nw_report "$NW_TMP/switch.folded" "$d" --folded
got=$(share "$NW_TMP/switch.folded" '(^|;)main;run_switched;on_stack;on_new_stack;work(;|$)')
nw_near "$got" 100 5 || {
	nw_show "--folded" "$NW_TMP/switch.folded"
	fail "stacks main;...;on_stack;on_new_stack;work hold $got%, expected 95% or more"
}
ok "$got%"

d=$NW_TMP/nocfi.data
check "nocfi (no unwind tables for its functions): frame pointers, counted in stack health"
nw_record_ok "$d" "$P/nocfi"
nw_report "$NW_TMP/nocfi.folded" "$d" --folded
got=$(share "$NW_TMP/nocfi.folded" '(^|;)main;outer;middle;inner(;|$)')
nw_near "$got" 100 10 || {
	nw_show "--folded" "$NW_TMP/nocfi.folded"
	fail "stacks main;outer;middle;inner hold $got%, expected 90% or more"
}
nw_report "$NW_TMP/nocfi.health" "$d" --stack-health
fp=$(awk '/^Frames by frame pointers:/ { print $5 }' "$NW_TMP/nocfi.health")
((${fp:-0} > 0)) || {
	nw_show "--stack-health" "$NW_TMP/nocfi.health"
	fail "stack health counts no frames by frame pointers"
}
ok "$got%, $fp frames by frame pointers"

d=$NW_TMP/dlopen.data
check "a library loaded with dlopen after the start: its stacks complete"
nw_record_ok "$d" "$P/dlopener" "$P/libplug.so"
nw_report "$NW_TMP/dlopen.folded" "$d" --folded
got=$(share "$NW_TMP/dlopen.folded" '(^|;)main;[^ ]*plug_work')
plug=$(share "$NW_TMP/dlopen.folded" 'plug')
awk -v g="$got" -v p="$plug" 'BEGIN { exit !(p >= 30 && g >= p - 2) }' || {
	nw_show "--folded" "$NW_TMP/dlopen.folded"
	fail "libplug's stacks: $plug% of samples, $got% of them from main"
}
ok "$plug% in libplug, $got% up to main"

check "an attached process (-p): unwound in the kernel too"
"$P/attachee" "$P/libplug.so" 3 >"$NW_TMP/attachee.out" &
pid=$!
for _ in $(seq 100); do
	grep -q ready "$NW_TMP/attachee.out" 2>/dev/null && break
	sleep 0.05
done
d=$NW_TMP/attach.data
nw_record_ok "$d" -p "$pid" --duration 1
wait "$pid" || true
[[ $(manifest_get "$d" call_graph) == bpf ]] || fail "the attach was not recorded in bpf mode"
nw_report "$NW_TMP/attach.health" "$d" --stack-health
complete=$(awk '/^Complete:/ { sub(/%/, "", $3); print $3 }' "$NW_TMP/attach.health")
nw_near "${complete:-0}" 100 2 || {
	nw_show "--stack-health" "$NW_TMP/attach.health"
	fail "the attached process's stacks are ${complete:-?}% complete"
}
ok "$complete% complete"

d=$NW_TMP/off.data
check "--off-cpu: the blocked stacks, unwound in the kernel, reach main"
nw_record_ok "$d" --off-cpu "$P/sleepwork"
nw_report "$NW_TMP/off.folded" "$d" --folded --metric off-cpu:nanoseconds
# 2 x 0.5 s asleep in sleep_part, from thread entries (clone3 or _start) down.
slept=$(awk '$1 ~ /^(clone3;start_thread|_start;.*main);cycle;sleep_part;/ { s += $NF }
	END { printf "%.3f", s / 1e9 }' "$NW_TMP/off.folded")
awk -v g="$slept" 'BEGIN { exit !(g >= 0.9 && g <= 1.2) }' || {
	nw_show "--folded --metric off-cpu:nanoseconds" "$NW_TMP/off.folded"
	fail "complete stacks through sleep_part hold $slept s off the CPU, expected 1 s"
}
ok "$slept s off the CPU under thread entry;...;cycle;sleep_part"

check "NARWHAL_UNWIND=check: the kernel's walk and the stack copy's agree on 99.9%"
total=0 bad=0
for prog in "chain-nofp" "qsortcb" "recurse" "deepframes 20" "inline"; do
	read -ra cmd <<<"$prog"
	d=$NW_TMP/check-${cmd[0]}.data
	NARWHAL_UNWIND=check nw_record_ok "$d" -v "$P/${cmd[0]}" "${cmd[@]:1}"
	line=$(grep 'bpf check:' "$d.err" | grep -v debug || true)
	[[ -n $line ]] || {
		nw_show "narwhal-record -v" "$d.err"
		fail "no check summary for ${cmd[0]}"
	}
	n=$(sed -E 's/.*check: ([0-9]+) samples.*/\1/' <<<"$line")
	m=$(sed -E 's/.* ([0-9]+) differ.*/\1/' <<<"$line")
	total=$((total + n)) bad=$((bad + m))
done
((total >= 1000)) || fail "only $total samples checked"
((bad * 1000 <= total)) || {
	grep -h 'bpf check: tid' "$NW_TMP"/check-*.data.err | head -20 >&2
	fail "$bad of $total samples differ"
}
ok "$bad of $total samples differ"

check "mappings told by the recorder (as on a kernel before 5.17): the same walks, forks too"
# NARWHAL_BPF_FIND_VMA=0: the program does not call bpf_find_vma(); the
# recorder tells it each process's mappings from MMAP2 and FORK records.
total=0 bad=0 unknown=0
for prog in "deepframes 20" "forks 60"; do
	read -ra cmd <<<"$prog"
	d=$NW_TMP/told-${cmd[0]}.data
	NARWHAL_BPF_FIND_VMA=0 NARWHAL_UNWIND=check nw_record_ok "$d" -v "$P/${cmd[0]}" "${cmd[@]:1}"
	grep -q 'mappings told by the recorder only' "$d.err" || {
		nw_show "narwhal-record -v" "$d.err"
		fail "${cmd[0]}: the program found the mappings itself"
	}
	line=$(grep 'bpf check:' "$d.err" | grep -v debug || true)
	read -r n m u < <(sed -E 's/.*check: ([0-9]+) samples.* ([0-9]+) differ, ([0-9]+) met.*/\1 \2 \3/' <<<"$line")
	total=$((total + n)) bad=$((bad + m)) unknown=$((unknown + u))
done
# A child's first samples may come before the recorder has read its FORK.
((total >= 300 && bad * 1000 <= total && unknown * 20 <= total)) || {
	nw_show "narwhal-record -v (forks)" "$NW_TMP/told-forks.data.err"
	fail "$total checked, $bad differ, $unknown met a mapping not told yet"
}
ok "$total checked, $bad differ, $unknown met a mapping not told yet"

check "--alloc: allocation samples unwound in the kernel, through a signal handler's frame"
# The allocation marker's uprobe runs the program too: every sampled
# allocation's stack is the kernel's walk, which check mode compares with
# perf's copy; path_signal allocates in a SIGUSR1 handler that raise()
# ran, so its stacks cross glibc's __restore_rt (a signal frame in the CFI).
d=$NW_TMP/alloc.data
unset MALLOC_PERTURB_
NARWHAL_UNWIND=check nw_record_ok "$d" -v --alloc "$P/alloc"
line=$(grep 'bpf check:' "$d.err" | grep -v debug || true)
n=$(sed -E 's/.*check: ([0-9]+) samples.*/\1/' <<<"$line")
m=$(sed -E 's/.* ([0-9]+) differ.*/\1/' <<<"$line")
allocs=$(sed -nE 's/.*: ([0-9]+) allocation samples.*/\1/p' "$d.err")
cpu=$(sed -nE 's/^narwhal-record: ([0-9]+) samples from .*/\1/p' "$d.err")
# Checked: every allocation sample, and the CPU samples beside them.
[[ -n $n && -n $allocs && -n $cpu ]] && ((allocs >= 20 && n == allocs + cpu && m == 0)) || {
	nw_show "narwhal-record -v" "$d.err"
	fail "$allocs allocation and $cpu CPU samples, ${n:-no} checked, ${m:-?} differ: expected all checked, none differing"
}
nw_report "$NW_TMP/alloc.folded" "$d" --folded --metric alloc-bytes
sig=$(share "$NW_TMP/alloc.folded" ';main;paths;.*;on_signal;path_signal$')
awk -v g="$sig" 'BEGIN { exit !(g > 0) }' || {
	nw_show "--folded --metric alloc-bytes" "$NW_TMP/alloc.folded"
	fail "no allocation stack main;paths;...;on_signal;path_signal"
}
ok "$n of $n samples ($allocs of them allocations) unwound in the kernel agree with the copy; $sig% of the bytes through the signal frame"

check "-p --alloc: an attached process's allocations unwound in the kernel, while threads come and go"
# tracefs uprobes on the C library, inherited into the threads serve
# starts (one a round, which frees and exits): the program stays attached
# through every exit, and check mode compares each walk with perf's copy.
"$P/alloc" serve 3 >"$NW_TMP/serve.out" &
pid=$!
sleep 0.5
d=$NW_TMP/attach-alloc.data
NARWHAL_UNWIND=check nw_record_ok "$d" -v --alloc-rate 1 -p "$pid" --duration 1
wait "$pid" || fail "the program attached to failed"
line=$(grep 'bpf check:' "$d.err" | grep -v debug || true)
n=$(sed -E 's/.*check: ([0-9]+) samples.*/\1/' <<<"$line")
m=$(sed -E 's/.* ([0-9]+) differ.*/\1/' <<<"$line")
allocs=$(sed -nE 's/.*: ([0-9]+) allocation samples.*/\1/p' "$d.err")
cpu=$(sed -nE 's/^narwhal-record: ([0-9]+) samples from .*/\1/p' "$d.err")
# Every return is unwound, sampled or not; a CPU sample now and then lands
# inside a probed call (a pending uretprobe: its return address is the
# trampoline's).  A few samples' twins are read out of order and set
# aside; one may land between a uretprobe's taking of the return address
# and its record of it (doc/UNWINDING.md).
[[ -n $n && -n $allocs && -n $cpu ]] &&
	((allocs >= 300 && n * 10 >= (allocs + cpu) * 9 && m * 1000 <= n)) || {
	nw_show "narwhal-record -v" "$d.err"
	fail "$allocs allocation and $cpu CPU samples, ${n:-no} checked, ${m:-?} differ: expected 90% checked, 99.9% of them agreeing"
}
nw_report "$NW_TMP/attach-alloc.folded" "$d" --folded --metric alloc-objects
# Each round: 3 path_malloc blocks, 2 path_calloc, 1 xmalloc, 1 leak_two.
read -r rounds mallocs < <(awk '$1 ~ /;main;serve;leak_two$/ { r += $NF }
	$1 ~ /;main;serve;path_malloc$/ { p += $NF } END { print r + 0, p + 0 }' \
	"$NW_TMP/attach-alloc.folded")
# A round cut at either end of the recording counts 3 more or fewer; in
# check mode a probe that finds another's walk under way on its CPU drops
# its sample (counted lost), which perf would take outside check mode.
lost=$(sed -nE 's/.*bpf: [0-9]+ samples unwound in the kernel \(([0-9]+) lost.*/\1/p' "$d.err")
lost=${lost:-0}
((rounds >= 50 && mallocs >= 3 * rounds - 3 - lost && mallocs <= 3 * rounds + 3 + 3 * lost)) || {
	nw_show "--folded --metric alloc-objects" "$NW_TMP/attach-alloc.folded"
	fail "$rounds rounds' leak_two and $mallocs path_malloc blocks ($lost samples lost): expected 3 a round, from 50 rounds or more"
}
rp=$(sed -nE "s/.* ([0-9]+) of those agreeing, up to an address the kernel keeps.*/\1/p" <<<"$line")
ok "$n samples checked ($allocs allocations), $m differ, ${rp:-?} through a uprobe's address; $rounds rounds, each with its 3 path_malloc blocks"

check "a rows map too small for libc (NARWHAL_BPF_ROWS): a notice, and stack copies instead"
d=$NW_TMP/rows.data
NARWHAL_BPF_ROWS=3000 nw_record_ok "$d" "$P/deepframes" 20
grep -q 'unwind tables\? not loaded into the kernel (.*libc[^:]*: the kernel.s rows are full)' "$d.err" || {
	nw_show "narwhal-record stderr" "$d.err"
	fail "no notice of the tables the kernel did not take"
}
nw_report "$NW_TMP/rows.health" "$d" --stack-health
copies=$(sed -nE 's/^From a stack copy: ([0-9]+) samples.*/\1/p' "$NW_TMP/rows.health")
complete=$(awk '/^Complete:/ { print $3 + 0 }' "$NW_TMP/rows.health")
[[ -n $copies ]] && ((copies >= 100)) && awk -v c="$complete" 'BEGIN { exit !(c >= 99) }' || {
	nw_show "--stack-health" "$NW_TMP/rows.health"
	fail "${copies:-no} samples from copies, $complete% complete"
}
ok "$copies samples from stack copies, $complete% complete"

check "as nobody: dwarf, with one notice saying why"
mkdir -p "$NW_TMP/nobody" && chmod 777 "$NW_TMP/nobody" && chmod 755 "$NW_TMP"
rc=0
setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	"$NW_RECORD" -e cpu-clock -o "$NW_TMP/nobody/n.data" "$P/burn" alpha \
	>"$NW_TMP/nobody.out" 2>"$NW_TMP/nobody.err" || rc=$?
((rc == 0)) || {
	nw_show "stderr" "$NW_TMP/nobody.err"
	fail "narwhal-record as nobody exited $rc"
}
n=$(grep -c 'call graph dwarf (stack copies): -g bpf needs root' "$NW_TMP/nobody.err" || true)
((n == 1)) || {
	nw_show "stderr" "$NW_TMP/nobody.err"
	fail "$n notices about the fallback, expected one"
}
[[ $(manifest_get "$NW_TMP/nobody/n.data" call_graph) == dwarf ]] ||
	fail "the run as nobody was not recorded in dwarf mode"
ok "one notice, dwarf"

check "-g bpf asked for as nobody: an error that says why"
rc=0
setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
	"$NW_RECORD" -e cpu-clock -g bpf -o "$NW_TMP/nobody/b.data" "$P/burn" alpha \
	>/dev/null 2>"$NW_TMP/nobody-b.err" || rc=$?
((rc != 0 && rc < 126)) || fail "-g bpf as nobody exited $rc"
grep -q 'bpf' "$NW_TMP/nobody-b.err" || {
	nw_show "stderr" "$NW_TMP/nobody-b.err"
	fail "the error does not say why -g bpf cannot run"
}
ok "refused"

pass
