#!/bin/bash
# Records the golden measurements again and writes their outputs:
#   tests/data/outputs/regen.sh [BUILD]      (default build/)
#   tests/data/outputs/regen.sh BUILD --outputs   (the outputs alone, from the measurements here)
# Only when a change of output is meant: say why in the commit.
set -euo pipefail
D=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$D/../../.." && pwd)
B=$(cd "${1:-$SRC/build}" && pwd)
R=$B/tools/narwhal-record
# Built from copies in a directory that is gone afterwards: the
# measurements name paths that exist nowhere, so --lines reads no source
# text and no binary is opened, wherever the test runs.
G=/tmp/narwhal-golden
# shellcheck source=tests/data/outputs/cases.sh
. "$D/cases.sh"
export NARWHAL_CACHE_DIR
NARWHAL_CACHE_DIR=$(mktemp -d)
trap 'rm -rf "$NARWHAL_CACHE_DIR" "$G"' EXIT
for c in "${NW_OUTPUT_CASES[@]}"; do
	IFS='|' read -r name meas args <<<"$c"
	[[ ${2:-} == --outputs ]] || break
	nw_output_run "$name" "$meas" "$args" "$B/tools/narwhal-report" "$D" "$D"
done
[[ ${2:-} != --outputs ]] || exit 0
rm -rf "$G"
mkdir -p "$G"
cp "$SRC/examples/demo.c" "$SRC/tests/programs/cxx.cpp" "$SRC/tests/programs/alloc.c" \
	"$SRC/tests/programs/sections.c" "$SRC/tests/programs/spin.h" "$G/"
cflags=(-O1 -g -fno-omit-frame-pointer -fno-inline)
gcc "${cflags[@]}" -pthread "$G/demo.c" -o "$G/demo" -lm
g++ "${cflags[@]}" "$G/cxx.cpp" -o "$G/cxx"
gcc "${cflags[@]}" "$G/alloc.c" -o "$G/alloc"
gcc "${cflags[@]}" -pthread -I"$SRC/include" "$G/sections.c" -o "$G/sections" \
	"$B/src/runtime/libnarwhal.a"

rec() {
	local name=$1

	shift
	rm -rf "${D:?}/$name"
	"$R" -F 499 -o "$D/$name" "$@" >/dev/null 2>&1
}

rec demo -- "$G/demo"
rec demo2 -- "$G/demo"
rec cxx -- "$G/cxx"
rec alloc --alloc -- "$G/alloc" leaks 2000
rec sections -- "$G/sections"
# Gone before the outputs are written, as it is wherever the test runs.
rm -rf "$G"
for c in "${NW_OUTPUT_CASES[@]}"; do
	IFS='|' read -r name meas args <<<"$c"
	nw_output_run "$name" "$meas" "$args" "$B/tools/narwhal-report" "$D" "$D"
done
du -sh "$D"
