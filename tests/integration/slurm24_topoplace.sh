#!/bin/sh
# topology/topoplace in native mode (Slurm 24.11: the plugin's eval_nodes
# picks the nodes) in a real mini-cluster (contrib/slurm-cluster.sh with the
# private 24.11 of contrib/build-slurm.sh: munged, slurmctld, 8 slurmd in
# network namespaces, 4 fake GPUs each), loaded from the build tree
# (plugin/slurm24/.libs), on the interleaved fabric (odd hosts on one leaf,
# even hosts on the other):
#   - scontrol show topology shows the fabric's groups (no topology.conf)
#   - a 4-node --exclusive --gres=gpu:2 job lands on one leaf group, on
#     exactly the hosts `topoplace place` picks on the same free state
#   - with part of a leaf busy, the next jobs go where `topoplace place
#     --state` says (and where Slurm's accounting lets them run)
#   - the debug log has the per-job decision time; the decisions file in
#     StateSaveLocation records the job
#   - a corrupt fabric + scontrol reconfigure: slurmctld keeps running and
#     jobs still run (flat table, Slurm's selection)
#   - the decisions survive the restart (24.11's reconfigure starts a new
#     slurmctld): the new one trims the file to the last 1000 records,
#     drops a record cut short, and appends the next decisions
# Needs root, the 24.11 build (SLURM24_PREFIX, default
# /opt/topoplace/slurm-24.11) and the native plugin (configure
# --with-slurm24); exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24
need_plugins topology_topoplace
dir=$tmp/cluster

t0=$(date +%s)
cluster_trap slurmctld.log 'topoplace\|fatal\|error' 25


# its own network and port (TP_S24_NET, TP_S24_PORT), so that it can run
# beside the other mini-cluster tests (make check-slurm -j2); it still
# waits for a cluster left on that network by an earlier run
NET=${TP_S24_NET:-10.215.0}
PORT=${TP_S24_PORT:-6987}
i=0
while [ -n "$(ip -4 route show $NET.0/24 2>/dev/null)" ] && [ $i -lt 120 ]; do
	sleep 1
	i=$((i + 1))
done
# CommShare=0: the jobs here are compared with `topoplace place --state`,
# whose state holds the running jobs' GPUs but not their traffic
# (slurm24_linkstate.sh tests the link state and traffic)
topoplace_cluster8 "$NET" "$PORT" '' '# topology/topoplace, native mode (test)' 'CommShare=0'
fabric=$dir/fabric.json
timeout 10 scontrol setdebug debug >/dev/null 2>&1 || bad "scontrol setdebug debug"

