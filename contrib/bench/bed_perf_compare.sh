#!/bin/bash
# bed_perf_compare.sh HOSTS RANKS_PER_HOST OUT [DFCCL_PERF OPTIONS...]
#
# dfccl_perf across emulated hosts (test/multihost/cluster.sh), the same
# sweep through the engine and through Open MPI's stock collectives, in one
# run, and the ratio per collective and size. Configurations (each one job):
#
#   dfccl       --mca coll_dfccl_host_buffers engine (host engine, UCX links
#               between hosts), plus DFCCL_BENCH_MCA
#   stock-ob1   --mca coll ^dfccl, pml ob1 over btl tcp
#   stock-ucx   --mca coll ^dfccl, pml ucx over UCX's tcp transport
#
# DFCCL_BENCH_CONFIGS lists which to run (unset: all three, in that order;
# empty: none);
# more configurations: "NAME=MPIRUN ARGS" entries in DFCCL_BENCH_EXTRA,
# separated by ';' (e.g. "flat=--mca coll_dfccl_algorithm 0;hier=--mca
# coll_dfccl_algorithm 1"). DFCCL_BENCH_SHAPE="HOST RATE" shapes one host's
# link for the run (cluster.sh shape) and unshapes it after.
#
# Brings a bed of HOSTS up (prefix dfccl-bench-) and down again. Run from the
# build directory. Writes OUT/NAME.json, OUT/NAME.txt and OUT/NAME.err
# (the job's standard error) per configuration,
# OUT/ratios.txt (time of each configuration over the first one's), and
# OUT/load.txt (the load average before each job: a loaded machine skews
# the times).
set -eu
if [ $# -lt 3 ]; then
    echo "usage: $0 HOSTS RANKS_PER_HOST OUT [DFCCL_PERF OPTIONS...]" >&2
    exit 2
fi
hosts=$1
per_host=$2
out=$3
shift 3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${DFCCL_BUILD_DIR:-$PWD}
perf=$build/src/tools/perf/dfccl_perf
cluster=$here/../../test/multihost/cluster.sh
[ -x "$perf" ] || { echo "$0: no $perf; run from the build directory after make" >&2; exit 2; }
command -v python3 >/dev/null || { echo "$0: needs python3 to read the JSON" >&2; exit 2; }
pkglibdir=$(ompi_info --path pkglibdir | sed 's/^[^:]*: *//')
export DFCCL_BED_PREFIX=${DFCCL_BED_PREFIX:-dfccl-bench-}
mkdir -p "$out"
out=$(cd "$out" && pwd)

"$cluster" down
"$cluster" up "$hosts"
trap '"$cluster" down' EXIT
if [ -n "${DFCCL_BENCH_SHAPE:-}" ]; then
    # shellcheck disable=SC2086  # HOST RATE
    "$cluster" shape $DFCCL_BENCH_SHAPE
fi

common=(-np "$((hosts * per_host))" -x LD_LIBRARY_PATH="$build/src/.libs"
        --mca mca_base_component_path "$build/test/components:$pkglibdir")
names=()
declare -A args
for c in ${DFCCL_BENCH_CONFIGS-dfccl stock-ob1 stock-ucx}; do
    case $c in
        dfccl) args[$c]="--mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0 ${DFCCL_BENCH_MCA:-}" ;;
        stock-ob1) args[$c]="--mca coll ^dfccl --mca pml ob1" ;;
        stock-ucx) args[$c]="--ucx --mca coll ^dfccl" ;;
        *) echo "$0: unknown configuration $c" >&2; exit 2 ;;
    esac
    names+=("$c")
done
IFS=';' read -r -a extra <<< "${DFCCL_BENCH_EXTRA:-}"
for e in "${extra[@]}"; do
    [ -n "$e" ] || continue
    names+=("${e%%=*}")
    args[${e%%=*}]="--mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu 0 ${e#*=}"
done

: > "$out/load.txt"
for c in "${names[@]}"; do
    echo "$c: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/load.txt"
    ucx=()
    a=${args[$c]}
    if [[ $a == --ucx* ]]; then ucx=(--ucx); a=${a#--ucx}; fi
    echo "# $c: cluster.sh run -k $per_host ${ucx[*]} -- $a dfccl_perf $*" >&2
    # shellcheck disable=SC2086  # the configuration's mpirun arguments split
    "$cluster" run -k "$per_host" "${ucx[@]}" -- "${common[@]}" $a \
        "$perf" --no-progress --json "$out/$c.json" "$@" > "$out/$c.txt" 2> "$out/$c.err" ||
        { tail -20 "$out/$c.err" >&2; exit 1; }
done

python3 - "$out" "${names[@]}" <<'PY' | tee "$out/ratios.txt"
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
runs = {n: {(r["collective"], r["size"]): r for r in json.load(open(os.path.join(out, n + ".json")))["rows"]}
        for n in names}
base = names[0]
head = "%-16s %10s" % ("collective", "size(B)") + "".join(" %11s" % (n + "(us)") for n in names)
head += "".join(" %13s" % ("%s/%s" % (base, n)) for n in names[1:])
print(head)
for key, r in runs[base].items():
    times = [runs[n].get(key, {}).get("time_us", float("nan")) for n in names]
    line = "%-16s %10d" % key + "".join(" %11.1f" % t for t in times)
    line += "".join(" %13.3f" % (times[0] / t if t > 0 else float("nan")) for t in times[1:])
    print(line)
PY
