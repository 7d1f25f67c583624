#!/usr/bin/env python3
"""The CPU each host of the running testbeds uses, second by second.

Usage: scripts/bench/testbed-cpu.py [--interval S] [--out FILE]   (until interrupted)

Every interval it prints one line: the time, the machine's busy cores (from /proc/stat),
then each host's cores over the interval (`lyon-1=0.21`), for every host cgroup of every
testbed up (`hmw-testbed-NAME/hosts/HOST`, and its `router`). Under cgroup v2 a host's use
is its cgroup's `usage_usec`; under v1, whose `cpu` hierarchy the testbed uses alone, the sum
of its threads' user and system time (a thread that ends in the interval takes its time with
it: such an interval reads low, even below zero).

It shows whether a run had the machine to itself: a host whose quota is 0.3 of a core but
that used 0.2 while the machine was busy on both cores was starved by the others, and the
run measured the machine rather than the hosts (docs/benchmarks.md, "The cold scenarios and
the machine").
"""
import argparse
import glob
import os
import signal
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
ROOTS = ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup"]


def host_groups():
    """Every host cgroup of every testbed, and its router's: (name, path)."""
    groups = []
    for root in ROOTS:
        for top in glob.glob(f"{root}/hmw-testbed-*/"):
            for path in glob.glob(f"{top}hosts/*/") + glob.glob(f"{top}router/"):
                groups.append((path.rstrip("/").split("/")[-1], path))
        if groups:
            break
    return groups


def seconds_used(path):
    """CPU seconds the cgroup at `path` used so far, None when it is gone."""
    try:
        with open(path + "cpu.stat") as stat:
            for line in stat:
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        with open(path + "cgroup.procs") as procs:
            pids = procs.read().split()
    except OSError:
        return None
    total = 0
    for pid in pids:
        for task in glob.glob(f"/proc/{pid}/task/*/stat"):
            try:
                with open(task) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                pass
    return total / TICK


def machine():
    """(all jiffies, idle jiffies) of the machine so far."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--out", type=argparse.FileType("w"), default=sys.stdout)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    cores = os.cpu_count()
    before, last = {}, machine()
    while True:
        time.sleep(args.interval)
        now = {name: seconds_used(path) for name, path in host_groups()}
        total, idle = machine()
        busy = cores * (1 - (idle - last[1]) / max(1, total - last[0]))
        last = (total, idle)
        row = [f"{time.time():.0f}", f"busy={busy:.2f}"]
        for name, used in sorted(now.items()):
            if used is not None and before.get(name) is not None:
                row.append(f"{name}={(used - before[name]) / args.interval:.2f}")
        before = now
        print(" ".join(row), file=args.out, flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
