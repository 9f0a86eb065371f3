#!/usr/bin/env python3
"""Checks pmlir-run's logits (or loss, for a model made with --loss) for a
pmlir-gen model against an independent PyTorch implementation in float64.

  reference.py MODEL.mlir PMLIR_RUN WORKDIR [--seed N] [--tol T] [--tie]

The model's first line is the pmlir-gen command that made it; the config is
read from there. Random weights under the Hugging Face names and random token
ids are written as safetensors, pmlir-run computes the logits, and this script
computes them again from the same f32 values in f64 with torch. It prints the
relative error ||got - ref|| / ||ref|| and exits non-zero above the tolerance.
"""
import argparse
import json
import math
import shlex
import struct
import subprocess
import sys

import torch
import torch.nn.functional as F


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        dtype = {torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        assert entry["dtype"] == "F32", entry
        b, e = entry["data_offsets"]
        data = bytearray(raw[8 + n + b:8 + n + e])
        out[name] = torch.frombuffer(data, dtype=torch.float32).reshape(entry["shape"])
    return out


def parse_config(model_path):
    with open(model_path) as f:
        first = f.readline()
    words = shlex.split(first.lstrip("/ ").strip())
    assert words[0] == "pmlir-gen", first
    kind, flags = words[1], {}
    i = 2
    while i < len(words):
        key = words[i].lstrip("-").replace("-", "_")
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            value = words[i + 1]
            for kind_of in (int, float, str):
                try:
                    flags[key] = kind_of(value)
                    break
                except ValueError:
                    pass
            i += 2
        else:
            flags[key] = True
            i += 1
    return kind, flags


def gpt2_weights(c, g):
    h, w = c["hidden"], {}
    f = c.get("ffn", 4 * h)
    w["wte.weight"] = torch.randn(c["vocab"], h, generator=g) * 0.1
    w["wpe.weight"] = torch.randn(c["max_positions"], h, generator=g) * 0.1
    for i in range(c["layers"]):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            w[p + ln + ".weight"] = 1 + 0.1 * torch.randn(h, generator=g)
            w[p + ln + ".bias"] = 0.1 * torch.randn(h, generator=g)
        for name, shape in (("attn.c_attn", (h, 3 * h)), ("attn.c_proj", (h, h)),
                            ("mlp.c_fc", (h, f)), ("mlp.c_proj", (f, h))):
            w[p + name + ".weight"] = torch.randn(*shape, generator=g) / math.sqrt(shape[0])
            w[p + name + ".bias"] = 0.1 * torch.randn(shape[1], generator=g)
    w["ln_f.weight"] = 1 + 0.1 * torch.randn(h, generator=g)
    w["ln_f.bias"] = 0.1 * torch.randn(h, generator=g)
    if c.get("untied_head"):
        w["lm_head.weight"] = torch.randn(c["vocab"], h, generator=g) * 0.1
    return w


def gpt2_forward(c, w, ids, routers=None):
    B, S = ids.shape
    H, A = c["hidden"], c["heads"]
    D = H // A
    eps = c.get("layer_norm_eps", 1e-5)
    gelu = "none" if c.get("activation") == "gelu" else "tanh"
    x = w["wte.weight"][ids] + w["wpe.weight"][:S]
    mask = torch.ones(S, S, dtype=torch.bool, device=ids.device).tril()
    for i in range(c["layers"]):
        p = f"h.{i}."
        y = F.layer_norm(x, (H,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = y @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (t.view(B, S, A, D).transpose(1, 2) for t in qkv.split(H, dim=-1))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        s = s.masked_fill(~mask, float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, S, H)
        x = x + o @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        y = F.layer_norm(x, (H,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        m = F.gelu(y @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate=gelu)
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (H,), w["ln_f.weight"], w["ln_f.bias"], eps)
    return x @ w["lm_head.weight" if c.get("untied_head") else "wte.weight"].T


def llama_weights(c, g):
    h, f = c["hidden"], c["ffn"]
    d = h // c["heads"]
    w = {"model.embed_tokens.weight": torch.randn(c["vocab"], h, generator=g) * 0.1}
    for i in range(c["layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = 1 + 0.1 * torch.randn(h, generator=g)
        w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * torch.randn(h, generator=g)
        projections = [("self_attn.q_proj", (c["heads"] * d, h)),
                       ("self_attn.k_proj", (c["kv_heads"] * d, h)),
                       ("self_attn.v_proj", (c["kv_heads"] * d, h)),
                       ("self_attn.o_proj", (h, c["heads"] * d))]
        if c.get("experts"):
            # Mixtral: the router and each expert's SwiGLU under its index.
            projections.append(("block_sparse_moe.gate", (c["experts"], h)))
            for e in range(c["experts"]):
                projections += [(f"block_sparse_moe.experts.{e}.w1", (f, h)),
                                 (f"block_sparse_moe.experts.{e}.w3", (f, h)),
                                 (f"block_sparse_moe.experts.{e}.w2", (h, f))]
            # DeepSeek's shared experts: one SwiGLU as wide as all of them.
            if c.get("shared_experts"):
                fs = c["shared_experts"] * f
                projections += [("block_sparse_moe.shared_experts.w1", (fs, h)),
                                ("block_sparse_moe.shared_experts.w3", (fs, h)),
                                ("block_sparse_moe.shared_experts.w2", (h, fs))]
        else:
            projections += [("mlp.gate_proj", (f, h)), ("mlp.up_proj", (f, h)),
                            ("mlp.down_proj", (h, f))]
        for name, shape in projections:
            w[p + name + ".weight"] = torch.randn(*shape, generator=g) / math.sqrt(shape[1])
            if has_bias(c, name):
                w[p + name + ".bias"] = 0.1 * torch.randn(shape[0], generator=g)
    w["model.norm.weight"] = 1 + 0.1 * torch.randn(h, generator=g)
    if not c.get("tie_embeddings"):
        w["lm_head.weight"] = torch.randn(c["vocab"], h, generator=g) * 0.1
    return w


def has_bias(c, proj):
    """Whether the Llama-family projection `proj` adds a bias."""
    if proj.startswith("block_sparse_moe."):
        return False
    if proj.startswith("mlp."):
        return bool(c.get("mlp_bias"))
    bias = c.get("attention_bias", "none")
    return bias == "all" or (bias == "qkv" and proj != "self_attn.o_proj")


def linear(c, w, p, proj, x):
    y = x @ w[p + proj + ".weight"].T
    return y + w[p + proj + ".bias"] if has_bias(c, proj) else y


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama_forward(c, w, ids, routers=None):
    B, S = ids.shape
    H, A, K = c["hidden"], c["heads"], c["kv_heads"]
    D, eps, theta = H // A, c.get("rms_eps", 1e-6), c.get("rope_theta", 10000.0)
    x = w["model.embed_tokens.weight"][ids]
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64, device=ids.device) / D))
    freqs = torch.arange(S, dtype=torch.float64, device=ids.device)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    mask = torch.ones(S, S, dtype=torch.bool, device=ids.device).tril()
    for i in range(c["layers"]):
        p = f"model.layers.{i}."
        y = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(c, w, p, "self_attn.q_proj", y).view(B, S, A, D).transpose(1, 2)
        k = linear(c, w, p, "self_attn.k_proj", y).view(B, S, K, D).transpose(1, 2)
        v = linear(c, w, p, "self_attn.v_proj", y).view(B, S, K, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(A // K, dim=1)
        v = v.repeat_interleave(A // K, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        s = s.masked_fill(~mask, float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, S, A * D)
        x = x + linear(c, w, p, "self_attn.o_proj", o)
        y = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if c.get("experts"):
            x = x + sparse_moe(c, w, p, y, routers)
            continue
        m = F.silu(linear(c, w, p, "mlp.gate_proj", y)) * linear(c, w, p, "mlp.up_proj", y)
        x = x + linear(c, w, p, "mlp.down_proj", m)
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c.get("tie_embeddings") else w["lm_head.weight"]
    return x @ head.T


# The smallest gap between a token's k-th and (k+1)-th router logit that a
# check accepts. pmlir picks experts from f32 logits, whose error is a few
# f32 roundings of sums of H terms (about 1e-6 here, whatever the machine's
# order of the sums); a gap 100 times wider cannot close, so pmlir and the f64
# reference pick the same experts on any machine. Random weights give such a
# near tie at a rate of about 1e-4 per token; a seed that does is refused, not
# passed by chance.
ROUTING_MARGIN = 1e-4


def route(logits, k, normalize=True):
    """Mixtral's router: the top-k of the softmax over the experts (the
    k weights renormalized with `normalize`), and the chosen experts."""
    if k < logits.shape[-1]:
        top = torch.topk(logits.detach(), k + 1, dim=-1).values
        gap = (top[..., k - 1] - top[..., k]).min().item()
        if gap < ROUTING_MARGIN:
            raise SystemExit(f"routing near a tie: a token's k-th and (k+1)-th router logits "
                             f"are {gap:.1e} apart (under {ROUTING_MARGIN:g}); choose another "
                             f"seed")
    probs = logits.softmax(-1)
    weights, chosen = torch.topk(probs, k, dim=-1)
    if normalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, chosen


def kept_choices(chosen, seq, experts, capacity):
    """Which of the choices [T, k] (T tokens in sequences of `seq`) fit
    their expert's capacity: per sequence, first come, first served in
    token order (a token's choices in order), as Hugging Face's Switch
    Transformers router counts places, by a cumulative sum of one-hots."""
    per_sequence = chosen.reshape(-1, seq * chosen.shape[-1])
    one_hot = F.one_hot(per_sequence, experts)
    place = ((one_hot.cumsum(dim=1) - 1) * one_hot).sum(-1)
    return (place < capacity).reshape(chosen.shape)


def capacity_of(c):
    """Each expert's places in a sequence, or None without a capacity."""
    factor = c.get("capacity_factor", 0)
    if not factor:
        return None
    return math.ceil(factor * c["seq"] * c.get("top_k", 2) / c["experts"])


def sparse_block(y, gate, experts, k, normalize=True, routers=None, capacity=None):
    """Hugging Face's MixtralSparseMoeBlock of `y` [..., S, H]: the router
    `gate` [E, H], and a loop over the experts, each (w1, w3, w2) as Linear
    weights, that gathers its tokens and adds their weighted SwiGLU back.
    With `capacity`, the choices past it are dropped (their weight zero).
    The router's logits are appended to `routers`."""
    h = y.reshape(-1, y.shape[-1])
    router = h @ gate.T
    if routers is not None:
        routers.append(router)
    weights, chosen = route(router, k, normalize)
    if capacity is not None:
        weights = weights * kept_choices(chosen, y.shape[-2], len(experts), capacity)
    out = torch.zeros_like(h)
    for e, (w1, w3, w2) in enumerate(experts):
        tok, pos = torch.where(chosen == e)
        m = F.silu(h[tok] @ w1.T) * (h[tok] @ w3.T)
        out = out.index_add(0, tok, (m @ w2.T) * weights[tok, pos, None])
    return out.reshape(y.shape)


def sparse_moe(c, w, p, y, routers=None):
    """A Mixtral layer's sparse block from its per-expert weights."""
    q = p + "block_sparse_moe."
    experts = [tuple(w[f"{q}experts.{e}.{n}.weight"] for n in ("w1", "w3", "w2"))
               for e in range(c["experts"])]
    out = sparse_block(y, w[q + "gate.weight"], experts, c.get("top_k", 2), routers=routers,
                       capacity=capacity_of(c))
    if c.get("shared_experts"):
        s = q + "shared_experts."
        m = F.silu(y @ w[s + "w1.weight"].T) * (y @ w[s + "w3.weight"].T)
        out = out + m @ w[s + "w2.weight"].T
    return out


def load_balancing_loss(routers, experts, k):
    """transformers' load_balancing_loss_func (no attention mask) over the
    router logits of every layer."""
    weights = torch.cat(routers, dim=0).softmax(-1)
    _, chosen = torch.topk(weights, k, dim=-1)
    tokens_per_expert = F.one_hot(chosen, experts).double().mean(0)
    prob_per_expert = weights.mean(0)
    return (tokens_per_expert * prob_per_expert.unsqueeze(0)).sum() * experts


def model_loss(c, w, ids, labels, forward, routers=None):
    """The mean cross entropy, plus router_aux_loss_coef times the
    load-balancing loss for a Mixtral made with --router-aux-loss-coef (as
    MixtralForCausalLM with output_router_logits). The router logits of
    each layer are appended to `routers`."""
    routers = [] if routers is None else routers
    logits = forward(c, w, ids, routers)
    loss = F.cross_entropy(logits.reshape(-1, c["vocab"]), labels.reshape(-1), ignore_index=-100)
    coef = c.get("router_aux_loss_coef", 0.0)
    if coef:
        loss = loss + coef * load_balancing_loss(routers, c["experts"], c.get("top_k", 2))
    return loss


def routed_counts(c, routers):
    """Per sparse layer, how many tokens chose each expert, and with a
    capacity how many of them it dropped: [chosen, dropped] lists."""
    if not c.get("experts"):
        return []
    k, experts, capacity = c.get("top_k", 2), c["experts"], capacity_of(c)
    counts = []
    for r in routers:
        chosen = torch.topk(r.detach(), k, dim=-1).indices
        counts.append([torch.bincount(chosen.reshape(-1), minlength=experts).tolist()])
        if capacity is not None:
            dropped = chosen[~kept_choices(chosen, c["seq"], experts, capacity)]
            counts[-1].append(torch.bincount(dropped, minlength=experts).tolist())
    return counts


def reported_counts(out, what):
    """pmlir-run --verbose's lines of each sparse layer's `what` ("tokens
    per expert", "dropped per expert"), in the order printed (layer after
    layer, step after step)."""
    marker = f": {what} "
    return [[int(v) for v in line.split(marker)[1].split()]
            for line in out.splitlines() if line.startswith("  layer ") and marker in line]


def check_counts(c, out, expected):
    """The tokens per expert (and those dropped) pmlir-run reported against
    `expected` (routed_counts's per layer run); 0 failures, or 1 after
    saying which differ."""
    if not c.get("experts"):
        return 0
    failed = 0
    for i, what in enumerate(["tokens per expert", "dropped per expert"]):
        want = [counts[i] for counts in expected if len(counts) > i]
        got = reported_counts(out, what)
        if got != want:
            print(f"FAIL {what}: pmlir-run reported {got}, expected {want}")
            failed = 1
        elif want:
            print(f"{what} of {len(want)} layer runs: equal"
                  + (f" ({sum(map(sum, want))} in all)" if i == 1 else ""))
    return failed


def unstacked(tensors):
    """pmlir's stacked tensors (a '*' in the name: Hugging Face's per-expert
    weights as one [E, ...] tensor, and their optimizer state) as their
    parts, under the names Hugging Face gives them."""
    out = {}
    for name, t in tensors.items():
        if "*" in name:
            for e in range(t.shape[0]):
                out[name.replace("*", str(e))] = t[e]
        else:
            out[name] = t
    return out


def check_grads(args, kind, c, weights, inputs, forward, wpath, ipath, opath):
    """pmlir-run --grads against autograd in f64: the loss and each
    parameter's gradient to a relative error of args.tol."""
    assert c.get("loss"), "--grads needs a model made with pmlir-gen --loss"
    out = subprocess.run([args.pmlir_run, args.model, "--weights", wpath, "--inputs", ipath,
                          "--grads", opath, "--verbose"] + args.run_args.split(), check=True,
                         capture_output=True, text=True).stdout
    sys.stdout.write(out)
    got = unstacked(read_safetensors(opath))
    w64 = {k: v.double().requires_grad_() for k, v in weights.items()}
    routers = []
    loss = model_loss(c, w64, inputs["input_ids"], inputs["labels"], forward, routers)
    loss.backward()
    # The backward pass (even one that recomputes the layers) reports none.
    failed, worst = check_counts(c, out, routed_counts(c, routers)), (0.0, "")
    rows = [("loss", got["loss"].double(), loss.detach())]
    rows += [(n, got[n].double() if n in got else None, w.grad) for n, w in w64.items()]
    for name, mine, ref in rows:
        if mine is None or mine.shape != ref.shape:
            print(f"FAIL {name}: pmlir-run wrote {None if mine is None else list(mine.shape)}, "
                  f"expected {list(ref.shape)}")
            failed += 1
            continue
        # An expert no token chose has a zero gradient: its error is absolute.
        norm = ref.norm().item()
        err = (mine - ref).norm().item() / (norm if norm > 0 else 1.0)
        worst = max(worst, (err, name))
        if not err <= args.tol:
            print(f"FAIL {name}: relative error {err:.3e}")
            failed += 1
    print(f"{kind} loss and {len(rows) - 1} gradients: worst relative error {worst[0]:.3e} "
          f"({worst[1]}), tolerance {args.tol:g}, {failed} failed")
    return 0 if failed == 0 else 1


def check_training(args, kind, c, weights, inputs, forward, wpath, ipath, opath):
    """pmlir-run --train against torch.optim.AdamW in f64 on the same batch
    every step: each step's loss, then every parameter and optimizer state
    tensor after the last, each to a relative error of args.tol."""
    assert c.get("loss"), "--train needs a model made with pmlir-gen --loss"
    run = [args.pmlir_run, args.model, "--weights", wpath, "--inputs", ipath, "--train",
           "--steps", str(args.train), "--lr", str(args.lr), "--weight-decay",
           str(args.weight_decay), "--clip-grad-norm", str(args.clip), "--grad-accum",
           str(args.accum), "--save", opath, "--verbose"] + args.run_args.split()
    out = subprocess.run(run, check=True, capture_output=True, text=True).stdout
    sys.stdout.write(out)
    got_losses = [float(line.split("loss ")[1].split(",")[0])
                  for line in out.splitlines() if line.startswith("step ")]
    saved = unstacked(read_safetensors(opath))
    state = unstacked(read_safetensors(opath.replace(".safetensors", ".optimizer.safetensors")))

    w64 = {k: v.double().requires_grad_() for k, v in weights.items()}
    opt = torch.optim.AdamW(list(w64.values()), lr=args.lr, weight_decay=args.weight_decay)
    ids, labels = inputs["input_ids"], inputs["labels"]
    micro = ids.shape[0] // args.accum
    ref_losses, ref_counts = [], []
    for _ in range(args.train):
        opt.zero_grad()
        total = 0.0
        step_counts = None
        for m in range(args.accum):
            rows = slice(m * micro, (m + 1) * micro)
            routers = []
            loss = model_loss(c, w64, ids[rows], labels[rows], forward, routers) / args.accum
            loss.backward()
            total += loss.item()
            counts = routed_counts(c, routers)
            step_counts = counts if step_counts is None else [
                [[a + b for a, b in zip(x, y)] for x, y in zip(mine, theirs)]
                for mine, theirs in zip(step_counts, counts)]
        ref_counts += step_counts or []
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(list(w64.values()), args.clip)
        opt.step()
        ref_losses.append(total)

    failed, worst = check_counts(c, out, ref_counts), (0.0, "")
    for step, (mine, ref) in enumerate(zip(got_losses, ref_losses), 1):
        err = abs(mine - ref) / abs(ref)
        worst = max(worst, (err, f"loss of step {step}"))
        if not err <= args.tol:
            print(f"FAIL loss of step {step}: {mine} against {ref}")
            failed += 1
    if len(got_losses) != args.train:
        print(f"FAIL pmlir-run printed {len(got_losses)} steps, expected {args.train}")
        failed += 1
    rows = [(n, saved.get(n), w.detach()) for n, w in w64.items()]
    for n, w in w64.items():
        st = opt.state[w]
        rows.append((n + ".exp_avg", state.get(n + ".exp_avg"), st["exp_avg"]))
        rows.append((n + ".exp_avg_sq", state.get(n + ".exp_avg_sq"), st["exp_avg_sq"]))
    rows.append(("step", state.get("step"), torch.tensor(float(args.train))))
    largest = max(opt.state[w]["exp_avg_sq"].sqrt().max().item() for w in w64.values())
    for name, mine, ref in rows:
        if mine is None or mine.shape != ref.shape:
            print(f"FAIL {name}: saved {None if mine is None else list(mine.shape)}, "
                  f"expected {list(ref.shape)}")
            failed += 1
            continue
        if name in w64:
            # An element whose gradient is 0 in exact arithmetic (GPT-2's
            # key bias: softmax cancels it) gets f32 rounding noise, which
            # Adam's m / sqrt(v) turns into steps of size lr where f64
            # takes none: elements whose gradient RMS is below 1e-5 of the
            # largest are left out, as pmlir-run --check does.
            keep = opt.state[w64[name]]["exp_avg_sq"].sqrt() >= 1e-5 * largest
            mine, ref = mine[keep], ref[keep]
        norm = ref.double().norm().item()
        err = (mine.double() - ref).norm().item() / (norm if norm > 0 else 1.0)
        worst = max(worst, (err, name))
        if not err <= args.tol:
            print(f"FAIL {name}: relative error {err:.3e}")
            failed += 1
    print(f"{kind} {args.train} AdamW steps: {len(rows)} tensors and the losses, worst relative "
          f"error {worst[0]:.3e} ({worst[1]}), tolerance {args.tol:g}, {failed} failed")
    return 0 if failed == 0 else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("pmlir_run")
    ap.add_argument("workdir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--run-args", default="",
                    help="more pmlir-run arguments, e.g. '--mesh tp=2 --recipe megatron'")
    ap.add_argument("--grads", action="store_true",
                    help="check pmlir-run --grads: the loss and every parameter's gradient "
                         "against autograd, each to the tolerance")
    ap.add_argument("--train", type=int, default=0, metavar="STEPS",
                    help="check pmlir-run --train: the loss of each of STEPS steps and the "
                         "parameters and optimizer state after them against torch.optim.AdamW")
    ap.add_argument("--write-weights", metavar="PATH",
                    help="only write the random weights (Hugging Face names) to PATH")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--clip", type=float, default=0.0)
    ap.add_argument("--accum", type=int, default=1)
    args = ap.parse_args()

    kind, c = parse_config(args.model)
    g = torch.Generator().manual_seed(args.seed)
    weights = (gpt2_weights if kind == "gpt2" else llama_weights)(c, g)
    if args.write_weights:
        write_safetensors(args.write_weights, weights)
        return 0
    ids = torch.randint(0, c["vocab"], (c["batch"] * args.accum, c["seq"]), generator=g)
    inputs = {"input_ids": ids}
    if c.get("loss"):
        # The next token is each position's target; the last has none, and
        # one more position per sequence is ignored.
        labels = torch.full_like(ids, -100)
        labels[:, :-1] = ids[:, 1:]
        labels[:, 0] = -100
        inputs["labels"] = labels
    wpath, ipath, opath = (f"{args.workdir}/{n}.safetensors" for n in ("w", "in", "out"))
    write_safetensors(wpath, weights)
    write_safetensors(ipath, inputs)
    forward = gpt2_forward if kind == "gpt2" else llama_forward
    if args.grads:
        return check_grads(args, kind, c, weights, inputs, forward, wpath, ipath, opath)
    if args.train:
        return check_training(args, kind, c, weights, inputs, forward, wpath, ipath, opath)
    subprocess.run([args.pmlir_run, args.model, "--weights", wpath, "--inputs", ipath,
                    "--output", opath] + args.run_args.split(), check=True)
    name = "loss" if c.get("loss") else "logits"
    got = read_safetensors(opath)[name].double()
    w64 = {k: v.double() for k, v in weights.items()}
    if c.get("loss"):
        ref = model_loss(c, w64, ids, labels, forward)
    else:
        ref = forward(c, w64, ids)
    err = ((got - ref).norm() / ref.norm()).item()
    print(f"{kind} {name} {list(ref.shape)}: relative error {err:.3e} (tolerance {args.tol:g})")
    return 0 if err <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
