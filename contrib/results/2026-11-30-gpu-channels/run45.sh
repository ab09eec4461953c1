#!/bin/bash
# gpu_channels 0 (auto: as many blocks as the ranks sharing the GPU leave room for; 32 at <= 4
# ranks per H200, 16 at 8) against 16: large and medium sizes at 2, 4 and 8 ranks, interleaved;
# 8 B at 4 ranks; then the suite items whose paths the channel count touches, at the auto count.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r45; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 90 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
$M -np 4 --mca coll_dfccl_verbose 2 $P -b 8 -e 8 -w 5 -n 20 2>&1 | grep -h "GPU backend started" | sort | uniq -c > $R/channels_np4.txt
$M -np 8 --mca coll_dfccl_verbose 2 $P -b 8 -e 8 -w 5 -n 20 2>&1 | grep -h "GPU backend started" | sort | uniq -c > $R/channels_np8.txt
for r in 1 2; do for ch in 0 16; do
  echo "== np4 256M channels $ch #$r" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_channels $ch $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
done; done
for ch in 0 16; do
  echo "== np2 256M,1G channels $ch" >> $R/mpi.txt; $M -np 2 --mca coll_dfccl_gpu_channels $ch $P -b 256M -e 1G -f 4 -w 3 -n 10 >> $R/mpi.txt 2>&1
  echo "== np4 sweep channels $ch" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_channels $ch $P -b 1M -e 1G -f 4 -w 3 -n 10 --time-budget 0.5 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
  echo "== np4 8B channels $ch" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_channels $ch $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done
echo "== np8 256M channels 0 (auto)" >> $R/mpi.txt; $M -np 8 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 330 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|scenario_np4|threads_np4|chaos_np4|sync_np4|direct_fallback|mixed_|memcheck_np2|racecheck_direct' --logdir /tmp/glogs --timeout 100 > $R/suite.txt 2>&1
echo "suite rc $?" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && mkdir -p r45/glogs; for f in /tmp/glogs/*.log; do tail -c 20000 $f > r45/glogs/$(basename $f); done; tar czf $OUT/r45.tgz r45
cat $R/when.txt $R/channels_np*.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
cat $R/suite.txt | tail -20
