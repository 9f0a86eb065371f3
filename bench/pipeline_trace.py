#!/usr/bin/env python3
"""The pipeline bubble three ways: measured from pmlir-run --trace, simulated
from the schedule with the measured action times, and the closed-form
formula. Each schedule trains a GPT-2-shaped model for a few steps on pp
ranks of this machine; the last step's trace gives each rank's busy time
(its F, B, I and W spans) inside the window from the first span's start to
the last one's end, and the bubble is the idle share of that window, averaged
over the ranks. The simulator (pmlir-pipeline-report) runs the same schedule
with F, B (or I and W) set to the mean measured spans, and again with
F = I = W. The formulas: GPipe and 1F1B (p-1)/(m+p-1), interleaved
(p-1)/(vm+p-1), ZB-H1 with F = I = W (a third of 1F1B's idle time); ZB-V
(two stages a rank in a V) has none, its F = I = W column is the
simulator's.

Also draws each trace's last step as a PNG (ranks x time; F blue, B red, I
orange, W green, communication grey below), with no plotting library:
SCHEDULE.png files next to the traces.

Run from the repository root after building:
  /usr/bin/python3 bench/pipeline_trace.py [--ranks 2] [--microbatches 8] [--out DIR]
  /usr/bin/python3 bench/pipeline_trace.py --draw TRACE.json OUT.png
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

BUILD = "build/bin"
COLOURS = {"F": (66, 133, 244), "B": (219, 68, 55), "I": (244, 160, 0), "W": (15, 157, 88)}
COMMUNICATION = (160, 160, 160)


def write_png(path, width, height, rects):
    """A white image with filled rectangles (x0, y0, x1, y1, rgb) as PNG."""
    pixels = [bytearray(b"\xff" * (3 * width)) for _ in range(height)]
    for x0, y0, x1, y1, rgb in rects:
        for y in range(max(0, y0), min(height, y1)):
            row = pixels[y]
            for x in range(max(0, x0), min(width, x1)):
                row[3 * x:3 * x + 3] = bytes(rgb)
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0,
                                                               0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def last_step(trace):
    """The spans of each rank in its last training step: {rank: [span]}."""
    spans = {}
    for rank, events in benchlib.spans_by_rank(trace["traceEvents"]).items():
        steps = [e for e in events if e["cat"] == "host" and e["name"].startswith("step")]
        step = max(steps, key=lambda e: e["ts"])
        lo, hi = step["ts"], step["ts"] + step["dur"]
        spans[rank] = [e for e in events
                       if e["cat"] != "host" and lo <= e["ts"] and e["ts"] + e["dur"] <= hi]
    return spans


def measured_bubble(spans):
    work = {r: [e for e in s if e["cat"] in "FBIW"] for r, s in spans.items()}
    start = min(e["ts"] for s in work.values() for e in s)
    end = max(e["ts"] + e["dur"] for s in work.values() for e in s)
    busy = {r: sum(e["dur"] for e in s) for r, s in work.items()}
    window = end - start
    return sum(1 - b / window for b in busy.values()) / len(busy), window, work


def draw(path, spans, width=1200, lane=40):
    work = [e for s in spans.values() for e in s]
    t0 = min(e["ts"] for e in work)
    t1 = max(e["ts"] + e["dur"] for e in work)
    scale = (width - 20) / (t1 - t0)
    ranks = sorted(spans)
    rects = []
    for row, rank in enumerate(ranks):
        y = 10 + row * (lane + 10)
        for e in spans[rank]:
            work = e["cat"] in COLOURS
            x0 = 10 + int((e["ts"] - t0) * scale)
            x1 = max(x0 + 1, 10 + int((e["ts"] + e["dur"] - t0) * scale))
            top = y if work else y + lane - 6
            rects.append((x0, top, x1 - 1 if x1 - x0 > 2 else x1, y + lane,
                          COLOURS[e["cat"]] if work else COMMUNICATION))
    write_png(path, width, 20 + len(ranks) * (lane + 10), rects)


def simulated(model, schedule, p, v, m, costs):
    """pmlir-pipeline-report on the same schedule with the measured costs."""
    gen = subprocess.run([f"{BUILD}/pmlir-gen"] + model.split(), check=True,
                         capture_output=True, text=True).stdout
    options = [f"forward={costs['F']}", f"backward-input={costs['I']}",
               f"backward-weight={costs['W']}"]
    cmd = [f"{BUILD}/pmlir-opt", "--pmlir-autodiff",
           f"--pmlir-pipeline-partition=entry=grad stages={p * v}",
           f"--pmlir-pipeline-schedule=schedule={schedule} microbatches={m} ranks={p} "
           f"virtual-stages={v}",
           "--pmlir-pipeline-report=output=- " + " ".join(options), "-o", "/dev/null"]
    out = subprocess.run(cmd, input=gen, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--out", default=None)
    parser.add_argument("--draw", nargs=2, metavar=("TRACE", "PNG"),
                        help="only draw the last step of a pmlir-run --trace file")
    args = parser.parse_args()
    if args.draw:
        with open(args.draw[0]) as f:
            draw(args.draw[1], last_step(json.load(f)))
        return
    p, m = args.ranks, args.microbatches
    out = args.out or tempfile.mkdtemp(prefix="pmlir-pipeline-")
    os.makedirs(out, exist_ok=True)
    model = (f"gpt2 --layers {args.layers} --hidden 256 --heads 4 --vocab 1024 --seq 128 "
             f"--batch 2 --max-positions 128 --loss")
    model_path = os.path.join(out, "model.mlir")
    subprocess.run([f"{BUILD}/pmlir-gen"] + model.split() + ["-o", model_path], check=True)
    tokens = os.path.join(out, "tokens.bin")
    rng = random.Random(0)
    with open(tokens, "wb") as f:
        f.write(struct.pack(f"<{1 << 16}H", *(rng.randrange(1024) for _ in range(1 << 16))))

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_NUM_THREADS="1")
    rows = []
    for schedule, v in [("gpipe", 1), ("1f1b", 1), ("interleaved-1f1b", 2), ("zb-h1", 1),
                        ("zb-v", 2)]:
        trace_path = os.path.join(out, f"{schedule}.json")
        cmd = [f"{BUILD}/pmlir-run", model_path, "--train", "--steps", "3", "--data", tokens,
               "--mesh", f"pp={p}", "--threads", "1", "--pipeline-schedule", schedule,
               "--microbatches", str(m), "--virtual-stages", str(v), "--trace", trace_path]
        benchlib.run(cmd, env=env)
        with open(trace_path) as f:
            spans = last_step(json.load(f))
        bubble, window, work = measured_bubble(spans)
        durations = {k: [e["dur"] for s in work.values() for e in s if e["cat"] == k]
                     for k in "FBIW"}
        mean = {k: sum(d) / len(d) for k, d in durations.items() if d}
        costs = {"F": mean["F"], "I": mean.get("I", mean.get("B", 0) / 2),
                 "W": mean.get("W", mean.get("B", 0) / 2)}
        sim = simulated(model, schedule, p, v, m, costs)
        equal = simulated(model, schedule, p, v, m, {"F": 1, "I": 1, "W": 1})
        draw(os.path.join(out, f"{schedule}.png"), spans)
        rows.append((schedule, v, bubble, sim["bubble"], equal["bubble"],
                     equal.get("formula_bubble"), window / 1e3, mean))

    print(f"# {benchlib.machine()}")
    print(f"# {model}, pp={p}, {m} microbatches, 1 thread a rank; traces and PNGs in {out}")
    print("| schedule | v | bubble, traced | simulated (traced F, B/I, W) | simulated (F=I=W) "
          "| formula (F=I=W) | step's pipeline window, ms | mean F / B / I / W, ms |")
    print("|---|---|---|---|---|---|---|---|")
    for schedule, v, traced, sim, equal, formula, window, mean in rows:
        spans = " / ".join(f"{mean[k] / 1e3:.2f}" if k in mean else "-" for k in "FBIW")
        formula_text = f"{formula:.3f}" if formula is not None else "-"
        print(f"| {schedule} | {v} | {traced:.3f} | {sim:.3f} | {equal:.3f} | {formula_text} "
              f"| {window:.1f} | {spans} |")


if __name__ == "__main__":
    main()
