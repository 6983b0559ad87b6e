#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz/fuzz-record.c into fuzz/corpus/record/:
crafted perf_event ring records, encoded with struct.pack from the kernel's
layouts (include/uapi/linux/perf_event.h) for the formats narwhal-record
opens its events with.  Each seed is: format index, ring size selector,
tail start, then the records (see fuzz-record.c).
Run: python3 fuzz/make-record-seeds.py [OUTDIR]
"""
import os
import struct
import sys

# PERF_RECORD_*
LOST, COMM, EXIT, THROTTLE, FORK, SAMPLE, MMAP2 = 2, 3, 4, 5, 7, 9, 10
MISC_USER = 2
MISC_COMM_EXEC = 1 << 13
MISC_MMAP_BUILD_ID = 1 << 14

FMT_FP, FMT_DWARF, FMT_ALL, FMT_NO_ID = 0, 1, 2, 3
RING_2K = 5  # 64 << 5 bytes
PID, TID, TIME, ID = 4242, 4243, 123456789, 77


def record(rtype, misc, body):
    return struct.pack("<IHH", rtype, misc, 8 + len(body)) + body


def trailer():
    # sample_id of the session's format: TID, TIME, IDENTIFIER
    return struct.pack("<IIQQ", PID, TID, TIME, ID)


def cstr(s):
    b = s.encode() + b"\0"
    return b + b"\0" * (-len(b) % 8)


def sample_fp(ips):
    body = struct.pack("<QQIIQQ", ID, ips[0], PID, TID, TIME, 1000000)
    body += struct.pack("<Q", len(ips)) + b"".join(struct.pack("<Q", ip) for ip in ips)
    body += struct.pack("<Q", 2) + struct.pack("<3Q", 0x7FFC0000, 0x7FFC0100, ips[0])
    return record(SAMPLE, MISC_USER, body)


def sample_dwarf(ip, stack):
    body = struct.pack("<QQIIQQ", ID, ip, PID, TID, TIME, 1000000)
    body += struct.pack("<QQQ", 2, 0xFFFFFFFFFFFFFE00, ip)  # PERF_CONTEXT_USER, ip
    body += struct.pack("<Q", 2) + b"".join(struct.pack("<Q", r) for r in range(17))
    body += struct.pack("<Q", len(stack)) + stack + struct.pack("<Q", len(stack) - 8)
    return record(SAMPLE, MISC_USER, body)


def mmap2(path, build_id=None):
    body = struct.pack("<IIQQQ", PID, TID, 0x555555554000, 0x2000, 0x1000)
    if build_id is None:
        body += struct.pack("<IIQQ", 8, 1, 123456, 0)
        misc = MISC_USER
    else:
        body += struct.pack("<BBH", len(build_id), 0, 0) + build_id.ljust(20, b"\0")
        misc = MISC_USER | MISC_MMAP_BUILD_ID
    body += struct.pack("<II", 5, 2) + cstr(path)
    return record(MMAP2, misc, body + trailer())


def comm(name, exec_=False):
    body = struct.pack("<II", PID, TID) + cstr(name)
    return record(COMM, MISC_COMM_EXEC if exec_ else 0, body + trailer())


def task(rtype):
    return record(rtype, 0, struct.pack("<IIIIQ", PID, 1, TID, 1, TIME) + trailer())


def lost(n):
    return record(LOST, 0, struct.pack("<QQ", ID, n) + trailer())


def throttle():
    return record(THROTTLE, 0, struct.pack("<QQQ", TIME, ID, 0) + trailer())


def seed(fmt, recs, ring=RING_2K, start=0):
    return bytes([fmt, ring, start]) + b"".join(recs)


SEEDS = {
    "sample-fp": seed(FMT_FP, [sample_fp([0x401136, 0x401180, 0x7FFFF7C29D90])]),
    "sample-dwarf": seed(FMT_DWARF, [sample_dwarf(0x401136, bytes(range(64)))]),
    "mmap2-inode": seed(FMT_FP, [mmap2("/usr/bin/app")]),
    "mmap2-build-id": seed(FMT_FP, [mmap2("/usr/lib/libc.so.6", bytes(range(1, 21)))]),
    "comm-exec": seed(FMT_FP, [comm("app", True)]),
    "fork": seed(FMT_FP, [task(FORK)]),
    "exit": seed(FMT_FP, [task(EXIT)]),
    "lost": seed(FMT_FP, [lost(12)]),
    "throttle": seed(FMT_FP, [throttle()]),
    # A session's start, in a small ring from a late tail: records wrap.
    "session": seed(FMT_FP, [comm("app", True), mmap2("/usr/bin/app"), task(FORK),
                             sample_fp([0x401136, 0x401180]), sample_fp([0x401140]),
                             task(EXIT)], ring=3, start=40),
    "no-sample-id": seed(FMT_NO_ID, [record(COMM, 0, struct.pack("<II", PID, TID) +
                                            cstr("x"))]),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "record")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
