#!/usr/bin/env bash
# What does the end event's stream do to a sample? kevo's runner records each
# sample's end event on its own stream (as the peers' harness does); until
# round 12 it recorded it on the legacy default stream, which on an H100
# timed a 4096^3 kernel about 2% slower than the harness with twice the
# spread (round 11). This times one kernel through `kevo eval` with kevo's
# runner and with the diagnostic runner that ends on the legacy stream (never
# kevo's: built on request,
# `cmake --build build --target kevo-cuda-runner-end-on-legacy`), ROUNDS
# rounds in alternating order, then beside cuBLAS in torch_peers.py.
#   BEST=FILE.best.cu bench/gpu_end_event.sh   (results in $OUT or build/gpu-end-event)
#   TASK=configs/cuda/gemm-4096.json ROUNDS=3 (the defaults)
# Binaries built on the CPU machine: carry build/bin and build/diag-bin.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-end-event}; mkdir -p "$OUT"
BEST=${BEST:?BEST: a .best.cu of the task}
TASK=${TASK:-configs/cuda/gemm-4096.json}
ROUNDS=${ROUNDS:-3}
DIAG=${DIAG:-build/diag-bin/kevo-cuda-runner-end-on-legacy}
[ -f "$BEST" ] || { echo "gpu_end_event: no file $BEST" >&2; exit 2; }
[ -x "$DIAG" ] || { echo "gpu_end_event: no diagnostic runner $DIAG (see the header)" >&2; exit 2; }
w=/tmp/gpu-end-event; rm -rf "$w"; mkdir -p "$w"
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD KEVO_DB=$w/kevo.db PYTHONUNBUFFERED=1
diag=$(cd "$(dirname "$DIAG")" && pwd)/$(basename "$DIAG")
{
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 200 build/bin/kevo calibrate --target cuda > "$w/calibrate.log" 2>&1 || echo "calibrate rc=$?"
for r in $(seq 1 "$ROUNDS"); do
  order="legacy stream"; [ $((r % 2)) = 0 ] && order="stream legacy"
  for e in $order; do
    if [ "$e" = legacy ]; then export KEVO_CUDA_RUNNER=$diag; else unset KEVO_CUDA_RUNNER; fi
    timeout 300 build/bin/kevo eval --task "$TASK" "$BEST" --json > "$w/eval-$e-$r.json" 2> "$w/eval-$e-$r.log"
    echo "round $r end on $e: rc=$?"
  done
done
unset KEVO_CUDA_RUNNER
python3 - "$w" "$ROUNDS" <<'PY'
import json, statistics, sys
w, rounds = sys.argv[1], int(sys.argv[2])
print("end on   round  median us   p20 us   p80 us  p80/p20  cover us")
meds = {"legacy": [], "stream": []}
for e in meds:
    for r in range(1, rounds + 1):
        try:
            res = json.load(open(f"{w}/eval-{e}-{r}.json"))["result"]
            t = res["timing"]
        except (OSError, ValueError, KeyError, TypeError):
            print(f"{e:>7} {r:>6}  (no timing)")
            continue
        cover = {m["metric"]: m["value"] for m in res.get("profile", [])}.get("launch.cover_us")
        meds[e].append(t["median_s"])
        print(f"{e:>7} {r:>6} {t['median_s']*1e6:10.2f} {t['p20_s']*1e6:8.2f} {t['p80_s']*1e6:8.2f} "
              f"{t['p80_s']/t['p20_s']:8.3f}  {cover}")
for e, m in meds.items():
    if m:
        print(f"end on {e}: median of round medians {statistics.median(m)*1e6:.2f} us  rounds "
              + " ".join(f"{x*1e6:.2f}" for x in m))
PY
bash bench/micro/harness_beside.sh "$BEST" "$TASK" "$w"
} 2>&1 | tee "$OUT/log.txt"
tar czf "$OUT/evals.tgz" -C "$w" . 2>/dev/null
