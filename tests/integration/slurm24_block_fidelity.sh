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
# A second cluster runs 5 racks x 4 hosts with node020 taken out of rack05's
# NVLink domain (a rack with a missing tray): blocks of 4,4,4,4,3, so
# BlockSizes=3,6,12, and node020 in no block:
#   - a 13-node job needs more base blocks than the largest aggregated block
#     has: the whole system is one block, with llblocks of 4 base blocks of
#     which Slurm counts only the first; the llblock rules of
#     _choose_best_bblock pick the base blocks;
#   - a 17-node job (19 hosts in blocks) never runs: Slurm accepts it and
#     leaves it pending (BadConstraints) on the idle cluster, slurm-block
#     says it can never fit;
#   - the short rack takes the small jobs (fewest candidates), a 4-node job
#     is larger than the 3-host base and uses an aggregated pair, and the
#     host in no block is never picked.
# --gpus=T jobs (no -N): on the idle cluster and on a fragmented one where
# Slurm's first pass decides, and one larger than a rack's GPUs, which
# sbatch rejects. Not covered: a --gpus job whose first pass fails on GPUs
# (Slurm's knapsack retries are not modelled), required nodes, weights,
# BlockSizes that skip a level.
#
# Runs beside other clusters: TP_FIDELITY_NET (default 10.203.0) and
# TP_FIDELITY_PORT (default 6937) pick its network and slurmctld port.
# Needs root and the private Slurm 24.11 (contrib/build-slurm.sh,
# SLURM24_PREFIX); exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24 scancel
[ -f "$PREFIX/lib/slurm/topology_block.so" ] || skip_all "$PREFIX has no topology/block"
NET=${TP_FIDELITY_NET:-10.203.0}
PORT=${TP_FIDELITY_PORT:-6937}
dir=$tmp/cluster

t0=$(date +%s)
cluster_trap slurmctld.log 'block\|fatal\|error' 20

