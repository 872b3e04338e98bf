#!/bin/sh
# Fidelity of the simulator's slurm-block policy: one job sequence through a
# real slurmctld 24.11 (Slurm's own topology/block, the topology.conf that
# `topoplace fabric topology-conf --block` writes) and through
# `topoplace place --policy slurm-block` must land on the same hosts, or
# both must refuse.
#
# An NVL72-style fabric of 4 racks x 4 hosts (node001-004 rack01, ...), 4
# fake GPUs each: each rack is one NVLink domain, so one base block
# (BlockSizes=4,8,16: aggregated blocks of 2 and 4 racks). Exclusive
# multi-node jobs (-N n --exclusive --gres=gpu:g) and shared one- and
# two-node jobs (--gres=gpu:g, no --exclusive) are submitted held and
# released one at a time; each runs until cancelled, and cancels in between
# fragment the racks. Just before each release the running jobs become a
# topoplace-state/1 file (an exclusive job holds all of its hosts' GPUs), the
# simulator places the job on it, and the host SET it picks is compared with
# the NodeList Slurm gives the job. What the sequence covers (see
# doc/slurm-block-model.md, "Fidelity test"):
#   - jobs up to a rack: the rack with the fewest free candidates that
#     suffice, ties to the last rack; shared jobs see partly used hosts;
#   - a job up to a rack's size never spans racks: with 8 hosts free but no
#     rack holding 4, a 4-node job waits (both must refuse);
#   - 5-8 nodes: the pair of racks (aggregated block) with the fewest free
#     hosts that suffice; inside it the largest rack first when none fits
#     alone, ties to the last, then the best-fitting rack; a 6-node job
#     waits while 7 hosts are free but no pair holds 6;
#   - 9-16 nodes: the whole system as one block, base blocks by the same
#     rules (including the empty rack that is never picked).
# Not covered: --gpus=T jobs (the model follows Slurm's first pass only),
# required nodes, weights, BlockSizes that skip a level.
#
# Runs beside other clusters: TP_FIDELITY_NET (default 10.203.0) and
# TP_FIDELITY_PORT (default 6937) pick its network and slurmctld port.
# Needs root and the private Slurm 24.11 (contrib/build-slurm.sh,
# SLURM24_PREFIX); exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24 scancel
[ -x "$CLUSTER" ] || skip_all "$CLUSTER missing"
[ -f "$PREFIX/lib/slurm/topology_block.so" ] || skip_all "$PREFIX has no topology/block"
NET=${TP_FIDELITY_NET:-10.203.0}
PORT=${TP_FIDELITY_PORT:-6937}
NODES=16
dir=$tmp/cluster

t0=$(date +%s)
cluster_trap slurmctld.log 'block\|fatal\|error' 20

fabric=$tmp/fabric.json
"$TOPOPLACE" fabric generate nvl72 --racks 4 --hosts-per-rack 4 --gpus-per-host 4 \
	--prefix node -o "$fabric" >/dev/null || { bad "fabric generate"; finish; }
echo "# $CLUSTER start --slurm-prefix $PREFIX --topology block --nodes $NODES --net $NET --port $PORT"
if ! timeout 150 "$CLUSTER" start --slurm-prefix "$PREFIX" --topology block --fabric "$fabric" \
	--nodes $NODES --gpus-per-node 4 --dir "$dir" --timeout 60 --net "$NET" --port "$PORT" \
	>"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start"
	finish
fi
ok "cluster up in $(($(date +%s) - t0)) s"
export SLURM_CONF=$dir/slurm.conf
sed 's/^/# /' "$dir/topology.conf"
# Slurm read the blocks as written: 4 base blocks, 2 + 1 aggregated
timeout 10 scontrol show topology >"$tmp/topo" 2>&1
if [ "$(grep -c '^BlockName=' "$tmp/topo")" -eq 4 ] &&
	grep -q '^BlockName=rack01 .*Nodes=node\[001-004\] BlockSize=4' "$tmp/topo" &&
	[ "$(grep -c '^AggregatedBlock=' "$tmp/topo")" -eq 3 ]; then
	ok "scontrol show topology: 4 racks as base blocks, 3 aggregated blocks"
else
	bad "scontrol show topology"
	sed 's/^/#   /' "$tmp/topo"
fi

