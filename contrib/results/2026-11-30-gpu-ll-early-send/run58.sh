#!/bin/bash
# The LL early send with its receive in the same command (the admission copy's loads under way
# meanwhile): 8 B at 4 ranks with it and without, side by side; a trace; the GPU suite at the
# defaults with the sanitizers at 2 ranks; then 2 and 8 ranks and sizes for all three collectives.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r58; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r58.tgz r58); }
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  for v in "early|" "no_early|--mca coll_dfccl_gpu_ll_early_send 0"; do
    n=${v%%|*}; a=${v#*|}
    echo "== np4 8B $n #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $a $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
echo "== np4 8B early, sync_legacy_stream 0" >> $R/mpi.txt
$M -np 4 --mca coll_dfccl_gpu_sync_legacy_stream 0 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8.txt 2> $R/trace_8.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8.txt > $R/summary_8.txt 2>&1
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8.txt > $R/ranks_8.txt 2>&1
gzip -f $R/trace_*.txt; save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|sync_np4|mixed_disorder_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 200 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
echo "== np2 8B" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np8 8B" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np4 sizes" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 64K -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
save
cat $R/when.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
cut -c1-12,110-420 $R/summary_8.txt | grep -v "gap p90"; head -8 $R/ranks_8.txt
tail -16 $R/suite.txt
