#!/usr/bin/env bash
# The testbed's check: brings configs/testbed/check.toml up (3 clusters, 9 machines and a
# gateway; one Slurm cluster, one behind the gateway), measures it, takes it down, and prints
# as its last line
#   testbed hosts=N clusters=C rtt_err=E1 rate_err=E2 cpu_err=E3 ssh=ok mpi_seq=ok slurm=ok
#           gateway=ok router_bytes=ok changes=ok clean=true
# Exits non-zero when an item fails, after naming it. Run by scripts/test.sh.
#
#   rtt_err   largest relative error of the median of 20 pings between clusters against the
#             sum of the one-way delays on the path there and back (errors under 2 ms count 0);
#             at most 0.10
#   rate_err  a 3 s bulk TCP transfer across each shaped WAN direction: its goodput over the
#             last two thirds, times 1500/1448 (the rate applies to IP packets, a segment
#             carries 1448 payload bytes of 1500), against the direction's rate; at most 0.10
#   cpu_err   a CPU-bound loop on every worker host at once: its speed (rounds per second of
#             wall time) as a share of an unthrottled core's (the same loop's rounds per second
#             of its own CPU time), against its quota; at most 0.15
#   changes   set-perf doubles a worker's perf and set-rate halves a WAN's rate: both measured
#             changed (within the same bounds)
#   clean     after down: no namespace, link, qdisc, mount, cgroup, process, state file or
#             /etc/netns entry of the instance (hmw-testbed leftovers, from a copy of the
#             state file, kind by kind)
#
# HMW_TESTBED_ALLOW_UNEMULATED=1 lets it run without hmw-wan-router (the WAN items then fail).
set -uo pipefail
cd "$(dirname "$0")/.."
t_start=$(date +%s.%N)
scripts/setup.sh
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
. scripts/env.sh
build_debug || { echo "testbed-check: build failed" >&2; exit 1; }
T=$(realpath "$CARGO_TARGET_DIR")/debug/hmw-testbed
plan=configs/testbed/check.toml
name=chk$(($$ % 100000))
work=$(mktemp -d)
testbed_bin=$T testbed_name=$name
. scripts/lib/testbed.sh
x() { local host=$1; shift; timeout 120 "$T" --name "$name" exec "$host" -- "$@"; }

cleanup() {
    if [ -e "/var/lib/hmw-testbed/$name/state.json" ]; then
        tb down >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

up_args=(--require-router)
[ "${HMW_TESTBED_ALLOW_UNEMULATED:-0}" = 1 ] && up_args=()
t_up=$(date +%s.%N)
if ! tb up "$plan" "${up_args[@]}" >"$work/up.log" 2>&1; then
    cat "$work/up.log" >&2
    echo "testbed hosts=0 clusters=0 rtt_err=nan rate_err=nan cpu_err=nan ssh=fail mpi_seq=fail slurm=fail gateway=fail router_bytes=fail changes=fail clean=false"
    exit 1
fi
echo "testbed-check: up in $(echo "$(date +%s.%N) - $t_up" | bc) s: $(tail -1 "$work/up.log")"
state=/var/lib/hmw-testbed/$name/state.json
cp "$state" "$work/state.json"
CFG=$(tb ssh-config)
js() { jq -r "$@" "$work/state.json"; }
hosts=$(js '[.layout.hosts[] | select(.kind != "launch")] | length')
clusters=$(js '.layout.clusters | length')
failed=()
note() { echo "testbed-check: $*"; }

# --- ssh: the launch host to every head; inside each cluster, head to another host ---
ssh_ok=ok
for c in $(js '.layout.clusters[].name'); do
    head=$(js ".layout.clusters[] | select(.name == \"$c\") | .head")
    got=$(x launch ssh -F "$CFG" "$head" hostname 2>&1)
    [ "$got" = "$head" ] || { ssh_ok=fail; note "ssh launch -> $head: $got"; }
    other=$(js "[.layout.hosts[] | select(.kind == \"machine\" and .cluster == ($(js ".layout.clusters[] | select(.name == \"$c\") | .index") - 1) and .head == false)][0].name")
    got=$(x "$head" ssh "$other" hostname 2>&1)
    [ "$got" = "$other" ] || { ssh_ok=fail; note "ssh $head -> $other: $got"; }
done

