#!/usr/bin/env python3
"""What the auto-sharder chooses, against Megatron's plan priced by the same
cost model, on GPT-2- and Llama-shaped training steps (and forwards):

- fast tp: the h100 preset, every axis of dp=2 x tp=4 on one node's NVLink;
- slow tp: the same node with the tp axis pinned to a 12.5 GB/s link
  (100 Gb/s Ethernet between the cards), dp still on NVLink;
- tight memory: dp=8 under a budget below what a replica of the
  parameters, gradients and AdamW state needs;
- infeasible: a budget below what any plan needs;
- experts: a Mixtral-style training step on dp=2 x ep=4 (one node), where
  expert parallelism (the experts split over ep with their tokens, the
  all-to-alls priced) is one of the auto-sharder's choices.

Megatron's plan is priced by running pmlir-megatron-recipe first: the
auto-sharder keeps the annotations it finds (keep-annotations) and chooses
only the rest, so its objective is Megatron's weights on this cost model.
For each plan the table gives the predicted step (compute + communication,
as the report's objective), the communication per mesh-axis group, the peak
memory of a device and how the layer's weights and their AdamW state are
split.

Run from the repository root after building:
    /usr/bin/python3 bench/auto_sharding.py [--quick]
(--quick: smaller models, for a check that the script runs.)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from benchlib import machine, with_mesh

BUILD = "build/bin"

SLOW_TP = {
    "name": "h100-slow-tp", "devices_per_node": 8,
    "device": {"tflops": 600, "memory_gb": 80, "memory_gbps": 3000},
    "intra_node": {"gbps": 360, "latency_us": 3},
    "inter_node": {"gbps": 45, "latency_us": 10},
    "axes": {"tp": {"gbps": 12.5, "latency_us": 20}},
}


def models(quick):
    """(label, pmlir-gen arguments, the layer's weights to show)."""
    if quick:
        gpt2 = ["gpt2", "--layers", "2", "--hidden", "128", "--heads", "4", "--vocab", "512",
                "--seq", "64", "--batch", "8"]
        llama = ["llama", "--layers", "2", "--hidden", "128", "--heads", "8", "--kv-heads", "4",
                 "--ffn", "352", "--vocab", "512", "--seq", "64", "--batch", "8"]
    else:
        gpt2 = ["gpt2", "--layers", "12", "--hidden", "768", "--heads", "12", "--vocab", "50304",
                "--seq", "1024", "--batch", "8"]
        llama = ["llama", "--layers", "16", "--hidden", "2048", "--heads", "16", "--kv-heads", "8",
                 "--ffn", "5632", "--vocab", "32000", "--seq", "1024", "--batch", "8"]
    return [
        ("GPT-2", gpt2, ["wte.weight", "h.0.attn.c_attn.weight", "h.0.attn.c_proj.weight",
                         "h.0.mlp.c_fc.weight", "h.0.mlp.c_proj.weight"]),
        ("Llama", llama, ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                          "model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.o_proj.weight",
                          "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.down_proj.weight",
                          "lm_head.weight"]),
    ]


def generate(tmp, label, gen):
    """The forward with its loss of `pmlir-gen GEN` and its AdamW training
    step, as files in `tmp`."""
    forward = f"{tmp}/{label}.mlir"
    status, _, err = run([f"{BUILD}/pmlir-gen", *gen, "--loss", "-o", forward])
    if status != 0:
        sys.exit(err)
    step = f"{tmp}/{label}-step.mlir"
    status, _, err = run([f"{BUILD}/pmlir-opt", forward,
                          "--pmlir-autodiff=entry=forward name=forward_grad keep-entry=false",
                          "--pmlir-optimizer=entry=forward_grad name=train_step keep-entry=false",
                          "-o", step])
    if status != 0:
        sys.exit(err)
    return forward, step


def experts_model(quick):
    """A Mixtral-style model's pmlir-gen arguments and the weights to show."""
    if quick:
        gen = ["mixtral", "--layers", "2", "--hidden", "128", "--heads", "4", "--kv-heads", "2",
               "--ffn", "256", "--experts", "8", "--top-k", "2", "--vocab", "512", "--seq", "64",
               "--batch", "8"]
    else:
        gen = ["mixtral", "--layers", "4", "--hidden", "2048", "--heads", "16", "--kv-heads", "8",
               "--ffn", "5632", "--experts", "8", "--top-k", "2", "--vocab", "32000",
               "--seq", "1024", "--batch", "8"]
    return gen, ["model.layers.0.self_attn.q_proj.weight",
                 "model.layers.0.block_sparse_moe.gate.weight",
                 "model.layers.0.block_sparse_moe.experts.*.w1.weight",
                 "model.layers.0.block_sparse_moe.experts.*.w2.weight"]


