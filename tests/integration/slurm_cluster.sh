#!/bin/sh
# The mini-cluster (contrib/slurm-cluster.sh: munged, slurmctld, 8 slurmd in
# network namespaces, 4 fake GPUs each) with Slurm's own topology/tree and
# the topology.conf `topoplace fabric topology-conf` writes for an
# interleaved fabric (odd hosts on leaf01, even on leaf02), on Debian's
# Slurm 22.05, or with TP_GEN=24 (slurm24_cluster.sh) on the private 24.11
# that contrib/build-slurm.sh builds (native mode):
#   - 24.11 only: the daemons and clients are the 24.11 ones, with the
#     24.11 config (topology/tree, CgroupPlugin=disabled)
#   - srun -N 8 reaches every node (in 24.11 launches are forwarded
#     between slurmd)
#   - scontrol show topology shows exactly the leaf groups of topology.conf
#   - 4-node exclusive GPU jobs each land on ONE leaf group (batch and steps),
#     also when the other leaf is partly busy
# Needs root and Slurm (contrib/install-slurm.sh; for 24.11 SLURM24_PREFIX,
# default /opt/topoplace/slurm-24.11, built by contrib/build-slurm.sh);
# exit 77 if not.
. "$(dirname "$0")/lib.sh"

gen=${TP_GEN:-22}
need_slurm "$gen"
dir=$tmp/cluster
if [ "$gen" = 24 ]; then
	ver=$(sed -n 's/^SLURM_VERSION=//p' "$PREFIX/topoplace-build.env")
	set -- --slurm-prefix "$PREFIX" --net 10.213.0 --port 6967
else
	set -- --net 10.200.0 --port 6817
fi

t0=$(date +%s)
cleanup() {
	t1=$(date +%s)
	if [ -f "$dir/pids" ]; then
		stop_cluster
		echo "# teardown $(($(date +%s) - t1)) s"
	fi
	if [ "$failures" -ne 0 ] && [ -d "$dir/log" ]; then
		echo "# slurmctld.log (tail):"
		tail -n 15 "$dir/log/slurmctld.log" 2>/dev/null | sed 's/^/#   /'
		if [ "$gen" = 24 ]; then
			echo "# slurmd errors:"
			grep -h 'error' "$dir"/log/slurmd-*.log 2>/dev/null | tail -n 10 | sed 's/^/#   /'
		fi
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

[ "$gen" = 24 ] && echo "# Slurm $ver from $PREFIX"
echo "# $CLUSTER start $* --topology tree --nodes 8 --gpus-per-node 4 --dir $dir"
if ! timeout 90 "$CLUSTER" start "$@" --topology tree --nodes 8 --gpus-per-node 4 \
	--dir "$dir" --timeout 40 >"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start"
	finish
fi
ok "cluster up in $(($(date +%s) - t0)) s"
export SLURM_CONF=$dir/slurm.conf
sed 's/^/# /' "$dir/topology.conf"
if [ "$gen" = 24 ]; then
	grep -qxF "export PATH=$PREFIX/bin:$PREFIX/sbin:\$PATH" "$dir/env" && ok "start prints the PATH for 24.11 clients" ||
		bad "start prints the PATH for 24.11 clients ($(cat "$dir/env"))"

	# ---- it is 24.11, configured as 24.11 ----
	timeout 10 scontrol show config >"$tmp/config" 2>&1
	v=$(sed -n 's/^SLURM_VERSION *= *//p' "$tmp/config")
	case $v in 24.11.*) ok "slurmctld is $v" ;; *) bad "slurmctld version '$v' (wanted 24.11.x)" ;; esac
	[ "$v" = "$ver" ] && ok "slurmctld is the build of $PREFIX ($ver)" || bad "slurmctld $v, build $ver"
	grep -q '^TopologyPlugin *= *topology/tree$' "$tmp/config" && ok "TopologyPlugin = topology/tree" ||
		bad "TopologyPlugin: $(grep '^TopologyPlugin' "$tmp/config")"
	grep -qx 'CgroupPlugin=disabled' "$dir/cgroup.conf" && ok "cgroup.conf: CgroupPlugin=disabled" ||
		bad "cgroup.conf: $(cat "$dir/cgroup.conf")"
	grep -q '^PluginDir *= *.*'"$PREFIX/lib/slurm"'$' "$tmp/config" && ok "plugins from $PREFIX/lib/slurm" ||
		bad "PluginDir: $(grep '^PluginDir' "$tmp/config")"
	for pid in $(awk '$2 == "slurmctld" || $2 == "slurmd" { print $1 }' "$dir/pids"); do
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null)
		case $exe in "$PREFIX"/sbin/*) ;; *) bad "pid $pid runs $exe, not from $PREFIX"; exe=bad ;; esac
		[ "$exe" = bad ] && break
	done
	[ "${exe:-}" != bad ] && ok "slurmctld and every slurmd run from $PREFIX/sbin"
fi

# leaf groups of topology.conf: "leaf01 node[001,003,005,007]"
grep '^SwitchName=.* Nodes=' "$dir/topology.conf" |
	sed 's/^SwitchName=\([^ ]*\) .*Nodes=\([^ ]*\).*/\1 \2/' >"$tmp/leaves"
