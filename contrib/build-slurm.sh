#!/bin/sh
# Build a private Slurm 24.11 (native mode of topology/topoplace) from Debian's
# trixie source package, for the mini-cluster and the native topology plugin.
#
#   contrib/build-slurm.sh [--prefix DIR] [--src DIR] [--jobs N] [--force]
#                          [VERSION]
#
# --prefix DIR  install prefix (default /opt/topoplace/slurm-24.11)
# --src DIR     where the source tree and the build tree live (default
#               PREFIX/src): DIR/slurm-VERSION (unpacked upstream tarball) and
#               DIR/build-VERSION (configured out of tree; KEPT: the native
#               topology plugin compiles against its config.h and links its
#               src/plugins/topology/common/.libs/libtopology_common.a)
# --jobs N      make -jN (default 2)
# --force       rebuild and reinstall even when PREFIX/topoplace-build.env says
#               everything is there
# VERSION       upstream version, e.g. 24.11.5; must be the one the trixie
#               suite carries (default: whatever it carries)
# SLURM_CFLAGS  compiler flags (default "-O1": fast to build, not a debug build)
# TP_DEBIAN_MIRROR (or SLURM_MIRROR)  the Debian mirror (default: the one apt
#               uses for this system's suite, contrib/debian-mirror.sh)
#
# Steps: a private deb-src list for the trixie suite on that mirror (own
# Dir::State::Lists under SRC, so the system's apt state is untouched),
# `apt-get source --download-only` (only the orig tarball exists there; its
# checksum is verified against the Sources index), libmunge-dev through apt,
# configure --prefix=PREFIX --disable-debug without optional libraries, then
# make + make install of only what the mini-cluster needs:
# libslurm/libslurmfull, slurmctld, slurmd, slurmstepd, srun sbatch squeue
# scontrol sinfo scancel, slurm/*.h and the plugins listed in PLUGINS below.
# Writes PREFIX/topoplace-build.env (SLURM_PREFIX, SLURM_SRC, SLURM_BUILD,
# SLURM_VERSION, SLURM_CFLAGS). Idempotent: a second run finds everything
# installed and returns at once. Runs as root (apt-get).
# Never touches the Debian 22.05 packages (libslurm38, libmunge2...).
set -eu

me=build-slurm.sh
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "$me: $*" >&2; exit 1; }
say() { echo "$me: $*"; }
usage_error() { echo "$me: $*" >&2; exit 2; }
need() { [ $# -ge 2 ] || usage_error "$1 needs a value"; }

PREFIX=/opt/topoplace/slurm-24.11
SRC=
JOBS=2
FORCE=
WANT=
while [ $# -gt 0 ]; do
	case $1 in
	--prefix) need "$@"; PREFIX=$2; shift ;;
	--src) need "$@"; SRC=$2; shift ;;
	--jobs|-j) need "$@"; JOBS=$2; shift ;;
	--force) FORCE=1 ;;
	-h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
	-*) usage_error "unknown option '$1' (try --help)" ;;
	*) [ -z "$WANT" ] || usage_error "one VERSION only (try --help)"; WANT=$1 ;;
	esac
	shift
