"""Checks pmlir-run --predict --json against the real run of the same job.

  predict.py JOB.json JOB.out [LARGER.json LARGER.out] [--parameter-bytes N]
             [--optimizer-state-bytes N] [--input-bytes N]

For each report: the peak is the sum of its parts (less the buffers the
free heap holds, with the copies of sends held), the buffers the sum of
their sources, `peak_bytes` the largest rank's; the argument bytes, where
given, are those of the first job's rank 0. Then every rank's predicted
peak is held against the one its run measured (the run's 'peak resident
memory:' line): within 5%, as what the prediction leaves out (the
runtime's and the libraries' own buffers, glibc's chunk headers) is a few
MiB of the few hundred these jobs hold. Given the same job with a larger
batch, what the larger batch adds to each rank's predicted peak above the
process's baseline is held against what it adds to the measured one above
the same baseline, within 10%: its buffers and inputs (measured on one
thread, where the GEMM library's buffers do not grow with the batch). The
baseline, `process_bytes`, is itself measured (the resident memory once the
--predict run has compiled the program as the real run does) and differs
by 1 to 11 MiB between the two batches' compiles, which would otherwise
count as growth. Prints 'predict: ok' or exits 1 naming what differs."""
import argparse
import json
import re
import sys

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
PARTS = ["process_bytes", "parameter_bytes", "optimizer_state_bytes", "input_bytes",
         "buffer_bytes"]


def fail(message):
    print(f"predict: FAILED: {message}")
    sys.exit(1)


def measured(path):
    lines = [l for l in open(path) if l.startswith("peak resident memory:")]
    if len(lines) != 1:
        fail(f"{path}: {len(lines)} 'peak resident memory:' lines, expected 1")
    return [float(v) * UNITS[u] for v, u in re.findall(r"([0-9.]+) (B|KiB|MiB|GiB)", lines[0])]


def report(path):
    r = json.load(open(path))
    for rank in r["ranks"]:
        if rank["peak_bytes"] != (sum(rank[p] for p in PARTS) - rank["buffer_bytes_in_free_heap"]
                                  + rank["send_copy_bytes"]):
            fail(f"{path}: rank {rank['rank']}'s peak is not the sum of its parts")
        if rank["buffer_bytes"] != sum(rank["buffer_bytes_by_source"].values()):
            fail(f"{path}: rank {rank['rank']}'s buffers are not the sum of their sources")
    if r["peak_bytes"] != max(rank["peak_bytes"] for rank in r["ranks"]):
        fail(f"{path}: peak_bytes is not the largest rank's")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--parameter-bytes", type=int)
    ap.add_argument("--optimizer-state-bytes", type=int)
    ap.add_argument("--input-bytes", type=int)
    args = ap.parse_args()
    if len(args.files) not in (2, 4):
        fail("give JOB.json JOB.out [LARGER.json LARGER.out]")
    jobs = [(report(args.files[i]), measured(args.files[i + 1]))
            for i in range(0, len(args.files), 2)]
    first = jobs[0][0]["ranks"][0]
    for field, want in (("parameter_bytes", args.parameter_bytes),
                        ("optimizer_state_bytes", args.optimizer_state_bytes),
                        ("input_bytes", args.input_bytes)):
        if want is not None and first[field] != want:
            fail(f"rank 0's {field} is {first[field]}, expected {want}")
    for predicted, peaks in jobs:
        if len(predicted["ranks"]) != len(peaks):
            fail(f"{len(predicted['ranks'])} ranks predicted, {len(peaks)} measured")
        for rank, peak in zip(predicted["ranks"], peaks):
            error = (rank["peak_bytes"] - peak) / peak
            print(f"rank {rank['rank']}: {rank['peak_bytes'] / 2**20:.1f} MiB predicted, "
                  f"{peak / 2**20:.1f} MiB measured")
            if abs(error) > 0.05:
                fail(f"rank {rank['rank']}: the predicted peak is {100 * error:+.1f}% off the "
                     f"measured one")
    if len(jobs) == 2:
        (small, small_peaks), (large, large_peaks) = jobs
        for r, (ps, pl, ms, ml) in enumerate(zip(small["ranks"], large["ranks"], small_peaks,
                                                 large_peaks)):
            predicted = ((pl["peak_bytes"] - pl["process_bytes"]) -
                         (ps["peak_bytes"] - ps["process_bytes"]))
            grown = (ml - pl["process_bytes"]) - (ms - ps["process_bytes"])
            print(f"rank {r}: the larger batch adds {predicted / 2**20:.1f} MiB predicted, "
                  f"{grown / 2**20:.1f} MiB measured")
            if predicted <= 0:
                fail(f"rank {r}: the larger batch adds nothing to the predicted peak")
            if abs(grown - predicted) > 0.10 * predicted:
                fail(f"rank {r}: the measured growth is {grown / predicted - 1:+.1%} off the "
                     f"predicted one")
    print("predict: ok")


if __name__ == "__main__":
    main()
