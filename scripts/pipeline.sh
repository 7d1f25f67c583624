#!/usr/bin/env bash
# The pipeline skeleton on the testbed (issue 42, docs/guide/pipeline.md): examples/pipeline
# over two clusters of emulated hosts (configs/testbed/pipeline-two-clusters.toml: lyon, the
# controller and two nodes; spain, three nodes behind a 4 MB/s WAN; Algorithm 5.1's mapping),
# calibrated apart from the runs (hmw calibrate), predicted before them (hmw predict
# --measured, its text kept in the work folder), then RUNS (default 3) runs each of:
#
#   base-adaptive   no load, the default threshold (158)
#   base-never      no load, threshold = "never"
#   slow-adaptive   the bottleneck host slowed to a third of its perf (hmw-testbed set-perf)
#                   at 30 % of the predicted makespan, the default threshold
#   slow-never      the same slowdown, threshold = "never"
#
# Last line:
#   pipeline seed_cases=ok verified=true clusters=C threshold=X throughput_err=E
#            makespan_err=F remap_gain=G remap_gain_pred=GP control_remaps=R0 control_ratio=Q
#
#   seed_cases  the seed's two published cases pass (cargo test -p hmw-model seed_)
#   verified    every run's items were recomputed in one process and matched
#   C           clusters the predicted mapping uses
#   X           the default threshold (158) from the calibration
#   E, F        base-adaptive's median throughput (items per second over the middle of the
#               run) and makespan against the prediction, relative errors
#   G           1 - median(slow-adaptive) / median(slow-never) makespans
#   GP          the model's predicted gain (167) for the same slowdown
#   R0, Q       base-adaptive's median remaps, and median(base-adaptive) / median(base-never)
#
# It also says (on stderr) how far the WAN crossed is against the bottleneck's time (the
# issue asks at least 20 %). HMW_BENCH_PROFILE=debug uses debug builds (default release).
# QUICK=1 runs 120 items, one run of each, to check that the script works end to end (its
# figures then mean nothing). KEEP_DIR keeps the work folder there. Needs root, network
# namespaces and a CPU cgroup (the testbed); without them it says so and exits 1.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
ITEMS=
if [ "${QUICK:-0}" = 1 ]; then
    RUNS=1 ITEMS=120
fi
profile=${HMW_BENCH_PROFILE:-release}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
flag=--release
[ "$profile" = debug ] && flag=
packages=(-p hmw-cli -p hmw-pipeline -p hmw-testbed)
if cargo metadata --no-deps --format-version 1 2>/dev/null | grep -q '"name":"hmw-wan-router"'; then
    packages+=(-p hmw-wan-router)
fi
cargo build --quiet $flag "${packages[@]}" || { echo "pipeline: build failed" >&2; exit 1; }
bin=$(realpath "$CARGO_TARGET_DIR")/$profile
T=$bin/hmw-testbed
name=pl$(($$ % 100000))
work=$(mktemp -d /tmp/pipeline.XXXXXX)
testbed_bin=$T testbed_name=$name
. scripts/lib/testbed.sh
. scripts/lib/common.sh
note() { echo "pipeline: $*" >&2; }
cleanup() {
    if [ -e "/var/lib/hmw-testbed/$name/state.json" ]; then
        tb down >/dev/null 2>&1 || true
    fi
    if [ -n "${KEEP_DIR:-}" ]; then
        mkdir -p "$KEEP_DIR" && cp -r "$work"/. "$KEEP_DIR"/
    fi
    rm -rf "$work"
}
trap cleanup EXIT
failed=0

# The seed's two published cases (Example 1, Listing 5.1) as unit tests.
seed=failed
if cargo test --quiet -p hmw-model seed_ >"$work/seed.log" 2>&1 &&
    grep -q 'test result: ok. 2 passed' "$work/seed.log"; then
    seed=ok
else
    note "the seed's cases failed: $(tail -5 "$work/seed.log")"
    failed=1
fi

