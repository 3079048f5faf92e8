#!/usr/bin/env bash
# Runs a command as it would run on a machine without the CUDA toolkit:
#   scripts/without-cuda.sh make test BUILD=build-nocuda
# (`make test-without-cuda` does exactly that; CI runs it after `make test`.)
#
# In a private mount namespace (unshare, as root or through a user
# namespace), every CUDA toolkit directory is covered by an empty tmpfs and
# every CUDA tool left on PATH (wrappers such as /usr/local/bin/nvcc) by an
# empty, non-executable file, so neither CMake's configure step, the Makefile,
# nor kevo at run time can find nvcc, ptxas, ncu or nvdisasm. Nothing outside
# the command sees a change.
#
# Where no mount namespace can be had, it says so and falls back to what can
# be hidden without one: PATH without the toolkit's directories, KEVO_NVCC
# and KEVO_NCU pointing at nothing, and the build configured with
# KEVO_WITH_CUDA=OFF. KEVO_WITHOUT_CUDA_MODE=env takes that way even where a
# namespace could be had.
set -euo pipefail

tools=(nvcc ptxas nvlink fatbinary cudafe++ __nvcc_device_query bin2c cuobjdump nvdisasm ncu nsys
       cicc nvprune)

if [ $# -eq 0 ]; then
  echo "usage: scripts/without-cuda.sh COMMAND [ARGS...]" >&2
  exit 2
fi

hide_inside() {
  # Toolkit roots: where nvcc really lives, the usual places, and CUDA_PATH.
  local roots=() r
  for r in /usr/local/cuda /usr/local/cuda-* /opt/cuda /opt/nvidia "${CUDA_PATH:-}" "${CUDA_HOME:-}"; do
    [ -n "$r" ] && [ -d "$r" ] && roots+=("$(readlink -f "$r")")
  done
  local empty_dir
  empty_dir=$(mktemp -d)
  local hidden=()
  for r in "${roots[@]}"; do
    case " ${hidden[*]} " in *" $r "*) continue ;; esac
    hidden+=("$r")
    mount -t tmpfs -o ro,size=4k kevo-no-cuda "$r"
  done
  # Wrappers and copies left on PATH (and in /usr/local/bin, /usr/bin).
  local blank="$empty_dir/blank"
  : >"$blank"
  chmod 0644 "$blank"
  local dir t
  IFS=: read -r -a dirs <<<"$PATH:/usr/local/bin:/usr/bin"
  for dir in "${dirs[@]}"; do
    for t in "${tools[@]}"; do
      [ -n "$dir" ] && [ -e "$dir/$t" ] && [ -x "$dir/$t" ] && mount --bind "$blank" "$dir/$t"
    done
  done
  # (Not `command -v`: bash falls back to a file that exists but cannot run.)
  for dir in "${dirs[@]}" /usr/local/cuda/bin; do
    if [ -n "$dir" ] && [ -f "$dir/nvcc" ] && [ -x "$dir/nvcc" ]; then
      echo "without-cuda: nvcc is still reachable at $dir/nvcc" >&2
      exit 1
    fi
  done
  echo "without-cuda: CUDA toolkit hidden (mount namespace): ${hidden[*]:-no toolkit directory} and the tools on PATH" >&2
}

if [ "${KEVO_WITHOUT_CUDA_INSIDE:-}" = 1 ]; then
  hide_inside
  unset KEVO_WITHOUT_CUDA_INSIDE
  exec "$@"
fi

# A private mount namespace: as root directly, else through a user namespace.
[ "${KEVO_WITHOUT_CUDA_MODE:-}" = env ] || for flags in "-m" "-r -m"; do
  # shellcheck disable=SC2086
  if unshare $flags --propagation private true 2>/dev/null; then
    # shellcheck disable=SC2086
    exec env KEVO_WITHOUT_CUDA_INSIDE=1 unshare $flags --propagation private "$0" "$@"
  fi
done

echo "without-cuda: no mount namespace here; hiding nvcc from PATH, KEVO_NVCC, KEVO_NCU and the build only" >&2
new_path=""
IFS=: read -r -a dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
  [ -x "$dir/nvcc" ] && continue
  new_path+="${new_path:+:}$dir"
done
export PATH="$new_path"
export KEVO_NVCC=/nonexistent/nvcc KEVO_NCU=/nonexistent/ncu
export KEVO_CMAKE_ARGS="${KEVO_CMAKE_ARGS:-} -DKEVO_WITH_CUDA=OFF"
unset CUDACXX CUDA_PATH CUDA_HOME
exec "$@"
