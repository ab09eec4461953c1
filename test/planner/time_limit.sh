#!/bin/sh
# --time-limit bounds the solvers where CBC alone would not stop: programs
# whose first solve of the relaxation runs for minutes (32 GPUs at 1 MB; 16
# GPUs at 10 KB, a horizon of hundreds of epochs). milp and partition must
# come back within a few seconds of a 2 s limit, with at least the greedy
# schedule.
set -eu
top=${top_srcdir:-.}
tool=src/tools/dfccl_plan
[ -x "$tool" ] || { echo "time_limit: $tool not built"; exit 99; }
command -v timeout >/dev/null || { echo "time_limit: no timeout(1)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
for run in "ndv2_4x8 1M milp" "ndv2_4x8 1M partition" "ndv2_2x8 10K milp"; do
  set -- $run
  t0=$(date +%s)
  rc=0
  timeout 300 "$tool" --topology "$top/contrib/bench/topologies/$1.json" --collective allgather \
    --bytes "$2" --method "$3" --time-limit 2 --quiet --schedule "$tmp/s.json" \
    >"$tmp/out" 2>&1 || rc=$?
  took=$(( $(date +%s) - t0 ))
  if [ $rc -ne 0 ]; then
    echo "FAIL time_limit: $run exits $rc after $took s: $(tail -n 3 "$tmp/out")"
    failed=1
  elif [ $took -gt 30 ]; then
    echo "FAIL time_limit: $run took $took s with a 2 s limit"
    failed=1
  fi
done
[ $failed -eq 0 ] && echo "time_limit: all passed"
exit $failed
