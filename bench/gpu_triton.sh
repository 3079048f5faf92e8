#!/usr/bin/env bash
# The triton target on a GPU machine, as one job: kevo targets, the roof,
# each seed family's default point on its configs/triton task (kevo eval,
# ncu profile on the first), then a search of each task for MINUTES and the
# one-harness table against PyTorch eager and torch.compile
# (bench/peers/torch_peers.py --kevo-dir, kevo's best Triton kernel timed
# in the same process as the peers).
#   bench/gpu_triton.sh [MINUTES] [CONFIG...]    (default 2, configs/triton/*.json)
#   env: OUT (default build/gpu-triton), SKIP_SEEDS=1, SKIP_SEARCH=1, PEERS=0 (no table),
#        BEST_DIR (best kernels TASK.best.py of an earlier call to time as well),
#        KEVO_BIN (default build/bin)
# Everything that matters is copied to $OUT: log.txt, table.md, triton.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-2}; shift $(( $# > 0 ? 1 : 0 ))
configs=("$@"); [ ${#configs[@]} -eq 0 ] && configs=(configs/triton/*.json)
OUT=${OUT:-build/gpu-triton}; mkdir -p "$OUT"
bin=${KEVO_BIN:-build/bin}
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD KEVO_DB=${KEVO_DB:-/tmp/triton-work/kevo.db}
export KEVO_PYTHON=${KEVO_PYTHON:-$(command -v python3)}
w=/tmp/triton-work; b=$w/bench; mkdir -p "$b"
t0=$(date +%s); at() { echo "$(( $(date +%s) - t0 )) s"; }
save() { tar czf "$OUT/triton.tgz" -C $w bench kevo.db 2>/dev/null; }
{
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv,noheader
"$KEVO_PYTHON" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
"$bin/kevo" targets 2>&1 | grep -A5 "^triton"
"$bin/kevo" calibrate --target triton 2>&1 | tail -8
echo "== calibrated (at $(at))"
if [ "${SKIP_SEEDS:-0}" != 1 ]; then
  for cfg in "${configs[@]}"; do
    op=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['operator'])" "$cfg")
    for fam in targets/triton/kernels/$op/*.py; do
      echo "== seed $(basename "$cfg" .json) $(basename "$fam") (at $(at))"
      timeout 300 "$bin/kevo" eval --task "$cfg" "$fam" 2>&1 | grep -E "verdict|checks|time |roofline|stderr|profile|ncu" | cut -c1-400
    done
  done
fi
save
if [ "${SKIP_SEARCH:-0}" != 1 ]; then
  for cfg in "${configs[@]}"; do
    task=$(basename "$cfg" .json)
    echo "== kevo run $task --max-minutes $minutes (at $(at))"
    timeout $(( (${minutes%.*} + 1) * 60 + 120 )) "$bin/kevo" run "$cfg" --max-minutes "$minutes" -o "$b/$task.best.py" \
      --json > "$b/$task.run.json" 2> "$b/$task.run.log"
    echo "rc=$?"; tail -6 "$b/$task.run.log"
    save
  done
fi
[ -n "${BEST_DIR:-}" ] && cp "$BEST_DIR"/*.best.py "$b"/ 2>/dev/null
if [ "${PEERS:-1}" = 1 ]; then
  echo "== peers and kevo's best in one harness (at $(at))"
  PYTHONUNBUFFERED=1 timeout 400 python3 bench/peers/torch_peers.py "${configs[@]}" --launch-cover-us 300 \
    --kevo-dir "$b" --json "$b/all.peers.json" 2>&1 | grep -v "Ignoring this choice\|^  \|AUTOTUNE\|SingleProcess\|^$" | tail -30
  python3 bench/gpu_table.py "$b" > "$OUT/table.md" 2>&1; cat "$OUT/table.md"
fi
save
echo "== done (at $(at))"
} 2>&1 | tee "$OUT/log.txt"
