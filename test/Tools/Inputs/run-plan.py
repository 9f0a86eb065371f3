"""Runs the pmlir-run command pmlir-plan printed for one plan, with
--comm-report, and checks that the program's collectives on rank 0 move
what the plan says its first pipeline rank's do: the bytes per group of
mesh axes.

    run-plan.py PLANS.json INDEX REPORT.json [pmlir-run flags...]
"""
import json
import shlex
import subprocess
import sys

plans_path, index, report_path, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
plan = json.load(open(plans_path))["plans"][index]
if not plan["compiled"]:
    sys.exit(f"plan {index} ({plan['mesh']}) was not compiled")
command = shlex.split(plan["command"]) + extra + ["--comm-report", report_path]
run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
sys.stdout.write(run.stdout)
if run.returncode != 0:
    sys.exit(f"{plan['command']} failed ({run.returncode})")
report = json.load(open(report_path))["per_axis"]
program = {axes: t["bytes_per_rank"] for axes, t in report.items() if t["bytes_per_rank"] > 0}
predicted = {axes: c["bytes"] for axes, c in plan["comm_per_pipeline_rank"][0].items()
             if c["bytes"] > 0}
print(f"plan {plan['mesh']} {plan['schedule']}: predicted {sorted(predicted.items())}, "
      f"program {sorted(program.items())}")
if predicted != program:
    sys.exit("the plan's bytes are not the program's")
print("comm bytes: plan == program")
