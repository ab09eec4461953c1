#!/bin/sh
# bed_mpirun.sh MPIRUN-ARGS...
#
# An mpirun for test/mpi/run_mpi_test.sh (its MPIRUN), so that a test runs
# with the same verdict on the multi-host bed: the same arguments, given
# to `cluster.sh run` (which adds the bed's hosts and reads
# DFCCL_BED_RANKS_PER_HOST and DFCCL_BED_MPIRUN).
set -eu
exec "$(dirname "$0")/cluster.sh" run -- "$@"
