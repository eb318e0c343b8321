#!/usr/bin/env bash
# bench/idle_cpu.sh — the collector's CPU while nothing is traced
# (docs/collector.md#back-off-and-polling-rate: it should idle below 1% of a core).
#
#   bash bench/idle_cpu.sh [COLLECTOR] [SECONDS]
#
# Starts COLLECTOR (default build-bench/bin/ticktrace-collector) on a session
# of its own with a store in a temporary directory and no producers, lets it
# settle 5 s, then reads its user+system ticks from /proc/PID/stat over
# SECONDS (default 30) and prints the share of one core and the drain
# thread's wake-ups per second (its voluntary context switches).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
collector="${1:-$root/build-bench/bin/ticktrace-collector}"
seconds="${2:-30}"
tmp="$(mktemp -d /tmp/ticktrace-idle-XXXXXX)"
session="idle_cpu_$$"
"$collector" --session "$session" --db "$tmp/idle.db" >"$tmp/log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
sleep 5
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
switches() {  # the busiest thread's voluntary context switches (the drain thread)
  for t in /proc/$pid/task/*; do awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status"; done |
    sort -n | tail -n 1
}
t0=$(ticks); s0=$(switches)
sleep "$seconds"
t1=$(ticks); s1=$(switches)
awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$seconds" -v w=$((s1 - s0)) 'BEGIN {
  printf "idle collector over %d s: %.2f%% of one core (target < 1%%), drain thread %.0f wake-ups/s\n",
         s, 100 * d / hz / s, w / s }'
