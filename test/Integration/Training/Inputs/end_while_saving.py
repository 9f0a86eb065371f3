"""Ends a pmlir-run with a signal (sent twice: a training run takes the first
as a request to stop at its next step boundary) while it holds a checkpoint written but not
yet in place (--test-hang-at save-commit), and checks what that leaves: the
run ended by the signal, and the checkpoint that was there byte for byte.
A checkpoint file pair (CHECKPOINT ends in .safetensors): no temporary file
beside it, and the run ended by that very signal. A checkpoint directory
(written by a mesh): the files it held, unchanged, and what the save had
staged beside it printed.

usage: end_while_saving.py SIGNAL CHECKPOINT -- COMMAND...
"""
import glob
import os
import signal
import subprocess
import sys

signame, checkpoint = sys.argv[1], sys.argv[2]
assert sys.argv[3] == "--"
command = sys.argv[4:]
directory = not checkpoint.endswith(".safetensors")
if directory:
    staging = checkpoint.rstrip("/") + ".saving"
    paths = [os.path.join(checkpoint, name) for name in sorted(os.listdir(checkpoint))]
else:
    folder = os.path.dirname(checkpoint) or "."
    base = os.path.basename(checkpoint)[:-len(".safetensors")]
    paths = [checkpoint, checkpoint[:-len(".safetensors")] + ".optimizer.safetensors"]


def contents():
    return [open(p, "rb").read() if os.path.exists(p) else None for p in paths]


def temporaries():
    return glob.glob(os.path.join(folder, "." + base + "*.tmp"))


before = contents()
# As from a shell: the signals at their default (lit's workers ignore SIGINT).
run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
# Everything is staged when the run says it hangs.
for line in run.stderr:
    if "hanging at save-commit" in line:
        break
else:
    sys.exit(f"the run ended ({run.wait()}) without reaching save-commit")
if directory:
    print("staged:", " ".join(sorted(os.listdir(staging))))
elif len(temporaries()) != 2:
    sys.exit(f"expected the 2 staged files, found {temporaries()}")
# A training run takes a first signal as a request to stop after its step,
# which a run held in its save cannot honour: the second ends it.
run.send_signal(getattr(signal, signame))
try:
    run.wait(timeout=2)
except subprocess.TimeoutExpired:
    run.send_signal(getattr(signal, signame))
try:
    run.wait(timeout=60)
except subprocess.TimeoutExpired:
    run.kill()
    sys.exit(f"the run did not end within 60 s of {signame}")
# A mesh job's launcher passes the signal on and ends with its ranks.
if directory and run.returncode == 0:
    sys.exit(f"the run ended with 0 after {signame}")
if not directory and run.returncode != -getattr(signal, signame):
    sys.exit(f"the run ended with {run.returncode}, not by {signame}")
if not directory and temporaries():
    sys.exit(f"{signame} left {temporaries()}")
if contents() != before or (directory and len(os.listdir(checkpoint)) != len(paths)):
    sys.exit(f"{signame} changed the checkpoint that was there")
print(f"{signame}: no temporary left, the checkpoint as it was")
