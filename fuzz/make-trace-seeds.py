#!/usr/bin/env python3
# Seed traces for fuzz-trace (fuzz/corpus/trace/): the encoding of
# src/model/trace.h written independently, for the fuzz target's model
# (pid 7, tid 7; epoch 0 with 40 nodes, epoch 1 with 3; events 0 and 1).
import os
import struct
import sys


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zz(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def encode(events, t0=1000, tick=1):
    body = bytearray()
    st = dict(time=0, dt=0, node=0, event=0, epoch=0, off=0, period=[0] * 16)
    for kind, time, node, epoch, event, value in events:
        if kind == 'off' and event != st['off']:
            body += varint((2 << 2) | 3) + varint(event)
            st['off'] = event
        elif kind != 'off' and event != st['event']:
            body += varint((0 << 2) | 3) + varint(event)
            st['event'] = event
        if epoch != st['epoch']:
            body += varint((1 << 2) | 3) + varint(epoch)
            st['epoch'] = epoch
        t = (time - t0) // tick
        dt = t - st['time']
        if kind == 'off':
            tag = 2
        else:
            tag = 0 if value == st['period'][event] else 1
        body += varint((zz(node - st['node']) << 2) | tag) + varint(zz(dt - st['dt']))
        if tag == 1:
            body += varint(zz(value - st['period'][event]))
            st['period'][event] = value
        elif tag == 2:
            body += varint(value // tick)
        st.update(node=node, time=t, dt=dt)
    head = b'NWTRACE1' + struct.pack('<IIIIQQQ', 1, tick, 7, 7, t0, len(events), len(body))
    return head + bytes(body)


def main(out):
    steady = [('s', 2000 + 1000 * i, 1 + i % 5, 0, 0, 1000) for i in range(50)]
    mixed = [('s', 2000, 3, 0, 0, 1001001), ('s', 3001, 39, 0, 1, 77),
             ('off', 4000, 2, 1, 1, 50000), ('s', 60000, 1, 1, 0, 1001001),
             ('s', 59000, 2, 1, 0, 999)]  # the last one goes back in time
    seeds = {'steady.trace': encode(steady), 'mixed.trace': encode(mixed),
             'tick1000.trace': encode([('s', 5000 + 1000 * i, 1, 0, 0, 5) for i in range(5)],
                                      t0=0, tick=1000),
             'empty.trace': encode([])}
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus', 'trace'))
