/*
 * Building collective schedules (see tp_sched.h for what each one is).
 *
 * Notes:
 * - Grouping is by key, not by runs, so a caller handing an order in
 *   which a group is not contiguous still gets one unit per group (the
 *   cost model prices arbitrary orders); for the plan's ring order the
 *   two agree. Each level sorts (key, index) pairs: O(n log n) per level,
 *   no maps.
 * - Everything but the edges lives in one block sized from n, the edges
 *   in a second one counted once the groups are known: two allocations
 *   per schedule, which the cost model's hot path can afford.
 * - The tree builder is NCCL's btree/dtree applied level by level, the
 *   same parent formulas the plan always used, so plans built before and
 *   after this module are identical.
 */
#include "config.h"

#include <math.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tp_sched.h"

#define MAX_PHASES 5

struct tp_sched {
	tp_sched_algo_t algo;
	size_t n, nranks;
	int nrails;
	uint32_t *gr;	/* [node] group */
	uint32_t *gmem; /* members, group by group */
	uint32_t *goff; /* [ngroups + 1] into gmem */
	size_t ngroups;
	uint32_t nchan;	  /* hierarchical: channels C */
	bool host_seg;	  /* hierarchical: host phases through the segment */
	uint32_t *leader; /* [group * nrails + rail] */
	uint32_t *parent[2];
	uint32_t root[2], depth[2];
	size_t nphases;
	tp_sched_phase_t ph[MAX_PHASES];
	tp_sched_edge_t *edges;
};

typedef struct kv {
	uint32_t key, i;
} kv_t;

