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
 * Notes:
 * - The switch table is built from the fabric (tp_stree_build, the same
 *   tree the 22.05 plugin hands to slurmctld) and has the layout of
 *   topology/tree's, under the same names: Slurm's eval_nodes_tree (linked
 *   from the 24.11 build tree) runs on it unchanged for what the engine
 *   does not take (--switches, required nodes, contiguous, ranges of node
 *   counts, GPUs per task or socket, partitions not in Partitions=) and
 *   when the engine fails for another reason than "does not fit now".
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
 *   commits: the free state is one tp_state_t per fabric load, reset per
 *   call; no file I/O. The engine is the simulator's: tp_place_choose
 *   with the cost context prices candidate host sets (at most
 *   PriceBudget predictions, 0 = structure alone) on sel_state's links,
 *   but the answer is not predicted again (the writer does that). The
 *   simulator's budget (96) put the mean decision at 4x eval_nodes_tree
 *   on the 8-node bench with a degraded up-link; the default (8) at 2x.
 *   While every link is healthy and idle the structure decides alone:
 *   there pricing never changed its answer (fat trees, rail, NVL72) and
 *   costs tens of microseconds per spanning job.
 * - The links sel_state carries: LinkState's (a topoplace-state/1 file;
 *   only its links are used) plus the running jobs' traffic. The writer
 *   looks at the file at most once a second (tp_filesig_update: inode,
 *   size, times) and parses it only when it changed; a bad file is
 *   logged once and the last good links kept, a removed one means
 *   healthy links. Each decision confirmed against its running job
 *   carries the job's traffic to the writer, which keeps it per job
 *   (tp_traffic: tp_cost_link_load with CommShare as duty, the
 *   simulator's fair-share cap). Ends have no callback in 24.11: each
 *   confirmation (above) also looks up the jobs whose traffic is held
 *   and queues an end for those no longer running, in the same queue as
 *   the records, so an end never overtakes its job's record. The writer
 *   then builds the snapshot (file links + traffic) in ls_work and swaps
 *   it with ls_pub under ls_lock; a selection copies ls_pub into
 *   sel_state (O(links), under ls_lock) only when ls_gen moved: a file
 *   change or a job start/end reaches the selections within about 2 s
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
 *   does not wake the writer (it looks every second): a wake-up is a
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
 *   (configuration write lock, job write lock); state_lock only orders
 *   our members against the rare other callers (fini, the clients'
 *   topology_p_get). The writer takes wq_lock or ls_lock (one at a time,
 *   never one of slurmctld's or state_lock) and reads no Slurm
 *   structure: a record carries fabric hosts, not node indices; what
 *   else it reads (fabric, cost model, path) changes only after
 *   writer_sync() has found it idle, and the link state (ls_file,
 *   ls_traffic, ls_work, ls_path) only after links_stop() has cleared
 *   ls_on and waited for it: its once-a-second look runs with wq_busy
 *   set, like a record. Lock order: state_lock, then wq_lock or
 *   ls_lock; the selection takes ls_lock (links_take) only when a new
 *   snapshot is there, and holds it for the copy alone.
 */
#define _GNU_SOURCE /* SCHED_BATCH (as Slurm's own sources do) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pwd.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/common/slurm_xlator.h"

#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/hostlist.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/pack.h"
#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/interfaces/gres.h"
#include "src/interfaces/topology.h"
#include "src/slurmctld/slurmctld.h"

#include "src/plugins/topology/common/common_topo.h"
#include "src/plugins/topology/common/eval_nodes.h"
#include "src/plugins/topology/common/gres_sched.h"
#include "src/plugins/topology/tree/eval_nodes_tree.h"

#include "tp_placement.h"
#include "tp_plugin.h"

#define TP_EXPORT __attribute__((visibility("default")))

/* Not one of slurm.h's TOPOLOGY_PLUGIN_* (100-103): packed topology
 * carries it and only the active plugin unpacks its own id. */
#define TOPOLOGY_PLUGIN_TOPOPLACE 190

/* Decisions kept in StateSaveLocation/TP_DECISIONS_FILE: the last
 * DECISIONS_KEEP, the file trimmed once it holds twice as many lines. */
#define DECISIONS_KEEP 1000
/* Decisions waiting for their job to start (a ring: oldest dropped). */
#define PENDING_MAX 256
/* Confirmed decisions waiting for the writer thread (oldest dropped). */
#define WRITE_MAX 1024
/* The writer looks at its queue every second; after WRITER_NAPS empty
 * looks it sleeps until a record wakes it. */
#define WRITER_NAPS 60
/* Running jobs whose traffic is background, at most (more run unseen). */
#define RUNNING_MAX 4096
/* tp_state_alloc's job id for everything Slurm already gave away. */
#define BUSY_JOB UINT64_C(0xffffffffffff)

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

/* topology/tree's table, under its names: eval_nodes_tree reads these.
 * Hidden by the version script, so they never meet another plugin's. */
switch_record_t *switch_record_table = NULL;
int switch_record_cnt = 0;
int switch_levels = 0;

typedef topo_info_t topoinfo_switch_t;

typedef struct topoinfo_tree {
	uint32_t record_count;
	topoinfo_switch_t *topo_array;
} topoinfo_tree_t;

/* A node the engine chose and Slurm committed. */
typedef struct pick {
	int node;      /* Slurm node index */
	uint32_t host; /* fabric host */
} pick_t;

/* One choice of the engine, until its job is seen running on it and then
 * until the writer has recorded it. Self-contained but for the fabric:
 * the writer reads no Slurm structure. */
typedef struct decision {
	uint32_t job_id;
	pick_t *picks;     /* committed nodes, ascending node index */
	size_t npicks;
	tp_placement_t pl; /* the engine's answer: ring, GPUs, spans, reason */
	tp_request_t req;
	double ms;         /* whole eval, engine and commit */
	time_t when;
	bool track; /* its traffic joins the background */
	bool ended; /* no decision: the job's traffic leaves */
} decision_t;

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_pconf_t pconf;
static tp_fabric_t *fabric;
static tp_stree_t tree;
static tp_cost_ctx_t *cost_ctx;
static const tp_policy_t *policy;
static bool loaded;          /* files read at least once */
static bool have_tree;       /* fabric loaded and tree built */
static bool engine_on;       /* the table is the fabric's, hosts mapped */
static bool select_tree;     /* Selection=tree: every job to eval_nodes_tree */
static bool mismatch_logged;
static uint32_t *host_of;    /* node index -> fabric host (TP_ID_NONE) */
static int host_of_cnt;
static int *node_of;         /* fabric host -> node index (-1) */
/* The selection's working set, allocated with host_of: the free state
 * (reset, not rebuilt, per call) and scratch arrays. */
static tp_state_t *sel_state;
static uint32_t *busy_hosts;
static int *busy_gpus;
static uint16_t *avail_cpus_buf;
static int avail_cpus_cnt;
static pick_t *picks_buf;
static decision_t pending[PENDING_MAX];
static size_t npending, pending_next;
/* The policy's parameters (PriceBudget) and the link state generation
 * sel_state last took from ls_pub. */
static tp_policy_params_t sel_params;
static uint64_t sel_gen;
static bool sel_links_plain; /* every link healthy and idle: no pricing */
/* Jobs whose traffic the writer holds as background: checked against the
 * job list at each confirmation, an end queued to the writer. */
static uint32_t *running;
static size_t nrunning, caprunning;

/* The writer thread and its queue, under wq_lock (never under any lock
 * of slurmctld's). Besides the queue the writer reads fabric, cost_ctx,
 * policy and decisions_path: these change only with state_lock held and
 * after writer_sync(), when it holds no record; journal.lines is the
 * writer's own, and so is the link state while ls_on holds (below). */
static pthread_mutex_t wq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wq_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t wq_idle = PTHREAD_COND_INITIALIZER;
static decision_t wq[WRITE_MAX];
static size_t wq_head, wq_len, wq_dropped;
static bool wq_busy, wq_stop, wq_asleep;
static bool wq_running;      /* under state_lock */
static pthread_t wq_thread;
/* The decisions file (path xmalloc'ed, NULL: none); its gid is
 * SlurmUser's group, which may read it (PrivateData=jobs hides the hosts
 * of other users' jobs from everyone else), -1 unknown. */
static char *decisions_path;
static tp_decision_journal_t journal = {
    .keep = DECISIONS_KEEP, .gid = -1, .lines = SIZE_MAX};

/* The links the selection prices with. ls_pub (and ls_gen) under ls_lock:
 * the writer swaps a new one in, the selection copies it into sel_state
 * when ls_gen moved. The rest is the writer's while ls_on (under wq_lock)
 * holds, allocated with the selection's working set: LinkState's path
 * and last look, the file's links (NULL: healthy), the running jobs'
 * traffic, and the next snapshot being built. */
static pthread_mutex_t ls_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_state_t *ls_pub;
static bool ls_pub_plain;
static uint64_t ls_gen;
static bool ls_on;
static char *ls_path;
static tp_filesig_t ls_sig;
static time_t ls_looked; /* monotonic second of the last stat */
static tp_state_t *ls_file;
static tp_traffic_t *ls_traffic;
static tp_state_t *ls_work;
static double ls_duty;
static bool ls_dirty; /* ls_pub is behind */

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

static double ms_between(const struct timespec *t0, const struct timespec *t1)
{
	return (t1->tv_sec - t0->tv_sec) * 1e3 +
	       (t1->tv_nsec - t0->tv_nsec) / 1e6;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ms_between(t0, &t1);
}

static void decisions_confirm(bool force);
static void pending_clear(void);
static void writer_sync(void);
static void links_stop(void);

/* ---- the files -------------------------------------------------------- */

/* The selection's working set (build_from_tree); the state refers to the
 * fabric. */
static void selection_free(void)
{
	links_stop();
	xfree(running);
	nrunning = caprunning = 0;
	tp_state_destroy(sel_state);
	sel_state = NULL;
	sel_gen = 0;
	sel_links_plain = true;
	xfree(host_of);
	host_of_cnt = 0;
	xfree(node_of);
	xfree(busy_hosts);
	xfree(busy_gpus);
	xfree(avail_cpus_buf);
	avail_cpus_cnt = 0;
	xfree(picks_buf);
}

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

	err = tp_pconf_load_fabric(path, SWITCH_NO_PARENT, &pconf, &fabric, &tree, &why);
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
	if ((err = tp_cost_ctx_create(fabric, &cp, &cost_ctx))) {
		info("%s: fabric %s: cost model: %s: decisions unpriced",
		     plugin_type, pconf.fabric_file, tp_strerror(err));
		cost_ctx = NULL;
	}
	have_tree = true;
	info("%s: fabric %s: %zu hosts, %zu switches, %d levels above the "
	     "leaves%s",
	     plugin_type, pconf.fabric_file, tree.norder, tree.nsw,
	     tree.levels, tree.nvlink ? ", NVLink domains as leaves" : "");
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

/* ---- the switch table ------------------------------------------------- */

static void free_switch_table(void)
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

static void build_flat(void)
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
static void build_from_tree(void)
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

/* ---- link state ------------------------------------------------------- */

/* Re-read LinkState when it changed (tp_filesig_update): its links become
 * ls_file; a removed file means healthy links. A bad file is logged once
 * (until it changes again) and the last good links kept. The writer's,
 * or build_config's with the writer idle. */
static void links_read(void)
{
	tp_state_t *st = NULL;
	size_t nl = tp_fabric_nlinks(fabric), weak = 0, busy = 0;
	char *why = NULL;
	tp_err_t err;

	if (!ls_path || !tp_filesig_update(ls_path, &ls_sig))
		return;
	if (!ls_sig.exists) {
		info("%s: LinkState %s: no such file: links healthy",
		     plugin_type, ls_path);
		tp_state_destroy(ls_file);
		ls_file = NULL;
		ls_dirty = true;
		return;
	}
	if ((err = tp_state_load_json(fabric, ls_path, &st, &why))) {
		/* why names the file */
		error("%s: LinkState %s: last good link state kept",
		      plugin_type, why ? why : tp_strerror(err));
		tp_free(why);
		return;
	}
	for (size_t l = 0; l < nl; l++) {
		weak += tp_state_link_health(st, (uint32_t)l) < 1;
		busy += tp_state_link_background(st, (uint32_t)l) > 0;
	}
	info("%s: LinkState %s: %zu of %zu links degraded, %zu with "
	     "background traffic",
	     plugin_type, ls_path, weak, nl, busy);
	tp_state_destroy(ls_file);
	ls_file = st;
	ls_dirty = true;
}

/* The file's links plus the running jobs' traffic into ls_work, swapped
 * in as ls_pub. */
static void links_publish(void)
{
	tp_state_t *t;
	bool plain;

	if (!ls_work || tp_traffic_apply(ls_traffic, ls_file, ls_work))
		return;
	plain = tp_state_links_plain(ls_work);
	slurm_mutex_lock(&ls_lock);
	t = ls_pub;
	ls_pub = ls_work;
	ls_pub_plain = plain;
	ls_work = t;
	__atomic_store_n(&ls_gen, ls_gen + 1, __ATOMIC_RELEASE);
	slurm_mutex_unlock(&ls_lock);
	ls_dirty = false;
}

/* Faster of ring and hierarchical on the file's links (ring on a tie or
 * when neither can be priced), as the engine's prediction picks. */
static tp_algo_t faster_algo(const tp_placement_t *pl, double bytes)
{
	tp_cost_t r, h;

	if (tp_cost_predict(cost_ctx, ls_file, pl->hosts, pl->gpus, pl->nhosts,
			    bytes, TP_ALGO_RING, &r))
		return TP_ALGO_RING;
	if (!tp_cost_predict(cost_ctx, ls_file, pl->hosts, pl->gpus, pl->nhosts,
			     bytes, TP_ALGO_HIERARCHICAL, &h) &&
	    h.seconds < r.seconds)
		return TP_ALGO_HIERARCHICAL;
	return TP_ALGO_RING;
}

/* A running job's traffic joins the background, or an ended one's
 * leaves it. The writer's (ls_on held when the record was taken). */
static void links_job(const decision_t *d)
{
	double bytes = d->req.bytes > 0 ? d->req.bytes : 1073741824.0;
	tp_err_t err;

	if (!ls_traffic)
		return;
	if (d->ended) {
		if (tp_traffic_remove(ls_traffic, d->job_id) == TP_OK)
			ls_dirty = true;
		return;
	}
	if (!d->track || !cost_ctx || d->pl.nhosts < 2 || !(ls_duty > 0))
		return;
	err = tp_traffic_add(ls_traffic, d->job_id, cost_ctx, ls_file,
			     d->pl.hosts, d->pl.gpus, d->pl.nhosts, bytes,
			     faster_algo(&d->pl, bytes), ls_duty);
	ls_dirty = true; /* on error too: its old load is gone */
	if (err)
		debug("%s: JobId=%u: traffic not priced: %s", plugin_type,
		      d->job_id, tp_strerror(err));
}

/* Once a second: LinkState looked at, and a new snapshot published when
 * anything changed. wq_lock held on entry and on return, released while
 * working (wq_busy set, so writer_sync and links_stop wait for it). */
static void links_tick(void)
{
	struct timespec now;
	bool look;

	if (!ls_on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	look = ls_path && now.tv_sec != ls_looked;
	if (!look && !ls_dirty)
		return;
	wq_busy = true;
	slurm_mutex_unlock(&wq_lock);
	if (look) {
		ls_looked = now.tv_sec;
		links_read();
	}
	if (ls_dirty)
		links_publish();
	slurm_mutex_lock(&wq_lock);
	wq_busy = false;
	slurm_cond_broadcast(&wq_idle);
}

/* With the selection's working set (build_config, writer idle): the
 * file read and the first snapshot published before any selection. */
static void links_start(void)
{
	char *conf = get_extra_conf_path("topoplace.conf");

	ls_path = tp_pconf_path(conf, pconf.link_state);
	xfree(conf);
	ls_duty = pconf.comm_share / 100.0;
	memset(&ls_sig, 0, sizeof(ls_sig));
	ls_looked = 0;
	ls_traffic = tp_traffic_create(fabric);
	ls_work = tp_state_create(fabric);
	slurm_mutex_lock(&ls_lock);
	ls_pub = tp_state_create(fabric);
	slurm_mutex_unlock(&ls_lock);
	if (!ls_traffic || !ls_work || !ls_pub ||
	    (pconf.link_state && !ls_path)) {
		error("%s: link state: out of memory: links priced healthy",
		      plugin_type);
		links_stop();
		return;
	}
	links_read();
	links_publish();
	slurm_mutex_lock(&wq_lock);
	ls_on = true;
	slurm_mutex_unlock(&wq_lock);
}

/* The writer done with the link state (it may be in links_tick), then
 * all of it freed. */
static void links_stop(void)
{
	slurm_mutex_lock(&wq_lock);
	ls_on = false;
	while (wq_running && wq_busy)
		slurm_cond_wait(&wq_idle, &wq_lock);
	slurm_mutex_unlock(&wq_lock);
	tp_state_destroy(ls_file);
	ls_file = NULL;
	tp_traffic_destroy(ls_traffic);
	ls_traffic = NULL;
	tp_state_destroy(ls_work);
	ls_work = NULL;
	tp_free(ls_path);
	ls_path = NULL;
	ls_dirty = false;
	slurm_mutex_lock(&ls_lock);
	tp_state_destroy(ls_pub);
	ls_pub = NULL;
	slurm_mutex_unlock(&ls_lock);
}

/* The selection's copy of the links, when the writer published a newer
 * one: a load and, rarely, a copy of every link's health and
 * background. state_lock held. */
static void links_take(void)
{
	if (!sel_state || __atomic_load_n(&ls_gen, __ATOMIC_ACQUIRE) == sel_gen)
		return;
	slurm_mutex_lock(&ls_lock);
	if (ls_pub)
		(void)tp_traffic_apply(NULL, ls_pub, sel_state);
	sel_links_plain = !ls_pub || ls_pub_plain;
	sel_gen = ls_gen;
	slurm_mutex_unlock(&ls_lock);
}

/* ---- decisions -------------------------------------------------------- */

static void decision_free(decision_t *d)
{
	xfree(d->picks);
	tp_placement_free(&d->pl);
	memset(d, 0, sizeof(*d));
}

static void pending_clear(void)
{
	for (size_t i = 0; i < PENDING_MAX; i++)
		decision_free(&pending[i]);
	npending = pending_next = 0;
}

/* Predicted all-reduce on the hosts and on the best hosts of an empty
 * fabric, both on a healthy idle fabric (ring or hierarchical, the
 * faster). false when there is no cost model or it fails. */
static bool price(const decision_t *d, double *pred_p, double *ideal_p)
{
	tp_placement_t best = {0};
	tp_state_t *empty;
	double bytes = d->req.bytes > 0 ? d->req.bytes : 1073741824.0;
	double pred = -1;
	bool ok = false;

	if (!cost_ctx || !d->pl.nhosts)
		return false;
	for (int a = 0; a < 2; a++) {
		tp_cost_t c;
		if (tp_cost_predict(cost_ctx, NULL, d->pl.hosts, d->pl.gpus,
				    d->pl.nhosts, bytes,
				    a ? TP_ALGO_HIERARCHICAL : TP_ALGO_RING,
				    &c) == TP_OK &&
		    (pred < 0 || c.seconds < pred))
			pred = c.seconds;
	}
	if (pred < 0 || !(empty = tp_state_create(fabric)))
		return false;
	if (tp_place_run(policy, empty, &d->req, NULL, cost_ctx, 1, &best) ==
	    TP_OK) {
		*pred_p = pred;
		*ideal_p = best.predicted_s;
		ok = true;
	}
	tp_placement_free(&best);
	tp_state_destroy(empty);
	return ok;
}

/* The node list as slurmctld prints it (bitmap2node_name: sorted,
 * ranged), from the fabric's names of the nodes, which are slurm.conf's:
 * the writer reads no node table. */
static char *picks_hostlist(const decision_t *d)
{
	hostlist_t *hl = hostlist_create(NULL);
	char *s;

	for (size_t i = 0; i < d->npicks; i++)
		hostlist_push_host(
		    hl, tp_fabric_host(fabric, d->picks[i].host)->name);
	hostlist_sort(hl);
	s = hostlist_ranged_string_xmalloc(hl);
	hostlist_destroy(hl);
	return s;
}

/* The record of one decision (tp_decision_encode: topoplace-decision/1)
 * appended to the journal under its lock, whole or not at all. The
 * writer thread's (or, without one, writer_sync's caller's). */
static void decision_write(const decision_t *d)
{
	const tp_placement_t *pl = &d->pl;
	tp_decision_t rec;
	char *hl = NULL, *line = NULL;
	size_t len;
	tp_err_t err = TP_ERR_NOMEM;

	if (!decisions_path)
		return;
	tp_decision_init(&rec);
	rec.job_id = d->job_id;
	rec.time = (int64_t)d->when;
	rec.hosts = hl = picks_hostlist(d);
	rec.nring = pl->nhosts;
	rec.ring = xcalloc(pl->nhosts + 1, sizeof(char *));
	for (size_t i = 0; i < pl->nhosts; i++)
		rec.ring[i] = tp_fabric_host(fabric, pl->hosts[i])->name;
	rec.gpus = pl->gpus;
	rec.span[TP_SPAN_GROUPS] = pl->span[TP_SPAN_GROUPS];
	rec.min_free[TP_SPAN_GROUPS] = pl->min_span_free[TP_SPAN_GROUPS];
	rec.min_empty[TP_SPAN_GROUPS] = pl->min_span_empty[TP_SPAN_GROUPS];
	rec.priced = price(d, &rec.predicted_s, &rec.ideal_s);
	rec.policy = (char *)tp_policy_name(policy);
	rec.decision_ms = d->ms;
	rec.reason = pl->explain ? pl->explain : "";
	journal.path = decisions_path;
	if ((err = tp_decision_encode(&rec, &line, &len)) ||
	    (err = tp_decision_append(&journal, line, len)))
		debug("%s: %s: record of JobId=%u not written: %s", plugin_type,
		      decisions_path, d->job_id, tp_strerror(err));
	tp_free(line);
	xfree(rec.ring); /* the names are the fabric's */
	xfree(hl);
}

/* Write and free the oldest queued record; wq_lock held on entry and on
 * return, released while writing. false when the queue is empty. */
static bool write_one(void)
{
	struct timespec t0;
	decision_t d;
	size_t dropped;
	bool links;

	if (!wq_len)
		return false;
	d = wq[wq_head];
	memset(&wq[wq_head], 0, sizeof(d));
	wq_head = (wq_head + 1) % WRITE_MAX;
	wq_len--;
	dropped = wq_dropped;
	wq_dropped = 0;
	links = ls_on;
	wq_busy = true;
	slurm_mutex_unlock(&wq_lock);
	if (dropped)
		error("%s: %zu decision records dropped: %s fell behind",
		      plugin_type, dropped, decisions_path);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!d.ended)
		decision_write(&d);
	if (links)
		links_job(&d);
	debug2("%s: %s of JobId=%u in %.3f ms", plugin_type,
	       d.ended ? "end" : "record", d.job_id, ms_since(&t0));
	decision_free(&d);
	slurm_mutex_lock(&wq_lock);
	wq_busy = false;
	if (!wq_len)
		slurm_cond_broadcast(&wq_idle);
	return true;
}

static void *writer_main(void *arg)
{
	struct sched_param sp = {0};

	/* background work on slurmctld's CPUs: the wake-ups of a SCHED_BATCH
	 * thread never preempt the thread running there (a normal one's
	 * would, mid-selection: measured). Not niced: a starved writer
	 * holding a malloc arena lock would stall the threads sharing it. */
	if ((errno = pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp)))
		debug("%s: decision writer: SCHED_BATCH: %m", plugin_type);
	slurm_mutex_lock(&wq_lock);
	for (int naps = 0;;) {
		struct timespec ts;

		if (write_one()) {
			naps = 0;
			continue;
		}
		links_tick();
		if (wq_stop)
			break;
		/* LinkState is looked at every second */
		if (naps++ < WRITER_NAPS || (ls_on && ls_path)) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec++;
			slurm_cond_timedwait(&wq_work, &wq_lock, &ts);
			continue;
		}
		wq_asleep = true;
		slurm_cond_wait(&wq_work, &wq_lock);
		wq_asleep = false;
		naps = 0;
	}
	slurm_mutex_unlock(&wq_lock);
	return NULL;
}

