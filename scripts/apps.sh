#!/usr/bin/env bash
# The three applications of the thesis across three clusters emulated on this machine
# (`hmw launch` in localhost mode: every cluster's ranks under a local mpirun, the WANs
# emulated by hmw-wanem relays), each verified, and the model tried on them:
#   - SRMSD (configs/srmsd-ring-three-clusters.toml): the average spectrum checked against a
#     one-process run of the same seeds;
#   - TSP in its three variants (configs/tsp-three-clusters.toml): the optimum checked against
#     Held-Karp; for task-pruning, the error of the live prediction made at 10 % of the run
#     (the first progress sample at or after 10 % of the measured makespan) against the
#     measured makespan; for global-pruning, whether the interval made then holds it, and its
#     width over its midpoint; at the full sizes, task-pruning also at the size its error was
#     first judged on (16 cities, level 3), its error printed on a line of its own;
#   - the matrix product's row/column strategy (configs/matmul-row-column.toml): the product
#     checked, the stabilising row/column predicted by `hmw predict` (equation (80)) and the
#     one measured in the run.
#
#   scripts/apps.sh            # the plans' sizes (a few minutes once built)
#   scripts/apps.sh --quick    # small sizes (scripts/test.sh runs it)
#   scripts/apps.sh --testbed  # on the testbed's emulated hosts (as root): each cluster over
#                              # ssh, each worker under its CPU quota, the WANs through the
#                              # testbed's router (configs/testbed/srmsd-ring-three-clusters.toml,
#                              # configs/validation/tb-tsp-three-clusters.toml,
#                              # configs/testbed/matmul-row-column.toml), the row/column
#                              # predicted from `hmw calibrate` run on those hosts just before;
#                              # with --quick, the small sizes there
#
# Exits non-zero when a run fails or an answer is wrong. Last line:
#   apps srmsd=verified tsp_exhaustive=verified tsp_task=verified tsp_global=verified
#   matmul_rc=verified rc_stabilise_pred=P rc_stabilise_meas=M tsp_task_err10=E
#   tsp_global_in_interval=true|false tsp_global_width=W
# (a failed check prints its name with `failed` and the script goes on to the end).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
testbed=false
while (($#)); do
    case "$1" in
        --quick) mode=quick ;;
        --testbed) testbed=true ;;
        *) echo "usage: $0 [--quick] [--testbed]" >&2; exit 2 ;;
    esac
    shift
done

scripts/setup.sh
. scripts/env.sh
target=$(realpath -m "${CARGO_TARGET_DIR:-target}")
build_release
hmw=$target/release/hmw
testbed_name=ap$(($$ % 100000))
testbed_bin=$target/release/hmw-testbed
. scripts/lib/testbed.sh
if $testbed; then
    work=$target/apps/testbed-$mode
    srmsd_plan=testbed/srmsd-ring-three-clusters.toml
    tsp_plan=validation/tb-tsp-three-clusters.toml
    matmul_plan=testbed/matmul-row-column.toml
    trap testbed_down EXIT
else
    work=$target/apps/$mode
    srmsd_plan=srmsd-ring-three-clusters.toml
    tsp_plan=tsp-three-clusters.toml
    matmul_plan=matmul-row-column.toml
fi
rm -rf "$work"
mkdir -p "$work"

