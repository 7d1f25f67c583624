#!/usr/bin/env bash
# The number-of-workers tuner of iterative applications (issue 17, "inside a cluster") on a
# shaped LAN: configs/testbed/nbody-tuner.toml (a master and 8 workers, every LAN port at
# 1 MB/s by tc tbf, hmw-nbody with 256 bodies in 30 steps, 2 us per pair emulated), where the
# fastest count lies between 1 and 8. It runs each fixed count (`[run] active_workers = k`,
# k = 1..8), then the tuner with `tune_workers = "time"` and with `tune_workers = "pi"`, each
# run verified, and prints a line per run (the counts of its steps, its median time per step
# and its median performance index n*Tt^2/Tc per step), then
#   adapt_tuner best_time_count=K best_pi_count=J interior=true|false lan=testbed|localhost
#   time_ratio=R pi_ratio=Q
# R: the tuned run's (objective time) median time per step over the best fixed count's; Q: the
# tuned run's (objective pi) median performance index over the best fixed count's. Targets
# R <= 1.10 and Q <= 1.10. The medians are over all the run's steps (30, the tuner's probes
# included).
#
# Where the testbed cannot come up (not root, no network namespaces or CPU cgroup), the same
# runs go in one process (`--threads`) on this machine: no LAN shaping, so each worker costs
# the master only the copy and encoding of its task, and the best count tends to the largest
# (biased towards more workers); the line then says lan=localhost.
# Takes about two minutes. Not a benchmark on a loaded machine: a check that it runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/env.sh
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --quiet -p hmw-nbody -p hmw-cli -p hmw-testbed
bin=$(realpath "$CARGO_TARGET_DIR")/debug
plan=$PWD/configs/testbed/nbody-tuner.toml
name=tn$(($$ % 100000))
work=$(mktemp -d)
T=$bin/hmw-testbed
cleanup() {
    if [ -e "/var/lib/hmw-testbed/$name/state.json" ]; then
        "$T" --name "$name" down >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
WORKERS=8

# The plan with its [run] table's `tune_workers = "off"` line replaced by $2, as $work/$1.toml.
variant() {
    awk -v run="$2" '$0 == "tune_workers = \"off\"" { print run; next } { print }' "$plan" >"$work/$1.toml"
}

lan=testbed
# One cluster, no WAN: no router to emulate one (hmw-wan-router refuses a single cluster), so
# the testbed is told of none and forwards without it.
t0=$(date +%s)
if ! "$T" --name "$name" up "$plan" --router "$work/no-router" >"$work/up.log" 2>&1; then
    lan=localhost
    echo "adapt-tuner: the testbed cannot come up here ($(tail -1 "$work/up.log")): runs in one" \
        "process, LAN unshaped (biased towards more workers)"
else
    echo "adapt-tuner: testbed up in $(($(date +%s) - t0)) s: $(tail -1 "$work/up.log")"
fi

# One run: label $1, [run] line(s) $2; its statistics at $work/$1.stats.json.
run() {
    variant "$1" "$2"
    local out=$work/$1.out
    if [ "$lan" = testbed ]; then
        local t=$(date +%s)
        timeout 300 "$T" --name "$name" exec launch -- "$bin/hmw" launch "$work/$1.toml" \
            --work-dir "$work/$1" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
        cp "$work/$1/lab.stats.json" "$work/$1.stats.json"
        echo "adapt-tuner: $1 in $(($(date +%s) - t)) s"
    else
        for _ in $(seq $((WORKERS + 1))); do echo localhost; done >"$work/hosts"
        # The plan's [run] and [launch.application] as a run configuration.
        awk '/^\[run\]/ { on = 1; print; next } /^\[launch.application\]/ { on = 1; print "[application]"; next }
             /^\[/ { on = 0 } on' "$work/$1.toml" >"$work/$1.run.toml"
        timeout 300 "$bin/hmw-nbody" --threads -m "$work/hosts" -c "$work/$1.run.toml" \
            --stats-json "$work/$1.stats.json" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
    fi
    grep -q ' verified=true' "$out" || { echo "adapt-tuner: run $1 not verified" >&2; cat "$out" >&2; exit 1; }
}

for k in $(seq "$WORKERS"); do
    run "fixed-$k" "tune_workers = \"off\"
active_workers = $k"
done
run tuned-time 'tune_workers = "time"'
run tuned-pi 'tune_workers = "pi"'

python3 - "$work" "$WORKERS" "$lan" <<'EOF'
import json, statistics, sys
work, workers, lan = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def measures(label):
    its = json.load(open(f"{work}/{label}.stats.json"))["iterations"]
    assert len(its) >= 20, f"{label}: {len(its)} steps"
    time = statistics.median(it["time_s"] for it in its)
    pi = statistics.median(it["workers"] * it["time_s"] ** 2 / it["worker_time_s"] for it in its)
    counts = ",".join(str(it["workers"]) for it in its)
    print(f"{label:>10}: steps={len(its)} median_time_s={time:.4f} median_pi_s={pi:.4f} workers={counts}")
    return time, pi

fixed = {k: measures(f"fixed-{k}") for k in range(1, workers + 1)}
tuned_time, _ = measures("tuned-time")
_, tuned_pi = measures("tuned-pi")
best_time = min(fixed, key=lambda k: fixed[k][0])
best_pi = min(fixed, key=lambda k: fixed[k][1])
interior = 1 < best_time < workers and 1 < best_pi < workers
print(f"adapt_tuner best_time_count={best_time} best_pi_count={best_pi} "
      f"interior={'true' if interior else 'false'} lan={lan}")
print(f"time_ratio={tuned_time / fixed[best_time][0]:.3f} pi_ratio={tuned_pi / fixed[best_pi][1]:.3f}")
EOF
