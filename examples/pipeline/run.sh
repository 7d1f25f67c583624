#!/usr/bin/env bash
# Runs the pipeline example on this machine, every rank a thread of one process; with --mpi,
# one MPI job. Prints `pipeline items=120 verified=true checked=120 makespan_s=...`.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/example.sh"
run_example pipeline hmw-pipeline "$@"
