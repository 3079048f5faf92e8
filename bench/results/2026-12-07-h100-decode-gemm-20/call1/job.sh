#!/usr/bin/env bash
# Device job (session 27): kevo's own search of each decode config named
# (MIN minutes each; the configs time from a clean L2), then its best beside
# the peers in one harness (torch_peers.py, read flush, 3 rounds, 300 us cover):
# eager (cuBLAS) and the read floor, and torch.compile for gemm_swiglu.
#   build/g5.sh MIN CONFIG...
set -u
export KEVO_CACHE_DIR=/tmp/kevo-cache KEVO_HOME=$PWD KEVO_DB=/tmp/s/kevo.db PYTHONUNBUFFERED=1
min=$1; shift
O=$OUT; w=/tmp/s; mkdir -p $w $O/w
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$O/w/log.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > $O/w/gpu.txt
stamp "start: $* ($min min each)"
secs=$(python3 -c "print(int($min*60)+60)")
for n in "$@"; do
  c=configs/cuda/decode/$n.json
  mkdir -p $w/$n
  timeout $secs build/bin/kevo run $c --max-minutes $min -o $w/$n/$n.best.cu --json > $O/w/$n.run.json 2> $O/w/$n.run.log
  stamp "$n search rc $?"
  peers=eager,read; case $n in gemm_swiglu-*) peers=eager,compile,read ;; esac
  timeout 150 python3 bench/peers/torch_peers.py $c --peers $peers --kevo-cuda-dir $w/$n \
    --rounds 3 --flush read --launch-cover-us 300 --json $O/w/$n.harness.json > $O/w/$n.harness.txt 2>&1
  stamp "$n harness rc $?"
  cp $w/$n/$n.best.cu $O/w/ 2>/dev/null
  grep -E "round 3/3|ratio|x " $O/w/$n.harness.txt | tail -6
  tar czf $O/all.tgz -C $O w
done
cp $w/kevo.db $O/w/ 2>/dev/null; tar czf $O/all.tgz -C $O w
