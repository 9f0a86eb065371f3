#!/usr/bin/env python3
"""Runs a command beside several hosts built on this machine from namespaces.

    hosts.py --hosts N --slots S --dir DIR [--kill-host I --kill-after REGEX]
             -- COMMAND...

Each host is a network namespace with its own address on a bridge, a UTS
namespace with its own name (pmlir-host-0, pmlir-host-1, ...) and a mount
namespace with its own /dev/shm. They live inside a network and mount
namespace of this script's own, whose bridge carries 10.77.0.1 (the
launcher's address) and whose /etc/hosts names the hosts, so nothing of this
machine's network or files changes and all of it goes when the script ends.

COMMAND runs on the launcher's side with OMPI_MCA_plm_rsh_agent naming
DIR/agent: mpirun enters a host through it as it would through ssh, with a
clean environment (only PATH and HOME), so what a rank needs must come from
mpirun. DIR/hostfile lists the hosts with S slots each.

With --kill-host, once a line of COMMAND's output matches REGEX, every
pmlir-run process of host I is killed with SIGKILL: a host lost in the
middle of a job. The script exits with COMMAND's status.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

BRIDGE = "pmlirbr0"
SUBNET = "10.77.0"


def run(*words):
    subprocess.run(words, check=True)


def net_namespace(pid):
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def processes_in(namespace):
    """The processes whose network namespace is `namespace`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and net_namespace(entry) == namespace:
            found.append(int(entry))
    return found


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def start_host(index, holders):
    name = f"pmlir-host-{index}"
    holder = subprocess.Popen(
        ["unshare", "--net", "--mount", "--uts", "--propagation", "private", "sh", "-c",
         f"hostname {name} && mount -t tmpfs tmpfs /dev/shm && echo ready && exec sleep 100000"],
        stdout=subprocess.PIPE)
    holders.append(holder)
    if holder.stdout.readline().strip() != b"ready":
        sys.exit(f"hosts.py: {name} did not start")
    pid = holder.pid
    veth = f"pmlirv{index}"
    run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(pid))
    run("ip", "link", "set", veth, "master", BRIDGE, "up")
    run("nsenter", "-t", str(pid), "-n", "sh", "-c",
        f"ip link set lo up && ip addr add {SUBNET}.{10 + index}/24 dev eth0 && "
        f"ip link set eth0 up")
    return name, pid


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--kill-host", type=int)
    parser.add_argument("--kill-after")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        sys.exit("hosts.py: no command")

    if os.environ.get("PMLIR_HOSTS_WORLD") != "1":
        # This script's own network and mount namespaces first.
        os.environ["PMLIR_HOSTS_WORLD"] = "1"
        os.execvp("unshare", ["unshare", "--net", "--mount", "--propagation", "private",
                              sys.executable, os.path.abspath(__file__)] + sys.argv[1:])

    os.makedirs(args.dir, exist_ok=True)
    directory = os.path.abspath(args.dir)
    run("ip", "link", "set", "lo", "up")
    run("ip", "link", "add", BRIDGE, "type", "bridge")
    run("ip", "addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    etc_hosts = os.path.join(directory, "etc-hosts")
    with open(etc_hosts, "w") as f:
        f.write(f"127.0.0.1 localhost\n{SUBNET}.1 pmlir-launcher\n")
        for i in range(args.hosts):
            f.write(f"{SUBNET}.{10 + i} pmlir-host-{i}\n")
    run("mount", "--bind", etc_hosts, "/etc/hosts")

    holders = []
    hosts = [start_host(i, holders) for i in range(args.hosts)]
    with open(os.path.join(directory, "hostfile"), "w") as f:
        for name, _ in hosts:
            f.write(f"{name} slots={args.slots}\n")
    agent = os.path.join(directory, "agent")
    with open(agent, "w") as f:
        # mpirun calls it as ssh: [options] HOST COMMAND...
        f.write("#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\nhost=$1; shift\n")
        f.write("case $host in\n")
        for name, pid in hosts:
            f.write(f"  {name}) pid={pid} ;;\n")
        f.write("  *) echo \"agent: no host $host\" >&2; exit 255 ;;\nesac\n")
        f.write("exec nsenter -t $pid -n -m -u --wd=\"$PWD\" env -i PATH=\"$PATH\" HOME=\"$HOME\" "
                "/bin/sh -c \"$*\"\n")
    os.chmod(agent, 0o755)

    env = dict(os.environ)
    env["OMPI_MCA_plm_rsh_agent"] = agent
    env["OMPI_MCA_oob_tcp_if_include"] = f"{SUBNET}.0/24"
    env["OMPI_MCA_btl_tcp_if_include"] = f"{SUBNET}.0/24"
    status = 1
    try:
        job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
        pattern = re.compile(args.kill_after) if args.kill_after else None
        for line in job.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
            if pattern and pattern.search(line.decode(errors="replace")):
                pattern = None
                namespace = net_namespace(hosts[args.kill_host][1])
                killed = [pid for pid in processes_in(namespace)
                          if any(os.path.basename(w) == b"pmlir-run" for w in
                                 command_line(pid)[:1])]
                for pid in killed:
                    os.kill(pid, signal.SIGKILL)
                print(f"hosts.py: killed {len(killed)} pmlir-run processes of "
                      f"{hosts[args.kill_host][0]}", flush=True)
        status = job.wait()
    finally:
        # Whatever still runs on a host goes with it.
        for _, pid in hosts:
            namespace = net_namespace(pid)
            for other in processes_in(namespace) if namespace else []:
                if other != pid:
                    try:
                        os.kill(other, signal.SIGKILL)
                    except OSError:
                        pass
        for holder in holders:
            holder.kill()
            holder.wait()
    sys.exit(status)


if __name__ == "__main__":
    main()
