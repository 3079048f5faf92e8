#!/bin/sh
# A stand-in for nvcc in the cuda target's tests on machines without a GPU:
# "compiles" by copying the .cu source to the -o output, and prints the
# resource report of a real ptxas run (tests/targets/cuda_data/ptxas_v.txt)
# so the report's parsing is exercised. A source containing FAKE_COMPILE_ERROR
# fails the way nvcc does.
out=""; src=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
    --version) echo "Cuda compilation tools, fake"; echo "Build fake_nvcc"; exit 0 ;;
    *.cu) src="$1" ;;
  esac
  shift
done
if grep -q FAKE_COMPILE_ERROR "$src"; then
  echo "$src(3): error: identifier \"FAKE_COMPILE_ERROR\" is undefined" >&2
  exit 1
fi
cat "$(dirname "$0")/cuda_data/ptxas_v.txt" >&2
cp "$src" "$out"