/* In slurmctld, once the daemon has forked (build_config). Signals stay
 * with slurmctld's own threads. Without a thread the records are written
 * by writer_sync, in the selection: slower, nothing lost. */
static void writer_start(void)
{
	sigset_t all, old;
	int rc;

	if (wq_running)
		return;
	/* the writer's naps count on the monotonic clock: on the wall clock
	 * a step back would keep it asleep, unwoken, while records pile up
	 * (nobody waits on wq_work before the thread exists) */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&wq_work);
	pthread_cond_init(&wq_work, &ca);
	pthread_condattr_destroy(&ca);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&wq_thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		error("%s: decision writer thread: %s: records written during "
		      "selection",
		      plugin_type, strerror(rc));
		return;
	}
	wq_running = true;
}

/* Everything queued is in the file (or failed to be) and the writer holds
 * no record. */
static void writer_sync(void)
{
	slurm_mutex_lock(&wq_lock);
	if (wq_running) {
		slurm_cond_signal(&wq_work);
		while (wq_len || wq_busy)
			slurm_cond_wait(&wq_idle, &wq_lock);
	} else {
		while (write_one())
			;
		links_tick();
	}
	slurm_mutex_unlock(&wq_lock);
}

/* Drains the queue, then joins the thread. */
static void writer_stop(void)
{
	if (!wq_running) {
		writer_sync();
		return;
	}
	slurm_mutex_lock(&wq_lock);
	wq_stop = true;
	slurm_cond_signal(&wq_work);
	slurm_mutex_unlock(&wq_lock);
	pthread_join(wq_thread, NULL);
	wq_running = false;
	wq_stop = false;
}

