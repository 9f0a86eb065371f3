#!/usr/bin/env python3
"""Writes seed indexes for pmlir-fuzz-checkpoint-index into DIR: checkpoint
directory indexes of the fuzzer's fixed rank files (rank-00000 holds "w"
[2, 3] = 0..5 and "step" = 3, rank-00001 "w" [2, 3] = 6..11): "w" [4, 3]
by rows, the same viewed as [2, 2, 3] parts, the step; with right
checksums, so that seeds reach the reads.

  python3 fuzz/make-checkpoint-seeds.py DIR
"""
import json
import os
import struct
import sys
import zlib


def crc(values):
    return "%08x" % zlib.crc32(struct.pack(f"<{len(values)}f", *values))


def piece(file, values, global_, local, offset, **extra):
    return dict(file=file, crc32=crc(values), global_=global_, local=local, offset=offset,
                **extra)


def index(w_pieces):
    tensors = {
        "w": {"kind": "parameter", "shape": [4, 3], "pieces": w_pieces},
        "step": {"kind": "optimizer", "shape": [],
                 "pieces": [piece(0, [3.0], [], [], [])]},
    }
    text = json.dumps({"format": "pmlir.checkpoint", "version": 1, "mesh": "tp=2",
                       "files": ["rank-00000.safetensors", "rank-00001.safetensors"],
                       "tensors": tensors}, indent=1)
    return text.replace('"global_"', '"global"')


out = sys.argv[1]
os.makedirs(out, exist_ok=True)
first, second = [float(i) for i in range(6)], [float(i) for i in range(6, 12)]
seeds = {
    "rows.json": index([piece(0, first, [4, 3], [2, 3], [0, 0]),
                        piece(1, second, [4, 3], [2, 3], [2, 0])]),
    "parts.json": index([piece(0, first, [2, 2, 3], [1, 2, 3], [0, 0, 0]),
                         piece(1, second, [2, 2, 3], [1, 2, 3], [1, 0, 0])]),
    "ordered.json": index([piece(0, first, [4, 3], [2, 3], [0, 0], ordered_dim=0,
                                 order=[2, 4]),
                           piece(1, second, [4, 3], [2, 3], [2, 0], ordered_dim=0,
                                 order=[2, 4])]),
}
for name, text in seeds.items():
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
