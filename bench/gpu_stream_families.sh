#!/usr/bin/env bash
# The weight-streaming families (gemm swapab, gemm streamk, gemm_swiglu
# wgmma) before and after a change to them, in one device call:
#  1. OnGpu.SplitKIsRight (every split-K and stream-K family, the changed ones
#     among them, against the CPU reference on ragged shapes) and
#     OnGpu.PartialSumsAreTheSameEveryRun;
#  2. per task, each family's point built from OLD's copy of its source and
#     from the tree's, beside torch.compile in one harness
#     (bench/micro/harness_points.py, L2 flushed by a fill, ROUNDS rounds in
#     rotated order, each output checked once against the fp64 reference).
#   OLD=build/old-src LIMIT=560 bench/gpu_stream_families.sh
#   OLD holds swapab.cu, streamk.cu and swiglu_wgmma.cu (e.g. `git show
#   REV:targets/cuda/kernels/gemm/swapab.cu > OLD/swapab.cu`; carry it).
# Binaries built on the CPU machine: carry build/bin and build/tests/cuda_tests.
# Writes $OUT/tests.txt and, per task, $OUT/<task>.json and $OUT/<task>.txt.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-stream}; mkdir -p "$OUT"
OLD=${OLD:-build/old-src}; LIMIT=${LIMIT:-560}; ROUNDS=${ROUNDS:-3}
export KEVO_CACHE_DIR=/tmp/kevo-cache KEVO_HOME=$PWD PYTHONUNBUFFERED=1
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
upto() { local l=$(( LIMIT - $(el) - 5 )); [ $l -gt $1 ] && l=$1; [ $l -lt 1 ] && l=1; echo $l; }
for f in swapab.cu streamk.cu swiglu_wgmma.cu; do
  [ -f "$OLD/$f" ] || { echo "gpu_stream_families: no $OLD/$f" >&2; exit 2; }
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
if [ "${TESTS:-1}" != 0 ]; then
  timeout $(upto 260) build/tests/cuda_tests \
    --gtest_filter='OnGpu.SplitKIsRight:OnGpu.PartialSumsAreTheSameEveryRun' > "$OUT/tests.txt" 2>&1
  echo "tests rc=$? at $(el) s"
  grep -E "^\[ +(OK|FAILED|PASSED) |Failure|Expected|Which is|Value of" "$OUT/tests.txt" | head -30
fi
K=targets/cuda/kernels
# task config | label=family-file:knobs ... (old and new of each point)
points() {
  local cfg=$1; shift
  local name; name=$(basename "$cfg" .json)
  local args=()
  for p in "$@"; do
    local label=${p%%=*} rest=${p#*=}
    local file=${rest%%:*} knobs=${rest#*:}
    local old=$OLD/$(basename "$file")
    [ "$file" = "$K/gemm_swiglu/wgmma.cu" ] && old=$OLD/swiglu_wgmma.cu
    args+=(--point "$label.old=$old:$knobs" --point "$label.new=$file:$knobs")
  done
  timeout $(upto 200) python3 bench/micro/harness_points.py "$cfg" --flush fill --rounds "$ROUNDS" \
    --json "$OUT/$name.json" "${args[@]}" > "$OUT/$name.txt" 2>&1
  echo "== $name rc=$? at $(el) s"
  grep -v "AUTOTUNE\|ACC_TYPE\|^  [a-z_]\|strides\|dtypes" "$OUT/$name.txt" | tail -12
}
D=configs/cuda/decode
points $D/gemm_swiglu-128x4096x14336.json \
  "mlp=$K/gemm_swiglu/wgmma.cu:WGM=64,NCONS=2,BN=128,SPLIT=1,SK=0,STAGES=3,BHINT=1,KEEP=1"
points $D/gemm-16x4096x14336.json \
  "swapab=$K/gemm/swapab.cu:TN=16,MT=1,NCONS=1,STAGES=20,SPLIT=1"
points $D/gemm-64x4096x14336.json \
  "streamk=$K/gemm/streamk.cu:BN=64,WGM=64,NCONS=1,STAGES=12" \
  "swapab=$K/gemm/swapab.cu:TN=64,MT=1,NCONS=1,STAGES=12,SPLIT=1"
echo "done at $(el) s"
