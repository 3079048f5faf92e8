#!/usr/bin/env bash
# The GPU benchmark, on a machine with an NVIDIA GPU: for each task config in
# configs/cuda/ (or the ones named), kevo searches for MINUTES, then kevo's
# best kernel (kevo eval) and the PyTorch peers (eager and
# torch.compile max-autotune-no-cudagraphs, bench/peers/torch_peers.py) are
# timed alternately, ROUNDS times, in this one run, all with the L2 flushed
# and CUDA events around each call. bench/gpu_table.py prints the ratios.
#   bench/gpu_vs_peers.sh [MINUTES] [ROUNDS] [BUILD_DIR] [CONFIG...]   (default 10 2 build)
# ROUNDS 0: kevo's figure is its search's best as re-measured at the end of
# the search, and the peers run once, all tasks in one process, after the
# searches (the short form, for a GPU lease of a few minutes).
# Store: $KEVO_DB (default BUILD_DIR/gpu-vs-peers.db); best kernels and the
# raw JSON go to $KEVO_BENCH_OUT (default BUILD_DIR/gpu-vs-peers/).
# KEVO_SKIP_SEARCH=1 re-times the best kernels a previous run left there.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
rounds=${2:-2}
build=${3:-build}
shift $(( $# < 3 ? $# : 3 ))
configs=("$@")
[ ${#configs[@]} -eq 0 ] && configs=(configs/cuda/*.json)
kevo="$build/bin/kevo"
out="${KEVO_BENCH_OUT:-$build/gpu-vs-peers}"
mkdir -p "$out"
export KEVO_DB="${KEVO_DB:-$build/gpu-vs-peers.db}"
# The peers' Python overhead per call (up to ~190 us for a compiled graph)
# would otherwise be timed: a GPU sleep queued after the flush covers it.
# kevo's own launch (a C call, ~5 us) is already hidden behind the flush.
cover=${KEVO_LAUNCH_COVER_US:-300}

"$kevo" calibrate --target cuda | tee "$out/calibrate.txt" >&2
for cfg in "${configs[@]}"; do
  task=$(basename "$cfg" .json)
  best="$out/$task.best.cu"
  if [ "${KEVO_SKIP_SEARCH:-0}" != 1 ]; then
    echo "== kevo run $cfg --max-minutes $minutes" >&2
    "$kevo" run "$cfg" --max-minutes "$minutes" -o "$best" --json > "$out/$task.run.json" ||
      { echo "search failed for $task" >&2; continue; }
  fi
  for ((r = 1; r <= rounds; r++)); do
    "$kevo" eval --task "$cfg" "$best" --json > "$out/$task.kevo.$r.json" || true
    PYTHONUNBUFFERED=1 python3 bench/peers/torch_peers.py "$cfg" --launch-cover-us "$cover" \
      --json "$out/$task.peers.$r.json" >&2 || true
  done
done
if [ "$rounds" = 0 ]; then
  PYTHONUNBUFFERED=1 python3 bench/peers/torch_peers.py "${configs[@]}" --launch-cover-us "$cover" \
    --json "$out/all.peers.json" >&2 || true
fi
python3 bench/gpu_table.py "$out" | tee "$out/table.md"
