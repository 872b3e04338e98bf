#!/bin/sh
# A real multi-node Slurm cluster on one machine, for tests and evaluation.
#
#   contrib/slurm-cluster.sh start [--nodes N] [--gpus-per-node G] [--dir DIR]
#       [--plugin-dir DIR] [--topology none|tree|block|topoplace] [--fabric FILE]
#       [--slurm-conf-extra FILE] [--extra-file FILE]... [--timeout SECS]
#       [--port PORT] [--net A.B.C] [--slurm-prefix DIR]
#       [--emu-fabric [--leaves L] [--uplink-ratio R] [--rate RATE]
#        [--data-net A.B.C] [--emu-prefix P]]
#   contrib/slurm-cluster.sh stop   [--dir DIR]
#   contrib/slurm-cluster.sh status [--dir DIR]
#   contrib/slurm-cluster.sh env    [--dir DIR]   (the exports for clients)
#
# Runs munged (private key and socket under DIR), slurmctld (root network
# namespace, hostname "tpctl" through unshare --uts, listening on a bridge at
# 10.200.0.1) and N slurmd, node001..nodeNNN, each in its own network
# namespace (veth into the bridge, 10.200.0.(10+i), no default route, its own
# hostname, /etc/netns/<ns>/hosts). Each node has G fake GPUs: gres.conf
# entries on character devices made with mknod c 1 3 under DIR/dev. Clients
# (sinfo, srun, sbatch, scontrol) work from the root namespace with
# SLURM_CONF=DIR/slurm.conf; batch scripts reach slurmctld from the nodes.
# DIR (default /run/topoplace-slurm) must be root's and writable by no one
# else: the script runs as root on what it finds there (pids, namespace
# names, the Slurm prefix), so one another user made first is refused.
#
# --topology tree       TopologyPlugin=topology/tree with a topology.conf that
#                       `$TOPOPLACE fabric topology-conf` writes from the fabric
# --topology block      TopologyPlugin=topology/block (Slurm 23.x+, so with
#                       --slurm-prefix) with the topology.conf that
#                       `$TOPOPLACE fabric topology-conf --block` writes:
#                       multi-node NVLink domains (or level-1 groups) as blocks
# --topology topoplace  TopologyPlugin=topology/topoplace, loaded from
#                       --plugin-dir (needs the built plugin), then Debian's dir
# --topology none       no topology plugin (the default; topology/default
#                       with --slurm-prefix)
# --plugin-dir DIR      its *.so are copied to DIR/plugins, first in PluginDir
#                       whenever it exists (default build/plugin/.libs, the
#                       22.05 plugins, or build/plugin/slurm24/.libs, the
#                       24.11 topology and SPANK plugins, when --slurm-prefix
#                       holds a Slurm 24.x), so job_submit/topoplace or SPANK
#                       plugins from the build tree load with any topology
#                       (SPANK: name @DIR@/plugins/spank_topoplace.so in
#                       plugstack.conf); the CLI is copied to DIR/bin,
#                       readable by any user
# --slurm-conf-extra F  lines appended to slurm.conf (e.g. JobSubmitPlugins=;
#                       not SlurmdDebug: TP_SLURMD_DEBUG sets it, default info)
# --extra-file F        copied beside slurm.conf (e.g. topoplace.conf), with
#                       @DIR@ replaced by DIR (the fabric is DIR/fabric.json)
# Without --fabric, the fabric is generated: a 2-leaf fat tree with odd hosts
# on one leaf and even hosts on the other (groups do not follow names).
# --slurmdbd           accounting for real (22.05 only): a MariaDB server
#                       (DIR/db, its socket only, no network) and slurmdbd
#                       (localhost, port PORT+1000) started before
#                       slurmctld, which then stores jobs there
#                       (AccountingStorageType=accounting_storage/slurmdbd,
#                       AccountingStorageTRES=gres/gpu): sacct works
# --slurm-prefix DIR    a private Slurm (contrib/build-slurm.sh: 24.11 in
#                       /opt/topoplace/slurm-24.11): slurmctld, slurmd and the
#                       clients from DIR/bin and DIR/sbin, plugins from
#                       DIR/lib/slurm; munged stays the system's. The config
#                       then follows 24.11: TopologyPlugin=topology/default for
#                       none, CgroupPlugin=disabled, PriorityType=priority/basic,
#                       no SwitchType/JobAcctGatherType/AccountingStorageType
#                       (their "none" plugins are gone). Clients need the PATH
#                       that start prints (also in DIR/env, and `env`).
# --net A.B.C          the cluster's /24 (default 10.200.0); with a distinct
#                       --dir and --port, two clusters can run side by side
# --emu-fabric         the nodes are the hosts of an emulated fabric
#                       (contrib/emu-fabric.sh): each
#                       slurmd's namespace is a fabric host with its data
#                       link (eth0, --data-net A.B.C.i, tbf-shaped to --rate,
#                       default 400mbit) on its leaf's bridge, L leaves
#                       (--leaves, 2), names interleaved over the leaves, an
#                       up-link of rate x hosts-per-leaf / R (--uplink-ratio,
#                       4). Slurm's own traffic stays off the fabric: every
#                       node also has an unshaped control interface (eth1,
#                       --net, NodeAddr) on the root-namespace bridge where
#                       slurmctld listens. In the nodes the host names
#                       resolve to the data addresses (so a job's own
#                       traffic, e.g. topoplace's collectives, crosses the
#                       fabric), tpctl to the controller. The fabric JSON is
#                       emu-fabric's, matching the cabling (--fabric is
#                       refused). --data-net defaults to --net's next /24,
#                       --emu-prefix (namespace prefix: <= 6 of a-z, 0-9 and
#                       -, starting with a letter) to e<tag>-; Open MPI's
#                       plm_rsh_agent for the nodes is
#                       /run/topoplace-emu/<prefix without ->/rsh-agent.
# TOPOPLACE = the topoplace CLI (default: build/cli/topoplace in this tree).
#
# Every process started is listed in DIR/pids ("PID NAME"); stop ends exactly
# those (and whatever runs inside the cluster's own namespaces: job steps),
# then deletes the namespaces, the bridge and /etc/netns entries it created
# (DIR/netres). Runs as root. Debian 12: contrib/install-slurm.sh first.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
me=slurm-cluster.sh
die() { echo "$me: $*" >&2; exit 1; }
say() { echo "$me: $*"; }
usage_error() { echo "$me: $*" >&2; exit 2; }
need() { [ $# -ge 2 ] || usage_error "$1 needs a value"; }

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in -h|--help) set -- --help ;; esac
DIR=/run/topoplace-slurm
NODES=8
GPUS=4
PLUGIN_DIR=$top/build/plugin/.libs
TOPO=none
FABRIC=
EXTRA=
EXTRA_FILES=
PLUGIN_DIR_SET=
TIMEOUT=60
PORT=6817
NET=10.200.0
SLURM_PREFIX=
EMU=
EMU_LEAVES=2
EMU_RATIO=4
EMU_RATE=400mbit
EMU_NET=
EMU_PREFIX=
DBD=
while [ $# -gt 0 ]; do
	case $1 in
	--nodes) need "$@"; NODES=$2; shift ;;
	--gpus-per-node) need "$@"; GPUS=$2; shift ;;
	--dir) need "$@"; DIR=$2; shift ;;
	--plugin-dir) need "$@"; PLUGIN_DIR=$2; PLUGIN_DIR_SET=1; shift ;;
	--topology) need "$@"; TOPO=$2; shift ;;
	--fabric) need "$@"; FABRIC=$2; shift ;;
	--slurm-conf-extra) need "$@"; EXTRA=$2; shift ;;
	--extra-file) need "$@"; EXTRA_FILES="$EXTRA_FILES
