#!/bin/sh
# gpu_plans.sh - the planner's plan files on the GPU side: dfccl_plan writes
# plan files for small topologies (multicast through a switch, relays on a
# line, two hosts, version 2 dependencies), and test_gpu_plan_files runs each
# as the daemon kernel would (channel 0's connections, the image relocated,
# the dependency-driven executor), every output element checked. Skips where
# dfccl_plan is not built (no COIN-OR).
set -eu
dir=${top_srcdir:-.}/test/planner
tool=src/tools/dfccl_plan
runner=test/engine/test_gpu_plan_files
[ -x "$tool" ] || { echo "gpu_plans: SKIP (no $tool: built with COIN-OR CBC and CLP)"; exit 77; }
[ -x "$runner" ] || { echo "gpu_plans: $runner not built"; exit 99; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files=""
n=0
for spec in "star_4 allgather 2" "star_4 allreduce 2" "ring_4 allreduce 2" "ring_4 allgather 2" \
            "line_3 reducescatter 1" "line_3 allgather 2" "mixed_4 allreduce 2" \
            "mixed_4 allgather 2" "hosts_2x2 allreduce 2"; do
  set -- $spec
  n=$((n + 1))
  out=$("$tool" --topology "$dir/$1.json" --collective "$2" --bytes 12M --chunks "$3" \
    --schedule "$tmp/s$n.json" --plan-dir "$tmp/p$n" --quiet 2>&1) ||
    { echo "FAIL gpu_plans: dfccl_plan $spec: $out"; exit 1; }
  file=$(echo "$out" | sed -n 's/^plan file: *\([^ ]*\).*/\1/p')
  [ -n "$file" ] || { echo "FAIL gpu_plans: $spec wrote no plan file: $out"; exit 1; }
  echo "gpu_plans: $spec -> $(basename "$file")"
  files="$files $file"
done
# shellcheck disable=SC2086
"$runner" $files
