/*
 * What the placements in a trace of Slurm's records cost: each job's
 * hosts as Slurm recorded them, priced by the cost model against the
 * ideal set for its shape (tp_trace_price_job in tp_placement.h).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "placement_int.h"

const char *tp_trace_job_id(const tp_trace_t *t, size_t j)
{
	return t->strings && j < t->njobs && t->jobs[j].id_at
		   ? t->strings + t->jobs[j].id_at
		   : NULL;
}

const char *tp_trace_job_nodes(const tp_trace_t *t, size_t j)
{
	return t->strings && j < t->njobs && t->jobs[j].nodes_at
		   ? t->strings + t->jobs[j].nodes_at
		   : NULL;
}

tp_err_t tp_trace_job_hosts(const tp_fabric_t *f, const tp_trace_t *t, size_t j,
			    uint32_t **hosts_p, int **gpus_p, size_t *n_p,
			    char **err_p)
{
	const char *list = tp_trace_job_nodes(t, j);
	char **names = NULL, *msg = NULL;
	size_t n = 0, bad = 0;
	uint32_t *hv = NULL;
	int *gv = NULL;
	tp_err_t err;

	*hosts_p = NULL;
	*gpus_p = NULL;
	*n_p = 0;
	if (!f || j >= t->njobs)
		return TP_ERR_INVAL;
	if (!list) {
		err = TP_ERR_NOTFOUND;
		msg = tp_strdup("no node list recorded");
		goto out;
	}
	if ((err = tp_hostlist_expand(list, &names, &n))) {
		if (err != TP_ERR_NOMEM)
			msg = tp_asprintf("node list '%s': not a host list",
					  list);
		err = err == TP_ERR_NOMEM ? err : TP_ERR_PARSE;
		goto out;
	}
	hv = tp_calloc(n ? n : 1, sizeof(*hv));
	gv = tp_calloc(n ? n : 1, sizeof(*gv));
	if (!hv || !gv) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	err = tp_fabric_hosts_find(f, (const char *const *)names, n, hv, &bad);
	if (err == TP_ERR_NOTFOUND || err == TP_ERR_EXISTS) {
		msg = tp_asprintf("host %s %s", names[bad],
				  err == TP_ERR_NOTFOUND
				      ? "is not in the fabric"
				      : "listed twice in the node list");
		err = TP_ERR_NOTFOUND;
	}
	if (err)
		goto out;
	for (size_t i = 0; i < n; i++) {
		size_t have = tp_fabric_host(f, hv[i])->ngpus;
		int gpn = t->jobs[j].gpus_per_node;
		gv[i] = gpn > 0 ? gpn : (int)have;
		if ((size_t)gv[i] > have && have) {
			err = TP_ERR_RANGE;
			msg =
			    tp_asprintf("host %s has %zu GPUs, the job held %d",
					names[i], have, gv[i]);
			goto out;
		}
		if (gv[i] < 1)
			gv[i] = 1;
	}
	*hosts_p = hv;
	*gpus_p = gv;
	*n_p = n;
	hv = NULL;
	gv = NULL;
out:
	if (err && err_p)
		*err_p = tp_oneline(msg ? msg : tp_strdup(tp_strerror(err)));
	else
		tp_free(msg);
	tp_hostlist_free(names, n);
	tp_free(hv);
	tp_free(gv);
	return err;
}

/* Hosts hv/gv (n, in ring order) for request r priced on s into *out:
 * nhosts, gpus, the faster of ring and hierarchical (predicted_s, algo)
 * and the level-1 groups spanned and the fewest r needs (not ideal_s). */
static tp_err_t price_hosts(const tp_fabric_t *f, const tp_state_t *s,
			    const tp_cost_ctx_t *ctx, const tp_request_t *r,
			    const uint32_t *hv, const int *gv, size_t n,
			    tp_trace_price_t *out)
{
	size_t span[TP_SPAN_NLEVELS], smin[TP_SPAN_NLEVELS];
	tp_cost_t c;
	tp_err_t err;

	out->nhosts = n;
	out->gpus = 0;
	for (size_t i = 0; i < n; i++)
		out->gpus += (size_t)gv[i];
	if ((err = tp_cost_predict_best(ctx, s, hv, gv, n, tp_request_bytes(r),
					&out->algo, &c)))
		return err;
	out->predicted_s = c.seconds;
	tp_span_of(f, hv, n, span);
	tp_span_min(f, NULL, r, smin);
	out->groups = span[TP_SPAN_GROUPS];
	out->groups_min = smin[TP_SPAN_GROUPS];
	return TP_OK;
}

