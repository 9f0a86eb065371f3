#!/usr/bin/env python3
"""Predicted against measured peak resident memory per rank, and step time,
over the parallelisms pmlir-run has.

Each config runs twice: `pmlir-run ... --predict --json` (the job compiled as
it would run; each rank's peak predicted from its process after the compile,
its arguments and its program's buffers at their heaviest point; the step's
time from every rank's GEMMs, loops, copies and communication priced on the
`cpu` profile measured on this host, the ranks run against each other) and
the real run, whose last line gives each rank's measured peak (VmHWM once its
steps are done) and whose steps (the median of those after the first) or
forwards (--repeat's median) give its time. Per config it prints the
heaviest rank's predicted and measured peak, the error against the whole
peak and against the run's own part (the measured peak less the process's
baseline, which --predict measured on itself; the worst rank's), and the
predicted and measured time with its error.

Each config's prediction measures the cpu profile afresh, just before its run
(a slow moment of a shared host then shows in both, not in every later
config's cached profile): --cache FILE shares one cache among the configs
instead.

Run from the repository root after building:
  /usr/bin/python3 bench/predict.py [--build build] [--only NAME,...] [--cache FILE]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import machine, run  # noqa: E402

GPT2 = "gpt2 --layers 4 --hidden 512 --heads 8 --vocab 8000 --seq 256 --batch 4 --max-positions 256"
LLAMA = ("llama --layers 4 --hidden 512 --heads 8 --kv-heads 4 --ffn 1408 --vocab 8000 --seq 256 "
         "--batch 4")

TRAIN = "--train --steps 4 --data {data}"
MEGATRON = "--recipe megatron"

# name, model, flags
CONFIGS = [
    ("forward", "gpt2-logits", "--inputs {inputs} --repeat 3"),
    ("forward tp=2", "gpt2-logits", f"--inputs {{inputs}} --repeat 3 --mesh tp=2 {MEGATRON}"),
    ("forward pp=2 1f1b mb=4", "gpt2-logits",
     "--inputs {inputs16} --repeat 3 --mesh pp=2 --pipeline-schedule 1f1b --microbatches 4"),
    ("train", "gpt2", TRAIN),
    ("train recompute none", "gpt2", f"{TRAIN} --recompute none"),
    ("train recompute full", "gpt2", f"{TRAIN} --recompute full"),
    ("train grad-accum 2", "gpt2", f"{TRAIN} --grad-accum 2"),
    ("train tp=2", "gpt2", f"{TRAIN} --mesh tp=2 {MEGATRON}"),
    ("train tp=2 sp", "gpt2", f"{TRAIN} --mesh tp=2 {MEGATRON} --sequence-parallel"),
    ("train tp=4", "gpt2", f"{TRAIN} --mesh tp=4 {MEGATRON}"),
    ("train dp=2", "gpt2", f"{TRAIN} --mesh dp=2 {MEGATRON}"),
    ("train dp=2 zero 1", "gpt2", f"{TRAIN} --mesh dp=2 {MEGATRON} --zero 1"),
    ("train dp=2 zero 2", "gpt2", f"{TRAIN} --mesh dp=2 {MEGATRON} --zero 2"),
    ("train dp=2 zero 3", "gpt2", f"{TRAIN} --mesh dp=2 {MEGATRON} --zero 3"),
    ("train dp=2 tp=2", "gpt2", f"{TRAIN} --mesh dp=2,tp=2 {MEGATRON}"),
    ("train pp=2 gpipe mb=4", "gpt2", f"{TRAIN} --mesh pp=2 --pipeline-schedule gpipe --microbatches 4"),
    ("train pp=2 1f1b mb=4", "gpt2", f"{TRAIN} --mesh pp=2 --pipeline-schedule 1f1b --microbatches 4"),
    ("train pp=2 1f1b mb=2", "gpt2", f"{TRAIN} --mesh pp=2 --pipeline-schedule 1f1b --microbatches 2"),
    ("train pp=2 interleaved v=2 mb=4", "gpt2",
     f"{TRAIN} --mesh pp=2 --pipeline-schedule interleaved-1f1b --virtual-stages 2 --microbatches 4"),
    ("train pp=2 zb-h1 mb=4", "gpt2", f"{TRAIN} --mesh pp=2 --pipeline-schedule zb-h1 --microbatches 4"),
    ("train cp=2 allgather", "gpt2", f"{TRAIN} --mesh cp=2 {MEGATRON} --cp-attention allgather"),
    ("train cp=2 ring", "gpt2", f"{TRAIN} --mesh cp=2 {MEGATRON} --cp-attention ring"),
    ("train cp=2 ulysses", "gpt2", f"{TRAIN} --mesh cp=2 {MEGATRON} --cp-attention ulysses"),
    ("llama train", "llama", TRAIN),
    ("llama train tp=2", "llama", f"{TRAIN} --mesh tp=2 {MEGATRON}"),
    ("llama train pp=2 1f1b mb=4", "llama",
     f"{TRAIN} --mesh pp=2 --pipeline-schedule 1f1b --microbatches 4"),
]

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def measured_peaks(out):
    """Every rank's measured peak from a run's 'peak resident memory:' line."""
    line = [l for l in out.splitlines() if l.startswith("peak resident memory:")]
    if not line:
        sys.exit("the run printed no 'peak resident memory:' line:\n" + out)
    values = re.findall(r"([0-9.]+) (B|KiB|MiB|GiB|TiB)", line[-1])
    return [float(v) * UNITS[u] for v, u in values]


def measured_seconds(out, tokens_per_step):
    """A run's time: the median of its steps after the first, or --repeat's
    median forward."""
    forward = re.findall(r"^forward: median ([0-9.]+) ms", out, re.M)
    if forward:
        return float(forward[-1]) / 1e3
    steps = re.findall(r"^step (\d+): .*, ([0-9.]+) tokens/s", out, re.M)
    if len(steps) < 2:
        sys.exit("the run printed neither a forward's median nor two steps:\n" + out)
    return statistics.median(tokens_per_step / float(rate) for _, rate in steps[1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="comma-separated config names")
    ap.add_argument("--cache", default="", help="the profile cache (default: a temporary file)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    pmlir = f"{args.build}/bin"
    with tempfile.TemporaryDirectory() as tmp:
        if args.cache:
            os.environ["PMLIR_PROFILE_CACHE"] = args.cache
        models = {}
        for name, flags in (("gpt2", GPT2 + " --loss"), ("gpt2-logits", GPT2),
                            ("llama", LLAMA + " --loss")):
            models[name] = f"{tmp}/{name}.mlir"
            subprocess.run([f"{pmlir}/pmlir-gen"] + flags.split() + ["-o", models[name]], check=True)
        data = f"{tmp}/tokens.bin"
        with open(data, "wb") as f:
            f.write(b"".join(((i * 7919) % 8000).to_bytes(2, "little") for i in range(200000)))
        inputs = {}
        for batch in (4, 16):
            inputs[batch] = f"{tmp}/ids{batch}.safetensors"
            header = json.dumps({"input_ids": {"dtype": "I64", "shape": [batch, 256],
                                               "data_offsets": [0, batch * 256 * 8]}}).encode()
            with open(inputs[batch], "wb") as f:
                f.write(len(header).to_bytes(8, "little") + header +
                        b"".join(((i * 31) % 8000).to_bytes(8, "little") for i in range(batch * 256)))

        print(f"machine: {machine()}")
        print(f"models: {GPT2} (--loss to train); {LLAMA} --loss")
        print(f"{'':34} {'peak resident memory':^42} {'step time':^27}")
        print(f"{'config':34} {'predicted':>11} {'measured':>11} {'error':>7} {'run part':>9} "
              f"{'predicted':>9} {'measured':>9} {'error':>7}")
        errors, part_errors, time_errors = [], [], []
        for name, model, flags in CONFIGS:
            if only and name not in only:
                continue
            if not args.cache:
                os.environ["PMLIR_PROFILE_CACHE"] = f"{tmp}/{len(errors)}.json"
            cmd = [f"{pmlir}/pmlir-run", models[model]] + flags.format(data=data, inputs=inputs[4], inputs16=inputs[16]).split()
            out, _ = run(cmd + ["--predict", "--json"])
            prediction = json.loads(out)
            predicted = prediction["ranks"]
            out, _ = run(cmd)
            measured = measured_peaks(out)
            seconds = measured_seconds(out, prediction["tokens_per_step"])
            time_error = (prediction["step_seconds"] - seconds) / seconds
            time_errors.append(abs(time_error))
            if len(measured) != len(predicted):
                sys.exit(f"{name}: {len(predicted)} ranks predicted, {len(measured)} measured")
            worst = None
            for p, m in zip(predicted, measured):
                error = (p["peak_bytes"] - m) / m
                part = (p["peak_bytes"] - m) / (m - p["process_bytes"])
                if worst is None or abs(part) > abs(worst[3]):
                    worst = (p["peak_bytes"], m, error, part)
            errors.append(abs(worst[2]))
            part_errors.append(abs(worst[3]))
            mib = 1 << 20
            print(f"{name:34} {worst[0] / mib:8.1f} MiB {worst[1] / mib:8.1f} MiB "
                  f"{100 * worst[2]:+6.1f}% {100 * worst[3]:+8.1f}% "
                  f"{prediction['step_seconds']:8.3f}s {seconds:8.3f}s {100 * time_error:+6.1f}%",
                  flush=True)
        print(f"{len(errors)} configs; memory |error| median {100 * statistics.median(errors):.1f}%, "
              f"worst {100 * max(errors):.1f}%; of the run's part median "
              f"{100 * statistics.median(part_errors):.1f}%, worst {100 * max(part_errors):.1f}%; "
              f"time |error| median {100 * statistics.median(time_errors):.1f}%, "
              f"worst {100 * max(time_errors):.1f}%")


if __name__ == "__main__":
    main()
