#!/bin/bash
# The landed code (71168eb's kernel): the full benchmark sweep (contrib/gpu_bench.sh: np 2, 4, 8;
# 8 B - 1 GiB; three collectives; the staged stock path at np 4), four rounds of the 8 B - 4 KiB
# allreduce at 4 ranks, then the whole GPU suite at 4 ranks without the sanitizer items.
R=/tmp/r81; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r81.tgz r81); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
timeout 300 bash $DFCCL_CHECKOUT/contrib/gpu_bench.sh $R/bench > $R/bench.log 2>&1
echo "bench rc $? at ${SECONDS}s" >> $R/when.txt; save
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for r in 1 2 3 4; do echo "== np4 #$r $(date -u +%T)" >> $R/mpi.txt; $M -np 4 $P -b 8 -e 4K -f 8 -w 50 -n 1000 >> $R/mpi.txt 2>&1; done
echo "perf done at ${SECONDS}s" >> $R/when.txt; save
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 280 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "4" --no-sanitizer --logdir /tmp/glogs --timeout 150 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt; tail -30 $R/suite.txt; tail -12 $R/bench.log
grep -h "== \|allreduce   " $R/mpi.txt | cut -c1-150
