#!/bin/sh
# gpu_check.sh - make check's entry to the GPU suite: runs
# run_gpu_tests.sh --quick where a GPU is usable, and otherwise skips with
# automake's code 77, saying why (CI machines have no GPU).
#
# Environment (from the Makefile): DFCCL_TEST_CUDA=yes when configure found
# CUDA (the GPU programs are built only then).

if [ "${DFCCL_TEST_CUDA:-no}" != yes ]; then
    echo "SKIP: configure found no CUDA, so the GPU tests were not built"
    exit 77
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "SKIP: no nvidia-smi (no NVIDIA driver on this machine)"
    exit 77
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "SKIP: nvidia-smi -L lists no GPU"
    exit 77
fi
# make check runs this from the build tree; the logs stay there.
exec "$(dirname "$0")/run_gpu_tests.sh" --quick --builddir . --logdir test/gpu/logs
