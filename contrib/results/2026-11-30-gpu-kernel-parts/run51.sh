#!/bin/bash
# The kernel's parts in SM cycles (the trace's new "cycles:" field) for the 8 B and 32 KiB
# allreduce at 4 ranks; the price list of contrib/gpu_latency_probe.cu (now with dependent-load
# chains and the SM clock); the SM clock while the benchmark runs (nvidia-smi); the legacy-stream
# wait as a query first (DFCCL_EXP_LEGACY_SYNC=1: the synchronize alone, as before; temporary);
# racecheck of the LL path on this kernel; 8 B at 2 and 8 ranks.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r51; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
nvcc -O2 -arch=sm_90 -o /tmp/probe $DFCCL_CHECKOUT/contrib/gpu_latency_probe.cu && /tmp/probe > $R/probe.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate --format=csv,noheader -lms 250 > $R/smi_clocks.txt 2>&1 &
SMI=$!
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  for v in "query|" "sync|-x DFCCL_EXP_LEGACY_SYNC=1" "nolegacy|--mca coll_dfccl_gpu_sync_legacy_stream 0"; do
    n=${v%%|*}; a=${v#*|}
    echo "== np4 8B $n #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $a $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
for n in 8 32K; do
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b $n -e $n -w 20 -n 500 > $R/trace_out_$n.txt 2> $R/trace_$n.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_$n.txt > $R/summary_$n.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_$n.txt > $R/ranks_$n.txt 2>&1
done
echo "== np2 8B" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np8 8B" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np4 256M" >> $R/mpi.txt; $M -np 4 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
kill $SMI
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2" --only 'racecheck_ll' --logdir /tmp/glogs --timeout 200 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && mkdir -p r51/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > r51/glogs/$(basename $f); done
gzip -f r51/trace_*.txt; tar czf $OUT/r51.tgz r51
cat $R/when.txt $R/probe.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for f in $R/summary_*.txt; do echo "-- $f"; cut -c1-260 $f | head -8; done
for f in $R/ranks_*.txt; do echo "-- $f"; cat $f; done
awk -F, '{print $2}' $R/smi_clocks.txt | sort | uniq -c | sort -rn | head -5
tail -8 $R/suite.txt
