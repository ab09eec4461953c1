#!/bin/bash
# The bandwidth movers (gpu_direct_move, gpu_slice_move) as functions of their own (no spills in
# them; the whole kernel inlined spilled 428 bytes): 256 MiB at 4 ranks with 16 and 32 channels;
# the 8 B allreduce at 4 ranks against the channel count (32 channels cost 5 us in run 45), with
# traces at 16 and 32.
cd /tmp/dfccl
R=/tmp/r46; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do for ch in 16 32; do
  echo "== np4 256M channels $ch #$r" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_channels $ch $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
done; done
for ch in 16 20 24 28 32; do
  echo "== np4 8B channels $ch" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_channels $ch $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done
for ch in 24; do echo "== np4 256M channels $ch" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_channels $ch $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1; done
for ch in 16 32; do
  $M -np 4 --mca coll_dfccl_gpu_trace 1 --mca coll_dfccl_gpu_channels $ch $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_ch$ch.txt 2> $R/trace_ch$ch.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_ch$ch.txt > $R/summary_ch$ch.txt 2>&1
done
cd /tmp && gzip -f r46/trace_*.txt; tar czf $OUT/r46.tgz r46
cat $R/when.txt; grep -h "== \|allreduce   " $R/mpi.txt | cut -c1-150
for f in $R/summary_ch16.txt $R/summary_ch32.txt; do echo "-- $f"; cut -c1-215 $f | head -10; done
