/*
 * A Slurm step's ranks and environment from its plan (tp_runtime.h).
 *
 * Notes:
 * - This was the body of the SPANK plugin's step start; it moved here so
 *   that the values are unit-tested and the collective library's
 *   bootstrap computes the same ranks. The names, values and the order
 *   of the pairs are the plugin's (tests/integration/slurm_spank.sh
 *   checks them on a real cluster).
 * - Hosts are few per step: a linear match of names keeps it simple.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_int.h"

/* One pass over s; counts written when not NULL. */
static tp_err_t tasks_scan(const char *s, uint32_t *counts, size_t n)
{
	size_t i = 0;

	while (*s) {
		char *end;
		unsigned long c, rep = 1;

		/* digits only: strtoul would also skip white space (a line
		 * break the plugin's error line prints) and take a sign */
		if (!isdigit((unsigned char)*s))
			return TP_ERR_PARSE;
		c = strtoul(s, &end, 10);
		s = end;
		if (s[0] == '(' && s[1] == 'x') {
			if (!isdigit((unsigned char)s[2]))
				return TP_ERR_PARSE;
			rep = strtoul(s + 2, &end, 10);
			if (*end != ')' || !rep)
				return TP_ERR_PARSE;
			s = end + 1;
		}
		if (rep > n - i || c > UINT32_MAX)
			return TP_ERR_PARSE;
		for (; rep; rep--, i++)
			if (counts)
				counts[i] = (uint32_t)c;
		if (*s == ',') {
			/* Slurm writes none at the end: "2,2," is damaged */
			if (!*++s)
				return TP_ERR_PARSE;
		} else if (*s) {
			return TP_ERR_PARSE;
		}
	}
	return i == n ? TP_OK : TP_ERR_PARSE;
}

tp_err_t tp_step_tasks_parse(const char *s, uint32_t *counts, size_t n)
{
	tp_err_t err;

	if (!s || !counts)
		return TP_ERR_INVAL;
	/* checked first, so counts is written only on success */
	if ((err = tasks_scan(s, NULL, n)))
		return err;
	return tasks_scan(s, counts, n);
}

tp_err_t tp_step_tasks_check(const char *const *hosts, const uint32_t *tasks,
			     size_t n, char **err_p)
{
	if (!hosts || !tasks)
		return tp_fail(err_p, TP_ERR_INVAL, "bad step arguments");
	for (size_t i = 0; i < n; i++)
		if (tasks[i] > TP_PLAN_MAX_HOST_RANKS)
			return tp_fail(
			    err_p, TP_ERR_RANGE,
			    "%u tasks on %s, more than a plan's %d a "
			    "host: no plan for it",
			    tasks[i], hosts[i] ? hosts[i] : "?",
			    TP_PLAN_MAX_HOST_RANKS);
	return TP_OK;
}

tp_err_t tp_plan_build_step(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
			    const tp_state_t *state, const char *const *hosts,
			    size_t n, const uint32_t *tasks, bool nics_by_rate,
			    tp_plan_t **plan_p, char **err_p)
{
	tp_plan_opts_t opts;

	tp_plan_opts_defaults(&opts);
	opts.nics_by_rate = nics_by_rate;
	opts.predict = ctx != NULL;
	opts.state = state;
	if (tasks && n)
		opts.ranks = tasks;
	return tp_plan_build(f, ctx, hosts, n, &opts, plan_p, err_p);
}

static void put(tp_step_env_t *e, const char *name, char *value)
{
	if (value)
		e->vars[e->nvars++] = (tp_step_var_t){name, value};
}

/* Does another host of the plan than ph have an HCA on rail r? */
static bool rail_shared(const tp_plan_t *plan, const tp_plan_host_t *ph, int r)
{
	for (size_t i = 0; i < tp_plan_nhosts(plan); i++) {
		const tp_plan_host_t *o = tp_plan_host(plan, i);
		if (o != ph && o->hcas[r])
			return true;
	}
	return false;
}

/* Append dev (the fabric's name), by its local name when there is a
 * map, to the list in sb; *missing_p counts those the map lacks. */
static void hca_put(tp_strbuf_t *sb, const char *dev, const tp_hca_map_t *map,
		    uint32_t *missing_p)
{
	if (map && !(dev = tp_hca_map_local(map, dev)))
		(*missing_p)++;
	/* a name that would break the list (a fabric's CA named "HCA-1:x"
	 * reads as device HCA-1, port x) is left out */
	if (dev && tp_hca_name_ok(dev))
		tp_strbuf_printf(sb, "%s%s", sb->len ? "," : "=", dev);
}

