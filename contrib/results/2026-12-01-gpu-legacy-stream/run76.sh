#!/bin/bash
# The landed code (HEAD) at 8 ranks: the whole GPU suite without the sanitizers (np 8), the
# negative control of sync_check (d) at 8 ranks, and 8 B / 4 KiB at 8 ranks.
R=/tmp/r76; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r76.tgz r76); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
$M -np 8 --mca coll_dfccl_gpu_sync_legacy_stream 0 test/gpu/sync_check --iterations 1 > $R/sync_nowait_np8.txt 2>&1
echo "sync_check without the wait: rc $?" >> $R/sync_nowait_np8.txt
for r in 1 2; do echo "== np8 8B #$r" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
echo "== np8 4K" >> $R/mpi.txt; $M -np 8 $P -b 4K -e 4K -w 50 -n 1000 >> $R/mpi.txt 2>&1
save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 470 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "8" --no-sanitizer --logdir /tmp/glogs --timeout 200 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt; tail -16 $R/suite.txt
grep -c "FAIL" $R/sync_nowait_np8.txt; tail -2 $R/sync_nowait_np8.txt
grep -h "== \|allreduce   " $R/mpi.txt | cut -c1-150
