#!/bin/bash
# Emulate a 2-level fabric on one machine with network namespaces.
#
#   emu-fabric.sh [OPTIONS] start     build it (idempotent), ping through it, write the fabric JSON
#   emu-fabric.sh stop                remove everything start made (namespaces, /etc/netns, state)
#   emu-fabric.sh status              namespaces, shaping and up-link byte counters
#   emu-fabric.sh exec HOST CMD...    run CMD inside HOST's namespace with hostname HOST
#   emu-fabric.sh hosts               the host names, one a line, in name order
#
# Options go before or after the command (before it for exec, whose arguments are HOST CMD...);
# stop, status and exec use the same --prefix as start.
#
# Layout: every host is a namespace with one veth (eth0) straight into its leaf namespace, where a
# bridge joins the host ports and the up-link; with 2 leaves the up-link is one veth between the
# leaf namespaces, with more a spine namespace holds a bridge every leaf's up-link joins. Nothing
# is created in the root namespace. tbf shapes the sending side of both ends of every veth, so
# each direction of each link has its own rate; tbf counts frame bytes, so TCP goodput over a
# 400 Mbit/s link tops at ~383 Mbit/s (MTU 1500).
#
# Options (environment in brackets):
#   --hosts N (8) [TPE_HOSTS]  --leaves L (2) [TPE_LEAVES]
#   --uplink-ratio R (4) [TPE_UPLINK_RATIO]: up-link rate = host rate x hosts-per-leaf / R;
#       0 or 1 = non-blocking
#   --rate RATE (400mbit) [HOST_RATE]: host-link rate, tc syntax (kbit, mbit, gbit)
#   --no-interleave: hosts fill leaf after leaf (default: host i on leaf (i-1) mod L, so the names
#       Slurm lists alternate leaves)
#   --name-prefix P (node) [TPE_NAME_PREFIX]: host names P001, P002, ...
#   --prefix P (tpe-) [TPE_PREFIX]: prefix of every namespace this script creates: 1..6 of
#       a-z, 0-9 and -, starting with a letter; stop deletes every namespace whose name starts
#       with it, so two fabrics side by side need prefixes neither of which starts the other
#   --fabric-out FILE: where to write the topoplace fabric JSON (default STATE/fabric.json)
#   --gpus-per-host N (1): GPUs per host in the fabric JSON
#   --subnet A.B.C (10.201.0) [TPE_SUBNET]: the hosts' /24 (host i is A.B.C.i); it only exists
#       inside the fabric's namespaces, but two fabrics side by side should differ
#   [TOPOPLACE]: the topoplace CLI (default: ../build/cli/topoplace next to this script)
# State lives in /run/topoplace-emu/<prefix>: config, hosts, fabric.json, rsh-agent (an Open MPI
# plm_rsh_agent that enters the host's namespace).
set -eu

prefix=${TPE_PREFIX:-tpe-}
nhosts=${TPE_HOSTS:-8}
nleaves=${TPE_LEAVES:-2}
ratio=${TPE_UPLINK_RATIO:-4}
rate=${HOST_RATE:-400mbit}
interleave=1
name_prefix=${TPE_NAME_PREFIX:-node}
gpus=1
fabric_out=""
here=$(cd "$(dirname "$0")" && pwd)
topoplace=${TOPOPLACE:-$here/../build/cli/topoplace}
subnet=${TPE_SUBNET:-10.201.0}

die() { echo "emu-fabric: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -eu/p' "$0" | sed -e '/^set -eu/d' -e 's/^# \{0,1\}//'; }
usage_error() { echo "emu-fabric: $*" >&2; exit 2; }
need() { [ $# -ge 2 ] || usage_error "$1 needs a value"; }

cmd=""
while [ $# -gt 0 ]; do
	case $1 in
	--hosts) need "$@"; nhosts=$2; shift 2 ;;
	--leaves) need "$@"; nleaves=$2; shift 2 ;;
	--uplink-ratio) need "$@"; ratio=$2; shift 2 ;;
	--rate) need "$@"; rate=$2; shift 2 ;;
	--no-interleave) interleave=0; shift ;;
	--interleave) interleave=1; shift ;;
	--name-prefix) need "$@"; name_prefix=$2; shift 2 ;;
	--prefix) need "$@"; prefix=$2; shift 2 ;;
	--fabric-out) need "$@"; fabric_out=$2; shift 2 ;;
	--gpus-per-host) need "$@"; gpus=$2; shift 2 ;;
	--subnet) need "$@"; subnet=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	-*) usage_error "unknown option $1 (try --help)" ;;
	*)
		[ -z "$cmd" ] || usage_error "$cmd: unexpected argument '$1' (try --help)"
		cmd=$1
		shift
		[ "$cmd" != exec ] || break ;;
	esac
