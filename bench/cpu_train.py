#!/usr/bin/env python3
"""A GPT-2-small training step on the CPU, pmlir-run next to PyTorch, in one run.

  /usr/bin/python3 bench/cpu_train.py [--build build] [--rounds 3] [--steps 5]
      [--shape 4x128] [--threads 1,2] [--python PYTHON] [--torch-compile]
      [--precision f32|bf16]

One training step is the forward, the backward, the global norm of the
gradients and AdamW's update of every parameter (lr 1e-3, weight decay
0.01, torch's defaults otherwise) on a batch of token ids with the next
tokens as labels: pmlir-run's step computes the norm it prints, and the
PyTorch side computes it too (benchlib.torch_grad_norm). pmlir runs
`pmlir-gen gpt2 ... --loss` through `pmlir-run --train --steps N --threads
T`, which prints each step's tokens/s; PyTorch (under --python: by default this
interpreter, Debian's python3-torch; a virtual environment's python for
PyTorch 2.x) runs the f32 GPT-2 of test/Integration/CPU/reference.py (the
ops of Hugging Face's GPT2LMHeadModel; eager, or its forward and loss
torch.compile'd with --torch-compile) with `loss.backward()` and
`torch.optim.AdamW` at its fastest (fused where the PyTorch has it,
benchlib.torch_adamw) on the same shapes. With --precision bf16, pmlir-run
trains with --precision bf16 and PyTorch runs its forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16) (parameters, gradients and
AdamW in f32 on both sides). Each run reports the median step time of its steps after the first;
for every thread count the script alternates `rounds` runs of each side and
gives the medians and the ratio of each back-to-back pair.

Threads as bench/cpu_forward.py: pmlir-run --threads T; PyTorch
torch.set_num_threads(T), OPENBLAS_NUM_THREADS=T, OMP_WAIT_POLICY=PASSIVE.

Memory: pmlir-run's peak RSS against the model state (parameters,
gradients, AdamW's two moments: 16 bytes per parameter) plus the
activations the backward pass reads, as pmlir-memory-report counts them;
and the kept activations per layer for each recompute mode against the
formula (Korthikanti et al.'s count without dropout, at f32).
Prints Markdown for docs/performance.md.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from benchlib import (GPT2_SMALL, add_step_options, add_torch_options, gpt2_small_args, machine,
                      run, torch_adamw, torch_env, torch_grad_norm, torch_report, torch_result,
                      write_tokens)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def torch_worker(batch, seq, threads, steps, compile, bf16):
    """Runs in a child process: prints the median step time in ms (eager, or
    the forward and loss torch.compile'd with `compile`; under bf16 autocast
    with `bf16`)."""
    import contextlib
    import time
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
    from reference import gpt2_forward, gpt2_weights
    torch.set_num_threads(threads)
    c = dict(GPT2_SMALL)
    weights = {k: v.requires_grad_() for k, v in
               gpt2_weights(c, torch.Generator().manual_seed(0)).items()}
    params = list(weights.values())
    opt, adamw = torch_adamw(params)
    tokens = torch.randint(0, c["vocab"], (batch, seq + 1),
                           generator=torch.Generator().manual_seed(1))
    ids, labels = tokens[:, :-1], tokens[:, 1:]

    def forward_loss(ids, labels):
        logits = gpt2_forward(c, weights, ids)
        return F.cross_entropy(logits.reshape(-1, c["vocab"]), labels.reshape(-1))

    if compile:
        forward_loss = torch.compile(forward_loss)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with (torch.autocast("cpu", dtype=torch.bfloat16) if bf16
              else contextlib.nullcontext()):
            loss = forward_loss(ids, labels)
        loss.backward()
        torch_grad_norm(params)
        opt.step()
        times.append((time.perf_counter() - start) * 1e3)
    torch_report(statistics.median(times[1:]), adamw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_step_options(ap, ROOT)
    add_torch_options(ap)
    ap.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                    help="bf16: pmlir-run --precision bf16 against PyTorch's bf16 autocast")
    ap.add_argument("--torch-worker", nargs=6, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(*args.torch_worker)
    if args.steps < 2:
        sys.exit("--steps must be at least 2 (the first step is not timed)")
    with tempfile.TemporaryDirectory(prefix="pmlir-bench-") as work:
        measure(args, work)


def measure(args, work):
    tools = os.path.join(args.build, "bin")
    pmlir_gen, pmlir_opt, pmlir_run = (os.path.join(tools, t)
                                       for t in ("pmlir-gen", "pmlir-opt", "pmlir-run"))
    batch, seq = (int(x) for x in args.shape.split("x"))
    thread_counts = [int(t) for t in args.threads.split(",")]
    c = GPT2_SMALL

    print(f"Machine: {machine()}; rounds {args.rounds}, {args.steps} steps per run "
          f"(the first not timed); {args.precision}.\n")

    model = os.path.join(work, "gpt2.mlir")
    subprocess.run([pmlir_gen, "gpt2", *gpt2_small_args(), "--seq", str(seq), "--batch",
                    str(batch), "--loss", "-o", model], check=True)
    data = os.path.join(work, "tokens.bin")
    write_tokens(data, args.steps * batch * seq + 1, c["vocab"])

    rows, rss, torch_side, gemm = [], 0, None, None
    for threads in thread_counts:
        env = torch_env(threads)
        ours, theirs = [], []
        for r in range(args.rounds):
            order = ("pmlir", "torch") if r % 2 == 0 else ("torch", "pmlir")
            for who in order:
                if who == "pmlir":
                    out, peak = run([pmlir_run, model, "--train", "--steps", str(args.steps),
                                     "--data", data, "--threads", str(threads),
                                     "--precision", args.precision, "--verbose"])
                    gemm = re.search(r"gemm: (.*)", out).group(1)
                    rates = [float(x) for x in re.findall(r"(\d+) tokens/s", out)]
                    if len(rates) != args.steps:
                        sys.exit(f"pmlir-run printed {len(rates)} steps:\n{out}")
                    ours.append(batch * seq / statistics.median(rates[1:]) * 1e3)
                    rss = max(rss, peak)
                else:
                    out, _ = run([args.python, __file__, "--torch-worker", str(batch),
                                  str(seq), str(threads), str(args.steps),
                                  str(int(args.torch_compile)),
                                  str(int(args.precision == "bf16"))], env=env)
                    ms, torch_side = torch_result(out)
                    theirs.append(ms)
        p, t = statistics.median(ours), statistics.median(theirs)
        ratios = [b / a for a, b in zip(ours, theirs)]
        rows.append((threads, p, t, statistics.median(ratios), min(ratios), max(ratios)))
        print(f"  threads {threads}: pmlir {p:.0f} ms, torch {t:.0f} ms", file=sys.stderr)

    tokens = batch * seq
    print(f"| batch x seq | threads | pmlir ms/step | pmlir tokens/s | PyTorch ms/step | "
          f"PyTorch tokens/s | pmlir / PyTorch tokens/s (median of rounds) | range over rounds |")
    print("|---|---|---|---|---|---|---|---|")
    for th, p, t, ratio, low, high in rows:
        print(f"| {batch} x {seq} | {th} | {p:.0f} | {tokens / p * 1e3:.0f} | {t:.0f} | "
              f"{tokens / t * 1e3:.0f} | {ratio:.2f}x | {low:.2f}-{high:.2f} |")
    autocast = ", bf16 autocast" if args.precision == "bf16" else ""
    print(f"\nPyTorch: {torch_side}, {'torch.compile' if args.torch_compile else 'eager'}"
          f"{autocast} "
          f"({args.python}); pmlir-run's GEMMs (last run): {gemm}")

    # What the backward pass keeps, per recompute mode, against the formula.
    reports = {}
    for mode in ("none", "selective", "full"):
        path = os.path.join(work, f"memory-{mode}.json")
        subprocess.run([pmlir_opt, model, f"--pmlir-autodiff=recompute={mode}",
                        "--pmlir-optimizer", f"--pmlir-memory-report=output={path}",
                        "-o", os.devnull], check=True)
        with open(path) as f:
            step = [s for s in json.load(f)["training"] if s["function"] == "train_step"][0]
        reports[mode] = step
    bsh = batch * seq * c["hidden"]
    ass = c["heads"] * seq * seq * batch
    formula = {"none": (4 * 16 * bsh + 4 * ass, "64 b s h + 4 a s^2 b"),
               "selective": (4 * 16 * bsh, "64 b s h"), "full": (4 * bsh, "4 b s h")}
    print("\n| recompute | kept per layer (pmlir-memory-report) | formula at f32 | "
          "kept in all (12 layers and the embeddings) |")
    print("|---|---|---|---|")
    for mode, step in reports.items():
        per_layer = [x["kept_bytes_per_rank"] for x in step["kept_by_layer"]
                     if x["layer"] != "before"]
        # A layer's count holds its output (the next layer's input); the
        # last layer's output is read by the head, outside the layers.
        last = ("" if per_layer[-1] == per_layer[0] else
                f" ({per_layer[-1] / 2**20:.2f} MiB in the last layer, whose output the "
                f"head keeps)")
        print(f"| {mode} | {per_layer[0] / 2**20:.2f} MiB{last} | "
              f"{formula[mode][0] / 2**20:.2f} MiB ({formula[mode][1]}) "
              f"| {step['kept_activation_bytes_per_rank'] / 2**20:.1f} MiB |")

    state = reports["selective"]["model_state"]["bytes_per_rank"]
    kept = reports["selective"]["kept_activation_bytes_per_rank"]
    print("\n| pmlir-run peak RSS | model state (parameters, gradients, AdamW moments) | "
          "activations kept (selective) | RSS / (model state + activations kept) |")
    print("|---|---|---|---|")
    print(f"| {rss / 2**20:.0f} MiB | {state / 2**20:.0f} MiB | {kept / 2**20:.0f} MiB | "
          f"{rss / (state + kept):.2f} |")


if __name__ == "__main__":
    main()
