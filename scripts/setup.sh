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

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	if [[ $status != ii* ]]; then
		missing+=("$p")
	fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
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
