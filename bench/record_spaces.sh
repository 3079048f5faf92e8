#!/usr/bin/env bash
# Records the search spaces that `kevo bench strategies` replays: an
# exhaustive grid run over each task in bench/spaces/ (small, restricted
# knob spaces on small shapes, a few minutes each on 2 cores).
#   bench/record_spaces.sh [BUILD_DIR]     (store: $KEVO_DB, default BUILD_DIR/spaces.db)
set -euo pipefail
build=${1:-build}
kevo="$build/bin/kevo"
export KEVO_DB="${KEVO_DB:-$build/spaces.db}"
for space in bench/spaces/*.json; do
  echo "recording $space (grid, every point)" >&2
  "$kevo" run "$space" --strategy grid > /dev/null
done
"$kevo" query "SELECT id AS run, task_name, json_extract(summary_json, '$.evaluations') AS points,
                      json_extract(summary_json, '$.stop_reason') AS stopped
               FROM runs WHERE kind = 'search' ORDER BY id"
