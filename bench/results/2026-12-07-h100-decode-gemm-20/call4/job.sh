#!/usr/bin/env bash
# Device job (session 27, call 4, write flush): the searched bests of calls 1-2 timed again
# beside the peers (a repeat on the same warm machine), then searches of
# the configs named.   build/g6.sh MIN CONFIG...
set -u
export KEVO_CACHE_DIR=/tmp/kevo-cache KEVO_HOME=$PWD KEVO_DB=/tmp/s3/kevo.db PYTHONUNBUFFERED=1
min=$1; shift
O=$OUT; mkdir -p $O/w
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$O/w/log.txt"; }
for f in build/bests/*.best.cu; do
  n=$(basename $f .best.cu); c=configs/cuda/decode/$n.json
  peers=eager,read; case $n in gemm_swiglu-*) peers=eager,compile,read ;; esac
  timeout 120 python3 bench/peers/torch_peers.py $c --peers $peers --kevo-cuda-dir build/bests \
    --rounds 3 --flush write --launch-cover-us 300 --json $O/w/$n.write.json > $O/w/$n.write.txt 2>&1
  stamp "$n repeat rc $?"
  grep -E "round 3/3" $O/w/$n.write.txt
  tar czf $O/all.tgz -C $O w
done
