#!/usr/bin/env bash
# Installs the build into a temporary prefix, then configures, builds and runs
# an outside project against it with find_package(ticktrace CONFIG REQUIRED),
# and checks that neither the installed files nor that project's build touch
# Abseil.
# Usage: consumer_test.sh <build-dir> <source-dir>
# Exits 77 (CTest: skipped, SKIP_RETURN_CODE) when every other check passed but
# the systemd unit could not be verified: systemd-analyze is missing.
# TICKTRACE_SYSTEMD_ANALYZE names the command to use instead (consumer_skip_test.sh
# names one that does not exist, to see the skip).
set -euo pipefail
build_dir="$1"; source_dir="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
for h in trace.h abi.h status.h tsc.h timer.h measure.h calibration.h environment.h; do
  test -f "$tmp/prefix/include/ticktrace/$h" || { echo "not installed: ticktrace/$h" >&2; exit 1; }
done
# What a traced program needs is the C++ standard library alone (docs/api.md):
# no installed header or package file names Abseil, the collector's side is not
# installed, and the library holds no Abseil symbol.
lib_a="$(find "$tmp/prefix" -name libticktrace.a)"
package_dir="$(dirname "$(find "$tmp/prefix" -name ticktraceConfig.cmake)")"
test -f "$lib_a" && test -d "$package_dir"
if grep -rn absl "$tmp/prefix/include/ticktrace" "$package_dir"; then
  echo "the installed headers or package mention Abseil (above)" >&2; exit 1
fi
for h in segment_reader.h absl_status.h internal; do
  test ! -e "$tmp/prefix/include/ticktrace/$h" || { echo "installed: ticktrace/$h" >&2; exit 1; }
done
if nm -C "$lib_a" | grep -i absl; then
  echo "libticktrace.a references Abseil (above)" >&2; exit 1
fi
# The consumer, built with no inherited include or library paths; -H lists every
# header each compile opens, -v shows the compile and link lines: none may be
# Abseil's.
env -u CPATH -u CPLUS_INCLUDE_PATH -u C_INCLUDE_PATH -u LIBRARY_PATH \
  cmake -S "$source_dir/tests/install/consumer" -B "$tmp/build" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-H >/dev/null
env -u CPATH -u CPLUS_INCLUDE_PATH -u C_INCLUDE_PATH -u LIBRARY_PATH \
  cmake --build "$tmp/build" -v >"$tmp/consumer_build.log" 2>&1 ||
  { cat "$tmp/consumer_build.log" >&2; exit 1; }
grep -q 'ticktrace/trace.h' "$tmp/consumer_build.log" ||
  { echo "the consumer's build log lists no headers (-H)" >&2; exit 1; }
if grep -n absl "$tmp/consumer_build.log"; then
  echo "the consumer's compile or link pulls in Abseil (above)" >&2; exit 1
fi
"$tmp/build/consumer"

# The tools, when this build has them (TICKTRACE_BUILD_TOOLS): every binary
# with --help and --version, the systemd unit pointing at the installed
# collector (and valid for systemd), bash completion for every binary.
if [ -x "$build_dir/bin/ticktrace-collector" ]; then
  p="$tmp/prefix"
  for b in ticktrace-collector ticktrace-view ticktrace-demo ticktrace-example-feed \
           ticktrace-example-strategy ticktrace-example-gateway; do
    test -x "$p/bin/$b" || { echo "not installed: bin/$b" >&2; exit 1; }
    test -f "$p/share/bash-completion/completions/$b" ||
      { echo "no completion for $b" >&2; exit 1; }
    "$p/bin/$b" --help >/dev/null
    "$p/bin/$b" --version | grep -Eqx "$b [0-9]+\.[0-9]+\.[0-9]+ \(([0-9a-f]+|unknown)\)" ||
      { echo "$b --version: $("$p/bin/$b" --version)" >&2; exit 1; }
  done
  # The loadable SQLite extension, installed beside the libraries; the shell
  # (when installed) loads it from there and calls one of its functions: a
  # JSON block's text comes back as it is (docs/store.md, "Order blocks").
  module="$(find "$p" -name libticktrace_sqlite.so)"
  test -n "$module" || { echo "not installed: libticktrace_sqlite.so" >&2; exit 1; }
  if command -v sqlite3 >/dev/null; then
    [ "$(sqlite3 :memory: ".load ${module%.so}" "SELECT ticktrace_block_orders('[]')")" = "[]" ] ||
      { echo "the installed extension does not load in sqlite3" >&2; exit 1; }
  fi
  unit="$p/lib/systemd/system/ticktrace-collector@.service"
  grep -q "^ExecStart=$p/bin/ticktrace-collector --session %i " "$unit" ||
    { echo "unit's ExecStart is not the installed collector:" >&2
      grep ExecStart "$unit" >&2; exit 1; }
  for key in Restart=on-failure CPUAffinity= Nice= StandardOutput=journal RemoveIPC=no \
             ProtectSystem=strict; do
    grep -q "^$key" "$unit" || { echo "unit lacks $key" >&2; exit 1; }
  done
  systemd_analyze="${TICKTRACE_SYSTEMD_ANALYZE:-systemd-analyze}"
  if command -v "$systemd_analyze" >/dev/null; then
    "$systemd_analyze" verify "$unit"
  else
    unit_unverified=1
  fi
  # The completion offers a collector flag and a viewer subcommand.
  bash -c '
    source "$1/share/bash-completion/completions/ticktrace-collector"
    COMP_WORDS=("$1/bin/ticktrace-collector" --metrics-l); COMP_CWORD=1; _ticktrace_complete
    [ "${COMPREPLY[*]}" = --metrics-listen ] ||
      { echo "collector completion: ${COMPREPLY[*]}" >&2; exit 1; }
    COMP_WORDS=("$1/bin/ticktrace-view" rep); COMP_CWORD=1; _ticktrace_complete
    [ "${COMPREPLY[*]}" = report ] || { echo "view completion: ${COMPREPLY[*]}" >&2; exit 1; }
  ' _ "$p"
fi
if [ -n "${unit_unverified:-}" ]; then
  # Last, so that a skip still means every other check passed.
  echo "SKIPPED: systemd-analyze not found (Debian package systemd): the installed unit" \
       "was not verified" >&2
  exit 77
fi
echo "install test: ok"
