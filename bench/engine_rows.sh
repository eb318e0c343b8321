# shellcheck shell=bash disable=SC2154  # the variables named below come from run_all.sh
# bench/engine_rows.sh — the collector engine's targets, each measured for two
# builds in the same run of bench/run_all.sh (which sources this file): the
# last commit before the engine rework (BEFORE_REF, default 3677a2b) and the
# checkout being benchmarked. Sourced, not run: it uses run_all.sh's $root,
# $tmp, $bin, $jobs, $quick, $cmake_release_args and log().
#
#   engine_build_before   extracts BEFORE_REF (git archive) into
#                         $BEFORE_DIR/src and builds its Release collector in
#                         $BEFORE_DIR/build (default $root/build-bench-before),
#                         with the same flags and ccache; BEFORE_REF=none skips it
#   engine_run            runs every engine figure for both collectors,
#                         interleaved: before, after, before, after for the
#                         short replays, before then after for the long live runs
#   engine_table          the markdown table: target, before, after, gain, met
#   engine_section        the table, what each pair is, and every run's output
#
# Every pair runs the same bench program of this checkout against the two
# collector binaries (replay_bench, visibility_bench and daemon_bench all take
# the collector's path), so both builds see the same driver, archive, rates
# and flags; only the collector differs.
#
# BEFORE_BENCHES=own: the before side runs the bench programs of BEFORE_REF
# itself (built beside its collector), and writes its own archive with its own
# replay_bench. Needed when the record layout changed between the two (an ABI
# step: a collector refuses rings of another layout), and it adds the hot
# path's figures (trace_benchmark of each build, interleaved), since libtrace
# differs too. The bench programs' command lines must be the same in both.

engine_before_ref="${BEFORE_REF:-3677a2b}"
# What the before build is, for the page.
engine_before_what="the last commit before the engine rework"
[ -n "${BEFORE_REF:-}" ] && engine_before_what="BEFORE_REF"
engine_before_dir="${BEFORE_DIR:-$root/build-bench-before}"
engine_before_bin=""
engine_before_status="not built (BEFORE_REF=none)"
engine_before_commit=""
engine_before_benches="${BEFORE_BENCHES:-}"
case "$engine_before_benches" in
  ""|own) ;;
  *) echo "engine_rows.sh: BEFORE_BENCHES=$engine_before_benches: only BEFORE_BENCHES=own is known" >&2; exit 2 ;;
esac
# The before build's bin directory when BEFORE_BENCHES=own and it built.
engine_before_benchbin=""

# Run lengths: the targets' own, or a smoke check's (QUICK=1).
if [ "$quick" = 1 ]; then
  engine_replay_records=2000000
  engine_replay_rounds=1
  engine_live_seconds=10
  engine_restart_minutes=0.5
  engine_visibility_args=(--seconds 2 --orders-per-ms 16 --inflight 200000)
  engine_hotpath_rounds=1
  engine_hotpath_repetitions=1
else
  engine_replay_records=20000000
  engine_replay_rounds=3
  engine_live_seconds=60
  # RESTART_MINUTES: a shorter restart run when the whole page is not wanted
  # (the row names its minutes).
  engine_restart_minutes="${RESTART_MINUTES:-10}"
  engine_visibility_args=(--seconds 5 --orders-per-ms 16 --inflight 1000000)
  engine_hotpath_rounds=3
  engine_hotpath_repetitions=3
fi
# Rings of about 1 s for the restart: 4 producer threads at 1 M records/s
# write 250 k records/s each, and a ring is a power of two: 2^18 = 1.05 s.
engine_restart_ring_records=262144

