/*
 * topoplace24_select.c - the selection: topology_p_eval_nodes' hook, which
 * maps Slurm's free state onto the engine's, lets tp_place_choose pick the
 * hosts and commits them through Slurm's helpers (see the adapter's
 * Notes), or hands the job to eval_nodes_tree.
 */
#include "topoplace24_int.h"

#include <sys/resource.h> /* RUSAGE_THREAD: _GNU_SOURCE, set there */

/* tp_state_alloc's job id for everything Slurm already gave away. */
#define BUSY_JOB UINT64_C(0xffffffffffff)

uint32_t *host_of; /* node index -> fabric host (TP_ID_NONE) */
int host_of_cnt;
int *node_of; /* fabric host -> node index (-1) */
size_t gpuless_hosts;
int *slurm_gpus;
static bool gpus_told; /* a node with fewer GPUs in Slurm than the fabric's */
/* The selection's working set, allocated with host_of: the free state
 * (reset, not rebuilt, per call) and scratch arrays. */
tp_state_t *sel_state;
tp_place_ws_t *sel_ws; /* the decisions' buffers (NULL: one per decision) */
uint32_t *busy_hosts;
int *busy_gpus;
uint16_t *avail_cpus_buf;
int avail_cpus_cnt;
pick_t *picks_buf;
/* The policy's parameters (PriceBudget) and the link state generation
 * sel_state last took from ls_pub. */
tp_policy_params_t sel_params;
uint64_t sel_gen;

/* The selection's working set (build_from_tree); the state refers to the
 * fabric. */
static void memo_free(void);

void selection_free(void)
{
	memo_free();
	links_stop();
	running_clear();
	tp_state_destroy(sel_state);
	sel_state = NULL;
	tp_place_ws_destroy(sel_ws);
	sel_ws = NULL;
	sel_gen = 0;
	xfree(host_of);
	host_of_cnt = 0;
	gpuless_hosts = 0;
	xfree(slurm_gpus);
	gpus_told = false;
	xfree(node_of);
	xfree(busy_hosts);
	xfree(busy_gpus);
	xfree(avail_cpus_buf);
	avail_cpus_cnt = 0;
	xfree(picks_buf);
}

/* What a selection cost the thread, beside its wall time: its CPU time
 * and how often it gave up the CPU (voluntary: a lock or a system call
 * waited; involuntary: preempted). On a loaded machine a slow decision
 * is work or a preempted thread; these tell which. Both are system calls
 * (4-6 us each on the bench VM, against 0.1 us for the monotonic clock):
 * started before the wall clock and stopped after it, so the wall span
 * holds none of them and the CPU span none of getrusage's. */
typedef struct sel_clock {
	struct timespec cpu;
	long nvcsw, nivcsw;
} sel_clock_t;

static void sel_clock_start(sel_clock_t *c)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		memset(&ru, 0, sizeof(ru));
	c->nvcsw = ru.ru_nvcsw;
	c->nivcsw = ru.ru_nivcsw;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c->cpu);
}

/* Since sel_clock_start: the CPU time in ms, the switches in *nvcsw_p
 * and *nivcsw_p. */
static double sel_clock_stop(const sel_clock_t *c, long *nvcsw_p,
			     long *nivcsw_p)
{
	struct timespec cpu;
	struct rusage ru;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	if (getrusage(RUSAGE_THREAD, &ru))
		memset(&ru, 0, sizeof(ru));
	*nvcsw_p = ru.ru_nvcsw - c->nvcsw;
	*nivcsw_p = ru.ru_nivcsw - c->nivcsw;
	return ms_between(&c->cpu, &cpu);
}

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

