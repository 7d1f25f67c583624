#!/usr/bin/env bash
# Scale benchmark (issue 43): a federation of many clusters on this machine, and the
# simulator at a million workers.
#  - scripts/bench/shapes.py: the federation of scripts/lib/federation.py (the main cluster
#    under mpirun, every other one a cluster of threads behind an emulated WAN held to its
#    rates) as a star and as a tree of regions, each predicted (`hmw predict --compare`) and
#    run in interleaved rounds: each shape's error, their gap, whether the model picked the
#    faster, the star's startup, the busiest second of the main master or a CM rank, the
#    memory of the application's processes, every task gathered once;
#  - `hmw simulate` of SIM_CLUSTERS clusters of SIM_WORKERS workers and SIM_TASKS tasks of 1 s
#    (scripts/lib/sim-plan.sh, 16 tasks a message between clusters): its wall-clock seconds
#    and peak memory.
# Full (default): 64 clusters in 8 regions, 5 tasks of 2 s a worker, 100 KB each way,
# uplinks of 400 KB/s, three rounds (about 5 minutes); 64 x 16,384 workers, 10,000,000 tasks.
# QUICK=1 (what scripts/test.sh runs): 16 clusters in 4 regions, 10 tasks of 1 s a worker,
# 200 KB, uplinks of 1 MB/s, one round; 16 x 1,024 workers, 1,000,000 tasks (about a minute).
# With QUICK=1 it fails unless every task was gathered once and the shape the model predicts
# faster is the faster measured. Run the full one on a quiet machine.
# Last line:
#   scale clusters=N mpi_clusters=M workers=W verified=B startup_s=S startup_overlap=O
#   busy_pct=P flat_err=E1 tree_err=E2 shape_gap=G shape_ok=B rss_gb=R sim_workers=N
#   sim_tasks=T sim_wall_s=X sim_rss_gb=Y
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh time
. scripts/env.sh
. scripts/lib/sim-plan.sh
if [ "${QUICK:-0}" = 1 ]; then
    clusters=16 regions=4 rounds=1
    export TASK_S=1.0 TASK_BYTES=200000 UPLINK=1e6 TASKS_PER_WORKER=10
    SIM_CLUSTERS=${SIM_CLUSTERS:-16} SIM_WORKERS=${SIM_WORKERS:-1024} SIM_TASKS=${SIM_TASKS:-1000000}
else
    clusters=64 regions=8 rounds=3
    export TASK_S=2.0 TASK_BYTES=100000 UPLINK=4e5 TASKS_PER_WORKER=5
    SIM_CLUSTERS=${SIM_CLUSTERS:-64} SIM_WORKERS=${SIM_WORKERS:-16384} SIM_TASKS=${SIM_TASKS:-10000000}
fi
build_release
hmw=$(realpath "${CARGO_TARGET_DIR:-target}")/release/hmw
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2" | head -1; }

python3 scripts/bench/shapes.py "$hmw" "$clusters" "$regions" "$rounds" | tee "$work/shapes.log"
shapes=$(tail -1 "$work/shapes.log")

sim_plan "$SIM_TASKS" "$SIM_CLUSTERS" "$SIM_WORKERS" 100.0 16 16 > "$work/sim.toml"
/usr/bin/time -o "$work/time" -f '%e %M' "$hmw" simulate "$work/sim.toml" --runs 1 > "$work/sim.log"
tail -1 "$work/sim.log"
read -r sim_wall sim_kb < "$work/time"

line="scale clusters=$clusters mpi_clusters=$(field mpi_clusters "$shapes")"
line+=" workers=$(field workers "$shapes") verified=$(field verified "$shapes")"
for key in startup_s startup_overlap busy_pct flat_err tree_err shape_gap shape_ok rss_gb; do
    line+=" $key=$(field "$key" "$shapes")"
done
line+=" sim_workers=$((SIM_CLUSTERS * SIM_WORKERS)) sim_tasks=$SIM_TASKS sim_wall_s=$sim_wall"
line+=" sim_rss_gb=$(awk -v kb="$sim_kb" 'BEGIN { printf "%.2f", kb / 1048576 }')"
echo "$line"
if [ "${QUICK:-0}" = 1 ]; then
    [ "$(field verified "$shapes")" = true ] || { echo "bench-scale: a task lost or gathered twice" >&2; exit 1; }
    predicted=$(field predicted_ratio "$shapes") measured=$(field measured_ratio "$shapes")
    awk -v p="$predicted" -v m="$measured" 'BEGIN { exit !((p > 1) == (m > 1)) }' || {
        echo "bench-scale: the model predicted the other shape faster (tree/flat $predicted, measured $measured)" >&2
        exit 1
    }
fi
