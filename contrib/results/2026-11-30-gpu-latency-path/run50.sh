#!/bin/bash
# The code as landed: the proxy's exit check, the trace's new steps (sent, received) and clocks.
# 8 B at 4 ranks with the trace lined up across ranks; then the suite at 8 ranks (not run on the
# kernels since run 41) with the mixed, fallback and channel-mismatch items; memcheck and racecheck
# of the LL path; then, while time is left, 8 B at 2 and 8 ranks and 256 MiB at 4.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r50; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do echo "== np4 8B #$r" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8B.txt 2> $R/trace_8B.txt
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 32K -e 32K -w 20 -n 300 > $R/trace_out_32K.txt 2> $R/trace_32K.txt
for n in 8B 32K; do
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_$n.txt > $R/summary_$n.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_$n.txt > $R/ranks_$n.txt 2>&1
done
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 330 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "8" --only '_np8|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 120 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
[ $SECONDS -lt 470 ] && { echo "== np2 8B" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; }
[ $SECONDS -lt 480 ] && { echo "== np8 8B" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; }
[ $SECONDS -lt 490 ] && { echo "== np4 256M" >> $R/mpi.txt; $M -np 4 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1; }
cd /tmp && mkdir -p r50/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > r50/glogs/$(basename $f); done
gzip -f r50/trace_*.txt; tar czf $OUT/r50.tgz r50
cat $R/when.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for f in $R/summary_*.txt; do echo "-- $f"; cut -c1-260 $f | head -6; done
for f in $R/ranks_*.txt; do echo "-- $f"; cat $f; done
tail -22 $R/suite.txt
