#!/bin/sh
# LinkState= in compatible mode (Slurm 22.05): topology/topoplace re-reads
# the link-health file on `scontrol reconfigure` and leaves a host whose
# every cable is down out of the switch table, so cons_tres' topology-aware
# selection no longer picks it. A real mini-cluster (contrib/slurm-cluster.sh,
# 8 nodes with 4 fake GPUs, the interleaved 2-leaf fabric):
#   - healthy (no file): a 4-node job fills one leaf; note one of its hosts
#   - that host's cable at health 0 in the file, no reconfigure yet: the
#     table keeps the host (22.05 reads the file only with the others)
#   - reconfigure: logged "1 host(s) cut off: HOST", the host is in no
#     switch of `scontrol show topology`, the next 4-node job avoids it
#   - a corrupt file + reconfigure: logged, links healthy, the host back
#     and slurmctld scheduling
# Its own network (TP_LS_NET, default 10.219.0) and port (TP_LS_PORT,
# 6962). Needs root, the Slurm 22.05 packages and the built plugin; exit 77
# if not.
. "$(dirname "$0")/lib.sh"

need_slurm 22 jq
need_plugins topology_topoplace
NET=${TP_LS_NET:-10.219.0}
PORT=${TP_LS_PORT:-6962}
dir=$tmp/cluster

PREFIX=
linkstate_cluster "$NET" "$PORT"

grep -q "LinkState $links: no such file: links healthy" "$log" &&
	ok "no LinkState file at start: links healthy (logged)" ||
	bad "slurmctld log: missing LinkState file"

# job4 NAME: a 4-node exclusive job, run to its end; its host list in $got
job4() {
	j=$(timeout 10 sbatch --parsable -J "$1" -o /dev/null -N 4 --exclusive --wrap true)
	[ -n "$j" ] || { bad "sbatch $1"; got=; return; }
	wait_state "$j" COMPLETED FAILED CANCELLED TIMEOUT || bad "job $j ($1) did not end in 30 s"
	got=$(hostset "$(field "$j" NodeList)")
	echo "# job $j ($1): $got"
}
# topo_hosts: every host some switch of scontrol show topology lists, one
# a line, in $tmp/topo_hosts; fails when scontrol does
topo_hosts() {
	timeout 10 scontrol show topology >"$tmp/topo" 2>/dev/null || return 1
	tr ' ' '\n' <"$tmp/topo" | sed -n 's/^Nodes=//p' | while read -r nl; do hostset "$nl"; done |
		tr ' ' '\n' | sed '/^$/d' | sort -u >"$tmp/topo_hosts"
}
in_topology() { # HOST: listed under some switch of scontrol show topology
	topo_hosts && grep -qx "$1" "$tmp/topo_hosts"
}

job4 healthy
host=${got%% *}
[ -n "$host" ] || { bad "no host from the healthy job"; finish; }
link=$(jq -r --arg h "$host" '.cas | to_entries[] | select(.value.desc | startswith($h + " ")) |
	.key' "$dir/fabric.json" | head -1)
link=$(jq -r --argjson c "$link" '.links | to_entries[] |
	select((.value[0] == "ca" and .value[1] == $c) or (.value[3] == "ca" and .value[4] == $c)) |
	.key' "$dir/fabric.json" | head -1)
[ -n "$link" ] || { bad "no fabric link of $host"; finish; }
printf '{"format":"topoplace-state/1","links":[{"link":%s,"health":0,"reason":"down"}]}\n' \
	"$link" >"$links.tmp"
mv "$links.tmp" "$links"

# without reconfigure 22.05 keeps the table it has
sleep 1
in_topology "$host" && ok "file changed, no reconfigure: $host still in the switch table" ||
	bad "$host left the table without a reconfigure"

timeout 20 scontrol reconfigure >/dev/null 2>&1
wait_log "LinkState $links: 1 of [0-9]* links degraded, 1 host(s) cut off: $host\$" 1 &&
	ok "reconfigure: logged $(grep -o 'LinkState .*cut off.*' "$log" | tail -1)" ||
	bad "reconfigure: no 'cut off: $host' in slurmctld.log"
# (an empty or failed answer would also lack $host: the other 7 must be there)
if ! topo_hosts; then
	bad "scontrol show topology after reconfigure"
elif grep -qx "$host" "$tmp/topo_hosts"; then
	bad "$host still in scontrol show topology"
elif [ "$(wc -l <"$tmp/topo_hosts")" -ne 7 ]; then
	bad "scontrol show topology lists $(wc -l <"$tmp/topo_hosts") hosts, not the 7 besides $host"
else
	ok "$host is in no switch of scontrol show topology, the 7 others are"
fi
job4 linkdown
case " $got " in
*" $host "*) bad "the job after reconfigure uses $host behind the dead link: $got" ;;
"  ") bad "no host list for the job after reconfigure" ;;
*) ok "the next 4-node job avoids $host: $got" ;;
esac

printf '{"format":"topoplace-state/1","links":[{"link":' >"$links"
timeout 20 scontrol reconfigure >/dev/null 2>&1
wait_log "error: topology/topoplace: LinkState .*links healthy" 1 &&
	ok "corrupt file + reconfigure: $(grep -o 'LinkState .*links healthy' "$log" | tail -1 | cut -c1-120)" ||
	bad "corrupt LinkState file not logged"
in_topology "$host" && ok "corrupt file: links healthy, $host back in the table" ||
	bad "corrupt file: $host not back"
job4 corrupt
[ -n "$got" ] && ok "slurmctld schedules with a corrupt LinkState file" ||
	bad "no job ran with a corrupt LinkState file"
timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
