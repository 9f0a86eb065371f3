#!/usr/bin/env python3
"""Is pmlir-plan's choice the fastest plan that fits? A 4-rank problem whose
every candidate runs on this machine.

pmlir-plan searches the layouts of a GPT-2 training step on 4 devices and
predicts its best plans under each recomputation mode (--profile cpu: every
rank's program compiled and priced on rates measured on this host). This
script then runs every predicted plan that fits the cap (its printed
command, --steps 4 on a token file), in rounds that go over the plans in
turn (a slow minute of the host then touches every plan alike), and prints
per plan the predicted and measured step (the median of its steps after the
first, in each round), the predicted and measured peak resident memory of
the heaviest rank, and the order. The measured noise is the largest
difference between a plan's rounds; the choice is confirmed when its
measured step is within that noise of the measured fastest.

Run from the repository root after building:
  /usr/bin/python3 bench/plan_check.py [--build build] [--rounds 2] [--top 5]
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import machine, run  # noqa: E402
from predict import measured_peaks, measured_seconds  # noqa: E402

MODEL = ("gpt2 --layers 4 --hidden 256 --heads 4 --vocab 8000 --seq 128 --batch 4 "
         "--max-positions 128 --loss")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--top", type=int, default=5, help="layouts pmlir-plan predicts")
    ap.add_argument("--cap", default="2GiB", help="pmlir-plan's --memory-cap")
    args = ap.parse_args()
    bin_dir = os.path.abspath(f"{args.build}/bin")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PMLIR_PROFILE_CACHE"] = f"{tmp}/profile.json"
        model = f"{tmp}/gpt2.mlir"
        subprocess.run([f"{bin_dir}/pmlir-gen"] + MODEL.split() + ["-o", model], check=True)
        data = f"{tmp}/tokens.bin"
        with open(data, "wb") as f:
            f.write(b"".join(((i * 7919) % 8000).to_bytes(2, "little") for i in range(200000)))
        plan_cmd = [f"{bin_dir}/pmlir-plan", model, "--devices", "4", "--train",
                    "--microbatches", "2", "--top", str(args.top), "--profile", "cpu",
                    "--memory-cap", args.cap, "--json", f"{tmp}/plans.json"]
        out, _ = run(plan_cmd)
        print(f"machine: {machine()}")
        print(f"model: {MODEL}; a step of 2 microbatches on 4 ranks")
        print("plan: " + " ".join(shlex.quote(a) for a in plan_cmd[1:]).replace(tmp, "$T"))
        print(out[out.index("predicted by compiling"):].rstrip().replace(tmp, "$T"))
        plans = [p for p in json.load(open(f"{tmp}/plans.json"))["predicted"] if p["fits"]]
        if not plans:
            sys.exit("no predicted plan fits")

        measured = [[] for _ in plans]
        peaks = [0.0 for _ in plans]
        for _ in range(args.rounds):
            for i, p in enumerate(plans):
                cmd = shlex.split(p["command"])
                cmd[0] = f"{bin_dir}/pmlir-run"
                out, _ = run(cmd + ["--data", data, "--steps", "4"])
                tokens = p["tokens_per_second"] * p["step_seconds"]
                measured[i].append(measured_seconds(out, tokens))
                peaks[i] = max(peaks[i], max(measured_peaks(out)))

        mib = 1 << 20
        means = [statistics.mean(m) for m in measured]
        order = sorted(range(len(plans)), key=lambda i: means[i])
        noise = max((max(m) - min(m)) / min(m) for m in measured)
        print(f"\n{'#':>2} {'plan':44} {'predicted':>9} {'measured (rounds)':>24} "
              f"{'rank':>4} {'peak predicted':>14} {'measured':>9}")
        errors = []
        for i, p in enumerate(plans):
            name = f"{p['mesh']} {p['schedule']} v={p['virtual_stages']} {p['recompute']}"
            rounds = " ".join(f"{s:.3f}" for s in measured[i])
            errors.append(abs(p["step_seconds"] - means[i]) / means[i])
            print(f"{i + 1:>2} {name:44} {p['step_seconds']:8.3f}s {rounds:>23}s "
                  f"{order.index(i) + 1:>4} {p['peak_bytes'] / mib:10.1f} MiB "
                  f"{peaks[i] / mib:5.1f} MiB")
        fastest = order[0]
        gap = (means[0] - means[fastest]) / means[fastest]
        print(f"\nstep time |error| median {100 * statistics.median(errors):.1f}%, "
              f"worst {100 * max(errors):.1f}%; measured noise (a plan's rounds) up to "
              f"{100 * noise:.1f}%")
        verdict = ("the choice is the measured fastest" if fastest == 0 else
                   f"the choice is {100 * gap:.1f}% slower than the measured fastest (#{fastest + 1})"
                   + (", within the noise" if gap <= noise else ", beyond the noise"))
        print(verdict)


if __name__ == "__main__":
    main()
