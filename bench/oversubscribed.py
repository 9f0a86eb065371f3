#!/usr/bin/env python3
"""A tensor-parallel forward on a busy host: pmlir-run on tp=2 against one
rank, on a quiet machine and with background load, with the runtime's waits
busy-polling (MPI's own) or sleeping between polls.

  /usr/bin/python3 bench/oversubscribed.py [--build build] [--rounds 3]
      [--repeat 5] [--load 2]

The model is a GPT-2 of 4 layers, hidden 512, 8 heads, vocabulary 8192,
batch 4 x seq 128, seeded weights; every rank gets one GEMM thread. Load is
`--load` busy processes (one per core by default), the situation of a test
suite that runs two multi-rank tests at once. For each setting the table
gives tokens/s (median over rounds of pmlir-run --repeat's median) and the
ratio of tp=2 to the single rank measured in the same round.
PMLIR_RT_SPIN_US picks the wait: -1 for MPI's blocking calls (the runtime's
default), else the non-blocking call polled busily for that many
microseconds and with 20-100 us sleeps after (100 is the default where a host
runs more ranks than cores).
Prints Markdown for docs/performance.md.
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import tempfile

WAITS = {"-1": "MPI's blocking calls (default)", "0": "sleeps between polls at once",
         "100": "busy 100 us, then sleeps (default when ranks > cores)",
         "1000": "busy 1 ms, then sleeps"}
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def tokens_per_second(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"([0-9.]+) tokens/s", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--load", type=int, default=os.cpu_count())
    args = ap.parse_args()
    gen = os.path.join(args.build, "bin", "pmlir-gen")
    run = os.path.join(args.build, "bin", "pmlir-run")
    scratch = tempfile.mkdtemp()
    model = os.path.join(scratch, "gpt2.mlir")
    subprocess.run([gen, "gpt2", "--layers", "4", "--hidden", "512", "--heads", "8",
                    "--vocab", "8192", "--seq", "128", "--batch", "4", "-o", model], check=True)
    ids = os.path.join(scratch, "ids.safetensors")
    with open(ids, "wb") as f:
        import json
        import struct
        header = json.dumps({"input_ids": {"dtype": "I64", "shape": [4, 128],
                                           "data_offsets": [0, 4 * 128 * 8]}}).encode()
        header += b" " * ((8 - len(header) % 8) % 8)
        f.write(struct.pack("<Q", len(header)) + header +
                struct.pack(f"<{4 * 128}q", *[(7 * k) % 8192 for k in range(4 * 128)]))
    single = [run, model, "--inputs", ids, "--threads", "1", "--repeat", str(args.repeat)]
    sharded = single + ["--mesh", "tp=2", "--recipe", "megatron"]

    rows = []
    for loaded in (False, True):
        load = []
        if loaded:
            load = [subprocess.Popen(["python3", "-c", "while True: pass"])
                    for _ in range(args.load)]
        try:
            for spin in ("-1", "0", "100", "1000"):
                env = dict(os.environ, PMLIR_RT_SPIN_US=spin,
                           OMPI_MCA_btl_vader_single_copy_mechanism="none")
                ones, twos, ratios = [], [], []
                for _ in range(args.rounds):
                    one = tokens_per_second(single, env)
                    two = tokens_per_second(sharded, env)
                    ones.append(one)
                    twos.append(two)
                    ratios.append(two / one)
                rows.append((f"{args.load} busy processes" if loaded else "quiet",
                             WAITS[spin],
                             statistics.median(ones), statistics.median(twos),
                             statistics.median(ratios), min(ratios), max(ratios)))
        finally:
            for p in load:
                p.kill()
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"GPT-2 4 layers, hidden 512, batch 4 x seq 128, one GEMM thread per rank, "
          f"{args.rounds} rounds of --repeat {args.repeat}\n")
    print("| host | waits | 1 rank tokens/s | tp=2 tokens/s | tp=2 / 1 rank (median, min-max) |")
    print("|---|---|---|---|---|")
    for host, waits, one, two, ratio, lo, hi in rows:
        print(f"| {host} | {waits} | {one:,.0f} | {two:,.0f} | {ratio:.2f} ({lo:.2f}-{hi:.2f}) |")


if __name__ == "__main__":
    main()
