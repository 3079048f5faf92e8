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
# the slurm tests skip where it is missing),
# `setup.sh test-trainium` for NumPy in the system Python, which runs kevo's
# NumPy model of NKI (targets/trainium/model) in the trainium tests (`make
# test` asks for it; those tests skip where it is missing),
# `setup.sh test-triton` for a Python virtual environment with torch and Triton
# from PyPI, where the triton target's tests run their candidates in Triton's
# interpreter when there is no GPU (`make test` asks for it; those tests skip
# where it is missing). It lives in ${KEVO_TRITON_VENV:-$XDG_CACHE_HOME/kevo/triton-venv}
# and is made once; about 5 GB.
# `setup.sh peers` for a Python virtual environment with Kernel Tuner from
# PyPI (kernel_tuner 1.5.0), which `kevo bench strategies --kernel-tuner` runs
# (`make test` asks for it; the peer's test skips where it is missing). It
# lives in ${KEVO_KT_VENV:-$XDG_CACHE_HOME/kevo/kt-venv}; about 300 MB.
triton_venv=""
kt_venv=""
for group in "$@"; do
  case "$group" in
    bench) packages+=(libdnnl-dev libopenblas-dev) ;;
    test-browser) packages+=(chromium) ;;
    fuzz) packages+=(clang libclang-rt-dev) ;;
    # The single-node Slurm cluster the slurm backend's tests start
    # (tests/support/slurm_cluster.sh: its own config, keys and sockets; the
    # packages' system services are not used).
    test-slurm) packages+=(slurm-wlm munge) ;;
    test-trainium) packages+=(python3-numpy) ;;
    test-triton)
      packages+=(python3-venv python3-pip)
      triton_venv="${KEVO_TRITON_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kevo/triton-venv}" ;;
    peers)
      packages+=(python3-venv python3-pip)
      kt_venv="${KEVO_KT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kevo/kt-venv}" ;;
    *) echo "setup.sh: unknown package group '$group' (known: bench, peers, test-browser, fuzz, test-slurm, test-trainium, test-triton)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2 || true
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The Triton test environment: made once, in a temporary directory that is
# renamed into place only when torch and Triton import, so an interrupted
# install leaves nothing half-made behind.
if [ -n "$triton_venv" ] && ! "$triton_venv/bin/python" -c 'import torch, triton, numpy' 2>/dev/null; then
  echo "setup: making the Triton test environment in $triton_venv (torch, triton, numpy from PyPI; a few minutes)" >&2
  rm -rf "$triton_venv" "$triton_venv.partial"
  mkdir -p "$(dirname "$triton_venv")"
  /usr/bin/python3 -m venv "$triton_venv.partial"
  "$triton_venv.partial/bin/python" -m pip install -q torch triton numpy >&2
  "$triton_venv.partial/bin/python" -c 'import torch, triton, numpy'
  mv "$triton_venv.partial" "$triton_venv"
fi

# Kernel Tuner's environment for the strategy benchmark's peers, made the
# same way.
if [ -n "$kt_venv" ] && ! "$kt_venv/bin/python" -c 'import kernel_tuner, constraint' 2>/dev/null; then
  echo "setup: making Kernel Tuner's environment in $kt_venv (kernel_tuner 1.5.0 from PyPI)" >&2
  rm -rf "$kt_venv" "$kt_venv.partial"
  mkdir -p "$(dirname "$kt_venv")"
  /usr/bin/python3 -m venv "$kt_venv.partial"
  "$kt_venv.partial/bin/python" -m pip install -q kernel_tuner==1.5.0 >&2
  "$kt_venv.partial/bin/python" -c 'import kernel_tuner, constraint'
  mv "$kt_venv.partial" "$kt_venv"
fi
