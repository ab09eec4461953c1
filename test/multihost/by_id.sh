#!/bin/bash
# by_id.sh NP PROGRAM [ARGS...] - communicators from a unique id across the
# hosts of the bed (DFCCL_BED_DRIVER of run_bed_test.sh, which brought the
# bed up): by_id_check ranks started on each host through agent.sh, the id
# passed through a file in the shared /tmp. Cases:
#   ok        every rank; the three collectives checked
#   damaged   the id file holds garbage: every rank fails at once
#   absent    the last rank never starts: every other rank fails, bounded
#             by the set-up timeout (--timeout 6)
#   killed    the last rank dies 0.7 s into its set-up while another comes
#             3 s late: every rank fails at once (well before the timeout)
# Each rank also checks that it left nothing in /dev/shm. Prints the
# set-up times of the ok case; verdict line last, exit 0 or 1.
# DFCCL_BY_ID_CASES picks cases (default: all four); DFCCL_BY_ID_REPEAT runs
# each that many times (set-up timing: contrib/bench/bed_by_id_setup.sh).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
np=$1
prog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
. "$here/bed_names.sh"
hosts=$(bed_hosts) || { echo "FAIL: by_id: no bed is up"; exit 1; }
per_host=$(( (np + hosts - 1) / hosts ))
work=$(mktemp -d /tmp/dfccl-by-id.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0

# run_case NAME TIMEOUT SKIP_RANK RANK_ARGS...: RANK_ARGS are "rank:args" pairs
run_case() {
    local name=$1 timeout=$2 skip=$3
    shift 3
    local dir=$work/$name
    mkdir -p "$dir"
    [ "$name" = damaged ] && head -c 128 /dev/urandom > "$dir/id"
    for ((h = 1; h <= hosts; h++)); do
        : > "$dir/h$h.sh"
        for ((r = (h - 1) * per_host; r < h * per_host && r < np; r++)); do
            [ "$r" = "$skip" ] && continue
            local extra=""
            for pair in "$@"; do
                [ "${pair%%:*}" = "$r" ] && extra="${pair#*:}"
            done
            echo "( '$prog' --rank $r --size $np --id-file '$dir/id' --timeout $timeout" \
                 "--count 4099 --done-dir '$dir' $extra > '$dir/out.$r' 2>&1; echo \$? > '$dir/rc.$r' ) &" \
                 >> "$dir/h$h.sh"
        done
        echo wait >> "$dir/h$h.sh"
    done
    local start=$SECONDS pids=()
    for ((h = 1; h <= hosts; h++)); do
        timeout 120 "$here/agent.sh" "h$h" /bin/sh "$dir/h$h.sh" &
        pids+=($!)
    done
    wait "${pids[@]}"
    echo "case $name: $((SECONDS - start)) s"
}

# expect NAME RANK CODE [MAX_MS]: the rank's exit code, and for a failed
# creation its report within MAX_MS
expect() {
    local name=$1 r=$2 code=$3 max_ms=${4:-}
    local got
    got=$(cat "$work/$name/rc.$r" 2>/dev/null || echo none)
    sed 's/^/    /' "$work/$name/out.$r" 2>/dev/null | grep -v '^    *$' | head -4
    if [ "$got" != "$code" ]; then
        echo "  $name: rank $r exited $got, not $code"
        failed=1
        return
    fi
    if [ -n "$max_ms" ]; then
        local ms
        ms=$(sed -n 's/.*creation failed: .* after \([0-9]*\) ms.*/\1/p' "$work/$name/out.$r")
        if [ -z "$ms" ] || [ "$ms" -gt "$max_ms" ]; then
            echo "  $name: rank $r did not fail within $max_ms ms (${ms:-no report})"
            failed=1
        fi
    fi
}

cases=" ${DFCCL_BY_ID_CASES:-ok damaged absent killed} "
for ((rep = 0; rep < ${DFCCL_BY_ID_REPEAT:-1}; rep++)); do
    rm -rf "${work:?}"/*
    if [[ $cases == *" ok "* ]]; then
        run_case ok 30 -1
        for ((r = 0; r < np; r++)); do expect ok "$r" 0; done
    fi
    if [[ $cases == *" damaged "* ]]; then
        run_case damaged 30 -1
        for ((r = 0; r < np; r++)); do expect damaged "$r" 1 3000; done
    fi
    if [[ $cases == *" absent "* ]]; then
        run_case absent 6 $((np - 1))
        for ((r = 0; r < np - 1; r++)); do expect absent "$r" 1 20000; done
    fi
    if [[ $cases == *" killed "* ]] && [ "$np" -ge 3 ]; then
        run_case killed 30 -1 "$((np - 1)):--die-after-ms 700" \
            "$((np - 2)):--start-delay-ms 3000"
        expect killed $((np - 1)) 137
        for ((r = 0; r < np - 2; r++)); do expect killed "$r" 1 10000; done
        # the late rank finds the rendezvous gone: it fails at once too
        expect killed $((np - 2)) 1 10000
    fi
done
if [ "$failed" = 0 ]; then
    echo "PASS: by_id across $hosts hosts, $np ranks"
else
    echo "FAIL: by_id across $hosts hosts, $np ranks"
fi
exit "$failed"
