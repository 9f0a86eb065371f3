#!/usr/bin/env python3
"""Activation memory per layer and rank, with and without sequence
parallelism, next to Megatron's formulas (pmlir-memory-report after
pmlir-sharding-pipeline; compile only, nothing runs).

Megatron's GPT layer (Korthikanti et al. 2022, section 4), bytes per rank:
sbh(10 + 24/t + 5as/(ht)) with tensor parallelism, (sbh/t)(34 + 5as/h) with
sequence parallelism (16-bit activations, dropout). The same accounting for
pmlir's f32 tensors and no dropout: sbh(16 + 48/t) + 4as^2b/t, and
64sbh/t + 4as^2b/t.

Run from the repository root after building: /usr/bin/python3 bench/activation_memory.py
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import with_mesh  # noqa: E402

BUILD = "build/bin"

MODELS = [
    ("GPT-3 175B layer", "gpt2 --layers 1 --hidden 12288 --heads 96 --vocab 50257 --seq 2048 "
     "--batch 1 --max-positions 2048", 8),
    ("GPT-2 medium layer", "gpt2 --layers 1 --hidden 1024 --heads 16 --vocab 50257 --seq 1024 "
     "--batch 8 --max-positions 1024", 4),
    ("Llama 2 7B layer", "llama --layers 1 --hidden 4096 --heads 32 --kv-heads 32 --ffn 11008 "
     "--vocab 32000 --seq 4096 --batch 1", 8),
]


def report(flags, tp, sp, tmp):
    generated = f"{tmp}/generated.mlir"
    subprocess.run([f"{BUILD}/pmlir-gen"] + flags.split() + ["-o", generated], check=True)
    src = f"{tmp}/model.mlir"
    with_mesh(f"{BUILD}/pmlir-opt", generated, src, f"tp = {tp}")
    pipeline = f"recipe=megatron sequence-parallel={int(sp)} memory-report={tmp}/m.json"
    subprocess.run([f"{BUILD}/pmlir-opt", src, f"--pmlir-sharding-pipeline={pipeline}",
                    "-o", "/dev/null"], check=True)
    return json.load(open(f"{tmp}/m.json"))["layers"][0]


def mib(n):
    return f"{n / 2**20:,.1f}"


def main():
    print("| layer | t | SP | pmlir MiB/rank | Megatron formula, f32 no dropout (MiB) | pmlir / formula "
          "| Megatron formula, fp16 + dropout (MiB) | pmlir SP / no SP |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags, tp in MODELS:
            without = None
            for sp in (False, True):
                layer = report(flags, tp, sp, tmp)
                got = layer["activation_bytes_per_rank"]
                formula = layer["megatron_gpt_layer_bytes"]
                f32 = formula["f32_without_dropout"]
                ratio = f"{got / without:.3f}" if sp else "-"
                without = got if not sp else without
                print(f"| {name} | {tp} | {'yes' if sp else 'no'} | {mib(got)} | {mib(f32)} | "
                      f"{got / f32:.3f} | {mib(formula['fp16_with_dropout'])} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
