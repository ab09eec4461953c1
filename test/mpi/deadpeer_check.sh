#!/bin/bash
# deadpeer_check.sh NP [PROGRAM [ARGS...]]
#
# A rank is killed while the others are blocked in an allreduce the dfccl
# engine carries (test/mpi/deadpeer_check.c says what is checked); the
# survivors must get an MPI error within seconds from the engine's check of
# its peers' processes, not from the watchdog (set to 60 s here, so that it
# cannot meet the program's 5 s bound).
#
# Runs the job through run_mpi_test.sh (component path, LD_LIBRARY_PATH,
# outer timeout, signal handling, the "deadpeer_check: N passed, 0 failed"
# line) with these mpirun arguments in DFCCL_TEST_MCA (any DFCCL_TEST_MCA
# of the caller is replaced; DFCCL_TEST_MCA_EXTRA still adds to them):
#   --mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0
#                       (with DFCCL_DEADPEER_GPU=split: --mca
#                       coll_dfccl_node_split 1 instead, for the GPU side's
#                       links over UCX; =node: the GPU side on one node, its
#                       watch of the node's processes and statuses; the
#                       program then gets --memory device)
#   --mca coll_dfccl_timeout 60
#   --mca async_mpi_finalize 1   the survivors' MPI_Finalize skips its
#                       job-wide opening fence, which can wait for the dead
#                       rank forever
#   --enable-recovery   Open MPI 4.1 (ORTE) aborts the whole job as soon as
#                       a rank dies (a death by signal counts as a non-zero
#                       exit, _exit without MPI_Finalize as "exiting
#                       improperly"); with recovery enabled (and the default
#                       --max-restarts 0) the survivors keep running and
#                       mpirun ends, status 0, when they have exited.
# Then it checks that /dev/shm holds no dfccl-<pid>-* segment of any rank of
# the job (the program prints the ranks' pids; it also checks itself that
# the segments it maps have no name left) and that no rank outlived mpirun.
# Open MPI's own segments of the job (vader_segment.<host>.<job>.*, the
# program prints the prefix) that are still there draw a warning only; other
# names that appeared in /dev/shm during the run are listed for information:
# other jobs may run at the same time.
#
# PROGRAM defaults to test/mpi/deadpeer_check (make check runs in the build
# tree). Outside make check, DFCCL_COMPONENT_DIR and DFCCL_ENGINE_LIBDIR
# default to test/components and src/.libs when those exist here.
# DFCCL_TEST_TIMEOUT defaults to 120 s.
#
# Exit status: 0 pass, 1 fail, 77 skip (fewer than 2 ranks, an mpirun other
# than Open MPI 4.x, no /dev/shm).

set -u

usage() {
    echo "usage: $0 NP [PROGRAM [ARGS...]]" >&2
}

if [ $# -lt 1 ]; then
    usage
    exit 1
fi
np=$1
shift
case $np in
    '' | *[!0-9]*) usage; exit 1 ;;
esac
program=test/mpi/deadpeer_check
if [ $# -gt 0 ]; then
    program=$1
    shift
fi
name=deadpeer_check
here=$(cd "$(dirname "$0")" && pwd)
runner=$here/run_mpi_test.sh
: "${MPIRUN:=mpirun}"
export MPIRUN

if [ "$np" -lt 2 ]; then
    echo "SKIP: $name needs 2 or more ranks (one dies), np=$np"
    exit 77
fi
if [ ! -d /dev/shm ]; then
    echo "SKIP: $name: no /dev/shm (the engine's segments live there)"
    exit 77
fi
version=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$MPIRUN" --version 2>&1 | head -n 1)
case $version in
    *"(Open MPI) 4."*) ;;
    *)
        echo "SKIP: $name: survivors of a killed rank need ORTE's --enable-recovery" \
             "(Open MPI 4.x); $MPIRUN --version says: ${version:-nothing}"
        exit 77
        ;;
esac
if [ ! -x "$program" ]; then
    echo "FAIL: $name: $program is not built" >&2
    exit 1
fi
if [ -z "${DFCCL_COMPONENT_DIR:-}" ] && [ -f test/components/mca_coll_dfccl.so ]; then
    DFCCL_COMPONENT_DIR=$PWD/test/components
    export DFCCL_COMPONENT_DIR
fi
if [ -z "${DFCCL_ENGINE_LIBDIR:-}" ] && [ -d src/.libs ]; then
    DFCCL_ENGINE_LIBDIR=$PWD/src/.libs
    export DFCCL_ENGINE_LIBDIR