/* "=dev,dev": this host's HCAs in rail order (every one of a rail: a
 * subnet may have several of the host's), by their local names when
 * there is a map; NULL when none (or NOMEM, which *nomem_p tells apart).
 * With subnets for rails, only those of subnets another host of the plan
 * is on (one host: all). *unmapped_p: the plan names HCAs, the map has
 * none of them; *missing_p: how many it names the map lacks. */
static char *hca_list(const tp_plan_t *plan, const tp_plan_host_t *ph,
		      bool subnets, const tp_hca_map_t *map, bool *nomem_p,
		      bool *unmapped_p, uint32_t *missing_p)
{
	tp_strbuf_t sb = {0};
	bool named = false;

	*missing_p = 0;

	for (int r = 0; r < tp_plan_nrails(plan); r++) {
		const char *dev = ph->hcas[r];
		if (dev && subnets && tp_plan_nhosts(plan) > 1 &&
		    !rail_shared(plan, ph, r))
			continue;

		if (dev) {
			named = true;
			hca_put(&sb, dev, map, missing_p);
			for (uint32_t i = 0; i < ph->nmore_hcas; i++)
				if (ph->more_hcas[i].rail == r)
					hca_put(&sb, ph->more_hcas[i].dev, map,
						missing_p);
		} else if (map && !(subnets && tp_plan_nhosts(plan) > 1)) {
			/* a CA the fabric names by GUID alone (guid_map);
			 * with subnets for rails, whether another host
			 * reaches its rail is not known: left out */
			bool has;
			dev = tp_hca_map_local_rail(map, r, &has);
			named |= has;
			hca_put(&sb, dev, NULL, missing_p);
		}
	}
	*nomem_p = sb.failed;
	*unmapped_p = map && named && !sb.failed && !sb.len;
	if (sb.failed || !sb.len) {
		tp_free(sb.buf);
		return NULL;
	}
	return sb.buf;
}

/* "fabric=local,...": the HCA names this host has in the plan (its
 * ranks' and all its HCAs, which a task on another GPU than
 * its local rank's may drive: TOPOPLACE_COLL_HCA) whose local device,
 * found by GUID, is named otherwise, for libtopoplace-coll to bind each
 * rank to its own HCA (TOPOPLACE_COLL_HCA_NAMES); NULL when none
 * differs (or NOMEM, which *nomem_p tells apart). The plan file itself
 * cannot carry them: every rank checks it is the same plan. */
static char *hca_names(const tp_plan_host_t *ph, int nrails,
		       const tp_hca_map_t *map, bool *nomem_p)
{
	tp_strbuf_t sb = {0};
	size_t n = tp__plan_host_nhca(ph, nrails);

	for (size_t l = 0; map && l < n; l++) {
		const char *fab = tp__plan_host_hca(ph, nrails, l);
		const char *loc = fab ? tp_hca_map_local(map, fab) : NULL;
		bool seen = false;
		if (!loc || !strcmp(loc, fab) || !tp_hca_name_ok(fab) ||
		    !tp_hca_name_ok(loc))
			continue;
		for (size_t k = 0; k < l && !seen; k++) {
			const char *o = tp__plan_host_hca(ph, nrails, k);
			seen = o && !strcmp(o, fab);
		}
		if (!seen)
			tp_strbuf_printf(&sb, "%s%s=%s", sb.len ? "," : "", fab,
					 loc);
	}
	*nomem_p = sb.failed;
	if (sb.failed || !sb.len) {
		tp_free(sb.buf);
		return NULL;
	}
	return sb.buf;
}

static tp_err_t fill_vars(const tp_plan_t *plan, const tp_step_in_t *in,
			  const tp_plan_host_t *ph, tp_step_env_t *e)
{
	bool subnets = in->fabric_subnets > 1;
	const char *cross = in->fabric_rails > 1 || subnets ? "0"
			    : tp_plan_nrails(plan) > 1	    ? "1"
							    : NULL;
	char *v[TP_STEP_ENV_MAX] = {NULL};
	bool nomem = false, unmapped = false, nomem2 = false;
	const char *topo = in->topo_file;

	v[0] = tp_strdup(in->plan_path);
	v[1] = tp_asprintf("%u", ph->node_rank);
	v[2] = tp_asprintf("%llu", (unsigned long long)e->world);
	v[3] = hca_list(plan, ph, subnets, in->hca_map, &nomem, &unmapped,
			&e->hcas_missing);
	if (unmapped)
		topo = NULL;
	v[4] = cross ? tp_strdup(cross) : NULL;
	v[5] = topo ? tp_strdup(topo) : NULL;
	v[6] = hca_names(ph, tp_plan_nrails(plan), in->hca_map, &nomem2);
	if (!v[0] || !v[1] || !v[2] || nomem || nomem2 || (cross && !v[4]) ||
	    (topo && !v[5])) {
		for (int i = 0; i < TP_STEP_ENV_MAX; i++)
			tp_free(v[i]);
		return TP_ERR_NOMEM;
	}
	put(e, "TOPOPLACE_PLAN", v[0]);
	put(e, "TOPOPLACE_NODE_RANK", v[1]);
	put(e, "TOPOPLACE_WORLD_SIZE", v[2]);
	put(e, "NCCL_IB_HCA", v[3]);
	put(e, "NCCL_CROSS_NIC", v[4]);
	put(e, "NCCL_TOPO_FILE", v[5]);
	put(e, "TOPOPLACE_COLL_HCA_NAMES", v[6]);
	e->hcas_unmapped = unmapped;
	return TP_OK;
}