# field, wait_state, hostset: lib.sh
submit() { # NAME SBATCH-ARGS...: job id on stdout
	name=$1
	shift
	sbatch_named "$name" -o "$tmp/%x.out" "$@"
}
# idle: wait (at most about 20 s) until the queue is empty
idle() {
	i=0
	while [ -n "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && [ $i -lt 100 ]; do
		sleep 0.2
		i=$((i + 1))
	done
}
# beside JOBID N WHAT SRUN-ARGS...: once job JOBID (holding nodes or GPUs)
# runs, `srun SRUN-ARGS hostname` runs on N nodes; JOBID is cancelled after
# and the queue left empty
beside() {
	bj=$1 bn=$2 bwhat=$3
	shift 3
	if wait_state "$bj" RUNNING; then
		expect 0 "srun $* $bwhat" timeout 30 srun "$@" hostname
		[ "$(sort -u "$tmp/out" | wc -l)" -eq "$bn" ] && ok "$* ran on $bn nodes" ||
			bad "$* ran on: $(sort -u "$tmp/out" | tr '\n' ' ')"
	else
		bad "job $bj running"
	fi
	timeout 10 scancel "$bj" 2>/dev/null
	idle
}
# place REQUEST [STATE]: the hosts `topoplace place` picks, sorted
place() {
	if [ -n "${2:-}" ]; then
		"$TOPOPLACE" place --fabric "$fabric" --request "$1" --state "$2" --json
	else
		"$TOPOPLACE" place --fabric "$fabric" --request "$1" --json
	fi >"$tmp/place.json" 2>"$tmp/place.err" || { echo "none"; return; }
	jq -r '.hosts[]' "$tmp/place.json" | sort | tr '\n' ' '
}
# busy JOBID[:GPUS]...: a topoplace-state/1 file with each job holding GPUS
# (default: all 4) on each of its hosts
busy_state() {
	{
		printf '{"format":"topoplace-state/1","down":[],"jobs":['
		sep=
		for jg in "$@"; do
			j=${jg%%:*}
			g=4
			[ "$j" = "$jg" ] || g=${jg#*:}
			printf '%s{"id":%s,"hosts":{' "$sep" "$j"
			hs=
			for h in $(hostset "$(field "$j" NodeList)"); do
				printf '%s"%s":%s' "$hs" "$h" "$g"
				hs=,
			done
			printf '}}'
			sep=,
		done
		printf ']}\n'
	} >"$tmp/state.json"
	echo "$tmp/state.json"
}

# ---- the switch table is the fabric's ----
"$TOPOPLACE" fabric topology-conf "$fabric" -o "$tmp/topology.conf" || bad "topology-conf"
grep '^SwitchName=.* Nodes=' "$tmp/topology.conf" |
	sed 's/^SwitchName=\([^ ]*\) .*Nodes=\([^ ]*\).*/\1 \2/' >"$tmp/leaves"
timeout 10 scontrol show topology >"$tmp/topo" 2>&1
sed 's/^/# /' "$tmp/topo"
[ "$(wc -l <"$tmp/leaves")" -eq 2 ] || bad "fabric has 2 leaf groups ($(wc -l <"$tmp/leaves"))"
while read -r sw nodes; do
	awk -v s="SwitchName=$sw" -v n="Nodes=$nodes" '$1 == s && $2 == "Level=0" && $NF == n { f = 1 }
		END { exit !f }' "$tmp/topo" &&
		ok "scontrol show topology: $sw = $nodes" || bad "scontrol show topology: $sw = $nodes"
done <"$tmp/leaves"
grep -q '^SwitchName=.* Level=1 .*Switches=' "$tmp/topo" && ok "scontrol show topology: a level-1 switch" ||
	bad "scontrol show topology: a level-1 switch"
grep -q 'topology/topoplace: fabric .*: 8 hosts' "$log" && ok "plugin loaded the fabric" ||
	bad "plugin loaded the fabric"
leaf_of() { # NODELIST -> leaf name, or "none" when it is not inside one leaf
	hs=$(hostset "$1")
	while read -r sw nodes; do
		all=$(hostset "$nodes")
		inside=1
		for h in $hs; do
			case " $all" in *" $h "*) ;; *) inside= ;; esac
		done
		[ -n "$inside" ] && { echo "$sw"; return; }
	done <"$tmp/leaves"
	echo none
}

# ---- a 4-node exclusive GPU job on an idle cluster ----
want1=$(place nodes=4,gpus-per-node=2,exclusive)
j1=$(submit a -N 4 --exclusive --gres=gpu:2 --wrap 'echo "nodelist $SLURM_JOB_NODELIST"; srun -l hostname | sort -n')
[ -n "$j1" ] || { bad "sbatch -N 4 --exclusive --gres=gpu:2"; finish; }
wait_state "$j1" COMPLETED FAILED CANCELLED && ok "job $j1 finished" || bad "job $j1 finished in 30 s"
nl1=$(field "$j1" NodeList)
st1=$(field "$j1" JobState)
echo "# job $j1 ($st1): NodeList=$nl1; topoplace place: $want1"
[ "$st1" = COMPLETED ] && ok "job $j1 completed" || bad "job $j1 state $st1"
[ "$(leaf_of "$nl1")" != none ] && ok "job $j1 on one leaf group: $nl1 ($(leaf_of "$nl1"))" ||
	bad "job $j1 spans leaf groups: $nl1"
