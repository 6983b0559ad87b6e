#!/bin/bash
# Builds Narwhal, profiles the bundled example (examples/demo.c: two
# threads with a known split of CPU time) and prints the call tree and the
# flat profile.
#
#   scripts/demo.sh                  # build directory ./build
#   NW_BUILDDIR=out scripts/demo.sh  # another build directory
set -euo pipefail
cd "$(dirname "$0")/.."

builddir=${NW_BUILDDIR:-build}

# Only what building and running the profiler needs; not the test tools.
scripts/setup.sh
# A new build directory without the tests (-Dtests=false): they need cmocka
# and the tools of scripts/setup.sh --tests.  scripts/test.sh turns them on
# in the same directory; one it set up is used as it is.  Either way only
# the two tools are built.
if [[ ! -f $builddir/build.ninja ]]; then
	meson setup -Dtests=false "$builddir" >/dev/null
fi
ninja -C "$builddir" tools/narwhal-record tools/narwhal-report >/dev/null

mkdir -p "$builddir/examples"
"${CC:-cc}" -O1 -g -fno-omit-frame-pointer -pthread examples/demo.c -o "$builddir/examples/demo"

data=$builddir/demo.data
rm -rf "$data.old"
echo "\$ narwhal-record -o $data $builddir/examples/demo"
"$builddir/tools/narwhal-record" -o "$data" "$builddir/examples/demo"
echo
# As root the kernel's frames stand below the clock reads: the tree hides
# what holds under 2 %, the flat profile shows its first 12 rows.
echo "\$ narwhal-report $data --tree --percent-limit 2"
"$builddir/tools/narwhal-report" "$data" --tree --percent-limit 2
echo
echo "\$ narwhal-report $data --flat | head -n 12"
"$builddir/tools/narwhal-report" "$data" --flat | head -n 12
