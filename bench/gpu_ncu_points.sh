#!/usr/bin/env bash
# Memory-side counters of knob points (or diagnostic -D builds) of the gemm
# wgmma family at 4096^3, read by ncu from bench/micro/harness_points.py's
# --profile-calls, without the torch.compile peer (round 13's ncu pass over
# the harness with it crashed python). Each point's CALLS calls, caches
# flushed by ncu before each, clocks not locked. The counters say where a
# difference the harness times comes from: DRAM bytes read and written, L2
# hit rate and sectors, the SM clock. A diagnostic build fails the harness's
# check (its output is wrong by design), so ncu's status is 1 then; the
# counters still stand.
#   bench/gpu_ncu_points.sh LABEL=K=V,K=V ...   (each point on top of BASE; LABEL= alone is BASE)
#   BASE=... (as bench/gpu_gemm_points.sh), CALLS=2, CFG=configs/cuda/gemm-4096.json
#   METRICS=a,b,...  (ncu metric names; the default below)
# Writes $OUT/ncu.csv (ncu's) and $OUT/ncu.txt (each metric's median over a point's calls).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-ncu}; mkdir -p "$OUT"
SRC=targets/cuda/kernels/gemm/wgmma.cu
CFG=${CFG:-configs/cuda/gemm-4096.json}
CALLS=${CALLS:-2}
BASE=${BASE:-BN=128,WGM=128,NCONS=2,STAGES=4,EPI=2,EPIB=1,EPIR=1,PERSIST=1,CLUSTER=2,CDIM=1,GROUP_M=8,DYN=1}
METRICS=${METRICS:-gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,sm__cycles_elapsed.avg.per_second}
[ $# -ge 1 ] || { echo "usage: $0 LABEL=K=V,... ..." >&2; exit 2; }
pts=() labels=()
for p in "$@"; do
  label=${p%%=*} knobs=${p#*=}
  [ "$label" = "$p" ] && knobs=""
  pts+=(--point "$label=$SRC:$BASE${knobs:+,$knobs}")
  labels+=("$label")
done
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$NCU" --csv --profile-from-start off --clock-control none --metrics "$METRICS" -k regex:gemm_wgmma \
  python3 bench/micro/harness_points.py "$CFG" --no-compile --rounds 1 --min-time-ms 5 \
  --profile-calls "$CALLS" "${pts[@]}" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu rc $?"
python3 - "$OUT/ncu.csv" "$CALLS" "${labels[@]}" <<'PY' | tee "$OUT/ncu.txt"
import csv, statistics, sys
path, calls, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
lines = open(path).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if start is None:
    sys.exit("no ncu rows in " + path)
rows = list(csv.DictReader(lines[start:]))
by = {}
for r in rows:
    i = int(r["ID"])
    label = labels[i // calls] if i // calls < len(labels) else f"launch{i}"
    v = float(r["Metric Value"].replace(",", "")) if r["Metric Value"] else float("nan")
    by.setdefault(r["Metric Name"], {}).setdefault(label, []).append(v)
metrics = sorted(by)
print("point".ljust(12) + "".join(m[:34].rjust(36) for m in metrics))
for label in labels:
    print(label.ljust(12) + "".join(f"{statistics.median(by[m].get(label, [float('nan')])):36.4g}" for m in metrics))
PY
