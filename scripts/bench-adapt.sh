#!/usr/bin/env bash
# Re-planning between clusters (`[run] adapt`, issue 17) on the testbed: the demo's three
# clusters (configs/testbed/demo-three-clusters.toml with tasks that compute 0.02 s of an
# unthrottled core each, so that each host's CPU quota, its perf, sets its speed;
# lost_after_s = 3, adapt_interval_s = 2), each scenario RUNS times (default 3) with adapt = false ("static", the
# default on-demand settings) and adapt = true; prints as its last line
#   adapt slowdown_static=A slowdown_adaptive=B degrade_static=C degrade_adaptive=D
#         rejoin=true rejoin_share=J [time_ratio=R pi_ratio=Q]
#
#   A, B   median makespan (s) when spain's workers are slowed to a third of their perf at 30 %
#          of the static run's makespan (measured first, without changes)
#   C, D   the same when brazil's WAN drops to a fifth of its rate at 30 %
#   rejoin spain's WAN is cut at 20 % for inactivity_timeout_ms + lost_after_s + 3 s (2 + 3 + 3;
#          the links' connections are down once silent for 2 s): spain is lost, its tasks taken
#          back; when the link returns it rejoins (its ClusterReport says rejoins >= 1) and the
#          answer is verified; J, the median share of all tasks it computed after rejoining
#   R, Q   from scripts/bench/adapt-tuner.sh's last line, when that script is there
#
# Times count on the main master's clock, which starts once every link is up (wait_for_links),
# some seconds after the clusters' processes start (staging, MPI, the links' handshakes): the
# script waits for the master's first progress line (at 1 s on its clock), which reaches the
# log some time later (relayed by mpirun and ssh; the lag of the run before, measured against
# the statistics' `started_unix_s`), and makes each change at AT_S on the master's clock as
# best it can; after the run it prints when the change came on the master's clock (the middle
# of the change's commands). Each change is undone after its run.
# HMW_BENCH_PROFILE=debug uses debug builds (default release).
# Needs root, network namespaces and a CPU cgroup (the testbed); without them it says so and
# exits 1.
#
# For a part of it: SCENARIOS (default "slowdown degrade rejoin tuner") names the parts to run,
# BASE_S gives the static makespan without changes instead of measuring it, and KEEP_DIR keeps
# each run's log and statistics there (NAME.log, NAME/lyon.stats.json). The last line then
# holds only the figures of the parts run.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SCENARIOS=${SCENARIOS:-slowdown degrade rejoin tuner}
wants() { [[ " $SCENARIOS " == *" $1 "* ]]; }
profile=${HMW_BENCH_PROFILE:-release}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
flag=--release
[ "$profile" = debug ] && flag=
packages=(-p hmw-cli -p hmw-synthetic -p hmw-testbed)
if cargo metadata --no-deps --format-version 1 2>/dev/null | grep -q '"name":"hmw-wan-router"'; then
    packages+=(-p hmw-wan-router)
fi
cargo build --quiet $flag "${packages[@]}" || { echo "bench-adapt: build failed" >&2; exit 1; }
bin=$(realpath "$CARGO_TARGET_DIR")/$profile
T=$bin/hmw-testbed
name=ad$(($$ % 100000))
work=$(mktemp -d /tmp/bench-adapt.XXXXXX)
testbed_bin=$T testbed_name=$name
. scripts/lib/testbed.sh
. scripts/lib/common.sh
note() { echo "bench-adapt: $*" >&2; }
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

source_plan=configs/testbed/demo-three-clusters.toml
# The plan with adapt on or off: computing tasks (speed from the quota, not from `speed=`), a
# short lost_after_s, plans every 2 s.
plan_for() {
    local adapt=$1 out=$work/plan-$1.toml
    sed -e '/^reference_perf/d' \
        -e '/^\[launch.application\]/a work = "compute"' \
        -e 's/^task_seconds = 0.1$/task_seconds = 0.02/' \
        -e 's/^lost_after_s = 30/lost_after_s = 3\ninactivity_timeout_ms = 2000/' \
        -e "/^\[run\]/a adapt = $adapt\nadapt_interval_s = 2" "$source_plan" >"$out"
    echo "$out"
}
lost_after_s=3
inactivity_s=2 # a connection without a packet this long is down; lost_after_s later, lost
echo 0.5 >"$work/lag" # how late the master's progress lines reach the log, until measured

if ! tb up "$source_plan" --require-router >"$work/up.log" 2>&1; then
    note "the testbed cannot run here: $(tail -1 "$work/up.log")"
    exit 1
fi
note "testbed up: $(tail -1 "$work/up.log")"
perf_of() { jq -r ".hosts[] | select(.host == \"$1\") | .perf" "/var/lib/hmw-testbed/$name/state.json"; }
rate_of() { jq -r ".layout.clusters[] | select(.name == \"$1\") | .to_cluster.rate_mbit" "/var/lib/hmw-testbed/$name/state.json"; }
spain_workers="spain-1 spain-2 spain-3"
declare -A perf0
for h in $spain_workers; do perf0[$h]=$(perf_of "$h"); done
brazil_rate=$(rate_of brazil)

