#!/bin/bash
# host_bench.sh [OUT] - the host engine against the stock path on this
#   machine, as docs/performance.md quotes it: for 2 and 4 ranks,
#   perf_compare.sh over the four collectives from 8 B to 64 MiB (dfccl and
#   stock in one run), the same with coll_dfccl_caller_drives 0 (callers
#   sleep while the daemon thread runs their collectives), and
#   chaos_bench.sh (disordered / ordered). Writes every output under OUT
#   (default host-bench-DATE) and a summary.txt of the tables. Run from the
#   build directory after make.
#   DFCCL_HOST_BENCH_NPS (default "2 4"), DFCCL_HOST_BENCH_MAX (64M) and
#   DFCCL_HOST_BENCH_CHAOS (iterations, default 50) narrow it down.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-host-bench-$(date +%Y-%m-%d)}
nps=${DFCCL_HOST_BENCH_NPS:-2 4}
max=${DFCCL_HOST_BENCH_MAX:-64M}
chaos=${DFCCL_HOST_BENCH_CHAOS:-50}
mkdir -p "$out"
summary=$out/summary.txt
{
    echo "# host_bench.sh $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(hostname -s)"
    echo "# $(ompi_info --parsable | grep -m1 '^ompi:version:full' || true)"
    git -C "$here/.." log -1 --format='# commit %h %s' 2>/dev/null || true
} > "$summary"
sweep=(-b 8 -e "$max" -f 4 -x all -n 200 -w 5 --time-budget 1)
for np in $nps; do
    for drives in 1 0; do
        dir=$out/np$np-drives$drives
        echo "## $np ranks, coll_dfccl_caller_drives $drives: dfccl_perf ${sweep[*]}" >> "$summary"
        DFCCL_PERF_OUT=$dir DFCCL_BENCH_MCA="--mca coll_dfccl_caller_drives $drives" \
            "$here/perf_compare.sh" "$np" "${sweep[@]}" | grep -v '^#' >> "$summary"
    done
    echo "## $np ranks: chaos_bench.sh $np $chaos" >> "$summary"
    "$here/chaos_bench.sh" "$np" "$chaos" > "$out/chaos-np$np.txt"
    cat "$out/chaos-np$np.txt" >> "$summary"
done
cat "$summary"
