#!/bin/sh
# kernels_headers.sh - every header of the daemon kernel (src/kernels/*.cuh)
# stands alone: a translation unit that includes only it compiles with nvcc,
# with the latency trace compiled in and without (DFCCL_GPU_TRACE). So no
# header depends on what another happened to include before it, and the
# kernel's headers may be included in any order. Run from the build tree
# (make check), or as
#   test/kernels_headers.sh SRCDIR
# Skips (77) where nvcc is not found: $NVCC, else on PATH, else
# /usr/local/cuda/bin/nvcc.
set -u
src=${1:-${srcdir:-.}}
NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || command -v "$NVCC" >/dev/null 2>&1 ||
  { echo "kernels_headers: SKIP (no nvcc)"; exit 77; }
[ -d "$src/src/kernels" ] || { echo "kernels_headers: no $src/src/kernels"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kernels_headers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

flags="-std=c++17 -I $src/src -gencode arch=compute_90,code=sm_90"
failed=0
n=0
for h in "$src"/src/kernels/*.cuh; do
  name=$(basename "$h")
  printf '#include "kernels/%s"\n' "$name" > "$tmp/one.cu"
  for trace in "" -DDFCCL_GPU_TRACE; do
    n=$((n + 1))
    # shellcheck disable=SC2086 # flags is a list of words
    if ! "$NVCC" $flags $trace -x cu -c "$tmp/one.cu" -o "$tmp/one.o" > "$tmp/log" 2>&1; then
      echo "kernels_headers: FAIL: kernels/$name does not compile alone${trace:+ ($trace)}:"
      sed 's/^/  /' "$tmp/log"
      failed=$((failed + 1))
    fi
  done
done
[ "$n" -gt 0 ] || { echo "kernels_headers: no src/kernels/*.cuh under $src"; exit 1; }
echo "kernels_headers: $((n - failed)) of $n compiled alone"
[ "$failed" -eq 0 ]
