#!/usr/bin/env bash
# Dispatch benchmark: tiny tasks (64-byte task and result, no compute), 1 master + 4 workers
# under mpirun, 20,000 tasks; the median of several runs of hmw against peers run on the same
# machine in the same session, all with two tasks in flight per worker and one task per
# message: mpi4py.futures (MPIPoolExecutor.map, chunksize 1), a hand-written mpi4py
# master/worker (on-demand send/recv), and a hand-written C MPI loop (scripts/bench/
# dispatch_loop.c, mpicc -O2) that either spins in blocking MPI_Recv (c_spin) or waits
# politely with hmw's backoff (c_polite).
# Per-task overhead is the master's time per task, 1 / throughput: with tasks that compute
# nothing, the master (which every task goes through) is what limits the rate.
# The Python peers run in a virtualenv this script creates (mpi4py from PyPI, pinned).
# Last line:
#   dispatch_ratio mpi4py_futures=X handwritten=Y c_polite=P c_spin=Z master_us_w32_over_w4=G idle_pct=I
# X, Y: hmw tasks/s over the peer's (medians of their runs); P, Z: hmw tasks/s over the C
# loop's, and G: hmw master's CPU time per task with 32 workers over that with 4, each the
# median of the rounds' own ratios (see the rounds below); I: the share of a core used by each
# waiting hmw rank, in percent.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's python3 needs python3-venv for `python3 -m venv`.
if python3 -c "import venv, ensurepip" 2>/dev/null; then
    scripts/setup.sh
else
    scripts/setup.sh python3-venv
fi
. scripts/env.sh
. scripts/lib/common.sh
TASKS=${TASKS:-20000}
RUNS=${RUNS:-7}
RANKS=5

# hmw's binaries are built optimised across crates at link time (Cargo.toml's profile
# `release-lto`), as an application of fine-grained tasks would be built for speed, and as the
# C peer is compiled whole; PROFILE=release measures the default release build instead.
PROFILE=${PROFILE:-release-lto}
cargo build --profile "$PROFILE" -p hmw-dispatch -p hmw-synthetic --quiet
bin=target/$PROFILE
mkdir -p target/bench
cdisp=target/bench/dispatch_loop
mpicc -O2 -o "$cdisp" scripts/bench/dispatch_loop.c
latency=target/bench/core_latency
cc -O2 -pthread -o "$latency" scripts/bench/core_latency.c
venv=target/bench-venv
MPI4PY=${MPI4PY:-mpi4py==4.1.2}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mpi4py" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "$MPI4PY"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for _ in $(seq $RANKS); do echo localhost; done > "$work/hosts"
for _ in $(seq 33); do echo localhost; done > "$work/hosts33"
printf '[run]\nstatistics_interval = 0\n[application]\ntasks = %d\n' "$TASKS" > "$work/run.toml"

# The values of KEY= in the lines read.
values_of() { sed -n "s/.*\b$1=\([0-9.]*\).*/\1/p"; }
# KEY= of one run of the given command.
value_of() {
    local key=$1
    shift
    timeout 600 "$@" 2>/dev/null | values_of "$key" | tail -1
}
# Prints the median of KEY= over RUNS runs of the given command.
median_of() {
    local key=$1
    shift
    for _ in $(seq "$RUNS"); do value_of "$key" "$@"; done | median
}
median_rate() { median_of tasks_per_s "$@"; }

# hmw and the two C loops in rounds (polite C, hmw, spinning C, hmw with 32 workers, then
# again), so that the machine's speed, which drifts over minutes on this VM, weighs on all
# alike: seven runs of each in blocks gave c_spin from 0.64 to 1.05 for the same build within
# half an hour. hmw's rate and its master's CPU time per task come from the same run, which
# runs right after the polite C loop and right before the spinning one: the time a cache line
# takes between the two cores, which every message pays, changes every few seconds on this
# VM (100 ns or 400-500 ns for a round trip, as the host places the virtual CPUs; printed
# before and after each round by scripts/bench/core_latency.c), and adjacent runs share it
# more often. Each ratio is the median of the rounds' own ratios: within a round the
# machine's speed mostly holds, across rounds it does not (the polite C loop ran 0.94 M
# tasks/s in one run of this script and 2.39 M in the next), and a ratio of
# medians taken over rounds of different speeds compares runs made at different speeds.
# Every round is printed.
: >"$work/rounds"
for round in $(seq "$RUNS"); do
    before=$("$latency" | values_of core_round_trip_ns)
    polite=$(value_of tasks_per_s mpirun --oversubscribe -np $RANKS "$cdisp" polite "$TASKS")
    line=$(timeout 600 mpirun --oversubscribe -np $RANKS "$bin/hmw-dispatch" \
        -m "$work/hosts" -c "$work/run.toml" 2>/dev/null | grep '^dispatch ' | tail -1 || true)
    rate=$(echo "$line" | values_of tasks_per_s)
    cpu=$(echo "$line" | values_of master_cpu_us_per_task)
    spin=$(value_of tasks_per_s mpirun --oversubscribe -np $RANKS "$cdisp" spin "$TASKS")
    after=$("$latency" | values_of core_round_trip_ns)
    cpu32=$(value_of master_cpu_us_per_task mpirun --oversubscribe -np 33 \
        "$bin/hmw-dispatch" -m "$work/hosts33" -c "$work/run.toml")
    echo "round $round: hmw ${rate:-?} tasks/s (master ${cpu:-?} us/task, ${cpu32:-?} with 32" \
        "workers), c_spin ${spin:-?}, c_polite ${polite:-?}; core round trip ${before:-?}," \
        "${after:-?} ns"
    # A round with a failed run counts for none of the ratios.
    if [ -n "$rate" ] && [ -n "$cpu" ] && [ -n "$spin" ] && [ -n "$polite" ] && [ -n "$cpu32" ]; then
        echo "$rate $cpu $spin $polite $cpu32" >>"$work/rounds"
    fi
