"""Checks the step time of a pmlir-run --predict --json report.

  predict_step.py JOB.json [--tokens N] [--gemm-flops-per-second R]
                  [--waits RANK]

The report holds together: the step is its slowest rank's; each rank's step
is its GEMMs, loops, copies, communication and waiting; tokens per second
are the step's tokens over its time, and the model FLOPs utilization its
model FLOPs over the time and every rank's peak. --tokens: the tokens of a
step. --gemm-flops-per-second R (a profile of fixed rates, every GEMM priced
at R): the GEMM FLOPs the ranks' compiled programs run, counted from their
kernel calls (pmlir-step-work), are the model's FLOPs, counted from its tfm
ops (CostOpInterface): two counts of the same work by different roads (a
training step without recomputation runs each matmul thrice). --waits RANK:
that rank waits for others (a pipeline's bubble). Prints 'predict step: ok'
or exits 1 naming what differs."""
import argparse
import json
import math
import sys


def fail(message):
    print(f"predict step: FAILED: {message}")
    sys.exit(1)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--tokens", type=int)
    ap.add_argument("--gemm-flops-per-second", type=float)
    ap.add_argument("--waits", type=int)
    args = ap.parse_args()
    r = json.load(open(args.report))
    ranks = r["ranks"]
    step = r["step_seconds"]
    if step <= 0:
        fail(f"the step takes {step} s")
    if not close(step, max(k["step_seconds"] for k in ranks)):
        fail("step_seconds is not the slowest rank's")
    for k in ranks:
        parts = (k["gemm_seconds"] + k["loop_seconds"] + k["copy_seconds"] +
                 k["communication_seconds"] + k["waiting_seconds"])
        if not close(k["step_seconds"], parts):
            fail(f"rank {k['rank']}'s step is not the sum of its parts")
    if not close(r["tokens_per_second"] * step, r["tokens_per_step"]):
        fail("tokens_per_second is not the step's tokens over its time")
    peak = r["profile"]["peak_flops_per_second"]
    if not close(r["mfu"], r["model_flops_per_step"] / (step * len(ranks) * peak)):
        fail("mfu is not the model's FLOPs over the step and the ranks' peak")
    if args.tokens is not None and r["tokens_per_step"] != args.tokens:
        fail(f"a step of {r['tokens_per_step']} tokens, expected {args.tokens}")
    if args.gemm_flops_per_second:
        run = sum(k["gemm_seconds"] for k in ranks) * args.gemm_flops_per_second
        if not math.isclose(run, r["model_flops_per_step"], rel_tol=1e-6):
            fail(f"the programs' GEMMs run {run:.6g} FLOPs, the model counts "
                 f"{r['model_flops_per_step']:.6g}")
    if args.waits is not None and not ranks[args.waits]["waiting_seconds"] > 0:
        fail(f"rank {args.waits} never waits")
    print("predict step: ok")


if __name__ == "__main__":
    main()
