#!/usr/bin/env python3
"""Checks what each rank read of the weights (pmlir-run --print-bytes-read).

  bytes_read.py F32.log BF16.log RANKS --under F [--same A,B] ...

Each log holds one line per rank, "rank R: read X bytes of parameters from
--weights, of W". Checks that every rank of each log printed one, that a
rank read under the fraction F of the whole W (its blocks, not the
tensors), that it
read exactly half the bytes from BF16 that it read from F32 (its blocks'
elements, each converted alone), and that the ranks of each --same pair
(replicas over dp) read alike. Prints one line per rank.
"""
import argparse
import re
import sys


def reads(path):
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"rank (\d+): read (\d+) bytes of parameters from --weights, of (\d+)", line)
            if m:
                out[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("f32")
    ap.add_argument("bf16")
    ap.add_argument("ranks", type=int)
    ap.add_argument("--under", type=float, required=True)
    ap.add_argument("--same", action="append", default=[])
    args = ap.parse_args()
    f32, bf16, ranks = reads(args.f32), reads(args.bf16), args.ranks
    same = [tuple(int(r) for r in pair.split(",")) for pair in args.same]
    ok = sorted(f32) == list(range(ranks)) and sorted(bf16) == list(range(ranks))
    for r in range(ranks):
        (x, whole), (y, half) = f32.get(r, (0, 0)), bf16.get(r, (0, 0))
        good = 0 < x < whole * args.under and 2 * y == x and 2 * half == whole
        print(f"rank {r}: F32 {x} of {whole}, BF16 {y} of {half}: {'ok' if good else 'FAILED'}")
        ok &= good
    for a, b in same:
        if f32.get(a) != f32.get(b):
            print(f"ranks {a} and {b} read differently: FAILED")
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
