#!/bin/sh
# topology/topoplace + job_submit/topoplace (compatible mode, Slurm 22.05)
# in a real mini-cluster (contrib/slurm-cluster.sh: munged, slurmctld, 8
# slurmd in network namespaces, 4 fake GPUs each), loaded from the build
# tree, on an interleaved fabric (odd hosts on leaf01, even on leaf02):
#   - scontrol show topology shows the fabric's groups (no topology.conf)
#   - a 4-node job lands on one leaf group; task ranks follow the fabric
#     order (8 nodes: 001,003,005,007,002,... not name order)
#   - job_submit gives -N 4 --switches=1 and -N 6 --switches=2 (feasible),
#     notes it in AdminComment, and leaves a user's own --switches alone;
#     a resize recomputes the count and the note, but not once the user
#     has set Switches= on the job since
#   - a corrupt fabric + scontrol reconfigure: slurmctld keeps running and
#     scheduling on a flat table; a good fabric + reconfigure brings the
#     groups back
# Needs root, the Slurm packages and the built plugins; exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 22
need_plugins topology_topoplace job_submit_topoplace
dir=$tmp/cluster

t0=$(date +%s)
cluster_trap slurmctld.log 'topoplace\|fatal' 20

cat >"$tmp/topoplace.conf" <<'EOF'
# topology/topoplace + job_submit/topoplace (test)
FabricFile=@DIR@/fabric.json
SwitchWait=120 MinNodes=2 MaxNodes=6
EOF
echo "JobSubmitPlugins=job_submit/topoplace" >"$tmp/extra.conf"

echo "# $CLUSTER start --topology topoplace --plugin-dir $PLUGIN_DIR --nodes 8 --dir $dir"
if ! timeout 90 "$CLUSTER" start --topology topoplace --plugin-dir "$PLUGIN_DIR" \
	--nodes 8 --gpus-per-node 4 --dir "$dir" --timeout 40 --net 10.214.0 --port 6977 \
	--extra-file "$tmp/topoplace.conf" --slurm-conf-extra "$tmp/extra.conf" \
	>"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start"
	finish
fi
ok "cluster up in $(($(date +%s) - t0)) s"
export SLURM_CONF=$dir/slurm.conf
log=$dir/log/slurmctld.log

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
topo_has() { # SWITCH LEVEL NODES
	awk -v s="SwitchName=$1" -v l="Level=$2" -v n="Nodes=$3" \
		'$1 == s && $2 == l && $NF == n { f = 1 } END { exit !f }' "$tmp/topo"
}

# ---- the switch table from the fabric ----
grep -q 'topology/topoplace: fabric .*: 8 hosts, 3 switches' "$log" &&
	ok "slurmctld loaded the fabric ($(grep -o 'topology/topoplace: fabric .*' "$log" | tail -1))" ||
	bad "slurmctld log: fabric loaded"
timeout 10 scontrol show topology >"$tmp/topo" 2>&1
sed 's/^/# /' "$tmp/topo"
topo_has leaf01 0 'node[001,003,005,007]' && ok "scontrol show topology: leaf01 = odd hosts" ||
	bad "scontrol show topology: leaf01"
topo_has leaf02 0 'node[002,004,006,008]' && ok "scontrol show topology: leaf02 = even hosts" ||
	bad "scontrol show topology: leaf02"
grep -q '^SwitchName=spine01 Level=1 .*Switches=leaf01,leaf02' "$tmp/topo" &&
	ok "scontrol show topology: spine01 above both" || bad "scontrol show topology: spine01"

# ---- a 4-node job: one leaf, ranks in fabric order ----
script='echo "nodelist $SLURM_JOB_NODELIST"; srun -l hostname | sort -n'
j1=$(submit a -N 4 --exclusive --gres=gpu:2 --wrap "$script")
[ -n "$j1" ] || { bad "sbatch -N 4"; finish; }
wait_done "$j1" && ok "job $j1 finished" || bad "job $j1 finished in 30 s"
nl=$(field "$j1" NodeList)
case $nl in
'node[001,003,005,007]' | 'node[002,004,006,008]') ok "job $j1 on one leaf group: $nl" ;;
*) bad "job $j1 spans leaf groups: $nl" ;;
esac
ranks=$(sed -n 's/^\([0-9]*\): /\1=/p' "$tmp/a.out" | tr '\n' ' ')
echo "# job $j1: $(head -1 "$tmp/a.out"); ranks: $ranks"
case $ranks in
'0=node001 1=node003 2=node005 3=node007 ' | '0=node002 1=node004 2=node006 3=node008 ')
	ok "task ranks follow the fabric order ($ranks)" ;;
