#!/usr/bin/env bash
# The fault suite: one testbed kept up for every run of configs/testbed/faults.toml (three
# clusters of real computation, brazil through Slurm), a run without faults, then one run per
# fault, each struck once 30 % of its tasks are in:
#   ext_worker_host   a worker host of an external cluster killed (every process, sshd too)
#   main_worker_host  a worker host of the main cluster killed
#   master            the master's host killed and its run folder removed
#   cm_main, cm_ext   the main cluster's, then an external cluster's, CM rank killed (-9)
#   lan_cut           a worker host's LAN cut for 60 s: longer than [launch] host_timeout_s,
#                     so its cluster is started again without it (not a stall)
#   launcher          hmw launch killed (-9), then hmw launch --resume
#   power             every process of the run killed on every host, the journal cut to what
#                     the master had synced, the hosts back, then hmw launch --resume
# Each run is judged (xtask/src/faults/): survived (the launch, or its resume, ended well),
# verified (the application gathered every task exactly once: its own count, and a sum of ids
# and of counts), within its bound (makespan from the first clock start to the last result at
# most the prediction + the fault's own duration + twice the restart time). Last line:
#   faults names=N1,N2,... scenarios=N survived=S verified=V lost_results=L duplicate_gathers=D worst_overhead=X within_bound=B
# Exits non-zero unless every run survived, verified and kept within its bound.
#
#   scripts/faults.sh           # every fault, about 15 minutes on this 2-core machine
#   scripts/faults.sh --quick   # launcher and cm_ext on half the tasks (scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
. scripts/env.sh
build_release
exec "$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/xtask" faults "$@"
