/*
 * Baseline policies: first-fit and random (the floors) and slurm-linear,
 * Slurm 22.05's node selection without a topology (cons_tres _eval_nodes,
 * doc/slurm-tree-model.md section 9).
 *
 * Node index order is host index order: the fabric sorts hosts by name in
 * natural order, which is how slurmctld numbers nodes (section 1.4).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "placement_int.h"

/* GPUs host h gives: its offer, cut to what a GPU-count job still needs. */
static int give(const tp__policy_in_t *in, uint32_t h, long long left)
{
	int g = tp__host_offer(in, h);

	if (!in->nhosts && g > left)
		g = (int)left;
	return g;
}

/* Take hosts from order[0..n) (NULL: index order) while the request is
 * not met. */
static tp_err_t take_in_order(const tp__policy_in_t *in, const uint32_t *order,
			      size_t n, uint32_t *hosts, int *gpus, size_t max,
			      size_t *n_p)
{
	long long left = in->nhosts ? (long long)in->nhosts : in->total_gpus;
	size_t k = 0;

	for (size_t i = 0; i < n && left > 0 && k < max; i++) {
		uint32_t h = order ? order[i] : (uint32_t)i;
		int g = give(in, h, left);
		if (g <= 0)
			continue;
		hosts[k] = h;
		gpus[k++] = g;
		left -= in->nhosts ? 1 : g;
	}
	if (left > 0)
		return TP_ERR_NOTFOUND;
	*n_p = k;
	return TP_OK;
}

/* ---- first-fit ---- */

static tp_err_t first_fit(const tp__policy_in_t *in, uint32_t *hosts, int *gpus,
			  size_t max, size_t *n_p, char *why, size_t whylen)
{
	tp_err_t err = take_in_order(in, NULL, tp_fabric_nhosts(in->f), hosts,
				     gpus, max, n_p);

	if (err)
		return err;
	snprintf(why, whylen, "first-fit: the lowest-numbered hosts that fit.");
	return TP_OK;
}

const tp_policy_t tp__policy_first_fit = {
    .name = "first-fit",
    .doc = "hosts in index (natural name) order, first that fit",
    .choose = first_fit,
};

/* ---- random ---- */

static tp_err_t random_fit(const tp__policy_in_t *in, uint32_t *hosts,
			   int *gpus, size_t max, size_t *n_p, char *why,
			   size_t whylen)
{
	size_t nh = tp_fabric_nhosts(in->f), n = 0;
	uint64_t x = in->seed;
	uint32_t *v;
	tp_err_t err;

	if (!(v = tp_malloc((nh + 1) * sizeof(uint32_t))))
		return TP_ERR_NOMEM;
	for (uint32_t h = 0; h < nh; h++)
		if (tp__host_offer(in, h) > 0)
			v[n++] = h;
	/* Fisher-Yates; the modulo bias is irrelevant for a floor policy */
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(tp__rand_next(&x) % i);
		uint32_t t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
	err = take_in_order(in, v, n, hosts, gpus, max, n_p);
	tp_free(v);
	if (!err)
		snprintf(why, whylen,
			 "random: hosts drawn at random (seed "
			 "%llu).",
			 (unsigned long long)in->seed);
	return err;
}

const tp_policy_t tp__policy_random = {
    .name = "random",
    .doc = "a seeded random choice among the hosts that fit",
    .choose = random_fit,
};

/* ---- slurm-linear ---- */

/*
 * Section 9 of doc/slurm-tree-model.md, for one weight tier and no
 * required nodes (the simulator has neither): L2 runs, L3 run choice, L4
 * taking, L5 final test.
 *
 * CPUs: Slurm measures runs and the single-node best fit in free CPUs
 * (avail_cpus). Our state has GPUs only; on GPU clusters CPUs are handed
 * out with GPUs (DefCpuPerGPU), so a host's free GPUs stand in for its
 * free CPUs. rem_cpus is the job's minimum CPU count in the same unit:
 * one per node for -N jobs, one for a --gpus job (one task), so the CPU
 * condition is met exactly when Slurm's would be and it only shapes the
 * tie-breaks, as in Slurm.
 *
 * Request mapping: nodes=N[,gpus-per-node=G] is -N N [--gpus-per-node=G]
 * (min = max = req = N); nodes=N alone is -N N --exclusive with all GPUs;
 * gpus=T is --gpus=T (per-job GRES: rem_nodes = 1, no node cap, every
 * chosen node credits all its free GPUs, section 7.4).
 */
typedef struct run {
	uint32_t start, end;
	long long nodes, cpus, gpus;
} run_t;

typedef struct lin {
	const tp__policy_in_t *in;
	long long *avail; /* per host: free GPUs if usable, else 0 */
	long long rem_nodes, rem_cpus, max_nodes, need_gpus, got_gpus;
	uint32_t *hosts;
	int *gpus;
	size_t n, max;
} lin_t;

static bool lin_done(const lin_t *l)
{
	return l->rem_nodes <= 0 && l->rem_cpus <= 0 &&
	       l->got_gpus >= l->need_gpus;
}

