#!/usr/bin/env bash
# Installs the build into a temporary prefix, then configures, builds and runs
# an outside project against it with find_package(ticktrace CONFIG REQUIRED).
# Usage: consumer_test.sh <build-dir> <source-dir>
set -euo pipefail
build_dir="$1"; source_dir="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/ticktrace/trace.h"
test -f "$tmp/prefix/include/ticktrace/abi.h"
cmake -S "$source_dir/tests/install/consumer" -B "$tmp/build" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" >/dev/null
"$tmp/build/consumer"
