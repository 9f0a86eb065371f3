"""What the CPU benchmarks share: running a child for its output and peak
memory, the machine they ran on, and the thread settings PyTorch gets."""
import os
import platform
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


def machine():
    """The CPU's model name, cores and kernel, for the table's heading."""
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def torch_env(threads):
    """PyTorch on `threads` threads: without OPENBLAS_NUM_THREADS OpenBLAS
    uses every core whatever torch.set_num_threads says, and with spinning
    OpenMP threads next to OpenBLAS's a 2-thread forward is about 3x slower."""
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                OMP_WAIT_POLICY="PASSIVE")
