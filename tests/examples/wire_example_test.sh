#!/usr/bin/env bash
# The wire example end to end on loopback (examples/wire/run_wire.sh): every
# tick got a kernel receive timestamp and every order a send timestamp, and
# the breakdown says how much of tick-to-trade was the kernel.
set -uo pipefail
build=${1:?usage: wire_example_test.sh BUILD_DIR}
command -v jq >/dev/null || { echo "SKIP: jq is not installed (run_wire.sh needs it)"; exit 77; }
out=$(bash "$(dirname "$0")/../../examples/wire/run_wire.sh" "$build" 300 2>&1)
status=$?
echo "$out"
[[ $status -eq 0 ]] || { echo "FAIL: run_wire.sh exited $status"; exit 1; }
grep -q "receive timestamps: software (0 without), 0 without a send timestamp" <<<"$out" ||
  { echo "FAIL: a packet without a kernel timestamp"; exit 1; }
grep -q "^tick-to-trade (wire_rx -> wire_tx), mean .* the kernel .* %" <<<"$out" ||
  { echo "FAIL: no kernel share"; exit 1; }
grep -q "^wire_rx->md_rx  *300 " <<<"$out" || { echo "FAIL: not 300 wire_rx->md_rx samples"; exit 1; }
echo "ok"
