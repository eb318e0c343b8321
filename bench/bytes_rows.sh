# shellcheck shell=bash disable=SC2154  # the variables named below come from run_all.sh
# bench/bytes_rows.sh — how many bytes a record takes in the store, per shape
# of order and per backend, against the targets (SQLite, --detail all: at
# most 16 B on the two-stamp shape, at most 24 B on the demo's). Sourced by
# bench/run_all.sh (uses its $tmp, $bin, $bin_shown, $quick, run() and status[]).
#
#   bytes_run       store_write_bench --breakdown on the two-stamp shape (SQLite
#                   per --detail policy, then ClickHouse --detail all) and on the
#                   demo's shape (SQLite only)
#   bytes_section   the table and the breakdown of the stores' pages
#
# A store's size is deterministic for given orders (no timing involved), so
# this section may run while the machine is busy. Bytes are the store's
# files after a clean close (the WAL checkpointed into the database); for
# ClickHouse, the parts on disk after OPTIMIZE ... FINAL.

if [ "$quick" = 1 ]; then
  bytes_orders=100000
else
  bytes_orders=1000000
fi

bytes_run() {
  run bytes_two_stamp 900 "$bin/store_write_bench" --shape two-stamp --orders "$bytes_orders" \
    --dir "$tmp" --breakdown
  run bytes_demo 600 "$bin/store_write_bench" --shape demo --orders "$bytes_orders" \
    --dir "$tmp" --breakdown --no-clickhouse
}

# The B/record of `policy` (all, tail, none) in store_write_bench's output `name`.
bytes_sqlite() {
  sed -n "s/^detail $2 .* \([0-9.]*\) B\/record\$/\1/p" "$tmp/$1.txt" 2>/dev/null | head -1
}
bytes_clickhouse() {
  sed -n 's/^clickhouse .* \([0-9.]*\) B\/record .*/\1/p' "$tmp/$1.txt" 2>/dev/null | head -1
}
# The exit status of run `name`, as a phrase.
bytes_status() {
  local rc="${status[$1]:-not run}"
  if [ "$rc" = 0 ]; then echo "exit status 0"; else echo "**exit status $rc**"; fi
}
# "met" or "**missed**" for `value` <= `limit`.
bytes_met() {
  awk -v v="$1" -v l="$2" 'BEGIN {print (v != "" && v + 0 <= l + 0) ? "met" : "**missed**"}'
}

bytes_section() {
  local two demo two_ch
  two="$(bytes_sqlite bytes_two_stamp all)"
  demo="$(bytes_sqlite bytes_demo all)"
  two_ch="$(bytes_clickhouse bytes_two_stamp)"
  cat <<EOF
## Bytes per record in the store — \`store_write_bench --breakdown\`

The same orders through the collector's store sink into each backend
(\`$bin_shown/store_write_bench --shape two-stamp|demo --orders $bytes_orders --breakdown\`;
source: [\`bench/store_write_bench.cc\`](../bench/store_write_bench.cc), [\`bench/bytes_rows.sh\`](../bench/bytes_rows.sh)).
Two-stamp: orders of two stamps on one thread (2 records each) from 2 processes × 2
threads taking turns, 250 k orders/s. Demo: the demo's tick and child orders (8 records
a pair). Records are the stamps written by the producers (and the demo's link); bytes
the store's files after a clean close, the WAL checkpointed (ClickHouse: its parts
after \`OPTIMIZE ... FINAL\`). Sizes do not depend on the machine's load.

| shape | store | \`--detail\` | B/record | target | met / missed |
|---|---|---|---:|---|---|
| two-stamp | SQLite | all | ${two:-—} | <= 16 B | $(bytes_met "$two" 16) |
| demo | SQLite | all | ${demo:-—} | <= 24 B | $(bytes_met "$demo" 24) |
| two-stamp | ClickHouse | all | ${two_ch:-—} | — (beside SQLite) | — |
| two-stamp | SQLite | tail | $(bytes_sqlite bytes_two_stamp tail) | — | — |
| two-stamp | SQLite | none | $(bytes_sqlite bytes_two_stamp none) | — | — |
| demo | SQLite | tail | $(bytes_sqlite bytes_demo tail) | — | — |
| demo | SQLite | none | $(bytes_sqlite bytes_demo none) | — | — |

Where the \`--detail all\` stores' bytes go (SQLite's \`dbstat\`: pages per table
and index), and the order blocks' payload beside what the older encoding (a
JSON array and packed details per block) takes for the same orders (tables
and indexes of less than 0.01 B/record left out):

\`\`\`
two-stamp ($(bytes_status bytes_two_stamp)):
$(grep '^breakdown:' "$tmp/bytes_two_stamp.txt" 2>/dev/null | grep -v ' 0\.00 B/record' || echo 'not run')
demo ($(bytes_status bytes_demo)):
$(grep '^breakdown:' "$tmp/bytes_demo.txt" 2>/dev/null | grep -v ' 0\.00 B/record' || echo 'not run')
\`\`\`
EOF
}
