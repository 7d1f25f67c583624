# Shell functions for the scripts that use the testbed: `tb`, hmw-testbed on the caller's
# instance (scripts/bench-adapt.sh, testbed-check.sh and deploy-check.sh use it alone), and for
# the scripts that run plans on it (scripts/apps.sh) one testbed at a time, brought up for a
# plan and taken down before the next one's (and on every way out: the caller traps
# `testbed_down` on EXIT). The caller sets `testbed_name` (unique to its process),
# `testbed_bin` (hmw-testbed) and `work` (its logs) before calling them. scripts/validate.sh's
# suite does the same in Rust (xtask/src/validate/testbed.rs).
testbed_plan=""
tb() { "$testbed_bin" --name "$testbed_name" "$@"; }
testbed_down() {
    if [ -n "$testbed_plan" ] || [ -e "/var/lib/hmw-testbed/$testbed_name/state.json" ]; then
        tb down >"$work/testbed-down.log" 2>&1 || cat "$work/testbed-down.log" >&2
    fi
    testbed_plan=""
}

# The testbed of plan $1 up (the one up before taken down); log in $2.
testbed_up() {
    [ "$testbed_plan" = "$1" ] && return 0
    testbed_down
    if ! tb up "$1" --require-router >"$2" 2>&1; then
        tail -20 "$2" >&2
        return 1
    fi
    testbed_plan=$1
}

# A command run from the testbed's launching machine when $1 is true, here otherwise.
on_host() {
    local testbed=$1
    shift
    if $testbed; then tb exec launch -- "$@"; else "$@"; fi
}

# Waits until this machine is quiet before a calibration, at most 60 s: dirty pages written
# back, then a second in which its CPUs were at most 10 % busy (time stolen by the hypervisor
# counted as busy). Prints how long it waited and how busy the last second was. (In two CI
# runs, the gate's first calibration, just after the release build, put tb-tsp-hetero's hosts
# 11 % and 29 % slower than its runs measured a few seconds later; on a quiet machine its
# calibrations and runs agree within 6 %.)
settle() {
    sync
    python3 - <<'PY'
import time

def cpu():
    # user nice system idle iowait irq softirq steal
    values = list(map(int, open("/proc/stat").readline().split()[1:9]))
    return sum(values), values[3] + values[4]

start = time.monotonic()
total, idle = cpu()
while True:
    time.sleep(1)
    total2, idle2 = cpu()
    busy = 1 - (idle2 - idle) / max(1, total2 - total)
    total, idle = total2, idle2
    if busy <= 0.10 or time.monotonic() - start >= 60:
        break
print(f"waiting {time.monotonic() - start:.0f} s for a quiet machine: {100 * busy:.0f} % busy")
PY
}
