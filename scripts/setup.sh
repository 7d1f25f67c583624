#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and run hmw: OpenMPI (runtime and
# headers), libclang (the MPI bindings are generated with bindgen), and fontconfig, FreeType
# and a font for the charts of `hmw report`; and the Debian packages named as arguments, for a
# script that needs more (`scripts/setup.sh python3-venv`). Idempotent; silent when everything
# is already there.
#
# The testbed (`hmw-testbed`, scripts/testbed-check.sh) needs OpenSSH's server and client,
# Slurm's daemons and client, munge, iproute2 and ping. Their packages would start daemons in
# the machine's own namespaces (sshd on port 22, munged, slurmd): during the install a
# policy-rc.d that forbids starting any service is put in place (when the machine has none),
# and afterwards whatever the packages started anyway is stopped and disabled. The testbed
# starts its own daemons, one per emulated host, inside that host's namespaces.
set -euo pipefail

packages=(openmpi-bin libopenmpi-dev libclang-dev pkg-config libfontconfig1-dev libfreetype-dev fonts-dejavu-core
    openssh-server openssh-client slurmd slurmctld slurm-client munge iproute2 iputils-ping "$@")
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    # No service may start during the install (exit 101 = action forbidden).
    guard=/usr/sbin/policy-rc.d
    own_guard=false
    if [ ! -e "$guard" ]; then
        printf '#!/bin/sh\n# scripts/setup.sh: no service starts during an install\nexit 101\n' | $sudo tee "$guard" >/dev/null
        $sudo chmod 755 "$guard"
        own_guard=true
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    $own_guard && $sudo rm -f "$guard"
    # Whatever started anyway is stopped and disabled: the machine's own namespaces run none
    # of the testbed's daemons.
    for service in ssh munge slurmd slurmctld; do
        if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
            $sudo systemctl disable --now "$service" >/dev/null 2>&1 || true
        else
            $sudo update-rc.d "$service" disable >/dev/null 2>&1 || true
            $sudo service "$service" stop >/dev/null 2>&1 || true
        fi
    done
fi
if ! command -v cargo >/dev/null; then
    echo "setup: cargo is not on PATH; install Rust (https://rustup.rs) first" >&2
    exit 1
fi
