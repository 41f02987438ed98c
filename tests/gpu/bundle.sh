#!/usr/bin/env bash
# Gathers what the GPU check needs from a build into one directory to carry to a machine of
# another image, where nothing can be installed: the CLI, the preload, leakscope's Python package
# and every shared library they need beyond the C and C++ runtimes, each found through $ORIGIN
# (patchelf), so that neither needs LD_LIBRARY_PATH, which the traced programs would inherit.
#   tests/gpu/bundle.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
if ! command -v patchelf >/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get install -y -qq --no-install-recommends patchelf >/dev/null
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/cli" "$out/share/leakscope"
cp "$build/bin/leakscope" "$out/bin/"
cp "$build/lib/libleakscope.so" "$out/lib/"
cp -r "$build/share/leakscope/python" "$out/share/leakscope/"

# copy_needed BINARY DIR: the libraries BINARY needs, beyond the C and C++ runtimes, into DIR.
copy_needed() {
  ldd "$1" | awk '/=> \// {print $3}' | while read -r library; do
    case "$(basename "$library")" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libgcc_s.so.*|libstdc++.so.*) ;;
      *) cp -L "$library" "$2/" ;;
    esac
  done
}
copy_needed "$build/lib/libleakscope.so" "$out/lib"
copy_needed "$build/bin/leakscope" "$out/lib/cli"
for library in "$out"/lib/*.so* "$out"/lib/cli/*.so*; do patchelf --set-rpath '$ORIGIN' "$library"; done
patchelf --set-rpath '$ORIGIN/../lib/cli' "$out/bin/leakscope"
du -sh "$out"
