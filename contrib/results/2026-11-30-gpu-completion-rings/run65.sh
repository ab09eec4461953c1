#!/bin/bash
# A blocking GPU call's wait runs Open MPI's progress at most every coll_dfccl_gpu_wait_progress_ns
# (0: after every empty poll, as before): 0, 2000 and 10000 alternated in one job at 4 ranks,
# 0 and 2000 at 2 and 8; then the GPU suite's core with 2000 set for every rank.
R=/tmp/r65; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r65.tgz r65); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
W="--mca coll_dfccl_gpu_wait_progress_ns"
for r in 1 2 3; do
  for w in 0 2000 10000; do
    echo "== np4 8B wait_progress $w #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $W $w $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
for n in 2 8; do for w in 0 2000; do
  echo "== np$n 8B wait_progress $w" >> $R/mpi.txt; $M -np $n $W $w $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done; done
$M -np 4 $W 2000 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8.txt 2> $R/trace_8.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8.txt > $R/summary_8.txt 2>&1
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8.txt > $R/ranks_8.txt 2>&1
gzip -f $R/trace_*.txt; echo "perf done at ${SECONDS}s" >> $R/when.txt; save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
export OMPI_MCA_coll_dfccl_gpu_wait_progress_ns=2000
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|scenario_np4|threads_np4|sync_np4|mixed_disorder_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 200 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt; grep -h "== \|allreduce   " $R/mpi.txt | cut -c1-150
cut -c1-12,110-500 $R/summary_8.txt | grep -v "gap p90"; head -7 $R/ranks_8.txt
tail -16 $R/suite.txt
