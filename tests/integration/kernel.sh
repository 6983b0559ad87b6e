#!/bin/bash
# Kernel frames (issue 14), on tests/programs/syscalls: write_small spends
# its time in write(2), touch_pages in page faults, user_work in user space.
# As root the kernel's call chain stands below the user stacks that caused
# it, in every view, as module [kernel.kallsyms]; the kernel share and the
# top kernel functions agree with perf recording the same run within 2
# points; --user-only (and an event with :u) leave kernel frames out; as
# nobody with kernel.perf_event_paranoid at 2, one notice says why and the
# recording is of user space.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[[ $(id -u) -eq 0 ]] || fail "kernel.sh runs as root (kernel samples, and a run as nobody)"

# share REPORT FUNC : FUNC's self share in a --flat report.
share() {
	nw_flat_self "$1" "$2"
}

d=$NW_TMP/k.data
check "as root: kernel frames below write_small and touch_pages, none below user_work"
# dwarf (the default): the stacks go on through libc (no frame pointers) to the program.
nw_record_ok "$d" "$P/syscalls" 1.5
nw_check_measurement "$d"
[[ $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernel"])' "$d/manifest.json") == True ]] ||
	fail "the manifest does not say kernel frames were sampled"
nw_report "$NW_TMP/k.folded" "$d" --folded
# Stacks through write_small that go on into the kernel, and through touch_pages.
# through FUNC: ";FUNC;" inside a stack or ";FUNC " at its end.
through() {
	awk -v f="$1" 'index($0, ";" f ";") || index($0, ";" f " ") { s += $NF } END { print s + 0 }' \
		"$NW_TMP/k.folded"
}
w=$(through write_small)
t=$(through touch_pages)
u=$(through user_work)
((w > 0 && t > 0 && u > 0)) || {
	nw_show "--folded" "$NW_TMP/k.folded"
	fail "write_small $w, touch_pages $t, user_work $u samples"
}
nw_report "$NW_TMP/k.mod" "$d" --by module
kshare=$(awk '$NF == "[kernel.kallsyms]" { sub(/%/, "", $1); print $1 }' "$NW_TMP/k.mod")
awk -v k="${kshare:-0}" 'BEGIN { exit !(k >= 10) }' || {
	nw_show "--by module" "$NW_TMP/k.mod"
	fail "the kernel holds ${kshare:-no}% self; write(2) and page faults should be more"
}
# user_work's stacks end in user_work: it has no kernel frame under it (but a timer tick).
ku=$(awk 'index($0, ";user_work;") { s += $NF } END { print s + 0 }' "$NW_TMP/k.folded")
kw=$(awk 'index($0, ";write_small;") { s += $NF } END { print s + 0 }' "$NW_TMP/k.folded")
((kw * 2 > w)) || fail "only $kw of write_small's $w samples go on into the kernel"
((ku * 20 < u + 1)) || fail "$ku of user_work's samples go on into the kernel"
ok "kernel $kshare% self; write_small $w, touch_pages $t, user_work $u samples"

check "the kernel functions are named from /proc/kallsyms, below the system call they serve"
grep -Eq ';write_small;[^ ]*(ksys_write|vfs_write|__x64_sys_write|entry_SYSCALL)' "$NW_TMP/k.folded" || {
	nw_show "--folded" "$NW_TMP/k.folded"
	fail "no write system call frames below write_small"
}
grep -Eq ';touch_pages;[^ ]*(asm_exc_page_fault|exc_page_fault|handle_mm_fault)' "$NW_TMP/k.folded" ||
	fail "no page fault frames below touch_pages"
grep -q '\[kernel\]' "$NW_TMP/k.folded" && fail "kernel frames left unnamed ([kernel]) as root"
ok "write(2) and page-fault paths named"

check "the flame graph (kernel frames in orange) and pprof carry kernel frames as their own module"
nw_report "$NW_TMP/k.out" "$d" --flamegraph "$NW_TMP/k.svg" --pprof "$NW_TMP/k.pb.gz"
grep -q 'kernel.kallsyms' "$NW_TMP/k.svg" || fail "no [kernel.kallsyms] in the flame graph"
# Kernel frames in their own colour (orange: red high, blue low), and no other frame in it.
python3 - "$NW_TMP/k.svg" <<'PY' || fail "kernel frames are not in a colour of their own"
import re, sys
svg = open(sys.argv[1]).read()
kernel = other = 0
for title, r, g, b in re.findall(r'<title>([^<]*)</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"', svg):
    orange = int(r) > 200 and 110 < int(g) < 190 and int(b) < 110
    if title.endswith("[kernel.kallsyms]"):
        kernel += 1
        if not orange:
            sys.exit("kernel frame not orange: " + title.split("\n")[0])
    elif orange:
        sys.exit("user frame in the kernel's orange: " + title.split("\n")[0])
    else:
        other += 1
if not kernel or not other:
    sys.exit("%d kernel and %d other frames" % (kernel, other))
PY
zcat "$NW_TMP/k.pb.gz" >"$NW_TMP/k.pb"
grep -aq 'kernel.kallsyms' "$NW_TMP/k.pb" || fail "no [kernel.kallsyms] mapping in pprof"
ok "present"

check "beside perf recording the same run: kernel share within 2 points, top kernel functions within 2 points or a quarter"
d2=$NW_TMP/acc.data
# Both attach to the same process for the same 3 s: the program's phases
# then weigh alike in both, whatever the machine's load.  At 3999 Hz each
# takes about 12,000 samples: the two shares' difference has a standard
# error of about 0.6 points, so 2 points is beyond sampling noise (at 1999
# Hz it was 0.9, and a sanitizer run once missed by 0.02).  A function's
# self share differs more than sampling noise says (exc_page_fault: perf
# 15.2 %, Narwhal 11.5 % once in a loaded suite; within 1.3 points in five
# runs after), likely because both timers fire where interrupts come back
# on and each sampler's handler delays the other's.  Lost or misnamed
# kernel frames differ by far more than a quarter.
"$P/syscalls" 6 >/dev/null &
pid=$!
sleep 0.3
"$NW_RECORD" -e cpu-clock -F 3999 -g fp -p "$pid" --duration 3 -o "$d2" 2>"$d2.err" &
rec=$!
perf record -q -e cpu-clock -F 3999 -g -p "$pid" -o "$NW_TMP/perf.data" -- sleep 3 \
	>/dev/null 2>"$NW_TMP/perf.err" || {
	nw_show "perf record" "$NW_TMP/perf.err"
	fail "perf record failed"
}
wait "$rec" || fail "narwhal-record failed: $(cat "$d2.err")"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null || true
perf report -i "$NW_TMP/perf.data" --stdio --no-children --sort dso -q 2>/dev/null >"$NW_TMP/perf.dso"
perf report -i "$NW_TMP/perf.data" --stdio --no-children --sort sym -q 2>/dev/null >"$NW_TMP/perf.sym"
nw_report "$NW_TMP/acc.mod" "$d2" --by module
nw_report "$NW_TMP/acc.flat" "$d2" --flat
pk=$(awk '$2 == "[kernel.kallsyms]" { sub(/%/, "", $1); print $1 }' "$NW_TMP/perf.dso")
nk=$(awk '$NF == "[kernel.kallsyms]" { sub(/%/, "", $1); print $1 }' "$NW_TMP/acc.mod")
echo "  kernel share: perf ${pk:-?}%, narwhal ${nk:-?}%"
nw_near "${nk:-0}" "${pk:-100}" 2 || {
	nw_show "perf report --sort dso" "$NW_TMP/perf.dso"
	nw_show "narwhal-report --by module" "$NW_TMP/acc.mod"
	fail "kernel share: Narwhal ${nk:-?}%, perf ${pk:-?}%"
}
# perf's three hottest kernel functions, each beside Narwhal's self share.
worst=0
while read -r pct name; do
	n=$(share "$NW_TMP/acc.flat" "$name")
	echo "  $name: perf $pct%, narwhal $n%"
	nw_near "$n" "$pct" "$(awk -v p="$pct" 'BEGIN { print (p / 4 > 2 ? p / 4 : 2) }')" || {
		nw_show "perf report --sort sym" "$NW_TMP/perf.sym"
		nw_show "narwhal-report --flat" "$NW_TMP/acc.flat"
		fail "$name: Narwhal $n%, perf $pct%"
	}
done < <(awk '$2 == "[k]" { sub(/%/, "", $1); print $1, $3 }' "$NW_TMP/perf.sym" | head -3)
ok "kernel: Narwhal $nk%, perf $pk%"

check "--user-only and an event with :u: no kernel frames"
for opt in --user-only "-e cpu-clock:u"; do
	du=$NW_TMP/u.data
	rm -rf "$du" "$du.old"
	# shellcheck disable=SC2086
	"$NW_RECORD" -q -g fp $opt -o "$du" "$P/syscalls" 0.5 || fail "narwhal-record $opt failed"
	nw_report "$NW_TMP/u.mod" "$du" --by module
	grep -q 'kernel' "$NW_TMP/u.mod" && {
		nw_show "--by module ($opt)" "$NW_TMP/u.mod"
		fail "kernel frames with $opt"
	}
	ok "$opt: none"
done

check "as nobody with kernel.perf_event_paranoid=2: one notice, user frames only"
old=$(cat /proc/sys/kernel/perf_event_paranoid)
echo 2 >/proc/sys/kernel/perf_event_paranoid
trap 'rc=$?; echo "$old" >/proc/sys/kernel/perf_event_paranoid; nw_cleanup "$rc"' EXIT
mkdir -p "$NW_TMP/nobody"
chmod 777 "$NW_TMP/nobody"
chmod 755 "$NW_TMP"
rc=0
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$NW_RECORD" -g fp -o "$NW_TMP/nobody/n.data" "$P/syscalls" 0.5 \
	>"$NW_TMP/nobody.out" 2>"$NW_TMP/nobody.err" || rc=$?
echo "$old" >/proc/sys/kernel/perf_event_paranoid
((rc == 0)) || {
	nw_show "stderr" "$NW_TMP/nobody.err"
	fail "narwhal-record as nobody exited $rc"
}
[[ $(grep -c 'no kernel frames' "$NW_TMP/nobody.err") -eq 1 ]] || {
	nw_show "stderr" "$NW_TMP/nobody.err"
	fail "not exactly one notice about kernel frames"
}
grep -q 'perf_event_paranoid=2' "$NW_TMP/nobody.err" || fail "the notice does not name the setting"
nw_report "$NW_TMP/nobody.mod" "$NW_TMP/nobody/n.data" --by module
grep -q kernel "$NW_TMP/nobody.mod" && fail "kernel frames as nobody"
grep -q ' syscalls$' "$NW_TMP/nobody.mod" || fail "no user frames as nobody"
ok "$(grep 'no kernel frames' "$NW_TMP/nobody.err" | cut -c1-100)..."

check "kernel.kptr_restrict=2 hides kernel addresses even from root: a notice, frames as [kernel]"
kptr=$(cat /proc/sys/kernel/kptr_restrict)
restore_kptr() {
	local rc=$1

	echo "$kptr" >/proc/sys/kernel/kptr_restrict || true
	nw_cleanup "$rc"
}
trap 'restore_kptr $?' EXIT
echo 2 >/proc/sys/kernel/kptr_restrict
nw_record_ok "$NW_TMP/kptr.data" "$P/syscalls" 0.5
echo "$kptr" >/proc/sys/kernel/kptr_restrict
grep -q 'kernel frames will show as \[kernel\]:.*kernel.kptr_restrict=2' "$NW_TMP/kptr.data.err" || {
	nw_show "narwhal-record stderr" "$NW_TMP/kptr.data.err"
	fail "no notice naming kernel.kptr_restrict"
}
nw_report "$NW_TMP/kptr.flat" "$NW_TMP/kptr.data" --flat
k=$(nw_flat_self "$NW_TMP/kptr.flat" "[kernel]")
awk -v k="$k" 'BEGIN { exit !(k >= 10) }' && ! grep -q 'do_syscall_64' "$NW_TMP/kptr.flat" || {
	nw_show "--flat" "$NW_TMP/kptr.flat"
	fail "[kernel] holds $k%, or kernel functions are named"
}
ok "the notice, and [kernel] $k%"

pass
