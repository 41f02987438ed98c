#!/usr/bin/env bash
# Installs the build into a scratch prefix and checks that the installed CLI finds the installed
# preload and that the pkg-config file, the CMake package and the Python package are where users
# look for them.
#   install_test.sh BUILD_DIR SCRATCH_DIR
set -euo pipefail
build="$1"
prefix="$2/prefix"
rm -rf "$2" && mkdir -p "$2"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(cd "$prefix" && dirname "$(find . -name libleakscope.so -type f | head -1)")
test -x "$prefix/bin/leakscope"
test -f "$prefix/include/leakscope/leakscope.h"
test -f "$prefix/$libdir/pkgconfig/leakscope.pc"
test -f "$prefix/$libdir/cmake/leakscope/leakscopeConfig.cmake"
test -f "$prefix/$libdir/cmake/leakscope/leakscopeTargets.cmake"
PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --libs leakscope | grep -q -- "-lleakscope_api"
test -f "$prefix/share/leakscope/python/sitecustomize.py"
site=$(find "$prefix" -path '*-packages/leakscope/__init__.py' | head -1)
test -n "$site"
PYTHONPATH=$(dirname "$(dirname "$site")") python3 -c "import leakscope; assert not leakscope.active()"
"$prefix/bin/leakscope" run -o "$2/true.lsc" -- true
"$prefix/bin/leakscope" dump "$2/true.lsc" >/dev/null
echo "installed tree works"
