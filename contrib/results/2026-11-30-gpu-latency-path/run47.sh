#!/bin/bash
# The landed kernel (e19b486: quit scan short-circuit) on a GPU: 8 B allreduce at 4 ranks with auto
# (32) and 16 channels, and against the idle nap (gpu_poll_max_ns) and the legacy-stream wait;
# traces; 256 MiB repeat; channels_mismatch_np4; racecheck of the ll, one-shot and ring paths.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r47; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  for v in "auto|" "ch16|--mca coll_dfccl_gpu_channels 16" "auto_poll0|--mca coll_dfccl_gpu_poll_max_ns 0" \
           "auto_poll256|--mca coll_dfccl_gpu_poll_max_ns 256" "ch16_poll0|--mca coll_dfccl_gpu_channels 16 --mca coll_dfccl_gpu_poll_max_ns 0" \
           "auto_poll0_nolegacy|--mca coll_dfccl_gpu_poll_max_ns 0 --mca coll_dfccl_gpu_sync_legacy_stream 0"; do
    n=${v%%|*}; a=${v#*|}
    echo "== np4 8B $n #$r" >> $R/mpi.txt; $M -np 4 $a $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
for v in "auto|" "auto_poll0|--mca coll_dfccl_gpu_poll_max_ns 0"; do
  n=${v%%|*}; a=${v#*|}
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $a $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_$n.txt 2> $R/trace_$n.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_$n.txt > $R/summary_$n.txt 2>&1
done
for r in 1 2; do echo "== np4 256M auto #$r" >> $R/mpi.txt; $M -np 4 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1; done
echo "== np4 256M auto poll0" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_poll_max_ns 0 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
echo "== np4 small sizes auto poll0" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_poll_max_ns 0 $P -b 8 -e 64K -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 200 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'channels_mismatch_np4|racecheck_ll|racecheck_oneshot|racecheck_ring' --logdir /tmp/glogs --timeout 120 > $R/suite.txt 2>&1
echo "suite rc $?" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && mkdir -p r47/glogs; for f in /tmp/glogs/*.log; do tail -c 20000 $f > r47/glogs/$(basename $f); done
gzip -f r47/trace_*.txt; tar czf $OUT/r47.tgz r47
cat $R/when.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for f in $R/summary_*.txt; do echo "-- $f"; cut -c1-215 $f | head -10; done
tail -12 $R/suite.txt
