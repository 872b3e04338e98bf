/*
 * topology/topoplace for Slurm 22.05 (compatible mode).
 *
 * Node selection stays in select/cons_tres; this plugin only gives it a
 * better switch table: the fabric's groups (tp_stree_build) instead of a
 * hand-written topology.conf, and a node order that follows the fabric so
 * that a job's task ranks walk its groups in order.
 *
 * Notes:
 * - slurmctld calls topo_generate_node_ranking() before
 *   topo_build_config() on start-up and on every `scontrol reconfigure`,
 *   before the node hash is rebuilt: the files are (re)read in the former,
 *   and only node_record_table_ptr is walked there, never find_node_record().
 * - init() and every callback succeed whatever the input: Slurm makes a
 *   failing topology plugin fatal to slurmctld. Bad input is logged once per
 *   read and replaced by a flat table (one switch holding every node).
 * - LinkState= (topoplace.conf) is read with the other files, so at
 *   start-up and on every `scontrol reconfigure`, never in between (22.05
 *   has no hook during selection to re-read it from): a host whose every
 *   cable has health 0 there is left out of the switch table, and
 *   cons_tres' topology-aware selection never picks a node outside it.
 *   Degraded links (0 < health < 1) need native mode (24.11). A missing
 *   or bad file means healthy links (logged); a bad one never fails the
 *   read of the fabric.
 * - slurmd and the clients load this plugin too; only slurmctld builds
 *   anything.
 * - All state is behind one mutex; slurmctld calls the build callbacks
 *   with its configuration write lock held, and readers of
 *   switch_record_table hold at least its read lock.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "src/common/slurm_xlator.h"

#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "tp_placement.h"
#include "tp_plugin.h"
#include "switch_table.h"

#define TP_EXPORT __attribute__((visibility("default")))

TP_EXPORT extern const char plugin_name[];
TP_EXPORT extern const char plugin_type[];
TP_EXPORT extern const uint32_t plugin_version;
TP_EXPORT extern int init(void);
TP_EXPORT extern int fini(void);
TP_EXPORT extern int topo_build_config(void);
TP_EXPORT extern bool topo_generate_node_ranking(void);
TP_EXPORT extern int topo_get_node_addr(char *node_name, char **paddr,
					char **ppattern);

const char plugin_name[] = "topology topoplace plugin";
const char plugin_type[] = "topology/topoplace";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_pconf_t pconf;
static tp_fabric_t *fabric;
static tp_stree_t tree;
static bool loaded;    /* files read at least once */
static bool have_tree; /* fabric loaded and tree built */
static bool mismatch_logged;
static bool table_ours; /* switch_record_table was built here */
static bool *cut_off;	/* per fabric host: every cable down in LinkState */

static void log_sink(tp_log_level_t level, const char *msg, void *arg)
{
	switch (level) {
	case TP_LOG_ERROR:
		error("%s: %s", plugin_type, msg);
		break;
	case TP_LOG_WARN:
	case TP_LOG_INFO:
		info("%s: %s", plugin_type, msg);
		break;
	default:
		debug("%s: %s", plugin_type, msg);
		break;
	}
}

static long usec_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000000L +
	       (t1.tv_nsec - t0->tv_nsec) / 1000;
}

static void drop_fabric(void)
{
	xfree(cut_off);
	tp_stree_free(&tree);
	tp_fabric_destroy(fabric);
	fabric = NULL;
	have_tree = false;
}

/* Hosts whose every cable has health 0 in LinkState (path), into
 * cut_off; logged with their names. */
