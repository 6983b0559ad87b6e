#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes golden-tiny.csprof: an HPC_CSPROF file encoded from DESIGN.md's
"HPC_CSPROF file format" with struct.pack, independently of the C writer.
tests/test-csprof.c builds the same profile in C and compares its writer's
bytes with this file.  Run: python3 tests/data/make-golden.py [OUTPUT]
"""
import os
import struct
import sys

ASYNC = 1 << 1
REAL = 1 << 2

TARGET = b"tiny"
METRICS = [  # (name, flags, period)
    (b"cpu-clock:samples", ASYNC, 1000000),
    (b"cpu-clock:period", ASYNC | REAL, 1000000),
]
EPOCHS = [  # per epoch: [(name, vaddr, mapped)]
    [
        (b"/usr/bin/tiny", 0x0, 0x555555554000),
        (b"/usr/lib/x86_64-linux-gnu/libc.so.6", 0x28000, 0x7FFFF7DAB000),
    ],
]
# One tree for epoch 0.  Nodes in depth-first preorder:
# (id, parent, ip, sp, metrics); the root's parent is 0.
#   0 root
#   1   main        (ip in tiny)
#   2     memset    (ip in libc)
#   3   helper      (ip in tiny)
NODES = [
    (0, 0, 0x0, 0x0, [0, 0]),
    (1, 0, 0x555555555139, 0x7FFFFFFFE0F0, [1, 1000000]),
    (2, 1, 0x7FFFF7E2D123, 0x7FFFFFFFE0B0, [3, 0x0102030405060708]),
    (3, 0, 0x555555555160, 0x0, [2, 2000000]),
]
TREE_EPOCH = 0


def hpc_string(tag, s):
    return struct.pack("<II", tag, len(s)) + s


def hpc_number(tag, v):
    return struct.pack("<IQ", tag, v)


def encode():
    out = b"HPC_CSPROF" + b"01.01" + b"l" + struct.pack("<Q", 3)
    assert len(out) == 24
    out += hpc_string(0x00, TARGET)
    out += struct.pack("<I", len(METRICS))
    for name, flags, period in METRICS:
        out += hpc_string(0x30, name)
        out += hpc_number(0x51, flags)
        out += hpc_number(0x41, period)
    out += struct.pack("<I", len(EPOCHS))
    for modules in EPOCHS:
        out += struct.pack("<I", len(modules))
        for name, vaddr, mapped in modules:
            out += struct.pack("<I", len(name)) + name + struct.pack("<QQ", vaddr, mapped)
    out += struct.pack("<IQ", 1, 0)  # num_trees, tramp_samples
    header = b"HPC_CSTREE" + b"01.00" + b"l" + struct.pack("<IIQI", 8, 8, len(NODES), TREE_EPOCH)
    assert len(header) == 36
    out += header
    for node_id, parent, ip, sp, metrics in NODES:
        assert len(metrics) == len(METRICS)
        out += struct.pack("<QQQQ", node_id, parent, ip, sp)
        out += struct.pack("<%dQ" % len(metrics), *metrics)
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "golden-tiny.csprof")
    with open(path, "wb") as f:
        f.write(encode())


if __name__ == "__main__":
    main()
