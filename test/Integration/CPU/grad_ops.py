#!/usr/bin/env python3
"""Checks the CPU lowering of each tfm gradient op against PyTorch autograd
in float64.

  grad_ops.py PMLIR_RUN WORKDIR [--seed N] [--tol T]

Each case is a one-op function on random inputs with odd sizes (7, 13, 97)
whose result is the gradient autograd computes for the forward op with the
same upstream gradient. Prints one line per case and exits non-zero if any
fails.
"""
import argparse
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from ops import Case, grouped_ref, module_text, ttype  # noqa: E402
from reference import read_safetensors, route, write_safetensors  # noqa: E402


def vjp(fn, inputs, grad, wrt):
    """The gradient of fn(*inputs) with upstream `grad` with respect to
    inputs[wrt], in float64."""
    xs = [x.detach().clone().requires_grad_(i == wrt) if x.is_floating_point() else x
          for i, x in enumerate(inputs)]
    (g,) = torch.autograd.grad(fn(*xs), xs[wrt], grad)
    return g


def attention(q, k, v, scale, causal):
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        S, T = q.shape[2], k.shape[2]
        s = s.masked_fill(~torch.ones(S, T, dtype=torch.bool).tril(T - S), float("-inf"))
    return s.softmax(-1) @ v


def rope(x, positions, theta):
    d = x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    emb = torch.cat([positions.double()[:, None] * inv[None]] * 2, dim=-1)
    half = d // 2
    rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * emb.cos() + rot * emb.sin()


