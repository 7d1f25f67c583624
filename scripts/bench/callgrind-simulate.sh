#!/usr/bin/env bash
# Instructions per task of `hmw simulate` under callgrind, deterministic (the same count at
# every run of the same build, whatever the machine's load). Each figure is a marginal cost:
# the count of a run of 2 x N tasks less that of a run of N, over N, so what a run spends once
# per worker (its first request, its stop and its statistics) is not spread over the tasks.
#   - one cluster of W workers for each W of WORKERS (tasks of 10 ms, two buffers each): the
#     main master core's instructions per task (every call of `MasterCore::handle` goes
#     through `main_master_handle` in `sim/src/world.rs`, counted inclusively) and the whole
#     process's;
#   - with SCALE=CxW (say 64x256), a federation of C clusters of W workers, tasks of 1 s,
#     16 tasks per inter-cluster message and 16 results per inter-cluster result: the whole
#     process's, from runs of 5 and 10 tasks per worker.
# Usage: scripts/bench/callgrind-simulate.sh [HMW]
#   HMW      the `hmw` binary (default target/release/hmw, built here); two builds, before and
#            after a change, compare in one session.
#   TASKS    N for the one-cluster runs (default 100000); WORKERS (default "4 64 1024 16384").
# Last line: `callgrind_simulate tasks=N handle w4=A w64=B ... total w4=X ... [scale=CxW
# scale_total=Y]` (instructions per task).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh valgrind
. scripts/env.sh
. scripts/lib/sim-plan.sh
TASKS=${TASKS:-100000}
WORKERS=${WORKERS:-4 64 1024 16384}
hmw=${1:-}
if [ -z "$hmw" ]; then
    cargo build --release --quiet -p hmw-cli
    hmw=${CARGO_TARGET_DIR:-target}/release/hmw
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Run `hmw simulate` on plan $1 under callgrind; print the process's instructions and those
# inside `main_master_handle`, inclusive.
grind() {
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
        "$hmw" simulate "$1" --runs 1 >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
    grep -q '^simulate runs=1' "$work/log" || { cat "$work/log" >&2; exit 1; }
    callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null |
        awk '/PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
             /main_master_handle / && !handle { gsub(",", "", $1); handle = $1 }
             END { print total + 0, handle + 0 }'
}
# (count of 2N - count of N) / N.
marginal() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.0f", (b - a) / n }'; }

handle="" total=""
for w in $WORKERS; do
    sim_plan "$TASKS" 1 "$w" >"$work/once.toml"
    sim_plan $((2 * TASKS)) 1 "$w" >"$work/twice.toml"
    once=$(grind "$work/once.toml") twice=$(grind "$work/twice.toml")
    read -r t1 h1 <<<"$once"
    read -r t2 h2 <<<"$twice"
    h=$(marginal "$h1" "$h2" "$TASKS") t=$(marginal "$t1" "$t2" "$TASKS")
    echo "workers=$w handle=$h total=$t"
    handle+=" w$w=$h" total+=" w$w=$t"
done
line="callgrind_simulate tasks=$TASKS handle$handle total$total"
if [ -n "${SCALE:-}" ]; then
    clusters=${SCALE%x*} per=${SCALE#*x}
    n=$((clusters * per * 5))
    sim_plan "$n" "$clusters" "$per" 100.0 16 16 >"$work/once.toml"
    sim_plan $((2 * n)) "$clusters" "$per" 100.0 16 16 >"$work/twice.toml"
    once=$(grind "$work/once.toml") twice=$(grind "$work/twice.toml")
    read -r t1 _ <<<"$once"
    read -r t2 _ <<<"$twice"
    line+=" scale=$SCALE scale_total=$(marginal "$t1" "$t2" "$n")"
fi
echo "$line"