static int kv_cmp(const void *x, const void *y)
{
	const kv_t *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* Scratch of one build, carved from the schedule's block. */
typedef struct work {
	const tp_sched_job_t *job;
	uint32_t *nr;	 /* [node] local ranks */
	uint64_t *rails; /* [node] */
	kv_t *kv, *kv2;
	uint32_t *cls, *id, *fill;
	uint32_t *ufirst, *uroot, *vfirst, *vroot; /* units of a level */
	uint32_t *cnt;				   /* [node] channels */
	uint32_t gmax, kmax;
	double wsum, wmax; /* hierarchical: job->weight's sum and largest */
} work_t;

/*
 * Classes of items 0..nu-1 by key[i] (kv[i].key), numbered in order of
 * their first item; with alone, TP_SCHED_NOKEY items are classes of their
 * own. Fills cls[item], off[0..nc] and mem[] (items ascending per class);
 * returns nc.
 */
static size_t classify(work_t *w, size_t nu, bool alone, uint32_t *off,
		       uint32_t *mem)
{
	size_t nr = 0;

	tp_sort(w->kv, nu, sizeof(kv_t), kv_cmp);
	for (size_t a = 0, b; a < nu; a = b) {
		b = a + 1;
		if (!(alone && w->kv[a].key == TP_SCHED_NOKEY))
			while (b < nu && w->kv[b].key == w->kv[a].key)
				b++;
		/* sorted by index within a key: kv[a] is the first item */
		w->kv2[nr] = (kv_t){w->kv[a].i, (uint32_t)nr};
		for (size_t x = a; x < b; x++)
			w->cls[w->kv[x].i] = (uint32_t)nr;
		nr++;
	}
	tp_sort(w->kv2, nr, sizeof(kv_t), kv_cmp);
	for (size_t r = 0; r < nr; r++)
		w->id[w->kv2[r].i] = (uint32_t)r;
	memset(off, 0, (nr + 1) * sizeof(uint32_t));
	for (size_t i = 0; i < nu; i++) {
		w->cls[i] = w->id[w->cls[i]];
		off[w->cls[i] + 1]++;
	}
	for (size_t r = 0; r < nr; r++)
		off[r + 1] += off[r];
	memcpy(w->fill, off, nr * sizeof(uint32_t));
	for (size_t i = 0; i < nu; i++)
		mem[w->fill[w->cls[i]]++] = (uint32_t)i;
	return nr;
}

/* NCCL's binary tree (ncclGetBtree): 0 is the root; a rank's parent
 * clears its lowest set bit and sets the next one up, folding back when
 * that leaves the range. */
static uint32_t btree_parent(uint32_t r, uint32_t n)
{
	uint32_t bit, up;

	if (r == 0)
		return TP_SCHED_NONE;
	bit = r & (~r + 1);
	up = (r ^ bit) | (bit << 1);
	return up < n ? up : (r ^ bit);
}

/* ncclGetDtree: mirrored for even n, shifted by one for odd n. */
static uint32_t dtree_parent(uint32_t r, uint32_t n)
{
	uint32_t p;

	if (n % 2) {
		p = btree_parent((r + n - 1) % n, n);
		return p == TP_SCHED_NONE ? p : (p + 1) % n;
	}
	p = btree_parent(n - 1 - r, n);
	return p == TP_SCHED_NONE ? p : n - 1 - p;
}

static uint32_t tree_parent(int t, uint32_t r, uint32_t n)
{
	return t ? dtree_parent(r, n) : btree_parent(r, n);
}

static uint32_t tree_root(int t, uint32_t n)
{
	if (!t || n == 1)
		return 0;
	return n % 2 ? 1 : n - 1;
}

static uint32_t key_of(const tp_sched_job_t *j, size_t node, int level)
{
	if (level >= j->nlevels)
		return level == 0 ? TP_SCHED_NOKEY : 0;
	return j->group(j->arg, node, level);
}

static void build_groups(tp_sched_t *s, work_t *w)
{
	for (size_t r = 0; r < s->n; r++)
		w->kv[r] = (kv_t){key_of(w->job, r, 0), (uint32_t)r};
	s->ngroups = classify(w, s->n, true, s->goff, s->gmem);
	memcpy(s->gr, w->cls, s->n * sizeof(uint32_t));
	w->kmax = 0;
	for (size_t g = 0; g < s->ngroups; g++)
		if (s->goff[g + 1] - s->goff[g] > w->kmax)
			w->kmax = s->goff[g + 1] - s->goff[g];
}

/* Bottom-up: trees inside the groups, then over the units' roots inside
 * each unit of the next level, up to one unit. */
static void build_tree(tp_sched_t *s, work_t *w, int t)
{
	uint32_t *par = s->parent[t], *off = w->fill + s->n + 1;
	uint32_t *mem = off + s->n + 1;
	size_t nu = s->ngroups;

	for (size_t g = 0; g < s->ngroups; g++) {
		const uint32_t *m = &s->gmem[s->goff[g]];
		uint32_t k = s->goff[g + 1] - s->goff[g];
		for (uint32_t i = 0; i < k; i++) {
			uint32_t up = tree_parent(t, i, k);
			par[m[i]] = up == TP_SCHED_NONE ? up : m[up];
		}
		w->ufirst[g] = m[0];
		w->uroot[g] = m[tree_root(t, k)];
	}
	/* the last level (key 0 for all) joins what is left, even when the
	 * job describes no levels */
	int top = w->job->nlevels > 0 ? w->job->nlevels : 1;

	for (int lv = 1; lv <= top && nu > 1; lv++) {
		size_t nv;
		for (size_t u = 0; u < nu; u++)
			w->kv[u] = (kv_t){key_of(w->job, w->ufirst[u], lv),
					  (uint32_t)u};
		nv = classify(w, nu, false, off, mem);
		for (size_t c = 0; c < nv; c++) {
			const uint32_t *m = &mem[off[c]];
			uint32_t k = off[c + 1] - off[c];
			for (uint32_t i = 0; i < k; i++) {
				uint32_t up = tree_parent(t, i, k);
				if (up != TP_SCHED_NONE)
					par[w->uroot[m[i]]] = w->uroot[m[up]];
			}
			w->vfirst[c] = w->ufirst[m[0]];
			w->vroot[c] = w->uroot[m[tree_root(t, k)]];
		}
		memcpy(w->ufirst, w->vfirst, nv * sizeof(uint32_t));
		memcpy(w->uroot, w->vroot, nv * sizeof(uint32_t));
		nu = nv;
	}
	s->root[t] = w->uroot[0];
	/* depth: walk up to a node of known depth, then fill back */
	s->depth[t] = 0;
	memset(w->cnt, 0xff, s->n * sizeof(uint32_t));
	w->cnt[s->root[t]] = 0;
	for (size_t r = 0; r < s->n; r++) {
		uint32_t x = (uint32_t)r, d;
		while (w->cnt[x] == TP_SCHED_NONE)
			x = par[x];
		d = w->cnt[x];
		for (size_t y = r; w->cnt[y] == TP_SCHED_NONE; y = par[y])
			d++;
		for (size_t y = r; w->cnt[y] == TP_SCHED_NONE; y = par[y])
			w->cnt[y] = d--;
		if (w->cnt[r] > s->depth[t])
			s->depth[t] = w->cnt[r];
	}
}

/* Rail r of a group: its (r mod size)-th member, or the next one round
 * driving r (the plan's rule). */
static void build_leaders(tp_sched_t *s, work_t *w)
{
	for (size_t g = 0; g < s->ngroups && s->nrails > 1; g++) {
		const uint32_t *m = &s->gmem[s->goff[g]];
		uint32_t k = s->goff[g + 1] - s->goff[g];
		for (int r = 0; r < s->nrails; r++) {
			uint32_t *l = &s->leader[g * (size_t)s->nrails + r];
			*l = TP_SCHED_NONE;
			for (uint32_t j = 0; j < k && *l == TP_SCHED_NONE;
			     j++) {
				uint32_t x = m[((uint32_t)r + j) % k];
				if (w->rails[x] >> r & 1)
					*l = x;
			}
		}
	}
}

static tp_sched_edge_t *put(tp_sched_edge_t *e, uint32_t src, uint32_t dst,
			    uint32_t chan, int rail, double frac)
{
	*e = (tp_sched_edge_t){src, dst, chan, rail, frac, rail};
	return e + 1;
}

static int rank_rail(const tp_sched_t *s, const work_t *w, uint32_t node,
		     uint32_t l);

/* An edge from local rank la of src to local rank lb of dst: on their
 * rails (rail, rail_dst), or -1 at both ends when either is unknown. */
static tp_sched_edge_t *put_ranks(const tp_sched_t *s, const work_t *w,
				  tp_sched_edge_t *e, uint32_t src, uint32_t la,
				  uint32_t dst, uint32_t lb, uint32_t chan,
				  double frac)
{
	int ra = rank_rail(s, w, src, la), rb = rank_rail(s, w, dst, lb);

	if (ra < 0 || rb < 0)
		ra = rb = -1;
	*e = (tp_sched_edge_t){src, dst, chan, ra, frac, rb};
	return e + 1;
}

/* share: the hierarchical host phases, each rank reducing (or
 * gathering) its shard out of every other rank's: g - 1 shards, the
 * largest one's when the ranks are weighted. */
static tp_sched_edge_t *self_edges(const tp_sched_t *s, const work_t *w,
				   tp_sched_edge_t *e, double frac1, int copies,
				   bool share)
{
	for (uint32_t r = 0; r < s->n; r++) {
		double g = w->nr[r];
		double most = w->job->weight ? w->wmax / w->wsum : 1 / g;
		if (w->nr[r] < 2)
			continue;
		for (int c = 0; c < copies; c++)
			e = put(e, r, r, (uint32_t)c, -1,
				share ? (g - 1) * most : frac1);
	}
	return e;
}

static void phase(tp_sched_t *s, tp_sched_phase_kind_t kind,
		  tp_sched_edge_t *from, tp_sched_edge_t *to, double steps,
		  double local, uint32_t mirror)
{
	s->ph[s->nphases++] = (tp_sched_phase_t){
	    kind, from, (size_t)(to - from), steps, local, mirror};
}

static tp_sched_edge_t *ring_edges(tp_sched_t *s, work_t *w, tp_sched_edge_t *e)
{
	double P = (double)s->nranks, v = 2 * (P - 1) / P;
	tp_sched_edge_t *e0 = e;

	/* on the NICs of the ranks each hop joins */
	for (uint32_t r = 0; s->n > 1 && r < s->n; r++) {
		uint32_t la, lb;
		tp_sched_ring_hop(w->nr[r], &la, &lb);
		e = put_ranks(s, w, e, r, la, (uint32_t)((r + 1) % s->n), lb, 0,
			      v);
	}
	e = self_edges(s, w, e, v, 1, false);
	phase(s, TP_SCHED_PH_RING, e0, e, 2 * (P - 1), 0, TP_SCHED_NONE);
	return e;
}

static tp_sched_edge_t *tree_edges(tp_sched_t *s, work_t *w, tp_sched_edge_t *e)
{
	uint32_t d = s->depth[0] > s->depth[1] ? s->depth[0] : s->depth[1];
	tp_sched_edge_t *e0 = e;

	for (int t = 0; t < 2; t++)
		for (uint32_t r = 0; r < s->n; r++) {
			uint32_t p = s->parent[t][r];
			if (p == TP_SCHED_NONE)
				continue;
			/* between the nodes' anchors: local rank 0 in tree
			 * 0, the last in tree 1 */
			uint32_t lr = t ? w->nr[r] - 1 : 0,
				 lp = t ? w->nr[p] - 1 : 0;
			e = put_ranks(s, w, e, r, lr, p, lp, (uint32_t)t, 0.5);
			e = put_ranks(s, w, e, p, lp, r, lr, (uint32_t)t, 0.5);
		}
	/* a node's ranks run each tree as a chain: a rank inside it sends
	 * S/2 up and S/2 down, an end only one of them, so two ranks (both
	 * ends) move S/2 a tree and more ranks S */
	for (uint32_t r = 0; r < s->n; r++)
		for (int t = 0; w->nr[r] > 1 && t < 2; t++)
			e = put(e, r, r, (uint32_t)t, -1,
				w->nr[r] == 2 ? 0.5 : 1.0);
	phase(s, TP_SCHED_PH_TREE, e0, e, 2.0 * d, 2.0 * (w->gmax - 1),
	      TP_SCHED_NONE);
	return e;
}

/* Rail of local rank l of node, -1 when unknown or the job has one rail. */
static int rank_rail(const tp_sched_t *s, const work_t *w, uint32_t node,
		     uint32_t l)
{
	const tp_sched_job_t *j = w->job;
	int r;

	if (s->nrails <= 1 || !j->rank_rail)
		return -1;
	r = j->rank_rail(j->arg, node, l);
	return r >= 0 && r < s->nrails ? r : -1;
}

/* Share of S local rank l's part carries when an even split gives it
 * f: f itself, or scaled by its weight (job->weight). */
static double rank_frac(const work_t *w, uint32_t l, double f)
{
	const uint32_t *wt = w->job->weight;

	return wt ? f * w->gmax * wt[l] / w->wsum : f;
}

/* The channels of every local rank from node a to node b, each carrying
 * f of S (rank_frac() of it when weighted): one edge per pair of rails
 * (the rank's at a, its peer's at b), so the cost model routes each
 * share from the rank's NIC to its peer's, as the library connects
 * them, and one-rail jobs get one edge. */
static tp_sched_edge_t *chan_edges(const tp_sched_t *s, const work_t *w,
				   tp_sched_edge_t *e, uint32_t a, uint32_t b,
				   uint32_t chan, double f)
{
	tp_sched_edge_t *e0 = e;

	if (s->nrails <= 1 || !w->job->rank_rail) {
		/* every rank on rail -1: one edge, its shares added up */
		for (uint32_t l = 0; l < w->nr[a]; l++)
			if (e == e0)
				e = put(e, a, b, chan, -1, rank_frac(w, l, f));
			else
				e0->frac += rank_frac(w, l, f);
		return e;
	}
	for (uint32_t l = 0; l < w->nr[a]; l++) {
		tp_sched_edge_t *x = e0;
		e = put_ranks(s, w, e, a, l, b, l, chan, rank_frac(w, l, f));
		while (x->rail != e[-1].rail || x->rail_dst != e[-1].rail_dst)
			x++;
		if (x < e - 1) {
			x->frac += e[-1].frac;
			e--;
		}
	}
	return e;
}

/* Channels member t of a unit of K holds when there are C >= K: the
 * contiguous run [ceil(tC/K), ceil((t+1)C/K)), channel c's holder being
 * member floor(cK/C). */
static uint32_t chan_lo(uint32_t t, uint32_t K, uint32_t C)
{
	return (uint32_t)(((uint64_t)t * C + K - 1) / K);
}

/* Ring reduce-scatter (rs) or all-gather among the ranks of each local
 * rank inside every unit, member t -> t+1: every part but the one t ends
 * with (rs) or but the one t+1 ends with (all-gather), member t's part
 * being its channels' sub-shards. */
static tp_sched_edge_t *group_edges(tp_sched_t *s, const work_t *w,
				    tp_sched_edge_t *e, bool rs)
{
	uint32_t C = s->nchan;

	for (size_t g = 0; g < s->ngroups; g++) {
		const uint32_t *mm = &s->gmem[s->goff[g]];
		uint32_t K = s->goff[g + 1] - s->goff[g];
		for (uint32_t t = 0; K > 1 && t < K; t++) {
			uint32_t own = rs ? t : (t + 1) % K;
			uint32_t held =
			    chan_lo(own + 1, K, C) - chan_lo(own, K, C);
			double f = (1.0 - (double)held / C) / w->gmax;
			if (f > 0)
				e = chan_edges(s, w, e, mm[t], mm[(t + 1) % K],
					       0, f);
		}
	}
	return e;
}

/* Some node runs the host phases as rings: they take its g - 1 steps. */
static bool host_rings(const tp_sched_t *s, const tp_sched_job_t *j)
{
	for (size_t r = 0; !j->host_ring && j->node_host_ring && r < s->n; r++)
		if (j->node_host_ring(j->arg, r))
			return true;
	return j->host_ring != 0;
}

static tp_sched_edge_t *hier_edges(tp_sched_t *s, work_t *w, tp_sched_edge_t *e)
{
	size_t m = s->ngroups;
	uint32_t g = w->gmax, C = w->kmax, most = 1;
	tp_sched_edge_t *e0 = e;

	for (size_t r = 0; r < s->n; r++)
		if (w->nr[r] != g) /* the ranks' shards would not line up */
			return ring_edges(s, w, e);
	w->wsum = w->wmax = 0;
	for (uint32_t l = 0; w->job->weight && l < g; l++) {
		w->wsum += w->job->weight[l];
		if (w->job->weight[l] > w->wmax)
			w->wmax = w->job->weight[l];
	}
	s->nchan = C;
	for (size_t u = 0; u < m; u++) {
		uint32_t K = s->goff[u + 1] - s->goff[u];
		if ((C + K - 1) / K > most)
			most = (C + K - 1) / K;
	}
	/* the library's host segment: one wait a phase; rings without it */
	s->host_seg = g >= 2 && !host_rings(s, w->job);
	double host_steps = s->host_seg ? TP_SCHED_SEG_WAIT : g - 1.0;
	e = self_edges(s, w, e, 0, 1, true);
	phase(s, TP_SCHED_PH_HOST_RS, e0, e, 0, host_steps, TP_SCHED_NONE);

	e0 = e;
	e = group_edges(s, w, e, true);
	phase(s, TP_SCHED_PH_GROUP_RS, e0, e, w->kmax - 1.0, 0, TP_SCHED_NONE);

	/* channel (c, l): rank l of c's holder in each unit, one ring across
	 * the units; a member holding several runs them one after another */
	e0 = e;
	for (uint32_t c = 0; m > 1 && c < C; c++)
		for (size_t u = 0; u < m; u++) {
			uint32_t K = s->goff[u + 1] - s->goff[u];
			uint32_t K2 =
			    s->goff[(u + 1) % m + 1] - s->goff[(u + 1) % m];
			uint32_t a = s->gmem[s->goff[u] +
					     (uint32_t)((uint64_t)c * K / C)];
			uint32_t b = s->gmem[s->goff[(u + 1) % m] +
					     (uint32_t)((uint64_t)c * K2 / C)];
			e = chan_edges(s, w, e, a, b, c,
				       2.0 * (m - 1) / m / ((double)C * g));
		}
	phase(s, TP_SCHED_PH_CROSS, e0, e, 2.0 * (m - 1) * most, 0,
	      TP_SCHED_NONE);

	e0 = e;
	e = group_edges(s, w, e, false);
	/* the same edges as the reduce-scatter's when all units are equal */
	phase(s, TP_SCHED_PH_GROUP_AG, e0, e, w->kmax - 1.0, 0,
	      most == 1 ? 1 : TP_SCHED_NONE);

	e0 = e;
	e = self_edges(s, w, e, 0, 1, true);
	phase(s, TP_SCHED_PH_HOST_AG, e0, e, 0, host_steps, 0);
	return e;
}

static size_t count_edges(const tp_sched_t *s, const work_t *w)
{
	size_t self = 0;

	for (size_t r = 0; r < s->n; r++)
		self += w->nr[r] > 1;
	switch (s->algo) {
	case TP_SCHED_RING:
		return s->n + self;
	case TP_SCHED_TREE:
		return 4 * s->n + 2 * self;
	case TP_SCHED_HIER:
	default:
		/* at most one edge per rank of a node and phase, per
		 * channel and unit across, or the ring */
		return 2 * s->n + 2 * self +
		       (2 * s->n + s->ngroups * (size_t)w->kmax) *
			   (size_t)w->gmax;
	}
}

static bool job_ok(const tp_sched_job_t *j, tp_sched_algo_t algo)
{
	return j && j->n && j->n < TP_SCHED_NONE / 8 && j->nlevels >= 0 &&
	       j->nlevels <= TP_SCHED_MAX_LEVELS && j->nrails >= 0 &&
	       j->nrails <= TP_SCHED_MAX_RAILS && (j->group || !j->nlevels) &&
	       (algo == TP_SCHED_RING || algo == TP_SCHED_TREE ||
		algo == TP_SCHED_HIER);
}

/* One block: the schedule, its arrays and the build's scratch. */
static tp_sched_t *alloc_block(size_t n, int nrails, work_t *w)
{
	size_t nl = (size_t)(nrails > 1 ? nrails : 1);
	size_t u32 = 5 * n + 2 + n * nl	   /* gr gmem goff parent[2] ldr */
		     + n		   /* nr */
		     + 3 * n + 3 * (n + 1) /* cls id cnt, fill off mem */
		     + 4 * n;		   /* units */
	size_t bytes = sizeof(tp_sched_t) + 2 * n * sizeof(kv_t) +
		       n * sizeof(uint64_t) + u32 * sizeof(uint32_t);
	unsigned char *b = tp_calloc(1, bytes);
	tp_sched_t *s = (tp_sched_t *)b;
	uint32_t *u;

	if (!b)
		return NULL;
	b += sizeof(tp_sched_t);
	w->rails = (uint64_t *)b;
	b += n * sizeof(uint64_t);
	w->kv = (kv_t *)b;
	w->kv2 = w->kv + n;
	u = (uint32_t *)(w->kv2 + n);
	s->gr = u;
	s->gmem = u += n;
	s->goff = u += n;
	s->parent[0] = u += n + 1;
	s->parent[1] = u += n;
	s->leader = u += n;
	w->nr = u += n * nl;
	w->cls = u += n;
	w->id = u += n;
	w->cnt = u += n;
	w->fill = u += n; /* fill, then build_tree's off and mem */
	w->ufirst = u += 3 * (n + 1);
	w->uroot = u += n;
	w->vfirst = u += n;
	w->vroot = u += n;
	return s;
}

tp_err_t tp_sched_build(const tp_sched_job_t *job, tp_sched_algo_t algo,
			tp_sched_t **s_p)
{
	tp_sched_t *s;
	work_t w = {.job = job};
	tp_sched_edge_t *e;
	size_t ne;

	if (!job_ok(job, algo) || !s_p)
		return TP_ERR_INVAL;
	if (!(s = alloc_block(job->n, job->nrails, &w)))
		return TP_ERR_NOMEM;
	s->algo = algo;
	s->n = job->n;
	s->nrails = job->nrails;
	for (size_t r = 0; r < s->n; r++) {
		w.nr[r] = job->nranks ? job->nranks(job->arg, r) : 1;
		w.rails[r] = job->rails ? job->rails(job->arg, r) : 0;
		if (!w.nr[r]) {
			tp_free(s);
			return TP_ERR_INVAL;
		}
		s->nranks += w.nr[r];
		if (w.nr[r] > w.gmax)
			w.gmax = w.nr[r];
	}
	build_groups(s, &w);
	build_leaders(s, &w);
	s->root[0] = s->root[1] = TP_SCHED_NONE;
	if (algo == TP_SCHED_TREE) {
		build_tree(s, &w, 0);
		build_tree(s, &w, 1);
	}
	ne = count_edges(s, &w);
	if (!(s->edges = tp_malloc((ne ? ne : 1) * sizeof(*s->edges)))) {
		tp_free(s);
		return TP_ERR_NOMEM;
	}
	e = s->edges;
	if (algo == TP_SCHED_RING)
		ring_edges(s, &w, e);
	else if (algo == TP_SCHED_TREE)
		tree_edges(s, &w, e);
	else
		hier_edges(s, &w, e);
	*s_p = s;
	return TP_OK;
}

void tp_sched_destroy(tp_sched_t *s)
{
	if (!s)
		return;
	tp_free(s->edges);
	tp_free(s);
}

tp_sched_algo_t tp_sched_algo(const tp_sched_t *s)
{
	return s ? s->algo : TP_SCHED_RING;
}

size_t tp_sched_nnodes(const tp_sched_t *s)
{
	return s ? s->n : 0;
}

size_t tp_sched_nranks(const tp_sched_t *s)
{
	return s ? s->nranks : 0;
}

size_t tp_sched_nphases(const tp_sched_t *s)
{
	return s ? s->nphases : 0;
}

const tp_sched_phase_t *tp_sched_phase(const tp_sched_t *s, size_t i)
{
	return s && i < s->nphases ? &s->ph[i] : NULL;
}

double tp_sched_latency(const tp_sched_t *s, double alpha_s, double hop_s,
			const int *hops)
{
	double t = 0;

	for (size_t i = 0; s && i < s->nphases; i++)
		t += s->ph[i].steps * (alpha_s + (hops ? hops[i] : 0) * hop_s) +
		     s->ph[i].local_steps * alpha_s;
	return t;
}

int tp_sched_host_small(const tp_sched_t *s, double bytes)
{
	return s && s->algo == TP_SCHED_HIER && s->n == 1 && s->host_seg &&
	       bytes <= TP_SCHED_HOST_SMALL;
}

double tp_sched_latency_at(const tp_sched_t *s, double bytes, double alpha_s,
			   double hop_s, const int *hops)
{
	return tp_sched_host_small(s, bytes)
		   ? TP_SCHED_SEG_WAIT * alpha_s
		   : tp_sched_latency(s, alpha_s, hop_s, hops);
}

tp_err_t tp_sched_segment_parse(const char *v, size_t *seg_p)
{
	unsigned long long x = 0;

	if (!v || !*v) {
		*seg_p = TP_SCHED_HIER_SEGMENT;
		return TP_OK;
	}
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return TP_ERR_INVAL;
		x = x * 10 + (unsigned long long)(*p - '0');
		if (x > TP_SCHED_HIER_SEGMENT_MAX)
			return TP_ERR_INVAL;
	}
	*seg_p = (size_t)x;
	return TP_OK;
}

