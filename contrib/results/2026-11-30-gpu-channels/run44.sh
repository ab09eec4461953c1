#!/bin/bash
# The head poll (idle block 0 reads the next submission's self-validating head with the control
# words in one trip; quit check every 10 us, no nap between idle polls) and the legacy-stream query:
# 8 B allreduce at 4 ranks against gpu_head_poll 0 and gpu_sync_legacy_stream 0 (interleaved,
# twice), np 2 and 8, small sizes of all three collectives, traces; 256 MiB at 4 ranks traced,
# channels x chunk; suite items that cover every admission path.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r44; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  echo "== np4 8B default #$r" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  echo "== np4 8B head_poll 0 #$r" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_head_poll 0 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  echo "== np4 8B sync_legacy_stream 0 #$r" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_sync_legacy_stream 0 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done
for np in 2 8; do echo "== np$np 8B default" >> $R/mpi.txt; $M -np $np $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
echo "== np4 small, all" >> $R/mpi.txt; $M -np 4 $P -b 32 -e 32K -f 4 -w 10 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
for hp in 1 0; do
  $M -np 4 --mca coll_dfccl_gpu_trace 1 --mca coll_dfccl_gpu_head_poll $hp $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_hp$hp.txt 2> $R/trace_hp$hp.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_hp$hp.txt > $R/summary_hp$hp.txt 2>&1
done
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 256M -e 256M -w 3 -n 10 > $R/trace_out_256M.txt 2> $R/trace_256M.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_256M.txt > $R/summary_256M.txt 2>&1
for ch in 16 32; do for ck in 1M 4M; do
  echo "== np4 256M channels $ch chunk $ck" >> $R/mpi.txt
  $M -np 4 --mca coll_dfccl_gpu_channels $ch --mca coll_dfccl_gpu_direct_chunk_bytes $ck $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
done; done
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 240 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np4|disorder_np4|sync_np4|racecheck_ll' --logdir /tmp/glogs --timeout 100 > $R/suite.txt 2>&1
echo "suite rc $?" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && gzip -f r44/trace_*.txt; mkdir -p r44/glogs; for f in /tmp/glogs/*.log; do tail -c 20000 $f > r44/glogs/$(basename $f); done; tar czf $OUT/r44.tgz r44
cat $R/when.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-130
for f in $R/summary_hp1.txt $R/summary_hp0.txt $R/summary_256M.txt; do echo "-- $f"; cut -c1-215 $f | head -10; done; cat $R/suite.txt | tail -12
