#!/usr/bin/env python3
"""What pmlir-verify-spmd costs: GPT-3 175B's program (96 layers of 96
heads) trained under Megatron's plans on 64-rank meshes, compiled by
pmlir-compile-pipeline through the CPU lowering as pmlir-run compiles one
rank's program (--mlir-timing), with the check's time next to the whole
compile's. The check traces every rank's program (each pipeline rank's as
well) and runs the traces against each other: its cost grows with the
program's ops and the mesh's ranks, not with tensor sizes, while the
lowering of GPT-3's full sizes (hidden 12288, sequence 2048, vocabulary
50257) takes many minutes and gigabytes more. So the sizes here are small
(hidden 384, sequence 64, vocabulary 1024), which makes the check's share
an upper bound of its share at full size.

Run from the repository root after building:
    /usr/bin/python3 bench/spmd_check.py [--layers 96] [--rounds 3]
"""
import argparse
import re
import subprocess
import sys
import tempfile

from benchlib import machine

BUILD = "build/bin"
HIDDEN, HEADS, SEQ, BATCH, VOCAB = 384, 96, 64, 16, 1024

CONFIGS = [
    ("dp=8,tp=8, SP, ZeRO-1", "mesh=dp=8,tp=8 sequence-parallel=true zero=1"),
    ("pp=8,tp=8, 1F1B, 8 microbatches",
     "mesh=pp=8,tp=8 sequence-parallel=true pipeline-schedule=1f1b microbatches=8"),
    ("cp=8,tp=8, ring attention", "mesh=cp=8,tp=8 context-attention=ring context-layout=balanced"),
]


def timings(stderr):
    return {name: float(sec) for sec, name in
            re.findall(r"^\s+[0-9.]+ \(\s*[0-9.]+%\)\s+([0-9.]+) \(\s*[0-9.]+%\)\s+(\w+)$",
                       stderr, re.M)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"Machine: {machine()}; GPT-3 175B's {args.layers} layers of {HEADS} heads, hidden "
          f"{HIDDEN}, sequence {SEQ}, vocabulary {VOCAB}, batch {BATCH}; median of "
          f"{args.rounds} compiles (wall seconds)\n")
    print("| plan | ranks checked | check (s) | whole compile (s) | check's share |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        model = f"{tmp}/gpt3.mlir"
        subprocess.run([f"{BUILD}/pmlir-gen", "gpt2", "--layers", str(args.layers),
                        "--hidden", str(HIDDEN), "--heads", str(HEADS), "--vocab", str(VOCAB),
                        "--seq", str(SEQ), "--batch", str(BATCH), "--max-positions", str(SEQ),
                        "--loss", "-o", model], check=True)
        for name, options in CONFIGS:
            runs = []
            for _ in range(args.rounds):
                out = subprocess.run(
                    [f"{BUILD}/pmlir-opt", model, "-o", f"{tmp}/out.mlir", "--mlir-timing",
                     f"--pmlir-compile-pipeline=program=train recipe=megatron {options}"],
                    capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"{name}: the compile failed\n{out.stderr[-4000:]}")
                runs.append(timings(out.stderr))
            t = sorted(runs, key=lambda x: x["Total"])[len(runs) // 2]
            check = t.get("VerifySpmd", 0.0)
            print(f"| {name} | 64 | {check:.3f} | {t['Total']:.1f} | "
                  f"{100 * check / t['Total']:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