fi
DFCCL_TEST_MCA="--mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0"
case "${DFCCL_DEADPEER_GPU:-}" in
    # the GPU side instead (pass --memory device to the program): every
    # rank a node of its own, so that its ring links go over UCX; or all on
    # this node
    split) DFCCL_TEST_MCA="--mca coll_dfccl_node_split 1" ;;
    node)  DFCCL_TEST_MCA="" ;;
    "")    ;;
    *)     echo "deadpeer_check.sh: DFCCL_DEADPEER_GPU is split or node" >&2; exit 2 ;;
esac
DFCCL_TEST_MCA="$DFCCL_TEST_MCA --mca coll_dfccl_timeout 60 --enable-recovery"
# The survivors end through MPI_Finalize, whose opening fence (PMIx, over
# the whole job) waited for the dead rank in 2 of 15 runs; Open MPI's
# async_mpi_finalize leaves that fence out.
DFCCL_TEST_MCA="$DFCCL_TEST_MCA --mca async_mpi_finalize 1"
: "${DFCCL_TEST_TIMEOUT:=120}"
export DFCCL_TEST_MCA DFCCL_TEST_TIMEOUT

log=$(mktemp "${TMPDIR:-/tmp}/$name.XXXXXX")
shm_before=$(mktemp "${TMPDIR:-/tmp}/$name.shm.XXXXXX")
trap 'rm -f "$log" "$shm_before"' EXIT
shm_names() {
    find /dev/shm -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | LC_ALL=C sort
}
shm_names > "$shm_before"

# In the background, so that a TERM to this script (make's or a person's)
# reaches run_mpi_test.sh, which then stops mpirun.
"$runner" "$np" "$program" "$@" > "$log" 2>&1 &
pid=$!
interrupted=
trap 'interrupted=1; kill -TERM "$pid" 2>/dev/null' TERM INT HUP
wait "$pid"
status=$?
while kill -0 "$pid" 2>/dev/null; do
    wait "$pid"
    status=$?
done
cat "$log"
if [ -n "$interrupted" ]; then
    echo "FAIL: $name at np=$np interrupted by a signal" >&2
    exit 1
fi

failed=0
if [ "$status" -ne 0 ]; then
    # run_mpi_test.sh said why (status, timeout or no "0 failed" line)
    failed=1
fi

# The survivors end through MPI_Finalize (unless the program was told
# --end exit): each prints one line after it returned, with the status it
# exits with, which mpirun --enable-recovery does not pass on.
case " $* " in
    *" --end exit "*) ;;
    *)
        survivors=$(grep -c "^$name: rank [0-9]*: blocked call returned" "$log")
        ended=$(grep -c "^$name: rank [0-9]* ended through MPI_Finalize (returned 0 .*exit status 0\$" "$log")
        if [ "$survivors" -eq 0 ] || [ "$ended" -ne "$survivors" ]; then
            echo "FAIL: $name at np=$np: $ended of $survivors survivors ended through" \
                 "MPI_Finalize with status 0" >&2
            failed=1
        fi
        ;;
esac

# The engine unlinks its segments' names once every rank has mapped them:
# none of this job's processes may leave one behind, the killed one included.
pids=$(sed -n "s/^$name: pids: //p" "$log" | head -n 1)
if [ -z "$pids" ]; then
    echo "FAIL: $name at np=$np: no \"$name: pids:\" line, /dev/shm not checked" >&2
    failed=1
fi
for p in $pids; do
    case $p in '' | *[!0-9]*) continue ;; esac
    for f in /dev/shm/dfccl-"$p"-*; do
        [ -e "$f" ] || continue
        echo "FAIL: $name at np=$np: segment $f of pid $p left behind (removed now)" >&2
        rm -f "$f"
        failed=1
    done
    if [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' < "/proc/$p/cmdline" | grep -q "$name"; then
        echo "FAIL: $name at np=$np: rank process $p outlived mpirun" >&2
        failed=1
    fi
done
# Open MPI's own segments (vader) of this job: the killed rank's cannot be
# removed by it; mpirun removes them all when the job ends. Reported, not
# failed on: they are Open MPI's.
ompi_prefix=$(sed -n "s/^$name: rank [0-9]* maps .* Open MPI's segments: \(vader_segment\.[^*]*\)\*\$/\1/p" "$log" | head -n 1)
if [ -n "$ompi_prefix" ]; then
    for f in /dev/shm/"$ompi_prefix"*; do
        [ -e "$f" ] && echo "warning: $name at np=$np: Open MPI's segment $f of this job left behind"
    done
fi
new_names=$(shm_names | LC_ALL=C comm -13 "$shm_before" - | tr '\n' ' ')
if [ -n "$new_names" ]; then
    echo "note: new in /dev/shm since the run began (other jobs' included): $new_names"
fi

if [ "$failed" -ne 0 ]; then
    echo "FAIL: $name at np=$np" >&2
    exit 1
fi
echo "PASS: $name at np=$np"
exit 0
