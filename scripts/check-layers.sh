#!/usr/bin/env bash
# The crates' layers, as their dependency trees show them (`docs/architecture.md`): the crates
# that decide hold no I/O stack, and the compiler, not a convention, keeps it so.
#   - hmw-model, hmw-core, hmw-sim: no MPI, tokio, QUIC (quinn), TLS (rustls, ring);
#   - hmw-sim: not the runtime `hmw` either (it drives hmw-core's cores itself);
#   - hmw-cm-proto (the link's protocol core): no tokio, quinn, rustls, ring;
#   - hmw-cm (the link's QUIC driver) is built on hmw-cm-proto.
# Last line: `layers crates=N clean=K`.
set -euo pipefail
cd "$(dirname "$0")/.."

crates=0
clean=0
# Usage: forbid CRATE REGEX (of crate names, the whole name): fails the check when CRATE's
# normal dependency tree holds a crate whose name matches.
forbid() {
    local crate=$1 names=$2 found
    crates=$((crates + 1))
    found=$(cargo tree -p "$crate" -e normal --prefix none | awk '{ print $1 }' | sort -u |
        grep -E "^($names)\$" || true)
    if [ -n "$found" ]; then
        echo "layers: $crate depends on $(echo "$found" | tr '\n' ' ')" >&2
    else
        clean=$((clean + 1))
    fi
}
io='mpi|mpi-sys|tokio|quinn|quinn-proto|quinn-udp|rustls|rustls-pki-types|ring'
forbid hmw-model "$io"
forbid hmw-core "$io"
forbid hmw-sim "$io|hmw"
forbid hmw-cm-proto 'tokio|quinn|quinn-proto|quinn-udp|rustls|ring'
crates=$((crates + 1))
if cargo tree -p hmw-cm -e normal --prefix none | grep -q '^hmw-cm-proto v'; then
    clean=$((clean + 1))
else
    echo "layers: hmw-cm is not built on hmw-cm-proto" >&2
fi
echo "layers crates=$crates clean=$clean"
[ "$clean" -eq "$crates" ]