# --- gateway: a host behind it reached by ProxyJump; its head not reachable directly ---
gateway_ok=fail
gw_cluster=$(js '[.layout.clusters[] | select(.gateway != null)][0].name // empty')
if [ -n "$gw_cluster" ]; then
    gidx=$(js ".layout.clusters[] | select(.name == \"$gw_cluster\") | .index")
    ghead=$(js ".layout.clusters[] | select(.name == \"$gw_cluster\") | .head")
    ghead_addr=$(js ".layout.hosts[] | select(.name == \"$ghead\") | .lan_addr")
    behind=$(js "[.layout.hosts[] | select(.kind == \"machine\" and .cluster == ($gidx - 1) and .head == false)][0].name")
    a=$(x launch ssh -F "$CFG" "$behind" hostname 2>&1)
    b=$(x launch ssh -F "$CFG" "$ghead" hostname 2>&1)
    if [ "$a" = "$behind" ] && [ "$b" = "$ghead" ] && ! x launch ping -c1 -W1 "$ghead_addr" >/dev/null 2>&1; then
        gateway_ok=ok
    else
        note "gateway: ProxyJump to $behind: $a; to $ghead: $b (or $ghead_addr reachable without the gateway)"
    fi
fi

# --- mpi_seq: mpirun --map-by seq over ssh, hostfile B A B A ---
mpi_ok=fail
mc=$(js '[.layout.clusters[] | select(.launcher == "ssh")][0]')
if [ -n "$mc" ]; then
    mhead=$(echo "$mc" | jq -r .head)
    msub=$(echo "$mc" | jq -r .subnet)
    midx=$(echo "$mc" | jq -r .index)
    read -r A B < <(js "[.layout.hosts[] | select(.kind == \"machine\" and .cluster == ($midx - 1) and .head == false) | .name][0:2] | join(\" \")")
    printf '%s\n%s\n%s\n%s\n' "$B" "$A" "$B" "$A" | x "$mhead" sh -c 'cat > hostfile.seq'
    out=$(x "$mhead" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        mpirun --hostfile hostfile.seq --map-by seq -np 4 --tag-output \
        --mca plm_rsh_agent "ssh -F /etc/ssh/ssh_config" --mca btl self,tcp \
        --mca btl_tcp_if_include "$msub" --mca oob_tcp_if_include "$msub" hostname 2>&1)
    got=$(echo "$out" | sed -n 's/^\[1,\([0-9]\)\]<stdout>:\(.*\)$/\1 \2/p' | sort -n | awk '{print $2}' | paste -sd' ')
    if [ "$got" = "$B $A $B $A" ]; then mpi_ok=ok; else note "mpi_seq: ranks 0-3 ran on '$got', want '$B $A $B $A': $out"; fi
fi

# --- slurm: srun -N2 hostname on the Slurm cluster's head ---
slurm_ok=fail
sc=$(js '[.layout.clusters[] | select(.launcher == "slurm")][0].name // empty')
if [ -n "$sc" ]; then
    shead=$(js ".layout.clusters[] | select(.name == \"$sc\") | .head")
    sidx=$(js ".layout.clusters[] | select(.name == \"$sc\") | .index")
    nodes=$(js ".layout.hosts[] | select(.kind == \"machine\" and .cluster == ($sidx - 1)) | .name")
    out=$(x "$shead" timeout 60 srun -N2 hostname 2>&1)
    n=$(echo "$out" | sort -u | grep -cxF "$nodes")
    if [ "$n" = 2 ] && [ "$(echo "$out" | wc -l)" = 2 ]; then slurm_ok=ok; else note "slurm: srun -N2 hostname said: $out"; fi
fi

