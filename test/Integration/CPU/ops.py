#!/usr/bin/env python3
"""Checks the CPU lowering of each tfm op against PyTorch in float64.

  ops.py PMLIR_RUN WORKDIR [--seed N] [--tol T] [--run-args ARGS] [--only NAME]...

Each case is a one-op function on random inputs with odd sizes (7, 13, 97);
pmlir-run computes it and this script compares ||got - ref|| / ||ref|| with
the tolerance. Prints one line per case (a case whose run fails is one
that fails) and exits non-zero if any fails.
"""
import argparse
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from reference import (kept_choices, read_safetensors, route, sparse_block,  # noqa: E402
                       write_safetensors)


def ttype(shape, dtype="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


class Case:
    def __init__(self, name, args, result, body, ref):
        self.name, self.args, self.result, self.body, self.ref = name, args, result, body, ref


def cases(g):
    def rnd(*shape):
        return torch.randn(*shape, generator=g)

    out = []

    def add(name, inputs, result_shape, body, ref, result_dtype="f32"):
        args = [(n, list(t.shape), "i64" if t.dtype == torch.int64 else "f32", t) for n, t in inputs]
        out.append(Case(name, args, (result_shape, result_dtype), body, ref))

    x = rnd(3, 13, 97)
    for op, fn in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul)):
        for bshape in ((97,), (13, 97), (3, 13, 97)):
            b = rnd(*bshape)
            add(f"{op} {list(bshape)}", [("x", x), ("b", b)], [3, 13, 97],
                f"tfm.{op} %x, %b : {ttype([3, 13, 97])}, {ttype(bshape)}",
                lambda t, fn=fn: fn(t["x"], t["b"]))
    add("scale", [("x", x)], [3, 13, 97], f"tfm.scale %x, -0.37 : {ttype([3, 13, 97])}",
        lambda t: t["x"] * -0.37)
    add("gelu tanh", [("x", x)], [3, 13, 97], f"tfm.gelu %x tanh : {ttype([3, 13, 97])}",
        lambda t: F.gelu(t["x"], approximate="tanh"))
    add("gelu erf", [("x", x)], [3, 13, 97], f"tfm.gelu %x erf : {ttype([3, 13, 97])}",
        lambda t: F.gelu(t["x"]))
    add("silu", [("x", x)], [3, 13, 97], f"tfm.silu %x : {ttype([3, 13, 97])}",
        lambda t: F.silu(t["x"]))
    add("softmax", [("x", x * 4)], [3, 13, 97], f"tfm.softmax %x : {ttype([3, 13, 97])}",
        lambda t: t["x"].softmax(-1))
    g97, b97 = 1 + 0.1 * rnd(97), rnd(97)
    add("layernorm", [("x", x + 3), ("g", g97), ("b", b97)], [3, 13, 97],
        f"tfm.layernorm %x, %g, %b eps = 1.0e-05 : {ttype([3, 13, 97])}, {ttype([97])}",
        lambda t: F.layer_norm(t["x"], (97,), t["g"], t["b"], 1e-5))
    add("rmsnorm", [("x", x), ("g", g97)], [3, 13, 97],
        f"tfm.rmsnorm %x, %g eps = 1.0e-06 : {ttype([3, 13, 97])}, {ttype([97])}",
        lambda t: t["x"] * torch.rsqrt(t["x"].pow(2).mean(-1, keepdim=True) + 1e-6) * t["g"])

    a, w = rnd(3, 7, 13), rnd(13, 97)
    add("matmul", [("a", a), ("w", w)], [3, 7, 97],
        f"tfm.matmul %a, %w : {ttype([3, 7, 13])}, {ttype([13, 97])} -> {ttype([3, 7, 97])}",
        lambda t: t["a"] @ t["w"])
    wt = rnd(97, 13)
    add("matmul transpose_rhs", [("a", a), ("w", wt)], [3, 7, 97],
        f"tfm.matmul %a, %w transpose_rhs : {ttype([3, 7, 13])}, {ttype([97, 13])} -> {ttype([3, 7, 97])}",
        lambda t: t["a"] @ t["w"].T)
    l2, r2 = rnd(13, 7), rnd(5, 13)
    add("matmul transpose_lhs transpose_rhs", [("l", l2), ("r", r2)], [7, 5],
        f"tfm.matmul %l, %r transpose_lhs transpose_rhs : {ttype([13, 7])}, {ttype([5, 13])} -> {ttype([7, 5])}",
        lambda t: t["l"].T @ t["r"].T)
    bl, br = rnd(2, 3, 7, 13), rnd(2, 3, 13, 5)
    add("matmul batched", [("l", bl), ("r", br)], [2, 3, 7, 5],
        f"tfm.matmul %l, %r : {ttype([2, 3, 7, 13])}, {ttype([2, 3, 13, 5])} -> {ttype([2, 3, 7, 5])}",
        lambda t: t["l"] @ t["r"])

    table = rnd(97, 13)
    ids = torch.randint(0, 97, (3, 7), generator=g)
    add("embedding", [("table", table), ("ids", ids)], [3, 7, 13],
        f"tfm.embedding %table[%ids] : {ttype([97, 13])}, {ttype([3, 7], 'i64')} -> {ttype([3, 7, 13])}",
        lambda t: t["table"][t["ids"]])

    h = rnd(2, 7, 3 * 10)
    add("split_heads", [("h", h)], [2, 3, 7, 10],
        f"tfm.split_heads %h heads = 3 : {ttype([2, 7, 30])} -> {ttype([2, 3, 7, 10])}",
        lambda t: t["h"].view(2, 7, 3, 10).transpose(1, 2))
    m = rnd(2, 3, 7, 10)
    add("merge_heads", [("m", m)], [2, 7, 30],
        f"tfm.merge_heads %m : {ttype([2, 3, 7, 10])} -> {ttype([2, 7, 30])}",
        lambda t: t["m"].transpose(1, 2).reshape(2, 7, 30))
    sp = rnd(13, 21)
    add("split (second of three)", [("w", sp)], [13, 7],
        f"%p:3 = tfm.split %w dim = 1 : {ttype([13, 21])} -> {ttype([13, 7])}, {ttype([13, 7])}, {ttype([13, 7])}\n  %result = tfm.add %p#1, %p#1 : {ttype([13, 7])}, {ttype([13, 7])}",
        lambda t: 2 * t["w"][:, 7:14])

    def rope_ref(x, theta, start):
        d, s = x.shape[-1], x.shape[-2]
        inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        pos = torch.arange(start, start + s, dtype=torch.float64)
        emb = torch.cat([pos[:, None] * inv[None]] * 2, dim=-1)
        half = d // 2
        rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * emb.cos() + rot * emb.sin()

    r = rnd(2, 3, 7, 10)
    add("rope (arange start 5)", [("x", r)], [2, 3, 7, 10],
        f"%pos = tfm.arange start = 5 : {ttype([7], 'i64')}\n  %result = tfm.rope %x, %pos theta = 1.0e+04 : {ttype([2, 3, 7, 10])}, {ttype([7], 'i64')}",
        lambda t: rope_ref(t["x"], 10000.0, 5))

    def attention_ref(q, k, v, scale, causal):
        groups = q.shape[1] // k.shape[1]
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        s = (q @ k.transpose(-1, -2)) * scale
        if causal:
            S, T = q.shape[2], k.shape[2]
            mask = torch.ones(S, T, dtype=torch.bool).tril(T - S)
            s = s.masked_fill(~mask, float("-inf"))
        return s.softmax(-1) @ v

    q, k, v = rnd(2, 6, 7, 8), rnd(2, 2, 7, 8), rnd(2, 2, 7, 8)
    add("attention causal GQA 6/2", [("q", q), ("k", k), ("v", v)], [2, 6, 7, 8],
        f"tfm.attention %q, %k, %v causal scale = 0.35 : {ttype([2, 6, 7, 8])}, {ttype([2, 2, 7, 8])}, {ttype([2, 2, 7, 8])} -> {ttype([2, 6, 7, 8])}",
        lambda t: attention_ref(t["q"], t["k"], t["v"], 0.35, True))
    q, k, v = rnd(1, 2, 3, 8), rnd(1, 1, 13, 8), rnd(1, 1, 13, 5)
    add("attention causal Skv > S, Dv != D", [("q", q), ("k", k), ("v", v)], [1, 2, 3, 5],
        f"tfm.attention %q, %k, %v causal scale = 0.5 : {ttype([1, 2, 3, 8])}, {ttype([1, 1, 13, 8])}, {ttype([1, 1, 13, 5])} -> {ttype([1, 2, 3, 5])}",
        lambda t: attention_ref(t["q"], t["k"], t["v"], 0.5, True))
    add("attention non-causal", [("q", q), ("k", k), ("v", v)], [1, 2, 3, 5],
        f"tfm.attention %q, %k, %v scale = 0.5 : {ttype([1, 2, 3, 8])}, {ttype([1, 1, 13, 8])}, {ttype([1, 1, 13, 5])} -> {ttype([1, 2, 3, 5])}",
        lambda t: attention_ref(t["q"], t["k"], t["v"], 0.5, False))

    logits = rnd(2, 7, 97) * 3
    labels = torch.randint(0, 97, (2, 7), generator=g)
    labels[0, 3] = labels[1, 0] = -100
    add("cross_entropy (ignore_index)", [("logits", logits), ("labels", labels)], [],
        f"tfm.cross_entropy %logits, %labels ignore_index = -100 : {ttype([2, 7, 97])}, {ttype([2, 7], 'i64')} -> tensor<f32>",
        lambda t: F.cross_entropy(t["logits"].reshape(-1, 97), t["labels"].reshape(-1), ignore_index=-100))

    # Megatron's vocab-parallel cross entropy on one rank: the vocabulary in
    # two blocks of 49 columns, the second ending in a padding column that
    # holds a value larger than any logit and must count for nothing.
    la = logits[..., :49].contiguous()
    lb = torch.cat([logits[..., 49:], torch.full((2, 7, 1), 1e4)], dim=-1)
    block = f"{ttype([2, 7, 49])}"
    add("row_max (a padded vocabulary block)", [("lb", lb)], [2, 7],
        f"%o = arith.constant 49 : index\n  %result = tfm.row_max %lb vocab_from %o vocab = 97 : {block} -> {ttype([2, 7])}",
        lambda t: t["lb"][..., :48].amax(-1))
    parts = f"{block}, {ttype([2, 7], 'i64')}, {ttype([2, 7])} -> {ttype([2, 7, 2])}"
    add("cross_entropy_parts + combine (two blocks)",
        [("la", la), ("lb", lb), ("labels", labels), ("max", logits.amax(-1))], [],
        f"%o0 = arith.constant 0 : index\n  %o1 = arith.constant 49 : index\n"
        f"  %pa = tfm.cross_entropy_parts %la, %labels, %max vocab_from %o0 vocab = 97 : {parts}\n"
        f"  %pb = tfm.cross_entropy_parts %lb, %labels, %max vocab_from %o1 vocab = 97 : {parts}\n"
        f"  %p = tfm.add %pa, %pb : {ttype([2, 7, 2])}, {ttype([2, 7, 2])}\n"
        f"  %result = tfm.cross_entropy_combine %p, %labels ignore_index = -100 : {ttype([2, 7, 2])}, {ttype([2, 7], 'i64')} -> tensor<f32>",
        lambda t: F.cross_entropy(torch.cat([t["la"], t["lb"][..., :48]], -1).reshape(-1, 97),
                                  t["labels"].reshape(-1), ignore_index=-100))

    # Mixture of experts: the router, grouped matmuls with an empty group,
    # and whole Mixtral blocks against Hugging Face's per-expert loop.
    router = rnd(2, 7, 5) * 2
    add("moe_route top-2 normalize", [("l", router)], [2, 7, 2],
        f"%result, %e = tfm.moe_route %l top_k = 2 normalize : {ttype([2, 7, 5])} -> "
        f"{ttype([2, 7, 2])}, {ttype([2, 7, 2], 'i64')}",
        lambda t: route(t["l"], 2, True)[0])
    route7 = rnd(13, 7) * 2
    add("moe_route top-3 of 7, softmax weights", [("l", route7)], [13, 3],
        f"%result, %e = tfm.moe_route %l top_k = 3 : {ttype([13, 7])} -> "
        f"{ttype([13, 3])}, {ttype([13, 3], 'i64')}",
        lambda t: route(t["l"], 3, False)[0])
    rows, wt = rnd(13, 16), rnd(4, 7, 16)
    counts = torch.tensor([5, 0, 6, 2])
    add("grouped_matmul transpose_rhs (an empty group)",
        [("x", rows), ("w", wt), ("c", counts)], [13, 7],
        f"tfm.grouped_matmul %x, %w, %c transpose_rhs : {ttype([13, 16])}, {ttype([4, 7, 16])}, "
        f"{ttype([4], 'i64')} -> {ttype([13, 7])}",
        lambda t: grouped_ref(t["x"], t["w"].transpose(1, 2), t["c"]))
    wkn, counts = rnd(3, 16, 7), torch.tensor([6, 7, 0])
    add("grouped_matmul [E, K, F] (the last group empty)",
        [("x", rows), ("w", wkn), ("c", counts)], [13, 7],
        f"tfm.grouped_matmul %x, %w, %c : {ttype([13, 16])}, {ttype([3, 16, 7])}, "
        f"{ttype([3], 'i64')} -> {ttype([13, 7])}",
        lambda t: grouped_ref(t["x"], t["w"], t["c"]))
    counts = torch.tensor([4, 0, 6, 1])
    add("grouped_matmul (rows past the counts are zeros)",
        [("x", rows), ("w", wt), ("c", counts)], [13, 7],
        f"tfm.grouped_matmul %x, %w, %c transpose_rhs : {ttype([13, 16])}, {ttype([4, 7, 16])}, "
        f"{ttype([4], 'i64')} -> {ttype([13, 7])}",
        lambda t: torch.cat([grouped_ref(t["x"], t["w"].transpose(1, 2), t["c"]),
                             torch.zeros(2, 7, dtype=torch.float64)]))
    x = rnd(2, 7, 16)
    for name, experts, k, xin, gate in (
            ("top-2 of 5", 5, 2, x, rnd(5, 16)),
            # Positive tokens and a gate row of negative scores: expert 2
            # receives no token.
            ("top-1 of 3, an expert without tokens", 3, 1, x.abs(),
             torch.stack([rnd(16).abs(), rnd(16).abs(), -rnd(16).abs()]))):
        w1, w3, w2 = rnd(experts, 13, 16), rnd(experts, 13, 16), rnd(experts, 16, 13)
        add(f"Mixtral block {name}",
            [("x", xin), ("gate", gate), ("w1", w1), ("w3", w3), ("w2", w2)], [2, 7, 16],
            sparse_block_text(experts, k),
            lambda t, k=k: sparse_block_ref(t["x"], t["gate"], t["w1"], t["w3"], t["w2"], k))
    # A capacity of 3 of the 14 choices of each sequence of 7 tokens over 5
    # experts: Switch Transformers' drop, by one-hot cumulative sums (last,
    # so that the cases above keep their random inputs).
    capacity_e = route(router, 2, True)[1]
    add("moe_capacity (3 places an expert and sequence)",
        [("w", rnd(2, 7, 2)), ("e", capacity_e)], [2, 7, 2],
        f"tfm.moe_capacity %w, %e capacity = 3 num_experts = 5 : {ttype([2, 7, 2])}, "
        f"{ttype([2, 7, 2], 'i64')}",
        lambda t: t["w"] * kept_choices(t["e"].reshape(-1, 2), 7, 5, 3).reshape(2, 7, 2))
    return out