/* Queue a confirmed decision for the writer. Takes d's members. No
 * wake-up (a futex call, and the woken writer competing for the CPU)
 * unless the writer has been idle for a minute: it looks every second. */
static void writer_push(decision_t *d)
{
	slurm_mutex_lock(&wq_lock);
	if (wq_len == WRITE_MAX) {
		decision_free(&wq[wq_head]);
		wq_head = (wq_head + 1) % WRITE_MAX;
		wq_len--;
		wq_dropped++;
	}
	wq[(wq_head + wq_len) % WRITE_MAX] = *d;
	wq_len++;
	if (wq_asleep)
		slurm_cond_signal(&wq_work);
	slurm_mutex_unlock(&wq_lock);
	memset(d, 0, sizeof(*d));
}

/* Queue the end of a job whose traffic the writer holds. */
static void writer_push_end(uint32_t job_id)
{
	decision_t *e = xmalloc(sizeof(*e));

	e->job_id = job_id;
	e->ended = true;
	writer_push(e);
	xfree(e);
}

/* The job runs on exactly the nodes the decision committed. */
static bool runs_on(job_record_t *job_ptr, const decision_t *d)
{
	bitstr_t *b = job_ptr->node_bitmap;

	/* select_nodes takes its "now" before the hook stamps the decision:
	 * a second boundary between them is not another start */
	if (!b || job_ptr->start_time + 2 < d->when ||
	    bit_set_count(b) != (int64_t)d->npicks)
		return false;
	for (size_t i = 0; i < d->npicks; i++)
		if (d->picks[i].node >= bit_size(b) ||
		    !bit_test(b, d->picks[i].node))
			return false;
	return true;
}

