#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (unit, integration, docs) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
