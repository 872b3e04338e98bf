#!/bin/sh
# Fidelity of the simulator's slurm-tree-22.05 policy: one job sequence
# through a real slurmctld 22.05 (Slurm's own topology/tree, the
# topology.conf that `topoplace fabric topology-conf` writes) and through
# `topoplace place --policy slurm-tree-22.05` must land on the same hosts, or
# both must refuse (fidelity.sh runs it; slurm24_tree_fidelity.sh checks
# slurm-tree against 24.11).
#
# 12 nodes, 4 fake GPUs each, on a 3-leaf fat tree whose groups interleave
# the names (node001,004,007,010 on leaf01, ...). Twelve exclusive GPU jobs
# of 1-6 nodes are submitted held and released one at a time; each runs
# (sleep) until cancelled, and cancels in between fragment the leaves. Just
# before each release the running jobs become a topoplace-state/1 file, the
# simulator places the job on it, and the host SET it picks is compared with
# the NodeList Slurm gives the job. Then --gpus jobs beside partly used
# hosts: 22.05's cons_tres orders nodes by GPU weight tiers as 24.11's does
# (doc/slurm-tree-model.md 11.3), the lighter tiers the job's first (req2).
# A mismatch names the job, the free state and both host sets.
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

FID_TOPO=tree
FID_POLICY=slurm-tree-22.05
FID_TAG=fid
# start_cluster, run_seq ...: fidelity.sh
. "$(dirname "$0")/fidelity.sh"

"$TOPOPLACE" fabric generate fat-tree --nics-per-host 1 --uplinks 2 --leaves 3 --spines 2 \
	--hosts-per-leaf 4 --interleave --gpus-per-host 4 --prefix node \
	-o "$tmp/fabric.json" >/dev/null || { bad "fabric generate"; finish; }
# NAME NODES GPUS MODE, "cancel NAME...", "pin NAME GPUS MODE HOSTS"
printf '%s\n' 'A 3 2 x' 'B 2 4 x' 'C 1 1 x' 'D 4 2 x' 'cancel B' 'E 2 2 x' 'cancel A' \
	'F 4 1 x' 'cancel C' 'G 1 4 x' 'cancel D' 'H 5 2 x' 'cancel E G' 'I 3 1 x' \
	'cancel F H' 'J 6 2 x' 'K 2 4 x' 'L 1 1 x' 'cancel I J K L' \
	'pin P 3 s node001' 'pin Q 2 s node005' 'T 0 4 g' 'U 0 6 g' \
	'pin R 4 x node[002-004,006-008,010-012]' 'Y 0 5 g' >"$tmp/seq"
# the tiers, with node001 holding 1 free GPU and node005 2:
# T: --gpus=4: only the 4-free tier: leaf01 (3 of them, first): node004
# U: --gpus=6: the same tier: node004 (4) + node007 (2)
# Y: --gpus=5 with node001 (1), node005 (2), node009 (4) free: tier 4 is
#    short, so node009 is the job's first, then node005, never node001
start_cluster "$tmp/fabric.json" 12
run_seq "$tmp/seq"

echo "# $matched placements matched, $mismatched differed"
[ "$compared" -eq 15 ] && ok "all 15 jobs compared" || bad "$compared of 15 jobs compared"
[ "$mismatched" -eq 0 ] || bad "$mismatched of $compared placements differ from Slurm's"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
