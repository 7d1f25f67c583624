#!/usr/bin/env bash
# Benchmark of the long-distance link (hmw-cm, tool hmw-link-bench): the link against raw quinn on loopback, the link
# through hmw-wanem (20 Mbit/s each way, 50 ms one way, 0.5 % loss) for 1..16 connections,
# and a 20 s outage in the middle of a transfer. JSON reports go to $OUT (default out/lds);
# the last line is
#   lds loopback_vs_quinn=X wan_best_fraction=Y wan_gain_vs_1conn=Z outage_lost=N outage_recovery_s=R
# Needs only bash and cargo. Every duration can be shortened through the environment (a
# quick check of the script: LOOPBACK_S=0.2 LOOPBACK_ROUNDS=1 WAN_S=1 WAN_WARMUP=0
# WAN_CONNECTIONS=1 OUTAGE_START=0.5 OUTAGE_S=0.5 OUTAGE_TOTAL_S=2); LINK_BENCH=path uses
# an hmw-link-bench binary already built instead of building the release one.
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
mkdir -p "$OUT"

if [ -n "${LINK_BENCH:-}" ]; then
    bench=$LINK_BENCH
else
    cargo build --release -p hmw-link-bench --quiet
    bench="${CARGO_TARGET_DIR:-target}/release/hmw-link-bench"
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

"$bench" summary "$OUT/loopback.json" "$OUT/wan.json" "$OUT/outage.json"
