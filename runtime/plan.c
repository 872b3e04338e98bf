/*
 * Building a plan: ring, ranks, groups and rail leaders, hierarchical
 * double binary trees, HCAs per rank, predictions.
 *
 * Notes:
 * - The ring is tp_ring_order()'s (groups contiguous at every level, top
 *   level first); we check that every group of every level came out as
 *   one run, because trees and groups below rely on it and the sort
 *   silently keeps the given order when it cannot allocate.
 * - Groups, rail leaders and trees come from sched/ (tp_sched.h), the one
 *   place that defines the schedules: the cost model prices the same
 *   trees and hierarchical phases the plan records here, and the
 *   collective library runs them.
 * - One prediction per algorithm, at the largest size: the model's time
 *   is a latency term plus a bandwidth term proportional to the bytes
 *   (max-min rates do not depend on the size) times the tree's pipeline
 *   fill, so smaller sizes are exact rescalings (tp_cost_seconds_at())
 *   and the expensive routing runs three times, not fifteen.
 */
#include "config.h"

#include <math.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_int.h"
#include "tp_sched.h"

/* ---- arena ---- */

struct tp__arena_blk {
	tp__arena_blk_t *next;
	size_t used, cap;
	alignas(max_align_t) unsigned char data[];
};

tp_plan_t *tp__plan_new(void)
{
	tp_plan_t *p = tp_calloc(1, sizeof(*p));

	if (p) {
		p->root[0] = p->root[1] = TP_PLAN_NONE;
		p->host_segment = true;
	}
	return p;
}

void *tp__plan_alloc(tp_plan_t *p, size_t n, size_t size)
{
	const size_t al = alignof(max_align_t);
	tp__arena_blk_t *b = p->arena;
	size_t need;

	if (size && n > SIZE_MAX / 2 / size)
		return NULL;
	need = (n * size + al - 1) / al * al;
	if (!need)
		need = al;
	if (!b || b->cap - b->used < need) {
		/* doubling up to 1 MiB: a 16,384-host plan (the SPANK
		 * plugin's peak) wastes at most that, not half its size */
		size_t cap = !b				  ? 16384
			     : b->cap < ((size_t)1 << 20) ? 2 * b->cap
							  : b->cap;
		if (cap < need)
			cap = need;
		if (!(b = tp_calloc(1, sizeof(*b) + cap)))
			return NULL;
		b->cap = cap;
		b->next = p->arena;
		p->arena = b;
	}
	b->used += need;
	return b->data + b->used - need;
}

char *tp__plan_strdup(tp_plan_t *p, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = tp__plan_alloc(p, n, 1);

	if (d)
		memcpy(d, s, n);
	return d;
}

void tp_plan_destroy(tp_plan_t *p)
{
	if (!p)
		return;
	while (p->arena) {
		tp__arena_blk_t *next = p->arena->next;
		tp_free(p->arena);
		p->arena = next;
	}
	tp_strmap_clear(&p->byname);
	tp_free(p);
}

/* ---- shared with the JSON reader ---- */

tp_err_t tp__plan_index_names(tp_plan_t *p, uint32_t *dup_p)
{
	tp_err_t err;

	for (uint32_t r = 0; r < p->nhosts; r++) {
		if (tp_strmap_get(&p->byname, p->hosts[r].name) !=
		    TP_MAP_NONE) {
			*dup_p = r;
			return TP_ERR_EXISTS;
		}
		if ((err = tp_strmap_put(&p->byname, p->hosts[r].name, r)))
			return err;
	}
	return TP_OK;
}

tp_err_t tp__plan_index_trees(tp_plan_t *p)
{
	for (int t = 0; t < 2; t++) {
		uint32_t *off = tp__plan_alloc(p, p->nhosts + 1, sizeof(*off));
		uint32_t *ch = tp__plan_alloc(p, p->nhosts, sizeof(*ch));
		if (!off || !ch)
			return TP_ERR_NOMEM;
		for (size_t r = 0; r < p->nhosts; r++)
			if (p->parent[t][r] < p->nhosts)
				off[p->parent[t][r] + 1]++;
		for (size_t r = 0; r < p->nhosts; r++)
			off[r + 1] += off[r];
		/* ascending children: fill in node rank order, then rewind */
		for (uint32_t r = 0; r < p->nhosts; r++)
			if (p->parent[t][r] < p->nhosts)
				ch[off[p->parent[t][r]]++] = r;
		for (size_t r = p->nhosts; r > 0; r--)
			off[r] = off[r - 1];
		off[0] = 0;
		p->coff[t] = off;
		p->child[t] = ch;
	}
	return TP_OK;
}

