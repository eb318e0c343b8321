#!/usr/bin/env bash
# ticktrace quick start: installs what is missing (Debian 12), configures,
# builds, then runs the demo or the whole test suite.
#
#   bash .ci/quickstart.sh demo    # the three-process pipeline and its per-stage breakdown
#   bash .ci/quickstart.sh test    # the whole suite (normal build, then ASan+UBSan)
#
# Environment: BUILD_DIR (default build), JOBS (default: nproc).
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
          libbenchmark-dev libsqlite3-dev sqlite3 nlohmann-json3-dev procps)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

configure_and_build() {  # dir, extra cmake args...
  local dir="$1"; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

if [ "$mode" = demo ]; then
  echo "== building ($build_dir)"
  configure_and_build "$build_dir" -DTICKTRACE_BUILD_TESTS=OFF
  echo "== running the demo"
  exec "$build_dir/bin/ticktrace-demo" "$@"
fi

echo "== building ($build_dir)"
configure_and_build "$build_dir" -DTICKTRACE_BUILD_TESTS=ON
echo "== test suite"
ctest --test-dir "$build_dir" --output-on-failure --timeout 600 "$@"
