#!/usr/bin/env python3
"""moves.py OUT.safetensors: checks every element of the global result of
moves.mlir (assembled from the 4 ranks' row blocks) against the formulas in
its comment; prints the first mismatch and exits non-zero."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "CPU"))
from reference import read_safetensors  # noqa: E402

got = read_safetensors(sys.argv[1])["logits"]
assert list(got.shape) == [8, 6], f"shape {list(got.shape)}, expected [8, 6]"
for r in range(4):
    m0, m1 = divmod(r, 2)  # rank = tp + 2 dp
    for i in range(2):
        for j in range(2):
            want = {"c": 110 * m0 + 4 * i + 2 * m1 + j,
                    "d": 110 * m0 + 4 * i + 2 + j,
                    "e": 4 * i + 2 + j}
            for col, name in enumerate("cde"):
                v = got[2 * r + i, 2 * col + j].item()
                if v != want[name]:
                    print(f"rank {r} {name}[{i}][{j}] = {v}, expected {want[name]}")
                    sys.exit(1)
print("moves ok: 48 values")
