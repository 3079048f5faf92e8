#!/usr/bin/env bash
# Records the search spaces that `kevo bench strategies` replays: an
# exhaustive grid run over each task in bench/spaces/ (small, restricted
# knob spaces on small shapes, a few minutes each on 2 cores).
#   bench/record_spaces.sh [BUILD_DIR [SPACE.json...]]   (store: $KEVO_DB, default BUILD_DIR/spaces.db)
# Without SPACE files, the CPU spaces bench/spaces/*.json; the GPU ones are in
# bench/spaces/h200/ (record them on the GPU host: bench/record_spaces.sh BUILD bench/spaces/h200/*.json).
set -euo pipefail
build=${1:-build}
shift || true
spaces=("$@")
[ ${#spaces[@]} -gt 0 ] || spaces=(bench/spaces/*.json)
kevo="$build/bin/kevo"
export KEVO_DB="${KEVO_DB:-$build/spaces.db}"
for space in "${spaces[@]}"; do
  echo "recording $space (grid, every point)" >&2
  "$kevo" run "$space" --strategy grid > /dev/null
done
"$kevo" query "SELECT id AS run, task_name, json_extract(summary_json, '$.evaluations') AS points,
                      json_extract(summary_json, '$.stop_reason') AS stopped
               FROM runs WHERE kind = 'search' ORDER BY id"