tp_err_t tp_trace_price_job(const tp_fabric_t *f, const tp_state_t *s,
			    const tp_cost_ctx_t *ctx,
			    const tp_policy_params_t *pp,
			    tp_ideal_cache_t *cache, const tp_trace_t *t,
			    size_t j, tp_trace_price_t *out, char **err_p)
{
	size_t n = 0;
	uint32_t *hv = NULL;
	int *gv = NULL;
	tp_request_t r;
	tp_err_t err;

	memset(out, 0, sizeof(*out));
	if (!f || !s || !ctx || j >= t->njobs)
		return TP_ERR_INVAL;
	if ((err = tp_trace_job_hosts(f, t, j, &hv, &gv, &n, err_p)))
		return err;
	/* the order a plan runs them in (host GPUs move with their host) */
	tp_ring_order(f, hv, gv, n);
	tp__job_request(&t->jobs[j], &r);
	if ((err = price_hosts(f, s, ctx, &r, hv, gv, n, out))) {
		if (err_p && err != TP_ERR_NOMEM)
			*err_p = tp_asprintf(
			    err == TP_ERR_NOTFOUND
				? "no route between its hosts in the fabric"
				: "its hosts cannot be priced: %s",
			    tp_strerror(err));
	} else if ((err =
			tp_place_ideal(f, &r, pp, ctx, cache, &out->ideal_s))) {
		if (err_p && err != TP_ERR_NOMEM)
			*err_p = tp_asprintf("no %zu connected hosts for its "
					     "shape in the fabric (%s)",
					     n, tp_strerror(err));
	}
	if (err && err_p && !*err_p)
		*err_p = tp_strdup(tp_strerror(err));
	tp_free(hv);
	tp_free(gv);
	return err;
}

/* The sweep's state: the jobs that run hold their GPUs in st and load
 * their links in tr; base is the caller's state (link health). */
typedef struct sweep {
	const tp_fabric_t *f;
	const tp_state_t *base;
	const tp_cost_ctx_t *ctx;
	const tp_policy_params_t *pp;
	tp_ideal_cache_t *cache;
	const tp_policy_t *policy;
	const tp_trace_t *t;
	tp_state_t *st;
	tp_traffic_t *tr;
	tp_place_ws_t *ws; /* the policy's decisions' buffers */
} sweep_t;

static void unpriced(tp_trace_price_t *p)
{
	memset(p, 0, sizeof(*p));
	p->predicted_s = NAN;
}

/* Job j starts on hosts hv/gv (n, record order): Slurm's hosts and the
 * policy's pick priced on the state as it is now, then j's GPUs held and
 * its traffic added at the duty its price gives. */
static tp_err_t sweep_start(sweep_t *w, size_t j, uint32_t *hv, int *gv,
			    size_t n, tp_trace_price_t *slurm,
			    tp_trace_price_t *alt)
{
	const tp_job_spec_t *js = &w->t->jobs[j];
	tp_trace_price_t own, *p = slurm ? slurm : &own;
	tp_request_t r;
	tp_algo_t algo = TP_ALGO_RING;
	double x = 1;
	bool routed = false;
	tp_err_t err;

	tp__job_request(js, &r);
	tp_ring_order(w->f, hv, gv, n);
	if ((err = tp_traffic_apply(w->tr, w->base, w->st)))
		return err;
	if (js->nodes >= 2) {
		double ideal = 0;
		/* no ideal for its shape (no such connected hosts) or no
		 * route between its hosts: unpriced, and no traffic added
		 * (tp_trace_price_job says why) */
		err = tp_place_ideal(w->f, &r, w->pp, w->ctx, w->cache, &ideal);
		if (!err)
			err =
			    price_hosts(w->f, w->st, w->ctx, &r, hv, gv, n, p);
		if (err == TP_ERR_NOMEM)
			return err;
		if (!err) {
			p->ideal_s = ideal;
			algo = p->algo;
			x = ideal > 0 ? p->predicted_s / ideal : 1;
		} else {
			unpriced(p);
		}
		routed = !err;
		if (alt) {
			tp_placement_t pl;
			/* its GPUs on each host, sharing hosts as Slurm let
			 * it (whole hosts stay whole) */
			r.exclusive = false;
			memset(&pl, 0, sizeof(pl));
			err = tp_place_run_cached(w->policy, w->st, &r, w->pp,
						  w->ctx, j, w->cache, w->ws,
						  &pl);
			if (!err) {
				alt->nhosts = pl.nhosts;
				for (size_t i = 0; i < pl.nhosts; i++)
					alt->gpus += (size_t)pl.gpus[i];
				alt->predicted_s = pl.predicted_s;
				alt->ideal_s = pl.ideal_s;
				alt->algo = pl.algo;
				alt->groups = pl.span[TP_SPAN_GROUPS];
				alt->groups_min =
				    pl.min_span_empty[TP_SPAN_GROUPS];
			}
			tp_placement_free(&pl);
			if (err == TP_ERR_NOMEM)
				return err;
		}
	}
	/* a record the state cannot hold (its hosts overbooked by records
	 * that overlap) holds nothing */
	if (tp_state_alloc(w->st, j + 1, hv, gv, n) != TP_OK) {
		/* overbooked by the records running then, not by the state
		 * given (hosts down there, or its jobs holding the GPUs) */
		bool fits_base = true;
		for (size_t i = 0; i < n && fits_base; i++)
			fits_base = tp_state_host_up(w->base, hv[i]) &&
				    tp_state_free_gpus(w->base, hv[i]) >= gv[i];
		if (slurm)
			slurm->overbooked = fits_base;
		return TP_ERR_EXISTS;
	}
	if (routed) {
		double f = js->comm_frac, d = (1 - f) + f * x;
		err = tp_traffic_add(w->tr, j + 1, w->ctx, w->st, hv, gv, n,
				     tp_request_bytes(&r), algo,
				     d > 0 ? f * x / d : 0);
		if (err == TP_ERR_NOMEM)
			return err;
	}
	return TP_OK;
}

