#!/usr/bin/env bash
# The tests: installs what is missing, builds, and runs `make check` (engine
# unit tests, then mpirun tests through the component, from the build tree).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
"$top/contrib/dev/build.sh"
build=${DFCCL_BUILD_DIR:-$top/_build}
cd "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
start=$(date +%s)
set +e
make -j1 check "$@"
rc=$?
set -e
if [ -f test-suite.log ]; then
  pass=$(sed -n 's/^# PASS: *//p' test-suite.log)
  fail=$(sed -n 's/^# FAIL: *//p' test-suite.log)
  err=$(sed -n 's/^# ERROR: *//p' test-suite.log)
  skip=$(sed -n 's/^# SKIP: *//p' test-suite.log)
  [ $rc -ne 0 ] && grep -A40 '^FAIL\|^ERROR' test-suite.log | head -200
  echo "dfccl check ($(( $(date +%s) - start )) s): ${pass:-0} passed, $(( ${fail:-0} + ${err:-0} )) failed, ${skip:-0} skipped"
fi
exit $rc
