#!/bin/bash
# Containers and files that change under a running program (issue 14):
#  - a program in its own mount and PID namespaces, chrooted, at a path
#    where the host holds another build with other symbols (box-inside
#    and box-host, tests/programs/box.c): named from its own file, its
#    host pid in the views and its in-container pid 1 in the manifest;
#  - a binary deleted while it runs, and one replaced by another build:
#    named from the file that was mapped.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[[ $(id -u) -eq 0 ]] || fail "container.sh runs as root (unshare, chroot)"

# named_build FLAT RAN OTHER : the build that ran (function RAN) holds 80%
# or more of the samples in a --flat report, the other (OTHER) none; prints
# RAN's share.
named_build() {
	local share

	share=$(nw_flat_cumul "$1" "$2")
	awk -v s="$share" 'BEGIN { exit !(s >= 80) }' && ! nw_flat_has "$1" "$3" || {
		nw_show "--flat" "$1"
		fail "$2 $share% (the build that ran), or $3 (the other build) shown"
	}
	echo "$share"
}

check "unshare --mount --pid --fork chroot: the container's own build is named"
root=$NW_TMP/root
same=$NW_TMP/same
mkdir -p "$root$same" "$same"
cp "$P/box-inside" "$root$same/box"
cp "$P/box-host" "$same/box"
d=$NW_TMP/ns.data
nw_record_ok "$d" unshare --mount --pid --fork chroot "$root" "$same/box" 1
nw_check_measurement "$d"
nw_report "$NW_TMP/ns.flat" "$d" --flat
inside=$(named_build "$NW_TMP/ns.flat" inside_work host_work)
ok "inside_work $inside%, host_work absent"

check "the host's pid in the views, the in-container pid 1 in the manifest"
read -r hostpid nspid < <(python3 - "$d/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
box = [p for p in m["processes"] if p["comm"] == "box"]
print(box[0]["pid"] if box else 0, box[0].get("nspid", 0) if box else 0)
PY
)
[[ $nspid -eq 1 && $hostpid -gt 1 ]] || fail "box: pid $hostpid, nspid $nspid (expected a host pid and 1)"
nw_report "$NW_TMP/ns.threads" "$d" --threads
nw_threads_rows "$NW_TMP/ns.threads" | awk -v p="$hostpid" '$1 == p && $5 == "box" { f = 1 } END { exit !f }' || {
	nw_show "--threads" "$NW_TMP/ns.threads"
	fail "no row for box under its host pid $hostpid"
}
ok "pid $hostpid on the host, $nspid in its namespace"

# run_changing WHAT DIR: runs box-host from a copy that is deleted
# (WHAT=delete) or replaced by box-inside (WHAT=replace) while box waits
# for its flag file, before it works.
run_changing() {
	local what=$1 dir=$2 bin=$NW_TMP/$1/box flag=$NW_TMP/$1.flag pid i

	mkdir -p "$NW_TMP/$what"
	cp "$P/box-host" "$bin"
	touch "$flag"
	"$NW_RECORD" -e cpu-clock -o "$dir" "$bin" 0.5 "$flag" >"$dir.out" 2>"$dir.err" &
	pid=$!
	# Change the file once the program runs from it (and the recorder has seen it mapped).
	for ((i = 0; i < 100; i++)); do
		pgrep -f "^$bin 0.5" >/dev/null && break
		sleep 0.05
	done
	sleep 0.3
	if [[ $what == delete ]]; then
		rm "$bin"
	else
		cp "$P/box-inside" "$bin.new"
		mv "$bin.new" "$bin"
	fi
	rm "$flag"
	wait "$pid" || { nw_show "narwhal-record" "$dir.err"; fail "narwhal-record exited $?"; }
}

for what in delete replace; do
	check "a binary ${what}d while it runs: named from the file that was mapped"
	d=$NW_TMP/$what.data
	run_changing "$what" "$d"
	nw_check_measurement "$d"
	nw_report "$NW_TMP/$what.flat" "$d" --flat
	host=$(named_build "$NW_TMP/$what.flat" host_work inside_work)
	# Every stack through the changed file unwinds: none stops in it. A
	# sample in start-up code may stop there: ld.so's, or the program's
	# own crti.o _init (and _start, _fini), which have no CFI at all.
	nw_report "$NW_TMP/$what.health" "$d" --stack-health
	if sed -n '/^Where unwinding stops/,$p' "$NW_TMP/$what.health" |
		grep "/$what/box" | grep -qvE '\((_init|_start|_fini)\)'; then
		nw_show "--stack-health" "$NW_TMP/$what.health"
		fail "stacks stop in the changed binary: the unwinder did not read the mapped file"
	fi
	complete=$(awk '/^Complete:/ { print $3 }' "$NW_TMP/$what.health")
	awk -v c="${complete%\%}" 'BEGIN { exit !(c >= 99.0) }' || {
		nw_show "--stack-health" "$NW_TMP/$what.health"
		fail "only $complete of the stacks complete"
	}
	ok "host_work $host%, stacks $complete complete, none stopping in the changed file"
done

pass
