#!/usr/bin/env bash
# On a GPU host (run from the repository root with binaries in gpu-bin/bin and
# gpu-bin/tests, OUT set): the CPU's counters there, and an exact replay of a CUDA
# mcts search whose best candidates were profiled with ncu.
set -u
export KEVO_HOME=$PWD
mkdir -p build/bin build/tests && cp gpu-bin/bin/* build/bin/ && cp gpu-bin/tests/* build/tests/
B=build/bin; W=/tmp/w; rm -rf $W; mkdir -p $W
build/tests/cpu_profile_tests > $OUT/cpu_profile_tests.txt 2>&1; tail -4 $OUT/cpu_profile_tests.txt
grep -E "SKIP|Failure" -A3 $OUT/cpu_profile_tests.txt | head -20
$B/kevo eval --task configs/cpu/swiglu-4096x4096.json targets/cpu/kernels/swiglu/stream.c --db $W/cpu.db --json > $OUT/cpu_eval.json 2> $OUT/cpu_eval.err
python3 -c '
import json,sys; r=json.load(open(sys.argv[1]))["result"]
print("cpu eval:", r["status"], r["diagnosis"]["why"][-200:])
for m in r["profile"]:
  if m["metric"].startswith(("cpu.","cc.vec.loops")): print("  ", m["metric"], round(m["value"],3))' $OUT/cpu_eval.json
cat > $W/t.json <<'J'
{"name": "rmsnorm-cuda-replay", "operator": "rmsnorm", "dtype": "bf16", "target": "cuda",
 "shapes": {"x": [4096, 4096]}, "params": {"eps": 1e-06},
 "search": {"strategy": "mcts", "families": ["fused"], "confirm": 0, "profile_top": 2,
            "seed": 3, "batch": 4, "stop": {"max_evals": 12}}}
J
$B/kevo run $W/t.json --db $W/g.db --json > $OUT/run.json 2> $OUT/run.err; echo "run rc $?"
RUN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"])' $OUT/run.json)
$B/kevo run $W/t.json --db $W/g.db --replay $RUN --json > $OUT/replay.json 2> $OUT/replay.err; echo "replay rc $?"
$B/kevo run $W/t.json --db $W/g.db --replay $RUN > $OUT/replay.txt 2>&1; head -4 $OUT/replay.txt
python3 - $W/g.db $OUT/run.json $OUT/replay.json <<'P'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1]); a = json.load(open(sys.argv[2]))["run"]; b = json.load(open(sys.argv[3]))
print("replay summary:", b["replay"], "stop:", b["stop_reason"])
def tree(run):
    return db.execute("SELECT c.source_hash, c.knobs_json, c.synthesizer, (SELECT count(*) FROM profiles p JOIN candidate_results cr ON cr.evaluation_id = p.evaluation_id WHERE cr.candidate_id = c.id AND p.metric LIKE 'ncu.%') FROM candidates c WHERE c.run_id = ? ORDER BY c.id", (run,)).fetchall()
ta, tb = tree(a), tree(b["run"])
print("candidates:", len(ta), len(tb), "same tree:", [r[:3] for r in ta] == [r[:3] for r in tb])
print("ncu rows per candidate, run:", [r[3] for r in ta])
print("ncu rows per candidate, replay:", [r[3] for r in tb])
P
