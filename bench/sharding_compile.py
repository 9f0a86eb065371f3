#!/usr/bin/env python3
"""Compile time and communication of the sharding pipeline on the
GPT-3-175B shape (hidden 12288, 96 heads, sequence 2048, batch 8) at 24, 48
and 96 layers on dp=8 x tp=8: pmlir-megatron-recipe, pmlir-sharding-propagation,
pmlir-partition and pmlir-comm-report in one pmlir-opt run (--mlir-timing),
with the all-reduce volume next to Megatron's analytic 2 per layer of b*s*h
(b = batch / dp) in f32, plus the vocab-parallel embedding's one.

Run from the repository root after building: /usr/bin/python3 bench/sharding_compile.py
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import with_mesh  # noqa: E402

BUILD = "build/bin"
HIDDEN, HEADS, SEQ, BATCH, DP, TP = 12288, 96, 2048, 8, 8, 8


def main():
    print("| layers | recipe (s) | propagation (s) | partition (s) | total incl. parse+print (s) "
          "| all-reduces | bytes/rank | Megatron analytic |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for layers in (24, 48, 96):
            model = f"{tmp}/gpt3-{layers}.mlir"
            generated = f"{tmp}/generated-{layers}.mlir"
            subprocess.run([f"{BUILD}/pmlir-gen", "gpt2", "--layers", str(layers),
                            "--hidden", str(HIDDEN), "--heads", str(HEADS),
                            "--vocab", "50257", "--seq", str(SEQ), "--batch", str(BATCH),
                            "--max-positions", str(SEQ), "-o", generated], check=True)
            with_mesh(f"{BUILD}/pmlir-opt", generated, model, f"dp = {DP}, tp = {TP}")
            times = []
            for _ in range(3):
                out = subprocess.run([f"{BUILD}/pmlir-opt", model, "--pmlir-megatron-recipe",
                                      "--pmlir-sharding-propagation", "--pmlir-partition",
                                      f"--pmlir-comm-report=output={tmp}/comm.json",
                                      "-o", "/dev/null", "--mlir-timing"],
                                     check=True, capture_output=True, text=True).stderr
                t = {name: float(sec) for sec, name in
                     re.findall(r"^\s+([0-9.]+) \(\s*[0-9.]+%\)\s+(\w+)$", out, re.M)}
                times.append(t)
            t = sorted(times, key=lambda x: x["Total"])[1]  # the median run
            comm = json.load(open(f"{tmp}/comm.json"))["totals"].get("all_reduce", {})
            # The vocabulary 50257 is split into padded shards (no tp divides
            # it): the embedding's all-reduce counts too.
            analytic = (2 * layers + 1) * (BATCH // DP) * SEQ * HIDDEN * 4
            print(f"| {layers} | {t['MegatronRecipe']:.3f} | {t['ShardingPropagation']:.3f} | "
                  f"{t['Partition']:.3f} | {t['Total']:.3f} | {comm.get('count', 0)} | "
                  f"{comm.get('bytes_per_rank', 0):,} | {analytic:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
