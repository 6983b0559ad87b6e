#!/bin/bash
# --fold-recursion (tests/programs/recurse.c: direct(20) -> ... -> direct(0)
# and ping(20) -> pong(19) -> ... -> ping(0), each burning about half of
# the time at the bottom).  Without folding, --call-graph dwarf shows the
# recursion as 21 nested direct frames and 21 alternating ping/pong frames;
# with it, each function is one node on its path, and the totals and every
# function's self share stay the same.  Also in fp mode, where callers have
# no sp tag and folding goes by function alone.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# most FOLDED NAME... : the largest number of frames named NAME... in one stack.
most() {
	local f=$1

	shift
	awk -v names="$*" '
		BEGIN { split(names, want, " "); for (i in want) w[want[i]] = 1 }
		{ n = split($1, a, ";"); c = 0
		  for (i = 1; i <= n; i++) if (a[i] in w) c++
		  if (c > m) m = c }
		END { print m + 0 }' "$f"
}

# sum FOLDED : the samples of a folded report.
sum() {
	awk '{ s += $NF } END { print s + 0 }' "$1"
}

# rows TREE NAME : the rows of a --tree report whose function is NAME.
rows() {
	awk -v f="$2" '$1 ~ /%$/ && $2 ~ /%$/ && $3 == f { c++ } END { print c + 0 }' "$1"
}

# samples TREE : the "Samples: N" of a --tree or --flat report.
samples() {
	awk '$1 == "Samples:" { print $2; exit }' "$1"
}

for mode in dwarf fp; do
	d=$NW_TMP/$mode.data
	check "narwhal-record --call-graph $mode runs recurse and exits 0"
	NW_RECORD_OPTS=(--call-graph "$mode")
	nw_record_ok "$d" "$P/recurse"
	NW_RECORD_OPTS=()
	nw_check_measurement "$d"
	ok "complete"

	nw_report "$NW_TMP/$mode.folded" "$d" --folded
	nw_report "$NW_TMP/$mode.tree" "$d" --tree --percent-limit 0
	nw_report "$NW_TMP/$mode.flat" "$d" --flat
	nw_report "$NW_TMP/$mode.ffolded" "$d" --folded --fold-recursion
	nw_report "$NW_TMP/$mode.ftree" "$d" --tree --percent-limit 0 --fold-recursion
	nw_report "$NW_TMP/$mode.fflat" "$d" --flat --fold-recursion

	check "$mode, not folded: at least 20 nested direct frames, 20 nested ping/pong frames"
	nd=$(most "$NW_TMP/$mode.folded" direct)
	np=$(most "$NW_TMP/$mode.folded" ping pong)
	rd=$(rows "$NW_TMP/$mode.tree" direct)
	if ((nd < 20 || np < 20 || rd < 20)); then
		nw_show "narwhal-report --folded" "$NW_TMP/$mode.folded"
		fail "$nd direct and $np ping/pong frames in one stack, $rd direct rows in --tree"
	fi
	ok "$nd direct, $np ping/pong in one stack; $rd direct rows in --tree"

	check "$mode, --fold-recursion: one direct, ping and pong node each"
	for fn in direct ping pong; do
		n=$(rows "$NW_TMP/$mode.ftree" "$fn")
		m=$(most "$NW_TMP/$mode.ffolded" "$fn")
		if ((n != 1 || m > 1)); then
			nw_show "narwhal-report --tree --fold-recursion" "$NW_TMP/$mode.ftree"
			fail "$fn has $n rows in --tree and up to $m frames in a folded stack"
		fi
	done
	grep -Eq '(^|;)main;direct [0-9]+$' "$NW_TMP/$mode.ffolded" &&
		grep -Eq '(^|;)main;ping;pong [0-9]+$|(^|;)main;ping [0-9]+$' \
			"$NW_TMP/$mode.ffolded" || {
		nw_show "narwhal-report --folded --fold-recursion" "$NW_TMP/$mode.ffolded"
		fail "no main;direct or main;ping stack after folding"
	}
	ok "single nodes"

	check "$mode, --fold-recursion keeps the totals and each function's self share"
	a=$(sum "$NW_TMP/$mode.folded")
	b=$(sum "$NW_TMP/$mode.ffolded")
	ta=$(samples "$NW_TMP/$mode.tree")
	tb=$(samples "$NW_TMP/$mode.ftree")
	if ((a == 0 || a != b || ta != tb || ta != a)); then
		fail "folded stacks sum to $a and $b (folded), --tree says $ta and $tb"
	fi
	for fn in direct ping pong main; do
		sa=$(nw_flat_self "$NW_TMP/$mode.flat" "$fn")
		sb=$(nw_flat_self "$NW_TMP/$mode.fflat" "$fn")
		[[ $sa == "$sb" ]] || fail "self of $fn: $sa% without folding, $sb% with"
	done
	sa=$(nw_flat_self "$NW_TMP/$mode.fflat" direct)
	nw_near "$sa" 50 12 || fail "direct's self is $sa%, expected about 50%"
	ok "$a samples; direct self $sa%"
done

check "--fold-recursion applies to --tid too"
tid=$(nw_threads_rows <("$NW_REPORT" "$NW_TMP/dwarf.data" --threads) | awk 'NR == 1 { print $2 }')
nw_report "$NW_TMP/tid.ftree" "$NW_TMP/dwarf.data" --tree --percent-limit 0 --fold-recursion \
	--tid "$tid"
n=$(rows "$NW_TMP/tid.ftree" direct)
((n == 1)) || fail "--tid $tid --fold-recursion: $n direct rows"
ok "tid $tid"

pass
