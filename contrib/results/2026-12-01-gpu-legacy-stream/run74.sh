#!/bin/bash
# Experiment: the legacy default stream releases a held LL collective itself (a cuStreamWriteValue64
# into device memory queued behind the application's work; DFCCL_EXP_LEGACY_MEMOP=1), against the
# host's wait (same binary). The GPU suite's core under the experiment (sync_check (d) must pass),
# 8 B side by side at 4/8/2 ranks, the idle nap, and a trace of each.
R=/tmp/r74; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r74.tgz r74); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
use() { [ "$1" = memop ] && export DFCCL_EXP_LEGACY_MEMOP=1 || unset DFCCL_EXP_LEGACY_MEMOP; }
for r in 1 2 3; do for v in host memop; do
  use $v; echo "== np4 8B $v #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done; done
for n in 8 2; do for v in host memop; do
  use $v; echo "== np$n 8B $v" >> $R/mpi.txt; $M -np $n $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done; done
use memop
for nap in 0 1000; do echo "== np4 8B memop poll_max $nap" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_poll_max_ns $nap $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
echo "== np4 LL sizes memop" >> $R/mpi.txt
$M -np 4 $P -b 8 -e 16K -f 8 -w 20 -n 200 -x allreduce -x allgather >> $R/mpi.txt 2>&1
for v in memop host; do
  use $v
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8_$v.txt 2> $R/trace_8_$v.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8_$v.txt > $R/summary_8_$v.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8_$v.txt > $R/ranks_8_$v.txt 2>&1
done
gzip -f $R/trace_8_*.txt; echo "perf done at ${SECONDS}s" >> $R/when.txt; save
use memop
$M -np 4 test/gpu/sync_check > $R/sync_memop_np4.txt 2>&1; echo "rc $?" >> $R/sync_memop_np4.txt
save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|sync_np|mixed_disorder_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 150 > $R/suite.txt 2>&1
echo "suite (memop) rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt; tail -12 $R/suite.txt; tail -3 $R/sync_memop_np4.txt
grep -h "== \|allreduce   \|allgather   " $R/mpi.txt | cut -c1-150
for v in memop host; do cut -c1-12,110-500 $R/summary_8_$v.txt | grep -v "gap p90"; head -8 $R/ranks_8_$v.txt; done
