#!/usr/bin/env bash
# Runs kevo's libFuzzer targets (built by `make fuzz` into BUILD/fuzz/):
#   scripts/fuzz.sh BUILD SECONDS [TARGET...]
# Each target runs SECONDS from its seed corpus (tests/fuzz/corpus/TARGET/,
# read only) and what it found so far (BUILD/fuzz-corpus/TARGET/, kept between
# runs), with its dictionary where there is one. Any finding (a crash, a
# sanitizer report, an uncaught exception, an input slower than 10 s, more
# than 2 GB) stops the run: the input is saved as BUILD/fuzz-artifacts/TARGET-*
# and the script fails. `make fuzz-smoke` runs every target for 20 s;
# FUZZ_ARGS adds libFuzzer options (e.g. FUZZ_ARGS=-max_len=65536); for more
# cores, run several targets at once (one script per target).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh BUILD SECONDS [TARGET...]" >&2
  exit 2
fi
build=$1 seconds=$2
shift 2
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_task fuzz_expr fuzz_knobs fuzz_reply fuzz_edits)

mkdir -p "$build/fuzz-artifacts"
for t in "${targets[@]}"; do
  bin="$build/fuzz/$t"
  [ -x "$bin" ] || { echo "fuzz.sh: $bin is not built (make fuzz)" >&2; exit 2; }
  work="$build/fuzz-corpus/$t"
  mkdir -p "$work"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$build/fuzz-artifacts/$t-")
  [ -f "tests/fuzz/$t.dict" ] && args+=(-dict="tests/fuzz/$t.dict")
  echo "fuzz.sh: $t for ${seconds}s" >&2
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list of options
  "$bin" "${args[@]}" ${FUZZ_ARGS:-} "$work" "tests/fuzz/corpus/$t" 2>"$build/fuzz-$t.log" || {
    tail -n 60 "$build/fuzz-$t.log" >&2
    echo "fuzz.sh: $t found something: see $build/fuzz-$t.log and $build/fuzz-artifacts/" >&2
    exit 1
  }
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$build/fuzz-$t.log" | tr '\n' ' ' >&2
  echo >&2
done
