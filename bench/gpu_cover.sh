#!/usr/bin/env bash
# Does kevo's runner time a compute-bound kernel the way the peers' harness
# does? On a GPU host, the same kernel through `kevo eval` with the launch
# cover (the GPU sleep queued before each sample's start event) left to the
# runner (auto: the launch hidden and the GPU rested, since round 11), fixed at 300 us (what
# torch_peers.py and harness_points.py queue) and at 1000 us, ROUNDS rounds,
# the order of the covers reversed every other round; then the same kernel
# beside cuBLAS in torch_peers.py (3 rounds). On 2026-12-06 (H100, round 10)
# kevo's searches timed 4096^3 kernels 3-7% slower than the harness and with
# p20-p80 spans up to 9% (the harness's 0.6%), at a median SM clock of
# 1740-1755 MHz against the harness's 1980: this says whether the cover is why.
# It was most of it (round 11: bench/results/2026-12-06-h100-decode-gemm-11.md),
# and the automatic cover now rests the GPU after a long call; run it again
# after a change to the runner's timing.
#   BEST=DIR/gemm-4096.best.cu bench/gpu_cover.sh   (results in $OUT or build/gpu-cover)
#   TASK=configs/cuda/gemm-4096.json ROUNDS=3 COVERS="auto 300 1000" (the defaults)
# Binaries built on the CPU machine: carry build/bin.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-cover}; mkdir -p "$OUT"
BEST=${BEST:?BEST: a .best.cu of the task}
TASK=${TASK:-configs/cuda/gemm-4096.json}
ROUNDS=${ROUNDS:-3}
COVERS=${COVERS:-auto 300 1000}
[ -f "$BEST" ] || { echo "gpu_cover: no file $BEST" >&2; exit 2; }
[ -f "$TASK" ] || { echo "gpu_cover: no task $TASK" >&2; exit 2; }
w=/tmp/gpu-cover; rm -rf "$w"; mkdir -p "$w"
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD KEVO_DB=$w/kevo.db PYTHONUNBUFFERED=1
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
# The roof first, so that no round's first evaluation follows the calibration's load.
timeout 200 build/bin/kevo calibrate --target "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("target", "cuda"))' "$TASK")" \
  > "$w/calibrate.log" 2>&1 || echo "calibrate rc=$? (the first evaluation calibrates instead)"
for r in $(seq 1 "$ROUNDS"); do
  order=$COVERS; [ $((r % 2)) = 0 ] && order=$(echo $COVERS | tr ' ' '\n' | tac | tr '\n' ' ')
  for c in $order; do
    KEVO_CUDA_COVER_US=$c timeout 300 build/bin/kevo eval --task "$TASK" "$BEST" --json \
      > "$w/eval-$c-$r.json" 2> "$w/eval-$c-$r.log"
    echo "round $r cover $c: rc=$? $(grep -o 'launch cover [0-9.]* us' "$w/eval-$c-$r.log" | head -1)"
  done
done
python3 - "$w" "$ROUNDS" $COVERS <<'PY'
import json, statistics, sys
w, rounds, covers = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def find(j, key):
    """The first value of key anywhere in j (depth first)."""
    if isinstance(j, dict):
        if key in j:
            return j[key]
        j = list(j.values())
    if isinstance(j, list):
        for x in j:
            v = find(x, key)
            if v is not None:
                return v
    return None
def mhz(j):
    """The SM clock the runner read (machine.sm_mhz), if the result has it."""
    found = []
    def walk(x):
        if isinstance(x, dict):
            if x.get("metric") == "machine.sm_mhz":
                found.append(x.get("value"))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(j)
    return found[0] if found else None
print("cover    round  median us   p20 us   p80 us  p80/p20   SM MHz")
meds = {c: [] for c in covers}
for c in covers:
    for r in range(1, rounds + 1):
        try:
            j = json.load(open(f"{w}/eval-{c}-{r}.json"))
        except (OSError, ValueError):
            print(f"{c:>6} {r:>6}  (no result)")
            continue
        m, p20, p80 = (find(j, k) for k in ("median_s", "p20_s", "p80_s"))
        if not m:
            print(f"{c:>6} {r:>6}  (no timing: {find(j, 'status')})")
            continue
        meds[c].append(m)
        print(f"{c:>6} {r:>6} {m*1e6:10.2f} {p20*1e6:8.2f} {p80*1e6:8.2f} {p80/p20:8.3f}   {mhz(j)}")
print("median of round medians:")
for c in covers:
    if meds[c]:
        print(f"  cover {c:>5}: {statistics.median(meds[c])*1e6:.2f} us  rounds "
              + " ".join(f"{x*1e6:.2f}" for x in meds[c]))
PY
bash bench/micro/harness_beside.sh "$BEST" "$TASK" "$w" "round\|median"
} 2>&1 | tee "$OUT/log.txt"
tar czf "$OUT/evals.tgz" -C "$w" . 2>/dev/null
