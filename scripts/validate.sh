#!/usr/bin/env bash
# The model's validation suite: runs each scenario of configs/validation/ with the synthetic
# application on clusters emulated on this machine (`hmw launch`), or, for the tb-* scenarios,
# with a real application on the testbed's emulated hosts over ssh after `hmw calibrate` on
# them (as root: `hmw-testbed` creates namespaces and cgroups), compares the measured
# makespan and efficiency with the model's prediction for the same plan (`hmw predict`,
# `hmw report`), and rewrites docs/validation.md with the table and the charts
# (docs/validation/*.svg).
#
#   scripts/validate.sh           # every scenario, three runs each,
#                                 # rewrites docs/validation.md
#   scripts/validate.sh --quick   # the gate: four short scenarios (two on the testbed), three
#                                 # runs each; writes only under
#                                 # $CARGO_TARGET_DIR/validation/quick
#   scripts/validate.sh --only A,B  # those scenarios alone, under the mode's rules; writes
#                                 # only under $CARGO_TARGET_DIR/validation/only
#
# Exits non-zero on a run that fails; in quick mode (the gate scripts/test.sh runs) also when a
# counted scenario's median makespan of its three runs is outside [0.90 best, 1.10 worst] (a
# testbed scenario's runs each scaled to the machine's speed at its calibration: their CPU
# time per basic operation over the calibration's); in full mode on a makespan error beyond
# +-25 % (misses of the targets are reported, not failed).
# Last line:
#   validation scenarios=N inside=K median_err=E max_err=M shares_within=S/T eff_within=U/T real_compute=R calibrated=B capped=C band_width_median=W
# over the N counted scenarios (on-demand dispatch; a scenario with a model-derived cap,
# `load_balance = true`, runs apart and is not counted): inside counts makespans in
# [0.95 best, 1.05 worst] (a scenario with a WAN outage, which the closed form does not
# model, against `hmw simulate`'s [0.95 min, 1.05 max], its error and band width the
# simulation's); shares_within the clusters of the runs of several clusters whose
# task share is within 5 points of the middle of its predicted range, eff_within the clusters
# whose efficiency from their workers' busy time is within 5 points of the predicted range (a
# cluster further down a tree counts in the line of the one it hangs from); real_compute the scenarios whose
# application computes (not hmw-synthetic's sleeps); calibrated whether every counted
# scenario's prediction used a `hmw calibrate` file written before its runs; capped the
# counted scenarios whose run configuration has a model-derived cap; band_width_median the
# median of worst/best - 1. The line before it compares with `hmw simulate`:
#   simulation sim_median_err=X sim_max_err=Y sim_within=J/N sim_closer=K/M
# (the measured makespan against the median of three seeded runs; sim_within counts the
# scenarios whose simulated error is at most max(5 %, the spread of its measured runs: (longest -
# shortest) / median); sim_closer counts the scenarios where it is closer than the closed form
# among the M where the closed form misses by more than 3 %).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
only=""
while (($#)); do
    case "$1" in
        --quick) mode=quick ;;
        --only) only=${2:?--only needs a comma-separated list of scenarios}; shift ;;
        *) echo "usage: $0 [--quick] [--only NAME,NAME...]" >&2; exit 2 ;;
    esac
    shift
done

# A scenario's plan: configs/validation/NAME.toml, or the demo's configs/NAME.toml.
scenario_plan() {
    if [ -e "configs/validation/$1.toml" ]; then echo "configs/validation/$1.toml"; else echo "configs/$1.toml"; fi
}

# Every scenario, in the order of issue 6 then issue 16's additions (latency-200ms,
# lossy-wan, wan-in-nt4, depth2-tree, wan-outage, wan-outage-rejoin), and the quick subset
# (the gate). Scenarios apart run with a model-derived cap (`load_balance = true`): listed,
# not counted. Then the testbed's scenarios of real computation (tb-*: the applications
# computing on emulated hosts whose CPU quotas differ from the plans' perf, each calibrated
# just before), and the demo's plan (configs/demo-three-clusters.toml).
full_scenarios=(local-compute local-comm two-clusters wan-out wan-out-nr3 hetero-reassign
    hetero-no-reassign hetero-no-reassign-buffered three-auto latency-200ms lossy-wan
    wan-in-nt4 depth2-tree wan-outage wan-outage-rejoin tb-tsp-hetero
    tb-srmsd-hetero-no-reassign tb-matmul-local tb-matmul-two-clusters tb-srmsd-one-to-many
    tb-tsp-three-clusters demo-three-clusters)
apart_scenarios=(two-clusters-capped)
# The gate: two of real computation with calibrated inputs on the testbed, in place of
# local-compute and hetero-no-reassign (the same regimes with sleeping tasks).
quick_scenarios=(tb-tsp-hetero two-clusters tb-srmsd-hetero-no-reassign latency-200ms)
# A prediction this far off (|error|) fails the full suite.
wild_error=0.25
# Runs of the LAN calibration averaged.
calibration_runs=3

scripts/setup.sh
. scripts/env.sh
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
build_release
hmw=$target/release/hmw

# Runs of each scenario: on this shared 2-core machine a single run moves by several percent,
# so the full suite compares the run with the median makespan of three.
repeats=3
if [ "$mode" = full ]; then
    scenarios=("${full_scenarios[@]}" "${apart_scenarios[@]}")
    work=$target/validation/full
    charts=docs/validation
    doc=docs/validation.md
else
    scenarios=("${quick_scenarios[@]}")
    work=$target/validation/quick
    charts=$work/charts
    doc=$work/validation.md
fi
# --only: those scenarios alone (under the mode's rules), written under $target/validation/only.
if [ -n "$only" ]; then
    IFS=, read -r -a scenarios <<<"$only"
    for name in "${scenarios[@]}"; do
        [ -e "$(scenario_plan "$name")" ] || { echo "validate: no scenario $name" >&2; exit 2; }
    done
    work=$target/validation/only
    charts=$work/charts
    doc=$work/validation.md
fi

# The application binary a plan's [launch] names.
launch_binary() { sed -n '/^\[launch\]/,/^\[/s/^binary *= *"\([^"]*\)".*/\1/p' "$1" | head -1; }

rm -rf "$work"
mkdir -p "$work/plans" "$charts"
failures=()

# ---- the testbed ----
# A scenario whose plan has a [testbed] table runs on emulated hosts (`hmw-testbed`: a network
# namespace per host, a CPU quota per worker, the WAN emulator between the clusters), each
# cluster started over ssh, the application computing for real. Just before its runs, `hmw
# calibrate` measures it on those hosts (every worker at once, each LAN, each WAN between its
# CMs), and the prediction, the simulation and the report use that file
# ($work/NAME.system.toml, kept beside the results). One testbed at a time: brought up for a
# scenario, taken down before the next one's (and on every way out).
testbed_name=val$(($$ % 100000))
testbed_bin=$target/release/hmw-testbed
. scripts/lib/testbed.sh
# Every scenario's calibration: 10 tasks per worker, all at once, each executed 4 times (hmw
# calibrate's default: a worker then computes without waiting for the master), more tasks
# until every worker computed for 2 s (its default `--worker-seconds`); one LAN run per
# worker count; 5 s of each WAN both ways. (With 6 tasks computed once, one calibration of
# tb-matmul-local gave a host of a 0.3-core quota 2.68e9 flop/s where its runs measured
# 1.9-2.0e9; with 10 tasks computed 4 times, 0.4 s on a fast machine's 0.45-core host, a CI
# run's calibration of tb-tsp-hetero put the hosts 11 % below what its runs measured.)
calibrate_args=(--tasks 10 --lan-tasks 300 --lan-seconds 0.3 --wan-seconds 5)
# local-comm's LAN is the one calibrate_lan measures in the scenario's own regime: the
# calibration leaves the plan's value (`--lan-runs 0`); elsewhere one run per worker count.
calibrate_lan_args() { if [ "$1" = local-comm ]; then echo --lan-runs 0; else echo --lan-runs 1; fi; }
trap testbed_down EXIT
is_testbed() { grep -q '^\[testbed\]' "$(scenario_plan "$1")"; }

