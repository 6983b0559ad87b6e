#!/bin/bash
# Exact addresses (issue 24): the user frame the kernel was entered from
# holds the interrupted PC, not a return address, so it is never moved back
# a byte.  tests/programs/entryloop makes a system call as the last
# instruction of enter_kernel; the kernel returns to the first instruction
# of spin_at_entry, a loop.  Samples taken in the system call have kernel
# frames below the user PC spin_at_entry+0.  Moved back a byte, that PC
# would land inside enter_kernel's syscall instruction: enter_kernel would
# get the system call's samples and --addresses would list an address in
# the middle of an instruction.  Checked in the default (CFI) mode and in
# fp mode, each against --user-only: the same user stacks, less the kernel
# frames.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

prog=$P/entryloop
command -v objdump >/dev/null || fail "objdump is missing (binutils: scripts/setup.sh --tests)"

# Every instruction start of the program's text, as "0xADDR" lines.
objdump -d --no-show-raw-insn "$prog" |
	awk '/^ *[0-9a-f]+:\t/ { sub(/:.*/, ""); gsub(/ /, ""); print "0x" $0 }' |
	sort -u >"$NW_TMP/insns"
[[ -s $NW_TMP/insns ]] || fail "objdump listed no instructions of $prog"

# user_stacks FOLDED: the folded stacks with their kernel frames dropped
# (frames from the first kernel one on), summed per stack, as "COUNT STACK".
user_stacks() {
	awk '{
		n = $NF; k = split($1, f, ";"); s = ""
		for (i = 1; i <= k; i++) {
			if (f[i] ~ /^(entry_SYSCALL|asm_|do_syscall|__x64_sys|x64_sys|el0|__arm64_sys|\[kernel)/)
				break
			s = s (i > 1 ? ";" : "") f[i]
		}
		c[s] += n
	} END { for (s in c) print c[s], s }' "$1" | sort -k2
}

# share FOLDED-USER RE: the percentage of samples whose user leaf matches RE.
share() {
	awk -v re="$2" '{ t += $1; k = split($2, f, ";"); if (f[k] ~ re) s += $1 }
		END { printf "%.1f", t ? 100 * s / t : 0 }' "$1"
}

for mode in dwarf fp; do
	d=$NW_TMP/$mode.data
	u=$NW_TMP/$mode-user.data
	check "$mode: kernel frames below spin_at_entry's first instruction"
	nw_record_ok "$d" -F 1999 -g "$mode" "$prog" 0.6
	nw_record_ok "$u" -F 1999 -g "$mode" --user-only "$prog" 0.6
	nw_report "$NW_TMP/$mode.folded" "$d" --folded
	# The system call's samples: kernel frames right below spin_at_entry.
	ksys=$(awk '$1 ~ /;spin_at_entry;entry_SYSCALL|;spin_at_entry;el0/ { s += $NF } END { print s + 0 }' \
		"$NW_TMP/$mode.folded")
	kother=$(awk '$1 ~ /;enter_kernel;(entry_SYSCALL|el0)/ { s += $NF } END { print s + 0 }' \
		"$NW_TMP/$mode.folded")
	total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/$mode.folded")
	((ksys * 10 >= total && kother == 0)) || {
		nw_show "--folded" "$NW_TMP/$mode.folded"
		fail "$mode: $ksys of $total samples in the system call below spin_at_entry, $kother below enter_kernel"
	}
	ok "$ksys of $total samples in the system call, all below spin_at_entry"

	check "$mode: every address --addresses lists is an instruction start (objdump)"
	nw_report "$NW_TMP/$mode.addr" "$d" --addresses '^(spin_at_entry|enter_kernel|main)$'
	awk '$3 ~ /^entryloop\+0x/ { sub(/^entryloop\+/, "", $3); print $3 }' "$NW_TMP/$mode.addr" |
		sort -u >"$NW_TMP/$mode.addrs"
	[[ -s $NW_TMP/$mode.addrs ]] || {
		nw_show "--addresses" "$NW_TMP/$mode.addr"
		fail "$mode: --addresses listed no address of entryloop"
	}
	bad=$(comm -23 "$NW_TMP/$mode.addrs" "$NW_TMP/insns" | tr '\n' ' ')
	[[ -z $bad ]] || {
		nw_show "--addresses" "$NW_TMP/$mode.addr"
		fail "$mode: addresses inside an instruction: $bad"
	}
	grep -q 'entryloop+0x' "$NW_TMP/$mode.addr" && grep -q '^Function: spin_at_entry' "$NW_TMP/$mode.addr" ||
		fail "$mode: spin_at_entry has no addresses"
	ok "$(wc -l <"$NW_TMP/$mode.addrs") addresses, all instruction starts"

	check "$mode: the same user stacks as --user-only, less the kernel frames"
	nw_report "$NW_TMP/$mode-user.folded" "$u" --folded
	user_stacks "$NW_TMP/$mode.folded" >"$NW_TMP/$mode.ustacks"
	user_stacks "$NW_TMP/$mode-user.folded" >"$NW_TMP/$mode-user.ustacks"
	# Both runs: nearly every sample ends in spin_at_entry, few in
	# enter_kernel (its instructions before the system call: 3-5 %, up to
	# 5.1 % seen on a loaded machine).  A PC moved back a byte would give
	# enter_kernel the system call's samples, a tenth to a half of all.
	for f in "$NW_TMP/$mode.ustacks" "$NW_TMP/$mode-user.ustacks"; do
		s=$(share "$f" '^spin_at_entry$')
		e=$(share "$f" '^enter_kernel$')
		awk -v s="$s" -v e="$e" 'BEGIN { exit !(s >= 80 && e <= 8) }' || {
			nw_show "user stacks" "$f"
			fail "$mode: spin_at_entry ends $s% of the user stacks, enter_kernel $e% ($f)"
		}
	done
	# A stack holding 2% or more of one run is in the other too.
	heavy() {
		awk '{ t += $1; c[$2] = $1 } END { for (s in c) if (c[s] * 50 >= t) print s }' "$1" | sort
	}
	all() {
		awk '{ print $2 }' "$1" | sort
	}
	missing=$(comm -23 <(heavy "$NW_TMP/$mode.ustacks") <(all "$NW_TMP/$mode-user.ustacks"))
	missing+=$(comm -23 <(heavy "$NW_TMP/$mode-user.ustacks") <(all "$NW_TMP/$mode.ustacks"))
	[[ -z $missing ]] || {
		nw_show "with kernel frames" "$NW_TMP/$mode.ustacks"
		nw_show "--user-only" "$NW_TMP/$mode-user.ustacks"
		fail "$mode: user stacks of 2% or more in one run only: $missing"
	}
	ok "spin_at_entry $(share "$NW_TMP/$mode.ustacks" '^spin_at_entry$')% and $(share "$NW_TMP/$mode-user.ustacks" '^spin_at_entry$')%"
done

check "stack health: every sample complete, no stop at an address before a function"
nw_report "$NW_TMP/health" "$NW_TMP/dwarf.data" --stack-health
grep -q '^Stopped: *0 ' "$NW_TMP/health" || {
	nw_show "--stack-health" "$NW_TMP/health"
	fail "stops in a program whose stacks all end at _start"
}
ok "no stops"

pass