# The plan of configs/ each run derives from (on the testbed, the hosts it brings up).
declare -A base
# A plan of configs/ with values replaced: derive NAME SOURCE 'from|to' ... (each `from` must
# be in the plan: a plan that changed fails loudly instead of running the wrong size).
derive() {
    local name=$1 source=configs/$2
    base[$name]=$2
    shift 2
    cp "$source" "$work/$name.toml"
    local change from to
    for change in "$@"; do
        from=${change%%|*}
        to=${change#*|}
        if ! grep -qF -- "$from" "$work/$name.toml"; then
            echo "apps: $source has no '$from'" >&2
            exit 1
        fi
        python3 - "$work/$name.toml" "$from" "$to" <<'EOF'
import sys
path, old, new = sys.argv[1:]
text = open(path).read()
open(path, "w").write(text.replace(old, new))
EOF
    done
}

ok=true
# launch NAME: runs $work/NAME.toml, its output in $work/NAME.out, its files in $work/NAME/
# (on the testbed, the testbed of its base plan up first).
launch() {
    local name=$1 start
    start=$(date +%s)
    if $testbed && ! testbed_up "configs/${base[$name]}" "$work/$name.testbed.log"; then
        echo "apps: $name: the testbed did not come up; log: $work/$name.testbed.log" >&2
        : >"$work/$name.out"
        ok=false
        return
    fi
    if ! on_host "$testbed" "$hmw" launch "$work/$name.toml" --work-dir "$work/$name" \
        >"$work/$name.out" 2>&1; then
        echo "apps: $name failed; the end of its output:" >&2
        tail -20 "$work/$name.out" >&2
        ok=false
    fi
    echo "apps: $name took $(($(date +%s) - start)) s: $(grep -E '^(srmsd members|tsp variant|matmul m)=?' "$work/$name.out" | tail -1)"
}

# verified NAME PATTERN: "verified" when the run's output has PATTERN, else "failed" (it runs
# in a command substitution: the caller turns a "failed" into the exit status).
verified() {
    if grep -qE -- "$2" "$work/$1.out"; then echo verified; else echo failed; fi
}

if [ "$mode" = quick ]; then
    derive srmsd "$srmsd_plan" 'tasks = 120|tasks = 24' \
        'members = 120|members = 24' 'steps = 200000|steps = 10000' \
        't_off = 1000.0|t_off = 50.0' 'oper = 1600000|oper = 80000'
    tsp_exhaustive=('n = 12|n = 10' 'tasks = 110|tasks = 72' 'oper = 986410|oper = 13700')
    tsp_task_pruning=('n = 12|n = 14' 'tasks = 110|tasks = 156' 'oper = 986410|oper = 108505112')
    tsp_global_pruning=("${tsp_task_pruning[@]}")
    derive matmul_rc "$matmul_plan" 'm = 2048|m = 1024' 'b = 128|b = 64' \
        'verify_up_to = 2048|verify_up_to = 1024' 'oper = 4177920|oper = 520192'
else
    derive srmsd "$srmsd_plan"
    derive matmul_rc "$matmul_plan"
    tsp_exhaustive=()
    # The pruning runs, each divided at level 4: task-pruning on 15 cities (2,184 tasks),
    # global-pruning on 17 (3,360 tasks). The prediction made at 10 % of a run extrapolates
    # the work of the tasks gathered by then: at 16 cities and level 3 (210 tasks, 20 s on the
    # testbed) those were 15-20 tasks, and the task-pruning prediction moved by -11 % to +24 %
    # from one progress sample to the next (the apps runs in `docs/validation.md`); at level 4 about ten
    # times as many are in by then (tasks that start deeper prune less: 15 cities at level 4
    # visit 4.1 times the nodes of level 3, for about as long a run). A global bound prunes
    # so much more that 15 cities take about a second on the testbed, less than four progress
    # samples: 17 take about 15 s. Held-Karp checks up to 18 cities.
    tsp_task_pruning=('n = 12|n = 15' 'level = 3|level = 4' 'tasks = 110|tasks = 2184'
        'oper = 986410|oper = 108505112')
    tsp_global_pruning=('n = 12|n = 17' 'level = 3|level = 4' 'tasks = 110|tasks = 3360'
        'oper = 986410|oper = 16926797486')
fi
# Progress samples every 0.25 s, for the prediction at 10 % of the run.
interval="$(grep -m1 -o '^statistics_interval = [0-9.]*' "configs/$tsp_plan")|statistics_interval = 0.25"
derive tsp_exhaustive "$tsp_plan" "${tsp_exhaustive[@]}" "$interval"
derive tsp_task "$tsp_plan" "${tsp_task_pruning[@]}" \
    'variant = "exhaustive"|variant = "task-pruning"' "$interval"
# Pruned tasks take microseconds: with tail copies the main cluster would recompute every
# task still out in the external clusters before their results crossed the WAN.
derive tsp_global "$tsp_plan" "${tsp_global_pruning[@]}" \
    'variant = "exhaustive"|variant = "global-pruning"' "$interval" \
    'reassign_last_task = true|reassign_last_task = false'

tsp_runs=(tsp_exhaustive tsp_task tsp_global)
if [ "$mode" = full ]; then
    # Kept beside the resized run: task-pruning at the size its target was first judged on
    # (16 cities at level 3, 210 tasks), its error at 10 % printed before the last line.
    derive tsp_task_level3 "$tsp_plan" 'n = 12|n = 16' 'tasks = 110|tasks = 210' \
        'oper = 986410|oper = 16926797486' \
        'variant = "exhaustive"|variant = "task-pruning"' "$interval"
    tsp_runs+=(tsp_task_level3)
fi
for name in srmsd "${tsp_runs[@]}"; do
    launch "$name"
done
# The row/column the model predicts from the plan's figures, or on the testbed from `hmw
# calibrate` run on its hosts just before the run (every worker at once, each LAN once, each
# WAN between the CMs).
measured=()
if $testbed; then
    if testbed_up "configs/${base[matmul_rc]}" "$work/matmul_rc.testbed.log"; then
        settle
        if on_host true "$hmw" calibrate "$work/matmul_rc.toml" --lan-runs 1 \
            --out "$work/matmul_rc.system.toml" >"$work/matmul_rc.calibrate.log" 2>&1; then
            measured=(--measured "$work/matmul_rc.system.toml")
        else
            echo "apps: calibrating matmul_rc failed; log: $work/matmul_rc.calibrate.log" >&2
            ok=false
        fi
    fi
fi
launch matmul_rc

srmsd=$(verified srmsd '^srmsd members=[0-9]+ verified=true')
tsp_exhaustive=$(verified tsp_exhaustive '^tsp variant=exhaustive .*verified=true')
tsp_task=$(verified tsp_task '^tsp variant=task-pruning .*verified=true')
tsp_global=$(verified tsp_global '^tsp variant=global-pruning .*verified=true')
matmul_rc=$(verified matmul_rc '^matmul .*verified=true')
tsp_task_level3=skipped
if [ "$mode" = full ]; then
    tsp_task_level3=$(verified tsp_task_level3 '^tsp variant=task-pruning .*verified=true')
fi
case " $srmsd $tsp_exhaustive $tsp_task $tsp_global $matmul_rc $tsp_task_level3 " in
    *" failed "*) ok=false ;;