double tp_sched_pipe_nseg(double bytes, double seg)
{
	if (!(seg > 0) || !(bytes > seg))
		return 1;
	double n = ceil(bytes / seg);
	return n < TP_SCHED_PIPE_SEGS_MAX ? n : TP_SCHED_PIPE_SEGS_MAX;
}

double tp_sched_pipe_seconds(const double t[3], const double lat[3],
			     double nseg)
{
	if (!(nseg > 1))
		return t[0] + t[1] + t[2] + lat[0] + lat[1] + lat[2];
	double rs = t[0] / nseg + lat[0], x = t[1] / nseg + lat[1];
	double ag = t[2] / nseg + lat[2];
	/* The recurrence, closed: the exchanges end at
	 * max(RS(i), X(i-1)) + x; the all-gathers start at
	 * max(X(i), AG(i-1), all reduce-scatters). Each chain runs at the
	 * pace of its slowest stage, so the last all-gather ends at the
	 * latest of: all reduce-scatters then every all-gather; all
	 * reduce-scatters, the last exchange and the last all-gather; the
	 * first reduce-scatter, every exchange and the last all-gather;
	 * and, where the exchanges run ahead of the all-gathers, from the
	 * first exchange through every all-gather. */
	double all_rs = nseg * rs, t1 = all_rs + nseg * ag;
	double t2 = all_rs + x + ag, t3 = rs + nseg * x + ag;
	double t4 = rs + x + nseg * ag;
	double m = t1 > t2 ? t1 : t2;
	m = m > t3 ? m : t3;
	return m > t4 ? m : t4;
}

