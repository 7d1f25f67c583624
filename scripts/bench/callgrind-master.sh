#!/usr/bin/env bash
# The master's instructions per task under callgrind, 4 workers of two buffers, the dispatch
# benchmark's tiny tasks (64-byte task and result, no compute):
#   - handle: inside `MasterCore::handle`, from `core/examples/master_handle.rs`, which drives
#     the core alone (no MPI, no clock, its workers answered in a fixed order): deterministic,
#     the same count at every run of the same build whatever the machine's load;
#   - run, total: in the master's loop (`Master::run`, or `runner::play_with` where it is
#     inlined) and in its whole process (the run's setup included: with a journal, the binary's
#     fingerprint), in a real run of `hmw-dispatch` under mpirun, the
#     master alone under callgrind. These count the polls the master makes while it waits, so
#     they move by a few percent from run to run with the machine's timing.
# With JOURNAL=1 the master keeps its journal of results (--journal): the last line then adds
# `journal_bytes_per_result=B`, the journal's size over the tasks.
# Usage: scripts/bench/callgrind-master.sh [BIN_DIR] [TASKS]
#   BIN_DIR  the folder of the builds (default target/release-lto, the build that
#            scripts/bench-dispatch.sh measures): BIN_DIR/hmw-dispatch and
#            BIN_DIR/examples/master_handle (`cargo build --profile release-lto -p
#            hmw-dispatch` and `cargo build --profile release-lto -p hmw-core --example
#            master_handle`: `--example` restricts one command to the examples); two
#            builds, before and after a change, compare in one session.
#   TASKS    default 40000
# Last line: `callgrind_master tasks=N handle=H run=R total=T run_and_setup=S` (instructions per
# task; S the statistic `run` was until 2026-11-29, see below).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/setup.sh valgrind
. scripts/env.sh
bin_dir=${1:-target/release-lto}
tasks=${2:-40000}
for bin in "$bin_dir/hmw-dispatch" "$bin_dir/examples/master_handle"; do
    [ -x "$bin" ] || {
        echo "callgrind_master: no $bin (cargo build --profile release-lto -p hmw-dispatch;" \
            "cargo build --profile release-lto -p hmw-core --example master_handle)" >&2
        exit 1
    }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
per_task() { awk -v n="${1:-0}" -v t="$tasks" 'BEGIN { printf "%.0f", n / t }'; }

# The core alone: everything counted is inside `handle`.
valgrind --tool=callgrind --callgrind-out-file="$work/core.out" \
    --toggle-collect='master_handle::handle' "$bin_dir/examples/master_handle" "$tasks" \
    >"$work/core.log" 2>&1 || { cat "$work/core.log" >&2; exit 1; }
handle=$(awk '/^(summary|totals):/ { print $2; exit }' "$work/core.out")

# A real run.
printf 'localhost\n%.0s' 1 2 3 4 5 >"$work/hosts"
printf '[run]\nstatistics_interval = 0\n[application]\ntasks = %d\n' "$tasks" >"$work/run.toml"
journal=()
[ "${JOURNAL:-0}" = 1 ] && journal=(--journal "$work/journal.hmwj")
mpirun --oversubscribe -np 1 valgrind --tool=callgrind --callgrind-out-file="$work/run.out" \
    "$bin_dir/hmw-dispatch" -m "$work/hosts" -c "$work/run.toml" "${journal[@]}" : \
    -np 4 "$bin_dir/hmw-dispatch" -m "$work/hosts" -c "$work/run.toml" >"$work/run.log" 2>&1 ||
    { cat "$work/run.log" >&2; exit 1; }
annotated=$(callgrind_annotate --inclusive=yes "$work/run.out" 2>/dev/null)
# The inclusive count of the first function whose name matches $1 (callgrind_annotate prints
# "count (share) file:function" lines, the count with thousands separators).
inclusive() { { grep -E "$1" <<<"$annotated" || true; } | head -1 | awk '{ gsub(",", "", $1); print $1 }'; }
total=$(inclusive 'PROGRAM TOTALS')
# The master's loop. Until 2026-11-29 `run` was the first of `Master::run` and
# `runner::play_with` in callgrind's order, which is play_with's when the loop is inlined in it
# and otherwise play_with's too, the larger: it then counted what the run does once before
# its loop (with a journal, the SHA-256 of the binary, about 1.3e9 instructions for a 40 MB
# build) as if it were per task. It is printed beside, as `run_and_setup`.
run=$(inclusive 'Master<.*>::run \[')
[ -n "$run" ] || run=$(inclusive 'runner::play_with')
run_and_setup=$(inclusive 'Master<.*>::run|runner::play_with')
line="callgrind_master tasks=$tasks handle=$(per_task "$handle") run=$(per_task "$run") total=$(per_task "$total") run_and_setup=$(per_task "$run_and_setup")"
if [ "${JOURNAL:-0}" = 1 ]; then
    # The journal over the tasks: each result (64 bytes of payload) and its record.
    line="$line journal_bytes_per_result=$(per_task "$(stat -c %s "$work/journal.hmwj")")"
fi
echo "$line"
