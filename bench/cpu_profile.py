#!/usr/bin/env python3
"""What a GPT-2 small training step's GEMM calls run at on the CPU, from pmlir-run --trace.

  /usr/bin/python3 bench/cpu_profile.py [--build build] [--shape 4x128] [--steps 3]
      [--threads 1] [--precision f32|bf16] [--keep-trace T.json] [--trace T.json]

Trains GPT-2 small (12 layers, hidden 768, 12 heads, vocabulary 50257) at
batch x seq for --steps steps with pmlir-run --train --mesh dp=1 --trace
--threads T, then reads the last step's spans: the step's time, the time
in GEMM calls (the `kernels` track: each call of the runtime's GEMM, with
its m, n, k, batch, transposes and types), and the calls by shape, each
with its count, milliseconds and GFLOP/s (2 m n k batch over the call's
time, its conversions and threads included). The rest of the step is the
generated loops, the runtime's other work and the calls between. Prints
Markdown for docs/performance.md.
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
from benchlib import (GPT2_SMALL, add_trace_options, gpt2_small_args, parse_trace_options,  # noqa: E402
                      run, write_tokens)

ROOT = os.path.dirname(HERE)


def summarize(trace, steps):
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    tracks = {e["args"]["name"]: e["tid"] for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == 0}
    if "kernels" not in tracks:
        sys.exit("the trace has no 'kernels' track: a pmlir-run that records no GEMM calls")
    last = f"step {steps}"  # pmlir-run counts steps from 1
    step = next((e for e in events if e.get("ph") == "X" and e.get("pid") == 0
                 and e["name"] == last), None)
    if step is None:
        sys.exit(f"the trace has no span '{last}'")
    begin, end = step["ts"], step["ts"] + step["dur"]
    calls = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0
             and e["tid"] == tracks["kernels"] and e["cat"] == "gemm"
             and begin <= e["ts"] and e["ts"] + e["dur"] <= end]
    if not calls:
        sys.exit(f"the trace has no GEMM call inside '{last}'")
    by_shape = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for e in calls:
        a = e["args"]
        entry = by_shape[e["name"]]
        entry[0] += 1
        entry[1] += e["dur"]
        entry[2] += 2.0 * a["m"] * a["n"] * a["k"] * a["batch"]
    gemm_us = sum(v[1] for v in by_shape.values())
    flops = sum(v[2] for v in by_shape.values())
    step_ms = step["dur"] / 1e3
    print(f"Last step (`{last}`): {step_ms:.1f} ms; {len(calls)} GEMM calls, "
          f"{gemm_us / 1e3:.1f} ms ({gemm_us / 1e3 / step_ms:.1%} of the step), "
          f"{flops / 1e9:.1f} GFLOP at {flops / gemm_us / 1e3:.1f} GFLOP/s; the rest "
          f"{step_ms - gemm_us / 1e3:.1f} ms.\n")
    print("| GEMM call (m x n x k [x batch], transposes, operands) | result | calls | ms | "
          "share of the step | GFLOP/s |")
    print("|---|---|---|---|---|---|")
    results = {e["name"]: e["args"]["result"] for e in calls}
    for name, (count, us, work) in sorted(by_shape.items(), key=lambda kv: -kv[1][1]):
        print(f"| `{name}` | {results[name]} | {count} | {us / 1e3:.1f} | "
              f"{us / 1e3 / step_ms:.1%} | {work / us / 1e3:.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_trace_options(ap, ROOT, "4x128")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--precision", choices=("f32", "bf16"), default="f32")
    args = parse_trace_options(ap)
    if args.trace:
        with open(args.trace) as f:
            return summarize(json.load(f), args.steps)
    tools = os.path.join(args.build, "bin")
    batch, seq = (int(x) for x in args.shape.split("x"))
    with tempfile.TemporaryDirectory(prefix="pmlir-cpu-profile-") as work:
        model = os.path.join(work, "gpt2.mlir")
        data = os.path.join(work, "tokens.bin")
        trace = os.path.join(work, "trace.json")
        run([os.path.join(tools, "pmlir-gen"), "gpt2", *gpt2_small_args(), "--seq", str(seq),
             "--batch", str(batch), "--loss", "-o", model])
        write_tokens(data, args.steps * batch * seq + 1, GPT2_SMALL["vocab"])
        out, _ = run([os.path.join(tools, "pmlir-run"), model, "--train", "--steps",
                      str(args.steps), "--data", data, "--threads", str(args.threads),
                      "--precision", args.precision, "--mesh", "dp=1", "--verbose", "--trace",
                      trace])
        print(f"GPT-2 small {args.precision} training step, batch {batch} x seq {seq}, "
              f"{args.threads} thread(s), {args.steps} steps:")
        print("```\n" + out.strip() + "\n```\n")
        if args.keep_trace:
            shutil.copyfile(trace, args.keep_trace)
        with open(trace) as f:
            summarize(json.load(f), args.steps)


if __name__ == "__main__":
    main()
