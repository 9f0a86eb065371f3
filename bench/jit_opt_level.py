#!/usr/bin/env python3
"""LLVM's optimization level of pmlir-run's compiled program: compile time
and run time, -O2 against -O3, side by side in one run.

  /usr/bin/python3 bench/jit_opt_level.py [--build build] [--rounds 3] [--levels 2,3]

Programs: a tiny GPT-2 training step (2 layers, hidden 64: the shapes of
the multi-rank tests, where compiling is most of a run), GPT-2 small's
forward (batch 8, seq 128) and its training step (batch 4, seq 128), on 2
threads. For each, `rounds` alternating runs per level; compile time is
LLVM's (the translation to LLVM IR, its optimization and code generation)
as `--verbose` prints it ("compile: @f, lowering X s, LLVM Y s"), run
time the median of `--repeat 3` for the forward and of the steps after
the first for training.
Prints Markdown for docs/performance.md.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from benchlib import machine

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def gen(build, path, *args):
    subprocess.run([f"{build}/bin/pmlir-gen", "gpt2", *args, "-o", path], check=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--levels", default="2,3")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    run = f"{args.build}/bin/pmlir-run"
    with tempfile.TemporaryDirectory() as tmp:
        data = f"{tmp}/tokens.bin"
        with open(data, "wb") as f:
            f.write(os.urandom(2 * 200000))
        tiny, fwd, step = f"{tmp}/tiny.mlir", f"{tmp}/fwd.mlir", f"{tmp}/step.mlir"
        gen(args.build, tiny, "--layers", "2", "--hidden", "64", "--heads", "4", "--vocab", "97",
            "--seq", "16", "--batch", "2", "--max-positions", "32", "--loss")
        small = ["--layers", "12", "--hidden", "768", "--heads", "12", "--vocab", "50257",
                 "--max-positions", "1024", "--seq", "128"]
        gen(args.build, fwd, *small, "--batch", "8")
        gen(args.build, step, *small, "--batch", "4", "--loss")
        sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
        import torch
        from reference import write_safetensors
        ids = f"{tmp}/ids.safetensors"
        write_safetensors(ids, {"input_ids": torch.randint(
            0, 50257, (8, 128), generator=torch.Generator().manual_seed(1))})
        # --data ids must be below the vocabulary: the tiny model's 97 takes
        # ids modulo 97 from a file of its own.
        tiny_data = f"{tmp}/tiny.bin"
        with open(data, "rb") as f, open(tiny_data, "wb") as g:
            raw = f.read()
            g.write(b"".join((int.from_bytes(raw[i:i + 2], "little") % 97).to_bytes(2, "little")
                             for i in range(0, 2 * 4000, 2)))
        with open(data, "rb") as f, open(f"{tmp}/small.bin", "wb") as g:
            raw = f.read()
            g.write(b"".join((int.from_bytes(raw[i:i + 2], "little") % 50257).to_bytes(2, "little")
                             for i in range(0, len(raw), 2)))
        programs = [
            ("tiny GPT-2 training step (2 layers, hidden 64)",
             [run, tiny, "--train", "--steps", "4", "--data", tiny_data, "--threads", "2"], 2 * 16),
            ("GPT-2 small forward, 8 x 128",
             [run, fwd, "--inputs", ids, "--repeat", "3", "--threads", "2"], None),
            ("GPT-2 small training step, 4 x 128",
             [run, step, "--train", "--steps", "4", "--data", f"{tmp}/small.bin", "--threads", "2"],
             4 * 128),
        ]
        print(f"# {machine()}\n")
        print("| program | " + " | ".join(f"-O{l} compile s | -O{l} run s" for l in levels) +
              " | run -O%d / -O%d |" % (levels[0], levels[-1]))
        print("|---|" + "---|---|" * len(levels) + "---|")
        for name, cmd, tokens in programs:
            results = {l: [] for l in levels}
            for _ in range(args.rounds):
                for l in levels:
                    full = cmd + [f"--jit-opt-level={l}", "--verbose"]
                    compile_s, run_s = timed_run(full, tokens)
                    results[l].append((compile_s, run_s))
            cells = []
            for l in levels:
                cells.append(f"{statistics.median(c for c, _ in results[l]):.1f}")
                cells.append(f"{statistics.median(r for _, r in results[l]):.3f}")
            ratio = statistics.median(a[1] / b[1] for a, b in zip(results[levels[0]],
                                                                  results[levels[-1]]))
            print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    return 0


def timed_run(cmd, tokens):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    text = out.stdout + out.stderr
    compiled = re.search(r"^compile: @\S+, lowering [0-9.]+ s, LLVM ([0-9.]+) s$", text, re.M)
    if not compiled:
        sys.exit(f"{' '.join(cmd)} printed no compile time:\n{text}")
    compile_s = float(compiled.group(1))
    if tokens is None:
        median = re.search(r"median ([0-9.]+) ms", text)
        return compile_s, float(median.group(1)) / 1e3
    rates = [float(t) for t in re.findall(r"step \d+: .*?([0-9.]+) tokens/s", text)]
    return compile_s, statistics.median(tokens / r for r in rates[1:])


if __name__ == "__main__":
    sys.exit(main())
