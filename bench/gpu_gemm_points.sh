#!/usr/bin/env bash
# Times knob points (or diagnostic -D builds) of the gemm wgmma family at
# 4096^3 beside torch.compile (cuBLAS's mm) in one harness
# (bench/micro/harness_points.py, L2 flushed by a fill, ROUNDS rounds in
# rotated order; each output checked once against the fp64 reference):
#   bench/gpu_gemm_points.sh LABEL=K=V,K=V ...   (each point on top of BASE; LABEL= alone is BASE)
#   BASE=...  the knobs every point shares (default: the CDIM + EPIR + DYN start line)
#   ROUNDS=5, CFG=configs/cuda/gemm-4096.json
# Writes $OUT/gpu.txt, $OUT/points.json and $OUT/points.txt.
# (An ncu pass over the same harness segfaulted in python on an H100, round 13:
# bench/gpu_diag.sh profiles through kevo's runner instead.)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-points}; mkdir -p "$OUT"
SRC=targets/cuda/kernels/gemm/wgmma.cu
CFG=${CFG:-configs/cuda/gemm-4096.json}
BASE=${BASE:-BN=128,WGM=128,NCONS=2,STAGES=4,EPI=2,EPIB=1,EPIR=1,PERSIST=1,CLUSTER=2,CDIM=1,GROUP_M=8,DYN=1}
[ $# -ge 1 ] || { echo "usage: $0 LABEL=K=V,... ..." >&2; exit 2; }
pts=()
for p in "$@"; do
  label=${p%%=*} knobs=${p#*=}
  [ "$label" = "$p" ] && knobs=""
  pts+=(--point "$label=$SRC:$BASE${knobs:+,$knobs}")
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$OUT/gpu.txt"
python3 bench/micro/harness_points.py "$CFG" --flush fill --rounds "${ROUNDS:-5}" \
  --json "$OUT/points.json" "${pts[@]}" 2>&1 | tee "$OUT/points.txt" | grep -v "AUTOTUNE\|ACC_TYPE\|^  [a-z_]\|strides\|dtypes"
