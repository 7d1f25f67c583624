#!/usr/bin/env python3
"""What a link costs the main cluster (issue 43, item 4), at several numbers of clusters.

For each N of CLUSTERS, a federation of N clusters on this machine (scripts/lib/federation.py:
the main one under mpirun, N - 1 clusters of threads behind emulated WANs), twice:
  - idle: one task of 20 s per worker; 5 s of the run's middle are sampled;
  - busy: tasks of BUSY_TASK_S seconds (default 0.4: 5 tasks/s per cluster of two workers)
    for about 12 s of work a worker; the window
    runs between two of the master's progress lines (`[run] statistics_interval = 1`), from
    the third second on, so that its tasks gathered and its CPU are counted over one span.
Each process's CPU time and memory come from /proc (the main cluster's processes told apart
by their MPI rank, `OMPI_COMM_WORLD_RANK`, against the machine file's lines: rank 0 the
master, then the workers, then a CM process per external cluster, or one for all with
LINKS_IN_ONE_PROCESS=1); the tasks from the master's live feed.

Prints, per N:
  link_cost clusters=N idle_master_pct=.. idle_cm_pct=.. idle_threads_cluster_pct=..
    cm_rss_mb=.. threads_cluster_rss_mb=.. busy_tasks_per_s=.. busy_master_us_per_task=..
    busy_cm_us_per_task=.. busy_master_pct=.. busy_cm_pct=.. busy_machine_cores=..
    busy_path_pct=.. busy_threads_clusters_cores=.. busy_threads_us_per_task=..
    busy_emulators_cores=..
(`idle_cm_pct`, `busy_cm_pct`: one main-side CM process's share of a core, the mean over
them; `busy_cm_us_per_task`: the CM processes' CPU over the tasks their clusters delivered;
`busy_master_us_per_task`: the master's CPU over every task gathered; `busy_master_pct`: its
share of a core; `busy_path_pct`: the busiest process of the main cluster's path, its master
or a CM process, % of a core; `busy_threads_clusters_cores`: the clusters of threads together,
the load the main path serves, and their CPU per task they delivered; `busy_emulators_cores`:
`hmw launch`, which runs every WAN emulator.)
Environment: BUSY_TASK_S (above), LINKS_IN_ONE_PROCESS=1 (the CMs of the main cluster's
links in one process: `[cluster.launch] links_in_one_process`), PHASES (`idle,busy`, or
either alone).

Usage: scripts/bench/link-cost.py HMW [CLUSTERS...]   (default 8 16 32 64; HMW the `hmw`
binary, `hmw-synthetic` beside it). Run on a quiet machine; it leaves nothing behind.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import federation  # noqa: E402
from procs import HZ, cpu_by_kind, machine_busy_ticks, processes  # noqa: E402

WORKERS = 2
# LINKS_IN_ONE_PROCESS=1: the CMs of each MPI cluster's links share one process.
SHARED = os.environ.get("LINKS_IN_ONE_PROCESS", "0") == "1"
# PHASES=busy: the busy phase alone.
PHASES = os.environ.get("PHASES", "idle,busy").split(",")
# The runs started, stopped if the benchmark fails before they end.
RUNS = []


def live_lines(work):
    """The master's complete live records (the last line may be half written)."""
    path = os.path.join(work, "main.live.jsonl")
    try:
        return open(path).read().split("\n")[:-1]
    except OSError:
        return []


def wait_for_line(work, after, deadline):
    """The first live record past the `after`-th, and the line count then."""
    while time.time() < deadline:
        lines = live_lines(work)
        if len(lines) > after:
            return json.loads(lines[-1]), len(lines)
        time.sleep(0.02)
    raise SystemExit(f"link-cost: no progress line in {work} in time")


def launch(hmw, work, plan_text):
    os.makedirs(work)
    plan = os.path.join(work, "..", os.path.basename(work) + ".toml")
    with open(plan, "w") as f:
        f.write(plan_text)
    log = open(os.path.join(work, "..", os.path.basename(work) + ".log"), "w")
    RUNS.append(
        subprocess.Popen(
            [hmw, "launch", plan, "--work-dir", work], stdout=log, stderr=subprocess.STDOUT
        )
    )
    return RUNS[-1]


def finish(run, work):
    try:
        run.wait(timeout=300)
    except subprocess.TimeoutExpired:
        run.terminate()
        run.wait(timeout=60)
        raise SystemExit(f"link-cost: the run in {work} did not end in time")
    if run.returncode != 0:
        raise SystemExit(f"link-cost: the run in {work} failed ({run.returncode}); see its log")


