#!/usr/bin/env python3
"""Flat against tree (issue 43, item 3): the same federation as a star and as a tree, each
predicted by `hmw predict` and measured by `hmw launch`, in interleaved rounds.

The federation is scripts/lib/federation.py's (the main cluster and MPI_CLUSTERS - 1 others
under mpirun, the rest clusters of threads, behind emulated WANs held to their rates), in
REGIONS regions of CLUSTERS / REGIONS clusters whose first cluster's link to the main cluster
(its uplink) runs at UPLINK bytes a second in both shapes: in the star each cluster has its
own link to the main cluster; in the tree a region's other clusters hang from its first over
a regional WAN of 5 ms, and its uplink carries the whole region (`docs/model.md`
(173)-(174)). Tasks of
TASK_S seconds (sleeps) and TASK_BYTES bytes each way.

Prints `hmw predict --compare`'s verdict, a line per run, then:
  shapes clusters=N regions=R workers=W flat_pred_s=B-W tree_pred_s=B-W flat_s=.. tree_s=..
    flat_err=E1 tree_err=E2 shape_gap=G predicted_ratio=P measured_ratio=M shape_ok=BOOL
    startup_s=S startup_overlap=O busy_pct=B rss_gb=R verified=BOOL mpi_clusters=M
(`flat_s`, `tree_s`: the median of the rounds' makespans; `E1`, `E2`: measured over the middle
of the prediction, minus 1; `G`: the measured makespans' relative difference, slower over
faster minus 1; `P`, `M`: tree over flat; `shape_ok`: the faster shape predicted is the faster
measured, and P is within 10 % of M; `S`, `O`: the median of the star's runs of `hmw
launch`'s startup figures; `B`: the busiest second of the main master or one of its CM ranks
in the star's runs, % of a core (/proc, each second); `R`: the peak memory of the
application's processes in any run, GB (the emulators, mpirun and its daemons not counted);
`verified`: every run's master gathered each task's result once; `M`: the clusters under
mpirun, the main one.)

Usage: scripts/bench/shapes.py HMW [CLUSTERS [REGIONS [ROUNDS]]]  (default 16 4 3; HMW the
`hmw` binary, `hmw-synthetic` beside it). Environment: TASK_S (1.0), TASK_BYTES (200000),
UPLINK (1e6), TASKS_PER_WORKER (10), MPI_CLUSTERS (1), LINKS_IN_ONE_PROCESS (0; 1: the CMs
of each MPI cluster's links in one process). Run on a quiet machine; it leaves nothing behind.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import federation  # noqa: E402
import procs  # noqa: E402

WORKERS = 2


def tasks_of(clusters):
    return int(os.environ.get("TASKS_PER_WORKER", "10")) * WORKERS * clusters


def shape_plan(clusters, regions, tree):
    return federation.plan(
        clusters,
        tasks_of(clusters),
        float(os.environ.get("TASK_S", "1.0")),
        WORKERS,
        task_bytes=int(os.environ.get("TASK_BYTES", "200000")),
        regions=regions,
        tree=tree,
        uplink_bytes_per_s=float(os.environ.get("UPLINK", "1e6")),
        emulate_rates=True,
        mpi_clusters=int(os.environ.get("MPI_CLUSTERS", "1")),
        links_in_one_process=os.environ.get("LINKS_IN_ONE_PROCESS", "0") == "1",
    )


def mpi_clusters(plan_text):
    """The clusters of a plan that run under MPI: those not `launcher = "threads"`."""
    return plan_text.count("[[cluster]]") - plan_text.count('launcher = "threads"')


def predicted(hmw, flat, tree):
    """Each shape's predicted range and `hmw predict --compare`'s verdict."""
    out = subprocess.run(
        [hmw, "predict", flat, "--compare", tree, "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    compare = json.loads(out)["compare"]
    ranges = {s["plan"]: (s["t_ex_best"], s["t_ex_worst"]) for s in compare["shapes"]}
    return ranges, compare["verdict"].strip()


def measured(hmw, plan, work, tasks):
    """The run's makespan and, sampled each second from /proc, its figures: the busiest
    second of the main master or one of its CM ranks (% of a core), the peak memory of the
    application's processes (GB), the startup and its overlap from the launcher's last line,
    and whether every task's result came back once (the master's statistics)."""
    log = work + ".log"
    run = subprocess.Popen(
        [hmw, "launch", plan, "--work-dir", work],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    busiest, rss_peak, last, last_t = 0.0, 0, {}, time.time()
    while run.poll() is None:
        time.sleep(1.0)
        if not os.path.exists(os.path.join(work, "main.hosts")):
            continue
        now, snapshot = time.time(), procs.processes(work)
        rss_peak = max(rss_peak, sum(rss for _, _, rss in snapshot.values()))
        for pid, (kind, ticks, _) in snapshot.items():
            if kind in ("master", "cm") and pid in last:
                share = (ticks - last[pid][1]) / procs.HZ / (now - last_t)
                busiest = max(busiest, 100 * share)
        last, last_t = snapshot, now
    text = open(log).read()
    found = re.search(
        r"^launch clusters=\d+ tasks=\d+ makespan_s=([0-9.]+) startup_s=([0-9.]+) "
        r"startup_overlap=([0-9.]+)",
        text,
        re.M,
    )
    if run.returncode != 0 or not found:
        sys.exit(f"shapes: the run of {plan} failed ({run.returncode}):\n{text[-2000:]}")
    stats = json.load(open(os.path.join(work, "main.stats.json")))
    gathered = sum(w["tasks_done"] for w in stats["workers"])
    gathered += sum(c["tasks_done"] for c in stats["clusters"])
    return {
        "makespan_s": float(found.group(1)),
        "startup_s": float(found.group(2)),
        "startup_overlap": float(found.group(3)),
        "busy_pct": busiest,
        "rss_gb": rss_peak / 1e9,
        "verified": stats["tasks"] == tasks and gathered == tasks,
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    hmw = sys.argv[1]
    clusters = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    regions = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    root = tempfile.mkdtemp(prefix="hmw-shapes-")
    try:
        plans, runs = {}, {"flat": [], "tree": []}
        for shape in runs:
            plans[shape] = os.path.join(root, f"{shape}.toml")
            with open(plans[shape], "w") as f:
                f.write(shape_plan(clusters, regions, shape == "tree"))
        pred, verdict = predicted(hmw, plans["flat"], plans["tree"])
        print(f"predicted: {verdict}", flush=True)
        tasks = tasks_of(clusters)
        for r in range(rounds):
            for shape in runs:
                work = os.path.join(root, f"{shape}{r}")
                figures = measured(hmw, plans[shape], work, tasks)
                runs[shape].append(figures)
                shutil.rmtree(work, ignore_errors=True)
                line = " ".join(
                    f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={str(v).lower()}"
                    for k, v in figures.items()
                )
                print(f"round {r + 1} {shape} {line}", flush=True)
        mid = {s: sum(pred[s]) / 2 for s in runs}
        med = {s: statistics.median(f["makespan_s"] for f in runs[s]) for s in runs}
        flat = runs["flat"]
        every = flat + runs["tree"]
        err = {s: med[s] / mid[s] - 1 for s in runs}
        gap = max(med.values()) / min(med.values()) - 1
        p_ratio = mid["tree"] / mid["flat"]
        m_ratio = med["tree"] / med["flat"]
        ok = (p_ratio > 1) == (m_ratio > 1) and abs(p_ratio / m_ratio - 1) <= 0.10
        print(
            f"shapes clusters={clusters} regions={regions} workers={WORKERS * clusters} "
            f"flat_pred_s={pred['flat'][0]:.3f}-{pred['flat'][1]:.3f} "
            f"tree_pred_s={pred['tree'][0]:.3f}-{pred['tree'][1]:.3f} "
            f"flat_s={med['flat']:.3f} tree_s={med['tree']:.3f} "
            f"flat_err={err['flat']:.4f} tree_err={err['tree']:.4f} shape_gap={gap:.3f} "
            f"predicted_ratio={p_ratio:.3f} measured_ratio={m_ratio:.3f} "
            f"shape_ok={'true' if ok else 'false'} "
            f"startup_s={statistics.median(f['startup_s'] for f in flat):.2f} "
            f"startup_overlap={statistics.median(f['startup_overlap'] for f in flat):.1f} "
            f"busy_pct={max(f['busy_pct'] for f in flat):.1f} "
            f"rss_gb={max(f['rss_gb'] for f in every):.2f} "
            f"verified={'true' if all(f['verified'] for f in every) else 'false'} "
            f"mpi_clusters={mpi_clusters(open(plans['flat']).read())}"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
