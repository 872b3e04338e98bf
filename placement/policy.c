/*
 * The policy registry and the placement driver shared by every policy.
 *
 * tp_place_run does everything that must not differ between policies, so
 * that comparing them measures only their choice: request normalisation,
 * the "never fits" / "does not fit now" verdicts, checking the answer
 * (a policy that hands out a busy GPU is a bug, reported as such rather
 * than passed on to the scheduler), ring order, spans and the cost
 * prediction. Only choose() is timed.
 */
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "placement_int.h"

/* Cost is predicted for TP__DEFAULT_BYTES (1 GiB) when the request gives
 * no size: large enough that bandwidth, which placement changes,
 * dominates latency. */

/* ---- registry ---- */

static const tp_policy_t *const policies[] = {
    &tp__policy_topoplace,     &tp__policy_slurm_tree,
    &tp__policy_slurm_tree_22, &tp__policy_slurm_block,
    &tp__policy_slurm_linear,  &tp__policy_first_fit,
    &tp__policy_random,
};

#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

const tp_policy_t *tp_policy_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < NPOLICIES; i++)
		if (!strcmp(name, policies[i]->name))
			return policies[i];
	return NULL;
}

const char *tp_policy_name(const tp_policy_t *p)
{
	return p ? p->name : "(none)";
}

const char *tp_policy_names(void)
{
	/* a literal, not built at run time: no state, no thread worries;
	 * test_policy checks it against the table */
	return "topoplace, slurm-tree, slurm-tree-22.05, slurm-block, "
	       "slurm-linear, first-fit, random";
}

/* ---- parameters (one table: defaults, ranges, documentation) ---- */

typedef struct param_def {
	const char *name;
	size_t off;
	double def, lo, hi;
	const char *doc;
} param_def_t;

static const param_def_t param_table[] = {
    {"w_time", offsetof(tp_policy_params_t, w_time), 1.0, 0.0, 1e6,
     "weight of the predicted all-reduce time (relative to ideal)"},
    {"w_frag", offsetof(tp_policy_params_t, w_frag), 0.2, 0.0, 1e6,
     "weight of breaking up free level-1 groups and NVLink domains"},
    {"w_churn", offsetof(tp_policy_params_t, w_churn), 0.05, 0.0, 1e6,
     "weight of moving away from the previous choice"},
    {"big_job_share", offsetof(tp_policy_params_t, big_job_share), 0.25, 0.0,
     1.0, "share of future jobs that need a whole group (look-ahead)"},
    {"price_budget", offsetof(tp_policy_params_t, price_budget), 96, 0, 1e6,
     "cost-model predictions per decision for pricing candidates"},
};

void tp_policy_params_defaults(tp_policy_params_t *p)
{
	if (!p)
		return;
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < sizeof(param_table) / sizeof(param_table[0]);
	     i++)
		*(double *)((char *)p + param_table[i].off) =
		    param_table[i].def;
}

/* ---- shared helpers ---- */

int tp__host_offer(const tp__policy_in_t *in, uint32_t h)
{
	if (in->offer)
		return in->offer[h];
	const tp_host_t *hp = tp_fabric_host(in->f, h);
	int ng = (int)hp->ngpus;
	/* no state: the empty fabric (used for "can it ever fit" and the
	 * ideal placement) */
	int free = in->s ? in->s->free[h] : ng;
	bool idle = in->s ? in->s->njobs[h] == 0 : true;

	if (in->s && !in->s->up[h])
		return 0;
	if (in->nhosts && in->gpus_per_host == 0)
		return idle && ng > 0 ? ng : 0; /* whole host */
	if (in->exclusive && !idle)
		return 0;
	if (in->nhosts)
		return free >= in->gpus_per_host ? in->gpus_per_host : 0;
	return free;
}

void tp_placement_free(tp_placement_t *p)
{
	if (!p)
		return;
	tp_free(p->hosts);
	tp_free(p->gpus);
	tp_free(p->explain);
	memset(p, 0, sizeof(*p));
}

tp_err_t tp_placement_copy(const tp_placement_t *from, tp_placement_t *to)
{
	tp_placement_t p;

	if (!from || !to || (from->nhosts && (!from->hosts || !from->gpus)))
		return TP_ERR_INVAL;
	p = *from;
	p.hosts = NULL;
	p.gpus = NULL;
	p.explain = NULL;
	if (from->nhosts &&
	    (!(p.hosts = tp_malloc(from->nhosts * sizeof(uint32_t))) ||
	     !(p.gpus = tp_malloc(from->nhosts * sizeof(int)))))
		goto nomem;
	if (from->explain && !(p.explain = tp_strdup(from->explain)))
		goto nomem;
	if (from->nhosts) {
		memcpy(p.hosts, from->hosts, from->nhosts * sizeof(uint32_t));
		memcpy(p.gpus, from->gpus, from->nhosts * sizeof(int));
	}
	*to = p;
	return TP_OK;
nomem:
	tp_placement_free(&p);
	return TP_ERR_NOMEM;
}

