#!/bin/bash
# Child processes: sh -c "burn alpha; burn beta" is followed through fork
# and exec; both programs' functions appear and --threads shows 2 or more
# processes.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/forkexec.data
check "narwhal-record follows sh -c '$P/burn alpha; $P/burn beta' and exits 0"
nw_record_ok "$d" sh -c "'$P/burn' alpha; '$P/burn' beta"
nw_check_measurement "$d"
ok "measurement is complete"

check "--flat shows burn_alpha and burn_beta, about 50% each"
nw_report "$NW_TMP/flat" "$d" --flat
for fn in burn_alpha burn_beta; do
	got=$(nw_flat_cumul "$NW_TMP/flat" "$fn")
	if ! nw_near "$got" 50 10; then
		nw_show "narwhal-report --flat" "$NW_TMP/flat"
		fail "$fn holds $got%, expected 50% +- 10"
	fi
	ok "$fn $got%"
done

check "--threads shows the burn program in 2 or more processes"
nw_report "$NW_TMP/threads" "$d" --threads
nw_threads_rows "$NW_TMP/threads" >"$NW_TMP/rows"
npids=$(awk '$5 == "burn" && $3 > 0 { print $1 }' "$NW_TMP/rows" | sort -u | wc -l)
if ((npids < 2)); then
	nw_show "narwhal-report --threads" "$NW_TMP/threads"
	fail "burn sampled in $npids process(es), expected 2"
fi
ok "burn sampled in $npids processes"

check "--tid of each burn thread isolates one of the two functions"
while read -r pid tid samples _ name <&3; do
	[[ $name == burn && $samples -gt 0 ]] || continue
	nw_report "$NW_TMP/flat-$tid" "$d" --flat --tid "$tid"
	a=$(nw_flat_cumul "$NW_TMP/flat-$tid" burn_alpha)
	b=$(nw_flat_cumul "$NW_TMP/flat-$tid" burn_beta)
	if ! { nw_near "$a" 100 5 && nw_near "$b" 0 0; } &&
		! { nw_near "$b" 100 5 && nw_near "$a" 0 0; }; then
		nw_show "narwhal-report --flat --tid $tid" "$NW_TMP/flat-$tid"
		fail "process $pid: burn_alpha $a%, burn_beta $b%; expected one of them alone"
	fi
	ok "pid $pid tid $tid: burn_alpha $a%, burn_beta $b%"
done 3<"$NW_TMP/rows"

pass
