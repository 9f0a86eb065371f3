#!/usr/bin/env python3
"""A Mixtral-style training step on the CPU, pmlir-run next to PyTorch, in one run.

  /usr/bin/python3 bench/cpu_moe.py [--build build] [--rounds 3] [--steps 5]
      [--shape 4x128] [--threads 1,2] [--python PYTHON] [--experts 8] [--top-k 2]
      [--ep 2]

The model: `pmlir-gen mixtral --layers 4 --hidden 512 --heads 8 --kv-heads 2
--ffn 1024 --experts E --top-k K --vocab 8192 --loss` (Llama's attention;
each MLP a router and E SwiGLU experts). One training step is the forward,
the backward, the gradients' global norm and AdamW's update (lr 1e-3,
weight decay 0.01) on a batch of random token ids. pmlir-run runs the
experts as grouped matmuls over the tokens sorted by expert (one BLAS GEMM
per expert and projection); PyTorch
(under --python: this interpreter by default, Debian's python3-torch; a
virtual environment's python for PyTorch 2.x) runs the same model as
test/Integration/CPU/reference.py writes it, whose sparse block is Hugging
Face's MixtralSparseMoeBlock: a loop over the experts that gathers each
one's tokens, eager, with loss.backward(), the same norm and
torch.optim.AdamW at its fastest (fused where it has it). Each run
reports the median step time of its steps after the first; the rounds
alternate the two sides and the ratio is taken per back-to-back pair.
With --ep N, a second table sets expert parallelism beside one rank:
pmlir-run on --mesh ep=N (N ranks of one thread, each holding E / N experts
and a batch shard) against one rank of N threads, and the all-to-all bytes
of its comm report against the formula: every sparse layer exchanges a
rank's routed rows six times a step (there and back in the forward, in the
backward's forward again and in its backward), (B / N) * S * k * H * 4
bytes each. Prints Markdown for docs/performance.md.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

from benchlib import (add_step_options, add_torch_options, machine, run, torch_adamw, torch_env,
                      torch_grad_norm, torch_report, torch_result, write_tokens)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODEL = dict(layers=4, hidden=512, heads=8, kv_heads=2, ffn=1024, vocab=8192)


def config(experts, top_k, seq, batch):
    c = dict(MODEL, experts=experts, top_k=top_k, seq=seq, batch=batch)
    return c


def torch_worker(batch, seq, threads, steps, experts, top_k):
    """Runs in a child process: prints the median step time in ms."""
    import time
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
    import reference
    from reference import llama_forward, llama_weights
    # The reference refuses routing within ROUTING_MARGIN of a tie, where a
    # check's f32 and f64 could pick different experts; a benchmark only
    # times the step, and training moves the logits onto ties now and then.
    reference.ROUTING_MARGIN = 0.0
    torch.set_num_threads(threads)
    c = config(experts, top_k, seq, batch)
    weights = {k: v.requires_grad_() for k, v in
               llama_weights(c, torch.Generator().manual_seed(0)).items()}
    params = list(weights.values())
    opt, adamw = torch_adamw(params)
    tokens = torch.randint(0, c["vocab"], (batch, seq + 1),
                           generator=torch.Generator().manual_seed(1))
    ids, labels = tokens[:, :-1], tokens[:, 1:]
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = llama_forward(c, weights, ids)
        loss = F.cross_entropy(logits.reshape(-1, c["vocab"]), labels.reshape(-1))
        loss.backward()
        torch_grad_norm(params)
        opt.step()
        times.append((time.perf_counter() - start) * 1e3)
    torch_report(statistics.median(times[1:]), adamw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_step_options(ap, ROOT)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--ep", type=int, default=0,
                    help="also compare expert parallelism over this many ranks with one rank")
    add_torch_options(ap)
    ap.add_argument("--torch-worker", nargs=6, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(*args.torch_worker)
    if args.steps < 2:
        sys.exit("--steps must be at least 2 (the first step is not timed)")
    if args.torch_compile:
        sys.exit("--torch-compile: this benchmark compares with the eager per-expert loop")
    with tempfile.TemporaryDirectory(prefix="pmlir-bench-") as work:
        measure(args, work)


def measure(args, work):
    tools = os.path.join(args.build, "bin")
    pmlir_gen, pmlir_run = (os.path.join(tools, t) for t in ("pmlir-gen", "pmlir-run"))
    batch, seq = (int(x) for x in args.shape.split("x"))
    thread_counts = [int(t) for t in args.threads.split(",")]
    c = config(args.experts, args.top_k, seq, batch)

    print(f"Machine: {machine()}; rounds {args.rounds}, {args.steps} steps per run "
          f"(the first not timed).\n")
    model = os.path.join(work, "mixtral.mlir")
    gen = [pmlir_gen, "mixtral", "--layers", str(c["layers"]), "--hidden", str(c["hidden"]),
           "--heads", str(c["heads"]), "--kv-heads", str(c["kv_heads"]), "--ffn", str(c["ffn"]),
           "--experts", str(c["experts"]), "--top-k", str(c["top_k"]), "--vocab",
           str(c["vocab"]), "--seq", str(seq), "--batch", str(batch), "--loss", "-o", model]
    subprocess.run(gen, check=True)
    data = os.path.join(work, "tokens.bin")
    write_tokens(data, args.steps * batch * seq + 1, c["vocab"])

    rows, torch_side = [], None
    for threads in thread_counts:
        env = torch_env(threads)
        ours, theirs = [], []
        for r in range(args.rounds):
            order = ("pmlir", "torch") if r % 2 == 0 else ("torch", "pmlir")
            for who in order:
                if who == "pmlir":
                    ours.append(pmlir_step_ms([pmlir_run, model, "--train", "--steps",
                                               str(args.steps), "--data", data, "--threads",
                                               str(threads)], args.steps, batch * seq))
                else:
                    out, _ = run([args.python, __file__, "--torch-worker", str(batch), str(seq),
                                  str(threads), str(args.steps), str(c["experts"]),
                                  str(c["top_k"])], env=env)
                    ms, torch_side = torch_result(out)
                    theirs.append(ms)
        p, t = statistics.median(ours), statistics.median(theirs)
        ratios = [b / a for a, b in zip(ours, theirs)]
        rows.append((threads, p, t, statistics.median(ratios), min(ratios), max(ratios)))
        print(f"  threads {threads}: pmlir {p:.0f} ms, torch {t:.0f} ms", file=sys.stderr)

    tokens = batch * seq
    print("`" + " ".join(os.path.basename(w) if w == pmlir_gen else w for w in gen[:-2]) + "`\n")
    print("| batch x seq | threads | pmlir ms/step | pmlir tokens/s | PyTorch eager ms/step | "
          "PyTorch tokens/s | pmlir / PyTorch tokens/s (median of rounds) | range over rounds |")
    print("|---|---|---|---|---|---|---|---|")
    for th, p, t, ratio, low, high in rows:
        print(f"| {batch} x {seq} | {th} | {p:.0f} | {tokens / p * 1e3:.0f} | {t:.0f} | "
              f"{tokens / t * 1e3:.0f} | {ratio:.2f}x | {low:.2f}-{high:.2f} |")
    print(f"\nPyTorch: {torch_side}, eager, Hugging Face's per-expert loop ({args.python})")
    if args.ep > 1:
        expert_parallel(args, pmlir_run, model, data, c, batch, seq, work)


def pmlir_step_ms(cmd, steps, tokens):
    """The median time in ms of a pmlir-run training's steps after the first."""
    out, _ = run(cmd)
    rates = [float(x) for x in re.findall(r"(\d+) tokens/s", out)]
    if len(rates) != steps:
        sys.exit(f"pmlir-run printed {len(rates)} steps:\n{out}")
    return tokens / statistics.median(rates[1:]) * 1e3