# --- rtt: 20 pings between clusters, concurrently ---
main=$(js '[.layout.clusters[] | select(.main)][0].name')
main_head=$(js ".layout.clusters[] | select(.name == \"$main\") | .head")
delay() { js "(.layout.clusters[] | select(.name == \"$1\") | ((.to_cluster.delay_ms // 0) + (.from_cluster.delay_ms // 0)))"; }
pairs=()
externals=$(js '.layout.clusters[] | select(.main | not) | .name')
for c in $externals; do
    pairs+=("$main_head $(js ".layout.clusters[] | select(.name == \"$c\") | .head") $(delay "$c")")
done
set -- $externals
if [ $# -ge 2 ]; then
    h1=$(js ".layout.clusters[] | select(.name == \"$1\") | .head")
    h2=$(js ".layout.clusters[] | select(.name == \"$2\") | .head")
    pairs+=("$h1 $h2 $(echo "$(delay "$1") + $(delay "$2")" | bc)")
fi
i=0
for p in "${pairs[@]}"; do
    read -r from to _ <<<"$p"
    x "$from" ping -n -c 20 -i 0.2 -W 2 "$to" >"$work/ping.$i" 2>&1 &
    i=$((i + 1))
done
wait
rtt_err=0
i=0
for p in "${pairs[@]}"; do
    read -r from to want <<<"$p"
    med=$(sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' "$work/ping.$i" | sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}')
    e=$(awk -v m="$med" -v w="$want" 'BEGIN { if (m == "nan") { print 1; exit } d = m - w; if (d < 0) d = -d; if (d < 2) print 0; else printf "%.4f\n", (w > 0 ? d / w : 1) }')
    note "rtt $from -> $to: median $med ms, want $want ms, error $e"
    rtt_err=$(awk -v a="$rtt_err" -v b="$e" 'BEGIN { print (b > a ? b : a) }')
    i=$((i + 1))
done

# --- rate: a bulk transfer across each shaped WAN direction, and the emulator's counters ---
port=5201
counters() { tb counters 2>/dev/null || echo '{}'; }
# transfer FROM_HOST TO_HOST: prints the sink's "bytes seconds rate"
transfer() {
    local from=$1 to=$2 addr
    addr=$(js ".layout.hosts[] | select(.name == \"$to\") | .lan_addr")
    x "$to" "$T" tool sink --listen "$addr:$port" --timeout 60 >"$work/sink" 2>&1 &
    local sink=$!
    sleep 0.5
    x "$from" "$T" tool send --to "$addr:$port" --seconds 3 >/dev/null 2>&1
    wait $sink
    cat "$work/sink"
}
# The larger of two errors; `nan` (a measurement that gave nothing) wins, so it fails.
worst() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /nan/ || b ~ /nan/) print "nan"; else print (b > a ? b : a) }'; }
rate_err=0
router_ok=ok
for c in $externals; do
    chead=$(js ".layout.clusters[] | select(.name == \"$c\") | .head")
    for dir in to_cluster from_cluster; do
        want=$(js ".layout.clusters[] | select(.name == \"$c\") | .${dir}.rate_mbit // 0")
        [ "$(echo "$want > 0" | bc)" = 1 ] || continue
        before=$(counters)
        if [ $dir = to_cluster ]; then r=$(transfer "$main_head" "$chead"); else r=$(transfer "$chead" "$main_head"); fi
        after=$(counters)
        read -r bytes secs rate <<<"$r"
        e=$(awk -v r="${rate:-0}" -v w="$want" 'BEGIN { g = r * 8 / 1e6 * 1500 / 1448; d = g / w - 1; if (d < 0) d = -d; printf "%.4f\n", d }')
        note "rate $c $dir: ${bytes:-?} bytes in ${secs:-?} s, $(awk -v r="${rate:-0}" 'BEGIN{printf "%.3f", r*8/1e6}') Mbit/s of payload, want $want Mbit/s on the wire, error $e"
        rate_err=$(worst "$rate_err" "$e")
        b0=$(echo "$before" | jq -r ".clusters.\"$c\".$dir.bytes_out // 0" 2>/dev/null || echo 0)
        b1=$(echo "$after" | jq -r ".clusters.\"$c\".$dir.bytes_out // 0" 2>/dev/null || echo 0)
        if [ "$(echo "${b1:-0} - ${b0:-0} >= ${bytes:-1}" | bc)" != 1 ]; then
            router_ok=fail
            note "router_bytes: $c $dir: the emulator counted $(echo "${b1:-0} - ${b0:-0}" | bc) bytes out for a transfer of ${bytes:-?} bytes"
        fi
    done
done

# --- cpu: a loop on every worker at once against its quota ---
# A loop prints its rounds per second of wall time and per second of CPU time; the latter is
# the speed of an unthrottled core at that moment on the core it ran on (a busy hyperthread
# sibling or another engineer's load slows a core too), the reference for its speed.
workers=$(js '.hosts[] | select(.perf != null) | .host')
cores_of() { jq -r ".layout as \$l | .hosts[] | select(.host == \"$1\") | [(\$l.cores_per_perf * .perf), 0.05] | max" "${2:-$work/state.json}"; }
for w in $workers; do x "$w" "$T" tool cpu --seconds 4 >"$work/cpu.$w" 2>&1 & done
wait
cpu_err=0
for w in $workers; do
    q=$(cores_of "$w")
    read -r r ref <"$work/cpu.$w"
    e=$(awk -v r="$r" -v ref="$ref" -v q="$q" 'BEGIN { if (r == "" || ref + 0 <= 0) { print "nan"; exit } d = (r / ref) / q - 1; if (d < 0) d = -d; printf "%.4f\n", d }')
    note "cpu $w: $(awk -v r="$r" -v ref="$ref" 'BEGIN{printf "%.3f", r/ref}') of a core, quota $q, error $e"
    cpu_err=$(worst "$cpu_err" "$e")