/* Remember a job whose traffic the writer will hold; false when
 * RUNNING_MAX are already. */
static bool running_add(uint32_t job_id)
{
	for (size_t i = 0; i < nrunning; i++)
		if (running[i] == job_id)
			return true;
	if (nrunning == RUNNING_MAX)
		return false;
	if (nrunning == caprunning) {
		caprunning = caprunning ? 2 * caprunning : 64;
		xrecalloc(running, caprunning, sizeof(uint32_t));
	}
	running[nrunning++] = job_id;
	return true;
}

/* Hand the decisions whose job now runs on exactly the chosen nodes to
 * the writer; drop those of jobs gone or running elsewhere. Needs the job
 * read lock (held by every caller in slurmctld). force: at reconfigure. */
static void decisions_confirm(bool force)
{
	static struct timespec last;
	struct timespec now;
	size_t pushed = 0;

	/* a scan of every slot per selection would cost each job more than
	 * its own decision: once a second is soon enough for a record, or
	 * at once when the slots run short */
	if (!npending && !nrunning)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!force && npending < PENDING_MAX / 2 &&
	    now.tv_sec - last.tv_sec < 1)
		return;
	last = now;
	for (size_t i = 0; i < PENDING_MAX && npending; i++) {
		decision_t *d = &pending[i];
		job_record_t *job_ptr;

		if (!d->job_id)
			continue;
		job_ptr = find_job_record(d->job_id);
		if (job_ptr && IS_JOB_PENDING(job_ptr))
			continue;
		if (job_ptr && runs_on(job_ptr, d)) {
			d->track = d->npicks > 1 && pconf.comm_share &&
				   running_add(d->job_id);
			writer_push(d);
			pushed++;
		} else {
			decision_free(d);
		}
		npending--;
	}
	/* jobs gone, or no longer running (ended, requeued, suspended):
	 * their traffic leaves the background, queued after the records
	 * pushed before it */
	for (size_t i = 0; i < nrunning;) {
		job_record_t *job_ptr = find_job_record(running[i]);

		if (job_ptr && IS_JOB_RUNNING(job_ptr)) {
			i++;
			continue;
		}
		writer_push_end(running[i]);
		pushed++;
		running[i] = running[--nrunning];
	}
	if (pushed && !wq_running)
		writer_sync();
}

