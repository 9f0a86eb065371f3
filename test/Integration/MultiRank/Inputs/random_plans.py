"""A random differential tester: draws COUNT training plans from SEED (a
model of random shape, GPT-2 or Llama, and a mesh of at most MAX_RANKS
ranks over dp, tp, cp and pp with sequence parallelism, ZeRO, a
context-parallel attention and layout and a pipeline schedule), each valid
by construction, and runs each for two steps with pmlir-run --check, which
runs the unsharded step beside it and compares losses, gradients and the
AdamW update. The tokens are drawn from SEED too (uniform below the
smallest vocabulary): text data can hold runs of one token (a file's
leading spaces), under which some gradients vanish in exact arithmetic and
what remains is rounding, which --check's relative measure cannot judge.
Prints one line per plan, its command on a failure, and a summary; exits
non-zero if any plan failed.

usage: random_plans.py PMLIR_BIN OUTDIR SEED COUNT [MAX_RANKS]
"""
import random
import subprocess
import sys

bin_dir, out, seed, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
max_ranks = int(sys.argv[5]) if len(sys.argv) > 5 else 4
rng = random.Random(seed)
tokens = f"{out}/tokens.bin"
with open(tokens, "wb") as f:
    f.write(bytes(b for _ in range(4096) for b in rng.randrange(40).to_bytes(2, "little")))


def draw(index):
    """One plan: (pmlir-gen arguments, pmlir-run arguments, a summary)."""
    while True:
        dp, tp, cp, pp = (rng.choice(c) for c in ([1, 2], [1, 2, 3, 4], [1, 2], [1, 2]))
        if 1 < dp * tp * cp * pp <= max_ranks:
            break
    family = rng.choice(["gpt2", "llama"])
    heads = tp * rng.choice([1, 2])
    attention = rng.choice(["allgather", "ring", "ulysses"]) if cp > 1 else None
    # Ulysses splits each rank's query and key/value heads over cp.
    ulysses = attention == "ulysses"
    if ulysses and (heads // tp) % cp:
        heads *= cp
    head_dim = rng.choice([4, 8])
    hidden = heads * head_dim
    layers = rng.choice([1, 2, 3]) if pp == 1 else rng.choice([2, 3, 4])
    layout = rng.choice(["contiguous", "balanced"]) if cp > 1 else None
    # Sequence parallelism splits the sequence over tp, as Megatron's.
    sequence_parallel = tp > 1 and rng.random() < 0.6
    seq = 2 * cp * rng.choice([2, 3, 4]) * (tp if sequence_parallel else 1)
    batch = dp * rng.choice([1, 2])
    vocab = rng.randint(40, 100)
    gen = [family, "--layers", str(layers), "--hidden", str(hidden), "--heads", str(heads),
           "--vocab", str(vocab), "--seq", str(seq), "--batch", str(batch), "--loss"]
    if family == "gpt2":
        gen += ["--max-positions", str(seq)]
    else:
        # kv heads that tp divides, or that divide tp (replicated kv heads).
        kv = rng.choice([k for k in range(1, heads + 1)
                         if heads % k == 0 and (k % (tp * cp) == 0 if ulysses
                                                else k % tp == 0 or tp % k == 0)])
        gen += ["--kv-heads", str(kv), "--ffn", str(8 * rng.randint(2, 6))]
    mesh = ",".join(f"{name}={size}" for name, size in
                    (("dp", dp), ("tp", tp), ("cp", cp), ("pp", pp)) if size > 1)
    run = ["--train", "--steps", "2", "--data", tokens, "--lr", "3e-3", "--mesh", mesh,
           "--recipe", "megatron", "--check"]
    if sequence_parallel:
        run.append("--sequence-parallel")
    if dp > 1:
        zero = rng.choice([0, 1, 2, 3])
        if zero:
            run += ["--zero", str(zero)]
    if cp > 1:
        run += ["--cp-attention", attention, "--cp-layout", layout]
    if pp > 1:
        schedules = ["gpipe", "1f1b", "zb-h1"] + (["interleaved-1f1b", "zb-v"] if layers >= 4 else [])
        schedule = rng.choice(schedules)
        run += ["--pipeline-schedule", schedule, "--microbatches", str(rng.choice([1, 2, 3]))]
        if schedule in ("interleaved-1f1b", "zb-v"):
            run += ["--virtual-stages", "2"]
    else:
        # (ring attention keeps no probabilities: recompute=none is refused)
        run += ["--recompute", rng.choice(["selective", "full"] +
                                          (["none"] if attention != "ring" else []))]
    return gen, run, f"{family} {' '.join(gen[1:])} | {' '.join(run[7:])}"


failures = 0
for i in range(count):
    gen, run, summary = draw(i)
    model = f"{out}/plan{i}.mlir"
    subprocess.run([f"{bin_dir}/pmlir-gen", *gen, "-o", model], check=True)
    result = subprocess.run([f"{bin_dir}/pmlir-run", model, *run], capture_output=True, text=True)
    verdicts = [line for line in result.stdout.splitlines()
                if line.startswith("check:") and line.endswith((": ok", ": FAILED"))]
    ok = result.returncode == 0 and len(verdicts) == 3 and all(v.endswith(": ok") for v in verdicts)
    print(f"plan {i}: {'ok' if ok else 'FAILED'}: {summary}")
    if not ok:
        failures += 1
        print("  pmlir-gen " + " ".join(gen) + f" -o {model}")
        print("  pmlir-run " + model + " " + " ".join(run))
        print("  " + "\n  ".join(line for line in (result.stdout + result.stderr).splitlines()
                                 if "error" in line or "FAILED" in line))
print(f"seed {seed}: {count - failures} of {count} plans equal to the unsharded run")
sys.exit(1 if failures else 0)
