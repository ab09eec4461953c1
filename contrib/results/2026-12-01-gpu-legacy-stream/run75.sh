#!/bin/bash
# Experiment: ask the legacy default stream whether anything is pending (cuStreamQuery) and skip the
# wait (and the hold) when nothing is (DFCCL_EXP_LEGACY_QUERY=1), against the landed code (same
# binary) and against no wait at all (gpu_sync_legacy_stream 0, the floor of this part).
# sync_check (d), whose legacy stream is busy, must pass under the experiment.
R=/tmp/r75; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r75.tgz r75); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
use() { X=""; unset DFCCL_EXP_LEGACY_QUERY; [ "$1" = query ] && export DFCCL_EXP_LEGACY_QUERY=1; [ "$1" = nowait ] && X="--mca coll_dfccl_gpu_sync_legacy_stream 0"; }
for r in 1 2 3; do for v in host query nowait; do
  use $v; echo "== np4 8B $v #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $X $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done; done
for n in 8 2; do for v in host query; do
  use $v; echo "== np$n 8B $v" >> $R/mpi.txt; $M -np $n $X $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done; done
for v in host query; do use $v
  echo "== np4 sizes $v" >> $R/mpi.txt
  $M -np 4 $P -b 8 -e 1M -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
done
for v in query host; do
  use $v
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8_$v.txt 2> $R/trace_8_$v.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8_$v.txt > $R/summary_8_$v.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8_$v.txt > $R/ranks_8_$v.txt 2>&1
done
gzip -f $R/trace_8_*.txt; echo "perf done at ${SECONDS}s" >> $R/when.txt; save
use query
for n in 2 4 8; do $M -np $n test/gpu/sync_check > $R/sync_query_np$n.txt 2>&1; echo "rc $?" >> $R/sync_query_np$n.txt; done
save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np4|disorder_np4|sync_np|mixed_disorder_np4|memcheck_np2' --logdir /tmp/glogs --timeout 150 > $R/suite.txt 2>&1
echo "suite (query) rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "ERROR SUMMARY" /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt; tail -10 $R/suite.txt; for n in 2 4 8; do tail -2 $R/sync_query_np$n.txt; done
grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for v in query host; do cut -c1-12,110-500 $R/summary_8_$v.txt | grep -v "gap p90"; head -8 $R/ranks_8_$v.txt; done
