#!/bin/bash
# The reducers out of line (__noinline__), so that the scheduler and LL path are short and
# contiguous: 8 B side by side with the code before (base), alternated in one job; the GPU suite on
# the new code with the sanitizers at 2 ranks; 2 and 8 ranks; 256 MiB both; sizes; a trace.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r59; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r59.tgz r59); }
{ date -u; nvidia-smi -L; } > $R/when.txt
# the code before, built beside (the engine library only) while the suite runs
( mkdir -p /tmp/base && tar xzf $DFCCL_CHECKOUT/.device/base/*.tar.gz -C /tmp/base --strip-components=1 &&
  cd /tmp/base && ./configure --with-cuda=/usr/local/cuda --with-ucx=/tmp/ucx/usr CPPFLAGS=-I/tmp/ucx/usr/include >/dev/null 2>&1 &&
  make -j8 src/engine/libdfccl.la > $R/base_build.txt 2>&1; echo "base build rc $? at ${SECONDS}s" >> $R/base_build.txt ) &
BPID=$!
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
$DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2 4" --only 'coll_np|disorder_np4|sync_np4|mixed_disorder_np4|racecheck_ll|memcheck_np2' --logdir /tmp/glogs --timeout 200 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
wait $BPID
C=$(find / -name mca_coll_dfccl.so -path "*openmpi*" -not -path "/tmp/*" 2>/dev/null | head -1)
E=$(readlink -f $(ldd $C | awk '/libdfccl\.so/{print $3}'))
echo "component $C engine $E" >> $R/when.txt
cp $E /tmp/lib_new.so; cp $(readlink -f /tmp/base/src/engine/.libs/libdfccl.so) /tmp/lib_base.so
use() { cp -f /tmp/lib_$1.so $E; }
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2; do
  for v in new base; do
    use $v; echo "== np4 8B $v #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
for v in new base; do use $v; echo "== np2 8B $v" >> $R/mpi.txt; $M -np 2 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
for v in new base; do use $v; echo "== np8 8B $v" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
for v in new base; do use $v; echo "== np4 256M $v" >> $R/mpi.txt; $M -np 4 $P -b 256M -e 256M -w 3 -n 10 >> $R/mpi.txt 2>&1; done
save
use new
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8.txt 2> $R/trace_8.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8.txt > $R/summary_8.txt 2>&1
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8.txt > $R/ranks_8.txt 2>&1
gzip -f $R/trace_*.txt; save
for v in new base; do use $v; echo "== np4 sizes $v" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 64K -f 8 -w 20 -n 200 -x allreduce -x allgather -x reduce_scatter >> $R/mpi.txt 2>&1; done
use new; save
cat $R/when.txt; tail -2 $R/base_build.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
cut -c1-12,110-420 $R/summary_8.txt | grep -v "gap p90"; head -8 $R/ranks_8.txt
tail -16 $R/suite.txt
