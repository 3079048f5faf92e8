#!/usr/bin/env bash
# Why is kevo's best kernel slower or faster than torch.compile's? On a GPU host:
#  1. bench/micro/end_event.cu: what the end event on the legacy stream costs;
#  2. ncu (sections SpeedOfLight, MemoryWorkloadAnalysis, Occupancy, LaunchStats,
#     WarpStateStats; clocks not locked) on kevo's best kernel of each task, in the
#     runner's profile mode, and on torch.compile's Triton kernel (torch_peers.py
#     --profile-calls), each after an L2 flush;
#  3. torch.compile's generated code (TORCH_LOGS=output_code);
#  4. the tensor-pipe metrics this ncu knows ($OUT/tensor-metrics.txt): kevo
#     stores sm__pipe_tensor_op_hmma_cycles_active as ncu.tensor_pct, and
#     whether that counts Hopper's wgmma (or only a gmma metric does) is
#     not yet checked.
#   BEST_DIR=DIR bench/gpu_diag.sh TASK...   (TASK: a config under configs/cuda/ without .json,
#   e.g. rmsnorm-16384x4096 or decode/gemm_swiglu-128x4096x14336; DIR holds NAME.best.cu, NAME
#   being the config's file name without .json)
# The peer is torch.compile's Triton kernel unless PEER and KERNELS say otherwise:
#   PEER=eager KERNELS='nvjet|gemm|xmma|cutlass' ...   (cuBLAS's kernel, for a GEMM)
# With EXTRA_SECTIONS naming SourceCounters (ncu's warp stall samples per SASS instruction):
#   $OUT/source-TASK-WHO.csv.gz, each report's source page, and $OUT/stalls.txt, both sides'
#   samples by kind of instruction side by side (bench/micro/stall_summary.py), e.g.
#   EXTRA_SECTIONS=SourceCounters PEER=eager KERNELS='nvjet|gemm|xmma|cutlass' BEST_DIR=D \
#     bench/gpu_diag.sh decode/gemm-128x4096x4096
# Writes $OUT/diag.txt (ncu details), $OUT/end_event.txt, $OUT/inductor.txt, $OUT/tensor-metrics.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-diag}; mkdir -p "$OUT"
BEST_DIR=${BEST_DIR:?BEST_DIR: a folder with TASK.best.cu files}
PEER=${PEER:-compile}; KERNELS=${KERNELS:-triton}
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD
w=/tmp/diag; rm -rf "$w"; mkdir -p "$w"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
# more sections (e.g. ComputeWorkloadAnalysis MemoryWorkloadAnalysis_Tables): EXTRA_SECTIONS="A B"
for x in ${EXTRA_SECTIONS:-}; do SECTIONS="$SECTIONS --section $x"; done
# and metrics of its own (comma-separated ncu names): EXTRA_METRICS=lts__t_sectors_srcunit_tex_op_read.sum,...
[ -n "${EXTRA_METRICS:-}" ] && SECTIONS="$SECTIONS --metrics $EXTRA_METRICS"

"$NCU" --query-metrics 2>&1 | grep -i "pipe_tensor\|gmma" > "$OUT/tensor-metrics.txt"
echo "tensor-pipe metrics: $(grep -o '^sm__pipe_tensor[a-z_0-9]*' "$OUT/tensor-metrics.txt" | sort -u | tr '\n' ' ')"
nvcc -O3 -arch=sm_90a bench/micro/end_event.cu -o "$w/end_event" && "$w/end_event" | tee "$OUT/end_event.txt"

for task in "$@"; do
  cfg=configs/cuda/$task.json
  [ -f "$cfg" ] || { echo "gpu_diag: no config $cfg" >&2; continue; }
  echo "== $task"
  task=$(basename "$task")   # the name of its files here and in BEST_DIR
  # kevo's own profile goes through this ncu, which first profiles the same job
  # with the sections above into $w/kevo-$task.ncu-rep.
  bench/micro/ncu_wrap.sh "$w/ncu-wrap" "$NCU" "$w/kevo-$task" --clock-control none \
    --profile-from-start off $SECTIONS
  KEVO_NCU=$w/ncu-wrap KEVO_DB=$w/kevo.db build/bin/kevo eval --task "$cfg" \
    "$BEST_DIR/$task.best.cu" 2>&1 | tail -4
  TORCH_LOGS=output_code "$NCU" --clock-control none --profile-from-start off $SECTIONS -k "regex:$KERNELS" \
    -f -o "$w/torch-$task" python3 bench/peers/torch_peers.py "$cfg" --peers "$PEER" --profile-calls 2 \
    --launch-cover-us 300 --min-time-ms 30 > "$w/torch-$task.log" 2>&1
  grep "median\|compile " "$w/torch-$task.log" | tail -3
  sources=()
  for who in kevo torch; do
    echo "######## $task: $who" >> "$OUT/diag.txt"
    "$NCU" --import "$w/$who-$task.ncu-rep" --page details >> "$OUT/diag.txt" 2>&1 ||
      { echo "(no report)"; tail -20 "$w/$who-$task.log"; } >> "$OUT/diag.txt"
    if [[ " ${EXTRA_SECTIONS:-} " == *" SourceCounters "* ]]; then
      src=$OUT/source-$task-$who.csv
      "$NCU" --import "$w/$who-$task.ncu-rep" --page source --print-source sass --csv > "$src" 2>&1 &&
        gzip -f "$src" && sources+=("$src.gz") || echo "(no source page for $who: $(head -c 200 "$src"))"
    fi
  done
  if [ ${#sources[@]} -gt 0 ]; then
    echo "######## $task: ${sources[*]}" >> "$OUT/stalls.txt"
    python3 bench/micro/stall_summary.py "${sources[@]}" >> "$OUT/stalls.txt" 2>&1
    grep -A12 "side by side" "$OUT/stalls.txt" | tail -13
  fi
  echo "######## $task" >> "$OUT/inductor.txt"
  grep -v "^\s*$" "$w/torch-$task.log" | grep -iv "autotun\|Ignoring\|^==PROF==" | head -400 >> "$OUT/inductor.txt"
done
ls -la "$OUT"
