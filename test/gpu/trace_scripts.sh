#!/bin/bash
# trace_scripts.sh - checks contrib/bench/gpu_trace_summary.py and
# contrib/bench/gpu_trace_ranks.py on a trace written here with known steps: 3
# ranks, a call every 20 us; rank r posts and is seen r us after rank 0 (rank
# 2 posts last), rank 0 makes its first move (the send) last, and every rank
# finishes 6 + 0.1 r us after that; rank 1 numbers its collectives 1000 ahead
# (a rank whose numbering also counted other collectives), so calls must be
# matched by the kernel's clock; rank 0, the reference, lacks calls 3, 5 and
# 7, and rank 2 call 9: these must neither count, nor pair with a
# neighbour's record, nor join their neighbours into one cycle; a
# ring group without the LL steps (sent, received: "none"); rank 1's LL
# attempts all succeed at once, so its last move (that attempt's start)
# comes before its send: each step's share must count from the latest
# earlier step reached before it. The LL lines carry the kernel's cycle counts
# (2 GHz), the ring lines none (an older trace): the summary converts the
# former with the rate their totals give and prints no parts for the latter;
# a 64 B group carries an older set of parts, one line of it cut inside
# them, which must not count. Needs no GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
contrib=$here/../../contrib
work=$(mktemp -d "${TMPDIR:-/tmp}/trace_scripts.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: trace_scripts: $*" >&2; exit 1; }

command -v python3 >/dev/null || { echo "SKIP: trace_scripts needs python3"; exit 77; }

python3 - > "$work/trace.txt" <<'PY'
line = ("dfccl gpu trace: rank %d of 3 comm 0x7 allreduce #%d %d B %s: published 2.00 drained %.2f"
        " gap 1.00 kernel: admitted 4.00 first-move %.2f sent %s last-move %.2f received %s"
        " finished %.2f us; moving: slowest channel 3.00, mean 3.00 us over 1 (%s);"
        " clocks: post %d seen %d")
# the kernel's cycles at 2 GHz (total: the kernel's time from seen to
# finished); poll grows by 2 per call, so its median tells which calls count
cycles = ("; cycles: poll %d issue 520 copy 3000 admit 1000 start 400 send 1200 receive 2400"
          " first 1600 lines 2000 polls 3 retry 0 attempts %d complete 600 take 200 load 800 fill 120"
          " store 400 total %d")
for i in range(12):
    for r in range(3):
        if (r == 0 and i in (3, 5, 7)) or (r == 2 and i == 9):
            continue
        first = 8.0 if r == 0 else 5.0               # from its own seen: rank 0 sends last
        finished = (8000 + 6000 + r * 100 - r * 1000) / 1000.0
        seq = i + (1000 if r == 1 else 0)
        last = first if r == 1 else first + 2         # rank 1: its first attempt received
        print(line % (r, seq, 8, "ll", 18.0, first, "%.2f" % (first + 1), last, "%.2f" % (first + 3),
                      finished, "ll", 1000000000 + i * 20000 + r * 1000, 5000000000 + i * 20000 + r * 1000)
              + cycles % (2600 + 2 * i, 1 if r == 1 else 2, round(finished * 2000)))
# 64 B: the cycles of an older trace (fewer parts), and a line cut inside
# them by another process's output, which must not count
old = ("; cycles: poll 2000 issue 520 copy 3000 admit 1000 start 400 send 1200 receive 2400 retry 0"
       " attempts 1 complete 600 total %d")
for i in range(6):
    tail = old % 24000 if i != 4 else (old % 24000).replace("attempts 1", "attempts 9")[:-16]
    print(line % (0, 200 + i, 64, "ll", 18.0, 5.0, "6.00", 5.0, "8.00", 12.0, "ll",
                  3000000000 + i * 20000, 7000000000 + i * 20000) + tail)
for i in range(4):
    for r in range(3):
        print(line % (r, 100 + i, 1048576, "ring", 40.0, 5.0, "none", 30.0, "none", 35.0 - r * 0.5, "ring",
                      2000000000 + i * 50000 + r * 500, 9000000000 + i * 50000 + r * 500))
PY

python3 "$contrib/bench/gpu_trace_summary.py" --skip 2 "$work/trace.txt" > "$work/summary.txt" 2>&1 ||
    { cat "$work/summary.txt"; fail "gpu_trace_summary.py failed"; }
