"""Ends a pmlir-run with a signal while it holds a checkpoint's two files
written but not yet in place (--test-hang-at save-commit), and checks what
that leaves: the run ended by the signal, no temporary file beside the
checkpoint, and the checkpoint that was there byte for byte.

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
folder = os.path.dirname(checkpoint) or "."
base = os.path.basename(checkpoint)[:-len(".safetensors")]
pair = [checkpoint, checkpoint[:-len(".safetensors")] + ".optimizer.safetensors"]
before = [open(p, "rb").read() if os.path.exists(p) else None for p in pair]


def temporaries():
    return glob.glob(os.path.join(folder, "." + base + "*.tmp"))


# As from a shell: the signals at their default (lit's workers ignore SIGINT).
run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
# Both files are staged when the run says it hangs.
for line in run.stderr:
    if "hanging at save-commit" in line:
        break
else:
    sys.exit(f"the run ended ({run.wait()}) without reaching save-commit")
if len(temporaries()) != 2:
    sys.exit(f"expected the 2 staged files, found {temporaries()}")
run.send_signal(getattr(signal, signame))
try:
    run.wait(timeout=60)
except subprocess.TimeoutExpired:
    run.kill()
    sys.exit(f"the run did not end within 60 s of {signame}")
if run.returncode != -getattr(signal, signame):
    sys.exit(f"the run ended with {run.returncode}, not by {signame}")
left = temporaries()
if left:
    sys.exit(f"{signame} left {left}")
after = [open(p, "rb").read() if os.path.exists(p) else None for p in pair]
if after != before:
    sys.exit(f"{signame} changed the checkpoint that was there")
print(f"{signame}: no temporary left, the checkpoint as it was")
