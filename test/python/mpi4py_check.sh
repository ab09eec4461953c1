#!/bin/sh
# mpi4py_check.sh [NP [SCRIPT]]  (NP: ranks, default 4; SCRIPT: a Python
# program relative to the source tree, default test/python/mpi4py_check.py)
#
# make check's wrapper of mpi4py_check.py: MPI semantics through coll/dfccl,
# checked from Python with mpi4py and NumPy (Debian's python3-mpi4py and
# python3-numpy under /usr/bin/python3). Skipped (77) when that interpreter
# cannot import both. Also runs other mpi4py programs that print the same
# verdict (contrib/examples/train_example.py).
#
# The job runs through test/mpi/run_mpi_test.sh, which reads the same
# environment as for the other MPI tests (MPIRUN, DFCCL_COMPONENT_DIR,
# OMPI_PKGLIBDIR, DFCCL_ENGINE_LIBDIR, DFCCL_TEST_MCA, DFCCL_TEST_TIMEOUT,
# DFCCL_TEST_REQUIRE_ENGINE, DFCCL_TEST_LAUNCHER); this script adds:
#
#   DFCCL_TEST_MCA   unset: "--mca coll_dfccl_host_buffers engine
#                    --mca coll_dfccl_gpu 0" (the host engine carries the
#                    calls); set (even empty): used as given. Either way
#                    "--mca coll_dfccl_verbose 2" is added unless it names
#                    coll_dfccl_verbose itself: the component's per-call
#                    "posted to the engine" lines prove the route.
#   DFCCL_TEST_REQUIRE_ENGINE  unset: 1 when DFCCL_TEST_MCA routes host
#                    buffers to the engine (coll_dfccl_host_buffers engine,
#                    coll not excluding dfccl, coll_dfccl_enable not 0),
#                    else empty (the stock route, e.g. "--mca coll ^dfccl");
#                    set (even empty): used as given.
#   DFCCL_TEST_TIMEOUT  unset: 300 (a 4-rank run takes well under a minute)
#
# The program (executable, #!/usr/bin/python3) reports "mpi4py_check: N
# passed, M failed", the verdict run_mpi_test.sh looks for.
#
# By hand, from the build tree:
#   DFCCL_COMPONENT_DIR=$PWD/test/components DFCCL_ENGINE_LIBDIR=$PWD/src/.libs \
#   OMPI_PKGLIBDIR=... ../test/python/mpi4py_check.sh 4
# and the stock route (checks the test itself against Open MPI's own code):
#   DFCCL_TEST_MCA="--mca coll ^dfccl" ... ../test/python/mpi4py_check.sh 4

set -u

python=/usr/bin/python3
np=${1:-4}
case $np in
    '' | *[!0-9]* | 0*)
        echo "usage: $0 [NP]   (NP a positive number of ranks, default 4)" >&2
        exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd) || exit 2
srcdir=$(cd "$here/../.." && pwd) || exit 2
script=$srcdir/${2:-test/python/mpi4py_check.py}
if ! "$python" -c 'import mpi4py, numpy' > /dev/null 2>&1; then
    echo "SKIP: $(basename "$script" .py): $python cannot import mpi4py and numpy (python3-mpi4py, python3-numpy)"
    exit 77
fi
runner=$srcdir/test/mpi/run_mpi_test.sh
for f in "$script" "$runner"; do
    if [ ! -f "$f" ]; then
        echo "$0: missing $f" >&2
        exit 2
    fi
done

# ---- mpirun arguments and the route they select
DFCCL_TEST_MCA=${DFCCL_TEST_MCA-"--mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0"}
coll_list='' host_buffers='' enable=1 has_verbose=''
set -f   # words, not file names
# shellcheck disable=SC2086  # the words of the MCA arguments are wanted
set -- $DFCCL_TEST_MCA
set +f
while [ $# -gt 0 ]; do
    if { [ "$1" = --mca ] || [ "$1" = -mca ]; } && [ $# -ge 3 ]; then
        case $2 in
            coll) coll_list=$3 ;;
            coll_dfccl_host_buffers) host_buffers=$3 ;;
            coll_dfccl_enable) enable=$3 ;;
            coll_dfccl_verbose) has_verbose=1 ;;
        esac
        shift 3
    else
        shift
    fi
done
route=stock
if [ "$host_buffers" = engine ]; then
    route=engine
    case $enable in 0 | false | no | f | n) route=stock ;; esac
    case $coll_list in
        '') ;;
        ^*) case ",${coll_list#^}," in *,dfccl,*) route=stock ;; esac ;;
        *) case ",$coll_list," in *,dfccl,*) ;; *) route=stock ;; esac ;;
    esac
fi
if [ -z "$has_verbose" ]; then
    DFCCL_TEST_MCA="$DFCCL_TEST_MCA --mca coll_dfccl_verbose 2"
fi
if [ -z "${DFCCL_TEST_REQUIRE_ENGINE+set}" ]; then
    if [ "$route" = engine ]; then DFCCL_TEST_REQUIRE_ENGINE=1; else DFCCL_TEST_REQUIRE_ENGINE=; fi
fi
DFCCL_TEST_TIMEOUT=${DFCCL_TEST_TIMEOUT:-300}
export DFCCL_TEST_MCA DFCCL_TEST_REQUIRE_ENGINE DFCCL_TEST_TIMEOUT

echo "mpi4py_check.sh: $(basename "$script") np $np, route $route, require engine '${DFCCL_TEST_REQUIRE_ENGINE}'"
# run_mpi_test.sh names the verdict after the program, less its .py
exec "$runner" "$np" "$script"
