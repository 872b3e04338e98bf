#!/bin/sh
# Fetch the Slurm source tree matching the installed (or a given) Debian
# slurm-wlm version, for building the controller plugins.
#
#   contrib/fetch-slurm-src.sh [VERSION] [DIR]
#
# VERSION  Debian version of slurm-wlm ("22.05.8-4+deb12u3"); default: the
#          installed slurmctld / libslurm-dev package. A bare upstream
#          version ("22.05.8") takes whatever Debian revision the mirror has.
# DIR      where the tree goes; default
#          ${TP_SLURM_SRC_CACHE:-/var/cache/topoplace}/slurm-<upstream version>
# TP_DEBIAN_SUITE   default: this system's codename (bookworm)
# TP_DEBIAN_MIRROR  default: the mirror apt uses for that suite
#                   (contrib/debian-mirror.sh); its security suite comes
#                   from the entry for SUITE-security, or with
#                   TP_DEBIAN_MIRROR from its /debian-security sibling
#
# topology and job_submit plugins include slurmctld's private headers and
# must match the daemon's major.minor.micro exactly, so the tree is the
# Debian source package of that version, taken from Debian's mirror through
# a private deb-src list (the system's apt configuration is not touched).
# No ./configure: the two-line config.h written here preprocesses like a
# configured tree. Idempotent; works offline once fetched. Prints DIR.
set -eu

me=fetch-slurm-src.sh
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "$me: $*" >&2; exit 1; }
usage_error() { echo "$me: $*" >&2; exit 2; }

for a; do
	case $a in
	-h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
	-*) usage_error "unknown option '$a' (try --help)" ;;
	esac
done
[ $# -le 2 ] || usage_error "at most VERSION and DIR (try --help)"

VERSION=${1:-}
if [ -z "$VERSION" ]; then
	for p in slurmctld libslurm-dev slurm-client; do
		VERSION=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
		[ -n "$VERSION" ] && break
	done
	[ -n "$VERSION" ] || die "no installed Slurm package found; give VERSION (e.g. 22.05.8-4+deb12u3)"
fi
# upstream part: drop epoch and Debian revision
UPSTREAM=${VERSION#*:}
UPSTREAM=${UPSTREAM%%-*}
case $UPSTREAM in
[0-9]*.[0-9]*.[0-9]*) ;;
*) die "cannot read an upstream version from '$VERSION'" ;;
esac
CACHE=${TP_SLURM_SRC_CACHE:-/var/cache/topoplace}
DIR=${2:-$CACHE/slurm-$UPSTREAM}

have_tree() {
	[ -f "$1/src/common/slurm_xlator.h" ] && [ -f "$1/slurm/slurm.h" ] &&
		[ -f "$1/config.h" ] &&
		grep -q "^ *Version:[[:space:]]*$UPSTREAM\$" "$1/META"
}

write_config_h() {
	[ -f "$1/config.h" ] && return 0
	cat >"$1/config.h.tmp" <<'EOF'
#define USE_ALIAS 1
#define NDEBUG 1
EOF
	mv "$1/config.h.tmp" "$1/config.h"
}

if have_tree "$DIR"; then
	echo "$DIR"
	exit 0
fi
if [ -f "$DIR/src/common/slurm_xlator.h" ] && grep -q "^ *Version:[[:space:]]*$UPSTREAM\$" "$DIR/META" 2>/dev/null; then
	write_config_h "$DIR"
	echo "$DIR"
	exit 0
fi
[ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ] &&
	die "$DIR exists but is not a Slurm $UPSTREAM tree; remove it or give another DIR"

command -v apt-get >/dev/null || die "apt-get not found (Debian/Ubuntu only); use configure --with-slurm-src=DIR"
command -v dpkg-source >/dev/null || die "dpkg-source not found: apt-get install dpkg-dev"

mkdir -p "$(dirname "$DIR")"
WORK=$(mktemp -d "$(dirname "$DIR")/.fetch-slurm.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
mkdir -p "$WORK/apt/lists/partial" "$WORK/dl"

# the suite of this system (bookworm for 22.05.8), unless the caller says
SUITE=${TP_DEBIAN_SUITE:-}
if [ -z "$SUITE" ] && [ -r /etc/os-release ]; then
	SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
fi
[ -n "$SUITE" ] || die "cannot tell the Debian suite; set TP_DEBIAN_SUITE"
MIRROR=$(sh "$here/debian-mirror.sh" "$SUITE")
SECURITY=$(sh "$here/debian-mirror.sh" "$SUITE-security")
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
signed=
[ -f "$KEYRING" ] && signed="Signed-By: $KEYRING"
cat >"$WORK/apt/src.sources" <<EOF
Types: deb-src
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
$signed

Types: deb-src
URIs: $SECURITY
Suites: $SUITE-security
Components: main
$signed
EOF
APT="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$WORK/apt -o Dir::State::Lists=$WORK/apt/lists -o Debug::NoLocking=1"
# shellcheck disable=SC2086
apt-get -q $APT update >"$WORK/update.log" 2>&1 ||
	{ cat "$WORK/update.log" >&2; die "apt-get update (private deb-src list: $MIRROR, $SECURITY) failed"; }
pkg=slurm-wlm
case $VERSION in *-*) want="$pkg=$VERSION" ;; *) want=$pkg ;; esac
# shellcheck disable=SC2086
(cd "$WORK/dl" && apt-get -q $APT source --download-only "$want") >"$WORK/source.log" 2>&1 ||
	{ cat "$WORK/source.log" >&2; die "apt-get source $want failed"; }
dsc=$(ls "$WORK/dl"/*.dsc 2>/dev/null | head -n 1)
[ -n "$dsc" ] || die "no .dsc downloaded for $want"
dpkg-source -x "$dsc" "$WORK/tree" >"$WORK/x.log" 2>&1 ||
	{ cat "$WORK/x.log" >&2; die "dpkg-source -x failed"; }
grep -q "^ *Version:[[:space:]]*$UPSTREAM\$" "$WORK/tree/META" ||
	die "downloaded tree is not Slurm $UPSTREAM ($(grep Version: "$WORK/tree/META"))"
write_config_h "$WORK/tree"
rm -rf "$DIR"
mv "$WORK/tree" "$DIR"
echo "$DIR"
