#!/usr/bin/env python3
"""What the loops on every thread buy: GPT-2 small on 1 and 2 threads, its
loops split over the threads or kept on one, in one run.

  /usr/bin/python3 bench/cpu_threads.py [--build build] [--rounds 3]
      [--steps 5] [--train-shape 4x128] [--forward-shape 8x128]

Three configurations of pmlir-run, alternated in each round so that drift in
the machine hits all of them:

- 1 thread: `--threads 1` (GEMMs and loops on one core);
- 2 threads, loops on one: `--threads 2` with PMLIR_TEST_LOOP_THREADS=1
  (OpenBLAS's GEMMs on two threads, every other loop on the caller's: pmlir
  before pmlir-outline-parallel-loops; on a CPU whose f32 GEMMs run on
  oneDNN over the runtime's threads, a CPU with AVX-512, their parts run on
  the caller's thread too, so this configuration is about one thread there);
- 2 threads: `--threads 2` (the GEMMs and the loops on both).

For a training step (`pmlir-gen gpt2 ... --loss`, `pmlir-run --train
--steps N`, the median step after the first) and for a forward (`pmlir-run
--repeat N`, its median), the table gives each configuration's median over
the rounds and the speedups over one thread. Prints Markdown for
docs/performance.md.
"""
import argparse
import os
import random
import re
import statistics
import struct
import subprocess
import sys
import tempfile

from benchlib import gpt2_small_args, machine, run, write_tokens

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONFIGS = [("1 thread", 1, None), ("2 threads, loops on one", 2, "1"), ("2 threads", 2, None)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--train-shape", default="4x128")
    ap.add_argument("--forward-shape", default="8x128")
    args = ap.parse_args()
    if args.steps < 2:
        sys.exit("--steps must be at least 2 (the first is not timed)")
    tools = os.path.join(args.build, "bin")
    pmlir_gen, pmlir_run = (os.path.join(tools, t) for t in ("pmlir-gen", "pmlir-run"))
    print(f"Machine: {machine()}; rounds {args.rounds}, {args.steps} steps or forwards a run.\n")
    with tempfile.TemporaryDirectory() as work:
        batch, seq = (int(x) for x in args.train_shape.split("x"))
        train_model = os.path.join(work, "train.mlir")
        subprocess.run([pmlir_gen, "gpt2", *gpt2_small_args(), "--seq", str(seq), "--batch", str(batch),
                        "--loss", "-o", train_model], check=True)
        data = os.path.join(work, "tokens.bin")
        write_tokens(data, args.steps * batch * seq + 1, 50257)
        fbatch, fseq = (int(x) for x in args.forward_shape.split("x"))
        forward_model = os.path.join(work, "forward.mlir")
        subprocess.run([pmlir_gen, "gpt2", *gpt2_small_args(), "--seq", str(fseq), "--batch",
                        str(fbatch), "-o", forward_model], check=True)
        ids = os.path.join(work, "ids.safetensors")
        write_ids(ids, fbatch, fseq)

        def timed(kind, threads, loop_threads):
            env = dict(os.environ)
            if loop_threads:
                env["PMLIR_TEST_LOOP_THREADS"] = loop_threads
            if kind == "train":
                out, _ = run([pmlir_run, train_model, "--train", "--steps", str(args.steps),
                              "--data", data, "--threads", str(threads)], env=env)
                rates = [float(x) for x in re.findall(r"(\d+) tokens/s", out)]
                return batch * seq / statistics.median(rates[1:]) * 1e3
            out, _ = run([pmlir_run, forward_model, "--inputs", ids, "--repeat",
                          str(args.steps), "--threads", str(threads)], env=env)
            return float(re.search(r"median ([\d.]+) ms", out).group(1))

        rows = []
        for kind, shape in (("train", args.train_shape), ("forward", args.forward_shape)):
            ms = {name: [] for name, _, _ in CONFIGS}
            for r in range(args.rounds):
                order = CONFIGS if r % 2 == 0 else list(reversed(CONFIGS))
                for name, threads, loop_threads in order:
                    ms[name].append(timed(kind, threads, loop_threads))
                print(f"  {kind} round {r + 1}: " +
                      ", ".join(f"{n} {v[-1]:.0f} ms" for n, v in ms.items()), file=sys.stderr)
            rows.append((kind, shape, {n: statistics.median(v) for n, v in ms.items()}))

    print("| program | batch x seq | 1 thread ms | 2 threads, loops on one: ms | 2 threads ms | "
          "speedup, loops on one | speedup |")
    print("|---|---|---|---|---|---|---|")
    for kind, shape, m in rows:
        one, kept, split = m["1 thread"], m["2 threads, loops on one"], m["2 threads"]
        label = "training step" if kind == "train" else "forward"
        print(f"| {label} | {shape} | {one:.0f} | {kept:.0f} | {split:.0f} | "
              f"{one / kept:.2f}x | {one / split:.2f}x |")


def write_ids(path, batch, seq):
    """Random token ids as a safetensors file of one I64 tensor `input_ids`."""
    import json
    rng = random.Random(2)
    data = struct.pack(f"<{batch * seq}q", *(rng.randrange(50257) for _ in range(batch * seq)))
    header = json.dumps({"input_ids": {"dtype": "I64", "shape": [batch, seq],
                                       "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


if __name__ == "__main__":
    main()