/*
 * The free state and the memo.
 *
 * What Slurm offers a job, per fabric host, is its host key: HOST_DOWN or
 * the GPUs Slurm gave away on an up host (host_key). map_state() rebuilds
 * sel_state from a key only when sel_state holds another (a reset: the
 * previous key's busy GPUs released, every mapped host's up/down set);
 * the last KEYS distinct keys keep a serial each, so the jobs of one
 * scheduling pass, which see different free states (GPUs per node, CPUs,
 * partitions), find theirs again.
 *
 * slurmctld evaluates a pending job many times while nothing changes
 * (submit, each scheduling pass, backfill). The memo keeps the engine's
 * last MEMO_SLOTS answers (hosts, or "does not fit now") by key serial,
 * link generation (sel_gen, which moves with LinkState and with every
 * running job's traffic) and request (every member of tp_request_t); the
 * engine's other inputs (policy, sel_params, cost_ctx, seed) change only
 * with build_config, which empties it. The engine is deterministic (fixed
 * seed, ties broken on an index; test_choose_repeat_copy), so a kept
 * answer is the one it would give. At debug2 each memo answer is checked
 * against the engine (a difference is logged as an error).
 * TOPOPLACE_SELECTION_MEMO=0 in slurmctld's environment turns the memo
 * off (bench_slurm24_decision.sh compares both).
 */
#define HOST_DOWN  (-1)
#define KEYS	   4
#define MEMO_SLOTS 32

typedef struct host_key {
	int *v;		 /* per fabric host */
	uint64_t serial; /* 0: unused */
} host_key_t;

typedef struct memo {
	uint64_t serial, gen; /* serial 0: empty */
	tp_request_t r;
	tp_err_t err;	   /* TP_OK or TP_ERR_NOTFOUND */
	tp_placement_t pl; /* hosts, gpus and explain point into buf */
	char *buf;	   /* the slot's own, reused: the copy into fresh
			    * allocations (three, and three frees) took
			    * 3.8 us per decision in the decision bench */
	size_t cap;
} memo_t;

static int *key_now;	      /* this selection's host key */
static host_key_t keys[KEYS]; /* the last distinct ones */
static unsigned keys_next;
static uint64_t key_serial;   /* last serial handed out */
static uint64_t state_serial; /* the key sel_state holds; 0: none */
static memo_t memo[MEMO_SLOTS];
static unsigned memo_next;
static int memo_on = -1; /* -1: environment not read yet */

/* The working set above, allocated at the first selection after
 * build_config (selection_free() frees it with the rest). */
static void keys_alloc(void)
{
	size_t nh = tp_fabric_nhosts(fabric);
	const char *env;

	if (key_now)
		return;
	key_now = xcalloc(nh + 1, sizeof(int));
	for (int k = 0; k < KEYS; k++)
		keys[k].v = xcalloc(nh + 1, sizeof(int));
	if (memo_on < 0) {
		env = getenv("TOPOPLACE_SELECTION_MEMO");
		memo_on = !env || strcmp(env, "0");
		if (!memo_on)
			info("%s: TOPOPLACE_SELECTION_MEMO=0: no memo",
			     plugin_type);
	}
}

static void memo_free(void)
{
	for (int m = 0; m < MEMO_SLOTS; m++) {
		tp_free(memo[m].buf);
		memset(&memo[m], 0, sizeof(memo[m]));
	}
	memo_next = 0;
	xfree(key_now);
	for (int k = 0; k < KEYS; k++) {
		xfree(keys[k].v);
		keys[k].serial = 0;
	}
	keys_next = 0;
	state_serial = 0;
}

/*
 * Slurm allocates lighter nodes first (slurm.conf Weight): tree's
 * selection adds the offered nodes a weight at a time, lightest first,
 * until they are enough, and every node of the lighter weights goes into
 * the allocation. The engine can honour that when the lightest weight's
 * nodes hold the job's r->nodes nodes (or r->gpus of the GPUs Slurm
 * found): it is offered those alone, heavier ones left out as if given
 * away, and the lightest weight is returned. When the job needs heavier
 * nodes too, *tree_p: tree's selection, which puts the lighter ones in
 * first (the engine cannot be told to). UINT64_MAX: one weight, as on
 * most clusters.
 */