engine_build_before() {
  [ "$engine_before_ref" = none ] && return 0
  if ! engine_before_commit="$(git -C "$root" rev-parse --verify --quiet "$engine_before_ref^{commit}")"; then
    engine_before_status="BEFORE_REF=$engine_before_ref is not a commit of $root"
    log "$engine_before_status: no before figures"
    return 0
  fi
  local src="$engine_before_dir/src" build="$engine_before_dir/build"
  # Extracted once per commit: the files keep their times, so a second run's
  # build is incremental.
  if [ "$(cat "$src/.ticktrace-ref" 2>/dev/null)" != "$engine_before_commit" ]; then
    log "extracting $engine_before_ref into $src"
    rm -rf "$src"
    mkdir -p "$src"
    git -C "$root" archive "$engine_before_commit" | tar -x -C "$src"
    echo "$engine_before_commit" >"$src/.ticktrace-ref"
  fi
  mkdir -p "$build"
  local targets=(ticktrace-collector)
  [ "$engine_before_benches" = own ] && targets+=(replay_bench visibility_bench daemon_bench trace_benchmark)
  log "building the before build's ${targets[*]} ($engine_before_ref) in $build"
  if cmake -S "$src" -B "$build" "${cmake_release_args[@]}" >"$build/run_all.configure.log" 2>&1 &&
     cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$build/run_all.build.log" 2>&1; then
    engine_before_bin="$build/bin/ticktrace-collector"
    engine_before_status="built"
    [ "$engine_before_benches" = own ] && engine_before_benchbin="$build/bin"
  else
    engine_before_status="did not build (see $build/run_all.build.log)"
    log "before collector $engine_before_status"
  fi
}

