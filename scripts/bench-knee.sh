#!/usr/bin/env bash
# A sweep across the knee (issue 41, docs/model.md section 15): one cluster of the synthetic
# application on the testbed (configs/knee/knee.toml: tasks of 0.05 s on average, 50 KB to
# each worker and 1 KB back, every host's LAN port shaped by tc tbf to 6 MB/s, its bucket 10 ms
# at the rate, 60 KB: the master's port saturates near 6 workers), for 1 to 12 workers, with
# task times of coefficient of variation 0 and 1 (the synthetic's `task_cv`, the plan's
# `oper_cv`), three runs each, the worker counts interleaved (every count once, in an order
# that alternates low and high, then again). Every prediction comes from one `hmw calibrate` at
# 2 workers (task_cv = 0), made before the sweep and printed: its LAN and the spread of the
# LAN's time per task (lan_scv), master's CPU per task,
# the spread of the task times it measured (oper_cv, kept for the points at 0) and its
# workers' perf, whose mean every worker of a point gets (the workers are alike: their tasks
# sleep); the points at oper_cv = 1 take the plan's 1 (the synthetic's task_cv).
#
# Per point: the measured rate (tasks over the median makespan of its runs), the bottleneck
# formulas' and the closed network's (tasks over the midpoint of `hmw predict`'s best and
# worst makespan with contention = "bottleneck" and "mva"), their errors, and `hmw simulate`'s.
# The predictions take the run's own work: `oper` is the mean time factor of its tasks (the
# synthetic prints it, `mean_time_factor`; 1 at oper_cv 0, and 0.97-1.005 for the few hundred
# tasks of a point at oper_cv 1, where the mean of all draws is 1). The figures predicted with
# oper = 1 at every point, as the sweep did first, stay printed on the line `knee_mean_work ...`.
# Each point also shows its steady state alone, the part of a run where the two models
# differ (they share the startup's and the end's equations): the measured rate between 20 %
# and 80 % of the tasks and the workers' busy share (medians of the runs), against each
# model's steady performance, with the same counts over it (a line `knee_steady ...
# knee_ties=T`, T the points near the knee where the two models predict the same rate).
# Then the seed's checks (cargo test -p hmw-model queueing, release) and its case study
# (model/examples/queueing_case_study.rs). Last line:
#   knee points=N cvs=2 mva_median_err=E1 mva_max_err=M1 bottleneck_median_err=E2 bottleneck_max_err=M2 knee_mva_better=K/6 seed_vectors=ok clu_ahead=P1-P2
# E1, M1, E2, M2 over both cvs (|model - measured| / measured); K: of the three points nearest
# the knee at each cv (the worker count where the calibrated LAN limit equals the workers'
# rate), those where the network's error is the smaller.
#
# Needs root (the testbed: namespaces, cgroups, tc) and a quiet machine for its figures. A
# reduced run that only checks it works end to end:
#   KNEE_WORKERS="1 6 12" KNEE_RUNS=1 KNEE_TASKS=120 scripts/bench-knee.sh
# (KNEE_WORKERS: the counts, default 1 to 12; KNEE_RUNS: runs a point, default 3; KNEE_TASKS:
# tasks a run, default 5 s of the slower of the workers and the LAN; KEEP_DIR keeps the runs'
# files there; KNEE_CASE_MAX: the case study's largest p, default 256; HMW_BENCH_PROFILE=debug
# uses debug builds, default release.)
set -euo pipefail
cd "$(dirname "$0")/.."
workers_list=${KNEE_WORKERS:-1 2 3 4 5 6 7 8 9 10 11 12}
runs=${KNEE_RUNS:-3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
. scripts/env.sh
. scripts/lib/common.sh
note() { echo "bench-knee: $*" >&2; }
packages=(-p hmw-cli -p hmw-synthetic -p hmw-testbed)
if cargo metadata --no-deps --format-version 1 2>/dev/null | grep -q '"name":"hmw-wan-router"'; then
    packages+=(-p hmw-wan-router)
fi
profile=${HMW_BENCH_PROFILE:-release}
flag=--release
[ "$profile" = debug ] && flag=
cargo build --quiet $flag "${packages[@]}" || { note "build failed"; exit 1; }
bin=$(realpath "$CARGO_TARGET_DIR")/$profile
hmw=$bin/hmw
testbed_bin=$bin/hmw-testbed
testbed_name=kn$(($$ % 100000))
work=$(mktemp -d /tmp/bench-knee.XXXXXX)
. scripts/lib/testbed.sh
cleanup() {
    testbed_down
    if [ -n "${KEEP_DIR:-}" ]; then
        mkdir -p "$KEEP_DIR" && cp -r "$work"/. "$KEEP_DIR"/
    fi
    rm -rf "$work"
}
trap cleanup EXIT

base=configs/knee/knee.toml
task_s=0.05      # the synthetic's task_seconds in the base plan
lan=6000000      # its lan_bytes_per_s, the tbf rate
burst=$((lan / 100 > 32768 ? lan / 100 : 32768))
note "tbf at $lan B/s on every LAN port, burst $burst bytes (10 ms at the rate, at least 32 KiB)"

# plan W CV CONTENTION TASKS [OPER]: the base plan with its first W workers, task times of
# coefficient of variation CV, that contention, that many tasks and, when given, that `oper`
# (the run's own mean task time over the synthetic's task_seconds); prints its path.
plan() {
    local w=$1 cv=$2 contention=$3 tasks=$4 oper=${5:-1.0}
    local out=$work/knee-$1-$2-$3${5:+-work}.toml
    awk -v w="$w" '
        match($0, /host = "lyon-[0-9]+", role = "worker"/) {
            n = substr($0, RSTART + 13); sub(/".*/, "", n); if (n + 0 > w) next
        }
        { print }' "$base" |
        sed -e "s/^oper_cv = 0.0/oper_cv = $cv/" -e "s/^task_cv = 0.0/task_cv = $cv/" \
            -e "s/^tasks = 600/tasks = $tasks/" -e "s/^oper = 1.0$/oper = $oper/" \
            -e "s/^selection = \"all\"/selection = \"all\"\ncontention = \"$contention\"/" >"$out"
    echo "$out"
}
# Tasks of a run at W workers: 5 s of the slower of its workers and the LAN.
tasks_of() {
    if [ -n "${KNEE_TASKS:-}" ]; then echo "$KNEE_TASKS"; return; fi
    python3 -c "print(round(5 * min($1 / $task_s, $lan / 51032)))"
}

tb up "$base" --require-router >"$work/up.log" 2>&1 || {
    note "the testbed cannot run here: $(tail -1 "$work/up.log")"
    exit 1
}
testbed_plan=$base
note "testbed up: $(tail -1 "$work/up.log")"

# One calibration at 2 workers, oper_cv = 1, before the sweep.
settle >&2
cal=$work/system.toml
tb exec launch -- "$hmw" calibrate "$(plan 2 0.0 bottleneck 200)" --out "$cal" \
    --lan-tasks 600 --lan-seconds 3 \
    >"$work/calibrate.log" 2>&1 || { tail -20 "$work/calibrate.log" >&2; note "calibrate failed"; exit 1; }
echo "== calibration at 2 workers ($cal):"
grep -E '^(lyon|master:|task times:|measured in|wrote)' "$work/calibrate.log" || true
cat "$cal"
# system W CV: the calibration for W workers, each at the mean perf measured; at CV = 1 without
# the measured oper_cv (the plan's applies). Prints its path.
system() {
    local out=$work/system-$1-$2.toml
    python3 - "$cal" "$1" "$2" >"$out" <<'PY'
import re, sys
text, workers, cv = open(sys.argv[1]).read(), int(sys.argv[2]), sys.argv[3]
perfs = [float(p) for p in re.findall(r"^perf = (\S+)$", text, re.M)]
keep = lambda key: re.search(rf"^{key} = (\S+)$", text, re.M)
print(f'conditions = "from the calibration at 2 workers: every worker at their mean perf"')
if cv == "0.0" and keep("oper_cv"):
    print(f"oper_cv = {keep('oper_cv').group(1)}")
print('[[clusters]]\nname = "lyon"')
for key in ("lan_bytes_per_s", "lan_scv", "master_cpu_per_task_s"):
    if keep(key):
        print(f"{key} = {keep(key).group(1)}")
for w in range(1, workers + 1):
    print(f'[[clusters.workers]]\nhost = "lyon-{w}"\nperf = {sum(perfs) / len(perfs)}')
PY
    echo "$out"
}

# steady_state STATS: a run's makespan, its steady rate (tasks/s between the master's progress
# samples at 20 % and 80 % of the tasks: no startup, no end) and its workers' busy share (their
# seconds computing over their seconds in the run).
steady_state() {
    python3 - "$1" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
samples = [(p["t_s"], p["tasks_done"]) for p in stats["progress"]
           if 0.2 * stats["tasks"] <= p["tasks_done"] <= 0.8 * stats["tasks"]]
(t0, n0), (t1, n1) = (samples[0], samples[-1]) if samples else ((0, 0), (0, 0))
busy = sum(w["busy_s"] for w in stats["workers"]) / sum(w["active_s"] for w in stats["workers"])
print(stats["wall_s"], (n1 - n0) / (t1 - t0) if t1 > t0 else "nan", f"{busy:.4f}")
PY
}

# The runs, interleaved: each pass visits every count once, alternating low and high.
read -ra counts <<<"$workers_list"
order=()
lo=0 hi=$((${#counts[@]} - 1))
while [ "$lo" -le "$hi" ]; do
    order+=("${counts[$lo]}")
    [ "$lo" -lt "$hi" ] && order+=("${counts[$hi]}")
    lo=$((lo + 1)) hi=$((hi - 1))
done
: >"$work/runs.txt"
for r in $(seq 1 "$runs"); do
    for w in "${order[@]}"; do
        for cv in 0.0 1.0; do
            p=$(plan "$w" "$cv" bottleneck "$(tasks_of "$w")")
            dir=$work/run-$w-$cv-$r
            tb exec launch -- "$hmw" launch "$p" --binary "$bin/hmw-synthetic" --work-dir "$dir" \
                >"$dir.log" 2>&1 || { tail -20 "$dir.log" >&2; note "run $w workers cv $cv failed"; exit 1; }
            read -r makespan steady busy < <(steady_state "$dir/lyon.stats.json")
            factor=$(sed -n 's/^synthetic .*mean_time_factor=\([0-9.]*\).*/\1/p' "$dir.log" | tail -1)
            echo "$w $cv $r $makespan $steady $busy ${factor:-1.0}" >>"$work/runs.txt"
            note "run $r: $w workers, oper_cv $cv: $makespan s (steady $steady tasks/s, workers busy $busy)"
        done
    done
done

# The predictions and the simulation of each point.
: >"$work/points.txt"
for w in "${counts[@]}"; do
    for cv in 0.0 1.0; do
        tasks=$(tasks_of "$w")
        measured=$(awk -v w="$w" -v cv="$cv" '$1 == w && $2 == cv { print $4 }' "$work/runs.txt" | median)
        steady=$(awk -v w="$w" -v cv="$cv" '$1 == w && $2 == cv { print $5 }' "$work/runs.txt" | median)
        busy=$(awk -v w="$w" -v cv="$cv" '$1 == w && $2 == cv { print $6 }' "$work/runs.txt" | median)
        factor=$(awk -v w="$w" -v cv="$cv" '$1 == w && $2 == cv { print $7 }' "$work/runs.txt" | median)
        measured_system=$(system "$w" "$cv")
        for contention in bottleneck mva; do
            "$hmw" predict --json "$(plan "$w" "$cv" "$contention" "$tasks" "$factor")" \
                --measured "$measured_system" >"$work/predict-$w-$cv-$contention-work.json"
            "$hmw" predict --json "$(plan "$w" "$cv" "$contention" "$tasks")" \
                --measured "$measured_system" >"$work/predict-$w-$cv-$contention.json"
        done
        simulated=$("$hmw" simulate "$(plan "$w" "$cv" bottleneck "$tasks" "$factor")" \
            --measured "$measured_system" --runs 3 | tail -1 | sed 's/.*median_s=\([0-9.]*\).*/\1/')
        echo "$w $cv $tasks $measured $simulated $steady $busy $factor" >>"$work/points.txt"
    done
done

seed=ok
cargo test --quiet $flag -p hmw-model queueing >"$work/seed.log" 2>&1 || { seed=failed; tail -20 "$work/seed.log" >&2; }
clu=$(cargo run --quiet $flag -p hmw-model --example queueing_case_study -- --max "${KNEE_CASE_MAX:-256}" 2>"$work/case.err" |
    tee "$work/case.txt" | tail -1 | sed 's/^clu_ahead=//')

python3 - "$work" "$seed" "$clu" <<'PY'
import json, statistics, sys
work, seed, clu = sys.argv[1:4]
predicted = lambda w, cv, contention, suffix="-work": json.load(
    open(f"{work}/predict-{w}-{cv}-{contention}{suffix}.json"))
rows = []
for line in open(f"{work}/points.txt"):
    w, cv, tasks, measured, simulated, steady, busy, factor = line.split()
    w, tasks, factor = int(w), int(tasks), float(factor)
    row = dict(w=w, cv=cv, factor=factor, measured=tasks / float(measured),
               sim=tasks / float(simulated), steady=float(steady), busy=float(busy))
    # predicted with the run's own work (oper = its tasks' mean time factor), and as first
    # with every task's mean (oper = 1)
    for contention in ("bottleneck", "mva"):
        for key, suffix in ((contention, "-work"), (f"{contention}_mean", "")):
            run = predicted(w, cv, contention, suffix)["run"]
            row[key] = tasks / ((run["t_ex_best"] + run["t_ex_worst"]) / 2)
    # the steady rates: operations per second over the operations of a task
    cluster = predicted(w, cv, "mva")["clusters"][0]
    row["steady_bottleneck"] = cluster["perf_ste_bottleneck"] / factor
    row["steady_mva"] = cluster["perf_ste_network"] / factor
    rows.append(row)
err = lambda r, k, measured="measured": abs(r[k] - r[measured]) / r[measured]
print("workers  oper_cv  work  measured/s  bottleneck/s   err  network/s   err  simulated/s   err")
for r in rows:
    print(f"{r['w']:7d}  {r['cv']:>7}  {r['factor']:.3f}  {r['measured']:10.2f}  "
          f"{r['bottleneck']:12.2f} {err(r, 'bottleneck'):5.3f}  {r['mva']:9.2f} "
          f"{err(r, 'mva'):5.3f}  {r['sim']:11.2f} {err(r, 'sim'):5.3f}")
# The knee: where the workers' rate reaches the bottleneck formulas' limit with the most
# workers (the LAN's, or the master's), from the calibration.
most = predicted(max(r["w"] for r in rows), "1.0", "bottleneck", "")["clusters"][0]
per_worker = most["cperf"] / len(most["workers"])
knee = most["perf_ste_bottleneck"] / per_worker
def better_near_knee(measured, mva, bottleneck):
    """Of the three points nearest the knee at each cv: where the network's error is the
    smaller, and where the two models predict the same."""
    better = ties = 0
    for cv in ("0.0", "1.0"):
        near = sorted((r for r in rows if r["cv"] == cv), key=lambda r: abs(r["w"] - knee))[:3]
        better += sum(err(r, mva, measured) < err(r, bottleneck, measured) for r in near)
        ties += sum(abs(r[mva] - r[bottleneck]) <= 1e-9 * r[bottleneck] for r in near)
    return better, ties
def errors(measured, mva, bottleneck):
    """Both models' median and largest errors against `measured`, and `knee_mva_better`."""
    m = [err(r, mva, measured) for r in rows]
    b = [err(r, bottleneck, measured) for r in rows]
    better, _ = better_near_knee(measured, mva, bottleneck)
    return (f"mva_median_err={statistics.median(m):.4f} mva_max_err={max(m):.4f} "
            f"bottleneck_median_err={statistics.median(b):.4f} "
            f"bottleneck_max_err={max(b):.4f} knee_mva_better={better}/6")
# The steady state alone (no startup, no end: the part of a run the two models differ on):
# the measured rate between 20 % and 80 % of the tasks, the workers' busy share, and each
# model's steady performance (perf_ste).
print("workers  oper_cv  steady/s  workers busy  bottleneck/s   err  network/s   err")
for r in rows:
    print(f"{r['w']:7d}  {r['cv']:>7}  {r['steady']:8.2f}  {r['busy']:12.4f}  "
          f"{r['steady_bottleneck']:12.2f} {err(r, 'steady_bottleneck', 'steady'):5.3f}  "
          f"{r['steady_mva']:9.2f} {err(r, 'steady_mva', 'steady'):5.3f}")
_, steady_ties = better_near_knee("steady", "steady_mva", "steady_bottleneck")
print(f"knee_steady points={len(rows)} {errors('steady', 'steady_mva', 'steady_bottleneck')} "
      f"knee_ties={steady_ties}")
_, ties = better_near_knee("measured", "mva", "bottleneck")
print(f"knee_mean_work points={len(rows)} cvs=2 "
      f"{errors('measured', 'mva_mean', 'bottleneck_mean')}")
print(f"knee at {knee:.2f} workers ({most['bottleneck']} limit {most['perf_ste_bottleneck']:.2f} "
      f"tasks/s, a worker {per_worker:.2f} tasks/s); the models agree at {ties} of the six "
      f"points nearest it")
print(f"knee points={len(rows)} cvs=2 {errors('measured', 'mva', 'bottleneck')} "
      f"seed_vectors={seed} clu_ahead={clu}")
PY
