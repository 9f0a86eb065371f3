#!/usr/bin/env python3
"""Writes a copy of an optimizer-state checkpoint with its step replaced.

  set_step.py IN.optimizer.safetensors OUT.optimizer.safetensors STEP

STEP is any float Python reads ("-5", "inf", "2.5"); the rest of the file
is copied byte for byte.
"""
import json
import struct
import sys


def main():
    source, target, step = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(source, "rb") as f:
        raw = bytearray(f.read())
    (n,) = struct.unpack("<Q", raw[:8])
    entry = json.loads(raw[8:8 + n])["step"]
    if entry["dtype"] != "F32" or entry["shape"] != []:
        sys.exit(f"{source}: 'step' is {entry['dtype']} {entry['shape']}, not an F32 scalar")
    at = 8 + n + entry["data_offsets"][0]
    raw[at:at + 4] = struct.pack("<f", step)
    with open(target, "wb") as f:
        f.write(raw)


if __name__ == "__main__":
    main()