source_plan=configs/testbed/pipeline-two-clusters.toml
# The plan with threshold $1 (and the items of a quick run).
plan_for() {
    local out=$work/plan-$1.toml
    sed -e "s/^threshold = \"default\"/threshold = \"$1\"/" "$source_plan" >"$out"
    if [ -n "$ITEMS" ]; then
        sed -i -e "s/^items = [0-9]*/items = $ITEMS/" "$out"
    fi
    echo "$out"
}

if ! tb up "$source_plan" --require-router >"$work/up.log" 2>&1; then
    note "the testbed cannot run here: $(tail -1 "$work/up.log")"
    exit 1
fi
note "testbed up: $(tail -1 "$work/up.log")"
perf_of() { jq -r ".hosts[] | select(.host == \"$1\") | .perf" "/var/lib/hmw-testbed/$name/state.json"; }

# The calibration, apart from the runs: every node times every stage.
settle >&2
plan=$(plan_for default)
if ! tb exec launch -- "$bin/hmw" calibrate "$plan" --out "$work/system.toml" \
    --work-dir "$work/calibration" >"$work/calibrate.log" 2>&1; then
    note "calibration failed: $(tail -5 "$work/calibrate.log")"
    exit 1
fi
note "calibrated: $(tail -1 "$work/calibrate.log")"

# The prediction, before the runs: the mapping, the bottleneck, the gain of a remap when the
# bottleneck's host slows to a third at 30 % of the run.
slowdown="bottleneck=3@30%"
"$bin/hmw" predict "$plan" --measured "$work/system.toml" --slowdown "$slowdown" \
    >"$work/prediction.txt" || { note "prediction failed"; exit 1; }
"$bin/hmw" predict "$plan" --measured "$work/system.toml" --slowdown "$slowdown" --json \
    >"$work/prediction.json" || exit 1
