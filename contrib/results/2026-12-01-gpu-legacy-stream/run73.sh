#!/bin/bash
# The final commit of the held-LL change (host fixes after run 72): the GPU suite's core, (d) with
# the wait off (must fail), 8 B at 2/4/8 ranks, and a trace at 4 ranks.
R=/tmp/r73; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r73.tgz r73); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|sync_np|mixed_disorder_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 150 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
unset DFCCL_COMPONENT_DIR DFCCL_ENGINE_LIBDIR
M="timeout 60 mpirun --oversubscribe --bind-to none"
$M -np 4 --mca coll_dfccl_gpu_sync_legacy_stream 0 test/gpu/sync_check --iterations 1 > $R/sync_nowait.txt 2>&1
echo "sync_check without the wait: rc $?" >> $R/sync_nowait.txt
save
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for n in 4 4 4 8 2; do echo "== np$n 8B $(date -u +%T)" >> $R/mpi.txt; $M -np $n $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8.txt 2> $R/trace_8.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8.txt > $R/summary_8.txt 2>&1
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8.txt > $R/ranks_8.txt 2>&1
gzip -f $R/trace_8.txt; echo "perf done at ${SECONDS}s" >> $R/when.txt; save
cat $R/when.txt; tail -16 $R/suite.txt
grep -c "FAIL" $R/sync_nowait.txt; tail -2 $R/sync_nowait.txt
grep -h "== \|allreduce   " $R/mpi.txt | cut -c1-150