/* A node's weight as an admin set it (slurm.conf Weight, and the boot or
 * flex-reservation flags Slurm ranks above it): sched_weight without its
 * low byte, which cons_tres rewrites for each job as 0xff less the GPUs
 * near the CPUs it found there (job_test.c, "favor nodes with more
 * co-located GPUs"). Compared whole, a node with some GPUs in use read
 * as heavier than an idle one: the engine was offered the idle nodes
 * alone, or handed the job to tree's selection ("needs nodes heavier than
 * the lightest") with no Weight set anywhere. */
static uint64_t admin_weight(const node_record_t *node_ptr)
{
	return node_ptr->sched_weight & ~(uint64_t)0xff;
}

static uint64_t weight_cutoff(topology_eval_t *topo_eval,
			      const uint16_t *avail_cpus, const tp_request_t *r,
			      bool *tree_p)
{
	node_record_t *node_ptr;
	uint64_t lo = UINT64_MAX, hi = 0, got = 0;
	uint64_t need = r->nodes > 0 ? (uint64_t)r->nodes : (uint64_t)r->gpus;

	*tree_p = false;
	for (int i = 0; (node_ptr = next_node_bitmap(topo_eval->node_map, &i));
	     i++) {
		if (!avail_cpus[i])
			continue;
		lo = MIN(lo, admin_weight(node_ptr));
		hi = MAX(hi, admin_weight(node_ptr));
	}
	if (lo >= hi || !need)
		return UINT64_MAX;
	for (int i = 0; (node_ptr = next_node_bitmap(topo_eval->node_map, &i));
	     i++) {
		if (!avail_cpus[i] || admin_weight(node_ptr) != lo)
			continue;
		got += r->nodes > 0 ? 1
		       : topo_eval->avail_res_array[i]
			   ? topo_eval->avail_res_array[i]->avail_gpus
			   : 0;
	}
	if (got >= need)
		return lo;
	*tree_p = true;
	return UINT64_MAX;
}

/* The GPUs Slurm has on node i (its gres gpu count, asked once per
 * configuration; 0 while Slurm does not know it yet: asked again). */
static int node_gpus(int i, node_record_t *node_ptr)
{
	if (!slurm_gpus || i >= host_of_cnt)
		return 0;
	if (slurm_gpus[i] <= 0) {
		uint64_t n = gres_node_config_cnt(node_ptr->gres_list, "gpu");
		slurm_gpus[i] = n > INT_MAX ? INT_MAX : (int)n;
	}
	return slurm_gpus[i];
}

/* Slurm's free state for this job as a host key in key_now: hosts not in
 * node_map are down (or busy when Slurm gave them away); hosts in it
 * offer the GPUs Slurm found for the job (all, for jobs without GPUs),
 * unless Slurm found no CPUs there or they weigh more than max_weight
 * (busy then). A host whose fabric lists more GPUs than Slurm has (GPUs
 * an admin keeps out of Slurm) is idle, all its GPUs free, while Slurm
 * finds all of its own free there: counted busy, the ones Slurm lacks
 * would make it look in use for ever, and an exclusive job never fit
 * (*short_p: Slurm offers such a host). Returns the key's serial. */
