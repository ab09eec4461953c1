#!/bin/sh
# dfccl_plan --check on the hand-made schedules in test/planner/schedules:
# each is named TOPOLOGY_WHAT.json and replayed on test/planner/TOPOLOGY.json;
# a valid one exits 0 and prints its modelled finish and the ring's, a bad_
# one exits 1 with the reason its name promises.
set -eu
dir=${top_srcdir:-.}/test/planner
tool=src/tools/dfccl_plan
[ -x "$tool" ] || { echo "check_schedules: $tool not built"; exit 99; }
failed=0
# The reason each bad schedule must be refused for.
reason() {
  case $1 in
    *bad_capacity*) echo "capacity exceeded" ;;
    *bad_before_arrival*|*bad_switch_stores*|*bad_switch_early*|*bad_gather_early*)
      echo "sent before it arrived" ;;
    *bad_demand*) echo "demand unmet" ;;
    *bad_reduced_twice*) echo "reduced twice" ;;
    *bad_claim*) echo "it says it ends after" ;;
    *bad_copy*) echo "copied at a switch without copies" ;;
    *bad_merge*) echo "merged at a switch without copies" ;;
    *) echo "?" ;;
  esac
}
for f in "$dir"/schedules/*.json; do
  name=$(basename "$f" .json)
  topo=$(echo "$name" | sed 's/_\(allgather\|reducescatter\|allreduce\|bad_.*\)$//')
  status=0
  out=$("$tool" --check "$f" --topology "$dir/$topo.json") || status=$?
  case $name in
    *bad_*)
      want=$(reason "$name")
      if [ "$status" -ne 1 ] || ! echo "$out" | grep -q "invalid: $want"; then
        echo "FAIL check_schedules: $name: exit $status, want 1 and \"$want\": $out"
        failed=1
      fi ;;
    *)
      if [ "$status" -ne 0 ] || ! echo "$out" | grep -q "^modelled finish:" ||
         ! echo "$out" | grep -q "^ring finish:"; then
        echo "FAIL check_schedules: $name: exit $status: $out"
        failed=1
      fi ;;
  esac
done
# The star by hand: 3 epochs, as the ring's through the switch (it passes
# chunks on as they arrive, so a ring step through it takes one epoch).
out=$("$tool" --check "$dir/schedules/star_4_allgather.json" --topology "$dir/star_4.json")
echo "$out" | grep -q "^modelled finish:  60.000 us" && echo "$out" | grep -q "^ring finish:      60.000 us" ||
  { echo "FAIL check_schedules: star_4 times: $out"; failed=1; }
# Both bad star schedules are valid where the switch copies (multicast,
# in-network sums).
for what in copy merge; do
  "$tool" --check "$dir/schedules/star_4_unicast_bad_$what.json" --topology "$dir/star_4.json" \
    >/dev/null || { echo "FAIL check_schedules: bad_$what refused on star_4"; failed=1; }
done
# A schedule on a topology it does not fit is refused, not crashed on.
status=0
"$tool" --check "$dir/schedules/star_4_allgather.json" --topology "$dir/line_3.json" >/dev/null || status=$?
[ "$status" -eq 1 ] || { echo "FAIL check_schedules: wrong topology exits $status, not 1"; failed=1; }
[ "$failed" -eq 0 ] && echo "check_schedules: every schedule judged as expected"
exit "$failed"
