#!/usr/bin/env python3
"""Where a GPT-2 small bf16 training step spends its GPU time, from pmlir-run --trace.

  bench/gpu_profile.py [--build build] [--shape 8x1024] [--steps 3] [--top 30]
      [--keep-trace T.json]

Trains GPT-2 small (12 layers, hidden 768, 12 heads, vocabulary 50257) at
batch x seq for --steps steps with pmlir-run --device gpu --precision bf16
--train --mesh dp=1 --trace, then reads the last step's spans: the step's
host time, the GPU's busy time (the union of its spans), time by kind
(cuBLASLt GEMMs, generated kernels, copies) and the --top names by total
time, each with its count, mean and the launch shape of its instances (a
grid of [1,1,1] or a block of [1,1,1] marks a kernel that runs on one block
or one thread). Prints Markdown for docs/performance.md.
"""
import argparse
import collections
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import add_trace_options, gpt2_small_args, parse_trace_options  # noqa: E402
from gpu_forward import GPT2_SMALL, ROOT, run, write_ids  # noqa: E402


def union_ms(spans):
    """The time covered by at least one of `spans` ((start, end) in µs)."""
    total, reach = 0.0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total / 1e3


def summarize(trace, steps, top):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    gpu_tid = next(e["tid"] for e in events
                   if e.get("ph") == "M" and e.get("name") == "thread_name"
                   and e["args"]["name"] == "gpu")
    last = f"step {steps}"  # pmlir-run counts steps from 1
    step = next((e for e in events if e.get("ph") == "X" and e["name"] == last), None)
    if step is None:
        sys.exit(f"the trace has no span '{last}'")
    # A step ends by copying its loss and norm to the host, which waits for
    # its stream: its GPU spans lie inside its host span.
    spans = [e for e in events if e.get("ph") == "X" and e["tid"] == gpu_tid
             and step["ts"] <= e["ts"] <= step["ts"] + step["dur"]]
    if not spans:
        sys.exit("the trace has no gpu span in the last step")
    busy = union_ms([(e["ts"], e["ts"] + e["dur"]) for e in spans])
    first, end = min(e["ts"] for e in spans), max(e["ts"] + e["dur"] for e in spans)
    print(f"Last step (`{last}`): host {step['dur'] / 1e3:.1f} ms; GPU spans from the first "
          f"start to the last end {(end - first) / 1e3:.1f} ms, busy {busy:.1f} ms "
          f"({len(spans)} spans).\n")

    by_kind = collections.defaultdict(lambda: [0, 0.0])
    by_name = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for e in spans:
        kind = by_kind[e["cat"]]
        kind[0] += 1
        kind[1] += e["dur"]
        name = by_name[(e["cat"], e["name"])]
        name[0] += 1
        name[1] += e["dur"]
        args = e.get("args", {})
        if "grid" in args:
            grid, block = (json.dumps(args[k], separators=(",", ":")) for k in ("grid", "block"))
            name[2][f"grid {grid} block {block}"] += 1
        elif "m" in args:
            name[2][f"m {args['m']} n {args['n']} k {args['k']} batch {args['batch']}"] += 1
    total = sum(v[1] for v in by_kind.values())
    print("| kind | spans | ms | share of span time |")
    print("|---|---|---|---|")
    for cat, (count, us) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
        print(f"| {cat} | {count} | {us / 1e3:.2f} | {us / total:.1%} |")
    print()
    print(f"| kind | name (top {top} by time) | count | ms | mean µs | share | launch shapes "
          "(most frequent) |")
    print("|---|---|---|---|---|---|---|")
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])
    for (cat, name), (count, us, shapes) in ranked[:top]:
        shown = "; ".join(f"{s} ×{n}" for s, n in shapes.most_common(2))
        print(f"| {cat} | `{name}` | {count} | {us / 1e3:.2f} | {us / count:.1f} | "
              f"{us / total:.1%} | {shown} |")
    print()
    # Kernels that run on one block of one thread: the scalar work to fold.
    scalar = [(k, v) for k, v in ranked if k[0] == "kernel" and any(
        "block [1,1,1]" in s or "grid [1,1,1]" in s for s in v[2])]
    scalar_us = sum(v[1] for _, v in scalar)
    print(f"Kernels launched at least once on a one-block grid or a one-thread block: "
          f"{len(scalar)} names, {sum(v[0] for _, v in scalar)} launches of them, "
          f"{scalar_us / 1e3:.2f} ms.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_trace_options(ap, ROOT, "8x1024")
    ap.add_argument("--top", type=int, default=30)
    args = parse_trace_options(ap)
    if args.trace:
        with open(args.trace) as f:
            return summarize(json.load(f), args.steps, args.top)
    tools = os.path.join(args.build, "bin")
    batch, seq = (int(x) for x in args.shape.split("x"))
    with tempfile.TemporaryDirectory(prefix="pmlir-profile-") as work:
        model = os.path.join(work, "gpt2-loss.mlir")
        ids = os.path.join(work, "batch.safetensors")
        trace = os.path.join(work, "trace.json")
        run([os.path.join(tools, "pmlir-gen"), "gpt2", *gpt2_small_args(), "--seq", str(seq),
             "--batch", str(batch), "--loss", "-o", model])
        write_ids(ids, batch, seq, GPT2_SMALL["vocab"], labels=True)
        out = run([os.path.join(tools, "pmlir-run"), model, "--device", "gpu", "--precision",
                   "bf16", "--train", "--inputs", ids, "--steps", str(args.steps), "--lr",
                   "1e-3", "--mesh", "dp=1", "--trace", trace])
        print(f"GPT-2 small bf16 training step, batch {batch} x seq {seq}, {args.steps} steps:")
        print("```\n" + out.strip() + "\n```\n")
        if args.keep_trace:
            shutil.copyfile(trace, args.keep_trace)
        with open(trace) as f:
            summarize(json.load(f), args.steps, args.top)


if __name__ == "__main__":
    main()