bool tp__plan_tree_ok(const tp_plan_t *p, int t, uint32_t *bad_p)
{
	const uint32_t *par = p->parent[t];
	uint8_t *state;

	if (p->root[t] >= p->nhosts || par[p->root[t]] != TP_PLAN_NONE) {
		*bad_p = p->root[t];
		return false;
	}
	/* 0 unvisited, 1 on the current walk, 2 known to reach the root */
	if (!(state = tp_calloc(p->nhosts, 1))) {
		*bad_p = TP_PLAN_NONE;
		return false;
	}
	state[p->root[t]] = 2;
	for (uint32_t r = 0; r < p->nhosts; r++) {
		uint32_t x = r;
		while (state[x] == 0) {
			state[x] = 1;
			if (par[x] >= p->nhosts)
				break; /* a second root */
			x = par[x];
		}
		if (state[x] == 1) {
			*bad_p = x;
			tp_free(state);
			return false;
		}
		for (x = r; state[x] == 1; x = par[x])
			state[x] = 2;
	}
	tp_free(state);
	return true;
}

/* Some host's ranks leave by two NICs or more. */
static bool multi_nic(const tp_plan_t *p)
{
	for (size_t i = 0; i < p->nhosts; i++) {
		const tp_plan_host_t *h = &p->hosts[i];
		for (uint32_t l = 1; l < h->nranks; l++)
			if (h->ranks[0].rail >= 0 && h->ranks[l].rail >= 0 &&
			    h->ranks[l].rail != h->ranks[0].rail)
				return true;
	}
	return false;
}

/* Tree up to 1 MiB on more than two hosts, else ring, or hierarchical
 * where a host's ranks leave by several NICs; see
 * tp_plan_recommend_basis(). */
static tp_algo_t rule(const tp_plan_t *p, double bytes)
{
	if (bytes <= 1048576 && p->nhosts > 2)
		return TP_ALGO_TREE;
	/* The library's ring crosses each host boundary on one NIC (its
	 * last rank's to the next host's first), where the hierarchical
	 * all-reduce carries every rank's shard on the rank's own NIC: on
	 * hosts of 8 GPUs and 8 NICs 8x the ring's bytes across hosts. */
	if (multi_nic(p))
		return TP_ALGO_HIERARCHICAL;
	/* The plan's ring already crosses each group boundary the fewest
	 * times; hierarchical moves as many bytes across groups in more
	 * steps (measured on the emulated 2-leaf fabric, one rank a host,
	 * 16-64 MiB: 31 vs 45 MB/s busbw). With predictions the model
	 * decides instead. */
	return TP_ALGO_RING;
}

void tp__plan_recommend(tp_plan_t *p)
{
	for (size_t i = 0; i < p->nsizes; i++) {
		int best = -1;
		for (int a = 0; p->predicted && a < TP_PLAN_NALGOS; a++)
			if (!isnan(p->pred[a][i]) &&
			    (best < 0 || p->pred[a][i] < p->pred[best][i]))
				best = a;
		p->rec_model[i] = best >= 0;
		p->rec[i] = best >= 0 ? (tp_algo_t)best : rule(p, p->sizes[i]);
	}
}

/* ---- building ---- */

void tp_plan_opts_defaults(tp_plan_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->predict = true;
}

static const double default_sizes[] = {65536.0, 1048576.0, 16777216.0,
				       268435456.0, 1073741824.0};

/* The job as sched/ sees it: node r is fidx[r] of the fabric. */
typedef struct sjob {
	const tp_plan_t *p;
	const tp_fabric_t *f;
	const uint32_t *fidx;
} sjob_t;

static uint32_t sjob_group(const void *arg, size_t r, int level)
{
	const sjob_t *j = arg;

	return tp_fabric_host(j->f, j->fidx[r])->group[level];
}

static uint32_t sjob_nranks(const void *arg, size_t r)
{
	const sjob_t *j = arg;

	return j->p->hosts[r].nranks;
}

