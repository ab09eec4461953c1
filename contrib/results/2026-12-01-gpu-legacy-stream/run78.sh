#!/bin/bash
# The early send takes an LL reduce-scatter whose blocks are all alike (held before the legacy-stream
# wait like allreduce), against run 77's behaviour (it waits first: DFCCL_EXP_NO_EARLY_RS=1, same
# binary), alternated; then the suite's core, racecheck and memcheck on the new path.
R=/tmp/r78; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r78.tgz r78); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
use() { unset DFCCL_EXP_NO_EARLY_RS; [ "$1" = wf ] && export DFCCL_EXP_NO_EARLY_RS=1; }
for r in 1 2 3; do for v in new wf; do
  use $v; echo "== np4 rs $v #$r $(date -u +%T)" >> $R/mpi.txt
  $M -np 4 $P -b 64 -e 4K -f 8 -w 50 -n 500 -x reduce_scatter -x reduce_scatter_block >> $R/mpi.txt 2>&1
done; done
for n in 8 2; do for v in new wf; do use $v; echo "== np$n rs $v" >> $R/mpi.txt; $M -np $n $P -b 64 -e 4K -f 8 -w 50 -n 500 -x reduce_scatter_block >> $R/mpi.txt 2>&1; done; done
use new
echo "== np4 8B allreduce new" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "perf done at ${SECONDS}s" >> $R/when.txt; save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 210 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "4" --only 'coll_np4|disorder_np4|sync_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 100 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt; tail -12 $R/suite.txt
grep -h "== \|allreduce   \|reduce_scatter" $R/mpi.txt | cut -c1-150
