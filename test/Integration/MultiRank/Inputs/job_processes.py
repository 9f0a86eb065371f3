"""The processes of a job, found by a token on their command lines (shared
by the tests that signal a launcher)."""
import os


def job_processes(token):
    """(pid, is a rank) of every process but this one holding `token` on
    its command line."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append((int(entry), b"OMPI_COMM_WORLD_RANK=" in environ))
    return found
