#!/usr/bin/env bash
# Scale benchmark (issue 43): a federation of many clusters on this machine, and the
# simulator at a million workers.
#  - scripts/bench/shapes.py: the federation of scripts/lib/federation.py (the main cluster
#    and MPI_CLUSTERS - 1 others under mpirun, every other one a cluster of threads, each
#    behind an emulated WAN held to its rates) as a star and as a tree of regions, each
#    predicted (`hmw predict --compare`) and run in interleaved rounds: each shape's error,
#    their gap, whether the model picked the faster, the star's startup, the busiest second
#    of the main master or a CM process, the memory of the application's processes, every
#    task gathered once;
#  - the busy phase (scripts/bench/link-cost.py, PHASES=busy): as many clusters, the main
#    one under mpirun and the others clusters of threads, tasks of 10 ms, the machine full:
#    the busiest process of the main cluster's path (its master or a CM process), % of a
#    core, over a window of 4 s;
#  - `hmw simulate` of SIM_CLUSTERS clusters of SIM_WORKERS workers and SIM_TASKS tasks of 1 s
#    (scripts/lib/sim-plan.sh, 16 tasks a message between clusters): its wall-clock seconds
#    and peak memory.
# The CMs of each MPI cluster's links share one process (LINKS_IN_ONE_PROCESS=0: a process
# each). Full (default): 64 clusters in 8 regions, 8 of them under mpirun, 5 tasks of 2 s a
# worker, 100 KB each way, uplinks of 400 KB/s, three rounds (about 6 minutes); 64 x 16,384
# workers, 10,000,000 tasks. QUICK=1 (what scripts/test.sh runs): 16 clusters in 4 regions, 2
# under mpirun, 10 tasks of 1 s a worker, 200 KB, uplinks of 1 MB/s, one round; 16 x 1,024
# workers, 1,000,000 tasks (about a minute and a half).
# With QUICK=1 it fails unless every task was gathered once and the shape the model predicts
# faster is the faster measured. With SWEEP=1 it first runs the full plans once at 8, 16, 32
# and 64 clusters (regions of 4 up to 32 clusters, of 8 at 64) and draws their growth curves
# in docs/benchmarks/ (scripts/bench/growth-chart.py): the makespans against their
# predictions, the startup, the memory. Run the full one on a quiet machine.
# Last line:
#   scale clusters=N mpi_clusters=M workers=W verified=B startup_s=S startup_overlap=O
#   busy_pct=P flat_err=E1 tree_err=E2 shape_gap=G shape_ok=B rss_gb=R sim_workers=N
#   sim_tasks=T sim_wall_s=X sim_rss_gb=Y star_busy_pct=P2
# (`P`: the busy phase's; `P2`: the busiest second of the same processes in the star's runs,
# the figure `busy_pct` was before the busy phase, 2026-11-29.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh time
. scripts/env.sh
. scripts/lib/sim-plan.sh
if [ "${QUICK:-0}" = 1 ]; then
    clusters=16 regions=4 rounds=1
    export TASK_S=1.0 TASK_BYTES=200000 UPLINK=1e6 TASKS_PER_WORKER=10 MPI_CLUSTERS=2
    SIM_CLUSTERS=${SIM_CLUSTERS:-16} SIM_WORKERS=${SIM_WORKERS:-1024} SIM_TASKS=${SIM_TASKS:-1000000}
else
    clusters=64 regions=8 rounds=3
    export TASK_S=2.0 TASK_BYTES=100000 UPLINK=4e5 TASKS_PER_WORKER=5 MPI_CLUSTERS=8
    SIM_CLUSTERS=${SIM_CLUSTERS:-64} SIM_WORKERS=${SIM_WORKERS:-16384} SIM_TASKS=${SIM_TASKS:-10000000}
fi
export LINKS_IN_ONE_PROCESS=${LINKS_IN_ONE_PROCESS:-1}
build_release
hmw=$(realpath "${CARGO_TARGET_DIR:-target}")/release/hmw
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2" | head -1; }

