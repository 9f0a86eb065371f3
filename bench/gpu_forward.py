#!/usr/bin/env python3
"""GPT-2 small on one GPU, pmlir-run --device gpu next to PyTorch, in one run.

  python3 bench/gpu_forward.py [--build build] [--rounds 3] [--repeat 10]
      [--shape 8x1024] [--precisions f32,tf32,bf16] [--steps 6] [--no-compile]

Four tables, each measured side by side on the machine it runs on (a GPU
with CUDA, PyTorch built for it, and pmlir's binaries built with CUDA):

1. Forward of GPT-2 small (12 layers, hidden 768, 12 heads, vocabulary
   50257) at batch x seq, per precision: pmlir-run --device gpu --precision
   P --repeat N (the median of N forwards after a warm-up; the logits stay
   on the device) against PyTorch eager and torch.compile running
   test/Integration/CPU/reference.py's GPT-2 (the ops of Hugging Face's
   GPT2LMHeadModel) on the same shapes: f32 with TF32 off, f32 with TF32 on
   (torch.backends.cuda.matmul.allow_tf32), bf16 under torch.autocast. Each
   side reports the median of its forwards timed with CUDA events; `rounds`
   runs alternate which goes first; the ratio is taken per back-to-back pair.
2. A training step in bf16 (forward, backward, AdamW over every parameter):
   pmlir-run --train --precision bf16 against PyTorch eager and compiled
   under autocast with the fused AdamW.
   Then each of these jobs predicted before it runs (pmlir-run --predict
   --device gpu --profile h100|h200, by the GPU's name or --profile), next
   to its measurement.
3. The bandwidth of generated kernels: a bias + GELU over a 64M-element
   tensor and a layer norm over 8192 rows of 8192, pmlir-run against
   PyTorch's device-to-device copy of the same tensor (the copy ceiling),
   bytes read + written over the median time.
4. Host overhead per kernel: a chain of 64 softmaxes of one row of 32, where
   every kernel is latency: the forward's time over the kernels it launches
   (pmlir: counted in the program pmlir-run --compile-only compiles; one
   a softmax in PyTorch eager).

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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GPT2_SMALL = dict(layers=12, hidden=768, heads=12, vocab=50257, max_positions=1024)


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    return out.stdout


def median_ms(text):
    return float(re.search(r"median ([\d.]+) ms", text).group(1))


# ---------------------------------------------------------------------------
# PyTorch, in a child process each so that one's compile cache and memory do
# not touch the other's.

def torch_setup(precision):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    return torch


def cuda_median_ms(torch, fn, repeat):
    fn()
    fn()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def torch_forward(batch, seq, precision, compiled, repeat):
    torch = torch_setup(precision)
    sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
    from reference import gpt2_forward, gpt2_weights
    c = dict(GPT2_SMALL)
    w = {k: v.cuda() for k, v in gpt2_weights(c, torch.Generator().manual_seed(0)).items()}
    ids = torch.randint(0, c["vocab"], (batch, seq), device="cuda")
    forward = torch.compile(gpt2_forward) if compiled else gpt2_forward

    def step():
        with torch.inference_mode(), torch.autocast("cuda", torch.bfloat16,
                                                    enabled=precision == "bf16"):
            forward(c, w, ids)
    return cuda_median_ms(torch, step, repeat)


def torch_train(batch, seq, compiled, steps):
    torch = torch_setup("bf16")
    import torch.nn.functional as F
    sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
    from reference import gpt2_forward, gpt2_weights
    c = dict(GPT2_SMALL)
    w = {k: v.cuda().requires_grad_() for k, v in
         gpt2_weights(c, torch.Generator().manual_seed(0)).items()}
    opt = torch.optim.AdamW(list(w.values()), lr=1e-3, weight_decay=0.01, fused=True)
    tokens = torch.randint(0, c["vocab"], (batch, seq + 1), device="cuda")
    ids, labels = tokens[:, :-1], tokens[:, 1:]

    def loss_of():
        with torch.autocast("cuda", torch.bfloat16):
            logits = gpt2_forward(c, w, ids)
        return F.cross_entropy(logits.float().reshape(-1, c["vocab"]), labels.reshape(-1))
    loss_fn = torch.compile(loss_of) if compiled else loss_of

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        opt.step()
    return cuda_median_ms(torch, step, steps)


def torch_copy_gbs(elements, repeat):
    import torch
    x = torch.randn(elements, device="cuda")
    y = torch.empty_like(x)
    ms = cuda_median_ms(torch, lambda: y.copy_(x), repeat)
    return 2 * 4 * elements / (ms * 1e-3) / 1e9


def torch_softmax_chain(n, repeat):
    import torch
    x = torch.randn(1, 32, device="cuda")

    def chain():
        y = x
        for _ in range(n):
            y = y.softmax(-1)
    return cuda_median_ms(torch, chain, repeat) * 1e3 / n


def torch_worker(args):
    kind = args[0]
    if kind == "forward":
        print(torch_forward(int(args[1]), int(args[2]), args[3], args[4] == "1", int(args[5])))
    elif kind == "train":
        print(torch_train(int(args[1]), int(args[2]), args[3] == "1", int(args[4])))
    elif kind == "copy":
        print(torch_copy_gbs(int(args[1]), int(args[2])))
    elif kind == "softmax-chain":
        print(torch_softmax_chain(int(args[1]), int(args[2])))


def torch_child(*args):
    return float(run([sys.executable, __file__, "--torch-worker", *map(str, args)]).strip())


# ---------------------------------------------------------------------------

def write_ids(path, batch, seq, vocab, labels=False):
    """Random token ids [batch, seq]; with `labels`, the next token of each
    as a training step's labels."""
    sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
    import torch
    from reference import write_safetensors
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, (batch, seq + 1), generator=g)
    tensors = {"input_ids": tokens[:, :-1].contiguous()}
    if labels:
        tensors["labels"] = tokens[:, 1:].contiguous()
    write_safetensors(path, tensors)