cat "$work/summary.txt"
grep -Eq '^3 +1 +allreduce +8 ll +10 +2\.00 \( +2\.00\) +18\.00 \( 18\.00\) +1\.00 \( +1\.00\) +4\.00 \( +4\.00\) +5\.00 \( +1\.00\) +6\.00 \( +1\.00\) +5\.00 \( +0\.00\) +8\.00 \( +2\.00\) +13\.10 \( +5\.10\)$' \
    "$work/summary.txt" || fail "rank 1's LL row is not as written"
grep -Eq '^3 +0 +allreduce +8 ll +7 .* 8\.00 \( +4\.00\) +9\.00 \( +1\.00\) +10\.00 \( +1\.00\) +11\.00 \( +1\.00\) +14\.00 \( +3\.00\)$' \
    "$work/summary.txt" || fail "rank 0's LL row is not as written"
grep -A2 -E '^3 +1 +allreduce +8 ll ' "$work/summary.txt" | grep -qxE ' +kernel parts, ns at 2000 MHz: poll 1306 issue 260 copy 1500 admit 500 start 200 send 600 receive 1200 first 800 lines 1000 polls 3\.00 retry 0 attempts 1\.00 complete 300 take 100 load 400 fill 60 store 200' ||
    fail "rank 1's kernel parts (calls 2-11 at 2 GHz, poll the median of 2604..2622 cycles) are not as written"
grep -A2 -E '^3 +0 +allreduce +8 ll ' "$work/summary.txt" | grep -q 'kernel parts, ns at 2000 MHz: poll 1308 .* attempts 2\.00 ' ||
    fail "rank 0's kernel parts are not as written"
grep -A2 -E '^3 +0 +allreduce +64 ll ' "$work/summary.txt" | grep -qxE ' +kernel parts, ns at 2000 MHz: poll 1000 issue 260 copy 1500 admit 500 start 200 send 600 receive 1200 retry 0 attempts 1\.00 complete 300' ||
    fail "the 64 B group's older cycles (fewer parts, one line cut) are not as written"
grep -A2 -E '^3 +2 +allreduce +1048576 ring' "$work/summary.txt" | grep -q 'kernel parts' &&
    fail "the ring group, traced without cycles, shows kernel parts"
grep -Eq '^3 +2 +allreduce +1048576 ring +2 .* 5\.00 \( +1\.00\) +none +30\.00 \( 25\.00\) +none +34\.00 \( +4\.00\)$' \
    "$work/summary.txt" || fail "the ring row (steps without sent and received) is not as written"

python3 "$contrib/bench/gpu_trace_ranks.py" --skip 2 "$work/trace.txt" > "$work/ranks.txt" 2>&1 ||
    { cat "$work/ranks.txt"; fail "gpu_trace_ranks.py failed"; }
cat "$work/ranks.txt"
grep -q '^np 3 comm 0x7 allreduce 8 B ll: 6 calls, cycle median 20.00 us$' "$work/ranks.txt" ||
    fail "not the 6 calls every rank traced (after 2 skipped), 20 us apart"
for r in 0 1 2; do
    first=$((r == 0 ? 8 : r + 5))
    want=$(printf '  %4d %11.2f %11.2f %11.2f %11.2f %11.2f %11.2f %11.2f %11.2f  %9d %9d' \
        "$r" "$r" $((r + 2)) $((r + 18)) "$r" "$first" $((first + 1)) $((first + 3)) "6.$r" \
        $([ "$r" -eq 2 ] && echo 6 || echo 0) $([ "$r" -eq 0 ] && echo 6 || echo 0))
    grep -qxF -- "$want" "$work/ranks.txt" || fail "rank $r's row is not: $want"
done
grep -q '^np 3 comm 0x7 allreduce 1048576 B ring: 2 calls, cycle median 50.00 us$' "$work/ranks.txt" ||
    fail "the ring group is not 2 calls 50 us apart"
grep -qE '^ +1 +0\.50 +2\.50 +40\.50 +0\.50 +5\.50 +nan +nan +29\.00 ' "$work/ranks.txt" ||
    fail "the ring group's rank 1 does not show its steps without sent and received"
echo "trace_scripts: summary and ranks as written"
