#!/usr/bin/env bash
# One .best.cu beside the task's eager peer (cuBLAS for a GEMM) in the peers'
# harness, 3 rounds with a 300 us launch cover: the reference figure that
# bench/gpu_cover.sh and bench/gpu_end_event.sh hold kevo's runner against.
#   bench/micro/harness_beside.sh BEST.cu TASK.json WORKDIR [GREP]
# GREP picks the harness's lines to print ("median" by default).
set -u
best=$1 task=$2 w=$3 pick=${4:-median}
d=$(dirname "$best"); n=$(basename "$task" .json)
[ "$(basename "$best")" = "$n.best.cu" ] || { mkdir -p "$w/peer"; cp "$best" "$w/peer/$n.best.cu"; d=$w/peer; }
timeout 200 python3 bench/peers/torch_peers.py "$task" --peers eager,kevo_cuda --kevo-cuda-dir "$d" \
  --rounds 3 --launch-cover-us 300 2>&1 | grep "$pick" | grep -v "^  [a-z_]"
echo "harness rc=${PIPESTATUS[0]}"
