"""Sends a signal to a pmlir-run (a mesh job's launcher, or a run alone)
once its output shows a line matching PATTERN, and optionally the same
signal again SECONDS later; echoes the output, then how the process ended,
and checks that within 15 s of its end no process holding TOKEN (mpirun,
the ranks) runs on.

usage: stop_job.py SIGNAL PATTERN TOKEN [--again SECONDS] -- COMMAND...
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

from job_processes import job_processes

args = sys.argv[1:]
signame, pattern, token = args[0], re.compile(args[1]), args[2]
again = None
rest = args[3:]
if rest[0] == "--again":
    again, rest = float(rest[1]), rest[2:]
assert rest[0] == "--"
command = rest[1:]
signum = getattr(signal, signame)


proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
watchdog = threading.Timer(300, proc.kill)
watchdog.start()
sent = False
for line in proc.stdout:
    sys.stdout.write(line)
    sys.stdout.flush()
    if not sent and pattern.search(line):
        sent = True
        proc.send_signal(signum)
        if again is not None:
            time.sleep(again)
            if proc.poll() is None:
                print(f"still running {again} s after the first {signame}")
                proc.send_signal(signum)
proc.wait()
watchdog.cancel()
if not sent:
    sys.exit(f"no line matched {args[1]!r}; the process ended with {proc.returncode}")
print(f"ended by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
      else f"exited with {proc.returncode}")
deadline = time.time() + 15
while job_processes(token):
    if time.time() > deadline:
        for pid, _ in job_processes(token):
            os.kill(pid, signal.SIGKILL)
        sys.exit(f"15 s after the end, processes holding {token} still ran")
    time.sleep(0.1)
