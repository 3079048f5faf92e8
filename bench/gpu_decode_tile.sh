#!/usr/bin/env bash
# Where one decode GEMM tile loses to cuBLAS, in one device call:
#  1. variants of a knob point of gemm wgmma (BASE, each VARIANT's knobs on
#     top) and the diagnostic builds without the epilogue and without the
#     wgmmas (KEVO_DIAG_NO_EPILOGUE, KEVO_DIAG_NO_MMA: they fail their check by
#     design, their times stand), timed beside cuBLAS (the eager function) in
#     one harness from a clean L2 (bench/micro/harness_points.py --eager
#     --flush read, ROUNDS rounds), with each build's working HGMMA count
#     (a diagnostic with fewer than BASE's times a kernel ptxas cut down);
#  2. ncu's warp stall samples per SASS instruction of BASE and of cuBLAS's
#     kernel (bench/gpu_diag.sh with SourceCounters), summed by kind of
#     instruction side by side (bench/micro/stall_summary.py).
#   bench/gpu_decode_tile.sh [LABEL=K=V,K=V ...]   (variants; the default list below)
#   CONFIG=gemm-128x4096x4096 (under configs/cuda/decode/), BASE=K=V,... (the
#   default: wgmma's decode start at cuBLAS's 64 x 64 tile), ROUNDS=5,
#   OUT=build/gpu-decode-tile, LIMIT=420 (seconds for both parts; part 2 gets
#   what part 1 leaves, and is skipped, said so, under 60 s)
# Writes $OUT/points.txt and .json, $OUT/hgmma.txt, $OUT/diag/ (gpu_diag.sh's
# files: diag.txt, stalls.txt, the source pages) and $OUT/log.txt.
# Binaries built on the CPU machine: carry build/bin.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-decode-tile}; mkdir -p "$OUT"
CONFIG=${CONFIG:-gemm-128x4096x4096}
ROUNDS=${ROUNDS:-5}
LIMIT=${LIMIT:-420}
BASE=${BASE:-BHINT=0,BN=64,CDIM=0,CLUSTER=2,DYN=0,EPI=0,EPIB=0,EPIR=0,GROUP_M=1,KEEP=1,NCONS=1,PERSIST=0,PING=0,SK=0,SPLIT=1,STAGES=12,STM=0,TAIL=0,WGM=64}
HARNESS_POINTS=${HARNESS_POINTS:-bench/micro/harness_points.py}   # (tests stand in for it)
DIAG=${DIAG:-bench/gpu_diag.sh}
t0=$(date +%s)
cfg=configs/cuda/decode/$CONFIG.json
[ -f "$cfg" ] || { echo "gpu_decode_tile: no config $cfg" >&2; exit 2; }
W=targets/cuda/kernels/gemm/wgmma.cu
variants=("$@")
if [ ${#variants[@]} -eq 0 ]; then
  # the epilogue's three forms, the weights' evict-first hint, a 2 x 2
  # cluster (A shared along N as B is along M: half of A's L2 reads), no
  # cluster, a shallower ring
  variants=(epi1=EPI=1 epi2=EPI=2 bhint=BHINT=1 c4=CLUSTER=4 c1=CLUSTER=1 s6=STAGES=6)
fi
pts=(--point "base=$W:$BASE")
for v in "${variants[@]}"; do
  label=${v%%=*} knobs=${v#*=}
  [[ "$label" != "$v" && "$label" =~ ^[a-z0-9_]+$ && "$knobs" =~ ^[A-Z_0-9]+=-?[0-9]+(,[A-Z_0-9]+=-?[0-9]+)*$ ]] ||
    { echo "gpu_decode_tile: bad variant '$v': want LABEL=K=V,..." >&2; exit 2; }
  pts+=(--point "$label=$W:$BASE,$knobs")
done
pts+=(--point "no_epi=$W:$BASE,KEVO_DIAG_NO_EPILOGUE=1" --point "no_mma=$W:$BASE,KEVO_DIAG_NO_MMA=1")
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD PYTHONUNBUFFERED=1
{
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv 2>&1
rm -rf /tmp/kevo-points-*
timeout $(( LIMIT * 2 / 3 )) python3 "$HARNESS_POINTS" "$cfg" --no-compile --eager --flush read \
  --rounds "$ROUNDS" --json "$OUT/points.json" "${pts[@]}" > "$OUT/points.txt" 2>&1
echo "points rc=$? (1 is expected: the diagnostics fail their checks)"
grep -v "AUTOTUNE\|^  [a-z_]\|^[EW][0-9]" "$OUT/points.txt" | tail -30
CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for so in /tmp/kevo-points-*/*.so; do
  [ -e "$so" ] || continue
  echo "hgmma $(basename "$so" | cut -d. -f1): $("$CUOBJDUMP" -sass "$so" 2>/dev/null | grep HGMMA | grep -vc 'gdesc\[URZ\]')"
done | tee "$OUT/hgmma.txt"
left=$(( LIMIT - ($(date +%s) - t0) ))
if [ "$left" -lt 60 ]; then
  echo "ncu part skipped: $left s left of LIMIT"
else
  # BASE as a kernel file gpu_diag.sh can evaluate: its knobs as #defines, then the family
  best=$OUT/best; mkdir -p "$best"
  { IFS=, read -ra kvs <<< "$BASE"; for kv in "${kvs[@]}"; do echo "#define ${kv%%=*} ${kv#*=}"; done
    cat "$W"; } > "$best/$CONFIG.best.cu"
  EXTRA_SECTIONS=SourceCounters PEER=eager KERNELS='nvjet|gemm|xmma|cutlass' BEST_DIR=$best \
    OUT=$OUT/diag timeout "$left" bash "$DIAG" "decode/$CONFIG"
  echo "diag rc=$?"
fi
} 2>&1 | tee "$OUT/log.txt"
