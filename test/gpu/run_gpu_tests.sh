#!/bin/bash
# run_gpu_tests.sh - the GPU suite: the MPI tests on device buffers, the
# CUDA synchronisation test and compute-sanitizer runs, through the dfccl
# component of a build tree.
#
# Run it from the build tree after `make check TESTS=` built the programs:
#
#   /path/to/src/test/gpu/run_gpu_tests.sh [--quick] [--np-list "2 4 8"]
#       [--logdir DIR] [--builddir DIR] [--timeout S] [--mca "ARGS"]
#       [--only REGEX] [--no-sanitizer] [--large-np N]
#
# It starts nothing but the mpirun jobs: several ranks share the one GPU
# through CUDA MPS, which the caller starts (nvidia-cuda-mps-control -d).
# Each item runs through test/mpi/run_mpi_test.sh (component path,
# LD_LIBRARY_PATH, timeout, the "<program>: N passed, 0 failed" verdict),
# writes DIR/<item>.log and prints one PASS/FAIL line; the exit status is
# non-zero when any item failed. Device buffers go to the engine by default,
# so no coll_dfccl_host_buffers is given; every program checks the engine's
# counters itself (--expect engine).

set -u

here=$(cd "$(dirname "$0")" && pwd)
run_mpi_test=$here/../mpi/run_mpi_test.sh

quick=0
np_list=
logdir=./gpu-test-logs
builddir=$PWD
timeout_s=
extra_mca=${DFCCL_GPU_TEST_MCA:-}
only=
sanitizer=1
large_np=

usage() {
    sed -n '8,10p' "$0" | sed 's/^# *//' >&2
}

while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=1 ;;
        --np-list) np_list=${2:?}; shift ;;
        --logdir) logdir=${2:?}; shift ;;
        --builddir) builddir=${2:?}; shift ;;
        --timeout) timeout_s=${2:?}; shift ;;
        --mca) extra_mca="$extra_mca ${2:?}"; shift ;;
        --only) only=${2:?}; shift ;;
        --no-sanitizer) sanitizer=0 ;;
        --large-np) large_np=${2:?}; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "run_gpu_tests: unknown option $1" >&2; usage; exit 2 ;;
    esac
    shift
done

builddir=$(cd "$builddir" && pwd) || exit 2
for built in test/components/mca_coll_dfccl.so test/mpi/coll_check test/mpi/disorder_check \
             test/mpi/scenario_check test/mpi/threads_check test/mpi/chaos_check \
             test/gpu/sync_check; do
    if [ ! -e "$builddir/$built" ]; then
        echo "run_gpu_tests: $builddir/$built is missing: run 'make check TESTS=' in a build" \
             "tree configured with CUDA (or pass --builddir)" >&2
        exit 2
    fi
done
mkdir -p "$logdir" && logdir=$(cd "$logdir" && pwd) || exit 2

# What run_mpi_test.sh needs, as the Makefile's AM_TESTS_ENVIRONMENT sets it.
export DFCCL_COMPONENT_DIR=${DFCCL_COMPONENT_DIR:-$builddir/test/components}
export DFCCL_ENGINE_LIBDIR=${DFCCL_ENGINE_LIBDIR:-$builddir/src/.libs}
if [ -z "${OMPI_PKGLIBDIR:-}" ]; then
    OMPI_PKGLIBDIR=$(ompi_info --path pkglibdir 2>/dev/null | sed 's/^[^:]*: *//')
    export OMPI_PKGLIBDIR
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

if [ "$quick" -eq 1 ]; then
    : "${np_list:=2 4}"
    coll_args=(--quick)
    disorder_args=(--iterations 3 --seed 1)
    scenario_args=(--scenarios 50 --seed 1)
    threads_args=(--threads 4 --iterations 10)
    chaos_args=(--iterations 5)
    sync_args=(--iterations 1)