[ "$(hostset "$nl1")" = "$want1" ] && ok "job $j1 hosts = topoplace place ($want1)" ||
	bad "job $j1 hosts $(hostset "$nl1")!= topoplace place ($want1)"
grep -qxF "nodelist $nl1" "$tmp/a.out" && ok "job $j1 SLURM_JOB_NODELIST = $nl1" ||
	bad "job $j1 SLURM_JOB_NODELIST ($(head -1 "$tmp/a.out" 2>/dev/null))"
hs=$(sed -n 's/^[0-9]*: //p' "$tmp/a.out" | sort | tr '\n' ' ')
[ "$hs" = "$(hostset "$nl1")" ] && ok "job $j1 steps ran on $hs" || bad "job $j1 steps ran on '$hs'"
# per-node lines of scontrol show job -d: GPU indices Slurm picked
timeout 10 scontrol show job -d "$j1" >"$tmp/j1d" 2>&1
# (24.11 gives an --exclusive job every GPU of its nodes)
grep -q 'JOB_GRES=gpu:16$' "$tmp/j1d" &&
	ok "Slurm accounted job $j1's GPUs (JOB_GRES=gpu:16: all GPUs of 4 exclusive nodes)" ||
	{ bad "job $j1: GPU accounting"; grep -i 'gres\|nodes=' "$tmp/j1d" | sed 's/^/#    /'; }
grep -q "topology/topoplace: JobId=$j1 4 nodes in [0-9.]* ms" "$log" &&
	ok "debug log: $(grep -o "topology/topoplace: JobId=$j1 4 nodes in [0-9.]* ms" "$log" | tail -1)" ||
	bad "debug log has the decision time of job $j1"

# ---- part of a leaf busy ----
# A: 2 nodes held; B: 3 nodes (the leaf of A has only 2 free): the other
# leaf; C: 2 nodes sharing nodes with GPUs left: where the engine says.
ja=$(submit busy-a -N 2 --exclusive --wrap 'sleep 60')
wanta=$(place nodes=2,exclusive)
wait_state "$ja" RUNNING || bad "job $ja running"
nla=$(field "$ja" NodeList)
[ "$(hostset "$nla")" = "$wanta" ] && ok "job $ja (2 nodes) = topoplace place ($wanta)" ||
	bad "job $ja hosts $(hostset "$nla")!= topoplace place ($wanta)"

wantb=$(place nodes=3,gpus-per-node=2,exclusive "$(busy_state "$ja")")
jb=$(submit busy-b -N 3 --exclusive --gres=gpu:2 --wrap 'sleep 60')
wait_state "$jb" RUNNING || bad "job $jb running"
nlb=$(field "$jb" NodeList)
echo "# busy: job $ja on $nla ($(leaf_of "$nla")); job $jb: $nlb; topoplace place: $wantb"
[ "$(hostset "$nlb")" = "$wantb" ] && ok "job $jb beside a busy leaf = topoplace place --state ($wantb)" ||
	bad "job $jb hosts $(hostset "$nlb")!= topoplace place --state ($wantb)"
[ "$(leaf_of "$nlb")" != none ] && [ "$(leaf_of "$nlb")" != "$(leaf_of "$nla")" ] &&
	ok "job $jb on the other leaf ($(leaf_of "$nlb"))" || bad "job $jb not on the other leaf: $nlb"

wantc=$(place nodes=2,gpus-per-node=1,exclusive "$(busy_state "$ja" "$jb")")
jc=$(submit busy-c -N 2 --exclusive --gres=gpu:1 --wrap 'hostname')
wait_state "$jc" COMPLETED FAILED || bad "job $jc finished"
nlc=$(field "$jc" NodeList)
[ "$(hostset "$nlc")" = "$wantc" ] && ok "job $jc in the gaps = topoplace place --state ($wantc)" ||
	bad "job $jc hosts $(hostset "$nlc")!= topoplace place --state ($wantc)"