/* Remember a choice (the last one per job wins). Takes d's members. */
static void decision_keep(decision_t *d)
{
	decision_t *slot = NULL, *free_slot = NULL;

	for (size_t i = 0; i < PENDING_MAX; i++) {
		if (pending[i].job_id == d->job_id) {
			slot = &pending[i];
			break;
		}
		if (!free_slot && !pending[i].job_id)
			free_slot = &pending[i];
	}
	/* a free slot before evicting anyone: selections for jobs that do
	 * not start (submit-time tests, backfill's will-run checks) come in
	 * bursts between two confirmations */
	if (!slot && free_slot) {
		slot = free_slot;
		npending++;
	} else if (!slot) {
		slot = &pending[pending_next];
		pending_next = (pending_next + 1) % PENDING_MAX;
	}
	decision_free(slot);
	*slot = *d;
	memset(d, 0, sizeof(*d));
}

/* ---- selection -------------------------------------------------------- */

/* The job's GPUs: per node and per job. false for what the engine does
 * not express (GPUs per task or per socket). */
static bool job_gpus(job_record_t *job_ptr, uint64_t *per_node_p,
		     uint64_t *per_job_p)
{
	uint32_t gpu_id = gres_get_gpu_plugin_id();
	uint64_t per_node = 0, per_job = 0;
	list_itr_t *it;
	gres_state_t *gs;

	if (!job_ptr->gres_list_req) {
		*per_node_p = *per_job_p = 0;
		return true;
	}
	it = list_iterator_create(job_ptr->gres_list_req);
	while ((gs = list_next(it))) {
		gres_job_state_t *js = gs->gres_data;
		if (gs->plugin_id != gpu_id || !js)
			continue;
		if (js->gres_per_task || js->gres_per_socket) {
			list_iterator_destroy(it);
			return false;
		}
		per_node += js->gres_per_node;
		per_job += js->gres_per_job;
	}
	list_iterator_destroy(it);
	*per_node_p = per_node;
	*per_job_p = per_job;
	return true;
}

