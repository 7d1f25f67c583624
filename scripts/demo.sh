#!/usr/bin/env bash
# The main job on an embedded default: a blocked matrix multiplication on an emulated cluster
# on this machine (a master and four workers under mpirun), verified against a direct product.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. scripts/env.sh
cargo build --release --workspace --bins --quiet
hosts=configs/local.hosts
config=configs/matmul.toml
ranks=$(grep -cv '^\s*\(#\|$\)' "$hosts")
echo "demo: matmul on $ranks ranks ($hosts, $config)"
mpirun --oversubscribe -np "$ranks" target/release/hmw-matmul -m "$hosts" -c "$config" \
    --stats-json target/demo.stats.json
echo "demo: statistics in target/demo.stats.json"
