#!/usr/bin/env bash
# Installs every build and test dependency (Debian 12 packages) when missing and
# prepares the configured fio source the engine compiles against. Idempotent:
# a machine that has everything installs nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

packages=(
    g++ meson ninja-build pkg-config python3 binutils dpkg-dev make
    libibverbs-dev librdmacm-dev ibverbs-providers rdma-core
    libgtest-dev libnvme-dev
    fio valgrind python3-matplotlib
    pybind11-dev python3-dev python3-numpy python3-pytest
    python3-torch
    python3-mesonpy python3-venv  # pip install . (pyproject.toml) into a venv, offline
    debhelper dh-python  # the Debian packages (debian/, dpkg-buildpackage; tests/deb/run-checks.sh)
    clang libclang-rt-14-dev  # tools/fuzz.sh: libFuzzer with ASan/UBSan
    clang-format  # tools/check-format.sh (CI)
    libssl-dev
    ccache  # kept between runs on one machine: a rebuild compiles only what changed
    scdoc man-db  # the man pages (docs/man) and the test that renders them
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "setup: run as root to install: ${missing[*]}" >&2; exit 1; }
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

"$root/tools/fetch-fio-source.sh"