/* ---- the ideal placement (for ideal_s) ---- */

/*
 * Best hosts on the empty fabric: the smallest group (lowest level first,
 * best fit by capacity) that holds the whole job; inside it, whole child
 * groups largest first while the rest exceeds every child, then the
 * tightest child that holds the rest, recursively; hosts in index order
 * inside a level-1 group. That gives the fewest groups at every level,
 * which is what the cost model rewards on a healthy idle tree.
 */
typedef struct pack {
	const tp__policy_in_t *in;
	int *offer;  /* per host, 0 once taken */
	size_t *cap; /* per group: capacity in hosts (or GPUs) */
	uint32_t *hosts;
	int *gpus;
	size_t n, max;
	size_t need;
} pack_t;

static size_t unit(const pack_t *pk, int offer)
{
	return pk->in->nhosts ? (offer > 0) : (size_t)offer;
}

static void take_host(pack_t *pk, uint32_t h)
{
	int g = pk->offer[h];

	if (!g || !pk->need || pk->n >= pk->max)
		return;
	if (!pk->in->nhosts && (size_t)g > pk->need)
		g = (int)pk->need;
	pk->hosts[pk->n] = h;
	pk->gpus[pk->n++] = g;
	pk->need -= unit(pk, g);
	pk->offer[h] = 0;
}

static void fill_group(pack_t *pk, uint32_t g)
{
	const tp_fabric_t *f = pk->in->f;
	const tp_group_t *gp = tp_fabric_group(f, g);
	size_t ng = tp_fabric_ngroups(f);
	bool *done;

	if (gp->level <= 1) {
		for (size_t i = 0; i < gp->nhosts && pk->need; i++)
			take_host(pk, gp->hosts[i]);
		return;
	}
	if (!(done = tp_calloc(ng + 1, sizeof(bool))))
		goto hosts;
	while (pk->need) {
		uint32_t big = TP_ID_NONE, fit = TP_ID_NONE;
		for (uint32_t c = 0; c < ng; c++) {
			const tp_group_t *cp = tp_fabric_group(f, c);
			if (cp->parent != g || done[c] || !pk->cap[c])
				continue;
			if (big == TP_ID_NONE || pk->cap[c] > pk->cap[big])
				big = c;
			if (pk->cap[c] >= pk->need &&
			    (fit == TP_ID_NONE || pk->cap[c] < pk->cap[fit]))
				fit = c;
		}
		if (big == TP_ID_NONE)
			break;
		done[fit != TP_ID_NONE ? fit : big] = true;
		fill_group(pk, fit != TP_ID_NONE ? fit : big);
	}
	tp_free(done);
hosts:
	/* children short of memory or capacity: any host of the group */
	for (size_t i = 0; i < gp->nhosts && pk->need; i++)
		take_host(pk, gp->hosts[i]);
}

static void pack_ideal(pack_t *pk)
{
	const tp_fabric_t *f = pk->in->f;
	size_t nh = tp_fabric_nhosts(f), ng = tp_fabric_ngroups(f);
	uint32_t best = TP_ID_NONE;

	for (uint32_t h = 0; h < nh; h++) {
		const tp_host_t *hp = tp_fabric_host(f, h);
		pk->offer[h] = tp__host_offer(pk->in, h);
		for (int l = 0; l < TP_MAX_LEVELS; l++)
			if (hp->group[l] != TP_ID_NONE)
				pk->cap[hp->group[l]] += unit(pk, pk->offer[h]);
	}
	for (int lv = 1; lv <= tp_fabric_ngroup_levels(f) && best == TP_ID_NONE;
	     lv++)
		for (uint32_t g = 0; g < ng; g++)
			if (tp_fabric_group(f, g)->level == lv &&
			    pk->cap[g] >= pk->need &&
			    (best == TP_ID_NONE || pk->cap[g] < pk->cap[best]))
				best = g;
	if (best != TP_ID_NONE) {
		fill_group(pk, best);
		return;
	}
	/* no single tree holds it: top-level groups largest first */
	while (pk->need) {
		uint32_t big = TP_ID_NONE;
		for (uint32_t g = 0; g < ng; g++) {
			const tp_group_t *gp = tp_fabric_group(f, g);
			if (gp->parent == TP_ID_NONE && pk->cap[g] &&
			    (big == TP_ID_NONE || pk->cap[g] > pk->cap[big]))
				big = g;
		}
		if (big == TP_ID_NONE)
			break;
		fill_group(pk, big);
		pk->cap[big] = 0;
	}
	for (uint32_t h = 0; h < nh && pk->need; h++)
		take_host(pk, h);
}

