#!/usr/bin/env bash
# The main job on an embedded default, on this machine (one mpirun per cluster, WANs emulated
# by user-space hmw-wanem relays):
#   1. a blocked matrix product across three clusters (configs/matmul-three-clusters.toml):
#      the external clusters split each task into finer ones and keep the operand blocks they
#      received; the product is checked against a direct one;
#   2. the three-cluster run of configs/demo-three-clusters.toml: the model's prediction
#      first, then the live run with its live prediction, then the summary and the predicted
#      against the measured makespan.
# `scripts/demo.sh PLAN` runs PLAN alone instead. Last line (from the last run; verified is
# true only when every run verified its answer):
#   demo clusters=N tasks=N verified=true|false makespan_s=T
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
scripts/setup.sh || exit 1
. scripts/env.sh || exit 1
cargo build --release --workspace --bins --quiet || exit 1

failed=0
verified=true
# Launch a plan, show its output, and note whether it ran and verified its answer.
launch() {
    local plan=$1 name=$2
    local out=target/demo-$name.out
    target/release/hmw launch "$plan" --work-dir "target/launch/demo-$name" | tee "$out"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
    grep -q ' verified=true' "$out" || verified=false
    last=$out
}

if [ $# -gt 0 ]; then
    launch "$1" plan
else
    echo "== 1/2: a blocked matrix product across three clusters"
    launch configs/matmul-three-clusters.toml matmul
    echo
    echo "== 2/2: the prediction put to the test: configs/demo-three-clusters.toml"
    launch configs/demo-three-clusters.toml three-clusters
fi
summary=$(sed -n 's/^launch clusters=\([0-9]*\) tasks=\([0-9]*\) makespan_s=\([0-9.]*\).*/clusters=\1 tasks=\2 makespan_s=\3/p' "$last" | tail -1)
clusters=$(sed -n 's/.*clusters=\([0-9]*\).*/\1/p' <<<"$summary")
tasks=$(sed -n 's/.*tasks=\([0-9]*\).*/\1/p' <<<"$summary")
makespan=$(sed -n 's/.*makespan_s=\([0-9.]*\).*/\1/p' <<<"$summary")
[ -n "$summary" ] || verified=false
echo "demo clusters=${clusters:-0} tasks=${tasks:-0} verified=$verified makespan_s=${makespan:-0}"
exit $failed
