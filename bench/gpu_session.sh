#!/usr/bin/env bash
# One GPU lease as one job: calibration, the GPU tests, the peers, then a
# search of each configs/cuda task sharing what time is left, and the table.
# Made for a lease of minutes (the device tool: 10 minutes a command):
#   LIMIT=540 bench/gpu_session.sh            (seconds; results in $OUT or build/gpu-session)
# Everything that matters is copied to $OUT (8 files at most): log, tests, table, and a tarball of the
# store, best kernels, run summaries and peers JSON. Ends before LIMIT s.
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-session}; mkdir -p "$OUT"
export KEVO_CACHE_DIR=/tmp/kevo-cache KEVO_HOME=$PWD KEVO_DB=/tmp/work/kevo.db
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
LIMIT=${LIMIT:-450}
w=/tmp/work; b=$w/bench; mkdir -p $b
t0=$(date +%s); left() { echo $(( LIMIT - ($(date +%s) - t0) )); }
save() { cp $w/gpu-tests.txt $w/log.txt $OUT/ 2>/dev/null; python3 bench/gpu_table.py $b > $OUT/table.md 2>&1; tar czf $OUT/bench.tgz -C $w bench nvdisasm.txt kevo.db 2>/dev/null; }
{
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
build/bin/kevo targets 2>&1 | sed -n 4,8p
build/bin/kevo calibrate --target cuda 2>&1 | tee $b/calibrate.txt
echo "== calibrated at $(( $(date +%s) - t0 )) s"
timeout 240 build/tests/cuda_tests --gtest_filter='OnGpu.*' > $w/gpu-tests.txt 2>&1; echo "rc=$?" >> $w/gpu-tests.txt
grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|Value of|detail|rc=" $w/gpu-tests.txt | head -30
echo "== hostile done at $(( $(date +%s) - t0 )) s"
nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -lineinfo -cubin -o $w/probe.cubin tests/targets/cuda_data/rms_probe.cu && nvdisasm -g -c $w/probe.cubin > $w/nvdisasm.txt 2>&1
PYTHONUNBUFFERED=1 timeout 170 python3 bench/peers/torch_peers.py configs/cuda/*.json --launch-cover-us 300 --json $b/all.peers.json 2>&1 | grep -v "Ignoring this choice\|^  \|AUTOTUNE\|SingleProcess\|^$" | tail -25
echo "== peers done at $(( $(date +%s) - t0 )) s"
save
n=6
for cfg in configs/cuda/*.json; do
  task=$(basename $cfg .json)
  l=$(left); per=$(( (l - 20) / n )); n=$((n - 1))
  [ $per -lt 30 ] && { echo "no time left for $task"; continue; }
  mins=$(python3 -c "print(max(0.25, ($per - 25) / 60))")
  echo "== $task: kevo run --max-minutes $mins (at $(( $(date +%s) - t0 )) s)"
  timeout $per build/bin/kevo run $cfg --max-minutes $mins -o $b/$task.best.cu --json > $b/$task.run.json 2> $b/$task.run.log
  tail -12 $b/$task.run.log
  save
done
python3 bench/gpu_table.py $b
echo "== all done at $(( $(date +%s) - t0 )) s"
} 2>&1 | tee $w/log.txt
save
ls -la $OUT
