#!/usr/bin/env bash
# Looks at what a person watching a run sees (issue 44), with the debug build:
#   1. `hmw top` in tmux at 80x24 against a real three-cluster run on this machine
#      (configs/watch-three-clusters.toml, local launcher): a screen captured every 0.3 s, keys
#      sent (sort, select, open a cluster's workers, back); scripts/lib/watch_frames.py checks
#      the screens: at least 10 distinct, the tasks done never decreasing and taking at least 3
#      values, each cluster's tasks at the last screen equal to its statistics file, mid-run
#      within its rate times the refresh interval of the master's timeline; top's CPU time
#      over the run under 5 % of a core (from /proc; an upper bound on a loaded machine);
#   2. `hmw top` on recorded state files (cli/src/top/testdata): the summary of a run that
#      ended; the dashboard at 80x24; a stale, a corrupt and a missing file each an error
#      naming the file (and its age), with a non-zero exit;
#   3. `hmw report --html` on the run: one file, no http(s) URL, a chart per cluster; opened in
#      headless Chromium (Debian's, network off): a screenshot, and --dump-dom showing the
#      run's chart and every cluster's.
# Screenshots of `hmw top` (a screen rendered through Chromium) and of the HTML report, each
# under 200 KB, are written to target/check-watch/; with --docs also to docs/top.png and
# docs/report.png (the README's). Last line:
#   watch top_frames=N distinct_done=D clusters=3 matches=true html=ok browser=ok
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
docs=false
[ "${1:-}" = "--docs" ] && docs=true
scripts/setup.sh chromium tmux pngquant || exit 1
. scripts/env.sh || exit 1
build_debug || exit 1

hmw=$PWD/target/debug/hmw
plan=configs/watch-three-clusters.toml
out=target/check-watch
rm -rf "$out"
mkdir -p "$out/frames"
run=$out/run
session=hmw-watch-$$
launcher=""
cleanup() {
    tmux kill-session -t "$session" 2>/dev/null
    [ -n "$launcher" ] && kill "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null
}
trap cleanup EXIT
fail() {
    echo "watch: $*" >&2
    failed=1
}
failed=0
# A capture without its colours.
plain() { sed 's/\x1b\[[0-9;]*m//g' "$1"; }

# A headless Chromium with no network: the page is a local file.
chrome() {
    local profile
    profile=$(mktemp -d)
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --host-resolver-rules="MAP * ~NOTFOUND" --user-data-dir="$profile" "$@" 2>/dev/null
    local status=$?
    rm -rf "$profile"
    return $status
}
# A screenshot in 256 colours (pngquant), and whether it is a PNG under 200 KB.
small_png() {
    local size
    pngquant --quality=60-95 --speed 1 --force --output "$1" "$1" || return 1
    size=$(stat -c %s "$1" 2>/dev/null || echo 0)
    [ "$size" -gt 1000 ] && [ "$size" -lt 204800 ] && [ "$(head -c 4 "$1" | tail -c 3)" = PNG ]
}

# 1. The live run, watched at 80x24.
echo "== hmw launch $plan, watched by hmw top in tmux (80x24)"
"$hmw" launch "$plan" --work-dir "$run" >"$out/launch.log" 2>&1 &
launcher=$!
for _ in $(seq 1 300); do
    [ -f "$run/live-state.json" ] && break
    sleep 0.1
done
[ -f "$run/live-state.json" ] || fail "no live state file after 30 s"
tmux new-session -d -s "$session" -x 80 -y 24 \
    "'$hmw' top '$run' --hold 3; echo top-exit=\$?; sleep 600"
frame=0
shot=""
keys_seen=false
top_cpu=""
# The share of a core process $1 used since it started, in percent.
cpu_share() {
    awk -v ticks="$(getconf CLK_TCK)" -v up="$(cut -d' ' -f1 /proc/uptime)" '{
        sub(/.*\) /, ""); cpu = ($12 + $13) / ticks; age = up - $20 / ticks
        printf "%.1f", (age > 0 ? 100 * cpu / age : 0) }' "/proc/$1/stat"
}
for _ in $(seq 1 400); do
    sleep 0.3
    frame=$((frame + 1))
    file=$(printf '%s/frames/%04d.txt' "$out" "$frame")
    tmux capture-pane -e -p -t "$session" >"$file" 2>/dev/null || break
    grep -q '^top-exit=' "$file" && break
    screen=$(plain "$file")
    # The run's end on screen: what the dashboard cost so far.
    if [ -z "$top_cpu" ] && grep -q '^watch run completed' <<<"$screen"; then
        pane=$(tmux list-panes -t "$session" -F '#{pane_pid}')
        top_pid=$(pgrep -P "$pane" | head -1)
        [ -n "$top_pid" ] && top_cpu=$(cpu_share "$top_pid")
    fi
    # Mid-run: the screen for the README, then the keys.
    if [ -z "$shot" ] && grep -q ' running .*[0-9]/1200 tasks' <<<"$screen" &&
        grep -q 'figures [5-9] s' <<<"$screen"; then
        shot=$file
        tmux send-keys -t "$session" s Down Enter
        sleep 0.6
        tmux capture-pane -p -t "$session" >"$out/workers.txt"
        tmux send-keys -t "$session" Escape
        if grep -q 'spain: 3 workers' "$out/workers.txt" &&
            grep -q 'spain-3' "$out/workers.txt" && grep -q 'sort: done' "$out/workers.txt"; then
            keys_seen=true
        fi
    fi