# engine_one NAME SIDE ROUND LIMIT PROGRAM ARGS...: one run of a bench
# program against SIDE's collector (the word COLLECTOR in ARGS is replaced by
# its path, WORKDIR by a directory of this run's own, removed after it, ARCHIVE
# by SIDE's archive), output in $tmp/engine/NAME.SIDE.ROUND.txt. With
# BEFORE_BENCHES=own, a PROGRAM in $bin runs from the before build on its side.
engine_one() {
  local name="$1" side="$2" round="$3" limit="$4"
  shift 4
  local collector="$bin/ticktrace-collector"
  if [ "$side" = before ]; then
    [ -n "$engine_before_bin" ] || return 0
    collector="$engine_before_bin"
  fi
  local out="$tmp/engine/$name.$side.$round" work="$tmp/engine-work/$name.$side.$round"
  local args=() a
  for a in "$@"; do
    case "$a" in
      COLLECTOR) args+=("$collector") ;;
      WORKDIR) args+=("$work") ;;
      ARCHIVE) args+=("$(engine_archive "$side")") ;;
      "$bin"/*)
        if [ "$side" = before ] && [ -n "$engine_before_benchbin" ]; then
          args+=("$engine_before_benchbin/${a#"$bin"/}")
        else
          args+=("$a")
        fi ;;
      *) args+=("$a") ;;
    esac
  done
  mkdir -p "$tmp/engine" "$work"
  log "engine: $name ($side collector, round $round)"
  local rc=0
  timeout "$limit" "${args[@]}" >"$out.txt" 2>"$out.err" || rc=$?
  [ "$name" = hotpath ] && engine_hotpath_metrics "$out.txt"
  if [ "$rc" -ne 0 ]; then
    log "engine: $name ($side) exited with $rc"
    tail -3 "$out.err" >&2 || true
    echo "NOTE|exit status $rc: $(tail -1 "$out.err" 2>/dev/null | tr '|' ' ')" >>"$out.txt"
  fi
  rm -rf "$work"
}

# engine_pair NAME ROUNDS LIMIT PROGRAM ARGS...: ROUNDS rounds of before, after.
engine_pair() {
  local name="$1" rounds="$2" limit="$3" r
  shift 3
  for r in $(seq "$rounds"); do
    engine_one "$name" before "$r" "$limit" "$@"
    engine_one "$name" after "$r" "$limit" "$@"
  done
}

# engine_archive SIDE: the archive SIDE replays: one for both, or each its own
# when the before side runs its own bench programs (its own record layout).
engine_archive() {
  if [ "$1" = before ] && [ -n "$engine_before_benchbin" ]; then
    echo "$tmp/engine-replay.before.raw"
  else
    echo "$tmp/engine-replay.raw"
  fi
}

# engine_hotpath_metrics FILE: trace_benchmark's summary in FILE as METRIC
# lines (median ns/op per benchmark, and the interleaved stamp/floor ratios).
engine_hotpath_metrics() {
  awk '
    /^benchmark +mean ns\/op/ {on = 1; next}
    on && NF == 0 {on = 0}
    on && NF >= 5 {printf "METRIC|%s_median_ns|%s\n", $1, $4}
    /^stamp \/ floor \(interleaved batches, medians\)/ {split($0, a, ":"); split(a[2], b, " ");
      printf "METRIC|stamp_floor_median_ratio|%s\n", b[1]}
    /^stamp \/ floor \(interleaved batches, means\)/ {split($0, a, ":"); split(a[2], b, " ");
      printf "METRIC|stamp_floor_mean_ratio|%s\n", b[1]}' "$1" >>"$1.metrics" 2>/dev/null || true
  cat "$1.metrics" >>"$1" 2>/dev/null || true
  rm -f "$1.metrics"
}

engine_run() {
  local side
  mkdir -p "$tmp/engine"
  for side in after before; do
    [ "$side" = before ] && [ -z "$engine_before_benchbin" ] && continue
    local writer="$bin/replay_bench"
    [ "$side" = before ] && writer="$engine_before_benchbin/replay_bench"
    log "engine: writing a $engine_replay_records-record archive ($side build's replay_bench)"
    if ! "$writer" --archive "$(engine_archive "$side")" --write-only --records "$engine_replay_records" \
        >"$tmp/engine/archive.$side.txt" 2>&1; then
      log "engine: the $side archive was not written: $(tail -1 "$tmp/engine/archive.$side.txt")"
    fi
  done
  # The hot path, only when each side has its own libtrace to measure.
  if [ -n "$engine_before_benchbin" ]; then
    engine_pair hotpath "$engine_hotpath_rounds" 900 "$bin/trace_benchmark" \
        --benchmark_repetitions="$engine_hotpath_repetitions"
  fi
  local rb=("$bin/replay_bench" --collector COLLECTOR --archive ARCHIVE --dir WORKDIR)
  engine_pair replay_off "$engine_replay_rounds" 900 "${rb[@]}" --store off
  engine_pair replay_sqlite_all "$(( (engine_replay_rounds + 1) / 2 ))" 1800 "${rb[@]}" --store sqlite --detail all
  engine_pair replay_sqlite_tail "$(( (engine_replay_rounds + 1) / 2 ))" 1800 "${rb[@]}" --store sqlite --detail tail
  engine_pair replay_clickhouse_all 1 1800 "${rb[@]}" --store clickhouse --detail all
  for side in after before; do
    rm -f "$(engine_archive "$side")" "$(engine_archive "$side").records"
  done
  engine_pair visibility 1 600 "$bin/visibility_bench" --collector COLLECTOR \
      "${engine_visibility_args[@]}" --tmpdir WORKDIR
  local db=("$bin/daemon_bench" --collector COLLECTOR --seconds "$engine_live_seconds" --tmpdir WORKDIR)
  engine_pair live_1m_all 1 1200 "${db[@]}" --rate 1000000 --detail all --restart-minutes none
  engine_pair live_1m_tail 1 1200 "${db[@]}" --rate 1000000 --detail tail --restart-minutes none
  engine_pair live_5m_tail 1 1200 "${db[@]}" --rate 5000000 --detail tail --ring-records 1048576 \
      --restart-minutes none
  engine_pair restart 1 "$(awk -v m="$engine_restart_minutes" 'BEGIN {printf "%d", m * 60 + 900}')" \
      "${db[@]}" --skip-sustained --restart-rate 1000000 --restart-minutes "$engine_restart_minutes" \
      --ring-records "$engine_restart_ring_records"
}

# engine_metric NAME SIDE METRIC: the median over the rounds of METRIC, or "".
engine_metric() {
  local f
  for f in "$tmp/engine/$1.$2".*.txt; do
    [ -f "$f" ] && awk -F'|' -v n="$3" '$1 == "METRIC" && $2 == n {print $3; exit}' "$f"
  done | sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# engine_why NAME SIDE: why NAME has no figure for SIDE (its NOTE lines, a skip).
engine_why() {
  local f notes=""
  if [ "$2" = before ] && [ -z "$engine_before_bin" ]; then
    echo "before collector $engine_before_status"
    return
  fi
  for f in "$tmp/engine/$1.$2".*.txt; do
    [ -f "$f" ] || continue
    notes+="$(grep -m2 '^NOTE|' "$f" | cut -d'|' -f2- | tr '\n' ' ')"
  done
  echo "${notes:-not measured: no figure in its output}"
}

# fmt KIND VALUE: a figure as shown. KIND: M (millions), s, ms, cores, pct, B, MB, n.
engine_fmt() {
  [ -n "$2" ] || { echo ""; return; }
  case "$1" in
    M) awk -v v="$2" 'BEGIN {printf "%.2f M", v / 1e6}' ;;
    s) awk -v v="$2" 'BEGIN {printf "%.2f s", v}' ;;
    ms) awk -v v="$2" 'BEGIN {printf "%.1f ms", v}' ;;
    cores) awk -v v="$2" 'BEGIN {printf "%.2f cores", v}' ;;
    pct) awk -v v="$2" 'BEGIN {printf "%+.1f %%", v}' ;;
    B) awk -v v="$2" 'BEGIN {printf "%.0f B", v}' ;;
    MB) awk -v v="$2" 'BEGIN {printf "%.1f MB", v}' ;;
    n) awk -v v="$2" 'BEGIN {printf "%.0f", v}' ;;
    ns) awk -v v="$2" 'BEGIN {printf "%.2f ns", v}' ;;
    x) awk -v v="$2" 'BEGIN {printf "%.3f", v}' ;;
  esac
}

# engine_row FIGURE TARGET KIND DIRECTION OP LIMIT NAME METRIC [DETAIL]: one
# table row from NAME's METRIC for both builds. DIRECTION: up (more is better:
# gain = after / before), down (gain = before / after) or none (no gain shown).
# OP LIMIT: the target, checked on the after figure (ge, le, eq).
engine_row() {
  local figure="$1" target="$2" kind="$3" dir="$4" op="$5" limit="$6" name="$7" metric="$8" detail="${9:-}"
  local b a bs as gain met
  b="$(engine_metric "$name" before "$metric")"
  a="$(engine_metric "$name" after "$metric")"
  bs="$(engine_fmt "$kind" "$b")"
  as="$(engine_fmt "$kind" "$a")"
  [ -n "$b" ] || bs="— ($(engine_why "$name" before))"
  gain="—"
  if [ -n "$a" ] && [ -n "$b" ] && [ "$dir" != none ]; then
    gain="$(awk -v a="$a" -v b="$b" -v d="$dir" 'BEGIN {
      n = (d == "up") ? a : b; m = (d == "up") ? b : a
      if (m == 0) print (n == 0) ? "1.00×" : "∞"; else printf "%.2f×", n / m}')"
  fi
  if [ -z "$a" ] && [ "$(engine_metric "$name" after skipped)" = 1 ]; then
    as="skipped"
    met="skipped: $(engine_why "$name" after)"
  elif [ -z "$a" ]; then
    as="not measured"
    met="**missed** ($(engine_why "$name" after))"
  elif [ "$op" = none ] || [ "$op" = near ]; then
    met="— (shown beside the row above)"
  else
    met="$(awk -v v="$a" -v l="$limit" -v op="$op" 'BEGIN {
      ok = (op == "ge") ? v >= l : (op == "le") ? v <= l : v == l
      print ok ? "met" : "**missed**"}')"
  fi
  # near: within LIMIT (a fraction) of the before figure, either way.
  if [ "$op" = near ] && [ -n "$a" ]; then
    if [ -z "$b" ]; then
      met="— (no before figure)"
    else
      met="$(awk -v a="$a" -v b="$b" -v l="$limit" 'BEGIN {
        d = (b == 0) ? 0 : a / b - 1; if (d < 0) d = -d
        printf "%s (%+.1f %%)", (d <= l) ? "met" : "**missed**", (b == 0) ? 0 : (a / b - 1) * 100}')"
    fi
  fi
  echo "| $figure | $target | $bs | $as | $gain | $met | $detail |"
}

# engine_count_row FIGURE TARGET NAME GOOD_EXPR TEXT_EXPR DETAIL: a row judged
# on several metrics of one run: GOOD_EXPR and TEXT_EXPR are awk expressions
# over the metrics (as variables, "" when absent).
engine_count_row() {
  local figure="$1" target="$2" name="$3" good="$4" text="$5" detail="${6:-}"
  local side cells=() oks=()
  for side in before after; do
    local vars=() m
    for m in written orders_written dropped_store dropped_rings orders_complete orders_stored \
             orders_not_stored restart_dropped_rings restart_dropped_before_kill \
             restart_dropped_after_kill restart_dropped_store achieved_rate; do
      vars+=(-v "$m=$(engine_metric "$name" "$side" "$m")")
    done
    if [ -z "$(engine_metric "$name" "$side" "${7:-written}")" ]; then
      cells+=("")
      oks+=("")
      continue
    fi
    cells+=("$(awk "${vars[@]}" "BEGIN {print $text}")")
    oks+=("$(awk "${vars[@]}" "BEGIN {print ($good) ? \"met\" : \"**missed**\"}")")
  done
  local bs="${cells[0]}" as="${cells[1]}" met="${oks[1]}"
  [ -n "$bs" ] || bs="— ($(engine_why "$name" before))"
  if [ -z "$as" ]; then
    as="not measured"
    met="**missed** ($(engine_why "$name" after))"
  fi
  echo "| $figure | $target | $bs | $as | — | $met | $detail |"
}

engine_table() {
  local live="${engine_live_seconds} s" rmin="$engine_restart_minutes min" early
  early="$(engine_metric live_1m_all after rss_early_s)"
  [ -n "$early" ] || early="$(engine_metric live_1m_all before rss_early_s)"
  [ -n "$early" ] || early="$(awk -v s="$engine_live_seconds" 'BEGIN {print s / 3}')"
  echo "| figure | target | before | after | gain | met / missed | detail |"
  echo "|---|---|---:|---:|---:|---|---|"
  engine_row "replay, store off: records per CPU-second (whole collector process)" ">= 25 M" M up ge 25e6 \
    replay_off records_per_cpu_s "a $(engine_fmt M "$engine_replay_records")-record archive; $engine_replay_rounds round(s) each, median"
  engine_row "replay, store off: records per second, wall" "(beside it)" M up none 0 \
    replay_off records_per_s "same runs"
  engine_row "replay into SQLite, \`--detail all\`: samples/s, wall (the store's \`samples\`, \`total\` included)" ">= 3 M" M up ge 3e6 \
    replay_sqlite_all samples_per_s "until the collector exits after its last commit"
  engine_row "replay into SQLite, \`--detail tail\`: samples/s, wall" ">= 10 M" M up ge 10e6 \
    replay_sqlite_tail samples_per_s ""
  engine_row "replay into ClickHouse (server on this machine), \`--detail all\`: samples/s, wall" ">= 3 M" M up ge 3e6 \
    replay_clickhouse_all samples_per_s "the server shares the cores"
  engine_count_row "live 1 M records/s, $live, \`--detail all\`: records dropped (store / rings)" "0" live_1m_all \
    'dropped_store == 0 && dropped_rings == 0' 'dropped_store " / " dropped_rings' \
    "2 processes × 2 threads, rings of 1 Mi"
  engine_count_row "live 1 M records/s, $live, \`--detail all\`: every order's detail stored" "all stored, 0 not stored" live_1m_all \
    'orders_stored == orders_written && orders_not_stored == 0' \
    'orders_stored " of " orders_written " stored, " orders_not_stored " not stored"' ""
  engine_row "live 1 M records/s, $live, \`--detail all\`: store behind the producers, max" "<= 2 s" s down le 2 \
    live_1m_all max_lag_s "store counters polled every 200 ms"
  engine_row "live 1 M records/s, $live, \`--detail all\`: collector CPU" "<= 0.35 core" cores down le 0.35 \
    live_1m_all cpu_cores "utime + stime over the run"
  engine_row "live 1 M records/s, $live, \`--detail tail\`: collector CPU" "<= 0.15 core" cores down le 0.15 \
    live_1m_tail cpu_cores ""
  engine_count_row "live 5 M records/s, $live, \`--detail tail\`: records dropped (store / rings)" "0" live_5m_tail \
    'dropped_store == 0 && dropped_rings == 0' 'dropped_store " / " dropped_rings' \
    "4 threads in 2 processes, rings of 1 Mi"
  engine_count_row "live 5 M records/s, $live, \`--detail tail\`: every order stitched" "all" live_5m_tail \
    'orders_complete == orders_written' 'orders_complete " of " orders_written' "\`orders_complete\`"
  engine_row "live 5 M records/s, $live, \`--detail tail\`: store behind the producers, max" "<= 2 s" s down le 2 \
    live_5m_tail max_lag_s ""
  engine_row "RSS growth from $(engine_fmt n "$early") s to the end of the live 1 M records/s run" "<= +5 %" pct none le 5 \
    live_1m_all rss_growth_pct "VmRSS; \`--detail all\`"
  engine_row "memory per order in flight (peak RSS above idle)" "<= 150 B" B down le 150 \
    visibility bytes_per_order_in_flight "visibility_bench: ${engine_visibility_args[*]}"
  engine_row "journal on disk at 1 M records/s (st_blocks × 512), max over the run" "<= 128 MB" MB down le 128 \
    live_1m_all journal_max_mb "sampled every 200 ms; \`--detail all\`"
  engine_row "restart after $rmin at 1 M records/s: collector start to its first drained record" "<= 1 s" s down le 1 \
    restart restart_drains_s "SIGKILL, same command again; the rings' read indices seen moving (20 ms polls)"
  engine_count_row "restart after $rmin at 1 M records/s, rings of about 1 s ($engine_restart_ring_records records): records dropped" "0" restart \
    'restart_dropped_rings == 0 && restart_dropped_store <= 0' \
    'restart_dropped_rings " (" restart_dropped_before_kill " before the kill, " restart_dropped_after_kill " after)"' \
    "the rings' own drop counters over the whole run" restart_dropped_rings
  engine_row "order visible in the store after its last stamp, p99" "<= 1 s" ms down le 1000 \
    visibility visible_p99_ms "visibility_bench, 16 orders/ms, store polled every 2 ms"
  if [ -n "$engine_before_benchbin" ]; then
    local hp="trace_benchmark of each build, $engine_hotpath_rounds interleaved round(s) of $engine_hotpath_repetitions repetitions, median"
    engine_row "hot path: \`stamp\` / floor, medians of interleaved batches" "unchanged (within 5 %)" x down near 0.05 \
      hotpath stamp_floor_median_ratio "$hp; the floor is the same code in both builds"
    engine_row "hot path: \`stamp\`, median ns/op" "unchanged (within 5 %)" ns down near 0.05 \
      hotpath stamp_median_ns ""
    engine_row "hot path: \`Span\` begin + end, median ns/op" "unchanged (within 5 %)" ns down near 0.05 \
      hotpath span_median_ns ""
    engine_row "hot path: floor (rdtsc + one store, no library code), median ns/op" "(the machine)" ns down none 0 \
      hotpath floor_median_ns ""
    engine_row "hot path: \`stamp_at\` (time given by another clock), median ns/op" "(new)" ns down none 0 \
      hotpath stamp_at_median_ns ""
  fi
}

# The run's output of NAME for SIDE, every round, without its METRIC/TARGET/NOTE lines.
engine_body() {
  local f
  for f in "$tmp/engine/$1.$2".*.txt; do
    [ -f "$f" ] || continue
    grep -v '^METRIC|\|^TARGET|\|^NOTE|\|^Machine:' "$f" || true
  done
}

engine_section() {
  local engine_drivers_text="Both are driven by this checkout's bench
programs (so both see the same driver, archive, rates and flags; only the collector differs):"
  if [ -n "$engine_before_benchbin" ]; then
    engine_drivers_text="Each side runs its own build's bench programs
(BEFORE_BENCHES=own: the record layout differs between the two, so each side writes its
archive with its own replay_bench and drives its collector with its own daemon_bench and
visibility_bench; the command lines are the same), and the hot path rows time each build's
own libtrace with its own trace_benchmark, before and after interleaved:"
  fi
  local before_name="\`$engine_before_ref\`"
  [ -n "$engine_before_commit" ] && before_name="\`$engine_before_ref\` (${engine_before_commit:0:12})"
  cat <<EOF
## Collector engine: every target, before and after, in this run

Each row is one figure measured twice in this run: "before" with the
collector of $before_name, $engine_before_what
(a Release build this script made in \`${engine_before_dir#"$root"/}/build\`:
$engine_before_status), "after" with the collector of this checkout. $engine_drivers_text
replay_bench replays an archive (3
processes, whole orders of 4 records, ids counting up so every emitted order
lingers and leaves its id behind; collector_bench's shape) through the
collector binary, \`--replay ARCHIVE --pipeline md_rx,decide,order_sent\`;
visibility_bench and daemon_bench start the collector binary they are given.
The replays alternate before, after, before, after (figures: medians of the
rounds); the live runs are before, then after. "gain" is after over before
where more is better and before over after where less is better (×). "met"
is judged on the after figure; a missed row shows its figure.

$(engine_table)

### The runs

EOF
  local name side
  local names=(replay_off replay_sqlite_all replay_sqlite_tail replay_clickhouse_all visibility
               live_1m_all live_1m_tail live_5m_tail restart)
  [ -n "$engine_before_benchbin" ] && names=(hotpath "${names[@]}")
  for name in "${names[@]}"; do
    for side in before after; do
      echo "#### $name — $side"
      echo
      if [ "$name" = "${name#replay}" ]; then
        engine_body "$name" "$side"
      else
        echo '```'
        engine_body "$name" "$side"
        echo '```'
      fi
      echo
    done
  done
}
