#!/bin/bash
# The early send no longer gathers a reduce-scatter's first lines (a dead load): the LL
# reduce-scatter under memcheck and racecheck, the suite's core at 4 ranks, and 64 B - 4 KiB.
R=/tmp/r83; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r83.tgz r83); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do echo "== np4 #$r" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 4K -f 8 -w 50 -n 1000 -x allreduce -x reduce_scatter_block >> $R/mpi.txt 2>&1; done
save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 200 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "4" --only 'coll_np4|disorder_np4|sync_np4|memcheck_ll_rs|racecheck_ll' --logdir /tmp/glogs --timeout 100 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
save
cat $R/when.txt; tail -14 $R/suite.txt
grep -h "== \|allreduce   \|reduce_scatter" $R/mpi.txt | cut -c1-150
