#!/usr/bin/env python3
"""Checks pmlir-run --grads on a model with one Mixtral block against PyTorch
autograd in float64.

  moe_grads.py PMLIR_RUN WORKDIR --experts E --top-k K [--softmax-weights]
               [--fused [--expert-parallel] [--skew]] [--seed N] [--tol T]
               [--run-args ARGS]

The model: token embedding, one tfm.layer holding a Mixtral sparse block
(router, top-k, SwiGLU experts as grouped matmuls; the top-k weights
renormalized, or with --softmax-weights the probabilities as they are, as
Switch Transformer's top-1 router, whose renormalized weight would be 1) added to the residual,
an untied head and the mean cross entropy. Its backward is pmlir-autodiff's,
built from the ops' gradients. With --fused the block after the router is one
tfm.moe_experts (and its backward one tfm.moe_experts_grad); --expert-parallel
annotates the tokens and the experts split over mesh axis ep, and --skew makes
every token choose among the first half of the experts (those of the first
of two ep ranks: it receives every row, the other none). Prints the loss's and
each gradient's relative error and exits non-zero above the tolerance.
"""
import argparse
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from ops import sparse_block_ref, ttype  # noqa: E402
from reference import read_safetensors, write_safetensors  # noqa: E402

BATCH, SEQ, HIDDEN, FFN, VOCAB = 2, 7, 16, 13, 11


def module_text(experts, k, normalize, fused=False, expert_parallel=False):
    n = BATCH * SEQ * k
    xt, route = ttype([BATCH, SEQ, HIDDEN]), ttype([BATCH, SEQ, k])
    ids = ttype([BATCH, SEQ, k], "i64")
    counts = ttype([experts], "i64")
    w13, w2 = ttype([experts, FFN, HIDDEN]), ttype([experts, HIDDEN, FFN])
    rows, hid = ttype([n, HIDDEN]), ttype([n, FFN])
    tokens = ttype([BATCH, SEQ], "i64")
    logits = ttype([BATCH, SEQ, VOCAB])
    params = [("embed.weight", [VOCAB, HIDDEN]), ("moe.gate.weight", [experts, HIDDEN]),
              ("moe.w1", [experts, FFN, HIDDEN]), ("moe.w3", [experts, FFN, HIDDEN]),
              ("moe.w2", [experts, HIDDEN, FFN]), ("lm_head.weight", [VOCAB, HIDDEN])]
    def split(rank):
        if not expert_parallel:
            return ""
        dims = ", ".join(['["ep"]'] + ["[]"] * (rank - 1))
        return f", tfm.sharding = #tfm.sharding<[{dims}]>"
    args = [f'%ids: {tokens} {{tfm.name = "input_ids"{split(2)}}}',
            f'%labels: {tokens} {{tfm.name = "labels"{split(2)}}}']
    args += [f'%p{i}: {ttype(shape)} {{tfm.name = "{name}"'
             f'{split(3) if name.startswith("moe.w") else ""}}}'
             for i, (name, shape) in enumerate(params)]
    experts_body = f"""
    %slots, %sources, %counts = tfm.moe_sort %e num_experts = {experts} : {ids} -> {ids}, {ttype([n], 'i64')}, {counts}
    %rows = tfm.moe_dispatch %x, %slots, %sources : {xt}, {ids}, {ttype([n], 'i64')} -> {rows}
    %a = tfm.grouped_matmul %rows, %p2, %counts transpose_rhs : {rows}, {w13}, {counts} -> {hid}
    %b = tfm.grouped_matmul %rows, %p3, %counts transpose_rhs : {rows}, {w13}, {counts} -> {hid}
    %s = tfm.silu %a : {hid}
    %g = tfm.mul %s, %b : {hid}, {hid}
    %o = tfm.grouped_matmul %g, %p4, %counts transpose_rhs : {hid}, {w2}, {counts} -> {rows}
    %y = tfm.moe_combine %o, %slots, %sources weights %w : {rows}, {ids}, {ttype([n], 'i64')}, {route} -> {xt}"""
    if fused:
        experts_body = f"""
    %y = tfm.moe_experts %x, %e, %w, %p2, %p3, %p4 : {xt}, {ids}, {route}, {w13}, {w13}, {w2} -> {xt}"""
    body = f"""
  %x = tfm.embedding %p0[%ids] : {ttype([VOCAB, HIDDEN])}, {tokens} -> {xt}
  %h = tfm.layer 0 : {xt} {{
    %logits = tfm.matmul %x, %p1 transpose_rhs : {xt}, {ttype([experts, HIDDEN])} -> {ttype([BATCH, SEQ, experts])}
    %w, %e = tfm.moe_route %logits top_k = {k}{' normalize' if normalize else ''} : {ttype([BATCH, SEQ, experts])} -> {route}, {ids}{experts_body}
    %r = tfm.add %x, %y : {xt}, {xt}
    tfm.yield %r : {xt}
  }}
  %out = tfm.matmul %h, %p5 transpose_rhs : {xt}, {ttype([VOCAB, HIDDEN])} -> {logits}
  %loss = tfm.cross_entropy %out, %labels ignore_index = -100 : {logits}, {tokens} -> tensor<f32>
  return %loss : tensor<f32>"""
    text = (f"func.func @forward({', '.join(args)}) -> (tensor<f32> {{tfm.name = \"loss\"}}) {{"
            f"{body}\n}}\n")
    if expert_parallel:
        text = f"module attributes {{tfm.mesh = #tfm.mesh<ep = 2>}} {{\n{text}}}\n"
    return text, params