$2"; shift ;;
	--timeout) need "$@"; TIMEOUT=$2; shift ;;
	--port) need "$@"; PORT=$2; shift ;;
	--net) need "$@"; NET=$2; shift ;;
	--slurm-prefix) need "$@"; SLURM_PREFIX=$2; shift ;;
	--emu-fabric) EMU=1 ;;
	--slurmdbd) DBD=1 ;;
	--leaves) need "$@"; EMU_LEAVES=$2; shift ;;
	--uplink-ratio) need "$@"; EMU_RATIO=$2; shift ;;
	--rate) need "$@"; EMU_RATE=$2; shift ;;
	--data-net) need "$@"; EMU_NET=$2; shift ;;
	--emu-prefix) need "$@"; EMU_PREFIX=$2; shift ;;
	-h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
	*) usage_error "unknown option '$1' (try --help)" ;;
	esac
	shift
done
case $cmd in start|stop|status|env) ;; *) usage_error "usage: $me start|stop|status|env [options] (try --help)" ;; esac
case $NODES in ''|*[!0-9]*) die "--nodes: not a number" ;; esac
case $GPUS in ''|*[!0-9]*) die "--gpus-per-node: not a number" ;; esac
case $TOPO in none|tree|block|topoplace) ;; *) die "--topology: none, tree, block or topoplace" ;; esac
[ "$cmd" = env ] || [ "$(id -u)" -eq 0 ] || die "run as root (network namespaces, mknod)"
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
# safe_path PATH: every name on the way to PATH (as given, links and all,
# and as resolved) is root's, and no directory on the way lets another
# user rename or plant an entry (writable by others and not sticky); PATH
# itself writable by no one else. Root runs what DIR holds (pids it
# kills, names it deletes, a Slurm prefix it runs): one another user made
# first in a shared /tmp, or a link planted on the way, would be theirs.
safe_path() {
	local p=${1#/} q="" c m
	while [ -n "$p" ]; do
		c=${p%%/*}
		if [ "$p" = "$c" ]; then p=""; else p=${p#*/}; fi
		[ -n "$c" ] || continue
		q=$q/$c
		[ "$(stat -c %u "$q")" = 0 ] || { echo "$q is not root's"; return 1; }
		[ -L "$q" ] && continue
		m=$(stat -c %a "$q")
		if [ -n "$p" ]; then
			[ $((0$m & 022)) = 0 ] || [ $((0$m & 01000)) != 0 ] ||
				{ echo "others can rename in $q"; return 1; }
		else
			[ $((0$m & 022)) = 0 ] || { echo "$q is writable by others"; return 1; }
		fi
	done
}
(umask 022 && mkdir -p "$DIR") || die "--dir $DIR: cannot make it"
if [ "$(id -u)" -eq 0 ]; then
	why=$(safe_path "$DIR") && why=$(safe_path "$(cd "$DIR" && pwd -P)") ||
		die "--dir $DIR: $why: refused (remove it, or pick a directory of root's)"
fi
DIR=$(cd "$DIR" && pwd -P)
# A private Slurm (--slurm-prefix) for start; status/env find the one the
# running cluster was started with in DIR/slurm-prefix.
if [ -z "$SLURM_PREFIX" ] && [ "$cmd" != start ] && [ -f "$DIR/slurm-prefix" ]; then
	SLURM_PREFIX=$(cat "$DIR/slurm-prefix")
fi
if [ -n "$SLURM_PREFIX" ]; then
	[ -d "$SLURM_PREFIX" ] || die "--slurm-prefix $SLURM_PREFIX: no such directory"
	SLURM_PREFIX=$(cd "$SLURM_PREFIX" && pwd)
	[ -x "$SLURM_PREFIX/sbin/slurmctld" ] && [ -x "$SLURM_PREFIX/bin/sinfo" ] ||
		die "--slurm-prefix $SLURM_PREFIX: no sbin/slurmctld or bin/sinfo (contrib/build-slurm.sh)"
	PATH=$SLURM_PREFIX/bin:$SLURM_PREFIX/sbin:$PATH
	export PATH
fi
# Names of the namespaces and the bridge carry a tag derived from DIR.
tag=$(printf '%04x' $(($(printf %s "$DIR" | cksum | cut -d' ' -f1) % 65536)))
BR=tp${tag}br
CTL=tpctl
export SLURM_CONF=$DIR/slurm.conf
node() { printf 'node%03d' "$1"; }
EMU_PREFIX=${EMU_PREFIX:-e$tag-}
EMU_SH=$top/contrib/emu-fabric.sh
if [ -z "$EMU_NET" ]; then
	EMU_NET=${NET%.*}.$((${NET##*.} + 1))
fi
nsname() {
	if [ -n "$EMU" ]; then
		printf '%s%s' "$EMU_PREFIX" "$(node "$1")"
	else
		printf 'tp%sn%03d' "$tag" "$1"
	fi
}

# ---- pid bookkeeping ----
alive() { # PID NAME: is PID running (not a zombie) as NAME?
	[ -r "/proc/$1/comm" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] &&
		! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^[ZX]'
}
running() { # any listed process still alive?
	[ -f "$DIR/pids" ] || return 1
	while read -r pid name; do
		alive "$pid" "$name" && return 0
	done <"$DIR/pids"
	return 1
}

stop_all() {
	t0=$(date +%s)
	# 1. everything inside our own node namespaces (slurmd, slurmstepd, job
	#    tasks): all started by this cluster
	if [ -f "$DIR/netres" ]; then
		for ns in $(awk '$1 == "netns" || $1 == "emuns" {print $2}' "$DIR/netres"); do
			pids=$(ip netns pids "$ns" 2>/dev/null || true)
			[ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
		done
	fi
	# 2. the listed daemons, nodes first, controller, then munged
	if [ -f "$DIR/pids" ]; then
		for want in slurmd slurmctld slurmdbd mariadbd munged; do
			while read -r pid name; do
				[ "$name" = "$want" ] && alive "$pid" "$name" && kill -TERM "$pid" 2>/dev/null || true
			done <"$DIR/pids"
		done
		i=0
		while running && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		while read -r pid name; do
			alive "$pid" "$name" && { say "killing $name $pid"; kill -KILL "$pid" 2>/dev/null || true; }
		done <"$DIR/pids"
	fi
	# 3. namespaces (after their processes), bridge, /etc/netns entries
	if [ -f "$DIR/netres" ]; then
		for ns in $(awk '$1 == "netns" || $1 == "emuns" {print $2}' "$DIR/netres"); do
			i=0
			while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ $i -lt 50 ]; do
				sleep 0.1; i=$((i + 1))
			done
			pids=$(ip netns pids "$ns" 2>/dev/null || true)
			[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
		done
		while read -r kind name; do
			case $kind in
			netns) ip netns del "$name" 2>/dev/null || true ;;
			bridge) ip link del "$name" 2>/dev/null || true ;;
			etcnetns) rm -rf "/etc/netns/$name" ;;
			esac
		done <"$DIR/netres"
		# the emulated fabric last: its namespaces held the nodes
		for p in $(awk '$1 == "emu" {print $2}' "$DIR/netres"); do
			"$EMU_SH" --prefix "$p" stop >/dev/null 2>&1 || true
		done
		grep -q '^etcnetnsdir ' "$DIR/netres" && { rmdir /etc/netns 2>/dev/null || true; }
		rm -f "$DIR/netres"
	fi
	rm -f "$DIR/pids" "$DIR/env" "$DIR/slurm-prefix" "$DIR/emu"
	say "stopped ($(($(date +%s) - t0)) s)"
}

if [ "$cmd" = stop ]; then
	if [ ! -f "$DIR/pids" ] && [ ! -f "$DIR/netres" ]; then
		say "nothing to stop in $DIR"
		exit 0
	fi
	stop_all
	exit 0
fi

if [ "$cmd" = status ]; then
	if ! running; then
		say "no cluster running in $DIR"
		exit 1
	fi
	while read -r pid name; do
		if alive "$pid" "$name"; then s=running; else s=DEAD; fi
		echo "$name $pid $s"
	done <"$DIR/pids"
	timeout 10 sinfo -N -o '%N %T %G' 2>&1 || true
	[ -z "$SLURM_PREFIX" ] || echo "export PATH=$SLURM_PREFIX/bin:$SLURM_PREFIX/sbin:\$PATH"
	echo "export SLURM_CONF=$SLURM_CONF"
	exit 0
fi

if [ "$cmd" = env ]; then
	[ -f "$DIR/env" ] || die "no cluster started in $DIR"
	cat "$DIR/env"
	exit 0
fi

# ================= start =================
t0=$(date +%s)
running && die "a cluster is already running in $DIR (contrib/slurm-cluster.sh stop --dir $DIR)"
# leftovers of a cluster that died: clean up first
[ -f "$DIR/pids" ] || [ -f "$DIR/netres" ] && stop_all >/dev/null
[ "$NODES" -ge 1 ] && [ "$NODES" -le 200 ] || die "--nodes: 1..200"
if [ -n "$EMU" ]; then
	[ -z "$FABRIC" ] || die "--emu-fabric writes the fabric JSON itself: no --fabric"
	case $EMU_LEAVES$EMU_RATIO in ''|*[!0-9]*) die "--leaves, --uplink-ratio: numbers" ;; esac
	[ "$EMU_LEAVES" -ge 1 ] && [ $((NODES % EMU_LEAVES)) -eq 0 ] ||
		die "--emu-fabric: --nodes must be a multiple of --leaves"
	# emu-fabric.sh's stop deletes every namespace whose name starts with it
	case $EMU_PREFIX in
	'' | [!a-z]* | *[!a-z0-9-]*) die "--emu-prefix: a-z, 0-9 and - only, starting with a letter" ;;
	esac
	[ ${#EMU_PREFIX} -le 6 ] || die "--emu-prefix: at most 6 characters"
	[ "$EMU_NET" != "$NET" ] || die "--data-net must differ from --net"
	[ -x "$EMU_SH" ] || die "$EMU_SH missing"
	command -v tc >/dev/null 2>&1 || die "tc not found (iproute2)"
	[ -z "$(ip netns list 2>/dev/null | awk -v p="$EMU_PREFIX" 'index($1, p) == 1')" ] ||
		die "namespaces named $EMU_PREFIX* exist already (another fabric?); pick --emu-prefix"
fi
for b in munged slurmctld slurmd sinfo scontrol ip unshare; do
	command -v $b >/dev/null 2>&1 || die "$b not found (contrib/install-slurm.sh installs Slurm)"
done
[ -z "$(ip -4 route show "$NET.0/24" 2>/dev/null)" ] ||
	die "$NET.0/24 is already routed here (another cluster?): $(ip -4 route show "$NET.0/24")"
if ss -ltnH "sport = :$PORT" 2>/dev/null | grep -q .; then
	die "port $PORT is in use (another slurmctld?); pick one with --port"
fi
if [ -n "$SLURM_PREFIX" ]; then
	SYSPLUGINS=$SLURM_PREFIX/lib/slurm
	for b in slurmctld slurmd sinfo scontrol; do
		[ "$(command -v $b)" = "$SLURM_PREFIX/bin/$b" ] || [ "$(command -v $b)" = "$SLURM_PREFIX/sbin/$b" ] ||
			die "$b not in $SLURM_PREFIX"
	done
	SLURM_VER=$(slurmctld -V 2>/dev/null | awk '{print $2}')
	case $SLURM_VER in
	2[3-9].*|[3-9][0-9].*) NEW=1 ;; # 23.x+: the 24.11 configuration
	*) NEW= ;;
	esac
	# Slurm refuses a plugin built for another major.minor: our 24.11
	# plugins (native topology/topoplace, SPANK) are built in slurm24/
	if [ -z "$PLUGIN_DIR_SET" ]; then
		case $SLURM_VER in 24.*) PLUGIN_DIR=$top/build/plugin/slurm24/.libs ;; esac
	fi
