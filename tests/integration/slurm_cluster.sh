#!/bin/sh
# A real Slurm 22.05 mini-cluster (contrib/slurm-cluster.sh: munged,
# slurmctld, 8 slurmd in network namespaces, 4 fake GPUs each) with Slurm's own
# topology/tree and the topology.conf that `topoplace fabric topology-conf`
# writes for an interleaved fabric (odd hosts on leaf01, even on leaf02):
#   - srun -N 8 reaches every node
#   - scontrol show topology shows exactly the leaf groups of topology.conf
#   - 4-node exclusive GPU jobs each land on ONE leaf group, in batch and
#     steps, also when the other leaf is partly busy
# Needs root and the Slurm packages (contrib/install-slurm.sh); exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 22
dir=$tmp/cluster

t0=$(date +%s)
cleanup() {
	t1=$(date +%s)
	if [ -f "$dir/pids" ]; then
		"$CLUSTER" stop --dir "$dir" || true
		echo "# teardown $(($(date +%s) - t1)) s"
	fi
	if [ "$failures" -ne 0 ] && [ -d "$dir/log" ]; then
		echo "# slurmctld.log (tail):"
		tail -n 15 "$dir/log/slurmctld.log" 2>/dev/null | sed 's/^/#   /'
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

echo "# $CLUSTER start --topology tree --nodes 8 --gpus-per-node 4 --dir $dir"
if ! timeout 90 "$CLUSTER" start --topology tree --nodes 8 --gpus-per-node 4 --dir "$dir" \
	--timeout 40 >"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start"
	finish
fi
ok "cluster up in $(($(date +%s) - t0)) s"
export SLURM_CONF=$dir/slurm.conf
sed 's/^/# /' "$dir/topology.conf"

# leaf groups of topology.conf: "leaf01 node[001,003,005,007]"
grep '^SwitchName=.* Nodes=' "$dir/topology.conf" |
	sed 's/^SwitchName=\([^ ]*\) .*Nodes=\([^ ]*\).*/\1 \2/' >"$tmp/leaves"
[ "$(wc -l <"$tmp/leaves")" -eq 2 ] && ok "topology.conf has 2 leaf groups" ||
	bad "topology.conf has 2 leaf groups ($(wc -l <"$tmp/leaves"))"
grep -q ' node\[001,003,005,007\]$' "$tmp/leaves" && grep -q ' node\[002,004,006,008\]$' "$tmp/leaves" &&
	ok "groups interleave host names (odd / even)" || bad "groups interleave host names"

# ---- srun across all nodes ----
expect 0 "srun -N 8 hostname" timeout 30 srun -N 8 hostname
got=$(sort "$tmp/out" | tr '\n' ' ')
want="node001 node002 node003 node004 node005 node006 node007 node008 "
[ "$got" = "$want" ] && ok "every node answered in its own UTS namespace" ||
	bad "srun hostnames: '$got'"

# ---- Slurm's switch table = topology.conf ----
timeout 10 scontrol show topology >"$tmp/topo" 2>&1
sed 's/^/# /' "$tmp/topo"
while read -r sw nodes; do
	awk -v s="SwitchName=$sw" -v n="Nodes=$nodes" '$1 == s && $2 == "Level=0" && $NF == n { f = 1 }
		END { exit !f }' "$tmp/topo" &&
		ok "scontrol show topology: $sw = $nodes" || bad "scontrol show topology: $sw = $nodes"
done <"$tmp/leaves"
grep -q '^SwitchName=.* Level=1 .*Switches=' "$tmp/topo" && ok "scontrol show topology: a level-1 switch" ||
	bad "scontrol show topology: a level-1 switch"

# ---- placement by topology/tree ----
leaf_of() { # NODELIST -> leaf name, or "none" when it is not one whole leaf
	awk -v nl="$1" '$2 == nl { print $1; found = 1 } END { if (!found) print "none" }' "$tmp/leaves"
}
field() { # JOBID KEY
	timeout 10 scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
wait_done() { # JOBID...: wait (<= 30 s) until none is pending or running
	i=0
	while [ $i -lt 150 ]; do
		left=$(timeout 10 squeue -h -j "$(echo "$*" | tr ' ' ,)" -o %i 2>/dev/null | wc -l)
		[ "$left" -eq 0 ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
submit() { # NAME SBATCH-ARGS...: job id on stdout
	name=$1
	shift
	timeout 10 sbatch --parsable -J "$name" -o "$tmp/%x.out" "$@"
}
script='echo "nodelist $SLURM_JOB_NODELIST"; srun -l hostname | sort -n'

# Two held 4-node exclusive jobs with 2 GPUs per node, released together:
# each must get a whole leaf, and they must get different leaves.
j1=$(submit a -H -N 4 --exclusive --gres=gpu:2 --wrap "$script; sleep 1")
j2=$(submit b -H -N 4 --exclusive --gres=gpu:2 --wrap "$script; sleep 1")
if [ -z "$j1" ] || [ -z "$j2" ]; then
	bad "sbatch -N 4 --exclusive --gres=gpu:2"
	finish
fi
timeout 10 scontrol release "$j1,$j2"
wait_done "$j1" "$j2" && ok "jobs $j1 $j2 finished" || bad "jobs $j1 $j2 finished in 30 s"
for j in "$j1:a" "$j2:b"; do
	id=${j%:*}
	nl=$(field "$id" NodeList)
	st=$(field "$id" JobState)
	leaf=$(leaf_of "$nl")
	echo "# job $id ($st): NodeList=$nl -> $leaf"
	[ "$st" = COMPLETED ] && ok "job $id completed" || bad "job $id state $st"
	[ "$leaf" != none ] && ok "job $id on one leaf: $nl ($leaf)" || bad "job $id spans leaves: $nl"
	out=$tmp/${j#*:}.out
	grep -qxF "nodelist $nl" "$out" && ok "job $id SLURM_JOB_NODELIST = $nl" ||
		bad "job $id SLURM_JOB_NODELIST ($(head -1 "$out" 2>/dev/null))"
	hs=$(sed -n 's/^[0-9]*: //p' "$out" | sort | tr '\n' ' ')
	want=$(timeout 10 scontrol show hostnames "$nl" | sort | tr '\n' ' ')
	[ -n "$hs" ] && [ "$hs" = "$want" ] && ok "job $id steps ran on $hs" || bad "job $id steps ran on '$hs'"
	eval "leaf_$id=\$leaf"
done
eval "l1=\$leaf_$j1 l2=\$leaf_$j2"
[ "$l1" != "$l2" ] && ok "the two jobs got different leaves ($l1, $l2)" ||
	bad "the two jobs got the same leaf ($l1)"

# One leaf partly busy: a 2-node job holds part of a leaf; the next 4-node
# job can only be whole on the other leaf. (Without topology/tree, cons_tres
# would take the lowest free names and span both leaves.)
j3=$(submit c -N 2 --exclusive --wrap 'sleep 6')
i=0
while [ "$(field "$j3" JobState)" != RUNNING ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
nl3=$(field "$j3" NodeList)
j4=$(submit d -N 4 --exclusive --gres=gpu:1 --wrap "$script")
wait_done "$j4" || bad "job $j4 finished in 30 s"
nl4=$(field "$j4" NodeList)
leaf3=$(awk -v h="$(timeout 10 scontrol show hostnames "$nl3" | head -1)" '
	{ n = $2; gsub(/^node\[|\]$/, "", n); split(n, a, ","); for (k in a) if ("node" a[k] == h) print $1 }' "$tmp/leaves")
leaf4=$(leaf_of "$nl4")
echo "# job $j3: NodeList=$nl3 (in $leaf3); job $j4: NodeList=$nl4 -> $leaf4"
[ "$leaf4" != none ] && [ "$leaf4" != "$leaf3" ] &&
	ok "4-node job beside a busy leaf lands on the other leaf ($nl4)" ||
	bad "4-node job beside a busy leaf: $nl4 (busy: $nl3)"
timeout 10 scancel "$j3" 2>/dev/null || true

# The controller is still healthy.
timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