done
[ -n "$cmd" ] || { usage >&2; exit 2; }

case $nhosts$nleaves in *[!0-9]*) die "--hosts and --leaves take numbers" ;; esac
case $ratio in '' | *[!0-9]*) die "--uplink-ratio takes a whole number (0/1 = non-blocking)" ;; esac
{ [ "$nhosts" -ge 1 ] && [ "$nhosts" -le 250 ]; } || die "--hosts: 1..250"
{ [ "$nleaves" -ge 1 ] && [ "$nleaves" -le 16 ]; } || die "--leaves: 1..16"
[ $((nhosts % nleaves)) -eq 0 ] || die "--hosts must be a multiple of --leaves"
# The prefix selects what stop deletes: a plain name only, matched literally (never as a pattern).
case $prefix in
'' | [!a-z]* | *[!a-z0-9-]*) die "--prefix: a-z, 0-9 and - only, starting with a letter (got '$prefix')" ;;
esac
[ ${#prefix} -le 6 ] || die "--prefix: at most 6 characters (got '$prefix')"
echo "$subnet" | grep -Eq '^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$' || die "--subnet: A.B.C, got '$subnet'"
state=/run/topoplace-emu/${prefix%-}
hpl=$((nhosts / nleaves))

# Rate in kbit/s from tc syntax (400mbit, 1gbit, 250000kbit).
rate_kbit() {
	case $1 in
	*gbit) echo $((${1%gbit} * 1000000)) ;;
	*mbit) echo $((${1%mbit} * 1000)) ;;
	*kbit) echo $((${1%kbit})) ;;
	*) die "rate '$1': use kbit, mbit or gbit" ;;
	esac
}

host_name() { printf '%s%03d\n' "$name_prefix" "$1"; }
host_leaf() {
	if [ "$interleave" = 1 ]; then echo $((($1 - 1) % nleaves)); else echo $((($1 - 1) / hpl)); fi
}
ns_of() { echo "$prefix$1"; }

shape() { # NS DEV RATE
	ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst 256kb latency 20ms
}

config_line() {
	echo "hosts=$nhosts leaves=$nleaves ratio=$ratio rate=$rate interleave=$interleave" \
		"names=$name_prefix gpus=$gpus subnet=$subnet"
}

our_namespaces() {
	ip netns list 2>/dev/null | awk -v p="$prefix" 'index($1, p) == 1 { print $1 }'
}

write_rsh_agent() {
	cat >"$state/rsh-agent" <<EOF
#!/bin/sh
# Open MPI plm_rsh_agent: run the launcher's command string inside host \$1's namespace.
host=\$1; shift
exec ip netns exec "$prefix\$host" unshare --uts sh -c "hostname \$host; \$*"
EOF
	chmod 755 "$state/rsh-agent"
}

write_hosts_files() {
	local i ns
	{
		echo "127.0.0.1 localhost"
		for i in $(seq 1 "$nhosts"); do echo "$subnet.$i $(host_name "$i")"; done
	} >"$state/etc-hosts"
	for ns in $(our_namespaces); do
		mkdir -p "/etc/netns/$ns"
		cp "$state/etc-hosts" "/etc/netns/$ns/hosts"
	done
}

