#!/usr/bin/env bash
# Long-distance service benchmark (hmw-cm): the link against raw quinn on loopback, the link
# through hmw-wanem (20 Mbit/s each way, 50 ms one way, 0.5 % loss) for 1..16 connections,
# and a 20 s outage in the middle of a transfer. JSON reports go to $OUT (default out/lds);
# the last line is
#   lds loopback_vs_quinn=X wan_best_fraction=Y wan_gain_vs_1conn=Z outage_lost=N outage_recovery_s=R
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out/lds}
LOOPBACK_S=${LOOPBACK_S:-4}
LOOPBACK_ROUNDS=${LOOPBACK_ROUNDS:-5}
WAN_S=${WAN_S:-20}
WAN_CONNECTIONS=${WAN_CONNECTIONS:-1,2,4,6,8,16}
mkdir -p "$OUT"

cargo build --release -p hmw-cm --bin lds-bench --quiet
bench="${CARGO_TARGET_DIR:-target}/release/lds-bench"

echo "== 1. loopback: link vs raw quinn (1 connection, 1 stream, TLS on) =="
"$bench" loopback --seconds "$LOOPBACK_S" --rounds "$LOOPBACK_ROUNDS" --json "$OUT/loopback.json" >/dev/null

echo "== 2. through hmw-wanem: 20 Mbit/s, 50 ms, 0.5 % loss, connections $WAN_CONNECTIONS (cubic) =="
"$bench" wan --connections "$WAN_CONNECTIONS" --seconds "$WAN_S" --warmup 5 --json "$OUT/wan.json" >/dev/null
echo "== 2b. for comparison: one connection with BBR =="
"$bench" wan --connections 1 --congestion bbr --seconds "$WAN_S" --warmup 5 --json "$OUT/wan-bbr.json" >/dev/null

best=$(jq '[.runs[]] | max_by(.fraction_of_link) | .connections' "$OUT/wan.json")
echo "== 3. 20 s outage in the middle, $best connections (the best setting above) =="
"$bench" outage --connections "$best" --outage-start 15 --outage-seconds 20 --seconds 55 \
    --json "$OUT/outage.json" >/dev/null

"$bench" summary "$OUT/loopback.json" "$OUT/wan.json" "$OUT/outage.json"
