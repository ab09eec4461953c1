#!/bin/bash
# gpu_bench.sh OUTDIR - the dfccl_perf sweeps behind the GPU results.
#
#   For each np (2 4 8) and collective (allreduce allgather reduce_scatter):
#   dfccl with --memory device, 8 B to 1 GiB, checked (-c 1). Then the
#   baseline at np 4: --memory staged (device buffers copied through
#   page-locked host memory each call) on the stock path (--mca coll ^dfccl),
#   at 8 B, 64 KiB and 64 MiB. Every run writes NAME.json and NAME.txt into
#   OUTDIR; summary.txt holds the rows side by side, env.txt the machine.
#
#   Run from the build directory after `make install` (mpirun finds the
#   component in Open MPI's component directory), with the MPS control
#   daemon started (all ranks share one GPU). A full run takes a few minutes:
#   --time-budget cuts the calls of the slow sizes down.
#
#   Settings (environment):
#     GPU_BENCH_NPS="2 4 8"             ranks of the dfccl sweeps
#     GPU_BENCH_COLLS="allreduce allgather reduce_scatter"
#     GPU_BENCH_SWEEP="-b 8 -e 1G -f 2" sizes of the dfccl sweeps
#     GPU_BENCH_CALLS="-w 5 -n 20 --time-budget 0.5"
#     GPU_BENCH_STAGED_NP=4  GPU_BENCH_STAGED_SIZES="8 64K 64M"
#     GPU_BENCH_RUN_LIMIT=300           seconds before one mpirun is killed
#     GPU_BENCH_MCA=""                  more mpirun arguments for the dfccl runs
#     DFCCL_PERF=src/tools/perf/dfccl_perf
set -u
out=${1:?usage: $0 OUTDIR (run from the build directory)}
nps=${GPU_BENCH_NPS:-2 4 8}
colls=${GPU_BENCH_COLLS:-allreduce allgather reduce_scatter}
sweep=${GPU_BENCH_SWEEP:--b 8 -e 1G -f 2}
calls=${GPU_BENCH_CALLS:--w 5 -n 20 --time-budget 0.5}
staged_np=${GPU_BENCH_STAGED_NP:-4}
staged_sizes=${GPU_BENCH_STAGED_SIZES:-8 64K 64M}
limit=${GPU_BENCH_RUN_LIMIT:-300}
perf=${DFCCL_PERF:-src/tools/perf/dfccl_perf}

[ -x "$perf" ] || { echo "$0: no $perf; run from the build directory after make" >&2; exit 2; }
command -v python3 >/dev/null || { echo "$0: needs python3 for the summary" >&2; exit 2; }
mkdir -p "$out" || exit 2
if ! ldd "$perf" 2>/dev/null | grep -q libcudart; then
    echo "$0: $perf is not linked with the CUDA runtime: no --memory device (configured without CUDA?)" >&2
    exit 2
fi
if ! pgrep -f nvidia-cuda-mps-control >/dev/null 2>&1; then
    echo "$0: warning: no MPS control daemon running; the ranks will time-slice the GPU" >&2
fi

{
    echo "# gpu_bench.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n)"
    echo "nps: $nps; colls: $colls; sweep: $sweep; calls: $calls"
    echo "staged: np $staged_np, sizes $staged_sizes; dfccl mpirun extras: ${GPU_BENCH_MCA:-none}"
    nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    ompi_info --parsable 2>/dev/null | grep -E '^(ompi:version:full|mca:coll:dfccl:version)'
    pgrep -a -f nvidia-cuda-mps-control 2>/dev/null || echo "MPS control daemon: not running"
    lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\))'
} > "$out/env.txt"

failures=0
# A signal to this script (^C, an outer timeout) stops the running job too:
# timeout puts mpirun in a process group of its own, which the signal would
# miss, leaving the job on the GPU for up to the run limit.
job=
trap 'echo "$0: interrupted by a signal; mpirun stopped" >&2
      [ -n "$job" ] && kill -TERM "$job" 2>/dev/null && wait "$job"; exit 130' TERM INT HUP
