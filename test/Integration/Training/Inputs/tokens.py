#!/usr/bin/env python3
"""Writes the bytes of a text as token ids (a byte-level vocabulary of 256).

  tokens.py TEXT OUT.bin uint16|int32 [--add N] [--modulo V]
  tokens.py TEXT OUT.bin uint16 --safetensors OUT.safetensors --rows R --seq S [--label L [--label-rows N]]

The first form writes a flat file of ids (nanoGPT's .bin), each byte plus
N (modulo V, for a vocabulary smaller than 256). The second writes one batch of R windows as input_ids and labels
(safetensors, int64), with label L at flat index 5 when given (every label of the last N rows with --label-rows N).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "CPU"))
from reference import write_safetensors  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("out")
    ap.add_argument("dtype", choices=["uint16", "int32"])
    ap.add_argument("--add", type=int, default=0)
    ap.add_argument("--modulo", type=int)
    ap.add_argument("--safetensors")
    ap.add_argument("--rows", type=int)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--label", type=int)
    ap.add_argument("--label-rows", type=int)
    args = ap.parse_args()
    data = open(args.text, "rb").read()
    ids = torch.tensor(list(data), dtype=torch.int64) + args.add
    if args.modulo:
        ids = ids % args.modulo
    if args.safetensors:
        n = args.rows * args.seq
        inputs = ids[:n].reshape(args.rows, args.seq)
        labels = ids[1:n + 1].reshape(args.rows, args.seq).clone()
        if args.label is not None and args.label_rows:
            labels[args.rows - args.label_rows:] = args.label
        elif args.label is not None:
            labels.view(-1)[5] = args.label
        write_safetensors(args.safetensors, {"input_ids": inputs, "labels": labels})
        return 0
    assert args.dtype == "int32" or ids.max() < 65536
    with open(args.out, "wb") as f:
        f.write(ids.numpy().astype("<u2" if args.dtype == "uint16" else "<i4").tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