/* ---- the driver ---- */

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Host sets up to this size are checked without allocating. */
#define SMALL_SET 64

static tp_err_t check_answer(const tp__policy_in_t *in, const uint32_t *hosts,
			     const int *gpus, size_t n, size_t max,
			     const char **why_p);

/* One collective on hosts[0..n) of the idle fabric, lowered into *best. */
static tp_err_t idle_min(const tp__policy_in_t *in, uint32_t *hosts, int *gpus,
			 size_t n, double bytes, double *best)
{
	double t;
	tp_err_t err = tp__price_ring(in->cost, NULL, hosts, gpus, n, bytes, &t);
	int small[SMALL_SET], *even;
	long total = 0;
	bool fits = true, differs = false;

	if (!err && t < *best)
		*best = t;
	/* A request of GPUs alone, also split as evenly as these hosts take
	 * it: the host given fewest ranks drives fewest NICs and paces the
	 * ring, so the packed [4, 1] is about half as fast as [3, 2] with a
	 * NIC per GPU (the policies pack, as Slurm's GPU allocation fills
	 * node after node; the reference is the faster). */
	if (err || in->nhosts || n < 2)
		return err;
	if (!(even = n <= SMALL_SET ? small : tp_malloc(n * sizeof(int))))
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		total += gpus[i];
	for (size_t i = 0; i < n; i++) {
		even[i] = (int)(total / (long)n + ((long)i < total % (long)n));
		fits &=
		    even[i] > 0 &&
		    (size_t)even[i] <= tp_fabric_host(in->f, hosts[i])->ngpus;
		differs |= even[i] != gpus[i];
	}
	if (fits && differs &&
	    (err = tp__price_ring(in->cost, NULL, hosts, even, n, bytes, &t)) ==
		TP_OK &&
	    t < *best)
		*best = t;
	if (even != small)
		tp_free(even);
	return err == TP_ERR_NOMEM ? err : TP_OK;
}

/* For a request of whole hosts (in->nhosts of them): inside each level-1
 * group, then over the whole fabric, the nhosts best-cabled hosts that
 * can take it on the empty fabric e, priced on the idle state into *best.
 * A ring runs at its weakest host's pace, so on a fabric with weakly
 * cabled hosts these sets can beat every policy's pick (4 hosts on a 4 x
 * 4 tree with 10% of cables degraded: one leaf's 10.7 ms against 12.2 ms
 * for the best pick). hosts/gpus: room for every host. Only running out
 * of memory fails. */
static tp_err_t cabled_sets(const tp__policy_in_t *in,
			    const tp__policy_in_t *e, const tp_state_t *idle,
			    uint32_t *hosts, int *gpus, double bytes,
			    double *best)
{
	const tp_fabric_t *f = in->f;
	size_t ng = tp_fabric_ngroups(f), need = in->nhosts;
	tp_err_t err = TP_OK;

	if (!need)
		return TP_OK; /* a GPU count: no fixed share per host */
	for (size_t g = 0; g <= ng && !err; g++) {
		const uint32_t *hs;
		size_t m = 0, cnt;
		if (!tp__cabled_scope(f, g, &hs, &cnt))
			continue;
		for (size_t i = 0; i < cnt; i++) {
			uint32_t h = hs ? hs[i] : (uint32_t)i;
			if (tp__host_offer(e, h) > 0)
				hosts[m++] = h;
		}
		if (m < need)
			continue;
		if ((err = tp__cabled_first(idle, hosts, m, need)))
			break;
		for (size_t i = 0; i < need; i++)
			gpus[i] = tp__host_offer(e, hosts[i]);
		err = idle_min(in, hosts, gpus, need, bytes, best);
		if (err != TP_ERR_NOMEM)
			err = TP_OK;
	}
	return err;
}

