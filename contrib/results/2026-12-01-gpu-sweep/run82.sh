#!/bin/bash
# The landed code: the whole GPU suite at 2 ranks with every sanitizer item, and the suite's core at 8.
R=/tmp/r82; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r82.tgz r82); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 300 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2" --logdir /tmp/glogs --timeout 150 > $R/suite_np2.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite_np2.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" /tmp/glogs/racecheck*.log /tmp/glogs/memcheck*.log >> $R/suite_np2.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
timeout 150 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "8" --no-sanitizer --only 'coll_np8|disorder_np8|sync_np8|mixed_disorder_np8' --logdir /tmp/glogs8 --timeout 120 > $R/suite_np8.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite_np8.txt
save
cat $R/when.txt; tail -25 $R/suite_np2.txt; tail -8 $R/suite_np8.txt