# start_cluster FABRIC NODES: a 24.11 cluster with topology/block on FABRIC
start_cluster() {
	fabric=$1
	NODES=$2
	t1=$(date +%s)
	echo "# $CLUSTER start --slurm-prefix $PREFIX --topology block --nodes $NODES --net $NET --port $PORT"
	if ! timeout 150 "$CLUSTER" start --slurm-prefix "$PREFIX" --topology block \
		--fabric "$fabric" --nodes "$NODES" --gpus-per-node 4 --dir "$dir" --timeout 60 \
		--net "$NET" --port "$PORT" >"$tmp/start.out" 2>&1; then
		cat "$tmp/start.out"
		bad "cluster start"
		finish
	fi
	ok "$NODES-node cluster up in $(($(date +%s) - t1)) s"
	export SLURM_CONF="$dir/slurm.conf"
	sed 's/^/# /' "$dir/topology.conf"
}
# check_topology BASE AGGREGATED: what scontrol show topology reports
check_topology() {
	timeout 10 scontrol show topology >"$tmp/topo" 2>&1
	if [ "$(grep -c '^BlockName=' "$tmp/topo")" -eq "$1" ] &&
		grep -q '^BlockName=rack01 .*Nodes=node\[001-004\] BlockSize=' "$tmp/topo" &&
		[ "$(grep -c '^AggregatedBlock=' "$tmp/topo")" -eq "$2" ]; then
		ok "scontrol show topology: $1 racks as base blocks, $2 aggregated blocks"
	else
		bad "scontrol show topology (wanted $1 base, $2 aggregated blocks)"
		sed 's/^/#   /' "$tmp/topo"
	fi
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
# sim_place STATE N G MODE: slurm-block's sorted host set, or "(none: why)";
# an empty STATE is the idle fabric
sim_place() {
	req="nodes=$2,gpus-per-node=$3"
	[ "$4" = x ] && req="$req,exclusive"
	[ "$4" = g ] && req="gpus=$3"
	# shellcheck disable=SC2086
	out=$("$TOPOPLACE" place --fabric "$fabric" ${1:+--state "$1"} \
		--request "$req" --policy slurm-block --json 2>"$tmp/place.err" |
		jq -r '.hosts[]' 2>/dev/null | sorted_line)
	[ -n "$out" ] || out="(none: $(sed 's/.*: //' "$tmp/place.err" | head -1))"
	echo "$out"
}

# The machine may be loaded (MessageTimeout=15): a client that times out is
# retried, and a submission that timed out after slurmctld took it is found
# by name rather than submitted twice.
# submit NAME SBATCH-ARGS...: the id of the held job bfidNAME
submit() {
	sname=$1
	shift
	for _ in 1 2 3; do
		sid=$(timeout 20 sbatch --parsable -H -J "bfid$sname" -o /dev/null "$@" \
			--wrap 'sleep 600' 2>"$tmp/sb.err")
		[ -n "$sid" ] || sid=$(timeout 10 squeue -h -n "bfid$sname" -o %i | head -1)
		[ -n "$sid" ] && { echo "$sid"; return 0; }
		grep -q 'timed out' "$tmp/sb.err" || break
		sleep 1
	done
	cat "$tmp/sb.err" >&2
	return 1
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
# with Reason=BadConstraints (its own verdict that the job can never run);
# slurm-block must say it can never fit
never_job() {
	sim=$(sim_place "" "$2" "$3" "$4")
	settle "$NODES" || bad "nodes settled before $1"
	# shellcheck disable=SC2046
	if nid=$(submit "$1" $(sbatch_args "$2" "$3" "$4") 2>"$tmp/never.err"); then
		release "$nid" || bad "scontrol release $nid"
		if wait_state -t 8 "$nid" RUNNING; then
			got="(running on $(field "$nid" NodeList))"
		else
			# Reason stays None until a scheduling pass has evaluated
			# the job; the release's own pass can miss it on a loaded
			# machine, and the next periodic one comes within
			# sched_interval (60 s) - wait past it
			i=0
			while [ "$(field "$nid" Reason)" = None ] && [ $i -lt 90 ]; do
				sleep 1
				i=$((i + 1))
			done
			got="(none: $(field "$nid" JobState) $(field "$nid" Reason))"
		fi
		cancel "$nid" || bad "scancel $nid"
	else
		got="(rejected: $(sed -n 's/.*error: //p' "$tmp/never.err" | tail -1))"
	fi
	compared=$((compared + 1))
	case "$sim|$got" in
	"(none: can never fit this fabric)|(none: PENDING BadConstraints)" | \
	"(none: can never fit this fabric)|(rejected: "*"configuration is not available")
		got=${got#(}
		ok "job $1 ($(sbatch_args "$2" "$3" "$4")): never runs: slurm-block: can never fit; Slurm: ${got%)}"
		matched=$((matched + 1)) ;;
	*)
		bad "job $1 ($(sbatch_args "$2" "$3" "$4")): slurm-block [$sim], Slurm [$got]"
		mismatched=$((mismatched + 1)) ;;
	esac
}
# run_seq FILE: lines NAME NODES GPUS x|s|g (exclusive -N, shared -N, or
# --gpus=GPUS: compared, then cancelled), "cancel NAME...", or "never NAME
# NODES GPUS MODE"
run_seq() {
	: >"$tmp/jobs" # NAME ID NODES GPUS MODE
	while read -r name n g m e; do
		case $name in cancel | never) continue ;; esac
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
			ok "$desc: both wait (slurm-block: does not fit now; Slurm: pending, Resources)"
			matched=$((matched + 1))
			cancel "$id" || bad "scancel $id"
			continue ;;
		esac
		if [ "$sim" = "$got" ]; then
			ok "$desc: slurm-block = Slurm: $got"
			matched=$((matched + 1))
			# how Slurm spread a --gpus job's GPUs is not in the state file
			if [ "$m" = g ]; then cancel "$id" || bad "scancel $id"; fi
		else
			bad "$desc free [$free]: slurm-block [$sim] != Slurm [$got]"
			mismatched=$((mismatched + 1))
			# a job only one side started would skew every later state
			case $got in "(none"*) cancel "$id" ;; esac
		fi
	done <"$1"
	timeout 10 scancel --name="$(awk '{ printf "%sbfid%s", s, $1; s = "," }' "$tmp/jobs")" \
		2>/dev/null || true
}

