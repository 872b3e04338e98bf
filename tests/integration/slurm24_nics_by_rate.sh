#!/bin/sh
# topology/topoplace in native mode (Slurm 24.11) prices NICs by rate when
# topoplace.conf says NicsByRate=yes, as `topoplace place --nics-by-rate`
# does. The cluster's usual shape (8 nodes with 4 fake GPUs, the
# interleaved 2-leaf fat tree, 2 up-links per leaf) with a NIC per GPU,
# node003's mlx5_1 at half width and node005's mlx5_2 cable down. A
# 7-node job leaves one host out: split evenly over its NICs, node003 runs
# a ring at half pace and node005 at 3/4, so node003 is left out; by rate
# node003 keeps 7/8 and node005 3/4, and the answer differs (checked
# first, which keeps the test live). With NicsByRate=yes the job must land
# where `topoplace place --nics-by-rate` puts it, without the key where
# `topoplace place` does; slurmctld's fabric line says "NICs priced by
# rate" only with the key. Runs beside other clusters: its own network
# (TP_NR_NET, default 10.208.0) and port (TP_NR_PORT, 6993). Needs root,
# the 24.11 build and the native plugin; exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24 jq
need_plugins topology_topoplace
NET=${TP_NR_NET:-10.208.0}
PORT=${TP_NR_PORT:-6993}
dir=$tmp/cluster
t0=$(date +%s)

cluster8_fabric "$tmp/clean.json" 0
ca() { jq "[.cas | to_entries[] | select(.value.desc == \"$1\")][0].key" "$tmp/clean.json"; }
a=$(ca "node003 mlx5_1") b=$(ca "node005 mlx5_2")
jq -c "(.links[] | select(.[3] == \"ca\" and .[4] == $a)) |= (.[6] = (.[6] / 2)) |
	(.links[] | select(.[3] == \"ca\" and .[4] == $b)) |= (.[8] = false)" \
	"$tmp/clean.json" >"$tmp/fabric.json" || bad "fabric edit"
fabric=$tmp/fabric.json
"$TOPOPLACE" fabric hosts "$fabric" >"$tmp/hosts" 2>&1
grep -q '^node003 .*weakly cabled: 4 cables, a ring 800 of 1600' "$tmp/hosts" &&
	grep -q '^node005 .*weakly cabled: 3 cables, a ring 1200 of 1600' "$tmp/hosts" &&
	ok "node003 has a NIC at half width, node005 a cable down" || bad "fabric hosts: $(cat "$tmp/hosts")"

placed() { # [--nics-by-rate]: topoplace place's 7 hosts, sorted
	"$TOPOPLACE" place --fabric "$fabric" --request nodes=7,exclusive --policy topoplace --json "$@" \
		>"$tmp/place.json" 2>"$tmp/place.err" || { echo none; return; }
	jq -r '.hosts[]' "$tmp/place.json" | sort | tr '\n' ' '
}
even=$(placed)
rate=$(placed --nics-by-rate)
echo "# topoplace place: evenly $even; by rate $rate"
[ "$even" != none ] && [ "$rate" != none ] && [ "$even" != "$rate" ] &&
	ok "the two pricings place a 7-node job differently: the check is live" ||
	bad "topoplace place: evenly '$even', by rate '$rate' ($(cat "$tmp/place.err"))"

cluster_trap slurmctld.log 'topoplace\|fatal\|error' 25
start() { # CONF_LINE...
	topoplace_cluster8 "$NET" "$PORT" "$fabric" '# topology/topoplace, NICs by rate (test)' \
		'PriceBudget=96' "$@"
}
job() { exclusive_job "$1" 7; } # NAME: a 7-node exclusive job's hosts as $got

start 'NicsByRate=yes'
grep -q 'fabric .*NICs priced by rate' "$log" && ok "slurmctld: $(grep -o 'fabric .*NICs priced by rate' "$log" | head -1)" ||
	bad "no 'NICs priced by rate' in slurmctld's fabric line"
job byrate
[ "$got" = "$rate" ] && ok "NicsByRate=yes: the job lands where place --nics-by-rate puts it ($got)" ||
	bad "NicsByRate=yes: job on $got, place --nics-by-rate: $rate"
stop_cluster

start
grep -q 'NICs priced by rate' "$log" && bad "'NICs priced by rate' without the key" ||
	ok "without the key the fabric line says nothing of rates"
job even
[ "$got" = "$even" ] && ok "without NicsByRate: the job lands where place puts it ($got)" ||
	bad "without NicsByRate: job on $got, place: $even"

timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