*) bad "task ranks: '$ranks'" ;;
esac
sw=$(field "$j1" Switches)
[ "$sw" = "1@00:02:00" ] && ok "job_submit: -N 4 got --switches=1@120s" || bad "job_submit: -N 4 Switches=$sw"
timeout 10 scontrol show job "$j1" | grep -q 'AdminComment=topoplace: switches=1@120s for 4 node' &&
	ok "job_submit: noted in AdminComment" || bad "job_submit: AdminComment ($(field "$j1" AdminComment))"

# Across both leaves the difference from name order shows: leaf01's hosts
# take ranks 0-3, leaf02's 4-7 (name order would alternate leaves).
expect 0 "srun -N 8 -l hostname" timeout 30 srun -N 8 -l hostname
ranks=$(sort -n "$tmp/out" | sed -n 's/^\([0-9]*\): /\1=/p' | tr '\n' ' ')
[ "$ranks" = "0=node001 1=node003 2=node005 3=node007 4=node002 5=node004 6=node006 7=node008 " ] &&
	ok "8-node step: ranks walk leaf01 then leaf02" || bad "8-node step ranks: '$ranks'"

# ---- job_submit: feasible counts, the user's own --switches untouched ----
j2=$(submit b -H -N 6 --wrap true)
sw=$(field "$j2" Switches)
[ "$sw" = "2@00:02:00" ] && ok "job_submit: -N 6 got --switches=2 (two leaves of 4)" ||
	bad "job_submit: -N 6 Switches=$sw"
# resized past MaxNodes: the count it had is cleared, not kept
timeout 10 scontrol update jobid="$j2" NumNodes=7-7 >"$tmp/upd" 2>&1 || bad "scontrol update NumNodes=7: $(cat "$tmp/upd")"
# (an unset Switches proves nothing unless the record is there, resized)
sw=$(field "$j2" Switches)
nn=$(field "$j2" NumNodes)
[ "${nn%-*}" = 7 ] || bad "job $j2 resized: NumNodes=${nn:-no record}"
[ "${nn%-*}" = 7 ] && { [ -z "$sw" ] || [ "${sw%@*}" = 0 ]; } && ok "job_submit: resized to 7 nodes (> MaxNodes), switches cleared (${sw:-unset})" ||
	bad "job_submit: resized to 7 nodes, Switches=$sw"
job_record "$j2" | grep -q 'AdminComment=topoplace: switches cleared (size outside MinNodes..MaxNodes)' &&
	ok "job_submit: AdminComment says the count was cleared" ||
	bad "job_submit: AdminComment after the resize: $(job_record "$j2" | grep AdminComment)"
# resized to 4: a count again (the note follows); then the user's own
# Switches=2, which a later resize leaves alone
timeout 10 scontrol update jobid="$j2" NumNodes=4-4 >"$tmp/upd" 2>&1 || bad "scontrol update NumNodes=4: $(cat "$tmp/upd")"
[ "$(field "$j2" Switches)" = "1@00:02:00" ] &&
	job_record "$j2" | grep -q 'AdminComment=topoplace: switches=1@120s for 4 node' &&
	ok "job_submit: resized to 4 nodes, switches=1 and its note" ||
	bad "job_submit: resized to 4 nodes: Switches=$(field "$j2" Switches), $(job_record "$j2" | grep AdminComment)"
