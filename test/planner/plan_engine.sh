#!/bin/sh
# plan_engine.sh NP PROGRAM [ARGS...]: synthesised plans run by the engine.
#
# dfccl_plan plans allgather, allreduce and reduce-scatter (two chunks a
# rank, every size) on hosts_2x2.json, two hosts of two GPUs; PROGRAM then
# runs under mpirun through the engine with those plan files
# (coll_dfccl_plan_dir). node_split 2 makes this host's ranks two nodes of
# two, the topology's layout, so the plans fit the communicators of NP = 4
# ranks; other communicators keep the built-in algorithms. The program must
# pass (its results are checked) and report that plan files ran
# (DFCCL_TEST_EXPECT_PLAN: the engine's own counters).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 NP PROGRAM [ARGS...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tool=src/tools/dfccl_plan
[ -x "$tool" ] || { echo "$0: no $tool here (run from the build tree)" >&2; exit 2; }
plans=$(mktemp -d)
trap 'rm -rf "$plans"' EXIT
for coll in allgather allreduce reducescatter; do
  "$tool" --topology "$here/hosts_2x2.json" --collective $coll --bytes 1M --chunks 2 \
    --schedule "$plans/$coll.schedule" --plan-dir "$plans" --serve : --quiet >/dev/null ||
    { echo "$0: dfccl_plan failed for $coll" >&2; exit 1; }
done
rm -f "$plans"/*.schedule
ls "$plans"
DFCCL_TEST_MCA="--mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0
  --mca coll_dfccl_timeout 20 --mca coll_dfccl_node_split 2 --mca coll_dfccl_plan_dir $plans
  -x DFCCL_TEST_EXPECT_PLAN=1"
export DFCCL_TEST_MCA
"$here/../mpi/run_mpi_test.sh" "$@"
