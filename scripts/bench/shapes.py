#!/usr/bin/env python3
"""Flat against tree (issue 43, item 3): the same federation as a star and as a tree, each
predicted by `hmw predict` and measured by `hmw launch`, in interleaved rounds.

The federation is scripts/lib/federation.py's (the main cluster under mpirun, the others
clusters of threads behind emulated WANs held to their rates), in REGIONS regions of
CLUSTERS / REGIONS clusters whose first cluster's link to the main cluster (its uplink) runs at
UPLINK bytes a second in both shapes: in the star each cluster has its own link to the main
cluster; in the tree a region's other clusters hang from its first over a regional WAN of
5 ms, and its uplink carries the whole region (`docs/model.md` (173)-(174)). Tasks of
TASK_S seconds (sleeps) and TASK_BYTES bytes each way.

Prints `hmw predict --compare`'s verdict, a line per run, then:
  shapes clusters=N regions=R flat_pred_s=B-W tree_pred_s=B-W flat_s=.. tree_s=..
    flat_err=E1 tree_err=E2 shape_gap=G predicted_ratio=P measured_ratio=M shape_ok=BOOL
(`flat_s`, `tree_s`: the median of the rounds' makespans; `E1`, `E2`: measured over the middle
of the prediction, minus 1; `G`: the measured makespans' relative difference, slower over
faster minus 1; `P`, `M`: tree over flat; `shape_ok`: the faster shape predicted is the faster
measured, and P is within 10 % of M.)

Usage: scripts/bench/shapes.py HMW [CLUSTERS [REGIONS [ROUNDS]]]  (default 16 4 3; HMW the
`hmw` binary, `hmw-synthetic` beside it). Environment: TASK_S (1.0), TASK_BYTES (200000),
UPLINK (1e6), TASKS_PER_WORKER (10). Run on a quiet machine; it leaves nothing behind.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import federation  # noqa: E402

WORKERS = 2


def shape_plan(clusters, regions, tree):
    return federation.plan(
        clusters,
        int(os.environ.get("TASKS_PER_WORKER", "10")) * WORKERS * clusters,
        float(os.environ.get("TASK_S", "1.0")),
        WORKERS,
        task_bytes=int(os.environ.get("TASK_BYTES", "200000")),
        regions=regions,
        tree=tree,
        uplink_bytes_per_s=float(os.environ.get("UPLINK", "1e6")),
        emulate_rates=True,
    )


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


def measured(hmw, plan, work):
    log = subprocess.run(
        [hmw, "launch", plan, "--work-dir", work],
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = re.search(r"^launch clusters=\d+ tasks=\d+ makespan_s=([0-9.]+)", log.stdout, re.M)
    if log.returncode != 0 or not found:
        sys.exit(f"shapes: the run of {plan} failed ({log.returncode}):\n{log.stdout[-2000:]}")
    return float(found.group(1))


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
        for r in range(rounds):
            for shape in runs:
                work = os.path.join(root, f"{shape}{r}")
                runs[shape].append(measured(hmw, plans[shape], work))
                shutil.rmtree(work, ignore_errors=True)
                print(f"round {r + 1} {shape} makespan_s={runs[shape][-1]:.3f}", flush=True)
        mid = {s: sum(pred[s]) / 2 for s in runs}
        med = {s: statistics.median(runs[s]) for s in runs}
        err = {s: med[s] / mid[s] - 1 for s in runs}
        gap = max(med.values()) / min(med.values()) - 1
        p_ratio = mid["tree"] / mid["flat"]
        m_ratio = med["tree"] / med["flat"]
        ok = (p_ratio > 1) == (m_ratio > 1) and abs(p_ratio / m_ratio - 1) <= 0.10
        print(
            f"shapes clusters={clusters} regions={regions} "
            f"flat_pred_s={pred['flat'][0]:.3f}-{pred['flat'][1]:.3f} "
            f"tree_pred_s={pred['tree'][0]:.3f}-{pred['tree'][1]:.3f} "
            f"flat_s={med['flat']:.3f} tree_s={med['tree']:.3f} "
            f"flat_err={err['flat']:.4f} tree_err={err['tree']:.4f} shape_gap={gap:.3f} "
            f"predicted_ratio={p_ratio:.3f} measured_ratio={m_ratio:.3f} "
            f"shape_ok={'true' if ok else 'false'}"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
