#!/usr/bin/env bash
# On a GPU host that has no Slurm: a CUDA search through the slurm backend,
# its array tasks run on this machine by bench/fake_slurm's stand-ins, beside
# the same search through the local backend. What it checks: the "node"
# calibrates its own GPU roof and the store keeps it with the node's name;
# the best candidates are profiled (ncu) on the node; the confirmation is
# pinned to the node that measured the best; both backends find the same
# kind of best. Figures go to $OUT (the device tool's output folder).
# SKIP_LOCAL=1 leaves the local search out. Results:
# bench/results/2026-12-02-slurm-path-on-h200.md.
set -u
export KEVO_HOME=$PWD
B=${KEVO_BIN:-build/bin}
W=/tmp/kevo-slurm-check; rm -rf $W; mkdir -p $W
OUT=${OUT:-$W/out}; mkdir -p "$OUT"
export FAKE_SLURM_DIR=$W/slurm PATH=$PWD/bench/fake_slurm:$PATH
cat > $W/task.json <<J
{"name": "rmsnorm-cuda-slurm", "operator": "rmsnorm", "dtype": "bf16", "target": "cuda",
 "shapes": {"x": [4096, 4096]}, "params": {"eps": 1e-06},
 "search": {"strategy": "mcts", "families": ["fused"], "confirm": 2, "confirm_rounds": 2,
            "profile_top": 2, "seed": 3, "batch": 4, "stop": {"max_evals": 8},
            "backend": {"kind": "slurm", "dir": "$W/jobs", "poll_s": 0.5, "gpus_per_task": "1"}}}
J
KEVO_LOG=debug timeout 200 /usr/bin/time -f "slurm wall %e s" $B/kevo run $W/task.json --db $W/slurm.db --json > $OUT/slurm.json 2> $OUT/slurm.err
echo "slurm rc $?"; tail -1 $OUT/slurm.err
# What the stand-ins and the workers left, should the run have stalled.
{ ls -la $W/slurm; for f in $W/slurm/run-*.log $W/jobs/*/*.err; do echo "== $f"; tail -c 800 "$f"; done; } > $OUT/slurm-diag.txt 2>&1
[ -n "${SKIP_LOCAL:-}" ] || { timeout 250 /usr/bin/time -f "local wall %e s" $B/kevo run $W/task.json --backend local --db $W/local.db --json > $OUT/local.json 2> $OUT/local.err; echo "local rc $?"; tail -1 $OUT/local.err; }
grep -h "calibrat\|slurm:" $OUT/slurm.err | head -5
python3 - $W <<'P'
import json, sqlite3, sys, glob, os
w = sys.argv[1]
for name in ("slurm", "local"):
    f = os.environ["OUT"] + f"/{name}.json"
    if not os.path.exists(f) or not os.path.getsize(f):
        continue
    db = sqlite3.connect(f"{w}/{name}.db")
    s = json.load(open(os.environ["OUT"] + f"/{name}.json"))
    best = s.get("best") or {}
    print(f"{name}: evals {s['evaluations']} by_status {s['by_status']} best {best.get('median_s')} "
          f"roof_fraction {best.get('roof_fraction')} confirmations {s.get('confirmations')}")
    print("  roofs:", db.execute("SELECT id, hostname, host_key FROM roofs").fetchall())
    print("  ok evaluations by roof:", db.execute(
        "SELECT roof_id, COUNT(*) FROM evaluations WHERE status='ok' GROUP BY roof_id").fetchall())
    print("  evaluations with ncu rows:", db.execute(
        "SELECT COUNT(DISTINCT evaluation_id) FROM profiles WHERE metric LIKE 'ncu.%'").fetchone()[0])
for f in sorted(glob.glob(f"{w}/jobs/*/sbatch-*.args")):
    a = open(f).read()
    print("sbatch", os.path.basename(os.path.dirname(f))[-12:], a[a.find("--array="):].split()[0],
          [x for x in a.split() if x.startswith("--nodelist")])
P