p=$work/prediction.json
pred_makespan=$(jq '.chosen.evaluation.makespan_s' "$p")
pred_throughput=$(jq '.chosen.evaluation.throughput' "$p")
threshold=$(jq '.threshold' "$p" | xargs printf '%.3f')
gain_pred=$(jq '.gain.gain' "$p" | xargs printf '%.3f')
at_s=$(jq '.gain.slowdown.at_s' "$p")
slowed=$(jq -r '.hosts[.gain.slowdown.node]' "$p")
# The clusters of the nodes the mapping uses.
clusters=$(jq '[.chosen.mapping.groups[].replicas[] as $k | .node_clusters[$k]] | unique |
    length' "$p")
wan_share=$(jq '.chosen.evaluation as $e | [$e.parts[] | select(.part.kind == "wan") |
    .production_s] | (max // 0) / $e.bottleneck_s' "$p")
note "predicted: makespan $pred_makespan s, $pred_throughput items/s, threshold $threshold, \
$clusters clusters, the slowest WAN at $(printf '%.2f' "$wan_share") of the bottleneck's time; \
$slowed slowed to a third at $(printf '%.1f' "$at_s") s: gain $gain_pred"
[ "$(echo "$wan_share >= 0.2" | bc -l)" = 1 ] || note "the WAN is under 20 % of the bottleneck"
perf0=$(perf_of "$slowed")
slow() { tb set-perf "$slowed" "$(echo "$perf0 / 3" | bc -l)" >/dev/null; }
unslow() { tb set-perf "$slowed" "$perf0" >/dev/null; }

echo 0.5 >"$work/lag"   # how late the controller's progress lines reach the log
echo 0.5 >"$work/start" # seconds from the controller's start to its first item
all_verified=true
# run LABEL THRESHOLD [CHANGE UNDO]: one launch; CHANGE at the predicted slowdown's time
# after the first item. Appends `makespan remaps throughput` to $work/LABEL.times.
run() {
    local label=$1 threshold=$2 change=${3:-} undo=${4:-}
    local dir=$work/$label log=$work/$label.log
    tb exec launch -- "$bin/hmw" launch "$(plan_for "$threshold")" --measured "$work/system.toml" \
        --binary "$bin/hmw-pipeline" --work-dir "$dir" >"$log" 2>&1 &
    local launcher=$!
    # The controller's first progress line comes 1 s into its run (statistics_interval = 1).
    for _ in $(seq 1 1200); do
        grep -q '^\[ *1\.0 s\]' "$log" 2>/dev/null && break
        sleep 0.05
    done
    local seen_unix changed_unix=
    seen_unix=$(date +%s.%N)
    if [ -n "$change" ]; then
        sleep "$(echo "$(cat "$work/start") + $at_s - 1 - $(cat "$work/lag")" | bc -l |
            sed 's/^-.*/0/')"
        local before_unix
        before_unix=$(date +%s.%N)
        $change
        changed_unix=$(echo "($before_unix + $(date +%s.%N)) / 2" | bc -l)
    fi
    wait $launcher
    local status=$?
    [ -n "$undo" ] && $undo
    local stats=$dir/lyon.stats.json
    if [ $status != 0 ] || ! grep -q 'verified=true' "$log" || [ ! -s "$stats" ]; then
        note "$label: exit $status, not verified: $(tail -3 "$log")"
        all_verified=false failed=1
        return 1
    fi
    jq -r --argjson t "$seen_unix" '[$t - .started_unix_s - 1, 0] | max' "$stats" >"$work/lag"
    jq -r '.calibration_s' "$stats" >"$work/start"
    local when=
    if [ -n "$changed_unix" ]; then
        when=$(jq -r --argjson t "$changed_unix" \
            '$t - .started_unix_s - .calibration_s | . * 100 | round / 100' "$stats")
        when=", $slowed slowed at $when s after the first item (predicted $at_s s)"
    fi
    # The steady throughput: the median rate of the progress samples over the middle 80 %.
    local throughput
    throughput=$(jq '.makespan_s as $m | .calibration_s as $c |
        [.progress[] | select(.at_s > $c + 0.1 * $m and .at_s < $c + 0.9 * $m) |
        .items_per_s] | sort | if length == 0 then 0 else .[length / 2 | floor] end' "$stats")
    note "$label: makespan $(jq .makespan_s "$stats") s, $(jq '.mappings | length - 1' "$stats") \
remaps, $throughput items/s$when"
    echo "$(jq .makespan_s "$stats") $(jq '.mappings | length - 1' "$stats") $throughput" \
        >>"$work/$label.times"
}

series() { # LABEL THRESHOLD [CHANGE UNDO]
    : >"$work/$1.times"
    for _ in $(seq 1 "$RUNS"); do
        run "$@" || true
    done
}
series base-adaptive default
series base-never never
series slow-adaptive default slow unslow
series slow-never never slow unslow

column() { awk -v c="$2" '{ print $c }' "$work/$1.times" | median; }
base_a=$(column base-adaptive 1)
base_n=$(column base-never 1)
slow_a=$(column slow-adaptive 1)
slow_n=$(column slow-never 1)
R0=$(column base-adaptive 2)
tput=$(column base-adaptive 3)
rel() { echo "($1 - $2) / $2" | bc -l | xargs printf '%.3f'; }
E=$(rel "$tput" "$pred_throughput")
F=$(rel "$base_a" "$pred_makespan")
G=$(echo "1 - $slow_a / $slow_n" | bc -l | xargs printf '%.3f')
Q=$(echo "$base_a / $base_n" | bc -l | xargs printf '%.3f')
note "medians: no load $base_a s adaptive, $base_n s never; slowed $slow_a s adaptive, \
$slow_n s never; the prediction and each run's log in ${KEEP_DIR:-the work folder (KEEP_DIR=...)}"
echo "pipeline seed_cases=$seed verified=$all_verified clusters=$clusters threshold=$threshold \
throughput_err=$E makespan_err=$F remap_gain=$G remap_gain_pred=$gain_pred control_remaps=$R0 \
control_ratio=$Q"
exit $failed
