#!/usr/bin/env bash
# Simulator benchmark (hmw simulate, release build, no MPI):
#  - a simulated run of 8 clusters (the main one and 7 behind WANs), 1,024 workers (128 each)
#    and 1,000,000 tasks of 10 ms: the wall-clock seconds the simulation takes (target: under
#    60 s);
#  - the main master core's CPU time per task inside `handle` (dispatch, gathering, the
#    scheduler) in one cluster of 4, 64 and 1,024 workers, 200,000 tasks each (target: the
#    figure at 1,024 workers at most twice the one at 4: dispatch is O(log W)).
# The plans are generated here, under a temporary folder. Figures vary with the machine's
# load: run it on a quiet machine.
# Last line:
#   simulate clusters=8 workers=1024 tasks=1000000 wall_s=X core_us_per_task w4=A w64=B w1024=C
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
. scripts/lib/sim-plan.sh
TASKS=${TASKS:-1000000}
CORE_TASKS=${CORE_TASKS:-200000}
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
for w in 4 64 1024; do
    sim_plan "$CORE_TASKS" 1 "$w" > "$work/w$w.toml"
    line=$("$hmw" simulate "$work/w$w.toml" --runs 1 --profile-master | tail -1)
    echo "workers=$w $line"
    core[$w]=$(field master_core_us_per_task "$line")
done
echo "simulate clusters=8 workers=1024 tasks=$TASKS wall_s=$wall core_us_per_task w4=${core[4]} w64=${core[64]} w1024=${core[1024]}"
