"""Ends the launcher of a mesh job (the pmlir-run that started mpirun) with a
signal once the job's ranks run, and checks that the whole job ends with it:
the launcher by that signal, and within a few seconds every process whose
command line holds TOKEN (mpirun and the ranks).

usage: end_launcher.py SIGNAL RANKS TOKEN -- COMMAND...
"""
import os
import signal
import subprocess
import sys
import time

from job_processes import job_processes

signame, ranks, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
assert sys.argv[4] == "--"
command = sys.argv[5:]


launcher = subprocess.Popen(command)
deadline = time.time() + 120
while sum(rank for _, rank in job_processes(token)) < ranks:
    if launcher.poll() is not None:
        sys.exit(f"the launcher ended ({launcher.returncode}) before its {ranks} ranks ran")
    if time.time() > deadline:
        sys.exit(f"the job's {ranks} ranks did not start within 120 s")
    time.sleep(0.1)
# The ranks are running (compiling, then waiting in the test hook).
time.sleep(1)
launcher.send_signal(getattr(signal, signame))
launcher.wait()
if launcher.returncode != -getattr(signal, signame):
    sys.exit(f"the launcher ended with {launcher.returncode}, not by {signame}")
deadline = time.time() + 15
while job_processes(token):
    if time.time() > deadline:
        left = job_processes(token)
        for pid, _ in left:
            os.kill(pid, signal.SIGKILL)
        sys.exit(f"15 s after the launcher ended by {signame}, {len(left)} processes of its job "
                 "still ran")
    time.sleep(0.1)
print(f"{signame}: the launcher and its job ended")
