#!/usr/bin/env bash
# Runs the wire example on loopback under a collector and prints its
# wire-to-wire breakdown:
#
#   examples/wire/run_wire.sh BUILD_DIR [ORDERS] [--netns]
#
# --netns (root, iproute2): the feed and the venue in one network namespace,
# the strategy in another, joined by a veth pair, so that the packets cross
# a (virtual) link and its softirqs instead of loopback. The namespaces
# share /dev/shm, so one collector drains all three.
#
# WIRE_KEEP_DB=PATH keeps a copy of the run's store at PATH (a new path: an
# existing file is not replaced) for a closer look with ticktrace-view.
#
# wire_rx (the kernel's receive timestamp) -> md_rx -> order_send -> wire_tx
# (the kernel's send timestamp) -> venue_rx (the venue's clock). The stages
# that start or end at a kernel or venue time are flagged external, with
# their uncertainty (docs/api.md, "Timestamps from other clocks").
set -euo pipefail
build=${1:?usage: run_wire.sh BUILD_DIR [ORDERS] [--netns]}
orders=${2:-2000}
netns=${3:-}
[[ -z "$netns" || "$netns" == --netns ]] || { echo "run_wire.sh: unknown option $netns" >&2; exit 2; }
bin="$build/bin"
for b in ticktrace-collector ticktrace-view ticktrace-example-wire; do
  [[ -x "$bin/$b" ]] || { echo "run_wire.sh: $bin/$b is not built" >&2; exit 1; }
done
dir=$(mktemp -d /tmp/ticktrace_wire.XXXXXX)
session="wire_$$"
pids=()
ns_a="ttwire_a_$$" ns_b="ttwire_b_$$"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [[ -n "$netns" ]]; then ip netns del "$ns_a" 2>/dev/null || true; ip netns del "$ns_b" 2>/dev/null || true; fi
  rm -f /dev/shm/ticktrace."$session".* 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
# Ports the kernel picks would need a rendezvous; fixed ones that are free will do.
md_port=$(( 20000 + $$ % 20000 ))
venue_port=$(( md_port + 1 ))
# Where each runs: loopback, or two namespaces on a veth pair (10.231.0.1: feed and venue, .2: strategy).
in_a=() in_b=() md_host=127.0.0.1 venue_host=127.0.0.1
if [[ -n "$netns" ]]; then
  ip netns add "$ns_a" && ip netns add "$ns_b"
  ip link add "tw_a$$" type veth peer name "tw_b$$"
  ip link set "tw_a$$" netns "$ns_a" && ip link set "tw_b$$" netns "$ns_b"
  ip -n "$ns_a" addr add 10.231.0.1/24 dev "tw_a$$" && ip -n "$ns_b" addr add 10.231.0.2/24 dev "tw_b$$"
  for n in "$ns_a" "$ns_b"; do ip -n "$n" link set lo up; done
  ip -n "$ns_a" link set "tw_a$$" up && ip -n "$ns_b" link set "tw_b$$" up
  in_a=(ip netns exec "$ns_a") in_b=(ip netns exec "$ns_b") md_host=10.231.0.2 venue_host=10.231.0.1
fi

# The venue runs on this host: its clock is this host's CLOCK_REALTIME, so its
# times have no error of their own (--exchange-clock-error-ns 0). A real
# venue's would be its clock's distance from ours.
"$bin/ticktrace-collector" --session "$session" --db "$dir/wire.db" \
  --pipeline wire_rx,md_rx,order_send,wire_tx,venue_rx --exchange-clock-error-ns 0 \
  >"$dir/collector.log" 2>&1 &
collector=$!
pids+=("$collector")
for _ in $(seq 100); do grep -q "order timeout" "$dir/collector.log" && break; sleep 0.1; done
export TICKTRACE_SESSION="$session"
"${in_a[@]}" "$bin/ticktrace-example-wire" --role venue --venue-port "$venue_port" --orders "$orders" &
pids+=("$!")
"${in_b[@]}" "$bin/ticktrace-example-wire" --role strategy --md-port "$md_port" \
  --venue-host "$venue_host" --venue-port "$venue_port" --orders "$orders" &
strategy=$!
pids+=("$strategy")
sleep 0.3
"${in_a[@]}" "$bin/ticktrace-example-wire" --role feed --md-host "$md_host" --md-port "$md_port" \
  --orders "$orders" --pace-us 200
wait "$strategy"
# Every segment drained and removed, then the collector stops.
for _ in $(seq 100); do compgen -G "/dev/shm/ticktrace.$session.*" >/dev/null || break; sleep 0.1; done
kill -TERM "$collector"
wait "$collector" || { cat "$dir/collector.log" >&2; exit 1; }
if [[ -n "${WIRE_KEEP_DB:-}" ]]; then
  [[ -e "$WIRE_KEEP_DB" ]] && { echo "run_wire.sh: WIRE_KEEP_DB=$WIRE_KEEP_DB exists; not replaced" >&2; exit 1; }
  cp "$dir/wire.db" "$WIRE_KEEP_DB"
fi
"$bin/ticktrace-view" summary --db "$dir/wire.db"
# How much of tick-to-trade (wire_rx -> wire_tx) was the kernel: the two
# external stages' means against the sum of the three stages' (means add up).
"$bin/ticktrace-view" summary --db "$dir/wire.db" --json |
  jq -r '[.stages[] | {key: .stage, value: .}] | from_entries as $s
    | ($s["wire_rx->md_rx"].mean_ns) as $rx | ($s["md_rx->order_send"].mean_ns) as $app
    | ($s["order_send->wire_tx"].mean_ns) as $tx | ($rx + $app + $tx) as $t2t
    | "tick-to-trade (wire_rx -> wire_tx), mean \($t2t / 1000 | . * 100 | round / 100) us: "
      + "the kernel \(($rx + $tx) / $t2t * 1000 | round / 10) % (receive \($rx / 1000 | . * 100 | round / 100) us, "
      + "send \($tx / 1000 | . * 100 | round / 100) us), the strategy \($app / $t2t * 1000 | round / 10) %; "
      + "kernel stages uncertain by up to \([$s["wire_rx->md_rx"].uncertainty_ns, $s["order_send->wire_tx"].uncertainty_ns] | max / 1000 | . * 100 | round / 100) us"'
