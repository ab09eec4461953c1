#!/bin/bash
# An LL reduce-scatter waits first instead of being held (new), against holding it as 57cb5e2 did
# (oldrs: DFCCL_EXP_HOLD_RS=1, same binary), alternated; then the suite's core on the new path.
R=/tmp/r77; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r77.tgz r77); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
use() { unset DFCCL_EXP_HOLD_RS; [ "$1" = oldrs ] && export DFCCL_EXP_HOLD_RS=1; }
for r in 1 2 3; do for v in new oldrs; do
  use $v; echo "== np4 rs $v #$r $(date -u +%T)" >> $R/mpi.txt
  $M -np 4 $P -b 64 -e 4K -f 8 -w 50 -n 500 -x reduce_scatter >> $R/mpi.txt 2>&1
done; done
for v in new oldrs; do use $v; echo "== np8 rs $v" >> $R/mpi.txt; $M -np 8 $P -b 64 -e 4K -f 8 -w 50 -n 500 -x reduce_scatter >> $R/mpi.txt 2>&1; done
use new
for r in 1 2; do echo "== np4 8B allreduce new #$r" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
echo "perf done at ${SECONDS}s" >> $R/when.txt; save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 240 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "4" --only 'coll_np4|disorder_np4|sync_np4|mixed_disorder_np4' --logdir /tmp/glogs --timeout 120 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
save
cat $R/when.txt; tail -7 $R/suite.txt
grep -h "== \|allreduce   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
