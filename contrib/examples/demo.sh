#!/usr/bin/env bash
# The demo: installs what is missing, builds, and runs a 4-rank mpirun job whose
# collectives the dfccl engine carries, from the build tree (nothing installed).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
"$top/contrib/dev/build.sh"
build=${DFCCL_BUILD_DIR:-$top/_build}
cd "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
mpirun -np 4 --oversubscribe \
  --mca mca_base_component_path "$build/test/components:$pkglibdir" \
  --mca coll_dfccl_host_buffers engine --mca coll_base_verbose 10 \
  -x LD_LIBRARY_PATH="$build/src/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  ./contrib/examples/dfccl_demo >"$log" 2>&1
rc=$?
set -e
grep -v '^\[' "$log" || true   # the program's own output (Open MPI's lines start with [host:pid])
echo "-- proof that Open MPI selected dfccl (coll_base_verbose):"
grep -m 4 -E "selecting dfccl|component available: dfccl" "$log" || { echo "dfccl was NOT selected"; exit 1; }
exit $rc
