#!/usr/bin/env python3
"""Writes a copy of a safetensors file without its "pmlir.manifest" metadata,
as checkpoints were written before manifests.

  strip_manifest.py IN OUT
"""
import json
import struct
import sys


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header["__metadata__"].pop("pmlir.manifest")
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(target, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + raw[8 + n:])


if __name__ == "__main__":
    main()
