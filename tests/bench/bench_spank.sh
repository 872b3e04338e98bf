#!/bin/sh
# What spank_topoplace adds to step launch, in the mini-cluster
# (contrib/slurm-cluster.sh, 8 nodes, topology/topoplace, the plugin in
# plugstack.conf): the same `srun -N 8 true`, RUNS times with
# --topoplace=off and RUNS times with auto, alternating, in one cluster.
# Prints the means, their difference (goal: < 50 ms) and one JSON line;
# plus the plugin's own time per node from a verbose step.
#   TP_BENCH_RUNS (10), TP_SPANK_NET (10.202.0), TP_SPANK_PORT (7017)
# Exit 77 when root, Slurm or the plugins are missing; 0 otherwise (the
# figure is reported, not judged: this box is shared and small).
. "$(dirname "$0")/../integration/lib.sh"

need_slurm 22
need_plugins spank_topoplace topology_topoplace
NET=${TP_SPANK_NET:-10.202.0}
PORT=${TP_SPANK_PORT:-7017}
RUNS=${TP_BENCH_RUNS:-10}
dir=$tmp/cluster

trap 'stop_cluster; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

cat >"$tmp/plugstack.conf" <<EOF
optional $(cd "$PLUGIN_DIR" && pwd)/spank_topoplace.so fabric=@DIR@/fabric.json basedir=@DIR@/tprun/%h
EOF
echo "FabricFile=@DIR@/fabric.json" >"$tmp/topoplace.conf"
echo "PlugStackConfig=$dir/plugstack.conf" >"$tmp/extra.conf"
if ! timeout 90 "$CLUSTER" start --topology topoplace --plugin-dir "$PLUGIN_DIR" \
	--nodes 8 --gpus-per-node 4 --dir "$dir" --timeout 40 --net "$NET" --port "$PORT" \
	--extra-file "$tmp/topoplace.conf" --extra-file "$tmp/plugstack.conf" \
	--slurm-conf-extra "$tmp/extra.conf" >"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	echo "bench_spank: cluster start failed" >&2
	exit 1
fi
export SLURM_CONF=$dir/slurm.conf
mkdir -p "$dir/tprun"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
step() { # MODE: one srun -N 8 true, its wall time in ms on stdout
	s=$(now_ms)
	timeout 60 srun -N 8 --topoplace="$1" true >/dev/null 2>&1 || echo "# srun ($1) failed" >&2
	echo $(($(now_ms) - s))
}

step auto >/dev/null # warm-up: page cache, munge, first job state
step off >/dev/null
offs= autos=
i=0
while [ $i -lt "$RUNS" ]; do
	# alternate the order so drift hits both alike
	if [ $((i % 2)) -eq 0 ]; then
		offs="$offs $(step off)"
		autos="$autos $(step auto)"
	else
		autos="$autos $(step auto)"
		offs="$offs $(step off)"
	fi
	i=$((i + 1))
done
# the plugin's own time (fabric load, plan, file, environment) per node
self=$(timeout 60 srun -N 8 --topoplace=verbose true 2>&1 |
	sed -n 's/^topoplace: .*(\([0-9]*\) ms)$/\1/p' | sort -n | tr '\n' ' ')

stats() { # mean and median
	echo "$*" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{ n++; s += $1; v[n] = $1 }
	END { printf "%.1f %.1f", s / n, (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'
}
set -- $(stats $offs)
off_mean=$1 off_med=$2
set -- $(stats $autos)
auto_mean=$1 auto_med=$2
diff=$(awk -v a="$auto_mean" -v o="$off_mean" 'BEGIN { printf "%.1f", a - o }')
dmed=$(awk -v a="$auto_med" -v o="$off_med" 'BEGIN { printf "%.1f", a - o }')
echo "srun -N 8 true, $RUNS runs each (ms):"
echo "  --topoplace=off :$offs  mean $off_mean  median $off_med"
echo "  --topoplace=auto:$autos  mean $auto_mean  median $auto_med"
echo "  plugin's own time per node (verbose step, ms): $self"
goal=met
awk -v d="$diff" 'BEGIN { exit !(d < 50) }' || goal="NOT met"
echo "spank overhead: $diff ms mean ($dmed ms median) per 8-node step; goal < 50 ms: $goal"
echo "{\"bench\":\"spank_step_launch\",\"nodes\":8,\"runs\":$RUNS,\"off_mean_ms\":$off_mean,\"auto_mean_ms\":$auto_mean,\"off_median_ms\":$off_med,\"auto_median_ms\":$auto_med,\"overhead_mean_ms\":$diff,\"overhead_median_ms\":$dmed,\"plugin_self_ms\":[$(echo $self | tr ' ' ',')]}"
