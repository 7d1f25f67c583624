#!/usr/bin/env bash
# Runs custom_scheduler on this machine, every rank a thread of one process; with --mpi, one
# MPI job. Prints `custom_scheduler primes=... tasks=... batches=... verified=true ...`.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/example.sh"
run_example custom_scheduler hmw-custom-scheduler "$@"
