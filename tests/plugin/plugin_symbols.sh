#!/bin/sh
# The built Slurm plugins export exactly the symbols Slurm's loader looks
# up (version script + -fvisibility=hidden): nothing of the core or cJSON
# leaks into slurmctld's symbol space. Skips (77) when the plugins are not
# built (configure found no Slurm source tree).
dir=${TP_PLUGIN_DIR:-plugin/.libs}
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm not found"; exit 77; }
[ -f "$dir/topology_topoplace.so" ] || { echo "SKIP: $dir/topology_topoplace.so not built"; exit 77; }
fail=0
check() {
	so=$dir/$1
	shift
	want=$(printf '%s\n' "$@" | sort)
	got=$(nm -D --defined-only "$so" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort)
	if [ "$got" = "$want" ]; then
		echo "ok - $so exports only: $(echo $got)"
	else
		echo "FAIL - $so exports:"; echo "$got" | sed 's/^/    /'
		echo "  wanted:"; echo "$want" | sed 's/^/    /'
		fail=1
	fi
	# Slurm symbols stay undefined (resolved from slurmctld at dlopen) and
	# no libslurm is linked in
	if ldd "$so" 2>/dev/null | grep -q 'libslurm'; then
		echo "FAIL - $so links libslurm"; fail=1
	fi
}
check topology_topoplace.so plugin_name plugin_type plugin_version init fini \
	topo_build_config topo_generate_node_ranking topo_get_node_addr
check job_submit_topoplace.so plugin_name plugin_type plugin_version init fini \
	job_submit job_modify
if [ -f "$dir/spank_topoplace.so" ]; then
	check spank_topoplace.so plugin_name plugin_type plugin_version \
		spank_plugin_version slurm_spank_init slurm_spank_init_post_opt \
		slurm_spank_task_init slurm_spank_exit slurm_spank_job_epilog
fi
exit $fail
