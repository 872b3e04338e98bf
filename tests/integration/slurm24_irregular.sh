#!/bin/sh
# topology/topoplace in native mode (Slurm 24.11) on an irregular fabric:
# the cluster's usual fabric (8 nodes with 4 fake GPUs, the interleaved
# 2-leaf fat tree under one spine) with node007 and node008 moved to a
# third leaf cabled only to leaf01, as plafrim's dump has three leaves
# that reach the spine only through other leaves. Until the model routed
# cables between switches of one level, that leaf was a tree of its own:
# the switch table had two roots, and an 8-node job could never start.
#   - topoplace fabric topology-conf: one tree, the hanging leaf under the
#     spine's group
#   - scontrol show topology: the hanging leaf a level-0 switch under the
#     one level-1 switch
#   - an 8-node --exclusive job runs on all eight nodes, placed by the
#     engine (Slurm's own selection ran it too when the leaf was apart)
#   - a 2-node job asked for on the hanging leaf's nodes runs there
#   - with node001, node003 and that leaf's nodes at Weight=10, a 2-node
#     job goes to the four lighter nodes (the engine, as tree would), a
#     5-node one to tree's selection (all four light nodes and a heavy)
#   - with that leaf's hosts given no GPUs in the fabric (reconfigured), a
#     job asking none runs on them beside a job on the other six
#   - with 8 GPUs a host in the fabric against Slurm's 4, an exclusive
#     4-GPU job runs, placed by the engine (Slurm called it never
#     runnable: the GPUs Slurm lacks looked busy for ever)
# Runs beside other clusters: its own network (TP_IR_NET, default
# 10.222.0) and port (TP_IR_PORT, 6983). Needs root, the 24.11 build and
# the native plugin; exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24
need_plugins topology_topoplace
NET=${TP_IR_NET:-10.222.0}
PORT=${TP_IR_PORT:-6983}
dir=$tmp/cluster
t0=$(date +%s)

cluster8_fabric "$tmp/tree.json" 1
# a third switch; node007's and node008's cables moved to it; one cable
# from it to leaf01 (switch 0) at the rate of the fabric's other cables
nsw=$(jq '.switches | length' "$tmp/tree.json")
ca7=$(jq '[.cas | to_entries[] | select(.value.desc | startswith("node007 "))][0].key' "$tmp/tree.json")
ca8=$(jq '[.cas | to_entries[] | select(.value.desc | startswith("node008 "))][0].key' "$tmp/tree.json")
[ "$nsw" -ge 3 ] && [ "$ca7" != null ] && [ "$ca8" != null ] &&
	ok "cluster fabric: $nsw switches, node007 CA $ca7, node008 CA $ca8" || bad "cluster fabric ($nsw, $ca7, $ca8)"
jq -c --argjson n "$nsw" --argjson a "$ca7" --argjson b "$ca8" '
	(.links | map(select(.[0] == "switch" and .[3] == "switch"))[0]) as $sl
	| (.switches[0].ports + 1) as $p0
	| .switches[0].ports = $p0
	| .switches += [{"guid": "0x00000000fe000001", "desc": "leaf03", "ports": 3,
		"subnet": 0, "level": 1}]
	| .links |= map(if .[0] == "switch" and .[3] == "ca" and (.[4] == $a or .[4] == $b)
		then .[1] = $n | .[2] = (if .[4] == $a then 1 else 2 end) else . end)
	| .links += [["switch", $n, 3, "switch", 0, $p0, $sl[6], $sl[7], true]]' \
	"$tmp/tree.json" >"$tmp/fabric.json"

"$TOPOPLACE" fabric topology-conf "$tmp/fabric.json" >"$tmp/topo.conf" 2>"$tmp/err" ||
	bad "topology-conf: $(cat "$tmp/err")"
sed 's/^/# /' "$tmp/topo.conf"
grep -q '^SwitchName=spine01 Switches=leaf\[01-03\]$' "$tmp/topo.conf" &&
	grep -q '^SwitchName=leaf03 Nodes=node\[007-008\] LinkSpeed=400$' "$tmp/topo.conf" &&
	ok "topology.conf: the hanging leaf under the spine, its way up its one cable" ||
	bad "topology.conf: leaf03 (node[007-008]) not under spine01"

