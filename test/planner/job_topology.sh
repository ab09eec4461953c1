#!/bin/bash
# job_topology.sh NP PROGRAM [ARGS...]: dfccl_topo (PROGRAM) end to end.
#
# Runs PROGRAM ARGS over NP ranks, expected on two hosts of NP/2 ranks in
# rank order: on one machine ARGS hold --hosts-by NP/2 (every NP/2 ranks
# count as a host; the engine's node_split does not change the processor
# names the tool reads); on the multi-host bed run_bed_test.sh runs this
# script in place of run_mpi_test.sh and the hosts are the bed's. Checks:
#  - the file loads in dfccl_plan, which plans on it, and the plan file
#    written from it passes dfccl_plan_check;
#  - NP GPUs, ranks 0..NP/2-1 on one host, the others on another; a switch
#    per host, one for the network; the links expected; bandwidths above 0;
#  - --cache: the first run writes the cache, the second says it reused it
#    and leaves it untouched;
#  - bad options: every rank says what is wrong, the job exits non-zero.
#
# Environment as run_mpi_test.sh's: MPIRUN, DFCCL_COMPONENT_DIR,
# OMPI_PKGLIBDIR, DFCCL_ENGINE_LIBDIR, DFCCL_TEST_MCA, DFCCL_TEST_TIMEOUT.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 NP PROGRAM [ARGS...]" >&2; exit 2; }
np=$1
program=$2
shift 2
plan=src/tools/dfccl_plan
check=src/tools/dfccl_plan_check
[ -x "$plan" ] && [ -x "$program" ] ||
    { echo "$0: no $plan or $program here (run from the build tree)" >&2; exit 99; }
half=$((np / 2))

mpirun_args=(-np "$np" --oversubscribe --allow-run-as-root)
if [ -n "${DFCCL_COMPONENT_DIR:-}" ]; then
    pkglibdir=${OMPI_PKGLIBDIR:-$(ompi_info --path pkglibdir 2>/dev/null | sed 's/^[^:]*: *//')}
    mpirun_args+=(--mca mca_base_component_path "$DFCCL_COMPONENT_DIR:$pkglibdir")
fi
if [ -n "${DFCCL_ENGINE_LIBDIR:-}" ]; then
    export LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    mpirun_args+=(-x LD_LIBRARY_PATH)
fi
# shellcheck disable=SC2206  # word splitting of the extra arguments is wanted
mpirun_args+=(${DFCCL_TEST_MCA:-})

tmp=$(mktemp -d "${TMPDIR:-/tmp}/job_topology.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL job_topology: $*"; failed=1; }

# run NAME ARGS...: the job, its output in $tmp/NAME.log (and shown); its status.
run() {
    local name=$1 status=0
    shift
    echo "+ ${MPIRUN:-mpirun} ${mpirun_args[*]} $program $*"
    timeout --kill-after=10 "${DFCCL_TEST_TIMEOUT:-120}" "${MPIRUN:-mpirun}" "${mpirun_args[@]}" \
        "$program" "$@" < /dev/null > "$tmp/$name.log" 2>&1 || status=$?
    cat "$tmp/$name.log"
    return "$status"
}

# ---- measured, written twice (the file and the cache), then reused
run first --out "$tmp/job.json" --cache "$tmp/cache.json" --quick "$@" ||
    { fail "the first run failed"; exit 1; }
grep -q "^dfccl_topo: wrote $tmp/cache.json" "$tmp/first.log" || fail "the cache was not written"
grep -q "reused" "$tmp/first.log" && fail "the first run reused a cache that did not exist"
stamp=$(stat -c %y "$tmp/cache.json")
run second --out "$tmp/again.json" --cache "$tmp/cache.json" --quick "$@" ||
    fail "the run with the cache failed"
grep -q "^dfccl_topo: reused $tmp/cache.json" "$tmp/second.log" || fail "the cache was not reused"
grep -q "^dfccl_topo: hosts\|ranks 0-1" "$tmp/second.log" && fail "the run with the cache measured"
[ "$(stat -c %y "$tmp/cache.json")" = "$stamp" ] || fail "the cache was rewritten"
cmp -s "$tmp/again.json" "$tmp/cache.json" || fail "--out differs from the cache it reused"

# ---- the file: the planner's loader takes it; its shape
f=$tmp/job.json
"$plan" --topology "$f" --collective allgather --bytes 1M --method greedy \
    --schedule "$tmp/schedule.json" --plan-dir "$tmp/plans" --quiet > "$tmp/plan.log" 2>&1 ||
    fail "dfccl_plan refused the file: $(cat "$tmp/plan.log")"
"$check" "$tmp"/plans/*.json || fail "the plan file from it is not valid"
host_of() { sed -n "s/^ *{\"id\": $1, \"kind\": \"gpu\", \"host\": \"\([^\"]*\)\".*/\1/p" "$f"; }
[ "$(grep -c '"kind": "gpu"' "$f")" -eq "$np" ] || fail "not $np GPUs"
h0=$(host_of 0)
h1=$(host_of "$half")
[ -n "$h0" ] && [ -n "$h1" ] && [ "$h0" != "$h1" ] || fail "ranks 0 and $half not on two hosts"
for r in $(seq 0 $((np - 1))); do
    want=$h0
    [ "$r" -lt "$half" ] || want=$h1
    [ "$(host_of "$r")" = "$want" ] || fail "rank $r on host '$(host_of "$r")', not '$want'"
done
[ "$(grep -c '"kind": "switch", "copies": false, "interface_of"' "$f")" -eq 2 ] || fail "not a switch per host (without copies)"
[ "$(grep -c '"kind": "switch", "copies": false, "network": true' "$f")" -eq 1 ] || fail "not one network switch (without copies)"
links=$(grep -c '"src":' "$f")
want=$((2 * half * (half - 1) + 2 * np + 4))
[ "$links" -eq "$want" ] || fail "$links links, not $want"
grep -q "{\"src\": 0, \"dst\": $np, " "$f" &&
    grep -q "{\"src\": $np, \"dst\": $((np + 2)), " "$f" ||
    fail "no link from rank 0 to its host's switch, or from that to the network"
bad=$(grep '"src":' "$f" | sed 's/.*"bandwidth_GBps": \([^,]*\),.*/\1/' |
      awk '!($1 > 0) { n++ } END { print n + 0 }')
[ "$bad" -eq 0 ] || fail "$bad links without a bandwidth above 0"
grep -q '"comment": "The topology of a job of' "$f" || fail "no comment saying how it was measured"

# ---- bad options: every rank says so, the job fails
for args in "--hosts-by 0 --out $tmp/x.json" "--cache $tmp/x.json"; do
    # shellcheck disable=SC2086  # the options are separate words
    if run bad $args; then
        fail "'$args' succeeded"
    fi
    said=$(grep -c '^dfccl_topo: rank [0-9]*: ' "$tmp/bad.log" || true)
    [ "$said" -eq "$np" ] || fail "'$args': $said of $np ranks said what is wrong"
done

[ "$failed" -eq 0 ] || exit 1
echo "job_topology: passed"