def grouped_ref(x, w, counts):
    """x's rows in groups of counts, each times its [K, F] weight."""
    out, start = [], 0
    for e, c in enumerate(counts.tolist()):
        out.append(x[start:start + c] @ w[e])
        start += c
    return torch.cat(out)


def sparse_block_ref(x, gate, w1, w3, w2, k, normalize=True):
    """The block with stacked expert weights [E, ...]."""
    return sparse_block(x, gate, list(zip(w1, w3, w2)), k, normalize)


def sparse_block_text(experts, k):
    """The tfm ops of a Mixtral block on x [2, 7, 16], FFN 13."""
    n = 2 * 7 * k
    xt, route = ttype([2, 7, 16]), ttype([2, 7, k])
    ids = ttype([2, 7, k], "i64")
    w13, w2 = ttype([experts, 13, 16]), ttype([experts, 16, 13])
    rows, hid = ttype([n, 16]), ttype([n, 13])
    return (f"%logits = tfm.matmul %x, %gate transpose_rhs : {xt}, {ttype([experts, 16])} -> "
            f"{ttype([2, 7, experts])}\n"
            f"  %w, %e = tfm.moe_route %logits top_k = {k} normalize : {ttype([2, 7, experts])} -> "
            f"{route}, {ids}\n"
            f"  %slots, %sources, %counts = tfm.moe_sort %e num_experts = {experts} : {ids} -> "
            f"{ids}, {ttype([n], 'i64')}, {ttype([experts], 'i64')}\n"
            f"  %rows = tfm.moe_dispatch %x, %slots, %sources : {xt}, {ids}, {ttype([n], 'i64')} -> "
            f"{rows}\n"
            f"  %a = tfm.grouped_matmul %rows, %w1, %counts transpose_rhs : {rows}, {w13}, "
            f"{ttype([experts], 'i64')} -> {hid}\n"
            f"  %b = tfm.grouped_matmul %rows, %w3, %counts transpose_rhs : {rows}, {w13}, "
            f"{ttype([experts], 'i64')} -> {hid}\n"
            f"  %s = tfm.silu %a : {hid}\n"
            f"  %h = tfm.mul %s, %b : {hid}, {hid}\n"
            f"  %o = tfm.grouped_matmul %h, %w2, %counts transpose_rhs : {hid}, {w2}, "
            f"{ttype([experts], 'i64')} -> {rows}\n"
            f"  %result = tfm.moe_combine %o, %slots, %sources weights %w : {rows}, {ids}, "
            f"{ttype([n], 'i64')}, {route} -> {xt}")