[ "$(wc -l <"$tmp/leaves")" -eq 2 ] && ok "topology.conf has 2 leaf groups" ||
	bad "topology.conf has 2 leaf groups ($(wc -l <"$tmp/leaves"))"
grep -q ' node\[001,003,005,007\]$' "$tmp/leaves" && grep -q ' node\[002,004,006,008\]$' "$tmp/leaves" &&
	ok "groups interleave host names (odd / even)" || bad "groups interleave host names"

# ---- srun across all nodes (24.11: the launch is forwarded from slurmd to slurmd) ----
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

# ---- placement by topology/tree (in 24.11: the plugin's eval_nodes) ----
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
# each must get a whole leaf, and they must get different leaves. Each
# stays until both run (the file go, <= 30 s): with a fixed "sleep 1" a
# CI run saw the second start 3 s after the first, which had ended, on
# the leaf it had freed.
go=$tmp/go
until_go="i=0; while [ ! -e $go ] && [ \$i -lt 150 ]; do sleep 0.2; i=\$((i + 1)); done"
j1=$(submit a -H -N 4 --exclusive --gres=gpu:2 --wrap "$script; $until_go")
j2=$(submit b -H -N 4 --exclusive --gres=gpu:2 --wrap "$script; $until_go")
if [ -z "$j1" ] || [ -z "$j2" ]; then
	bad "sbatch -N 4 --exclusive --gres=gpu:2"
	finish
fi
# the srun above may leave nodes completing for a moment (longer on a busy
# machine): topology/tree then has no whole leaf to give
settle 8 || bad "nodes idle again after srun -N 8"
timeout 10 scontrol release "$j1,$j2"
both_run() { [ "$(timeout 10 squeue -h -t R -j "$j1,$j2" -o %i 2>/dev/null | wc -l)" -eq 2 ]; }
poll 20 both_run || echo "# jobs $j1 $j2 not both running 20 s after the release"
touch "$go"
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
# job can only be whole on the other leaf.
j3=$(submit c -N 2 --exclusive --wrap 'sleep 6')
i=0
while [ "$(field "$j3" JobState)" != RUNNING ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
# (without it running, "the other leaf" below would be any leaf)
[ "$(field "$j3" JobState)" = RUNNING ] || bad "job ${j3:-none} (2 nodes) running before the 4-node job"
nl3=$(field "$j3" NodeList)
j4=$(submit d -N 4 --exclusive --gres=gpu:1 --wrap "$script")
wait_done "$j4" || bad "job $j4 finished in 30 s"
nl4=$(field "$j4" NodeList)
leaf3=$(awk -v h="$(timeout 10 scontrol show hostnames "$nl3" | head -1)" '
	{ n = $2; gsub(/^node\[|\]$/, "", n); split(n, a, ","); for (k in a) if ("node" a[k] == h) print $1 }' "$tmp/leaves")
leaf4=$(leaf_of "$nl4")
echo "# job $j3: NodeList=$nl3 (in $leaf3); job $j4: NodeList=$nl4 -> $leaf4"
[ -n "$leaf3" ] && [ "$leaf4" != none ] && [ "$leaf4" != "$leaf3" ] &&
	ok "4-node job beside a busy leaf lands on the other leaf ($nl4)" ||
	bad "4-node job beside a busy leaf: $nl4 (busy: $nl3)"
timeout 10 scancel "$j3" 2>/dev/null || true

# The controller is still healthy (and, 24.11, no slurmstepd crashed).
timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
if [ "$gen" = 24 ]; then
	if grep -h 'RaisedSignal\|Segmentation' "$dir"/log/slurmd-*.log >"$tmp/crash" 2>/dev/null && [ -s "$tmp/crash" ]; then
		bad "a step crashed: $(head -1 "$tmp/crash")"
	else
		ok "no step crashed"
	fi
fi
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
