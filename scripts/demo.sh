#!/usr/bin/env bash
# Sets up, builds, runs the demo inference service under leakscope, and reports what leaks.
#   scripts/demo.sh           the service in plain C++ (heap)
#   scripts/demo.sh --torch   the same service on libtorch (tensors, the c10_cpu domain)
set -euo pipefail
cd "$(dirname "$0")/.."
variant=plain
case "${1:-}" in
  "") ;;
  --torch) variant=torch ;;
  *) echo "usage: scripts/demo.sh [--torch]" >&2; exit 2 ;;
esac
scripts/install_deps.sh
scripts/build.sh
seconds="${DEMO_SECONDS:-10}"
if [ "$variant" = torch ]; then
  if [ ! -x build/bin/leakscope_demo_torch_service ]; then
    echo "scripts/demo.sh: libtorch was not found at build time, so there is no --torch demo" >&2
    exit 1
  fi
  echo "== leakscope run: the libtorch demo service for ${seconds} s (weight tensors, request activations, an output cache, one leak)"
  build/bin/leakscope run -o build/demo-torch.lsc --interval 500ms -- build/bin/leakscope_demo_torch_service --seconds "$seconds"
  echo
  echo "== leakscope report --fold torch build/demo-torch.lsc"
  build/bin/leakscope report --fold torch build/demo-torch.lsc
  exit 0
fi
echo "== leakscope run: the demo service for ${seconds} s (weights, request temporaries, an LRU cache, one leak)"
build/bin/leakscope run -o build/demo.lsc --interval 500ms -- build/bin/leakscope_demo_service --seconds "$seconds"
echo
echo "== leakscope report build/demo.lsc"
build/bin/leakscope report build/demo.lsc
