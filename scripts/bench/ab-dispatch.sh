#!/usr/bin/env bash
# A/B of two builds of the dispatch workload (hmw-dispatch): tiny tasks, 1 master + WORKERS
# workers under mpirun, RUNS runs of each, interleaved (A, B, A, B, ...) so that a change of
# the machine's load hits both alike. Prints every run, then
#   ab_dispatch a_median=X b_median=Y b_over_a=R
# Usage: scripts/bench/ab-dispatch.sh A_BINARY B_BINARY   (environment: RUNS, TASKS, WORKERS;
#        B_JOURNAL=1 gives B's master a journal of its results, --journal, in a temporary
#        folder: the same binary twice measures what the journal costs; B_JOURNAL_DIR puts it
#        in another folder, /dev/shm for one in memory: the master's cost without the disk's)
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/env.sh
. scripts/lib/common.sh
a=$1
b=$2
RUNS=${RUNS:-7}
TASKS=${TASKS:-20000}
WORKERS=${WORKERS:-4}
work=$(mktemp -d)
jdir=$(mktemp -d -p "${B_JOURNAL_DIR:-$work}")
trap 'rm -rf "$work" "$jdir"' EXIT
for _ in $(seq $((WORKERS + 1))); do echo localhost; done >"$work/hosts"
printf '[run]\nstatistics_interval = 0\n[application]\ntasks = %d\n' "$TASKS" >"$work/run.toml"
rate() {
    local binary=$1
    shift
    timeout 600 mpirun --oversubscribe -np $((WORKERS + 1)) "$binary" -m "$work/hosts" \
        -c "$work/run.toml" "$@" 2>/dev/null |
        sed -n 's/.*tasks_per_s=\([0-9.]*\).*/\1/p' | tail -1
}
b_args=()
[ "${B_JOURNAL:-0}" = 1 ] && b_args=(--journal "$jdir/journal.hmwj")
: >"$work/a"
: >"$work/b"
for i in $(seq "$RUNS"); do
    ra=$(rate "$a")
    rb=$(rate "$b" "${b_args[@]}")
    echo "run $i: A $ra tasks/s, B $rb tasks/s"
    echo "$ra" >>"$work/a"
    echo "$rb" >>"$work/b"
done
ma=$(median <"$work/a")
mb=$(median <"$work/b")
awk -v a="$ma" -v b="$mb" 'BEGIN { printf "ab_dispatch a_median=%.0f b_median=%.0f b_over_a=%.3f\n", a, b, b / a }'
