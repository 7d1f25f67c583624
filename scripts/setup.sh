#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and run hmw: OpenMPI (runtime and
# headers), libclang (the MPI bindings are generated with bindgen), and fontconfig, FreeType
# and a font for the charts of `hmw report`; and the Debian packages named as arguments, for a
# script that needs more (`scripts/setup.sh python3-venv`). Idempotent; silent when everything
# is already there.
set -euo pipefail

packages=(openmpi-bin libopenmpi-dev libclang-dev pkg-config libfontconfig1-dev libfreetype-dev fonts-dejavu-core "$@")
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null; then
    echo "setup: cargo is not on PATH; install Rust (https://rustup.rs) first" >&2
    exit 1
fi
