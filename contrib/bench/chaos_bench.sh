#!/bin/bash
# chaos_bench.sh [NP] [ITERATIONS] - the chaos-order workload three ways:
#   dfccl disordered, dfccl ordered, and the stock path ordered (--mca coll
#   ^dfccl; disordered issue is legal MPI there too, but the comparison is
#   against what a stock job does today). Prints a table and the ratio
#   disordered / ordered for dfccl. Run from the build directory (it uses
#   contrib/bench/chaos_bench and the component in test/components).
#   DFCCL_BENCH_MCA adds mpirun arguments to the dfccl runs.
set -eu
np=${1:-4}
iterations=${2:-50}
build=${DFCCL_BUILD_DIR:-.}
bench=$build/contrib/bench/chaos_bench
if [ ! -x "$bench" ]; then
    echo "$0: no $bench; run from the build directory after make" >&2
    exit 2
fi
pkglibdir=$(ompi_info --path pkglibdir | sed 's/^[^:]*: *//')
export LD_LIBRARY_PATH="$build/src/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
common=(mpirun -np "$np" --oversubscribe --allow-run-as-root -x LD_LIBRARY_PATH
        --mca mca_base_component_path "$build/test/components:$pkglibdir")
engine=(--mca coll_dfccl_host_buffers engine ${DFCCL_BENCH_MCA:-})

run() {  # label, mpirun arguments, bench arguments; prints "label line"
    local label=$1; shift
    local line
    line=$("$@" | grep '^chaos_bench ' || true)
    echo "$label ${line:-chaos_bench failed}"
}
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p"; }

results=$(
    run dfccl-disordered "${common[@]}" "${engine[@]}" "$bench" --order disordered --iterations "$iterations"
    run dfccl-ordered "${common[@]}" "${engine[@]}" "$bench" --order ordered --iterations "$iterations"
    run stock-ordered "${common[@]}" --mca coll ^dfccl "$bench" --order ordered --iterations "$iterations"
)
printf '%-18s %12s %10s %4s\n' run iter_per_s GB/s ok
while read -r label rest; do
    printf '%-18s %12s %10s %4s\n' "$label" "$(echo " $rest" | field iter_per_s)" \
        "$(echo " $rest" | field gbps)" "$(echo " $rest" | field ok)"
done <<< "$results"
dis=$(echo "$results" | grep '^dfccl-disordered' | field iter_per_s)
ord=$(echo "$results" | grep '^dfccl-ordered' | field iter_per_s)
dis_ok=$(echo "$results" | grep '^dfccl-disordered' | field ok)
ord_ok=$(echo "$results" | grep '^dfccl-ordered' | field ok)
if [ "$dis_ok" != 1 ] || [ "$ord_ok" != 1 ]; then
    echo "dfccl disordered/ordered: n/a (a dfccl run failed: errors or wrong results)"
elif [ -n "$dis" ] && [ -n "$ord" ]; then
    awk -v d="$dis" -v o="$ord" 'BEGIN { printf "dfccl disordered/ordered: %.3f\n", d / o }'
fi
