#!/usr/bin/env bash
# Simulator benchmark (hmw simulate, release build, no MPI):
#  - a simulated run of 8 clusters (the main one and 7 behind WANs), 1,024 workers (128 each)
#    and 1,000,000 tasks of 10 ms: the wall-clock seconds the simulation takes (target: under
#    60 s);
#  - the main master core's CPU time per task inside `handle` (dispatch, gathering, the
#    scheduler) in one cluster of 4, 64, 1,024 and 16,384 workers, 200,000 tasks each, or 64
#    a worker when that is more (what a worker costs once, its first request, stop and
#    statistics, then weighs little per task) (target: flat; dispatch is O(log W));
#  - a million workers: 64 clusters of 16,384 (the main one and 63 behind WANs, 16 tasks per
#    inter-cluster message and 16 results per inter-cluster result) and 10,000,000 tasks of
#    1 s: the whole command's wall-clock seconds and peak memory (targets: 120 s, 8 GiB).
# With CHART=1 it draws the master core's cost per task against the workers in
# docs/benchmarks/simulate-master-core.svg (scripts/bench/growth-chart.py).
# The plans are generated here (scripts/lib/sim-plan.sh), under a temporary folder. Figures
# vary with the machine's load: run it on a quiet machine. Smaller sizes for a quick check:
# TASKS, CORE_TASKS, SIM_CLUSTERS, SIM_WORKERS (per cluster), SIM_TASKS.
# Last line:
#   simulate clusters=8 workers=1024 tasks=1000000 wall_s=X core_us_per_task w4=A w64=B
#   w1024=C w16384=D sim_workers=N sim_tasks=T sim_wall_s=S sim_rss_gb=R
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh time
. scripts/env.sh
. scripts/lib/sim-plan.sh
TASKS=${TASKS:-1000000}
CORE_TASKS=${CORE_TASKS:-200000}
SIM_CLUSTERS=${SIM_CLUSTERS:-64}
SIM_WORKERS=${SIM_WORKERS:-16384}
SIM_TASKS=${SIM_TASKS:-10000000}
cargo build --release --quiet -p hmw-cli
hmw=${CARGO_TARGET_DIR:-target}/release/hmw
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2" | head -1; }

sim_plan "$TASKS" 8 128 > "$work/eight.toml"
line=$("$hmw" simulate "$work/eight.toml" --runs 1 | tail -1)
echo "$line"
wall=$(field wall_s "$line")

declare -A core
for w in 4 64 1024 16384; do
    tasks=$((CORE_TASKS > 64 * w ? CORE_TASKS : 64 * w))
    sim_plan "$tasks" 1 "$w" > "$work/w$w.toml"
    line=$("$hmw" simulate "$work/w$w.toml" --runs 1 --profile-master | tail -1)
    echo "workers=$w $line"
    core[$w]=$(field master_core_us_per_task "$line")
done

if [ "${CHART:-0}" = 1 ]; then
    mkdir -p docs/benchmarks
    python3 scripts/bench/growth-chart.py docs/benchmarks/simulate-master-core.svg \
        "The master core's cost per task, one cluster" workers "microseconds" \
        "master core=4:${core[4]},64:${core[64]},1024:${core[1024]},16384:${core[16384]}"
fi

# The whole command, plan loading and layout included: GNU time's elapsed seconds and peak
# resident kilobytes.
sim_plan "$SIM_TASKS" "$SIM_CLUSTERS" "$SIM_WORKERS" 100.0 16 16 > "$work/million.toml"
/usr/bin/time -o "$work/time" -f '%e %M' "$hmw" simulate "$work/million.toml" --runs 1 \
    > "$work/million.log"
tail -1 "$work/million.log"
read -r sim_wall sim_kb < "$work/time"
sim_rss=$(awk -v kb="$sim_kb" 'BEGIN { printf "%.2f", kb / 1048576 }')
echo "simulate clusters=8 workers=1024 tasks=$TASKS wall_s=$wall core_us_per_task" \
    "w4=${core[4]} w64=${core[64]} w1024=${core[1024]} w16384=${core[16384]}" \
    "sim_workers=$((SIM_CLUSTERS * SIM_WORKERS)) sim_tasks=$SIM_TASKS sim_wall_s=$sim_wall" \
    "sim_rss_gb=$sim_rss"
