#!/bin/bash
# The completion entry's marker as a release store at system scope (DFCCL_EXP_CQ_RELEASE=1, same
# binary) against the system fence before a plain store (the landed code), alternated; the probe's fence variants;
# then the suite's core, racecheck and memcheck with the release store.
R=/tmp/r80; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r80.tgz r80); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
nvcc -O2 -arch=sm_90 -o /tmp/probe $DFCCL_CHECKOUT/contrib/gpu_latency_probe.cu && /tmp/probe > $R/probe.txt 2>&1
cuobjdump -sass /tmp/probe 2>/dev/null | grep -o "MEMBAR[.A-Z]*\|FENCE[.A-Z]*\|ST\.E\.STRONG\.SYS[.0-9A-Z]*\|ST\.E[.0-9A-Z]*SYS[.0-9A-Z]*" | sort | uniq -c > $R/probe_sass.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
use() { unset DFCCL_EXP_CQ_RELEASE; [ "$1" = rel ] && export DFCCL_EXP_CQ_RELEASE=1; }
for r in 1 2 3 4; do for v in rel fence; do
  use $v; echo "== np4 $v #$r $(date -u +%T)" >> $R/mpi.txt
  $M -np 4 $P -b 8 -e 4K -f 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1
done; done
for n in 2 8; do for r in 1 2; do for v in rel fence; do use $v; echo "== np$n $v #$r" >> $R/mpi.txt; $M -np $n $P -b 8 -e 4K -f 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done; done; done
for v in rel fence; do use $v; echo "== np4 allgather rs_block $v" >> $R/mpi.txt; $M -np 4 $P -b 64 -e 4K -f 8 -w 50 -n 1000 -x allgather -x reduce_scatter_block >> $R/mpi.txt 2>&1; done
echo "perf done at ${SECONDS}s" >> $R/when.txt; save
use rel
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 240 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "4" --only 'coll_np4|disorder_np4|sync_np4|racecheck_ll|memcheck_np2|memcheck_ll_rs' --logdir /tmp/glogs --timeout 100 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt $R/probe.txt $R/probe_sass.txt; tail -14 $R/suite.txt
grep -h "== \|allreduce   \|allgather   \|reduce_scatter" $R/mpi.txt | cut -c1-150
