#!/usr/bin/env python3
"""Writes checkpoint variants for a model's weights into a directory:

  make-checkpoints.py MODEL.mlir OUTDIR

w.safetensors        every weight under its tfm.name (random, fixed seed)
hf.safetensors       the same values as GPT2LMHeadModel.save_pretrained names
                     them: 'transformer.' prefixes and a tied 'lm_head.weight'
empty.safetensors    no tensors ({})
misspelt.safetensors w.safetensors with one name misspelt (c_attn -> c_atn)
nan.safetensors      w.safetensors with a NaN at flat index 3 of the first
                     layer norm weight and an inf in the second
short.safetensors    w.safetensors whose header length is one byte short
ids.safetensors      input_ids as I32 with an 8-byte aligned data section
ids-unaligned.safetensors  the same ids with the data section at an offset
                     4 mod 8 (the safetensors format does not align)
"""
import json
import random
import re
import struct
import sys

model, out = sys.argv[1], sys.argv[2]
text = open(model).read()
signature = text[text.index("@forward("):text.index(") ->")]
args = re.findall(r"tensor<([0-9x]+)x(f32|i64|i32)> \{[^}]*tfm\.name = \"([^\"]+)\"", signature)

rng = random.Random(3)
weights, ids_shape = {}, None
for dims, dtype, name in args:
    shape = [int(d) for d in dims.split("x")]
    if dtype != "f32":
        ids_shape = shape
        continue
    n = 1
    for d in shape:
        n *= d
    weights[name] = (shape, [rng.gauss(0.0, 0.1) for _ in range(n)])


def encode(tensors, pad_to=8, shift=0):
    """tensors: name -> (dtype, shape, bytes). The header is padded with
    spaces to a multiple of `pad_to`, then `shift` more."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * ((pad_to - len(h) % pad_to) % pad_to + shift)
    return struct.pack("<Q", len(h)) + h + data


def floats(values):
    return struct.pack(f"<{len(values)}f", *values)


def write(name, blob):
    with open(f"{out}/{name}", "wb") as f:
        f.write(blob)


plain = {n: ("F32", s, floats(v)) for n, (s, v) in weights.items()}
write("w.safetensors", encode(plain))
hf = {"transformer." + n: t for n, t in plain.items()}
if "wte.weight" in plain:
    hf["lm_head.weight"] = plain["wte.weight"]
write("hf.safetensors", encode(hf))
write("empty.safetensors", encode({}))
write("misspelt.safetensors",
      encode({n.replace("h.0.attn.c_attn.weight", "h.0.attn.c_atn.weight"): t
              for n, t in plain.items()}))
bad = dict(plain)
norms = [n for n in weights if n.endswith("ln_1.weight") or n.endswith("input_layernorm.weight")]
shape, values = weights[norms[0]]
values = list(values)
values[3] = float("nan")
bad[norms[0]] = ("F32", shape, floats(values))
shape, values = weights[norms[1]]
values = list(values)
values[0] = float("inf")
bad[norms[1]] = ("F32", shape, floats(values))
write("nan.safetensors", encode(bad))
blob = bytearray(encode(plain))
length = struct.unpack("<Q", blob[:8])[0]
blob[:8] = struct.pack("<Q", length - 1)
write("short.safetensors", bytes(blob))
n = ids_shape[0] * ids_shape[1]
ids = {"input_ids": ("I32", ids_shape, struct.pack(f"<{n}i", *[(7 * k) % 50 for k in range(n)]))}
write("ids.safetensors", encode(ids))
write("ids-unaligned.safetensors", encode(ids, shift=4))
