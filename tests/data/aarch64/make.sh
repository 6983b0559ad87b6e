#!/bin/sh
# Rebuilds code.elf (an object file, named .elf since the tree ignores
# *.o) and code.objdump from code.c (see code.c); needs Debian's
# gcc-aarch64-linux-gnu, which brings binutils-aarch64-linux-gnu.
set -eu
cd "$(dirname "$0")"
aarch64-linux-gnu-gcc -O2 -fno-asynchronous-unwind-tables -c code.c -o code.elf
aarch64-linux-gnu-objdump -d --no-show-raw-insn code.elf >code.objdump
