#!/usr/bin/env bash
# The 4096^3 GEMM's levers on a GPU host, in one device call:
#  1. OnGpu.PersistentTilesAreRight (the persistent, ping-pong, stream-K and
#     EPIB points of gemm wgmma against the CPU reference);
#  2. nine wgmma points in one harness beside torch.compile
#     (bench/micro/harness_points.py, L2 flushed by a fill, 3 rounds): the
#     persistent cluster-of-two kernel that was best before, with stream-K
#     (SK, in clusters of two and one), with a fourth stage (EPIB 2, with and
#     without SK), and the ping-pong and 128-row cooperative kernels;
#  3. a kevo search of configs/cuda/gemm-4096.json in the time left, then its
#     best against cuBLAS (torch eager) in one harness, 3 rounds.
#   LIMIT=570 bench/gpu_gemm_levers.sh       (seconds; results in $OUT or build/gpu-levers)
# Binaries built on the CPU machine: carry build/bin and build/tests/cuda_tests.
# $OUT gets log.txt, tests.txt, points4096.json, the search's best and JSON, and
# r.tgz (the store and the search's log). Ends before LIMIT s.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-levers}; mkdir -p "$OUT"
LIMIT=${LIMIT:-570}
export KEVO_CACHE_DIR=/tmp/kevo-cache KEVO_HOME=$PWD KEVO_DB=/tmp/levers/kevo.db PYTHONUNBUFFERED=1
w=/tmp/levers; rm -rf $w; mkdir -p $w
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }; left() { echo $(( LIMIT - $(el) )); }
# a step's timeout: N s, or what is left of LIMIT if less (at least 1: timeout 0 would wait for ever)
upto() { local l=$(( $(left) - 5 )); [ $l -gt $1 ] && l=$1; [ $l -lt 1 ] && l=1; echo $l; }
W=targets/cuda/kernels/gemm/wgmma.cu
BEST="BN=256,WGM=64,NCONS=2,STAGES=3,EPI=2,PERSIST=1,CLUSTER=2,GROUP_M=8,KEEP=0"
C1="BN=256,WGM=64,NCONS=2,STAGES=3,EPI=2,PERSIST=1,CLUSTER=1,GROUP_M=8,KEEP=0"
S4="BN=256,WGM=64,NCONS=2,STAGES=4,EPI=2,EPIB=2,PERSIST=1,CLUSTER=2,GROUP_M=8,KEEP=0"
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader
timeout $(upto 110) build/tests/cuda_tests --gtest_filter='OnGpu.PersistentTilesAreRight' > $OUT/tests.txt 2>&1
echo "persistent test rc=$? at $(el) s"
grep -E "^\[ +(OK|FAILED|PASSED) |Failure|Expected|Which is|Value of|point|knob" $OUT/tests.txt | head -40
timeout $(upto 210) python3 bench/micro/harness_points.py configs/cuda/gemm-4096.json --flush fill --rounds 3 \
  --json $OUT/points4096.json \
  --point best_before=$W:$BEST --point sk_c2=$W:$BEST,SK=1 --point sk_c1=$W:$C1,SK=1 \
  --point s4_epib2=$W:$S4 --point s4_epib2_sk=$W:$S4,SK=1 \
  --point ping=$W:BN=128,WGM=128,NCONS=2,STAGES=5,EPI=2,PERSIST=1,PING=1,GROUP_M=8 \
  --point ping_c2=$W:BN=128,WGM=128,NCONS=2,STAGES=5,EPI=2,PERSIST=1,PING=1,CLUSTER=2,GROUP_M=8 \
  --point ping_n256=$W:BN=256,WGM=64,NCONS=2,STAGES=4,EPI=2,PERSIST=1,PING=1,CLUSTER=2,GROUP_M=8 \
  --point coop_w128=$W:BN=128,WGM=128,NCONS=2,STAGES=3,EPI=2,PERSIST=1,CLUSTER=2,GROUP_M=8,KEEP=0 \
  2>&1 | grep -v "AUTOTUNE\|SingleProcess\|Ignoring this choice\|^  [a-z_]"
echo "points rc=${PIPESTATUS[0]} at $(el) s"
s=$(( $(left) - 110 )); [ $s -gt 200 ] && s=200
if [ $s -ge 50 ]; then
  mins=$(python3 -c "print(round(($s - 20) / 60, 2))")
  timeout $s build/bin/kevo run configs/cuda/gemm-4096.json --max-minutes $mins -o $w/gemm-4096.best.cu \
    --json > $w/gemm-4096.run.json 2> $w/run.log
  echo "search ($mins min) rc=$? at $(el) s"; tail -14 $w/run.log
  cp $w/gemm-4096.best.cu $w/gemm-4096.run.json $OUT/ 2>/dev/null
  timeout $(upto 600) python3 bench/peers/torch_peers.py configs/cuda/gemm-4096.json \
    --peers eager,kevo_cuda --kevo-cuda-dir $w --rounds 3 --launch-cover-us 300 2>&1 | grep -v "AUTOTUNE\|^  [a-z_]\|^$"
  echo "harness rc=${PIPESTATUS[0]} at $(el) s"
else
  echo "no time left for the search"
fi
} 2>&1 | tee $OUT/log.txt
tar czf $OUT/r.tgz -C $w kevo.db run.log 2>/dev/null; ls -la $OUT