static uint64_t sjob_rails(const void *arg, size_t r)
{
	const sjob_t *j = arg;
	const tp_plan_host_t *h = &j->p->hosts[r];
	uint64_t m = 0;

	for (uint32_t l = 0; l < h->nranks; l++)
		if (h->ranks[l].rail >= 0 &&
		    h->ranks[l].rail < TP_SCHED_MAX_RAILS)
			m |= 1ULL << h->ranks[l].rail;
	return m;
}

static int sjob_rank_rail(const void *arg, size_t r, uint32_t l)
{
	const sjob_t *j = arg;
	const tp_plan_host_t *h = &j->p->hosts[r];

	return l < h->nranks ? h->ranks[l].rail : -1;
}

/* The trees, as sched/ builds them for every consumer. */
static void copy_trees(tp_plan_t *p, const tp_sched_t *s)
{
	for (int t = 0; t < 2; t++) {
		for (size_t r = 0; r < p->nhosts; r++)
			p->parent[t][r] = tp_sched_tree_parent(s, t, r);
		p->root[t] = tp_sched_tree_root(s, t);
	}
}

/* Every group of every level one run in the ring (see the notes). */
static bool ring_contiguous(const tp_fabric_t *f, const uint32_t *fidx,
			    size_t n, int nlev, uint8_t *seen, size_t ng)
{
	for (int l = 0; l < nlev; l++) {
		memset(seen, 0, ng);
		for (size_t r = 0; r < n; r++) {
			uint32_t g = tp_fabric_host(f, fidx[r])->group[l];
			if (g >= ng ||
			    (r &&
			     g == tp_fabric_host(f, fidx[r - 1])->group[l]))
				continue;
			if (seen[g])
				return false;
			seen[g] = 1;
		}
	}
	return true;
}

/* Rail of the CA at position i of a host (tp_ca_t.rail: its subnet on a
 * fabric with one subnet per rail, else its position, kept across a
 * missing CA). */
static int rail_of(const tp_fabric_t *f, const tp_host_t *hp, size_t i)
{
	return tp_fabric_ca(f, hp->cas[i])->rail;
}

/* The host's named CAs past each rail's first (hcas[]), nmore of them,
 * rail by rail: on a fabric whose rails are subnets a host may have
 * several CAs on one, and NCCL should use them all. */
static tp_err_t fill_more(tp_plan_t *p, const tp_fabric_t *f,
			  const tp_host_t *hp, const char *const *dev,
			  const char *const *hcas, uint32_t nmore,
			  tp_plan_host_t *h)
{
	tp_plan_hca_t *more = tp__plan_alloc(p, nmore, sizeof(*more));
	uint32_t m = 0;

	if (!more)
		return TP_ERR_NOMEM;
	for (int rail = 0; rail < p->nrails; rail++)
		for (size_t i = 0; i < hp->ncas; i++)
			if (rail_of(f, hp, i) == rail && dev[i] &&
			    dev[i] != hcas[rail])
				more[m++] = (tp_plan_hca_t){dev[i], rail};
	h->more_hcas = more;
	h->nmore_hcas = m;
	return TP_OK;
}

/* The hosts' ranks: cnt[fabric host] each (when given), else gph each
 * (0: one a GPU, one without GPUs). */
