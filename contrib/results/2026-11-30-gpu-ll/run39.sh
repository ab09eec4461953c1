#!/bin/bash
# LL one-shot: latency (trace), LL against the counter one-shot, then correctness
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r39; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for np in 2 4 8; do
  echo "== np$np 8B LL $(date +%T)" >> $R/mpi.txt
  $M -np $np $P -b 8 -e 8 -w 20 -n 300 -x allreduce >> $R/mpi.txt 2>&1
done
echo "== np4 8B ll off" >> $R/mpi.txt
$M -np 4 --mca coll_dfccl_gpu_ll_bytes 0 $P -b 8 -e 8 -w 20 -n 300 -x allreduce >> $R/mpi.txt 2>&1
echo "== np4 8B LL no legacy sync" >> $R/mpi.txt
$M -np 4 --mca coll_dfccl_gpu_sync_legacy_stream 0 $P -b 8 -e 8 -w 20 -n 300 -x allreduce >> $R/mpi.txt 2>&1
for ll in 16384 0; do for np in 4 8; do
  echo "== np$np sweep ll_bytes $ll" >> $R/mpi.txt
  $M -np $np --mca coll_dfccl_gpu_ll_bytes $ll $P -b 8 -e 64K -f 4 -w 10 -n 100 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
done; done
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 300 -x allreduce > $R/trace_out.txt 2> $R/trace.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace.txt > $R/summary.txt 2>&1
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 200 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "4" --only 'coll_np|disorder_np|racecheck_ll_np2' --logdir /tmp/glogs --timeout 90 > $R/suite.txt 2>&1
grep -h "RACECHECK SUMMARY" /tmp/glogs/racecheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && gzip -f r39/trace.txt; cp -r /tmp/glogs r39/ 2>/dev/null; tar czf $OUT/r39.tgz r39
cat $R/when.txt; grep -h "== \|rc [^0]\|allreduce   \|allgather   \|reduce_scatter   \|wrong\|FAIL" $R/mpi.txt | cut -c1-150
cut -c1-220 $R/summary.txt | head -8; cat $R/suite.txt | tail -8
