#!/usr/bin/env bash
# Regenerates the seed corpus of archive_reader_fuzzer with the real collector
# (--raw) over real traced processes, plus one journal left by a SIGKILLed
# collector. Small runs: each seed is a few KiB.
# Usage: tests/fuzz/archive_make_corpus.sh <build-dir> [out-dir]
#   (out-dir defaults to tests/fuzz/corpus/archive_reader_fuzzer)
set -euo pipefail
build="${1:?usage: archive_make_corpus.sh <build-dir> [out-dir]}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${2:-$root/tests/fuzz/corpus/archive_reader_fuzzer}"
collector="$build/bin/ticktrace-collector"
producer="$build/bin/reliability_rel_producer"
test_producer="$build/bin/collector_test_producer"
for b in "$collector" "$producer" "$test_producer"; do
  [ -x "$b" ] || { echo "missing $b (build ticktrace-collector reliability_rel_producer collector_test_producer)" >&2; exit 1; }
done
mkdir -p "$out"
work="$(mktemp -d)"
session="t_fuzz_corpus_$$"
trap 'rm -rf "$work"; rm -f /dev/shm/ticktrace.'"$session"'.*' EXIT
hz=2000000000

# run_seed <name> <collector args...> -- <producer command...>: producers first
# (they finish into stale segments), then a collector drains them with --raw.
run_seed() {
  local name="$1"; shift
  local cargs=()
  while [ "$1" != "--" ]; do cargs+=("$1"); shift; done
  shift
  "$@" >/dev/null 2>&1 || true
  rm -f "$work/$name.db"
  "$collector" --session "$session" --db "$work/$name.db" --tsc-hz "$hz" --duration-s 1.5 \
    --raw "$work/$name.raw" "${cargs[@]}" >/dev/null
  cp "$work/$name.raw" "$out/$name.raw"
  rm -f /dev/shm/ticktrace."$session".*
}

# Stamps a,b of 60 orders, one thread.
run_seed stamps --pipeline a,b -- \
  "$producer" --session "$session" --mode seq --rings 2 --orders 60
# Two threads, a ring of 16: drops (slot dropped chunks) and a learned pipeline.
run_seed drops -- \
  "$producer" --session "$session" --mode seq --rings 4 --ring 16 --threads 2 --orders 40
# Thread churn over 2 rings, a full tag table: generations, slotless counters,
# rejected-tag records.
run_seed churn --pipeline a,b -- \
  "$producer" --session "$session" --mode churn --rings 2 --waves 3 --threads 3 --records 6 \
  --gap-ms 0 --extra-tags 1030
# Spans (kSpan records with both cores).
run_seed spans -- \
  "$test_producer" --session "$session" --mode migrate --orders 15

# A journal: a collector SIGKILLed while a producer runs.
"$producer" --session "$session" --mode seq --rings 2 --orders 1000 --pace-every 5 \
  --pace-us 2000 >/dev/null 2>&1 &
ppid=$!
"$collector" --session "$session" --db "$work/j.db" --tsc-hz "$hz" --pipeline a,b >/dev/null &
cpid=$!
sleep 0.4
kill -9 "$cpid" 2>/dev/null || true; wait "$cpid" 2>/dev/null || true
kill -9 "$ppid" 2>/dev/null || true; wait "$ppid" 2>/dev/null || true
cp "$work/j.db.ttjournal" "$out/journal.ttjournal"
ls -l "$out"
