#!/usr/bin/env bash
# Runs one libFuzzer binary: every regression input once, then the committed
# corpus plus <runs> new executions (new inputs go to a temporary directory,
# the committed corpus is never written). A crash fails the test and leaves
# the crashing input in the printed directory.
# Usage: run_fuzzer.sh <fuzzer> <corpus-dir> <regressions-dir> <runs>
set -euo pipefail
fuzzer="$1"; corpus="$2"; regressions="$3"; runs="$4"
work="$(mktemp -d)"
trap 'status=$?; if [ $status -eq 0 ]; then rm -rf "$work"; else echo "fuzz artifacts kept in $work"; fi' EXIT
mapfile -t inputs < <(find "$regressions" -type f ! -name '.keep' 2>/dev/null | sort)
if ((${#inputs[@]})); then
  "$fuzzer" -runs=1 "${inputs[@]}" >"$work/regressions.log" 2>&1 ||
    { tail -40 "$work/regressions.log"; exit 1; }
fi
echo "regressions: ${#inputs[@]} inputs replayed"
mkdir -p "$work/new"
"$fuzzer" -runs="$runs" -max_total_time=40 -artifact_prefix="$work/" -print_final_stats=1 \
  "$work/new" "$corpus" >"$work/fuzz.log" 2>&1 || { tail -60 "$work/fuzz.log"; exit 1; }
grep -E "stat::number_of_executed_units|Done" "$work/fuzz.log" | tail -2
