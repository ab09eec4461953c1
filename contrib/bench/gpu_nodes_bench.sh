#!/bin/bash
# gpu_nodes_bench.sh OUTDIR - device allreduce across "nodes" on one GPU machine:
# the hierarchical allreduce and the latency algorithm against the flat
# ring, and all against the stock path on staged buffers, side by side in
# one run.
#
#   NP ranks (8) split into nodes of SPLIT (4) by coll_dfccl_node_split, the
#   links between them over UCX's TCP transport (UCX_TLS=tcp,self), so that
#   the network is the bottleneck as between real nodes. For each size:
#     hier    dfccl, algorithm 1 (hierarchical: nodes hold as many ranks)
#     rd      dfccl, algorithm 2 (recursive doubling among the nodes), small sizes
#     ring    dfccl, algorithm 0 (one ring node by node)
#     staged  Open MPI's own path (--mca coll ^dfccl, ob1 over TCP) on device
#             buffers copied through page-locked host memory each call
#     rma     (NODES_BENCH_RMA=1) hier again with the links across nodes as
#             RMA puts (coll_dfccl_net_protocol 1) instead of tagged messages
#   large sizes 1 MiB to 1 GiB, small ones 8 B to 64 KiB; every dfccl run
#   checks its results (-c 1). Writes NAME.txt and NAME.json per run and
#   summary.txt (times in microseconds and the ratios ring/hier, ring/rd,
#   staged/hier, rma/hier).
#
#   Run from the build directory after `make install`, with the MPS control
#   daemon started (all ranks share one GPU).
#
#   Settings (environment):
#     NODES_BENCH_NP=8  NODES_BENCH_SPLIT=4
#     NODES_BENCH_LARGE="-b 1M -e 1G -f 4"  NODES_BENCH_SMALL="-b 8 -e 64K -f 8"
#     NODES_BENCH_CALLS="-w 2 -n 10 --time-budget 2"
#     NODES_BENCH_RUN_LIMIT=400           seconds before one mpirun is killed
#     NODES_BENCH_RMA=0                   1: add the rma runs
#     DFCCL_PERF=src/tools/perf/dfccl_perf
set -u
out=${1:?usage: $0 OUTDIR (run from the build directory)}
np=${NODES_BENCH_NP:-8}
split=${NODES_BENCH_SPLIT:-4}
large=${NODES_BENCH_LARGE:--b 1M -e 1G -f 4}
small=${NODES_BENCH_SMALL:--b 8 -e 64K -f 8}
calls=${NODES_BENCH_CALLS:--w 2 -n 10 --time-budget 2}
limit=${NODES_BENCH_RUN_LIMIT:-400}
perf=${DFCCL_PERF:-src/tools/perf/dfccl_perf}
with_rma=${NODES_BENCH_RMA:-0}

[ -x "$perf" ] || { echo "$0: no $perf; run from the build directory after make" >&2; exit 2; }
command -v python3 >/dev/null || { echo "$0: needs python3 for the summary" >&2; exit 2; }
mkdir -p "$out" || exit 2
{
    echo "# gpu_nodes_bench.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC'): np $np, nodes of $split, UCX_TLS=tcp,self"
    nvidia-smi -L 2>&1
    ompi_info --parsable 2>/dev/null | grep -E '^(ompi:version:full|mca:coll:dfccl:version)'
} > "$out/env.txt"

failures=0
job=
trap 'echo "$0: interrupted; mpirun stopped" >&2
      [ -n "$job" ] && kill -TERM "$job" 2>/dev/null && wait "$job"; exit 130' TERM INT HUP
# run NAME MPIRUN-AND-PERF-ARGS...: one mpirun, bounded in time.
run() {
    local name=$1 rc
    shift
    echo "== $name"
    timeout -k 10 "$limit" mpirun -np "$np" --oversubscribe --bind-to none --allow-run-as-root \
        -x UCX_TLS=tcp,self "$@" < /dev/null > "$out/$name.txt" 2>&1 &
    job=$!
    wait "$job"
    rc=$?
    job=
    echo "$name rc=$rc" >> "$out/status.txt"
    [ "$rc" -eq 0 ] || { echo "   FAILED (exit $rc)"; tail -5 "$out/$name.txt"; failures=$((failures + 1)); }
}