def rms_norm(x, g, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def cases(g):
    def rnd(*shape):
        return torch.randn(*shape, generator=g)

    out = []

    def add(name, inputs, result_shape, body, ref):
        args = [(n, list(t.shape), "i64" if t.dtype == torch.int64 else "f32", t)
                for n, t in inputs]
        out.append(Case(name, args, (result_shape, "f32"), body, ref))

    f3 = ttype([3, 13, 97])
    x, dy = rnd(3, 13, 97), rnd(3, 13, 97)
    xd = [("x", x), ("dy", dy)]

    a, da = rnd(3, 7, 13), rnd(3, 7, 97)
    add("weight_grad [3,7,13]^T [3,7,97]", [("a", a), ("da", da)], [13, 97],
        f"tfm.weight_grad %a, %da : {ttype([3, 7, 13])}, {ttype([3, 7, 97])} -> {ttype([13, 97])}",
        lambda t: vjp(lambda w: t["a"] @ w, [torch.zeros(13, 97, dtype=torch.float64)],
                      t["da"], 0))
    add("sum_leading to [97]", xd, [97], f"tfm.sum_leading %dy : {f3} -> {ttype([97])}",
        lambda t: t["dy"].sum((0, 1)))
    add("sum_leading to [13, 97]", xd, [13, 97],
        f"tfm.sum_leading %dy : {f3} -> {ttype([13, 97])}", lambda t: t["dy"].sum(0))
    p0, p1, p2 = rnd(13, 7), rnd(13, 7), rnd(13, 7)
    add("concat dim 1", [("p0", p0), ("p1", p1), ("p2", p2)], [13, 21],
        f"tfm.concat %p0, %p1, %p2 dim = 1 : {ttype([13, 7])}, {ttype([13, 7])}, "
        f"{ttype([13, 7])} -> {ttype([13, 21])}",
        lambda t: torch.cat([t["p0"], t["p1"], t["p2"]], 1))
    add("fill", xd, [7], f"tfm.fill 0.625 : {ttype([7])}",
        lambda t: torch.full((7,), 0.625, dtype=torch.float64))

    for approx in ("tanh", "erf"):
        mode = "tanh" if approx == "tanh" else "none"
        add(f"gelu_grad {approx}", [("x", 2 * x), ("dy", dy)], [3, 13, 97],
            f"tfm.gelu_grad %x, %dy {approx} : {f3}",
            lambda t, mode=mode: vjp(lambda v: F.gelu(v, approximate=mode), [t["x"]],
                                     t["dy"], 0))
    add("silu_grad", [("x", 2 * x), ("dy", dy)], [3, 13, 97], f"tfm.silu_grad %x, %dy : {f3}",
        lambda t: vjp(F.silu, [t["x"]], t["dy"], 0))
    y = (3 * x).softmax(-1)
    add("softmax_grad", [("y", y), ("dy", dy)], [3, 13, 97],
        f"tfm.softmax_grad %y, %dy : {f3}",
        lambda t: vjp(lambda v: v.softmax(-1), [(3 * x).double()], t["dy"], 0))

    g97, b97 = 1 + 0.1 * rnd(97), rnd(97)
    xs = [("x", x + 3), ("g", g97), ("dy", dy)]
    add("layernorm_grad", xs, [3, 13, 97],
        f"tfm.layernorm_grad %x, %g, %dy eps = 1.0e-05 : {f3}, {ttype([97])}",
        lambda t: vjp(lambda v: F.layer_norm(v, (97,), t["g"], b97.double(), 1e-5),
                      [t["x"]], t["dy"], 0))
    add("layernorm_weight_grad", xs, [97],
        f"tfm.layernorm_weight_grad %x, %dy eps = 1.0e-05 : {f3} -> {ttype([97])}",
        lambda t: vjp(lambda w: F.layer_norm(t["x"], (97,), w, b97.double(), 1e-5),
                      [t["g"]], t["dy"], 0))
    add("rmsnorm_grad", xs, [3, 13, 97],
        f"tfm.rmsnorm_grad %x, %g, %dy eps = 1.0e-06 : {f3}, {ttype([97])}",
        lambda t: vjp(lambda v: rms_norm(v, t["g"], 1e-6), [t["x"]], t["dy"], 0))
    add("rmsnorm_weight_grad", xs, [97],
        f"tfm.rmsnorm_weight_grad %x, %dy eps = 1.0e-06 : {f3} -> {ttype([97])}",
        lambda t: vjp(lambda w: rms_norm(t["x"], w, 1e-6), [t["g"]], t["dy"], 0))

    r, dr = rnd(2, 3, 7, 10), rnd(2, 3, 7, 10)
    r4 = ttype([2, 3, 7, 10])
    add("rope inverse (the gradient of rope)", [("dr", dr)], [2, 3, 7, 10],
        f"%pos = tfm.arange start = 5 : {ttype([7], 'i64')}\n"
        f"  %result = tfm.rope %dr, %pos theta = 1.0e+04 inverse : {r4}, {ttype([7], 'i64')}",
        lambda t: vjp(lambda v: rope(v, torch.arange(5, 12), 1e4), [r.double()], t["dr"], 0))

    ids = torch.randint(0, 97, (3, 7), generator=g)
    ids[0, :3] = 11  # repeated ids add up
    de = rnd(3, 7, 13)
    table = torch.zeros(97, 13, dtype=torch.float64)
    add("embedding_grad (repeated ids)", [("de", de), ("ids", ids)], [97, 13],
        f"tfm.embedding_grad %de[%ids] : {ttype([3, 7, 13])}, {ttype([3, 7], 'i64')} -> "
        f"{ttype([97, 13])}",
        lambda t: vjp(lambda w: w[t["ids"]], [table], t["de"], 0))
    add("embedding_grad rows_from 49 (a vocab block)", [("de", de), ("ids", ids)], [49, 13],
        f"%o = arith.constant 49 : index\n"
        f"  %result = tfm.embedding_grad %de[%ids] rows_from %o : {ttype([3, 7, 13])}, "
        f"{ttype([3, 7], 'i64')} -> {ttype([49, 13])}",
        lambda t: torch.cat([vjp(lambda w: w[t["ids"]], [table], t["de"], 0)[49:],
                             torch.zeros(1, 13, dtype=torch.float64)]))

    for name, (qs, ks, vs), scale, causal in (
            ("causal GQA 6/2", ((2, 6, 7, 8), (2, 2, 7, 8), (2, 2, 7, 8)), 0.35, True),
            ("causal Skv > S, Dv != D", ((1, 2, 3, 8), (1, 1, 13, 8), (1, 1, 13, 5)), 0.5, True),
            ("non-causal", ((1, 2, 3, 8), (1, 1, 13, 8), (1, 1, 13, 5)), 0.5, False)):
        q, k, v = rnd(*qs), rnd(*ks), rnd(*vs)
        do = rnd(*qs[:3], vs[3])
        types = f"{ttype(qs)}, {ttype(ks)}, {ttype(vs)}, {ttype(list(qs[:3]) + [vs[3]])}"
        results = f"{ttype(qs)}, {ttype(ks)}, {ttype(vs)}"
        mask = "causal " if causal else ""
        for i, (which, shape) in enumerate((("query", qs), ("key", ks), ("value", vs))):
            add(f"attention_grad {name}: {which}", [("q", q), ("k", k), ("v", v), ("do", do)],
                list(shape),
                f"%g:3 = tfm.attention_grad %q, %k, %v, %do {mask}scale = {scale} : {types} -> "
                f"{results}\n  %result = tfm.add %g#{i}, %g#{i} : {ttype(shape)}, {ttype(shape)}",
                lambda t, i=i, scale=scale, causal=causal: 2 * vjp(
                    lambda a, b, c: attention(a, b, c, scale, causal),
                    [t["q"], t["k"], t["v"]], t["do"], i))

    logits = rnd(2, 7, 97) * 3
    labels = torch.randint(0, 97, (2, 7), generator=g)
    labels[0, 3] = labels[1, 0] = -100
    count = (labels != -100).sum().double()
    add("count_tokens (ignore_index)", [("labels", labels), ("logits", logits)], [],
        f"tfm.count_tokens %labels ignore_index = -100 : {ttype([2, 7], 'i64')} -> tensor<f32>",
        lambda t: count)
    dloss = torch.tensor(0.7)
    ce = (f"{ttype([2, 7, 97])}, {ttype([2, 7], 'i64')}, tensor<f32>, tensor<f32>")
    add("cross_entropy_grad (ignore_index)",
        [("logits", logits), ("labels", labels), ("dloss", dloss)], [2, 7, 97],
        f"%n = tfm.count_tokens %labels ignore_index = -100 : {ttype([2, 7], 'i64')} -> "
        f"tensor<f32>\n  %result = tfm.cross_entropy_grad %logits, %labels, %dloss, %n "
        f"ignore_index = -100 : {ce}",
        lambda t: vjp(lambda v: F.cross_entropy(v.reshape(-1, 97), t["labels"].reshape(-1),
                                                ignore_index=-100),
                      [t["logits"]], t["dloss"], 0))
    # The vocab-parallel form on one rank: the second block of 49 columns,
    # with a padding column, from the whole vocabulary's max and exp sums.
    lb = torch.cat([logits[..., 49:], torch.full((2, 7, 1), 1e4)], dim=-1)
    la = logits[..., :49].contiguous()
    block = ttype([2, 7, 49])
    parts = f"{block}, {ttype([2, 7], 'i64')}, {ttype([2, 7])} -> {ttype([2, 7, 2])}"
    add("cross_entropy_grad normalized by (a padded vocab block)",
        [("la", la), ("lb", lb), ("labels", labels), ("dloss", dloss),
         ("max", logits.amax(-1))], [2, 7, 49],
        f"%o0 = arith.constant 0 : index\n  %o1 = arith.constant 49 : index\n"
        f"  %pa = tfm.cross_entropy_parts %la, %labels, %max vocab_from %o0 vocab = 97 : {parts}\n"
        f"  %pb = tfm.cross_entropy_parts %lb, %labels, %max vocab_from %o1 vocab = 97 : {parts}\n"
        f"  %p = tfm.add %pa, %pb : {ttype([2, 7, 2])}, {ttype([2, 7, 2])}\n"
        f"  %n = tfm.count_tokens %labels ignore_index = -100 : {ttype([2, 7], 'i64')} -> "
        f"tensor<f32>\n"
        f"  %result = tfm.cross_entropy_grad %lb, %labels, %dloss, %n normalized by %max, %p "
        f"vocab_from %o1 vocab = 97 ignore_index = -100 : {block}, {ttype([2, 7], 'i64')}, "
        f"tensor<f32>, tensor<f32>, {ttype([2, 7])}, {ttype([2, 7, 2])}",
        lambda t: torch.cat([vjp(lambda v: F.cross_entropy(v.reshape(-1, 97),
                                                           t["labels"].reshape(-1),
                                                           ignore_index=-100),
                                 [logits.double()], t["dloss"], 0)[..., 49:],
                             torch.zeros(2, 7, 1, dtype=torch.float64)], -1))

    # Mixture of experts: the router's gradient, dispatch and combine as
    # each other's gradients, the routing weights' and the grouped weights'.
    # (Names of their own: the cases above read theirs when they run.)
    for name, shape, k, normalize in (("top-2 normalize", (2, 7, 5), 2, True),
                                      ("top-3 of 7, softmax weights", (13, 7), 3, False)):
        router = rnd(*shape) * 2
        route_w, route_e = route(router, k, normalize)
        route_dw = rnd(*shape[:-1], k)
        chosen = list(shape[:-1]) + [k]
        flag = " normalize" if normalize else ""
        add(f"moe_route_grad {name}",
            [("l", router), ("w", route_w), ("e", route_e), ("dw", route_dw)], list(shape),
            f"tfm.moe_route_grad %l, %w, %e, %dw{flag} : {ttype(shape)}, {ttype(chosen)}, "
            f"{ttype(chosen, 'i64')}, {ttype(chosen)} -> {ttype(shape)}",
            lambda t, k=k, normalize=normalize: vjp(lambda v: route(v, k, normalize)[0],
                                                    [t["l"]], t["dw"], 0))
    slots, sources = sort_ref(torch.randint(0, 5, (2, 7, 2), generator=g))
    ids, src = ttype([2, 7, 2], "i64"), ttype([28], "i64")
    moe_tokens, moe_rows = rnd(2, 7, 16), rnd(28, 16)
    moe_w, moe_dy, moe_dr = rnd(2, 7, 2), rnd(2, 7, 16), rnd(28, 16)
    routing = [("slots", slots), ("sources", sources)]
    add("moe_combine (the gradient of moe_dispatch)", routing + [("dr", moe_dr)], [2, 7, 16],
        f"tfm.moe_combine %dr, %slots, %sources : {ttype([28, 16])}, {ids}, {src} -> "
        f"{ttype([2, 7, 16])}",
        lambda t: vjp(lambda v: dispatch_ref(v, t["sources"], 2), [moe_tokens.double()],
                      t["dr"], 0))
    add("moe_dispatch weights (the gradient of weighted moe_combine)",
        routing + [("dy", moe_dy), ("w", moe_w)], [28, 16],
        f"tfm.moe_dispatch %dy, %slots, %sources weights %w : {ttype([2, 7, 16])}, {ids}, {src}, "
        f"{ttype([2, 7, 2])} -> {ttype([28, 16])}",
        lambda t: vjp(lambda v: combine_ref(v, t["slots"], t["w"]), [moe_rows.double()],
                      t["dy"], 0))
    add("moe_weight_grad (moe_combine's weights)",
        routing + [("dy", moe_dy), ("rows", moe_rows), ("w", moe_w)], [2, 7, 2],
        f"tfm.moe_weight_grad %dy, %rows, %slots : {ttype([2, 7, 16])}, {ttype([28, 16])}, {ids} "
        f"-> {ttype([2, 7, 2])}",
        lambda t: vjp(lambda v: combine_ref(t["rows"], t["slots"], v), [t["w"]], t["dy"], 0))
    # The load-balancing loss: the routers' statistics, the loss, and the
    # gradient of the statistics' probability row.
    stats_logits = rnd(2, 7, 5) * 2
    stats_e = route(stats_logits, 2, True)[1]
    stats_ds = rnd(2, 5)
    add("moe_router_stats (probability sums, choice counts)",
        [("l", stats_logits), ("e", stats_e)], [2, 5],
        f"tfm.moe_router_stats %l, %e : {ttype([2, 7, 5])}, {ttype([2, 7, 2], 'i64')} -> "
        f"{ttype([2, 5])}",
        lambda t: torch.stack([t["l"].softmax(-1).sum((0, 1)),
                               F.one_hot(t["e"], 5).sum((0, 1, 2)).double()]))
    add("moe_router_stats_grad", [("l", stats_logits), ("ds", stats_ds)], [2, 7, 5],
        f"tfm.moe_router_stats_grad %l, %ds : {ttype([2, 7, 5])}, {ttype([2, 5])} -> "
        f"{ttype([2, 7, 5])}",
        lambda t: vjp(lambda v: v.softmax(-1).sum((0, 1)), [t["l"]], t["ds"][0], 0))
    add("moe_balance_loss", [("s", stats_ds.abs())], [],
        f"tfm.moe_balance_loss %s scale = 0.375 : {ttype([2, 5])} -> tensor<f32>",
        lambda t: 0.375 * (t["s"][0] * t["s"][1]).sum())
    group_x, group_dh = rnd(13, 16), rnd(13, 7)
    for name, counts in (("an empty group", [5, 0, 6, 2]), ("rows past the counts", [4, 0, 6, 1])):
        add(f"grouped_weight_grad ({name})",
            [("x", group_x), ("dh", group_dh), ("c", torch.tensor(counts))], [4, 16, 7],
            f"tfm.grouped_weight_grad %x, %dh, %c : {ttype([13, 16])}, {ttype([13, 7])}, "
            f"{ttype([4], 'i64')} -> {ttype([4, 16, 7])}",
            lambda t: vjp(lambda v: grouped_ref(t["x"], v, t["c"]),
                          [torch.zeros(4, 16, 7, dtype=torch.float64)],
                          t["dh"][:int(t["c"].sum())], 0))
    return out


def sort_ref(experts):
    """tfm.moe_sort's slots and sources: the pairs stably sorted by expert."""
    flat = experts.reshape(-1).tolist()
    order = sorted(range(len(flat)), key=lambda i: (flat[i], i))
    slots = torch.empty(len(flat), dtype=torch.int64)
    slots[torch.tensor(order)] = torch.arange(len(flat))
    return slots.reshape(experts.shape), torch.tensor(order)


def dispatch_ref(x, sources, k):
    return x.reshape(-1, x.shape[-1])[sources // k]


def combine_ref(rows, slots, w):
    return (rows[slots] * w[..., None]).sum(-2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pmlir_run")
    ap.add_argument("workdir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    g = torch.Generator().manual_seed(args.seed)
    failures = 0
    for i, case in enumerate(cases(g)):
        model = f"{args.workdir}/grad{i}.mlir"
        with open(model, "w") as f:
            f.write(module_text(case))
        inputs = {n: t for n, _, _, t in case.args}
        ipath = f"{args.workdir}/grad{i}.in.safetensors"
        opath = f"{args.workdir}/grad{i}.out.safetensors"
        write_safetensors(ipath, inputs)
        subprocess.run([args.pmlir_run, model, "--inputs", ipath, "--output", opath], check=True)
        got = read_safetensors(opath)["logits"].double()
        ref = case.ref({n: (t.double() if t.is_floating_point() else t)
                        for n, t in inputs.items()})
        err = ((got - ref).norm() / ref.norm()).item()
        ok = err <= args.tol
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {case.name}: relative error {err:.2e}")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
