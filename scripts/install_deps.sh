#!/usr/bin/env bash
# Installs the Debian 12 packages leakscope needs to build, test and benchmark, skipping those
# already present (so a prepared machine needs no network).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config binutils
  libunwind-dev        # stack capture in the preload
  libdw-dev libelf-dev # offline symbolization in the CLI
  libfmt-dev nlohmann-json3-dev libcli11-dev
  libprotobuf-dev protobuf-compiler  # export --pprof (profile.proto)
  libcpp-httplib-dev   # serve, run --prometheus: the /metrics endpoint
  libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev           # integration test: a leak inside a system library (zlib)
  golang-go            # integration tests: go tool pprof reads the exported profile; a Go front end calling C
  chromium             # integration test: the exported HTML page rendered headless
  prometheus curl      # integration test: a real Prometheus server scrapes the endpoint
  libjemalloc2 libtcmalloc-minimal4 libgoogle-perftools4 libmimalloc2.0  # integration tests: allocators preloaded below leakscope
  heaptrack            # benchmark peer
  python3              # a real program in the integration tests; the benchmark runner
  python3-pytest       # integration test: the pytest plugin on a real suite
  python3-uvloop       # integration test: tasks followed on uvloop's event loop
  clang libclang-rt-14-dev  # the stream reader's libFuzzer target
  libtorch-dev python3-torch  # PyTorch c10 attribution tests on the real library
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "leakscope: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
