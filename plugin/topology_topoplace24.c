/*
 * topology/topoplace for Slurm 24.11 (native mode).
 *
 * Since 24.05 node selection lives in the topology plugin: cons_tres
 * filters the nodes (free cores, memory, per-node GPUs) and calls
 * topology_p_eval_nodes(), which picks the job's nodes. Here the topoplace
 * policy picks them: the free state Slurm computed is mapped onto a
 * tp_state_t, tp_place_run() chooses the hosts, and the choice is
 * committed through Slurm's own helpers (eval_nodes_select_cores,
 * eval_nodes_cpus_to_use, gres_sched_*) exactly as eval_nodes_tree does
 * after its own choice, so cores and GPUs are accounted by Slurm.
 *
 * This file is the adapter (the plugin API, the files it reads); the
 * switch table, the selection, the link state and the decision journal
 * are topoplace24_{switch,select,links,journal}.c, sharing what
 * topoplace24_int.h declares. The Notes below hold for all of them.
 *
 * Notes:
 * - The switch table is built from the fabric (tp_stree_build, the same
 *   tree the 22.05 plugin hands to slurmctld) and has the layout of
 *   topology/tree's, under the same names: Slurm's eval_nodes_tree (linked
 *   from the 24.11 build tree) runs on it unchanged for what the engine
 *   does not take (--switches, required nodes, contiguous, GPUs per task
 *   or socket, --gpus not a multiple of -N, partitions not in
 *   Partitions=), when the engine fails for another reason than "does not
 *   fit now", when a node range's (-N2-4) largest count does not fit now
 *   (Slurm asks for the largest; fewer may do) and when a per-job GPU
 *   count lands on a node count outside -N's range.
 * - Selection=tree (topoplace.conf) sends every job to eval_nodes_tree on
 *   the same table, timed and logged like the engine's decisions, to
 *   compare decision times in one controller build.
 * - Whatever the input, slurmctld keeps running: a missing, corrupt or
 *   mismatched fabric is logged once per read and leaves a flat table (one
 *   switch) and Slurm's default selection (eval_nodes without a hook).
 * - Selection runs several times per job (submit, scheduling, backfill,
 *   retries in common_topo_choose_nodes): it changes nothing but what
 *   topo_eval says it may. It is also on slurmctld's critical path (the
 *   goal: at most twice eval_nodes_tree's time), so it only chooses and
 *   commits: the free state is one tp_state_t per fabric load, reset only
 *   when what Slurm offers per host changed, and a small memo gives the
 *   engine's earlier answer again while free state, links and request
 *   are the same (topoplace24_select.c); no file I/O. The engine is the
 * simulator's: tp_place_choose with the cost context prices candidate host sets
 * (at most PriceBudget predictions, 0 = structure alone) on sel_state's links,
 *   but the answer is not predicted again (the writer does that). The
 *   simulator's budget (96) put the mean decision at 4x eval_nodes_tree
 *   on the 8-node bench with a degraded up-link; the default (8) at 2x.
 *   Healthy, idle links are priced too: on a small 2:1 tree the
 *   structure alone picked other, slower hosts in 7% of the cases
 *   there (tests/bench/bench_place_budget).
 * - The links sel_state carries: LinkState's (a topoplace-state/1 file;
 *   only its links are used) plus the running jobs' traffic. The writer
 *   looks at the file every LINKS_LOOK_MS (250 ms; one stat:
 *   tp_filesig_update, inode, size, times), between records too, and
 *   parses it only when it changed; a bad file (or not a regular file:
 *   a FIFO would block the open), or a path the stat cannot look at
 *   (a directory on it not searchable, a link loop), is logged once and
 *   the last good links kept, a removed one means healthy links. Each
 *   decision confirmed against its running job carries the job's
 *   traffic to the writer, which keeps it per job
 *   (tp_traffic: tp_cost_link_load with CommShare as duty, the
 *   simulator's fair-share cap). Ends have no callback in 24.11: each
 *   confirmation (above) also looks up the jobs whose traffic is held
 *   and queues an end for those no longer running, in the same queue as
 *   the records, so an end never overtakes its job's record. The writer
 *   then builds the snapshot (file links + traffic) in ls_work and swaps
 *   it with ls_pub under ls_lock; a selection copies ls_pub into
 *   sel_state (O(links), under ls_lock) only when ls_gen moved: a file
 *   change reaches the selections within 250 ms plus its parse, a job
 *   start/end within about 2 s
 *   (an end is found by a confirmation, so the selection that finds it
 *   still prices with that job's traffic).
 *   build_config reads the file and publishes before the first selection.
 *   Jobs running before slurmctld started, or placed by Slurm's own
 *   selection, carry no traffic.
 * - A decision is recorded only once the job runs on exactly the chosen
 *   nodes. That needs the job lock, so it is checked at the start of a
 *   selection (at most once a second, or at once when half the pending
 *   slots are taken) and at build_config. Confirmed decisions
 *   go to a bounded queue; a writer thread prices them (cost model),
 *   formats them and appends each with one write(2) to
 *   StateSaveLocation/topoplace-decisions.jsonl (0640, SlurmUser's
 *   group; trimming and appending under an flock of the .lock file
 *   beside it, for controllers sharing the directory), trimming it to the last
 *   DECISIONS_KEEP (and dropping a line cut short) at its first write
 *   after a start and whenever it holds twice as many. The selection
 *   does not wake the writer (it looks every second, every 250 ms with
 *   a LinkState): a wake-up is a
 *   system call, and the woken thread ran at once on the waker's CPU;
 *   the writer runs SCHED_BATCH, which does not preempt on wake-up.
 *   A record reaches the file within about 2 s of the first selection
 *   after its job started.
 * - Restarts: the file is all that survives. fini writes what is queued
 *   and joins the writer, but 24.11 calls it only in MEMORY_LEAK_DEBUG
 *   builds (after job_fini: no job left to confirm a decision against);
 *   shutdown and scontrol reconfigure (a new process) exit without it.
 *   Lost then: decisions whose job started after the last check, and
 *   records the writer had not reached (up to a second's). No test of
 *   job_list at fini: slurmd loads the plugin and data symbols bind at
 *   dlopen, so only libslurmfull's may be named.
 * - slurmd and the clients load this plugin too (addresses, hostlist
 *   splitting, printing the table); only slurmctld reads the files and
 *   runs the writer.
 * - slurmctld calls build_config and eval_nodes with its own locks held
 *   (configuration write lock, job write lock); state_lock orders our
 *   members between those and fini, which runs outside them.
 *   topology_p_get takes no lock of ours: it reads only Slurm's
 *   switch_record_table, which changes only in build_config, under
 *   read_slurm_conf's node write lock, and slurmctld calls it with at
 *   least the node read lock (_slurm_rpc_get_topo; select_nodes and
 *   cons_tres's job_test under the node write lock); in slurmd and the
 *   clients the table is empty. The writer takes wq_lock or ls_lock (one at a
 * time, never one of slurmctld's or state_lock) and reads no Slurm structure: a
 * record carries fabric hosts, not node indices; what else it reads (fabric,
 * cost model, path) changes only after writer_sync() has found it idle, and the
 * link state (ls_file, ls_traffic, ls_work, ls_path) only after links_stop()
 * has cleared ls_on and waited for it: its look every 250 ms runs with wq_busy
 *   set, like a record. Lock order: state_lock, then wq_lock or
 *   ls_lock; the selection takes ls_lock (links_take) only when a new
 *   snapshot is there, and holds it for the copy alone.
 */
