#!/bin/bash
# The code to land: the LL context in shared memory, the LL receive attempt's wait
# (gpu_ll_wait_ns, 16 us), the shorter admission copy; the trace's parts "first" (thread 0's
# first line load back) and "lines"; the probe with a page-crossing chain; the kernel's size;
# the suite at 4 ranks and the sanitizers at 2.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r54; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r54.tgz r54); }
{ date -u; nvidia-smi -L; } > $R/when.txt
{ cuobjdump -res-usage src/kernels/.libs/daemon_kernel.o 2>&1 | grep -i "daemon\|REG" | head -4
  echo "SASS instructions: $(cuobjdump -sass src/kernels/.libs/daemon_kernel.o | grep -c '^ *\/\*[0-9a-f]*\*\/ ')"; } > $R/kernel_size.txt 2>&1
nvcc -O2 -arch=sm_90 -o /tmp/probe $DFCCL_CHECKOUT/contrib/gpu_latency_probe.cu && /tmp/probe > $R/probe.txt 2>&1
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  for v in "default|" "wait4us|--mca coll_dfccl_gpu_ll_wait_ns 4000"; do
    n=${v%%|*}; a=${v#*|}
    echo "== np4 8B $n #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $a $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8.txt 2> $R/trace_8.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8.txt > $R/summary_8.txt 2>&1
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8.txt > $R/ranks_8.txt 2>&1
echo "== np2 8B" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np8 8B" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
echo "== np4 sizes" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 64K -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
echo "== np4 256M" >> $R/mpi.txt; $M -np 4 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1
gzip -f $R/trace_*.txt; save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np4|disorder_np4|scenario_np4|threads_np4|chaos_np4|sync_np4|direct_fallback|mixed_|channels_mismatch|memcheck_np2|racecheck_ll|racecheck_oneshot' --logdir /tmp/glogs --timeout 150 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt $R/kernel_size.txt $R/probe.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
cut -c1-20,150-420 $R/summary_8.txt | grep -v "gap p90"; head -2 $R/ranks_8.txt | tail -1
tail -22 $R/suite.txt
