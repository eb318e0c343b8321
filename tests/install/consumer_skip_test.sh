#!/usr/bin/env bash
# install_consumer reports a check it could not make as a skip, never as a
# pass: with no systemd-analyze it exits 77 (CTest's SKIP_RETURN_CODE) and
# says why on stderr.
# Usage: consumer_skip_test.sh <build-dir> <source-dir>
set -uo pipefail
build_dir="$1"; source_dir="$2"
err="$(mktemp)"
trap 'rm -f "$err"' EXIT
TICKTRACE_SYSTEMD_ANALYZE=/nonexistent/systemd-analyze \
  bash "$source_dir/tests/install/consumer_test.sh" "$build_dir" "$source_dir" >/dev/null 2>"$err"
rc=$?
if [ "$rc" -ne 77 ]; then
  echo "consumer_test.sh without systemd-analyze exited $rc, not 77 (skipped):" >&2
  cat "$err" >&2
  exit 1
fi
grep -q '^SKIPPED: systemd-analyze not found' "$err" ||
  { echo "no reason on stderr:" >&2; cat "$err" >&2; exit 1; }
echo "install skip test: ok"
