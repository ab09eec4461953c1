#!/bin/sh
# rank_env.sh RANK VAR=VALUE PROGRAM [ARGS...] - runs PROGRAM with VAR=VALUE
# in its environment on MPI_COMM_WORLD rank RANK only (mpirun sets
# OMPI_COMM_WORLD_RANK), unchanged elsewhere: a launcher for settings that
# differ between ranks, such as one rank declining the GPU side.
rank=$1
setting=$2
shift 2
if [ "${OMPI_COMM_WORLD_RANK:-}" = "$rank" ]; then
    export "${setting?}"
fi
exec "$@"