def module_text(case):
    args = ", ".join(f'%{n}: {ttype(s, d)} {{tfm.name = "{n}"}}' for n, s, d, _ in case.args)
    shape, dtype = case.result
    body = case.body
    if not body.lstrip().startswith("%"):
        body = "%result = " + body
    return (f"func.func @forward({args}) -> {ttype(shape, dtype)} {{\n  {body}\n"
            f"  return %result : {ttype(shape, dtype)}\n}}\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pmlir_run")
    ap.add_argument("workdir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--run-args", default="",
                    help="more pmlir-run arguments (e.g. '--device gpu --precision tf32')")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help="run only the case of this name (repeatable)")
    args = ap.parse_args()
    g = torch.Generator().manual_seed(args.seed)
    selected = list(enumerate(cases(g)))
    if args.only:
        unknown = set(args.only) - {case.name for _, case in selected}
        if unknown:
            sys.exit(f"ops.py: --only: no case named {', '.join(sorted(unknown))}")
        selected = [(i, case) for i, case in selected if case.name in args.only]
    run_args = args.run_args.split()
    failures = 0
    for i, case in selected:
        model = f"{args.workdir}/op{i}.mlir"
        with open(model, "w") as f:
            f.write(module_text(case))
        inputs = {n: t for n, _, _, t in case.args}
        ipath, opath = f"{args.workdir}/op{i}.in.safetensors", f"{args.workdir}/op{i}.out.safetensors"
        write_safetensors(ipath, inputs)
        run = subprocess.run([args.pmlir_run, model, "--inputs", ipath, "--output", opath] +
                             run_args)
        if run.returncode != 0:
            failures += 1
            print(f"FAIL {case.name}: pmlir-run exited with status {run.returncode}")
            continue
        got = read_safetensors(opath)["logits"].double()
        ref = case.ref({n: (t.double() if t.is_floating_point() else t) for n, t in inputs.items()})
        err = ((got - ref).norm() / ref.norm()).item()
        ok = err <= args.tol
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {case.name}: relative error {err:.2e}")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
