#!/usr/bin/env bash
# What kevo's defenses against hostile candidates cost honest kernels: every
# seed family's default point on every task of one target, evaluated by two
# builds of kevo in interleaved rounds (A, B, A, B, ...), each build with its
# own store, both with one compile cache. Prints, per task and family, each
# build's median over the rounds and the ratio B / A, next to A against
# itself (round 2 / round 1) as the noise to judge it by.
#   bench/defense_cost.sh A_BIN_DIR B_BIN_DIR TARGET [ROUNDS] [WORK_DIR]
#   (or, for the table alone from an earlier run: SUMMARY_ONLY=1 ... WORK_DIR)
# A_BIN_DIR / B_BIN_DIR hold `kevo` and its runners (e.g. an old build's
# bin/ and the new one's); TARGET is cpu or cuda (tasks: configs/TARGET/).
set -uo pipefail
a=${1:?A_BIN_DIR}; b=${2:?B_BIN_DIR}; target=${3:?TARGET}; rounds=${4:-3}
work=${5:-$(mktemp -d /tmp/kevo-defense-cost.XXXXXX)}
mkdir -p "$work"
cd "$(dirname "$0")/.."
export KEVO_HOME=${KEVO_HOME:-$PWD}

[ -n "${SUMMARY_ONLY:-}" ] && rounds=0
for side in a b; do
  [ "$rounds" = 0 ] && break
  bin=$a; [ $side = b ] && bin=$b
  [ -n "${FIRST_ROUND:-}" ] && [ -e "$work/$side.db" ] && continue  # calibrated by the first call
  "$bin/kevo" calibrate --target "$target" --db "$work/$side.db" > "$work/$side.calibrate.txt" 2>&1 ||
    { echo "calibrate failed with $bin (see $work/$side.calibrate.txt)" >&2; exit 1; }
done

# FIRST_ROUND=N starts at round N (a later call that adds rounds to
# results.txt; the summary reads every line there).
for round in $(seq "${FIRST_ROUND:-1}" "$rounds"); do
  for task in configs/"$target"/*.json; do
    op=$(python3 -c "import json; print(json.load(open('$task'))['operator'])")
    ext=c; [ "$target" = cuda ] && ext=cu
    for file in targets/"$target"/kernels/"$op"/*."$ext"; do
      for side in a b; do
        bin=$a; [ $side = b ] && bin=$b
        line=$("$bin/kevo" eval --task "$task" "$file" --db "$work/$side.db" --json 2>> "$work/$side.log" |
          python3 -c "import json,sys; r=json.load(sys.stdin)['result']; print(r['status'], (r.get('timing') or {}).get('median_s'))" 2> /dev/null)
        echo "$round $side $(basename "$task" .json) $(basename "$file") $line" | tee -a "$work/results.txt" >&2
      done
    done
  done
done

python3 - "$work/results.txt" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) < 6: continue
    rnd, side, task, family, status, median = parts[:6]
    rows.setdefault((task, family), {}).setdefault(side, []).append(
        (int(rnd), status, float(median) if median not in ("None", "") else None))
print("| task | family | A median | B median | B / A | A round 2 / round 1 | statuses |")
print("|---|---|---|---|---|---|---|")
ratios, noise = [], []
for (task, family), sides in sorted(rows.items()):
    def med(side):
        v = [m for _, s, m in sides.get(side, []) if m]
        return statistics.median(v) if v else None
    ma, mb = med("a"), med("b")
    a_rounds = sorted((r, m) for r, _, m in sides.get("a", []) if m)
    self_ratio = a_rounds[1][1] / a_rounds[0][1] if len(a_rounds) >= 2 else None
    statuses = "/".join(sorted({s for side in sides.values() for _, s, _ in side}))
    fmt = lambda s: "%.4g ms" % (s * 1e3) if s else "-"
    r = mb / ma if ma and mb else None
    if r: ratios.append(r)
    if self_ratio: noise.append(self_ratio)
    print(f"| {task} | {family} | {fmt(ma)} | {fmt(mb)} | {r and '%.3f' % r or '-'} | "
          f"{self_ratio and '%.3f' % self_ratio or '-'} | {statuses} |")
if ratios:
    print(f"\nB / A over {len(ratios)} kernels: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}); A against itself: median "
          f"{statistics.median(noise):.3f} (min {min(noise):.3f}, max {max(noise):.3f})")
EOF
