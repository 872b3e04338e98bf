#!/bin/sh
# Configure and build topoplace into BUILD_DIR (default: build/) with
# warnings as errors. Extra arguments go to configure (`./configure --help`
# lists them); --help first prints this. An already configured BUILD_DIR
# is configured again when configure is newer or the arguments differ from
# those it was configured with.
set -eu
case ${1:-} in
-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
cd "$top"
[ -x configure ] && [ -f build-aux/tap-driver.sh ] || ./autogen.sh >/dev/null
mkdir -p "$build"
cd "$build"

# The variables configure takes from the environment (CC, CFLAGS...), one a line.
precious() {
	"$top/configure" --help | awk '/^Some influential environment variables:/ { p = 1; next }
		p && /^$/ { exit }
		p && /^  [A-Za-z_][A-Za-z0-9_]*( |$)/ { print $1 }'
}
# ARG...: what `config.status --config` will print for `configure ARG...`,
# one argument a line: the arguments less those configure does not record,
# then each precious variable set in the environment and not given as an
# argument, as VAR=VALUE.
recorded_as() {
	for a; do
		case $a in -q | --quiet | --silent | --no-create | --no-recursion) ;; *) printf '%s\n' "$a" ;; esac
	done
	for v in $(precious); do
		[ "$v" != CCC ] || continue
		eval "[ -n \"\${$v+set}\" ]" || continue
		val=
		eval "val=\${$v}"
		va=$v=$val
		for a; do [ "$a" != "$va" ] || continue 2; done
		printf '%s\n' "$va"
	done
}
# LINE: the arguments in LINE (quoted as config.status --config prints
# them), one a line, less the *_alias= (and CCC=) configure adds for
# --build/--host/--target on its own: --help does not list them, so
# recorded_as cannot, and they follow from the arguments
split_args() {
	eval "set -- $1"
	for a; do
		case $a in build_alias=* | host_alias=* | target_alias=* | CCC=*) ;; *) printf '%s\n' "$a" ;; esac
	done
}

if [ ! -f Makefile ] || [ ! -f config.status ] || [ "$top/configure" -nt Makefile ] ||
	[ "$(split_args "$(./config.status --config 2>/dev/null)")" != "$(recorded_as --enable-werror "$@")" ]; then
	"$top/configure" --enable-werror "$@"
fi
make -j"$(nproc)"
