/*
 * switch_table.h - Slurm's switch_record_table from the fabric's switch
 * tree rows (tp_stree_table): the one copy both topology plugins compile
 * against their own Slurm's headers (22.05: topology_topoplace.c, 24.11:
 * topoplace24_switch.c). Include after Slurm's headers.
 */
#ifndef TP_SWITCH_TABLE_H
#define TP_SWITCH_TABLE_H

#include "tp_topology.h"

/* Fill tab[0 .. t->nsw - 1] (zeroed) from rows. A root's parent is
 * root_parent, or its own index when root_parent is -1 (22.05's rule).
 * Nodes= on every switch, or on leaves only (leaves_only, as 24.11's
 * topology/tree). */
static void tp_switch_table_fill(switch_record_t *tab, const tp_stree_t *st,
				 const tp_stree_row_t *rows, int root_parent,
				 bool leaves_only, const char *plugin)
{
	int n = (int)st->nsw;

	for (int i = 0; i < n; i++) {
		switch_record_t *s = &tab[i];
		const tp_stree_sw_t *t = &st->sw[i];
		const tp_stree_row_t *r = &rows[i];

		s->name = xstrdup(t->name);
		s->level = t->level;
		s->link_speed = t->link_speed;
		s->parent = t->parent == (uint32_t)i && root_parent >= 0
				? (uint16_t)root_parent
				: (uint16_t)t->parent;
		s->num_switches = (uint16_t)t->nchildren;
		s->switch_index = xcalloc(t->nchildren + 1, sizeof(uint16_t));
		for (size_t k = 0; k < t->nchildren; k++)
			s->switch_index[k] = (uint16_t)t->children[k];
		s->switches = r->switches ? xstrdup(r->switches) : NULL;
		s->switch_desc_index = xcalloc(n, sizeof(uint16_t));
		s->num_desc_switches = (uint16_t)r->ndesc;
		for (size_t k = 0; k < r->ndesc; k++)
			s->switch_desc_index[k] = (uint16_t)r->desc[k];
		s->switches_dist = xcalloc(n, sizeof(uint32_t));
		for (int j = 0; j < n; j++)
			s->switches_dist[j] =
			    r->dist[j] == UINT32_MAX ? INFINITE : r->dist[j];
		s->node_bitmap = bit_alloc(node_record_count);
		for (size_t k = 0; k < r->nnodes; k++)
			bit_set(s->node_bitmap, r->nodes[k]);
		if (!leaves_only || s->level == 0)
			s->nodes = bitmap2node_name(s->node_bitmap);
		debug("%s: switch %s level %d parent %s nodes %s switches %s",
		      plugin, s->name, s->level,
		      t->parent == (uint32_t)i && root_parent >= 0
			  ? "-"
			  : st->sw[t->parent].name,
		      s->nodes ? s->nodes : "-",
		      s->switches ? s->switches : "-");
	}
}

/* Fabric host -> node table index for the nodes of slurm.conf (indices
 * final): an array of nslots (>= st->nhosts) ints, -1 for a host that no
 * node names, lies outside the tree or has skip[h] set (skip may be NULL).
 * host_of_p (node_record_count slots, may be NULL) gets the reverse,
 * TP_ID_NONE for a node outside the tree. The caller frees with xfree(). */
static int *tp_switch_table_nodes(const tp_fabric_t *f, const tp_stree_t *st,
				  size_t nslots, const bool *skip,
				  uint32_t *host_of_p)
{
	int *node_idx = xcalloc(nslots + 1, sizeof(int));
	node_record_t *node_ptr;

	for (size_t h = 0; h < nslots; h++)
		node_idx[h] = -1;
	for (int i = 0; host_of_p && i < node_record_count; i++)
		host_of_p[i] = TP_ID_NONE;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		uint32_t h = tp_fabric_host_find(f, node_ptr->name);
		if (h == TP_ID_NONE || h >= st->nhosts || (skip && skip[h]))
			continue;
		node_idx[h] = node_ptr->index;
		if (host_of_p)
			host_of_p[node_ptr->index] = h;
	}
	return node_idx;
}

/* switch_record_table, switch_record_cnt and switch_levels from st and
 * node_idx (tp_switch_table_nodes); root_parent and leaves_only as for
 * tp_switch_table_fill(). False when out of memory: nothing is set. */
static bool tp_switch_table_build(const tp_stree_t *st, const int *node_idx,
				  int root_parent, bool leaves_only,
				  const char *plugin)
{
	tp_stree_row_t *rows = NULL;

	if (tp_stree_table(st, node_idx, &rows)) {
		error("%s: switch table: out of memory: flat topology", plugin);
		return false;
	}
	switch_record_table = xcalloc(st->nsw, sizeof(switch_record_t));
	switch_record_cnt = (int)st->nsw;
	switch_levels = st->levels;
	tp_switch_table_fill(switch_record_table, st, rows, root_parent,
			     leaves_only, plugin);
	tp_stree_table_free(rows, st->nsw);
	return true;
}

/* Free tab[0 .. cnt - 1] and tab itself, as tp_switch_table_fill() filled
 * them; the caller clears its own pointer (xfree here clears only tab). */
static void tp_switch_table_free(switch_record_t *tab, int cnt)
{
	for (int i = 0; i < cnt; i++) {
		switch_record_t *s = &tab[i];
		xfree(s->name);
		xfree(s->nodes);
		xfree(s->switches);
		xfree(s->switches_dist);
		xfree(s->switch_desc_index);
		xfree(s->switch_index);
		FREE_NULL_BITMAP(s->node_bitmap);
	}
	xfree(tab);
}

/* A one-switch table holding every node (no fabric tree to follow); the
 * switch's parent is parent (22.05: its own index 0, 24.11:
 * SWITCH_NO_PARENT). */
static switch_record_t *tp_switch_table_flat(uint16_t parent)
{
	switch_record_t *tab = xcalloc(1, sizeof(switch_record_t));
	switch_record_t *s = &tab[0];

	s->name = xstrdup("topoplace-flat");
	s->level = 0;
	s->link_speed = 1;
	s->parent = parent;
	s->node_bitmap = bit_alloc(node_record_count);
	for (int i = 0; i < node_record_count; i++)
		if (node_record_table_ptr[i])
			bit_set(s->node_bitmap, i);
	s->nodes = bitmap2node_name(s->node_bitmap);
	s->switches_dist = xcalloc(1, sizeof(uint32_t));
	s->switch_desc_index = xcalloc(1, sizeof(uint16_t));
	return tab;
}

#endif /* TP_SWITCH_TABLE_H */