size_t tp_sched_ngroups(const tp_sched_t *s)
{
	return s ? s->ngroups : 0;
}

size_t tp_sched_group_nodes(const tp_sched_t *s, size_t g,
			    const uint32_t **nodes_p)
{
	if (!s || g >= s->ngroups || !nodes_p)
		return 0;
	*nodes_p = &s->gmem[s->goff[g]];
	return s->goff[g + 1] - s->goff[g];
}

uint32_t tp_sched_group_of(const tp_sched_t *s, size_t node)
{
	return s && node < s->n ? s->gr[node] : TP_SCHED_NONE;
}

uint32_t tp_sched_rail_leader(const tp_sched_t *s, size_t g, int rail)
{
	if (!s || s->nrails <= 1 || g >= s->ngroups || rail < 0 ||
	    rail >= s->nrails)
		return TP_SCHED_NONE;
	return s->leader[g * (size_t)s->nrails + (size_t)rail];
}

uint32_t tp_sched_hier_channels(const tp_sched_t *s)
{
	return s ? s->nchan : 0;
}

void tp_sched_ring_hop(uint32_t from_nranks, uint32_t *from_l, uint32_t *to_l)
{
	*from_l = from_nranks ? from_nranks - 1 : 0;
	*to_l = 0;
}

uint32_t tp_sched_tree_root(const tp_sched_t *s, int t)
{
	return s && (t == 0 || t == 1) ? s->root[t] : TP_SCHED_NONE;
}

uint32_t tp_sched_tree_parent(const tp_sched_t *s, int t, size_t node)
{
	if (!s || (t != 0 && t != 1) || node >= s->n ||
	    s->algo != TP_SCHED_TREE)
		return TP_SCHED_NONE;
	return s->parent[t][node];
}

uint32_t tp_sched_tree_depth(const tp_sched_t *s, int t)
{
	return s && (t == 0 || t == 1) ? s->depth[t] : 0;
}