# The fabric JSON the placement sees: topoplace's own fat-tree generator (one spine, one up-link
# per leaf, one NIC a host: a namespace has one data interface, whatever its GPUs; the generator's
# default, one a GPU, would price a host of G GPUs at G links) with the link speeds rewritten to
# the shaped rates, then checked against what was built.
write_fabric() {
	local out=${fabric_out:-$state/fabric.json} host_lane up_lane il="" i want got
	if [ ! -x "$topoplace" ]; then
		echo "emu-fabric: $topoplace not built: no fabric JSON written" >&2
		return 0
	fi
	command -v jq >/dev/null || { echo "emu-fabric: jq missing: no fabric JSON" >&2; return 0; }
	host_lane=$(echo "scale=6; $(rate_kbit "$rate") / 1000000 / 4" | bc)
	up_lane=$(echo "scale=6; $host_lane * $hpl / $eff_ratio" | bc)
	[ "$interleave" = 1 ] && il=--interleave
	# shellcheck disable=SC2086
	"$topoplace" fabric generate fat-tree --leaves "$nleaves" --spines 1 \
		--hosts-per-leaf "$hpl" --uplinks 1 $il --gpus-per-host "$gpus" --nics-per-host 1 --link-gbps 1 \
		--prefix "$name_prefix" -o - |
		jq -c --argjson h "$host_lane" --argjson u "$up_lane" \
			'.links |= map(if .[0] == "switch" and .[3] == "switch" then .[7] = $u else .[7] = $h end)' \
			>"$out.tmp"
	"$topoplace" fabric hosts "$out.tmp" --json >"$state/fabric-hosts.json"
	for i in $(seq 1 "$nhosts"); do
		want="$(host_name "$i") leaf$(printf '%02d' $(($(host_leaf "$i") + 1)))"
		got=$(jq -r ".[$((i - 1))] | \"\(.name) \(.leaves[0])\"" "$state/fabric-hosts.json")
		[ "$want" = "$got" ] || die "fabric JSON disagrees with the emulation: '$got', built '$want'"
	done
	mv "$out.tmp" "$out"
	[ -n "$fabric_out" ] && cp "$out" "$state/fabric.json"
	echo "emu-fabric: fabric JSON $out"
}

# New veths drop packets for about a second: wait until every host answers host 1 (and host 1
# answers the last), all pings in parallel, each with a deadline.
wait_reachable() {
	local i pids="" fail=0 first
	first=$(ns_of "$(host_name 1)")
	for i in $(seq 1 "$nhosts"); do
		ip netns exec "$first" ping -q -n -c 1 -i 0.2 -w 10 "$subnet.$i" >/dev/null 2>&1 &
		pids="$pids $!"
	done
	for i in $pids; do wait "$i" || fail=1; done
	[ "$fail" = 0 ] || die "some hosts do not answer pings after 10 s (see: $0 status)"
}

build() {
	local i l h ns leafns host_kbit up_rate spine
	host_kbit=$(rate_kbit "$rate")
	up_rate="$((host_kbit * hpl / eff_ratio))kbit"
	mkdir -p "$state"
	for l in $(seq 0 $((nleaves - 1))); do
		leafns=${prefix}leaf$l
		ip netns add "$leafns"
		ip -n "$leafns" link set lo up
		ip -n "$leafns" link add br0 type bridge
		ip -n "$leafns" link set br0 up
		# Bridged frames must not go through iptables (br_netfilter, when loaded).
		ip netns exec "$leafns" sh -c \
			'[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ] ||
			 echo 0 >/proc/sys/net/bridge/bridge-nf-call-iptables'
	done
	# Up-links: one veth between two leaves, else every leaf to a spine bridge.
	if [ "$nleaves" -eq 2 ]; then
		ip link add up0 netns "${prefix}leaf0" type veth peer name up0 netns "${prefix}leaf1"
		for l in 0 1; do
			ip -n "${prefix}leaf$l" link set up0 master br0 up
			shape "${prefix}leaf$l" up0 "$up_rate"
		done
	elif [ "$nleaves" -gt 2 ]; then
		spine=${prefix}spine
		ip netns add "$spine"
		ip -n "$spine" link set lo up
		ip -n "$spine" link add br0 type bridge
		ip -n "$spine" link set br0 up
		for l in $(seq 0 $((nleaves - 1))); do
			ip link add up0 netns "${prefix}leaf$l" type veth peer name "l$l" netns "$spine"
			ip -n "${prefix}leaf$l" link set up0 master br0 up
			ip -n "$spine" link set "l$l" master br0 up
			shape "${prefix}leaf$l" up0 "$up_rate"
			shape "$spine" "l$l" "$up_rate"
		done
	fi
	for i in $(seq 1 "$nhosts"); do
		h=$(host_name "$i")
		ns=$(ns_of "$h")
		leafns=${prefix}leaf$(host_leaf "$i")
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip link add eth0 netns "$ns" type veth peer name "h$i" netns "$leafns"
		ip -n "$ns" addr add "$subnet.$i/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$leafns" link set "h$i" master br0 up
		shape "$ns" eth0 "$rate"
		shape "$leafns" "h$i" "$rate"
		echo "$h $ns $subnet.$i leaf$(host_leaf "$i")" >>"$state/hosts.tmp"
	done
	mv "$state/hosts.tmp" "$state/hosts"
	write_hosts_files
	write_rsh_agent
	wait_reachable
	config_line >"$state/config"
}