static uint64_t host_key(topology_eval_t *topo_eval, const uint16_t *avail_cpus,
			 bool want_gpus, uint64_t max_weight, bool *short_p)
{
	size_t nh = tp_fabric_nhosts(fabric);
	host_key_t *k;

	*short_p = false;
	for (size_t h = 0; h < nh; h++)
		key_now[h] = HOST_DOWN;
	for (int i = 0; i < host_of_cnt && i < node_record_count; i++) {
		node_record_t *node_ptr = node_record_table_ptr[i];
		uint32_t h = host_of[i];
		int ngpus;

		if (h == TP_ID_NONE || h >= nh || !node_ptr)
			continue;
		ngpus = (int)tp_fabric_host(fabric, h)->ngpus;
		if (bit_test(topo_eval->node_map, i) && avail_cpus[i] &&
		    admin_weight(node_ptr) <= max_weight) {
			key_now[h] = 0;
			if (want_gpus) {
				int avail = topo_eval->avail_res_array[i]
						? topo_eval->avail_res_array[i]
						      ->avail_gpus
						: 0;
				int own = node_gpus(i, node_ptr);
				key_now[h] =
				    ngpus - (avail < ngpus ? avail : ngpus);
				if (own > 0 && own < ngpus) {
					*short_p = true;
					if (avail >= own)
						key_now[h] = 0;
					if (!gpus_told) {
						gpus_told = true;
						info("%s: node %s: %d GPUs in "
						     "Slurm, %d in the fabric: "
						     "the engine takes it for "
						     "idle when Slurm's are "
						     "free (said once)",
						     plugin_type,
						     node_ptr->name, own,
						     ngpus);
					}
				}
			}
		} else if (!IS_NODE_DOWN(node_ptr) &&
			   !IS_NODE_DRAIN(node_ptr) &&
			   !IS_NODE_FUTURE(node_ptr) &&
			   !IS_NODE_NO_RESPOND(node_ptr) &&
			   !IS_NODE_POWERED_DOWN(node_ptr) && ngpus > 0) {
			key_now[h] = ngpus; /* up, but given away */
		}
	}
	for (int j = 0; j < KEYS; j++)
		if (keys[j].serial &&
		    !memcmp(keys[j].v, key_now, nh * sizeof(int)))
			return keys[j].serial;
	k = &keys[keys_next];
	keys_next = (keys_next + 1) % KEYS;
	memcpy(k->v, key_now, nh * sizeof(int));
	k->serial = ++key_serial;
	return k->serial;
}

/* sel_state set to the host key in key_now (of the given serial), unless
 * it holds that key already. The state is the one of build_from_tree:
 * hosts without a node stay down. */
static tp_state_t *map_state(uint64_t serial)
{
	tp_state_t *s = sel_state;
	size_t nh = tp_fabric_nhosts(fabric), nbusy = 0;

	if (!s)
		return NULL;
	if (serial == state_serial)
		return s;
	(void)tp_state_release(s, BUSY_JOB); /* NOTFOUND: nothing was busy */
	for (size_t h = 0; h < nh; h++) {
		if (node_of[h] < 0)
			continue;
		tp_state_set_host_up(s, (uint32_t)h, key_now[h] != HOST_DOWN);
		if (key_now[h] > 0) {
			busy_hosts[nbusy] = (uint32_t)h;
			busy_gpus[nbusy++] = key_now[h];
		}
	}
	/* one call; should it fail, host by host, a host refusing left out */
	if (nbusy &&
	    tp_state_alloc(s, BUSY_JOB, busy_hosts, busy_gpus, nbusy) != TP_OK)
		for (size_t k = 0; k < nbusy; k++)
			if (tp_state_alloc(s, BUSY_JOB, &busy_hosts[k],
					   &busy_gpus[k], 1) != TP_OK)
				tp_state_set_host_up(s, busy_hosts[k], false);
	state_serial = serial;
	return s;
}

static bool same_request(const tp_request_t *a, const tp_request_t *b)
{
	return a->nodes == b->nodes && a->gpus_per_node == b->gpus_per_node &&
	       a->gpus == b->gpus && a->exclusive == b->exclusive &&
	       a->bytes == b->bytes;
}

