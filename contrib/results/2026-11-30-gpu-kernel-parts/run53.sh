#!/bin/bash
# Why an LL receive with every line there takes ~3 us: the trace's new parts (lines: until
# thread 0 had handled its lines; polls: its loads again), and the probe's line round trip
# between two blocks (volatile vs GPU-scope relaxed). DFCCL_EXP_LL_CAP_NS as in run 52.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r53; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
nvcc -O2 -arch=sm_90 -o /tmp/probe $DFCCL_CHECKOUT/contrib/gpu_latency_probe.cu && /tmp/probe > $R/probe.txt 2>&1
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  for v in "cap4|" "cap16|-x DFCCL_EXP_LL_CAP_NS=16000" "cap50|-x DFCCL_EXP_LL_CAP_NS=50000"; do
    n=${v%%|*}; a=${v#*|}
    echo "== np4 8B $n #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $a $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
for v in "8|8|" "8cap16|8|-x DFCCL_EXP_LL_CAP_NS=16000"; do
  n=${v%%|*}; rest=${v#*|}; b=${rest%%|*}; a=${rest#*|}
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $a $P -b $b -e $b -w 20 -n 500 > $R/trace_out_$n.txt 2> $R/trace_$n.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_$n.txt > $R/summary_$n.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_$n.txt > $R/ranks_$n.txt 2>&1
done
echo "== np8 8B cap4" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np8 8B cap16" >> $R/mpi.txt; $M -np 8 -x DFCCL_EXP_LL_CAP_NS=16000 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
cd /tmp && gzip -f r53/trace_*.txt; tar czf $OUT/r53.tgz r53
cat $R/when.txt $R/probe.txt; grep -h "== \|allreduce   " $R/mpi.txt | cut -c1-150
for f in $R/summary_*.txt; do echo "-- $f"; cut -c1-20,150-400 $f | grep -v "gap p90" | head -12; done
for f in $R/ranks_*.txt; do echo "-- $f"; head -2 $f | tail -1; done