else
    : "${np_list:=2 4 8}"
    # The default counts: 0, 1, 7, 4099, 65537 and 1048579 elements.
    coll_args=()
    disorder_args=(--iterations 8 --seed 1)
    scenario_args=(--scenarios 300 --seed 1)
    threads_args=(--threads 4 --iterations 40)
    chaos_args=(--iterations 20)
    sync_args=(--iterations 3)
fi
# The disorder-type tests get a watchdog short enough that a hung engine
# fails them with its diagnosis well before run_mpi_test.sh's timeout.
disorder_mca="--mca coll_dfccl_timeout 60"

# Information only: the runner does not start MPS.
echo "run_gpu_tests: build tree $builddir, logs in $logdir"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>&1 | sed 's/^/  /'
else
    echo "run_gpu_tests: WARNING: nvidia-smi not found"
fi
if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    echo "run_gpu_tests: WARNING: nvidia-cuda-mps-control not found: ranks share the GPU" \
         "without MPS"
elif ! pgrep -f nvidia-cuda-mps-control >/dev/null 2>&1; then
    echo "run_gpu_tests: WARNING: the MPS control daemon does not seem to run" \
         "(start it with: nvidia-cuda-mps-control -d)"
fi

passed=0
failed=0
failed_items=()

# report NAME STATUS SECONDS LOG [WHY]
report() {
    if [ "$2" -eq 0 ]; then
        printf 'PASS: %-22s %5d s\n' "$1" "$3"
        passed=$((passed + 1))
    else
        printf 'FAIL: %-22s %5d s  %s (log: %s)\n' "$1" "$3" "${5:-}" "$4"
        grep -E 'FAIL|ERROR|rank [0-9]+: ' "$4" 2>/dev/null | head -5 | sed 's/^/      /'
        failed=$((failed + 1))
        failed_items+=("$1")
    fi
}

selected() {
    [ -z "$only" ] || [[ $1 =~ $only ]]
}

# run_item NAME NP MCA PROGRAM ARGS...: one run_mpi_test.sh job.
run_item() {
    local name=$1 np=$2 mca=$3
    shift 3
    selected "$name" || return 0
    local log=$logdir/$name.log start=$SECONDS
    (cd "$builddir" &&
     DFCCL_TEST_MCA="$mca $extra_mca" DFCCL_TEST_TIMEOUT=${timeout_s:-900} \
         "$run_mpi_test" "$np" "$@") >"$log" 2>&1
    local status=$?
    report "$name" "$status" $((SECONDS - start)) "$log"
}

# run_sanitized NAME TOOL NP MCA COLL_CHECK_ARGS...: coll_check with every
# rank under compute-sanitizer; each rank must report no errors (hazards).
run_sanitized() {
    local name=$1 tool=$2 np=$3 mca=$4
    shift 4
    selected "$name" || return 0
    local log=$logdir/$name.log start=$SECONDS
    local tool_path candidate
    tool_path=$(command -v compute-sanitizer || true)
    for candidate in "${CUDA_HOME:-}/bin/compute-sanitizer" /usr/local/cuda/bin/compute-sanitizer; do
        if [ -z "$tool_path" ] && [ -x "$candidate" ]; then
            tool_path=$candidate
        fi
    done
    if [ -z "$tool_path" ]; then
        echo "compute-sanitizer not found in PATH, \$CUDA_HOME/bin or /usr/local/cuda/bin" >"$log"
        report "$name" 1 0 "$log" "compute-sanitizer not found"
        return
    fi
    (cd "$builddir" &&
     DFCCL_TEST_MCA="$mca $extra_mca" DFCCL_TEST_TIMEOUT=${timeout_s:-1800} \
     DFCCL_TEST_LAUNCHER="$tool_path --tool $tool --error-exitcode 1" \
         "$run_mpi_test" "$np" test/mpi/coll_check --expect engine "$@") \
         >"$log" 2>&1
    local status=$? clean summary='ERROR SUMMARY: 0 errors'
    [ "$tool" = racecheck ] && summary='RACECHECK SUMMARY: 0 hazards'
    clean=$(grep -c "$summary" "$log")
    if [ "$status" -eq 0 ] && [ "$clean" -ne "$np" ]; then
        report "$name" 1 $((SECONDS - start)) "$log" \
            "$clean of $np ranks printed '$summary'"
        return
    fi
    report "$name" "$status" $((SECONDS - start)) "$log"
}