else
	SYSPLUGINS=$(dirname "$(ls /usr/lib/*/slurm-wlm/select_cons_tres.so /usr/lib/slurm/select_cons_tres.so 2>/dev/null | head -1)")
	NEW=
fi
[ -f "$SYSPLUGINS/select_cons_tres.so" ] || die "Slurm's plugin directory not found"
if [ -n "$DBD" ]; then
	[ -z "$NEW" ] || die "--slurmdbd: Slurm 22.05 (Debian's) only"
	for b in mariadb-install-db mariadbd slurmdbd sacctmgr; do
		command -v $b >/dev/null || die "--slurmdbd: $b missing (contrib/install-slurm.sh)"
	done
	[ -f "$SYSPLUGINS/accounting_storage_mysql.so" ] || die "--slurmdbd: accounting_storage_mysql.so missing (slurmdbd package)"
fi
TOPOPLACE=${TOPOPLACE:-$top/build/cli/topoplace}
[ -z "$EXTRA" ] || [ -r "$EXTRA" ] || die "--slurm-conf-extra $EXTRA: not readable"
echo "$EXTRA_FILES" | while read -r f; do
	[ -z "$f" ] || [ -r "$f" ] || die "--extra-file $f: not readable"
done
# slurmctld refuses a PluginDir entry that does not exist
if [ -n "$PLUGIN_DIR_SET" ] || [ "$TOPO" = topoplace ]; then
	[ -d "$PLUGIN_DIR" ] || die "plugin directory $PLUGIN_DIR: no such directory (build the plugins first)"