/* Why the engine does not take this job (NULL: it does). */
static const char *not_ours(topology_eval_t *topo_eval, uint32_t nodes)
{
	job_record_t *job_ptr = topo_eval->job_ptr;
	job_details_t *details = job_ptr->details;

	if (job_ptr->req_switch)
		return "--switches";
	if (details->req_node_bitmap)
		return "required nodes";
	if (details->contiguous)
		return "contiguous";
	if (job_ptr->part_ptr &&
	    !tp_pconf_partition_enabled(&pconf, job_ptr->part_ptr->name))
		return "partition not in Partitions";
	if (!nodes || nodes > (uint32_t)tp_fabric_nhosts(fabric))
		return "node count";
	if (topo_eval->max_nodes < nodes)
		return "node limit";
	return NULL;
}

/* Slurm's free state for this job as a tp_state_t: hosts not in node_map
 * are down (or busy when Slurm gave them away); hosts in it offer the
 * GPUs Slurm found for the job (all, for jobs without GPUs), unless
 * Slurm found no CPUs there. The state is the one of build_from_tree,
 * reset: the previous call's busy GPUs released, every mapped host's
 * up/down set again (hosts without a node stay down). */
static tp_state_t *map_state(topology_eval_t *topo_eval,
			     const uint16_t *avail_cpus, bool want_gpus)
{
	tp_state_t *s = sel_state;
	size_t nh = tp_fabric_nhosts(fabric), nbusy = 0;

	if (!s)
		return NULL;
	(void)tp_state_release(s, BUSY_JOB); /* NOTFOUND: nothing was busy */
	for (int i = 0; i < host_of_cnt && i < node_record_count; i++) {
		node_record_t *node_ptr = node_record_table_ptr[i];
		uint32_t h = host_of[i];
		int ngpus, busy;

		if (h == TP_ID_NONE || h >= nh)
			continue;
		if (!node_ptr) {
			tp_state_set_host_up(s, h, false);
			continue;
		}
		ngpus = (int)tp_fabric_host(fabric, h)->ngpus;
		if (bit_test(topo_eval->node_map, i) && avail_cpus[i]) {
			busy = 0;
			if (want_gpus) {
				int avail = topo_eval->avail_res_array[i]
						    ? topo_eval
							      ->avail_res_array[i]
							      ->avail_gpus
						    : 0;
				busy = ngpus - (avail < ngpus ? avail : ngpus);
			}
		} else if (!IS_NODE_DOWN(node_ptr) &&
			   !IS_NODE_DRAIN(node_ptr) &&
			   !IS_NODE_FUTURE(node_ptr) &&
			   !IS_NODE_NO_RESPOND(node_ptr) &&
			   !IS_NODE_POWERED_DOWN(node_ptr) && ngpus > 0) {
			busy = ngpus; /* up, but given away */
		} else {
			tp_state_set_host_up(s, h, false);
			continue;
		}
		tp_state_set_host_up(s, h, true);
		if (busy > 0) {
			busy_hosts[nbusy] = h;
			busy_gpus[nbusy++] = busy;
		}
	}
	/* one call; should it fail, host by host, a host refusing left out */
	if (nbusy &&
	    tp_state_alloc(s, BUSY_JOB, busy_hosts, busy_gpus, nbusy) != TP_OK)
		for (size_t k = 0; k < nbusy; k++)
			if (tp_state_alloc(s, BUSY_JOB, &busy_hosts[k],
					   &busy_gpus[k], 1) != TP_OK)
				tp_state_set_host_up(s, busy_hosts[k], false);
	return s;
}