do_start() {
	[ "$(id -u)" -eq 0 ] || die "start: run as root"
	for t in ip tc ping unshare bc; do command -v $t >/dev/null || die "$t missing (contrib/install-deps.sh)"; done
	if [ -f "$state/config" ] && [ "$(cat "$state/config")" = "$(config_line)" ] &&
		[ "$(our_namespaces | wc -l)" -eq $((nhosts + nleaves + (nleaves > 2 ? 1 : 0))) ]; then
		wait_reachable
		echo "emu-fabric: already up ($(config_line))"
		[ -n "$fabric_out" ] && write_fabric
		return 0
	fi
	do_stop quiet
	build
	write_fabric
	local blocking="$ratio:1" order="in leaf order"
	[ "$eff_ratio" -eq 1 ] && blocking=non-blocking
	[ "$interleave" = 1 ] && order=interleaved
	echo "emu-fabric: up: $nhosts hosts on $nleaves leaves, links $rate, up-link" \
		"$(($(rate_kbit "$rate") * hpl / eff_ratio / 1000))mbit ($blocking), names $order"
}

do_stop() {
	local ns pid failed=""
	[ "$(id -u)" -eq 0 ] || die "stop: run as root"
	for ns in $(our_namespaces); do
		# Anything still running in our namespaces was started through this fabric.
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
	done
	for ns in $(our_namespaces); do
		if ip netns del "$ns"; then rm -rf "/etc/netns/$ns"; else failed="$failed $ns"; fi
	done
	[ -z "$failed" ] || die "stop: could not delete namespace(s)$failed"
	rm -rf "$state"
	[ "${1:-}" = quiet ] || echo "emu-fabric: down"
}

do_status() {
	local ns
	if [ ! -f "$state/config" ]; then
		echo "emu-fabric: down ($(our_namespaces | wc -l) namespaces with prefix $prefix)"
		return 1
	fi
	echo "emu-fabric: up: $(cat "$state/config")"
	echo "state: $state"
	column -t "$state/hosts" 2>/dev/null || cat "$state/hosts"
	for ns in $(our_namespaces | grep -E "leaf|spine"); do
		ip netns exec "$ns" tc -s qdisc show | awk -v ns="$ns" '
			/qdisc tbf/ { dev = $5; r = $0; sub(/.*rate /, "", r); sub(/ .*/, "", r) }
			/Sent/ && dev ~ /^(up0|l[0-9]+)$/ { printf "%s %s rate %s sent %s bytes\n", ns, dev, r, $2 }'
	done
}

do_exec() {
	[ $# -ge 2 ] || die "exec HOST CMD..."
	local h=$1
	shift
	ip netns list | awk '{print $1}' | grep -qxF "$(ns_of "$h")" || die "no host $h"
	# shellcheck disable=SC2016
	exec ip netns exec "$(ns_of "$h")" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$h" "$@"
}

# Ratio 0 or 1: the up-link is as wide as its leaf's hosts together (non-blocking).
eff_ratio=$ratio
[ "$ratio" -le 1 ] && eff_ratio=1

case $cmd in
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
exec) do_exec "$@" ;;
hosts)
	if [ -f "$state/hosts" ]; then awk '{print $1}' "$state/hosts"
	else for i in $(seq 1 "$nhosts"); do host_name "$i"; done; fi ;;
*) die "unknown command $cmd (start|stop|status|exec|hosts)" ;;
esac