done

# --- changes while running: a host's perf doubled, a WAN's rate halved ---
changes_ok=ok
w1=$(echo "$workers" | head -1)
p1=$(js ".hosts[] | select(.host == \"$w1\") | .perf")
tb set-perf "$w1" "$(echo "$p1 * 2" | bc)" >/dev/null || changes_ok=fail
read -r r ref < <(x "$w1" "$T" tool cpu --seconds 3)
q=$(cores_of "$w1" "$state")
e=$(awk -v r="$r" -v ref="$ref" -v q="$q" 'BEGIN { d = (r / ref) / q - 1; if (d < 0) d = -d; printf "%.4f\n", d }')
note "set-perf $w1 $p1 -> $(echo "$p1 * 2" | bc): $(awk -v r="$r" -v ref="$ref" 'BEGIN{printf "%.3f", r/ref}') of a core, quota $q, error $e"
[ "$(echo "$e <= 0.15" | bc)" = 1 ] || changes_ok=fail
tb set-perf "$w1" "$p1" >/dev/null || changes_ok=fail
c1=$(echo "$externals" | head -1)
c1head=$(js ".layout.clusters[] | select(.name == \"$c1\") | .head")
want=$(js ".layout.clusters[] | select(.name == \"$c1\") | .to_cluster.rate_mbit / 2")
if tb set-rate "$c1" --to "$want" >/dev/null 2>&1; then
    read -r bytes secs rate <<<"$(transfer "$main_head" "$c1head")"
    e=$(awk -v r="${rate:-0}" -v w="$want" 'BEGIN { g = r * 8 / 1e6 * 1500 / 1448; d = g / w - 1; if (d < 0) d = -d; printf "%.4f\n", d }')
    note "set-rate $c1 --to $want: $(awk -v r="${rate:-0}" 'BEGIN{printf "%.3f", r*8/1e6}') Mbit/s of payload, error $e"
    [ "$(echo "$e <= 0.10" | bc)" = 1 ] || changes_ok=fail
else
    note "set-rate $c1 failed: $(tb set-rate "$c1" --to "$want" 2>&1)"
    changes_ok=fail
fi

# --- down, then nothing of the testbed may remain ---
clean=true
tb down >"$work/down.log" 2>&1 || { clean=false; cat "$work/down.log"; }
left=$("$T" leftovers "$work/state.json")
if [ -n "$left" ]; then clean=false; note "left after down: $left"; fi
# Kind by kind beyond the tool's own view: namespaces, links, cgroups, processes.
ip netns list | grep -q "^hmwtb-$name-" && { clean=false; note "a namespace remains"; }
[ -e "/sys/fs/cgroup/cpu/hmw-testbed-$name" ] || [ -e "/sys/fs/cgroup/hmw-testbed-$name" ] && { clean=false; note "a cgroup remains"; }
ps -eo args | grep -F "/var/lib/hmw-testbed/$name/" | grep -v grep | grep -q . && { clean=false; note "a process remains"; }
[ -e "/var/lib/hmw-testbed/$name" ] && { clean=false; note "the state dir remains"; }

ok() { awk -v v="$1" -v m="$2" 'BEGIN { exit !(v != "nan" && v <= m) }'; }
ok "$rtt_err" 0.10 || failed+=(rtt_err)
ok "$rate_err" 0.10 || failed+=(rate_err)
ok "$cpu_err" 0.15 || failed+=(cpu_err)
[ "$hosts" -ge 9 ] && [ "$clusters" -ge 3 ] || failed+=(size)
for v in ssh_ok:ssh mpi_ok:mpi_seq slurm_ok:slurm gateway_ok:gateway router_ok:router_bytes changes_ok:changes; do
    var=${v%%:*}
    [ "${!var}" = ok ] || failed+=("${v##*:}")
done
$clean || failed+=(clean)
note "$(echo "$(date +%s.%N) - $t_start" | bc | xargs printf '%.0f') s in all"
if ((${#failed[@]})); then note "FAILED: ${failed[*]}" >&2; fi
printf 'testbed hosts=%s clusters=%s rtt_err=%.3f rate_err=%.3f cpu_err=%.3f ssh=%s mpi_seq=%s slurm=%s gateway=%s router_bytes=%s changes=%s clean=%s\n' \
    "$hosts" "$clusters" "$rtt_err" "$rate_err" "$cpu_err" "$ssh_ok" "$mpi_ok" "$slurm_ok" "$gateway_ok" "$router_ok" "$changes_ok" "$clean"
((${#failed[@]} == 0))
