#!/usr/bin/env bash
# libdfccl.so exports exactly the functions dfccl.h declares: the engine's
# internal functions must not become an interface by accident.
set -euo pipefail
lib=src/.libs/libdfccl.so
header=${srcdir:-.}/src/include/dfccl.h
[ -f "$lib" ] || { echo "exports: $lib not built"; exit 99; }
declared=$(sed -n 's/.*\<\(dfccl_[a-z0-9_]*\) *(.*/\1/p' "$header" | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "D" || $2 == "B" {print $3}' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "exports: libdfccl.so and dfccl.h differ (< only declared, > only exported):"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
# one version: the package's (configure.ac) is the header's MAJOR.MINOR.x
major=$(sed -n 's/^#define DFCCL_VERSION_MAJOR *\([0-9]*\).*/\1/p' "$header")
minor=$(sed -n 's/^#define DFCCL_VERSION_MINOR *\([0-9]*\).*/\1/p' "$header")
package=${PACKAGE_VERSION:-$(sed -n 's/^PACKAGE_VERSION = //p' Makefile 2>/dev/null)}
case $package in
  "$major.$minor" | "$major.$minor".*) ;;
  *) echo "exports: the package is version ${package:-unknown}, dfccl.h says $major.$minor"; exit 1 ;;
esac
echo "exports: libdfccl.so exports the $(echo "$declared" | wc -l) functions dfccl.h declares;" \
     "version $package"
