#!/bin/sh
# Fidelity of the simulator's slurm-tree-22.05 policy: one job sequence through a
# real slurmctld 22.05 (Slurm's own topology/tree, the topology.conf that
# `topoplace fabric topology-conf` writes) and through
# `topoplace place --policy slurm-tree-22.05` must land on the same hosts.
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

# field, wait_state, hostline, settle, job_of, state_now: lib.sh
matched=0
mismatched=0
while read -r name n g; do
	if [ "$name" = cancel ]; then
		ids=
		for c in $n $g; do ids="$ids $(job_of "$c")"; done
		# shellcheck disable=SC2086
		timeout 10 scancel $ids
		settle 12 || bad "nodes idle after cancelling$ids"
		echo "# cancelled $n $g ($ids)"
		continue
	fi
	id=$(job_of "$name")
	settle 12 || bad "nodes settled before $name"
	state_now 4 1 # exclusive jobs: the host is theirs either way
	free=$(timeout 10 sinfo -h -N -t idle -o %N | sort -u | sorted_line)
	sim=$("$TOPOPLACE" place --fabric "$fabric" --state "$tmp/state.json" \
		--request "nodes=$n,gpus-per-node=$g,exclusive" --policy slurm-tree-22.05 --json 2>"$tmp/place.err" |
		jq -r '.hosts[]' 2>/dev/null | sorted_line)
	timeout 10 scontrol release "$id"
	if wait_state -t 20 "$id" RUNNING; then
		got=$(hostline "$(field "$id" NodeList)")
	else
		got="(not started: $(field "$id" Reason))"
	fi
	[ -n "$sim" ] || sim="(no placement: $(head -1 "$tmp/place.err"))"
	if [ "$sim" = "$got" ]; then
		ok "job $name ($id, -N $n gpu:$g): slurm-tree-22.05 = Slurm: $got"
		matched=$((matched + 1))
	else
		bad "job $name ($id, -N $n gpu:$g) free [$free]: slurm-tree-22.05 [$sim] != Slurm [$got]"
		mismatched=$((mismatched + 1))
	fi
done <"$tmp/seq"
echo "# $matched placements matched, $mismatched differed"
[ $((matched + mismatched)) -eq 12 ] && ok "all 12 jobs compared" ||
	bad "$((matched + mismatched)) of 12 jobs compared"

timeout 10 scancel --name=fidA,fidB,fidC,fidD,fidE,fidF,fidG,fidH,fidI,fidJ,fidK,fidL 2>/dev/null || true
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