: > "$out/status.txt"
split_mca="--mca coll_dfccl_node_split $split"
for range in large small; do
    sizes=${large}
    [ "$range" = small ] && sizes=${small}
    # shellcheck disable=SC2086  # sizes, calls and the MCA arguments split on purpose
    run "hier_$range" $split_mca --mca coll_dfccl_algorithm 1 --mca coll_dfccl_verbose 1 \
        "$perf" --memory device $sizes $calls -c 1 -x allreduce --no-progress --json "$out/hier_$range.json"
    # shellcheck disable=SC2086
    [ "$with_rma" = 1 ] && run "rma_$range" $split_mca --mca coll_dfccl_algorithm 1 --mca coll_dfccl_net_protocol 1 \
        "$perf" --memory device $sizes $calls -c 1 -x allreduce --no-progress --json "$out/rma_$range.json"
    # shellcheck disable=SC2086
    [ "$range" = small ] && run "rd_$range" $split_mca --mca coll_dfccl_algorithm 2 --mca coll_dfccl_verbose 1 \
        "$perf" --memory device $sizes $calls -c 1 -x allreduce --no-progress --json "$out/rd_$range.json"
    # shellcheck disable=SC2086
    run "ring_$range" $split_mca --mca coll_dfccl_algorithm 0 \
        "$perf" --memory device $sizes $calls -c 1 -x allreduce --no-progress --json "$out/ring_$range.json"
    # shellcheck disable=SC2086
    run "staged_$range" --mca coll ^dfccl --mca pml ob1 --mca btl tcp,self \
        "$perf" --memory staged $sizes $calls -c 1 -x allreduce --no-progress --json "$out/staged_$range.json"
done

python3 - "$out" > "$out/summary.txt" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = {}
kinds = ("hier", "rd", "ring", "staged", "rma")
for kind in kinds:
    for rng in ("small", "large"):
        path = os.path.join(out, "%s_%s.json" % (kind, rng))
        if (kind == "rd" and rng == "large") or (kind == "rma" and not os.path.exists(path)):
            continue
        try:
            d = json.load(open(path))
        except (OSError, ValueError) as e:
            print("# %s: unreadable (%s)" % (path, e))
            continue
        for r in d["rows"]:
            rows.setdefault(r["size"], {})[kind] = r
print("# allreduce on device buffers, times in us (medians of dfccl_perf); ratio > 1 favours"
      " hier (ring/h, staged/h, rma/h) or rd (ring/rd); rma: hier with RMA links")
print("%12s %12s %12s %12s %12s %12s %9s %9s %9s %9s %6s" % (
    "size(B)", "hier", "rd", "ring", "staged", "rma", "ring/h", "ring/rd", "staged/h", "rma/h",
    "wrong"))
for size in sorted(rows):
    r = rows[size]
    t = {k: r[k]["median_us"] if k in r else 0.0 for k in kinds}
    wrong = sum((r[k]["wrong"] or 0) + (1 if r[k]["errors"] else 0) for k in r)
    ratio = lambda a, b: "%9.2f" % (t[a] / t[b]) if t[a] > 0 and t[b] > 0 else "%9s" % "-"
    print("%12d %12.1f %12.1f %12.1f %12.1f %12.1f %s %s %s %s %6d" % (
        size, t["hier"], t["rd"], t["ring"], t["staged"], t["rma"], ratio("ring", "hier"),
        ratio("ring", "rd"), ratio("staged", "hier"), ratio("rma", "hier"), wrong))
PY
cat "$out/summary.txt"
grep -h "GPU side on" "$out/hier_large.txt" "$out/rd_small.txt" 2>/dev/null | sort | uniq -c | head -5
echo "# $failures failed run(s); outputs in $out"
[ "$failures" -eq 0 ]
