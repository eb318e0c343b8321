#!/usr/bin/env bash
# The wire example end to end (examples/wire/run_wire.sh): every tick got a
# kernel receive timestamp and every order a send timestamp, and the
# breakdown says how much of tick-to-trade was the kernel.
#
#   wire_example_test.sh BUILD_DIR            on loopback
#   wire_example_test.sh BUILD_DIR --netns    across two network-namespace
#                                             hosts joined by a veth pair
#                                             (root; skipped, exit 77, where
#                                             namespaces cannot be made)
set -uo pipefail
build=${1:?usage: wire_example_test.sh BUILD_DIR [--netns]}
mode=${2:-}
command -v jq >/dev/null || { echo "SKIP: jq is not installed (run_wire.sh needs it)"; exit 77; }
orders=300
if [[ "$mode" == --netns ]]; then
  [[ $(id -u) -eq 0 ]] || { echo "SKIP: network namespaces need root (ip netns add)"; exit 77; }
  command -v ip >/dev/null || { echo "SKIP: iproute2 (ip) is not installed"; exit 77; }
  probe="ttwire_probe_$$"
  if ! ip netns add "$probe" 2>/dev/null; then
    echo "SKIP: this machine cannot create a network namespace (ip netns add failed)"
    exit 77
  fi
  ip netns del "$probe"
elif [[ -n "$mode" ]]; then
  echo "FAIL: unknown option $mode"
  exit 2
fi
out=$(bash "$(dirname "$0")/../../examples/wire/run_wire.sh" "$build" "$orders" $mode 2>&1)
status=$?
echo "$out"
[[ $status -eq 0 ]] || { echo "FAIL: run_wire.sh exited $status"; exit 1; }
grep -q "receive timestamps: software (0 without), 0 without a send timestamp" <<<"$out" ||
  { echo "FAIL: a packet without a kernel timestamp"; exit 1; }
grep -q "^tick-to-trade (wire_rx -> wire_tx), mean .* the kernel .* %" <<<"$out" ||
  { echo "FAIL: no kernel share"; exit 1; }
for stage in "wire_rx->md_rx" "md_rx->order_send" "order_send->wire_tx" "wire_tx->venue_rx"; do
  grep -q "^$stage  *$orders " <<<"$out" || { echo "FAIL: not $orders $stage samples"; exit 1; }
done
# Nothing of the run is left behind: no namespace of this run, no segment.
if [[ "$mode" == --netns ]] && ip netns list | grep -q "^ttwire_[ab]_"; then
  echo "FAIL: a namespace of the example was left behind: $(ip netns list | grep '^ttwire_')"
  exit 1
fi
echo "ok"
