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
/* The selection's working set, allocated with host_of: the free state
 * (reset, not rebuilt, per call) and scratch arrays. */
tp_state_t *sel_state;
uint32_t *busy_hosts;
int *busy_gpus;
uint16_t *avail_cpus_buf;
int avail_cpus_cnt;
pick_t *picks_buf;
/* The policy's parameters (PriceBudget) and the link state generation
 * sel_state last took from ls_pub. */
tp_policy_params_t sel_params;
uint64_t sel_gen;
bool sel_links_plain; /* every link healthy and idle: no pricing */

/* The selection's working set (build_from_tree); the state refers to the
 * fabric. */
void selection_free(void)
{
	links_stop();
	running_clear();
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

/* What a selection cost the thread, beside its wall time: its CPU time
 * and how often it gave up the CPU (voluntary: a lock or a system call
 * waited; involuntary: preempted). On a loaded machine a slow decision
 * is work or a preempted thread; these tell which. */
typedef struct sel_clock {
	struct timespec cpu;
	long nvcsw, nivcsw;
} sel_clock_t;

static void sel_clock_start(sel_clock_t *c)
{
	struct rusage ru;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c->cpu);
	if (getrusage(RUSAGE_THREAD, &ru))
		memset(&ru, 0, sizeof(ru));
	c->nvcsw = ru.ru_nvcsw;
	c->nivcsw = ru.ru_nivcsw;
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
						? topo_eval->avail_res_array[i]
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
	tp_state_t *s = NULL;
	tp_request_t r = {0};
	decision_t d = {0};
	struct timespec t0, t_conf, t_cores, t_map, t_place, t_end;
	sel_clock_t clk;
	long nvcsw, nivcsw;
	double cpu_ms;
	const char *why;
	tp_err_t err;
	node_record_t *node_ptr;
	bool gres_per_job;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	sel_clock_start(&clk);
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

	if (!(s = map_state(topo_eval, avail_cpus, per_node || per_job))) {
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
	cpu_ms = sel_clock_stop(&clk, &nvcsw, &nivcsw);
	d.ms = ms_between(&t0, &t_end);
	/* the whole selection's thread CPU time and switches beside its
	 * wall time (bench_slurm24_decision.sh compares both with
	 * Selection=tree's), then the engine's own share and the split */
	debug("%s: JobId=%u %zu nodes in %.3f ms (engine %.3f ms, cpu %.3f "
	      "ms; thread cpu %.3f ms, switches %ld+%ld; confirm %.3f, cores "
	      "%.3f, state %.3f, placement %.3f, commit %.3f ms): %s, %zu "
	      "groups (minimum %zu now)%s",
	      plugin_type, job_ptr->job_id, ncommitted, d.ms,
	      pl.decision_s * 1e3, pl.decision_cpu_s * 1e3, cpu_ms, nvcsw,
	      nivcsw, ms_between(&t0, &t_conf), ms_between(&t_conf, &t_cores),
	      ms_between(&t_cores, &t_map), ms_between(&t_map, &t_place),
	      ms_between(&t_place, &t_end), pl.explain ? pl.explain : "",
	      pl.span[TP_SPAN_GROUPS], pl.min_span_free[TP_SPAN_GROUPS],
	      rc == SLURM_SUCCESS ? "" : "; Slurm's accounting refused it");
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
int eval_nodes_tree_timed(topology_eval_t *topo_eval)
{
	job_record_t *job_ptr = topo_eval->job_ptr;
	struct timespec t0, t_conf;
	sel_clock_t clk;
	long nvcsw, nivcsw;
	double ms, cpu_ms;
	int rc, nleaves = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	sel_clock_start(&clk);
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
