#!/usr/bin/env bash
# Writes WRAPPER, an ncu for KEVO_NCU that first profiles the job kevo hands it
# with ARGS (ncu's own options: sections, clock control) into REPORT.ncu-rep
# (its output in REPORT.log), then runs ncu as kevo asked:
#   bench/micro/ncu_wrap.sh WRAPPER NCU REPORT ARGS...
# kevo calls its ncu as `ncu OPTIONS... RUNNER --device D --profile JOB`, and
# `ncu --import ...` to read its report back. It starts ncu with the runner's
# environment only, so what the wrapper needs is written into it, not passed
# through the environment.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 WRAPPER NCU REPORT ARGS..." >&2; exit 2; }
wrapper=$1 ncu=$2 report=$3; shift 3
{
  echo '#!/usr/bin/env bash'
  printf 'ncu=%q report=%q\n' "$ncu" "$report"
  printf 'extra=('; printf ' %q' "$@"; printf ' )\n'
  cat <<'BODY'
if [ "${1:-}" != "--import" ] && [ $# -ge 5 ] && [ "${@: -4:1}" = "--device" ] && [ "${@: -2:1}" = "--profile" ]; then
  args=("$@"); n=${#args[@]}
  "$ncu" "${extra[@]}" -f -o "$report" "${args[n-5]}" --device "${args[n-3]}" \
    --profile "${args[n-1]}" > "$report.log" 2>&1 || true
fi
exec "$ncu" "$@"
BODY
} > "$wrapper"
chmod +x "$wrapper"
