#!/bin/bash
# net_protocol_bench.sh HOSTS REPEATS OUTDIR [DFCCL_PERF OPTIONS...]
# net_protocol_bench.sh --summary REPEATS OUTDIR   (the summary of a run again)
#
# The two ways links move FIFO slots between nodes (coll_dfccl_net_protocol
# 0 tagged, 1 RMA), timed with dfccl_perf on a test bed of HOSTS emulated
# hosts, one rank each (test/multihost/cluster.sh, needs root). Each of
# REPEATS rounds runs both protocols, alternating which goes first, so that
# a change of load on the machine falls on both; every run's load average
# is recorded beside its output. OUTDIR gets tagged-N.json / rma-N.json,
# their text, load-N-PROTO.txt, and summary.md: per collective and size the
# median over the rounds of each protocol's time and bus bandwidth, and
# the ratio RMA / tagged of the times; then per collective the sizes where
# RMA was faster, the geometric mean of the ratios, and the spread of the
# rounds (max - min over the median, the median of it over sizes), which
# says how far the ratios can be trusted.
#
# Run from the build directory. With 2 hosts the ranks take one core each
# (--spin, as the bed's README says for timing); with more hosts than
# cores they yield while waiting. DFCCL_BENCH_MCA adds mpirun arguments;
# DFCCL_BED_PREFIX names the bed (default dfccl-bench-).
# Example: contrib/bench/net_protocol_bench.sh 2 3 /tmp/np2 -b 8 -e 64M -f 2 -x allreduce
set -eu

summary() {    # OUTDIR REPEATS
    python3 - "$1" "$2" <<'PY'
import json, math, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
runs = {p: [json.load(open("%s/%s-%d.json" % (out, p, r))) for r in range(1, repeats + 1)]
        for p in ("tagged", "rma")}
def values(p, key, field):
    return [row[field] for run in runs[p] for row in run["rows"]
            if (row["collective"], row["size"]) == key]
def median(p, key, field):
    return statistics.median(values(p, key, field))
keys = [(r["collective"], r["size"]) for r in runs["tagged"][0]["rows"]]
print("| collective | size (B) | tagged time (us) | RMA time (us) | tagged busbw (GB/s) |"
      " RMA busbw (GB/s) | time RMA / tagged |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for key in keys:
    t, r = median("tagged", key, "time_us"), median("rma", key, "time_us")
    bt, br = median("tagged", key, "busbw_gbps"), median("rma", key, "busbw_gbps")
    print("| %s | %d | %.1f | %.1f | %.3f | %.3f | %.2f |" % (key[0], key[1], t, r, bt, br, r / t))
print()
for coll in dict.fromkeys(k[0] for k in keys):
    ks = [k for k in keys if k[0] == coll]
    ratios = [median("rma", k, "time_us") / median("tagged", k, "time_us") for k in ks]
    wins = [str(k[1]) for k, r in zip(ks, ratios) if r < 1]
    spread = statistics.median([(max(v) - min(v)) / statistics.median(v) for k in ks
                                for v in (values(p, k, "time_us") for p in ("tagged", "rma"))])
    print("- %s: RMA faster at %d of %d sizes (%s); geometric mean of RMA / tagged %.2f;"
          " spread of the rounds %.0f %%" % (coll, len(wins), len(ks), ", ".join(wins) or "none",
                                             math.exp(sum(map(math.log, ratios)) / len(ratios)),
                                             100 * spread))
PY
}

if [ "${1:-}" = --summary ] && [ $# -eq 3 ]; then
    summary "$3" "$2"
    exit
fi
if [ $# -lt 3 ]; then
    sed -n '2,24p' "$0" >&2
    exit 2
fi
hosts=$1
repeats=$2
out=$3
shift 3
build=${DFCCL_BUILD_DIR:-.}
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
perf=$build/src/tools/perf/dfccl_perf
cluster=$top/test/multihost/cluster.sh
[ -x "$perf" ] || { echo "$0: no $perf; run from the build directory after make" >&2; exit 2; }
command -v python3 >/dev/null || { echo "$0: needs python3 for the summary" >&2; exit 2; }
export DFCCL_BED_PREFIX=${DFCCL_BED_PREFIX:-dfccl-bench-}
pkglibdir=$(ompi_info --path pkglibdir | sed 's/^[^:]*: *//')
build_abs=$(cd "$build" && pwd)
export LD_LIBRARY_PATH="$build_abs/src/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cores=$(nproc)
spin=()
[ "$hosts" -gt "$cores" ] || spin=(--spin)

mkdir -p "$out"
"$cluster" down
trap '"$cluster" down' EXIT
"$cluster" up "$hosts"

run() {    # PROTOCOL-NAME VALUE ROUND PERF-OPTIONS...
    local name=$1 value=$2 round=$3
    shift 3
    { date -u '+%F %T UTC'; uptime; top -bn1 | sed -n '1,5p'; } > "$out/load-$round-$name.txt"
    # shellcheck disable=SC2086  # the extra mpirun arguments are meant to split
    "$cluster" run "${spin[@]}" -- --allow-run-as-root -x LD_LIBRARY_PATH \
        --mca mca_base_component_path "$build_abs/test/components:$pkglibdir" \
        --mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0 \
        --mca coll_dfccl_net_protocol "$value" ${DFCCL_BENCH_MCA:-} \
        "$build_abs/src/tools/perf/dfccl_perf" --no-progress --json "$out/$name-$round.json" "$@" \
        > "$out/$name-$round.txt" 2>&1
    echo "round $round $name: $(uptime | sed 's/.*load/load/')"
}

for round in $(seq 1 "$repeats"); do
    if [ $((round % 2)) -eq 1 ]; then
        run tagged 0 "$round" "$@"
        run rma 1 "$round" "$@"
    else
        run rma 1 "$round" "$@"
        run tagged 0 "$round" "$@"
    fi
done

summary "$out" "$repeats" > "$out/summary.md"
echo "# $out/summary.md"
cat "$out/summary.md"
