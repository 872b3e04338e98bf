#!/bin/sh
# Fidelity of the simulator's slurm-tree policy against Slurm 24.11: one job
# sequence through a real slurmctld 24.11 (Slurm's own topology/tree, the
# topology.conf that `topoplace fabric topology-conf` writes) and through
# `topoplace place --policy slurm-tree` must land on the same hosts, or both
# must refuse. (slurm_fidelity.sh checks slurm-tree-22.05 against 22.05.)
#
# Jobs are submitted held and released one at a time; each runs until
# cancelled, and cancels in between fragment the leaves. Just before each
# release the running jobs become a topoplace-state/1 file (an exclusive job
# holds all of its hosts' GPUs), the simulator places the job on it, and the
# host SET it picks is compared with the NodeList Slurm gives the job.
# Exclusive (-N n --exclusive --gres=gpu:g), shared (-N n --gres=gpu:g: partly
# used hosts count when g GPUs are free) and --gpus=T jobs (no -N).
#   - phase 1: a two-level tree, 12 hosts of 4 GPUs on 3 leaves whose
#     names interleave (node001,004,007,010 on leaf01, ...);
#     then GPU weight tiers: --gpus jobs beside partly used hosts;
#     then node weights (Weight=, set with scontrol update);
#   - phase 2: a three-level tree, 2 pods of 2 leaves of 3 hosts
#     (node001-003 leaf01, ...; leaf01-02 pod 1), made busy or free host
#     by host with pinned jobs (-w), so that the leaves a job's nodes come
#     from depend on how Slurm weighs distance (24.11 takes any closer leaf
#     that fits; 22.05 did not) and on the counts it keeps above the
#     leaves (24.11 brings them up to date; 22.05 left them stale).
# Not covered: required nodes, --switches, a --gpus job whose first
# pass fails on GPUs (Slurm's knapsack retries are not modelled).
#
# Runs beside other clusters: TP_FIDELITY_NET (default 10.224.0) and
# TP_FIDELITY_PORT (default 7027) pick its network and slurmctld port.
# Needs root and the private Slurm 24.11 (contrib/build-slurm.sh,
# SLURM24_PREFIX); exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24 scancel
[ -f "$PREFIX/lib/slurm/topology_tree.so" ] || skip_all "$PREFIX has no topology/tree"
NET=${TP_FIDELITY_NET:-10.224.0}
PORT=${TP_FIDELITY_PORT:-7027}
dir=$tmp/cluster

t0=$(date +%s)
cluster_trap slurmctld.log 'topology\|fatal\|error' 20

FID_TOPO=tree
FID_POLICY=slurm-tree
FID_TAG=tfid
# start_cluster, run_seq, never_job ...: fidelity.sh
. "$(dirname "$0")/fidelity.sh"

# check_switches N LEVELS: scontrol show topology lists N switches, the top
# one on level LEVELS - 1
check_switches() {
	timeout 10 scontrol show topology >"$tmp/topo" 2>&1
	if [ "$(grep -c '^SwitchName=' "$tmp/topo")" -eq "$1" ] &&
		grep -q "^SwitchName=.* Level=$(($2 - 1)) " "$tmp/topo"; then
		ok "scontrol show topology: $1 switches on $2 levels"
	else
		bad "scontrol show topology (wanted $1 switches on $2 levels)"
		sed 's/^/#   /' "$tmp/topo"
	fi
}

# ---- phase 1: two levels, 3 leaves x 4 hosts, names interleaved
# (leaf01 node001,004,007,010; leaf02 node002,...; leaf03 node003,...).
# The comments are Slurm's rules worked by hand; what is checked is the
# model against Slurm. ----
"$TOPOPLACE" fabric generate fat-tree --nics-per-host 1 --uplinks 2 --leaves 3 --spines 2 \
	--hosts-per-leaf 4 --interleave --gpus-per-host 4 --prefix node \
	-o "$tmp/ft2.json" >/dev/null || { bad "fabric generate (two levels)"; finish; }