for np in $np_list; do
    run_item "coll_np$np" "$np" "" \
        test/mpi/coll_check --memory device --expect engine "${coll_args[@]}"
    run_item "disorder_np$np" "$np" "$disorder_mca" \
        test/mpi/disorder_check --memory device "${disorder_args[@]}"
    run_item "scenario_np$np" "$np" "$disorder_mca" \
        test/mpi/scenario_check --memory device "${scenario_args[@]}"
    run_item "threads_np$np" "$np" "$disorder_mca" \
        test/mpi/threads_check --memory device "${threads_args[@]}"
    run_item "chaos_np$np" "$np" "$disorder_mca" \
        test/mpi/chaos_check --memory device "${chaos_args[@]}"
    run_item "sync_np$np" "$np" "$disorder_mca" \
        test/gpu/sync_check --expect engine "${sync_args[@]}"
    # persistent collectives on device buffers: the matrix, and requests
    # started three times each under disorder
    run_item "persist_coll_np$np" "$np" "" \
        test/mpi/coll_check --memory device --expect engine --quick --persistent
    run_item "persist_disorder_np$np" "$np" "$disorder_mca" \
        test/mpi/disorder_check --memory device --persistent 3 "${disorder_args[@]}"
    # MPI-4: persistent requests started in a per-rank order (a channel
    # each), and the strict-ordering promise's path
    run_item "persist_order_np$np" "$np" "$disorder_mca" \
        test/mpi/persist_order_check --memory device --iterations 8 --seed 7
    run_item "persist_order_strict_np$np" "$np" "$disorder_mca" \
        test/mpi/persist_order_check --memory device --iterations 8 --strict
done
# Buffers from cudaMallocAsync's pool, which CUDA IPC cannot export: every
# direct-sized collective falls back to the ring on all ranks, on the
# channels' first pass after the handshake (reduce-scatter here always has
# an empty block, so its plan starts with an empty step on one rank). Once,
# at the largest NP of the list (at least 4 ranks: a 2:0:3:1 split).
fallback_np=$(printf '%s\n' $np_list | sort -n | tail -1)
if [ "${fallback_np:-0}" -ge 4 ]; then
    run_item "direct_fallback_np$fallback_np" "$fallback_np" "" \
        test/mpi/coll_check --memory device-pool --expect engine --quick --counts 65537,1048579
fi
# Mixed memory kinds under coll_dfccl_host_buffers=engine: rank 0 passes host
# buffers, the others device buffers. Every rank offers the GPU side, so all
# take it and rank 0 stages through device memory; with rank 1 declining it
# (coll_dfccl_gpu=0 in its environment alone), the ranks agree at
# communicator creation on the host engine and ranks 1.. stage through host
# memory. Both must be carried (--expect engine) and bit-exact.
# They run once, at the largest NP of the list (at least 2 ranks).
# gpu_direct_bytes 4 MiB (bytes x (ranks - 1) must reach it) keeps an
# allreduce size on each GPU path at any NP: 4099 elements one-shot, 65537
# the ring, 1048579 direct.
mixed_np=$(printf '%s\n' $np_list | sort -n | tail -1)
mixed_mca="--mca coll_dfccl_host_buffers engine --mca coll_dfccl_gpu_direct_bytes 4194304"
if [ "${mixed_np:-0}" -ge 2 ]; then
    run_item "mixed_gpu_np$mixed_np" "$mixed_np" "$mixed_mca" \
        test/mpi/coll_check --memory mixed --expect engine --quick --counts 0,1,7,4099,65537,1048579
    saved_launcher=${DFCCL_TEST_LAUNCHER-}
    export DFCCL_TEST_LAUNCHER="$here/rank_env.sh 1 OMPI_MCA_coll_dfccl_gpu=0 ${saved_launcher}"
    run_item "mixed_host_np$mixed_np" "$mixed_np" "$mixed_mca" \
        test/mpi/coll_check --memory mixed --expect engine --quick --counts 0,1,7,4099,65537,1048579
    DFCCL_TEST_LAUNCHER=$saved_launcher
    [ -n "$saved_launcher" ] || unset DFCCL_TEST_LAUNCHER
    run_item "mixed_disorder_np$mixed_np" "$mixed_np" \
        "--mca coll_dfccl_host_buffers engine $disorder_mca" \
        test/mpi/disorder_check --memory mixed "${disorder_args[@]}"
    # Daemons of different block counts (rank 1 with 8 channels, the others
    # their own): each communicator runs the fewest, so parts and FIFOs agree
    # (ring and direct sizes, which split over the channels).
    export DFCCL_TEST_LAUNCHER="$here/rank_env.sh 1 OMPI_MCA_coll_dfccl_gpu_channels=8 ${saved_launcher}"
    run_item "channels_mismatch_np$mixed_np" "$mixed_np" "" \
        test/mpi/coll_check --memory device --expect engine --quick --counts 65537,1048579
    DFCCL_TEST_LAUNCHER=$saved_launcher
    [ -n "$saved_launcher" ] || unset DFCCL_TEST_LAUNCHER
