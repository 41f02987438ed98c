#!/usr/bin/env bash
# The leak gate a CI job runs: the demo service under leakscope for a few seconds, then its
# verdicts held against limits. Exit 0 when they hold, 1 with a FAIL line per exceeded limit.
#   examples/ci/gate_demo.sh              limits from the environment (defaults below)
#   MAX_LEAKED=64MiB examples/ci/gate_demo.sh
# Expects a build in build/ (scripts/build.sh; BUILD_DIR names another). Writes demo.lsc and
# leak-gate.xml (JUnit) into build/ci/ (OUT_DIR names another).
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${BUILD_DIR:-build}"
out="${OUT_DIR:-$build/ci}"
max_leaked="${MAX_LEAKED:-8MiB}"
max_leak_rate="${MAX_LEAK_RATE:-64MiB/min}"
max_rss="${MAX_RSS:-1GiB}"
seconds="${DEMO_SECONDS:-6}"
mkdir -p "$out"
"$build/bin/leakscope" run -o "$out/demo.lsc" --interval 250ms \
  --check "max-leaked=${max_leaked},max-leak-rate=${max_leak_rate},max-rss=${max_rss},junit=$out/leak-gate.xml" \
  -- "$build/bin/leakscope_demo_service" --seconds "$seconds"
