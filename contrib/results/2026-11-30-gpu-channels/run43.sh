#!/bin/bash
# b1f19f5's ring fallback of the direct path, first time on a GPU: direct_fallback_np8 and coll_np4
# (default routing); mixed_disorder at 8 ranks with the direct path on (gpu_direct_bytes 384 KiB,
# the default routing's threshold), seeds 1-4, seed 1 with verbose 3 for the mapping errors;
# 256 MiB allreduce at 4 ranks three times; the 8 B trace at 4 ranks as today's baseline.
cd /tmp/dfccl && make -j16 check TESTS= >/dev/null 2>&1
R=/tmp/r43; mkdir -p $R
{ date -u; nvidia-smi -L; } > $R/when.txt
export DFCCL_COMPONENT_DIR=/tmp/dfccl/test/components DFCCL_ENGINE_LIBDIR=/tmp/dfccl/src/engine/.libs
timeout 200 $DFCCL_CHECKOUT/test/gpu/run_gpu_tests.sh --np-list "4 8" --only 'direct_fallback|coll_np4|racecheck_direct' --logdir /tmp/glogs --timeout 100 > $R/suite.txt 2>&1
echo "suite rc $?" >> $R/suite.txt
T=$DFCCL_CHECKOUT/test/mpi/run_mpi_test.sh
one() {  # name mca args...
  local name=$1 mca=$2; shift 2
  (DFCCL_TEST_MCA="--mca coll_dfccl_timeout 60 $mca" DFCCL_TEST_TIMEOUT=40 $T 8 test/mpi/disorder_check "$@") > $R/$name.log 2>&1
  echo "$name rc $? $(grep -c '^FAIL rank' $R/$name.log) $(grep -h 'FAIL rank' $R/$name.log | head -1 | cut -c1-120)" >> $R/mixed.txt
}
D="--mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu_direct_bytes 393216"
one mixed_direct_seed1_v3 "$D --mca coll_dfccl_verbose 3" --memory mixed --iterations 8 --seed 1
for s in 2 3 4; do one mixed_direct_seed$s "$D" --memory mixed --iterations 8 --seed $s; done
grep -ih "map\|ipc\|fall" $R/mixed_direct_seed1_v3.log | sort | uniq -c | sort -rn | head -20 > $R/mapping_lines.txt
M="timeout 60 mpirun --oversubscribe --bind-to none"
P="contrib/perf/dfccl_perf --memory device -c 1 --no-progress"
for i in 1 2 3; do echo "== np4 256M #$i" >> $R/mpi.txt; $M -np 4 $P -b 256M -e 256M -w 3 -n 10 -x allreduce >> $R/mpi.txt 2>&1; done
$M -np 4 --mca coll_dfccl_gpu_trace 1 $P -b 8 -e 8 -w 20 -n 500 -x allreduce > $R/trace_out.txt 2> $R/trace.txt
python3 $DFCCL_CHECKOUT/contrib/gpu_trace_summary.py $R/trace.txt > $R/summary.txt 2>&1
cd /tmp && gzip -f r43/trace.txt; for f in r43/mixed_direct_seed*.log; do tail -c 30000 $f > $f.tail; mv $f.tail $f; done
mkdir -p r43/glogs; for f in /tmp/glogs/*.log; do tail -c 20000 $f > r43/glogs/$(basename $f); done; tar czf $OUT/r43.tgz r43
cat $R/when.txt $R/suite.txt $R/mixed.txt $R/mapping_lines.txt; grep -h "== \|allreduce   " $R/mpi.txt | cut -c1-150; cat $R/trace_out.txt | tail -3; head -8 $R/summary.txt | cut -c1-220