tp_err_t tp_plan_step_env(const tp_plan_t *plan, const tp_step_in_t *in,
			  tp_step_env_t *env_p, char **err_p)
{
	tp_step_env_t e;
	const tp_plan_host_t *ph;
	const char *me;
	tp_err_t err;

	if (!plan || !in || !env_p || !in->hosts || !in->tasks || !in->n ||
	    in->node_id >= in->n || !in->hosts[in->node_id] || !in->plan_path)
		return tp_fail(err_p, TP_ERR_INVAL, "bad step arguments");
	for (size_t i = 0; i < in->n; i++)
		if (!in->hosts[i])
			return tp_fail(err_p, TP_ERR_INVAL,
				       "bad step arguments");
	memset(&e, 0, sizeof(e));
	me = in->hosts[in->node_id];
	/* before the counts: a host outside the plan drops its tasks from
	 * the sum, which would read as a task-count problem */
	size_t np = tp_plan_nhosts(plan);
	uint32_t mine = tp_plan_rank_of(plan, me);
	if (!(ph = tp_plan_host(plan, mine)))
		return tp_fail(err_p, TP_ERR_NOTFOUND, "%s not in its own plan",
			       me);
	/* each plan host's tasks, by node rank (a hash lookup a step host:
	 * 16,384 hosts are no slower than a few), then the tasks of the
	 * hosts before this one in the ring */
	uint64_t *by_rank = tp_calloc(np + 1, sizeof(uint64_t));
	const char *stray = NULL;
	if (!by_rank)
		return tp_fail(err_p, TP_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < in->n; i++) {
		uint32_t r = tp_plan_rank_of(plan, in->hosts[i]);
		if (r < np) /* +1: a host of no tasks still counts as met */
			by_rank[r] += (uint64_t)in->tasks[i] + 1;
		else if (!stray)
			stray = in->hosts[i];
	}
	for (size_t r = 0; r < np; r++) {
		if (!by_rank[r]) {
			tp_free(by_rank);
			return tp_fail(err_p, TP_ERR_NOTFOUND,
				       "plan host %s not in step",
				       tp_plan_host(plan, r)->name);
		}
		if (r == mine)
			e.rank_base = (uint32_t)e.world; /* checked below */
		e.world += by_rank[r] - 1;
	}
	tp_free(by_rank);
	if (stray)
		return tp_fail(err_p, TP_ERR_NOTFOUND,
			       "step host %s not in the plan", stray);
	if (e.world != in->ntasks)
		return tp_fail(err_p, TP_ERR_RANGE,
			       "tasks per node give %llu tasks, the step has "
			       "%llu",
			       (unsigned long long)e.world,
			       (unsigned long long)in->ntasks);
	/* ranks are uint32_t (TOPOPLACE_RANK, the plan's): past that the
	 * hosts' rank bases would wrap onto each other */
	if (e.world > UINT32_MAX)
		return tp_fail(
		    err_p, TP_ERR_RANGE, "%llu tasks: more than %lu ranks",
		    (unsigned long long)e.world, (unsigned long)UINT32_MAX);
	e.node_rank = ph->node_rank;
	if ((err = fill_vars(plan, in, ph, &e)))
		return tp_fail(err_p, err, "out of memory");
	*env_p = e;
	return TP_OK;
}

void tp_step_env_free(tp_step_env_t *env)
{
	if (!env)
		return;
	for (size_t i = 0; i < env->nvars; i++)
		tp_free(env->vars[i].value);
	memset(env, 0, sizeof(*env));
}

const char *tp_step_env_get(const tp_step_env_t *env, const char *name)
{
	for (size_t i = 0; env && name && i < env->nvars; i++)
		if (!strcmp(env->vars[i].name, name))
			return env->vars[i].value;
	return NULL;
}

uint32_t tp_step_task_rank(const tp_step_env_t *env, uint32_t local)
{
	return env ? env->rank_base + local : local;
}
