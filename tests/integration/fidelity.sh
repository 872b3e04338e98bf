# Shared by the fidelity tests (slurm_fidelity.sh, slurm24_block_fidelity.sh,
# slurm24_tree_fidelity.sh), sourced after lib.sh, need_slurm and
# cluster_trap: one job sequence through a real slurmctld (22.05, or 24.11
# when need_slurm 24 set PREFIX) and through `topoplace place --policy
# $FID_POLICY` on the same running jobs, compared job by job as host sets.
# Set before sourcing: FID_TOPO (Slurm's topology plugin: block or tree),
# FID_POLICY (the simulator's model of it), FID_TAG (job name prefix), NET,
# PORT, dir (the cluster's directory).

# start_cluster FABRIC NODES: a cluster with topology/$FID_TOPO on FABRIC
start_cluster() {
	fabric=$1
	NODES=$2
	t1=$(date +%s)
	: >"$tmp/weights.conf" # a new cluster: every node Weight=1
	# a scheduling pass every 2 s, not 60: a released job that can
	# never run gets its reason when the release's own pass missed it
	# (a loaded machine) without waiting a minute; jobs go one at a
	# time, so how often the passes come changes no choice
	echo "SchedulerParameters=sched_interval=2" >"$tmp/sched.conf"
	set -- --topology "$FID_TOPO" --fabric "$fabric" --nodes "$NODES" --gpus-per-node 4 \
		--dir "$dir" --timeout 60 --net "$NET" --port "$PORT" --slurm-conf-extra "$tmp/sched.conf"
	[ -z "${PREFIX:-}" ] || set -- --slurm-prefix "$PREFIX" "$@"
	echo "# $CLUSTER start $*"
	if ! timeout 150 "$CLUSTER" start "$@" >"$tmp/start.out" 2>&1; then
		cat "$tmp/start.out"
		bad "cluster start"
		finish
	fi
	ok "$NODES-node cluster up in $(($(date +%s) - t1)) s"
	export SLURM_CONF="$dir/slurm.conf"
	sed 's/^/# /' "$dir/topology.conf"
}
# field, wait_state, hostline, slurm_cli, settle, job_of, state_now: lib.sh
# wait_decided JOBID: until slurmctld has decided on a released job -
# RUNNING, or PENDING with a reason other than None (not evaluated yet) -
# or 60 s; a loaded machine can take longer than a few seconds
wait_decided() {
	i=0
	while [ $i -lt 120 ]; do
		st=$(field "$1" JobState)
		[ "$st" = RUNNING ] && return 0
		if [ "$st" = PENDING ]; then
			r=$(field "$1" Reason)
			[ "$r" != None ] && [ "$r" != JobHeldUser ] && [ -n "$r" ] && return 1
		fi
		sleep 0.5
		i=$((i + 1))
	done
	return 1
}
# cancel ID...: scancel, retried, until squeue no longer lists them
cancel() {
	i=0
	while [ $i -lt 60 ]; do
		i=$((i + 1))
		timeout 10 scancel "$@" 2>/dev/null
		timeout 10 squeue -h -t R,PD,CG -o %i >"$tmp/left" 2>/dev/null || { sleep 0.5; continue; }
		left=0
		for c in "$@"; do grep -qx "$c" "$tmp/left" && left=1; done
		[ $left -eq 0 ] && return 0
		sleep 0.5
	done
	return 1
}
# sbatch_args N G MODE: -N N --gres=gpu:G [--exclusive], or --gpus=G (mode g)
sbatch_args() {
	case $3 in
	g) echo "--gpus=$2" ;;
	x) echo "-N $1 --gres=gpu:$2 --exclusive" ;;
	*) echo "-N $1 --gres=gpu:$2" ;;
	esac
}
# sim_place STATE N G MODE: $FID_POLICY's sorted host set, or "(none: why)";
# an empty STATE is the idle fabric
sim_place() {
	req="nodes=$2,gpus-per-node=$3"
	[ "$4" = x ] && req="$req,exclusive"
	[ "$4" = g ] && req="gpus=$3"
	st=$1
	# the node weights run_seq's "weight" lines gave Slurm
	set --
	[ -s "$tmp/weights.conf" ] && set -- --node-weights "$tmp/weights.conf"
	out=$("$TOPOPLACE" place --fabric "$fabric" ${st:+--state "$st"} "$@" \
		--request "$req" --policy "$FID_POLICY" --json 2>"$tmp/place.err" |
		jq -r '.hosts[]' 2>/dev/null | sorted_line)
	[ -n "$out" ] || out="(none: $(sed 's/.*: //' "$tmp/place.err" | head -1))"
	echo "$out"
}

