#!/usr/bin/env python3
"""Builds a Hugging Face-style model directory from a weights file.

  hf_dir.py --names FILE.safetensors
  hf_dir.py WEIGHTS.safetensors OUTDIR [--config JSON] [--shards N]
            [--prefix P] [--copy NEW=OLD] [--extra NAME] [--drop NAME]
            [--mask-buffers L] [--bf16]

Writes OUTDIR/config.json (the JSON given, if any) and the weights: one
model.safetensors, or N shards model-0000K-of-0000N.safetensors with
model.safetensors.index.json, as save_pretrained lays them out. --prefix
puts each name but the LM head's under P (GPT2LMHeadModel's
"transformer."); --copy adds a
tensor NEW equal to OLD (a tied head saved beside its embedding); --extra
adds a tensor NAME of random values shaped like the first weight; --drop
leaves the tensor NAME out; and
--mask-buffers adds GPT-2's h.N.attn.bias causal masks for L layers;
--bf16 rounds every F32 tensor to BF16 (to nearest, ties to even). With
--names it prints a file's tensor names, sorted, one a line.
"""
import argparse
import json
import os
import random
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        b, e = entry["data_offsets"]
        out[name] = (entry["dtype"], entry["shape"], raw[8 + n + b:8 + n + e])
    return out


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def to_bf16(data):
    words = struct.unpack(f"<{len(data) // 4}I", data)
    rounded = ((w + 0x7FFF + ((w >> 16) & 1)) >> 16 for w in words)
    return struct.pack(f"<{len(words)}H", *rounded)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--names":
        print("\n".join(sorted(read(sys.argv[2]))))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("out")
    ap.add_argument("--config")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--copy", action="append", default=[])
    ap.add_argument("--extra", action="append", default=[])
    ap.add_argument("--drop", action="append", default=[])
    ap.add_argument("--mask-buffers", type=int, default=0)
    ap.add_argument("--bf16", action="store_true")
    args = ap.parse_args()

    tensors = {(k if k.startswith("lm_head.") else args.prefix + k): v
               for k, v in read(args.weights).items()}
    for spec in args.copy:
        new, old = spec.split("=")
        tensors[new] = tensors[old]
    for name in args.drop:
        del tensors[name]
    rng = random.Random(7)
    for name in args.extra:
        dtype, shape, data = next(iter(tensors.values()))
        count = len(data) // 4
        tensors[name] = ("F32", shape, struct.pack(f"<{count}f", *(rng.gauss(0, 0.1) for _ in range(count))))
    if args.bf16:
        tensors = {n: ("BF16", shape, to_bf16(data)) if dtype == "F32" else (dtype, shape, data)
                   for n, (dtype, shape, data) in tensors.items()}
    for layer in range(args.mask_buffers):
        positions = 8
        mask = bytes(1 if j <= i else 0 for i in range(positions) for j in range(positions))
        tensors[f"{args.prefix}h.{layer}.attn.bias"] = ("BOOL", [1, 1, positions, positions], mask)

    os.makedirs(args.out, exist_ok=True)
    if args.config:
        with open(os.path.join(args.out, "config.json"), "w") as f:
            f.write(args.config)
    if args.shards == 1:
        write(os.path.join(args.out, "model.safetensors"), tensors)
        return
    names = list(tensors)
    weight_map = {}
    for k in range(args.shards):
        file = f"model-{k + 1:05d}-of-{args.shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[k::args.shards]}
        write(os.path.join(args.out, file), part)
        weight_map.update({n: file for n in part})
    total = sum(len(v[2]) for v in tensors.values())
    with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


if __name__ == "__main__":
    main()