/*
 * The reference time of a request shape, the job's collective on an ideal
 * placement: the fastest on the idle fabric among the packed set, what
 * every deterministic policy (random is left out: its choice follows the
 * job's seed) chooses there, the cheapest set the topoplace policy
 * priced there (tp__policy_in_t.priced: a candidate its replacement
 * rules passed over for fragmentation is still a set known, and one
 * more candidate kept for that could otherwise raise the reference, as
 * the job moved into another leaf did on 2026-12-07 for 8 hosts on
 * simulate's default: 6.028 -> 6.708 ms) and, for whole hosts, each
 * level-1 group's and the fabric's best-cabled hosts (cabled_sets): the
 * best set known without searching them all. It depends on the shape and the
 * fabric only, never on the policy being measured: two placements with the same
 * predicted time get the same slowdown whichever policy made them (for given
 * policy parameters, which topoplace's choice reads: the simulator runs every
 * policy with the same ones). (Until 2026-12-03 it was min(packed set, the
 * chosen hosts idle): a policy was neither charged for hosts slower than the
 * best set nor credited for beating the packed one, and the packed set, hosts
 * in index order, often holds a leaf whose D-mod-K routes collide: topoplace's
 * mean slowdown on simulate's default read 1.046 against it, 1.30 against this
 * reference. Until 2026-12-04 the best-cabled sets were not in it: on
 * simulate's default fabric the slowdowns read about 7% lower, 1.29 for
 * topoplace and 1.49 for slurm-tree, against 1.39 and 1.57.) Whole hosts on
 * hosts of different GPU counts: the sets compared run different rank counts (a
 * host gives all of its GPUs), so the minimum may be a smaller collective, on
 * fewer-GPU hosts, and a pick of bigger hosts reads slower than it by more than
 * its placement (4 + 8 GPUs in one leaf: 9.96 ms against 8.97 ms for 4 + 4,
 * test_ideal_whole_mixed). Pricing like with like would need the pick's GPU
 * counts in the shape (and in the cache's key and tp_place_ideal's arguments):
 * not done; the headers say what the figure means there.
 */
static tp_err_t ideal_seconds(const tp__policy_in_t *in, double bytes,
			      double *s_p)
{
	const tp_fabric_t *f = in->f;
	tp__policy_in_t e = *in;
	size_t nh = tp_fabric_nhosts(f);
	pack_t pk = {.in = &e};
	tp__priced_t pz = {.t = -1};
	tp_policy_params_t pp;
	tp_state_t *idle = NULL;
	double best = INFINITY;
	char why[256];
	tp_err_t err = TP_ERR_NOMEM;

	/* the empty fabric, with the driver's offers there when it has them
	 * (fits: no host without a cable in a set of several) */
	e.s = NULL;
	e.offer = in->offer ? in->offer + nh : NULL;
	/* Slurm's node weights are the measured Slurm's, not the fabric's */
	if (in->params) {
		pp = *in->params;
		pp.node_weight = NULL;
		e.params = &pp;
	}
	pk.need = in->nhosts ? in->nhosts : (size_t)in->total_gpus;
	pk.max = nh;
	pk.offer = tp_calloc(nh + 1, sizeof(int));
	pk.cap = tp_calloc(tp_fabric_ngroups(f) + 1, sizeof(size_t));
	pk.hosts = tp_malloc((nh + 1) * sizeof(uint32_t));
	pk.gpus = tp_malloc((nh + 1) * sizeof(int));
	pz.hosts = tp_malloc((nh + 1) * sizeof(uint32_t));
	pz.gpus = tp_malloc((nh + 1) * sizeof(int));
	if (!pk.offer || !pk.cap || !pk.hosts || !pk.gpus || !pz.hosts ||
	    !pz.gpus || !(idle = tp_state_create(f)))
		goto out;
	tp__state_match_cost(idle, in->cost);
	pack_ideal(&pk);
	/* cannot happen once the "never fits" check passed */
	err = TP_ERR_RANGE;
	if (pk.need)
		goto out;
	/* a set that cannot be priced (a host whose cables are all down, a
	 * route with none left) is no reference: skipped, as a policy that
	 * refuses the shape is; only running out of memory fails */
	tp_err_t first = idle_min(in, pk.hosts, pk.gpus, pk.n, bytes, &best);
	if (first == TP_ERR_NOMEM) {
		err = first;
		goto out;
	}
	e.s = idle;
	e.offer = in->offer ? in->offer + nh : NULL;
	err = TP_OK;
	for (size_t i = 0; i < NPOLICIES && !err; i++) {
		const char *bad;
		size_t n = 0;
		if (policies[i] == &tp__policy_random)
			continue;
		pz.t = -1;
		e.priced = &pz;
		err = policies[i]->choose(&e, pk.hosts, pk.gpus, nh, &n, why,
					  sizeof(why));
		e.priced = NULL;
		if (!err && (err = check_answer(&e, pk.hosts, pk.gpus, n, nh,
						&bad)) == TP_ERR_INVAL)
			tp__log(TP_LOG_ERROR,
				"policy %s broke its contract on the idle "
				"fabric: %s",
				policies[i]->name, bad);
		if (!err)
			err = idle_min(in, pk.hosts, pk.gpus, n, bytes, &best);
		/* and the cheapest set it priced, kept or not: a candidate
		 * its rules passed over is still a set known */
		if (err != TP_ERR_NOMEM && pz.t >= 0)
			err =
			    idle_min(in, pz.hosts, pz.gpus, pz.n, bytes, &best);
		if (err != TP_ERR_NOMEM)
			err = TP_OK;
	}
	e.s = NULL; /* the empty fabric's offers */
	e.offer = in->offer ? in->offer + nh : NULL;
	if (!err)
		err = cabled_sets(in, &e, idle, pk.hosts, pk.gpus, bytes, &best);
	if (!err && !isfinite(best))
		err = first ? first : TP_ERR_INVAL;
	if (!err)
		*s_p = best;
out:
	tp_state_destroy(idle);
	tp_free(pk.offer);
	tp_free(pk.cap);
	tp_free(pk.hosts);
	tp_free(pk.gpus);
	tp_free(pz.hosts);
	tp_free(pz.gpus);
	return err;
}

