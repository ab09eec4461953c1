#!/bin/bash
# run_bed_test.sh HOSTS RANKS_PER_HOST PROGRAM [ARGS...]
#
# Runs one MPI test program across HOSTS emulated hosts (cluster.sh) with
# RANKS_PER_HOST ranks on each, for `make check`: brings a bed up, runs the
# program through test/mpi/run_mpi_test.sh (same environment, timeout and
# verdict as the single-host tests) and always brings the bed down again,
# also after a failure, a timeout or a signal. Exits 77 (skip) with the
# reason where network namespaces cannot be made (not root, no netns).
#
# Beds for tests are named apart from one made by hand (DFCCL_BED_PREFIX,
# default dfccl-check-), and a lock (/run/lock/<prefix>bed.lock) lets one
# such test at a time use them, also across build trees.
#
# Environment, besides run_mpi_test.sh's:
#   DFCCL_BED_LOCK_WAIT  seconds to wait for the lock (default: 1800)
#   DFCCL_BED_DRIVER     a script run in place of run_mpi_test.sh, with its
#                        arguments (NP PROGRAM [ARGS...]) and environment, for
#                        programs that are checked from outside rather than
#                        by their own verdict line

set -eu

if [ $# -lt 3 ]; then
    echo "usage: $0 HOSTS RANKS_PER_HOST PROGRAM [ARGS...]" >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hosts=$1
per_host=$2
shift 2
case $hosts$per_host in
    *[!0-9]*) echo "$0: HOSTS and RANKS_PER_HOST are numbers" >&2; exit 2 ;;
esac
name=$(basename "$1")
export DFCCL_BED_PREFIX=${DFCCL_BED_PREFIX-dfccl-check-}

if ! reason=$("$here/cluster.sh" probe 2>&1); then
    echo "SKIP: $name: no multi-host bed here: ${reason#cluster.sh: }"
    exit 77
fi

lock=/run/lock/${DFCCL_BED_PREFIX}bed.lock
exec 9> "$lock"
# Before the run's timeout starts: the wait for another test's bed must not
# count against this test's time.
if ! flock -w "${DFCCL_BED_LOCK_WAIT:-1800}" 9; then
    echo "FAIL: $name: the multi-host bed stayed busy (lock $lock)" >&2
    exit 1
fi

# Children do not hold the lock: an orted that outlived its job would
# otherwise keep the next test waiting.
cluster() {
    "$here/cluster.sh" "$@" 9>&-
}
trap 'status=$?; cluster down || { echo "FAIL: $name: the bed was not removed" >&2; status=1; }
      exit "$status"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# Holding the lock, no other test uses a bed of this prefix: what exists is
# left from a test that was killed before it could clean up.
cluster down
cluster up "$hosts"

export DFCCL_BED_RANKS_PER_HOST=$per_host
export DFCCL_BED_MPIRUN=${MPIRUN:-mpirun}
export MPIRUN=$here/bed_mpirun.sh
# In the background, so that a signal to this script reaches the run at
# once (run_mpi_test.sh then stops mpirun) instead of after it ends.
"${DFCCL_BED_DRIVER:-$here/../mpi/run_mpi_test.sh}" "$((hosts * per_host))" "$@" 9>&- &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid" || true; exit 143' TERM HUP
trap 'kill -TERM "$pid" 2>/dev/null; wait "$pid" || true; exit 130' INT
status=0
wait "$pid" || status=$?
exit "$status"
