#!/usr/bin/env bash
# Instructions per task of `hmw simulate` under callgrind, deterministic (the same count at
# every run of the same build, whatever the machine's load):
#   - one cluster of W workers for each W of WORKERS (tasks of 10 ms, two buffers each): the
#     main master core's instructions per task (every call of `MasterCore::handle` goes
#     through `main_master_handle` in `sim/src/world.rs`, which callgrind counts alone) and
#     the whole process's;
#   - with SCALE=CxW (say 64x256), a federation of C clusters of W workers, TASKS_PER_WORKER
#     tasks a worker (default 10) of 1 s, 16 tasks per inter-cluster message and 16 results
#     per inter-cluster result: the whole process's instructions per task.
# Usage: scripts/bench/callgrind-simulate.sh [HMW]
#   HMW      the `hmw` binary (default target/release/hmw, built here); two builds, before and
#            after a change, compare in one session.
#   TASKS    tasks of each one-cluster run (default 200000); WORKERS (default "4 64 1024 16384").
# Last line: `callgrind_simulate tasks=N handle w4=A w64=B ... total w4=X ... [scale=CxW
# scale_total=Y]` (instructions per task).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh valgrind
. scripts/env.sh
. scripts/lib/sim-plan.sh
TASKS=${TASKS:-200000}
WORKERS=${WORKERS:-4 64 1024 16384}
TASKS_PER_WORKER=${TASKS_PER_WORKER:-10}
hmw=${1:-}
if [ -z "$hmw" ]; then
    cargo build --release --quiet -p hmw-cli
    hmw=${CARGO_TARGET_DIR:-target}/release/hmw
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
per_task() { awk -v n="${1:-0}" -v t="$2" 'BEGIN { printf "%.0f", n / t }'; }
# The count callgrind's output file $1 holds ("summary:" or "totals:").
counted() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }
# Run `hmw simulate` on plan $1 under callgrind, options $2..., output in $work/cg.out.
grind() {
    local plan=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" \
        "$hmw" simulate "$plan" --runs 1 >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
    grep -q '^simulate runs=1' "$work/log" || { cat "$work/log" >&2; exit 1; }
}

handle="" total=""
for w in $WORKERS; do
    sim_plan "$TASKS" 1 "$w" >"$work/w$w.toml"
    grind "$work/w$w.toml" --toggle-collect='*main_master_handle*'
    h=$(per_task "$(counted "$work/cg.out")" "$TASKS")
    grind "$work/w$w.toml"
    t=$(per_task "$(counted "$work/cg.out")" "$TASKS")
    echo "workers=$w handle=$h total=$t"
    handle+=" w$w=$h" total+=" w$w=$t"
done
line="callgrind_simulate tasks=$TASKS handle$handle total$total"
if [ -n "${SCALE:-}" ]; then
    clusters=${SCALE%x*} per=${SCALE#*x}
    tasks=$((clusters * per * TASKS_PER_WORKER))
    sim_plan "$tasks" "$clusters" "$per" 100.0 16 16 >"$work/scale.toml"
    grind "$work/scale.toml"
    line+=" scale=$SCALE scale_total=$(per_task "$(counted "$work/cg.out")" "$tasks")"
fi
echo "$line"