/* A host offering g can take the whole request: it talks over no
 * cable. */
static bool alone(const tp__policy_in_t *in, int g)
{
	return in->nhosts == 1 || (!in->nhosts && in->total_gpus <= g);
}

/* Would the request fit on the empty fabric (*ever_p) and now? One pass
 * for both: the driver's overhead must stay small next to choose().
 * *n_p: hosts offering now. offers (2 x hosts) gets every host's offer
 * now, then on the empty fabric, for the policy and the spans. */
static bool fits(const tp__policy_in_t *in, bool *ever_p, size_t *n_p,
		 int *offers)
{
	tp__policy_in_t empty = *in;
	size_t nh = tp_fabric_nhosts(in->f), n = 0, n0 = 0;
	long long gpus = 0, gpus0 = 0;

	empty.s = NULL;
	empty.offer = NULL;
	for (uint32_t h = 0; h < nh; h++) {
		int g = tp__host_offer(in, h), g0 = tp__host_offer(&empty, h);
		/* a host with no live cable can hold a job alone, never a
		 * share of one that talks over the fabric; one with no cable
		 * that could carry anything (no NIC, NICs without links) not
		 * even on the empty fabric */
		if (in->s && tp__state_cut_off(in->s, h)) {
			if (!alone(in, g))
				g = 0;
			if (!alone(in, g0) && tp__state_uncabled(in->s, h))
				g0 = 0;
		}
		offers[h] = g > 0 ? g : 0;
		offers[nh + h] = g0 > 0 ? g0 : 0;
		if (g > 0) {
			n++;
			gpus += g;
		}
		if (g0 > 0) {
			n0++;
			gpus0 += g0;
		}
	}
	*n_p = n;
	*ever_p = in->nhosts ? n0 >= in->nhosts : gpus0 >= in->total_gpus;
	return in->nhosts ? n >= in->nhosts : gpus >= in->total_gpus;
}

/* The answer must be exactly the request on free, usable GPUs:
 * TP_ERR_INVAL (with *why_p) when it is not. */
static tp_err_t check_answer(const tp__policy_in_t *in, const uint32_t *hosts,
			     const int *gpus, size_t n, size_t max,
			     const char **why_p)
{
	size_t nh = tp_fabric_nhosts(in->f);
	long long total = 0;
	bool *seen = NULL;
	tp_err_t err = TP_ERR_INVAL;

	if (n > max || !n) {
		*why_p = "wrong number of hosts";
		return TP_ERR_INVAL;
	}
	/* a few hosts compare pairwise, without an allocation */
	if (n > SMALL_SET && !(seen = tp_calloc(nh + 1, sizeof(bool))))
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		int offer;
		bool twice = false;
		for (size_t j = 0; !seen && j < i && !twice; j++)
			twice = hosts[j] == hosts[i];
		if (hosts[i] >= nh || twice || (seen && seen[hosts[i]])) {
			*why_p = "a host out of range or twice";
			goto out;
		}
		if (seen)
			seen[hosts[i]] = true;
		offer = tp__host_offer(in, hosts[i]);
		if (in->nhosts ? gpus[i] != offer || !offer
			       : gpus[i] < 1 || gpus[i] > offer) {
			*why_p = "a host that is down, busy or short of GPUs";
			goto out;
		}
		total += gpus[i];
	}
	if (in->nhosts ? n != in->nhosts : total != in->total_gpus) {
		*why_p = "not the size asked";
		goto out;
	}
	err = TP_OK;
out:
	tp_free(seen);
	return err;
}

static char *explain(const tp__policy_in_t *in, const tp_placement_t *p,
		     bool predicted, const char *why)
{
	tp_strbuf_t sb = {0};
	size_t g = p->span[TP_SPAN_GROUPS];

	tp_strbuf_printf(&sb,
			 "%zu host%s in %zu level-1 group%s (minimum %zu on "
			 "the free fabric, %zu empty)",
			 p->nhosts, p->nhosts == 1 ? "" : "s", g,
			 g == 1 ? "" : "s", p->min_span_free[TP_SPAN_GROUPS],
			 p->min_span_empty[TP_SPAN_GROUPS]);
	if (in->cost && predicted)
		tp_strbuf_printf(&sb,
				 "; predicted %.3f ms (%s) vs ideal %.3f ms",
				 p->predicted_s * 1e3, tp_algo_name(p->algo),
				 p->ideal_s * 1e3);
	tp_strbuf_printf(&sb, ".%s%s", why && *why ? " " : "", why ? why : "");
	tp_strbuf_append(&sb, "", 0);
	if (sb.failed) {
		tp_free(sb.buf);
		return NULL;
	}
	return sb.buf;
}