static void read_link_state(const char *path)
{
	size_t nh = tp_fabric_nhosts(fabric), nl = tp_fabric_nlinks(fabric);
	size_t *cables = xcalloc(nh + 1, sizeof(size_t));
	size_t *dead = xcalloc(nh + 1, sizeof(size_t));
	size_t weak = 0, ncut = 0;
	char *why = NULL, *names = NULL;
	tp_state_t *st = NULL;
	tp_err_t err = tp_state_load_json_regular(fabric, path, &st, &why);

	if (err) {
		/* why names the file */
		if (err == TP_ERR_NOTFOUND)
			info("%s: LinkState %s: no such file: links healthy",
			     plugin_type, path);
		else
			error("%s: LinkState %s: links healthy", plugin_type,
			      why ? why : tp_strerror(err));
		goto out;
	}
	cut_off = xcalloc(nh + 1, sizeof(bool));
	for (size_t l = 0; l < nl; l++) {
		const tp_link_t *k = tp_fabric_link(fabric, (uint32_t)l);
		double h = tp_state_link_health(st, (uint32_t)l);
		weak += h < 1;
		for (int e = 0; e < 2; e++) {
			const tp_ca_t *ca;
			if (k->kind[e] != TP_NODE_CA)
				continue;
			ca = tp_fabric_ca(fabric, k->node[e]);
			if (ca->role != TP_CA_HOST)
				continue;
			cables[ca->host]++;
			dead[ca->host] += h <= 0;
		}
	}
	for (size_t h = 0; h < nh; h++)
		if (cables[h] && dead[h] == cables[h]) {
			cut_off[h] = true;
			xstrfmtcat(names, "%s%s", ncut++ ? "," : "",
				   tp_fabric_host(fabric, (uint32_t)h)->name);
		}
	info("%s: LinkState %s: %zu of %zu links degraded, %zu host(s) cut "
	     "off%s%s",
	     plugin_type, path, weak, nl, ncut, ncut ? ": " : "",
	     ncut ? names : "");
out:
	tp_state_destroy(st);
	tp_free(why);
	xfree(names);
	xfree(cables);
	xfree(dead);
}

/* Read topoplace.conf and the fabric it names; on any failure have_tree
 * stays false and the reason is logged here, once. */
static void load_files(void)
{
	char *path = get_extra_conf_path("topoplace.conf");
	char *why = NULL;
	tp_err_t err;

	drop_fabric();
	tp_pconf_free(&pconf);
	tp_pconf_defaults(&pconf);
	loaded = true;
	mismatch_logged = false;

	err = tp_pconf_load_fabric(path, TP_SWITCH_TABLE_MAX, &pconf, &fabric,
				   &tree, &why);
	if (err == TP_ERR_NOTFOUND)
		info("%s: %s: flat topology", plugin_type, why);
	else if (err)
		error("%s: %s: flat topology", plugin_type,
		      why ? why : tp_strerror(err));
	if (err)
		goto out;
	have_tree = true;
	info("%s: fabric %s: %zu hosts, %zu switch%s, %d level%s above the "
	     "leaves%s",
	     plugin_type, pconf.fabric_file, tree.norder, tree.nsw,
	     tree.nsw == 1 ? "" : "es", tree.levels,
	     tree.levels == 1 ? "" : "s",
	     tree.nvlink ? ", NVLink domains as leaves" : "");
	if (pconf.link_state) {
		char *ls = tp_pconf_path(path, pconf.link_state);
		if (ls)
			read_link_state(ls);
		tp_free(ls);
	}
out:
	tp_free(why);
	xfree(path);
}

#define MISMATCH_FALLBACK "flat topology"

/* Every node of slurm.conf in the tree and every host of the tree in
 * slurm.conf (tp_stree_match); the strays are named once per read. */
static bool nodes_match(void)
{
	node_record_t *node_ptr;
	const char **names;
	char *why = NULL;
	size_t n = 0;
	bool ok;

	if (!have_tree)
		return false;
	names = xcalloc(node_record_count + 1, sizeof(char *));
	for (int i = 0; (node_ptr = next_node(&i)); i++)
		names[n++] = node_ptr->name;
	ok = tp_stree_match(&tree, fabric, names, n, &why);
	if (!ok && !mismatch_logged)
		error("%s: fabric does not match slurm.conf: %s: %s",
		      plugin_type, why ? why : "out of memory",
		      MISMATCH_FALLBACK);
	mismatch_logged |= !ok;
	tp_free(why);
	xfree(names);
	return ok;
}

static void free_switch_table(void)
{
	if (!table_ours || !switch_record_table)
		return;
	tp_switch_table_free(switch_record_table, switch_record_cnt);
	switch_record_table = NULL;
	switch_record_cnt = 0;
	switch_levels = 0;
	table_ours = false;
}