#include "topoplace24_int.h"

#define TP_EXPORT __attribute__((visibility("default")))

/* Not one of slurm.h's TOPOLOGY_PLUGIN_* (100-103): packed topology
 * carries it and only the active plugin unpacks its own id. */
#define TOPOLOGY_PLUGIN_TOPOPLACE 190

TP_EXPORT extern const char plugin_name[];
TP_EXPORT extern const char plugin_type[];
TP_EXPORT extern const uint32_t plugin_id;
TP_EXPORT extern const uint32_t plugin_version;
TP_EXPORT extern int init(void);
TP_EXPORT extern int fini(void);
TP_EXPORT extern int topology_p_build_config(void);
TP_EXPORT extern int topology_p_eval_nodes(topology_eval_t *topo_eval);
TP_EXPORT extern int topology_p_whole_topo(bitstr_t *node_mask);
TP_EXPORT extern bitstr_t *topology_p_get_bitmap(char *name);
TP_EXPORT extern bool topology_p_generate_node_ranking(void);
TP_EXPORT extern int topology_p_get_node_addr(char *node_name, char **paddr,
					      char **ppattern);
TP_EXPORT extern int topology_p_split_hostlist(hostlist_t *hl,
					       hostlist_t ***sp_hl, int *count,
					       uint16_t tree_width);