done
column() { awk -v c="$1" '{ print $c }' "$work/rounds" | median; }
# The median over the rounds of column A over column B.
round_ratio() { awk -v a="$1" -v b="$2" '$b > 0 { print $a / $b }' "$work/rounds" | median; }
hmw=$(column 1)
master_w4=$(column 2)
c_spin=$(column 3)
c_polite=$(column 4)
master_w32=$(column 5)
hand=$(median_rate mpirun --oversubscribe -np $RANKS "$venv/bin/python" \
    scripts/bench/handwritten.py "$TASKS")
futures=$(RUNS=3 median_rate mpirun --oversubscribe -np $RANKS "$venv/bin/python" \
    -m mpi4py.futures scripts/bench/mpi4py_futures.py "$TASKS")

# Idle CPU: mean share of a core used by each rank while it waits (a master and four workers
# during 5 s tasks for hmw; ranks blocked in MPI_Recv for the mpi4py control), over 3 s.
idle_share() {
    setsid "$@" >/dev/null 2>&1 &
    local pid=$! before after
    sleep 2
    local kids; kids=$(ps -o pid= --ppid $pid)
    before=$(for k in $kids; do awk '{ s += $14 + $15 } END { print s }' /proc/$k/stat; done | awk '{ t += $1 } END { print t }')
    sleep 3
    after=$(for k in $kids; do awk '{ s += $14 + $15 } END { print s }' /proc/$k/stat; done | awk '{ t += $1 } END { print t }')
    wait $pid || true
    awk -v b="$before" -v a="$after" -v n="$(echo $kids | wc -w)" -v hz="$(getconf CLK_TCK)" \
        'BEGIN { printf "%.1f", 100 * (a - b) / hz / 3 / n }'
}
printf '[run]\nstatistics_interval = 0\nreassign_last_task = false\n[application]\ntasks = 4\ntask_seconds = 6\n' > "$work/idle.toml"
idle_hmw=$(idle_share mpirun --oversubscribe -np $RANKS "$bin/hmw-synthetic" \
    -m "$work/hosts" -c "$work/idle.toml")
idle_c=$(idle_share mpirun --oversubscribe -np $RANKS "$cdisp" idle 6)
idle_mpi=$(idle_share mpirun --oversubscribe -np $RANKS "$venv/bin/python" \
    scripts/bench/idle_blocking_recv.py 6)

overhead() { awk -v r="$1" 'BEGIN { printf "%.2f", 1e6 / r }'; }
printf '%-16s %14s %16s\n' "peer" "tasks/s" "us/task"
printf '%-16s %14.0f %16s\n' "hmw" "$hmw" "$(overhead "$hmw")"
printf '%-16s %14.0f %16s\n' "handwritten" "$hand" "$(overhead "$hand")"
printf '%-16s %14.0f %16s\n' "mpi4py.futures" "$futures" "$(overhead "$futures")"
printf '%-16s %14.0f %16s\n' "c_spin" "$c_spin" "$(overhead "$c_spin")"
printf '%-16s %14.0f %16s\n' "c_polite" "$c_polite" "$(overhead "$c_polite")"
echo "hmw master CPU per task: ${master_w4} us with 4 workers, ${master_w32} us with 32"
echo "idle CPU per waiting rank: hmw ${idle_hmw}% of a core, polite C ${idle_c}%, blocking MPI_Recv ${idle_mpi}%"
awk -v h="$hmw" -v p="$c_polite" -v z="$c_spin" -v m4="$master_w4" -v m32="$master_w32" \
    'BEGIN { printf "ratios of the medians: c_polite=%.2f c_spin=%.2f master_us_w32_over_w4=%.2f\n", h / p, h / z, m32 / m4 }'
awk -v h="$hmw" -v f="$futures" -v w="$hand" -v p="$(round_ratio 1 4)" -v z="$(round_ratio 1 3)" \
    -v g="$(round_ratio 5 2)" -v i="$idle_hmw" \
    'BEGIN { printf "dispatch_ratio mpi4py_futures=%.2f handwritten=%.2f c_polite=%.2f c_spin=%.2f master_us_w32_over_w4=%.2f idle_pct=%.1f\n", h / f, h / w, p, z, g, i }'