fi

# Across nodes, forced on one machine: coll_dfccl_node_split 1 counts every
# rank as a node of its own (2: pairs), so the GPU side runs its ring with
# the FIFOs to other "nodes" in mapped host memory, moved by the proxy
# threads over UCX, and never LL, the one-shot or direct (CUDA IPC). Needs a
# build with UCX. DFCCL_TEST_EXPECT_NET makes every program check that the
# engine counted collectives across nodes and bytes sent over the network.
split_mca="-x DFCCL_TEST_EXPECT_NET=1 --mca coll_dfccl_node_split"
for np in $np_list; do
    run_item "split1_coll_np$np" "$np" "$split_mca 1" \
        test/mpi/coll_check --memory device --expect engine --quick
done
split_np=$(printf '%s\n' $np_list | sort -n | tail -1)
if [ "${split_np:-0}" -ge 4 ]; then
    # pairs: each rank has one ring neighbour on its node (CUDA IPC) and one
    # on another (host memory and UCX)
    run_item "split2_coll_np$split_np" "$split_np" "$split_mca 2" \
        test/mpi/coll_check --memory device --expect engine --quick
fi
if [ "${split_np:-0}" -ge 2 ]; then
    run_item "split1_disorder_np$split_np" "$split_np" "$split_mca 1 $disorder_mca" \
        test/mpi/disorder_check --memory device "${disorder_args[@]}"
    # the links put (net_protocol rma: the side's host memory registered,
    # credit words back), and the slots in host memory by choice
    # (gpu_net_memory host; under auto they go to device memory where UCX
    # takes CUDA memory)
    run_item "split1rma_coll_np$split_np" "$split_np" "$split_mca 1 --mca coll_dfccl_net_protocol 1" \
        test/mpi/coll_check --memory device --expect engine --quick
    run_item "split1rma_disorder_np$split_np" "$split_np" \
        "$split_mca 1 --mca coll_dfccl_net_protocol 1 $disorder_mca" \
        test/mpi/disorder_check --memory device "${disorder_args[@]}"
    run_item "split1host_coll_np$split_np" "$split_np" "$split_mca 1 --mca coll_dfccl_gpu_net_memory 1" \
        test/mpi/coll_check --memory device --expect engine --quick
