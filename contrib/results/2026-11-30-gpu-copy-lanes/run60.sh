#!/bin/bash
# The early send's parts (new trace stamps) and one candidate: the admission copy's host loads
# issued after the send instead of before it (alt), side by side with the code as it is (new),
# alternated in one job; 256 MiB at 4 ranks with the reducers out of line.
R=/tmp/r60; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r60.tgz r60); }
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
use() { cp -f /tmp/lib_$1.so $E; }
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2 3; do
  for v in new alt; do
    use $v; echo "== np4 8B $v #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
  done
done
save
for v in new alt; do
  use $v
  $M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 > $R/trace_out_8_$v.txt 2> $R/trace_8_$v.txt
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace_8_$v.txt > $R/summary_8_$v.txt 2>&1
  python3 $DFCCL_CHECKOUT/contrib/gpu_trace_ranks.py $R/trace_8_$v.txt > $R/ranks_8_$v.txt 2>&1
done
gzip -f $R/trace_*.txt; save
use new; echo "== np4 256M new" >> $R/mpi.txt; $M -np 4 $P -b 256M -e 256M -w 5 -n 40 >> $R/mpi.txt 2>&1
for v in new alt; do use $v; echo "== np8 8B $v" >> $R/mpi.txt; $M -np 8 $P -b 8 -e 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
use new; save
cat $R/when.txt; tail -1 $R/alt_build.txt; grep -h "== \|allreduce   \|allgather   \|reduce_scatter   " $R/mpi.txt | cut -c1-150
for v in new alt; do echo "-- $v"; cut -c1-12,110-500 $R/summary_8_$v.txt | grep -v "gap p90"; head -7 $R/ranks_8_$v.txt; done
