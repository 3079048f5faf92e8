#!/usr/bin/env bash
# Do the 4096^3 kernel's clusters ask the L2 for the same sectors at the same
# time? On an H100 (round 11) kevo's wgmma kernel and cuBLAS's sent the L2
# request coalescer (LRC) the same requests (8.39 M, half of them multicast),
# but the LRC merged 5.7-5.8 M sectors of cuBLAS's identical requests from
# different clusters and 0.71 M of kevo's: cuBLAS read 18% fewer sectors from
# the L2. This profiles points of the wgmma family (knob sets, one per line of
# POINTS) and cuBLAS's kernel with the LRC and L2 counters, and prints them
# side by side. On a GPU host, binaries built here (carry build/bin):
#   bench/gpu_coalesce.sh                 (results in $OUT or build/gpu-coalesce)
#   POINTS=$'NAME KNOB=V ...\n...' TASK=configs/cuda/gemm-4096.json PEER=1
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-coalesce}; mkdir -p "$OUT"
TASK=${TASK:-configs/cuda/gemm-4096.json}
FAMILY=targets/cuda/kernels/gemm/wgmma.cu
BASE="BN=128 WGM=128 NCONS=2 STAGES=4 EPI=2 EPIB=1 PERSIST=1 CLUSTER=2"
POINTS=${POINTS:-"cdim_epir $BASE CDIM=1 EPIR=1 GROUP_M=8
cdim_epir_g1 $BASE CDIM=1 EPIR=1 GROUP_M=1
cdim_epir_g4 $BASE CDIM=1 EPIR=1 GROUP_M=4
cdim_epir_g16 $BASE CDIM=1 EPIR=1 GROUP_M=16
mcluster_epir $BASE CDIM=0 EPIR=1 GROUP_M=8
cdim_nopersist BN=128 WGM=128 NCONS=2 STAGES=4 EPI=2 EPIB=1 PERSIST=0 CLUSTER=2 CDIM=1 GROUP_M=8
tile128x256 BN=256 WGM=64 NCONS=2 STAGES=4 EPI=2 EPIB=2 PERSIST=1 CLUSTER=2 GROUP_M=8"}
[ -f "$TASK" ] || { echo "gpu_coalesce: no task $TASK" >&2; exit 2; }
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-/tmp/kevo-cache} KEVO_HOME=$PWD
w=/tmp/coalesce; rm -rf "$w"; mkdir -p "$w"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
METRICS=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lrc__xbar2lrc_requests_op_read.sum,lrc__request_sectors_op_read_coalescable.sum,lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum,lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lrc__lts2lrc_sectors_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_lookup_miss.sum
ARGS="--clock-control none --profile-from-start off --metrics $METRICS"
{
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
while read -r name knobs; do
  [ -n "$name" ] || continue
  kn=(); for k in $knobs; do kn+=(--knob "$k"); done
  bench/micro/ncu_wrap.sh "$w/wrap-$name" "$NCU" "$w/$name" $ARGS
  KEVO_NCU=$w/wrap-$name KEVO_DB=$w/kevo.db timeout 240 build/bin/kevo eval --task "$TASK" "$FAMILY" \
    "${kn[@]}" > "$w/$name.eval" 2>&1
  rc=$?; echo "$name: eval rc=$rc $(grep -m1 -o '^time .*' "$w/$name.eval" | cut -c1-90)"
  [ $rc = 0 ] || tail -3 "$w/$name.eval"
done <<< "$POINTS"
if [ "${PEER:-1}" = 1 ]; then
  "$NCU" $ARGS -k "regex:nvjet|gemm|xmma|cutlass" -f -o "$w/cublas" python3 bench/peers/torch_peers.py \
    "$TASK" --peers eager --profile-calls 2 --launch-cover-us 300 --min-time-ms 30 > "$w/cublas.log" 2>&1
  echo "cublas: rc=$?"
fi
python3 - "$w" "$METRICS" <<'PY'
import csv, glob, io, os, subprocess, sys
w, metrics = sys.argv[1], sys.argv[2].split(",")
short = {"gpu__time_duration.sum": "us", "sm__cycles_elapsed.avg.per_second": "GHz",
         "lrc__xbar2lrc_requests_op_read.sum": "requests M",
         "lrc__request_sectors_op_read_coalescable.sum": "coalescable M",
         "lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum": "multicast M",
         "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum": "hw merged M",
         "lrc__lts2lrc_sectors_op_read.sum": "L2 read M",
         "lts__t_sectors_srcunit_ltcfabric.sum": "fabric M",
         "lts__t_sectors_lookup_miss.sum": "miss M"}
print("| point | " + " | ".join(short[m] for m in metrics) + " |")
print("|---" * (len(metrics) + 1) + "|")
for rep in sorted(glob.glob(f"{w}/*.ncu-rep"), key=os.path.getmtime):
    name = os.path.basename(rep)[:-8]
    r = subprocess.run(["ncu", "--import", rep, "--page", "raw", "--csv", "--print-units", "base",
                        "--metrics", ",".join(metrics)], capture_output=True, text=True)
    with open(f"{w}/{name}.csv", "w") as f:
        f.write(r.stdout)
    rows = list(csv.reader(io.StringIO(r.stdout)))
    if len(rows) < 3:
        print(f"| {name} | (no report: {r.stderr.strip()[:80]}) |")
        continue
    head, units = rows[0], rows[1]
    for row in rows[2:]:
        cells = []
        for m in metrics:
            try:
                v = float(row[head.index(m)].replace(",", ""))
                u = units[head.index(m)]
            except (ValueError, IndexError):
                cells.append("?")
                continue
            if m.startswith("gpu__time"):  # to microseconds
                scale = {"nsecond": 1e-3, "ns": 1e-3, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
                cells.append(f"{v * scale.get(u, 1):.2f}")
            elif "per_second" in m:  # to GHz
                scale = {"cycle/second": 1e-9, "hz": 1e-9, "khz": 1e-6, "mhz": 1e-3,
                         "cycle/usecond": 1e-3, "cycle/msecond": 1e-6}
                cells.append(f"{v * scale.get(u.lower(), 1):.2f}")
            else:
                cells.append(f"{v / 1e6:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
PY
} 2>&1 | tee "$OUT/log.txt"
tar czf "$OUT/reports.tgz" -C "$w" . 2>/dev/null
