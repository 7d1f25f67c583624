#!/usr/bin/env bash
# The whole test suite: the layout checks (no import cycle between files, no I/O stack under
# the crates that decide, the `hmw` command built without MPI predicting as the MPI build
# does), unit tests, in-process cluster tests, multi-process runs under mpirun, and the
# model's gate (scripts/validate.sh --quick: four short scenarios, three runs each, about two
# minutes once its release build is done). This is what CI runs.
#
# Fails when a test fails or when the gate fails (a run that fails, or a scenario whose median
# makespan of three runs is outside [0.90 best, 1.10 worst] of its prediction). Last two
# lines: the tests' totals, then the validation's own last line.
#
# Then the applications' quick check (scripts/apps.sh --quick: SRMSD, TSP in three variants
# and the matrix product's row/column strategy across three clusters, each verified). Then the
# watch check (scripts/check-watch.sh: `hmw top` in tmux on a three-cluster run, recorded state
# files, the HTML report in headless Chromium; about 35 s after its packages are installed).
# Then the testbed's check (scripts/testbed-check.sh: emulated hosts, LANs, the WAN emulator, CPU
# quotas, sshd, MPI over ssh, Slurm; about a minute on this 2-core machine, as root); it fails
# the suite when it fails. Then `hmw launch` on the testbed's hosts (scripts/deploy-check.sh:
# ssh and Slurm launchers, every rank's host, the keys on each host, a lost connection, SIGINT
# and SIGKILL with --cleanup; one testbed, a few minutes). Then the fault check
# (scripts/faults.sh --quick: the launcher killed and resumed, an external cluster's CM killed
# and its cluster started again, on the testbed; about three minutes). Then the scale check
# (QUICK=1 scripts/bench-scale.sh: sixteen clusters as a star and as a tree, predicted and
# run, and the simulator at 16,384 workers; about a minute). Their last lines are printed
# last.
set -euo pipefail
cd "$(dirname "$0")/.."
t_start=$(date +%s)
# Prints how long since the last call (or the start) and what it was. Usage: took WHAT
took() {
    local now
    now=$(date +%s)
    echo "test: $1 took $((now - t_start)) s"
    t_start=$now
}
scripts/setup.sh
. scripts/env.sh
# One build from a clean tree: cargo's incremental caches would only take disk (a clean run
# took 8.7 GB with them, 5.6 GB without). A full disk shows as the linker dying of a bus
# error, so say what is free before building.
export CARGO_INCREMENTAL=0
mkdir -p target
echo "test: $(df -BG --output=avail target | tail -1 | tr -d ' ') free under target/"
took "the setup"

checks_ok=true
echo "test: scripts/check-imports.py"
python3 scripts/check-imports.py || checks_ok=false
echo "test: scripts/check-layers.sh"
scripts/check-layers.sh || checks_ok=false

# Binaries first: the multi-process tests start them.
build_debug
took "the debug build"
echo "test: scripts/check-mpi-off.sh"
scripts/check-mpi-off.sh || checks_ok=false
took "the build without MPI"

log=$(mktemp)
steps_dir=$(mktemp -d)
trap 'rm -rf "$log" "$steps_dir"' EXIT
tests_ok=true
# cargo-nextest (on these machines) runs the test binaries side by side where `cargo test`
# runs them one after another: 135 s against 170 s here, most tests waiting on processes and
# links. It does not run documentation tests; `cargo test --doc` does.
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --cargo-quiet --no-fail-fast --status-level fail \
        --final-status-level fail 2>&1 | tee "$log" || tests_ok=false
    cargo test --workspace --doc --quiet 2>&1 | tee -a "$log" || tests_ok=false
else
    cargo test --workspace --quiet --no-fail-fast 2>&1 | tee "$log" || tests_ok=false
fi
took "the tests"

# The examples that teach, as a reader runs them: in one process and under mpirun (the
# pipeline's, a quick pipeline run, some 10 s each; the seed's cases are unit tests above).
for example in hello custom_scheduler pipeline; do
    for mode in "" --mpi; do
        echo "test: examples/$example/run.sh${mode:+ $mode}"
        line=$(examples/$example/run.sh ${mode:+"$mode"} 2>&1 | tail -1) || true
        echo "$line"
        grep -q 'verified=true' <<<"$line" || tests_ok=false
    done
done
took "the examples"

# Runs a check script (its output kept in $steps_dir/NAME.log), says how long it took, and on
# failure shows the end of its output and fails the suite. Usage: step NAME WHAT COMMAND...
steps_ok=true
step() {
    local name=$1 what=$2
    shift 2
    echo "test: $*"
    if "$@" >"$steps_dir/$name.log" 2>&1; then
        took "$what"
    else
        took "$what (failed; the end of its output below)" >&2
        tail -30 "$steps_dir/$name.log" >&2
        steps_ok=false
    fi
}
step validation "the validation" scripts/validate.sh --quick
step apps "the applications' check" scripts/apps.sh --quick
step watch "the watch check" scripts/check-watch.sh
step testbed "the testbed's check" scripts/testbed-check.sh
step deploy "the deployment check" scripts/deploy-check.sh
step faults "the fault check" scripts/faults.sh --quick
step scale "the scale check" env QUICK=1 scripts/bench-scale.sh

# cargo test prints one summary line per test binary, nextest one for all (`N tests run: P
# passed, F failed, ...`); add them up for a closing line.
awk '/^test result:/ { p += $4; f += $6 }
     / tests run: / { for (i = 1; i <= NF; i++) {
                          if ($i ~ /^passed/) p += $(i - 1)
                          if ($i ~ /^failed/) f += $(i - 1) } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
for name in validation apps watch testbed deploy faults scale; do
    tail -1 "$steps_dir/$name.log"
done
$checks_ok && $tests_ok && $steps_ok
