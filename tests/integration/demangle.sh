#!/bin/bash
# Demangling: tests/programs/cxx (g++) shows C++ names as written in the
# source, never as _Z symbols: short in the text views (ns::Worker::run,
# ns::Counter<long>::tick), whole with --full-names and in folded stacks (a
# function template with its signature).  When rustc is installed, a Rust
# program built here (no cargo) shows its demangled path.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

d=$NW_TMP/cxx.data
check "narwhal-record runs cxx and exits 0"
nw_record_ok "$d" "$P/cxx"
nw_check_measurement "$d"
ok "complete"

nw_report "$NW_TMP/flat" "$d" --flat
nw_report "$NW_TMP/full" "$d" --flat --full-names
nw_report "$NW_TMP/folded" "$d" --folded
nw_report "$NW_TMP/tree" "$d" --tree

# The text views show short names (no parameters, no return type), as
# perf report and pprof do; --full-names and the folded stacks keep the
# whole demangled signature.
check "--flat names the method, the class template member and the function template, short"
for fn in 'ns::Worker::run' 'ns::Counter<long>::tick' 'ns::churn<unsigned int>'; do
	grep -Fq " $fn (cxx.cpp:" "$NW_TMP/flat" || {
		nw_show "narwhal-report --flat" "$NW_TMP/flat"
		fail "no row '$fn (cxx.cpp:LINE)'"
	}
	ok "$fn"
done
if grep -Fq '(unsigned int)' "$NW_TMP/flat"; then
	nw_show "narwhal-report --flat" "$NW_TMP/flat"
	fail "a parameter list is left in a short name"
fi

check "--flat --full-names shows the signatures"
for fn in 'ns::Worker::run()' 'ns::Counter<long>::tick()' \
	'unsigned int ns::churn<unsigned int>(unsigned int)'; do
	grep -Fq " $fn (cxx.cpp:" "$NW_TMP/full" || {
		nw_show "narwhal-report --flat --full-names" "$NW_TMP/full"
		fail "no row '$fn (cxx.cpp:LINE)'"
	}
	ok "$fn"
done

check "--folded: main;ns::Worker::run();ns::Counter<long>::tick() holds about a third"
total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/folded")
((total > 0)) || fail "no samples"
n=$(awk 'index($0, ";main;ns::Worker::run();ns::Counter<long>::tick() ") { s += $NF }
	END { print s + 0 }' "$NW_TMP/folded")
share=$(awk -v n="$n" -v t="$total" 'BEGIN { printf "%.1f", 100 * n / t }')
nw_near "$share" 33 12 || {
	nw_show "narwhal-report --folded" "$NW_TMP/folded"
	fail "the stack holds $share%, expected 33% +- 12"
}
ok "$share%"

check "no mangled C++ name anywhere in the reports"
if grep -Eh '(^|[ ;])_Z[A-Za-z0-9_]+' "$NW_TMP/flat" "$NW_TMP/full" "$NW_TMP/folded" "$NW_TMP/tree"; then
	fail "a mangled name is left (above)"
fi
ok "none"

check "Rust: a program built with rustc shows rustprog::narwhal::burner::spin_rust"
if ! command -v rustc >/dev/null 2>&1; then
	echo "  skip: rustc is not installed"
	pass
	exit 0
fi
rustc -g -C force-frame-pointers=yes -C opt-level=1 -o "$NW_TMP/rustprog" \
	"$NW_SRC/tests/programs/rustprog.rs" 2>"$NW_TMP/rustc.err" || {
	nw_show "rustc stderr" "$NW_TMP/rustc.err"
	fail "rustc cannot build tests/programs/rustprog.rs"
}
nm "$NW_TMP/rustprog" >"$NW_TMP/rust.nm"
grep -Eq ' (_ZN|_R).*spin_rust' "$NW_TMP/rust.nm" ||
	fail "rustprog has no mangled spin_rust symbol: nothing to demangle"
nw_record_ok "$NW_TMP/rust.data" "$NW_TMP/rustprog"
nw_report "$NW_TMP/rust.folded" "$NW_TMP/rust.data" --folded
nw_report "$NW_TMP/rust.flat" "$NW_TMP/rust.data" --flat
total=$(awk '{ s += $NF } END { print s + 0 }' "$NW_TMP/rust.folded")
n=$(awk 'index($0, "rustprog::main;rustprog::narwhal::burner::spin_rust") { s += $NF }
	END { print s + 0 }' "$NW_TMP/rust.folded")
((total > 0)) || fail "no samples of rustprog"
share=$(awk -v n="$n" -v t="$total" 'BEGIN { printf "%.1f", 100 * n / t }')
awk -v s="$share" 'BEGIN { exit !(s >= 70) }' || {
	nw_show "narwhal-report --folded" "$NW_TMP/rust.folded"
	fail "stacks through rustprog::main;rustprog::narwhal::burner::spin_rust hold $share%"
}
if grep -Eq '(^|[ ;])(_ZN|_R[A-Z])[A-Za-z0-9_]*spin_rust' "$NW_TMP/rust.folded" "$NW_TMP/rust.flat"; then
	fail "a mangled Rust name is left"
fi
# The legacy scheme's hash suffix (::h0123456789abcdef) is not shown.
if grep -Eq 'spin_rust::h[0-9a-f]{16}' "$NW_TMP/rust.folded"; then
	fail "the Rust hash suffix is shown"
fi
ok "$share% of the samples"

pass
