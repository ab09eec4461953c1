#!/bin/bash
# host_bench.sh [OUT] - the host engine against the stock path on this
#   machine, as contrib/results/host-latency.md quotes it. Each run, for 2
#   and 4 ranks: perf_compare.sh over the four collectives from 8 B to 64 MiB
#   (dfccl and stock in one job each), the same with coll_dfccl_caller_drives
#   0 (callers sleep while the daemon thread runs their collectives), and
#   chaos_bench.sh (disordered / ordered). Writes every output under OUT
#   (default host-bench-DATE), run by run (OUT/runK/summary.txt), and
#   OUT/medians.txt: per collective and size the median time of each side
#   over the runs, the median ratio and every run's ratio (a machine shared by
#   ranks that outnumber its cores varies by tens of percent between jobs).
#   Run from the build directory after make.
#   Environment: DFCCL_HOST_BENCH_RUNS (default 3), DFCCL_HOST_BENCH_NPS
#   ("2 4"), DFCCL_HOST_BENCH_MAX (64M), DFCCL_HOST_BENCH_CHAOS (chaos
#   iterations, 200).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-host-bench-$(date +%Y-%m-%d)}
runs=${DFCCL_HOST_BENCH_RUNS:-3}
nps=${DFCCL_HOST_BENCH_NPS:-2 4}
max=${DFCCL_HOST_BENCH_MAX:-64M}
chaos=${DFCCL_HOST_BENCH_CHAOS:-200}
command -v python3 >/dev/null || { echo "$0: needs python3 for the medians" >&2; exit 2; }
sweep=(-b 8 -e "$max" -f 4 -x all -n 200 -w 5 --time-budget 1)
for run in $(seq 1 "$runs"); do
    dir=$out/run$run
    mkdir -p "$dir"
    summary=$dir/summary.txt
    {
        echo "# host_bench.sh run $run of $runs, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
        echo "# $(ompi_info --parsable | grep -m1 '^ompi:version:full' || true)"
        git -C "$here/.." log -1 --format='# commit %h %s' 2>/dev/null || true
    } > "$summary"
    for np in $nps; do
        for drives in 1 0; do
            echo "## $np ranks, coll_dfccl_caller_drives $drives: dfccl_perf ${sweep[*]}" >> "$summary"
            DFCCL_PERF_OUT=$dir/np$np-drives$drives \
                DFCCL_BENCH_MCA="--mca coll_dfccl_caller_drives $drives" \
                "$here/perf_compare.sh" "$np" "${sweep[@]}" | grep -v '^#' >> "$summary"
        done
        echo "## $np ranks: chaos_bench.sh $np $chaos" >> "$summary"
        "$here/chaos_bench.sh" "$np" "$chaos" > "$dir/chaos-np$np.txt"
        cat "$dir/chaos-np$np.txt" >> "$summary"
    done
done
python3 - "$out" "$runs" > "$out/medians.txt" <<'PY'
import glob, json, os, re, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = {}
for run in range(1, runs + 1):
    for d in sorted(glob.glob(os.path.join(out, "run%d" % run, "np*-drives*"))):
        stock = {(r["collective"], r["size"]): r for r in
                 json.load(open(os.path.join(d, "stock.json")))["rows"]}
        for r in json.load(open(os.path.join(d, "dfccl.json")))["rows"]:
            s = stock.get((r["collective"], r["size"]))
            if s is not None and s["time_us"] > 0:
                rows.setdefault(os.path.basename(d), {}).setdefault(
                    (r["collective"], r["size"]), []).append((r["time_us"], s["time_us"]))
for setting in sorted(rows):
    print("## %s: medians over %d runs (us), time dfccl/stock, and each run's ratio"
          % (setting, runs))
    print("%-20s %12s %10s %10s %6s  %s" % ("collective", "size(B)", "dfccl", "stock", "d/s",
                                            "runs"))
    for (coll, size), v in sorted(rows[setting].items()):
        ratios = [a / b for a, b in v]
        print("%-20s %12d %10.2f %10.2f %6.2f  %s" % (
            coll, size, statistics.median(a for a, _ in v), statistics.median(b for _, b in v),
            statistics.median(ratios), " ".join("%.2f" % x for x in ratios)))
for np_file in sorted(glob.glob(os.path.join(out, "run1", "chaos-np*.txt"))):
    name = os.path.basename(np_file)
    vals = []
    for run in range(1, runs + 1):
        text = open(os.path.join(out, "run%d" % run, name)).read()
        m = re.search(r"disordered/ordered: ([0-9.]+)", text)
        vals.append(m.group(1) if m else "n/a")
    print("## %s: dfccl disordered/ordered per run: %s" % (name[:-4], " ".join(vals)))
PY
cat "$out/medians.txt"
