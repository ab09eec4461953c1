#!/bin/bash
# perf_json.sh - runs dfccl_perf once at np 2 with --json through the engine
# and checks its output: the table header, one row per size, numeric fields
# (the mean and the median call among them),
# "#wrong" 0, the summary line, and a JSON file that parses and holds the
# same rows. Run by `make check` from the build directory.
set -u
here=$(cd "$(dirname "$0")" && pwd)
program=${DFCCL_PERF:-src/tools/perf/dfccl_perf}
work=$(mktemp -d "${TMPDIR:-/tmp}/perf_json.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: perf_json: $*" >&2; exit 1; }

command -v python3 >/dev/null || { echo "SKIP: perf_json needs python3"; exit 77; }
[ -x "$program" ] || fail "no $program (run from the build directory after make)"

# 16 B x 4 up to 4 KiB: 16, 64, 256, 1024, 4096 -> five rows
# verbose 2: the component logs every call it hands to the engine (the proof
# that dfccl_perf measured the engine and not the stock path)
DFCCL_TEST_MCA="--mca coll_dfccl_host_buffers engine --mca coll_dfccl_verbose 2" \
    "$here/run_mpi_test.sh" 2 "$program" -b 16 -e 4K -f 4 -w 1 -n 2 -c 1 \
    --no-progress -x allreduce --json "$work/out.json" > "$work/out.txt" 2> "$work/err.txt" ||
    { cat "$work/out.txt" "$work/err.txt"; fail "the run failed"; }
# The table is read from stdout alone: the component's log (stderr) reaches
# the launcher in chunks that need not end at a line's end.
cat "$work/out.txt"; grep -v 'posted to the engine' "$work/err.txt"

grep -q '^# collective *size *count *type *redop *time *median *algbw *busbw *#wrong$' "$work/out.txt" ||
    fail "no table header"
grep -q '^# Avg bus bandwidth *: [0-9.e+-]*$' "$work/out.txt" || fail "no summary line"
rows=$(grep -c '^  allreduce ' "$work/out.txt")
[ "$rows" -eq 5 ] || fail "expected 5 rows, found $rows"
bad=$(grep '^  allreduce ' "$work/out.txt" | awk '
    $2 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $4 != "float" || $5 != "sum" { print; next }
    $6 !~ /^[0-9.]+$/ || $7 !~ /^[0-9.]+$/ || $8 !~ /^[0-9.]+$/ || $9 !~ /^[0-9.]+$/ ||
    $10 != "0" { print }')
[ -z "$bad" ] || fail "malformed rows: $bad"

carried=$(grep -c 'coll:dfccl: allreduce on comm .* posted to the engine' "$work/err.txt")
# 2 ranks x 5 sizes x (1 warm-up + 2 timed) at least
[ "$carried" -ge 30 ] || fail "only $carried allreduce calls reached the engine"

python3 -m json.tool "$work/out.json" > /dev/null || fail "out.json is not valid JSON"
python3 - "$work/out.json" <<'PY' || fail "out.json does not hold the expected rows"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["np"] == 2 and doc["collectives"] == ["allreduce"] and doc["check"] is True
rows = doc["rows"]
assert [r["size"] for r in rows] == [16, 64, 256, 1024, 4096], rows
for r in rows:
    assert r["count"] * 4 == r["size"] and r["wrong"] == 0 and r["errors"] == 0
    assert r["time_us"] > 0 and r["median_us"] > 0 and r["busbw_gbps"] >= 0
    # allreduce at np 2: busbw = algbw x 2(n-1)/n = algbw
    assert abs(r["busbw_gbps"] - r["algbw_gbps"]) <= 1e-6 * max(1.0, r["algbw_gbps"])
PY
echo "perf_json: output format and JSON ok"
