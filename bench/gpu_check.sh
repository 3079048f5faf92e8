#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, after a build: the tests that need a GPU
# (the hostile set, every seed family on ragged shapes), the roof
# calibration, and every seed family's default point at each configs/cuda
# task's full shape, profiled with ncu. Prints one line per family.
#   bench/gpu_check.sh [BUILD_DIR] [OUT_DIR]       (default build, BUILD_DIR/gpu-check)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-$build/gpu-check}
mkdir -p "$out"
kevo="$build/bin/kevo"
export KEVO_DB="${KEVO_DB:-$out/gpu-check.db}"
# One compile cache for the tests and the evaluations below.
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$build/tests/cache}" KEVO_HOME="$PWD"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
"$kevo" targets
"$kevo" calibrate --target cuda | tee "$out/calibrate.txt"
"$build/tests/cuda_tests" --gtest_filter='OnGpu.*' 2>&1 | tee "$out/gpu-tests.txt" | grep -E "^\[ +(OK|FAILED|SKIPPED) |Failure|Expected|Which is|family|detail|status" | head -60
for cfg in configs/cuda/*.json; do
  task=$(basename "$cfg" .json)
  op=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["operator"])' "$cfg")
  for fam in targets/cuda/kernels/"$op"/*.cu; do
    name=$(basename "$fam" .cu)
    "$kevo" eval --task "$cfg" "$fam" --json > "$out/$task.$name.json" 2> "$out/$task.$name.err"
    python3 - "$out/$task.$name.json" "$task" "$name" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))["result"]
except Exception as e:
    print(f"{sys.argv[2]:<28} {sys.argv[3]:<8} no result ({e})"); sys.exit()
t = j.get("timing") or {}
d = j.get("diagnosis") or {}
print(f"{sys.argv[2]:<28} {sys.argv[3]:<8} {j['status']:<9} "
      f"{t.get('median_s', 0) * 1e6:9.1f} us  {100 * d.get('roof_fraction', 0):5.1f}% of roof  "
      f"{d.get('bottleneck', '')}  {j.get('detail', '')[:160]}")
print("    " + d.get("why", "")[:400])
PY
  done
done
