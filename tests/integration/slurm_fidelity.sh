#!/bin/sh
# Fidelity of the simulator's slurm-tree policy: one job sequence through a
# real slurmctld 22.05 (Slurm's own topology/tree, the topology.conf that
# `topoplace fabric topology-conf` writes) and through
# `topoplace place --policy slurm-tree` must land on the same hosts.
#
# 12 nodes, 4 fake GPUs each, on a 3-leaf fat tree whose groups interleave
# the names (node001,004,007,010 on leaf01, ...). Twelve exclusive GPU jobs
# of 1-6 nodes are submitted held and released one at a time; each runs
# (sleep) until cancelled, and cancels in between fragment the leaves. Just
# before each release the running jobs become a topoplace-state/1 file, the
# simulator places the job on it, and the host SET it picks is compared with
# the NodeList Slurm gives the job. A mismatch names the job, the free
# state and both host sets.
#
# Runs beside other clusters: TP_FIDELITY_NET (default 10.202.0) and
# TP_FIDELITY_PORT (default 6927) pick its network and slurmctld port.
# Needs root and the Slurm packages (contrib/install-slurm.sh); exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 22 scancel
[ -x "$CLUSTER" ] || skip_all "$CLUSTER missing"
NET=${TP_FIDELITY_NET:-10.202.0}
PORT=${TP_FIDELITY_PORT:-6927}
dir=$tmp/cluster

t0=$(date +%s)
cluster_trap

fabric=$tmp/fabric.json
"$TOPOPLACE" fabric generate fat-tree --nics-per-host 1 --uplinks 2 --leaves 3 --spines 2 --hosts-per-leaf 4 --interleave \
	--gpus-per-host 4 --prefix node -o "$fabric" >/dev/null || { bad "fabric generate"; finish; }
echo "# $CLUSTER start --topology tree --nodes 12 --net $NET --port $PORT --dir $dir"
if ! timeout 120 "$CLUSTER" start --topology tree --fabric "$fabric" --nodes 12 --gpus-per-node 4 \
	--dir "$dir" --timeout 60 --net "$NET" --port "$PORT" >"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start"
	finish
fi
ok "cluster up in $(($(date +%s) - t0)) s"
export SLURM_CONF=$dir/slurm.conf
sed 's/^/# /' "$dir/topology.conf"

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
# Until no job is completing and every node without a running job is idle:
# Slurm gives exclusive jobs IDLE nodes only.
settle() {
	i=0
	while [ $i -lt 100 ]; do
		cg=$(timeout 10 squeue -h -t CG -o %i | wc -l)
		busy=$(timeout 10 squeue -h -t R -o %D | awk '{ s += $1 } END { print s + 0 }')
		idle=$(timeout 10 sinfo -h -N -t idle -o %N | sort -u | wc -l)
		[ "$cg" -eq 0 ] && [ $((idle + busy)) -eq 12 ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

# ---- the sequence: NAME NODES GPUS, or "cancel NAME..." ----
cat >"$tmp/seq" <<'EOF'
A 3 2
B 2 4
C 1 1
D 4 2
cancel B
E 2 2
cancel A
F 4 1
cancel C
G 1 4
cancel D
H 5 2
cancel E G
I 3 1
cancel F H
J 6 2
K 2 4
L 1 1
EOF
# submit every job held, in sequence order
: >"$tmp/jobs" # NAME ID NODES GPUS
while read -r name n g; do
	[ "$name" = cancel ] && continue
	id=$(timeout 10 sbatch --parsable -H -J "fid$name" -o /dev/null -N "$n" --exclusive \
		--gres=gpu:"$g" --wrap 'sleep 600')
	[ -n "$id" ] || { bad "sbatch $name"; finish; }
	echo "$name $id $n $g" >>"$tmp/jobs"
done <"$tmp/seq"
ok "$(wc -l <"$tmp/jobs") jobs submitted held"

job_of() { awk -v n="$1" '$1 == n { print $2 }' "$tmp/jobs"; }
# topoplace-state/1 of what runs now: running jobs' hosts with the GPUs
# they asked for (exclusive: the host is theirs either way)
state_now() {
	timeout 10 squeue -h -t R,CG -o '%i %N' >"$tmp/running"
	{
		printf '{"format": "topoplace-state/1", "jobs": ['
		sep=
		while read -r rid nl; do
			rg=$(awk -v i="$rid" '$2 == i { print $4 }' "$tmp/jobs")
			printf '%s{"id": %s, "hosts": {' "$sep" "$rid"
			hsep=
			for h in $(timeout 10 scontrol show hostnames "$nl"); do
				printf '%s"%s": %s' "$hsep" "$h" "${rg:-1}"
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
while read -r name n g; do
	if [ "$name" = cancel ]; then
		ids=
		for c in $n $g; do ids="$ids $(job_of "$c")"; done
		# shellcheck disable=SC2086
		timeout 10 scancel $ids
		settle || bad "nodes idle after cancelling$ids"
		echo "# cancelled $n $g ($ids)"
		continue
	fi
	id=$(job_of "$name")
	settle || bad "nodes settled before $name"
	state_now
	free=$(timeout 10 sinfo -h -N -t idle -o %N | sort -u | tr '\n' ' ' | sed 's/ $//')
	sim=$("$TOPOPLACE" place --fabric "$fabric" --state "$tmp/state.json" \
		--request "nodes=$n,gpus-per-node=$g,exclusive" --policy slurm-tree --json 2>"$tmp/place.err" |
		jq -r '.hosts[]' 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//')
	timeout 10 scontrol release "$id"
	if wait_state "$id" RUNNING 20; then
		got=$(hostset "$(field "$id" NodeList)")
	else
		got="(not started: $(field "$id" Reason))"
	fi
	[ -n "$sim" ] || sim="(no placement: $(head -1 "$tmp/place.err"))"
	if [ "$sim" = "$got" ]; then
		ok "job $name ($id, -N $n gpu:$g): slurm-tree = Slurm: $got"
		matched=$((matched + 1))
	else
		bad "job $name ($id, -N $n gpu:$g) free [$free]: slurm-tree [$sim] != Slurm [$got]"
		mismatched=$((mismatched + 1))
	fi
done <"$tmp/seq"
echo "# $matched placements matched, $mismatched differed"
[ $((matched + mismatched)) -eq 12 ] && ok "all 12 jobs compared" ||
	bad "$((matched + mismatched)) of 12 jobs compared"

timeout 10 scancel --name=fidA,fidB,fidC,fidD,fidE,fidF,fidG,fidH,fidI,fidJ,fidK,fidL 2>/dev/null || true
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
