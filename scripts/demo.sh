#!/usr/bin/env bash
# make demo: a real search on this CPU. kevo grows a tree of softmax kernels
# from the operator's seed families (configs/demo.json: mcts, about two
# minutes), then prints the summary, writes the best kernel to
# build/demo-best.c and the tree to build/demo-tree.dot. The store is $KEVO_DB
# (default build/demo.db): a second `make demo` answers what it already
# measured from the store and only measures new points.
set -euo pipefail
build=${1:-build}
kevo="$build/bin/kevo"
export KEVO_DB="${KEVO_DB:-$build/demo.db}"

echo "== kevo demo: search for the fastest softmax(x * 0.125) over [2048, 2048] f32 on this CPU =="
echo "   (the first run measures this machine's roof once, about 20 s)"
echo "-- kevo run configs/demo.json -o $build/demo-best.c --dot $build/demo-tree.dot"
echo
status=0
"$kevo" run configs/demo.json -o "$build/demo-best.c" --dot "$build/demo-tree.dot" || status=$?
echo
echo "-- the ten fastest correct candidates of that run, as the search timed them (timed: 4 when also"
echo "   re-measured in the 3 confirmation rounds)"
"$kevo" query "
  SELECT c.id AS candidate, c.family, c.synthesizer,
         (SELECT COUNT(*) FROM evaluations x WHERE x.candidate_id = c.id) AS timed,
         printf('%.3f', e.median_s * 1e3) AS median_ms,
         printf('%.0f%%', e.roof_fraction * 100) AS of_roof, c.knobs_json AS knobs
  FROM candidates c
  JOIN candidate_results r ON r.candidate_id = c.id
  JOIN evaluations e ON e.id = r.evaluation_id
  WHERE c.run_id = (SELECT MAX(id) FROM runs WHERE kind = 'search') AND e.status = 'ok'
  ORDER BY e.median_s LIMIT 10"
echo
echo "store: $KEVO_DB  (try: $kevo query \"SELECT status, COUNT(*) FROM evaluations GROUP BY 1\" --db $KEVO_DB)"
exit $status
