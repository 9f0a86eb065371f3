#!/usr/bin/env python3
"""Small valid safetensors files as seeds for pmlir-fuzz-safetensors: every
dtype, metadata, empty tensors, several tensors, an unaligned data section."""
import json
import struct
import sys

out = sys.argv[1]


def write(name, tensors, metadata=None, shift=0):
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for key, (dtype, shape, raw) in tensors.items():
        header[key] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8 + shift)
    with open(f"{out}/{name}", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


write("f32.safetensors", {"w": ("F32", [2, 3], struct.pack("<6f", *range(6)))})
write("mixed.safetensors", {
    "a": ("F16", [4], struct.pack("<4H", 0x3c00, 0x3800, 0xbc00, 0x7c00)),
    "b": ("BF16", [2], struct.pack("<2H", 0x4049, 0xbf00)),
    "c": ("F64", [2], struct.pack("<2d", 0.25, -8)),
    "ids": ("I64", [1, 2], struct.pack("<2q", 3, 4)),
    "i32": ("I32", [3], struct.pack("<3i", -1, 0, 1)),
    "flags": ("BOOL", [2], b"\x01\x00"),
}, metadata={"format": "pt"})
write("empty-tensor.safetensors", {"e": ("F32", [0, 4], b""), "s": ("F32", [], struct.pack("<f", 1))})
write("unaligned.safetensors", {"ids": ("I32", [2], struct.pack("<2i", 5, 6))}, shift=4)
write("none.safetensors", {})