def experts_section(tmp, quick):
    """Megatron's expert-parallel plan, data parallelism and the auto plan
    of a Mixtral-style training step on dp=2 x ep=4."""
    gen, weights = experts_model(quick)
    _, step = generate(tmp, "mixtral", gen + ["--router-aux-loss-coef", "0.02"])
    print(f"## Mixtral-style: `pmlir-gen {' '.join(gen)} --router-aux-loss-coef 0.02 --loss`, "
          "training step on dp=2 x ep=4\n")
    mesh = f"{tmp}/mixtral-step-dp2ep4.mlir"
    with_mesh(f"{BUILD}/pmlir-opt", step, mesh, "dp = 2, ep = 4")
    pinned = f"{tmp}/mixtral-step-dp2ep4-dp.mlir"
    pin_data_parallel(mesh, pinned, '["dp", "ep"]')
    rows, shown = [], {}
    for who, model, megatron in (("Megatron (ep)", mesh, True), ("data parallel", pinned, False),
                                 ("auto", mesh, False)):
        entry, args = plan(model, tmp, f"mixtral-{who}".replace(" ", "_"), "topology=h100",
                           megatron)
        rows.append(row("step", "dp=2, ep=4", who, entry))
        if args is not None:
            shown[who] = args
    print_plans(rows)
    print("| argument | " + " | ".join(shown) + " |")
    print("|---|" + "---|" * len(shown))
    for weight in ["input_ids"] + weights:
        print(f"| {weight} | " + " | ".join(args.get(weight, "?") for args in shown.values()) +
              " |")
    print()


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


ARG = re.compile(r'tfm\.name = "([^"]+)"[^{}]*?tfm\.sharding = #tfm\.sharding<(\[.*?\]\])')
HEADER_ARG = re.compile(r'(%arg\d+: tensor<([^>]*)> )\{([^{}]*)\}')


def header(ir):
    """The first function's signature line."""
    start = ir.index("func.func @")
    return start, ir.index("{\n", start)


def argument_shardings(ir):
    """Per argument name, its sharding's dimensions as written; and under
    "held", the bytes of the parameters and of the optimizer state one
    device holds (mesh axes from the module's tfm.mesh)."""
    start, end = header(ir)
    shardings = {name: dims.replace('"', "") for name, dims in ARG.findall(ir[start:end])}
    mesh = dict((a, int(n)) for a, n in
                re.findall(r"(\w+) = (\d+)", re.search(r"#tfm\.mesh<([^>]*)>", ir).group(1)))
    held = {"parameters": 0, "state": 0}
    for m in HEADER_ARG.finditer(ir[start:end]):
        name = re.search(r'tfm\.name = "([^"]+)"', m.group(3))
        role = re.search(r'tfm\.role = (?:"|#tfm<role )(\w+)', m.group(3))
        if not name or not role or role.group(1) not in ("param", "optimizer_state"):
            continue
        *dims, dtype = m.group(2).split("x")
        size = 4 if dtype == "f32" else 2
        for d in dims:
            size *= int(d)
        split = 1
        for axis in re.findall(r"\w+", shardings.get(name.group(1), "")):
            split *= mesh.get(axis, 1)
        held["parameters" if role.group(1) == "param" else "state"] += size / split
    shardings["held"] = held
    return shardings


def pin_data_parallel(path, out, batch_axes):
    """The data-parallel plan as annotations: token ids and labels split on
    their batch over `batch_axes`, every parameter whole; the optimizer
    state left to the plan (ZeRO is a choice it can make)."""
    ir = open(path).read()
    start, end = header(ir)

    def pin(m):
        rank = m.group(2).count("x")
        attrs = m.group(3)
        name = re.search(r'tfm\.name = "([^"]+)"', attrs).group(1)
        if name in ("input_ids", "labels"):
            dims = [batch_axes] + ["[]"] * (rank - 1)
        elif re.search(r'tfm\.role = (?:"param"|#tfm<role param>)', attrs):
            dims = ["[]"] * rank
        else:
            return m.group(0)
        return f"{m.group(1)}{{tfm.sharding = #tfm.sharding<[{', '.join(dims)}]>, {attrs}}}"

    open(out, "w").write(ir[:start] + HEADER_ARG.sub(pin, ir[start:end]) + ir[end:])


def plan(model, tmp, tag, auto_options, megatron=False):
    """Runs (recipe +) auto-sharding; returns (report of the function,
    argument shardings) or (the error, None)."""
    report = f"{tmp}/{tag}.json"
    out = f"{tmp}/{tag}.mlir"
    cmd = [f"{BUILD}/pmlir-opt", model]
    if megatron:
        cmd.append("--pmlir-megatron-recipe")
    cmd += [f"--pmlir-auto-sharding={auto_options} report={report}", "-o", out]
    status, _, err = run(cmd)
    if status != 0:
        errors = [line for line in err.splitlines() if "error:" in line]
        return (errors[0].split("error: ", 1)[1] if errors else err.strip()), None
    functions = json.load(open(report))["functions"]
    (entry,) = functions.values()
    return entry, argument_shardings(open(out).read())