static tp_err_t fill_hosts(tp_plan_t *p, const tp_fabric_t *f,
			   const uint32_t *fidx, int gph, const uint32_t *cnt,
			   char **err_p)
{
	int nrails = 0;
	uint32_t rank = 0;

	for (size_t r = 0; r < p->nhosts; r++) {
		const tp_host_t *hp = tp_fabric_host(f, fidx[r]);
		for (size_t i = 0; i < hp->ncas; i++)
			if (rail_of(f, hp, i) + 1 > nrails)
				nrails = rail_of(f, hp, i) + 1;
		if (!cnt && gph > 0 && hp->ngpus && (size_t)gph > hp->ngpus)
			return tp_fail(err_p, TP_ERR_RANGE,
				       "host '%s' has %zu GPUs, %d asked for",
				       hp->name, hp->ngpus, gph);
	}
	p->nrails = nrails;
	for (uint32_t r = 0; r < p->nhosts; r++) {
		const tp_host_t *hp = tp_fabric_host(f, fidx[r]);
		tp_plan_host_t *h = &p->hosts[r];
		uint32_t nr = cnt	  ? cnt[fidx[r]]
			      : gph > 0	  ? (uint32_t)gph
			      : hp->ngpus ? (uint32_t)hp->ngpus
					  : 1;
		tp_plan_rank_t *rk = tp__plan_alloc(p, nr, sizeof(*rk));
		uint32_t nmore = 0;
		tp_err_t err;
		const char **hcas = tp__plan_alloc(
		    p, nrails ? (size_t)nrails : 1, sizeof(char *));
		/* one copy of each device name, shared by hcas[] and ranks */
		const char **dev =
		    tp__plan_alloc(p, hp->ncas ? hp->ncas : 1, sizeof(char *));

		if (!rk || !hcas || !dev ||
		    !(h->name = tp__plan_strdup(p, hp->name)))
			return TP_ERR_NOMEM;
		for (size_t i = 0; i < hp->ncas; i++) {
			const char *d = tp_fabric_ca(f, hp->cas[i])->dev;
			int rail = rail_of(f, hp, i);
			if (d && !(dev[i] = tp__plan_strdup(p, d)))
				return TP_ERR_NOMEM;
			if (!hcas[rail])
				hcas[rail] = dev[i];
			else if (dev[i])
				nmore++;
		}
		if (nmore && (err = fill_more(p, f, hp, dev, hcas, nmore, h)))
			return err;
		for (uint32_t l = 0; l < nr; l++) {
			int ca = tp_host_rank_ca(hp, l, nr);
			rk[l].rank = rank + l;
			rk[l].gpu = l < hp->ngpus ? (int)l : -1;
			rk[l].rail = -1;
			if (ca >= 0) {
				rk[l].rail = rail_of(f, hp, (size_t)ca);
				rk[l].hca = dev[ca];
			}
		}
		h->node_rank = r;
		h->first_rank = rank;
		h->nranks = nr;
		h->ranks = rk;
		h->hcas = hcas;
		rank += nr;
	}
	p->world = rank;
	return TP_OK;
}

/* The ranks' weights (tp_plan_opts_t.nics_by_rate): none when the hosts
 * run different rank counts (the hierarchical schedule is then the ring)
 * or tp_fabric_rank_weights() finds them even. */
static tp_err_t fill_weights(tp_plan_t *p, const tp_fabric_t *f,
			     const uint32_t *fidx, char **err_p)
{
	uint32_t g = p->hosts[0].nranks, w[TP_MAX_RANK_WEIGHTS], *link;
	bool on;

	for (size_t r = 1; r < p->nhosts; r++)
		if (p->hosts[r].nranks != g)
			return TP_OK;
	if (!(link = tp_malloc((tp_fabric_ncas(f) + 1) * sizeof(uint32_t))))
		return tp_fail(err_p, TP_ERR_NOMEM, "out of memory");
	tp_fabric_ca_cables(f, link);
	on = tp_fabric_rank_weights(f, link, fidx, p->nhosts, g, w);
	tp_free(link);
	if (!on)
		return TP_OK;
	if (!(p->weight = tp__plan_alloc(p, g, sizeof(uint32_t))))
		return tp_fail(err_p, TP_ERR_NOMEM, "out of memory");
	memcpy(p->weight, w, g * sizeof(uint32_t));
	p->nweight = g;
	return TP_OK;
}

/* Groups are the schedule's level-1 units, which the contiguous ring
 * makes runs of node ranks. */
static tp_err_t fill_groups(tp_plan_t *p, const tp_fabric_t *f,
			    const uint32_t *fidx, const tp_sched_t *s)
{
	p->ngroups = tp_sched_ngroups(s);
	if (!(p->groups = tp__plan_alloc(p, p->ngroups, sizeof(*p->groups))))
		return TP_ERR_NOMEM;
	for (size_t g = 0; g < p->ngroups; g++) {
		const uint32_t *m;
		size_t k = tp_sched_group_nodes(s, g, &m);
		const tp_host_t *hp = tp_fabric_host(f, fidx[m[0]]);
		tp_plan_group_t *gp = &p->groups[g];

		gp->id = hp->group[0];
		gp->spine =
		    hp->group[0] == TP_ID_NONE ? TP_ID_NONE : hp->group[1];
		gp->first = gp->leader = m[0];
		gp->nhosts = (uint32_t)k;
		for (size_t i = 0; i < k; i++)
			p->hosts[m[i]].group = (uint32_t)g;
	}
	return TP_OK;
}

