#!/bin/sh
# Install every Debian 12 package topoplace needs to build and test.
# Used by both README quick-start commands and by CI. Idempotent.
#
# opensm is there for the tests, which run their own on a simulated fabric
# (contrib/ibsim-run.sh). Debian's package would start a subnet manager on
# every InfiniBand port of this host now and at every boot, and on a node
# of a real fabric it could take over as master: contrib/apt-install.sh
# keeps it from starting during the install (a policy-rc.d answering 101,
# as for install-slurm.sh's daemons), and a newly installed opensm.service
# is disabled afterwards.
set -eu
case ${1:-} in
-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -eq 0 ] || { echo "install-deps.sh: takes no arguments (try --help)" >&2; exit 2; }

PKGS="build-essential autoconf automake libtool pkg-config git
libcjson-dev libcmocka-dev libhwloc-dev hwloc libhwloc-plugins
libibnetdisc-dev libibumad-dev libibmad-dev infiniband-diags
ibsim-utils libumad2sim0 opensm
clang libclang-rt-14-dev valgrind
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
# shellcheck disable=SC2086
"$(dirname "$0")/apt-install.sh" install-deps.sh $missing
case " $missing " in
*" opensm "*)
	# not at boot either (the tests start their own)
	deb-systemd-helper disable opensm.service >/dev/null 2>&1 || true
	update-rc.d opensm disable >/dev/null 2>&1 || true
	echo "install-deps.sh: opensm installed for the tests, its service left disabled"
	;;
esac
