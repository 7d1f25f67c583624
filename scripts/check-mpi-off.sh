#!/usr/bin/env bash
# The `hmw` command without MPI (`cargo install hmw-cli --no-default-features`: predict and
# report on a laptop before any cluster account): builds it, checks that it does not pull in
# MPI (scripts/check-layers.sh checks the model's and the cores' crates), and that
# `hmw predict --json` gives the same JSON as the MPI build on every plan in configs/.
# Needs the workspace's build of `hmw` in target/debug (scripts/test.sh builds it first); the
# build without MPI shares that target folder (only hmw and hmw-cli compile again) and the
# workspace's binaries are rebuilt as they were at the end (scripts/env.sh's build_debug).
# Last line: `mpi_off plans=N same=N`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

tree=$(cargo tree -p hmw-cli --no-default-features -e normal --prefix none)
if grep -qE '^mpi(-sys)? v' <<<"$tree"; then
    echo "mpi_off: hmw-cli without its mpi feature still depends on MPI:" >&2
    grep -E '^mpi(-sys)? v' <<<"$tree" >&2
    exit 1
fi

target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -x "$target/debug/hmw" ] || { echo "mpi_off: $target/debug/hmw is not built" >&2; exit 1; }
cp "$target/debug/hmw" "$work/hmw-mpi"
cargo build -p hmw-cli --no-default-features --quiet
cp "$target/debug/hmw" "$work/hmw-no-mpi"
build_debug
with_mpi="$work/hmw-mpi"
without_mpi="$work/hmw-no-mpi"
if "$without_mpi" launch --help >/dev/null 2>&1; then
    echo "mpi_off: the build without MPI still has launch" >&2
    exit 1
fi

plans=0
same=0
for plan in $(grep -l '^\[\[cluster\]\]' configs/*.toml configs/*/*.toml | sort); do
    plans=$((plans + 1))
    "$with_mpi" predict --json "$plan" >"$work/with.json"
    "$without_mpi" predict --json "$plan" >"$work/without.json"
    if cmp -s "$work/with.json" "$work/without.json"; then
        same=$((same + 1))
    else
        echo "mpi_off: $plan: predict --json differs between the builds" >&2
        diff "$work/with.json" "$work/without.json" | head -20 >&2
    fi
done
echo "mpi_off plans=$plans same=$same"
[ "$plans" -gt 0 ] && [ "$same" -eq "$plans" ]