fi
if [ "${split_np:-0}" -ge 8 ]; then
    # nodes of 4: the ring crosses between nodes twice, each node's ranks
    # in a row over CUDA IPC; persistent requests and threads across
    # nodes. split*_hier: the hierarchical allreduce (coll_dfccl_algorithm
    # 1: the node's ring over CUDA IPC, each rank's counterparts across
    # nodes).
    run_item "split4_coll_np$split_np" "$split_np" "$split_mca 4" \
        test/mpi/coll_check --memory device --expect engine --quick
    run_item "split4_hier_np$split_np" "$split_np" "$split_mca 4 --mca coll_dfccl_algorithm 1" \
        test/mpi/coll_check --memory device --expect engine --quick
    run_item "split2_hier_np$split_np" "$split_np" "$split_mca 2 --mca coll_dfccl_algorithm 1" \
        test/mpi/coll_check --memory device --expect engine --quick
    # split*_rd: the latency algorithm (coll_dfccl_algorithm 2: the node's
    # ring into its last rank, recursive doubling among those, the node's
    # ring back), every allreduce size
    run_item "split4_rd_np$split_np" "$split_np" "$split_mca 4 --mca coll_dfccl_algorithm 2" \
        test/mpi/coll_check --memory device --expect engine --quick --coll allreduce
    run_item "split2_rd_np$split_np" "$split_np" "$split_mca 2 --mca coll_dfccl_algorithm 2" \
        test/mpi/coll_check --memory device --expect engine --quick --coll allreduce
    run_item "split4_disorder_np$split_np" "$split_np" "$split_mca 4 $disorder_mca" \
        test/mpi/disorder_check --memory device "${disorder_args[@]}"
    run_item "split2_persist_np$split_np" "$split_np" "$split_mca 2 $disorder_mca" \
        test/mpi/disorder_check --memory device --persistent 3 "${disorder_args[@]}"
    run_item "split2_threads_np$split_np" "$split_np" "$split_mca 2 $disorder_mca" \
        test/mpi/threads_check --memory device "${threads_args[@]}"
fi

