#!/usr/bin/env python3
"""Writes a copy of a checkpoint with one value of its optimizer state
replaced (the step, by default), as a save would have written it: both
files, their manifest (metadata "pmlir.manifest") recording the changed
tensor's new checksum.

  set_step.py IN.safetensors OUT.safetensors VALUE [TENSOR [INDEX]]

writes OUT.safetensors and OUT.optimizer.safetensors from IN's pair, with
element INDEX (default 0) of the F32 optimizer tensor TENSOR (default
"step") set to VALUE, any float Python reads ("-5", "inf", "2.5"); the
other bytes are copied.
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
    source, target, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
    name = sys.argv[4] if len(sys.argv) > 4 else "step"
    index = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    params, params_data = read(source)
    state, state_data = read(optimizer_path(source))
    entry = state[name]
    count = 1
    for d in entry["shape"]:
        count *= d
    if entry["dtype"] != "F32" or not 0 <= index < count:
        sys.exit(f"{source}: '{name}' is {entry['dtype']} {entry['shape']}, "
                 f"not F32 with an element {index}")
    begin, end = entry["data_offsets"]
    state_data[begin + 4 * index:begin + 4 * index + 4] = struct.pack("<f", value)
    manifest = json.loads(state["__metadata__"]["pmlir.manifest"])
    manifest["optimizer"][name] = f"{zlib.crc32(state_data[begin:end]):08x}"
    for header in (params, state):
        header["__metadata__"]["pmlir.manifest"] = json.dumps(manifest)
    write(target, params, params_data)
    write(optimizer_path(target), state, state_data)


if __name__ == "__main__":
    main()