static tp__ideal_t shape_of(const tp__policy_in_t *in, double bytes)
{
	return (tp__ideal_t){in->nhosts,     in->gpus_per_host,
			     in->total_gpus, in->exclusive,
			     bytes,	     0};
}

static bool ideal_find(const tp_ideal_cache_t *cache, const tp__ideal_t *key,
		       double *s_p)
{
	for (size_t i = 0; cache && i < cache->n; i++) {
		const tp__ideal_t *e = &cache->e[i];
		if (e->nhosts == key->nhosts &&
		    e->gpus_per_host == key->gpus_per_host &&
		    e->total_gpus == key->total_gpus &&
		    e->exclusive == key->exclusive && e->bytes == key->bytes) {
			*s_p = e->seconds;
			return true;
		}
	}
	return false;
}

/* ideal_seconds through the caller's cache (NULL: none). */
static tp_err_t ideal_cached(const tp__policy_in_t *in, double bytes,
			     tp_ideal_cache_t *cache, double *s_p)
{
	tp__ideal_t key = shape_of(in, bytes);
	tp_err_t err;

	if (ideal_find(cache, &key, s_p))
		return TP_OK;
	if ((err = ideal_seconds(in, bytes, &key.seconds)))
		return err;
	void *p = cache ? cache->e : NULL;
	if (cache && !tp_grow(&p, &cache->cap, cache->n + 1, sizeof(key))) {
		cache->e = p;
		cache->e[cache->n++] = key;
	}
	*s_p = key.seconds;
	return TP_OK;
}

void tp__ideal_cache_free(tp_ideal_cache_t *c)
{
	if (!c)
		return;
	tp_free(c->e);
	memset(c, 0, sizeof(*c));
}

tp_ideal_cache_t *tp_ideal_cache_create(void)
{
	return tp_calloc(1, sizeof(tp_ideal_cache_t));
}

void tp_ideal_cache_clear(tp_ideal_cache_t *c)
{
	if (c)
		c->n = 0;
}

void tp_ideal_cache_destroy(tp_ideal_cache_t *c)
{
	tp__ideal_cache_free(c);
	tp_free(c);
}

size_t tp_ideal_cache_size(const tp_ideal_cache_t *c)
{
	return c ? c->n : 0;
}

/* The request's shape into in (nhosts, gpus_per_host, total_gpus,
 * exclusive). */
static tp_err_t normalise(const tp_request_t *r, tp__policy_in_t *in)
{
	if (r->nodes < 0 || r->gpus < 0 || r->gpus_per_node < 0 ||
	    !(r->bytes >= 0))
		return TP_ERR_INVAL;
	in->exclusive = r->exclusive;
	if (r->nodes > 0) {
		/* a hand-made request may ask beyond int; no fabric has that */
		if ((long long)r->nodes * r->gpus_per_node > INT_MAX)
			return TP_ERR_RANGE;
		in->nhosts = (size_t)r->nodes;
		in->gpus_per_host = r->gpus_per_node;
		in->total_gpus = r->nodes * r->gpus_per_node;
	} else if (r->gpus > 0) {
		in->total_gpus = r->gpus;
	} else {
		return TP_ERR_INVAL;
	}
	return TP_OK;
}

/* What every choice on s reads besides the request's shape (normalise):
 * the fabric, state, request, parameters (defaults when NULL), cost
 * context and seed. */
static void in_init(tp__policy_in_t *in, const tp_state_t *s,
		    const tp_request_t *r, const tp_policy_params_t *params,
		    tp_policy_params_t *defaults, const tp_cost_ctx_t *ctx,
		    uint64_t seed)
{
	if (!params) {
		tp_policy_params_defaults(defaults);
		params = defaults;
	}
	in->f = tp_state_fabric(s);
	in->s = s;
	in->r = r;
	in->params = params;
	in->cost = ctx;
	in->seed = seed;
}

/* Every host's offer now and on the empty fabric into *offers_p and
 * in->offer (the caller frees *offers_p), *offering_p the hosts offering
 * now; TP_ERR_NOTFOUND when the request does not fit now, TP_ERR_RANGE
 * never. */