TP_EXPORT extern int topology_p_topology_free(void *topoinfo_ptr);
TP_EXPORT extern int topology_p_get(topology_data_t type, void *data);
TP_EXPORT extern int topology_p_topology_pack(void *topoinfo_ptr,
					      buf_t *buffer,
					      uint16_t protocol_version);
TP_EXPORT extern int topology_p_topology_print(void *topoinfo_ptr,
					       char *nodes_list, char **out);
TP_EXPORT extern int topology_p_topology_unpack(void **topoinfo_pptr,
						buf_t *buffer,
						uint16_t protocol_version);
TP_EXPORT extern uint32_t topology_p_get_fragmentation(bitstr_t *node_mask);

const char plugin_name[] = "topology topoplace plugin (native)";
const char plugin_type[] = "topology/topoplace";
const uint32_t plugin_id = TOPOLOGY_PLUGIN_TOPOPLACE;
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

typedef topo_info_t topoinfo_switch_t;

typedef struct topoinfo_tree {
	uint32_t record_count;
	topoinfo_switch_t *topo_array;
} topoinfo_tree_t;

pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
tp_pconf_t pconf;
tp_fabric_t *fabric;
tp_stree_t tree;
tp_cost_ctx_t *cost_ctx;
const tp_policy_t *policy;
static bool loaded;          /* files read at least once */
static bool have_tree;       /* fabric loaded and tree built */
bool engine_on;       /* the table is the fabric's, hosts mapped */
static bool select_tree;     /* Selection=tree: every job to eval_nodes_tree */
static bool mismatch_logged;

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

double ms_between(const struct timespec *t0, const struct timespec *t1)
{
	return (t1->tv_sec - t0->tv_sec) * 1e3 +
	       (t1->tv_nsec - t0->tv_nsec) / 1e6;
}

double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ms_between(t0, &t1);
}

/* ---- the files -------------------------------------------------------- */

/* Pending decisions name this fabric's hosts and the writer reads it:
 * both are done with it first. */
static void drop_fabric(void)
{
	decisions_confirm(true);
	pending_clear();
	writer_sync();
	selection_free();
	engine_on = false; /* until build_config maps the new one */
	tp_cost_ctx_destroy(cost_ctx);
	cost_ctx = NULL;
	tp_stree_free(&tree);
	tp_fabric_destroy(fabric);
	fabric = NULL;
	have_tree = false;
}

/* Read topoplace.conf and the fabric it names; on any failure have_tree
 * stays false and the reason is logged here, once. */
static void load_files(void)
{
	char *path = get_extra_conf_path("topoplace.conf");
	char *why = NULL;
	tp_err_t err;
	tp_cost_params_t cp;

	drop_fabric();
	tp_pconf_free(&pconf);
	tp_pconf_defaults(&pconf);
	loaded = true;
	mismatch_logged = false;

	err = tp_pconf_load_fabric(path, TP_SWITCH_TABLE_MAX, &pconf, &fabric,
				   &tree, &why);
	if (err == TP_ERR_NOTFOUND)
		info("%s: %s: flat topology, Slurm's selection", plugin_type, why);
	else if (err)
		error("%s: %s: flat topology, Slurm's selection", plugin_type,
		      why ? why : tp_strerror(err));
	if (err)
		goto out;
	/* the cost model only prices recorded decisions; without it they
	 * are recorded unpriced */
	tp_cost_params_defaults(&cp);
	/* NicsByRate: the step plans split by NIC rate, so price that */
	cp.nics_by_rate = pconf.nics_by_rate;
	if ((err = tp_cost_ctx_create(fabric, &cp, &cost_ctx))) {
		info("%s: fabric %s: cost model: %s: decisions unpriced",
		     plugin_type, pconf.fabric_file, tp_strerror(err));
		cost_ctx = NULL;
	}
	have_tree = true;
	info("%s: fabric %s: %zu hosts, %zu switch%s, %d level%s above the "
	     "leaves%s%s",
	     plugin_type, pconf.fabric_file, tree.norder, tree.nsw,
	     tree.nsw == 1 ? "" : "es", tree.levels,
	     tree.levels == 1 ? "" : "s",
	     tree.nvlink ? ", NVLink domains as leaves" : "",
	     pconf.nics_by_rate ? ", NICs priced by rate" : "");
out:
	tp_free(why);
	xfree(path);
}

