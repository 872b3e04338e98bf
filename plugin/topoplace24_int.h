/*
 * topoplace24_int.h - what the files of topology/topoplace for Slurm 24.11
 * share: the adapter (topology_topoplace24.c, whose Notes state every
 * lock and calling context), the switch table (topoplace24_switch.c),
 * the selection (topoplace24_select.c), the link state
 * (topoplace24_links.c) and the decision journal (topoplace24_journal.c).
 * Private to this plugin: everything here is hidden by the version script.
 */
#ifndef TOPOPLACE24_INT_H
#define TOPOPLACE24_INT_H

#define _GNU_SOURCE /* SCHED_BATCH (as Slurm's own sources do) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
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
#include "src/common/core_array.h"
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
	/* an array task's (0 and NO_VAL otherwise): the task started gets
	 * a job id of its own after selection (job_array_split), the
	 * selection saw the array's */
	uint32_t array_job_id, array_task_id;
	pick_t *picks; /* committed nodes, ascending node index */
	size_t npicks;
	tp_placement_t pl; /* the engine's answer: ring, GPUs, spans, reason */
	tp_request_t req;
	double ms; /* whole eval, engine and commit */
	time_t when;
	bool track; /* its traffic joins the background */
	bool ended; /* no decision: the job's traffic leaves */
} decision_t;

extern const char plugin_type[];

/* ---- the adapter (topology_topoplace24.c) ---- */

/* Orders our members between build_config / eval_nodes (under
 * slurmctld's own locks) and fini (outside them); topology_p_get takes
 * none, relying on the node read lock (see the Notes). */
extern pthread_mutex_t state_lock;
extern tp_pconf_t pconf;
extern tp_fabric_t *fabric;
extern tp_stree_t tree;
extern tp_cost_ctx_t *cost_ctx;
extern const tp_policy_t *policy;
extern bool engine_on; /* the table is the fabric's, hosts mapped */

double ms_between(const struct timespec *t0, const struct timespec *t1);
double ms_since(const struct timespec *t0);

/* ---- the switch table (topoplace24_switch.c) ---- */

void free_switch_table(void);
/* One switch holding every node: Slurm's own selection. */
void build_flat(void);
/* topology/tree's table from the fabric's tree, and the selection's
 * working set; false: out of memory, the flat table instead (the engine
 * must stay off). */
bool build_from_tree(void);

/* ---- the selection (topoplace24_select.c) ---- */

extern uint32_t *host_of; /* node index -> fabric host (TP_ID_NONE) */
extern int host_of_cnt;
extern int *node_of; /* fabric host -> node index (-1) */
extern size_t gpuless_hosts; /* mapped hosts without GPUs in the fabric */
extern int *slurm_gpus;	     /* per node index: Slurm's GPUs (-1: not known) */
extern tp_state_t *sel_state;
extern tp_place_ws_t *sel_ws;
extern uint32_t *busy_hosts;
extern int *busy_gpus;
extern uint16_t *avail_cpus_buf;
extern int avail_cpus_cnt;
extern pick_t *picks_buf;
extern tp_policy_params_t sel_params;
extern uint64_t sel_gen;

void selection_free(void);
int eval_nodes_topoplace(topology_eval_t *topo_eval);
int eval_nodes_tree_timed(topology_eval_t *topo_eval);

/* ---- the link state (topoplace24_links.c) ---- */

/* LinkState is looked at (one stat) this often: a change reaches the
 * selections within LINKS_LOOK_MS plus its parse. */
#define LINKS_LOOK_MS 250

/* Under wq_lock: the writer holds the link state (ls_on), and LinkState's
 * path, which it looks at every LINKS_LOOK_MS. */
extern bool ls_on;
extern char *ls_path;

void links_start(void);
void links_stop(void);
void links_tick(void);
/* true when a running job's traffic joined the background */
bool links_job(const decision_t *d);
void links_take(void);

/* ---- the decision journal (topoplace24_journal.c) ---- */

extern pthread_mutex_t wq_lock;
extern pthread_cond_t wq_idle;
extern bool wq_busy;
extern bool wq_running;
extern char *decisions_path;
extern tp_decision_journal_t journal;

void decisions_confirm(bool force);
void pending_clear(void);
void decision_keep(decision_t *d);
void running_clear(void);
void writer_start(void);
void writer_sync(void);
void writer_stop(void);

#endif /* TOPOPLACE24_INT_H */
