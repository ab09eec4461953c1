#!/bin/sh
# "--mca coll dfccl" alone cannot work (nothing would provide the other
# collectives): the job must fail, and dfccl must say which list to use.
# With that list the job must run and select dfccl; with ^dfccl, not select it.
# Run from the build tree (make check's working directory).
set -u
: "${MPIRUN:=mpirun}"
path="$DFCCL_COMPONENT_DIR:$OMPI_PKGLIBDIR"
out=$(timeout 120 "$MPIRUN" -np 2 --oversubscribe --allow-run-as-root \
        --mca mca_base_component_path "$path" --mca coll dfccl \
        -x LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR" contrib/examples/dfccl_demo 2>&1) && {
  echo "selection: a job with --mca coll dfccl alone should fail"; exit 1; }
echo "$out" | grep -q 'dfccl,tuned,libnbc,basic,self' || {
  echo "selection: no message naming the list to use:"; echo "$out"; exit 1; }
out=$(timeout 120 "$MPIRUN" -np 2 --oversubscribe --allow-run-as-root \
        --mca mca_base_component_path "$path" --mca coll dfccl,tuned,libnbc,basic,self \
        --mca coll_dfccl_host_buffers engine --mca coll_base_verbose 10 \
        -x LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR" contrib/examples/dfccl_demo 2>&1) || {
  echo "selection: the suggested list failed:"; echo "$out"; exit 1; }
echo "$out" | grep -Eq 'selecting dfccl|component available: dfccl' || {
  echo "selection: dfccl not selected with the suggested list"; echo "$out" | tail -20; exit 1; }
out=$(timeout 120 "$MPIRUN" -np 2 --oversubscribe --allow-run-as-root \
        --mca mca_base_component_path "$path" --mca coll ^dfccl \
        --mca coll_base_verbose 10 -x LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR" \
        test/mpi/fallback_check --expect stock 2>&1) || {
  echo "selection: --mca coll ^dfccl failed:"; echo "$out"; exit 1; }
echo "$out" | grep -Eq 'selecting dfccl|component available: dfccl' && { echo "selection: ^dfccl still selected dfccl"; exit 1; }
echo "selection: 3 passed, 0 failed"
