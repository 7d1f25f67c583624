#!/usr/bin/env bash
# The main job on an embedded default, on this machine (one mpirun per cluster, WANs emulated
# by user-space hmw-wanem relays):
#   1. a blocked matrix product across three clusters (configs/matmul-three-clusters.toml):
#      `hmw calibrate` first measures the workers (all at once), LANs and WANs on this
#      machine, and the run's prediction uses that; the external clusters split each task
#      into finer ones and keep the operand blocks they received; the product is checked
#      against a direct one;
#   2. the three-cluster run of configs/demo-three-clusters.toml: the model's prediction
#      first, then the live run with its live prediction, then the summary and the predicted
#      against the measured makespan.
# `scripts/demo.sh PLAN` runs PLAN alone instead. `scripts/demo.sh --testbed` runs the demo on
# the testbed when the machine allows it (root, network namespaces, a CPU cgroup): each cluster
# on its own emulated hosts over ssh, the matrix product calibrated there first
# (configs/testbed/matmul-three-clusters.toml), then configs/testbed/demo-three-clusters.toml; it adds
# placement=ok to the last line when every rank ran on its machine-file line's host. Last
# line (from the last run; verified is true only when every run verified its answer):
#   demo clusters=N tasks=N verified=true|false makespan_s=T [placement=ok|fail]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
scripts/setup.sh || exit 1
. scripts/env.sh || exit 1
build_release || exit 1

failed=0
verified=true
# Launch a plan (with the calibration file $3 when given), show its output, and note whether
# it ran and verified its answer.
launch() {
    local plan=$1 name=$2 measured=()
    [ -z "${3:-}" ] || measured=(--measured "$3")
    local out=target/demo-$name.out
    target/release/hmw launch "$plan" --work-dir "target/launch/demo-$name" "${measured[@]}" | tee "$out"
    [ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
    grep -q ' verified=true' "$out" || verified=false
    last=$out
}
# Run the calibration command "$@" (hmw calibrate, here or on the testbed).
calibrate() {
    echo "== hmw calibrate: the workers (all at once), LANs and WANs measured where the run goes"
    "$@" || { failed=1; return 1; }
}
calibrate_args=(--tasks 10 --lan-runs 1 --lan-seconds 0.3 --wan-seconds 5)

placement=
if [ "${1:-}" = --testbed ]; then
    T=$PWD/target/release/hmw-testbed
    tb_name=dm$(($$ % 100000))
    trap '"$T" --name "$tb_name" down >/dev/null 2>&1' EXIT
    # A plan's testbed up (the one before taken down); false when the machine allows none.
    testbed_up() {
        "$T" --name "$tb_name" down >/dev/null 2>&1
        "$T" --name "$tb_name" up "$1" --require-router >target/demo-testbed-up.log 2>&1
    }
    on_testbed() { "$T" --name "$tb_name" exec launch -- "$@"; }
    matmul=$PWD/configs/testbed/matmul-three-clusters.toml
    if testbed_up "$matmul"; then
        echo "== 1/2: the matrix product on the testbed: $(tail -1 target/demo-testbed-up.log)"
        system=$PWD/target/demo-testbed-matmul.system.toml
        if calibrate on_testbed "$PWD/target/release/hmw" calibrate "$matmul" --out "$system" "${calibrate_args[@]}"; then
            out=target/demo-testbed-matmul.out
            on_testbed "$PWD/target/release/hmw" launch "$matmul" --measured "$system" \
                --work-dir "$PWD/target/launch/demo-testbed-matmul" | tee "$out"
            [ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
            grep -q ' verified=true' "$out" || verified=false
        fi
        echo
    fi
    plan=$PWD/configs/testbed/demo-three-clusters.toml
    work=$PWD/target/launch/demo-testbed
    rm -rf "$work"
    if testbed_up "$plan"; then
        echo "== 2/2: the demo on the testbed: $(tail -1 target/demo-testbed-up.log)"
        out=target/demo-testbed.out
        on_testbed "$PWD/target/release/hmw" launch "$plan" --work-dir "$work" | tee "$out"
        [ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
        grep -q ' verified=true' "$out" || verified=false
        last=$out
        # Every rank of every cluster on its line's host, as the rank itself observed.
        misplaced=$(cat "$work"/*.stats.json 2>/dev/null |
            jq -r '.placement[] | select(.line_host != .observed_host) | .rank' | wc -l)
        ranks=$(cat "$work"/*.stats.json 2>/dev/null | jq -r '.placement[] | .rank' | wc -l)
        if [ "$misplaced" = 0 ] && [ "$ranks" -gt 0 ]; then placement=" placement=ok"; else placement=" placement=fail"; fi
    else
        echo "== the testbed cannot run on this machine ($(tail -1 target/demo-testbed-up.log)): the demo on this machine instead"
        launch configs/demo-three-clusters.toml three-clusters
    fi
elif [ $# -gt 0 ]; then
    launch "$1" plan
else
    echo "== 1/2: a blocked matrix product across three clusters"
    system=target/demo-matmul.system.toml
    calibrate target/release/hmw calibrate configs/matmul-three-clusters.toml --out "$system" "${calibrate_args[@]}" &&
        launch configs/matmul-three-clusters.toml matmul "$system"
    echo
    echo "== 2/2: the prediction put to the test: configs/demo-three-clusters.toml"
    launch configs/demo-three-clusters.toml three-clusters
fi
summary=$(sed -n 's/^launch clusters=\([0-9]*\) tasks=\([0-9]*\) makespan_s=\([0-9.]*\).*/clusters=\1 tasks=\2 makespan_s=\3/p' "$last" | tail -1)
clusters=$(sed -n 's/.*clusters=\([0-9]*\).*/\1/p' <<<"$summary")
tasks=$(sed -n 's/.*tasks=\([0-9]*\).*/\1/p' <<<"$summary")
makespan=$(sed -n 's/.*makespan_s=\([0-9.]*\).*/\1/p' <<<"$summary")
[ -n "$summary" ] || verified=false
echo "demo clusters=${clusters:-0} tasks=${tasks:-0} verified=$verified makespan_s=${makespan:-0}$placement"
exit $failed