# The median over the runs of makespan / speed ratio: $1 the ratios "r1,r2,r3" (from
# cpu_per_operation_drift), $2... the runs as "makespan name line" in the same order (a run
# whose ratio is nan counts unscaled).
speed_scaled_median() {
    local ratios=$1
    shift
    printf '%s\n' "$@" | awk '{ print $1 }' | paste -d' ' - <(tr , '\n' <<<"$ratios") |
        awk '{ print ($2 == "nan" ? $1 : $1 / $2) }' | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.4f", v[int((NR + 1) / 2)] }'
}

# `key=value` from a line of key=value pairs.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2" | head -1; }

# Whether scenario $1 runs apart (a model-derived cap): listed, not counted.
is_apart() {
    local a
    for a in "${apart_scenarios[@]}"; do [ "$a" = "$1" ] && return 0; done
    return 1
}

# Scenarios the closed form cannot predict (a WAN outage: it has none) are judged on
# `hmw simulate`'s prediction: inside when the measured makespan is in [0.95 min, 1.05 max]
# of its seeded runs, its error and band width those of the simulation.
predicted_by_simulation() { grep -q '^wan_outages *= *\[ *"' "$1"; }

# `sim_inside=B sim_gate_inside=G sim_band_width=W` of measured makespan $1 against the
# `simulate ...` line $2 (the gate's tolerance: [0.90 min, 1.10 max]).
simulation_verdict() {
    awk -v m="$1" -v lo="$(field min_s "$2")" -v hi="$(field max_s "$2")" 'BEGIN {
        printf "sim_inside=%s sim_gate_inside=%s sim_band_width=%.4f",
            (m >= 0.95 * lo && m <= 1.05 * hi) ? "true" : "false",
            (m >= 0.90 * lo && m <= 1.10 * hi) ? "true" : "false", hi / lo - 1 }'
    printf ' %s' "$(sim_clusters_within "$3" "$4")"
}

# Each cluster's measured share of the tasks and busy efficiency (`hmw report`'s table, $1)
# against the simulation's (`hmw simulate`'s table, $2), within 5 points:
# `sim_shares_within=K/N sim_clusters_eff_within=K/N`.
sim_clusters_within() {
    python3 - "$1" "$2" <<'PY'
import re, sys
report, simulate = (open(f).read().splitlines() for f in sys.argv[1:3])
simulated = {}
for line in simulate:
    m = re.match(r"(\S+)\s+\d+\s+\d+\s+([\d.]+)%\s+([\d.]+)%$", line)
    if m:
        simulated[m[1]] = (float(m[2]) / 100, float(m[3]) / 100)
shares = effs = n = 0
for line in report:
    m = re.match(r"(\S+)\s+\S+\s+[\d.]+ / [\d.]+\s+\S+\s+[\d.]+% / ([\d.]+)%\s+[\d.]+/[\d.]+/([\d.]+)", line)
    if m and m[1] in simulated:
        share, eff = simulated[m[1]]
        n += 1
        shares += abs(float(m[2]) / 100 - share) <= 0.05
        effs += abs(float(m[3]) - eff) <= 0.05
print(f"sim_shares_within={shares}/{n} sim_clusters_eff_within={effs}/{n}")
PY
}

# What row $1 is judged on for `inside`, `err`, `band_width`, `shares_within` or
# `clusters_eff_within` ($2): the closed form's, or for a scenario predicted by the simulation,
# the simulation's.
judged() {
    if [ "$(field predictor "$1")" = simulate ]; then field "sim_$2" "$1"; else field "$2" "$1"; fi
}

# The median of numbers on stdin, and the largest, of their absolute values.
abs_median_max() {
    awk '{ a = $1 < 0 ? -$1 : $1; print a }' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan nan"; exit }
              m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%.4f %.4f\n", m, v[NR] }'
}

# The workers' CPU seconds per basic operation in each run folder ($2...) over those of the
# calibration's workers' run (folder $1, `CLUSTER.perf.stats.json`), "r1,r2,r3": above 1 the
# same computation took more CPU time than when it was calibrated. A diagnostic of the machine
# (a CPU quota does not change it; a slower processor does): nothing in the model uses it.
cpu_per_operation_drift() {
    python3 - "$@" <<'EOF'
import glob, json, sys

def per_operation(files):
    cpu = operations = 0.0
    for f in files:
        for w in json.load(open(f)).get("workers", []):
            cpu += w.get("compute_cpu_s", 0.0)
            operations += w.get("operations", 0.0)
    return cpu / operations if cpu > 0 and operations > 0 else None

calibrated = per_operation(glob.glob(sys.argv[1] + "/*.perf.stats.json"))
runs = [per_operation(glob.glob(d + "/*.stats.json")) for d in sys.argv[2:]]
print(",".join("nan" if calibrated is None or r is None else f"{r / calibrated:.3f}" for r in runs))
EOF
}

# Whether a run had a model-derived cap, from the run configurations and machine files
# `hmw launch` wrote for it in its folders $@ (`load_balance = true` in [run], a CM line's
# `max_tasks=`): `true` or `false`.
runs_capped() {
    python3 - "$@" <<'PY'
import pathlib, sys, tomllib
capped = False
for folder in map(pathlib.Path, sys.argv[1:]):
    for config in folder.rglob("run.toml"):
        run = tomllib.loads(config.read_text()).get("run", {})
        capped |= run.get("load_balance") is True
    for hosts in [*folder.rglob("*.hosts"), *folder.rglob("machines")]:
        capped |= any("max_tasks=" in line for line in hosts.read_text().splitlines())
print("true" if capped else "false")
PY
}

# Whether a prediction ($1, `hmw predict --json`) used the calibration file $2 and that file
# was measured before each run in the folders after them started (the main master's
# `started_unix_s`): `true` or `false`.
calibrated_before() {
    python3 - "$@" <<'PY'
import datetime, json, pathlib, sys
predict, system, folders = sys.argv[1], sys.argv[2], sys.argv[3:]
ok = False
try:
    measured = json.load(open(predict)).get("measured") or {}
    if system and measured.get("file") and pathlib.Path(measured["file"]).resolve() == pathlib.Path(system).resolve():
        at = datetime.datetime.fromisoformat(measured["measured_at"]).timestamp()
        starts = []
        for folder in map(pathlib.Path, folders):
            for stats in folder.glob("*.stats.json"):
                s = json.load(open(stats))
                if s.get("started_unix_s") is not None:
                    starts.append(s["started_unix_s"])
        ok = bool(starts) and at <= min(starts)
except (OSError, ValueError, KeyError, TypeError):
    ok = False
print("true" if ok else "false")
PY
}

# A value of the plan's [application] table.
app_value() { sed -n "/^\[application\]/,/^\[/s/^$2 *= *\([0-9.e+-]*\).*/\1/p" "$1" | head -1; }

# Launch a plan; prints the launcher's last line `launch clusters=... stats=PATH`. With a
# calibration file $3, predicted live from it; on the testbed when $4 is true.
launch() {
    local plan=$1 name=$2 system=${3:-} testbed=${4:-false} measured=()
    [ -z "$system" ] || measured=(--measured "$system")
    if ! on_host "$testbed" timeout -s INT -k 60 300 "$hmw" launch "$plan" \
        --work-dir "$work/runs/$name" "${measured[@]}" >"$work/$name.launch.log" 2>&1; then
        echo "validate: $name: hmw launch failed; log: $work/$name.launch.log" >&2
        tail -20 "$work/$name.launch.log" >&2
        return 1
    fi
    grep '^launch clusters=' "$work/$name.launch.log" | tail -1
}