# a job the engine cannot place now stays pending (not forced elsewhere)
jp=$(submit pend -N 4 --exclusive --gres=gpu:2 --wrap 'hostname')
sleep 3
[ "$(field "$jp" JobState)" = PENDING ] && ok "job $jp (no whole 4 nodes free) pending" ||
	bad "job $jp state $(field "$jp" JobState) (wanted PENDING)"
timeout 10 scancel "$ja" "$jb" 2>/dev/null
wait_state "$jp" COMPLETED FAILED && ok "job $jp ran once nodes freed ($(field "$jp" NodeList))" ||
	bad "job $jp ran once nodes freed"

# GPUs shared: D takes 3 of 4 GPUs on 2 nodes; E (2 GPUs per node) can
# only go where Slurm's GRES accounting left 2, and goes where the engine
# says on that state
wantd=$(place nodes=2,gpus-per-node=3)
jd=$(submit share-d -N 2 --gres=gpu:3 --wrap 'sleep 60')
wait_state "$jd" RUNNING || bad "job $jd running"
nld=$(field "$jd" NodeList)
[ "$(hostset "$nld")" = "$wantd" ] && ok "job $jd (gpu:3, shared) = topoplace place ($wantd)" ||
	bad "job $jd hosts $(hostset "$nld")!= topoplace place ($wantd)"
timeout 10 scontrol show job -d "$jd" >"$tmp/jdd" 2>&1
grep -q 'JOB_GRES=gpu:6$' "$tmp/jdd" && grep -F "Nodes=$nld " "$tmp/jdd" | grep -q ' GRES=gpu:3(IDX:' &&
	ok "job $jd holds 3 GPUs on each node (Slurm's accounting: $(grep -o 'JOB_GRES=[^ ]*' "$tmp/jdd"))" ||
	{ bad "job $jd GPU accounting"; grep -i 'gres\|nodes=' "$tmp/jdd" | sed 's/^/#    /'; }
wante=$(place nodes=2,gpus-per-node=2 "$(busy_state "$jd:3")")
je=$(submit share-e -N 2 --gres=gpu:2 --wrap 'sleep 60')
wait_state "$je" RUNNING || bad "job $je running"
nle=$(field "$je" NodeList)
echo "# shared: job $jd on $nld; job $je: $nle; topoplace place --state: $wante"
[ "$(hostset "$nle")" = "$wante" ] && ok "job $je = topoplace place --state ($wante)" ||
	bad "job $je hosts $(hostset "$nle")!= topoplace place --state ($wante)"
overlap=
for h in $(hostset "$nle"); do case " $(hostset "$nld")" in *" $h "*) overlap="$overlap $h" ;; esac; done
[ -z "$overlap" ] && ok "job $je avoids the nodes with 1 GPU left" || bad "job $je shares$overlap with job $jd"
timeout 10 scancel "$jd" "$je" 2>/dev/null
idle

# GPUs in use are no Weight: cons_tres rewrites the low byte of a node's
# sched_weight for each job (0xff less its free GPUs near the CPUs), and
# the plugin compared it whole, so nodes with some GPUs in use read as
# heavier than idle ones and a --gpus job was offered the idle nodes
# alone: here node001 and node002, over both leaves, where one leaf
# holds the job (2 of 4 GPUs in use on node003, node005 and node007)
jf=$(submit gpus-f -w node003,node005,node007 --gres=gpu:2 --wrap 'sleep 60')
jg=$(submit gpus-g -w node004,node006,node008 --exclusive --wrap 'sleep 60')
wait_state "$jf" RUNNING && wait_state "$jg" RUNNING || bad "jobs $jf $jg running"
wanth=$(place gpus=6 "$(busy_state "$jf:2" "$jg")")
jh=$(submit gpus-h --gpus=6 --wrap 'sleep 1')
wait_state "$jh" RUNNING COMPLETED || bad "job $jh started"
nlh=$(field "$jh" NodeList)
echo "# GPUs in use: job $jf on node[003,005,007] (2 GPUs each), $jg on node[004,006,008]; job $jh (--gpus=6): $nlh; topoplace place --state: $wanth"
[ "$(leaf_of "$nlh")" != none ] && [ "$(hostset "$nlh")" = "$wanth" ] &&
	ok "job $jh (--gpus=6) inside one leaf beside partly used nodes = topoplace place --state ($wanth)" ||
	bad "job $jh hosts $(hostset "$nlh") ($(leaf_of "$nlh")) != topoplace place --state ($wanth)"
