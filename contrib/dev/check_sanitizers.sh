#!/usr/bin/env bash
# Builds dfccl with ASan and UBSan (no CUDA) in its own folder and runs the
# engine's unit tests and a subset of the MPI suites through the engine
# under them. The MPI programs load the component with dlopen, so the ASan
# runtime is preloaded into every rank; Open MPI's own allocations are not
# ours to judge, so leak checking is off there (it stays on for the engine
# tests, which link nothing but the engine).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${DFCCL_SANITIZE_BUILD_DIR:-$top/_build_sanitize}
"$top/contrib/dev/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" --quiet --without-cuda --enable-sanitizers
make -j"$(nproc)" >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
tests=(src/engine/model/check_model.sh test/engine/test_plan test/engine/test_plan_algos
       test/engine/test_plan_file test/engine/test_ranks)
mpi_tests=(test/mpi/coll_engine_np2.test test/mpi/fallback_engine_np3.test
           test/mpi/hostile_engine_np2.test test/mpi/disorder_engine_np2.test
           test/mpi/threads_engine_np2.test test/mpi/persist_order_np3.test
           test/mpi/failed_comm_nb_op_differs_np3.test)
set +e
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 make -j1 check TESTS="${tests[*]}"
rc=$?
DFCCL_TEST_MCA_EXTRA="-x LD_PRELOAD=$asan:$ubsan -x ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 -x UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1" \
  make -j1 check TESTS="${mpi_tests[*]}"
rc2=$?
set -e
echo "dfccl sanitizer check: engine tests rc=$rc, MPI subset rc=$rc2"
[ $rc -eq 0 ] && [ $rc2 -eq 0 ]