static tp_err_t offers_for(tp__policy_in_t *in, int **offers_p,
			   size_t *offering_p)
{
	int *offers =
	    tp_malloc((2 * tp_fabric_nhosts(in->f) + 1) * sizeof(int));
	bool ever;

	if (!offers)
		return TP_ERR_NOMEM;
	if (!fits(in, &ever, offering_p, offers)) {
		tp_free(offers);
		return ever ? TP_ERR_NOTFOUND : TP_ERR_RANGE;
	}
	in->offer = *offers_p = offers;
	return TP_OK;
}

struct tp_place_ws {
	tp__cost_ws_t *cost;
};

/* What place() does beyond the policy's choice (flags). */
enum {
	PLACE_PREDICT = 1,   /* predict the set's time and the ideal (ctx) */
	PLACE_CPU_CLOCK = 2, /* time the choice on the thread's CPU clock */
	PLACE_HOSTS = 4, /* the hosts only: no clocks, spans or explanation */
};

static tp_err_t place(const tp_policy_t *policy, const tp_state_t *s,
		      const tp_request_t *r, const tp_policy_params_t *params,
		      const tp_cost_ctx_t *ctx, uint64_t seed, unsigned flags,
		      tp_ideal_cache_t *ideal, tp_place_ws_t *ws,
		      tp_placement_t *out)
{
	bool predict = flags & PLACE_PREDICT,
	     cpu_clock = flags & PLACE_CPU_CLOCK,
	     timed = !(flags & PLACE_HOSTS);
	tp_policy_params_t defaults;
	tp__policy_in_t in = {0};
	tp_placement_t p = {0};
	char why[256] = "";
	const char *bad;
	size_t max, offering;
	double t0, c0, bytes;
	int *offers;
	tp_err_t err;

	if (!policy || !policy->choose || !s || !r || !out)
		return TP_ERR_INVAL;
	in_init(&in, s, r, params, &defaults, ctx, seed);
	if (in.params->node_weight &&
	    in.params->nnode_weight != tp_fabric_nhosts(in.f))
		return TP_ERR_INVAL;
	in.ws = ws ? ws->cost : NULL;
	if ((err = normalise(r, &in)) ||
	    (err = offers_for(&in, &offers, &offering)))
		return err;
	max = in.nhosts
		  ? in.nhosts
		  : (offering < (size_t)in.total_gpus ? offering
						      : (size_t)in.total_gpus);
	p.hosts = tp_malloc(max * sizeof(uint32_t));
	p.gpus = tp_malloc(max * sizeof(int));
	if (!p.hosts || !p.gpus) {
		err = TP_ERR_NOMEM;
		goto fail;
	}
	/* the thread's CPU clock is a system call (4-6 us each on the bench
	 * VM, 2026-12-03, a loop of 200,000 calls, against 0.1 us for the
	 * monotonic clock's vDSO read): tp_place_choose's callers measure
	 * their own */
	t0 = timed ? clock_s(CLOCK_MONOTONIC) : 0;
	c0 = cpu_clock ? clock_s(CLOCK_THREAD_CPUTIME_ID) : 0;
	err = policy->choose(&in, p.hosts, p.gpus, max, &p.nhosts, why,
			     sizeof(why));
	p.decision_cpu_s =
	    cpu_clock ? clock_s(CLOCK_THREAD_CPUTIME_ID) - c0 : 0;
	p.decision_s = timed ? clock_s(CLOCK_MONOTONIC) - t0 : 0;
	why[sizeof(why) - 1] = '\0';
	if (err)
		goto fail;
	if ((err = check_answer(&in, p.hosts, p.gpus, p.nhosts, max, &bad))) {
		if (err == TP_ERR_INVAL)
			tp__log(TP_LOG_ERROR,
				"policy %s broke its contract: %s",
				policy->name, bad);
		goto fail;
	}
	tp_ring_order(in.f, p.hosts, p.gpus, p.nhosts);
	if (flags & PLACE_HOSTS)
		goto done;
	tp_span_of(in.f, p.hosts, p.nhosts, p.span);
	tp__span_min2(in.f, s, r, offers, p.min_span_free, p.min_span_empty);
	/* the request fits, so a zero minimum means tp_span_min ran out of
	 * memory (it has no error return) */
	if (!p.min_span_empty[TP_SPAN_HOSTS] ||
	    !p.min_span_free[TP_SPAN_HOSTS]) {
		err = TP_ERR_NOMEM;
		goto fail;
	}
	if (ctx && predict) {
		bytes = tp_request_bytes(r);
		tp_cost_t c;
		if ((err =
			 tp_cost_predict_best(ctx, s, p.hosts, p.gpus, p.nhosts,
					      bytes, &p.algo, &c)) ||
		    (err = ideal_cached(&in, bytes, ideal, &p.ideal_s)))
			goto fail;
		p.predicted_s = c.seconds;
		p.cross_top_bytes = c.cross_top_bytes;
	}
	if (!(p.explain = explain(&in, &p, predict, why))) {
		err = TP_ERR_NOMEM;
		goto fail;
	}
done:
	tp_free(offers);
	*out = p;
	return TP_OK;
fail:
	tp_free(offers);
	tp_placement_free(&p);
	return err;
}

