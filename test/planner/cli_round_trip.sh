#!/bin/sh
# dfccl_plan end to end: plan each collective on a small topology, check the
# schedule it wrote with --check (the same finish comes back), and refuse
# bad usage with exit status 2 and failures with 1.
set -eu
dir=${top_srcdir:-.}/test/planner
tool=src/tools/dfccl_plan
[ -x "$tool" ] || { echo "cli_round_trip: $tool not built"; exit 99; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL cli_round_trip: $*"; failed=1; }

for coll in allgather reducescatter allreduce; do
  out=$("$tool" --topology "$dir/ring_4.json" --collective $coll --bytes 8Mi --chunks 2 \
    --method greedy --schedule "$tmp/$coll.json" 2>"$tmp/err") || { fail "$coll: $(cat "$tmp/err")"; continue; }
  for key in "collective:       $coll" "output bytes:     8388608" "epochs:" "modelled finish:" \
             "algbw:" "solver time:" "ring finish:"; do
    echo "$out" | grep -q "^$key" || fail "$coll: no \"$key\" line in: $out"
  done
  grep -q "dfccl_plan:" "$tmp/err" || fail "$coll: no progress line on stderr"
  back=$("$tool" --check "$tmp/$coll.json" --topology "$dir/ring_4.json") || fail "$coll: --check: $back"
  a=$(echo "$out" | grep "^modelled finish:")
  b=$(echo "$back" | grep "^modelled finish:")
  [ "$a" = "$b" ] || fail "$coll: planned \"$a\", checked \"$b\""
done
grep -q '"flows":\[' "$tmp/allgather.json" && grep -q '"chunk":\[' "$tmp/allgather.json" ||
  fail "the schedule file lacks flows"

# Plan files: written and accepted by the engine's loader (dfccl_plan_check
# runs the same checks); a reduce-scatter that sums partial sums at a GPU
# other than the owner (through a switch) has no plan file form: refused.
check=src/tools/dfccl_plan_check
for spec in "star_4 allgather 2" "star_4 allreduce 2" "ring_4 allreduce 2" "line_3 reducescatter 1"; do
  set -- $spec
  out=$("$tool" --topology "$dir/$1.json" --collective $2 --bytes 12M --chunks $3 \
    --schedule "$tmp/p.json" --plan-dir "$tmp/plans" --quiet 2>&1) || fail "$spec: $out"
  file=$(echo "$out" | sed -n 's/^plan file: *\([^ ]*\).*/\1/p')
  [ -n "$file" ] && "$check" "$file" >/dev/null || fail "$spec: plan file \"$file\" not valid"
done
status=0
out=$("$tool" --topology "$dir/star_4.json" --collective reducescatter --bytes 12M \
  --schedule "$tmp/p.json" --plan-dir "$tmp/rs" --quiet 2>&1) || status=$?
[ "$status" -eq 1 ] && echo "$out" | grep -q "reduce-scatter plan cannot hold" &&
  [ -z "$(ls "$tmp/rs" 2>/dev/null)" ] || fail "star_4 reduce-scatter plan: exit $status: $out"

usage() {
  status=0
  "$tool" "$@" >/dev/null 2>&1 || status=$?
  [ "$status" -eq 2 ] || fail "'$*' exits $status, not 2"
}
t="--topology $dir/ring_4.json"
usage
usage $t --collective allgather --schedule "$tmp/x.json"
usage $t --collective allgather --bytes 1Q --schedule "$tmp/x.json"
usage $t --collective broadcast --bytes 1M --schedule "$tmp/x.json"
usage $t --collective allgather --bytes 1M --method magic --schedule "$tmp/x.json"
usage $t --collective allgather --bytes 1M --chunks 0 --schedule "$tmp/x.json"
usage $t --collective allgather --bytes 1M --epoch medium --schedule "$tmp/x.json"
usage $t --collective allgather --bytes 1M --schedule "$tmp/x.json" --plan-dir "$tmp/p" --serve 9:1
usage $t --collective allgather --bytes 1M --schedule "$tmp/x.json" --plan-dir "$tmp/p" --serve 1M
status=0
"$tool" --topology "$dir/no_such.json" --collective allgather --bytes 1M --schedule "$tmp/x.json" \
  >/dev/null 2>&1 || status=$?
[ "$status" -eq 1 ] || fail "a missing topology exits $status, not 1"
status=0
"$tool" $t --collective allgather --bytes 3 --chunks 2 --schedule "$tmp/x.json" >/dev/null 2>&1 ||
  status=$?
[ "$status" -eq 1 ] || fail "fewer bytes than chunks exits $status, not 1"

# The engine's built-in algorithms on the model: the hierarchical schedule
# on two hosts is valid, reported next to the ring, never better than the
# exact MILP's; a topology without hosts has none.
h="--topology $dir/hosts_2x2.json"
for coll in allgather reducescatter allreduce; do
  out=$("$tool" $h --collective $coll --bytes 4M --method hier --schedule "$tmp/h.json" --quiet) ||
    { fail "hier $coll: $out"; continue; }
  back=$("$tool" --check "$tmp/h.json" $h) || fail "hier $coll: --check: $back"
  echo "$out" | grep -q "^hier finish:" || fail "hier $coll: no hier finish line: $out"
  hier=$(echo "$out" | sed -n 's/^modelled finish: *\([0-9.]*\).*/\1/p')
  best=$("$tool" $h --collective $coll --bytes 4M --method milp --schedule "$tmp/m.json" --quiet |
    sed -n 's/^modelled finish: *\([0-9.]*\).*/\1/p')
  awk -v h="$hier" -v m="$best" 'BEGIN { exit !(h + 0 >= m + 0 && m + 0 > 0) }' ||
    fail "hier $coll: $hier us, below the MILP's $best us"
done
status=0
"$tool" --topology "$dir/mixed_4.json" --collective allgather --bytes 1M --method hier \
  --schedule "$tmp/x.json" >"$tmp/out" 2>&1 || status=$?
[ "$status" -eq 1 ] && grep -q "must name its host" "$tmp/out" ||
  fail "hier without hosts exits $status: $(cat "$tmp/out")"

# Plan files say where they apply: the topology's hosts and the size class.
"$tool" $h --collective allgather --bytes 3M --schedule "$tmp/x.json" --plan-dir "$tmp/scope" \
  --quiet >/dev/null || fail "scope: planning failed"
grep -q '"nodes": \[0, 0, 1, 1\]' "$tmp/scope/allgather_4_3000000.json" &&
  grep -q '"min_bytes": 2097152, "max_bytes": 4194303' "$tmp/scope/allgather_4_3000000.json" ||
  fail "scope: $(head -5 "$tmp/scope/allgather_4_3000000.json")"
"$tool" $h --collective allgather --bytes 3M --schedule "$tmp/x.json" --plan-dir "$tmp/all" \
  --serve 1Ki: --quiet >/dev/null || fail "scope: --serve 1Ki: failed"
grep -q '"min_bytes": 1024,$' "$tmp/all/allgather_4_3000000.json" ||
  fail "scope --serve 1Ki: $(head -5 "$tmp/all/allgather_4_3000000.json")"

[ "$failed" -eq 0 ] && echo "cli_round_trip: dfccl_plan plans, checks and refuses as expected"
exit "$failed"
