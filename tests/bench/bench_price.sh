#!/bin/sh
# What Slurm's own node selection costs all-reduce on an oversubscribed
# fabric, read from its accounting (topoplace trace --price), with
# topoplace's pick from the same free hosts beside each.
#
# A real Slurm 22.05 mini-cluster with slurmdbd (contrib/slurm-cluster.sh
# --slurmdbd; --topology none: no topology plugin, Slurm's selection as a
# cluster without topology.conf runs it; tree: topology/tree with the
# topology.conf `topoplace fabric topology-conf` writes) on a fabric of LEAVES leaves x 2 hosts, each host
# 4 GPUs and 4 NICs, one up-link a leaf (8:1), host names interleaved
# over the leaves (node001 on leaf01, node002 on leaf02, ...), as racks
# are often cabled. JOBS jobs of 2 nodes x 4 GPUs (and a 1-node job every
# third), each sleeping 1-3 s, in waves of up to LEAVES jobs, so jobs
# start while others run. Then sacct's record of them goes through
# `topoplace trace --price` on that fabric: per job the all-reduce (1 GiB,
# faster of ring and hierarchical) on Slurm's hosts against the ideal, and
# topoplace's pick from the hosts free at that job's start (and
# slurm-tree's: what a topology.conf would have done). Prints the
# figures and one JSON line ({"format":"topoplace-price-bench/1","jobs",
# "topology","priced","slurm_slowdown_mean","slurm_slowdown_se","topoplace_slowdown_mean",
# "ratio_mean","ratio_se","tree_ratio_mean","tree_ratio_se"}, also to
# --json FILE).
#
#   bench_price.sh [--topology none|tree (none)] [--jobs N (24)]
#                  [--leaves L (4)] [--json FILE]
#
# Root and the Slurm packages with slurmdbd (contrib/install-slurm.sh);
# exit 77 without. Runs on TP_PRICE_NET / TP_PRICE_PORT (10.221.0 / 6979).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${TP_SRCDIR:-$(cd "$here/../.." && pwd)}
build=${TP_BUILDDIR:-$top/build}
TOPOPLACE=${TOPOPLACE:-$build/cli/topoplace}
CLUSTER=$top/contrib/slurm-cluster.sh
jobs=24 leaves=4 json="" topo=none
while [ $# -gt 0 ]; do
	case $1 in
	--jobs) jobs=$2; shift 2 ;;
	--leaves) leaves=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	--topology) topo=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench_price: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $topo in none | tree) ;; *) echo "bench_price: --topology none or tree" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "bench_price: needs root; skipped"; exit 77; }
for b in slurmctld slurmd slurmdbd mariadbd sbatch sacct jq; do
	command -v $b >/dev/null 2>&1 || { echo "bench_price: $b missing; skipped"; exit 77; }
done
[ -x "$TOPOPLACE" ] || { echo "bench_price: $TOPOPLACE not built" >&2; exit 1; }
NET=${TP_PRICE_NET:-10.221.0} PORT=${TP_PRICE_PORT:-6979}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-price.XXXXXX")
dir=$tmp/cluster
cleanup() {
	[ ! -f "$dir/pids" ] || "$CLUSTER" stop --dir "$dir" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
nodes=$((2 * leaves))
"$TOPOPLACE" fabric generate fat-tree --leaves "$leaves" --hosts-per-leaf 2 --gpus-per-host 4 \
	--nics-per-host 4 --spines 1 --uplinks 1 --interleave --prefix node -o "$tmp/fabric.json" >/dev/null ||
	{ echo "bench_price: fabric generate failed" >&2; exit 1; }
t0=$(date +%s)
if ! timeout 120 "$CLUSTER" start --slurmdbd --nodes "$nodes" --gpus-per-node 4 --dir "$dir" \
	--topology "$topo" --fabric "$tmp/fabric.json" --net "$NET" --port "$PORT" --timeout 60 >"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out" >&2
	exit 1
fi
export SLURM_CONF=$dir/slurm.conf
i=0
while [ $i -lt "$jobs" ]; do
	n=2
	[ $((i % 3)) -eq 2 ] && n=1
	s=$((1 + i % 3))
	timeout 20 sbatch --parsable -o /dev/null -N $n --gpus-per-node=4 --wrap "sleep $s" >>"$tmp/ids" ||
		{ echo "bench_price: sbatch failed" >&2; exit 1; }
	i=$((i + 1))
	# a wave of LEAVES jobs, then a pause shorter than the sleeps
	[ $((i % leaves)) -ne 0 ] || sleep 1
done
end=$(($(date +%s) + 180))
while [ "$(timeout 10 squeue -h | wc -l)" -gt 0 ]; do
	[ "$(date +%s)" -lt "$end" ] || { echo "bench_price: jobs still queued after 180 s" >&2; exit 1; }
	sleep 1
done
sacct_all() {
	timeout 20 sacct -a -X -P -S now-1hour -E now+1hour \
		--format=JobID,Submit,Start,End,NNodes,NodeList,AllocTRES,State >"$tmp/sacct.txt" 2>/dev/null &&
		[ "$(grep -c '|COMPLETED$' "$tmp/sacct.txt")" -ge "$jobs" ]
}
k=0
until sacct_all; do
	k=$((k + 1))
	[ $k -lt 60 ] || { echo "bench_price: sacct has not every job" >&2; exit 1; }
	sleep 0.5
done
"$TOPOPLACE" trace "$tmp/sacct.txt" --price --fabric "$tmp/fabric.json" >"$tmp/price.txt" &&
	"$TOPOPLACE" trace "$tmp/sacct.txt" --price --fabric "$tmp/fabric.json" --json >"$tmp/price.json" &&
	"$TOPOPLACE" trace "$tmp/sacct.txt" --price --fabric "$tmp/fabric.json" --json \
		--policy slurm-tree >"$tmp/tree.json" ||
	{ echo "bench_price: topoplace trace --price failed" >&2; exit 1; }
cat "$tmp/price.txt"
line=$(jq -c --argjson jobs "$jobs" --arg topo "$topo" --slurpfile tree "$tmp/tree.json" \
	'{format: "topoplace-price-bench/1", jobs: $jobs,
	topology: $topo, priced,
	slurm_slowdown_mean: .slowdown_mean, slurm_slowdown_se: .slowdown_se,
	topoplace_slowdown_mean: .pick.slowdown_mean,
	ratio_mean: .pick.ratio_mean, ratio_se: .pick.ratio_se,
	tree_ratio_mean: $tree[0].pick.ratio_mean, tree_ratio_se: $tree[0].pick.ratio_se}' "$tmp/price.json")
echo "# Slurm 22.05, topology $topo: $jobs jobs on $nodes nodes ($leaves leaves, 8:1 up-links) in $(($(date +%s) - t0)) s"
echo "$line"
[ -z "$json" ] || echo "$line" >"$json"
