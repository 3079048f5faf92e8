#!/usr/bin/env bash
# Builds kevo-peers into build-peers/, checks the peers against fp64
# references, then times every peer at 1 thread and at all threads and prints
# the JSON lines and a table.
#   bench/peers/run.sh [BUILD_DIR]        (default build-peers, under the repo root)
# OpenBLAS sgemm runs twice: with the core OpenBLAS detects and with
# $PEERS_OPENBLAS_CORE (default Cooperlake), since OpenBLAS 0.3.21 falls back
# to its SSE3 kernels on Xeon models newer than it knows.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-peers}
core=${PEERS_OPENBLAS_CORE:-Cooperlake}

scripts/setup.sh bench
cmake -S bench/peers -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" > /dev/null

peers="$build/kevo-peers"
threads="1,$(nproc)"
[ "$(nproc)" -eq 1 ] && threads=1
"$peers" --verify --threads "$threads" --openblas-core "detected,$core"
echo
"$peers" --threads "$threads" --openblas-core "detected,$core" --table
