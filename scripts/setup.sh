#!/usr/bin/env bash
# Installs the Debian packages kevo builds and tests with; does nothing when all
# are present. Called by `make` (and so by `make test` and `make demo`).
set -euo pipefail

packages=(
  cmake ninja-build g++ make pkg-config
  libboost-dev            # Boost.Asio, Boost.Graph (header-only parts)
  nlohmann-json3-dev
  libfmt-dev
  libsqlite3-dev
  libcurl4-openssl-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libseccomp-dev          # the runners' system-call filter (linked statically)
)
# Extra groups, asked for by name: `setup.sh bench` for the peer baselines,
# `setup.sh test-browser` for the test that renders a report in headless
# Chromium (`make test` asks for it; the test skips where it is missing),
# `setup.sh fuzz` for clang and its libFuzzer runtime (`make fuzz`),
# `setup.sh test-slurm` for the test Slurm cluster (`make test` asks for it;
# the slurm tests skip where it is missing).
for group in "$@"; do
  case "$group" in
    bench) packages+=(libdnnl-dev libopenblas-dev) ;;
    test-browser) packages+=(chromium) ;;
    fuzz) packages+=(clang libclang-rt-dev) ;;
    # The single-node Slurm cluster the slurm backend's tests start
    # (tests/support/slurm_cluster.sh: its own config, keys and sockets; the
    # packages' system services are not used).
    test-slurm) packages+=(slurm-wlm munge) ;;
    *) echo "setup.sh: unknown package group '$group' (known: bench, test-browser, fuzz, test-slurm)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2 || true
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
