#!/usr/bin/env bash
# The loadable extension (store/sqlite/sqlite_extension.cc) makes Debian's own
# sqlite3 shell read the views `orders` and `stage_latencies` of a store the
# real collector wrote (through ticktrace-demo): without `.load` the shell
# fails with "no such function", with it the rows are the viewer's (its CSV
# export of the same run), and Python's sqlite3 loads it too (docs/store.md,
# "Reading the store with plain SQLite").
# Usage: sqlite_extension_test.sh <ticktrace-demo> <ticktrace-view> <libticktrace_sqlite.so>
# Exits 77 (skip) when the sqlite3 shell is not installed.
set -euo pipefail
demo="$1"; view="$2"; module="$3"
command -v sqlite3 >/dev/null || { echo "skipped: no sqlite3 shell (apt-get install sqlite3)"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
db="$tmp/demo.db"
# .load takes the path without its suffix, as docs/store.md shows it.
load="${module%.so}"

"$demo" --ticks 2000 --rate 0 --db "$db" --session "sqlext-test-$$" >"$tmp/demo.log" 2>&1 ||
  { cat "$tmp/demo.log" >&2; exit 1; }

# The collector wrote compact blocks (docs/store.md, "Compact blocks": a BLOB
# whose first byte is 2), so the rows below come through the extension's decoder.
blocks="$(sqlite3 "$db" "SELECT count(*), sum(typeof(orders) = 'blob' AND hex(substr(orders, 1, 1)) = '02') FROM order_blocks")"
case "$blocks" in
  0\|*) echo "the demo's store holds no order block" >&2; exit 1 ;;
  *) [ "${blocks%|*}" = "${blocks#*|}" ] ||
       { echo "not every block is compact (blocks|compact: $blocks)" >&2; exit 1; } ;;
esac

# Without the extension: the views cannot be read, and the shell says why.
if sqlite3 "$db" "SELECT count(*) FROM stage_latencies" >"$tmp/plain.out" 2>&1; then
  echo "the plain shell read stage_latencies without the extension:" >&2
  cat "$tmp/plain.out" >&2; exit 1
fi
grep -q "no such function: ticktrace_" "$tmp/plain.out" ||
  { echo "expected 'no such function: ticktrace_...', got:" >&2; cat "$tmp/plain.out" >&2; exit 1; }
if sqlite3 "$db" "SELECT count(*) FROM orders" >"$tmp/plain_orders.out" 2>&1; then
  echo "the plain shell read orders without the extension" >&2; exit 1
fi
grep -q "no such function: ticktrace_" "$tmp/plain_orders.out" ||
  { cat "$tmp/plain_orders.out" >&2; exit 1; }

# The viewer's rows of run 1: every sample, as (order_id, stage, latency_ns, flags).
"$view" export --db "$db" --run 1 --format csv --out "$tmp/view.csv" >/dev/null
tail -n +2 "$tmp/view.csv" | awk -F, '{print $2 "," $3 "," $5 "," $10}' | sort >"$tmp/view.rows"
test -s "$tmp/view.rows" || { echo "the viewer exported no samples" >&2; exit 1; }

# The same through the shell with the extension loaded.
sqlite3 -bail -csv "$db" ".load $load" \
  "SELECT order_id, stage, latency_ns, flags FROM stage_latencies WHERE run_id = 1" \
  >"$tmp/shell.out" || { echo "the shell could not read stage_latencies with .load $load" >&2; exit 1; }
sort "$tmp/shell.out" >"$tmp/shell.rows"
if ! cmp -s "$tmp/view.rows" "$tmp/shell.rows"; then
  echo "stage_latencies through the extension differs from the viewer's export:" >&2
  diff "$tmp/view.rows" "$tmp/shell.rows" | head -20 >&2; exit 1
fi

# docs/store.md's query, as written there but for the run: the 10 slowest
# strat_out->gw_in hops. Their latencies are the viewer's 10 largest of that
# stage (latencies only: equal ones may come in either order).
sqlite3 -csv "$db" ".load $load" \
  "SELECT order_id, instance, latency_ns, flags FROM stage_latencies
    WHERE run_id = 1 AND stage = 'strat_out->gw_in'
    ORDER BY latency_ns DESC LIMIT 10;" >"$tmp/slowest.out"
cut -d, -f3 "$tmp/slowest.out" >"$tmp/slowest.shell"
awk -F, '$2 == "strat_out->gw_in" {print $3}' "$tmp/view.rows" | sort -rn | sed -n 1,10p \
  >"$tmp/slowest.view"
test "$(wc -l <"$tmp/slowest.view")" -eq 10 || { echo "fewer than 10 hops" >&2; exit 1; }
cmp -s "$tmp/slowest.view" "$tmp/slowest.shell" ||
  { echo "the 10 slowest hops differ:" >&2; paste "$tmp/slowest.view" "$tmp/slowest.shell" >&2; exit 1; }

# orders: one row per order the viewer exported samples of (orders without a
# sample in detail would be missing from the export, so at least as many).
orders_shell="$(sqlite3 "$db" ".load $load" "SELECT count(DISTINCT order_id) FROM orders WHERE run_id = 1")"
orders_view="$(cut -d, -f1 "$tmp/view.rows" | sort -u | wc -l)"
test "$orders_shell" -ge "$orders_view" -a "$orders_view" -gt 0 ||
  { echo "orders: shell $orders_shell, viewer $orders_view" >&2; exit 1; }

# Python's sqlite3, where it can load extensions (Debian's python3 can; some
# builds, e.g. pyenv's default, have no enable_load_extension).
python=/usr/bin/python3
if [ -x "$python" ] && "$python" -c 'import sqlite3, sys; sys.exit(not hasattr(sqlite3.Connection, "enable_load_extension"))'; then
  "$python" - "$db" "$load" >"$tmp/python.rows" <<'PY'
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
conn.enable_load_extension(True)
conn.load_extension(sys.argv[2])
conn.enable_load_extension(False)
for row in conn.execute(
    "SELECT order_id, stage, latency_ns, flags FROM stage_latencies WHERE run_id = 1"):
    print(",".join(str(v) for v in row))
PY
  sort "$tmp/python.rows" | cmp -s - "$tmp/view.rows" ||
    { echo "Python's rows differ from the viewer's" >&2; exit 1; }
  echo "python: $(wc -l <"$tmp/python.rows") rows, as the viewer's"
else
  echo "python check not run: no $python with sqlite3 load_extension"
fi
echo "ok: $(wc -l <"$tmp/shell.rows") samples, $orders_shell orders read through the extension"
