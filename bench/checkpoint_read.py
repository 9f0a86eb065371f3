#!/usr/bin/env python3
"""Reading a multi-GiB checkpoint: the seconds each rank takes to bind its
arguments and the bytes of parameters it reads, on one rank (whole tensors)
and on tp = 2 (each rank its slices), from a consolidated file pair
(`--weights` or `--resume X.safetensors`) and from a checkpoint directory
(`--resume DIR`), with the files in the page cache (warm) and evicted from
it first (cold: posix_fadvise DONTNEED on every file, what a job meets on a
node that has not read them).

  /usr/bin/python3 bench/checkpoint_read.py [--build build] [--dir DIR]
      [--layers 16] [--hidden 1536] [--ffn 4096] [--vocab 32000] [--keep]

Makes a Llama of those sizes (2.2 GB of f32 parameters by default; its
optimizer state twice that), trains one step on one rank with seeded
weights to get a checkpoint file pair (--save X.safetensors), and one step
on tp = 2 resumed from it to get a checkpoint directory (--save DIR). Each
row is one `pmlir-run --train --steps 1 --print-bytes-read` (binding
includes the optimizer state where it resumes, zeros where it starts from
--weights); the bind time is the slowest rank's. Prints Markdown for
docs/performance.md. The files go to --dir (a temporary directory by
default), removed at the end unless --keep.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import machine  # noqa: E402

LINE = re.compile(r"(?:rank (\d+): )?read (\d+) bytes of parameters from (\S+), of (\d+), "
                  r"bound in ([0-9.]+) s")


def evict(paths):
    """Drops the files' pages from the page cache."""
    for top in paths:
        files = [top] if os.path.isfile(top) else [
            os.path.join(top, name) for name in os.listdir(top)]
        for path in files:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def pmlir_run(build, args):
    cmd = [os.path.join(build, "bin", "pmlir-run")] + args
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--dir")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=1536)
    parser.add_argument("--ffn", type=int, default=4096)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--keep", action="store_true")
    a = parser.parse_args()
    work = a.dir or tempfile.mkdtemp(prefix="pmlir-ckpt-")
    os.makedirs(work, exist_ok=True)
    try:
        model = os.path.join(work, "llama.mlir")
        subprocess.run([os.path.join(a.build, "bin", "pmlir-gen"), "llama", "--layers",
                        str(a.layers), "--hidden", str(a.hidden), "--heads",
                        str(a.hidden // 128), "--kv-heads", str(a.hidden // 128), "--ffn", str(a.ffn), "--vocab", str(a.vocab),
                        "--seq", "16", "--batch", "1", "--loss", "-o", model], check=True)
        tokens = os.path.join(work, "tokens.bin")
        np.random.default_rng(0).integers(0, a.vocab, 1 << 16, dtype=np.uint16).tofile(tokens)
        train = [model, "--train", "--steps", "1", "--lr", "1e-4", "--data", tokens]
        tp2 = ["--mesh", "tp=2", "--recipe", "megatron"]
        pair = os.path.join(work, "ckpt.safetensors")
        directory = os.path.join(work, "ckpt")
        pmlir_run(a.build, train + ["--save", pair])
        pmlir_run(a.build, train + tp2 + ["--resume", pair, "--save", directory])
        files = [pair, pair.replace(".safetensors", ".optimizer.safetensors"), directory]
        whole_bytes = os.path.getsize(pair)
        state_bytes = os.path.getsize(files[1])

        rows = [("`--weights X.safetensors`", [], ["--weights", pair]),
                ("`--weights X.safetensors`", tp2, ["--weights", pair]),
                ("`--resume X.safetensors`", [], ["--resume", pair]),
                ("`--resume X.safetensors`", tp2, ["--resume", pair]),
                ("`--resume DIR`", [], ["--resume", directory]),
                ("`--resume DIR`", tp2, ["--resume", directory])]
        print(f"Machine: {machine()}. Llama, {a.layers} layers, hidden {a.hidden}, "
              f"ffn {a.ffn}, vocabulary {a.vocab}: {whole_bytes / 1e9:.2f} GB of f32 "
              f"parameters, {state_bytes / 1e9:.2f} GB of optimizer state.\n")
        print("| reads | mesh | bytes of parameters read per rank | of the whole | "
              "bind, cold (s) | bind, warm (s) | cold GB/s per rank |")
        print("|---|---|---|---|---|---|---|")
        for what, mesh, source in rows:
            result = {}
            for cache in ("cold", "warm"):
                if cache == "cold":
                    evict(files)
                out = pmlir_run(a.build, train + mesh + source + ["--print-bytes-read"])
                lines = [LINE.search(line) for line in out.splitlines()]
                lines = [m for m in lines if m]
                if not lines:
                    sys.exit(f"no --print-bytes-read line in:\n{out}")
                result[cache] = max(float(m.group(5)) for m in lines)
                read = [int(m.group(2)) for m in lines]
                of = int(lines[0].group(4))
            per_rank = max(read)
            print(f"| {what} | {'tp = 2' if mesh else 'one rank'} | "
                  f"{', '.join(f'{r:,}' for r in sorted(read))} | {per_rank / of:.1%} | "
                  f"{result['cold']:.2f} | {result['warm']:.2f} | "
                  f"{per_rank / result['cold'] / 1e9:.2f} |")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
