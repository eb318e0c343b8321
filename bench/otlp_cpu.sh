#!/usr/bin/env bash
# The collector's CPU with and without --otlp-endpoint at one fixed rate: the
# live OpenTelemetry push must cost almost nothing (docs/collector.md,
# "OpenTelemetry push"). Each round runs a fresh collector into a fresh SQLite
# store while the test producer stamps two tags per order at RATE orders/s
# for SECONDS, once without the push and once pushing to a loopback OTLP/HTTP
# receiver (python3's http.server answering 200), alternating, and prints the
# collector's own "cpu:" exit line for each. A bench: it measures, it never
# fails on a figure. Compare the two columns of the same run only.
#
#   bash bench/otlp_cpu.sh [BUILD_DIR]       (default: build; needs
#   ticktrace-collector and collector_test_producer built)
# Environment: RATE (orders/s, default 50000), RUN_SECONDS (default 10), ROUNDS (default 3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
bin="$build/bin"
rate="${RATE:-50000}"
seconds="${RUN_SECONDS:-10}"
rounds="${ROUNDS:-3}"
orders=$((rate * seconds))
pace_ns=$((1000000000 / rate))
tmp="$(mktemp -d /tmp/ticktrace-otlp-cpu-XXXXXX)"
receiver_pid=""
cleanup() {
  if [ -n "$receiver_pid" ]; then kill "$receiver_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat >"$tmp/receiver.py" <<'PY'
import http.server, sys
class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
PY
python3 "$tmp/receiver.py" "$port" &
receiver_pid=$!
sleep 0.5

run() {  # name, extra collector flags...
  local name="$1"; shift
  local session="otlpcpu_${name}_$$"
  rm -f "$tmp/store.db"
  "$bin/ticktrace-collector" --session "$session" --db "$tmp/store.db" --pipeline a,b \
    --order-timeout-ms 200 "$@" >"$tmp/collector.log" 2>&1 &
  local c=$!
  for _ in $(seq 200); do grep -q "order timeout" "$tmp/collector.log" && break; sleep 0.1; done
  "$bin/collector_test_producer" --session "$session" --ring 1048576 --mode spin \
    --orders "$orders" --pace-ns "$pace_ns" >/dev/null 2>&1
  sleep 1
  kill -TERM "$c"
  wait "$c" || true
  printf '%-16s %s | %s\n' "$name" "$(grep -o 'cpu: .*' "$tmp/collector.log")" \
    "$(grep -o 'otlp .*spans sent.*' "$tmp/collector.log" || echo 'no push')"
}

echo "collector CPU at $rate orders/s (2 records each) for ${seconds} s; $(nproc) vCPUs;" \
     "$(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  run "without-otlp"
  run "with-otlp" --otlp-endpoint "http://127.0.0.1:$port"
done
