#!/usr/bin/env bash
# libdfccl.so exports exactly the functions dfccl.h declares: the engine's
# internal functions must not become an interface by accident.
set -euo pipefail
lib=src/engine/.libs/libdfccl.so
header=${srcdir:-.}/src/engine/include/dfccl.h
[ -f "$lib" ] || { echo "exports: $lib not built"; exit 99; }
declared=$(sed -n 's/.*\<\(dfccl_[a-z0-9_]*\) *(.*/\1/p' "$header" | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "D" || $2 == "B" {print $3}' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "exports: libdfccl.so and dfccl.h differ (< only declared, > only exported):"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
echo "exports: libdfccl.so exports the $(echo "$declared" | wc -l) functions dfccl.h declares"
