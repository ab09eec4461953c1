#!/bin/bash
# bed_by_id_setup.sh PROGRAM [REPEAT] - set-up time of a communicator made
# from a unique id on the multi-host bed, at 2 (2 hosts x 1), 6 (3 x 2) and
# 12 (3 x 4) ranks: PROGRAM is a build's test/multihost/by_id_check (or one
# built from that source against another libdfccl, to compare); each size
# runs REPEAT (default 5) times. Prints, per size, the median over runs of
# the slowest rank's dfccl_comm_create_by_id time, and the range. As root.
set -eu
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
prog=$1
repeat=${2:-5}
export DFCCL_BED_PREFIX=${DFCCL_BED_PREFIX:-dfccl-bench-} DFCCL_BED_NET=${DFCCL_BED_NET:-10.213.79}
for shape in "2 1" "3 2" "3 4"; do
    set -- $shape
    out=$(DFCCL_BY_ID_CASES=ok DFCCL_BY_ID_REPEAT=$repeat \
          DFCCL_BED_DRIVER="$top/test/multihost/by_id.sh" \
          "$top/test/multihost/run_bed_test.sh" "$1" "$2" "$prog" 2>&1) || {
        echo "$out" | tail -20
        exit 1
    }
    # one "case ok" block per run: the slowest rank of each
    echo "$out" | awk -v ranks=$(($1 * $2)) '
        /^case ok/ { if (n) print worst; n = 1; worst = 0; next }
        /set-up [0-9.]+ ms/ { for (i = 1; i <= NF; i++) if ($i == "set-up") v = $(i + 1) + 0
                              if (v > worst) worst = v }
        END { if (n) print worst }' | sort -n |
        awk -v ranks=$(($1 * $2)) -v shape="$1 x $2" '
            { v[NR] = $1 }
            END { printf "%2d ranks (%s hosts x ranks): median %.1f ms, range %.1f-%.1f ms, %d runs\n",
                         ranks, shape, v[int((NR + 1) / 2)], v[1], v[NR], NR }'
done
