#!/usr/bin/env bash
# Sets up, builds, runs the demo inference service under leakscope, and reports what leaks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
seconds="${DEMO_SECONDS:-10}"
echo "== leakscope run: the demo service for ${seconds} s (weights, request temporaries, an LRU cache, one leak)"
build/bin/leakscope run -o build/demo.lsc --interval 500ms -- build/bin/leakscope_demo_service --seconds "$seconds"
echo
echo "== leakscope report build/demo.lsc"
build/bin/leakscope report build/demo.lsc
