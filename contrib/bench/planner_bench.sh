#!/bin/bash
# planner_bench.sh TOPOLOGY OUT.md [SIZES...]
#
# The schedule planner's methods against the ring on one topology: an
# allgather of each output size (default 1K 10K 100K 1M 10M 100M 1G) planned
# by dfccl_plan with each method, one run at a time, and a markdown table
# per method written to OUT.md (and printed): epochs, epoch length,
# modelled finish and algbw, the ring's finish on the same topology, the
# ratio ring / schedule of the finishes (> 1: the schedule is faster), the
# solver's time, and what produced the schedule (milp and partition keep
# greedy's where they find nothing better). Every schedule is replayed with
# dfccl_plan --check.
#
# Settings (environment):
#   PLANNER_BENCH_METHODS  METHOD[:LIMIT] ..., LIMIT the --time-limit in
#                          seconds (default "auto:60 milp:60 partition:60 greedy")
#   PLANNER_BENCH_CHUNKS   --chunks values (default "1")
#   PLANNER_BENCH_EPOCH    fast or slow (default fast)
#   PLANNER_BENCH_GRACE    seconds a run may go past its limit before it is
#                          stopped and recorded as a timeout (default 60): the
#                          limit bounds the solvers, not building the program
#   PLANNER_BENCH_MEM_KB   virtual memory a run may take (default 8000000)
#   PLANNER_BENCH_RAW      a directory for each run's output and schedule
#   DFCCL_PLAN             the tool (default DFCCL_BUILD_DIR/src/tools/dfccl_plan,
#                          DFCCL_BUILD_DIR defaulting to ., then dfccl_plan on PATH)
# Example, from the build directory:
#   PLANNER_BENCH_METHODS="partition:10 greedy" \
#     ../contrib/bench/planner_bench.sh ../contrib/bench/topologies/ndv2_2x8.json ag.md 1M 100M
set -eu

if [ $# -lt 2 ]; then
    echo "usage: $0 TOPOLOGY OUT.md [SIZES...]" >&2
    exit 2
fi
topology=$1
out=$2
shift 2
sizes=${*:-1K 10K 100K 1M 10M 100M 1G}
methods=${PLANNER_BENCH_METHODS:-auto:60 milp:60 partition:60 greedy}
chunks_list=${PLANNER_BENCH_CHUNKS:-1}
epoch=${PLANNER_BENCH_EPOCH:-fast}
grace=${PLANNER_BENCH_GRACE:-60}
mem_kb=${PLANNER_BENCH_MEM_KB:-8000000}
raw=${PLANNER_BENCH_RAW:-}
tool=${DFCCL_PLAN:-${DFCCL_BUILD_DIR:-.}/src/tools/dfccl_plan}
if [ ! -x "$tool" ]; then
    tool=$(command -v dfccl_plan || true)
    if [ -z "$tool" ]; then
        echo "$0: no dfccl_plan; run from the build directory or set DFCCL_PLAN" >&2
        exit 2
    fi
fi
[ -r "$topology" ] || { echo "$0: cannot read $topology" >&2; exit 2; }
command -v timeout >/dev/null || { echo "$0: needs timeout(1)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -z "$raw" ] || mkdir -p "$raw"

# "key:   value" lines of dfccl_plan's result
field() { sed -n "s/^$1: *//p" "$work/stdout"; }

# One run: prints a table row, or a row saying why there is none.
run() {    # METHOD LIMIT SIZE CHUNKS
    local method=$1 limit=$2 size=$3 chunks=$4 rc=0 t0 wall wall_limit name
    local args=(--topology "$topology" --collective allgather --bytes "$size" --chunks "$chunks"
                --epoch "$epoch" --method "$method" --schedule "$work/schedule.json")
    [ -z "$limit" ] || args+=(--time-limit "$limit")
    name=$method-$size-k$chunks
    wall_limit=$(awk -v l="${limit:-60}" -v g="$grace" 'BEGIN { printf "%d", l + g + 0.999 }')
    t0=$(date +%s.%N)
    ( ulimit -v "$mem_kb"
      exec timeout "$wall_limit" "$tool" "${args[@]}" ) \
        >"$work/stdout" 2>"$work/stderr" || rc=$?
    wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if [ -n "$raw" ]; then
        { echo "\$ dfccl_plan ${args[*]}"; cat "$work/stderr" "$work/stdout"
          echo "exit status $rc, $wall s wall"; } >"$raw/$name.txt"
        [ ! -f "$work/schedule.json" ] || cp "$work/schedule.json" "$raw/$name.json"
    fi
    echo "planner_bench: $method ${limit:+(limit $limit s) }$size x$chunks: exit $rc, $wall s" >&2
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "| $size | $chunks | | | | | | | | > $wall | timeout |"
        return
    elif [ $rc -ne 0 ]; then
        echo "| $size | $chunks | | | | | | | | $wall | failed: $(tail -n 1 "$work/stderr" | tr '|' '/') |"
        return
    fi
    local epochs tau finish algbw ring ring_bw solver from ratio valid
    epochs=$(field epochs | awk '{ print $1 }')
    tau=$(field epochs | awk '{ print $3 }')
    finish=$(field 'modelled finish' | awk '{ print $1 }')
    algbw=$(field algbw | awk '{ print $1 }')
    ring=$(field 'ring finish' | awk '{ print $1 }')
    ring_bw=$(field 'ring finish' | sed -n 's/.*algbw \([0-9.]*\).*/\1/p')
    solver=$(field 'solver time' | awk '{ print $1 }')
    from=$(field 'solver time' | sed -n 's/.*(method \([a-z]*\)).*/\1/p')
    ratio=$(awk -v r="$ring" -v f="$finish" 'BEGIN { printf "%.2f", r / f }')
    valid=""
    "$tool" --check "$work/schedule.json" --topology "$topology" >/dev/null 2>&1 ||
        valid=" (INVALID)"
    rm -f "$work/schedule.json"
    echo "| $size | $chunks | $epochs | $tau | $finish | $algbw | $ring | $ring_bw | $ratio |" \
         "$solver | $from$valid |"
}

{
    echo "## allgather on $(basename "$topology")"
    echo
    echo "$(date -u +%Y-%m-%d), $(nproc) cores, epochs $epoch, $(basename "$tool") $(
        git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '(commit unknown)')."
    echo "Command: \`PLANNER_BENCH_METHODS=\"$methods\" PLANNER_BENCH_CHUNKS=\"$chunks_list\"" \
         "PLANNER_BENCH_EPOCH=$epoch planner_bench.sh $topology OUT.md $sizes\`"
    for spec in $methods; do
        method=${spec%%:*}
        limit=""
        [ "$spec" = "$method" ] || limit=${spec#*:}
        echo
        echo "### $method${limit:+, --time-limit $limit}"
        echo
        echo "| size | chunks | epochs | epoch us | finish us | algbw GB/s | ring finish us |" \
             "ring algbw GB/s | ring / schedule | solver s | from |"
        echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        for size in $sizes; do
            for chunks in $chunks_list; do
                run "$method" "$limit" "$size" "$chunks"
            done
        done
    done
} | tee "$out"
