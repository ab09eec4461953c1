#!/bin/bash
# LL with empty contributions mended, express start after admission, admission from shared memory,
# waiting callers yield only for host work or after 20 us: latency, sweeps, then the suite's core
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r40; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for np in 2 4 8; do
  echo "== np$np 8B $(date +%T)" >> $R/mpi.txt
  $M -np $np $P -b 8 -e 8 -w 20 -n 300 -x allreduce >> $R/mpi.txt 2>&1
done
echo "== np4 8B again" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 20 -n 1000 -x allreduce >> $R/mpi.txt 2>&1
echo "== np4 8B bind-to core" >> $R/mpi.txt; timeout 60 mpirun --bind-to core -np 4 $P -b 8 -e 8 -w 20 -n 300 -x allreduce >> $R/mpi.txt 2>&1
for ll in 16384 0; do for np in 2 4 8; do
  echo "== np$np sweep ll_bytes $ll" >> $R/mpi.txt
  $M -np $np --mca coll_dfccl_gpu_ll_bytes $ll $P -b 8 -e 64K -f 4 -w 10 -n 100 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
done; done
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 300 -x allreduce > $R/trace_out.txt 2> $R/trace.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace.txt > $R/summary.txt 2>&1
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 330 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4 8" --only 'coll_np|disorder_np4|scenario_np4|threads_np4|chaos_np4|sync_np4|racecheck_ll|racecheck_oneshot|memcheck_np2' --logdir /tmp/glogs --timeout 100 > $R/suite.txt 2>&1
echo "suite rc $?" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && gzip -f r40/trace.txt; mkdir -p r40/glogs; for f in /tmp/glogs/*.log; do tail -c 20000 $f > r40/glogs/$(basename $f); done; tar czf $OUT/r40.tgz r40
cat $R/when.txt; grep -h "== \|allreduce   \|wrong\|FAIL" $R/mpi.txt | grep -v "sweep" | cut -c1-150 | head -20
cut -c1-220 $R/summary.txt | head -8; cat $R/suite.txt | tail -30
