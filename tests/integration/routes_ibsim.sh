#!/bin/sh
# routes_ibsim.sh - the cost model routes a three-level fat tree as a real
# subnet manager does: OpenSM (its default engine, on ibsim) spreads the
# LIDs of one host over a spine's up-links to the cores, so a ring between
# pods runs at the hosts' NIC rate when the cores are not oversubscribed.
#
# A fat tree of 2 pods x 2 leaves x 2 hosts, 4 NICs each, 2 spines a pod
# and 2 non-blocking cores (`fabric generate fat-tree --pods 2`). From
# every spine's forwarding table (ibroute), each host of the other pod
# must leave by as many distinct up-ports as it has LIDs (4); then
# `topoplace cost` of a two-host ring across the pods must match the one
# inside a pod, its bottleneck a host cable. The model used
# to spend the destination's digit at the leaf (textbook D-mod-K) and sent
# a host's four flows up one spine-core cable: half the rate here, an
# eighth with 8 NICs.
#
# Needs ibsim-utils, libumad2sim0, opensm and infiniband-diags; exit 77
# without them.
set -eu
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE

command -v ibroute >/dev/null 2>&1 || skip_all "ibroute (infiniband-diags) not installed"
"$T" fabric generate fat-tree --pods 2 --leaves 4 --spines 2 --hosts-per-leaf 2 \
	--nics-per-host 4 --gpus-per-host 4 --prefix node -o "$tmp/ft.json" >/dev/null
"$T" fabric ibsim-net "$tmp/ft.json" -o "$tmp/ft.net"
ibsim_sm_up "$tmp/ft.net"

ibsim_exec ibswitches >"$tmp/sw" 2>/dev/null || { bad "ibswitches"; finish; }
# spine LIDs: 'Switch : GUID ports N "spine01" enhanced port 0 lid L lmc 0'
sed -n 's/.*"\(spine[0-9]*\)".* lid \([0-9]*\) .*/\1 \2/p' "$tmp/sw" | sort >"$tmp/spines"
[ "$(wc -l <"$tmp/spines")" -eq 4 ] || { bad "4 spines with LIDs ($(wc -l <"$tmp/spines"))"; finish; }
# spine01-02 are pod 1 (node001-004), spine03-04 pod 2 (node005-008)
checked=0
while read -r sw lid; do
	case $sw in spine01 | spine02) far='node00[5-8]' ;; *) far='node00[1-4]' ;; esac
	ibsim_exec ibroute "$lid" >"$tmp/lft" 2>/dev/null || { bad "ibroute $sw"; continue; }
	for h in $(grep -o "'$far " "$tmp/lft" | tr -d "' " | sort -u); do
		lids=$(grep -c "'$h mlx5_" "$tmp/lft")
		ports=$(grep "'$h mlx5_" "$tmp/lft" | awk '{ print $2 }' | sort -u | wc -l)
		if [ "$lids" -eq 4 ] && [ "$ports" -eq 4 ]; then
			checked=$((checked + 1))
		else
			bad "$sw: $h's $lids LIDs leave by $ports ports"
			grep "'$h mlx5_" "$tmp/lft" | sed 's/^/#   /'
		fi
	done
done <"$tmp/spines"
[ "$checked" -eq 16 ] && ok "OpenSM: from each spine, each far host's 4 LIDs take 4 up-ports" ||
	bad "$checked of 16 spine/host pairs checked"

cost() { "$T" cost --fabric "$tmp/ft.json" --hosts "$1" --bytes 1G --json; }
cost node001,node005 >"$tmp/far.json" && cost node001,node003 >"$tmp/near.json" ||
	{ bad "topoplace cost"; finish; }
far=$(jq -r .bottleneck_gbps "$tmp/far.json")
near=$(jq -r .bottleneck_gbps "$tmp/near.json")
if [ "$far" = "$near" ] && [ "$far" = 400 ]; then
	ok "cost model: a ring across the pods runs at the NIC rate ($far Gb/s), as inside one"
else
	bad "cost model: across the pods $far Gb/s, inside one $near Gb/s (want 400 both)"
	jq -c . "$tmp/far.json" | sed 's/^/#   /'
fi
finish