cluster_trap slurmctld.log 'topoplace\|fatal\|error' 25
topoplace_cluster8 "$NET" "$PORT" "$tmp/fabric.json" '# topology/topoplace, a leaf hanging off a leaf (test)'

timeout 10 scontrol show topology >"$tmp/topo" 2>&1
sed 's/^/# /' "$tmp/topo"
grep -q '^SwitchName=spine01 Level=1 .*Switches=leaf01,leaf02,leaf03$' "$tmp/topo" &&
	grep -q '^SwitchName=leaf03 Level=0 .*Nodes=node\[007-008\]$' "$tmp/topo" &&
	ok "scontrol show topology: the hanging leaf a leaf switch under the one root" ||
	bad "scontrol show topology: leaf03 (node[007-008]) not under spine01"

timeout 10 scontrol setdebug debug >/dev/null 2>&1 || bad "scontrol setdebug debug"
exclusive_job all 8
[ "$got" = "node001 node002 node003 node004 node005 node006 node007 node008 " ] &&
	ok "an 8-node job runs across the hanging leaf" || bad "8-node job on '$got'"
# placed by the engine (the model joins the leaf), not handed to Slurm's
# own selection
grep -q "topology/topoplace: JobId=$j 8 nodes in [0-9.]* ms (engine" "$log" &&
	ok "the engine placed it: $(grep -o "JobId=$j 8 nodes in [0-9.]* ms (engine" "$log" | tail -1)" ||
	bad "the engine did not place job $j: $(grep "JobId=$j" "$log" | tail -2)"

j=$(timeout 10 sbatch --parsable -J hang -o /dev/null -w node007,node008 --exclusive --wrap 'sleep 1')
if [ -n "$j" ] && wait_state "$j" RUNNING COMPLETED; then
	ok "a job on the hanging leaf's two nodes ran ($(hostset "$(field "$j" NodeList)"))"
else
	bad "job on node[007-008]"
fi

# ---- slurm.conf's Weight: lighter nodes first. With node001, node003
# and the hanging leaf's two nodes heavier, a 2-node job that would fit
# that leaf exactly goes to the lighter ones, placed by the engine ----
slurm_cli scontrol update nodename='node[001,003,007-008]' weight=10 || bad "scontrol update weight=10"
wait_state "$j" COMPLETED FAILED || bad "job $j finished"
jw=$(sbatch_named light -o /dev/null -N 2 --exclusive --gres=gpu:1 --wrap 'sleep 1')
if [ -n "$jw" ] && wait_state "$jw" RUNNING COMPLETED; then
	got=$(hostline "$(field "$jw" NodeList)")
	case $got in
	node00[2456]" "node00[2456]) ok "a 2-node job on the lightest nodes ($got)" ;;
	*) bad "job $jw on $got, not among node002 node004 node005 node006 (weight 1)" ;;
	esac
	grep -q "topology/topoplace: JobId=$jw 2 nodes in [0-9.]* ms (engine" "$log" &&
		ok "the engine placed it" || bad "the engine did not place job $jw: $(grep "JobId=$jw" "$log" | tail -2)"
else
	bad "job $jw (2 nodes, weights) did not run"
fi
wait_state "$jw" COMPLETED FAILED || bad "job $jw finished"
# 5 nodes: the four light ones are not enough; tree's selection takes
# all of them and one heavy (the engine cannot be told to)
jw=$(sbatch_named light5 -o /dev/null -N 5 --exclusive --gres=gpu:1 --wrap 'sleep 1')
if [ -n "$jw" ] && wait_state "$jw" RUNNING COMPLETED; then
	got=$(hostline "$(field "$jw" NodeList)")
	light=0
	for l in node002 node004 node005 node006; do
		case " $got " in *" $l "*) light=$((light + 1)) ;; esac
	done
	[ "$light" -eq 4 ] && ok "a 5-node job holds the four light nodes ($got)" ||
		bad "job $jw on $got, not every light node (node002 node004 node005 node006)"
	grep -q "JobId=$jw: needs nodes heavier than the lightest (Weight): topology/tree" "$log" &&
		ok "it went to tree's selection, saying why" ||
		bad "no tree line for job $jw: $(grep "JobId=$jw" "$log" | tail -2)"
else
	bad "job $jw (5 nodes, weights) did not run"
