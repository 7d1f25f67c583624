#!/usr/bin/env bash
# The whole test suite: the layout checks (no import cycle between files, the `hmw` command
# built without MPI predicting as the MPI build does), unit tests, in-process cluster tests,
# multi-process runs under mpirun, and the reduced validation suite of the model
# (scripts/validate.sh --quick: three short scenarios, about 20 s once its release build is
# done). This is what CI runs.
#
# Fails when a test fails or when the validation script fails (a run that fails, or a
# prediction beyond its error threshold); a validation target missed is only reported. Last
# two lines: the tests' totals, then the validation's own last line.
#
# Then the applications' quick check (scripts/apps.sh --quick: SRMSD, TSP in three variants
# and the matrix product's row/column strategy across three clusters, each verified). Then the
# testbed's check (scripts/testbed-check.sh: emulated hosts, LANs, the WAN emulator, CPU
# quotas, sshd, MPI over ssh, Slurm; about a minute on this 2-core machine, as root); it fails
# the suite when it fails. Then `hmw launch` on the testbed's hosts (scripts/deploy-check.sh:
# ssh and Slurm launchers, every rank's host, the keys on each host, a lost connection, SIGINT
# and SIGKILL with --cleanup; one testbed, a few minutes). Their last lines are printed last.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
. scripts/env.sh

checks_ok=true
echo "test: scripts/check-imports.py"
python3 scripts/check-imports.py || checks_ok=false

# Binaries first: the multi-process tests start them.
cargo build --workspace --bins --quiet
echo "test: scripts/check-mpi-off.sh"
scripts/check-mpi-off.sh || checks_ok=false

log=$(mktemp)
validation_log=$(mktemp)
testbed_log=$(mktemp)
apps_log=$(mktemp)
deploy_log=$(mktemp)
trap 'rm -f "$log" "$validation_log" "$testbed_log" "$apps_log" "$deploy_log"' EXIT
tests_ok=true
cargo test --workspace --quiet --no-fail-fast 2>&1 | tee "$log" || tests_ok=false

validation_ok=true
echo "test: scripts/validate.sh --quick"
scripts/validate.sh --quick >"$validation_log" 2>&1 || validation_ok=false
if ! $validation_ok; then
    echo "test: the validation failed; the end of its output:" >&2
    tail -30 "$validation_log" >&2
fi

apps_ok=true
echo "test: scripts/apps.sh --quick"
apps_start=$(date +%s)
scripts/apps.sh --quick >"$apps_log" 2>&1 || apps_ok=false
echo "test: the applications' check took $(($(date +%s) - apps_start)) s"
if ! $apps_ok; then
    echo "test: the applications' check failed; the end of its output:" >&2
    tail -30 "$apps_log" >&2
fi

testbed_ok=true
echo "test: scripts/testbed-check.sh"
testbed_start=$(date +%s)
scripts/testbed-check.sh >"$testbed_log" 2>&1 || testbed_ok=false
echo "test: the testbed's check took $(($(date +%s) - testbed_start)) s"
if ! $testbed_ok; then
    echo "test: the testbed's check failed; the end of its output:" >&2
    tail -30 "$testbed_log" >&2
fi

deploy_ok=true
echo "test: scripts/deploy-check.sh"
deploy_start=$(date +%s)
scripts/deploy-check.sh >"$deploy_log" 2>&1 || deploy_ok=false
echo "test: the deployment check took $(($(date +%s) - deploy_start)) s"
if ! $deploy_ok; then
    echo "test: the deployment check failed; the end of its output:" >&2
    tail -30 "$deploy_log" >&2
fi

# cargo test prints one summary line per test binary; add them up for a closing line.
awk '/^test result:/ { p += $4; f += $6 } END { printf "%d passed, %d failed\n", p, f }' "$log"
tail -1 "$validation_log"
tail -1 "$apps_log"
tail -1 "$testbed_log"
tail -1 "$deploy_log"
$checks_ok && $tests_ok && $validation_ok && $apps_ok && $testbed_ok && $deploy_ok
