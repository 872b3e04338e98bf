/*
 * traffic.c - running jobs' link loads for callers that keep their own job
 * list (the Slurm plugin's writer thread).
 *
 * Notes
 *
 * Each job keeps only the directed links it loads (a few per host), so a
 * controller with thousands of running jobs stays small, and a per-link
 * count of the jobs loading it resets the sum to exactly 0 when the last
 * one leaves: subtracting floating-point loads in another order than they
 * were added would otherwise leave ghost traffic behind. The background
 * a newcomer meets is capped at the fair share (tp_traffic_fair_background)
 * as in the simulator, so the two price the same way.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "placement_int.h"

typedef struct load {
	uint32_t res; /* directed link: 2 * link + direction */
	double gbps;
} load_t;

typedef struct job_load {
	uint64_t job;
	load_t *load;
	size_t nload;
} job_load_t;

struct tp_traffic {
	const tp_fabric_t *f;
	size_t nres;	 /* 2 * links */
	double *sum;	 /* per directed link */
	uint32_t *cnt;	 /* jobs loading it */
	double *scratch; /* tp_cost_link_load's output, kept zero */
	job_load_t *jobs;
	size_t njobs, capjobs;
};

tp_traffic_t *tp_traffic_create(const tp_fabric_t *f)
{
	tp_traffic_t *t;

	if (!f || !(t = tp_calloc(1, sizeof(*t))))
		return NULL;
	t->f = f;
	t->nres = 2 * tp_fabric_nlinks(f);
	t->sum = tp_calloc(t->nres + 1, sizeof(double));
	t->cnt = tp_calloc(t->nres + 1, sizeof(uint32_t));
	t->scratch = tp_calloc(t->nres + 1, sizeof(double));
	if (!t->sum || !t->cnt || !t->scratch) {
		tp_traffic_destroy(t);
		return NULL;
	}
	return t;
}

void tp_traffic_destroy(tp_traffic_t *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->njobs; i++)
		tp_free(t->jobs[i].load);
	tp_free(t->jobs);
	tp_free(t->sum);
	tp_free(t->cnt);
	tp_free(t->scratch);
	tp_free(t);
}

size_t tp_traffic_njobs(const tp_traffic_t *t)
{
	return t ? t->njobs : 0;
}

static job_load_t *find(const tp_traffic_t *t, uint64_t job)
{
	for (size_t i = 0; i < t->njobs; i++)
		if (t->jobs[i].job == job)
			return &t->jobs[i];
	return NULL;
}

tp_err_t tp_traffic_remove(tp_traffic_t *t, uint64_t job_id)
{
	job_load_t *j;

	if (!t)
		return TP_ERR_INVAL;
	if (!(j = find(t, job_id)))
		return TP_ERR_NOTFOUND;
	for (size_t i = 0; i < j->nload; i++) {
		uint32_t r = j->load[i].res;
		t->sum[r] -= j->load[i].gbps;
		if (!--t->cnt[r] || t->sum[r] < 0)
			t->sum[r] = 0;
	}
	tp_free(j->load);
	*j = t->jobs[--t->njobs];
	return TP_OK;
}

tp_err_t tp_traffic_add(tp_traffic_t *t, uint64_t job_id,
			const tp_cost_ctx_t *ctx, const tp_state_t *s,
			const uint32_t *hosts, const int *gpus, size_t n,
			double bytes, tp_algo_t algo, double duty)
{
	size_t nl = 0, k = 0;
	load_t *load = NULL;
	void *p;
	tp_err_t err;

	if (!t || (s && tp_state_fabric(s) != t->f))
		return TP_ERR_INVAL;
	(void)tp_traffic_remove(t, job_id); /* NOTFOUND: a new job */
	if ((err = tp_cost_link_load(ctx, s, hosts, gpus, n, bytes, algo, duty,
				     t->scratch)))
		return err;
	for (size_t r = 0; r < t->nres; r++)
		nl += t->scratch[r] > 0;
	if (!nl)
		return TP_OK;
	p = t->jobs;
	if (!(load = tp_malloc(nl * sizeof(load_t))) ||
	    tp_grow(&p, &t->capjobs, t->njobs + 1, sizeof(job_load_t))) {
		tp_free(load);
		memset(t->scratch, 0, t->nres * sizeof(double));
		return TP_ERR_NOMEM;
	}
	t->jobs = p;
	for (size_t r = 0; r < t->nres; r++) {
		if (!(t->scratch[r] > 0))
			continue;
		load[k++] = (load_t){(uint32_t)r, t->scratch[r]};
		t->sum[r] += t->scratch[r];
		t->cnt[r]++;
		t->scratch[r] = 0;
	}
	t->jobs[t->njobs++] = (job_load_t){job_id, load, nl};
	return TP_OK;
}

