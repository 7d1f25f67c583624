#!/usr/bin/env bash
# The whole test suite: unit tests, in-process cluster tests, and multi-process runs under
# mpirun. This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. scripts/env.sh

# Binaries first: the multi-process tests start them.
cargo build --workspace --bins --quiet
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --quiet 2>&1 | tee "$log"
# cargo test prints one summary line per test binary; add them up for a closing line.
awk '/^test result:/ { p += $4; f += $6 } END { printf "%d passed, %d failed\n", p, f; exit (f > 0) }' "$log"
