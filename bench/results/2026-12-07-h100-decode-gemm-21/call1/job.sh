#!/usr/bin/env bash
# Device job (session 28): kevo's own search of each decode config named
# (MIN minutes each; the configs time from a clean L2), then its best beside
# the peers in one harness (torch_peers.py, read flush, 3 rounds, 300 us cover):
# eager (cuBLAS) and the read floor, and torch.compile for gemm_swiglu; then
# the same harness again in a new process (the repeat, *.repeat.json), so a
# verdict need not wait for another device call.
#   build/g10.sh MIN CONFIG...
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
  for x in harness repeat; do
    timeout 150 python3 bench/peers/torch_peers.py $c --peers $peers --kevo-cuda-dir $w/$n \
      --rounds 3 --flush read --launch-cover-us 300 --json $O/w/$n.$x.json > $O/w/$n.$x.txt 2>&1
    stamp "$n $x rc $?"
  done
  cp $w/$n/$n.best.cu $O/w/ 2>/dev/null
  python3 bench/peers_verdict.py $O/w/$n.harness.json $O/w/$n.repeat.json 2>&1 | tail -4
  tar czf $O/all.tgz -C $O w
done
cp $w/kevo.db $O/w/ 2>/dev/null; tar czf $O/all.tgz -C $O w