# run NAME NP MPIRUN-AND-PERF-ARGS...: one mpirun, bounded in time, its exit status logged.
run() {
    local name=$1 np=$2 rc
    shift 2
    echo "== $name (np $np)"
    timeout -k 10 "$limit" mpirun -np "$np" --oversubscribe --allow-run-as-root "$@" \
        < /dev/null > "$out/$name.txt" 2>&1 &
    job=$!
    wait "$job"
    rc=$?
    job=
    echo "$name rc=$rc" >> "$out/status.txt"
    grep -E '^dfccl_perf: [0-9]+ passed' "$out/$name.txt" || tail -5 "$out/$name.txt"
    [ "$rc" -eq 0 ] || { echo "   FAILED (exit $rc$([ "$rc" -eq 124 ] && echo ", over ${limit}s"))"; failures=$((failures + 1)); }
}

: > "$out/status.txt"
# The component's per-call log shows which path carried a device call.
# shellcheck disable=SC2086
run route_np2 2 ${GPU_BENCH_MCA:-} --mca coll_dfccl_verbose 2 \
    "$perf" --memory device -b 64K -e 64K -x allreduce -w 0 -n 1 -c 1 --no-progress
echo "   $(grep -c 'coll:dfccl:.*allreduce' "$out/route_np2.txt") lines of the component's log" \
     "name an allreduce (see route_np2.txt for the path they took)"

for np in $nps; do
    for coll in $colls; do
        # shellcheck disable=SC2086  # sweep, calls and GPU_BENCH_MCA split on purpose
        run "device_np${np}_${coll}" "$np" ${GPU_BENCH_MCA:-} \
            "$perf" --memory device $sweep $calls -c 1 -x "$coll" --no-progress \
            --json "$out/device_np${np}_${coll}.json"
    done
done

staged_colls=$(for c in $colls; do printf -- ' -x %s' "$c"; done)
for size in $staged_sizes; do
    # shellcheck disable=SC2086
    run "staged_np${staged_np}_${size}" "$staged_np" --mca coll ^dfccl \
        "$perf" --memory staged -b "$size" -e "$size" $calls -c 1 $staged_colls --no-progress \
        --json "$out/staged_np${staged_np}_${size}.json"
done

python3 - "$out" > "$out/summary.txt" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
docs = []
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        docs.append((os.path.basename(path)[:-5], json.load(open(path))))
    except (OSError, ValueError) as e:
        print("# %s: unreadable (%s)" % (path, e))
if docs:
    d = docs[0][1]
    print("# device %s, B = %.1f GB/s (device-to-device copy, read + write bytes)"
          % (d.get("device", "?"), d.get("device_copy_gbps", 0.0)))
print("%-28s %4s %-15s %12s %6s %11s %10s %11s %8s %6s" % (
    "run", "np", "collective", "size(B)", "iters", "time(us)", "busbw", "floor(us)",
    "%floor", "wrong"))
device = {}
for name, d in docs:
    for r in d["rows"]:
        if d["memory"] == "device":
            device[(d["np"], r["collective"], r["size"])] = r
        print("%-28s %4d %-15s %12d %6s %11.2f %10.3f %11.2f %8.2f %6s" % (
            name, d["np"], r["collective"], r["size"], r.get("iterations", d["iterations"]),
            r["time_us"], r["busbw_gbps"], r.get("floor_us", 0.0), r.get("floor_pct", 0.0),
            "ERR" if r["errors"] else r["wrong"]))
print()
print("# staged stock path vs dfccl device at the same np and size (time ratio > 1 favours dfccl)")
print("%-15s %4s %12s %13s %13s %8s" % ("collective", "np", "size(B)", "staged(us)",
                                        "dfccl(us)", "s/d"))
for name, d in docs:
    if d["memory"] != "staged":
        continue
    for r in d["rows"]:
        dev = device.get((d["np"], r["collective"], r["size"]))
        if dev and dev["time_us"] > 0:
            print("%-15s %4d %12d %13.2f %13.2f %8.2f" % (
                r["collective"], d["np"], r["size"], r["time_us"], dev["time_us"],
                r["time_us"] / dev["time_us"]))
PY
cat "$out/summary.txt"
echo "# $failures failed run(s); outputs in $out (status.txt, env.txt, summary.txt)"
[ "$failures" -eq 0 ]
