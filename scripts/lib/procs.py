"""The processes of a federation's run on this machine (scripts/lib/federation.py's plans
under `hmw launch --work-dir WORK`), from /proc: each one's role, CPU time and memory, and the
machine's busy time. Used as a module by the scale benchmarks."""
import os

HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def machine_busy_ticks():
    """The machine's busy clock ticks since boot, every processor (not idle, not iowait)."""
    fields = list(map(int, open("/proc/stat").readline().split()[1:]))
    return sum(fields) - fields[3] - fields[4]


def roles_of(hosts):
    """The roles of a cluster's MPI processes in order, from its machine file `hosts`: `master`
    for its head (the master or a sub-master), `cm`, `worker`; the lines after the first of a
    `process=` are not processes of their own."""
    roles, shared = [], set()
    for line in open(hosts):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        process = [t for t in line.split("#")[1].split() if t.startswith("process=")] if "#" in line else []
        if process and process[0] in shared:
            continue
        shared.update(process)
        host = line.split()[0]
        roles.append("master" if host.endswith("-head") else "cm" if host.endswith("-cm") else "worker")
    return roles


def processes(work, launcher=False):
    """{pid: (kind, cpu_ticks, rss_bytes)} of the run's processes: `master`, `cm`, `worker`
    for the main cluster's ranks, `external master` (its sub-master), `external cm`,
    `external worker` for those of another cluster under mpirun, `threads` for a cluster of
    threads; with `launcher`, also `launch` for `hmw launch` itself (it runs the WAN
    emulators). A rank's cluster is its machine file (`-m WORK/NAME.hosts`), its role that
    file's line of its rank (`OMPI_COMM_WORLD_RANK`)."""
    roles = {}
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{pid}/cmdline").read().split("\0")
            if not any(work in arg for arg in cmdline):
                continue
            launch = launcher and os.path.basename(cmdline[0]) == "hmw" and "launch" in cmdline
            if "hmw-synthetic" not in cmdline[0] and not launch:
                continue
            stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            ticks = int(stat[11]) + int(stat[12])
            rss = int(stat[21]) * PAGE
            if launch:
                kind = "launch"
            elif "--threads" in cmdline:
                kind = "threads"
            else:
                hosts = cmdline[cmdline.index("-m") + 1]
                if hosts not in roles:
                    roles[hosts] = roles_of(hosts)
                environ = open(f"/proc/{pid}/environ").read().split("\0")
                rank = next(int(v.split("=", 1)[1]) for v in environ if v.startswith("OMPI_COMM_WORLD_RANK="))
                kind = roles[hosts][rank]
                if os.path.basename(hosts) != "main.hosts":
                    kind = "external " + kind
            found[pid] = (kind, ticks, rss)
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    return found


def cpu_by_kind(before, after):
    """Seconds of CPU per kind between two snapshots, and the number of processes."""
    seconds, counts = {}, {}
    for pid, (kind, ticks, _) in after.items():
        if pid in before:
            seconds[kind] = seconds.get(kind, 0.0) + (ticks - before[pid][1]) / HZ
            counts[kind] = counts.get(kind, 0) + 1
    return seconds, counts