#define MISMATCH_FALLBACK "flat topology, Slurm's selection"

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
		error("%s: fabric does not match slurm.conf: %s: %s", plugin_type,
		      why ? why : "out of memory", MISMATCH_FALLBACK);
	mismatch_logged |= !ok;
	tp_free(why);
	xfree(names);
	return ok;
}

/* ---- the plugin API --------------------------------------------------- */

extern int init(void)
{
	tp_log_set(log_sink, NULL);
	policy = tp_policy_find("topoplace");
	verbose("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	slurm_mutex_lock(&state_lock);
	/* the queued records go to the file before the writer is joined;
	 * the pending ones cannot be confirmed: 24.11 unloads plugins only
	 * in MEMORY_LEAK_DEBUG builds, after job_fini freed the jobs, so
	 * neither may the running ones be looked up (drop_fabric confirms
	 * what is left) */
	pending_clear();
	running_clear();
	writer_stop();
	free_switch_table();
	drop_fabric();
	tp_pconf_free(&pconf);
	xfree(decisions_path);
	journal.path = NULL;
	journal.lines = SIZE_MAX;
	engine_on = false;
	select_tree = false;
	loaded = false;
	slurm_mutex_unlock(&state_lock);
	tp_log_set(NULL, NULL);
	return SLURM_SUCCESS;
}

extern bool topology_p_generate_node_ranking(void)
{
	node_record_t *node_ptr;
	bool ranked = false;

	if (!running_in_slurmctld())
		return false;
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
	return ranked;
}

extern int topology_p_build_config(void)
{
	struct timespec t0;

	if (!running_in_slurmctld() || !node_record_count)
		return SLURM_SUCCESS;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	slurm_mutex_lock(&state_lock);
	if (engine_on)
		decisions_confirm(true);
	/* node indices change with the configuration */
	pending_clear();
	writer_sync();
	if (!loaded)
		load_files();
	free_switch_table();
	selection_free();
	engine_on = nodes_match() && policy;
	if (engine_on && !build_from_tree())
		engine_on = false; /* logged: "switch table: out of memory" */
	else if (!engine_on)
		build_flat();
	select_tree = engine_on && tp_pconf_select_tree(&pconf);
	tp_policy_params_defaults(&sel_params);
	sel_params.price_budget = pconf.price_budget;
	if (engine_on && !select_tree)
		links_start();
	/* the writer is idle (writer_sync) and stays so until state_lock
	 * is released */
	if (slurm_conf.state_save_location) {
		char *path = NULL;
		xstrfmtcat(path, "%s/%s", slurm_conf.state_save_location,
			   TP_DECISIONS_FILE);
		if (xstrcmp(path, decisions_path)) {
			struct passwd pw, *pwp = NULL;
			char pwbuf[4096];

			xfree(decisions_path);
			decisions_path = path;
			journal.path = path;
			journal.gid = -1;
			if (getpwuid_r(slurm_conf.slurm_user_id, &pw, pwbuf,
				       sizeof(pwbuf), &pwp) == 0 && pwp)
				journal.gid = (long)pw.pw_gid;
			/* counted at the first write */
			journal.lines = SIZE_MAX;
		} else {
			xfree(path);
		}
	}
	if (engine_on && !select_tree)
		writer_start();
	slurm_mutex_unlock(&state_lock);
	debug("%s: %d switches (%s) in %.3f ms", plugin_type, switch_record_cnt,
	      !engine_on    ? "flat, Slurm's selection"
	      : select_tree ? "fabric, Selection=tree: topology/tree's "
			      "selection"
			    : "fabric, topoplace selection",
	      ms_since(&t0));
	return SLURM_SUCCESS;
}

extern int topology_p_eval_nodes(topology_eval_t *topo_eval)
{
	/* engine_on and select_tree only change under the configuration
	 * write lock, which excludes every scheduling pass */
	if (!engine_on)
		topo_eval->eval_nodes = NULL;
	else if (select_tree)
		topo_eval->eval_nodes = eval_nodes_tree_timed;
	else
		topo_eval->eval_nodes = eval_nodes_topoplace;
	topo_eval->trump_others = false;
	return common_topo_choose_nodes(topo_eval);
}

/* The flat table (no usable fabric) is one switch holding every node:
 * "whole topology" would grow any node set to the whole cluster (a
 * --exclusive=topo job blocking every node, a reservation losing all
 * candidates), so without the engine this does what topology/default
 * does: nothing. */
extern int topology_p_whole_topo(bitstr_t *node_mask)
{
	if (!engine_on)
		return SLURM_SUCCESS;
	for (int i = 0; i < switch_record_cnt; i++) {
		if (switch_record_table[i].level != 0 ||
		    !bit_overlap_any(switch_record_table[i].node_bitmap,
				     node_mask))
			continue;
		bit_or(node_mask, switch_record_table[i].node_bitmap);
	}
	return SLURM_SUCCESS;
}

extern bitstr_t *topology_p_get_bitmap(char *name)
{
	if (!engine_on)
		return NULL; /* as topology/default: no switch to name */
	for (int i = 0; i < switch_record_cnt; i++)
		if (!xstrcmp(switch_record_table[i].name, name))
			return switch_record_table[i].node_bitmap;
	return NULL;
}

/* Address "leaf01.spine01.node1"-style as topology/tree builds it:
 * switches from the top level down, then the node. */
extern int topology_p_get_node_addr(char *node_name, char **paddr,
				    char **ppattern)
{
	node_record_t *node_ptr;
	int max_level = 0;

	if (!switch_record_cnt || !switch_record_table)
		return common_topo_get_node_addr(node_name, paddr, ppattern);
	if (!(node_ptr = find_node_record(node_name)))
		return SLURM_ERROR;
	for (int i = 0; i < switch_record_cnt; i++)
		if (switch_record_table[i].level > max_level)
			max_level = switch_record_table[i].level;
	*paddr = xstrdup("");
	*ppattern = xstrdup("");
	for (int lv = max_level; lv >= 0; lv--) {
		hostlist_t *hl = NULL;
		for (int i = 0; i < switch_record_cnt; i++) {
			if (switch_record_table[i].level != lv ||
			    !bit_test(switch_record_table[i].node_bitmap,
				      node_ptr->index))
				continue;
			if (!hl)
				hl = hostlist_create(switch_record_table[i].name);
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

/* Message fan-out by TreeWidth (topology/tree's RouteTree is not
 * reproduced: the table exists in slurmctld only). */
extern int topology_p_split_hostlist(hostlist_t *hl, hostlist_t ***sp_hl,
				     int *count, uint16_t tree_width)
{
	return common_topo_split_hostlist_treewidth(hl, sp_hl, count,
						    tree_width);
}

extern int topology_p_topology_free(void *topoinfo_ptr)
{
	topoinfo_tree_t *topoinfo = topoinfo_ptr;

	if (!topoinfo)
		return SLURM_SUCCESS;
	if (topoinfo->topo_array) {
		for (uint32_t i = 0; i < topoinfo->record_count; i++) {
			xfree(topoinfo->topo_array[i].name);
			xfree(topoinfo->topo_array[i].nodes);
			xfree(topoinfo->topo_array[i].switches);
		}
		xfree(topoinfo->topo_array);
	}
	xfree(topoinfo);
	return SLURM_SUCCESS;
}

extern int topology_p_get(topology_data_t type, void *data)
{
	switch (type) {
	case TOPO_DATA_TOPOLOGY_PTR: {
		dynamic_plugin_data_t **topoinfo_pptr = data;
		topoinfo_tree_t *ti = xmalloc(sizeof(*ti));

		*topoinfo_pptr = xmalloc(sizeof(dynamic_plugin_data_t));
		(*topoinfo_pptr)->data = ti;
		(*topoinfo_pptr)->plugin_id = plugin_id;
		ti->record_count = switch_record_cnt;
		ti->topo_array = xcalloc(ti->record_count + 1,
					 sizeof(topoinfo_switch_t));
		for (uint32_t i = 0; i < ti->record_count; i++) {
			switch_record_t *s = &switch_record_table[i];
			ti->topo_array[i].level = s->level;
			ti->topo_array[i].link_speed = s->link_speed;
			ti->topo_array[i].name = xstrdup(s->name);
			ti->topo_array[i].nodes = xstrdup(s->nodes);
			ti->topo_array[i].switches = xstrdup(s->switches);
		}
		return SLURM_SUCCESS;
	}
	case TOPO_DATA_REC_CNT:
		*(int *)data = switch_record_cnt;
		return SLURM_SUCCESS;
	case TOPO_DATA_EXCLUSIVE_TOPO:
		*(int *)data = 0;
		return SLURM_SUCCESS;
	default:
		error("%s: unsupported option %d", plugin_type, type);
		return SLURM_ERROR;
	}
}

/* The wire format of topology/tree, so `scontrol show topology` prints
 * the same lines. */
extern int topology_p_topology_pack(void *topoinfo_ptr, buf_t *buffer,
				    uint16_t protocol_version)
{
	topoinfo_tree_t *ti = topoinfo_ptr;

	pack32(ti->record_count, buffer);
	for (uint32_t i = 0; i < ti->record_count; i++) {
		pack16(ti->topo_array[i].level, buffer);
		pack32(ti->topo_array[i].link_speed, buffer);
		packstr(ti->topo_array[i].name, buffer);
		packstr(ti->topo_array[i].nodes, buffer);
		packstr(ti->topo_array[i].switches, buffer);
	}
	return SLURM_SUCCESS;
}

static void print_record(topoinfo_switch_t *t, char **out)
{
	char *line = NULL, *pos = NULL, *env;

	xstrfmtcatat(line, &pos, "SwitchName=%s Level=%u LinkSpeed=%u",
		     t->name, t->level, t->link_speed);
	if (t->nodes)
		xstrfmtcatat(line, &pos, " Nodes=%s", t->nodes);
	if (t->switches)
		xstrfmtcatat(line, &pos, " Switches=%s", t->switches);
	if ((env = getenv("SLURM_TOPO_LEN")))
		xstrfmtcat(*out, "%.*s\n", atoi(env), line);
	else
		xstrfmtcat(*out, "%s\n", line);
	xfree(line);
}

extern int topology_p_topology_print(void *topoinfo_ptr, char *nodes_list,
				     char **out)
{
	topoinfo_tree_t *ti = topoinfo_ptr;
	int match_cnt = 0;

	*out = NULL;
	if (!nodes_list || !nodes_list[0]) {
		if (!ti->record_count) {
			error("No topology information available");
			return SLURM_SUCCESS;
		}
		for (uint32_t i = 0; i < ti->record_count; i++)
			print_record(&ti->topo_array[i], out);
		return SLURM_SUCCESS;
	}
	for (uint32_t i = 0; i < ti->record_count; i++)
		if (!xstrcmp(ti->topo_array[i].name, nodes_list)) {
			print_record(&ti->topo_array[i], out);
			return SLURM_SUCCESS;
		}
	for (uint32_t i = 0; i < ti->record_count; i++) {
		hostset_t *hs;
		int match;

		if (!ti->topo_array[i].nodes || !ti->topo_array[i].nodes[0])
			continue;
		if (!(hs = hostset_create(ti->topo_array[i].nodes)))
			continue;
		match = hostset_within(hs, nodes_list);
		hostset_destroy(hs);
		if (!match)
			continue;
		match_cnt++;
		print_record(&ti->topo_array[i], out);
	}
	if (!match_cnt)
		error("Topology information contains no switch or node named %s",
		      nodes_list);
	return SLURM_SUCCESS;
}

extern int topology_p_topology_unpack(void **topoinfo_pptr, buf_t *buffer,
				      uint16_t protocol_version)
{
	topoinfo_tree_t *ti = xmalloc(sizeof(*ti));

	*topoinfo_pptr = ti;
	safe_unpack32(&ti->record_count, buffer);
	/* + 1 in size_t: a corrupt count of 2^32 - 1 wrapped to 0, left the
	 * array NULL and the loop wrote through it */
	safe_xcalloc(ti->topo_array, (size_t)ti->record_count + 1,
		     sizeof(topoinfo_switch_t));
	for (uint32_t i = 0; i < ti->record_count; i++) {
		safe_unpack16(&ti->topo_array[i].level, buffer);
		safe_unpack32(&ti->topo_array[i].link_speed, buffer);
		safe_unpackstr(&ti->topo_array[i].name, buffer);
		safe_unpackstr(&ti->topo_array[i].nodes, buffer);
		safe_unpackstr(&ti->topo_array[i].switches, buffer);
	}
	return SLURM_SUCCESS;

unpack_error:
	topology_p_topology_free(ti);
	*topoinfo_pptr = NULL;
	return SLURM_ERROR;
}

extern uint32_t topology_p_get_fragmentation(bitstr_t *node_mask)
{
	return 0;
}
