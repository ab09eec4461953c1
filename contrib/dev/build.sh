#!/usr/bin/env bash
# Configures and builds dfccl out of tree (default _build/); sourced by demo.sh and check.sh.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${DFCCL_BUILD_DIR:-$top/_build}
"$top/contrib/dev/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" --quiet ${DFCCL_CONFIGURE_FLAGS:-}
make -j"$(nproc)" >/dev/null
echo "dfccl: built in $build"
