#!/bin/bash
# the final kernel (LL default 8 KiB): the rest of the suite, LL against the counters at 16 KiB,
# the legacy-stream wait on and off (trace medians), 256 MiB allreduce unchanged?
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r41; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for np in 2 4 8; do for ll in 16384 0; do
  echo "== np$np 16K ll_bytes $ll" >> $R/mpi.txt
  $M -np $np --mca coll_dfccl_gpu_ll_bytes $ll $P -b 16K -e 16K -w 10 -n 200 -x allreduce -x reduce_scatter >> $R/mpi.txt 2>&1
  $M -np $np --mca coll_dfccl_gpu_ll_bytes $ll $P -b $((16384 * np)) -e $((16384 * np)) -w 10 -n 200 -x allgather >> $R/mpi.txt 2>&1
done; done
for sync in 1 0; do
  $M -np 4 --mca coll_dfccl_gpu_trace 1 --mca coll_dfccl_gpu_sync_legacy_stream $sync $P -b 8 -e 8 -w 20 -n 500 -x allreduce > $R/trace_out_sync$sync.txt 2> $R/trace_sync$sync.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_sync$sync.txt > $R/summary_sync$sync.txt 2>&1
done
for np in 4 8; do echo "== np$np 256M" >> $R/mpi.txt; $M -np $np $P -b 256M -e 256M -w 3 -n 10 -x allreduce >> $R/mpi.txt 2>&1; done
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 380 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 8" --only 'disorder_np|scenario_np|threads_np|chaos_np|sync_np|mixed_|memcheck_mixed|racecheck_ring|racecheck_direct' --logdir /tmp/glogs --timeout 100 > $R/suite.txt 2>&1
echo "suite rc $?" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && gzip -f r41/trace_sync*.txt; mkdir -p r41/glogs; for f in /tmp/glogs/*.log; do tail -c 20000 $f > r41/glogs/$(basename $f); done; tar czf $OUT/r41.tgz r41
cat $R/when.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for s in 1 0; do cut -c1-220 $R/summary_sync$s.txt | head -6; done; cat $R/suite.txt | tail -30
