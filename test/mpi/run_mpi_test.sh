#!/bin/bash
# run_mpi_test.sh NP PROGRAM [ARGS...]
#
# Runs one MPI test program under mpirun for `make check` and decides
# pass/fail: the run fails when the program exits non-zero, runs past the
# timeout, or does not end with "<program>: N passed, 0 failed" (N > 0).
# The job's output is printed when it ends. A TERM, INT or HUP to this script
# stops the job (and fails the run) instead of leaving it running.
#
# Environment (set by the Makefile; all optional):
#   MPIRUN               mpirun to use (default: mpirun)
#   DFCCL_COMPONENT_DIR  build-tree directory holding mca_coll_dfccl.so;
#                        searched before OMPI_PKGLIBDIR
#   OMPI_PKGLIBDIR       Open MPI's own component directory (default: asked
#                        of ompi_info)
#   DFCCL_ENGINE_LIBDIR  directory of libdfccl, prepended to LD_LIBRARY_PATH
#   DFCCL_TEST_MCA       extra mpirun arguments, word-split, e.g.
#                        "--mca coll_dfccl_host_buffers engine"
#   DFCCL_TEST_MCA_EXTRA more mpirun arguments from the caller's environment
#                        (the sanitizer check preloads its runtimes with it)
#   DFCCL_TEST_TIMEOUT   seconds before the run is killed (default: 900)
#   DFCCL_TEST_REQUIRE_ENGINE  non-empty: the log must show calls posted to
#                        the engine (with --mca coll_dfccl_verbose 2)
#   DFCCL_TEST_LAUNCHER  a command each rank runs the program under, word-split,
#                        e.g. "compute-sanitizer --tool memcheck"; the verdict
#                        line is still the program's own
#
# The engine's counters, checked inside the programs, prove which path a
# call took; coll_base_verbose is deliberately not raised (too noisy).

set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 NP PROGRAM [ARGS...]" >&2
    exit 2
fi
np=$1
program=$2
shift 2
name=$(basename "$program")
name=${name%.exe}
name=${name%.py}

mpirun_cmd=${MPIRUN:-mpirun}
timeout_s=${DFCCL_TEST_TIMEOUT:-900}

mca_args=()
if [ -n "${DFCCL_COMPONENT_DIR:-}" ]; then
    # A missing directory in the path makes mpirun itself fail obscurely
    # ("unknown option -np"), so say what is wrong instead.
    if [ ! -f "$DFCCL_COMPONENT_DIR/mca_coll_dfccl.so" ]; then
        echo "$0: no mca_coll_dfccl.so in DFCCL_COMPONENT_DIR=$DFCCL_COMPONENT_DIR" >&2
        exit 2
    fi
    pkglibdir=${OMPI_PKGLIBDIR:-}
    if [ -z "$pkglibdir" ]; then
        pkglibdir=$(ompi_info --path pkglibdir 2>/dev/null | sed 's/^[^:]*: *//')
    fi
    if [ -z "$pkglibdir" ]; then
        echo "$0: OMPI_PKGLIBDIR is not set and ompi_info did not tell it" >&2
        exit 2
    fi
    # Our component first, then Open MPI's own, so both are found.
    mca_args+=(--mca mca_base_component_path "$DFCCL_COMPONENT_DIR:$pkglibdir")
fi
if [ -n "${DFCCL_ENGINE_LIBDIR:-}" ]; then
    export LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
env_args=()
if [ -n "${LD_LIBRARY_PATH:-}" ]; then
    env_args+=(-x LD_LIBRARY_PATH)
fi
# shellcheck disable=SC2206  # word splitting of the extra arguments is wanted
extra_args=(${DFCCL_TEST_MCA:-} ${DFCCL_TEST_MCA_EXTRA:-})
# shellcheck disable=SC2206
launcher=(${DFCCL_TEST_LAUNCHER:-})

log=$(mktemp "${TMPDIR:-/tmp}/${name}.XXXXXX")
trap 'rm -f "$log" "$log.err"' EXIT

command=(timeout --kill-after=30 "$timeout_s"
         "$mpirun_cmd" -np "$np" --oversubscribe --allow-run-as-root
         "${env_args[@]}" "${mca_args[@]}" "${extra_args[@]}"
         "${launcher[@]}" "$program" "$@")
echo "+ ${command[*]}"
# In the background, so that a signal to this script (an outer timeout, ^C)
# reaches mpirun: timeout puts it in a process group of its own, which a
# signal to this script's group would miss, leaving the job running for
# up to timeout_s. The log is printed when the run ends.
# stdout and stderr go to files of their own: mpirun forwards each rank's
# streams in chunks that may end mid-line, so in one file a verbose log line
# could be spliced into the verdict line (or the verdict into a log line).
"${command[@]}" < /dev/null > "$log" 2> "$log.err" &
pid=$!
interrupted=
trap 'interrupted=1; kill -TERM "$pid" 2>/dev/null' TERM INT HUP
wait "$pid"
status=$?
while kill -0 "$pid" 2>/dev/null; do   # a trapped signal ended the wait, not the run
    wait "$pid"
    status=$?
done
cat "$log"
cat "$log.err" >&2
if [ -n "$interrupted" ]; then
    echo "FAIL: $name at np=$np interrupted by a signal; mpirun stopped" >&2
    exit 1
fi

if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "FAIL: $name at np=$np ran past ${timeout_s} s" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "FAIL: $name at np=$np exited with status $status" >&2
    exit 1
fi
# Programs that do not check the engine's counters themselves run with
# coll_dfccl_verbose 2 and DFCCL_TEST_REQUIRE_ENGINE=1: the component's log of
# calls posted to the engine is then the proof that dfccl carried them.
if [ -n "${DFCCL_TEST_REQUIRE_ENGINE:-}" ] && ! grep -q 'coll:dfccl: .* posted to the engine' "$log" "$log.err"; then
    echo "FAIL: $name at np=$np: no call reached the dfccl engine" >&2
    exit 1
fi
if ! grep -Eq "^${name}: [1-9][0-9]* passed, 0 failed" "$log"; then
    echo "FAIL: $name at np=$np did not report \"${name}: N passed, 0 failed\"" >&2
    exit 1
fi
exit 0
