#!/bin/bash
# Installs the Debian packages Narwhal needs, through apt (as root, or with
# sudo).  Two profiles:
#
#   scripts/setup.sh           build and run the profiler (scripts/demo.sh)
#   scripts/setup.sh --tests   that, and everything the test suite needs
#                              (scripts/test.sh), npm ci in tests/js included
#   scripts/setup.sh --bench   the profiler, and the tools bench/ compares
#                              Narwhal with (perf, heaptrack)
#
# Idempotent: when every package of the profile is already installed (and,
# with --tests, tests/js/node_modules matches its lock file) it does nothing.
set -euo pipefail

usage() {
	echo "usage: scripts/setup.sh [--tests | --bench]"
}

tests=0
bench=0
case ${1-} in
'') ;;
--tests) tests=1 ;;
--bench) bench=1 ;;
-h | --help)
	usage
	exit 0
	;;
*)
	usage >&2
	exit 2
	;;
esac
if [[ $# -gt 1 ]]; then
	usage >&2
	exit 2
fi

# ==== Build and run the profiler (both profiles) ====
# The C compiler and the C library's headers (gcc only recommends them),
# meson, ninja, and pkg-config, through which meson finds the libraries.
packages=(gcc libc6-dev meson ninja-build pkg-config)

# What meson.build requires: libpfm4 (event names, -e), elfutils' libelf and
# libdw (ELF files, DWARF, CFI unwinding, symbols), zlib, json-c (the
# measurement's JSON files), libiberty (the C++/Rust demangler), protobuf-c
# and protoc-c (the pprof export, generated from src/export/profile.proto).
packages+=(libpfm4-dev libelf-dev libdw-dev zlib1g-dev libjson-c-dev libiberty-dev
	libprotobuf-c-dev protobuf-c-compiler)
# capstone decodes the machine code a measurement keeps, x86-64 and aarch64
# alike, for narwhal-report --disasm (src/arch/disasm.c, doc/DISASSEMBLY.md).
packages+=(libcapstone-dev)

# The in-kernel unwinder (-g bpf, doc/UNWINDING.md): clang compiles
# src/bpf/unwind.bpf.c for the BPF target, bpftool turns it into a skeleton
# header, libbpf loads it (meson's -Dbpf=auto builds without them, and the
# recorder then keeps dwarf mode).
packages+=(clang-14 bpftool libbpf-dev)

# Symbolization: Debian's detached debug info of the C library, so that
# libc's own functions get names and file:line (found by build-id under
# /usr/lib/debug; tests/integration/split-debug.sh checks it when present).
packages+=(libc6-dbg)
# libdw loads libdebuginfod.so.1 at run time when DEBUGINFOD_URLS is set
# (narwhal-record fetches missing debug info through it; nothing links it,
# so its -dev package is not needed); tests/integration/debuginfod.sh.
packages+=(libdebuginfod1)

# ==== The test suite (--tests) ====
test_packages=()
# cmocka for the unit tests (-Dtests=true, which scripts/test.sh sets);
# g++ (build-essential) for the C++ programs of tests/programs; python3 for
# scripts/test.sh's count of the test log and tests/debuginfod-server.py.
test_packages+=(build-essential libcmocka-dev python3)

# The demangling test builds a Rust program (and g++ one, from build-essential).
test_packages+=(rustc)

# ---- Exports (doc/EXPORTS.md): the tools the export tests check them with ----
# protoc and Debian's profile.proto decode the pprof export, Go's pprof reads
# it, xmllint and Chromium check the SVG flame graph, and node runs the npm
# packages of tests/js (speedscope's schema and app, ajv, playwright-core,
# puppeteer-core, ESLint).  The HTML report is opened in Chromium and in
# Firefox (Debian's firefox-esr, driven over WebDriver BiDi by puppeteer-core:
# no browser download).  The versions pinned in tests/js/package-lock.json
# run on Debian 12's own node 18 and npm 9 and on newer ones, and drive the
# chromium and firefox-esr of bookworm (150, ESR 140) as well as those of
# bookworm-security; doc/TESTING.md says how to check.
test_packages+=(protobuf-compiler golang-go golang-github-google-pprof-dev libxml2-utils
	chromium firefox-esr)
# Debian's node and npm, unless a node with its own npm is there already
# (NodeSource's nodejs provides npm and conflicts with Debian's npm package).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	test_packages+=(nodejs npm)
fi
# ---- end of the exports' block ----

# ---- Comparisons with perf ----
# tests/integration/kernel.sh records the same run with perf and compares
# the kernel's share and top kernel functions (bench/ uses it too).
test_packages+=(linux-perf)
# ---- end of the comparisons' block ----

# ---- Fuzzing and sanitizers (doc/TESTING.md) ----
# clang with libFuzzer and its ASan/UBSan runtimes (libclang-rt-14-dev) for
# scripts/fuzz.sh; valgrind for scripts/valgrind.sh.  gcc's own ASan and
# UBSan (libasan, libubsan) come with build-essential's gcc.
test_packages+=(clang-14 libclang-rt-14-dev valgrind)
# ---- end of the fuzzing block ----

# ---- Instrumented sections (doc/SECTIONS.md) ----
# GCC's plugin headers build plugin/narwhal-plugin.so (#pragma narwhal), with
# g++ of the same version; tests/integration/sections-plugin.sh needs both.
test_packages+=(gcc-12-plugin-dev g++)
# ---- end of the sections block ----

if [[ $tests -eq 1 ]]; then
	packages+=("${test_packages[@]}")
fi

# ==== Benchmarks (--bench) ====
# perf for bench/run.py and bench/unwind.py, heaptrack for bench/alloc.py
# (narwhal-record --alloc beside it, doc/ALLOCATIONS.md).
if [[ $bench -eq 1 ]]; then
	packages+=(linux-perf heaptrack)
fi

# npm ci in tests/js (--tests only), when node_modules is missing or older
# than the lock file.  --engine-strict: a package that does not run on this
# node (a newer ESLint on Debian 12's node 18, say) fails here, named, rather
# than in a test.
setup_js() {
	local js
	[[ $tests -eq 1 ]] || return 0
	js=$(cd "$(dirname "$0")/../tests/js" && pwd)
	if [[ -f $js/node_modules/.package-lock.json &&
		! $js/package-lock.json -nt $js/node_modules/.package-lock.json ]]; then
		return 0
	fi
	echo "setup.sh: npm ci in tests/js" >&2
	(cd "$js" && npm ci --engine-strict --no-audit --no-fund --loglevel=error >/dev/null)
}

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	if [[ $status != ii* ]]; then
		missing+=("$p")
	fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
	setup_js
	exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
	sudo=()
elif command -v sudo >/dev/null 2>&1; then
	sudo=(sudo)
else
	echo "setup.sh: not root and sudo is missing; install as root: ${missing[*]}" >&2
	exit 1
fi

echo "setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
setup_js
