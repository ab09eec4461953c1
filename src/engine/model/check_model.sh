#!/bin/bash
# check_model.sh - verifies the daemon's scheduling protocol model
# (scheduler.pml next to this script) for each configuration below.
#
# Passes (exit 0) only when the preemptive scheduler verifies in every
# configuration (no deadlock, no assertion violation, no fair non-progress
# cycle) AND every broken variant is caught (the serial scheduler deadlocks,
# a one-chunk FIFO deadlocks, running a communicator's collectives out of
# order mixes up slices). Exit 77 (skipped) when spin or a C compiler is
# missing. Everything is generated in a temporary directory.
#
# Environment: SPIN (spin), CC (cc), JOBS (parallel checks, 2),
# MODEL_MEMLIM (MB per verifier, 2048), KEEP=1 keeps the work directory.
set -u

here=$(cd "$(dirname "$0")" && pwd)
model=$here/scheduler.pml
SPIN=${SPIN:-spin}
CC=${CC:-cc}
JOBS=${JOBS:-2}
MEMLIM=${MODEL_MEMLIM:-2048}

for tool in "$SPIN" "$CC"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "check_model.sh: '$tool' not found (spin: Debian package spin); skipped"
        exit 77
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/scheduler_model.XXXXXX") || exit 1
if [ "${KEEP:-0}" = 1 ]; then
    echo "work directory: $work"
else
    trap 'rm -rf "$work"' EXIT
fi
trap 'exit 130' INT TERM

# name | spin defines | mode | expected
#   mode: safety   (deadlock = invalid end state, assertions; back-off sleeps)
#         liveness (non-progress cycles under weak fairness; busy back-off)
#         ltl      (<> all_done under weak fairness; busy back-off)
#   expected: ok, or the error the check must find
checks=(
    "n2k2c2|-DN=2 -DK=2 -DC=2 -DL=3 -DS=1|safety|ok"
    "n2k2c2|-DN=2 -DK=2 -DC=2 -DL=3 -DS=1|liveness|ok"
    "n2k2c2|-DN=2 -DK=2 -DC=2 -DL=3 -DS=1|ltl|ok"
    "n2k2c2r2|-DN=2 -DK=2 -DC=2 -DROUNDS=2 -DL=2 -DS=1|safety|ok"
    "n2k2c2r2|-DN=2 -DK=2 -DC=2 -DROUNDS=2 -DL=2 -DS=1|liveness|ok"
    "n2k3c2|-DN=2 -DK=3 -DC=2 -DL=2 -DS=1|safety|ok"
    "n2k3c2|-DN=2 -DK=3 -DC=2 -DL=2 -DS=1|liveness|ok"
    "n2k3c3-share|-DN=2 -DK=3 -DC=3 -DSHARE -DL=2 -DS=1|safety|ok"
    "n2k3c3-share|-DN=2 -DK=3 -DC=3 -DSHARE -DL=2 -DS=1|liveness|ok"
    "n3k2c2|-DN=3 -DK=2 -DC=2 -DL=2 -DS=1|safety|ok"
    "n3k2c2|-DN=3 -DK=2 -DC=2 -DL=1 -DS=1|liveness|ok"
    "n3k2c3|-DN=3 -DK=2 -DC=3 -DL=1 -DS=1|safety|ok"
    "n3k2c2-share|-DN=3 -DK=2 -DC=2 -DSHARE -DL=2 -DS=1|safety|ok"
    "n3k2c2-share|-DN=3 -DK=2 -DC=2 -DSHARE -DL=2 -DS=1|liveness|ok"
    "serial-n2k2c2|-DN=2 -DK=2 -DC=2 -DSERIAL|safety|invalid end state"
    "serial-n2k2c2|-DN=2 -DK=2 -DC=2 -DSERIAL|liveness|non-progress cycle"
    "serial-n3k3c3|-DN=3 -DK=3 -DC=3 -DSERIAL|safety|invalid end state"
    "serial-n3k2c2|-DN=3 -DK=2 -DC=2 -DSERIAL|liveness|non-progress cycle"
    "fifo1-n2k1c1|-DN=2 -DK=1 -DC=1|safety|invalid end state"
    "anyoncomm-n2k3c3|-DN=2 -DK=3 -DC=3 -DSHARE -DANY_ON_COMM|safety|assertion violated"
    "net-n2k2c2|-DN=2 -DK=2 -DC=2 -DNET -DL=2 -DS=1|safety|ok"
    "net-n2k2c2|-DN=2 -DK=2 -DC=2 -DNET -DL=2 -DS=1|liveness|ok"
    "net-n3k2c2|-DN=3 -DK=2 -DC=2 -DNET -DL=1 -DS=1|safety|ok"
    "direct-n3k2c2|-DN=3 -DK=2 -DC=2 -DDIRECT -DL=1 -DS=1|safety|ok"
    "direct-n3k2c2|-DN=3 -DK=2 -DC=2 -DDIRECT -DL=1 -DS=1|liveness|ok"
    "direct-net-n3k2c2|-DN=3 -DK=2 -DC=2 -DDIRECT -DNET -DL=1 -DS=1|safety|ok"
    "serial-net-n2k2c2|-DN=2 -DK=2 -DC=2 -DNET -DSERIAL|safety|invalid end state"
    "serial-direct-n3k2c2|-DN=3 -DK=2 -DC=2 -DDIRECT -DSERIAL|safety|invalid end state"
    "graph-n2k2c2r2|-DN=2 -DK=2 -DC=2 -DROUNDS=2 -DGRAPH -DL=2 -DS=1|safety|ok"
    "graph-n2k2c2r2|-DN=2 -DK=2 -DC=2 -DROUNDS=2 -DGRAPH -DL=2 -DS=1|liveness|ok"
    "graph-n3k2c2|-DN=3 -DK=2 -DC=2 -DGRAPH -DL=1 -DS=1|safety|ok"
    "graph-n3k2c2|-DN=3 -DK=2 -DC=2 -DGRAPH -DL=1 -DS=1|liveness|ok"
    "graph-share-n2k3c2|-DN=2 -DK=3 -DC=2 -DGRAPH -DSHARE -DL=2 -DS=1|safety|ok"
    "chain-graph-n2k1c2|-DN=2 -DK=1 -DC=2 -DGRAPH -DCHAIN|safety|invalid end state"
)

