#!/bin/sh
# The monitor feeds the 24.11 controller: a real mini-cluster
# (contrib/slurm-cluster.sh, 8 nodes with 4 fake GPUs on the interleaved
# 2-leaf fabric) whose topoplace.conf names LinkState=links.json, the file
# `topoplace monitor --interval 1` writes from ibsim + opensm running the
# cluster's own fabric (its GUIDs, so links map one to one):
#   - healthy fabric: the monitor writes no degraded link, a 6-node job
#     lands where `topoplace place` puts it on healthy links
#   - an up-link of a leaf taken down on ibsim's console (Unlink): the
#     monitor marks it 0, slurmctld re-reads the file without a restart,
#     and the next 6-node job lands where `topoplace place --state` on the
#     monitor's file puts it - not where it went on healthy links
#   - ReLink: the file clears, the structural answer comes back
# Corrupt, missing and rewritten LinkState files are slurm24_linkstate.sh's.
# Its own network (TP_HS_NET, default 10.212.0) and port (TP_HS_PORT,
# 6952). Needs root, the 24.11 build, the native plugin, ibsim and opensm;
# exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24
need_plugins topology_topoplace
NET=${TP_HS_NET:-10.212.0}
PORT=${TP_HS_PORT:-6952}
dir=$tmp/cluster

# a build without libibmad says so at once (no ibsim needed to find out)
"$TOPOPLACE" fabric generate fat-tree --leaves 2 --spines 1 --hosts-per-leaf 1 \
	-o "$tmp/probe.json" >/dev/null 2>&1
timeout 20 "$TOPOPLACE" fabric health --fabric "$tmp/probe.json" 2>&1 |
	grep -q 'built without' && skip_all "built without libibmad"

linkstate_cluster "$NET" "$PORT"

"$TOPOPLACE" fabric ibsim-net "$fabric" -o "$tmp/f.net"
ibsim_sm_up "$tmp/f.net" cluster_cleanup
mkdir "$tmp/mon"
(cd "$tmp/mon" && LD_PRELOAD=$UMAD2SIM exec timeout --foreground 300 "$TOPOPLACE" monitor \
	--fabric "$fabric" --state-out "$links" --interval 1 2>"$tmp/monitor.err") &
MON_PID=$!

# wait_links JQ: the monitor's file satisfies JQ within one sweep + slack
wait_links() {
	i=0
	while [ $i -lt 25 ]; do
		jq -e "$1" "$links" >/dev/null 2>&1 && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

wait_links '.links == []' && ok "monitor: healthy fabric, no degraded link" ||
	bad "monitor wrote no healthy state: $(cat "$links" 2>/dev/null)"
wait_log "LinkState .*: 0 of [0-9]* links degraded" 1 &&
	ok "slurmctld read the monitor's file" ||
	bad "slurmctld read the monitor's LinkState file"
spanning healthy ""
healthy=$got

# the first up-link of the leaf the healthy job filled: down on ibsim
up=$(jq -r '.links | to_entries[] | select(.value[0] == "switch" and .value[3] == "switch") | .key' \
	"$fabric" | head -1)
sw=$(jq -r ".links[$up][1]" "$fabric")
swport=$(jq -r ".links[$up][2]" "$fabric")
name=$(jq -r ".switches[$sw].guid" "$fabric" | sed 's/^0x/S-/')
# issue 14's goal is interval + 1 s from the fault to what the next
# placement sees: the two delays are printed (figures, not asserted: the
# polls here add up to 0.1 s and 0.2 s)
t0=$(date +%s%N)
ibsim_con "Unlink \"$name\"[$swport]"
wait_links ".links | map(select(.link == $up and .health == 0)) | length == 1" &&
	ok "monitor: up-link $up ($name port $swport) down within one sweep" \
		"($((($(date +%s%N) - t0) / 1000000)) ms after the Unlink, interval 1 s)" ||
	bad "monitor did not mark up-link $up down: $(cat "$links")"
cp "$links" "$tmp/down.json"
wait_log "LinkState .*: 1 of [0-9]* links degraded" 1 &&
	ok "log: $(grep -o 'LinkState .*links degraded.*' "$log" | tail -1)" \
		"($((($(date +%s%N) - t0) / 1000000)) ms after the Unlink)" ||
	bad "slurmctld re-read the monitor's file"
spanning linkdown "$tmp/down.json"
[ "$got" != "$healthy" ] && ok "a down up-link moves the job ($healthy -> $got)" ||
	bad "the job lands as on healthy links ($got)"

ibsim_con "ReLink \"$name\"[$swport]"
wait_links '.links == []' && ok "ReLink: the monitor clears the link" ||
	bad "after ReLink: $(cat "$links")"
wait_log "LinkState .*: 0 of [0-9]* links degraded" 2 ||
	bad "slurmctld re-read the cleared file"
spanning relinked ""
[ "$got" = "$healthy" ] && ok "healthy again: the structural answer ($got)" ||
	bad "after ReLink: $got, healthy: $healthy"

timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
[ "$failures" -eq 0 ] || tail -5 "$tmp/monitor.err"
finish