# submit NAME SBATCH-ARGS...: the id of the held job ${FID_TAG}NAME
# (sbatch_named: a submission that timed out after slurmctld took it is
# found by name rather than submitted twice)
submit() {
	sname=$1
	shift
	sbatch_named "$FID_TAG$sname" -H -o /dev/null "$@" --wrap 'sleep 600'
}
# release ID: until it no longer waits for the release
release() {
	for _ in 1 2 3 4 5; do
		timeout 10 scontrol release "$1" 2>/dev/null
		r=$(field "$1" Reason)
		[ -n "$r" ] && [ "$r" != JobHeldUser ] && return 0
		sleep 0.5
	done
	return 1
}

matched=0
mismatched=0
compared=0
# never_job NAME NODES GPUS MODE: Slurm accepts it and leaves it pending
# with Reason=BadConstraints, or PartitionNodeLimit when it asks for more
# nodes than the partition has (its own verdicts that the job can never
# run); $FID_POLICY must say it can never fit
never_job() {
	sim=$(sim_place "" "$2" "$3" "$4")
	settle "$NODES" || bad "nodes settled before $1"
	# shellcheck disable=SC2046
	if nid=$(submit "$1" $(sbatch_args "$2" "$3" "$4") 2>"$tmp/never.err"); then
		release "$nid" || bad "scontrol release $nid"
		# Reason stays None until a scheduling pass has evaluated the
		# job; the release's own pass can miss it on a loaded machine,
		# and the next periodic one comes within sched_interval (2 s)
		if wait_decided "$nid"; then
			got="(running on $(field "$nid" NodeList))"
		else
			# a passing Priority (other jobs first) is not the verdict
			i=0
			while [ "$(field "$nid" Reason)" = Priority ] && [ $i -lt 20 ]; do
				sleep 0.5
				i=$((i + 1))
			done
			got="(none: $(field "$nid" JobState) $(field "$nid" Reason))"
		fi
		cancel "$nid" || bad "scancel $nid"
	else
		got="(rejected: $(sed -n 's/.*error: //p' "$tmp/never.err" | tail -1))"
	fi
	compared=$((compared + 1))
	[ "$got" = "(none: PENDING PartitionNodeLimit)" ] && [ "$2" -gt "$NODES" ] &&
		got="(none: PENDING PartitionNodeLimit, $2 > $NODES nodes)"
	# slurm-block names a shape its blocks refuse though the fabric
	# holds it: a never all the same
	case "$sim" in
	"(none: Slurm's topology/block would refuse it"*) sim="(none: can never fit this fabric)" ;;
	esac
	case "$sim|$got" in
	"(none: can never fit this fabric)|(none: PENDING BadConstraints)" | \
	"(none: can never fit this fabric)|(none: PENDING PartitionNodeLimit, "*" nodes)" | \
	"(none: can never fit this fabric)|(rejected: "*"configuration is not available")
		got=${got#(}
		ok "job $1 ($(sbatch_args "$2" "$3" "$4")): never runs: $FID_POLICY: can never fit; Slurm: ${got%)}"
		matched=$((matched + 1)) ;;
	*)
		bad "job $1 ($(sbatch_args "$2" "$3" "$4")): $FID_POLICY [$sim], Slurm [$got]"
		mismatched=$((mismatched + 1)) ;;
	esac
}
# run_seq FILE: lines NAME NODES GPUS x|s|g (exclusive -N, shared -N, or
# --gpus=GPUS: compared, then cancelled), "cancel NAME...", "never NAME
# NODES GPUS MODE", "pin NAME GPUS x|s HOSTLIST": a job held on HOSTLIST
# (-w), to shape the free state, not compared, or "weight HOSTLIST N":
# Weight=N on those nodes (scontrol update; the model gets them as
# slurm.conf lines)
run_seq() {
	: >"$tmp/jobs" # NAME ID NODES GPUS MODE
	while read -r name n g m e; do
		case $name in cancel | never | weight) continue ;; esac
		if [ "$name" = pin ]; then
			cnt=$(timeout 10 scontrol show hostnames "$e" | wc -l)
			# shellcheck disable=SC2046
			id=$(submit "$n" $(sbatch_args "$cnt" "$g" "$m") -w "$e") ||
				{ bad "sbatch $n -w $e"; finish; }
			echo "$n $id $cnt $g $m" >>"$tmp/jobs"
			continue
		fi
		# shellcheck disable=SC2046
		id=$(submit "$name" $(sbatch_args "$n" "$g" "$m")) || { bad "sbatch $name"; finish; }
		echo "$name $id $n $g $m" >>"$tmp/jobs"
	done <"$1"
	ok "$(wc -l <"$tmp/jobs") jobs submitted held"
	while read -r name n g m e; do
		if [ "$name" = never ]; then
			never_job "$n" "$g" "$m" "$e"
			continue
		fi
		if [ "$name" = pin ]; then
			id=$(job_of "$n")
			release "$id" || bad "scontrol release $id"
			if wait_state -t 20 "$id" RUNNING &&
				[ "$(hostline "$(field "$id" NodeList)")" = "$(hostline "$e")" ]; then
				echo "# pinned $n ($id) on $e"
			else
				bad "pinned job $n ($id) not running on $e: $(field "$id" JobState) $(field "$id" NodeList)"
			fi
			continue
		fi
		if [ "$name" = weight ]; then
			if timeout 10 scontrol update NodeName="$n" Weight="$g" &&
				[ "$(slurm_cli sinfo -h -N -n "$n" -o %w | sort -u)" = "$g" ]; then
				echo "NodeName=$n Weight=$g" >>"$tmp/weights.conf"
				echo "# Weight=$g on $n"
			else
				bad "scontrol update NodeName=$n Weight=$g"
			fi
			continue
		fi
		if [ "$name" = cancel ]; then
			ids=
			for c in $n $g $m $e; do ids="$ids $(job_of "$c")"; done
			# shellcheck disable=SC2086
			cancel $ids || bad "scancel$ids"
			settle "$NODES" || bad "nodes idle after cancelling$ids"
			echo "# cancelled $n $g $m $e($ids)"
			continue
		fi
		id=$(job_of "$name")
		settle "$NODES" || bad "nodes settled before $name"
		state_now 4 4
		free=$(slurm_cli sinfo -h -N -t idle -o %N | sort -u | sorted_line)
		sim=$(sim_place "$tmp/state.json" "$n" "$g" "$m")
		release "$id" || bad "scontrol release $id"
		if wait_decided "$id"; then
			got=$(hostline "$(field "$id" NodeList)")
		else
			got="(none: $(field "$id" JobState) $(field "$id" Reason))"
		fi
		compared=$((compared + 1))
		desc="job $name ($id, $(sbatch_args "$n" "$g" "$m"))"
		case "$sim|$got" in
		"(none: does not fit the free part of the fabric now)|(none: PENDING Resources)")
			ok "$desc: both wait ($FID_POLICY: does not fit now; Slurm: pending, Resources)"
			matched=$((matched + 1))
			cancel "$id" || bad "scancel $id"
			continue ;;
		esac
		if [ "$sim" = "$got" ]; then
			ok "$desc: $FID_POLICY = Slurm: $got"
			matched=$((matched + 1))
			# how Slurm spread a --gpus job's GPUs is not in the state file
			if [ "$m" = g ]; then cancel "$id" || bad "scancel $id"; fi
		else
			bad "$desc free [$free]: $FID_POLICY [$sim] != Slurm [$got]"
			mismatched=$((mismatched + 1))
			# a job only one side started would skew every later state,
			# and the state file cannot say how a --gpus job's GPUs lie
			case $got in "(none"*) cancel "$id" ;; *) [ "$m" != g ] || cancel "$id" ;; esac
		fi
	done <"$1"
	timeout 10 scancel --name="$(awk -v t="$FID_TAG" '{ printf "%s%s%s", s, t, $1; s = "," }' "$tmp/jobs")" \
		2>/dev/null || true
}
