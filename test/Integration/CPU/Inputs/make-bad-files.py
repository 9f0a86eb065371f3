#!/usr/bin/env python3
"""Writes broken safetensors files for tiny-gpt2 (vocab 97, ids [2, 16]) into
the directory given as the only argument."""
import array
import json
import struct
import sys

out = sys.argv[1]


def write(name, header, data=b""):
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(f"{out}/{name}", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


ids = array.array("q", [1] * 32).tobytes()
write("ids.safetensors", {"input_ids": {"dtype": "I64", "shape": [2, 16], "data_offsets": [0, 256]}}, ids)
write("ids-oov.safetensors", {"input_ids": {"dtype": "I64", "shape": [2, 16], "data_offsets": [0, 256]}},
      array.array("q", [1] * 31 + [97]).tobytes())
write("ids-negative.safetensors", {"input_ids": {"dtype": "I32", "shape": [2, 16], "data_offsets": [0, 128]}},
      array.array("i", [-1] + [0] * 31).tobytes())
write("ids-shape.safetensors", {"input_ids": {"dtype": "I64", "shape": [2, 8], "data_offsets": [0, 128]}}, ids[:128])
write("ids-float.safetensors", {"input_ids": {"dtype": "F32", "shape": [2, 16], "data_offsets": [0, 128]}}, bytes(128))
write("w-shape.safetensors", {"h.0.ln_1.weight": {"dtype": "F32", "shape": [65], "data_offsets": [0, 260]}}, bytes(260))
write("w-int.safetensors", {"h.0.ln_1.weight": {"dtype": "I32", "shape": [64], "data_offsets": [0, 256]}}, bytes(256))
with open(f"{out}/ids.safetensors", "rb") as f:
    whole = f.read()
with open(f"{out}/truncated.safetensors", "wb") as f:
    f.write(whole[:40])
with open(f"{out}/garbage.safetensors", "wb") as f:
    f.write(struct.pack("<Q", 6) + b"{{{{{{")