/* What the engine decides (not how long it took). */
static bool same_answer(const tp_placement_t *a, const tp_placement_t *b)
{
	return a->nhosts == b->nhosts &&
	       !memcmp(a->hosts, b->hosts, a->nhosts * sizeof(uint32_t)) &&
	       !memcmp(a->gpus, b->gpus, a->nhosts * sizeof(int)) &&
	       !memcmp(a->span, b->span, sizeof(a->span)) &&
	       !memcmp(a->min_span_free, b->min_span_free,
		       sizeof(a->min_span_free)) &&
	       !memcmp(a->min_span_empty, b->min_span_empty,
		       sizeof(a->min_span_empty)) &&
	       !xstrcmp(a->explain, b->explain);
}

static memo_t *memo_find(uint64_t serial, const tp_request_t *r)
{
	for (int m = 0; m < MEMO_SLOTS; m++)
		if (memo[m].serial == serial && memo[m].gen == sel_gen &&
		    same_request(&memo[m].r, r))
			return &memo[m];
	return NULL;
}

static void memo_keep(uint64_t serial, const tp_request_t *r, tp_err_t err,
		      const tp_placement_t *pl)
{
	memo_t *m = &memo[memo_next];
	size_t n = err == TP_OK ? pl->nhosts : 0;
	size_t ne = err == TP_OK && pl->explain ? strlen(pl->explain) + 1 : 0;
	size_t at = n * sizeof(uint32_t), need = at + n * sizeof(int) + ne;

	memo_next = (memo_next + 1) % MEMO_SLOTS;
	m->serial = 0;
	memset(&m->pl, 0, sizeof(m->pl));
	if (need > m->cap) {
		/* room for the whole fabric and a long explanation: grown
		 * once, not at every decision */
		size_t cap = tp_fabric_nhosts(fabric) *
				 (sizeof(uint32_t) + sizeof(int)) +
			     1024;
		char *b = tp_realloc(m->buf, cap > need ? cap : need);
		if (!b)
			return; /* out of memory: not kept */
		m->buf = b;
		m->cap = cap > need ? cap : need;
	}
	if (err == TP_OK) {
		m->pl = *pl;
		m->pl.hosts = (uint32_t *)m->buf;
		m->pl.gpus = (int *)(m->buf + at);
		m->pl.explain = ne ? m->buf + at + n * sizeof(int) : NULL;
		memcpy(m->pl.hosts, pl->hosts, n * sizeof(uint32_t));
		memcpy(m->pl.gpus, pl->gpus, n * sizeof(int));
		if (ne)
			memcpy(m->pl.explain, pl->explain, ne);
	}
	m->serial = serial;
	m->gen = sel_gen;
	m->r = *r;
	m->err = err;
}

/* The engine's answer for r on the free state of key `serial` (key_now)
 * and the links of sel_gen, or its memo copy (*hit_p; then decision_s is
 * the look-up's). TP_ERR_NOMEM without a state. */
static tp_err_t choose(uint32_t job_id, const tp_request_t *r, uint64_t serial,
		       tp_placement_t *pl, bool *hit_p)
{
	const tp_cost_ctx_t *ctx;
	struct timespec t0, t1;
	tp_placement_t chk = {0};
	memo_t *m;
	tp_err_t err, cerr;

	/* healthy, idle links priced too: there the structure alone picks
	 * other hosts than pricing in 7% of bench_place_budget's cases on
	 * its 8-host 2:1 tree, 1% slower on the mean */
	ctx = pconf.price_budget ? cost_ctx : NULL;
	*hit_p = false;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (memo_on > 0 && (m = memo_find(serial, r)) &&
	    (m->err != TP_OK || !tp_placement_copy(&m->pl, pl))) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		*hit_p = true;
		pl->decision_s = ms_between(&t0, &t1) / 1e3;
		if (get_log_level() < LOG_LEVEL_DEBUG2)
			return m->err;
		/* the self-check: the engine again on the same state */
		if (!map_state(serial))
			return m->err;
		cerr = tp_place_choose_ws(policy, sel_state, r, &sel_params,
					  ctx, 1, sel_ws, &chk);
		if (cerr != m->err || (cerr == TP_OK && !same_answer(pl, &chk)))
			error("%s: JobId=%u: memo check: the memo's answer "
			      "(%s, %zu hosts) differs from the engine's (%s, "
			      "%zu hosts)",
			      plugin_type, job_id, tp_strerror(m->err),
			      pl->nhosts, tp_strerror(cerr), chk.nhosts);
		else
			debug2("%s: JobId=%u: memo check: the engine's answer "
			       "is the memo's",
			       plugin_type, job_id);
		tp_placement_free(&chk);
		return m->err;
	}
	if (!map_state(serial))
		return TP_ERR_NOMEM;
	err = tp_place_choose_ws(policy, sel_state, r, &sel_params, ctx, 1,
				 sel_ws, pl);
	if (memo_on > 0 && (err == TP_OK || err == TP_ERR_NOTFOUND))
		memo_keep(serial, r, err, pl);
	return err;
}

