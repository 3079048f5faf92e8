#!/usr/bin/env bash
# The regression gate measured: repeated one-point searches of two task
# configs (A, and B: the same task at a point meant to be slower), each
# confirmed in its rounds and exported, run as A B A, A B A, ... so that A/A
# pairs (the two A runs of a triple) and A/B pairs (each triple's first A and
# its B) are taken side by side. Then kevo compare on every pair, at the
# thresholds given, judged by rounds and, with the rounds removed from the
# exports, by one round's samples (the gate before it judged by rounds).
#
#   [ROUNDS=5] bench/gate_pairs.sh KEVO_BIN_DIR CONFIG_A CONFIG_B TRIPLES WORKDIR [THRESHOLDS]
#
# KEVO_BIN_DIR holds kevo (build/bin); the configs are task files whose
# search evaluates one point and confirms it (see bench/results/
# 2026-12-02-regression-gate.md); THRESHOLDS defaults to "5 1" (percent).
# Then the same pairs re-timed side by side (kevo compare --retime, ROUNDS
# rounds, default 5, measured on this machine into $WORKDIR/retime.db).
# Prints one line per pair kind, method and threshold: the verdicts counted.
set -u
[ $# -ge 5 ] || { sed -n 2,18p "$0"; exit 2; }
BIN=$1; A=$2; B=$3; N=$4; W=$5; TH=${6:-5 1}; ROUNDS=${ROUNDS:-5}
mkdir -p "$W"
run() {  # config, name
  cp "$W/roof.db" "$W/$2.db"
  "$BIN/kevo" run "$1" --db "$W/$2.db" > "$W/$2.log" 2>&1 || { echo "$2: kevo run failed" >&2; tail -3 "$W/$2.log" >&2; return 1; }
  local id
  id=$("$BIN/kevo" query "SELECT MAX(id) FROM runs" --csv --db "$W/$2.db" | tail -1)
  "$BIN/kevo" export "$id" --db "$W/$2.db" -o "$W/$2.export.json"
  python3 - "$W/$2.export.json" "$W/$2.norounds.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["runs"]:
    for c in r["candidates"]:
        c["rounds"] = []
json.dump(d, open(sys.argv[2], "w"))
EOF
}
[ -e "$W/roof.db" ] || "$BIN/kevo" calibrate --db "$W/roof.db" --target "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("target","cpu"))' "$A")" > "$W/calibrate.log" 2>&1
for i in $(seq 1 "$N"); do
  run "$A" "a$i" && run "$B" "b$i" && run "$A" "c$i" || exit 1
  echo "triple $i done" >&2
done
for kind in export norounds; do
  for t in $TH; do
    for pair in aa ab; do
      counts=$(for i in $(seq 1 "$N"); do
        second=c$i; [ $pair = ab ] && second=b$i
        "$BIN/kevo" compare "$W/a$i.$kind.json" "$W/$second.$kind.json" --threshold "$t" --json |
          python3 -c 'import json,sys; t=json.load(sys.stdin)["tasks"][0]; print(t["verdict"], "%+.2f" % (100*(t["ratio"]-1)))'
      done)
      echo "$pair $( [ $kind = export ] && echo rounds || echo samples ) threshold $t%: $(echo "$counts" | awk '{print $1}' | sort | uniq -c | tr -s ' ' | tr '\n' ' ')| changes: $(echo "$counts" | awk '{print $2}' | tr '\n' ' ')"
    done
  done
done
[ -e "$W/retime.db" ] || cp "$W/roof.db" "$W/retime.db"
# One re-timing per pair; each threshold judges its rounds' ratios.
for pair in aa ab; do
  for i in $(seq 1 "$N"); do
    second=c$i; [ $pair = ab ] && second=b$i
    "$BIN/kevo" compare "$W/a$i.export.json" "$W/$second.export.json" --retime --rounds "$ROUNDS" \
      --json --db "$W/retime.db" > "$W/retime-$pair-$i.json" 2>> "$W/retime.log"
  done
done
for t in $TH; do
  for pair in aa ab; do
    counts=$(for i in $(seq 1 "$N"); do
      python3 - "$W/retime-$pair-$i.json" "$t" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["tasks"][0]
th = float(sys.argv[2]) / 100
lo, hi = t["ci_low"], t["ci_high"]
v = ("faster" if hi < 1 - th else "slower" if lo > 1 + th
     else "unchanged" if lo >= 1 - th and hi <= 1 + th else "inconclusive")
print(v, "%+.2f" % (100 * (t["ratio"] - 1)), t.get("basis"))
EOF
    done)
    echo "$pair retimed threshold $t%: $(echo "$counts" | awk '{print $1}' | sort | uniq -c | tr -s ' ' | tr '\n' ' ')| changes: $(echo "$counts" | awk '{print $2}' | tr '\n' ' ')| basis: $(echo "$counts" | awk '{print $3}' | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
  done
done
