/*
 * topoplace24_switch.c - topology/tree's switch table, built from the
 * fabric's switch tree (tp_stree) or flat, under topology/tree's names so
 * that Slurm's eval_nodes_tree runs on it unchanged. Called by the
 * adapter with state_lock held and the writer idle.
 */
#include "topoplace24_int.h"

/* topology/tree's table, under its names: eval_nodes_tree reads these.
 * Hidden by the version script, so they never meet another plugin's. */
switch_record_t *switch_record_table = NULL;
int switch_record_cnt = 0;
int switch_levels = 0;

void free_switch_table(void)
{
	if (!switch_record_table)
		return;
	for (int i = 0; i < switch_record_cnt; i++) {
		switch_record_t *s = &switch_record_table[i];
		xfree(s->name);
		xfree(s->nodes);
		xfree(s->switches);
		xfree(s->switches_dist);
		xfree(s->switch_desc_index);
		xfree(s->switch_index);
		FREE_NULL_BITMAP(s->node_bitmap);
	}
	xfree(switch_record_table);
	switch_record_cnt = 0;
	switch_levels = 0;
}

void build_flat(void)
{
	switch_record_t *s;

	switch_record_table = xcalloc(1, sizeof(switch_record_t));
	switch_record_cnt = 1;
	switch_levels = 0;
	s = &switch_record_table[0];
	s->name = xstrdup("topoplace-flat");
	s->level = 0;
	s->link_speed = 1;
	s->parent = SWITCH_NO_PARENT;
	s->node_bitmap = bit_alloc(node_record_count);
	for (int i = 0; i < node_record_count; i++)
		if (node_record_table_ptr[i])
			bit_set(s->node_bitmap, i);
	s->nodes = bitmap2node_name(s->node_bitmap);
	s->switches_dist = xcalloc(1, sizeof(uint32_t));
	s->switch_desc_index = xcalloc(1, sizeof(uint16_t));
}

/* Descendants of switch i appended to s->switch_desc_index. */
static void add_desc(switch_record_t *s, uint32_t i)
{
	for (size_t k = 0; k < tree.sw[i].nchildren; k++) {
		uint32_t c = tree.sw[i].children[k];
		s->switch_desc_index[s->num_desc_switches++] = (uint16_t)c;
		add_desc(s, c);
	}
}

/* topology/tree's table from the fabric's tree (node indices final),
 * and the engine's working set: host_of[], node_of[], the free state
 * (hosts without a node down for good) and the scratch arrays. */
void build_from_tree(void)
{
	int n = (int)tree.nsw;
	size_t nh = tp_fabric_nhosts(fabric);
	node_record_t *node_ptr;

	selection_free();
	node_of = xcalloc(nh + 1, sizeof(int));
	for (size_t h = 0; h < nh; h++)
		node_of[h] = -1;
	host_of = xcalloc(node_record_count + 1, sizeof(uint32_t));
	host_of_cnt = node_record_count;
	for (int i = 0; i < node_record_count; i++)
		host_of[i] = TP_ID_NONE;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		uint32_t h = tp_fabric_host_find(fabric, node_ptr->name);
		if (h != TP_ID_NONE && h < tree.nhosts) {
			node_of[h] = node_ptr->index;
			host_of[node_ptr->index] = h;
		}
	}

	switch_record_table = xcalloc(n, sizeof(switch_record_t));
	switch_record_cnt = n;
	switch_levels = tree.levels;
	for (int i = 0; i < n; i++) {
		switch_record_t *s = &switch_record_table[i];
		const tp_stree_sw_t *t = &tree.sw[i];

		s->name = xstrdup(t->name);
		s->level = t->level;
		s->link_speed = t->link_speed;
		s->parent = t->parent == (uint32_t)i ? SWITCH_NO_PARENT
						     : (uint16_t)t->parent;
		s->node_bitmap = bit_alloc(node_record_count);
		s->num_switches = (uint16_t)t->nchildren;
		s->switch_index = xcalloc(t->nchildren + 1, sizeof(uint16_t));
		for (size_t k = 0; k < t->nchildren; k++) {
			s->switch_index[k] = (uint16_t)t->children[k];
			xstrfmtcat(s->switches, "%s%s", k ? "," : "",
				   tree.sw[t->children[k]].name);
		}
		s->switch_desc_index = xcalloc(n, sizeof(uint16_t));
		add_desc(s, (uint32_t)i);
		s->switches_dist = xcalloc(n, sizeof(uint32_t));
		for (int j = 0; j < n; j++) {
			uint32_t d =
			    tp_stree_dist(&tree, (uint32_t)i, (uint32_t)j);
			s->switches_dist[j] = d == UINT32_MAX ? INFINITE : d;
		}
	}
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < tree.sw[i].nhosts; k++) {
			int inx = node_of[tree.sw[i].hosts[k]];
			uint32_t p = (uint32_t)i;
			if (inx < 0)
				continue;
			for (;;) {
				bit_set(switch_record_table[p].node_bitmap,
					inx);
				if (tree.sw[p].parent == p)
					break;
				p = tree.sw[p].parent;
			}
		}
	/* as topology/tree: Nodes= on the leaves, Switches= above */
	for (int i = 0; i < n; i++) {
		switch_record_t *s = &switch_record_table[i];
		if (s->level == 0)
			s->nodes = bitmap2node_name(s->node_bitmap);
		debug("%s: switch %s level %d parent %s nodes %s switches %s",
		      plugin_type, s->name, s->level,
		      s->parent == SWITCH_NO_PARENT
			  ? "-"
			  : switch_record_table[s->parent].name,
		      s->nodes ? s->nodes : "-",
		      s->switches ? s->switches : "-");
	}

	busy_hosts = xcalloc(nh + 1, sizeof(uint32_t));
	busy_gpus = xcalloc(nh + 1, sizeof(int));
	picks_buf = xcalloc(nh + 1, sizeof(pick_t));
	avail_cpus_buf = xcalloc(node_record_count + 1, sizeof(uint16_t));
	avail_cpus_cnt = node_record_count;
	/* NULL sends every job to eval_nodes_tree ("out of memory") */
	if ((sel_state = tp_state_create(fabric)))
		for (size_t h = 0; h < nh; h++)
			if (node_of[h] < 0)
				tp_state_set_host_up(sel_state, (uint32_t)h,
						     false);
}