grep "topology/topoplace: JobId=$jh: needs nodes heavier" "$log" &&
	bad "job $jh: partly used nodes taken for heavier ones" || ok "job $jh: no Weight read into GPUs in use"
timeout 10 scancel "$jf" "$jg" "$jh" 2>/dev/null
idle

# jobs the engine does not take go to Slurm's tree selection on the same
# table, and run: required nodes; more CPUs than one node has
expect 0 "srun -w node002,node004 (required nodes: tree selection)" \
	timeout 30 srun -w node002,node004 hostname
[ "$(sort "$tmp/out" | tr '\n' ' ')" = "node002 node004 " ] && ok "ran on node002 node004" ||
	bad "-w node002,node004 ran on: $(tr '\n' ' ' <"$tmp/out")"
expect 0 "srun -n 12 (CPUs beyond one node: tree selection)" timeout 30 srun -n 12 hostname
[ "$(wc -l <"$tmp/out")" -eq 12 ] && ok "12 tasks on $(sort -u "$tmp/out" | tr '\n' ' ')" ||
	bad "-n 12: $(wc -l <"$tmp/out") tasks"
grep -q 'topology/topoplace: .*required nodes: topology/tree' "$log" &&
	ok "debug log: required nodes handed to topology/tree's selection" ||
	bad "debug log names the hand-over for required nodes"

# an array's tasks: selected on the array's record, each started under a
# job id of its own (the last keeps the array's); every task's decision is
# recorded (checked with the decisions file below)
# (a decision is confirmed at a later selection while its job runs: a
# two-node job follows once the tasks run)
ja=$(submit arr --array=0-2 -N 2 --gres=gpu:1 --wrap 'sleep 60')
i=0
while [ "$(timeout 10 squeue -h -j "$ja" -t R -o %i 2>/dev/null | wc -l)" -lt 3 ] && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
tids=$(timeout 10 scontrol show job "$ja" 2>/dev/null | sed -n 's/^JobId=\([0-9]*\) ArrayJobId=.*/\1/p' | sort -n | tr '\n' ' ')
echo "# array job $ja: task job ids $tids"
[ "$(echo $tids | wc -w)" -eq 3 ] && ok "array job $ja: 3 tasks running" || bad "array job $ja tasks: '$tids'"
sleep 1.1
expect 0 "srun -N 2 beside the array's tasks" timeout 30 srun -N 2 --gres=gpu:1 hostname
timeout 10 scancel "$ja" 2>/dev/null
idle

# --gpus (per job, no node count): the engine picks the hosts
idle
wantg=$(place gpus=6)
expect 0 "srun --gpus=6" timeout 30 srun --gpus=6 sh -c 'echo $SLURM_JOB_NODELIST'
nlg=$(head -1 "$tmp/out")
[ -n "$nlg" ] && [ "$(hostset "$nlg")" = "$wantg" ] && ok "--gpus=6 job on $nlg = topoplace place gpus=6 ($wantg)" ||
	bad "--gpus=6 job on '$nlg', topoplace place gpus=6: $wantg"