/* Whether Slurm offers the job a node whose fabric host has no GPUs. The
 * engine counts a whole host in GPUs, so it never offers such a host to
 * a job asking none (a CPU job on a mixed cluster, a fabric discovered
 * without node data): it would answer "does not fit now" and the job
 * would wait for ever where tree's selection runs it. */
static bool offers_gpuless(const topology_eval_t *topo_eval)
{
	node_record_t *node_ptr;
	size_t nh = tp_fabric_nhosts(fabric);

	if (!gpuless_hosts)
		return false;
	for (int i = 0; (node_ptr = next_node_bitmap(topo_eval->node_map, &i));
	     i++) {
		uint32_t h = i < host_of_cnt ? host_of[i] : TP_ID_NONE;
		if (h < nh && !tp_fabric_host(fabric, h)->ngpus)
			return true;
	}
	return false;
}

static int cmp_pick(const void *a, const void *b)
{
	int x = ((const pick_t *)a)->node, y = ((const pick_t *)b)->node;

	return (x > y) - (x < y);
}

/* The engine's request for the job (whole-node counts from Slurm's
 * min/req/max nodes, its GPUs per node or per job), or why the engine
 * does not take it (NULL: *r is the request; per_node_p / per_job_p: its
 * GPUs, 0 when it asks none). */
