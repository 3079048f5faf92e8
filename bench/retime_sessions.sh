#!/usr/bin/env bash
# The regression gate re-timed: one triple of one-point searches (A, B, A,
# through bench/gate_pairs.sh, which also prints the stored-figure verdicts),
# then `kevo compare --retime` repeated on its exports: AA_SESSIONS times
# the first A against the second (A/A: must not alarm), AB_SESSIONS times
# the first A against B (A/B: must catch the planted change). Each session
# re-times both kernels side by side in ROUNDS rounds (default 5).
#
#   [ROUNDS=5] bench/retime_sessions.sh KEVO_BIN_DIR CONFIG_A CONFIG_B AA_SESSIONS AB_SESSIONS WORKDIR OUTDIR
#
# Writes OUTDIR/gate_pairs.txt, one JSON per session (rt-aa-N.json,
# rt-ab-N.json) and OUTDIR/rt.txt: per session its kind, verdict, basis,
# change (median round ratio), range of the round ratios and both medians.
set -u
[ $# -ge 7 ] || { sed -n 2,13p "$0"; exit 2; }
BIN=$1; A=$2; B=$3; AA=$4; AB=$5; W=$6; OUT=$7; ROUNDS=${ROUNDS:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W" "$OUT"
[ -e "$W/a1.export.json" ] ||
  ROUNDS=$ROUNDS bash "$HERE/gate_pairs.sh" "$BIN" "$A" "$B" 1 "$W" "5 1" > "$OUT/gate_pairs.txt" 2> "$OUT/gate_pairs.err" ||
  { echo "the searches failed: $OUT/gate_pairs.err" >&2; exit 1; }
cp "$W/roof.db" "$W/sessions.db"
for kind in aa ab; do
  reps=$AA; second=c1; [ $kind = ab ] && { reps=$AB; second=b1; }
  for i in $(seq 1 "$reps"); do
    "$BIN/kevo" compare "$W/a1.export.json" "$W/$second.export.json" --retime --rounds "$ROUNDS" \
      --json --db "$W/sessions.db" > "$OUT/rt-$kind-$i.json" 2>> "$OUT/rt.err"
    python3 - "$OUT/rt-$kind-$i.json" "$kind" <<'PY' | tee -a "$OUT/rt.txt"
import json, sys
t = json.load(open(sys.argv[1]))["tasks"][0]
pct = lambda r: "%+.2f" % (100 * (r - 1))
print(sys.argv[2], t["verdict"], t.get("basis"), pct(t["ratio"]),
      pct(t["ci_low"]) + ".." + pct(t["ci_high"]), t["baseline"]["median_s"], t["current"]["median_s"])
PY
  done
done