# --gpus that -N does not divide: the engine would pack 6 GPUs on 2 of
# the 4 hosts, so tree's selection takes it, and it runs on 4 nodes
expect 0 "srun -N 4 --gpus=6" timeout 30 srun -N 4 --gpus=6 hostname
[ "$(sort -u "$tmp/out" | wc -l)" -eq 4 ] && ok "-N 4 --gpus=6 ran on 4 nodes" ||
	bad "-N 4 --gpus=6 ran on: $(sort -u "$tmp/out" | tr '\n' ' ')"
# a node range whose largest count is not free starts on fewer nodes (Slurm
# asks the selection for the largest)
jr=$(submit range-hold -N 5 --exclusive --wrap 'sleep 60')
beside "$jr" 3 "with 3 nodes free" -N 2-4 --exclusive
# -N 2 --gpus=6 with 2 GPUs free on 7 nodes and 4 on the eighth: the even
# split (3 + 3) is not free, Slurm's 4 + 2 is
jh=$(submit gpu-hold -N 7 --gres=gpu:2 --wrap 'sleep 60')
beside "$jh" 2 "with no 3 + 3 free" -N 2 --gpus=6

# --gpus=6 on 4-GPU nodes: Slurm fills the engine's hosts in node order,
# which the record says (not the engine's own split)
jg=$(submit g6 --gpus=6 --wrap 'sleep 60')
galloc=
if wait_state "$jg" RUNNING; then
	timeout 10 scontrol show job -d "$jg" >"$tmp/g6" 2>&1
	while read -r nodes n; do
		for h in $(hostset "$nodes"); do galloc="$galloc$h:$n "; done
	done <<EOS
$(sed -n 's/^ *Nodes=\([^ ]*\) .*GRES=gpu[^:(]*:\([0-9]*\).*/\1 \2/p' "$tmp/g6")
EOS
	galloc=$(echo $galloc | tr ' ' '\n' | sort | tr '\n' ' ')
	sleep 1.1
	expect 0 "srun -N 2 beside the --gpus=6 job" timeout 30 srun -N 2 --gres=gpu:1 hostname
else
	bad "job $jg (--gpus=6) running"
fi
echo "# --gpus=6 job $jg: Slurm's GPUs per node: $galloc"
timeout 10 scancel "$jg" 2>/dev/null

# ---- the decisions file (written once a job is seen running) ----
dec=$dir/state/topoplace-decisions.jsonl
if [ -s "$dec" ] && jq -e . "$dec" >/dev/null 2>&1; then
	ok "decisions file is JSON lines ($(wc -l <"$dec") decisions)"
	jq -c "select(.job_id == $j1)" "$dec" | head -1 | sed 's/^/# /'
	[ "$(jq -r "select(.job_id == $j1) | .hosts" "$dec" | head -1)" = "$nl1" ] &&
		ok "decision of job $j1 recorded (hosts $nl1)" || bad "decision of job $j1 recorded"
	[ "$(jq -r "select(.job_id == $jb) | .span_groups" "$dec" | head -1)" = 1 ] &&
		ok "decision of job $jb: span 1 group" || bad "decision of job $jb: span"
	# the writer thread appends in the background
	i=0
	while ! jq -e "select(.job_id == $jg)" "$dec" 2>/dev/null | grep -q . && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	dg=$(jq -r "select(.job_id == $jg) | [.ring, .gpus] | transpose | .[] | \"\(.[0]):\(.[1])\"" "$dec" | sort | tr '\n' ' ')
	[ -n "$galloc" ] && [ "$dg" = "$galloc" ] && ok "decision of job $jg: Slurm's GPUs per node ($dg)" ||
		bad "decision of job $jg: GPUs '$dg', Slurm's '$galloc' ($(grep -c . "$dec") records, last: $(tail -1 "$dec" | cut -c1-300))"
	miss=
	recorded=" $(jq -r .job_id "$dec" | tr '\n' ' ')"
	for t in $tids; do case "$recorded" in *" $t "*) ;; *) miss="$miss $t" ;; esac; done
	[ -n "$tids" ] && [ -z "$miss" ] && ok "decisions of every array task recorded ($tids)" ||
		bad "decisions of array tasks missing:$miss (tasks $tids; recorded:$recorded)"
	# every job's hosts: not for other users (PrivateData=jobs); the lock
	# file beside it serialises controllers sharing StateSaveLocation
	sg=$(id -g "$(sed -n 's/^SlurmUser=//p' "$dir/slurm.conf")")
	[ "$(stat -c '%a %g' "$dec")" = "640 $sg" ] && [ "$(stat -c '%a %g' "$dec.lock")" = "640 $sg" ] &&
		ok "decisions file and its lock are 0640, SlurmUser's group ($sg)" ||
		bad "decisions file mode/group: $(stat -c '%a %g' "$dec" "$dec.lock" 2>&1 | tr '\n' ' ')"