static void lin_take(lin_t *l, uint32_t h)
{
	const tp__policy_in_t *in = l->in;
	int g;

	if (in->nhosts) {
		g = tp__host_offer(in, h);
	} else {
		long long left = l->need_gpus - l->got_gpus;
		g = (int)(l->avail[h] < left ? l->avail[h] : left);
		if (g < 1)
			g = 1; /* cannot happen: Slurm stops once satisfied */
	}
	l->hosts[l->n] = h;
	l->gpus[l->n++] = g;
	l->rem_nodes--;
	l->max_nodes--;
	l->rem_cpus -= l->avail[h];
	l->got_gpus += l->avail[h];
	l->avail[h] = 0;
}

/* L4 for a run without required nodes. */
static void lin_take_run(lin_t *l, const run_t *r)
{
	if (l->rem_nodes <= 1) {
		/* single-node best fit: the tightest node that holds the rest
		 */
		uint32_t best = TP_ID_NONE;
		for (uint32_t i = r->start; i <= r->end; i++) {
			long long a = l->avail[i];
			if (!a || a < l->rem_cpus ||
			    a < l->need_gpus - l->got_gpus)
				continue;
			if (best == TP_ID_NONE || a < l->avail[best])
				best = i;
			if (a == l->rem_cpus)
				break;
		}
		if (best != TP_ID_NONE) {
			if (l->max_nodes > 0 && l->n < l->max)
				lin_take(l, best);
			return;
		}
	}
	for (uint32_t i = r->start; i <= r->end; i++) {
		if (l->max_nodes <= 0 || lin_done(l) || l->n >= l->max)
			break;
		if (!l->avail[i])
			continue;
		if (l->max_nodes == 1 && l->avail[i] < l->rem_cpus)
			continue;
		lin_take(l, i);
	}
}

static tp_err_t slurm_linear(const tp__policy_in_t *in, uint32_t *hosts,
			     int *gpus, size_t max, size_t *n_p, char *why,
			     size_t whylen)
{
	size_t nh = tp_fabric_nhosts(in->f), nruns = 0, used = 0;
	lin_t l = {.in = in, .hosts = hosts, .gpus = gpus, .max = max};
	run_t *runs = NULL;
	tp_err_t err = TP_ERR_NOMEM;

	l.avail = tp_calloc(nh + 1, sizeof(long long));
	runs = tp_malloc((nh / 2 + 2) * sizeof(run_t));
	if (!l.avail || !runs)
		goto out;
	if (in->nhosts) {
		l.rem_nodes = l.rem_cpus = l.max_nodes = (long long)in->nhosts;
	} else {
		l.rem_nodes = l.rem_cpus = 1;
		l.max_nodes = (long long)nh;
		l.need_gpus = in->total_gpus;
	}
	/* L2: maximal runs of consecutive usable indices */
	for (uint32_t h = 0; h < nh; h++) {
		if (tp__host_offer(in, h) <= 0)
			continue;
		l.avail[h] = in->s->free[h];
		if (!nruns || runs[nruns - 1].end + 1 != h)
			runs[nruns++] = (run_t){.start = h, .end = h};
		runs[nruns - 1].end = h;
		runs[nruns - 1].nodes++;
		runs[nruns - 1].cpus += l.avail[h];
		runs[nruns - 1].gpus += l.avail[h];
	}
	/* L3/L4 */
	while (l.max_nodes > 0) {
		size_t best = SIZE_MAX;
		bool best_suff = false;

		for (size_t i = 0; i < nruns; i++) {
			const run_t *r = &runs[i];
			bool suff;
			if (!r->nodes)
				continue;
			suff = r->cpus >= l.rem_cpus &&
			       r->nodes >= l.rem_nodes &&
			       r->gpus >= l.need_gpus - l.got_gpus;
			if (best == SIZE_MAX || (suff && !best_suff) ||
			    (suff && r->cpus < runs[best].cpus) ||
			    (!suff && r->cpus > runs[best].cpus)) {
				best = i;
				best_suff = suff;
			}
		}
		if (best == SIZE_MAX)
			break;
		lin_take_run(&l, &runs[best]);
		used++;
		if (lin_done(&l))
			break;
		runs[best].nodes = runs[best].cpus = runs[best].gpus = 0;
	}
	/* L5 */
	err = lin_done(&l) ? TP_OK : TP_ERR_NOTFOUND;
	if (!err) {
		*n_p = l.n;
		snprintf(why, whylen,
			 "slurm-linear: consecutive best fit over %zu run%s of "
			 "free hosts, %zu used.",
			 nruns, nruns == 1 ? "" : "s", used);
	}
out:
	tp_free(l.avail);
	tp_free(runs);
	return err;
}

const tp_policy_t tp__policy_slurm_linear = {
    .name = "slurm-linear",
    .doc = "Slurm 22.05 without topology: consecutive best fit in node "
	   "order",
    .choose = slurm_linear,
};