def comm_text(entry):
    parts = [f"{axes} {c['seconds'] * 1e3:.2f} ms ({c['bytes'] / 2**20:.0f} MiB)"
             for axes, c in sorted(entry["comm"].items()) if c["collectives"]]
    return ", ".join(parts) or "none"


def row(program, case, who, entry):
    if isinstance(entry, str):
        return (program, case, who, entry, "", "", "", "")
    p = entry["problem"]
    return (program, case, who, f"{entry['objective_seconds'] * 1e3:.2f} ms",
            f"{entry['compute_seconds'] * 1e3:.2f} ms", comm_text(entry),
            f"{entry['peak_memory_bytes'] / 2**30:.2f} GiB",
            f"{p['build_seconds'] + p['solve_seconds']:.2f}")


def print_plans(rows):
    """The table of plans, one row each (as row() makes them)."""
    print("| program | case | plan | predicted | compute | communication | peak "
          "| build + solve s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


def main():
    quick = "--quick" in sys.argv
    print(f"# {machine()}")
    print("# pmlir-opt --pmlir-auto-sharding (CBC), one run per row\n")
    with tempfile.TemporaryDirectory() as tmp:
        slow = f"{tmp}/slow-tp.json"
        json.dump(SLOW_TP, open(slow, "w"))
        for label, gen, weights in models(quick):
            forward, step = generate(tmp, label, gen)
            print(f"## {label}: `pmlir-gen {' '.join(gen)} --loss`\n")
            rows = []
            shown = {}
            for program, path in (("forward", forward), ("step", step)):
                tp_mesh = f"{tmp}/{label}-{program}-dp2tp4.mlir"
                with_mesh(f"{BUILD}/pmlir-opt", path, tp_mesh, "dp = 2, tp = 4")
                dp_pinned = f"{tmp}/{label}-{program}-dp2tp4-dp.mlir"
                pin_data_parallel(tp_mesh, dp_pinned, '["dp", "tp"]')
                dp_mesh = f"{tmp}/{label}-{program}-dp8.mlir"
                with_mesh(f"{BUILD}/pmlir-opt", path, dp_mesh, "dp = 8")
                for case, topology in (("fast tp", "topology=h100"),
                                       ("slow tp", f"topology={slow}")):
                    for who, model, megatron in (("Megatron", tp_mesh, True),
                                                 ("data parallel", dp_pinned, False),
                                                 ("auto", tp_mesh, False)):
                        tag = f"{label}-{program}-{case}-{who}".replace(" ", "_")
                        entry, args = plan(model, tmp, tag, topology, megatron)
                        rows.append(row(program, case, who, entry))
                        if args is not None:
                            shown[(program, case, who)] = args
                # dp = 8: unconstrained; under no budget any plan fits (a
                # tenth of the unconstrained peak), which names the least
                # memory; and halfway between the two.
                entry, args = plan(dp_mesh, tmp, f"{label}-{program}-dp8", "topology=h100")
                rows.append(row(program, "dp=8", "auto", entry))
                shown[(program, "dp=8", "auto")] = args
                peak = entry["peak_memory_bytes"]
                none_fits = int(peak / 10)
                error, _ = plan(dp_mesh, tmp, f"{label}-{program}-dp8-none",
                                f"topology=h100 memory-budget={none_fits}")
                least = re.search(r"needs is ([0-9.]+) (GiB|MiB)", error)
                least = float(least.group(1)) * (2**30 if least.group(2) == "GiB" else 2**20)
                tight = int((least + peak) / 2)
                if least < 0.99 * peak:
                    entry, args = plan(dp_mesh, tmp, f"{label}-{program}-dp8-tight",
                                       f"topology=h100 memory-budget={tight}")
                    rows.append(row(program, f"dp=8 under {tight / 2**30:.2f} GiB", "auto",
                                    entry))
                    if args is not None:
                        shown[(program, "dp=8, tight", "auto")] = args
                rows.append(row(program, f"dp=8 under {none_fits / 2**30:.2f} GiB", "auto",
                                error))
            print_plans(rows)
            columns = [k for k in shown if k[0] == "step" and k[2] != "data parallel"]
            print("Training step, shardings (parameter; its AdamW exp_avg where it differs):\n")
            print("| argument | " + " | ".join(f"{c}, {w}" for _, c, w in columns) + " |")
            print("|---|" + "---|" * len(columns))
            for weight in ["input_ids"] + weights:
                cells = []
                for key in columns:
                    args = shown[key]
                    param = args.get(weight, "?")
                    state = args.get(weight + ".exp_avg", param)
                    cells.append(param if state == param else f"{param}; {state}")
                print(f"| {weight} | " + " | ".join(cells) + " |")
            for kind in ("parameters", "state"):
                what = "parameters" if kind == "parameters" else "AdamW state"
                print(f"| {what} a device holds | " + " | ".join(
                    f"{shown[key]['held'][kind] / 2**20:.0f} MiB" for key in columns) + " |")
            print()
        experts_section(tmp, quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
