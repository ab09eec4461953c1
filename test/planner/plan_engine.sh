#!/bin/sh
# plan_engine.sh NP PROGRAM [ARGS...]: synthesised plans run by the engine.
#
# dfccl_plan plans allgather, allreduce and reduce-scatter (two chunks a
# rank, every size) on a topology, by default hosts_2x2.json, two hosts of
# two GPUs; PROGRAM then runs under mpirun through the engine with those
# plan files (coll_dfccl_plan_dir). By default node_split 2 makes this
# host's ranks two nodes of two, the topology's layout, so the plans fit the
# communicators of NP = 4 ranks; other communicators keep the built-in
# algorithms. The program must pass (its results are checked) and report
# that plan files ran (DFCCL_TEST_EXPECT_PLAN: the engine's own counters).
#
# Environment (for runs across the multi-host bed, as run_bed_test.sh's
# DFCCL_BED_DRIVER):
#   DFCCL_PLAN_TOPOLOGY     the topology file (default: hosts_2x2.json here)
#   DFCCL_PLAN_COLLECTIVES  what to plan (default: allgather allreduce
#                           reducescatter)
#   DFCCL_PLAN_SPLIT        coll_dfccl_node_split (default 2; empty: none,
#                           the hosts are real)
#   DFCCL_PLAN_MCA          more mpirun arguments
#   DFCCL_PLAN_METHODS      the planner's methods, one job each with that
#                           method's plans alone (default: greedy); each
#                           plan file must come from that method's own
#                           schedule, not from one it fell back to
#   DFCCL_PLAN_ARGS         dfccl_plan's arguments for the schedule
#                           (default: --bytes 1M --chunks 2)
set -eu
[ $# -ge 2 ] || { echo "usage: $0 NP PROGRAM [ARGS...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tool=src/tools/dfccl_plan
[ -x "$tool" ] || { echo "$0: no $tool here (run from the build tree)" >&2; exit 2; }
topology=${DFCCL_PLAN_TOPOLOGY:-$here/hosts_2x2.json}
split=${DFCCL_PLAN_SPLIT-2}
plans=$(mktemp -d)
trap 'rm -rf "$plans"' EXIT
for method in ${DFCCL_PLAN_METHODS:-greedy}; do
  dir=$plans/$method
  mkdir -p "$dir"
  for coll in ${DFCCL_PLAN_COLLECTIVES:-allgather allreduce reducescatter}; do
    # shellcheck disable=SC2086  # DFCCL_PLAN_ARGS is a list of arguments
    "$tool" --topology "$topology" --collective $coll ${DFCCL_PLAN_ARGS:---bytes 1M --chunks 2} \
      --method "$method" --time-limit 20 --schedule "$dir/$coll.schedule" --plan-dir "$dir" \
      --serve : --quiet >/dev/null ||
      { echo "$0: dfccl_plan --method $method failed for $coll" >&2; exit 1; }
  done
  rm -f "$dir"/*.schedule
  for f in "$dir"/*.json; do
    grep -q "from a $method schedule" "$f" ||
      { echo "FAIL: $f is not from a $method schedule: $(grep -o 'from a [a-z]* schedule' "$f")"; exit 1; }
  done
  echo "plans from $method: $(cd "$dir" && ls)"
  DFCCL_TEST_MCA="--mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0
    --mca coll_dfccl_timeout 20 ${split:+--mca coll_dfccl_node_split $split}
    --mca coll_dfccl_plan_dir $dir -x DFCCL_TEST_EXPECT_PLAN=1 ${DFCCL_PLAN_MCA:-}"
  export DFCCL_TEST_MCA
  "$here/../mpi/run_mpi_test.sh" "$@" || exit $?
done
