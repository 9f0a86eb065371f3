"""Ends a mesh pmlir-run with a signal while rank 0 holds a checkpoint
directory written but not yet in place (--test-hang-at save-commit), and
checks what that leaves: the run ended by the signal, and the checkpoint
directory that was there file for file, byte for byte.

usage: end_while_saving_directory.py SIGNAL DIRECTORY -- COMMAND...
"""
import os
import signal
import subprocess
import sys

signame, directory = sys.argv[1], sys.argv[2]
assert sys.argv[3] == "--"
command = sys.argv[4:]


def contents():
    return {name: open(os.path.join(directory, name), "rb").read()
            for name in sorted(os.listdir(directory))}


before = contents()
# As from a shell: the signals at their default (lit's workers ignore SIGINT).
run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True,
                       preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
for line in run.stderr:
    if "hanging at save-commit" in line:
        break
else:
    sys.exit(f"the run ended ({run.wait()}) without reaching save-commit")
staged = sorted(os.listdir(directory.rstrip("/") + ".saving"))
run.send_signal(getattr(signal, signame))
try:
    run.wait(timeout=60)
except subprocess.TimeoutExpired:
    run.kill()
    sys.exit(f"the run did not end within 60 s of {signame}")
if run.returncode == 0:
    sys.exit(f"the run ended with 0 after {signame}")
if contents() != before:
    sys.exit(f"{signame} changed {directory}")
print("staged:", " ".join(staged))
print(f"ended by {signame}: the checkpoint directory as it was")
