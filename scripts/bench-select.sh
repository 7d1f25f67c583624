#!/usr/bin/env bash
# Selection benchmark (docs/benchmarks.md, "Selection"; docs/model.md, "Selection by branch and
# bound"): the automatic selection's branch and bound, release build, on plans generated from a
# fixed seed (model/examples/bench_select.rs): five plans of 3 clusters x 64 workers of
# distinct speeds (5,000 to 100,000 tasks; the longest time to prove the optimum, and the
# largest gap, 0 when all are proved), two plans of 8 x 128 (the longest time and the largest
# gap left, the budget stopping the search), and CHECKS random heterogeneous plans of 12 to 16
# workers on which the branch and bound must prove the exhaustive search's optimum.
# The machine's load comes first (figures are wall-clock times).
# Last line: select c3x64_s=T1 c3x64_gap=G1 c8x128_s=T2 c8x128_gap=G2 optimal_checked=N/M
set -euo pipefail
cd "$(dirname "$0")/.."
CHECKS=${CHECKS:-100}
BUDGET_S=${BUDGET_S:-5}
SEED=${SEED:-2026}
cargo build --release -p hmw-model --example bench_select --quiet
bin="${CARGO_TARGET_DIR:-target}/release/examples/bench_select"
echo "load: $(uptime)"
"$bin" --checks "$CHECKS" --budget-s "$BUDGET_S" --seed "$SEED"