def reference_loss(p, ids, labels, k, normalize):
    x = p["embed.weight"][ids]
    h = x + sparse_block_ref(x, p["moe.gate.weight"], p["moe.w1"], p["moe.w3"], p["moe.w2"], k,
                             normalize)
    logits = h @ p["lm_head.weight"].T
    return F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1), ignore_index=-100)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pmlir_run")
    ap.add_argument("workdir")
    ap.add_argument("--experts", type=int, required=True)
    ap.add_argument("--top-k", type=int, required=True)
    ap.add_argument("--softmax-weights", action="store_true",
                    help="the chosen experts' probabilities as weights, not renormalized")
    ap.add_argument("--fused", action="store_true", help="the experts as one tfm.moe_experts")
    ap.add_argument("--expert-parallel", action="store_true",
                    help="annotate the tokens and the experts split over the axis of mesh ep=2")
    ap.add_argument("--skew", action="store_true",
                    help="every token chooses among the first half of the experts")
    ap.add_argument("--seed", type=int, default=0)
    # As the whole-model gradients of reference.py: sums over tokens in f32.
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--run-args", default="", help="more pmlir-run arguments")
    args = ap.parse_args()
    g = torch.Generator().manual_seed(args.seed)
    normalize = not args.softmax_weights
    if args.expert_parallel and not args.fused:
        sys.exit("--expert-parallel splits the experts of --fused's tfm.moe_experts")
    if args.skew and 2 * args.top_k > args.experts:
        sys.exit("--skew: --top-k must be at most half the experts")
    text, params = module_text(args.experts, args.top_k, normalize, args.fused,
                               args.expert_parallel)
    model = f"{args.workdir}/moe-e{args.experts}-k{args.top_k}.mlir"
    with open(model, "w") as f:
        f.write(text)
    weights = {name: torch.randn(*shape, generator=g) * (0.5 if "moe.w" in name else 1.0)
               for name, shape in params}
    if args.skew:
        # Every token's hidden state leans along u, which the first half of
        # the experts' router rows follow and the second half's oppose: each
        # token's top-k is among the first half, in an order its own part
        # of the state decides.
        u = torch.zeros(HIDDEN)
        u[0] = 1.0
        weights["embed.weight"] += 3.0 * u
        half = args.experts // 2
        sign = torch.tensor([1.0] * half + [-1.0] * (args.experts - half))[:, None]
        weights["moe.gate.weight"] = 0.5 * weights["moe.gate.weight"] + 4.0 * sign * u
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    labels = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    labels[0, 2] = -100
    wpath, ipath = f"{model}.weights.safetensors", f"{model}.inputs.safetensors"
    gpath = f"{model}.grads.safetensors"
    write_safetensors(wpath, weights)
    write_safetensors(ipath, {"input_ids": ids, "labels": labels})
    subprocess.run([args.pmlir_run, model, "--weights", wpath, "--inputs", ipath, "--grads",
                    gpath] + args.run_args.split(), check=True)
    got = read_safetensors(gpath)

    p = {n: t.double().requires_grad_() for n, t in weights.items()}
    loss = reference_loss(p, ids, labels, args.top_k, normalize)
    loss.backward()
    refs = {"loss": loss.detach()}
    refs.update({n: t.grad for n, t in p.items()})
    worst, failed = 0.0, 0
    for name, ref in refs.items():
        err = ((got[name].double() - ref).norm() / ref.norm()).item()
        worst = max(worst, err)
        if err > args.tol:
            failed += 1
            print(f"FAIL {name}: relative error {err:.2e}")
    print(f"moe E={args.experts} k={args.top_k}: loss and {len(refs) - 1} gradients: worst "
          f"relative error {worst:.2e}, tolerance {args.tol}, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
