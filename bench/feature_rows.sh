# shellcheck shell=bash disable=SC2154  # the variables named below come from run_all.sh
# bench/feature_rows.sh — what the collector's optional live features cost:
# latency budgets (--budget) and the OpenTelemetry push (--otlp-endpoint),
# against the same collector without them, at 1 M records/s. Sourced by
# bench/run_all.sh (uses its $tmp, $bin, $quick and log(), and engine_one and
# engine_metric from bench/engine_rows.sh).
#
#   features_run       ROUNDS rounds of daemon_bench with this checkout's
#                      collector, without and with the features, the side
#                      that goes first alternating from round to round
#   features_section   the table (medians of the rounds) and every run's output
#
# Both sides are the same binary, driver, rate, rings and --detail all; the
# "with" side adds three budgets and --otlp-sink (daemon_bench's own loopback
# receiver, on a thread of the driver, so its CPU is not the collector's).
# The receiver takes everything the collector pushes: each closed interval's
# slowest orders per stage and every excluded-flag order.

if [ "$quick" = 1 ]; then
  features_seconds=10
  features_rounds=1
else
  features_seconds=60
  # Runs of one configuration differ by a few % from round to round on a
  # 2-vCPU guest; five pairs give the paired median a chance to see 5 %.
  features_rounds=5
fi
features_budgets=(--collector-arg --budget --collector-arg 'total:p99<20us'
                  --collector-arg --budget --collector-arg 'md_rx->decide:p99.9<5us'
                  --collector-arg --budget --collector-arg 'decide->order_sent:max<1ms')

# The budgets as the collector gets them: --budget 'total:p99<20us' ...
features_budgets_shown() {
  local a out=""
  for a in "${features_budgets[@]}"; do
    [ "$a" = --collector-arg ] || out+="${out:+ }$a"
  done
  echo "$out"
}

features_run() {
  local db=("$bin/daemon_bench" --collector COLLECTOR --seconds "$features_seconds" --tmpdir WORKDIR
            --rate 1000000 --detail all --restart-minutes none)
  local r
  # Which side goes first alternates (without, with; with, without; ...): a
  # run starts while the previous one's store is still being freed, so a
  # fixed order would bias the second side.
  for r in $(seq "$features_rounds"); do
    if [ $((r % 2)) = 1 ]; then
      engine_one features_without after "$r" 1200 "${db[@]}"
      engine_one features_with after "$r" 1200 "${db[@]}" "${features_budgets[@]}" --otlp-sink
    else
      engine_one features_with after "$r" 1200 "${db[@]}" "${features_budgets[@]}" --otlp-sink
      engine_one features_without after "$r" 1200 "${db[@]}"
    fi
  done
}

# The collector's CPU with over without, round by round (each round's two
# runs are neighbours in time, so drift of the machine cancels), then the
# median of those ratios.
features_paired_ratio() {
  local r with without
  for r in $(seq "$features_rounds"); do
    with="$(awk -F'|' '$1 == "METRIC" && $2 == "cpu_cores" {print $3; exit}' \
            "$tmp/engine/features_with.after.$r.txt" 2>/dev/null)"
    without="$(awk -F'|' '$1 == "METRIC" && $2 == "cpu_cores" {print $3; exit}' \
               "$tmp/engine/features_without.after.$r.txt" 2>/dev/null)"
    [ -n "$with" ] && [ -n "$without" ] && awk -v a="$with" -v b="$without" 'BEGIN {printf "%.4f\n", a / b}'
  done | sort -g | awk '{v[NR] = $1} END {if (NR) printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# Every round's two figures: "0.431 / 0.447 (1.037)", one per round.
features_rounds_shown() {
  local r with without
  for r in $(seq "$features_rounds"); do
    with="$(awk -F'|' '$1 == "METRIC" && $2 == "cpu_cores" {print $3; exit}' \
            "$tmp/engine/features_with.after.$r.txt" 2>/dev/null)"
    without="$(awk -F'|' '$1 == "METRIC" && $2 == "cpu_cores" {print $3; exit}' \
               "$tmp/engine/features_without.after.$r.txt" 2>/dev/null)"
    [ -n "$with" ] && [ -n "$without" ] &&
      awk -v r="$r" -v a="$with" -v b="$without" 'BEGIN {printf "round %d: %.3f / %.3f cores (%.3f)\n", r, b, a, a / b}'
  done
}

features_section() {
  local without with ratio met requests
  without="$(engine_metric features_without after cpu_cores)"
  with="$(engine_metric features_with after cpu_cores)"
  requests="$(engine_metric features_with after otlp_requests)"
  ratio="$(features_paired_ratio)" met="**missed** (not measured)"
  if [ -n "$ratio" ]; then
    met="$(awk -v r="$ratio" 'BEGIN {print (r <= 1.05) ? "met" : "**missed**"}')"
  fi
  cat <<EOF
## Budgets and the OpenTelemetry push: what they cost

daemon_bench at 1 M records/s for ${features_seconds} s (\`--detail all\`, 2 processes × 2
threads), this checkout's collector, ${features_rounds} round(s) of a run without and a run
with (the first of the two alternating from round to round) three budgets (\`$(features_budgets_shown)\`) and the live OTLP push
to daemon_bench's own loopback receiver (\`--otlp-sink\`). CPU is the
collector's utime + stime over the run; the cores are medians of the rounds,
the ratio the median of each round's own with / without:

\`\`\`
$(features_rounds_shown)
\`\`\`

| figure | target | without | with | with / without | met / missed |
|---|---|---:|---:|---:|---|
| collector CPU | with / without <= 1.05 | $(engine_fmt cores "$without") | $(engine_fmt cores "$with") | ${ratio:-—} | $met |
| records dropped (store / rings) | 0 | $(engine_metric features_without after dropped_store) / $(engine_metric features_without after dropped_rings) | $(engine_metric features_with after dropped_store) / $(engine_metric features_with after dropped_rings) | — | $(awk -v a="$(engine_metric features_with after dropped_store)" -v b="$(engine_metric features_with after dropped_rings)" 'BEGIN {print (a == 0 && b == 0 && a != "") ? "met" : "**missed**"}') |
| OTLP requests the receiver took | > 0 | — | ${requests:-—} | — | $(awk -v n="${requests:-0}" 'BEGIN {print (n > 0) ? "met" : "**missed**"}') |

### The runs

EOF
  local name
  for name in features_without features_with; do
    echo "#### $name"
    echo
    echo '```'
    engine_body "$name" after
    echo '```'
    echo
  done
}