field() { # JOBID KEY
	timeout 10 scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
wait_state() { # JOBID STATE SECONDS
	i=0
	while [ $i -lt $(($3 * 5)) ]; do
		[ "$(field "$1" JobState)" = "$2" ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
hostset() { # NODELIST: sorted names on one line
	timeout 10 scontrol show hostnames "$1" | sort | tr '\n' ' ' | sed 's/ $//'
}
# Until no job is completing and every node without a running job is idle
# (no node ever runs two jobs in this sequence).
settle() {
	i=0
	while [ $i -lt 150 ]; do
		cg=$(timeout 10 squeue -h -t CG -o %i | wc -l)
		busy=$(timeout 10 squeue -h -t R -o %D | awk '{ s += $1 } END { print s + 0 }')
		idle=$(timeout 10 sinfo -h -N -t idle -o %N | sort -u | wc -l)
		[ "$cg" -eq 0 ] && [ $((idle + busy)) -eq $NODES ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

# ---- the sequence: NAME NODES GPUS x|s (exclusive, shared), or
# "cancel NAME..."; the comment is what Slurm's rules give (the model's
# answer is what is checked) ----
cat >"$tmp/seq" <<'EOF'
A 3 2 x
B 1 2 s
C 2 1 x
D 5 2 x
cancel A
E 4 1 x
F 3 4 x
cancel C
G 6 1 x
cancel D
H 7 2 x
I 1 4 s
cancel F B
J 6 2 x
cancel H I
K 10 1 x
cancel J
L 2 1 s
cancel K L
M 16 4 x
EOF
# A: rack04 (all racks tie: the last)       B: node016 (rack04 fewest)
# C: rack03 (rack04 has none idle)          D: rack02 + node001 (pair 1)
# E: waits (8 idle, no rack holds 4)        F: rack04 (ties rack01: last)
# G: waits (7 idle, no pair holds 6)        H: rack02 + node001-003
# I: node004 (rack01: one host with 4 free) J: rack04 + node009-010
# K: rack02, rack01, node011-012            L: node009-010 (rack03 fewest)
# M: all 16
: >"$tmp/jobs" # NAME ID NODES GPUS MODE
while read -r name n g m; do
	[ "$name" = cancel ] && continue
	x=
	[ "$m" = x ] && x=--exclusive
	# shellcheck disable=SC2086
	id=$(timeout 10 sbatch --parsable -H -J "bfid$name" -o /dev/null -N "$n" $x \
		--gres=gpu:"$g" --wrap 'sleep 600')
	[ -n "$id" ] || { bad "sbatch $name"; finish; }
	echo "$name $id $n $g $m" >>"$tmp/jobs"
done <"$tmp/seq"
njobs=$(wc -l <"$tmp/jobs")
ok "$njobs jobs submitted held"

job_of() { awk -v n="$1" '$1 == n { print $2 }' "$tmp/jobs"; }
# topoplace-state/1 of what runs now: an exclusive job holds every GPU of
# its hosts, a shared one the GPUs it asked for
state_now() {
	timeout 10 squeue -h -t R,CG -o '%i %N' >"$tmp/running"
	{
		printf '{"format": "topoplace-state/1", "jobs": ['
		sep=
		while read -r rid nl; do
			rg=$(awk -v i="$rid" '$2 == i { print ($5 == "x") ? 4 : $4 }' "$tmp/jobs")
			printf '%s{"id": %s, "hosts": {' "$sep" "$rid"
			hsep=
			for h in $(timeout 10 scontrol show hostnames "$nl"); do
				printf '%s"%s": %s' "$hsep" "$h" "${rg:-4}"
				hsep=', '
			done
			printf '}}'
			sep=', '
		done <"$tmp/running"
		printf ']}\n'
	} >"$tmp/state.json"
}

matched=0
mismatched=0
while read -r name n g m; do
	if [ "$name" = cancel ]; then
		ids=
		for c in $n $g $m; do ids="$ids $(job_of "$c")"; done
		# shellcheck disable=SC2086
		timeout 10 scancel $ids
		settle || bad "nodes idle after cancelling$ids"
		echo "# cancelled $n $g $m ($ids)"
		continue
	fi
	id=$(job_of "$name")
	settle || bad "nodes settled before $name"
	state_now
	free=$(timeout 10 sinfo -h -N -t idle -o %N | sort -u | tr '\n' ' ' | sed 's/ $//')
	req="nodes=$n,gpus-per-node=$g"
	[ "$m" = x ] && req="$req,exclusive"
	sim=$("$TOPOPLACE" place --fabric "$fabric" --state "$tmp/state.json" \
		--request "$req" --policy slurm-block --json 2>"$tmp/place.err" |
		jq -r '.hosts[]' 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//')
	[ -n "$sim" ] || sim="(none: $(sed 's/.*: //' "$tmp/place.err" | head -1))"
	timeout 10 scontrol release "$id"
	if wait_state "$id" RUNNING 8; then
		got=$(hostset "$(field "$id" NodeList)")
	else
		got="(none: $(field "$id" JobState) $(field "$id" Reason))"
	fi
	desc="job $name ($id, -N $n gpu:$g $([ "$m" = x ] && echo exclusive || echo shared))"
	case "$sim|$got" in
	"(none: does not fit the free part of the fabric now)|(none: PENDING Resources)")
		ok "$desc: both wait (slurm-block: does not fit now; Slurm: pending, Resources)"
		matched=$((matched + 1))
		timeout 10 scancel "$id"
		continue ;;
	esac
	if [ "$sim" = "$got" ]; then
		ok "$desc: slurm-block = Slurm: $got"
		matched=$((matched + 1))
	else
		bad "$desc free [$free]: slurm-block [$sim] != Slurm [$got]"
		mismatched=$((mismatched + 1))
		# a job only one side started would skew every later state
		case $got in "(none"*) timeout 10 scancel "$id" ;; esac
	fi
done <"$tmp/seq"
echo "# $matched placements matched, $mismatched differed"
[ $((matched + mismatched)) -eq "$njobs" ] && ok "all $njobs jobs compared" ||
	bad "$((matched + mismatched)) of $njobs jobs compared"
[ "$mismatched" -eq 0 ] || bad "$mismatched of $njobs placements differ from Slurm's"

timeout 10 scancel --name="$(awk '{ printf "%sbfid%s", s, $1; s = "," }' "$tmp/jobs")" 2>/dev/null || true
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
