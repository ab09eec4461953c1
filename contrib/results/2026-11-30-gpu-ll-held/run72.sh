#!/bin/bash
# The landed code: run 69's held LL collective (thread 0 polls for the host's release before any
# input is read), without the experiment's switch. The GPU suite's core first, then (d) with the
# wait off (must fail), then 8 B side by side with 331dbf7 (alt).
R=/tmp/r72; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r72.tgz r72); }
{ date -u; nvidia-smi -L; } > $R/when.txt
( mkdir -p /tmp/alt && tar xzf $DFCCL_CHECKOUT/.device/alt/*.tar.gz -C /tmp/alt --strip-components=1 &&
  cd /tmp/alt && ./configure --with-cuda=/usr/local/cuda --with-ucx=/tmp/ucx/usr CPPFLAGS=-I/tmp/ucx/usr/include >/dev/null 2>&1 &&
  make -j8 src/engine/libdfccl.la > $R/alt_build.txt 2>&1; echo "alt build rc $? at ${SECONDS}s" >> $R/alt_build.txt ) &
BPID=$!
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np2|disorder_np4|sync_np|mixed_disorder_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 150 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
unset DFCCL_COMPONENT_DIR DFCCL_ENGINE_LIBDIR
M="timeout 60 mpirun --oversubscribe --bind-to none"
$M -np 4 --mca coll_dfccl_gpu_sync_legacy_stream 0 test/gpu/sync_check --iterations 1 > $R/sync_nowait.txt 2>&1
echo "sync_check without the wait: rc $?" >> $R/sync_nowait.txt
save
wait $BPID
C=$(find / -name mca_coll_dfccl.so -path "*openmpi*" -not -path "/tmp/*" 2>/dev/null | head -1)
E=$(readlink -f $(ldd $C | awk '/libdfccl\.so/{print $3}'))
cp $E /tmp/lib_new.so; cp $(readlink -f /tmp/alt/src/engine/.libs/libdfccl.so) /tmp/lib_alt.so
use() { cp -f /tmp/lib_$1.so $E; }
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2 3; do
  for v in new alt; do
    use $v; echo "== np4 8B $v #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
for v in new alt; do use $v; echo "== np8 8B $v" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
for v in new alt; do use $v; echo "== np2 8B $v" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
use new
echo "== np8 LL sizes new" >> $R/mpi.txt
$M -np 8 $P -b 8 -e 16K -f 4 -w 5 -n 20 -x allreduce -x allgather >> $R/mpi.txt 2>&1
echo "perf done at ${SECONDS}s" >> $R/when.txt; save
cat $R/when.txt; tail -1 $R/alt_build.txt; tail -14 $R/suite.txt
grep -c "FAIL" $R/sync_nowait.txt; tail -2 $R/sync_nowait.txt
grep -h "== \|allreduce   \|allgather   " $R/mpi.txt | cut -c1-150
