#!/usr/bin/env bash
# examples/prometheus: the example rules load (promtool check rules) and do
# what their tests say (promtool test rules: breaching and non-breaching
# series, hand-worked in ticktrace-rules.test.yml). Without promtool (Debian's
# prometheus package ships it; CI installs it) the test is a CTest skip (77)
# with its reason, never a pass.
# Usage: prometheus_rules_test.sh <source-dir>
set -uo pipefail
source_dir="$1"
promtool="${TICKTRACE_PROMTOOL:-$(command -v promtool || true)}"
if [ -z "$promtool" ] || [ ! -x "$promtool" ]; then
  echo "SKIPPED: promtool not found (apt-get install prometheus)" >&2
  exit 77
fi
cd "$source_dir/examples/prometheus" || exit 1
"$promtool" check rules ticktrace-rules.yml || exit 1
"$promtool" test rules ticktrace-rules.test.yml || exit 1
echo "prometheus rules test: ok"
