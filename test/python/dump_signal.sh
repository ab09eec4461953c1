#!/bin/bash
# dump_signal.sh [NP] - the dump signal, job-wide: NP ranks through the host
# engine, the last one joins an allreduce 4 s late; 2 s in, SIGUSR1 to
# mpirun (which forwards it to every rank) must make each waiting rank print
# its pending allreduce and what each peer does ("has not posted #1" for the
# late one) without stopping the job, which then completes correctly.
# Environment as for test/mpi/run_mpi_test.sh (DFCCL_COMPONENT_DIR,
# DFCCL_ENGINE_LIBDIR, OMPI_PKGLIBDIR, MPIRUN). Exit 77 without mpi4py.
set -u
np=${1:-3}
here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
if ! "$python" -c 'import mpi4py, numpy' > /dev/null 2>&1; then
    echo "SKIP: dump_signal: $python cannot import mpi4py and numpy"
    exit 77
fi
args=(--oversubscribe --allow-run-as-root -np "$np"
      --mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0 --mca coll_dfccl_timeout 60)
if [ -n "${DFCCL_COMPONENT_DIR:-}" ]; then
    pkglibdir=${OMPI_PKGLIBDIR:-$(ompi_info --path pkglibdir 2>/dev/null | sed 's/^[^:]*: *//')}
    args+=(--mca mca_base_component_path "$DFCCL_COMPONENT_DIR:$pkglibdir")
fi
if [ -n "${DFCCL_ENGINE_LIBDIR:-}" ]; then
    export LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    args+=(-x LD_LIBRARY_PATH)
fi
log=$(mktemp "${TMPDIR:-/tmp}/dump_signal.XXXXXX")
trap 'rm -f "$log"' EXIT
"${MPIRUN:-mpirun}" "${args[@]}" "$python" "$here/late_rank.py" 4 < /dev/null > "$log" 2>&1 &
pid=$!
sleep 2
kill -USR1 "$pid" 2>/dev/null
# bounded: the job ends 4 s after its start; kill it past 60 s
for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && { kill -TERM "$pid"; sleep 1; kill -KILL "$pid" 2>/dev/null; }
wait "$pid"
status=$?
cat "$log"
fail=0
[ "$status" -eq 0 ] || { echo "FAIL: dump_signal: the job exited with $status"; fail=1; }
# the ranks' lines may run into each other: count matches, not lines
waiting=$(grep -o "pending: rank [0-9]* of comm [^ ]* (size [0-9]*): allreduce #1" "$log" | wc -l)
[ "$waiting" -ge $((np - 1)) ] || { echo "FAIL: dump_signal: $waiting of $((np - 1)) waiting ranks printed their pending allreduce"; fail=1; }
grep -q "rank $((np - 1)) (pid [0-9]*): has not posted #1" "$log" ||
    { echo "FAIL: dump_signal: no line says the late rank has not posted"; fail=1; }
[ "$(grep -o 'late_rank: rank [0-9]* ok' "$log" | wc -l)" -eq "$np" ] ||
    { echo "FAIL: dump_signal: not every rank completed with the right result"; fail=1; }
[ $fail -eq 0 ] && echo "dump_signal: 4 passed, 0 failed"
exit $fail
