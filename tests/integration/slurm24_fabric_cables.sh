#!/bin/sh
# topology/topoplace in native mode (Slurm 24.11) prices the fabric FILE's
# own degraded cables, with no LinkState file: the cluster's usual fabric
# (8 nodes with 4 fake GPUs, the interleaved 2-leaf fat tree, 2 up-links
# per leaf) with one up-link of leaf 0 at a quarter of its rate (2 lanes
# of 50 Gb/s: 100 of 400 Gb/s).
# A 6-node job (one whole leaf and two hosts of the other) must land where
# `topoplace place` (which prices) puts it on that fabric. The structure
# alone does not see an up-link's rate, so a plugin that does not price
# there puts the job elsewhere: the check below that
# the priced answer differs from the structural one keeps this test live.
# (A host's own cable at half width would not do: the structure already
# leaves weakly cabled hosts out.) Runs beside other clusters: its own
# network (TP_FC_NET, default 10.205.0) and port (TP_FC_PORT, 6965).
# Needs root, the 24.11 build and the native plugin; exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24
need_plugins topology_topoplace
NET=${TP_FC_NET:-10.205.0}
PORT=${TP_FC_PORT:-6965}
dir=$tmp/cluster
t0=$(date +%s)

# the fabric contrib/slurm-cluster.sh generates for 8 nodes, then the
# first up-link of leaf 0 (switch 0) at a quarter of its rate
cluster8_fabric "$tmp/healthy.json" 1
up=$(jq '[.links | to_entries[] | select(.value[0] == "switch" and .value[1] == 0 and .value[3] == "switch")][0].key' \
	"$tmp/healthy.json")
[ -n "$up" ] && [ "$up" != null ] && ok "leaf 0's first up-link is link $up" || bad "no up-link of switch 0"
jq -c ".links[$up][6] = 2 | .links[$up][7] = 50" "$tmp/healthy.json" >"$tmp/fabric.json"

# what the engine answers on that fabric (priced); the structure's
# answer is the plugin's own with PriceBudget=0, below
fabric=$tmp/fabric.json
want=$(place nodes=6,exclusive)
[ "$want" != none ] && ok "topoplace place on the degraded fabric: $want" ||
	bad "topoplace place: $(cat "$tmp/place.err")"

cluster_trap slurmctld.log 'topoplace\|fatal\|error' 25
# start CONF_LINE: the cluster on the degraded fabric, no LinkState
start() {
	topoplace_cluster8 "$NET" "$PORT" "$fabric" \
		'# topology/topoplace, degraded fabric file, no LinkState (test)' "$1"
}
job() { exclusive_job "$1" 6; } # NAME: a 6-node exclusive job's hosts as $got

# ---- pricing off: the structure's answer ----
start 'PriceBudget=0'
job structural
structural=$got
stop_cluster
[ "$structural" != "$want" ] && ok "the structure alone puts it elsewhere ($structural): the check is live" ||
	bad "the structural answer is the priced one ($want): this fabric tests nothing"

# ---- pricing on (the simulator's budget), still no LinkState ----
start 'PriceBudget=96'
job priced
[ "$got" = "$want" ] && ok "slurmctld priced the fabric file's cables: $got = topoplace place" ||
	bad "job on $got, topoplace place: $want (the fabric's half-width up-link not priced)"
grep -q 'LinkState' "$log" && bad "a LinkState line in the log: $(grep -m1 LinkState "$log")" ||
	ok "no LinkState file involved"

timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