done
wait "$launcher"
launch_status=$?
launcher=""
[ "$launch_status" -eq 0 ] || fail "hmw launch failed ($launch_status); its output: $out/launch.log"
$keys_seen || fail "s, Down and Enter did not open spain's workers, sorted by done ($out/workers.txt)"
summary=$(tmux capture-pane -J -p -t "$session" -S -50 | grep '^top run=')
top_exit=$(tmux capture-pane -J -p -t "$session" -S -50 | sed -n 's/^top-exit=//p')
echo "$summary"
[ "$top_exit" = 0 ] || fail "hmw top exited with ${top_exit:-nothing}"
echo "hmw top used ${top_cpu:-?} % of a core over the run (an upper bound on a loaded machine)"
awk -v c="${top_cpu:-100}" 'BEGIN { exit !(c < 5) }' || fail "hmw top used ${top_cpu:-?} % of a core, not under 5 %"
verdict=$(python3 scripts/lib/watch_frames.py check "$out/frames" "$run/lyon.stats.json" 1)
echo "$verdict"
grep -q 'matches=true' <<<"$verdict" || fail "the screens do not match the run"
for cluster in lyon spain brazil; do
    own=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cluster']['tasks_done'])" \
        "$run/$cluster.stats.json")
    grep -q " $cluster=$own\b" <<<"$summary" || fail "the summary does not give $cluster's $own tasks"
done

# 2. Recorded state files.
echo "== hmw top on recorded state files"
recorded=$out/recorded
mkdir -p "$recorded/ended" "$recorded/mid" "$recorded/stale" "$recorded/corrupt"
cp cli/src/top/testdata/ended.json "$recorded/ended/live-state.json"
line=$("$hmw" top "$recorded/ended" | tail -1)
[ "$line" = "top run=demo outcome=completed tasks=1200 makespan_s=13.687 lyon=270 spain=398 brazil=532" ] ||
    fail "the recorded run's summary: $line"
cp cli/src/top/testdata/mid-run.json "$recorded/mid/live-state.json"
tmux kill-session -t "$session"
tmux new-session -d -s "$session" -x 80 -y 24 "'$hmw' top '$recorded/mid'; sleep 600"
sleep 1.5
tmux capture-pane -p -t "$session" >"$out/recorded.txt"
for row in "lyon .* 158 " "spain .* 234 " "brazil .* 304 " "696/1200 tasks"; do
    grep -q "$row" "$out/recorded.txt" || fail "the recorded dashboard lacks /$row/ ($out/recorded.txt)"
done
cp cli/src/top/testdata/mid-run.json "$recorded/stale/live-state.json"
touch -d '-95 seconds' "$recorded/stale/live-state.json"
if message=$("$hmw" top "$recorded/stale" 2>&1); then
    fail "a stale file was taken"
fi
grep -q "$recorded/stale/live-state.json: stale live state file: last written 9[5-9]\.[0-9] s ago" <<<"$message" ||
    fail "stale: $message"
head -c 5000 cli/src/top/testdata/mid-run.json >"$recorded/corrupt/live-state.json"
if message=$("$hmw" top "$recorded/corrupt" 2>&1); then
    fail "a corrupt file was taken"
fi
grep -q "$recorded/corrupt/live-state.json: corrupt live state file (written [0-9.]* s ago)" <<<"$message" ||
    fail "corrupt: $message"
if message=$("$hmw" top "$recorded/none" 2>&1); then
    fail "a missing file was taken"
fi
grep -q "$recorded/none/live-state.json: no live state file" <<<"$message" || fail "missing: $message"

# 3. The report in a browser.
echo "== hmw report --html, in headless Chromium"
html=ok
page=$out/report.html
"$hmw" report "$run/lyon.stats.json" --plan "$plan" --html "$page" >"$out/report.txt" 2>&1 ||
    { html=fail; fail "hmw report --html failed: $out/report.txt"; }
if grep -qE 'https?:' "$page"; then
    html=fail
    fail "the page holds a URL: $(grep -oE 'https?:[^" ]*' "$page" | head -3)"
fi
[ "$(grep -o 'class="cluster-chart"' "$page" | wc -l)" -eq 3 ] || { html=fail; fail "not three cluster charts"; }
browser=ok
chrome --dump-dom "file://$PWD/$page" >"$out/report.dom" || { browser=fail; fail "chromium --dump-dom failed"; }
for id in run lyon spain brazil; do
    grep -q "id=\"chart-$id\"><svg " "$out/report.dom" || { browser=fail; fail "the DOM has no chart-$id"; }
done
chrome --window-size=1100,1300 --screenshot="$PWD/$out/report.png" "file://$PWD/$page" >/dev/null ||
    { browser=fail; fail "chromium --screenshot failed"; }
small_png "$out/report.png" || { browser=fail; fail "the report's screenshot is not a PNG under 200 KB"; }

# The screenshot of hmw top: the mid-run screen, its colours, through Chromium.
if [ -n "$shot" ]; then
    python3 scripts/lib/watch_frames.py html "$shot" "$out/top.html"
    chrome --window-size=740,450 --screenshot="$PWD/$out/top.png" "file://$PWD/$out/top.html" >/dev/null ||
        fail "chromium --screenshot of hmw top failed"
    small_png "$out/top.png" || fail "the screenshot of hmw top is not a PNG under 200 KB"
else
    fail "no mid-run screen to show"
fi
if $docs && [ "$failed" -eq 0 ]; then
    cp "$out/top.png" docs/top.png
    cp "$out/report.png" docs/report.png
fi

set -- $verdict
frames=${1#frames=}
distinct=${2#distinct_done=}
clusters=${3#clusters=}
matches=${4#matches=}
[ "$failed" -eq 0 ] || matches=false
echo "watch top_frames=$frames distinct_done=$distinct clusters=$clusters matches=$matches html=$html browser=$browser"
[ "$failed" -eq 0 ] && [ "${frames:-0}" -ge 10 ] && [ "${distinct:-0}" -ge 3 ]
