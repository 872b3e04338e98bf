#!/bin/sh
# The built Slurm plugins export exactly the symbols Slurm's loader looks
# up (version script + -fvisibility=hidden): nothing of the core or cJSON
# leaks into slurmctld's symbol space. Both generations: 22.05's
# topology, job_submit and SPANK plugins in TP_PLUGIN_DIR, 24.11's native
# topology plugin and SPANK plugin in TP_PLUGIN24_DIR. TP_PLUGINS_BUILT
# (set by make check from configure) names the groups configure builds,
# among "slurm spank slurm24"; a plugin of a group it names that is
# missing is a failure. Run by hand without it, the groups whose plugins
# are here are checked. Skips (77) when configure builds none (no Slurm
# source tree, no <slurm/spank.h>, no Slurm 24.11 build).
dir=${TP_PLUGIN_DIR:-plugin/.libs}
dir24=${TP_PLUGIN24_DIR:-$(dirname "$dir")/slurm24/.libs}
if [ -z "${TP_PLUGINS_BUILT+set}" ]; then
	TP_PLUGINS_BUILT=
	[ ! -f "$dir/topology_topoplace.so" ] || TP_PLUGINS_BUILT="$TP_PLUGINS_BUILT slurm"
	[ ! -f "$dir/spank_topoplace.so" ] || TP_PLUGINS_BUILT="$TP_PLUGINS_BUILT spank"
	[ ! -f "$dir24/topology_topoplace.so" ] || TP_PLUGINS_BUILT="$TP_PLUGINS_BUILT slurm24"
fi
[ -n "$(echo $TP_PLUGINS_BUILT)" ] || { echo "SKIP: no Slurm plugin configured"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm not found"; exit 77; }
fail=0
built() { case " $TP_PLUGINS_BUILT " in *" $1 "*) return 0 ;; esac; return 1; }
# check SO SYMBOL...: SO exports exactly the SYMBOLs
check() {
	so=$1
	shift
	if [ ! -f "$so" ]; then
		echo "FAIL - $so not built (configure builds it)"
		fail=1
		return
	fi
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
	no_readers "$so"
	# a module may leave Slurm's symbols undefined, never ours: one left
	# so (a reader not linked in) would fail only at dlopen
	undef=$(nm -D --undefined-only "$so" | awk '$2 ~ /^tp_/ {print $2}' | tr '\n' ' ')
	if [ -n "$undef" ]; then
		echo "FAIL - $so leaves undefined: $undef"; fail=1
	fi
}
# no_readers SO: SO needs none of the optional readers' libraries (hwloc,
# libibnetdisc and what it brings): slurmctld, slurmstepd, srun and a
# PyTorch process load it on nodes that may lack them, and nothing in it
# reads hwloc XML or discovers a fabric live
no_readers() {
	needed=$(readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
	bad_libs=$(echo "$needed" | grep -E '^lib(hwloc|ibnetdisc|ibmad|ibumad|udev)\.' | tr '\n' ' ')
	if [ -z "$needed" ]; then
		echo "FAIL - $1: readelf lists no NEEDED libraries"; fail=1
	elif [ -n "$bad_libs" ]; then
		echo "FAIL - $1 needs $bad_libs(the optional readers' libraries)"; fail=1
	else
		echo "ok - $1 needs none of hwloc, libibnetdisc, libibmad, libibumad, libudev"
	fi
}
# the SPANK stack's symbols, the same for both generations
spank_syms="plugin_name plugin_type plugin_version spank_plugin_version slurm_spank_init
	slurm_spank_init_post_opt slurm_spank_task_init slurm_spank_exit slurm_spank_job_epilog"
if built slurm; then
	check "$dir/topology_topoplace.so" plugin_name plugin_type plugin_version init fini \
		topo_build_config topo_generate_node_ranking topo_get_node_addr
	check "$dir/job_submit_topoplace.so" plugin_name plugin_type plugin_version init fini \
		job_submit job_modify
else
	echo "# 22.05 topology and job_submit plugins not configured: not checked"
fi
if built spank; then
	# shellcheck disable=SC2086 # one symbol a word
	check "$dir/spank_topoplace.so" $spank_syms
else
	echo "# 22.05 SPANK plugin not configured: not checked"
fi
if built slurm24; then
	# src/interfaces/topology.c's syms[] (24.11) and plugin_id
	check "$dir24/topology_topoplace.so" plugin_name plugin_type plugin_id plugin_version \
		init fini topology_p_build_config topology_p_eval_nodes topology_p_whole_topo \
		topology_p_get_bitmap topology_p_generate_node_ranking topology_p_get_node_addr \
		topology_p_split_hostlist topology_p_topology_free topology_p_get \
		topology_p_topology_pack topology_p_topology_print topology_p_topology_unpack \
		topology_p_get_fragmentation
	# shellcheck disable=SC2086 # one symbol a word
	check "$dir24/spank_topoplace.so" $spank_syms
else
	echo "# 24.11 plugins not configured: not checked"
fi
exit $fail