def expert_parallel(args, pmlir_run, model, data, c, batch, seq, work):
    n = args.ep
    if c["experts"] % n or batch % n:
        sys.exit(f"--ep {n} must divide --experts {c['experts']} and the batch {batch}")
    report = os.path.join(work, "comm.json")
    train = [model, "--train", "--steps", str(args.steps), "--data", data]
    one, many = [], []
    for r in range(args.rounds):
        for who in (("one", "ep") if r % 2 == 0 else ("ep", "one")):
            if who == "one":
                one.append(pmlir_step_ms([pmlir_run] + train + ["--threads", str(n)], args.steps,
                                         batch * seq))
            else:
                many.append(pmlir_step_ms([pmlir_run] + train + [
                    "--threads", "1", "--mesh", f"ep={n}", "--recipe", "megatron",
                    "--comm-report", report], args.steps, batch * seq))
    with open(report) as f:
        collectives = json.load(f)["collectives"]
    exchanges = [x for x in collectives if x["kind"] == "all_to_all" and x["axes"] == ["ep"]]
    measured = sum(x["bytes_per_rank"] for x in exchanges)
    formula = 6 * c["layers"] * (batch // n) * seq * c["top_k"] * c["hidden"] * 4
    ratios = [a / b for a, b in zip(one, many)]
    p1, pn = statistics.median(one), statistics.median(many)
    tokens = batch * seq
    print(f"\nExpert parallelism: `--mesh ep={n} --recipe megatron --threads 1` against one "
          f"rank of `--threads {n}`\n")
    print("| batch x seq | ranks x threads | ms/step | tokens/s | ep / one rank tokens/s "
          "(median of rounds) | range over rounds |")
    print("|---|---|---|---|---|---|")
    print(f"| {batch} x {seq} | 1 x {n} | {p1:.0f} | {tokens / p1 * 1e3:.0f} | | |")
    print(f"| {batch} x {seq} | {n} x 1 | {pn:.0f} | {tokens / pn * 1e3:.0f} | "
          f"{statistics.median(ratios):.2f}x | {min(ratios):.2f}-{max(ratios):.2f} |")
    print(f"\nAll-to-all over ep per step and rank: {len(exchanges)} exchanges, {measured} bytes "
          f"in the comm report; formula 6 L (B / ep) S k H 4 = {formula} bytes"
          f" ({'equal' if measured == formula else 'DIFFERENT'}).")


if __name__ == "__main__":
    sys.exit(main())
