#!/usr/bin/env bash
# Runs hello on this machine, every rank a thread of one process; with --mpi, one MPI job.
# Prints `hello total=... verified=true makespan_s=...`.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/example.sh"
run_example hello hmw-hello "$@"
