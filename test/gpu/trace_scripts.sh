#!/bin/bash
# trace_scripts.sh - checks contrib/gpu_trace_summary.py and
# contrib/gpu_trace_ranks.py on a trace written here with known steps: 3
# ranks, a call every 20 us, rank r posting and seen r us after rank 0, every
# rank finishing 6 + 0.1 r us after the last rank's first move; rank 1's
# collective numbers run 1000 ahead (a rank whose numbering also counted
# other collectives), so the calls must be matched by the kernel's clock; a
# ring group without the LL steps (sent, received: "none"). Needs no GPU.
set -u
here=$(cd "$(dirname "$0")" && pwd)
contrib=$here/../../contrib
work=$(mktemp -d "${TMPDIR:-/tmp}/trace_scripts.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: trace_scripts: $*" >&2; exit 1; }

command -v python3 >/dev/null || { echo "SKIP: trace_scripts needs python3"; exit 77; }

python3 - > "$work/trace.txt" <<'PY'
for i in range(12):
    for r in range(3):
        post = 1000000000 + i * 20000 + r * 1000
        seen = 5000000000 + i * 20000 + r * 1000
        finished = (7000 + 6000 + r * 100 - r * 1000) / 1000.0   # from its own seen
        seq = i + (1000 if r == 1 else 0)
        print("dfccl gpu trace: rank %d of 3 comm 0x7 allreduce #%d 8 B ll: published 2.00 drained 18.00"
              " gap 1.00 kernel: admitted 4.00 first-move 5.00 sent 6.00 last-move 7.00 received 8.00"
              " finished %.2f us; moving: slowest channel 3.00, mean 3.00 us over 1 (ll);"
              " clocks: post %d seen %d" % (r, seq, finished, post, seen))
for i in range(4):
    print("dfccl gpu trace: rank 0 of 3 comm 0x7 allreduce #%d 1048576 B ring: published 2.00"
          " drained 40.00 gap 1.00 kernel: admitted 4.00 first-move 5.00 sent none last-move 30.00"
          " received none finished 35.00 us; moving: slowest channel 25.00, mean 25.00 us over 8"
          " (ring); clocks: post %d seen %d" % (100 + i, 9000000000 + i * 50000, 9900000000 + i * 50000))
PY

python3 "$contrib/gpu_trace_summary.py" --skip 2 "$work/trace.txt" > "$work/summary.txt" 2>&1 ||
    { cat "$work/summary.txt"; fail "gpu_trace_summary.py failed"; }
cat "$work/summary.txt"
grep -Eq '^3 +0 +allreduce +8 ll +10 +2\.00 \( +2\.00\) +18\.00 \( 18\.00\) +1\.00 \( +1\.00\) +4\.00 \( +4\.00\) +5\.00 \( +1\.00\) +6\.00 \( +1\.00\) +7\.00 \( +1\.00\) +8\.00 \( +1\.00\) +13\.00 \( +5\.00\)$' \
    "$work/summary.txt" || fail "rank 0's LL row is not as written"
grep -Eq '^3 +2 +allreduce +8 ll +10 .* 11\.20 \( +3\.20\)$' "$work/summary.txt" ||
    fail "rank 2's finish is not 11.20 (3.20 after received)"
grep -Eq '^3 +0 +allreduce +1048576 ring +2 .* 5\.00 \( +1\.00\) +none +30\.00 \( 25\.00\) +none +35\.00 \( +5\.00\)$' \
    "$work/summary.txt" || fail "the ring row (steps without sent and received) is not as written"

python3 "$contrib/gpu_trace_ranks.py" --skip 2 "$work/trace.txt" > "$work/ranks.txt" 2>&1 ||
    { cat "$work/ranks.txt"; fail "gpu_trace_ranks.py failed"; }
cat "$work/ranks.txt"
grep -q '^np 3 comm 0x7 allreduce 8 B ll: 10 calls, cycle median 20.00 us$' "$work/ranks.txt" ||
    fail "not 10 calls matched across ranks 20 us apart"
for r in 0 1 2; do
    want=$(printf '  %4d %11.2f %11.2f %11.2f %11.2f %11.2f %11.2f %11.2f %11.2f  %9d %9d' \
        "$r" "$r" $((r + 2)) $((r + 18)) "$r" $((r + 5)) $((r + 6)) $((r + 8)) \
        "6.$r" $([ "$r" -eq 2 ] && echo "10 10" || echo "0 0"))
    grep -qxF -- "$want" "$work/ranks.txt" || fail "rank $r's row is not: $want"
done
echo "trace_scripts: summary and ranks as written"
