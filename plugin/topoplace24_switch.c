/*
 * topoplace24_switch.c - topology/tree's switch table, built from the
 * fabric's switch tree (tp_stree) or flat, under topology/tree's names so
 * that Slurm's eval_nodes_tree runs on it unchanged. Called by the
 * adapter with state_lock held and the writer idle.
 */
#include "topoplace24_int.h"

#include "switch_table.h"

/* topology/tree's table, under its names: eval_nodes_tree reads these.
 * Hidden by the version script, so they never meet another plugin's. */
switch_record_t *switch_record_table = NULL;
int switch_record_cnt = 0;
int switch_levels = 0;

void free_switch_table(void)
{
	if (!switch_record_table)
		return;
	tp_switch_table_free(switch_record_table, switch_record_cnt);
	switch_record_table = NULL;
	switch_record_cnt = 0;
	switch_levels = 0;
}

void build_flat(void)
{
	switch_record_table = tp_switch_table_flat(SWITCH_NO_PARENT);
	switch_record_cnt = 1;
	switch_levels = 0;
}

/* topology/tree's table from the fabric's tree (node indices final),
 * and the engine's working set: host_of[], node_of[], the free state
 * (hosts without a node down for good) and the scratch arrays. false,
 * with the flat table and no working set, when the table could not be
 * built (out of memory): the engine must be off then, or whole_topo
 * would grow every mask to the flat switch, i.e. the whole cluster. */
bool build_from_tree(void)
{
	size_t nh = tp_fabric_nhosts(fabric);

	selection_free();
	host_of = xcalloc(node_record_count + 1, sizeof(uint32_t));
	host_of_cnt = node_record_count;
	slurm_gpus = xcalloc(node_record_count + 1, sizeof(int));
	for (int i = 0; i <= node_record_count; i++)
		slurm_gpus[i] = -1;
	node_of = tp_switch_table_nodes(fabric, &tree, nh, NULL, host_of);
	if (!tp_switch_table_build(&tree, node_of, SWITCH_NO_PARENT, true,
				   plugin_type)) {
		selection_free();
		build_flat();
		return false;
	}

	busy_hosts = xcalloc(nh + 1, sizeof(uint32_t));
	busy_gpus = xcalloc(nh + 1, sizeof(int));
	picks_buf = xcalloc(nh + 1, sizeof(pick_t));
	avail_cpus_buf = xcalloc(node_record_count + 1, sizeof(uint16_t));
	avail_cpus_cnt = node_record_count;
	sel_ws = tp_place_ws_create(); /* NULL: the engine makes its own */
	/* NULL sends every job to eval_nodes_tree ("out of memory") */
	for (size_t h = 0; h < nh; h++)
		if (node_of[h] >= 0 && !tp_fabric_host(fabric, h)->ngpus)
			gpuless_hosts++;
	if (gpuless_hosts)
		info("%s: %zu of the fabric's %zu hosts have no GPUs in it: a "
		     "job asking no GPUs that Slurm offers one of them goes "
		     "to topology/tree's selection",
		     plugin_type, gpuless_hosts, nh);
	if ((sel_state = tp_state_create(fabric))) {
		/* weak hosts ranked as the cost context prices them */
		tp_state_set_nics_by_rate(sel_state, pconf.nics_by_rate);
		for (size_t h = 0; h < nh; h++)
			if (node_of[h] < 0)
				tp_state_set_host_up(sel_state, (uint32_t)h,
						     false);
	}
	return true;
}
