#!/usr/bin/env bash
# Searches on several GPUs at once: one lane per GPU, each lane runs its tasks
# one after another on its own GPU (KEVO_CUDA_DEVICES), with its own store, so
# every task has one whole GPU for its search. Then, when PEERS=1, kevo's best
# kernel of each task and the PyTorch peers are timed in this same run,
# ROUNDS times alternately, all on GPU 0, and bench/gpu_table.py prints the ratios.
#   bench/gpu_lanes.sh "CONFIG:MINUTES CONFIG:MINUTES" "CONFIG:MINUTES ..."
#     lane 0 on GPU 0, lane 1 on GPU 1, ...; CONFIG is a path or a name in configs/cuda/
#   env: OUT (results, default build/gpu-lanes), ROUNDS (default 1), PEERS (default 1),
#        GPU_TESTS=1 runs the OnGpu tests on the last GPU before its lane starts,
#        BEST_DIR: best kernels of an earlier run (TASK.best.cu) to time when a task
#        is not searched here.
# Everything that matters is copied to $OUT (at most 8 files): log.txt, table.md,
# gpu-tests.txt and lanes.tgz (stores, best kernels, run summaries and logs, JSON).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-lanes}; mkdir -p "$OUT"
ROUNDS=${ROUNDS:-1}; PEERS=${PEERS:-1}
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# A fresh folder: a warm machine keeps /tmp from the last call.
w=/tmp/work; b=$w/bench; rm -rf "$w"; mkdir -p "$b"
t0=$(date +%s); at() { echo "$(( $(date +%s) - t0 )) s"; }
config_of() { [ -f "$1" ] && echo "$1" || echo "configs/cuda/$1.json"; }

lane() {  # lane GPU "CONFIG:MIN ..."
  local gpu=$1; shift
  export KEVO_CUDA_DEVICES=$gpu KEVO_DB=$w/kevo-gpu$gpu.db
  for spec in $1; do
    local cfg; cfg=$(config_of "${spec%%:*}"); local mins=${spec##*:}
    local task; task=$(basename "$cfg" .json)
    echo "== gpu $gpu: $task, kevo run --max-minutes $mins (at $(at))"
    # The limit leaves the search time to confirm its best at the end.
    timeout $(( ${mins%.*} * 60 + 90 )) build/bin/kevo run "$cfg" --max-minutes "$mins" \
      -o "$b/$task.best.cu" --json > "$b/$task.run.json" 2> "$b/$task.run.log"
    echo "== gpu $gpu: $task finished rc=$? (at $(at))"; tail -8 "$b/$task.run.log"
  done
}

{
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
ngpu=$(nvidia-smi -L | wc -l)
KEVO_DB=$w/kevo-gpu0.db build/bin/kevo calibrate --target cuda 2>&1 | tee "$b/calibrate.txt"
echo "== calibrated (at $(at))"
# Every lane's store starts with this calibration (the GPUs are of one kind).
for ((g = 1; g < ngpu; g++)); do cp $w/kevo-gpu0.db $w/kevo-gpu$g.db; done
pids=(); i=0
for spec in "$@"; do
  gpu=$(( i % ngpu ))
  if [ "${GPU_TESTS:-0}" = 1 ] && [ $i = $(( $# - 1 )) ]; then
    ( CUDA_VISIBLE_DEVICES=$gpu timeout 150 build/tests/cuda_tests --gtest_filter='OnGpu.*' \
        > "$w/gpu-tests.txt" 2>&1; echo "rc=$?" >> "$w/gpu-tests.txt"
      grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|rc=" "$w/gpu-tests.txt" | head -30
      lane $gpu "$spec" ) &
  else
    lane $gpu "$spec" &
  fi
  pids+=($!); i=$(( i + 1 ))
done
wait "${pids[@]}"
echo "== searches done (at $(at))"
if [ "$PEERS" = 1 ]; then
  for cfg in configs/cuda/*.json; do
    task=$(basename "$cfg" .json)
    [ -f "$b/$task.best.cu" ] || { [ -n "${BEST_DIR:-}" ] && [ -f "$BEST_DIR/$task.best.cu" ] &&
      cp "$BEST_DIR/$task.best.cu" "$b/"; }
  done
  for ((r = 1; r <= ROUNDS; r++)); do
    for cfg in configs/cuda/*.json; do
      task=$(basename "$cfg" .json)
      [ -f "$b/$task.best.cu" ] || continue
      KEVO_CUDA_DEVICES=0 KEVO_DB=$w/kevo-eval.db build/bin/kevo eval --task "$cfg" "$b/$task.best.cu" \
        --json > "$b/$task.kevo.$r.json" 2>> "$w/eval.log"
    done
    echo "== kevo round $r timed (at $(at))"
    CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1 python3 bench/peers/torch_peers.py configs/cuda/*.json \
      --launch-cover-us 300 --kevo-dir "$b" --json "$b/all.peers.$r.json" 2>&1 |
      grep -v "Ignoring this choice\|^  \|AUTOTUNE\|SingleProcess\|^$" | tail -8
    echo "== peers round $r timed (at $(at))"
  done
  python3 bench/gpu_table.py "$b" | tee "$OUT/table.md"
fi
echo "== all done (at $(at))"
} 2>&1 | tee "$w/log.txt"
cp "$w/log.txt" "$OUT/"; cp "$w/gpu-tests.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/lanes.tgz" -C "$w" bench kevo-gpu0.db kevo-gpu1.db kevo-eval.db eval.log 2>/dev/null
ls -la "$OUT"
