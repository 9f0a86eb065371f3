#!/usr/bin/env python3
"""Predicted against measured peak resident memory, per rank, over the
parallelisms pmlir-run has.

Each config runs twice: `pmlir-run ... --predict --json` (the job compiled as
it would run, each rank's peak predicted: its process after the compile, its
arguments, its program's buffers at their heaviest point) and the real run,
whose last line gives each rank's measured peak (VmHWM once its steps are
done). Per config it prints the heaviest rank's predicted and measured peak,
the error against the whole peak, and the error against the run's own part
(the measured peak less the process's baseline, which --predict measured on
itself). Every rank is compared, and the worst rank's errors are reported.

Run from the repository root after building:
  /usr/bin/python3 bench/predict_memory.py [--build build] [--only NAME,...]
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

TRAIN = "--train --steps 2 --data {data}"
MEGATRON = "--recipe megatron"

# name, model, flags
CONFIGS = [
    ("forward", "gpt2-logits", "--inputs {inputs}"),
    ("forward tp=2", "gpt2-logits", f"--inputs {{inputs}} --mesh tp=2 {MEGATRON}"),
    ("forward pp=2 1f1b mb=4", "gpt2-logits",
     "--inputs {inputs16} --mesh pp=2 --pipeline-schedule 1f1b --microbatches 4"),
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="comma-separated config names")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    pmlir = f"{args.build}/bin"
    with tempfile.TemporaryDirectory() as tmp:
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
        print(f"{'config':34} {'predicted':>11} {'measured':>11} {'error':>7} {'run part':>9}")
        errors, part_errors = [], []
        for name, model, flags in CONFIGS:
            if only and name not in only:
                continue
            cmd = [f"{pmlir}/pmlir-run", models[model]] + flags.format(data=data, inputs=inputs[4], inputs16=inputs[16]).split()
            out, _ = run(cmd + ["--predict", "--json"])
            predicted = json.loads(out)["ranks"]
            out, _ = run(cmd)
            measured = measured_peaks(out)
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
                  f"{100 * worst[2]:+6.1f}% {100 * worst[3]:+8.1f}%", flush=True)
        print(f"{len(errors)} configs; |error| median {100 * statistics.median(errors):.1f}%, "
              f"worst {100 * max(errors):.1f}%; of the run's part median "
              f"{100 * statistics.median(part_errors):.1f}%, worst {100 * max(part_errors):.1f}%")


if __name__ == "__main__":
    main()
