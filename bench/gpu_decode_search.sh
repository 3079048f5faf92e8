#!/usr/bin/env bash
# kevo's own search at decode shapes, judged against the peers, in one device
# call. For each CONFIG (a config under configs/cuda/decode/ without .json):
#  1. `kevo run CONFIG --max-minutes MIN -o BEST --json` (the decode configs
#     time from a clean L2, `timing.l2 "clean"`);
#  2. its best beside cuBLAS (eager torch.matmul) and the read floor (the
#     fused MLP also beside torch.compile) in one harness
#     (bench/peers/torch_peers.py: read flush, ROUNDS rounds, 300 us cover),
#     and that harness again in a new process (the repeat);
#  3. bench/peers_verdict.py over both runs: a verdict only where every
#     pairing of rounds of each run lies beyond 1%.
# The repeat follows the first run at once on the same machine: it catches a
# run that went wrong, not a drift that lasts minutes (a second device call
# with bench/gpu_decode_points.sh does).
#   bench/gpu_decode_search.sh MIN CONFIG...   e.g. 2 gemm-16x4096x4096 gemm_swiglu-16x4096x14336
# MIN: minutes of search a config (1.5 or more: a shorter search mostly times
# its start points). LIMIT=570: seconds the whole call may take; a config
# that would not fit in what is left (MIN plus 150 s for the search's end
# and the two harness runs, 15-30 s each on an H100 in round 21) is skipped,
# and said so, rather than cut off mid-search. That is an estimate: a search
# may run up to 60 s past MIN and a harness run up to 150 s before their
# timeouts, so a config that goes badly can still carry the call past LIMIT.
# ROUNDS=3, OUT=build/gpu-decode-search, KEVO_DB (default $OUT/kevo.db: one
# store for the call; a later search of the same task on the same machine in
# that store answers the points it already measured from it).
# Writes, per config, $OUT/CONFIG.run.json and .run.log (the search),
# CONFIG.best.cu, CONFIG.harness.{txt,json} and CONFIG.repeat.{txt,json};
# $OUT/verdicts.txt; and $OUT/points.txt, each best as a point
# (CONFIG=FAMILY:K=V,...): `bench/gpu_decode_points.sh $(cat points.txt)`
# times them again in another device call, the repeat this call cannot give
# (CONFIG=DIR/CONFIG.best.cu, this call's file brought back, times the very
# file these runs timed, so the verdicts of both calls pool).
# Binaries built elsewhere: carry build/bin.
# Exit status 0 when every config was searched and timed twice, 1 when one
# was skipped or failed (the log says which), 2 for bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: bench/gpu_decode_search.sh MIN CONFIG...  (MIN >= 1.5 minutes; CONFIG under configs/cuda/decode/)" >&2; exit 2; }
[ $# -ge 2 ] || usage
MIN=$1; shift
# the search's seconds, from MIN checked once (a number, 1.5 or more)
search_s=$(python3 -c "import sys; m = float(sys.argv[1]); assert m >= 1.5; print(int(m * 60))" "$MIN" 2>/dev/null) ||
  { echo "gpu_decode_search: MIN '$MIN' is not a number of minutes >= 1.5" >&2; exit 2; }
for n in "$@"; do
  [ -f "configs/cuda/decode/$n.json" ] || { echo "gpu_decode_search: no config configs/cuda/decode/$n.json" >&2; exit 2; }
done
OUT=${OUT:-build/gpu-decode-search}; ROUNDS=${ROUNDS:-3}; LIMIT=${LIMIT:-570}
KEVO=${KEVO:-build/bin/kevo}; HARNESS=${HARNESS:-bench/peers/torch_peers.py}   # (tests stand in for them)
mkdir -p "$OUT"; : > "$OUT/points.txt"
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD KEVO_DB=${KEVO_DB:-$OUT/kevo.db} PYTHONUNBUFFERED=1
need=$(( search_s + 150 ))   # the search, its end (confirmation, export), two harness runs
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/gpu.txt" 2>&1
stamp "start: $* ($MIN min each, LIMIT $LIMIT s)"
jsons=(); short=0
for n in "$@"; do
  left=$(( LIMIT - ($(date +%s) - t0) ))
  if [ "$left" -lt "$need" ]; then
    stamp "$n skipped: $left s left of LIMIT, $need wanted"
    short=1; continue
  fi
  c=configs/cuda/decode/$n.json
  timeout $(( search_s + 60 )) "$KEVO" run "$c" --max-minutes "$MIN" -o "$OUT/$n.best.cu" --json \
    > "$OUT/$n.run.json" 2> "$OUT/$n.run.log"
  stamp "$n search rc $?"
  [ -s "$OUT/$n.best.cu" ] || { stamp "$n: no best kernel written (see $OUT/$n.run.log)"; short=1; continue; }
  # the best as a point of bench/gpu_decode_points.sh, for a repeat in another call
  python3 - "$OUT/$n.run.json" "$n" "$c" >> "$OUT/points.txt" 2>/dev/null <<'PY' || stamp "$n: its best is not in $OUT/points.txt (see $OUT/$n.run.json)"
import json, os, sys
best = json.load(open(sys.argv[1]))["best"]
family = "%s/%s.cu" % (json.load(open(sys.argv[3]))["operator"], best["family"])
assert os.path.isfile(os.path.join("targets/cuda/kernels", family)), family
print("%s=%s:%s" % (sys.argv[2], family, ",".join("%s=%s" % kv for kv in sorted(best["knobs"].items()))))
PY
  peers=eager,read; case $n in gemm_swiglu-*) peers=eager,compile,read ;; esac
  for x in harness repeat; do
    timeout 150 python3 "$HARNESS" "$c" --peers "$peers" --kevo-cuda-dir "$OUT" \
      --rounds "$ROUNDS" --flush read --launch-cover-us 300 --json "$OUT/$n.$x.json" > "$OUT/$n.$x.txt" 2>&1
    stamp "$n $x rc $?"
    if [ -s "$OUT/$n.$x.json" ]; then jsons+=("$OUT/$n.$x.json"); else short=1; fi
  done
done
if [ ${#jsons[@]} -gt 0 ]; then
  echo "== verdicts (kevo's best against each peer, both runs; $OUT/verdicts.txt)"
  python3 bench/peers_verdict.py "${jsons[@]}" | tee "$OUT/verdicts.txt"
else
  echo "no harness run finished: no verdicts" | tee "$OUT/verdicts.txt"
fi
exit $short