fi
wait_state "$jw" COMPLETED FAILED || bad "job $jw finished"
slurm_cli scontrol update nodename='node[001,003,007-008]' weight=1 || bad "scontrol update weight=1"

# ---- hosts without GPUs in the fabric (a CPU partition on the same
# fabric, a fabric discovered without node data): the engine counts a
# whole host in GPUs and never offers them, so a job asking no GPUs that
# Slurm offers them goes to tree's selection; it used to be told "does
# not fit now" and wait for ever with six nodes busy ----
jq -c '.hosts |= map(if .name == "node007" or .name == "node008" then .gpus = [] else . end)' \
	"$tmp/fabric.json" >"$dir/fabric.json"
timeout 20 scontrol reconfigure >"$tmp/reconf" 2>&1 || bad "scontrol reconfigure: $(cat "$tmp/reconf")"
poll 30 grep -q 'topology/topoplace: 2 of the fabric.s 8 hosts have no GPUs' "$log" &&
	ok "log: $(grep -o 'topology/topoplace: 2 of the fabric.s 8 hosts have no GPUs[^:]*' "$log" | tail -1)" ||
	bad "no line about the hosts without GPUs in the log"
poll 30 sh -c 'timeout 5 scontrol ping 2>/dev/null | grep -q "is UP"' || bad "slurmctld up after reconfigure"
slurm_cli scontrol setdebug debug >/dev/null || bad "scontrol setdebug debug"
jb=$(sbatch_named busy6 -o /dev/null -N 6 -w 'node[001-006]' --exclusive --wrap 'sleep 120')
wait_state "$jb" RUNNING || bad "job $jb (node[001-006]) running"
jc=$(sbatch_named cpu2 -o /dev/null -N 2 --exclusive --wrap 'sleep 1')
if [ -n "$jc" ] && wait_state "$jc" RUNNING COMPLETED; then
	got=$(hostline "$(field "$jc" NodeList)")
	[ "$got" = "node007 node008" ] && ok "a job asking no GPUs runs on the two hosts without GPUs" ||
		bad "job $jc on $got"
else
	bad "job $jc (2 nodes, no GPUs) did not start beside node[001-006]'s job"
fi
grep -q "JobId=$jc: no GPUs asked, nodes without GPUs in the fabric offered: topology/tree" "$log" &&
	ok "log: job $jc went to tree's selection, saying why" ||
	bad "no tree line for job $jc: $(grep "JobId=$jc" "$log" | tail -2)"
timeout 10 scancel "$jb" 2>/dev/null

# ---- more GPUs in the fabric than Slurm has (8 a host against gres
# gpu:4: GPUs an admin keeps out of Slurm) ----
jq -c '.hosts |= map(.gpus += (.gpus | map(.index += 4)))' "$tmp/fabric.json" >"$dir/fabric.json"
timeout 20 scontrol reconfigure >"$tmp/reconf" 2>&1 || bad "scontrol reconfigure: $(cat "$tmp/reconf")"
poll 30 sh -c 'timeout 5 scontrol ping 2>/dev/null | grep -q "is UP"' || bad "slurmctld up after reconfigure"
slurm_cli scontrol setdebug debug >/dev/null || bad "scontrol setdebug debug"
jx=$(sbatch_named gpu8 -o /dev/null -N 2 --exclusive --gres=gpu:4 --wrap 'sleep 1')
if [ -n "$jx" ] && wait_state "$jx" RUNNING COMPLETED; then
	ok "an exclusive 4-GPU job runs where the fabric says 8 GPUs ($(hostline "$(field "$jx" NodeList)"))"
else
	bad "job $jx (exclusive, gres gpu:4, fabric 8 GPUs) did not start: $(grep "JobId=$jx" "$log" | tail -2)"
fi
grep -q "topology/topoplace: JobId=$jx 2 nodes in [0-9.]* ms (engine" "$log" &&
	ok "the engine placed it" || bad "the engine did not place job $jx: $(grep "JobId=$jx" "$log" | tail -2)"
grep -q 'topology/topoplace: node node00[1-8]: 4 GPUs in Slurm, 8 in the fabric' "$log" &&
	ok "log: $(grep -o 'topology/topoplace: node node00[1-8]: 4 GPUs in Slurm, 8 in the fabric' "$log" | head -1)" ||
	bad "no line about Slurm's 4 GPUs against the fabric's 8"

timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
