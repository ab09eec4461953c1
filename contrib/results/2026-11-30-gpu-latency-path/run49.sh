#!/bin/bash
# The LL context in shared memory (filled once per collective by all threads, instead of chains of
# dependent global loads in every attempt) and the proxy's rate-limited exit check: 8 B at 2, 4
# and 8 ranks, traces lined up across ranks, the LL sizes; then the suite items of the LL path.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r49; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2 3; do
  echo "== np4 8B #$r" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done
echo "== np4 8B nolegacy" >> $R/mpi.txt; $M -np 4 --mca coll_dfccl_gpu_sync_legacy_stream 0 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np2 8B" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np8 8B" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
for v in "base|" "nolegacy|--mca coll_dfccl_gpu_sync_legacy_stream 0"; do
  n=${v%%|*}; a=${v#*|}
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $a $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_$n.txt 2> $R/trace_$n.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_$n.txt > $R/summary_$n.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_$n.txt > $R/ranks_$n.txt 2>&1
done
echo "== np4 sizes" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 32K -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 300 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|sync_np4|memcheck_np2|racecheck_ll' --logdir /tmp/glogs --timeout 120 > $R/suite.txt 2>&1
echo "suite rc $?" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
cd /tmp && mkdir -p r49/glogs; for f in /tmp/glogs/*.log; do tail -c 20000 $f > r49/glogs/$(basename $f); done
gzip -f r49/trace_*.txt; tar czf $OUT/r49.tgz r49
cat $R/when.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for f in $R/summary_*.txt; do echo "-- $f"; cut -c1-215 $f | head -10; done
for f in $R/ranks_*.txt; do echo "-- $f"; cat $f; done
tail -14 $R/suite.txt