double tp_traffic_fair_background(double cap_gbps, double load_gbps, size_t k)
{
	double fair =
	    k > 0 && cap_gbps > 0 ? cap_gbps * (double)k / (k + 1.0) : 0;

	if (!(load_gbps > 0))
		return 0;
	return load_gbps < fair ? load_gbps : fair;
}

tp_err_t tp_traffic_apply(const tp_traffic_t *t, const tp_state_t *from,
			  tp_state_t *s)
{
	size_t nl;

	if (!s || (from && from->f != s->f) || (t && t->f != s->f))
		return TP_ERR_INVAL;
	nl = tp_fabric_nlinks(s->f);
	for (size_t l = 0; l < nl; l++) {
		s->health[l] = from ? from->health[l] : 1.0;
		for (size_t d = 0; d < 2; d++) {
			size_t r = 2 * l + d;
			double bg = from ? from->bg[r] : 0;
			if (t && t->cnt[r])
				bg += tp_traffic_fair_background(
				    tp_fabric_link(s->f, (uint32_t)l)->gbps *
					s->health[l],
				    t->sum[r], t->cnt[r]);
			s->bg[r] = bg;
		}
	}
	tp__state_cables_all(s);
	return TP_OK;
}

/* The algorithm tp_cost_predict finds fastest for these hosts on s. */
static tp_err_t fastest_algo(const tp_cost_ctx_t *ctx, const tp_state_t *s,
			     const tp_state_job_t *j, double bytes,
			     tp_algo_t *algo_p)
{
	static const tp_algo_t algos[] = {TP_ALGO_RING, TP_ALGO_HIERARCHICAL,
					  TP_ALGO_TREE};
	double best = INFINITY;
	tp_err_t first = TP_ERR_NOTFOUND;

	for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		tp_cost_t c;
		tp_err_t err = tp_cost_predict(ctx, s, j->hosts, j->gpus,
					       j->nhosts, bytes, algos[a], &c);
		if (err == TP_ERR_NOMEM)
			return err; /* not "the other algorithm is faster" */
		if (err) {
			first = err;
			continue;
		}
		if (c.seconds < best) {
			best = c.seconds;
			*algo_p = algos[a];
		}
	}
	return isfinite(best) ? TP_OK : first;
}

tp_err_t tp_state_jobs_link_load(const tp_cost_ctx_t *ctx, const tp_state_t *s,
				 double bytes, double duty, double *link_gbps,
				 size_t *unrouted_p)
{
	tp_state_job_t *jobs;
	size_t n, unrouted = 0;
	tp_err_t err;

	if (!ctx || !s || !link_gbps)
		return TP_ERR_INVAL;
	if ((err = tp_state_jobs(s, &jobs, &n)))
		return err;
	for (size_t i = 0; i < n && !err; i++) {
		tp_algo_t algo = TP_ALGO_RING;
		if (jobs[i].nhosts < 2)
			continue;
		err = fastest_algo(ctx, s, &jobs[i], bytes, &algo);
		if (!err)
			err = tp_cost_link_load(ctx, s, jobs[i].hosts,
						jobs[i].gpus, jobs[i].nhosts,
						bytes, algo, duty, link_gbps);
		if (err == TP_ERR_NOTFOUND) {
			unrouted++;
			err = TP_OK;
		}
	}
	tp_state_jobs_free(jobs, n);
	if (unrouted_p)
		*unrouted_p = unrouted;
	return err;
}