def kernels_in(pmlir_run, model):
    """The kernels a forward of `model` (one function, no layers) launches:
    the gpu.launch_func ops of the program pmlir-run compiles for this GPU."""
    capability = run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"])
    chip = "sm_" + capability.splitlines()[0].strip().replace(".", "")
    compiled = os.path.join(os.path.dirname(model), "compiled.mlir")
    run([pmlir_run, model, "--device", "gpu", "--gpu-chip", chip,
         "--compile-only", "--emit-compiled", compiled])
    with open(compiled) as f:
        return f.read().count("gpu.launch_func")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--shape", default="8x1024", help="batch x seq")
    ap.add_argument("--precisions", default="f32,tf32,bf16")
    ap.add_argument("--steps", type=int, default=6, help="training steps a run; the first is "
                    "not timed")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--profile", help="the device profile pmlir-run --predict prices the jobs "
                    "on (default: h100 or h200 by the GPU's name; none: no predictions)")
    ap.add_argument("--torch-worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        return torch_worker(args.torch_worker)
    with tempfile.TemporaryDirectory(prefix="pmlir-bench-") as work:
        measure(args, work)


def measure(args, work):
    tools = os.path.join(args.build, "bin")
    gen, prun = (os.path.join(tools, t) for t in ("pmlir-gen", "pmlir-run"))
    batch, seq = (int(x) for x in args.shape.split("x"))
    tokens = batch * seq
    gpu = run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).strip()
    print(f"GPU: {gpu}; batch {batch} x seq {seq}; rounds {args.rounds}, {args.repeat} timed "
          f"forwards a run.\n")
    model = os.path.join(work, "gpt2.mlir")
    loss_model = os.path.join(work, "gpt2-loss.mlir")
    ids = os.path.join(work, "ids.safetensors")
    shape = ["--layers", "12", "--hidden", "768", "--heads", "12", "--vocab", "50257",
             "--max-positions", "1024", "--seq", str(seq), "--batch", str(batch)]
    run([gen, "gpt2", *shape, "-o", model])
    run([gen, "gpt2", *shape, "--loss", "-o", loss_model])
    write_ids(ids, batch, seq, GPT2_SMALL["vocab"])
    batch_ids = os.path.join(work, "batch.safetensors")
    write_ids(batch_ids, batch, seq, GPT2_SMALL["vocab"], labels=True)

    # pmlir's median ms and its pmlir-run arguments, per job.
    measured = {}

    # 1. Forwards.
    print("| precision | pmlir ms | pmlir tokens/s | PyTorch eager tokens/s | pmlir / eager "
          "(range) | torch.compile tokens/s | pmlir / compiled |")
    print("|---|---|---|---|---|---|---|")
    for precision in args.precisions.split(","):
        ours, eager, compiled = [], [], []
        for r in range(args.rounds):
            sides = ["pmlir", "eager"] + ([] if args.no_compile else ["compiled"])
            for who in sides if r % 2 == 0 else reversed(sides):
                if who == "pmlir":
                    ours.append(median_ms(run([prun, model, "--device", "gpu", "--precision",
                                               precision, "--inputs", ids, "--repeat",
                                               str(args.repeat)])))
                else:
                    (eager if who == "eager" else compiled).append(torch_child(
                        "forward", batch, seq, precision, int(who == "compiled"), args.repeat))
        p, e = statistics.median(ours), statistics.median(eager)
        measured[f"forward {precision}"] = (p, [model, "--precision", precision])
        ratios = [b / a for a, b in zip(ours, eager)]
        row = (f"| {precision} | {p:.2f} | {tokens / p * 1e3:,.0f} | {tokens / e * 1e3:,.0f} | "
               f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |")
        if compiled:
            c = statistics.median(compiled)
            row += f" {tokens / c * 1e3:,.0f} | {c / p:.2f}x |"
        else:
            row += " | |"
        print(row)
    print()

    # 2. A bf16 training step.
    if args.steps < 2:
        sys.exit("--steps must be at least 2 (the first step is not timed)")
    ours, eager, compiled = [], [], []
    for r in range(args.rounds):
        out = run([prun, loss_model, "--device", "gpu", "--precision", "bf16", "--train",
                   "--inputs", batch_ids, "--steps", str(args.steps), "--lr", "1e-3",
                   "--weight-decay", "0.01"])
        rates = [float(x) for x in re.findall(r"([\d.]+) tokens/s", out)][1:]
        ours.append(tokens / statistics.median(rates) * 1e3)
        eager.append(torch_child("train", batch, seq, 0, args.steps))
        if not args.no_compile:
            compiled.append(torch_child("train", batch, seq, 1, args.steps))
    p, e = statistics.median(ours), statistics.median(eager)
    measured["training step bf16"] = (p, [loss_model, "--precision", "bf16", "--train",
                                          "--inputs", batch_ids])
    print("| bf16 training step | pmlir ms | pmlir tokens/s | PyTorch eager tokens/s | "
          "pmlir / eager | torch.compile tokens/s | pmlir / compiled |")
    print("|---|---|---|---|---|---|---|")
    row = (f"| GPT-2 small {batch}x{seq} | {p:.1f} | {tokens / p * 1e3:,.0f} | "
           f"{tokens / e * 1e3:,.0f} | {e / p:.2f}x |")
    if compiled:
        c = statistics.median(compiled)
        row += f" {tokens / c * 1e3:,.0f} | {c / p:.2f}x |"
    print(row + "\n")

    # Each job predicted before it runs (pmlir-run --predict; no GPU asked),
    # against its measurement above.
    profile = args.profile or ("h200" if "H200" in gpu else "h100" if "H100" in gpu else "none")
    if profile != "none":
        print(f"| job (pmlir-run --predict --profile {profile}) | predicted ms | measured ms | "
              "predicted / measured |")
        print("|---|---|---|---|")
        for job, (ms, flags) in measured.items():
            report = json.loads(run([prun, *flags, "--device", "gpu", "--predict", "--profile",
                                     profile, "--json"]))
            predicted = report["step_seconds"] * 1e3
            print(f"| {job} | {predicted:.2f} | {ms:.2f} | {predicted / ms:.2f} |")
        print()

    # 3. Bandwidth of generated kernels against the copy ceiling.
    rows, cols = 8192, 8192
    elements = rows * cols
    kernels = os.path.join(work, "bandwidth.mlir")
    with open(kernels, "w") as f:
        f.write(f"""func.func @forward(%x: tensor<{rows}x{cols}xf32> {{tfm.name = "x"}},
    %b: tensor<{cols}xf32> {{tfm.name = "b"}}) -> tensor<{rows}x{cols}xf32> {{
  %y = tfm.add %x, %b : tensor<{rows}x{cols}xf32>, tensor<{cols}xf32>
  %g = tfm.gelu %y tanh : tensor<{rows}x{cols}xf32>
  return %g : tensor<{rows}x{cols}xf32>
}}
""")
    norm = os.path.join(work, "layernorm.mlir")
    with open(norm, "w") as f:
        f.write(f"""func.func @forward(%x: tensor<{rows}x{cols}xf32> {{tfm.name = "x"}},
    %g: tensor<{cols}xf32> {{tfm.name = "g"}}, %b: tensor<{cols}xf32> {{tfm.name = "b"}})
    -> tensor<{rows}x{cols}xf32> {{
  %y = tfm.layernorm %x, %g, %b eps = 1.0e-05 : tensor<{rows}x{cols}xf32>, tensor<{cols}xf32>
  return %y : tensor<{rows}x{cols}xf32>
}}
""")
    ceiling = statistics.median(torch_child("copy", elements, 50) for _ in range(args.rounds))
    print(f"| kernel ({rows} x {cols} f32) | pmlir GB/s (read + written) | copy ceiling GB/s "
          "(PyTorch copy_) | fraction |")
    print("|---|---|---|---|")
    for name, path in (("bias + GELU", kernels), ("layer norm", norm)):
        ms = statistics.median(median_ms(run([prun, path, "--device", "gpu", "--repeat", "50"]))
                               for _ in range(args.rounds))
        gbs = 2 * 4 * elements / (ms * 1e-3) / 1e9
        print(f"| {name} | {gbs:,.0f} | {ceiling:,.0f} | {gbs / ceiling:.0%} |")
    print()

    # 4. Host overhead per kernel launch.
    n = 64
    chain = os.path.join(work, "chain.mlir")
    with open(chain, "w") as f:
        f.write('func.func @forward(%x: tensor<1x32xf32> {tfm.name = "x"}) -> tensor<1x32xf32> {\n')
        prev = "%x"
        for i in range(n):
            f.write(f"  %s{i} = tfm.softmax {prev} : tensor<1x32xf32>\n")
            prev = f"%s{i}"
        f.write(f"  return {prev} : tensor<1x32xf32>\n}}\n")
    launches = kernels_in(prun, chain)
    ms = statistics.median(median_ms(run([prun, chain, "--device", "gpu", "--repeat", "200"]))
                           for _ in range(args.rounds))
    theirs = statistics.median(torch_child("softmax-chain", n, 200) for _ in range(args.rounds))
    print("| 64 softmaxes of [1, 32] | kernels | µs a kernel |")
    print("|---|---|---|")
    print(f"| pmlir-run --device gpu | {launches} | {ms * 1e3 / launches:.1f} |")
    print(f"| PyTorch eager | {n} | {theirs:.1f} |")


if __name__ == "__main__":
    main()
