set -u
export KEVO_CACHE_DIR=/tmp/kevo-cache KEVO_HOME=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv,noheader
t0=$(date +%s)
timeout 300 build/tests/cuda_tests --gtest_filter='OnGpu.PersistentTilesAreRight:OnGpu.SplitKIsRight' > $OUT/tests.txt 2>&1
echo "tests rc=$? at $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED) |Failure|Expected|Which is|Value of" $OUT/tests.txt | head -30
W=targets/cuda/kernels/gemm/wgmma.cu; O=DIR/wgmma_before.cu
W128="BN=128,WGM=128,NCONS=2,STAGES=4,EPI=2,EPIB=1,PERSIST=1,CLUSTER=2,GROUP_M=8"
S4="BN=256,WGM=64,NCONS=2,STAGES=4,EPI=2,EPIB=2,PERSIST=1,CLUSTER=2,GROUP_M=8,KEEP=1"
timeout 200 python3 bench/micro/harness_points.py configs/cuda/gemm-4096.json --flush fill --rounds 3 --json $OUT/points.json \
  --point w128_before=$O:$W128 --point w128_exit=$W:$W128 --point s4_before=$O:$S4 --point s4_exit=$W:$S4 \
  2>&1 | grep -v "AUTOTUNE\|SingleProcess\|Ignoring this choice\|^  [a-z_]\|^E1205\|select_algorithm" | tail -12
echo "points at $(( $(date +%s) - t0 )) s"
mkdir -p $OUT/diag
OUT=$OUT/diag PEER=eager KERNELS='nvjet|gemm|xmma|cutlass|sm90' BEST_DIR=diagbest timeout 150 bash bench/gpu_diag.sh gemm-4096 2>&1 | grep -E "^roofline|^==" 
echo "diag at $(( $(date +%s) - t0 )) s"
