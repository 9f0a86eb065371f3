"""What the CPU benchmarks share: running a child for its output and peak
memory, the machine they ran on, the token file a training run reads, and
the thread settings PyTorch gets."""
import json
import os
import platform
import random
import re
import struct
import subprocess
import sys
import tempfile


def run(cmd, env=None):
    """Runs cmd to completion; returns (stdout, peak RSS bytes of the child)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        err.seek(0)
        if status != 0:
            sys.exit(f"failed (status {status}): {' '.join(cmd)}\n{err.read()}")
        return out.read(), usage.ru_maxrss * 1024


def with_mesh(pmlir_opt, src, out, mesh):
    """Writes the model at `src` to `out` with the mesh `mesh` ("dp = 2, tp = 4")
    on it, as pmlir-attach-mesh puts it (pmlir-gen's modules carry attributes
    of their own, so no text edit of `module {` can)."""
    proc = subprocess.run([pmlir_opt, src, f"--pmlir-attach-mesh=mesh={mesh.replace(' ', '')}",
                           "-o", out], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"attaching the mesh {mesh} to {src} failed:\n{proc.stderr}")


def machine():
    """The CPU's model name, cores and kernel, for the table's heading."""
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


# GPT-2 small, the model of the CPU tables.
GPT2_SMALL = dict(layers=12, hidden=768, heads=12, vocab=50257, max_positions=1024)


def gpt2_small_args():
    """pmlir-gen gpt2's options for GPT-2 small (the shape and --loss are the caller's)."""
    c = GPT2_SMALL
    return ["--layers", str(c["layers"]), "--hidden", str(c["hidden"]), "--heads",
            str(c["heads"]), "--vocab", str(c["vocab"]), "--max-positions",
            str(c["max_positions"])]


def write_tokens(path, count, vocab):
    """`count` random token ids below `vocab` (seeded: the same file every
    run) as a flat uint16 file, nanoGPT's .bin, which pmlir-run --data reads."""
    rng = random.Random(1)
    with open(path, "wb") as f:
        f.write(struct.pack(f"<{count}H", *(rng.randrange(vocab) for _ in range(count))))


def add_trace_options(ap, root, shape):
    """The options of a benchmark that reads a pmlir-run --trace of a few
    training steps (bench/cpu_profile.py, bench/gpu_profile.py): the build,
    the batch shape (default `shape`), the steps and the trace's file."""
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--shape", default=shape, help="batch x seq")
    ap.add_argument("--steps", type=int, default=3, help="training steps; the last is read")
    ap.add_argument("--keep-trace", help="also write the trace here")
    ap.add_argument("--trace", help="summarize this trace instead of running")


def parse_trace_options(ap):
    """The parsed options of add_trace_options and the rest, with --steps checked."""
    args = ap.parse_args()
    if args.steps < 2:
        sys.exit("--steps must be at least 2 (the first step warms up)")
    return args


def spans_by_rank(events):
    """The complete spans ("ph": "X") of a pmlir-run --trace on each rank's
    work and communication tracks, {rank: [span]}: not its GEMM calls
    (`kernels`) or a GPU's work (`gpu`), which run inside the work's."""
    tracks = {(e["pid"], e["tid"]) for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"
              and e["args"]["name"] in ("work", "communication")}
    by_rank = {}
    for e in events:
        if e.get("ph") == "X" and (e["pid"], e["tid"]) in tracks:
            by_rank.setdefault(e["pid"], []).append(e)
    return by_rank


def torch_env(threads):
    """PyTorch on `threads` threads: without OPENBLAS_NUM_THREADS OpenBLAS
    uses every core whatever torch.set_num_threads says, and with spinning
    OpenMP threads next to OpenBLAS's a 2-thread forward is about 3x slower."""
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                OMP_WAIT_POLICY="PASSIVE")


def add_step_options(ap, root):
    """The options of a benchmark that times runs of steps, shared by the
    CPU training benchmarks: the build, the rounds, the steps per run, the
    batch shape and the thread counts."""
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5, help="steps per run; the first is not timed")
    ap.add_argument("--shape", default="4x128", help="batch x seq")
    ap.add_argument("--threads", default="1,2")


def add_torch_options(ap):
    """The PyTorch side's flags, shared by the CPU benchmarks."""
    ap.add_argument("--python", default=sys.executable,
                    help="the Python whose PyTorch is compared with (default: this one; a "
                         "virtual environment's bin/python for PyTorch 2.x)")
    ap.add_argument("--torch-compile", action="store_true",
                    help="time PyTorch's torch.compile (inductor) of the model instead of eager")


def torch_report(ms, detail=""):
    """In a torch worker: prints the time and what ran it, as one JSON line."""
    import torch
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    print(json.dumps({"ms": ms, "torch": f"PyTorch {torch.__version__} "
                      f"(BLAS {blas.group(1) if blas else 'unknown'}, "
                      f"oneDNN {'on' if torch.backends.mkldnn.is_available() else 'off'}"
                      f"{', ' + detail if detail else ''})"}))


def torch_adamw(params):
    """In a torch worker: torch.optim.AdamW (lr 1e-3, weight decay 0.01) at
    its fastest on the CPU, the fused kernel where this PyTorch has one
    (2.4 and later), else its default; and the name of the one chosen."""
    import torch
    try:
        return (torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, fused=True),
                "AdamW fused")
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01), "AdamW default"


def torch_grad_norm(params):
    """In a torch worker: the global L2 norm of the gradients, which
    pmlir-run's step computes and prints (`grad norm G`): the two sides do
    the same work. Only the norm, without clip_grad_norm_'s scaling pass
    (torch.nn.utils.get_total_norm where this PyTorch has it)."""
    import torch
    grads = [p.grad for p in params]
    if hasattr(torch.nn.utils, "get_total_norm"):
        return torch.nn.utils.get_total_norm(grads).item()
    return torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()


def torch_result(out):
    """A torch worker's (ms, description)."""
    result = json.loads(out.strip().splitlines()[-1])
    return result["ms"], result["torch"]
