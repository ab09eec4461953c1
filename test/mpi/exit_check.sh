#!/bin/bash
# exit_check.sh NP [PROGRAM [ARGS...]]
#
# Every rank of test/mpi/exit_check runs collectives the engine carries and
# then calls exit() without MPI_Finalize, as an application does whose own
# check failed: the libraries' teardown then runs while the engine's threads
# exist. The job runs through run_mpi_test.sh (component path, timeout, the
# "exit_check: N passed, 0 failed" line) with --enable-recovery added (Open
# MPI 4.1 would otherwise kill the other ranks as soon as one exits without
# MPI_Finalize, before they reach their own exit). It passes when the job
# ended in time, every rank said it was about to exit with its checks all
# passed, and no rank died by a signal or printed a backtrace.
#
# DFCCL_TEST_MCA is passed on (the caller's mpirun arguments); PROGRAM
# defaults to test/mpi/exit_check.
# Exit status: 0 pass, 1 fail.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
np=${1:?usage: $0 NP [PROGRAM [ARGS...]]}
shift
[ $# -gt 0 ] || set -- test/mpi/exit_check
out=$(mktemp "${TMPDIR:-/tmp}/exit_check.XXXXXX")
trap 'rm -f "$out"' EXIT

DFCCL_TEST_MCA="${DFCCL_TEST_MCA:-} --enable-recovery" "$here/run_mpi_test.sh" "$np" "$@" > "$out" 2>&1
status=$?
cat "$out"
fail=0
if [ "$status" -ne 0 ]; then
    echo "FAIL: exit_check at np=$np: the job failed (status $status)"
    fail=1
fi
said=$(grep -c '^exit_check: rank [0-9]*: [1-9][0-9]* passed, 0 failed; .* without MPI_Finalize' "$out")
if [ "$said" -ne "$np" ]; then
    echo "FAIL: exit_check at np=$np: $said of $np ranks reached their exit with all checks passed"
    fail=1
fi
if grep -Eq 'Caught signal|exited on signal|Segmentation fault|Bus error|==== backtrace' "$out"; then
    echo "FAIL: exit_check at np=$np: a rank died by a signal on its way out:"
    grep -E 'Caught signal|exited on signal|Segmentation fault|Bus error' "$out" | head -5
    fail=1
fi
[ "$fail" -eq 0 ] && echo "PASS: exit_check at np=$np: every rank exited without a signal"
exit "$fail"
