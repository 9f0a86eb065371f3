#!/usr/bin/env python3
"""pmlir's sharding against upstream MLIR's on the same programs and the same
annotations: communication bytes per rank of pmlir-sharding-propagation +
pmlir-partition next to upstream's sharding-propagation + shard-partition
(mlir-opt-22), and Megatron's analytic volume.

Both start from one tfm program whose weights carry Megatron's shardings.
pmlir runs its own passes on it; for upstream, pmlir-export-shardings writes
the same annotations as shard.shard ops, pmlir-convert-tfm-to-linalg lowers
the program to linalg (upstream's ShardingInterface covers linalg, not tfm),
and mlir-opt-22 runs func(sharding-propagation, shard-partition). Both
partitioned programs go through pmlir-comm-report. A case upstream cannot
partition shows its first error.

Run from the repository root after building: /usr/bin/python3 bench/upstream_sharding.py
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import with_mesh  # noqa: E402

BUILD = "build/bin"
UPSTREAM = "mlir-opt-22"
F32 = 4


def t(*shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def gpt2_mlp(B, S, H, dp, tp):
    F = 4 * H
    return (f"""
module attributes {{tfm.mesh = #tfm.mesh<dp = {dp}, tp = {tp}>}} {{
  func.func @gpt2_mlp(%x: {t(B, S, H)} {{tfm.sharding = #tfm.sharding<[["dp"], [], []]>}},
      %g: {t(H)}, %bt: {t(H)},
      %w1: {t(H, F)} {{tfm.sharding = #tfm.sharding<[[], ["tp"]]>}},
      %b1: {t(F)} {{tfm.sharding = #tfm.sharding<[["tp"]]>}},
      %w2: {t(F, H)} {{tfm.sharding = #tfm.sharding<[["tp"], []]>}},
      %b2: {t(H)}) -> {t(B, S, H)} {{
    %n = tfm.layernorm %x, %g, %bt eps = 1.0e-05 : {t(B, S, H)}, {t(H)}
    %h = tfm.matmul %n, %w1 : {t(B, S, H)}, {t(H, F)} -> {t(B, S, F)}
    %hb = tfm.add %h, %b1 : {t(B, S, F)}, {t(F)}
    %a = tfm.gelu %hb tanh : {t(B, S, F)}
    %y = tfm.matmul %a, %w2 : {t(B, S, F)}, {t(F, H)} -> {t(B, S, H)}
    %yb = tfm.add %y, %b2 : {t(B, S, H)}, {t(H)}
    %r = tfm.add %x, %yb : {t(B, S, H)}, {t(B, S, H)}
    return %r : {t(B, S, H)}
  }}
}}""", (B // dp) * S * H * F32)


def llama_mlp(B, S, H, F, tp):
    return (f"""
module attributes {{tfm.mesh = #tfm.mesh<tp = {tp}>}} {{
  func.func @llama_mlp(%x: {t(B, S, H)}, %g: {t(H)},
      %wg: {t(F, H)} {{tfm.sharding = #tfm.sharding<[["tp"], []]>}},
      %wu: {t(F, H)} {{tfm.sharding = #tfm.sharding<[["tp"], []]>}},
      %wd: {t(H, F)} {{tfm.sharding = #tfm.sharding<[[], ["tp"]]>}}) -> {t(B, S, H)} {{
    %n = tfm.rmsnorm %x, %g eps = 1.0e-06 : {t(B, S, H)}, {t(H)}
    %gate = tfm.matmul %n, %wg transpose_rhs : {t(B, S, H)}, {t(F, H)} -> {t(B, S, F)}
    %s = tfm.silu %gate : {t(B, S, F)}
    %up = tfm.matmul %n, %wu transpose_rhs : {t(B, S, H)}, {t(F, H)} -> {t(B, S, F)}
    %m = tfm.mul %s, %up : {t(B, S, F)}, {t(B, S, F)}
    %y = tfm.matmul %m, %wd transpose_rhs : {t(B, S, F)}, {t(H, F)} -> {t(B, S, H)}
    %r = tfm.add %x, %y : {t(B, S, H)}, {t(B, S, H)}
    return %r : {t(B, S, H)}
  }}
}}""", B * S * H * F32)


def row_parallel_to_sequence(B, S, H, tp):
    F = 4 * H
    return (f"""
module attributes {{tfm.mesh = #tfm.mesh<tp = {tp}>}} {{
  func.func @row_parallel_to_sequence(%a: {t(B, S, F)} {{tfm.sharding = #tfm.sharding<[[], [], ["tp"]]>}},
      %w: {t(F, H)} {{tfm.sharding = #tfm.sharding<[["tp"], []]>}})
      -> ({t(B, S, H)} {{tfm.sharding = #tfm.sharding<[[], ["tp"], []]>}}) {{
    %y = tfm.matmul %a, %w : {t(B, S, F)}, {t(F, H)} -> {t(B, S, H)}
    return %y : {t(B, S, H)}
  }}
}}""", B * S * H * F32)


def lm_head(B, S, H, V, tp):
    return (f"""
module attributes {{tfm.mesh = #tfm.mesh<tp = {tp}>}} {{
  func.func @lm_head(%x: {t(B, S, H)}, %g: {t(H)}, %bt: {t(H)},
      %wte: {t(V, H)} {{tfm.sharding = #tfm.sharding<[["tp"], []]>}}) -> {t(B, S, V)} {{
    %n = tfm.layernorm %x, %g, %bt eps = 1.0e-05 : {t(B, S, H)}, {t(H)}
    %l = tfm.matmul %n, %wte transpose_rhs : {t(B, S, H)}, {t(V, H)} -> {t(B, S, V)}
    return %l : {t(B, S, V)}
  }}
}}""", 0)


def generated(kind, flags, mesh, layers, B, S, H):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([f"{BUILD}/pmlir-gen", kind] + flags.split() + ["-o", f"{tmp}/gen.mlir"],
                       check=True)
        with_mesh(f"{BUILD}/pmlir-opt", f"{tmp}/gen.mlir", f"{tmp}/mesh.mlir", mesh)
        with open(f"{tmp}/mesh.mlir") as f:
            ir = f.read()
    # Megatron: 2 all-reduces of b*s*h per layer and the embedding's.
    return ir, (2 * layers + 1) * B * S * H * F32


def totals(path):
    report = json.load(open(path))["totals"]
    count = sum(v["count"] for k, v in report.items() if k != "all_slice")
    volume = sum(v["bytes_per_rank"] for v in report.values())
    kinds = ", ".join(f"{v['count']} {k}" for k, v in sorted(report.items()) if k != "all_slice")
    return count, volume, kinds or "none"


def run(tmp, name, ir, recipe):
    src = f"{tmp}/{name}.mlir"
    open(src, "w").write(ir)
    pre = ["--pmlir-megatron-recipe"] if recipe else []
    subprocess.run([f"{BUILD}/pmlir-opt", src] + pre +
                   ["--pmlir-sharding-propagation", "--pmlir-partition",
                    f"--pmlir-comm-report=output={tmp}/{name}.pmlir.json", "-o", "/dev/null"],
                   check=True)
    mine = totals(f"{tmp}/{name}.pmlir.json")
    export = subprocess.run([f"{BUILD}/pmlir-opt", src] + pre +
                            ["--pmlir-export-shardings", "--pmlir-convert-tfm-to-linalg"],
                            capture_output=True, text=True)
    if export.returncode != 0:
        # A sharding upstream's annotations cannot say (a fused weight split
        # in parts) never reaches upstream.
        error = next((l for l in export.stderr.splitlines() if "error:" in l), export.stderr.strip())
        return mine, "not expressible: " + error.split("error: ", 1)[-1]
    linalg = export.stdout
    up = subprocess.run([UPSTREAM, "--allow-unregistered-dialect", "--pass-pipeline",
                         "builtin.module(func.func(sharding-propagation,shard-partition))"],
                        input=linalg, capture_output=True, text=True)
    if up.returncode != 0:
        error = next((l for l in up.stderr.splitlines() if "error:" in l), up.stderr.strip())
        return mine, error.split("error: ", 1)[-1]
    open(f"{tmp}/{name}.upstream.mlir", "w").write(up.stdout)
    subprocess.run([f"{BUILD}/pmlir-opt", f"{tmp}/{name}.upstream.mlir",
                    f"--pmlir-comm-report=output={tmp}/{name}.upstream.json", "-o", "/dev/null"],
                   check=True)
    return mine, totals(f"{tmp}/{name}.upstream.json")


def main():
    cases = [
        ("GPT-2 MLP (B 8, S 1024, H 768; dp 2 x tp 4)", gpt2_mlp(8, 1024, 768, 2, 4), False),
        ("Llama MLP (B 1, S 2048, H 4096, F 11008; tp 8)", llama_mlp(1, 2048, 4096, 11008, 8), False),
        ("row-parallel matmul, sequence-split output (B 4, S 1024, H 1024; tp 4)",
         row_parallel_to_sequence(4, 1024, 1024, 4), False),
        ("vocab-parallel LM head (B 4, S 1024, H 768, V 50304; tp 4)", lm_head(4, 1024, 768, 50304, 4),
         False),
        ("GPT-2 forward, 2 layers (B 4, S 128, H 768, V 50304; tp 4)",
         generated("gpt2", "--layers 2 --hidden 768 --heads 12 --vocab 50304 --seq 128 --batch 4 "
                   "--max-positions 128", "tp = 4", 2, 4, 128, 768), True),
        ("Llama forward, 2 layers (B 1, S 256, H 1024, 16/4 heads; tp 4)",
         generated("llama", "--layers 2 --hidden 1024 --heads 16 --kv-heads 4 --ffn 2816 "
                   "--vocab 32000 --seq 256 --batch 1", "tp = 4", 2, 1, 256, 1024), True),
    ]
    print("| program | Megatron analytic (bytes/rank) | pmlir collectives | pmlir bytes/rank "
          "| upstream collectives | upstream bytes/rank | upstream / pmlir |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, (ir, analytic), recipe) in enumerate(cases):
            (count, volume, kinds), up = run(tmp, f"case{i}", ir, recipe)
            if isinstance(up, str):
                print(f"| {name} | {analytic:,} | {kinds} | {volume:,} | fails: {up} | - | - |")
            else:
                ratio = f"{up[1] / volume:.1f}x" if volume else ("1.0x" if up[1] == 0 else "inf")
                print(f"| {name} | {analytic:,} | {kinds} | {volume:,} | {up[2]} | {up[1]:,} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
