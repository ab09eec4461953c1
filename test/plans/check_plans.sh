#!/bin/sh
# dfccl_plan_check on the hand-made plans: each valid one (any name not
# starting with bad_) is accepted with exit status 0, each bad_ one is
# refused with exit status 1 and a line naming the file; a mix of both
# exits 1.
set -eu
plans=${top_srcdir:-.}/test/plans
tool=src/tools/dfccl_plan_check
[ -x "$tool" ] || { echo "check_plans: $tool not built"; exit 99; }
failed=0
for f in "$plans"/*.json; do
  name=$(basename "$f")
  status=0
  out=$("$tool" "$f") || status=$?
  case $name in
    bad_*) want=1; word=invalid ;;
    *) want=0; word=valid ;;
  esac
  if [ "$status" -ne "$want" ] || [ "${out#"$f: $word: "}" = "$out" ]; then
    echo "FAIL check_plans: $name: exit $status (want $want): $out"
    failed=1
  fi
done
status=0
"$tool" "$plans/ring_allreduce_4.json" "$plans/bad_deadlock.json" >/dev/null || status=$?
[ "$status" -eq 1 ] || { echo "FAIL check_plans: a mix exits $status, not 1"; failed=1; }
status=0
"$tool" >/dev/null 2>&1 || status=$?
[ "$status" -eq 2 ] || { echo "FAIL check_plans: no arguments exits $status, not 2"; failed=1; }
[ "$failed" -eq 0 ] && echo "check_plans: every plan file judged as expected"
exit "$failed"