done
case $JOBS in ''|*[!0-9]*) die "--jobs: not a number" ;; esac
case $PREFIX in /*) ;; *) PREFIX=$(pwd)/$PREFIX ;; esac
SRC=${SRC:-$PREFIX/src}
case $SRC in /*) ;; *) SRC=$(pwd)/$SRC ;; esac
CFLAGS_WANT=${SLURM_CFLAGS:--O1}
ENVF=$PREFIX/topoplace-build.env

# Directories built and installed, in order (src/api pulls src/common,
# src/interfaces and src/conmgr in through its own rules).
DIRS="src/api src/slurmctld src/slurmd src/srun src/sbatch src/squeue src/scontrol src/sinfo src/scancel"
# Plugins: what slurmctld/slurmd/clients load with the mini-cluster's
# slurm.conf (+ the defaults of 24.11: hash/k12 for credentials, tls/none,
# prep/script, priority/basic), the topology plugins and jobcomp/filetxt
# (integration/slurm24_jobcomp.sh). cred/common, topology/common and
# jobcomp/common are convenience libraries the others link.
PLUGINS="auth/munge cred/common cred/munge hash/common_xkcp hash/k12 tls/none
select/cons_tres topology/common topology/default topology/tree topology/block
sched/backfill sched/builtin gres/common gres/gpu gpu/common gpu/generic
proctrack/linuxproc proctrack/pgid priority/basic prep/script mpi/pmi2
jobcomp/common jobcomp/filetxt"
# what must exist for the build to count as complete
installed() {
	[ -f "$ENVF" ] || return 1
	for f in bin/srun bin/sbatch bin/squeue bin/scontrol bin/sinfo bin/scancel \
		sbin/slurmctld sbin/slurmd sbin/slurmstepd include/slurm/slurm.h \
		lib/slurm/select_cons_tres.so lib/slurm/topology_tree.so \
		lib/slurm/topology_default.so lib/slurm/auth_munge.so lib/slurm/cred_munge.so \
		lib/slurm/gres_gpu.so lib/slurm/hash_k12.so lib/slurm/tls_none.so \
		lib/slurm/jobcomp_filetxt.so; do
		[ -e "$PREFIX/$f" ] || return 1
	done
	# shellcheck disable=SC1090
	. "$ENVF"
	[ -f "$SLURM_BUILD/config.h" ] &&
		[ -f "$SLURM_BUILD/src/plugins/topology/common/.libs/libtopology_common.a" ] &&
		[ -f "$SLURM_SRC/src/interfaces/topology.h" ] || return 1
	[ -z "$WANT" ] || [ "$WANT" = "$SLURM_VERSION" ] || return 1
	grep -q 'define MULTIPLE_SLURMD 1' "$SLURM_BUILD/config.h"
}

t0=$(date +%s)
if [ -z "$FORCE" ] && installed; then
	say "Slurm $SLURM_VERSION already built: $PREFIX (build dir $SLURM_BUILD)"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || die "run as root (apt-get)"
command -v apt-get >/dev/null || die "needs apt-get (Debian)"

# ---- build dependencies (never removes anything) ----
need=
for p in libmunge-dev build-essential pkg-config python3 xz-utils dpkg-dev; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
	say "apt-get install$need"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 $need >/dev/null ||
		{ apt-get update -q -o DPkg::Lock::Timeout=300 >/dev/null &&
		  apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 $need >/dev/null; } ||
		die "apt-get install$need failed"
fi

# ---- source: trixie's slurm-wlm orig tarball through a private deb-src list ----
mkdir -p "$SRC"
APT=$SRC/apt
# the entry that serves this system's suite with "main" (never another
# repository whose URL ends in /debian, such as Docker's)
mirror=${SLURM_MIRROR:-$(sh "$here/debian-mirror.sh")}
mkdir -p "$APT/parts" "$APT/lists/partial" "$APT/dl"
cat >"$APT/parts/trixie.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
aopt() { # private apt state: nothing of the system's lists changes
	apt-get -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$APT/parts" \
		-o Dir::State::Lists="$APT/lists" -o Dir::Cache="$APT/cache" "$@"
}
# a complete source tree of VERSION, unpacked here before
have_tree() { [ -f "$SRC/slurm-$1/configure" ] && [ -f "$SRC/slurm-$1/src/interfaces/topology.h" ]; }
if [ -n "$WANT" ] && have_tree "$WANT"; then
	VERSION=$WANT
else
	mkdir -p "$APT/cache/archives/partial"
	aopt update >"$APT/update.log" 2>&1 || die "apt-get update (trixie deb-src from $mirror) failed: $(tail -n 3 "$APT/update.log")"
	srcinfo=$(apt-cache -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$APT/parts" \
		-o Dir::State::Lists="$APT/lists" -o Dir::Cache="$APT/cache" showsrc slurm-wlm 2>/dev/null) ||
		die "slurm-wlm not found in trixie's Sources"
	debver=$(echo "$srcinfo" | sed -n 's/^Version: //p' | head -1)
	VERSION=${debver%%-*}
	VERSION=${VERSION#*:}
	[ -n "$VERSION" ] || die "no slurm-wlm version in trixie's Sources"
	case $VERSION in 24.11.*) ;; *) say "warning: trixie carries slurm-wlm $debver (not 24.11.x)" ;; esac
	[ -z "$WANT" ] || [ "$WANT" = "$VERSION" ] ||
		die "trixie carries slurm-wlm $debver, not $WANT (only that version can be fetched here)"
fi
S=$SRC/slurm-$VERSION
B=$SRC/build-$VERSION
if ! have_tree "$VERSION"; then
	[ ! -e "$S" ] || say "$S is incomplete: unpacking it again"
	tarball=slurm-wlm_$VERSION.orig.tar.gz
	if [ ! -f "$APT/dl/$tarball" ]; then
		say "fetching $tarball (slurm-wlm $debver, trixie, $mirror)"
		# the .dsc and .debian.tar.xz answer 404 on this mirror: ignore the
		# exit status, check the tarball against the index instead
		(cd "$APT/dl" && aopt source --download-only "slurm-wlm=$debver" >"$APT/source.log" 2>&1) || true
		[ -f "$APT/dl/$tarball" ] || die "download of $tarball failed: $(tail -n 3 "$APT/source.log")"
	fi
	sum=$(echo "$srcinfo" | sed -n '/^Checksums-Sha256:/,/^[^ ]/p' | awk -v t="$tarball" '$3 == t { print $1 }' | head -1)
	[ -n "$sum" ] || die "$tarball: no sha256 in trixie's Sources"
	echo "$sum  $APT/dl/$tarball" | sha256sum -c --quiet - || die "$tarball: sha256 mismatch"
	rm -rf "$S" "$SRC/unpack"
	mkdir -p "$SRC/unpack"
	tar -xzf "$APT/dl/$tarball" -C "$SRC/unpack"
	top=$(ls "$SRC/unpack")
	[ "$(echo "$top" | wc -l)" -eq 1 ] && [ -f "$SRC/unpack/$top/configure" ] || die "$tarball: unexpected layout"
	mv "$SRC/unpack/$top" "$S"
	rmdir "$SRC/unpack"
	rm -rf "$B" # a build of another tree is stale
fi
t1=$(date +%s)

# ---- configure (out of tree, kept) ----
# --enable-multiple-slurmd (as Debian's build): all slurmd of the mini-cluster
# share one munged, which refuses to decode a credential twice; without it
# every node but the first rejects a forwarded launch (REQUEST_LAUNCH_TASKS:
# "_verify_signature: failed decode").
CONF_ARGS="--prefix=$PREFIX --sysconfdir=$PREFIX/etc --enable-multiple-slurmd
	--disable-debug --disable-dependency-tracking --disable-static --disable-sview
	--disable-slurmrestd --disable-x11 --disable-pam --disable-selinux
	--without-hdf5 --without-pmix --without-ucx --without-nvml --without-rsmi
	--without-oneapi --without-freeipmi --without-rdkafka --without-s2n
	--without-hwloc --without-jwt --without-yaml --without-json
	--without-http-parser --without-ofed --without-lz4 --without-libcurl
	--without-bpf --without-hpe-slingshot --without-lua --without-readline
	--without-mysql_config --with-munge=/usr"
# shellcheck disable=SC2086,SC2116 # one line, words normalised
stamp=$(echo "CFLAGS=$CFLAGS_WANT" $CONF_ARGS)
if [ -n "$FORCE" ] || [ ! -f "$B/config.status" ] || [ ! -f "$B/.topoplace-configure" ] ||
	[ "$(cat "$B/.topoplace-configure")" != "$stamp" ]; then
	# no dependency tracking: a new configuration means a fresh build dir
	rm -rf "$B"
	mkdir -p "$B"
	say "configure --prefix=$PREFIX (CFLAGS=$CFLAGS_WANT)"
	# shellcheck disable=SC2086
	(cd "$B" && CFLAGS=$CFLAGS_WANT "$S/configure" $CONF_ARGS >"$B/configure.out" 2>&1) ||
		die "configure failed: $(tail -n 5 "$B/config.log")"
	echo "$stamp" >"$B/.topoplace-configure"
fi
t2=$(date +%s)

# ---- build and install only what the mini-cluster needs ----
log=$B/make.log
: >"$log"
mk() { # DIR TARGET...
	d=$1
	shift
	make -C "$B/$d" -j"$JOBS" "$@" >>"$log" 2>&1 || die "make -C $d $* failed: $(grep -m3 -i 'error' "$log" || tail -n 5 "$log")"
}
say "building in $B ($log)"
for d in $DIRS; do mk "$d"; done
for p in $PLUGINS; do mk "src/plugins/$p"; done
t3=$(date +%s)
mk . install-pkgincludeHEADERS
for d in $DIRS; do mk "$d" install; done
for p in $PLUGINS; do
	case $p in */common|*/common_xkcp) continue ;; esac # convenience libraries
	mk "src/plugins/$p" install
done
find "$PREFIX/lib" -name '*.la' -delete
mkdir -p "$PREFIX/etc"
cat >"$ENVF" <<EOF
# Written by contrib/build-slurm.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)
SLURM_PREFIX=$PREFIX
SLURM_SRC=$S
SLURM_BUILD=$B
SLURM_VERSION=$VERSION
SLURM_CFLAGS="$CFLAGS_WANT"
EOF
t4=$(date +%s)
say "Slurm $VERSION in $PREFIX: fetch $((t1 - t0)) s, configure $((t2 - t1)) s, build $((t3 - t2)) s, install $((t4 - t3)) s, total $((t4 - t0)) s"
say "source $S, build dir $B (config.h, src/plugins/topology/common/.libs/libtopology_common.a)"
echo "export PATH=$PREFIX/bin:$PREFIX/sbin:\$PATH"
