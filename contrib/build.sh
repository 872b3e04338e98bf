#!/bin/sh
# Configure and build topoplace into BUILD_DIR (default: build/) with
# warnings as errors. Extra arguments go to configure.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
cd "$top"
[ -x configure ] && [ -f build-aux/tap-driver.sh ] || ./autogen.sh >/dev/null
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt Makefile ]; then
	"$top/configure" --enable-werror "$@"
fi
make -j"$(nproc)"
