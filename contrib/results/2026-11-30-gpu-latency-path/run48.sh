#!/bin/bash
# Experiments on the 8 B allreduce at 4 ranks (auto channels): the completion entry in one word
# without a system-scope fence (DFCCL_EXP_CQE_COMPACT=1), the proxy asking the driver whether the
# kernel ended only when it said so or every 100 us (DFCCL_EXP_EXIT_CHECK_NS=100000); traces with
# both clocks, lined up across the ranks (contrib/gpu_trace_ranks.py).
# The two DFCCL_EXP_* switches were temporary (see 2026-11-30-gpu-latency-path.md, run 48).
cd /tmp/dfccl
R=/tmp/r48; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  for v in "base|" "compact|-x DFCCL_EXP_CQE_COMPACT=1" "exitcheck|-x DFCCL_EXP_EXIT_CHECK_NS=100000" \
           "both|-x DFCCL_EXP_CQE_COMPACT=1 -x DFCCL_EXP_EXIT_CHECK_NS=100000" \
           "both_nolegacy|-x DFCCL_EXP_CQE_COMPACT=1 -x DFCCL_EXP_EXIT_CHECK_NS=100000 --mca coll_dfccl_gpu_sync_legacy_stream 0"; do
    n=${v%%|*}; a=${v#*|}
    echo "== np4 8B $n #$r" >> $R/mpi.txt; $M -np 4 $a $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
for v in "base|" "exitcheck|-x DFCCL_EXP_EXIT_CHECK_NS=100000" "exitcheck_nolegacy|-x DFCCL_EXP_EXIT_CHECK_NS=100000 --mca coll_dfccl_gpu_sync_legacy_stream 0"; do
  n=${v%%|*}; a=${v#*|}
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $a $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_$n.txt 2> $R/trace_$n.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_$n.txt > $R/summary_$n.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_$n.txt > $R/ranks_$n.txt 2>&1
done
echo "== np4 sizes both" >> $R/mpi.txt; $M -np 4 -x DFCCL_EXP_CQE_COMPACT=1 -x DFCCL_EXP_EXIT_CHECK_NS=100000 $P -b 8 -e 1M -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
echo "== np4 256M both" >> $R/mpi.txt; $M -np 4 -x DFCCL_EXP_CQE_COMPACT=1 -x DFCCL_EXP_EXIT_CHECK_NS=100000 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
echo "== np2 8B base/both" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; $M -np 2 -x DFCCL_EXP_CQE_COMPACT=1 -x DFCCL_EXP_EXIT_CHECK_NS=100000 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np8 8B base/both" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; $M -np 8 -x DFCCL_EXP_CQE_COMPACT=1 -x DFCCL_EXP_EXIT_CHECK_NS=100000 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
cd /tmp && gzip -f r48/trace_*.txt; tar czf $OUT/r48.tgz r48
cat $R/when.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for f in $R/summary_*.txt; do echo "-- $f"; cut -c1-215 $f | head -10; done
for f in $R/ranks_*.txt; do echo "-- $f"; cat $f; done