static int cmp_pick(const void *a, const void *b)
{
	int x = ((const pick_t *)a)->node, y = ((const pick_t *)b)->node;

	return (x > y) - (x < y);
}

/*
 * The hook common_topo_choose_nodes() runs through eval_nodes() (after
 * Slurm's own spread, busy-first, LLN and pack_serial_at_end choices).
 * ESLURM_NOT_SUPPORTED sends eval_nodes() on to its default (consecutive)
 * selection; for jobs the engine does not take, eval_nodes_tree runs
 * instead on the same table. Nothing here but choosing and committing:
 * no file, no prediction but the engine's bounded pricing, no allocation
 * but the engine's own and, for a successful choice, the decision's node
 * list.
 */
static int eval_nodes_topoplace(topology_eval_t *topo_eval)
{
	job_record_t *job_ptr = topo_eval->job_ptr;
	job_details_t *details = job_ptr->details;
	uint32_t min_nodes = topo_eval->min_nodes;
	uint32_t req_nodes = topo_eval->req_nodes;
	uint64_t per_node = 0, per_job = 0, maxtasks;
	int64_t rem_max_cpus;
	int rem_cpus, rem_nodes, min_rem_nodes, rc = SLURM_ERROR;
	uint16_t *avail_cpus;
	pick_t *picks = picks_buf;
	size_t npicks = 0, ncommitted = 0, nh;
	int64_t offered_cpus = 0;
	tp_placement_t pl = {0};
	tp_state_t *s = NULL;
	tp_request_t r = {0};
	decision_t d = {0};
	struct timespec t0, t_conf, t_cores, t_map, t_place, t_end;
	const char *why;
	tp_err_t err;
	node_record_t *node_ptr;
	bool gres_per_job;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	slurm_mutex_lock(&state_lock);
	decisions_confirm(false);
	clock_gettime(CLOCK_MONOTONIC, &t_conf);
	if (!engine_on) {
		slurm_mutex_unlock(&state_lock);
		return ESLURM_NOT_SUPPORTED;
	}

	topo_eval->avail_cpus = 0;
	rem_cpus = details->min_cpus;
	min_rem_nodes = min_nodes;
	gres_per_job = gres_sched_init(job_ptr->gres_list_req);
	topo_eval->gres_per_job = gres_per_job;
	if (gres_per_job)
		rem_nodes = MIN(min_nodes, req_nodes);
	else
		rem_nodes = MAX(min_nodes, req_nodes);

	/* the request, or hand the job to topology/tree's selection */
	why = not_ours(topo_eval, (uint32_t)rem_nodes);
	if (!why && !job_gpus(job_ptr, &per_node, &per_job))
		why = "GPUs per task or socket";
	if (!why && per_job) {
		if (min_nodes == topo_eval->max_nodes &&
		    per_job % min_nodes == 0) {
			r.nodes = (int)min_nodes;
			r.gpus_per_node = (int)(per_job / min_nodes);
		} else if (per_node) {
			why = "--gpus with --gpus-per-node";
		} else {
			r.gpus = (int)MIN(per_job, (uint64_t)INT32_MAX);
		}
	} else if (!why) {
		if (min_nodes != req_nodes && req_nodes != topo_eval->max_nodes)
			why = "node count range";
		r.nodes = rem_nodes;
		r.gpus_per_node = (int)MIN(per_node, (uint64_t)INT32_MAX);
	}
	r.exclusive = details->whole_node & WHOLE_NODE_REQUIRED;
	if (why) {
		slurm_mutex_unlock(&state_lock);
		debug("%s: %pJ: %s: topology/tree's selection", plugin_type,
		       job_ptr, why);
		return eval_nodes_tree(topo_eval);
	}

	rem_max_cpus = eval_nodes_get_rem_max_cpus(details, rem_nodes);
	maxtasks = eval_nodes_set_max_tasks(job_ptr, rem_max_cpus,
					    topo_eval->max_nodes);

	/* cores as Slurm computes them (eval_nodes_tree does the same to
	 * every candidate before choosing); nodes created since
	 * build_config (scontrol create node) grow the table */
	if (node_record_count > avail_cpus_cnt) {
		xrecalloc(avail_cpus_buf, node_record_count + 1,
			  sizeof(uint16_t));
		avail_cpus_cnt = node_record_count;
	}
	avail_cpus = avail_cpus_buf;
	memset(avail_cpus, 0, (node_record_count + 1) * sizeof(uint16_t));
	for (int i = 0; (node_ptr = next_node_bitmap(topo_eval->node_map, &i));
	     i++) {
		eval_nodes_select_cores(topo_eval, i, min_rem_nodes);
		avail_cpus[i] = topo_eval->avail_cpus;
	}
	clock_gettime(CLOCK_MONOTONIC, &t_cores);

	if (!(s = map_state(topo_eval, avail_cpus,
			    per_node || per_job))) {
		why = "out of memory";
		goto tree;
	}
	links_take();
	clock_gettime(CLOCK_MONOTONIC, &t_map);
	/* on healthy, idle links pricing never changed the structural
	 * answer (measured on fat trees, rail and NVL72 fabrics): skipped */
	err = tp_place_choose(
	    policy, s, &r, &sel_params,
	    pconf.price_budget && !sel_links_plain ? cost_ctx : NULL, 1, &pl);
	clock_gettime(CLOCK_MONOTONIC, &t_place);
	if (err == TP_ERR_NOTFOUND) {
		debug("%s: %pJ: does not fit the free nodes now (%.3f ms)",
		      plugin_type, job_ptr, ms_since(&t0));
		rc = SLURM_ERROR;
		goto out;
	} else if (err) {
		why = tp_strerror(err);
		goto tree;
	}

	nh = tp_fabric_nhosts(fabric);
	for (size_t k = 0; k < pl.nhosts; k++) {
		uint32_t h = pl.hosts[k];
		int i = h < nh ? node_of[h] : -1;
		if (i < 0 || !bit_test(topo_eval->node_map, i)) {
			why = "engine chose a node Slurm does not offer";
			goto tree;
		}
		picks[npicks].node = i;
		picks[npicks++].host = h;
		offered_cpus += avail_cpus[i];
	}
	if (offered_cpus < rem_cpus) {
		why = "the chosen nodes have too few CPUs";
		goto tree;
	}
	qsort(picks, npicks, sizeof(pick_t), cmp_pick);

	/* commit as eval_nodes_tree does after its choice */
	bit_clear_all(topo_eval->node_map);
	for (size_t k = 0; k < npicks && topo_eval->max_nodes > 0; k++) {
		int i = picks[k].node;
		topo_eval->avail_cpus = avail_cpus[i];
		if (!eval_nodes_cpus_to_use(topo_eval, i, rem_max_cpus,
					    min_rem_nodes, &maxtasks, true)) {
			debug("%s: %pJ: GRES layout leaves %s unusable",
			      plugin_type, job_ptr,
			      node_record_table_ptr[i]->name);
			rc = SLURM_ERROR;
			goto out;
		}
		rem_nodes--;
		min_rem_nodes--;
		topo_eval->max_nodes--;
		rem_cpus -= topo_eval->avail_cpus;
		rem_max_cpus -= topo_eval->avail_cpus;
		bit_set(topo_eval->node_map, i);
		ncommitted++;
	}
	if ((min_rem_nodes <= 0) && (rem_cpus <= 0) &&
	    (!gres_per_job ||
	     gres_sched_test(job_ptr->gres_list_req, job_ptr->job_id)))
		rc = SLURM_SUCCESS;
	else
		rc = SLURM_ERROR;
	if (rc == SLURM_SUCCESS)
		eval_nodes_clip_socket_cores(topo_eval);

	clock_gettime(CLOCK_MONOTONIC, &t_end);
	d.ms = ms_between(&t0, &t_end);
	debug("%s: JobId=%u %zu nodes in %.3f ms (engine %.3f ms): %s, "
	      "%zu groups (minimum %zu now)%s",
	      plugin_type, job_ptr->job_id, ncommitted, d.ms,
	      pl.decision_s * 1e3, pl.explain ? pl.explain : "",
	      pl.span[TP_SPAN_GROUPS], pl.min_span_free[TP_SPAN_GROUPS],
	      rc == SLURM_SUCCESS ? "" : "; Slurm's accounting refused it");
	debug2("%s: JobId=%u time split (ms): confirm %.3f, cores %.3f, "
	       "state %.3f, placement %.3f, commit %.3f",
	       plugin_type, job_ptr->job_id, ms_between(&t0, &t_conf),
	       ms_between(&t_conf, &t_cores), ms_between(&t_cores, &t_map),
	       ms_between(&t_map, &t_place), ms_between(&t_place, &t_end));
	if (rc == SLURM_SUCCESS) {
		d.job_id = job_ptr->job_id;
		d.npicks = ncommitted;
		d.picks = xcalloc(ncommitted + 1, sizeof(pick_t));
		memcpy(d.picks, picks, ncommitted * sizeof(pick_t));
		d.pl = pl; /* the record's ring, GPUs, spans and reason */
		memset(&pl, 0, sizeof(pl));
		d.req = r;
		d.when = time(NULL);
		decision_keep(&d);
	}
	goto out;

tree:
	/* nothing of topo_eval changed yet but the cores Slurm itself
	 * selected, which eval_nodes_tree selects again */
	debug("%s: %pJ: %s: topology/tree's selection", plugin_type, job_ptr,
	      why);
	tp_placement_free(&pl);
	slurm_mutex_unlock(&state_lock);
	return eval_nodes_tree(topo_eval);
out:
	tp_placement_free(&pl);
	slurm_mutex_unlock(&state_lock);
	return rc;
}

