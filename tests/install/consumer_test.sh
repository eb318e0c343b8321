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
  unit="$p/lib/systemd/system/ticktrace-collector@.service"
  grep -q "^ExecStart=$p/bin/ticktrace-collector --session %i " "$unit" ||
    { echo "unit's ExecStart is not the installed collector:" >&2
      grep ExecStart "$unit" >&2; exit 1; }
  for key in Restart=on-failure CPUAffinity= Nice= StandardOutput=journal RemoveIPC=no \
             ProtectSystem=strict; do
    grep -q "^$key" "$unit" || { echo "unit lacks $key" >&2; exit 1; }
  done
  if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify "$unit"
  else
    echo "note: systemd-analyze not found; the unit was not verified" >&2
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
echo "install test: ok"
