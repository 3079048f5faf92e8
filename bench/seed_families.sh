#!/usr/bin/env bash
# Measures each operator's naive seed family against its fast one (default
# knobs) at 1 thread and at all threads, on the tasks in configs/cpu/, in one
# run and one store, then prints the medians side by side.
#   bench/seed_families.sh [BUILD_DIR]        (store: $KEVO_DB, default build/seeds.db)
set -uo pipefail
build=${1:-build}
kevo="$build/bin/kevo"
export KEVO_DB="${KEVO_DB:-$build/seeds.db}"
ncpu=$(nproc)
kernels=targets/cpu/kernels

"$kevo" calibrate > /dev/null || exit 1
for task in configs/cpu/*.json; do
  op=$(python3 -c "import json,sys; print(json.load(open('$task'))['operator'])")
  for file in "$kernels/$op"/*.c; do
    for threads in 1 "$ncpu"; do
      knob=()
      if grep -q '@kevo knob THREADS' "$file"; then
        knob=(--knob "THREADS=$threads")
      elif [ "$threads" != 1 ]; then
        continue  # no THREADS knob: one point only
      fi
      echo "$(basename "$task" .json)  $(basename "$file")  ${knob[*]}" >&2
      "$kevo" eval --task "$task" "$file" "${knob[@]}" > /dev/null
    done
  done
done

"$kevo" query "
  SELECT r.task_name AS task, c.family,
         COALESCE(json_extract(c.knobs_json, '$.THREADS'), 1) AS threads,
         e.status, printf('%.3f', e.median_s * 1e3) AS median_ms,
         printf('%.3f', e.p20_s * 1e3) AS p20_ms, printf('%.3f', e.p80_s * 1e3) AS p80_ms,
         printf('%.0f%%', e.roof_fraction * 100) AS of_roof
  FROM evaluations e JOIN candidates c ON c.id = e.candidate_id JOIN runs r ON r.id = c.run_id
  WHERE r.kind = 'eval' AND r.id IN (SELECT MAX(r2.id) FROM runs r2 JOIN candidates c2
                                      ON c2.run_id = r2.id GROUP BY r2.task_name, c2.family,
                                      c2.knobs_json)
  ORDER BY task, threads, e.median_s DESC"