def idle(hmw, root, clusters):
    work = os.path.join(root, f"idle{clusters}")
    run = launch(hmw, work, federation.plan(clusters, WORKERS * clusters, 20.0, WORKERS, 1.0, links_in_one_process=SHARED))
    wait_for_line(work, 0, time.time() + 180)
    time.sleep(2)
    before = processes(work)
    start = time.time()
    time.sleep(5)
    after = processes(work)
    span = time.time() - start
    finish(run, work)
    seconds, counts = cpu_by_kind(before, after)
    rss = lambda kind: [r for (k, _, r) in after.values() if k == kind]  # noqa: E731
    cm_rss, threads_rss = rss("cm"), rss("threads")
    return {
        "idle_master_pct": 100 * seconds.get("master", 0) / span,
        "idle_cm_pct": 100 * seconds.get("cm", 0) / span / max(counts.get("cm", 1), 1),
        "idle_threads_cluster_pct": 100 * seconds.get("threads", 0) / span / max(counts.get("threads", 1), 1),
        "cm_rss_mb": sum(cm_rss) / max(len(cm_rss), 1) / 1e6,
        "threads_cluster_rss_mb": sum(threads_rss) / max(len(threads_rss), 1) / 1e6,
    }


def busy(hmw, root, clusters):
    work = os.path.join(root, f"busy{clusters}")
    task_s = float(os.environ.get("BUSY_TASK_S", "0.4"))
    tasks = int(12 * WORKERS * clusters / task_s)
    run = launch(hmw, work, federation.plan(clusters, tasks, task_s, WORKERS, 1.0, links_in_one_process=SHARED))
    _, seen = wait_for_line(work, 0, time.time() + 180)
    _, seen = wait_for_line(work, seen + 1, time.time() + 30)
    first, seen = wait_for_line(work, seen, time.time() + 30)
    before, busy_before = processes(work, launcher=True), machine_busy_ticks()
    _, seen = wait_for_line(work, seen + 4, time.time() + 30)
    last, seen = wait_for_line(work, seen, time.time() + 30)
    after, busy_after = processes(work, launcher=True), machine_busy_ticks()
    finish(run, work)
    span = last["sample"]["t_s"] - first["sample"]["t_s"]
    done = last["sample"]["tasks_done"] - first["sample"]["tasks_done"]
    linked = sum(c["tasks_done"] for c in last["linked"]) - sum(c["tasks_done"] for c in first["linked"])
    seconds, counts = cpu_by_kind(before, after)
    return {
        "busy_tasks_per_s": done / span,
        "busy_master_us_per_task": 1e6 * seconds.get("master", 0) / max(done, 1),
        "busy_cm_us_per_task": 1e6 * seconds.get("cm", 0) / max(linked, 1),
        "busy_master_pct": 100 * seconds.get("master", 0) / span,
        "busy_cm_pct": 100 * seconds.get("cm", 0) / span / max(counts.get("cm", 1), 1),
        "busy_machine_cores": (busy_after - busy_before) / HZ / span,
        "busy_path_pct": 100 * busiest_path(before, after) / span,
        "busy_threads_clusters_cores": seconds.get("threads", 0) / span,
        "busy_threads_us_per_task": 1e6 * seconds.get("threads", 0) / max(linked, 1),
        "busy_emulators_cores": seconds.get("launch", 0) / span,
    }


def busiest_path(before, after):
    """The CPU seconds of the busiest process of the main cluster's path between two
    snapshots: its master or a CM process."""
    return max(
        (ticks - before[pid][1]) / HZ
        for pid, (kind, ticks, _) in after.items()
        if kind in ("master", "cm") and pid in before
    )


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    hmw = os.path.abspath(sys.argv[1])
    sizes = [int(n) for n in sys.argv[2:]] or [8, 16, 32, 64]
    root = tempfile.mkdtemp(prefix="hmw-link-cost-")
    try:
        for clusters in sizes:
            figures = {}
            for phase in PHASES:
                figures.update({"idle": idle, "busy": busy}[phase](hmw, root, clusters))
            line = " ".join(f"{k}={v:.2f}" for k, v in figures.items())
            print(f"link_cost clusters={clusters} {line}", flush=True)
    finally:
        for run in RUNS:
            if run.poll() is None:
                run.send_signal(signal.SIGINT)  # `hmw launch` stops its clusters
                run.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
