#!/usr/bin/env bash
# The model's validation suite: runs each scenario of configs/validation/ with the synthetic
# application on clusters emulated on this machine (`hmw launch`), or, for the tb-* scenarios,
# with a real application on the testbed's emulated hosts over ssh after `hmw calibrate` on
# them (as root: `hmw-testbed` creates namespaces and cgroups), compares the measured
# makespan and efficiency with the model's prediction for the same plan (`hmw predict`,
# `hmw report`), and rewrites docs/validation.md with the table and the charts
# (docs/validation/*.svg). Each scenario's runs are measured once and compared with two
# predictions: the plan as it is (a cluster's rate from the bottleneck formulas, the default)
# and the plan given `[model] contention = "mva"` (its closed network, docs/model.md section
# 16; a copy in the work folder, plans/NAME.mva.toml). Every verdict and the gate are the
# first one's; the second is reported beside it.
#
#   scripts/validate.sh           # every scenario, three runs each,
#                                 # rewrites docs/validation.md
#   scripts/validate.sh --quick   # the gate: four short scenarios (two on the testbed), three
#                                 # runs each; writes only under
#                                 # $CARGO_TARGET_DIR/validation/quick
#   scripts/validate.sh --only A,B  # those scenarios alone, under the mode's rules; writes
#                                 # only under $CARGO_TARGET_DIR/validation/only
#
# Each scenario also says how busy this machine's processors were during each of its runs (in
# cores): near all of them, the emulated hosts shared them and got less than their quotas.
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
# among the M where the closed form misses by more than 3 %). The line before that compares
# the two contention models on the same runs, over the same N scenarios, each by its
# predictor as in the last line (the outages by the simulation under both):
#   contention mva_median_err=E1 mva_inside=K1/N bottleneck_median_err=E2 bottleneck_inside=K2/N mva_no_worse=B mva_other_workers=W
# (E2 and K2 are the last line's median_err and inside; B is true when E1 <= E2 and K1 >= K2;
# W counts the scenarios where the network's rate selects other workers than the runs used,
# `selection = "auto"`: its figures there predict another run). Each scenario prints its own
# `contention mva_best_s=.. mva_worst_s=.. mva_err=.. mva_inside=.. bottleneck_err=..
# bottleneck_inside=..` line after its report line.
#
# The suite itself (the scenario table, the runs, the parsing of what the tools print, the
# verdicts and totals, the document, the testbed taken down on every way out) is the Rust of
# xtask/src/validate/ (`cargo xtask validate`); this script installs what it needs, builds the
# release binaries and runs it in its own place (its process id names the testbed).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
. scripts/env.sh
build_release
exec "$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/xtask" validate "$@"
