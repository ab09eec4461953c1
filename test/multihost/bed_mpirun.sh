#!/bin/bash
# bed_mpirun.sh MPIRUN-ARGS...
#
# An mpirun for test/mpi/run_mpi_test.sh (its MPIRUN), so that a test runs
# with the same verdict on the multi-host bed: the same arguments, given
# to `cluster.sh run` (which adds the bed's hosts and reads
# DFCCL_BED_RANKS_PER_HOST and DFCCL_BED_MPIRUN).
set -eu
here=$(dirname "$0")
# DFCCL_BED_END_AFTER (a grep -E pattern): the job's own verdict line. A job
# whose host was killed on purpose (bed_hostkill) reports and exits on the
# surviving hosts, but mpirun (ORTE's rsh launcher, --enable-recovery) does
# not always end after losing a host's ranks: once the line is out, mpirun
# gets a grace period to end, then is stopped, and the verdict stands.
if [ -z "${DFCCL_BED_END_AFTER:-}" ]; then
    exec "$here/cluster.sh" run -- "$@"
fi
out=$(mktemp "${TMPDIR:-/tmp}/bed_mpirun.XXXXXX")
trap 'rm -f "$out"' EXIT
"$here/cluster.sh" run -- "$@" > "$out" 2>&1 &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; cat "$out"; rm -f "$out"; exit 143' TERM INT HUP
seen=
while kill -0 "$pid" 2>/dev/null; do
    if [ -z "$seen" ] && grep -Eq "$DFCCL_BED_END_AFTER" "$out"; then
        seen=$(date +%s)
    fi
    if [ -n "$seen" ] && [ $(( $(date +%s) - seen )) -ge "${DFCCL_BED_END_GRACE:-10}" ]; then
        echo "bed_mpirun.sh: the job reported; mpirun still runs after ${DFCCL_BED_END_GRACE:-10} s: stopped"
        kill -TERM "$pid" 2>/dev/null || true
        break
    fi
    sleep 1
done
status=0
wait "$pid" || status=$?
cat "$out"
if [ -n "$seen" ]; then
    exit 0
fi
exit "$status"