esac

rc_pred=$("$hmw" predict "$work/matmul_rc.toml" "${measured[@]}" |
    sed -n 's/.*rc_stabilise_pred cluster=spain rc=\([0-9a-z]*\).*/\1/p')
rc_meas=$(sed -n 's/^row_column cluster=spain .* stabilised_at=\([0-9a-z]*\).*/\1/p' \
    "$work/matmul_rc.out")
# The same over the pairs gathered while the clusters of block pairs still computed (the
# steady state: after their last result spain computes alone, on the cores they left).
rc_meas_steady=$(sed -n 's/^row_column cluster=spain .* steady_stabilised_at=\([0-9a-z]*\).*/\1/p' \
    "$work/matmul_rc.out")
echo "apps: row/column stabilised at ${rc_meas:-none} over every pair, ${rc_meas_steady:-none} over the steady state's"

# The live prediction at 10 % of a run, from the main master's progress samples.
at_tenth() {
    python3 - "$work/$1/lyon.stats.json" "$2" <<'EOF'
import json, sys
stats = json.load(open(sys.argv[1]))
wall = stats["wall_s"]
samples = [s for s in stats["progress"]
           if s["t_s"] >= 0.1 * wall and s.get("predicted_total_s") is not None]
if not samples:
    print("none none" if sys.argv[2] == "interval" else "none")
    sys.exit()
s = samples[0]
if sys.argv[2] == "error":
    print(f"{abs(s['predicted_total_s'] - wall) / wall:.3f}")
else:
    interval = s.get("predicted_total_interval_s")
    if interval is None:
        print("none none")
    else:
        low, high = interval
        inside = "true" if low <= wall <= high else "false"
        print(f"{inside} {(high - low) / ((low + high) / 2):.3f}")
EOF
}
tsp_task_err10=$(at_tenth tsp_task error)
if [ "$mode" = full ]; then
    echo "apps: task-pruning at 16 cities, level 3 (210 tasks, the earlier size):" \
        "$tsp_task_level3, tsp_task_err10=$(at_tenth tsp_task_level3 error)"
fi
read -r tsp_global_in_interval tsp_global_width < <(at_tenth tsp_global interval)

echo "apps srmsd=$srmsd tsp_exhaustive=$tsp_exhaustive tsp_task=$tsp_task tsp_global=$tsp_global matmul_rc=$matmul_rc rc_stabilise_pred=${rc_pred:-none} rc_stabilise_meas=${rc_meas:-none} tsp_task_err10=$tsp_task_err10 tsp_global_in_interval=$tsp_global_in_interval tsp_global_width=$tsp_global_width"
$ok