# spain's workers at perf $1 times theirs, all at once (not the launch running beside).
scale_spain() {
    local pids=() h
    for h in $spain_workers; do
        tb set-perf "$h" "$(echo "${perf0[$h]} * $1" | bc -l)" >/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
}
slow() { scale_spain 1/3; }
unslow() { scale_spain 1; }
degrade() { tb set-rate brazil "$(echo "$brazil_rate / 5" | bc -l)" >/dev/null; }
undegrade() { tb set-rate brazil "$brazil_rate" >/dev/null; }
cut() { tb outage spain "$((inactivity_s + lost_after_s + 3))" >/dev/null; }

# run LABEL ADAPT [AT_S CHANGE UNDO]: one launch; CHANGE at AT_S seconds after the start line.
# Prints the main master's makespan, or fails.
run() {
    local label=$1 adapt=$2 at=${3:-} change=${4:-} undo=${5:-}
    local dir=$work/$label log=$work/$label.log
    tb exec launch -- "$bin/hmw" launch "$(plan_for "$adapt")" --binary "$bin/hmw-synthetic" \
        --work-dir "$dir" >"$log" 2>&1 &
    local launcher=$!
    # The master's first progress line comes 1 s into its run (statistics_interval = 1).
    for _ in $(seq 1 1200); do
        grep -q '^\[ *1\.0 s\]' "$log" 2>/dev/null && break
        sleep 0.05
    done
    local seen_unix changed_unix=
    seen_unix=$(date +%s.%N)
    if [ -n "$change" ]; then
        sleep "$(echo "$at - 1 - $(cat "$work/lag")" | bc -l | sed 's/^-.*/0/')"
        local before_unix
        before_unix=$(date +%s.%N)
        $change
        changed_unix=$(echo "($before_unix + $(date +%s.%N)) / 2" | bc -l)
    fi
    wait $launcher
    local status=$?
    [ -n "$undo" ] && $undo
    if [ $status != 0 ] || ! grep -q 'verified=true' "$log"; then
        note "$label: exit $status, not verified: $(tail -3 "$log")"
        return 1
    fi
    local decisions when=
    decisions=$(jq '.adaptations | length' "$dir/lyon.stats.json")
    jq -r --argjson t "$seen_unix" '[$t - .started_unix_s - 1, 0] | max' \
        "$dir/lyon.stats.json" >"$work/lag"
    if [ -n "$changed_unix" ]; then
        when=$(jq -r --argjson t "$changed_unix" '$t - .started_unix_s | . * 100 | round / 100' \
            "$dir/lyon.stats.json")
        when=", $change at $when s (log lag $(cat "$work/lag") s)"
    fi
    note "$label: makespan $(jq .wall_s "$dir/lyon.stats.json") s$when, $decisions decisions"
    jq .wall_s "$dir/lyon.stats.json"
}

failed=0
if [ -n "${BASE_S:-}" ]; then
    base=$BASE_S
else
    base=$(run base false) || failed=1
    base=${base:-20}
fi
at=$(echo "0.3 * $base" | bc -l | xargs printf '%.1f')
at_cut=$(echo "0.2 * $base" | bc -l | xargs printf '%.1f')
note "static makespan without changes: $base s; changes at $at s"

series() { # LABEL ADAPT CHANGE UNDO: RUNS makespans, one a line, in $work/LABEL.times
    : >"$work/$1.times"
    for i in $(seq 1 "$RUNS"); do
        run "$1-$i" "$2" "$at" "$3" "$4" >>"$work/$1.times" || failed=1
    done
}
line=adapt
if wants slowdown; then
    series slow-static false slow unslow
    series slow-adaptive true slow unslow
    A=$(median <"$work/slow-static.times")
    B=$(median <"$work/slow-adaptive.times")
    line+=" slowdown_static=$A slowdown_adaptive=$B"
fi
if wants degrade; then
    series degrade-static false degrade undegrade
    series degrade-adaptive true degrade undegrade
    C=$(median <"$work/degrade-static.times")
    D=$(median <"$work/degrade-adaptive.times")
    line+=" degrade_static=$C degrade_adaptive=$D"
fi

if wants rejoin; then
    rejoin=true
    shares=()
    for i in $(seq 1 "$RUNS"); do
        label=rejoin-$i
        if run "$label" true "$at_cut" cut "" >/dev/null; then
            report=$(jq -c '.clusters[] | select(.name == "spain")' "$work/$label/lyon.stats.json")
            tasks=$(jq .tasks "$work/$label/lyon.stats.json")
            rejoins=$(jq .rejoins <<<"$report")
            after=$(jq .tasks_done_after_rejoin <<<"$report")
            note "$label: spain rejoins=$rejoins, $after of $tasks tasks after rejoining"
            [ "${rejoins:-0}" -ge 1 ] || rejoin=false
            shares+=("$(echo "$after / $tasks" | bc -l)")
        else
            rejoin=false failed=1
        fi
    done
    J=$(printf '%s\n' "${shares[@]}" | median | xargs printf '%.3f')
    [ "$(echo "$J >= 0.1" | bc -l)" = 1 ] || note "rejoin share $J < 0.1"
    line+=" rejoin=$rejoin rejoin_share=$J"
fi

if wants tuner && [ -x scripts/bench/adapt-tuner.sh ]; then
    line+=" $(scripts/bench/adapt-tuner.sh | tail -1)"
fi
echo "$line"
exit $failed
