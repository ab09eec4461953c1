#!/bin/bash
# perf_plot.sh [-o PREFIX] FILE.json... - draws from dfccl_perf --json files
#   PREFIX_busbw.png (bus bandwidth vs size) and PREFIX_latency.png (time vs
#   size), log-log, one line per file and collective. PREFIX defaults to
#   "perf". Needs gnuplot (Debian: gnuplot-nox) and python3.
set -eu
prefix=perf
if [ "${1:-}" = "-o" ]; then
    prefix=${2:?"-o needs a prefix"}
    shift 2
fi
if [ $# -eq 0 ]; then
    echo "usage: $0 [-o PREFIX] FILE.json..." >&2
    exit 2
fi
if ! command -v gnuplot >/dev/null; then
    echo "$0: gnuplot is not installed (Debian: apt-get install gnuplot-nox)" >&2
    exit 2
fi
command -v python3 >/dev/null || { echo "$0: needs python3 to read the JSON" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/perf_plot.XXXXXX")
trap 'rm -rf "$work"' EXIT

# One data file per (JSON file, collective): "size time_us busbw", and a
# list of "datafile<TAB>title" for gnuplot to iterate over.
python3 - "$work" "$@" <<'PY'
import json, os, sys
work, files = sys.argv[1], sys.argv[2:]
with open(os.path.join(work, "series"), "w") as series:
    for i, path in enumerate(files):
        doc = json.load(open(path))
        label = os.path.splitext(os.path.basename(path))[0]
        colls = sorted({r["collective"] for r in doc["rows"]})
        for coll in colls:
            rows = [r for r in doc["rows"] if r["collective"] == coll and r["time_us"] > 0]
            if not rows:
                continue
            data = os.path.join(work, "%d_%s.dat" % (i, coll))
            with open(data, "w") as f:
                for r in rows:
                    f.write("%d %g %g\n" % (r["size"], r["time_us"], r["busbw_gbps"]))
            title = label if len(colls) == 1 else "%s %s" % (label, coll)
            series.write("%s\t%s np=%d\n" % (data, title, doc["np"]))
PY
if [ ! -s "$work/series" ]; then
    echo "$0: no rows in $*" >&2
    exit 1
fi
plot() {  # output, y label, y column
    local clauses="" file title
    while IFS=$'\t' read -r file title; do
        clauses+="${clauses:+, }'$file' using 1:$3 with linespoints title '$title'"
    done < "$work/series"
    gnuplot <<GP
set terminal pngcairo size 900,600 noenhanced
set output '$1'
set logscale x 2
set logscale y 10
set format x '%.0b%B'
set format y '%g'
set xlabel 'size (bytes)'
set ylabel '$2'
set grid
set key top left
plot $clauses
GP
    echo "wrote $1"
}
plot "${prefix}_busbw.png" 'bus bandwidth (GB/s)' 3
plot "${prefix}_latency.png" 'time per call (us)' 2