# Plan files on the GPU (plan_dir: the valid plans of test/plans, which are
# for 2 and 4 ranks): on one node, and across nodes of 2 and of 1, where
# their FIFOs to other nodes go through the proxy. DFCCL_TEST_EXPECT_PLAN
# makes every program check that collectives ran plan files.
if printf '%s\n' $np_list | grep -qx 4; then
    plan_dir=$logdir/plans
    mkdir -p "$plan_dir"
    for f in "$here"/../plans/*.json; do
        case $(basename "$f") in bad_*) ;; *) cp "$f" "$plan_dir/" ;; esac
    done
    plan_mca="-x DFCCL_TEST_EXPECT_PLAN=1 --mca coll_dfccl_plan_dir $plan_dir"
    run_item "plans_coll_np4" 4 "$plan_mca" \
        test/mpi/coll_check --memory device --expect engine --quick
    run_item "plans_split2_np4" 4 "$plan_mca $split_mca 2" \
        test/mpi/coll_check --memory device --expect engine --quick
    run_item "plans_split1_np4" 4 "$plan_mca $split_mca 1" \
        test/mpi/coll_check --memory device --expect engine --quick
    run_item "plans_disorder_np4" 4 "$plan_mca $disorder_mca" \
        test/mpi/disorder_check --memory device "${disorder_args[@]}"
fi

# A rank dies while the others wait in a GPU allreduce, across "nodes" (each
# rank its own: links over UCX and what peers tell over them) and on one
# node (the watch of the node's processes and the statuses in the peers'
# regions): the survivors' calls must fail within seconds, long before the
# watchdog (60 s).
for where in split node; do
    name=deadpeer_${where/split/split1}_np$split_np
    [ "${split_np:-0}" -ge 3 ] && selected "$name" || continue
    log=$logdir/$name.log
    start=$SECONDS
    (cd "$builddir" &&
     DFCCL_DEADPEER_GPU=$where DFCCL_TEST_MCA_EXTRA="$extra_mca" DFCCL_TEST_TIMEOUT=${timeout_s:-120} \
         "$here/../mpi/deadpeer_check.sh" "$split_np" test/mpi/deadpeer_check --memory device) \
        >"$log" 2>&1
    report "$name" $? $((SECONDS - start)) "$log"
done

# Every rank calls exit() without MPI_Finalize after device collectives, as
# an application whose own check failed (OSU's reduce_scatter): the CUDA
# runtime's and UCX's teardown must not meet a thread of ours still calling
# them (exit_check.sh: no rank may die by a signal). On one node and across
# "nodes" (links over UCX).
for where in node split; do
    name=exit_${where/split/split1}_np$split_np
    [ "${split_np:-0}" -ge 2 ] && selected "$name" || continue
    log=$logdir/$name.log
    start=$SECONDS
    mca="$extra_mca"
    [ "$where" = split ] && mca="$mca $split_mca 1"
    (cd "$builddir" &&
     DFCCL_TEST_MCA="$mca" DFCCL_TEST_TIMEOUT=${timeout_s:-120} \
         "$here/../mpi/exit_check.sh" "$split_np" test/mpi/exit_check --memory device) \
        >"$log" 2>&1
    report "$name" $? $((SECONDS - start)) "$log"
done

# More ranks than the all-peer paths serve (--large-np, e.g. 40 under MPS):
# the GPU side runs the ring alone, its plans in device memory beside the
# submission entries (plan_pool.h), and must be right and deadlock-free.
if [ -n "$large_np" ]; then
    run_item "large_coll_np$large_np" "$large_np" "" \
        test/mpi/coll_check --memory device --expect engine --quick --counts 0,1,7,4099,65537
    run_item "large_disorder_np$large_np" "$large_np" "$disorder_mca" \
        test/mpi/disorder_check --memory device --iterations 2 --seed 1
    run_item "large_persist_order_np$large_np" "$large_np" "$disorder_mca" \
        test/mpi/persist_order_check --memory device --iterations 3 --seed 7
fi

# Racecheck follows every shared-memory access of the daemon kernel, whose
# blocks spin while they wait: with the default 16-32 blocks x 512 threads it
# does not finish in minutes, so it runs one block of 64 threads, one size
# per path (LL; one-shot with LL off; ring; direct from 64 KiB in 16 KiB
# chunks).
race_mca="--mca coll_dfccl_gpu_channels 1 --mca coll_dfccl_gpu_threads 64"
if [ "$sanitizer" -eq 1 ]; then
    # allreduce: 1 element LL, 4099 (16 KiB and more) the one-shot, 65537
    # (256 KiB) the ring, 1048579 (4 MiB) direct
    run_sanitized memcheck_np2 memcheck 2 "--mca coll_dfccl_gpu_direct_bytes 1048576" \
        --memory device --coll allreduce --counts 1,4099,65537,1048579
    run_sanitized memcheck_mixed_np2 memcheck 2 "--mca coll_dfccl_host_buffers engine" \
        --memory mixed --quick --counts 7,65537
    run_sanitized racecheck_ll_np2 racecheck 2 "$race_mca" \
        --memory device --coll allreduce --counts 1
    # the LL early send's reduce-scatter (blocks all alike): each rank's
    # block from its own offset of the input
    run_sanitized memcheck_ll_rs_np2 memcheck 2 "" \
        --memory device --coll reduce_scatter_block --counts 1,7
    run_sanitized racecheck_ll_rs_np2 racecheck 2 "$race_mca" \
        --memory device --coll reduce_scatter_block --counts 1,7
    run_sanitized racecheck_oneshot_np2 racecheck 2 "$race_mca --mca coll_dfccl_gpu_ll_bytes 0" \
        --memory device --coll allreduce --counts 1
    run_sanitized racecheck_ring_np2 racecheck 2 "$race_mca --mca coll_dfccl_gpu_direct_bytes 0" \
        --memory device --coll allreduce --counts 16400
    run_sanitized racecheck_direct_np2 racecheck 2 \
        "$race_mca --mca coll_dfccl_gpu_direct_bytes 65536 --mca coll_dfccl_gpu_direct_chunk_bytes 16384" \
        --memory device --coll allreduce --counts 16400
fi

echo "run_gpu_tests: $passed passed, $failed failed (logs in $logdir)"
if [ "$failed" -gt 0 ]; then
    echo "run_gpu_tests: failed: ${failed_items[*]}"
    exit 1
fi
exit 0
