#!/usr/bin/env bash
# Builds the fuzz target with clang and fuzzes the stream reader for SECONDS, starting from the
# committed corpus (copied, so the corpus in the tree only changes by hand). Fails on any crash.
#   run_fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "$1" && pwd)/fuzz"
seconds="$2"
cmake -S "$here" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" >/dev/null
work="$build/corpus"
rm -rf "$work" && mkdir -p "$work"
cp "$here"/corpus/* "$work"/
cd "$build"
./stream_reader_fuzz "$work" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=1024 2>&1 | tail -3