else
	bad "decisions file $dec ($(head -c 200 "$dec" 2>/dev/null))"
fi

# ---- a corrupt fabric: slurmctld keeps running and scheduling ----
cp "$fabric" "$tmp/fabric.good"
echo '{"format": "topoplace-fabric/1", "hosts": [' >"$fabric"
timeout 20 scontrol reconfigure >"$tmp/reconf" 2>&1 || bad "scontrol reconfigure: $(cat "$tmp/reconf")"
i=0
until timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && [ $i -gt 5 ]; do
	sleep 0.5
	i=$((i + 1))
	[ $i -lt 60 ] || break
done
timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && ok "slurmctld up after reconfigure with a corrupt fabric" ||
	bad "slurmctld up after reconfigure with a corrupt fabric"
grep -q 'topology/topoplace: .*:[0-9]*: FabricFile: .*fabric.json.*flat topology' "$log" &&
	ok "log: $(grep -o 'topology/topoplace: .*FabricFile: .*flat topology.*' "$log" | tail -1 | cut -c1-170)" ||
	bad "log names the corrupt fabric"
timeout 10 scontrol show topology >"$tmp/topo2" 2>&1
grep -q '^SwitchName=topoplace-flat Level=0' "$tmp/topo2" && ok "scontrol show topology: flat table" ||
	bad "scontrol show topology after a corrupt fabric: $(head -2 "$tmp/topo2")"
expect 0 "srun -N 4 --gres=gpu:1 after a corrupt fabric" timeout 30 srun -N 4 --gres=gpu:1 hostname
[ "$(sort -u "$tmp/out" | wc -l)" -eq 4 ] && ok "job ran on 4 nodes" || bad "job ran on: $(tr '\n' ' ' <"$tmp/out")"
# the flat table's one switch is no topology: --exclusive=topo takes its
# node alone, as under topology/default, not every node
jt=$(submit topo-excl -N 1 --exclusive=topo --wrap 'sleep 60')
if wait_state "$jt" RUNNING; then
	blocked=$(timeout 10 sinfo -h -N -t blocked -o %N 2>&1 | sort -u | tr '\n' ' ')
	[ -z "$blocked" ] && ok "no node BLOCKED by an --exclusive=topo job (flat table)" ||
		bad "nodes BLOCKED by a one-node --exclusive=topo job: $blocked"
	expect 0 "srun -N 1 beside an --exclusive=topo job (flat table)" timeout 30 srun -N 1 hostname
else
	bad "job $jt (--exclusive=topo) running"
fi
timeout 10 scancel "$jt" 2>/dev/null

# a good fabric + reconfigure brings the groups back, in a new slurmctld.
# The controller with the corrupt fabric records nothing: the decisions
# file gets 2500 filler records before the real ones and a last record cut
# short (a disk full, a write killed), for the new one to trim.
if [ -s "$dec" ]; then
	awk 'BEGIN { for (i = 1; i <= 2500; i++)
		printf "{\"format\":\"topoplace-decision/1\",\"job_id\":%d,\"hosts\":\"filler\"}\n", 900000 + i }' \
		>"$tmp/dec.new"
	cat "$dec" >>"$tmp/dec.new"
	printf '{"format":"topoplace-decision/1","job_id":99' >>"$tmp/dec.new"
	cat "$tmp/dec.new" >"$dec"
