# shellcheck shell=bash
# Shared by the benchmarks that run one Slurm job in the mini-cluster on an emulated 2-leaf
# fabric with topology/topoplace and the SPANK plugin (bench_e2e.sh, bench_ddp.sh); sourced
# (bash). The caller sets me (its name for messages), srcdir, builddir, keep (1: leave the
# cluster up and the work directory) and rc (its exit status so far), and defines die().
prefix24=${SLURM24_PREFIX:-/opt/topoplace/slurm-24.11}
cluster=$srcdir/contrib/slurm-cluster.sh

# bench_slurm GEN: Slurm 24.11 (native mode; the default when built) or Debian's 22.05 ("" picks):
# sets gen, plugin_dir (absolute, checked to hold both plugins), slurm_opt, and PATH for 24.11.
bench_slurm() {
	gen=$1
	if [ -z "$gen" ]; then
		gen=22
		[ -f "$prefix24/topoplace-build.env" ] && [ -f "$builddir/plugin/slurm24/.libs/spank_topoplace.so" ] && gen=24
	fi
	case $gen in
	24)
		plugin_dir=$builddir/plugin/slurm24/.libs
		slurm_opt="--slurm-prefix $prefix24"
		PATH=$prefix24/bin:$prefix24/sbin:$PATH
		export PATH ;;
	22)
		plugin_dir=$builddir/plugin/.libs
		slurm_opt="" ;;
	*) die "--slurm: 24 or 22" ;;
	esac
	local p
	for p in topology_topoplace spank_topoplace; do
		[ -f "$plugin_dir/$p.so" ] || die "$plugin_dir/$p.so not built (configure --with-slurm24 / libslurm-dev)"
	done
	plugin_dir=$(cd "$plugin_dir" && pwd)
}

bench_cleanup() {
	if [ "$keep" = 0 ]; then
		[ ! -f "$dir/pids" ] || "$cluster" stop --dir "$dir" >/dev/null 2>&1
		[ "$rc" -eq 0 ] && rm -rf "$work"
	else
		echo "$me: cluster kept: $cluster stop --dir $dir"
	fi
	[ "$rc" -eq 0 ] || echo "$me: logs in $work"
}

# bench_cluster_start TAG ARGS...: a work directory (work, dir = the cluster, out = the job's
# shared output), the exit trap that stops the cluster, then `slurm-cluster.sh start
# --topology topoplace --emu-fabric --leaves 2 ARGS...` with both plugins from plugin_dir
# reading the emulation's fabric JSON. Exports SLURM_CONF; sets slurm_ver and t0.
bench_cluster_start() {
	work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	shift
	chmod 755 "$work"
	dir=$work/cluster
	out=$work/out
	mkdir -p "$out"
	trap bench_cleanup EXIT
	trap 'rc=130; exit 130' INT TERM
	echo "FabricFile=@DIR@/fabric.json" >"$work/topoplace.conf"
	echo "optional $plugin_dir/spank_topoplace.so fabric=@DIR@/fabric.json basedir=@DIR@/tprun/%h mode=auto" \
		>"$work/plugstack.conf"
	echo "PlugStackConfig=$dir/plugstack.conf" >"$work/extra.conf"
	t0=$(date +%s)
	echo "$me: $cluster start $slurm_opt --topology topoplace --emu-fabric --leaves 2 $*"
	# shellcheck disable=SC2086
	if ! timeout 120 "$cluster" start $slurm_opt --topology topoplace --plugin-dir "$plugin_dir" \
		--dir "$dir" --timeout 60 --emu-fabric --leaves 2 "$@" \
		--extra-file "$work/topoplace.conf" --extra-file "$work/plugstack.conf" \
		--slurm-conf-extra "$work/extra.conf" >"$work/start.out" 2>&1; then
		cat "$work/start.out"
		rc=1
		die "cluster start failed"
	fi
	sed 's/^/  /' "$work/start.out" | grep -v '^  export'
	export SLURM_CONF=$dir/slurm.conf
	mkdir -p "$dir/tprun"
	slurm_ver=$(slurmctld -V | awk '{print $2}')
}

# bench_job_wait JOB LIMIT: wait until JOB left the queue (scancel and fail LIMIT + 60 s on),
# show its output ($out/job.out), set state; rc=1 unless it COMPLETED.
bench_job_wait() {
	local end=$(($(date +%s) + $2 + 60))
	while [ -n "$(timeout 10 squeue -h -j "$1" -o %i 2>/dev/null)" ]; do
		[ "$(date +%s)" -lt "$end" ] || { timeout 10 scancel "$1"; rc=1; die "job $1 still running after $2 s"; }
		sleep 2
	done
	state=$(timeout 10 scontrol show job "$1" | tr ' ' '\n' | sed -n 's/^JobState=//p')
	sed 's/^/  | /' "$out/job.out"
	echo "$me: job $1 $state after $(($(date +%s) - t0)) s"
	[ "$state" = COMPLETED ] || rc=1
}