if [ "${SWEEP:-0}" = 1 ]; then
    declare -A curve
    # The middle of a predicted range B-W.
    mid() { awk -v r="$1" 'BEGIN { split(r, b, "-"); printf "%.3f", (b[1] + b[2]) / 2 }'; }
    for n in 8 16 32 64; do
        python3 scripts/bench/shapes.py "$hmw" "$n" $((n < 64 ? n / 4 : 8)) 1 | tee "$work/sweep.log"
        l=$(tail -1 "$work/sweep.log")
        curve[flat]+="$n:$(field flat_s "$l"),"
        curve[tree]+="$n:$(field tree_s "$l"),"
        curve[flat_pred]+="$n:$(mid "$(field flat_pred_s "$l")"),"
        curve[tree_pred]+="$n:$(mid "$(field tree_pred_s "$l")"),"
        curve[startup]+="$n:$(field startup_s "$l"),"
        curve[overlap]+="$n:$(awk -v o="$(field startup_overlap "$l")" -v n="$n" 'BEGIN { printf "%.3f", o / (n - 1) }'),"
        curve[rss]+="$n:$(field rss_gb "$l"),"
    done
    mkdir -p docs/benchmarks
    chart=scripts/bench/growth-chart.py
    python3 $chart docs/benchmarks/scale-makespan.svg "Star and tree: measured and predicted" \
        clusters seconds "star=${curve[flat]}" "star, predicted=${curve[flat_pred]}" \
        "tree=${curve[tree]}" "tree, predicted=${curve[tree_pred]}"
    python3 $chart docs/benchmarks/scale-startup.svg "Startup of the star" clusters \
        "seconds, or links" "startup_s=${curve[startup]}" "overlap / links=${curve[overlap]}"
    python3 $chart docs/benchmarks/scale-memory.svg "Peak memory of the application's processes" clusters \
        GB "rss_gb=${curve[rss]}"
fi

python3 scripts/bench/shapes.py "$hmw" "$clusters" "$regions" "$rounds" | tee "$work/shapes.log"
shapes=$(tail -1 "$work/shapes.log")

PHASES=busy BUSY_TASK_S=0.01 python3 scripts/bench/link-cost.py "$hmw" "$clusters" | tee "$work/busy.log"
busy=$(tail -1 "$work/busy.log")

sim_plan "$SIM_TASKS" "$SIM_CLUSTERS" "$SIM_WORKERS" 100.0 16 16 > "$work/sim.toml"
/usr/bin/time -o "$work/time" -f '%e %M' "$hmw" simulate "$work/sim.toml" --runs 1 > "$work/sim.log"
tail -1 "$work/sim.log"
read -r sim_wall sim_kb < "$work/time"

line="scale clusters=$clusters mpi_clusters=$(field mpi_clusters "$shapes")"
line+=" workers=$(field workers "$shapes") verified=$(field verified "$shapes")"
line+=" startup_s=$(field startup_s "$shapes") startup_overlap=$(field startup_overlap "$shapes")"
line+=" busy_pct=$(field busy_path_pct "$busy")"
for key in flat_err tree_err shape_gap shape_ok rss_gb; do
    line+=" $key=$(field "$key" "$shapes")"
done
line+=" sim_workers=$((SIM_CLUSTERS * SIM_WORKERS)) sim_tasks=$SIM_TASKS sim_wall_s=$sim_wall"
line+=" sim_rss_gb=$(awk -v kb="$sim_kb" 'BEGIN { printf "%.2f", kb / 1048576 }')"
line+=" star_busy_pct=$(field busy_pct "$shapes")"
echo "$line"
if [ "${QUICK:-0}" = 1 ]; then
    [ "$(field verified "$shapes")" = true ] || { echo "bench-scale: a task lost or gathered twice" >&2; exit 1; }
    predicted=$(field predicted_ratio "$shapes") measured=$(field measured_ratio "$shapes")
    awk -v p="$predicted" -v m="$measured" 'BEGIN { exit !((p > 1) == (m > 1)) }' || {
        echo "bench-scale: the model predicted the other shape faster (tree/flat $predicted, measured $measured)" >&2
        exit 1
    }
fi