# another user's resize is refused, and leaves the job's note alone (the
# client reads the cluster's configuration and talks to its munged)
chmod o+x "$tmp" "$dir" "$dir/munge"
chmod o+r "$dir"/*.conf
if setpriv --reuid=65534 --regid=65534 --clear-groups timeout 10 scontrol update jobid="$j2" NumNodes=7-7 \
	>"$tmp/upd" 2>&1; then
	bad "nobody's scontrol update NumNodes=7 of root's job was accepted"
else
	job_record "$j2" | grep -q 'AdminComment=topoplace: switches=1@120s for 4 node' &&
		[ "$(field "$j2" Switches)" = "1@00:02:00" ] &&
		ok "another user's refused resize leaves count and note ($(head -c 100 "$tmp/upd"))" ||
		bad "after nobody's refused resize: Switches=$(field "$j2" Switches), $(job_record "$j2" | grep AdminComment)"
fi
timeout 10 scontrol update jobid="$j2" Switches=2 >"$tmp/upd" 2>&1 || bad "scontrol update Switches=2: $(cat "$tmp/upd")"
# (3 nodes fit one leaf: this plugin would say 1)
timeout 10 scontrol update jobid="$j2" NumNodes=3-3 >"$tmp/upd" 2>&1 || bad "scontrol update NumNodes=3: $(cat "$tmp/upd")"
nn=$(field "$j2" NumNodes)
[ "${nn%-*}" = 3 ] && [ "$(field "$j2" Switches)" = "2@00:02:00" ] &&
	ok "job_submit: the user's Switches=2 kept through a later resize" ||
	bad "job_submit: after the user's Switches=2 and NumNodes=3: NumNodes=$nn Switches=$(field "$j2" Switches)"
j3=$(submit c -H -N 2 --switches=2@1:00 --wrap true)
sw=$(field "$j3" Switches)
[ "$sw" = "2@00:01:00" ] && ok "job_submit: user's --switches=2@1:00 untouched" ||
	bad "job_submit: user's --switches became $sw"
j4=$(submit d -H -N 1 --wrap true)
sw=$(field "$j4" Switches)
st=$(field "$j4" JobState)
[ -n "$j4" ] && [ "$st" = PENDING ] || bad "1-node job held: id ${j4:-none}, JobState=${st:-no record}"
[ "$st" = PENDING ] && { [ -z "$sw" ] || [ "${sw%@*}" = 0 ] || [ "${sw%@*}" = 4294967294 ]; } && ok "job_submit: 1-node job untouched (Switches=${sw:-unset})" ||
	bad "job_submit: 1-node job Switches=$sw"
timeout 10 scancel "$j2" "$j3" "$j4" 2>/dev/null || true

# ---- a corrupt fabric never hurts the controller ----
cp "$dir/fabric.json" "$tmp/fabric.good"
printf '{"format": "topoplace-fabric/1", "hosts": [tru' >"$dir/fabric.json"
timeout 20 scontrol reconfigure >/dev/null 2>&1
sleep 1
timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "corrupt fabric + reconfigure: slurmctld up" ||
	bad "corrupt fabric + reconfigure: slurmctld down"
grep -q 'error: topology/topoplace: .*:[0-9]*: FabricFile: .*fabric.json.*flat topology' "$log" &&
	ok "corrupt fabric logged: $(grep 'error: topology/topoplace: .*FabricFile: ' "$log" | tail -1 | cut -c1-170)" ||
	bad "corrupt fabric not logged"
timeout 10 scontrol show topology >"$tmp/topo" 2>&1
sed 's/^/# /' "$tmp/topo"
topo_has topoplace-flat 0 'node[001-008]' && ok "flat table after a corrupt fabric" ||
	bad "flat table after a corrupt fabric"
expect 0 "srun -N 8 still schedules" timeout 30 srun -N 8 true

# ---- a fabric that does not match slurm.conf: flat, logged ----
"$TOPOPLACE" fabric generate fat-tree --nics-per-host 1 --uplinks 2 --leaves 2 --spines 1 --hosts-per-leaf 3 \
	--prefix node -o "$dir/fabric.json" >/dev/null
timeout 20 scontrol reconfigure >/dev/null 2>&1
sleep 1
grep -q 'fabric does not match slurm.conf: 2 node(s) not in .*flat topology' "$log" &&
	ok "mismatched fabric logged" || bad "mismatched fabric not logged"
timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "mismatched fabric: slurmctld up" ||
	bad "mismatched fabric: slurmctld down"

# ---- the good fabric back ----
cp "$tmp/fabric.good" "$dir/fabric.json"
timeout 20 scontrol reconfigure >/dev/null 2>&1
sleep 1
timeout 10 scontrol show topology >"$tmp/topo" 2>&1
topo_has leaf01 0 'node[001,003,005,007]' && ok "reconfigure with a good fabric: groups back" ||
	bad "reconfigure with a good fabric: $(head -1 "$tmp/topo")"
j5=$(submit e -N 4 --exclusive --wrap "$script")
wait_done "$j5" || bad "job $j5 finished in 30 s"
nl=$(field "$j5" NodeList)
case $nl in
'node[001,003,005,007]' | 'node[002,004,006,008]') ok "after reconfigure: job $j5 on one leaf group: $nl" ;;
*) bad "after reconfigure: job $j5 spans leaf groups: $nl" ;;
esac

timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
grep -c 'topology/topoplace\|job_submit/topoplace' "$log" | sed 's/^/# plugin log lines: /'
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