tp_err_t tp_place_run(const tp_policy_t *policy, const tp_state_t *s,
		      const tp_request_t *r, const tp_policy_params_t *params,
		      const tp_cost_ctx_t *ctx, uint64_t seed,
		      tp_placement_t *out)
{
	return tp_place_run_ws(policy, s, r, params, ctx, seed, NULL, out);
}

tp_err_t tp_place_run_ws(const tp_policy_t *policy, const tp_state_t *s,
			 const tp_request_t *r,
			 const tp_policy_params_t *params,
			 const tp_cost_ctx_t *ctx, uint64_t seed,
			 tp_place_ws_t *ws, tp_placement_t *out)
{
	return place(policy, s, r, params, ctx, seed,
		     PLACE_PREDICT | PLACE_CPU_CLOCK, NULL, ws, out);
}

tp_err_t tp_place_run_cached(const tp_policy_t *policy, const tp_state_t *s,
			     const tp_request_t *r,
			     const tp_policy_params_t *params,
			     const tp_cost_ctx_t *ctx, uint64_t seed,
			     tp_ideal_cache_t *cache, tp_place_ws_t *ws,
			     tp_placement_t *out)
{
	return place(policy, s, r, params, ctx, seed, PLACE_PREDICT, cache, ws,
		     out);
}

tp_err_t tp_place_ideal(const tp_fabric_t *f, const tp_request_t *r,
			const tp_policy_params_t *params,
			const tp_cost_ctx_t *ctx, tp_ideal_cache_t *cache,
			double *seconds_p)
{
	tp_policy_params_t defaults;
	tp__policy_in_t in = {0};
	tp_state_t *empty;
	int *offers = NULL;
	size_t offering;
	double bytes;
	tp_err_t err;

	if (!f || !r || !ctx || !seconds_p)
		return TP_ERR_INVAL;
	if ((err = normalise(r, &in)))
		return err;
	bytes = tp_request_bytes(r);
	tp__ideal_t key = shape_of(&in, bytes);
	if (ideal_find(cache, &key, seconds_p))
		return TP_OK;
	/* the shape's first time: the policies' inputs on the empty fabric,
	 * as place() makes them, then the ideal itself */
	if (!(empty = tp_state_create(f)))
		return TP_ERR_NOMEM;
	tp__state_match_cost(empty, ctx);
	in_init(&in, empty, r, params, &defaults, ctx, 1);
	err = offers_for(&in, &offers, &offering);
	if (!err)
		err = ideal_cached(&in, bytes, cache, seconds_p);
	else if (err == TP_ERR_NOTFOUND) /* all hosts are up there */
		err = TP_ERR_RANGE;
	tp_free(offers);
	tp_state_destroy(empty);
	return err;
}

tp_err_t tp_place_choose(const tp_policy_t *policy, const tp_state_t *s,
			 const tp_request_t *r,
			 const tp_policy_params_t *params,
			 const tp_cost_ctx_t *ctx, uint64_t seed,
			 tp_placement_t *out)
{
	return tp_place_choose_ws(policy, s, r, params, ctx, seed, NULL, out);
}

tp_place_ws_t *tp_place_ws_create(void)
{
	tp_place_ws_t *ws = tp_calloc(1, sizeof(*ws));

	if (ws && !(ws->cost = tp__cost_ws_create())) {
		tp_free(ws);
		return NULL;
	}
	return ws;
}

void tp_place_ws_destroy(tp_place_ws_t *ws)
{
	if (!ws)
		return;
	tp__cost_ws_destroy(ws->cost);
	tp_free(ws);
}

tp_err_t tp_place_choose_ws(const tp_policy_t *policy, const tp_state_t *s,
			    const tp_request_t *r,
			    const tp_policy_params_t *params,
			    const tp_cost_ctx_t *ctx, uint64_t seed,
			    tp_place_ws_t *ws, tp_placement_t *out)
{
	return place(policy, s, r, params, ctx, seed, 0, NULL, ws, out);
}

tp_err_t tp__place_hosts(const tp_policy_t *policy, const tp_state_t *s,
			 const tp_request_t *r,
			 const tp_policy_params_t *params, uint64_t seed,
			 tp_place_ws_t *ws, tp_placement_t *out)
{
	return place(policy, s, r, params, NULL, seed, PLACE_HOSTS, NULL, ws,
		     out);
}
