/*
 * What the placements in a trace of Slurm's records cost: each job's
 * hosts as Slurm recorded them, priced by the cost model against the
 * ideal set for its shape (tp_trace_price_job in tp_placement.h).
 */
#include "config.h"

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

tp_err_t tp_trace_price_job(const tp_fabric_t *f, const tp_state_t *s,
			    const tp_cost_ctx_t *ctx,
			    const tp_policy_params_t *pp,
			    tp_ideal_cache_t *cache, const tp_trace_t *t,
			    size_t j, tp_trace_price_t *out, char **err_p)
{
	const char *list = tp_trace_job_nodes(t, j);
	const tp_job_spec_t *js = j < t->njobs ? &t->jobs[j] : NULL;
	char **names = NULL, *msg = NULL;
	size_t n = 0, bad = 0, span[TP_SPAN_NLEVELS], smin[TP_SPAN_NLEVELS];
	uint32_t *hv = NULL;
	int *gv = NULL;
	tp_request_t r;
	tp_cost_t c;
	tp_err_t err;

	memset(out, 0, sizeof(*out));
	if (!js || !f || !s || !ctx)
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
		gv[i] = js->gpus_per_node > 0 ? js->gpus_per_node : (int)have;
		if ((size_t)gv[i] > have && have) {
			err = TP_ERR_RANGE;
			msg =
			    tp_asprintf("host %s has %zu GPUs, the job held %d",
					names[i], have, gv[i]);
			goto out;
		}
		if (gv[i] < 1)
			gv[i] = 1;
		out->gpus += (size_t)gv[i];
	}
	/* the order a plan runs them in (host GPUs move with their host) */
	tp_ring_order(f, hv, gv, n);
	tp__job_request(js, &r);
	if ((err = tp_cost_predict_best(ctx, s, hv, gv, n, tp_request_bytes(&r),
					&out->algo, &c)))
		goto out;
	out->predicted_s = c.seconds;
	if ((err = tp_place_ideal(f, &r, pp, ctx, cache, &out->ideal_s)))
		goto out;
	tp_span_of(f, hv, n, span);
	tp_span_min(f, NULL, &r, smin);
	out->groups = span[TP_SPAN_GROUPS];
	out->groups_min = smin[TP_SPAN_GROUPS];
	out->nhosts = n;
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
