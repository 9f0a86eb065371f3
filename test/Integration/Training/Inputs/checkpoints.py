#!/usr/bin/env python3
"""Compares two safetensors checkpoints tensor by tensor.

  checkpoints.py A.safetensors B.safetensors [--tol T]

Prints the number of tensors and the worst relative difference
||a - b|| / ||b|| over them, and exits non-zero when the names, shapes or
dtypes differ or a tensor differs past the tolerance.
"""
import argparse
import json
import math
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            sys.exit(f"{path}: '{name}' is {entry['dtype']}, not F32")
        b, e = entry["data_offsets"]
        data = raw[8 + n + b:8 + n + e]
        tensors[name] = (entry["shape"], struct.unpack(f"<{len(data) // 4}f", data))
    return tensors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    a, b = read(args.a), read(args.b)
    if sorted(a) != sorted(b):
        print(f"different tensors: only in {args.a}: {sorted(set(a) - set(b))}, "
              f"only in {args.b}: {sorted(set(b) - set(a))}")
        return 1
    worst, worst_name = 0.0, ""
    for name in sorted(a):
        (sa, va), (sb, vb) = a[name], b[name]
        if sa != sb:
            print(f"'{name}' has shape {sa} in {args.a} and {sb} in {args.b}")
            return 1
        diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(va, vb)))
        norm = math.sqrt(sum(y * y for y in vb))
        relative = diff / norm if norm > 0 else diff
        if relative >= worst:
            worst, worst_name = relative, name
    ok = worst <= args.tol
    print(f"{len(a)} tensors, same names and shapes; worst relative difference {worst:.3g} "
          f"({worst_name}), tolerance {args.tol:g}: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