/* Rail leaders are sched/'s (tp_sched_rail_leader: rail r by the group's
 * (r mod nhosts)-th host or the next one round with the rail), through
 * the lowest local rank on the rail. Informational since the
 * hierarchical schedule sends every rank's shard on its own rail: kept
 * in the plan (and its JSON) for readers that want one host per rail. */
static tp_err_t fill_rail_leaders(tp_plan_t *p, const tp_sched_t *s)
{
	for (size_t g = 0; g < p->ngroups && p->nrails > 1; g++) {
		tp_plan_group_t *gp = &p->groups[g];
		tp_plan_rail_leader_t *rl =
		    tp__plan_alloc(p, (size_t)p->nrails, sizeof(*rl));
		size_t m = 0;
		if (!rl)
			return TP_ERR_NOMEM;
		for (int rail = 0; rail < p->nrails; rail++) {
			uint32_t r = tp_sched_rail_leader(s, g, rail);
			const tp_plan_host_t *h;
			if (r == TP_SCHED_NONE)
				continue;
			h = &p->hosts[r];
			for (uint32_t l = 0; l < h->nranks; l++)
				if (h->ranks[l].rail == rail) {
					rl[m].rail = rail;
					rl[m].node_rank = r;
					rl[m].local_rank = l;
					m++;
					break;
				}
		}
		gp->rail_leaders = rl;
		gp->nrail_leaders = m;
	}
	return TP_OK;
}

static tp_err_t predict(tp_plan_t *p, const tp_cost_ctx_t *ctx,
			const tp_state_t *state, const uint32_t *fidx)
{
	double ref = p->sizes[p->nsizes - 1];
	int *gpus = tp_malloc(p->nhosts * sizeof(int));
	tp_err_t err = TP_OK, why = TP_OK;
	tp_strbuf_t missing = {0};

	if (!gpus)
		return TP_ERR_NOMEM;
	for (size_t r = 0; r < p->nhosts; r++)
		gpus[r] = (int)p->hosts[r].nranks;
	p->predicted = true;
	p->host_segment = !tp_cost_ctx_params(ctx)->host_ring;
	for (int a = 0; a < TP_PLAN_NALGOS; a++) {
		tp_cost_t c;
		tp_err_t e = tp_cost_predict(ctx, state, fidx, gpus, p->nhosts,
					     ref, (tp_algo_t)a, &c);
		if (e == TP_ERR_NOMEM) {
			err = e;
			break;
		}
		for (size_t i = 0; i < p->nsizes; i++) {
			double t =
			    e ? NAN : tp_cost_seconds_at(&c, ref, p->sizes[i]);
			/* hierarchical: pipelined or in one piece, the
			 * faster (the library runs the plan's choice) */
			if (!e && a == TP_ALGO_HIERARCHICAL) {
				double one =
				    tp_cost_one_piece_at(&c, ref, p->sizes[i]);
				p->hier_pipe[i] = t < one ? 2 : 1;
				t = t < one ? t : one;
			}
			p->pred[a][i] = t;
		}
		if (e) {
			tp_strbuf_printf(&missing, "%s%s", why ? ", " : "",
					 tp_algo_name((tp_algo_t)a));
			why = e;
		}
	}
	if (!err && why)
		tp__log(TP_LOG_WARN,
			"plan for %zu hosts from %s: no %s "
			"prediction: %s",
			p->nhosts, p->hosts[0].name,
			missing.failed ? "?" : missing.buf, tp_strerror(why));
	tp_free(missing.buf);
	tp_free(gpus);
	return err;
}

