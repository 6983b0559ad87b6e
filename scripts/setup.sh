#!/bin/bash
# Installs the Debian packages Narwhal needs to build and test.
# Idempotent: when every package is already installed it does nothing.
set -euo pipefail

packages=(
	build-essential gcc meson ninja-build pkg-config
	libpfm4-dev libelf-dev libdw-dev libdebuginfod-dev libcmocka-dev zlib1g-dev
	libjson-c-dev libiberty-dev libprotobuf-c-dev protobuf-c-compiler
	python3
)

# Symbolization: Debian's detached debug info of the C library, so that
# libc's own functions get names and file:line (found by build-id under
# /usr/lib/debug; tests/integration/split-debug.sh checks it when present).
packages+=(libc6-dbg)

# The demangling test builds a Rust program (and g++ one, from build-essential).
packages+=(rustc)

# ---- Exports (doc/EXPORTS.md): the tools the export tests check them with ----
# protoc and Debian's profile.proto decode the pprof export, Go's pprof reads
# it, xmllint and Chromium check the SVG flame graph, and node runs the npm
# packages of tests/js (speedscope's schema and app, ajv, playwright-core).
packages+=(protobuf-compiler protobuf-c-compiler libprotobuf-c-dev golang-go
	golang-github-google-pprof-dev libxml2-utils chromium)
# Debian's node and npm, unless a node with its own npm is there already
# (NodeSource's nodejs provides npm and conflicts with Debian's npm package).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	packages+=(nodejs npm)
fi

# npm ci in tests/js, when node_modules is missing or older than the lock file.
setup_js() {
	local js
	js=$(cd "$(dirname "$0")/../tests/js" && pwd)
	if [[ -f $js/node_modules/.package-lock.json &&
		! $js/package-lock.json -nt $js/node_modules/.package-lock.json ]]; then
		return 0
	fi
	echo "setup.sh: npm ci in tests/js" >&2
	(cd "$js" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
}
# ---- end of the exports' block ----

# ---- Fuzzing and sanitizers (doc/TESTING.md) ----
# clang with libFuzzer and its ASan/UBSan runtimes (libclang-rt-14-dev) for
# scripts/fuzz.sh; valgrind for scripts/valgrind.sh.  gcc's own ASan and
# UBSan (libasan, libubsan) come with build-essential's gcc.
packages+=(clang-14 libclang-rt-14-dev valgrind)
# ---- end of the fuzzing block ----

# ---- Instrumented sections (doc/SECTIONS.md) ----
# GCC's plugin headers build plugin/narwhal-plugin.so (#pragma narwhal), with
# g++ of the same version; tests/integration/sections-plugin.sh needs both.
packages+=(gcc-12-plugin-dev g++)
# ---- end of the sections block ----

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
