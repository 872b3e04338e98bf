#!/bin/sh
# Regenerate the build system from configure.ac / Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p build-aux
autoreconf -fi
# automake does not install its test drivers when LOG_DRIVER is set by hand.
amdir=$(automake --print-libdir)
cp -f "$amdir/tap-driver.sh" "$amdir/test-driver" build-aux/
