#!/bin/sh
# Install the Debian 12 Slurm 22.05 packages that the mini-cluster
# (contrib/slurm-cluster.sh) and the Slurm plugins need. Idempotent.
#
# Debian's postinst scripts start munge, slurmctld and slurmd through
# invoke-rc.d; those system daemons would hold the default ports and key and
# interfere with the private mini-cluster. During the install a policy-rc.d
# that answers 101 ("action not allowed") keeps them from starting
# (contrib/apt-install.sh, which install-deps.sh uses too). As a second
# line of defence, any munged/slurmctld/slurmd that appears during the install
# (and was not running before it) is stopped by PID.
set -eu
case ${1:-} in
-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -eq 0 ] || { echo "install-slurm.sh: takes no arguments (try --help)" >&2; exit 2; }

PKGS="slurmctld slurmd slurm-client munge libslurm-dev slurm-wlm-basic-plugins-dev
slurmdbd mariadb-server-core mariadb-client-core
iproute2 procps util-linux"

if [ "$(id -u)" -ne 0 ]; then
	echo "install-slurm.sh: run as root (it uses apt-get)" >&2
	exit 1
fi

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-slurm.sh: all packages present ($(dpkg-query -W -f='${Version}' slurmctld))"
	exit 0
fi

daemons() { # PIDs of the daemons the packages could start, one per line
	for d in munged slurmctld slurmd slurmdbd mariadbd; do pgrep -x "$d" || true; done | sort -n
}
before=$(daemons)

# shellcheck disable=SC2086
"$(dirname "$0")/apt-install.sh" install-slurm.sh $missing

# Anything the install started anyway is ours to stop, by PID.
for pid in $(daemons); do
	echo "$before" | grep -qx "$pid" && continue
	echo "install-slurm.sh: stopping $(cat "/proc/$pid/comm" 2>/dev/null) (pid $pid) started by the install"
	kill "$pid" 2>/dev/null || true
done
echo "install-slurm.sh: installed Slurm $(dpkg-query -W -f='${Version}' slurmctld)"
