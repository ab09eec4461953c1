#!/bin/bash
# The LL context in shared memory (filled once per collective), LL loads without a "memory"
# clobber, the LL combine in registers, block 0 reading the next entry's head with the control
# words (LL and one-shot entries carry no plan: a shorter copy), and the mirror raised after an
# express LL's first attempt. Against run 51 (a different machine): the kernel's parts in cycles.
# DFCCL_EXP_LL_CAP_NS (temporary): an LL attempt's longest wait (4000 as landed).
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r52; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  for v in "cap4|" "cap8|-x DFCCL_EXP_LL_CAP_NS=8000" "cap16|-x DFCCL_EXP_LL_CAP_NS=16000"; do
    n=${v%%|*}; a=${v#*|}
    echo "== np4 8B $n #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $a $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
echo "== np4 8B nolegacy" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_sync_legacy_stream 0 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
for v in "8|8|" "32K|32K|" "8cap16|8|-x DFCCL_EXP_LL_CAP_NS=16000"; do
  n=${v%%|*}; rest=${v#*|}; b=${rest%%|*}; a=${rest#*|}
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $a $P -b $b -e $b -w 20 -n 500 > $R/trace_out_$n.txt 2> $R/trace_$n.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_$n.txt > $R/summary_$n.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_$n.txt > $R/ranks_$n.txt 2>&1
done
echo "== np4 sizes" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 64K -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
echo "== np2 8B" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np8 8B" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np4 256M" >> $R/mpi.txt; $M -np 4 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|sync_np4|mixed_disorder_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 200 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && mkdir -p r52/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > r52/glogs/$(basename $f); done
gzip -f r52/trace_*.txt; tar czf $OUT/r52.tgz r52
cat $R/when.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for f in $R/summary_*.txt; do echo "-- $f"; cut -c1-60,150-300 $f | grep -v "gap p90" | head -12; done
for f in $R/ranks_*.txt; do echo "-- $f"; head -3 $f; done
tail -14 $R/suite.txt
