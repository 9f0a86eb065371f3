"""Compares the peak memory pmlir-auto-sharding predicts for a training step
with the bytes its compiled rank programs hold.

    auto_sharding_memory.py PMLIR_OPT PMLIR_RUN MODEL.mlir OUTDIR MESH:SCHEDULE:MICROBATCHES[:V[:BUDGET[:CLIP]]]...

SCHEDULE "none" is a step without a pipeline, accumulating over
MICROBATCHES (--grad-accum); CLIP clips the gradients to that global norm.
For each job: the pass's report (pmlir-compile-pipeline's
auto-sharding-report) and pmlir-run --predict --json of the same job. A
rank program holds its parameters, optimizer state, inputs, buffers
(activations, gradients, their running sums), send copies and results; the
heaviest rank's are the program's peak. The prediction is a model of what
the buffers hold (the auto-sharder counts values, not the allocator's
reuse of them), so it is held to within TOLERANCE of the program's, not to
the byte. Prints one line per job and "auto-sharding memory: ok" where all are.
"""
import json
import subprocess
import sys

TOLERANCE = 0.10

opt, run, model, out = sys.argv[1:5]
failed = False
for job in sys.argv[5:]:
    mesh, schedule, microbatches, *rest = job.split(":")
    virtual = rest[0] if rest else "1"
    budget = rest[1] if len(rest) > 1 else "1GiB"
    clip = rest[2] if len(rest) > 2 else "0"
    report = f"{out}/{job.replace(':', '-').replace(',', '-').replace('=', '')}.json"
    if schedule == "none":
        steps = {"grad-accum": microbatches}
    else:
        steps = {"pipeline-schedule": schedule, "microbatches": microbatches,
                 "virtual-stages": virtual}
    phases = ["program=train", f"max-grad-norm={clip}",
              *(f"{k}={v}" for k, v in steps.items()), f"mesh={mesh}",
              "recipe=auto", f"memory-budget={budget}", "to=sharded",
              f"auto-sharding-report={report}"]
    subprocess.run([opt, model, "--pmlir-compile-pipeline=" + " ".join(phases), "-o",
                    f"{out}/sharded.mlir"], check=True)
    predicted = json.load(open(report))["functions"]["train_step"]["peak_memory_bytes"]
    flags = ["--train", "--mesh", mesh, "--recipe", "auto", "--memory-budget", budget,
             "--clip-grad-norm", clip,
             *(x for k, v in steps.items() for x in (f"--{k}", v))]
    ranks = json.loads(subprocess.run([run, model, *flags, "--predict", "--json"], check=True,
                                      stdout=subprocess.PIPE, text=True).stdout)["ranks"]
    held = [r["parameter_bytes"] + r["optimizer_state_bytes"] + r["input_bytes"] +
            r["buffer_bytes"] + r["send_copy_bytes"] + r["result_bytes"] for r in ranks]
    ratio = predicted / max(held)
    ok = abs(ratio - 1) <= TOLERANCE
    failed |= not ok
    print(f"{job}: predicted {predicted:.0f} bytes, the heaviest rank program holds {max(held)} "
          f"(ranks {held}): {ratio:.3f} {'ok' if ok else 'off by more than 10%'}")
print("auto-sharding memory: " + ("off" if failed else "ok"))
sys.exit(1 if failed else 0)