static tp_err_t check_opts(const tp_plan_opts_t *o, char **err_p)
{
	if (o->gpus_per_host < 0 || o->gpus_per_host > TP_PLAN_MAX_HOST_RANKS)
		return tp_fail(err_p, TP_ERR_INVAL,
			       "gpus per host %d out of range 0..%d",
			       o->gpus_per_host, TP_PLAN_MAX_HOST_RANKS);
	if (!o->sizes)
		return TP_OK;
	if (!o->nsizes || o->nsizes > TP_PLAN_MAX_SIZES)
		return tp_fail(err_p, TP_ERR_INVAL,
			       "%zu message sizes (expected 1..%d)", o->nsizes,
			       TP_PLAN_MAX_SIZES);
	for (size_t i = 0; i < o->nsizes; i++)
		if (!(o->sizes[i] > 0) || !isfinite(o->sizes[i]) ||
		    (i && !(o->sizes[i] > o->sizes[i - 1])))
			return tp_fail(err_p, TP_ERR_INVAL,
				       "message size %zu (%g): sizes must be "
				       "positive and ascending",
				       i, o->sizes[i]);
	return TP_OK;
}

tp_err_t tp_plan_build(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
		       const char *const *hosts, size_t n,
		       const tp_plan_opts_t *opts, tp_plan_t **plan_p,
		       char **err_p)
{
	tp_plan_opts_t def;
	size_t ngf;
	int nlev;
	uint32_t *fidx = NULL, *cnt = NULL, dup;
	uint8_t *seen = NULL;
	tp_sched_t *sch = NULL;
	tp_plan_t *p = NULL;
	sjob_t sj;
	tp_sched_job_t job;
	tp_err_t err;

	if (!f || !plan_p)
		return tp_fail(err_p, TP_ERR_INVAL, "no fabric or output");
	if (!opts) {
		tp_plan_opts_defaults(&def);
		opts = &def;
	}
	if ((err = check_opts(opts, err_p)))
		return err;
	if (ctx && opts->predict &&
	    tp_cost_ctx_params(ctx)->nics_by_rate != opts->nics_by_rate)
		return tp_fail(err_p, TP_ERR_INVAL,
			       "NICs by rate: the plan %s, the cost model %s",
			       opts->nics_by_rate ? "on" : "off",
			       opts->nics_by_rate ? "off" : "on");
	if (opts->state && tp_state_fabric(opts->state) != f)
		return tp_fail(err_p, TP_ERR_INVAL,
			       "the link state is another fabric's");
	if (!hosts || !n)
		return tp_fail(err_p, TP_ERR_INVAL, "empty host list");
	if (n >= TP_PLAN_NONE)
		return tp_fail(err_p, TP_ERR_RANGE, "%zu hosts: too many", n);
	ngf = tp_fabric_ngroups(f);
	nlev = tp_fabric_ngroup_levels(f);
	if (nlev > TP_MAX_LEVELS)
		nlev = TP_MAX_LEVELS;
	fidx = tp_malloc(n * sizeof(*fidx));
	seen = tp_calloc(ngf ? ngf : 1, 1); /* ring_contiguous's */
	if (!fidx || !seen) {
		err = tp_fail(err_p, TP_ERR_NOMEM, "out of memory");
		goto out;
	}
	size_t bad = 0;
	switch ((err = tp_fabric_hosts_find(f, hosts, n, fidx, &bad))) {
	case TP_OK:
		break;
	case TP_ERR_INVAL:
		err = tp_fail(err_p, err, "host %zu: NULL", bad);
		goto out;
	case TP_ERR_NOTFOUND:
		err =
		    tp_fail(err_p, err, "unknown host '%s' (not in the fabric)",
			    hosts[bad]);
		goto out;
	case TP_ERR_EXISTS:
		err = tp_fail(err_p, TP_ERR_INVAL, "host '%s' listed twice",
			      hosts[bad]);
		goto out;
	default:
		err = tp_fail(err_p, err, "out of memory");
		goto out;
	}
	if (opts->ranks) {
		if (!(cnt = tp_calloc(tp_fabric_nhosts(f) + 1,
				      sizeof(uint32_t)))) {
			err = tp_fail(err_p, TP_ERR_NOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			if (opts->ranks[i] < 1) {
				err = tp_fail(err_p, TP_ERR_INVAL,
					      "host '%s': no ranks", hosts[i]);
				goto out;
			}
			/* a step may run more (srun --overcommit): RANGE,
			 * which its caller tells from a fault */
			if (opts->ranks[i] > TP_PLAN_MAX_HOST_RANKS) {
				err =
				    tp_fail(err_p, TP_ERR_RANGE,
					    "host '%s': %u ranks, more than a "
					    "plan's %d a host",
					    hosts[i], opts->ranks[i],
					    TP_PLAN_MAX_HOST_RANKS);
				goto out;
			}
			cnt[fidx[i]] = opts->ranks[i];
		}
	}
	tp_ring_order(f, fidx, NULL, n);
	if (!ring_contiguous(f, fidx, n, nlev, seen, ngf)) {
		err =
		    tp_fail(err_p, TP_ERR_NOMEM, "out of memory (ring order)");
		goto out;
	}

	err = TP_ERR_NOMEM;
	if (!(p = tp__plan_new()))
		goto nomem;
	p->nhosts = n;
	p->nsizes = opts->sizes ? opts->nsizes : 5;
	memcpy(p->sizes, opts->sizes ? opts->sizes : default_sizes,
	       p->nsizes * sizeof(double));
	for (int a = 0; a < TP_PLAN_NALGOS; a++)
		for (size_t i = 0; i < TP_PLAN_MAX_SIZES; i++)
			p->pred[a][i] = NAN;
	if (!(p->hosts = tp__plan_alloc(p, n, sizeof(*p->hosts))) ||
	    !(p->parent[0] = tp__plan_alloc(p, n, sizeof(uint32_t))) ||
	    !(p->parent[1] = tp__plan_alloc(p, n, sizeof(uint32_t))))
		goto nomem;
	err = fill_hosts(p, f, fidx, opts->gpus_per_host, cnt, err_p);
	if (err == TP_ERR_NOMEM)
		goto nomem;
	if (err)
		goto out;
	if (p->nrails > TP_SCHED_MAX_RAILS) {
		err = tp_fail(err_p, TP_ERR_RANGE, "%d rails: at most %d",
			      p->nrails, TP_SCHED_MAX_RAILS);
		goto out;
	}
	if (opts->nics_by_rate && (err = fill_weights(p, f, fidx, err_p)))
		goto out;
	sj = (sjob_t){p, f, fidx};
	job = (tp_sched_job_t){.n = n,
			       .nlevels = nlev,
			       .nrails = p->nrails,
			       .arg = &sj,
			       .group = sjob_group,
			       .nranks = sjob_nranks,
			       .rails = sjob_rails,
			       .rank_rail = sjob_rank_rail,
			       .weight = p->weight};
	if ((err = tp_sched_build(&job, TP_SCHED_TREE, &sch)) ||
	    (err = fill_groups(p, f, fidx, sch)) ||
	    (err = fill_rail_leaders(p, sch)))
		goto nomem;
	copy_trees(p, sch);
	/* names are unique in a fabric: only NOMEM can fail here */
	if ((err = tp__plan_index_names(p, &dup)) ||
	    (err = tp__plan_index_trees(p)))
		goto nomem;
	if (ctx && opts->predict && (err = predict(p, ctx, opts->state, fidx)))
		goto nomem;
	tp__plan_recommend(p);
	*plan_p = p;
	p = NULL;
	err = TP_OK;
	goto out;
nomem:
	err = tp_fail(err_p, TP_ERR_NOMEM, "out of memory");
out:
	tp_sched_destroy(sch);
	tp_free(fidx);
	tp_free(cnt);
	tp_free(seen);
	tp_plan_destroy(p);
	return err;
}

/* ---- the plan's schedule ---- */

static uint32_t pjob_group(const void *arg, size_t r, int level)
{
	const tp_plan_t *p = arg;
	uint32_t g = p->hosts[r].group;

	return level == 0 ? g : p->groups[g].spine;
}

static uint32_t pjob_nranks(const void *arg, size_t r)
{
	const tp_plan_t *p = arg;

	return p->hosts[r].nranks;
}

static uint64_t pjob_rails(const void *arg, size_t r)
{
	sjob_t j = {arg, NULL, NULL};

	return sjob_rails(&j, r);
}

static int pjob_rank_rail(const void *arg, size_t r, uint32_t l)
{
	sjob_t j = {arg, NULL, NULL};

	return sjob_rank_rail(&j, r, l);
}

tp_err_t tp_plan_sched(const tp_plan_t *p, tp_sched_algo_t algo,
		       tp_sched_t **sched_p)
{
	tp_sched_job_t job;
	tp_sched_t *s = NULL;
	tp_err_t err;

	if (!p || !sched_p || !p->nhosts)
		return TP_ERR_INVAL;
	if (p->nrails > TP_SCHED_MAX_RAILS)
		return TP_ERR_RANGE;
	job = (tp_sched_job_t){.n = p->nhosts,
			       .nlevels = 2,
			       .nrails = p->nrails,
			       .arg = p,
			       .group = pjob_group,
			       .nranks = pjob_nranks,
			       .rails = pjob_rails,
			       .rank_rail = pjob_rank_rail,
			       .weight = p->weight};
	if ((err = tp_sched_build(&job, algo, &s)))
		return err;
	for (int t = 0; algo == TP_SCHED_TREE && t < 2; t++)
		for (size_t r = 0; r < p->nhosts; r++)
			if (tp_sched_tree_parent(s, t, r) != p->parent[t][r]) {
				tp_sched_destroy(s);
				return TP_ERR_UNSUPPORTED;
			}
	*sched_p = s;
	return TP_OK;
}

/* ---- accessors ---- */

size_t tp_plan_nhosts(const tp_plan_t *p)
{
	return p ? p->nhosts : 0;
}

size_t tp_plan_world_size(const tp_plan_t *p)
{
	return p ? p->world : 0;
}

int tp_plan_nrails(const tp_plan_t *p)
{
	return p ? p->nrails : 0;
}

const tp_plan_host_t *tp_plan_host(const tp_plan_t *p, size_t r)
{
	return p && r < p->nhosts ? &p->hosts[r] : NULL;
}

uint32_t tp_plan_rank_of(const tp_plan_t *p, const char *host)
{
	return p && host ? tp_strmap_get(&p->byname, host) : TP_PLAN_NONE;
}

size_t tp_plan_ngroups(const tp_plan_t *p)
{
	return p ? p->ngroups : 0;
}

const tp_plan_group_t *tp_plan_group(const tp_plan_t *p, size_t i)
{
	return p && i < p->ngroups ? &p->groups[i] : NULL;
}

uint32_t tp_plan_tree_root(const tp_plan_t *p, int t)
{
	return p && (t == 0 || t == 1) ? p->root[t] : TP_PLAN_NONE;
}

uint32_t tp_plan_tree_parent(const tp_plan_t *p, int t, size_t r)
{
	if (!p || (t != 0 && t != 1) || r >= p->nhosts)
		return TP_PLAN_NONE;
	return p->parent[t][r];
}

size_t tp_plan_tree_children(const tp_plan_t *p, int t, size_t r,
			     const uint32_t **children_p)
{
	if (!p || (t != 0 && t != 1) || r >= p->nhosts || !children_p)
		return 0;
	*children_p = p->child[t] + p->coff[t][r];
	return p->coff[t][r + 1] - p->coff[t][r];
}

size_t tp_plan_nsizes(const tp_plan_t *p)
{
	return p ? p->nsizes : 0;
}

double tp_plan_size(const tp_plan_t *p, size_t i)
{
	return p && i < p->nsizes ? p->sizes[i] : 0;
}

bool tp_plan_predicted(const tp_plan_t *p)
{
	return p && p->predicted;
}

double tp_plan_predict_s(const tp_plan_t *p, size_t i, tp_algo_t a)
{
	if (!p || !p->predicted || i >= p->nsizes || (int)a < 0 ||
	    (int)a >= TP_PLAN_NALGOS)
		return NAN;
	return p->pred[a][i];
}

tp_algo_t tp_plan_recommend(const tp_plan_t *p, size_t i)
{
	return p && i < p->nsizes ? p->rec[i] : TP_ALGO_RING;
}

const uint32_t *tp_plan_rank_weights(const tp_plan_t *p, uint32_t *n_p)
{
	if (n_p)
		*n_p = p ? p->nweight : 0;
	return p ? p->weight : NULL;
}

bool tp_plan_host_segment(const tp_plan_t *p)
{
	return !p || p->host_segment;
}

int tp_plan_hier_pipelined(const tp_plan_t *p, size_t i)
{
	return p && i < p->nsizes && p->hier_pipe[i] ? p->hier_pipe[i] - 1 : -1;
}

const char *tp_plan_recommend_basis(const tp_plan_t *p, size_t i)
{
	return p && i < p->nsizes && p->rec_model[i] ? "model" : "rule";
}
