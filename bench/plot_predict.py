#!/usr/bin/env python3
"""Pictures of the predictions (matplotlib, Debian's python3-matplotlib).

    plot_predict.py validation PREDICT.txt OUT.png
        predicted against measured peak memory and step time over the jobs
        of bench/predict.py, from its printed table;
    plot_predict.py ranks PREDICTION.json OUT.png
        one plan's predicted memory per rank, stacked by what holds it, and
        its step per rank by where the time goes, from
        `pmlir-run ... --predict --json`;
    plot_predict.py timeline PREDICTION.json OUT.png [TRACE.json]
        one plan's predicted step as each rank runs it (computing,
        communicating, waiting: the report's `timeline`), and with a
        `pmlir-run --trace` of the same job, its last traced step below,
        on the same time axis.

Run from the repository root: /usr/bin/python3 bench/plot_predict.py ...
"""
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
ROW = re.compile(r"^(.+?)\s+([0-9.]+) (B|KiB|MiB|GiB)\s+([0-9.]+) (B|KiB|MiB|GiB)\s+"
                 r"[-+0-9.]+%\s+[-+0-9.]+%\s+([0-9.]+)s\s+([0-9.]+)s\s+[-+0-9.]+%$")


def validation(table, out):
    rows = []
    for line in open(table):
        m = ROW.match(line.rstrip())
        if m:
            rows.append((m.group(1).strip(), float(m.group(2)) * UNITS[m.group(3)] / (1 << 20),
                         float(m.group(4)) * UNITS[m.group(5)] / (1 << 20),
                         float(m.group(6)), float(m.group(7))))
    if not rows:
        sys.exit(f"{table}: no row of bench/predict.py's table")
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, (predicted, measured, unit, title, band) in zip(axes, (
            (1, 2, "MiB", "peak resident memory, heaviest rank", 0.15),
            (3, 4, "s", "step time", 0.25))):
        xs = [r[measured] for r in rows]
        ys = [r[predicted] for r in rows]
        low, high = min(xs + ys) * 0.8, max(xs + ys) * 1.2
        ax.plot([low, high], [low, high], color="black", linewidth=1)
        ax.fill_between([low, high], [low * (1 - band), high * (1 - band)],
                        [low * (1 + band), high * (1 + band)], color="grey", alpha=0.2,
                        label=f"±{int(band * 100)}% (the worst-case target)")
        ax.scatter(xs, ys, s=18, color="tab:blue")
        for r in rows:
            if abs(r[predicted] - r[measured]) > band * r[measured]:
                ax.annotate(r[0], (r[measured], r[predicted]), fontsize=7,
                            xytext=(4, -8), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_xlabel(f"measured ({unit})")
        ax.set_ylabel(f"predicted ({unit})")
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(f"pmlir-run --predict against the run, {len(rows)} jobs (bench/predict.py)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def ranks(report_path, out):
    report = json.load(open(report_path))
    ranks = report["ranks"]
    mib = 1 << 20
    memory = [("process", lambda r: r["process_bytes"]),
              ("parameters", lambda r: r["parameter_bytes"]),
              ("optimizer state", lambda r: r["optimizer_state_bytes"]),
              ("inputs", lambda r: r["input_bytes"])]
    sources = sorted({s for r in ranks for s in r["buffer_bytes_by_source"]})
    for s in sources:
        memory.append((f"buffers: {s}", lambda r, s=s: r["buffer_bytes_by_source"].get(s, 0)))
    memory.append(("copies of sends held", lambda r: r.get("send_copy_bytes", 0)))
    # Drawn last, downwards from the top: the buffers the free heap holds
    # are counted in the process already.
    memory.append(("less: buffers in the free heap", lambda r: -r["buffer_bytes_in_free_heap"]))
    time = [("GEMMs", "gemm_seconds"), ("loops", "loop_seconds"), ("copies", "copy_seconds"),
            ("communication", "communication_seconds"), ("waiting", "waiting_seconds")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    x = range(len(ranks))
    bottom = [0.0] * len(ranks)
    for name, value in memory:
        heights = [value(r) / mib for r in ranks]
        if not any(heights):
            continue
        left.bar(x, heights, bottom=bottom, label=name)
        bottom = [b + h for b, h in zip(bottom, heights)]
    left.scatter(x, [r["peak_bytes"] / mib for r in ranks], color="black", marker="_", s=400,
                 label="predicted peak", zorder=3)
    left.set_xticks(list(x), [f"rank {r['rank']}" for r in ranks])
    left.set_ylabel("MiB")
    left.set_title("predicted peak resident memory")
    left.legend(fontsize=7)
    bottom = [0.0] * len(ranks)
    for name, key in time:
        heights = [r[key] for r in ranks]
        right.bar(x, heights, bottom=bottom, label=name)
        bottom = [b + h for b, h in zip(bottom, heights)]
    right.set_xticks(list(x), [f"rank {r['rank']}" for r in ranks])
    right.set_ylabel("s")
    right.set_title(f"predicted step: {report['step_seconds']:.3f} s")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


ACTIVITY_COLOURS = {"compute": "#4285f4", "communication": "#a0a0a0", "waiting": "#f4f4f4"}
WORK = "FBIW"


def traced_step(trace_path):
    """Each rank's last traced step: [(start, end, activity)] from its start."""
    by_rank = benchlib.spans_by_rank(json.load(open(trace_path))["traceEvents"])
    steps = {}
    for rank, events in sorted(by_rank.items()):
        host = [e for e in events if e["cat"] == "host" and e["name"].startswith("step")]
        if not host:
            sys.exit(f"{trace_path}: rank {rank} traced no step")
        step = max(host, key=lambda e: e["ts"])
        lo, hi = step["ts"], step["ts"] + step["dur"]
        steps[rank] = [((e["ts"] - lo) * 1e-6, (e["ts"] + e["dur"] - lo) * 1e-6,
                        "compute" if e["cat"] in WORK else "communication")
                       for e in events
                       if e["cat"] != "host" and lo <= e["ts"] and e["ts"] + e["dur"] <= hi]
        steps[rank].append((0, (hi - lo) * 1e-6, "step"))
    return steps


def timeline(report_path, out, trace_path=None):
    report = json.load(open(report_path))
    predicted = {r["rank"]: [tuple(s) for s in r["timeline"]] for r in report["ranks"]}
    panels = [("predicted (pmlir-run --predict)", predicted, report["step_seconds"])]
    if trace_path:
        traced = traced_step(trace_path)
        length = max(end for spans in traced.values() for _, end, what in spans if what == "step")
        panels.append(("measured (pmlir-run --trace, the last step)", traced, length))
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 1.2 + 1.1 * len(predicted) *
                                                      len(panels)), sharex=True, squeeze=False)
    for ax, (title, spans, length) in zip(axes[:, 0], panels):
        ranks = sorted(spans)
        for row, rank in enumerate(ranks):
            for activity, colour in ACTIVITY_COLOURS.items():
                bars = [(start, end - start) for start, end, what in spans[rank]
                        if what == activity]
                if bars:
                    ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=colour,
                                   edgecolors="none",
                                   label=activity if row == 0 else None)
        ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks])
        ax.invert_yaxis()
        ax.set_title(f"{title}: step {length:.3f} s", fontsize=10)
        ax.axvline(length, color="black", linewidth=0.8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=8, ncol=3)
    note = "; a traced receive's span holds its wait" if trace_path else ""
    axes[-1, 0].set_xlabel(f"s from the step's start{note}")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(out, dpi=110)


def main():
    kinds = {"validation": validation, "ranks": ranks, "timeline": timeline}
    if len(sys.argv) < 4 or sys.argv[1] not in kinds or len(sys.argv) > (
            5 if sys.argv[1] == "timeline" else 4):
        sys.exit(__doc__)
    kinds[sys.argv[1]](*sys.argv[2:])


if __name__ == "__main__":
    main()