fi
cp "$tmp/fabric.good" "$fabric"
timeout 20 scontrol reconfigure >/dev/null 2>&1
i=0
until timeout 10 scontrol show topology 2>/dev/null | grep -q '^SwitchName=.* Level=1 '; do
	sleep 0.5
	i=$((i + 1))
	[ $i -lt 60 ] || break
done
timeout 10 scontrol show topology 2>/dev/null | grep -q '^SwitchName=.* Level=1 ' &&
	ok "a good fabric + reconfigure: groups back" || bad "a good fabric + reconfigure: groups back"

# ---- decisions across the restart ----
# R's decision is confirmed (R seen running) at a selection at least a
# second later: S's
jr=$(submit restart-r -N 2 --exclusive --gres=gpu:1 --wrap 'sleep 4')
wait_state "$jr" RUNNING || bad "job $jr running"
sleep 1.5
js=$(submit restart-s -N 2 --exclusive --wrap 'hostname')
wait_state "$js" COMPLETED FAILED || bad "job $js finished"
nlr=$(field "$jr" NodeList)
i=0
until [ -n "$(jq -r "select(.job_id == $jr) | .hosts" "$dec" 2>/dev/null)" ] || [ $i -ge 25 ]; do
	sleep 0.2
	i=$((i + 1))
done
n=$(wc -l <"$dec")
if jq -e . "$dec" >/dev/null 2>&1 && [ "$(tail -c 1 "$dec" | od -An -c | tr -d ' ')" = '\n' ]; then
	ok "decisions file after the restart: $n whole JSON lines"
else
	bad "decisions file after the restart: not whole JSON lines ($(tail -c 120 "$dec"))"
fi
[ "$n" -ge 1001 ] && [ "$n" -le 1002 ] && ok "trimmed to the last 1000 records, then appended ($n lines)" ||
	bad "decisions file after the restart has $n lines (wanted 1001-1002)"
[ "$(jq -r "select(.job_id == $j1) | .hosts" "$dec" | head -1)" = "$nl1" ] &&
	ok "decision of job $j1 (before the restart) kept" || bad "decision of job $j1 lost in the restart"
[ "$(jq -r "select(.job_id == $jr) | .hosts" "$dec" | tail -1)" = "$nlr" ] &&
	ok "decision of job $jr (after the restart) recorded: $nlr" ||
	bad "decision of job $jr (after the restart) recorded ($nlr)"
grep -q '"job_id":99$' "$dec" && bad "the record cut short is still there" ||
	ok "the record cut short was dropped"

# `topoplace show` is a client of slurmctld through the libslurm it was
# built with: one two or more releases apart (Debian's 22.05 against
# 24.11) is told apart from a controller that is down
if timeout 30 "$TOPOPLACE" show jobs --fabric "$fabric" >"$tmp/show24" 2>"$tmp/show24.err"; then
	ok "topoplace show jobs against 24.11 ($(wc -l <"$tmp/show24") lines)"
else
	grep -q "it runs another Slurm release than this build's libslurm" "$tmp/show24.err" &&
		ok "show against 24.11 with another release's libslurm: $(tail -1 "$tmp/show24.err" | cut -c1-110)" ||
		bad "show against 24.11: $(tail -1 "$tmp/show24.err")"
fi
timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
if grep -h 'RaisedSignal\|Segmentation' "$dir"/log/slurmd-*.log "$log" >"$tmp/crash" 2>/dev/null && [ -s "$tmp/crash" ]; then
	bad "a crash: $(head -1 "$tmp/crash")"
else
	ok "no crash"
fi
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