/*
 * Selection=tree: every job goes to Slurm's eval_nodes_tree on the same
 * table, timed over the same span as eval_nodes_topoplace (from the hook's
 * entry, state_lock and the decisions' confirmation included, to the end
 * of Slurm's commit of cores and GPUs) and logged in the same shape, so
 * the debug log compares the two decision times directly. Nothing is
 * recorded.
 */
static int eval_nodes_tree_timed(topology_eval_t *topo_eval)
{
	job_record_t *job_ptr = topo_eval->job_ptr;
	struct timespec t0;
	double ms;
	int rc, nleaves = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	slurm_mutex_lock(&state_lock);
	decisions_confirm(false);
	slurm_mutex_unlock(&state_lock);
	rc = eval_nodes_tree(topo_eval);
	ms = ms_since(&t0);
	if (rc != SLURM_SUCCESS) {
		debug("%s: %pJ: does not fit the free nodes now (%.3f ms) "
		      "(tree)", plugin_type, job_ptr, ms);
		return rc;
	}
	/* counted after the clock stopped */
	for (int i = 0; i < switch_record_cnt; i++)
		if (switch_record_table[i].level == 0 &&
		    bit_overlap_any(switch_record_table[i].node_bitmap,
				    topo_eval->node_map))
			nleaves++;
	debug("%s: JobId=%u %d nodes in %.3f ms (tree): Slurm's topology/tree "
	      "selection, %d leaf switches",
	      plugin_type, job_ptr->job_id, bit_set_count(topo_eval->node_map),
	      ms, nleaves);
	return rc;
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
	 * in MEMORY_LEAK_DEBUG builds, after job_fini freed the jobs */
	pending_clear();
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
	select_tree = engine_on && tp_pconf_select_tree(&pconf);
	if (engine_on)
		build_from_tree();
	else
		build_flat();
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

extern int topology_p_whole_topo(bitstr_t *node_mask)
{
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
	safe_xcalloc(ti->topo_array, ti->record_count + 1,
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
