#!/usr/bin/env bash
# Soak: runs the fault trials (producer SIGKILLs, collector SIGKILL+restart,
# the same at full speed, SIGTERM at start-up, hostile segment, thread churn,
# no collector) over and over for N minutes,
# with TICKTRACE_REL_SCALE trials per run, and prints the figures of every
# round. Stops at the first failure and keeps its output.
#
# Usage: tests/reliability/soak.sh <build-dir> [minutes=10] [scale=4]
#   e.g. tests/reliability/soak.sh build-rel 60 4
# SOAK_TESTS="name ..." runs only those tests, e.g. the producer kills alone
# under ASan:
#   SOAK_TESTS=reliability_producer_kill_test ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
#     tests/reliability/soak.sh build-asan 25 1
# The build dir must have the reliability tests built
#   (cmake --build <dir> --target reliability_producer_kill_test ... ).
set -euo pipefail
build="${1:?usage: soak.sh <build-dir> [minutes] [scale]}"
minutes="${2:-10}"
scale="${3:-4}"
bin="$build/bin"
default_tests="reliability_producer_kill_test reliability_collector_restart_test"
default_tests+=" reliability_full_speed_exactly_once_test reliability_sigterm_startup_test"
default_tests+=" reliability_hostile_segment_test reliability_churn_test reliability_no_collector_test"
read -r -a tests <<<"${SOAK_TESTS:-$default_tests}"
for t in "${tests[@]}"; do
  [ -x "$bin/$t" ] || { echo "soak: $bin/$t not built" >&2; exit 1; }
done
out="$(mktemp -d /tmp/ticktrace_soak_XXXXXX)"
end=$(( $(date +%s) + minutes * 60 ))
round=0
echo "soak: ${minutes} min, scale ${scale}, logs in $out"
while [ "$(date +%s)" -lt "$end" ]; do
  round=$((round + 1))
  for t in "${tests[@]}"; do
    log="$out/$t.$round.log"
    if ! TICKTRACE_REL_SCALE="$scale" "$bin/$t" >"$log" 2>&1; then
      echo "soak: round $round: $t FAILED (log: $log)"
      tail -40 "$log"
      exit 1
    fi
    grep -h '^FIGURE' "$log" | sed "s/^/round $round: /"
    rm -f "$log"
  done
done
echo "soak: $round rounds green"
rm -rf "$out"
