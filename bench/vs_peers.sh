#!/usr/bin/env bash
# The performance benchmark: for softmax [4096,4096], layernorm [4096,4096]
# and sgemm 1024^3 at 1 thread and at all threads, kevo searches (kevo run,
# THREADS pinned, MINUTES each), then kevo's best kernel and the peer
# (oneDNN, OpenBLAS; bench/peers) are timed alternately, ROUNDS times, in one
# run, and the ratio peer / kevo is printed with each side's median.
#   bench/vs_peers.sh [MINUTES] [ROUNDS] [BUILD_DIR]     (default 15 3 build)
# Store: $KEVO_DB (default BUILD_DIR/vs-peers.db); best kernels and the raw
# figures go to BUILD_DIR/vs-peers/.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-15}
rounds=${2:-3}
build=${3:-build}
kevo="$build/bin/kevo"
out="$build/vs-peers"
mkdir -p "$out"
export KEVO_DB="${KEVO_DB:-$build/vs-peers.db}"
ncpu=$(nproc)

bench/peers/run.sh > "$out/peers-check.txt"  # builds kevo-peers and verifies the peers
peers=build-peers/kevo-peers

# task config | peer op | peer shape | target ratio (peer time / kevo time)
cases=(
  "softmax-4096x4096|softmax|4096x4096|1.3"
  "layernorm-4096x4096|layernorm|4096x4096|1.5"
  "gemm-1024|sgemm|1024|0.8"
)
median_of() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

echo "task|threads|kevo_ms|peer|peer_ms|ratio|target|met" > "$out/results.psv"
for c in "${cases[@]}"; do
  IFS='|' read -r task op shape target <<< "$c"
  for threads in 1 "$ncpu"; do
    best="$out/$task-t$threads.c"
    echo "== kevo run configs/cpu/$task.json --knob THREADS=$threads --max-minutes $minutes" >&2
    "$kevo" run "configs/cpu/$task.json" --knob "THREADS=$threads" --max-minutes "$minutes" \
      -o "$best" --json > "$out/$task-t$threads.json"
    kevo_ms=() peer_ms=() peer_name=""
    for ((r = 1; r <= rounds; r++)); do
      k=$("$kevo" eval --task "configs/cpu/$task.json" "$best" --json |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["timing"]["median_s"]*1e3)')
      kevo_ms+=("$k")
      # OpenBLAS: the faster of its own core choice and Cooperlake (it misdetects this CPU).
      cores=()
      [ "$op" = sgemm ] && cores=(--openblas-core detected,Cooperlake)
      p=$("$peers" --op "$op" --shape "$shape" --threads "$threads" "${cores[@]}" |
          python3 -c 'import json,re,sys
rows=[json.loads(l) for l in sys.stdin if l.startswith("{")]
b=min(rows, key=lambda r: r["median_ms"])
core=re.search(r"core (\w+)", b["note"])
print(b["median_ms"], b["peer"] + ("/" + core.group(1) if core else ""))')
      peer_ms+=("${p%% *}")
      peer_name="${p#* }"
    done
    km=$(median_of "${kevo_ms[@]}")
    pm=$(median_of "${peer_ms[@]}")
    ratio=$(python3 -c "print(f'{$pm / $km:.2f}')")
    met=$(python3 -c "print('yes' if $pm / $km >= $target else 'no')")
    echo "$task|$threads|$km|$peer_name|$pm|$ratio|$target|$met" | tee -a "$out/results.psv" >&2
  done
done
echo
column -t -s '|' "$out/results.psv"