fi
plugindir=$SYSPLUGINS
# Our plugins and the CLI are staged inside DIR (DIR/plugins, DIR/bin,
# world-readable): sbatch, srun and the SPANK plugin in them run as the
# job's user, who may not traverse the build tree (a clone in root's 0700
# home or in a mktemp directory).
rm -rf "${DIR:?}/plugins" "$DIR/bin"
mkdir -p "$DIR/plugins" "$DIR/bin"
chmod 755 "$DIR/plugins" "$DIR/bin"
if [ -d "$PLUGIN_DIR" ]; then
	for so in "$PLUGIN_DIR"/*.so; do
		[ ! -f "$so" ] || install -m 0644 "$so" "$DIR/plugins/"
	done
	plugindir=$DIR/plugins:$SYSPLUGINS
fi
[ ! -x "$TOPOPLACE" ] || install -m 0755 "$TOPOPLACE" "$DIR/bin/topoplace"

# fresh state (only our own subdirectories of DIR)
rm -rf "${DIR:?}/state" "$DIR/spool" "$DIR/log" "$DIR/run" "$DIR/munge" "$DIR/dev" "$DIR/topology.conf"
mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run" "$DIR/munge" "$DIR/dev"
: >"$DIR/pids"
: >"$DIR/netres"
# A failed start leaves nothing behind.
started=
trap '[ -n "$started" ] || { echo "$me: start failed; logs in $DIR/log" >&2; stop_all >/dev/null 2>&1; }' EXIT
trap 'exit 1' INT TERM HUP

# ---- fabric + topology ----
if [ -n "$EMU" ]; then
	[ -x "$TOPOPLACE" ] || die "$TOPOPLACE not built (set TOPOPLACE or build the tree)"
	fgpus=$GPUS
	[ "$fgpus" -gt 0 ] || fgpus=1
	echo "emu $EMU_PREFIX" >>"$DIR/netres"
	for i in $(seq 1 "$NODES"); do echo "emuns $(nsname "$i")"; done >>"$DIR/netres"
	TOPOPLACE=$TOPOPLACE "$EMU_SH" --prefix "$EMU_PREFIX" --hosts "$NODES" --leaves "$EMU_LEAVES" \
		--uplink-ratio "$EMU_RATIO" --rate "$EMU_RATE" --subnet "$EMU_NET" --name-prefix node \
		--gpus-per-host "$fgpus" --fabric-out "$DIR/fabric.json" start >"$DIR/log/emu.out" 2>&1 ||
		die "emulated fabric: $(tail -n 3 "$DIR/log/emu.out")"
	[ -s "$DIR/fabric.json" ] || die "emulated fabric: no fabric JSON ($(tail -n 3 "$DIR/log/emu.out"))"
elif [ -n "$FABRIC" ]; then
	[ -r "$FABRIC" ] || die "--fabric $FABRIC: not readable"
	[ "$(cd "$(dirname "$FABRIC")" && pwd)/$(basename "$FABRIC")" = "$DIR/fabric.json" ] ||
		cp "$FABRIC" "$DIR/fabric.json"
elif [ "$TOPO" != none ] || [ -x "$TOPOPLACE" ]; then
	[ -x "$TOPOPLACE" ] || die "$TOPOPLACE not built (set TOPOPLACE or build the tree)"
	[ $((NODES % 2)) -eq 0 ] || die "the default fabric needs an even --nodes (or give --fabric)"
	fgpus=$GPUS # a fabric host has at least one GPU
	[ "$fgpus" -gt 0 ] || fgpus=1
	"$TOPOPLACE" fabric generate fat-tree --nics-per-host 1 --uplinks 2 --leaves 2 --spines 1 --hosts-per-leaf $((NODES / 2)) \
		--interleave --gpus-per-host "$fgpus" --prefix node -o "$DIR/fabric.json" >/dev/null ||
		die "fabric generate failed"
else
	rm -f "$DIR/fabric.json"
fi
case $TOPO in
tree)
	[ -x "$TOPOPLACE" ] || die "$TOPOPLACE not built (set TOPOPLACE or build the tree)"
	"$TOPOPLACE" fabric topology-conf "$DIR/fabric.json" -o "$DIR/topology.conf" ||
		die "topology-conf failed"
	topo_lines="TopologyPlugin=topology/tree" ;;
block)
	[ -n "$NEW" ] || die "--topology block needs Slurm 23.x or later (--slurm-prefix)"
	[ -x "$TOPOPLACE" ] || die "$TOPOPLACE not built (set TOPOPLACE or build the tree)"
	"$TOPOPLACE" fabric topology-conf "$DIR/fabric.json" --block -o "$DIR/topology.conf" ||
		die "topology-conf --block failed"
	topo_lines="TopologyPlugin=topology/block" ;;
topoplace)
	# needs topology_topoplace.so in --plugin-dir (plugin/ in the build tree)
	[ -f "$PLUGIN_DIR/topology_topoplace.so" ] ||
		say "warning: $PLUGIN_DIR/topology_topoplace.so not found; slurmctld will not start without it"
	topo_lines="TopologyPlugin=topology/topoplace" ;;
none)
	topo_lines="TopologyPlugin=topology/none"
	# 24.11 has no topology/none (it maps it to topology/default)
	[ -z "$NEW" ] || topo_lines="TopologyPlugin=topology/default" ;;
esac

# ---- configuration ----
# Fake GPUs: character devices (gres.conf rejects plain files).
g=0
while [ $g -lt "$GPUS" ]; do
	mknod "$DIR/dev/gpu$g" c 1 3
	g=$((g + 1))
done
last=$(node "$NODES")
cat >"$DIR/slurm.conf" <<EOF
# Written by contrib/slurm-cluster.sh: $NODES nodes, $GPUS fake GPUs each
ClusterName=topoplace
SlurmctldHost=$CTL($NET.1)
SlurmctldPort=$PORT
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket.2
PluginDir=$plugindir
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=${TP_SLURMD_DEBUG:-info}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
$(if [ -z "$NEW" ]; then
	echo "JobAcctGatherType=jobacct_gather/none"
	if [ -n "$DBD" ]; then
		echo "AccountingStorageType=accounting_storage/slurmdbd"
		echo "AccountingStorageHost=localhost"
		echo "AccountingStoragePort=$((PORT + 1000))"
		echo "AccountingStorageTRES=gres/gpu"
		# the Munge socket for slurmdbd's connections (clients too)
		echo "AccountingStoragePass=$DIR/munge/munge.socket.2"
	else
		echo "AccountingStorageType=accounting_storage/none"
	fi
	echo "SwitchType=switch/none"
else
	# 24.11: those "none" plugins are gone (the keys are left unset);
	# the default PriorityType became priority/multifactor
	echo "PriorityType=priority/basic"
fi)
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
SlurmdParameters=config_overrides
DefMemPerCPU=500
MessageTimeout=15
SlurmdTimeout=30
ReturnToService=2
MinJobAge=600
KillWait=5
$topo_lines
EOF
gres=
[ "$GPUS" -eq 0 ] || gres=" Gres=gpu:$GPUS"
i=1
while [ $i -le "$NODES" ]; do
	echo "NodeName=$(node $i) NodeAddr=$NET.$((10 + i)) CPUs=8 RealMemory=8000$gres State=UNKNOWN"
	i=$((i + 1))
done >>"$DIR/slurm.conf"
echo "PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$DIR/slurm.conf"
if [ -n "$EXTRA" ]; then
	{ echo "# from $EXTRA"; cat "$EXTRA"; } >>"$DIR/slurm.conf"
fi
# slurmd 22.05 always initialises cgroups; inside ip netns exec /sys/fs/cgroup
# is empty, and cgroup/v1 is the one that copes with that. 24.11 can switch
# cgroups off.
if [ -z "$NEW" ]; then
	echo "CgroupPlugin=cgroup/v1" >"$DIR/cgroup.conf"
else
	echo "CgroupPlugin=disabled" >"$DIR/cgroup.conf"
fi
if [ "$GPUS" -gt 0 ]; then
	files=$DIR/dev/gpu0
	[ "$GPUS" -eq 1 ] || files="$DIR/dev/gpu[0-$((GPUS - 1))]"
	echo "NodeName=node[001-${last#node}] Name=gpu File=$files" >"$DIR/gres.conf"
else
	: >"$DIR/gres.conf"
fi
{
	echo "127.0.0.1 localhost"
	echo "$NET.1 $CTL"
	i=1
	while [ $i -le "$NODES" ]; do
		echo "$NET.$((10 + i)) $(node $i)"
		i=$((i + 1))
	done
} >"$DIR/hosts"

# extra files last: they may replace cgroup.conf or gres.conf
echo "$EXTRA_FILES" | while read -r f; do
	[ -z "$f" ] || sed "s|@DIR@|$DIR|g" "$f" >"$DIR/$(basename "$f")"
done

# ---- munge ----
head -c 1024 /dev/urandom >"$DIR/munge/munge.key"
chmod 700 "$DIR/munge"
chmod 400 "$DIR/munge/munge.key"
munged --foreground --force --socket="$DIR/munge/munge.socket.2" \
	--key-file="$DIR/munge/munge.key" --pid-file="$DIR/munge/munged.pid" \
	--seed-file="$DIR/munge/munged.seed" --log-file="$DIR/log/munged.log" \
	</dev/null >>"$DIR/log/munged.out" 2>&1 &
echo "$! munged" >>"$DIR/pids"
i=0
until [ -S "$DIR/munge/munge.socket.2" ]; do
	i=$((i + 1))
	[ $i -le 50 ] || die "munged did not start: $(tail -n 3 "$DIR/log/munged.out" "$DIR/log/munged.log" 2>/dev/null)"
	sleep 0.1
done

# ---- --slurmdbd: MariaDB on a socket in DIR, slurmdbd on localhost ----
if [ -n "$DBD" ]; then
	mkdir -p "$DIR/db"
	mariadb-install-db --no-defaults --user=root --datadir="$DIR/db" --skip-test-db \
		--auth-root-authentication-method=normal >"$DIR/log/mariadb-install.log" 2>&1 ||
		die "mariadb-install-db failed: $(tail -n 3 "$DIR/log/mariadb-install.log")"
	mariadbd --no-defaults --user=root --datadir="$DIR/db" --socket="$DIR/run/mysqld.sock" \
		--skip-networking --pid-file="$DIR/run/mysqld.pid" --log-error="$DIR/log/mariadbd.log" \
		--innodb-buffer-pool-size=16M </dev/null >/dev/null 2>&1 &
	echo "$! mariadbd" >>"$DIR/pids"
	i=0
	until [ -S "$DIR/run/mysqld.sock" ]; do
		i=$((i + 1))
		[ $i -le 150 ] || die "mariadbd did not start: $(tail -n 3 "$DIR/log/mariadbd.log")"
		sleep 0.2
	done
	cat >"$DIR/slurmdbd.conf" <<DBDEOF
# Written by contrib/slurm-cluster.sh --slurmdbd
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket.2
DbdHost=localhost
DbdPort=$((PORT + 1000))
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
PluginDir=$plugindir
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
DBDEOF
	chmod 600 "$DIR/slurmdbd.conf"
	# the storage plugin finds the server's socket through MYSQL_UNIX_PORT
	MYSQL_UNIX_PORT=$DIR/run/mysqld.sock slurmdbd -D </dev/null >>"$DIR/log/slurmdbd.out" 2>&1 &
	echo "$! slurmdbd" >>"$DIR/pids"
	dbdpid=$!
	i=0
	until timeout 5 sacctmgr -n list cluster format=cluster >/dev/null 2>&1; do
		i=$((i + 1))
		alive $dbdpid slurmdbd || die "slurmdbd exited: $(tail -n 5 "$DIR/log/slurmdbd.log" "$DIR/log/slurmdbd.out" 2>/dev/null)"
		[ $i -le 50 ] || die "slurmdbd did not answer: $(tail -n 5 "$DIR/log/slurmdbd.log")"
		sleep 0.2
	done
	timeout 20 sacctmgr -i add cluster topoplace >>"$DIR/log/sacctmgr.out" 2>&1 ||
		die "sacctmgr add cluster: $(tail -n 3 "$DIR/log/sacctmgr.out")"
fi

# ---- network: bridge in the root namespace, one namespace per node ----
ip link add "$BR" type bridge
echo "bridge $BR" >>"$DIR/netres"
ip addr add "$NET.1/24" dev "$BR"
ip link set "$BR" up
# (another cluster may create it at the same moment: only the one whose
# mkdir made it records it)
[ -d /etc/netns ] || { mkdir /etc/netns 2>/dev/null && echo "etcnetnsdir /etc/netns" >>"$DIR/netres"; } || true
# --emu-fabric: the namespaces are the fabric's (eth0 is its data link);
# the control interface is eth1, and the names resolve to data addresses.
cif=eth0
[ -z "$EMU" ] || cif=eth1
i=1
while [ $i -le "$NODES" ]; do
	ns=$(nsname $i)
	if [ -z "$EMU" ]; then
		ip netns add "$ns"
		echo "netns $ns" >>"$DIR/netres"
	fi
	ip link add "tp${tag}v$(printf %03d $i)" type veth peer name $cif netns "$ns"
	ip link set "tp${tag}v$(printf %03d $i)" master "$BR" up
	ip -n "$ns" addr add "$NET.$((10 + i))/24" dev $cif
	ip -n "$ns" link set $cif up
	ip -n "$ns" link set lo up
	if [ -z "$EMU" ]; then
		mkdir -p "/etc/netns/$ns"
		echo "etcnetns $ns" >>"$DIR/netres"
		cp "$DIR/hosts" "/etc/netns/$ns/hosts"
	else
		# emu-fabric owns /etc/netns/$ns (names -> data addresses)
		grep -q " $CTL\$" "/etc/netns/$ns/hosts" || echo "$NET.1 $CTL" >>"/etc/netns/$ns/hosts"
	fi
	i=$((i + 1))
done
if [ -n "$EMU" ]; then
	# new veths drop packets for about a second: wait until each node
	# answers the controller on its control address
	i=1
	pids=
	while [ $i -le "$NODES" ]; do
		ping -q -n -c 1 -i 0.2 -w 10 "$NET.$((10 + i))" >/dev/null 2>&1 &
		pids="$pids $!"
		i=$((i + 1))
	done
	for p in $pids; do wait "$p" || die "a node's control interface does not answer pings"; done
	ep=${EMU_PREFIX%-}
	cat >"$DIR/emu" <<EOF
prefix=$EMU_PREFIX
data_net=$EMU_NET
leaves=$EMU_LEAVES
uplink_ratio=$EMU_RATIO
rate=$EMU_RATE
state=/run/topoplace-emu/$ep
rsh_agent=/run/topoplace-emu/$ep/rsh-agent
data_if=eth0
control_if=eth1
EOF
fi

# ---- slurmctld (root namespace, hostname $CTL) ----
# TP_CTLD_WRAPPER runs it under a tool (valgrind: the process is then
# named TP_CTLD_NAME, e.g. memcheck-amd64-, for the bookkeeping below).
CTLD_NAME=${TP_CTLD_NAME:-slurmctld}
unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "$CTL" \
	${TP_CTLD_WRAPPER:-} slurmctld -D -i \
	</dev/null >>"$DIR/log/slurmctld.out" 2>&1 &
echo "$! $CTLD_NAME" >>"$DIR/pids"
ctlpid=$!
i=0
until timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; do
	i=$((i + 1))
	alive $ctlpid "$CTLD_NAME" || [ $i -lt 3 ] ||
		die "slurmctld exited: $(tail -n 5 "$DIR/log/slurmctld.log" "$DIR/log/slurmctld.out" 2>/dev/null)"
	[ $i -le 100 ] || die "slurmctld did not answer: $(tail -n 5 "$DIR/log/slurmctld.log")"
	sleep 0.2
done

# ---- slurmd, one per namespace ----
# TP_SLURMD_WRAPPER runs node001's slurmd (only: a tool on every node would
# eat the machine) under a tool, then named TP_SLURMD_NAME.
i=1
while [ $i -le "$NODES" ]; do
	n=$(node $i)
	mkdir -p "$DIR/spool/$n"
	wrap= name=slurmd
	if [ $i -eq 1 ] && [ -n "${TP_SLURMD_WRAPPER:-}" ]; then
		wrap=$TP_SLURMD_WRAPPER name=${TP_SLURMD_NAME:-slurmd}
	fi
	ip netns exec "$(nsname $i)" unshare --uts sh -c 'hostname "$1" && shift && exec "$@"' sh "$n" \
		$wrap slurmd -D -N "$n" \
		</dev/null >>"$DIR/log/slurmd-$n.out" 2>&1 &
	echo "$! $name" >>"$DIR/pids"
	i=$((i + 1))
done

# ---- wait for every node to be idle ----
end=$(($(date +%s) + TIMEOUT))
while :; do
	states=$(timeout 10 sinfo -h -N -o '%T' 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ',' || true)
	idle=$(timeout 10 sinfo -h -N -t idle -o '%N' 2>/dev/null | wc -l || true)
	[ "$idle" -eq "$NODES" ] && break
	[ "$(date +%s)" -lt "$end" ] || die "nodes not idle after $TIMEOUT s:$states see $DIR/log"
	while read -r pid name; do
		alive "$pid" "$name" || die "$name (pid $pid) exited; see $DIR/log"
	done <"$DIR/pids"
	sleep 0.3
done
started=1
{
	[ -z "$SLURM_PREFIX" ] || echo "export PATH=$SLURM_PREFIX/bin:$SLURM_PREFIX/sbin:\$PATH"
	echo "export SLURM_CONF=$SLURM_CONF"
} >"$DIR/env"
[ -z "$SLURM_PREFIX" ] || echo "$SLURM_PREFIX" >"$DIR/slurm-prefix"
say "$NODES nodes idle in $(($(date +%s) - t0)) s (topology: $TOPO, $GPUS GPUs/node, dir $DIR${SLURM_PREFIX:+, Slurm $SLURM_VER from $SLURM_PREFIX})"
[ -z "$EMU" ] || say "emulated fabric: $EMU_LEAVES leaves, links $EMU_RATE, up-link $EMU_RATIO:1, data net $EMU_NET.0/24 (eth0), control $NET.0/24 (eth1); $DIR/emu"
cat "$DIR/env"
