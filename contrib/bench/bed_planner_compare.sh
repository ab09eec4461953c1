#!/bin/bash
# bed_planner_compare.sh OUT [SIZE...]
#
# Planned schedules against the engine's built-in ring and hierarchical
# algorithms, executed across emulated hosts: DFCCL_BED_SHAPE hosts x ranks
# (default 3x2), the last host's link shaped to 1 Gbit/s
# (contrib/bench/topologies/bed_HxR_slow.json models that bed). For each SIZE
# (whole buffer, default 6Mi 24Mi) dfccl_plan plans DFCCL_PLAN_COLLECTIVES
# (default allgather allreduce) on the model into OUT/plans (sizes with Ki,
# Mi, Gi: dfccl_perf's sizes are powers of 1024, and every size is 4 times
# the one before) (its modelled
# finish and the ring's go to OUT/model.txt); then bed_perf_compare.sh runs
# dfccl_perf with results checked (-c 1) in three configurations of the
# engine, one job each:
#   ring     coll_dfccl_algorithm 0 (one ring over all ranks)
#   hier     coll_dfccl_algorithm 1 (allreduce: node reduce-scatter, shards
#            across nodes, node allgather; allgather stays the ring)
#   planned  coll_dfccl_plan_dir OUT/plans (the plans)
# and last, untimed, planned_log: the planned job at verbose 2, whose log
# must show the communicator taking the plans (verbose 2 also logs every
# call, which costs milliseconds a call on a loaded bed: the timed jobs run
# without it).
# DFCCL_BED_ROUNDS (default 3) runs the three in turn that many times
# (ring, hier, planned, ring_2, hier_2, planned_2, ...), so that a slow
# spell of the machine does not fall on one configuration alone;
# bed_planner_table.py takes the median of the rounds.
# OUT/ratios.txt has the times and their ratios. Plan files
# already in OUT/plans are used as they are (no planning).
#
# DFCCL_PLAN_METHOD (default auto) and DFCCL_PLAN_TIME_LIMIT (default 60 s)
# go to dfccl_plan; DFCCL_PLAN_CHUNKS (default 1) chunks a rank.
# Run from the build directory, as root, with nothing else running.
set -eu
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ $# -ge 1 ] || { echo "usage: $0 OUT [SIZE...]" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$1
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(6Mi 24Mi)
tool=$PWD/src/tools/dfccl_plan
[ -x "$tool" ] || { echo "$0: no $tool (run from the build directory; the planner needs CBC)" >&2
                    exit 2; }
shape=${DFCCL_BED_SHAPE:-3x2}
hosts=${shape%x*}
ranks=${shape#*x}
topo=$here/topologies/bed_${shape}_slow.json
[ -f "$topo" ] || { echo "$0: no model of the bed $shape ($topo)" >&2; exit 2; }
mkdir -p "$out/plans"
out=$(cd "$out" && pwd)
reuse=0
ls "$out"/plans/*.json >/dev/null 2>&1 && reuse=1
[ $reuse = 0 ] && : > "$out/model.txt"
colls=${DFCCL_PLAN_COLLECTIVES:-allgather allreduce}
# The sizes a plan serves: dfccl_perf rounds an allgather's and a
# reduce-scatter's buffer down to whole elements a rank (64 MiB over 6 ranks
# is 67108848 bytes), below the size class of --bytes; sizes are 4 times
# apart, so an eighth either way keeps each plan to its own size.
serve() {
  local b=$1
  case $b in *Ki) b=$((${b%Ki} << 10)) ;; *Mi) b=$((${b%Mi} << 20)) ;; *Gi) b=$((${b%Gi} << 30)) ;; esac
  echo "$((b - b / 8)):$((b + b / 8))"
}
for coll in $colls; do
  [ $reuse = 0 ] || break   # OUT/plans from an earlier run: planned already
  for size in "${sizes[@]}"; do
    echo "== $coll $size" >> "$out/model.txt"
    "$tool" --topology "$topo" --collective "$coll" --bytes "$size" \
      --chunks "${DFCCL_PLAN_CHUNKS:-1}" --method "${DFCCL_PLAN_METHOD:-auto}" \
      --time-limit "${DFCCL_PLAN_TIME_LIMIT:-60}" --schedule "$out/plans/$coll-$size.schedule" \
      --plan-dir "$out/plans" --serve "$(serve "$size")" >> "$out/model.txt" 2>&1 ||
      echo "(no plan file: see above)" >> "$out/model.txt"
  done
done
mkdir -p "$out/schedules"
[ $reuse = 1 ] || mv "$out"/plans/*.schedule "$out/schedules/" 2>/dev/null || true
lo=${sizes[0]%i}   # dfccl_perf's K, M, G are powers of 1024
hi=${sizes[${#sizes[@]} - 1]%i}
perf_colls=$(echo $colls | sed 's/reducescatter/reduce_scatter_block/; s/ /,/g')
configs=
rounds=${DFCCL_BED_ROUNDS:-3}
for ((r = 1; r <= rounds; r++)); do
  sfx=; [ "$r" = 1 ] || sfx=_$r
  configs+="ring$sfx=--mca coll_dfccl_algorithm 0;hier$sfx=--mca coll_dfccl_algorithm 1;"
  configs+="planned$sfx=--mca coll_dfccl_plan_dir $out/plans;"
done
configs+="planned_log=--mca coll_dfccl_plan_dir $out/plans --mca coll_dfccl_verbose 2"
DFCCL_BENCH_CONFIGS= DFCCL_BENCH_SHAPE="h$hosts 1gbit" DFCCL_BENCH_EXTRA="$configs" \
  "$here/bed_perf_compare.sh" "$hosts" "$ranks" "$out" -x "$perf_colls" -b "$lo" -e "$hi" -f 4 -c 1 \
    -w "${DFCCL_PERF_WARMUP:-1}" -n "${DFCCL_PERF_ITERS:-5}"
# the planned job must have taken the plans
grep -q "serves it" "$out/planned_log.err" ||
  { echo "$0: the planned job did not take the plan files (see $out/planned_log.err)" >&2; exit 1; }
