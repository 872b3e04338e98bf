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
# (Slurm's knapsack retries are not modelled), required nodes, BlockSizes
# that skip a level. Node weights: three jobs after Weight= on a rack.
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

FID_TOPO=block
FID_POLICY=slurm-block
FID_TAG=bfid
# start_cluster, run_seq, never_job ...: fidelity.sh
. "$(dirname "$0")/fidelity.sh"

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

# ---- phase 1: 4 racks x 4 hosts. The comments are Slurm's rules worked by
# hand; what is checked is the model against Slurm. ----
"$TOPOPLACE" fabric generate nvl72 --racks 4 --hosts-per-rack 4 --gpus-per-host 4 \
	--prefix node -o "$tmp/nvl4.json" >/dev/null || { bad "fabric generate"; finish; }
printf '%s\n' 'V 0 6 g' 'A 3 2 x' 'B 1 2 s' 'C 2 1 x' 'D 5 2 x' 'cancel A' 'E 4 1 x' \
	'F 3 4 x' 'W 0 2 g' 'cancel C' 'G 6 1 x' 'cancel D' 'H 7 2 x' 'I 1 4 s' 'cancel F B' 'J 6 2 x' \
	'cancel H I' 'K 10 1 x' 'cancel J' 'L 2 1 s' 'cancel K L' 'M 16 4 x' 'cancel M' \
	'pin P 4 x node[003-012,015-016]' 'pin Q 2 s node013' 'pin R 2 s node014' 'T 0 4 g' \
	'U 0 6 g' 'cancel P Q R' 'weight node[013-016] 10' 'WA 3 4 x' 'WB 6 4 x' 'cancel WA WB' \
	'WC 0 6 g' >"$tmp/seq1"
# V: --gpus=6 idle: rack04 (the last), node013 (4) + node014 (2)
# A: rack04 (all racks tie: the last)       B: node016 (rack04 fewest)
# C: rack03 (rack04 has none idle)          D: rack02 + node001 (pair 1)
# E: waits (8 idle, no rack holds 4)        F: rack04 (ties rack01: last)
# W: --gpus=2: node016 (rack04 has 1 candidate, 2 GPUs free)
# G: waits (7 idle, no pair holds 6)        H: rack02 + node001-003
# I: node004 (rack01: one host with 4 free) J: rack04 + node009-010
# K: rack02, rack01, node011-012            L: node009-010 (rack03 fewest)
# M: all 16
# GPU weight tiers (cons_tres: more usable GPUs first; a --gpus=T job's
# tier is min(free, T)), node001-002 with 4 free, node013-014 with 2:
# T: --gpus=4: rack01 (tier 4) before rack04 (tier 2, the last of equal
#    counts): node001 (4)
# U: --gpus=6: rack01: node001 (4) + node002 (2)
# Node weights (Weight=10 on rack04; cons_tres puts Weight= above the GPU
# tier, so a block whose lightest node is light goes first):
# WA: -N 3: rack03, the last light rack (equal weights: rack04)
# WB: -N 6 beside WA: a pair; WC: --gpus=6 on the light racks
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
[ "$compared" -eq 27 ] && ok "all 27 jobs compared" || bad "$compared of 27 jobs compared"
[ "$mismatched" -eq 0 ] || bad "$mismatched of $compared placements differ from Slurm's"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
