#!/usr/bin/env python3
"""A training step accumulating K microbatches: what compiling it takes
(pmlir's lowering and LLVM, in seconds) and the run's peak resident
memory, for K = 1 and more, for one or more builds side by side.

  /usr/bin/python3 bench/grad_accum_compile.py [--builds build[,other]] \
      [--tiny-k 1,8,32,128] [--small-k 1,8,32]

Programs (2 threads, one step): a tiny GPT-2 (2 layers, hidden 64, vocab
96, 2 x 16 a microbatch) and GPT-2 small (1 x 128 a microbatch). A step
accumulating K microbatches repeats each one's forward and backward; the
repeated work should cost compile time in proportion to K at most, and the
step's memory should not grow with K (a running sum keeps one
microbatch's gradients beside the sum). Compile seconds are those
`--verbose` prints ("compile: @f, lowering X s, LLVM Y s"); the peak is
the run's own line ("peak resident memory: X MiB" or GiB).
Prints Markdown for docs/performance.md.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from benchlib import GPT2_SMALL, machine

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def gen(build, path, **shape):
    args = [f"--{k.replace('_', '-')}={v}" for k, v in shape.items()]
    subprocess.run([f"{build}/bin/pmlir-gen", "gpt2", *args, "--loss", "-o", path], check=True)


def tokens(path, vocab, count):
    """`count` pseudo-random token ids below `vocab`, uint16."""
    state = 12345
    with open(path, "wb") as f:
        for _ in range(count):
            state = (state * 1103515245 + 12345) % 2**31
            f.write((state % vocab).to_bytes(2, "little"))


def measure(build, model, data, k):
    cmd = [f"{build}/bin/pmlir-run", model, "--train", "--steps", "1", "--data", data,
           "--grad-accum", str(k), "--threads", "2", "--verbose"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    compiled = re.search(r"^compile: @\S+, lowering ([0-9.]+) s, LLVM ([0-9.]+) s$", text, re.M)
    peak = re.search(r"^peak resident memory: ([0-9.]+) ([KMG])iB", text, re.M)
    if out.returncode != 0 or not compiled or not peak:
        return None
    mib = float(peak.group(1)) * {"K": 1 / 1024, "M": 1, "G": 1024}[peak.group(2)]
    return float(compiled.group(1)), float(compiled.group(2)), mib


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--builds", default=os.path.join(ROOT, "build"),
                        help="comma-separated build directories, compared side by side")
    parser.add_argument("--tiny-k", default="1,8,32,128")
    parser.add_argument("--small-k", default="1,8,32")
    args = parser.parse_args()
    builds = args.builds.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tiny = dict(layers=2, hidden=64, heads=4, vocab=96, max_positions=32, seq=16, batch=2)
        small = dict(GPT2_SMALL, seq=128, batch=1)
        programs = []
        for name, shape, ks in [("tiny GPT-2", tiny, args.tiny_k),
                                ("GPT-2 small", small, args.small_k)]:
            model, data = f"{tmp}/{len(programs)}.mlir", f"{tmp}/{len(programs)}.bin"
            gen(builds[0], model, **shape)
            ks = [int(k) for k in ks.split(",") if k]
            if not ks:
                continue
            windows = max(ks) * shape["batch"] + 1
            tokens(data, shape["vocab"], windows * (shape["seq"] + 1))
            programs.append((name, model, data, ks))
        print(f"# {machine()}\n")
        print("| program | K | " + " | ".join(
            f"{b}: lowering s | {b}: LLVM s | {b}: peak MiB" for b in builds) + " |")
        print("|---|---|" + "---|---|---|" * len(builds))
        for name, model, data, ks in programs:
            for k in ks:
                cells = []
                for build in builds:
                    result = measure(build, model, data, k)
                    cells += ["failed"] * 3 if result is None else [
                        f"{result[0]:.2f}", f"{result[1]:.2f}", f"{result[2]:.0f}"]
                print(f"| {name} | {k} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