static void build_flat(void)
{
	switch_record_table = tp_switch_table_flat(0);
	switch_record_cnt = 1;
	switch_levels = 0;
	table_ours = true;
}

static void build_from_tree(void)
{
	/* cut off hosts are in no switch */
	int *node_of =
	    tp_switch_table_nodes(fabric, &tree, tree.nhosts, cut_off, NULL);

	if (tp_switch_table_build(&tree, node_of, -1, false, plugin_type))
		table_ours = true;
	else
		build_flat();
	xfree(node_of);
}

extern int init(void)
{
	tp_log_set(log_sink, NULL);
	verbose("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	slurm_mutex_lock(&state_lock);
	if (running_in_slurmctld())
		free_switch_table();
	drop_fabric();
	tp_pconf_free(&pconf);
	loaded = false;
	slurm_mutex_unlock(&state_lock);
	tp_log_set(NULL, NULL);
	return SLURM_SUCCESS;
}

extern bool topo_generate_node_ranking(void)
{
	struct timespec t0;
	node_record_t *node_ptr;
	bool ranked = false;

	if (!running_in_slurmctld())
		return false;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	slurm_mutex_lock(&state_lock);
	load_files();
	if (have_tree && pconf.rank_nodes && nodes_match()) {
		for (int i = 0; (node_ptr = next_node(&i)); i++) {
			uint32_t h =
			    tp_fabric_host_find(fabric, node_ptr->name);
			node_ptr->node_rank = tree.rank[h];
		}
		ranked = true;
	}
	slurm_mutex_unlock(&state_lock);
	debug("%s: %s: %s in %ld usec", plugin_type, __func__,
	      ranked ? "nodes in fabric order" : "no ranking", usec_since(&t0));
	return ranked;
}

extern int topo_build_config(void)
{
	struct timespec t0;
	bool from_tree;

	if (!running_in_slurmctld() || !node_record_count)
		return SLURM_SUCCESS;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	slurm_mutex_lock(&state_lock);
	if (!loaded)
		load_files();
	free_switch_table();
	/* another plugin's table is not ours to free; it is gone with it */
	switch_record_table = NULL;
	switch_record_cnt = 0;
	from_tree = nodes_match();
	if (from_tree)
		build_from_tree();
	else
		build_flat();
	slurm_mutex_unlock(&state_lock);
	debug("%s: %s: %d switches (%s) in %ld usec", plugin_type, __func__,
	      switch_record_cnt, from_tree ? "fabric" : "flat",
	      usec_since(&t0));
	return SLURM_SUCCESS;
}

/* Address "s0.s4.s8.node1" with pattern "switch.switch.switch.node", as
 * topology/tree prints it. */
extern int topo_get_node_addr(char *node_name, char **paddr, char **ppattern)
{
	node_record_t *node_ptr;
	int max_level = 0;

	if (!switch_record_cnt || !switch_record_table) {
		*paddr = xstrdup(node_name);
		*ppattern = xstrdup("node");
		return SLURM_SUCCESS;
	}
	if (!(node_ptr = find_node_record(node_name)))
		return SLURM_ERROR;
	for (int i = 0; i < switch_record_cnt; i++)
		if (switch_record_table[i].level > max_level)
			max_level = switch_record_table[i].level;
	*paddr = xstrdup("");
	*ppattern = xstrdup("");
	for (int lv = max_level; lv >= 0; lv--) {
		hostlist_t hl = NULL;
		for (int i = 0; i < switch_record_cnt; i++) {
			if (switch_record_table[i].level != lv ||
			    !bit_test(switch_record_table[i].node_bitmap,
				      node_ptr->index))
				continue;
			if (!hl)
				hl = hostlist_create(
				    switch_record_table[i].name);
			else
				hostlist_push_host(hl,
						   switch_record_table[i].name);
		}
		if (hl) {
			char *buf = hostlist_ranged_string_xmalloc(hl);
			xstrcat(*paddr, buf);
			xfree(buf);
			hostlist_destroy(hl);
		}
		xstrcat(*paddr, ".");
		xstrcat(*ppattern, "switch.");
	}
	xstrcat(*paddr, node_name);
	xstrcat(*ppattern, "node");
	return SLURM_SUCCESS;
}
