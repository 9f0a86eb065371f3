"""Compiles each sharded program of the sweep to its sharded phase, where
pmlir-verify-spmd runs, and checks that it passes; then, for one of them,
that the same compile without the check (verify-spmd=false) prints the same
program, so the check changes nothing."""
import subprocess
import sys

out, opt = sys.argv[1], sys.argv[2]
train = "program=train recipe=megatron"
configs = [
    ("gpt2", f"{train} mesh=dp=2,tp=2"),
    ("gpt2", f"{train} mesh=dp=2,tp=2 sequence-parallel=true"),
    ("gpt2", f"{train} mesh=dp=2,tp=2 sequence-parallel=true zero=1"),
    ("gpt2", f"{train} mesh=dp=2,tp=2 zero=2"),
    ("gpt2", f"{train} mesh=dp=4 zero=3"),
    ("gpt2-odd", f"{train} mesh=tp=3"),
    ("llama", f"{train} mesh=tp=4 sequence-parallel=true"),
    ("llama", f"{train} mesh=dp=2,tp=4"),
    ("gpt2", "recipe=megatron mesh=tp=2"),
    ("llama", "recipe=megatron mesh=tp=4"),
]
for attention in ("allgather", "ring", "ulysses"):
    for layout in ("contiguous", "balanced"):
        configs.append(("gpt2", f"{train} mesh=cp=2,tp=2 context-attention={attention} "
                                f"context-layout={layout}"))
configs.append(("llama", f"{train} mesh=cp=4 context-attention=ring context-layout=balanced"))
configs.append(("llama", f"{train} mesh=cp=3 context-attention=ring context-layout=contiguous"))
for schedule, extra in (("gpipe", ""), ("1f1b", ""), ("interleaved-1f1b", " virtual-stages=2"),
                        ("zb-h1", ""), ("zb-v", " virtual-stages=2")):
    configs.append(("gpt2", f"{train} mesh=pp=2,dp=2 pipeline-schedule={schedule} "
                            f"microbatches=4{extra}"))
configs.append(("gpt2", f"{train} mesh=pp=2,dp=2,tp=2 sequence-parallel=true "
                        "pipeline-schedule=1f1b microbatches=3 zero=1"))
configs.append(("llama", f"{train} mesh=pp=2,cp=2 context-attention=ring pipeline-schedule=1f1b "
                         "microbatches=2 context-layout=balanced"))
configs.append(("gpt2", "program=train recipe=megatron mesh=pp=4 pipeline-schedule=1f1b "
                        "microbatches=4"))
configs.append(("gpt2", "recipe=megatron mesh=pp=2 pipeline-schedule=gpipe microbatches=2"))
configs.append(("gpt2", "program=train recipe=auto mesh=dp=2,tp=2"))

failed = 0
for i, (model, options) in enumerate(configs):
    result = subprocess.run(
        [opt, f"{out}/{model}.mlir", "-o", f"{out}/sweep{i}.mlir",
         f"--pmlir-compile-pipeline={options} to=sharded"],
        capture_output=True, text=True)
    if result.returncode != 0:
        failed += 1
        print(f"FAILED: {model} {options}\n{result.stderr}")
print(f"{len(configs) - failed} programs verified")

# The check leaves the program as it was.
same = subprocess.run(
    [opt, f"{out}/gpt2.mlir", "-o", f"{out}/unverified.mlir",
     f"--pmlir-compile-pipeline={configs[1][1]} to=sharded verify-spmd=false"])
if same.returncode != 0 or open(f"{out}/unverified.mlir").read() != open(f"{out}/sweep1.mlir").read():
    print("FAILED: verify-spmd=false compiles another program")
