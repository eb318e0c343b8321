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
  # A namespace can be made but not entered where / cannot be made a slave
  # mount (a chroot): ip netns exec fails there.
  if ! ip netns exec "$probe" true 2>/dev/null; then
    ip netns del "$probe"
    echo "SKIP: this machine cannot run a program in a network namespace (ip netns exec failed)"
    exit 77
  fi
  ip netns del "$probe"
elif [[ -n "$mode" ]]; then
  echo "FAIL: unknown option $mode"
  exit 2
fi
keep=$(mktemp -d /tmp/ticktrace_wire_test.XXXXXX)
trap 'rm -rf "$keep"' EXIT
db="$keep/wire.db"
out=$(WIRE_KEEP_DB="$db" bash "$(dirname "$0")/../../examples/wire/run_wire.sh" "$build" "$orders" $mode 2>&1)
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
# Each stage names the clock of its ends that the TSC did not read. By the
# example's design: wire_rx and wire_tx are the kernel's (realtime), venue_rx
# the venue's (exchange); md_rx, order_send and the decide span are TSC.
grep -q "^other clocks (flagged external, .*wire_rx->md_rx (wire_rx by realtime; uncertain by up to .*order_send->wire_tx (wire_tx by realtime; .*wire_tx->venue_rx (wire_tx by realtime, venue_rx by exchange; " <<<"$out" ||
  { echo "FAIL: the summary does not name the other clocks"; exit 1; }
view="$build/bin/ticktrace-view"
clocks=$("$view" summary --db "$db" --json |
  jq -c '[.stages[] | {(.stage): [.clocks[] | "\(.side):\(.clock)"]}] | add')
want='{"wire_rx->md_rx":["begin:realtime"],"md_rx->order_send":[],"decide":[],"order_send->wire_tx":["end:realtime"],"wire_tx->venue_rx":["begin:realtime","end:exchange"],"total":["begin:realtime","end:exchange"]}'
[[ "$clocks" == "$want" ]] || { echo "FAIL: summary --json clocks $clocks, want $want"; exit 1; }
# The exports say it too: Chrome's external stamps carry their clock, OTLP's
# stage spans each end's.
"$view" export --db "$db" --format chrome --out "$keep/trace.json" >/dev/null || { echo "FAIL: chrome export"; exit 1; }
chrome=$(jq -c '[.traceEvents[] | select(.ph == "X" and (.args.flags // "" | test("external"))) | "\(.name):\(.args.clock)"] | unique' "$keep/trace.json")
[[ "$chrome" == '["venue_rx:exchange","wire_rx:realtime","wire_tx:realtime"]' ]] ||
  { echo "FAIL: chrome external stamps $chrome"; exit 1; }
"$view" export --db "$db" --format otlp-json --slowest 5 --out "$keep/otlp.json" >/dev/null || { echo "FAIL: otlp-json export"; exit 1; }
otlp=$(jq -c '[.resourceSpans[].scopeSpans[].spans[] | select(.name == "wire_tx->venue_rx")
  | [.attributes[] | select(.key | test("clock$|flag.external$")) | "\(.key)=\(.value | to_entries[0].value)"] | sort] | unique' "$keep/otlp.json")
[[ "$otlp" == '[["ticktrace.begin.clock=realtime","ticktrace.end.clock=exchange","ticktrace.flag.external=true"]]' ]] ||
  { echo "FAIL: otlp wire_tx->venue_rx attributes $otlp"; exit 1; }
# Nothing of the run is left behind: no namespace of this run, no segment.
if [[ "$mode" == --netns ]] && ip netns list | grep -q "^ttwire_[ab]_"; then
  echo "FAIL: a namespace of the example was left behind: $(ip netns list | grep '^ttwire_')"
  exit 1
fi
echo "ok"