tp_err_t tp_trace_price_sweep(const tp_fabric_t *f, const tp_state_t *s,
			      const tp_cost_ctx_t *ctx,
			      const tp_policy_params_t *pp,
			      tp_ideal_cache_t *cache,
			      const tp_policy_t *policy, const tp_trace_t *t,
			      tp_trace_price_t *slurm, tp_trace_price_t *alt)
{
	size_t n = t->njobs, e = 0;
	sweep_t w = {f, s, ctx, pp, cache, policy, t, NULL, NULL, NULL};
	tp__dix_t *starts = NULL, *ends = NULL; /* events: job i at t */
	bool *held = NULL;
	tp_err_t err = TP_ERR_NOMEM;

	if (!f || !s || !ctx || (alt && !policy))
		return TP_ERR_INVAL;
	for (size_t j = 0; j < n; j++) {
		if (slurm)
			unpriced(&slurm[j]);
		if (alt)
			unpriced(&alt[j]);
	}
	starts = tp_malloc((n ? n : 1) * sizeof(*starts));
	ends = tp_malloc((n ? n : 1) * sizeof(*ends));
	held = tp_calloc(n ? n : 1, sizeof(*held));
	if (!starts || !ends || !held || !(w.st = tp_state_clone(s)) ||
	    !(w.tr = tp_traffic_create(f)) ||
	    (alt && !(w.ws = tp_place_ws_create())))
		goto out;
	for (size_t j = 0; j < n; j++) {
		starts[j] = (tp__dix_t){t->jobs[j].start_s, j};
		ends[j] = (tp__dix_t){t->jobs[j].start_s + t->jobs[j].run_s, j};
	}
	qsort(starts, n, sizeof(*starts), tp__dix_cmp);
	qsort(ends, n, sizeof(*ends), tp__dix_cmp);
	for (size_t k = 0; k < n; k++) {
		size_t j = starts[k].i, nh = 0;
		uint32_t *hv = NULL;
		int *gv = NULL;
		for (; e < n && ends[e].t <= starts[k].t; e++)
			if (held[ends[e].i]) {
				tp_state_release(w.st, ends[e].i + 1);
				tp_traffic_remove(w.tr, ends[e].i + 1);
				held[ends[e].i] = false;
			}
		err = tp_trace_job_hosts(f, t, j, &hv, &gv, &nh, NULL);
		if (err == TP_ERR_NOMEM)
			goto out;
		if (err)
			continue; /* not in this fabric: it holds nothing */
		err = sweep_start(&w, j, hv, gv, nh, slurm ? &slurm[j] : NULL,
				  alt ? &alt[j] : NULL);
		held[j] = !err;
		tp_free(hv);
		tp_free(gv);
		if (err && err != TP_ERR_EXISTS)
			goto out;
	}
	err = TP_OK;
out:
	tp_place_ws_destroy(w.ws);
	tp_traffic_destroy(w.tr);
	tp_state_destroy(w.st);
	tp_free(starts);
	tp_free(ends);
	tp_free(held);
	return err;
}

tp_err_t tp_trace_deflate(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
			  const tp_policy_params_t *pp, tp_trace_t *t,
			  size_t *n_p)
{
	tp_trace_price_t *p;
	tp_state_t *s;
	tp_ideal_cache_t *cache; /* one ideal a job shape */
	tp_err_t err = TP_ERR_NOMEM;

	*n_p = 0;
	if (!f || !ctx || !t)
		return TP_ERR_INVAL;
	p = tp_calloc(t->njobs ? t->njobs : 1, sizeof(*p));
	s = tp_state_create(f);
	cache = tp_ideal_cache_create();
	if (!p || !s || !cache)
		goto out;
	tp__state_match_cost(s, ctx);
	if ((err =
		 tp_trace_price_sweep(f, s, ctx, pp, cache, NULL, t, p, NULL)))
		goto out;
	for (size_t j = 0; j < t->njobs; j++) {
		tp_job_spec_t *js = &t->jobs[j];
		if (isnan(p[j].predicted_s) || !(p[j].ideal_s > 0))
			continue;
		double x = p[j].predicted_s / p[j].ideal_s;
		double stretch = (1 - js->comm_frac) + js->comm_frac * x;
		/* on hosts as good as the ideal the run stays as it was */
		if (stretch > 0 && stretch != 1) {
			js->run_s /= stretch;
			++*n_p;
		}
	}
out:
	tp_ideal_cache_destroy(cache);
	tp_state_destroy(s);
	tp_free(p);
	return err;
}
