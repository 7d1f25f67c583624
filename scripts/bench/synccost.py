#!/usr/bin/env python3
"""What a journal's write and sync cost this machine: N writes of SIZE bytes to PATH, each
followed by fdatasync when SYNC is 1; prints the wall time per write, the whole machine's busy
CPU per write (/proc/stat, so that the kernel's and the device's work on other threads counts)
and this process's own CPU per write, in milliseconds. The file is removed at the end.
Usage: scripts/bench/synccost.py PATH N SIZE SYNC   (e.g. /tmp/sc.bin 200 524288 1)"""
import os
import sys
import time


def busy_ticks():
    fields = list(map(int, open("/proc/stat").readline().split()[1:]))
    return sum(fields) - fields[3] - fields[4]  # less idle and iowait


def main():
    path, n, size, sync = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
    data = b"\x07" * size
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        busy0, wall0, own0 = busy_ticks(), time.time(), os.times()
        for _ in range(n):
            os.write(fd, data)
            if sync:
                os.fdatasync(fd)
        busy1, wall1, own1 = busy_ticks(), time.time(), os.times()
    finally:
        os.close(fd)
        os.unlink(path)
    hz = os.sysconf("SC_CLK_TCK")
    own = (own1.user + own1.system) - (own0.user + own0.system)
    print(
        f"synccost path={path} size={size} sync={int(sync)} n={n} "
        f"wall_ms={1e3 * (wall1 - wall0) / n:.3f} "
        f"machine_busy_ms={1e3 * (busy1 - busy0) / hz / n:.3f} own_cpu_ms={1e3 * own / n:.3f}"
    )


if __name__ == "__main__":
    main()