# LAN calibration: the throughput the master gets with local-comm's message sizes. `before`
# (the value local-comm is predicted with) or `after` (to show how much it drifted meanwhile).
lan_bytes_per_s=""
lan_note=""
lan_after_note=""
calibrate_lan() {
    local phase=$1 plan=configs/validation/lan-calibration.toml sizes values=() i line tasks makespan
    local mean note
    sizes=$(awk -v t="$(app_value $plan task_bytes)" -v r="$(app_value $plan result_bytes)" \
        'BEGIN { print t + r }')
    for ((i = 1; i <= calibration_runs; i++)); do
        line=$(launch "$plan" "lan-calibration-$phase-$i") || return 1
        tasks=$(field tasks "$line")
        makespan=$(field makespan_s "$line")
        values+=("$(awk -v n="$tasks" -v s="$sizes" -v t="$makespan" 'BEGIN { printf "%.4e", n * s / t }')")
    done
    mean=$(printf '%s\n' "${values[@]}" | awk '{ s += $1 } END { printf "%.4e", s / NR }')
    note=$(printf '%s\n' "${values[@]}" | awk -v n="$calibration_runs" '
        { v[NR] = $1; s += $1; if (NR == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1 }
        END { m = s / NR; for (i = 1; i <= NR; i++) d += (v[i] - m) ^ 2
              printf "%.0f MB/s (mean of %d runs; min %.0f, max %.0f, standard deviation %.0f MB/s)",
                     m / 1e6, n, lo / 1e6, hi / 1e6, sqrt(d / NR) / 1e6 }')
    echo "  LAN ($phase local-comm): $note"
    if [ "$phase" = before ]; then
        lan_bytes_per_s=$mean lan_note=$note
    else
        lan_after_note=$note
    fi
}

# The plan a scenario runs: the committed one, or for local-comm a copy with the LAN measured
# just before (by calibrate_lan).
plan_for() {
    local name=$1 source
    source=$(scenario_plan "$1")
    if [ "$name" = local-comm ]; then
        [ -n "$lan_bytes_per_s" ] || return 1
        sed "s/^lan_bytes_per_s = [0-9.e+-]*\( *\)#.*/lan_bytes_per_s = $lan_bytes_per_s\1# measured just now by lan-calibration.toml/" \
            "$source" >"$work/plans/$name.toml"
        echo "$work/plans/$name.toml"
    else
        echo "$source"
    fi
}

rows=()
sections=()
for name in "${scenarios[@]}"; do
    if [ "$name" = local-comm ] && [ -z "$lan_bytes_per_s" ]; then
        echo "validate: LAN calibration"
        calibrate_lan before || true
    fi
    echo "validate: $name"
    plan=$(plan_for "$name") || { failures+=("$name: the LAN calibration failed"); continue; }
    # Calibrated just before the runs (on the testbed, its hosts up first); every figure of the
    # model (prediction, simulation, report) from that calibration. local-comm's LAN is the one
    # measured in its own regime by calibrate_lan (the plan's value: `--lan-runs 0`).
    on_testbed=false
    if is_testbed "$name"; then
        on_testbed=true
        plan=$PWD/$plan
        if ! testbed_up "$plan" "$work/$name.testbed.log"; then
            failures+=("$name: the testbed did not come up; log: $work/$name.testbed.log")
            continue
        fi
    fi
    system=$work/$name.system.toml
    read -r -a lan_runs <<<"$(calibrate_lan_args "$name")"
    quiet=$(settle)
    if ! on_host "$on_testbed" timeout -s INT -k 30 300 "$hmw" calibrate "$plan" --out "$system" \
        --work-dir "$work/runs/$name-calibrate" "${calibrate_args[@]}" "${lan_runs[@]}" \
        >"$work/$name.calibrate.log" 2>&1; then
        failures+=("$name: hmw calibrate failed; log: $work/$name.calibrate.log")
        tail -20 "$work/$name.calibrate.log" >&2
        continue
    fi
    measured=(--measured "$system")
    echo "  calibrated: $(grep -o 'workers [0-9.]* s.*' "$work/$name.calibrate.log" | tail -1) (after $quiet)"
    if ! "$hmw" predict "$plan" "${measured[@]}" --json >"$work/$name.predict.json" 2>&1 ||
        ! "$hmw" predict "$plan" "${measured[@]}" >"$work/$name.predict.txt" 2>&1; then
        failures+=("$name: hmw predict failed")
        cat "$work/$name.predict.txt" >&2
        continue
    fi
    # The same plan in virtual time: the real cores against the plan's workers and links.
    if ! "$hmw" simulate "$plan" "${measured[@]}" --runs 3 >"$work/$name.simulate.txt" 2>&1; then
        failures+=("$name: hmw simulate failed")
        cat "$work/$name.simulate.txt" >&2
        continue
    fi
    simulated=$(grep '^simulate ' "$work/$name.simulate.txt" | tail -1)
    simulated_s=$(field median_s "$simulated")
    # Each run under its own name; the one with the median makespan is compared and charted.
    runs=() failed=""
    for ((r = 1; r <= repeats; r++)); do
        run_name=$name
        ((repeats == 1)) || run_name=$name-run$r
        if line=$(launch "$plan" "$run_name" "$system" "$on_testbed"); then
            runs+=("$(field makespan_s "$line") $run_name $line")
        else
            failed=yes
        fi
    done
    [ -z "$failed" ] || { failures+=("$name: a run failed"); continue; }
    read -r _ run_name line < <(printf '%s\n' "${runs[@]}" | sort -g | sed -n "$(((repeats + 1) / 2))p")
    makespans=$(printf '%s\n' "${runs[@]}" | awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $1 }')
    # How far the runs themselves lie apart: (longest - shortest) / median.
    spread=$(printf '%s\n' "${runs[@]}" | awk '{ print $1 }' | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.4f", (v[NR] - v[1]) / v[int((NR + 1) / 2)] }')
    stats=$(field stats "$line")
    "$hmw" report "$stats" --plan "$plan" "${measured[@]}" --svg "$charts/$name.svg" >"$work/$name.report.txt" 2>&1 ||
        { failures+=("$name: hmw report failed"); cat "$work/$name.report.txt" >&2; continue; }
    summary=$(grep '^report ' "$work/$name.report.txt" | tail -1)
    echo "  $summary"
    err=$(field err "$summary")
    sim_err=$(awk -v m="$(field makespan_s "$summary")" -v s="$simulated_s" \
        'BEGIN { printf "%.4f", (m - s) / s }')
    predictor=closed_form verdict="" judged_err=$err
    if predicted_by_simulation "$plan"; then
        predictor=simulate judged_err=$sim_err
        verdict=" $(simulation_verdict "$(field makespan_s "$summary")" "$simulated" \
            "$work/$name.report.txt" "$work/$name.simulate.txt")"
    fi
    counted=true
    is_apart "$name" && counted=false
    if [ "$mode" = full ] && awk -v e="$judged_err" -v w="$wild_error" 'BEGIN { exit !(e > w || -e > w) }'; then
        failures+=("$name: makespan error $judged_err beyond +-$wild_error")
    fi
    # From the files the runs left: a model-derived cap in what they ran with, real
    # computation, a calibration older than every run that its prediction used, how fast the
    # machine computed in the runs against the calibration.
    run_dirs=()
    for run in "${runs[@]}"; do
        read -r _ r _ <<<"$run"
        run_dirs+=("$work/runs/$r")
    done
    capped=$(runs_capped "${run_dirs[@]}")
    binary=$(launch_binary "$plan")
    real_compute=false
    [ -n "$binary" ] && [ "$binary" != hmw-synthetic ] && real_compute=true
    calibrated=$(calibrated_before "$work/$name.predict.json" "$system" "${run_dirs[@]}")
    cpu_drift=nan
    if $real_compute && $on_testbed; then
        cpu_drift=$(cpu_per_operation_drift "$work/runs/$name-calibrate" "${run_dirs[@]}")
    fi
    # A testbed scenario's runs at the speed the machine had when it was calibrated: each
    # run's makespan divided by its CPU time per basic operation over the calibration's (which
    # no CPU quota changes and the model does not use; on this kind of VM it moves by +-15 %
    # between runs a minute apart), the median of those, and its error from the prediction.
    scaled="" scaled_err=nan
    if [ "$cpu_drift" != nan ]; then
        scaled=$(speed_scaled_median "$cpu_drift" "${runs[@]}")
        scaled_err=$(awk -v m="$scaled" -v b="$(field best_s "$summary")" -v w="$(field worst_s "$summary")" \
            'BEGIN { printf "%.4f", (m - (b + w) / 2) / ((b + w) / 2) }')
        echo "  at the calibration's speed (CPU per operation, runs / calibration = $cpu_drift): median makespan $scaled s, error $scaled_err"
    fi
    # The gate: the median of three runs outside [0.90 best, 1.10 worst] fails the quick suite;
    # a testbed scenario's runs are judged at the calibration's speed, the raw error reported.
    if [ "$mode" = quick ] && $counted; then
        gate_inside=$(judged "$summary$verdict predictor=$predictor" gate_inside)
        if [ "$predictor" = closed_form ] && [ -n "$scaled" ]; then
            gate_inside=$(awk -v m="$scaled" -v b="$(field best_s "$summary")" -v w="$(field worst_s "$summary")" \
                'BEGIN { print (m >= 0.90 * b && m <= 1.10 * w) ? "true" : "false" }')
        fi
        [ "$gate_inside" = true ] ||
            failures+=("$name: median makespan ${scaled:-$(field makespan_s "$summary")} s outside [0.90 best, 1.10 worst] of $(field best_s "$summary") to $(field worst_s "$summary") s")
    fi
    added=$(git log --diff-filter=A --format=%h -1 -- "$(scenario_plan "$name")" 2>/dev/null || true)
    launcher_s=$(sed -n 's/^== wall time \([0-9.]*\) s.*/\1/p' "$work/$run_name.launch.log" | tail -1)
    # The simulation's target: within max(5 %, the spread of the measured runs).
    sim_within=$(awk -v e="$sim_err" -v s="$spread" \
        'BEGIN { a = e < 0 ? -e : e; print (a <= (s > 0.05 ? s : 0.05)) ? "true" : "false" }')
    echo "  simulated median_s=$simulated_s closed_err=$err sim_err=$sim_err spread=$spread sim_within=$sim_within predictor=$predictor$verdict"
    rows+=("$name $summary launcher_s=${launcher_s:-nan} makespans=${makespans// /} spread=$spread cpu_drift=$cpu_drift scaled_err=$scaled_err simulated_s=$simulated_s sim_err=$sim_err sim_within=$sim_within predictor=$predictor$verdict counted=$counted capped=$capped real_compute=$real_compute calibrated=$calibrated added=${added:-uncommitted}")
    sections+=("$name|$plan")
    if [ "$name" = local-comm ]; then
        calibrate_lan after || failures+=("LAN calibration after local-comm failed")
    fi
done

# ---- totals ----
# Over the counted scenarios; a cluster counted in another's line (down a tree) is not
# compared on its own.
n=0 inside=0 shares=0 share_checks=0 eff_within=0 eff_checks=0 real=0 capped_n=0
calibrated_all=true errors=() sim_errors=() widths=() closed_misses=0 sim_closer=0 sim_within=0
testbed_errors=() scaled_errors=()
for row in "${rows[@]}"; do
    [ "$(field counted "$row")" = true ] || continue
    n=$((n + 1))
    [ "$(judged "$row" inside)" = true ] && inside=$((inside + 1))
    c=$(judged "$row" clusters_eff_within)
    eff_within=$((eff_within + ${c%/*})) eff_checks=$((eff_checks + ${c#*/}))
    # A single cluster's share is the whole run: only runs of several clusters count.
    c=$(judged "$row" shares_within)
    if [ "${c#*/}" -gt 1 ]; then
        shares=$((shares + ${c%/*})) share_checks=$((share_checks + ${c#*/}))
    fi
    [ "$(field real_compute "$row")" = true ] && real=$((real + 1))
    [ "$(field capped "$row")" = true ] && capped_n=$((capped_n + 1))
    [ "$(field calibrated "$row")" = true ] || calibrated_all=false
    errors+=("$(judged "$row" err)")
    sim_errors+=("$(field sim_err "$row")")
    [ "$(field sim_within "$row")" = true ] && sim_within=$((sim_within + 1))
    widths+=("$(judged "$row" band_width)")
    # A testbed scenario's error both raw and at its calibration's machine speed.
    if [ "$(field scaled_err "$row")" != nan ]; then
        testbed_errors+=("$(field err "$row")")
        scaled_errors+=("$(field scaled_err "$row")")
    fi
    # Where the closed form misses by more than 3 %: is the simulator closer?
    if awk -v e="$(field err "$row")" 'BEGIN { exit !(e > 0.03 || -e > 0.03) }'; then
        closed_misses=$((closed_misses + 1))
        awk -v e="$(field err "$row")" -v s="$(field sim_err "$row")" \
            'BEGIN { exit !((s < 0 ? -s : s) < (e < 0 ? -e : e)) }' && sim_closer=$((sim_closer + 1))
    fi
done
((n > 0)) || calibrated_all=false
read -r median_err max_err < <(printf '%s\n' "${errors[@]}" | grep . | abs_median_max)
read -r sim_median_err sim_max_err < <(printf '%s\n' "${sim_errors[@]}" | grep . | abs_median_max)
read -r band_width_median _ < <(printf '%s\n' "${widths[@]}" | grep . | abs_median_max)
simulation="simulation sim_median_err=$sim_median_err sim_max_err=$sim_max_err sim_within=$sim_within/$n sim_closer=$sim_closer/$closed_misses"
final="validation scenarios=$n inside=$inside median_err=$median_err max_err=$max_err shares_within=$shares/$share_checks eff_within=$eff_within/$eff_checks real_compute=$real calibrated=$calibrated_all capped=$capped_n band_width_median=$band_width_median"

# ---- the document ----
pct() { awk -v x="$1" 'BEGIN { printf "%+.1f %%", 100 * x }'; }
scaled_pct() { if [ "$1" = nan ]; then echo -; else pct "$1"; fi; }
yes_no() { [ "$1" = true ] && echo yes || echo "**no**"; }
description() {
    sed -n '1,/^$/s/^# \{0,1\}//p' "$1" | sed 's/^Validation: //' | tr '\n' ' ' |
        sed 's/ *$//; s/^./\U&/'
}
chart_link() { if [ "$mode" = full ]; then echo "validation/$1.svg"; else echo "charts/$1.svg"; fi; }
{
    echo "# Validation of the model"
    echo
    echo "Generated by \`scripts/validate.sh\` ($mode mode) on $(date -u '+%Y-%m-%d %H:%M UTC'), commit"
    echo "\`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`$(git diff --quiet -- . ':(exclude)docs/validation.md' ':(exclude)docs/validation' 2>/dev/null || echo ' with uncommitted changes'), on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg) when it ended)."
    echo "Do not edit by hand: rerun the script."
    echo
    cat <<'EOF'
Each scenario is a plan in `configs/validation/`: the model's inputs (`[application]`,
`[[cluster]]`) and how to run it on this machine (`[launch]`: the synthetic application, its
emulated worker speeds and emulated WANs). The script predicts with `hmw predict`, runs the plan
with `hmw launch` (one `mpirun` per cluster, WANs emulated in user space by `hmw-wanem` relays),
and compares with `hmw report`, which also draws the charts.

## Definitions and targets

- **Measured makespan**: the main master's wall time (`wall_s` of its statistics), counted from
  the moment every worker has asked for work and every link to another cluster is up, to the
  last result. Process start-up, MPI initialisation and the links' handshakes are outside it,
  as they are outside the model: the table gives the launcher's whole wall time beside it.
  Each scenario runs three times (the machine's noise moves a single run by several percent);
  the run with the median makespan is the one compared and charted, and each scenario's
  section lists all three.
- **Predicted makespan**: the whole run's execution time, best and worst case (`hmw predict`).
- **Simulated makespan**: the median of three runs of `hmw simulate` (the real cores in virtual
  time, against the plan's workers, LANs and WANs, with the WAN's round trip `wan_rtt_s`
  defaulting to twice the emulator's delay); its error is `(measured - simulated) / simulated`.
  It adds no per-message or per-task overhead: nothing in it is fitted to these runs. Its
  target (issue 12): within max(5 %, the **runs' spread**, `(longest - shortest) / median` of
  the scenario's three measured runs) on every scenario.
- **CPU per operation, runs / calibration** (testbed scenarios): the workers' CPU seconds of
  computing over their basic operations in each run, over the same in the calibration's
  workers' run. The tasks are the same computation in both; a CPU quota slows a host without
  changing it, so a figure above 1 says the machine itself computed slower than when it was
  calibrated (on a virtual machine, CPU time the host took from it is counted as the guest
  thread's). A diagnostic only: the prediction and the simulation use the calibration alone.
- **Error at the calibration's speed** (testbed scenarios): the same error with each run's
  makespan divided by its ratio in the column before, the median of the three: what the
  error would have been had the machine computed as fast as when it was calibrated. The gate
  judges the testbed scenarios on it; the full suite reports it beside the raw error.
- **Error**: `(measured - mid) / mid`, `mid` the middle of the predicted range. **Band
  width**: `worst / best - 1`.
- **Share**: a cluster's tasks over the run's; predicted, the middle of its best- and
  worst-case balanced shares. A cluster further down a tree is seen by the master in the line
  of the cluster it hangs from: the share of that subtree is compared.
- **Efficiency of a cluster**: predicted, `(w_c / cperf_c) / T_ex` (3.2 step 6) best and worst;
  measured, from its workers' busy time: their summed busy seconds (as its master or
  sub-master reports them) over `W * makespan`. It is not the makespan restated: a cluster
  whose workers idle (waiting on a link, a late start, an empty end) shows it. Busy time
  includes tail copies computed for nothing.
- **Targets** (issue 16): every measured makespan inside `[0.95 best, 1.05 worst]` (early and
  late both miss); median absolute error under 3 %; each cluster's share within 5 points of the
  middle of its predicted range; each cluster's efficiency within 5 points of the predicted
  range (`[worst - 0.05, best + 0.05]`); median band width at most 5 %.
- **Outage** (`wan-outage`): the closed form has no term for a link that goes down, so this
  scenario is judged on `hmw simulate`'s prediction (the plan's `wan_outages`, the cluster
  lost after `lost_after_s` and rejoining when its link returns): inside when the measured
  makespan is in `[0.95 min, 1.05 max]` of the three simulated runs; its error and band width
  in the totals are the simulation's. The table still shows the closed form's error.
- **Calibrated** (last line): every counted scenario's prediction used a `hmw calibrate` file
  measured before each of its runs started (the prediction's `measured` file and date
  against the main master's `started_unix_s` in each run's statistics). **Capped**: the
  counted scenarios whose runs had a model-derived cap, read from what `hmw launch` wrote for
  them (`load_balance = true` in the run configuration, a `max_tasks=` on a CM line).
- **Dispatch**: on demand in every counted scenario (no `load_balance`: no cap derived from
  the model's shares). `two-clusters-capped` runs with `load_balance = true` and is listed
  apart, not counted. The multi-cluster plans run with `wait_for_links = true`: the run starts
  once every link is up, as the model (which counts no connecting) assumes. The heterogeneous
  plans run with `worker_buffers = 1` (a worker asks for a task when it is done), as the worst
  end times (39) and (43) assume; `hetero-no-reassign-buffered` is the same run with the
  default `worker_buffers = 2`.
- **The gate** (`scripts/validate.sh --quick`, run by `scripts/test.sh`): four scenarios, two
  of them real computation on the testbed with calibrated inputs, three runs each; it fails when a scenario's median makespan is outside `[0.90 best, 1.10 worst]`.
  A testbed scenario's runs are judged at the speed the machine had when it was calibrated:
  each run's makespan is divided by its workers' CPU time per basic operation over the
  calibration's (a change of the machine, which no CPU quota makes and the model does not
  see), and the median of the three scaled makespans is compared; the raw error stays in the
  report. The rule before it (from 2026-11-26: calibrate and run again once when that ratio's
  median left `[0.95, 1.05]`) did not hold on this kind of VM, whose speed moves by more
  between runs a minute apart than the band allows: on 2026-11-27 three runs of
  `tb-tsp-hetero` in a row took 1.148, 1.119 and 0.898 times the calibration's CPU per node,
  and a CI run failed on the second attempt, 19 % early, after a first attempt 11.6 % late
  at 1.19, 1.11 and 1.26 (about -5 % at the median ratio). Until 2026-11-26 three CI replays
  in nine had failed on `tb-tsp-hetero` with its calibration read 12-19 % slower than its
  runs.
  The full suite fails on a run that fails or a makespan error beyond 25 %; a missed target is
  reported in the table and the last line.

## Where the model's inputs come from

- **On the testbed** (the `tb-*` scenarios, real computation): every input is measured. Each
  scenario runs on emulated hosts (`hmw-testbed`: a network namespace per host, a bridge per
  cluster's LAN, the WAN emulator between clusters, a CPU quota per worker host), each cluster
  started over ssh. The quotas differ from the plan's hand-written `perf` by up to 20 %
  (`[testbed] quota_perf`); just before the scenario's runs `hmw calibrate` measures the
  workers (the application's own tasks, every worker of every cluster computing at once, as
  in a run, each task executed four times so that no worker waits for the master, until
  every worker computed for 2 s; an external cluster's workers on the parts its sub-master
  splits tasks into, when the application splits them), each LAN, and each WAN between its CMs' hosts (one
  direction at a time after a warm-up of 30 round trips at least, while the workers
  compute), and the prediction, the simulation and the report use that file (kept beside the
  results as `NAME.system.toml`). Every calibration starts once the machine is quiet (a
  second with its CPUs at most 10 % busy, at most 60 s of waiting; the wait is printed).
  What the calibration does not reproduce: a worker's own per-task communication (receiving
  its task, sending its result) on its quota, which the repeated tasks spread thin; the masters', sub-masters' and CMs' own CPU use during a run (they run
  without a quota, on the same two cores); and whatever else the machine runs between the
  calibration and each run. A host's quota is a ceiling that a loaded machine may not
  deliver.
- **Elsewhere** (the synthetic application on this machine, `hmw launch`'s localhost mode) the
  same calibration runs just before each scenario, through the same launcher and the same
  `hmw-wanem` relays as its runs:
  - **worker performance** (`perf`): a synthetic task sleeps `task_seconds / speed`, with each
    worker's speed `perf / reference_perf` (`reference_perf = 1 / task_seconds`); the
    calibration measures basic operations per busy second with every worker at once, so the
    runtime's own cost per task is in the figure, not only the sleep;
  - **LAN** (`lan_bytes_per_s`): the synthetic application with the plan's message sizes and
    no computation, with all of the cluster's workers. In `local-comm`, the only scenario where
    it matters, the LAN is instead measured just before the run by `lan-calibration.toml`: the
    synthetic application in local-comm's regime (message sizes of 2 MiB each way, four
    workers, 4 ms tasks) but with half its tasks, in separate runs (three, the mean),
    throughput `tasks * (task_bytes + result_bytes) / makespan`. Its regime matters: on two
    cores shared by five processes the transport moves less when workers sleep between
    transfers than when they ask again at once (on 2026-11-23, three runs each: about 2930
    MB/s with 4 ms tasks, 3750 MB/s with none). Calibration and run share the two cores with
    whatever else the machine runs, which is what moves this figure most: the same
    calibration is run again just after, to show the drift;
  - **WAN** (`wan_in/out_bytes_per_s`, `wan_rtt_s`): each link between the CMs' places, set up
    as the CM sets it up, through the relay that emulates it: the round trip, then the
    goodput one way then the other (framing and QUIC overhead excluded from the bytes counted).
- **Message sizes**: the application's payloads plus the few bytes of their encoding, written
  in the plan.
EOF
    echo
    if [ -n "$lan_note" ]; then
        echo "LAN measured in this run, just before local-comm (its prediction uses this):"
        echo "$lan_note; the same calibration just after local-comm: ${lan_after_note:-failed}."
        echo
    fi
    echo "## Results"
    echo
    echo "| scenario | added in | bottleneck (predicted) | predicted best (s) | predicted worst (s) | band width | simulated, median of 3 (s) | measured (s) | error | simulated error | runs' spread | CPU per operation, runs / calibration | error at the calibration's speed | inside | shares within 5 points | efficiency (busy) within 5 points | \`hmw launch\` wall time (s) |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|"
    for row in "${rows[@]}"; do
        name=${row%% *}
        shown=$name
        [ "$(field counted "$row")" = true ] || shown="$name (apart: capped, not counted)"
        printf '| [%s](#%s) | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
            "$shown" "$name" "$(field added "$row")" "$(field bottlenecks "$row" | sed 's/,/, /g')" \
            "$(field best_s "$row")" "$(field worst_s "$row")" "$(pct "$(field band_width "$row")")" \
            "$(field simulated_s "$row")" \
            "$(field makespan_s "$row")" "$(pct "$(field err "$row")")" \
            "$(pct "$(field sim_err "$row")")" "$(pct "$(field spread "$row")" | tr -d +)" \
            "$(field cpu_drift "$row" | sed 's/nan/-/g; s/,/, /g')" \
            "$(scaled_pct "$(field scaled_err "$row")")" \
            "$(yes_no "$(judged "$row" inside)")" \
            "$(judged "$row" shares_within)" "$(judged "$row" clusters_eff_within)" \
            "$(field launcher_s "$row")"
    done
    echo
    echo "Over the $n counted scenarios: median absolute error $(awk -v x="$median_err" 'BEGIN { printf "%.1f %%", 100 * x }'),"
    echo "largest $(awk -v x="$max_err" 'BEGIN { printf "%.1f %%", 100 * x }'). \`hmw simulate\` (the real cores in virtual"
    echo "time, median of three seeded runs; error \`(measured - simulated) / simulated\`): median absolute"
    echo "error $(awk -v x="$sim_median_err" 'BEGIN { printf "%.1f %%", 100 * x }'), largest $(awk -v x="$sim_max_err" 'BEGIN { printf "%.1f %%", 100 * x }'); within max(5 %, the spread of"
    echo "the scenario's three runs) in $sim_within of the $n; closer than the closed form in $sim_closer of"
    echo "the $closed_misses scenarios where the closed form misses by more than 3 %."
    if ((${#scaled_errors[@]})); then
        read -r testbed_median _ < <(printf '%s\n' "${testbed_errors[@]}" | abs_median_max)
        read -r scaled_median _ < <(printf '%s\n' "${scaled_errors[@]}" | abs_median_max)
        echo "On the testbed scenarios the median absolute error is $(awk -v x="$testbed_median" 'BEGIN { printf "%.1f %%", 100 * x }'), and $(awk -v x="$scaled_median" 'BEGIN { printf "%.1f %%", 100 * x }') at the"
        echo "machine speed of their calibrations."
    fi
    if ((${#failures[@]})); then
        echo
        echo "Failures:"
        for f in "${failures[@]}"; do echo "- $f"; done
    fi
    echo
    cat <<'EOF'
## Where the differences come from

What the runs show, scenario by scenario (the figures are in the table above and in each
scenario's report below):

- **Local, computation bound** (`local-compute`, `hetero-reassign`, `hetero-no-reassign`): the
  model's inputs are exact here, and the measured steady rate in each report is within about
  2 % of `perf_ste`: what is left is the runtime's own cost per task (a message each way and a
  sleep that never ends early).
- **Buffers and the worst end** (`hetero-no-reassign` against `hetero-no-reassign-buffered`):
  the thesis's worst end times (39) and (43) assume a worker holds one task. With the default
  `worker_buffers = 2` a worker holds a second task while it computes, so at the end the
  slowest worker may still have two queued: the buffered run ends later than the one with
  `worker_buffers = 1` (4.40 s against 4.05 s here), past the one-buffer worst case of 4.30 s.
  (99) counts the buffered task in the worst end without reassignment (`docs/model.md`
  section 8): a worst case of 4.61 s, and the run is inside its band.
- **Several clusters, the WAN's latency** (`two-clusters`, `wan-out`, `wan-out-nr3`,
  `three-auto`, `latency-200ms`, `depth2-tree`): an external cluster's first tasks reach it a
  round trip after the master's clock starts (its request travels up, the tasks down), and its
  last results reach the master a one-way delay after they are computed. Before issue 16 the
  model had no term for it and these runs ended late by about the round trip plus a task time;
  `latency-200ms` (a 200 ms round trip, written before the model changed) makes it 5 % of the
  run. The model now adds the round trip to the startup (96) and half of it to the end (97),
  with the round trip of the whole path for a cluster down a tree (`depth2-tree`: 80 ms for
  brazil); the CM's request window (98) covers the bandwidth-delay product, so it lowers no
  steady rate. A sub-master makes no tail copies, so an external cluster's worst end is (49),
  the slowest worker's last task waited for (`docs/model.md` section 8).
- **Communication bound** (`local-comm`): the prediction is only as good as the LAN figure.
  Here the "LAN" is MPI's shared-memory transport between five processes on two cores, so
  its throughput is CPU work and moves with everything else the machine runs: compare the
  calibration's spread, its value before and after the run (above), and the three runs'
  makespans (in the scenario's section) with the error. It also depends on the regime: workers
  that sleep between transfers get less of it than workers that ask again at once, which is
  why the calibration runs with the scenario's task time.
- **WAN bound** (`wan-out`, `wan-out-nr3`, `wan-in-nt4`): the emulator enforces the plan's
  rates, and the results' link carries close to them (the `link` figure of the report is an
  average over the link's whole life, framing and QUIC included). Joining three results into
  one (`results_per_inter_result = 3`) lifts the cluster's share as (36) says. The prediction
  is only as good as the goodput `hmw calibrate` measures: in the full run of 2026-11-24
  02:16 (before calibrate measured one direction at a time) it read wan-out's 1 MB/s link at
  0.57 MB/s for tasks and 0.61 for results, where the run's results carried 0.95, and these
  three scenarios ended 6-11 % before their predictions. With both directions at once, each
  direction's acknowledgements queued behind the other's data in the emulator's queue.
- **Real computation on the testbed, one cluster** (`tb-tsp-hetero`,
  `tb-srmsd-hetero-no-reassign`, `tb-matmul-local`): the calibration finds each host's quota
  (its workers computing at once, each task executed four times so that no worker waits for
  the master, and the run done again with more tasks until every worker computed for 2 s: a
  speed under a CPU quota is an average over its 100 ms periods, and with 0.4 s of computing
  a CI run's calibration put tb-tsp-hetero's hosts 11 % slow). On the fast machine of the
  2026-11-25 run the TSP runs last 0.56-0.63 s, a few quota periods. The matrix product's
  workers also receive 4 MiB and send 2 MiB per task over TCP, on the same quota as their
  computation: 6.5-8.1 ms of CPU per task beside 21.2 ms of computing, 17-27 ms of a 0.3-0.4
  core host's time, which buffering does not hide (runs with one and two buffers per worker
  took the same time per task). Until 2026-11-25 the model had no term for it and the
  scenario ended 25-33 % late; (100) now counts it (`docs/model.md` section 9), from the CPU
  time each worker spends on its messages in the calibration. For tasks with small messages
  (TSP, SRMSD) that CPU time is mostly the communication thread's own waiting, which grows
  with time and is counted once per task of the calibration, whose tasks are executed four
  times: on tb-tsp-hetero's hosts the calibration gave 0.3-1.6 ms per task with four
  executions and 0.4-0.8 ms with one (measured with the first version of the counting), so
  (100) makes these predictions pessimistic by up to about 4 % (later, with the final
  counting: 0.9-2.1 ms per task, 5.6-7.4 % of the task times, in two gate runs of
  2026-11-26). That first version read each
  worker's compute-thread CPU clock around every execution, which brought the CPU quota's
  accounting up to date there and moved its throttling out of the timed executions: a full
  run with it had the TSP and SRMSD scenarios 8-9 % late, and calibrations of the same
  hosts, interleaved with the build before it, read a 0.2-core host 30-40 % faster. The
  clocks are now read at a worker's first task and at its `Bye` only.
  In the full run of 2026-11-25 21:28 (clocks read at the first task and `Bye`) the
  one-cluster testbed scenarios ended 6.5-9.5 % before their best case: their calibrations
  read the TSP hosts at 7.98e7, 6.10e7 and 3.23e7 nodes/s where the build before (no clock
  reads) read 7.3-8.8e7, 5.2-7.3e7 and 3.2-4.0e7 in six calibrations between 21:14 and 21:24,
  on this machine whose speed moved by 10 % within minutes. Part of it was the testbed's
  quota period (the kernel's 100 ms until 2026-11-26): a host that starts to compute part way
  through a period gets that period's unused quota on top, which a run of a few periods
  feels and a 2 s calibration does not. In the full run of 2026-11-26 05:21, tb-tsp-hetero's
  slowest worker computed at 0.28 of a core where its calibration had 0.22, and the scenario
  ended 9.0 % before its best case; five interleaved runs each with 100 ms and 10 ms periods
  gave medians of 0.626 and 0.670 s. The testbed now uses 10 ms; the six testbed scenarios
  run alone right after (`--only`): tb-tsp-hetero -2.6 %, tb-srmsd-hetero-no-reassign +2.6 %,
  tb-matmul-local -5.9 %, tb-matmul-two-clusters +1.0 %, tb-srmsd-one-to-many -2.9 %,
  tb-tsp-three-clusters -12.0 % (its calibration read lyon-1 at 2.63e7 nodes/s, its runs
  31-34e6).
- **Real computation on the testbed, several clusters** (`tb-matmul-two-clusters`,
  `tb-srmsd-one-to-many`, `tb-tsp-three-clusters`). In `tb-matmul-two-clusters` spain's
  sub-master splits each 512-block product into 64 products of 128-blocks (`sub_b = 128` in
  the plan's application settings): its workers compute and move parts, 256 KiB in and
  128 KiB out per 4.2 Mflop, on hosts of 0.10-0.15 of a core, whose own CPU time on those
  messages is two to three times their work. Until 2026-11-26 08:00 `hmw calibrate` measured
  them on whole tasks: the model gave spain 7.6 tasks/s, the runs measured 2.4-2.6 (its
  workers busy 9 % of the run), and the scenario missed its band in three full runs (+8.5 %,
  +22 % and +24.3 % from the band's midpoint). The calibration of an external cluster's
  workers now splits the tasks as its sub-master does (`[run] split_tasks`, `docs/model.md`
  section 9), and a throttled worker's decoding counts at the share it computes at (spain-2's
  decoding took as long as its compute thread's CPU time, and the bound used before gave it no
  own time at all): spain-1 and spain-2 then spend 10.5 and 15.4 ms of their time per part on
  their messages beside 3.1-5.0 ms of work, the model gives spain 1.9 tasks/s against 2.25
  measured (`--only`, 2026-11-26 07:46), and the full run of 08:12 ended 0.7 % before the
  band's midpoint. Spain is now predicted slower than it runs (1.79 tasks/s against 2.53 in
  that run), its share 7.4 % against 9.3 %: (100) charges each part its whole own time, while
  its workers used 68-73 % of their quota in a run measured that morning (something else, the
  sub-master's feeding of 64 parts per task, holds them back part of the time); spain's share
  is small enough that the makespan is mostly lyon's. The model's LAN terms still see the
  plan's task sizes: the LAN calibration measures messages of those sizes, a quarter of the
  bytes spain's parts carry. Lyon's calibration varied between full runs (lyon-1 at 2.82e9 to 3.37e9 operations/s in three
  runs of 2026-11-26, the model giving lyon 15.6 to 18.4 tasks/s against 18.8-19.2 measured).
  Two errors that offset each other also hide in `tb-tsp-three-clusters` of the 05:53 run
  (+1.0 %, inside): lyon 55.1 tasks/s against 50.2 predicted, brazil 27.6 against 38.8 (each
  cluster's share stayed within 5 points of its prediction). `tb-srmsd-one-to-many` ended
  6.9 % before its best case: in its median run every worker computed 2.4-5.7 % faster than
  its calibration read it, and (100) took off each worker's rate its `own ms`, 2.9-9.3 ms per
  task (5-10 % of its 58-99 ms tasks), mostly its communication thread's polling while it
  waits (above); its three runs took 2.53, 2.56 and 2.87 s.
- **The end of a run with external clusters** (every scenario with a sub-master): with
  on-demand dispatch an external cluster still holds, when the master hands out the last
  task, what its CM's window keeps on the way (98), what its workers' buffers hold, and what
  its sub-master keeps queued; the balance (61) has no term for it, and the cluster holding
  the most for its rate ends last. Until 2026-11-26 a sub-master also kept its workers'
  buffers queued a second time (`workers x worker_buffers` more tasks). Without them (commit
  `89fcdda`), in two full runs of the suite on the same quiet machine an hour apart (before,
  then after): `two-clusters` +3.1 % then +1.6 %, `three-auto` +3.9 % then +1.9 %,
  `wan-out-nr3` +6.6 % then +4.3 %, `depth2-tree` +6.4 % then +3.4 %,
  `tb-tsp-three-clusters` +15.3 % then +7.4 %, `tb-srmsd-one-to-many` +6.9 % then -3.5 %,
  `demo-three-clusters` +3.5 % then +2.8 % (`hmw simulate` on the first run's calibrations
  had predicted each of them 0.1-0.16 s shorter, and none longer). What the
  windows and buffers still hold at the end is the rest of the gap in `depth2-tree` and
  `tb-tsp-three-clusters` (brazil's window of three batches of four TSP tasks is 12 of its
  16-26 tasks): `hmw simulate`, which runs the same cores, is within 1.2 % and 10 % there.
  The first of `depth2-tree`'s three runs, in both full runs, started spain's subtree about
  1 s after the master (5.96 s and 5.88 s against 5.45 s and 5.30 s for the other two): its
  inner link's client CM started before the server CM listened, and QUIC resent its lost
  first handshake packet only after about 1 s; since commit `df46a6d` after about 0.3 s (10
  runs on this machine: 4 with a late link at 5.47-5.50 s, 6 at 5.30 s).
  At the end the master's idle workers copy tasks still in flight (`reassign_last_task`).
  Until 2026-11-26 they copied the oldest, which an external cluster had often computed
  already (its result waiting in a join or on the WAN): in the apps' task-pruning TSP run on
  the testbed the main cluster's copies beat each of brazil's 21 last results, and spain sat
  idle for the last 1.6 s. Now the newest task goes first, and a cluster that holds nothing
  takes copies too (commits `f452ea0`, `367e9dc`); interleaved runs of each binary:
  `tb-tsp-three-clusters` 0.933 -> 0.800 s and 0.846 -> 0.776 s, `tb-srmsd-one-to-many`
  2.59 -> 2.36 s, the apps' TSP 15.44 -> 14.56 -> 13.89 s; `tb-tsp-hetero` (one cluster)
  0.576 -> 0.594 s, its slowest worker's running task now copied after its buffered one. In
  the full run of 05:21 `tb-tsp-three-clusters` ended 8.0 % before its best case, no longer
  7.4 % after it: the model's external end (49)/(54) assumes no copies.
- **The machine's own speed** (every testbed scenario; the column "CPU per operation, runs /
  calibration"): the same computation does not take the same CPU time from one minute to the
  next on this virtual machine. In an `--only` run of 2026-11-26 13:05 (the six testbed
  scenarios and `depth2-tree`, nothing else running) `tb-tsp-hetero`'s three runs took
  0.858, 0.666 and 0.823 s, their workers spending 1.307, 1.007 and 1.250 times the CPU
  time per search node of the calibration just before; `tb-srmsd-one-to-many` (identical
  tasks) took 3.182, 3.057 and 2.687 s at 1.207, 1.152 and 1.022 times. Only the runs at
  the calibration's cost per operation ended within the tolerance of their predictions
  (0.666 s against 0.675-0.691 s predicted, 2.687 s against 2.702-2.809 s). Where the runs
  spread this far the median run says more about the machine than about the model; the
  simulation's target (issue 12) allows for the spread. It is not the two cores slowing each
  other on arithmetic: a 3 s integer loop on one core took the same CPU time with the other
  core idle and busy (2.75-2.84 s and 2.79-2.80 s, twice each, 14:15); what the tasks share
  beyond the core (caches, memory) with whatever else the host runs is the likely cause, not
  measured.
- **The full runs of 2026-11-27** (nothing else running). At 09:02, before (106): 19 of 22
  inside; the six testbed scenarios' errors at their calibration's speed were all negative,
  -1.1 % to -9.1 % (`tb-matmul-local` -9.1 %, -11.7 % raw). The cause was the calibration's:
  a worker's executions were timed at the share of a core its compute thread got while its
  communication thread took the rest of the quota, and (100) then counted that communication
  a second time as the worker's own time (`docs/model.md` (106)). On `tb-matmul-local`'s hosts
  the compute threads got 0.377, 0.283 and 0.283 of a core where the processes had their
  quotas' 0.40, 0.30 and 0.30, and each task was predicted 6 % too long. Since commit
  `75beda6` the calibration takes both at the worker's capacity, which reads the quotas
  themselves (0.401, 0.299, 0.300); `--only tb-matmul-local` at 10:46 ended 0.25 % before its
  prediction (simulated: 0.2 %), where the same command at 10:39, before the change, ended
  12.3 % before it (7.8 % at the calibration's speed). In the full run of 10:47 the six
  testbed scenarios' errors at their calibrations' speed were -3.4 % to +4.0 %, of both signs
  (median absolute 3.2 %, against 4.1 % at 09:02); but the runs of four of them spent 1.05 to
  1.23 times their calibration's CPU time per operation (the machine's speed, below), their
  raw errors were +10.3 % to +21.1 %, and 17 of the 22 scenarios ended inside, the simulation
  within its tolerance on 17. `tb-srmsd-one-to-many`'s runs spent 1.11-1.17 times their
  calibration's CPU per operation in both full runs before 11:53 (1.04-1.09 in that one): not
  the noise of one run, and not explained. It is not the other core's load: one SRMSD worker pinned to each core, alone
  and both at once (11:15, three rounds), spent 0.0100-0.0128 us of CPU per operation in any
  arrangement, the other core's load making no difference beyond that spread.
  In the full run of 11:53 (also with the quick polling bounded in time, `docs/benchmarks.md`)
  20 of 22 ended inside and the simulation was within its tolerance on 20; the testbed
  scenarios' median absolute error was 3.8 % raw and 1.6 % at their calibrations' speed, five
  of the six within -2.8 % to +1.3 % there (`tb-matmul-local` -13.1 % raw, its runs at 0.89-0.92
  of the calibration's CPU per operation). The sixth, `tb-matmul-two-clusters`, ended 13.3 %
  late (+11.3 % at the calibration's speed): its lyon workers got 0.301-0.306 and 0.259-0.266
  of a core in the runs (CPU time over the first task in to the last result out), where their
  calibration read 0.349 and 0.299 (their quotas, 0.35 and 0.30). The two cores could not give
  them their quotas while the master served 4 MiB tasks to lyon and spain's sub-master split
  tasks into 64 parts over its LAN (spain's workers busy 11 % of the run); lyon ran 15.63
  tasks/s against 16.65 predicted. The workers of the other five scenarios got 0.99-1.05 of
  their calibrated cores in the runs (0.94-1.13 in `tb-tsp-three-clusters`' runs of about a
  second). Before (106) the second count of each worker's communication
  had hidden this contention; it is the testbed's (every host shares the machine's two cores),
  not the model's, and a run's statistics now show it. Since the third session of that day
  each scenario's `hmw report` (`target/validation/full/NAME.report.txt`) ends with its
  workers against their calibration, the cores and the work per CPU second apart. In the full run of 14:00 (after the master's clock reads were cut,
  `docs/benchmarks.md`) 19 of 22 ended inside, the simulation within its tolerance on 20
  and closer than the closed form on 5 of the 8 closed-form misses; every testbed scenario
  within -3.6 % to +3.1 % at its calibration's speed, and the three misses were the machine's
  speed: `tb-srmsd-hetero-no-reassign` -19.6 % and `tb-srmsd-one-to-many` -18.1 % raw (their
  workers did 1.14-1.35 times their calibration's work per CPU second, their reports say, at
  their calibrated cores), `tb-tsp-three-clusters` +8.3 % (+3.1 % at its calibration's
  speed). `tb-matmul-two-clusters` ended 3.1 % late, its lyon workers at 92-93 % of their
  calibrated cores.
  In the full run of 19:21 (after the MPI transport's receive posted in advance,
  `docs/benchmarks.md`) 20 of 22 ended inside, the simulation within its tolerance on 21 and
  closer than the closed form on 6 of the 8 closed-form misses. `tb-tsp-hetero` ended 12.8 %
  before its prediction, its three runs at 0.876-0.924 of their calibration's CPU per search
  node (-2.2 % at the calibration's speed); `tb-matmul-two-clusters` ended 9.6 % late (+10.0 %
  at its calibration's speed), its lyon workers at 82-84 % of their calibrated cores, the
  contention described above. The two SRMSD scenarios, 18-20 % early at 14:00, ended within
  0.4 % of their predictions, their runs at 0.95-1.11 of their calibrations' CPU per
  operation.

How to read the charts: the title says PASS or FAIL, whether the measured makespan is inside
the tolerance (the same verdict as the table). For each cluster, the measured completion rate
over each sampling interval (solid) against the model's curve (dashed: a linear climb over
twice the startup time, the steady level `perf_ste / oper`, a linear fall centred on the end of
the steady state, so that the area is the cluster's predicted share; dotted where the worst
case differs); below, the tasks done. Yellow band with dashed edges: the tolerance, `0.95 best`
to `1.05 worst`; grey band inside it: the predicted makespan, best to worst; dark vertical
line: the measured makespan. Under the charts, one row per cluster behind a communication
manager: grey while its link was up, in the cluster's colour while it was down (as its
communication manager recorded it; hatched in that colour across the charts above). For
statistics without those records, red hatching marks instead a stretch where the cluster
delivered nothing while others did. The clusters behind a communication manager are seen from
the main master, so their results arrive a WAN delay after they were computed.
EOF
    for section in "${sections[@]}"; do
        name=${section%%|*}
        plan=${section#*|}
        echo
        echo "## $name"
        echo
        shown=$(scenario_plan "$name")
        description "$shown"
        echo
        echo
        echo "Plan: [\`$shown\`](../$shown)$([ "$plan" != "$shown" ] && echo " (with the LAN measured just before the run)")."
        workers=$(grep -E '^[A-Za-z0-9_-]+ workers: ' "$work/$name.predict.txt" || true)
        if [ -n "$workers" ]; then
            echo "Workers used: $(echo "$workers" | tr '\n' ';' | sed 's/;$//; s/;/; /g')."
        fi
        for row in "${rows[@]}"; do
            if [ "${row%% *}" = "$name" ]; then
                echo "Added in commit \`$(field added "$row")\`$([ "$(field counted "$row")" = true ] || echo "; runs apart (a model-derived cap), not counted")."
                echo "Measured makespans of its $repeats runs: $(field makespans "$row" | sed 's/,/, /g') s (the median is compared)."
                if [ "$(field cpu_drift "$row")" != nan ]; then
                    echo "The workers' CPU time per basic operation in each run, over the calibration's: $(field cpu_drift "$row" | sed 's/,/, /g')."
                fi
            fi
        done
        # A plan rewritten for the run (local-comm: the LAN measured just before) is shown as
        # the committed plan and the value it was given: readers cannot open the copy.
        given=$plan
        if [ "$plan" != "$shown" ]; then
            lan=$(sed -n 's/^lan_bytes_per_s = \([0-9.e+-]*\).*/\1/p' "$plan" | head -1)
            echo "The run used this plan with \`lan_bytes_per_s = $lan\` (bytes per second, measured"
            echo "by the LAN calibration just before it) in place of the value written in it."
            given="$shown with lan_bytes_per_s = $lan"
        fi
        echo
        echo "Its inputs, measured just before its runs (kept as \`$name.system.toml\` beside them):"
        echo
        echo '```'
        echo "\$ hmw calibrate $shown ${calibrate_args[*]} $(calibrate_lan_args "$name")"
        sed -n '/^cluster  *worker /,/^measured in: /p' "$work/$name.calibrate.log"
        echo '```'
        echo
        echo '```'
        echo "\$ hmw report STATS --plan $shown --measured $name.system.toml --svg $(chart_link "$name")"
        grep -v '^report \|^chart: ' "$work/$name.report.txt" | sed "s|$plan|$given|g"
        echo '```'
        echo
        echo '```'
        echo "\$ hmw simulate $shown --measured $name.system.toml --runs 3"
        grep -v '^simulate ' "$work/$name.simulate.txt" | sed "s|$plan|$given|g"
        echo '```'
        echo
        echo "![$name]($(chart_link "$name"))"
    done
    echo
    echo '```'
    echo "$simulation"
    echo "$final"
    echo '```'
} | sed "s|$PWD/||g" >"$doc"
echo "validate: wrote $doc"

echo "$simulation"
if ((${#failures[@]})); then
    printf 'validate: FAILED: %s\n' "${failures[@]}" >&2
    echo "$final"
    exit 1
fi
echo "$final"
