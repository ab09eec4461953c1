#!/bin/bash
# The final code of the early reduce-scatter (no switch): memcheck and racecheck of the LL
# reduce_scatter_block at 2 ranks (the new suite items), and the core at 2 ranks.
R=/tmp/r79; mkdir -p $R
save() { (cd /tmp && tar czf $OUT/r79.tgz r79); }
{ date -u; nvidia-smi -L; } > $R/when.txt
cd /tmp/dfccl && make -j8 check TESTS= >/dev/null 2>&1
echo "built at ${SECONDS}s" >> $R/when.txt
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 100 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "2" --only 'll_rs_np2|sync_np2|disorder_np2' --logdir /tmp/glogs --timeout 60 > $R/suite.txt 2>&1
echo "suite rc $? at ${SECONDS}s" >> $R/suite.txt
grep -h "RACECHECK SUMMARY\|ERROR SUMMARY\|passed" /tmp/glogs/*.log >> $R/suite.txt 2>/dev/null
mkdir -p $R/glogs; for f in /tmp/glogs/*.log; do tail -c 12000 $f > $R/glogs/$(basename $f); done
save
cat $R/when.txt; tail -14 $R/suite.txt
