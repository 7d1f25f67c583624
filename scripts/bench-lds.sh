#!/usr/bin/env bash
# Benchmark of the long-distance link (hmw-cm, tool hmw-link-bench): the link against raw quinn on
# loopback; the link through hmw-wanem (20 Mbit/s each way, 50 ms one way, 0.5 % loss) for 1..16
# connections; a 20 s outage in the middle of a transfer; the emulator's own ceiling; and the
# link with its default settings on today's paths: 1 Gbit/s, 50 ms one way, 0.1 % loss, and
# 200 Mbit/s, 50 ms one way, 0.5 % loss; and the first seconds of a link just connected (its
# default settings, as a run's CM has them when its master starts): 1 MiB messages over 8 MB/s
# and a 120 ms round trip, and over 1 Gbit/s and 100 ms, with 64 KiB messages too, each without
# and with the path's rate and round trip (`hmw-link-bench cold --warm`, as `hmw launch` gives
# a CM from its plan). JSON reports go to $OUT (default out/lds); the last line is
#   lds loopback_vs_quinn=A loopback_cpu_vs_quinn=A2 wan_best_fraction=B wan_gain_vs_1conn=C
#       outage_lost=0 outage_recovery_s=R wan1g_100ms_mbit=D lossy200_fraction=E
#       emulator_ceiling_mbit=F reconnects=K window_grew=true|false cold_first_task_s=G
#       cold_to_90pct_s=H cold1g_to_90pct_s=I
# (on one line); G and H, seconds from the start signal to the first 1 MiB message over
# 8 MB/s x 120 ms and to 90 % of the link's rate, I the latter over 1 Gbit/s x 100 ms, each as
# a run starts its link (with the path's figures). Needs bash and cargo; run as root it raises net.core.rmem_max and wmem_max to
# 32 MiB for the run (the emulator and the link ask for large socket buffers: at 1 Gbit/s the
# default 208 KiB holds 2 ms of traffic) and restores them at exit. Every duration can be
# shortened through the environment (a quick check of the script: LOOPBACK_S=0.2
# LOOPBACK_ROUNDS=1 WAN_S=1 WAN_WARMUP=0 WAN_CONNECTIONS=1 OUTAGE_START=0.5 OUTAGE_S=0.5
# OUTAGE_TOTAL_S=2 FAST_S=2 FAST_WARMUP=0 CEILING_S=0.5 COLD_S=1); LINK_BENCH=path uses an
# hmw-link-bench binary already built instead of building the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/lds}
LOOPBACK_S=${LOOPBACK_S:-4}
LOOPBACK_ROUNDS=${LOOPBACK_ROUNDS:-5}
WAN_S=${WAN_S:-20}
WAN_WARMUP=${WAN_WARMUP:-5}
WAN_CONNECTIONS=${WAN_CONNECTIONS:-1,2,4,6,8,16}
OUTAGE_START=${OUTAGE_START:-15}
OUTAGE_S=${OUTAGE_S:-20}
OUTAGE_TOTAL_S=${OUTAGE_TOTAL_S:-55}
FAST_S=${FAST_S:-40}
FAST_WARMUP=${FAST_WARMUP:-15}
CEILING_S=${CEILING_S:-3}
COLD_S=${COLD_S:-6}
mkdir -p "$OUT"

if [ -n "${LINK_BENCH:-}" ]; then
    bench=$LINK_BENCH
else
    cargo build --release -p hmw-link-bench --quiet
    bench="${CARGO_TARGET_DIR:-target}/release/hmw-link-bench"
fi

# Larger socket buffers allowed for the run, the system's limits restored at exit.
if [ "$(id -u)" = 0 ] && command -v sysctl >/dev/null; then
    rmem=$(sysctl -n net.core.rmem_max)
    wmem=$(sysctl -n net.core.wmem_max)
    trap 'sysctl -q -w net.core.rmem_max="$rmem" net.core.wmem_max="$wmem"' EXIT
    want=$((32 * 1024 * 1024))
    [ "$rmem" -lt "$want" ] && sysctl -q -w net.core.rmem_max="$want"
    [ "$wmem" -lt "$want" ] && sysctl -q -w net.core.wmem_max="$want"
else
    echo "(not root: socket buffers stay within net.core.rmem_max=$(cat /proc/sys/net/core/rmem_max 2>/dev/null || echo '?'))"
fi

echo "== 1. loopback: link vs raw quinn (1 connection, 1 stream, TLS on) =="
"$bench" loopback --seconds "$LOOPBACK_S" --rounds "$LOOPBACK_ROUNDS" --json "$OUT/loopback.json" >/dev/null

echo "== 2. through hmw-wanem: 20 Mbit/s, 50 ms, 0.5 % loss, connections $WAN_CONNECTIONS (cubic) =="
"$bench" wan --connections "$WAN_CONNECTIONS" --seconds "$WAN_S" --warmup "$WAN_WARMUP" --json "$OUT/wan.json" >/dev/null
echo "== 2b. for comparison: one connection with BBR =="
"$bench" wan --connections 1 --congestion bbr --seconds "$WAN_S" --warmup "$WAN_WARMUP" --json "$OUT/wan-bbr.json" >/dev/null

best=$("$bench" best "$OUT/wan.json")
echo "== 3. ${OUTAGE_S} s outage in the middle, $best connections (the best setting above) =="
"$bench" outage --connections "$best" --outage-start "$OUTAGE_START" --outage-seconds "$OUTAGE_S" \
    --seconds "$OUTAGE_TOTAL_S" --json "$OUT/outage.json" >/dev/null

echo "== 4. the emulator's ceiling: unshaped relay on loopback =="
"$bench" ceiling --seconds "$CEILING_S" --json "$OUT/ceiling.json" >/dev/null

echo "== 5. default settings: 1 Gbit/s, 50 ms one way, 0.1 % loss, 1 MiB messages =="
"$bench" wan --defaults --rate-mbit 1000 --delay-ms 50 --loss 0.001 --message 1048576 \
    --seconds "$FAST_S" --warmup "$FAST_WARMUP" --json "$OUT/wan1g.json" >/dev/null
echo "== 6. default settings: 200 Mbit/s, 50 ms one way, 0.5 % loss, 1 MiB messages =="
"$bench" wan --defaults --rate-mbit 200 --delay-ms 50 --loss 0.005 --message 1048576 \
    --seconds "$FAST_S" --warmup "$FAST_WARMUP" --json "$OUT/lossy200.json" >/dev/null

echo "== 7. a link just connected: 1 MiB messages, 8 MB/s and 1 Gbit/s, without and with the path's figures =="
# name rate_mbit one-way_ms message
for run in "cold 64 60 1048576" "cold1g 1000 50 1048576" "cold1g-64k 1000 50 65536"; do
    read -r name rate delay message <<<"$run"
    for warm in "" --warm; do
        "$bench" cold --defaults --loss 0 --rate-mbit "$rate" --delay-ms "$delay" --message "$message" \
            --seconds "$COLD_S" $warm --json "$OUT/$name${warm:+-warm}.json" >/dev/null
    done
done

"$bench" summary "$OUT/loopback.json" "$OUT/wan.json" "$OUT/outage.json" \
    --wan1g "$OUT/wan1g.json" --lossy200 "$OUT/lossy200.json" --ceiling "$OUT/ceiling.json" \
    --cold "$OUT/cold-warm.json" --cold1g "$OUT/cold1g-warm.json"