# run_check INDEX: writes $work/INDEX.result: "PASS|FAIL <line>"
run_check() {
    local i=$1 name defs mode expect dir cflags pflags sdefs t0 t1 errs states verdict note
    IFS='|' read -r name defs mode expect <<<"${checks[$i]}"
    dir=$work/$i
    mkdir -p "$dir"
    case $mode in
    safety)   sdefs=""; cflags="-DSAFETY"; pflags="" ;;
    liveness) sdefs="-DBUSY -DPROGRESS"; cflags="-DNP -DNFAIR=3"; pflags="-l -f" ;;
    ltl)      sdefs="-DBUSY -DLTL"; cflags="-DNFAIR=3"; pflags="-a -f" ;;
    esac
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    if ! (cd "$dir" && "$SPIN" $defs $sdefs -a "$model" >spin.out 2>&1); then
        echo "FAIL $name $mode: spin -a failed: $(tail -n 1 "$dir/spin.out")" >"$work/$i.result"
        return
    fi
    # shellcheck disable=SC2086
    if ! (cd "$dir" && "$CC" -O1 -w $cflags -DMEMLIM="$MEMLIM" -o pan pan.c >cc.out 2>&1); then
        echo "FAIL $name $mode: compiling the verifier failed: $(head -n 1 "$dir/cc.out")" \
            >"$work/$i.result"
        return
    fi
    # shellcheck disable=SC2086
    (cd "$dir" && ./pan -m200000 -w22 $pflags >pan.out 2>&1)
    t1=$(date +%s%N)
    errs=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.out" | tail -n 1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$dir/pan.out" | tail -n 1)
    note="${states:-?} states, $(( (t1 - t0) / 1000000 )) ms"
    if [ -z "$errs" ]; then
        verdict=FAIL; note="verifier did not finish: $(tail -n 1 "$dir/pan.out")"
    elif [ "$expect" = ok ]; then
        if [ "$errs" = 0 ] && ! grep -q "max search depth too small\|out of memory" "$dir/pan.out"
        then
            verdict=PASS; note="verified, $note"
        else
            verdict=FAIL
            note="$(grep -m1 -o 'pan:1: .*\|max search depth too small\|out of memory' \
                    "$dir/pan.out"), $note"
        fi
    else
        if [ "$errs" != 0 ] && grep -q "$expect" "$dir/pan.out"; then
            verdict=PASS; note="found as expected: $expect, $note"
        else
            verdict=FAIL; note="expected to find '$expect' (errors: $errs), $note"
        fi
    fi
    echo "$verdict $name $mode ($defs): $note" >"$work/$i.result"
}

start=$(date +%s%N)
running=0
for i in "${!checks[@]}"; do
    run_check "$i" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

passed=0
failed=0
for i in "${!checks[@]}"; do
    if [ -f "$work/$i.result" ]; then
        line=$(cat "$work/$i.result")
    else
        line="FAIL ${checks[$i]%%|*}: no result"
    fi
    echo "$line"
    case $line in
    PASS*) passed=$((passed + 1)) ;;
    *)     failed=$((failed + 1)) ;;
    esac
done
echo "total $(( ($(date +%s%N) - start) / 1000000 )) ms"
echo "scheduler_model: $passed passed, $failed failed"
[ "$failed" = 0 ]
