#!/bin/sh
# --time-limit bounds the solvers on a program whose relaxation alone runs
# for many minutes (32 GPUs, the whole horizon at 1 MB): milp and partition
# must come back within a few seconds of a 2 s limit, keeping at least the
# greedy schedule.
set -eu
top=${top_srcdir:-.}
tool=src/tools/dfccl_plan
[ -x "$tool" ] || { echo "time_limit: $tool not built"; exit 99; }
command -v timeout >/dev/null || { echo "time_limit: no timeout(1)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for method in milp partition; do
  t0=$(date +%s)
  rc=0
  timeout 300 "$tool" --topology "$top/contrib/topologies/ndv2_4x8.json" --collective allgather \
    --bytes 1M --method $method --time-limit 2 --quiet --schedule "$tmp/s.json" \
    >"$tmp/out" 2>&1 || rc=$?
  took=$(( $(date +%s) - t0 ))
  if [ $rc -ne 0 ]; then
    echo "FAIL time_limit: $method exits $rc after $took s: $(tail -n 3 "$tmp/out")"
    failed=1
  elif [ $took -gt 30 ]; then
    echo "FAIL time_limit: $method took $took s with a 2 s limit"
    failed=1
  fi
done
[ $failed -eq 0 ] && echo "time_limit: all passed"
exit $failed
