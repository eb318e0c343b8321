#!/usr/bin/env bash
# ticktrace quick start: installs what is missing (Debian 12), configures,
# builds, then runs the demo or the whole test suite.
#
#   bash .ci/quickstart.sh demo    # the three-process pipeline and its per-stage breakdown
#   bash .ci/quickstart.sh test    # the whole suite, three times over:
#                                  #   1. g++ build: every test
#                                  #   2. clang ASan+UBSan build: every test but those labelled
#                                  #      `timing` (latency bounds) and `browser` (Chromium),
#                                  #      plus the libFuzzer targets
#                                  #   3. g++ TSan build: libtrace's tests, the collector's replay
#                                  #      and live tests (its drain, analysis and store threads)
#
# Environment: BUILD_DIR (default build), JOBS (default: nproc),
# TICKTRACE_SANITIZER_PASSES=0 to run pass 1 only (for quick local iterations).
set -euo pipefail

mode="${1:-}"
case "$mode" in
  demo|test) ;;
  *) echo "usage: bash .ci/quickstart.sh demo|test" >&2; exit 2 ;;
esac
shift || true

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$root/build}"
jobs="${JOBS:-$(nproc)}"

packages=(g++ make cmake pkg-config libboost-dev libabsl-dev libgtest-dev libgmock-dev
          libbenchmark-dev libsqlite3-dev sqlite3 nlohmann-json3-dev procps zlib1g-dev
          libcurl4-openssl-dev)
if [ "$mode" = test ]; then
  # clang for the sanitizer pass and libFuzzer; chromium for the report's browser
  # test; zlib to read the PNG that test takes.
  packages+=(clang libclang-rt-14-dev chromium zlib1g-dev tmux prometheus)
  # Node.js and npm for the hlog export's independent reader (hdr-histogram-js).
  # Only when the commands are missing: a Node.js from elsewhere (NodeSource's
  # `nodejs` bundles npm and conflicts with Debian's `npm` package) already does.
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
  # The ClickHouse tests start servers of their own (temporary config, data
  # and free loopback ports: tests/support/clickhouse_server.h); a system
  # server the package may start (not in containers with policy-rc.d) is
  # neither used nor in their way.
  packages+=(clickhouse-server clickhouse-client)
  # protoc --decode_raw: the OTLP export tests decode the protobuf bodies with a
  # decoder ticktrace did not write (without it they are reported as skipped).
  packages+=(protobuf-compiler)
  # ip(8) for the tests that stand two hosts up in network namespaces.
  packages+=(iproute2)
  # jq: the wire example (examples/wire/run_wire.sh) works out the kernel's
  # share of tick-to-trade from `ticktrace-view summary --json` with it.
  packages+=(jq)
  # systemd-analyze, with which install_consumer verifies the installed unit
  # (without it that test is reported as skipped, not passed).
  packages+=(systemd)
fi

bash "$root/.ci/install-packages.sh" "${packages[@]}"

configure_and_build() {  # dir, extra cmake args... (later -D arguments win)
  local dir="$1"; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}
# Test builds keep line tables only (-g1: enough for sanitizer and gdb
# backtraces) so that CI's two cores build three trees in reasonable time; the
# sanitizer passes compile at -O1: they look for memory and threading bugs,
# not for timing.
test_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
sanitizer_flags=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1")

if [ "$mode" = demo ]; then
  echo "== building ($build_dir)"
  configure_and_build "$build_dir" -DTICKTRACE_BUILD_TESTS=OFF
  echo "== running the demo"
  exec "$build_dir/bin/ticktrace-demo" "$@"
fi

start_s=$(date +%s)
echo "== pass 1/3: g++ build ($build_dir)"
configure_and_build "$build_dir" "${test_flags[@]}" -DTICKTRACE_BUILD_TESTS=ON
ctest --test-dir "$build_dir" --output-on-failure --timeout 600 "$@"

if [ "${TICKTRACE_SANITIZER_PASSES:-1}" = 0 ]; then
  echo "== sanitizer passes skipped (TICKTRACE_SANITIZER_PASSES=0)"
  exit 0
fi

echo "== pass 2/3: clang ASan+UBSan build with fuzzers (${build_dir}-asan)"
# A unity build (source files of a target compiled together): about 0.7x the
# build time here. Pass 1 keeps the ordinary build that users get.
CC=clang CXX=clang++ configure_and_build "${build_dir}-asan" "${sanitizer_flags[@]}" \
  -DCMAKE_UNITY_BUILD=ON -DTICKTRACE_BUILD_TESTS=ON -DTICKTRACE_SANITIZE=address,undefined
# Not `timing` (latency bounds mean nothing under ASan) and not `browser`
# (Chromium is not instrumented; pass 1 runs it).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "${build_dir}-asan" --output-on-failure --timeout 600 -LE 'timing|browser' "$@"

echo "== pass 3/3: g++ TSan build: libtrace's tests and the collector's threads (${build_dir}-tsan)"
# Only what runs here is built: libtrace's tests, and the collector's replay
# (analysis and store-writer threads in-process) and live tests (the
# collector binary, built with TSan, draining real producers).
tsan_tests='^(libtrace_.*|collector_replay_test|collector_live_test)$'
cmake -S "$root" -B "${build_dir}-tsan" "${sanitizer_flags[@]}" \
  -DTICKTRACE_BUILD_TESTS=ON -DTICKTRACE_SANITIZE=thread >/dev/null
mapfile -t tsan_targets < <(ctest --test-dir "${build_dir}-tsan" -N -R "$tsan_tests" |
                            sed -n 's/^ *Test *#[0-9]*: //p')
cmake --build "${build_dir}-tsan" -j "$jobs" --target "${tsan_targets[@]}"
TSAN_OPTIONS=halt_on_error=1 \
  ctest --test-dir "${build_dir}-tsan" --output-on-failure --timeout 600 -R "$tsan_tests" "$@"
echo "== all passes green in $(( $(date +%s) - start_s )) s"
