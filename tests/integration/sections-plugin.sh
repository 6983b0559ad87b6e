#!/bin/bash
# The GCC plugin (plugin/narwhal-plugin.cc): programs with "#pragma narwhal"
# (tests/programs/pragma.c, pragma.cpp) compiled with -fplugin at -O0 and
# -O2, linked with libnarwhal; their reports count every call and every way
# out (returns, a prototype's pragma, recursion, C++ exceptions); a pragma
# without a function gets a warning; without the plugin nothing is timed;
# under narwhal-record the plugin's sections join the samples.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

PLUGIN=$NW_BUILD/plugin/narwhal-plugin.so
RT=$NW_BUILD/src/runtime
[[ -f $PLUGIN ]] || fail "$PLUGIN was not built: GCC's plugin headers are missing (scripts/setup.sh --tests installs gcc-12-plugin-dev)"
command -v g++ >/dev/null || fail "g++ is missing (scripts/setup.sh --tests installs it)"

calls() {
	awk -v name="$2" '
		/^Flat summary/ { flat = 1; next }
		flat && /^$/ { flat = 0 }
		flat && $NF == name { print $6; found = 1; exit }
		END { if (!found) print "none" }' "$1"
}

expect_calls() {
	local got

	got=$(calls "$1" "$2")
	if [[ $got != "$3" ]]; then
		nw_show "report" "$1"
		fail "$2: $got calls in the flat summary, expected $3"
	fi
}

# build COMPILER OUT SOURCE FLAGS... : compiles and links with libnarwhal.
build() {
	local compiler=$1 out=$2 src=$3

	shift 3
	"$compiler" "$@" -g -I"$NW_SRC/include" "$src" -o "$out" -L"$RT" -lnarwhal \
		-Wl,-rpath,"$RT" 2>"$out.cc.err" || {
		nw_show "$compiler" "$out.cc.err"
		fail "$compiler $* $src failed"
	}
}

for opt in -O0 -O2; do
	check "C at $opt: parse 10 (three returns), work 1, 'quoted name' 3, later 2 (prototype), fact 6"
	exe=$NW_TMP/pragma$opt
	build gcc "$exe" "$NW_SRC/tests/programs/pragma.c" "$opt" -fplugin="$PLUGIN"
	grep -q "pragma.c:[0-9]*:[0-9]*: warning: .#pragma narwhal. not followed by a function definition" \
		"$exe.cc.err" || { nw_show gcc "$exe.cc.err"; fail "no warning for the pragma without a function"; }
	NARWHAL_REPORT=$exe.report "$exe" >"$exe.out" || fail "$exe exited $?"
	[[ $(cat "$exe.out") == "66 720" ]] || fail "the program computed '$(cat "$exe.out")', not '66 720'"
	for spec in parse:10 work:1 later:2 fact:6; do
		expect_calls "$exe.report" "${spec%%:*}" "${spec#*:}"
	done
	grep -q '^ *[0-9.]*% .* 3 .* quoted name$' "$exe.report" || { nw_show report "$exe.report"; fail "'quoted name' not called 3 times"; }
	grep -q '^  `-- parse  .*(10 calls' "$exe.report" || fail "hierarchy: parse not below work"
	grep -Eq '^    location:    .*pragma\.c:[0-9]+$' "$exe.report" || fail "no location in the details"
	ok "counts and nesting at $opt"
done

check "without the plugin the pragma does nothing"
exe=$NW_TMP/pragma-plain
build gcc "$exe" "$NW_SRC/tests/programs/pragma.c" -O2 -Wno-unknown-pragmas
"$exe" >/dev/null 2>"$exe.err" || fail "$exe exited $?"
! grep -q '^==== Narwhal sections' "$exe.err" || fail "sections without the plugin"
ok "no report"

check "C++: in-class member function, exceptions leaving the function, template"
exe=$NW_TMP/pragmacxx
build g++ "$exe" "$NW_SRC/tests/programs/pragma.cpp" -O2 -fplugin="$PLUGIN"
NARWHAL_REPORT=$exe.report "$exe" >"$exe.out" || fail "$exe exited $?"
for spec in box_area:4 thrower:4 twice:2; do
	expect_calls "$exe.report" "${spec%%:*}" "${spec#*:}"
done
! grep -q 'Notes:' "$exe.report" || { nw_show report "$exe.report"; fail "unbalanced or open sections after exceptions"; }
ok "box_area 4, thrower 4 (closed by unwinding), twice 2"

check "under narwhal-record: the plugin's sections join the samples"
d=$NW_TMP/pragma.data
nw_record_ok "$d" "$NW_TMP/pragma-O2"
nw_report "$NW_TMP/sec" "$d" --sections
for name in parse work fact later; do
	grep -q " $name\$" "$NW_TMP/sec" || { nw_show "--sections" "$NW_TMP/sec"; fail "--sections lacks $name"; }
done
grep -q '^Joined with cpu-clock:samples: ' "$NW_TMP/sec" || fail "--sections did not join the samples"
ok "--sections lists the plugin's sections"

pass
