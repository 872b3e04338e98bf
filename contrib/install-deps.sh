#!/bin/sh
# Install every Debian 12 package topoplace needs to build and test.
# Used by both README quick-start commands and by CI. Idempotent.
set -eu

PKGS="build-essential autoconf automake libtool pkg-config git
libcjson-dev libcmocka-dev libhwloc-dev hwloc
libibnetdisc-dev libibumad-dev libibmad-dev infiniband-diags
ibsim-utils libumad2sim0 opensm
clang libclang-rt-14-dev
procps iproute2 util-linux jq
iputils-ping bc g++ openmpi-bin libopenmpi-dev libgloo-dev
librsvg2-bin python3 python3-torch"

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: run as root (it uses apt-get)" >&2
	exit 1
fi

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps.sh: all packages present"
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/apt/periodic/topoplace-update-stamp
if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +360 2>/dev/null)" ]; then
	apt-get update -q
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
