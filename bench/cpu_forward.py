#!/usr/bin/env python3
"""GPT-2-small forward on the CPU, pmlir-run next to PyTorch, in one run.

  /usr/bin/python3 bench/cpu_forward.py [--build build] [--rounds 3]
      [--repeat 3] [--shapes 1x128,8x128,1x512,8x512] [--threads 1,2]
      [--gemm-only] [--python PYTHON] [--torch-compile | --jax]
      [--precision f32|bf16 [--torch-bf16-weights]]

For every batch x seq and thread count the script alternates `rounds` runs of
`pmlir-run --repeat N` and of the same forward in PyTorch
(`test/Integration/CPU/reference.py`'s GPT-2 in f32, the eager code a
Hugging Face model runs, or its torch.compile with --torch-compile) under
--python (default: this interpreter, Debian's python3-torch; a virtual
environment's python for PyTorch 2.x from PyPI), or with --jax a jax.jit of
the same forward (random weights of the same shapes; XLA's CPU threads are
the cores its process may use, so T threads is an affinity to T cores). With
--precision bf16, pmlir-run runs --precision bf16 (bf16 tensors and GEMM
operands, f32 sums) and PyTorch the same forward under
torch.autocast("cpu", dtype=torch.bfloat16), which rounds the weights on every
forward (with --torch-bf16-weights, once before the forwards, as pmlir-run
keeps the bf16 forms of its weights). Each run reports the median of N forwards
after a warm-up; the table gives the medians over rounds and the ratio of
each back-to-back pair (median, min and max over rounds). Both sides get
random weights of the GPT-2-small shapes (12 layers, hidden 768, 12 heads,
vocabulary 50257). Then it measures a GEMM through pmlir-run against this
CPU's measured FMA peak (bench/fma_peak.c: on AVX-512 where the CPU runs it,
else on AVX2), naming the GEMM kernels
pmlir-run chose (--verbose), and reports pmlir-run's
peak resident memory against weights + activations of one forward.

Threads: pmlir-run gets --threads T (its GEMMs on OpenBLAS's T threads, or in
T parts on the runtime's T threads where they run on oneDNN, the loops around
them on the runtime's T). The table is followed by the PyTorch
that ran (version, BLAS, oneDNN) and pmlir-run's GEMM path. PyTorch gets torch.set_num_threads(T),
OPENBLAS_NUM_THREADS=T (without it OpenBLAS uses every core whatever
set_num_threads says) and OMP_WAIT_POLICY=PASSIVE (with spinning OpenMP
threads next to OpenBLAS's, its 2-thread forward here is about 3x slower).
Prints Markdown for docs/performance.md.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

from benchlib import (GPT2_SMALL, add_torch_options, gpt2_small_args, machine, run, torch_env,
                      torch_report, torch_result)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def torch_worker(batch, seq, threads, repeat, compile, bf16):
    """Runs in a child process: prints the median forward time in ms (eager,
    or torch.compile'd with `compile`; under bf16 autocast with `bf16`, and
    with `bf16` 2 the GEMMs' weights cast to bf16 once, before the
    forwards)."""
    import contextlib
    import time
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
    from reference import gpt2_forward, gpt2_weights
    torch.set_num_threads(threads)
    c = dict(GPT2_SMALL)
    weights = gpt2_weights(c, torch.Generator().manual_seed(0))
    if bf16 == 2:
        # What autocast rounds on every forward, rounded once: the same
        # values reach the same bf16 GEMMs. The tied head gets a bf16 copy
        # of the table; the embedding keeps gathering f32 rows.
        for name, tensor in list(weights.items()):
            if tensor.dim() == 2 and name.startswith("h."):
                weights[name] = tensor.bfloat16()
        c["untied_head"] = True
        weights["lm_head.weight"] = weights["wte.weight"].bfloat16()
    ids = torch.randint(0, c["vocab"], (batch, seq))
    forward = lambda ids: gpt2_forward(c, weights, ids)
    if compile:
        forward = torch.compile(forward)
    times = []
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if bf16
                else contextlib.nullcontext())
    with torch.inference_mode(), autocast:
        forward(ids)
        for _ in range(repeat):
            start = time.perf_counter()
            forward(ids)
            times.append((time.perf_counter() - start) * 1e3)
    torch_report(statistics.median(times))


def jax_worker(batch, seq, threads, repeat):
    """Runs in a child process: prints the median time of a jax.jit'd
    forward of the same model in ms. XLA's CPU threads follow the cores the
    process may use, so `threads` is its affinity (the first cores)."""
    os.sched_setaffinity(0, set(range(threads)))
    import json
    import time
    import numpy as np
    import jax
    import jax.numpy as jnp
    c = GPT2_SMALL
    h, a, v = c["hidden"], c["heads"], c["vocab"]
    d = h // a
    rng = np.random.default_rng(0)
    normal = lambda *shape: jnp.asarray(rng.standard_normal(shape, dtype=np.float32) * 0.1)
    w = {"wte": normal(v, h), "wpe": normal(c["max_positions"], h), "lnf_w": normal(h),
         "lnf_b": normal(h), "layers": [
             {"ln1_w": normal(h), "ln1_b": normal(h), "attn_w": normal(h, 3 * h),
              "attn_b": normal(3 * h), "proj_w": normal(h, h), "proj_b": normal(h),
              "ln2_w": normal(h), "ln2_b": normal(h), "fc_w": normal(h, 4 * h),
              "fc_b": normal(4 * h), "out_w": normal(4 * h, h), "out_b": normal(h)}
             for _ in range(c["layers"])]}

    def layer_norm(x, weight, bias):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5) * weight + bias

    def forward(w, ids):
        b, s = ids.shape
        x = w["wte"][ids] + w["wpe"][:s]
        mask = jnp.tril(jnp.ones((s, s), dtype=bool))
        for p in w["layers"]:
            y = layer_norm(x, p["ln1_w"], p["ln1_b"])
            q, k, val = jnp.split(y @ p["attn_w"] + p["attn_b"], 3, axis=-1)
            q, k, val = (t.reshape(b, s, a, d).transpose(0, 2, 1, 3) for t in (q, k, val))
            scores = jnp.where(mask, q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), -jnp.inf)
            o = (jax.nn.softmax(scores, -1) @ val).transpose(0, 2, 1, 3).reshape(b, s, h)
            x = x + o @ p["proj_w"] + p["proj_b"]
            y = layer_norm(x, p["ln2_w"], p["ln2_b"])
            x = x + jax.nn.gelu(y @ p["fc_w"] + p["fc_b"], approximate=True) @ p["out_w"] + \
                p["out_b"]
        return layer_norm(x, w["lnf_w"], w["lnf_b"]) @ w["wte"].T

    ids = jnp.asarray(rng.integers(0, v, (batch, seq)))
    f = jax.jit(forward)
    f(w, ids).block_until_ready()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f(w, ids).block_until_ready()
        times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"ms": statistics.median(times),
                      "torch": f"JAX {jax.__version__} (jax.jit, XLA CPU)"}))


def write_ids(path, batch, seq, vocab):
    sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
    import torch
    from reference import write_safetensors
    g = torch.Generator().manual_seed(1)
    write_safetensors(path, {"input_ids": torch.randint(0, vocab, (batch, seq), generator=g)})


def activation_bytes(batch, seq):
    """Largest set of f32 tensors one forward must hold at once: in
    attention the residual, its norm, qkv, q/k/v, scores, probabilities and
    the output; in the MLP the residual, its norm and the 4H hidden before
    and after GELU; at the head the residual, its norm and the logits."""
    h, a, v = GPT2_SMALL["hidden"], GPT2_SMALL["heads"], GPT2_SMALL["vocab"]
    bsh = batch * seq * h
    attention = 9 * bsh + 2 * batch * a * seq * seq
    mlp = 2 * bsh + 8 * bsh
    head = 2 * bsh + batch * seq * v
    return 4 * max(attention, mlp, head)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shapes", default="1x128,8x128,1x512,8x512")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--gemm-only", action="store_true",
                    help="only the GEMM-against-peak table")
    add_torch_options(ap)
    ap.add_argument("--jax", action="store_true",
                    help="compare with a jax.jit of the same forward under --python instead")
    ap.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                    help="bf16: pmlir-run --precision bf16 against PyTorch's bf16 autocast")
    ap.add_argument("--torch-bf16-weights", action="store_true",
                    help="with --precision bf16: PyTorch's GEMM weights cast to bf16 once, "
                         "before the timed forwards (autocast's arithmetic without its "
                         "per-forward casts), as pmlir-run keeps its weights' bf16 forms")
    ap.add_argument("--torch-worker", nargs=6, type=int, help=argparse.SUPPRESS)
    ap.add_argument("--jax-worker", nargs=4, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(*args.torch_worker)
    if args.jax_worker:
        return jax_worker(*args.jax_worker)
    if args.torch_bf16_weights and args.precision != "bf16":
        ap.error("--torch-bf16-weights goes with --precision bf16")
    if args.jax and args.precision == "bf16":
        ap.error("--precision bf16 compares with PyTorch's bf16 autocast, not with --jax")

    with tempfile.TemporaryDirectory(prefix="pmlir-bench-") as work:
        measure(args, work)


def measure(args, work):
    tools = os.path.join(args.build, "bin")
    pmlir_gen, pmlir_run = (os.path.join(tools, t) for t in ("pmlir-gen", "pmlir-run"))
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    thread_counts = [int(t) for t in args.threads.split(",")]

    print(f"Machine: {machine()}; rounds {args.rounds}, {args.repeat} timed "
          f"forwards per run; {args.precision}.\n")

    # Side by side forward.
    rows, memory, torch_side, gemm = [], [], None, None
    weight_bytes = None
    for batch, seq in [] if args.gemm_only else shapes:
        model = os.path.join(work, f"gpt2-{batch}x{seq}.mlir")
        ids = os.path.join(work, f"ids-{batch}x{seq}.safetensors")
        subprocess.run([pmlir_gen, "gpt2", *gpt2_small_args(), "--seq", str(seq), "--batch",
                        str(batch), "-o", model], check=True)
        write_ids(ids, batch, seq, GPT2_SMALL["vocab"])
        if weight_bytes is None:
            summary = subprocess.run(
                [os.path.join(tools, "pmlir-opt"), model, "--pmlir-print-model-summary",
                 "-o", os.devnull], check=True, capture_output=True, text=True).stdout
            weight_bytes = 4 * int(re.search(r"(\d+) parameters", summary).group(1))
        for threads in thread_counts:
            env = torch_env(threads)
            ours, theirs, rss = [], [], 0
            for r in range(args.rounds):
                # Alternate who goes first so drift in the machine hits both.
                order = ("pmlir", "torch") if r % 2 == 0 else ("torch", "pmlir")
                for who in order:
                    if who == "pmlir":
                        out, peak = run([pmlir_run, model, "--inputs", ids, "--repeat",
                                         str(args.repeat), "--threads", str(threads),
                                         "--precision", args.precision, "--verbose"])
                        gemm = re.search(r"gemm: (.*)", out).group(1)
                        ours.append(float(re.search(r"median ([\d.]+) ms", out).group(1)))
                        rss = max(rss, peak)
                    else:
                        worker = (["--jax-worker"] if args.jax else ["--torch-worker"]) + [
                            str(batch), str(seq), str(threads), str(args.repeat)]
                        if not args.jax:
                            bf16 = 0 if args.precision != "bf16" else (
                                2 if args.torch_bf16_weights else 1)
                            worker += [str(int(args.torch_compile)), str(bf16)]
                        out, _ = run([args.python, __file__, *worker], env=env)
                        ms, torch_side = torch_result(out)
                        theirs.append(ms)
            p, t = statistics.median(ours), statistics.median(theirs)
            tokens = batch * seq
            # Per round the two ran back to back: their ratio is the least
            # disturbed by other load on the machine.
            ratios = [b / a for a, b in zip(ours, theirs)]
            rows.append((batch, seq, threads, p, tokens / p * 1e3, t, tokens / t * 1e3,
                         statistics.median(ratios), min(ratios), max(ratios)))
            other = "jax" if args.jax else "torch"
            print(f"  {batch}x{seq} threads {threads}: pmlir {p:.1f} ms, {other} {t:.1f} ms",
                  file=sys.stderr)
        act = activation_bytes(batch, seq)
        memory.append((batch, seq, rss, weight_bytes, act, rss / (weight_bytes + act)))

    if rows:
        other = "JAX" if args.jax else "PyTorch"
        print(f"| batch | seq | threads | pmlir ms | pmlir tokens/s | {other} ms | "
              f"{other} tokens/s | pmlir / {other} tokens/s (median of rounds) | "
              "range over rounds |")
        print("|---|---|---|---|---|---|---|---|---|")
        for b, s, th, p, ptok, t, ttok, ratio, low, high in rows:
            print(f"| {b} | {s} | {th} | {p:.1f} | {ptok:.0f} | {t:.1f} | {ttok:.0f} | "
                  f"{ratio:.2f}x | {low:.2f}-{high:.2f} |")
        mode = "" if args.jax else (", torch.compile" if args.torch_compile else ", eager")
        if args.precision == "bf16" and not args.jax:
            mode += ", bf16 autocast" + (
                ", GEMM weights cast to bf16 once" if args.torch_bf16_weights else "")
        print(f"\n{other}: {torch_side}{mode} ({args.python}); pmlir-run's GEMMs (last run): "
              f"{gemm}\n")

    # GEMM against the measured FMA peak.
    peak_exe = os.path.join(work, "fma_peak")
    subprocess.run(["gcc", "-O2", "-pthread",
                    os.path.join(HERE, "fma_peak.c"), "-o", peak_exe], check=True)

    def peak_run(threads):
        """GFLOP/s and the instructions fma_peak measured them on."""
        rate, isa = subprocess.run([peak_exe, str(threads)], check=True, capture_output=True,
                                   text=True).stdout.split()
        return float(rate), isa

    peak_isa = peak_run(1)[1]
    print("| GEMM (M x 768) @ (768 x 3072) | threads | pmlir-run GFLOP/s | "
          f"measured {peak_isa} FMA peak GFLOP/s | fraction of peak |")
    print("|---|---|---|---|---|")
    paths = set()
    for threads in thread_counts:
        # Best of three: a neighbour on a shared machine only ever lowers it.
        peak = max(peak_run(threads)[0] for _ in range(3))
        for m in sorted({b * s for b, s in shapes}):
            model = os.path.join(work, f"gemm-{m}.mlir")
            with open(model, "w") as f:
                f.write(f"""func.func @forward(%x: tensor<{m}x768xf32> {{tfm.name = "x"}},
    %w: tensor<768x3072xf32> {{tfm.name = "w"}}) -> tensor<{m}x3072xf32> {{
  %y = tfm.matmul %x, %w : tensor<{m}x768xf32>, tensor<768x3072xf32> -> tensor<{m}x3072xf32>
  return %y : tensor<{m}x3072xf32>
}}
""")
            # Best of three medians, as for the peak.
            outs = [run([pmlir_run, model, "--repeat", "20", "--threads", str(threads),
                         "--verbose"])[0] for _ in range(3)]
            ms = min(float(re.search(r"median ([\d.]+) ms", out).group(1)) for out in outs)
            paths.add(re.search(r"^gemm: (.*)$", outs[0], re.M).group(1))
            gflops = 2 * m * 768 * 3072 / (ms * 1e-3) / 1e9
            print(f"| M = {m} | {threads} | {gflops:.1f} | {peak:.1f} | {gflops / peak:.0%} |")
    print("\nGEMM path (pmlir-run --verbose): " + "; ".join(sorted(paths)))

    if memory:
        print("\n| batch | seq | pmlir-run peak RSS | weights | activations of one forward | "
              "RSS / (weights + activations) |")
        print("|---|---|---|---|---|---|")
        for b, s, rss, w, act, ratio in memory:
            print(f"| {b} | {s} | {rss / 2**20:.0f} MiB | {w / 2**20:.0f} MiB | "
                  f"{act / 2**20:.0f} MiB | {ratio:.2f} |")


if __name__ == "__main__":
    main()
