#!/usr/bin/env bash
# make demo: kevo evaluates the naive and the fast seed family of a softmax on
# this CPU, then reads back what it stored. The store is $KEVO_DB (default
# build/demo.db), so `kevo query` can look at it afterwards.
set -euo pipefail
build=${1:-build}
kevo="$build/bin/kevo"
export KEVO_DB="${KEVO_DB:-$build/demo.db}"
kernels=targets/cpu/kernels/scaled_softmax
status=0

echo "== kevo demo: softmax(x * 0.125) over [2048, 2048] f32 on this CPU =="
echo "   (the first run measures this machine's roof once, about 20 s)"
for family in naive online; do
  echo
  echo "-- kevo eval --task configs/demo.json $kernels/$family.c"
  "$kevo" eval --task configs/demo.json "$kernels/$family.c" || status=$?
done

echo
echo "-- kevo query: the two evaluations side by side"
"$kevo" query "
  WITH last AS (SELECT c.family, e.status, e.median_s, e.roof_fraction, r.id AS run
                FROM evaluations e JOIN candidates c ON c.id = e.candidate_id
                JOIN runs r ON r.id = c.run_id
                WHERE r.id > (SELECT MAX(id) FROM runs) - 2)
  SELECT family, status, printf('%.3f', median_s * 1e3) AS median_ms,
         printf('%.0f%%', roof_fraction * 100) AS of_roof,
         printf('%.1fx', (SELECT median_s FROM last WHERE family = 'naive') / median_s)
           AS speedup_vs_naive
  FROM last ORDER BY run"
echo
echo "store: $KEVO_DB  (try: $kevo query \"SELECT * FROM evaluations\" --db $KEVO_DB)"
exit $status