printf '%s\n' 'V 0 6 g' 'A 3 2 x' 'B 1 2 s' 'C 2 1 x' 'D 4 2 x' 'cancel A' 'E 2 2 s' \
	'F 5 1 x' 'cancel C' 'G 1 4 s' 'W 0 3 g' 'cancel D' 'H 6 2 x' 'cancel E G' 'I 3 1 s' \
	'cancel F H' 'J 7 2 x' 'K 2 4 x' 'L 1 1 s' 'never N 13 1 x' 'cancel B I J L' \
	'pin P 3 s node001' 'pin Q 2 s node005' 'T 0 4 g' 'U 0 6 g' \
	'pin R 4 x node[002-004,006-008,010-012]' 'Y 0 5 g' 'cancel P Q R' \
	'weight node[001-002,004,007] 10' 'WA 3 4 x' 'WB 6 4 x' 'cancel WA WB' 'WC 0 6 g' \
	'WD 2 2 s' >"$tmp/seq1"
# GPU weight tiers (cons_tres: nodes with more usable GPUs first; a
# --gpus=T job's tier is min(free, T)), with node001 holding 1 free GPU
# and node005 2:
# T: --gpus=4: only the 4-free tier: leaf01 (3 of them, first): node004
# U: --gpus=6: the same tier: node004 (4) + node007 (2)
# Y: --gpus=5 with node001 (1), node005 (2), node009 (4) free: tier 4 is
#    short, so node009 is the job's first (its leaf required), then the
#    next tier: node005, never node001
# Node weights (Weight=10 on node001, 002, 004 and 007; cons_tres puts
# Weight= above the GPU tier in a node's sched_weight, so the lighter
# nodes go first whatever their GPUs):
# WA: -N 3 --exclusive: the light tier suffices, best fit among its
#    leaves: leaf02 (005,008,011), not leaf01 as with equal weights
# WB: -N 6 beside WA: 5 light nodes are short, so all of them are the
#    job's (010 and leaf03) and their leaves required: leaf01's heavy
#    node001 completes it
# WC, WD: a --gpus and a shared job on the light tier
start_cluster "$tmp/ft2.json" 12
check_switches 4 2
run_seq "$tmp/seq1"
stop_cluster
rm -f "$dir/pids"

# ---- phase 2: three levels, 2 pods x 2 leaves x 3 hosts (node001-003
# leaf01, node004-006 leaf02 in pod 1; node007-012 leaf03-04 in pod 2),
# every host made busy or free by pinned jobs. Where 24.11 and 22.05
# differ (doc/slurm-tree-model.md 11.):
# A: free 001,007,008,010,011, -N 3: leaf03 first (its pod fits), then
#    leaf04, closer and fitting (22.05: leaf01, the tighter fit): 007,008,010
# B: free 004-007,009-011, -N 6: leaf03 (007,009), then pod 2's count
#    falls to 2 and leaf02 wins over leaf04 (22.05's stale count: leaf04)
# C: free 001,002,007,008,010,011, -N 5: leaf03, then leaf01 (pod 2's
#    count is brought down to 2, a tie, so the closer leaf04 does not fit)
# D: --gpus=8 with 001,002,007,010-012 free: leaf03 (fewest), then leaf04
#    (closer, fits; 22.05: leaf01) ----
"$TOPOPLACE" fabric generate fat-tree --pods 2 --nics-per-host 1 --uplinks 2 --leaves 4 \
	--spines 2 --hosts-per-leaf 3 --gpus-per-host 4 --prefix node \
	-o "$tmp/ft3.json" >/dev/null || { bad "fabric generate (three levels)"; finish; }
printf '%s\n' 'pin P1 4 x node[002-006],node009,node012' 'A 3 1 x' 'cancel A P1' \
	'pin P2 4 x node[001-003],node008,node012' 'B 6 1 x' 'cancel B P2' \
	'pin P3 4 x node[003-006],node009,node012' 'C 5 1 x' 'cancel C P3' \
	'pin P4 4 x node[003-006,008-009]' 'D 0 8 g' 'E 2 2 s' 'cancel P4 E' 'F 7 2 x' \
	>"$tmp/seq2"
start_cluster "$tmp/ft3.json" 12
check_switches 7 3
run_seq "$tmp/seq2"

echo "# $matched placements matched, $mismatched differed"
[ "$compared" -eq 28 ] && ok "all 28 jobs compared" || bad "$compared of 28 jobs compared"
[ "$mismatched" -eq 0 ] || bad "$mismatched of $compared placements differ from Slurm's"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
