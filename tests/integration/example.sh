#!/bin/bash
# The README's example (examples/demo.c, built as tests/programs/demo):
# what the README promises about it holds.  shade_pixels 60%, collide 25%,
# rasterize 15%; thread render 75%, physics 25%; draw_scene calls
# shade_pixels in the tree.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/demo.data
check "narwhal-record runs the example and exits 0"
nw_record_ok "$d" "$P/demo"
nw_check_measurement "$d"
ok "complete"

check "--flat: shade_pixels 60%, collide 25%, rasterize 15% (within 5 points)"
nw_report "$NW_TMP/flat" "$d" --flat
for spec in shade_pixels:60 collide:25 rasterize:15; do
	fn=${spec%%:*}
	want=${spec#*:}
	got=$(nw_flat_cumul "$NW_TMP/flat" "$fn")
	nw_near "$got" "$want" 5 || {
		nw_show "narwhal-report --flat" "$NW_TMP/flat"
		fail "$fn has $got%, expected $want% +- 5"
	}
	ok "$fn $got%"
done

check "--threads: render 75%, physics 25% (within 5 points)"
nw_report "$NW_TMP/threads" "$d" --threads
for spec in render:75 physics:25; do
	name=${spec%%:*}
	want=${spec#*:}
	got=$(nw_threads_rows "$NW_TMP/threads" | awk -v n="$name" '$5 == n { s += $4 } END { print s + 0 }')
	nw_near "$got" "$want" 5 || {
		nw_show "narwhal-report --threads" "$NW_TMP/threads"
		fail "thread $name has $got%, expected $want% +- 5"
	}
	ok "$name $got%"
done

check "--folded: draw_scene;shade_pixels and step_world;collide stacks"
nw_report "$NW_TMP/folded" "$d" --folded
for pair in 'draw_scene;shade_pixels' 'draw_scene;rasterize' 'step_world;collide'; do
	grep -Eq "(^|;)render_thread;$pair [0-9]+\$|(^|;)physics_thread;$pair [0-9]+\$" \
		"$NW_TMP/folded" || {
		nw_show "narwhal-report --folded" "$NW_TMP/folded"
		fail "no stack ending in ...thread;$pair"
	}
	ok "$pair"
done

pass
