#!/usr/bin/env python3
"""Writes a copy of a checkpoint with its optimizer step replaced, as a save
would have written it: both files, their manifest (metadata
"pmlir.manifest") recording the new step's checksum.

  set_step.py IN.safetensors OUT.safetensors STEP

writes OUT.safetensors and OUT.optimizer.safetensors from IN's pair. STEP is
any float Python reads ("-5", "inf", "2.5"); the tensors' bytes are copied
but for the step's.
"""
import json
import struct
import sys
import zlib


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])


def write(path, header, data):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def optimizer_path(path):
    return path[:-len(".safetensors")] + ".optimizer.safetensors"


def main():
    source, target, step = sys.argv[1], sys.argv[2], float(sys.argv[3])
    params, params_data = read(source)
    state, state_data = read(optimizer_path(source))
    entry = state["step"]
    if entry["dtype"] != "F32" or entry["shape"] != []:
        sys.exit(f"{source}: 'step' is {entry['dtype']} {entry['shape']}, not an F32 scalar")
    begin, end = entry["data_offsets"]
    state_data[begin:end] = struct.pack("<f", step)
    manifest = json.loads(state["__metadata__"]["pmlir.manifest"])
    manifest["optimizer"]["step"] = f"{zlib.crc32(state_data[begin:end]):08x}"
    for header in (params, state):
        header["__metadata__"]["pmlir.manifest"] = json.dumps(manifest)
    write(target, params, params_data)
    write(optimizer_path(target), state, state_data)


if __name__ == "__main__":
    main()
