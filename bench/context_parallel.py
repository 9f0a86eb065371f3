#!/usr/bin/env python3
"""Context parallelism: communication and activation memory per variant next
to the analytic volumes, the causal work per rank with and without the
head-tail order, and a long-sequence forward on cp = 2 against one rank.

1. Communication (compile only, pmlir-comm-report after the sharding
   pipeline): the bytes each rank moves over cp in one forward, per variant,
   against the analytic volume. Per layer, with blocks of s/cp positions:
   ring sends its key and value blocks cp - 1 times each, 2(cp-1) sends of
   b*hkv*(s/cp)*d; allgather gathers keys and values, 2 all_gathers of a
   b*hkv*s*d result ((cp-1)/cp of it on the wire, the ring's volume);
   Ulysses moves queries, keys, values and the result, 4 all_to_alls of
   b*s*h/cp elements (keys and values have h*hkv/hq).
2. Activation memory (compile only, pmlir-memory-report): the bytes a layer
   keeps for the backward pass per rank, against one rank's.
3. Causal work per rank: query-key pairs under the mask, and the chunk
   blocks the ring computes (in (s/2cp)^2 units, a diagonal block counted
   whole: the kernel computes it whole), contiguous blocks against the
   head-tail order.
4. A forward of a small GPT-2 at sequence 4096: one rank against cp = 2 with
   each variant and layout, pmlir-run --repeat's median and the largest
   rank's peak RSS.

Run from the repository root after building:
  /usr/bin/python3 bench/context_parallel.py [--build build] [--repeat 3] [--seq 4096]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import machine, run, with_mesh  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gen(build, flags, path):
    subprocess.run([f"{build}/bin/pmlir-gen"] + flags.split() + ["-o", path], check=True)


def reports(build, model, cp, variant, layout, tmp):
    src = f"{tmp}/cp{cp}.mlir"
    with_mesh(f"{build}/bin/pmlir-opt", model, src, f"cp = {cp}")
    options = (f"recipe=megatron context-attention={variant} context-layout={layout} "
               f"comm-report={tmp}/comm.json memory-report={tmp}/memory.json")
    subprocess.run([f"{build}/bin/pmlir-opt", src, f"--pmlir-sharding-pipeline={options}",
                    "-o", os.devnull], check=True)
    return json.load(open(f"{tmp}/comm.json")), json.load(open(f"{tmp}/memory.json"))


def cp_bytes(comm):
    """Per kind, the count and bytes_per_rank of the collectives over cp (a
    recv is the other end of a send: its bytes are the send's)."""
    kinds = {}
    for c in comm["collectives"]:
        if c["axes"] == ["cp"] and c["kind"] not in ("all_slice", "recv"):
            n, b = kinds.get(c["kind"], (0, 0))
            kinds[c["kind"]] = (n + 1, b + c["bytes_per_rank"])
    return kinds


def analytic(variant, cp, m):
    """(kind, count, bytes per rank) of one forward's attention over cp."""
    b, s, layers, hq, hkv, d = m["batch"], m["seq"], m["layers"], m["heads"], m["kv"], m["d"]
    kv_block = b * hkv * (s // cp) * d * 4
    if variant == "ring":
        return "send", 2 * (cp - 1) * layers, 2 * (cp - 1) * layers * kv_block
    if variant == "allgather":
        return "all_gather", 2 * layers, 2 * layers * kv_block * cp
    q = b * hq * (s // cp) * d * 4
    return "all_to_all", 4 * layers, layers * (2 * q + 2 * kv_block)


def head_tail_position(index, ranks, length):
    block = length // ranks
    head = (block + 1) // 2
    tail = block - head
    rank, within = divmod(index, block)
    if within < head:
        return rank * head + within
    return ranks * head + (ranks - 1 - rank) * tail + within - head


def causal_work(cp, s, balanced):
    """Per rank: unmasked query-key pairs, and chunk blocks the ring computes."""
    block = s // cp
    pairs = []
    for r in range(cp):
        idx = range(r * block, (r + 1) * block)
        pos = [head_tail_position(i, cp, s) if balanced else i for i in idx]
        pairs.append(sum(p + 1 for p in pos))
    # The ring's blocks, in chunk-by-chunk units (a rank block is 2 chunks):
    # contiguous, rank r computes r + 1 blocks of 4 units; head-tail, 3 units
    # in the first step and 2 in each of the cp - 1 others.
    blocks = [(2 * cp + 1) if balanced else 4 * (r + 1) for r in range(cp)]
    return pairs, blocks


def imbalance(values):
    return max(values) / (sum(values) / len(values))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seq", type=int, default=4096)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    print(f"Machine: {machine()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        m = dict(layers=2, hidden=256, heads=4, kv=4, d=64, batch=1, seq=1024)
        model = f"{tmp}/gpt2.mlir"
        gen(build, f"gpt2 --layers {m['layers']} --hidden {m['hidden']} --heads {m['heads']} "
            f"--vocab 512 --seq {m['seq']} --batch {m['batch']} --max-positions {m['seq']}", model)
        print(f"## Communication over cp in one forward (GPT-2, {m['layers']} layers, hidden "
              f"{m['hidden']}, {m['heads']} heads, batch {m['batch']}, seq {m['seq']})\n")
        print("| variant | cp | collectives over cp (IR) | bytes/rank (IR) | analytic | "
              "analytic bytes/rank | IR / analytic |")
        print("|---|---|---|---|---|---|---|")
        memory = {}
        _, one = reports(build, model, 1, "allgather", "contiguous", tmp)
        memory_one = one["layers"][0]["activation_bytes_per_rank"]
        for variant in ("ring", "allgather", "ulysses"):
            for cp in (2, 4):
                comm, mem = reports(build, model, cp, variant, "balanced", tmp)
                if variant != "ring":
                    memory[(variant, cp)] = mem["layers"][0]["activation_bytes_per_rank"]
                kinds = cp_bytes(comm)
                got = sum(b for _, b in kinds.values())
                kind, count, want = analytic(variant, cp, m)
                text = ", ".join(f"{n} {k}" for k, (n, _) in sorted(kinds.items()))
                print(f"| {variant} | {cp} | {text} | {got:,} | {count} {kind} | {want:,} | "
                      f"{got / want:.3f} |")
        print(f"\n## Activation memory a layer keeps for the backward pass, per rank\n")
        print(f"One rank: {memory_one / 2**20:.2f} MiB. The ring keeps what allgather keeps: "
              "its backward starts from the rank's own query, key and value blocks and "
              "recomputes the ring.\n")
        print("| variant | cp | MiB/rank | of one rank's | 1/cp |")
        print("|---|---|---|---|---|")
        for (variant, cp), b in memory.items():
            name = "allgather, ring" if variant == "allgather" else variant
            print(f"| {name} | {cp} | {b / 2**20:.2f} | {b / memory_one:.3f} | {1 / cp:.3f} |")

        print("\n## Causal attention work per rank (max / mean: the step waits for the slowest)\n")
        print("| cp | layout | query-key pairs per rank | max/mean | ring chunk blocks per rank "
              "| max/mean |")
        print("|---|---|---|---|---|---|")
        for cp in (2, 4, 8):
            for balanced in (False, True):
                pairs, blocks = causal_work(cp, args.seq, balanced)
                print(f"| {cp} | {'head-tail' if balanced else 'contiguous'} | "
                      f"{', '.join(f'{p:,}' for p in pairs)} | {imbalance(pairs):.3f} | "
                      f"{', '.join(map(str, blocks))} | {imbalance(blocks):.3f} |")

        seq = args.seq
        long_model = f"{tmp}/long.mlir"
        gen(build, f"gpt2 --layers 2 --hidden 256 --heads 4 --vocab 512 --seq {seq} --batch 1 "
            f"--max-positions {seq}", long_model)
        sys.path.insert(0, os.path.join(ROOT, "test", "Integration", "CPU"))
        import torch
        from reference import write_safetensors
        g = torch.Generator().manual_seed(1)
        ids = f"{tmp}/ids.safetensors"
        write_safetensors(ids, {"input_ids": torch.randint(0, 512, (1, seq), generator=g)})
        print(f"\n## Forward at sequence {seq} (GPT-2, 2 layers, hidden 256, 4 heads, batch 1)\n")
        print("| run | ranks x threads | median forward ms | vs one rank, 2 threads | "
              "peak RSS of the largest rank (MiB) |")
        print("|---|---|---|---|---|")
        runs = [("one rank", [], 1, 2), ("one rank", [], 1, 1)]
        for variant, layout in (("ring", "balanced"), ("ring", "contiguous"),
                                ("allgather", "balanced"), ("ulysses", "balanced")):
            runs.append((f"cp=2 {variant}, {layout}",
                         ["--mesh", "cp=2", "--recipe", "megatron", "--cp-attention", variant,
                          "--cp-layout", layout], 2, 1))
        base = None
        for name, flags, ranks, threads in runs:
            out, peak = run([f"{build}/bin/pmlir-run", long_model, "--inputs", ids, "--repeat",
                             str(args.repeat), "--threads", str(threads)] + flags)
            ms = float(re.search(r"median ([\d.]+) ms", out).group(1))
            base = base or ms
            print(f"| {name} | {ranks} x {threads} | {ms:.1f} | {base / ms:.2f}x | "
                  f"{peak / 2**20:.0f} |")


if __name__ == "__main__":
    main()
