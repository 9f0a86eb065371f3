#!/usr/bin/env python3
"""Runs pmlir-opt on one-byte corruptions of a bytecode file: every byte
with its top bit flipped (the flips that turn small varint sizes and
offsets into huge ones). Each run must end with exit 0 or 1 and, when
it fails, a one-line error: no crash, no stack dump, no LLVM ERROR, no hang
(the upstream reader corrupts its heap or loops on some of these, which
pmlir-opt survives by reading bytecode in a child process first).

  corrupt-bytecode.py PMLIR_OPT FILE.mlirbc SCRATCH_DIR
"""
import os
import subprocess
import sys

tool, path, scratch = sys.argv[1:4]
data = open(path, "rb").read()
corrupt = os.path.join(scratch, "corrupt.mlirbc")
failures, refused, crashed_reader = [], 0, 0
for i in range(len(data)):
    for flip in (0x80,):
        b = bytearray(data)
        b[i] ^= flip
        with open(corrupt, "wb") as f:
            f.write(b)
        try:
            r = subprocess.run([tool, corrupt, "-o", os.devnull], capture_output=True,
                               text=True, errors="replace", timeout=60)
        except subprocess.TimeoutExpired:
            failures.append(f"byte {i} ^ {flip:#x}: no answer in 60 s")
            continue
        bad = ("Stack dump", "PLEASE submit", "LLVM ERROR")
        if r.returncode not in (0, 1) or any(w in r.stderr for w in bad):
            failures.append(f"byte {i} ^ {flip:#x}: exit {r.returncode}: {r.stderr[:300]!r}")
        refused += r.returncode == 1
        crashed_reader += "the file is corrupt" in r.stderr
print(f"{len(data)} corruptions: {refused} refused, {crashed_reader} of them by the "
      f"trial read, {len(failures)} failures")
for f in failures[:10]:
    print(f)
sys.exit(1 if failures else 0)
