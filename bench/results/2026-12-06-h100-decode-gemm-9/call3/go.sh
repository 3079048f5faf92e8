# call 3: STM correctness, epilogue points with STM, per-instruction stalls, then a search in what is left of T (330) s
export KEVO_CACHE_DIR=/tmp/kevo-cache KEVO_HOME=$PWD KEVO_DB=/tmp/s/kevo.db; mkdir -p /tmp/s; t0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 build/tests/cuda_tests --gtest_filter='OnGpu.PersistentTilesAreRight' > $OUT/tests.txt 2>&1; echo "persistent rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "^\[ +(OK|FAILED|PASSED) |Failure|Expected|Which is|knob" $OUT/tests.txt | head -20
LIMIT=140 OUT=$OUT/epi bash bench/gpu_gemm_epilogue.sh 2>&1 | grep -v "^compile:\|check FAIL\|Autotune\|best_kernel\|strides\|dtypes\|TypedStorage\|^NVIDIA" | tail -14
PROFILE=1 LIMIT=80 OUT=$OUT/prof bash bench/gpu_gemm_epilogue.sh 2>&1 | tail -3
s=$(( ${T:-330} - ($(date +%s) - t0) - 30 )); echo "search budget $s s"
if [ $s -ge 90 ]; then
  timeout $s build/bin/kevo run configs/cuda/gemm-4096.json --max-minutes $(python3 -c "print(round(($s-15)/60,2))") -o /tmp/s/gemm-4096.best.cu --json > $OUT/run.json 2> $OUT/run.log; echo "search rc=$?"; tail -3 $OUT/run.log; cp /tmp/s/gemm-4096.best.cu $OUT/
  timeout 28 python3 bench/peers/torch_peers.py configs/cuda/gemm-4096.json --peers eager,kevo_cuda --kevo-cuda-dir /tmp/s --rounds 3 --launch-cover-us 300 2>&1 | grep "gemm-4096 "
fi
echo "done at $(( $(date +%s) - t0 )) s"
