#!/bin/bash
# Stopping narwhal-record: SIGINT (Ctrl-C) or SIGTERM sent to narwhal-record
# alone is forwarded to the program (tests/programs/longrun.c, which never
# ends by itself); narwhal-record then exits with the program's status
# (130 or 143) and writes a complete measurement showing forever_loop,
# leaving no staging directory beside it.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# Job control: background jobs then keep the default SIGINT disposition
# (without it, bash starts them with SIGINT ignored).
set -m

# stop_test SIGNAL STATUS
stop_test() {
	local sig=$1 want=$2 d=$NW_TMP/$1.data pid child rc=0 i

	check "SIG$sig to narwhal-record after the program ran 1 s: exit $want, complete measurement"
	"$NW_RECORD" -e cpu-clock -o "$d" "$P/longrun" >"$d.out" 2>"$d.err" &
	pid=$!
	child=
	for ((i = 0; i < 50 && ${#child} == 0; i++)); do
		sleep 0.1
		child=$(nw_children "$pid" | head -n 1)
	done
	[[ -n $child ]] || fail "narwhal-record (pid $pid) started no program within 5 s"
	sleep 1
	kill -s "$sig" "$pid"
	# Allow 20 s for writing the measurement; a hang is a failure.
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -s KILL "$pid" "$child" 2>/dev/null || true
		fail "narwhal-record still runs 20 s after SIG$sig"
	fi
	wait "$pid" || rc=$?
	if [[ $rc -ne $want ]]; then
		nw_show "narwhal-record stderr" "$d.err"
		fail "exit status $rc after SIG$sig, expected $want"
	fi
	if kill -0 "$child" 2>/dev/null; then
		kill -s KILL "$child" 2>/dev/null || true
		fail "the program (pid $child) still runs after narwhal-record exited"
	fi
	ok "exit status $rc, program gone"

	nw_check_measurement "$d"
	left=$(compgen -G "$d.sections-*" || true)
	[[ -z $left ]] || fail "the sections' staging directory was left behind: $left"
	grep -Eq '^narwhal-record: [0-9]+ samples? from 1 thread in 1 process' "$d.err" || {
		nw_show "narwhal-record stderr" "$d.err"
		fail "no summary line"
	}
	nw_report "$NW_TMP/flat-$sig" "$d" --flat
	got=$(nw_flat_cumul "$NW_TMP/flat-$sig" forever_loop)
	nw_near "$got" 100 10 || fail "forever_loop holds $got%, expected 90% or more"
	nw_report "$NW_TMP/threads-$sig" "$d" --threads
	samples=$(nw_threads_rows "$NW_TMP/threads-$sig" | awk '{ s += $3 } END { print s + 0 }')
	# Up to 1 s of CPU at 999 Hz; far less on a loaded machine, but never none.
	((samples >= 20 && samples <= 2000)) || fail "$samples samples for 1 s, expected 20 to 2000"
	sumline=$(grep -Eo '^narwhal-record: [0-9]+ samples?' "$d.err" | grep -Eo '[0-9]+')
	[[ $sumline -eq $samples ]] || fail "the summary line says $sumline samples, --threads $samples"
	ok "measurement complete: forever_loop $got%, $samples samples"
}

stop_test INT 130
stop_test TERM 143

pass
