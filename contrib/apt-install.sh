#!/bin/sh
# Install Debian packages without starting their services: the helper of
# install-deps.sh and install-slurm.sh (root).
#   apt-install.sh NAME PKG...   (NAME: the calling script, for messages)
# A policy-rc.d that answers 101 ("action not allowed") keeps the packages'
# postinst scripts from starting daemons (munge, slurmctld, opensm, ...);
# it is only put in place when the machine has none, and removed after.
# apt-get update runs at most every 6 hours (a stamp), and apt waits up to
# 300 s for the dpkg lock (apt-daily on a freshly booted machine).
set -eu
[ $# -ge 2 ] || { echo "apt-install.sh: usage: apt-install.sh NAME PKG..." >&2; exit 2; }
name=$1
shift

policy=/usr/sbin/policy-rc.d
ours=""
cleanup() { [ -z "$ours" ] || rm -f "$policy"; }
trap cleanup EXIT
trap 'cleanup; exit 1' INT TERM HUP
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# temporary, contrib/%s\nexit 101\n' "$name" >"$policy"
	chmod 755 "$policy"
	ours=1
fi

export DEBIAN_FRONTEND=noninteractive
lock="-o DPkg::Lock::Timeout=300"
stamp=/var/lib/apt/periodic/topoplace-update-stamp
if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +360 2>/dev/null)" ]; then
	# shellcheck disable=SC2086
	apt-get $lock update -q
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
# shellcheck disable=SC2086
apt-get $lock install -y -q --no-install-recommends "$@"
