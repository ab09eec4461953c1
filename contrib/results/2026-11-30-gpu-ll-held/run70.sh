#!/bin/bash
# Run 69's held LL collective, now with its context filled before the host's release and the
# release polled by four staggered warps; side by side with 331dbf7 (alt) and with the wait first
# (newwf: DFCCL_EXP_LL_WAIT_FIRST=1), alternated in one job, more rounds; the LL sizes checked at
# 8 ranks; a trace; the GPU suite's core; and sync_check's (d) with the wait off, which must fail.
R=/tmp/r70; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r70.tgz r70); }
{ date -u; nvidia-smi -L; } > $R/when.txt
( mkdir -p /tmp/alt && tar xzf $DFCCL_CHECKOUT/.device/alt/*.tar.gz -C /tmp/alt --strip-components=1 &&
  cd /tmp/alt && ./configure --with-cuda=/usr/local/cuda --with-ucx=/tmp/ucx/usr CPPFLAGS=-I/tmp/ucx/usr/include >/dev/null 2>&1 &&
  make -j8 src/engine/libdfccl.la > $R/alt_build.txt 2>&1; echo "alt build rc $? at ${SECONDS}s" >> $R/alt_build.txt ) &
BPID=$!
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
wait $BPID
C=$(find / -name mca_coll_dfccl.so -path "*openmpi*" -not -path "/tmp/*" 2>/dev/null | head -1)
E=$(readlink -f $(ldd $C | awk '/libdfccl\.so/{print $3}'))
echo "component $C engine $E; built at ${SECONDS}s" >> $R/when.txt
cp $E /tmp/lib_new.so; cp $(readlink -f /tmp/alt/src/engine/.libs/libdfccl.so) /tmp/lib_alt.so
use() { cp -f /tmp/lib_${1%wf}.so $E; [ "$1" = newwf ] && X="-x DFCCL_EXP_LL_WAIT_FIRST=1" || X=""; }
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2 3 4 5 6; do
  for v in new newwf alt; do
    use $v; echo "== np4 8B $v #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $X $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
for v in new newwf alt; do use $v; echo "== np4 4K $v" >> $R/mpi.txt; $M -np 4 $X $P -b 4K -e 4K -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
for r in 1 2 3; do for v in new newwf alt; do use $v; echo "== np2 8B $v #$r" >> $R/mpi.txt; $M -np 2 $X $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done; done
for r in 1 2 3; do for v in new newwf alt; do use $v; echo "== np8 8B $v #$r" >> $R/mpi.txt; $M -np 8 $X $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done; done
use new
echo "== np8 LL sizes new" >> $R/mpi.txt
$M -np 8 $P -b 8 -e 16K -f 4 -w 5 -n 20 -x allreduce -x allgather >> $R/mpi.txt 2>&1
echo "== np4 sizes new" >> $R/mpi.txt
$M -np 4 $P -b 8 -e 16K -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8_new.txt 2> $R/trace_8_new.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8_new.txt > $R/summary_8_new.txt 2>&1
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8_new.txt > $R/ranks_8_new.txt 2>&1
gzip -f $R/trace_*.txt; echo "perf done at ${SECONDS}s" >> $R/when.txt; save
$M -np 4 --mca coll_dfccl_gpu_sync_legacy_stream 0 test/gpu/sync_check --iterations 1 > $R/sync_nowait.txt 2>&1
echo "sync_check without the wait: rc $?" >> $R/sync_nowait.txt
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|sync_np|mixed_disorder_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 200 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt; tail -1 $R/alt_build.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
cut -c1-12,110-500 $R/summary_8_new.txt | grep -v "gap p90"; head -7 $R/ranks_8_new.txt
grep -c "FAIL" $R/sync_nowait.txt; grep "FAIL" $R/sync_nowait.txt | head -4; tail -3 $R/sync_nowait.txt
tail -16 $R/suite.txt
