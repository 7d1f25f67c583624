#!/usr/bin/env bash
# The main job on an embedded default: the three-cluster run of configs/demo-three-clusters.toml
# on this machine — the model's prediction first, then the live run (one mpirun per cluster,
# WANs emulated by hmw-wanem relays), then the summary. Last line:
#   demo clusters=3 tasks=N verified=true|false makespan_s=T
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. scripts/env.sh
cargo build --release --workspace --bins --quiet
plan=${1:-configs/demo-three-clusters.toml}
out=target/demo.out
target/release/hmw launch "$plan" --work-dir target/launch/demo | tee "$out"
verified=$(sed -n 's/.* verified=\([a-z]*\).*/\1/p' "$out" | tail -1)
sed -n 's/^launch clusters=\([0-9]*\) tasks=\([0-9]*\) makespan_s=\([0-9.]*\).*/demo clusters=\1 tasks=\2 verified='"${verified:-false}"' makespan_s=\3/p' "$out" | tail -1