# ---- phase 1: 4 racks x 4 hosts. The comments are Slurm's rules worked by
# hand; what is checked is the model against Slurm. ----
"$TOPOPLACE" fabric generate nvl72 --racks 4 --hosts-per-rack 4 --gpus-per-host 4 \
	--prefix node -o "$tmp/nvl4.json" >/dev/null || { bad "fabric generate"; finish; }
printf '%s\n' 'V 0 6 g' 'A 3 2 x' 'B 1 2 s' 'C 2 1 x' 'D 5 2 x' 'cancel A' 'E 4 1 x' \
	'F 3 4 x' 'W 0 2 g' 'cancel C' 'G 6 1 x' 'cancel D' 'H 7 2 x' 'I 1 4 s' 'cancel F B' 'J 6 2 x' \
	'cancel H I' 'K 10 1 x' 'cancel J' 'L 2 1 s' 'cancel K L' 'M 16 4 x' >"$tmp/seq1"
# V: --gpus=6 idle: rack04 (the last), node013 (4) + node014 (2)
# A: rack04 (all racks tie: the last)       B: node016 (rack04 fewest)
# C: rack03 (rack04 has none idle)          D: rack02 + node001 (pair 1)
# E: waits (8 idle, no rack holds 4)        F: rack04 (ties rack01: last)
# W: --gpus=2: node016 (rack04 has 1 candidate, 2 GPUs free)
# G: waits (7 idle, no pair holds 6)        H: rack02 + node001-003
# I: node004 (rack01: one host with 4 free) J: rack04 + node009-010
# K: rack02, rack01, node011-012            L: node009-010 (rack03 fewest)
# M: all 16
start_cluster "$tmp/nvl4.json" 16
check_topology 4 3
run_seq "$tmp/seq1"
stop_cluster
rm -f "$dir/pids"

# ---- phase 2: 5 racks, rack05 short of node020 ----
"$TOPOPLACE" fabric generate nvl72 --racks 5 --hosts-per-rack 4 --gpus-per-host 4 \
	--prefix node -o "$tmp/nvl5.json" >/dev/null &&
	jq '.nvlink_domains |= map(select(.host != "node020"))' "$tmp/nvl5.json" \
		>"$tmp/nvl5u.json" || { bad "fabric generate (5 racks)"; finish; }
printf '%s\n' 'N 13 1 x' 'cancel N' 'never O 17 1 x' 'never X 0 20 g' 'P 2 2 x' 'Q 1 1 s' 'R 7 1 x' \
	'S 4 2 x' >"$tmp/seq2"
# N: whole system: rack04, rack03, rack02, node001 (first llblock only)
# O: never runs (the first llblock has 16 of the 19 hosts in blocks)
# X: --gpus=20: one base block (16 GPUs) at most: pending, BadConstraints
# P: node017-018 (rack05 has the fewest)    Q: node019 (never node020)
# R: rack04 + node009-011                   S: pair (rack01,rack02): rack02
start_cluster "$tmp/nvl5u.json" 20
check_topology 5 3
run_seq "$tmp/seq2"

echo "# $matched placements matched, $mismatched differed"
[ "$compared" -eq 22 ] && ok "all 22 jobs compared" || bad "$compared of 22 jobs compared"
[ "$mismatched" -eq 0 ] || bad "$mismatched of $compared placements differ from Slurm's"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