static const char *job_request(topology_eval_t *topo_eval, uint32_t min_nodes,
			       uint32_t req_nodes, int rem_nodes,
			       tp_request_t *r, uint64_t *per_node_p,
			       uint64_t *per_job_p)
{
	job_record_t *job_ptr = topo_eval->job_ptr;
	const char *why = not_ours(topo_eval, (uint32_t)rem_nodes);
	uint64_t per_node = 0, per_job = 0;

	if (!why && !job_gpus(job_ptr, &per_node, &per_job))
		why = "GPUs per task or socket";
	if (!why && !per_node && !per_job && offers_gpuless(topo_eval))
		why = "no GPUs asked, nodes without GPUs in the fabric offered";
	if (!why && per_job) {
		why = tp_gpureq_split(per_job, per_node, min_nodes,
				      topo_eval->max_nodes, &r->nodes,
				      &r->gpus_per_node, &r->gpus);
	} else if (!why) {
		if (min_nodes != req_nodes && req_nodes != topo_eval->max_nodes)
			why = "node count range";
		r->nodes = rem_nodes;
		/* a clamped count would be another request (tp_gpureq_split
		 * refuses the same for --gpus) */
		if (per_node > INT32_MAX)
			why = "--gpus-per-node beyond the engine's count";
		else
			r->gpus_per_node = (int)per_node;
	}
	r->exclusive = job_ptr->details->whole_node & WHOLE_NODE_REQUIRED;
	*per_node_p = per_node;
	*per_job_p = per_job;
	return why;
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
int eval_nodes_topoplace(topology_eval_t *topo_eval)
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
	tp_request_t r = {0};
	uint64_t serial, max_weight;
	bool hit = false, short_gpus, weight_tree;
	decision_t d = {0};
	struct timespec t0, t_conf, t_cores, t_map, t_place, t_end;
	sel_clock_t clk;
	long nvcsw, nivcsw;
	double cpu_ms;
	const char *why;
	tp_err_t err;
	node_record_t *node_ptr;
	bool gres_per_job;
	bitstr_t **orig_cores = NULL;

	sel_clock_start(&clk);
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
	why = job_request(topo_eval, min_nodes, req_nodes, rem_nodes, &r,
			  &per_node, &per_job);
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
	 * build_config (scontrol create node) grow the table. With GRES,
	 * gres_filter_sock_core clears cores in avail_core (sockets not
	 * required, restricted cores): kept for the fall back to tree,
	 * which filters again (see tree: below). */
	if (job_ptr->gres_list_req)
		orig_cores = copy_core_array(topo_eval->avail_core);
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

	if (!sel_state) {
		why = "out of memory";
		goto tree;
	}
	keys_alloc();
	max_weight = weight_cutoff(topo_eval, avail_cpus, &r, &weight_tree);
	if (weight_tree) {
		why = "needs nodes heavier than the lightest (Weight)";
		goto tree;
	}
	serial = host_key(topo_eval, avail_cpus, per_node || per_job,
			  max_weight, &short_gpus);
	if (short_gpus && per_job) {
		/* the engine would split a job's GPUs by the fabric's
		 * counts, more on a host than Slurm has there */
		why = "--gpus on nodes with fewer GPUs in Slurm than the "
		      "fabric";
		goto tree;
	}
	links_take();
	clock_gettime(CLOCK_MONOTONIC, &t_map);
	err = choose(job_ptr->job_id, &r, serial, &pl, &hit);
	clock_gettime(CLOCK_MONOTONIC, &t_place);
	if (err == TP_ERR_NOTFOUND && r.nodes > (int)min_nodes) {
		/* a node range (-N2-4: Slurm asks for the most): fewer
		 * nodes may do, as tree's selection would take them */
		why = "node count range, its largest count not free now";
		goto tree;
	} else if (err == TP_ERR_NOTFOUND && max_weight != UINT64_MAX) {
		/* the lightest weight's nodes, enough in number, do not fit
		 * the job: tree's selection goes on to heavier ones */
		why = "not free now on the lightest nodes (Weight)";
		goto tree;
	} else if (err == TP_ERR_NOTFOUND && per_job) {
		/* -N2 --gpus=8 asked as 4 a node: Slurm takes any split
		 * with a GPU on each node (6 + 2), which tree's selection
		 * finds */
		why = "--gpus split evenly not free now";
		goto tree;
	} else if (err == TP_ERR_NOTFOUND) {
		debug("%s: %pJ: does not fit the free nodes now (%.3f ms%s)",
		      plugin_type, job_ptr, ms_since(&t0), hit ? ", memo" : "");
		rc = SLURM_ERROR;
		goto out;
	} else if (err) {
		why = tp_strerror(err);
		goto tree;
	}
	if (pl.nhosts < min_nodes || pl.nhosts > topo_eval->max_nodes) {
		/* a per-job GPU count (--gpus) on hosts outside -N's range */
		why = "the engine's node count outside the job's range";
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
		/* a dynamic node deleted and another created in its slot
		 * since build_config (scontrol delete/create node) */
		if (i >= node_record_count || !node_record_table_ptr[i] ||
		    xstrcmp(node_record_table_ptr[i]->name,
			    tp_fabric_host(fabric, h)->name)) {
			why = "a node record renamed since the configuration";
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
	cpu_ms = sel_clock_stop(&clk, &nvcsw, &nivcsw);
	d.ms = ms_between(&t0, &t_end);
	/* the whole selection's thread CPU time and switches beside its
	 * wall time (bench_slurm24_decision.sh compares both with
	 * Selection=tree's), then the engine's own share and the split */
	debug("%s: JobId=%u %zu nodes in %.3f ms (engine %.3f ms%s; thread cpu "
	      "%.3f ms, switches %ld+%ld; confirm %.3f, cores "
	      "%.3f, state %.3f, placement %.3f, commit %.3f ms): %s, %zu "
	      "groups (minimum %zu now)%s",
	      plugin_type, job_ptr->job_id, ncommitted, d.ms,
	      pl.decision_s * 1e3, hit ? ", memo" : "", cpu_ms, nvcsw, nivcsw,
	      ms_between(&t0, &t_conf), ms_between(&t_conf, &t_cores),
	      ms_between(&t_cores, &t_map), ms_between(&t_map, &t_place),
	      ms_between(&t_place, &t_end), pl.explain ? pl.explain : "",
	      pl.span[TP_SPAN_GROUPS], pl.min_span_free[TP_SPAN_GROUPS],
	      rc == SLURM_SUCCESS ? "" : "; Slurm's accounting refused it");
	if (rc == SLURM_SUCCESS) {
		d.job_id = job_ptr->job_id;
		d.array_job_id = job_ptr->array_job_id;
		d.array_task_id = job_ptr->array_task_id;
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
	/* Nothing of topo_eval changed yet but what eval_nodes_select_cores
	 * changed on every offered node, which eval_nodes_tree calls again:
	 * the cores it cleared are given back (filtering only clears bits),
	 * as common_topo_choose_nodes does with core_array_or before each
	 * retry of eval_nodes, since a second first-pass filter on the
	 * reduced cores may require other sockets or find too few. The
	 * per-socket GRES counts are restored by gres_filter_sock_core
	 * itself (total_cnt_before_filter); the rest it writes
	 * (avail_res_array's min_cpus, gres_max_tasks) each call rewrites. */
	if (orig_cores)
		core_array_or(topo_eval->avail_core, orig_cores);
	free_core_array(&orig_cores);
	debug("%s: %pJ: %s: topology/tree's selection", plugin_type, job_ptr,
	      why);
	tp_placement_free(&pl);
	slurm_mutex_unlock(&state_lock);
	return eval_nodes_tree(topo_eval);
out:
	free_core_array(&orig_cores);
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
int eval_nodes_tree_timed(topology_eval_t *topo_eval)
{
	job_record_t *job_ptr = topo_eval->job_ptr;
	struct timespec t0, t_conf;
	sel_clock_t clk;
	long nvcsw, nivcsw;
	double ms, cpu_ms;
	int rc, nleaves = 0;

	sel_clock_start(&clk);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	slurm_mutex_lock(&state_lock);
	decisions_confirm(false);
	slurm_mutex_unlock(&state_lock);
	clock_gettime(CLOCK_MONOTONIC, &t_conf);
	rc = eval_nodes_tree(topo_eval);
	ms = ms_since(&t0);
	cpu_ms = sel_clock_stop(&clk, &nvcsw, &nivcsw);
	if (rc != SLURM_SUCCESS) {
		debug("%s: %pJ: does not fit the free nodes now (%.3f ms) "
		      "(tree)",
		      plugin_type, job_ptr, ms);
		return rc;
	}
	/* counted after the clock stopped */
	for (int i = 0; i < switch_record_cnt; i++)
		if (switch_record_table[i].level == 0 &&
		    bit_overlap_any(switch_record_table[i].node_bitmap,
				    topo_eval->node_map))
			nleaves++;
	debug("%s: JobId=%u %d nodes in %.3f ms (tree; thread cpu %.3f ms, "
	      "switches %ld+%ld; confirm %.3f, tree %.3f ms): Slurm's "
	      "topology/tree selection, %d leaf switches",
	      plugin_type, job_ptr->job_id, bit_set_count(topo_eval->node_map),
	      ms, cpu_ms, nvcsw, nivcsw, ms_between(&t0, &t_conf),
	      ms - ms_between(&t0, &t_conf), nleaves);
	return rc;
}
