#!/bin/bash
# perf_compare.sh [NP] [DFCCL_PERF OPTIONS...] - the same dfccl_perf sweep
#   through dfccl (--mca coll_dfccl_host_buffers engine) and through the stock
#   path (--mca coll ^dfccl); writes dfccl.json and stock.json (into
#   DFCCL_PERF_OUT, default .) and prints, per collective and size, both
#   times and the ratios dfccl/stock of time and of busbw.
#   Run from the build directory (it uses src/tools/perf/dfccl_perf and the
#   component in test/components); DFCCL_BENCH_MCA adds mpirun arguments to
#   the dfccl run. Example: contrib/bench/perf_compare.sh 4 -b 1K -e 16M -x all
set -eu
np=${1:-4}
shift || true
build=${DFCCL_BUILD_DIR:-.}
out=${DFCCL_PERF_OUT:-.}
perf=$build/src/tools/perf/dfccl_perf
if [ ! -x "$perf" ]; then
    echo "$0: no $perf; run from the build directory after make" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "$0: needs python3 to read the JSON" >&2; exit 2; }
pkglibdir=$(ompi_info --path pkglibdir | sed 's/^[^:]*: *//')
export LD_LIBRARY_PATH="$build/src/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
common=(mpirun -np "$np" --oversubscribe --allow-run-as-root -x LD_LIBRARY_PATH
        --mca mca_base_component_path "$build/test/components:$pkglibdir")
mkdir -p "$out"
# shellcheck disable=SC2086  # the extra mpirun arguments are meant to split
"${common[@]}" --mca coll_dfccl_host_buffers engine ${DFCCL_BENCH_MCA:-} \
    "$perf" --no-progress --json "$out/dfccl.json" "$@" > "$out/dfccl.txt"
"${common[@]}" --mca coll ^dfccl "$perf" --no-progress --json "$out/stock.json" "$@" \
    > "$out/stock.txt"
echo "# dfccl: $out/dfccl.json ($out/dfccl.txt), stock: $out/stock.json ($out/stock.txt)"
python3 - "$out/dfccl.json" "$out/stock.json" <<'PY'
import json, sys
dfccl, stock = (json.load(open(p)) for p in sys.argv[1:3])
stock_rows = {(r["collective"], r["size"]): r for r in stock["rows"]}
print("%-20s %12s %12s %12s %10s %11s" % ("collective", "size(B)", "dfccl(us)", "stock(us)",
                                          "time d/s", "busbw d/s"))
for r in dfccl["rows"]:
    s = stock_rows.get((r["collective"], r["size"]))
    if s is None:
        continue
    t = r["time_us"] / s["time_us"] if s["time_us"] > 0 else float("nan")
    b = r["busbw_gbps"] / s["busbw_gbps"] if s["busbw_gbps"] > 0 else float("nan")
    print("%-20s %12d %12.2f %12.2f %10.3f %11.3f" % (r["collective"], r["size"],
                                                      r["time_us"], s["time_us"], t, b))
PY
