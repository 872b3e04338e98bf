/*
 * Collective schedules as data (sched/): NCCL's trees on one group, the
 * level-wise trees' boundary crossings, grouping by key whatever the
 * order, the hierarchical phases' closed forms (shares, channels, rail
 * leaders, mirrors), latency steps, errors and allocation failure.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tp_test.h"

#include "tp_sched.h"

/* A job from arrays: key[level][node], ranks[node], rails[node]. */
typedef struct tjob {
	const uint32_t *key[2];
	const uint32_t *ranks;
	const uint64_t *rails;
	int (*rank_rail)(const void *arg, size_t node, uint32_t l);
} tjob_t;

static uint32_t tj_group(const void *arg, size_t node, int level)
{
	return ((const tjob_t *)arg)->key[level][node];
}

static uint32_t tj_ranks(const void *arg, size_t node)
{
	const tjob_t *t = arg;
	return t->ranks ? t->ranks[node] : 1;
}

static uint64_t tj_rails(const void *arg, size_t node)
{
	const tjob_t *t = arg;
	return t->rails ? t->rails[node] : 0;
}

static tp_sched_t *build_job(const tjob_t *t, size_t n, int nlevels, int nrails,
			     tp_sched_algo_t algo, int host_ring)
{
	tp_sched_job_t j = {0};
	tp_sched_t *s = NULL;

	j.host_ring = host_ring;

	j.n = n;
	j.nlevels = nlevels;
	j.nrails = nrails;
	j.arg = t;
	j.group = tj_group;
	j.nranks = tj_ranks;
	j.rails = tj_rails;
	j.rank_rail = t->rank_rail;
	assert_int_equal(tp_sched_build(&j, algo, &s), TP_OK);
	assert_non_null(s);
	return s;
}

static tp_sched_t *build(const tjob_t *t, size_t n, int nlevels, int nrails,
			 tp_sched_algo_t algo)
{
	return build_job(t, n, nlevels, nrails, algo, 0);
}

static void assert_close(double got, double want)
{
	if (fabs(got - want) > 1e-12 * fabs(want) + 1e-15)
		fail_msg("got %.15g, want %.15g", got, want);
}

/* Every node reaches the root of tree t, and the number of tree edges
 * whose ends have different keys. */
static size_t crossing(const tp_sched_t *s, int t, const uint32_t *key)
{
	size_t n = tp_sched_nnodes(s), cross = 0;

	for (size_t r = 0; r < n; r++) {
		uint32_t x = (uint32_t)r, p = tp_sched_tree_parent(s, t, r);
		size_t steps = 0;
		while (x != tp_sched_tree_root(s, t)) {
			x = tp_sched_tree_parent(s, t, x);
			assert_true(x != TP_SCHED_NONE);
			assert_true(++steps <= tp_sched_tree_depth(s, t));
		}
		if (p != TP_SCHED_NONE && key[p] != key[r])
			cross++;
	}
	return cross;
}

/* One group: NCCL's btree and dtree exactly (8 nodes: 0 -> 4 -> {2, 6}
 * -> odd ranks; the dtree mirrored, rooted at 7), depth log2 n. */
static void test_tree_one_group(void **state)
{
	uint32_t key[8] = {0};
	tjob_t t = {{key, key}, NULL, NULL, NULL};
	tp_sched_t *s = build(&t, 8, 1, 0, TP_SCHED_TREE);
	static const uint32_t p0[8] = {TP_SCHED_NONE, 2, 4, 2, 0, 6, 4, 6};

	(void)state;
	assert_int_equal(tp_sched_tree_root(s, 0), 0);
	assert_int_equal(tp_sched_tree_root(s, 1), 7);
	for (uint32_t r = 0; r < 8; r++) {
		assert_int_equal(tp_sched_tree_parent(s, 0, r), p0[r]);
		assert_int_equal(tp_sched_tree_parent(s, 1, 7 - r),
				 p0[r] == TP_SCHED_NONE ? p0[r] : 7 - p0[r]);
	}
	assert_int_equal(tp_sched_tree_depth(s, 0), 3);
	assert_int_equal(tp_sched_tree_depth(s, 1), 3);
	assert_int_equal(tp_sched_ngroups(s), 1);
	tp_sched_destroy(s);
}

/* Level-wise trees over m groups of k: exactly m - 1 edges of each tree
 * cross a group boundary (a flat tree over the ring order crosses far
 * more), and the phase sends S/2 each way on every edge. The same keys
 * in an interleaved order give the same groups (by key, not by run). */
static void test_tree_levelwise(void **state)
{
	uint32_t key[12], top[12] = {0}, ik[12];
	tjob_t t = {{key, top}, NULL, NULL, NULL};
	tjob_t ti = {{ik, top}, NULL, NULL, NULL};

	(void)state;
	for (size_t r = 0; r < 12; r++) {
		key[r] = (uint32_t)(r / 4);
		ik[r] = (uint32_t)(r % 3);
	}
	for (size_t m = 2; m <= 3; m++) {
		tp_sched_t *s = build(&t, 4 * m, 2, 0, TP_SCHED_TREE);
		const tp_sched_phase_t *ph = tp_sched_phase(s, 0);
		double across = 0;

		assert_int_equal(tp_sched_nphases(s), 1);
		assert_int_equal(ph->kind, TP_SCHED_PH_TREE);
		assert_int_equal(ph->nedges, 2 * 2 * (4 * m - 1));
		for (int tr = 0; tr < 2; tr++)
			assert_int_equal(crossing(s, tr, key), m - 1);
		for (size_t e = 0; e < ph->nedges; e++) {
			assert_close(ph->edges[e].frac, 0.5);
			if (key[ph->edges[e].src] != key[ph->edges[e].dst])
				across += ph->edges[e].frac;
		}
		/* two trees x (m-1) edges x S/2 up and S/2 down */
		assert_close(across, 2.0 * (m - 1));
		assert_int_equal(tp_sched_ngroups(s), m);
		tp_sched_destroy(s);
	}
	{
		tp_sched_t *s = build(&ti, 12, 2, 0, TP_SCHED_TREE);
		const uint32_t *nodes;
		assert_int_equal(tp_sched_ngroups(s), 3);
		assert_int_equal(tp_sched_group_nodes(s, 1, &nodes), 4);
		for (size_t i = 0; i < 4; i++)
			assert_int_equal(nodes[i], 1 + 3 * i);
		assert_int_equal(tp_sched_group_of(s, 4), 1);
		for (int tr = 0; tr < 2; tr++)
			assert_int_equal(crossing(s, tr, ik), 2);
		tp_sched_destroy(s);
	}
}

/* A node whose level-1 key is TP_SCHED_NOKEY is a group of its own. */
static void test_nokey(void **state)
{
	uint32_t key[4] = {5, TP_SCHED_NOKEY, TP_SCHED_NOKEY, 5};
	tjob_t t = {{key, key}, NULL, NULL, NULL};
	tp_sched_t *s = build(&t, 4, 1, 0, TP_SCHED_HIER);

	(void)state;
	assert_int_equal(tp_sched_ngroups(s), 3);
	assert_int_equal(tp_sched_group_of(s, 3), 0);
	assert_int_equal(tp_sched_group_of(s, 1), 1);
	assert_int_equal(tp_sched_group_of(s, 2), 2);
	tp_sched_destroy(s);
}

/* No levels described: every node is a group of its own, and the last
 * level still joins them into one tree each. */
static void test_no_levels(void **state)
{
	uint32_t key[5] = {0, 1, 2, 3, 4};
	tjob_t t = {{key, key}, NULL, NULL, NULL};
	tp_sched_t *s = build(&t, 5, 0, 0, TP_SCHED_TREE);

	(void)state;
	assert_int_equal(tp_sched_ngroups(s), 5);
	for (int tr = 0; tr < 2; tr++)
		assert_int_equal(crossing(s, tr, key), 4);
	tp_sched_destroy(s);
}

/* Ring: 2(P-1)/P of S on every node edge and on the self edge of a node
 * with several ranks; 2(P-1) steps. */
static void test_ring(void **state)
{
	uint32_t key[4] = {0}, ranks[4] = {2, 1, 1, 1};
	tjob_t t = {{key, key}, ranks, NULL, NULL};
	tp_sched_t *s = build(&t, 4, 1, 0, TP_SCHED_RING);
	const tp_sched_phase_t *ph = tp_sched_phase(s, 0);

	(void)state;
	assert_int_equal(tp_sched_nranks(s), 5);
	assert_int_equal(ph->nedges, 5);
	for (size_t e = 0; e < 4; e++) {
		assert_int_equal(ph->edges[e].src, e);
		assert_int_equal(ph->edges[e].dst, (e + 1) % 4);
		assert_close(ph->edges[e].frac, 1.6);
	}
	assert_int_equal(ph->edges[4].src, 0);
	assert_int_equal(ph->edges[4].dst, 0);
	assert_close(ph->edges[4].frac, 1.6);
	assert_close(tp_sched_latency(s, 1, 0, NULL), 8);
	/* no trees in a ring schedule */
	assert_int_equal(tp_sched_tree_root(s, 0), TP_SCHED_NONE);
	tp_sched_destroy(s);
}

/* Hierarchical, one rail, 2 groups of 4, 2 ranks per node: C = K = 4
 * channels on corresponding members. Host phases (g-1)/g of S; in-group
 * reduce-scatter (k-1)/k per edge; cross 2(m-1)/m / C per edge, 2(m-1) of
 * S across in all; all-gathers mirror the reduce-scatters. Latency:
 * 2(g-1) local + 2(k-1) + 2(m-1) steps. */
static void test_hier_one_rail(void **state)
{
	uint32_t key[8] = {0, 0, 0, 0, 1, 1, 1, 1}, ranks[8];
	tjob_t t = {{key, key}, ranks, NULL, NULL};
	tp_sched_t *s;
	const tp_sched_phase_t *ph;
	double across = 0;

	(void)state;
	for (size_t r = 0; r < 8; r++)
		ranks[r] = 2;
	s = build(&t, 8, 1, 1, TP_SCHED_HIER);
	assert_int_equal(tp_sched_nphases(s), 5);
	ph = tp_sched_phase(s, 0);
	assert_int_equal(ph->kind, TP_SCHED_PH_HOST_RS);
	assert_int_equal(ph->nedges, 8);
	assert_close(ph->edges[3].frac, 0.5);
	assert_close(ph->local_steps, TP_SCHED_SEG_WAIT);
	ph = tp_sched_phase(s, 1);
	assert_int_equal(ph->kind, TP_SCHED_PH_GROUP_RS);
	assert_int_equal(ph->nedges, 8);
	for (size_t e = 0; e < 8; e++)
		assert_close(ph->edges[e].frac, 0.75);
	ph = tp_sched_phase(s, 2);
	assert_int_equal(ph->kind, TP_SCHED_PH_CROSS);
	assert_int_equal(ph->nedges, 4 * 2);
	for (size_t e = 0; e < ph->nedges; e++) {
		const tp_sched_edge_t *x = &ph->edges[e];
		assert_close(x->frac, 0.25);
		assert_int_equal(x->rail, -1);
		/* channel c: member c of each group */
		assert_int_equal(x->src % 4, x->chan);
		assert_int_equal(x->dst % 4, x->chan);
		assert_true(key[x->src] != key[x->dst]);
		across += x->frac;
	}
	assert_close(across, 2);
	assert_int_equal(tp_sched_phase(s, 3)->mirror, 1);
	assert_int_equal(tp_sched_phase(s, 4)->mirror, 0);
	assert_close(tp_sched_latency(s, 1, 0, NULL),
		     2 * TP_SCHED_SEG_WAIT + 2 * 3 + 2 * 1);
	tp_sched_destroy(s);
}

/* Rank l on rail l, but node 4 drives rail 1 only (both ranks). */
static int tj_rank_rail(const void *arg, size_t node, uint32_t l)
{
	(void)arg;
	return node == 4 ? 1 : (int)l;
}

/* Hierarchical, 2 rails, 2 ranks per node: channel (j, l) is rank l of
 * member j, every rank carrying its own shard on its own rail (no rail
 * leader funnels a group's share through one NIC). In-group edges
 * (K-1)/K / g = 3/8 per rank, cross edges 2(m-1)/m / (K g) = 1/8 per
 * rank, one edge per pair of rails at the two ends; rank 0 of node 4 is
 * on rail 1 while its partners' rank 0 is on rail 0: those edges leave
 * on one rail and arrive on the other (the library connects a rank's
 * HCA to its peer's). Rail leaders stay answered (informational). */
static void test_hier_rails(void **state)
{
	uint32_t key[8] = {0, 0, 0, 0, 1, 1, 1, 1}, ranks[8];
	uint64_t rails[8] = {3, 3, 3, 3, 2, 3, 3, 3};
	tjob_t t = {{key, key}, ranks, rails, tj_rank_rail};
	tp_sched_t *s;
	const tp_sched_phase_t *ph;
	double across = 0;
	size_t mixed = 0;

	(void)state;
	for (size_t r = 0; r < 8; r++)
		ranks[r] = 2;
	s = build(&t, 8, 1, 2, TP_SCHED_HIER);
	assert_int_equal(tp_sched_rail_leader(s, 0, 0), 0);
	assert_int_equal(tp_sched_rail_leader(s, 0, 1), 1);
	assert_int_equal(tp_sched_rail_leader(s, 1, 0), 5);
	assert_int_equal(tp_sched_rail_leader(s, 1, 1), 5);
	assert_int_equal(tp_sched_rail_leader(s, 1, 2), TP_SCHED_NONE);
	assert_int_equal(tp_sched_nphases(s), 5);
	ph = tp_sched_phase(s, 1);
	assert_int_equal(ph->kind, TP_SCHED_PH_GROUP_RS);
	assert_int_equal(ph->nedges, 8 * 2);
	for (size_t e = 0; e < ph->nedges; e++) {
		const tp_sched_edge_t *x = &ph->edges[e];
		assert_close(x->frac, 3.0 / 8);
		if (x->src != 4 && x->dst != 4)
			assert_true(x->rail == 0 || x->rail == 1);
		assert_int_equal(key[x->src], key[x->dst]);
	}
	ph = tp_sched_phase(s, 2);
	assert_int_equal(ph->kind, TP_SCHED_PH_CROSS);
	assert_int_equal(ph->nedges, 4 * 2 * 2);
	for (size_t e = 0; e < ph->nedges; e++) {
		const tp_sched_edge_t *x = &ph->edges[e];
		assert_close(x->frac, 1.0 / 8);
		assert_int_equal(x->src % 4, x->chan);
		assert_int_equal(x->dst % 4, x->chan);
		assert_true(key[x->src] != key[x->dst]);
		assert_true(x->rail >= 0 && x->rail_dst >= 0);
		mixed += x->rail != x->rail_dst;
		if (x->rail != x->rail_dst)
			assert_true(x->src == 4
					? x->rail == 1 && x->rail_dst == 0
					: x->dst == 4 && x->rail == 0 &&
					      x->rail_dst == 1);
		across += x->frac;
	}
	assert_int_equal(mixed, 2);
	assert_close(across, 2);
	assert_int_equal(tp_sched_phase(s, 3)->mirror, 1);
	assert_int_equal(tp_sched_phase(s, 4)->mirror, 0);
	assert_close(tp_sched_latency(s, 1, 0, NULL),
		     2 * TP_SCHED_SEG_WAIT + 2 * 3 + 2 * 1);
	tp_sched_destroy(s);
}

static int tj_rail_l(const void *arg, size_t node, uint32_t l)
{
	(void)arg;
	(void)node;
	return (int)l;
}

/* Weighted ranks (job->weight {2, 1}: rank 1's NIC at half rate): two
 * groups of 4 nodes, 2 ranks each on rails 0 and 1. Rank l's shard is
 * w_l / 3 of S, so its group edges carry 3/4 of that (1/2 on rail 0,
 * 1/4 on rail 1), its cross edges 2(m-1)/m / K of it (1/6, 1/12): the
 * slow rail carries half of what the fast one does, in every phase, and
 * the totals are the even split's. The host phases' self edges carry
 * (g - 1) x the largest shard, 2/3. Even weights give the even split's
 * schedule exactly. */
static void test_hier_weights(void **state)
{
	uint32_t key[8] = {0, 0, 0, 0, 1, 1, 1, 1}, ranks[8];
	uint32_t w[2] = {2, 1}, same[2] = {5, 5};
	uint64_t rails[8];
	tjob_t t = {{key, key}, ranks, rails, tj_rail_l};
	tp_sched_job_t j = {0};
	tp_sched_t *s = NULL, *even;
	double sum[2] = {0, 0};

	(void)state;
	for (size_t r = 0; r < 8; r++) {
		ranks[r] = 2;
		rails[r] = 3;
	}
	j = (tp_sched_job_t){.n = 8,
			     .nlevels = 1,
			     .nrails = 2,
			     .arg = &t,
			     .group = tj_group,
			     .nranks = tj_ranks,
			     .rails = tj_rails,
			     .rank_rail = tj_rail_l,
			     .weight = w};
	assert_int_equal(tp_sched_build(&j, TP_SCHED_HIER, &s), TP_OK);
	for (size_t i = 0; i < tp_sched_nphases(s); i++) {
		const tp_sched_phase_t *ph = tp_sched_phase(s, i);
		for (size_t e = 0; e < ph->nedges; e++) {
			const tp_sched_edge_t *x = &ph->edges[e];
			double want;
			if (x->src == x->dst) {
				assert_close(x->frac, 2.0 / 3);
				continue;
			}
			assert_true(x->rail == 0 || x->rail == 1);
			if (ph->kind == TP_SCHED_PH_CROSS) {
				want = x->rail ? 1.0 / 12 : 1.0 / 6;
				sum[x->rail] += x->frac;
			} else {
				want = x->rail ? 1.0 / 4 : 1.0 / 2;
			}
			assert_close(x->frac, want);
		}
	}
	assert_close(sum[0], 2 * sum[1]);
	assert_close(sum[0] + sum[1], 2);
	tp_sched_destroy(s);
	/* equal weights: the even schedule, edge for edge */
	j.weight = same;
	assert_int_equal(tp_sched_build(&j, TP_SCHED_HIER, &s), TP_OK);
	j.weight = NULL;
	assert_int_equal(tp_sched_build(&j, TP_SCHED_HIER, &even), TP_OK);
	assert_int_equal(tp_sched_nphases(s), tp_sched_nphases(even));
	for (size_t i = 0; i < tp_sched_nphases(s); i++) {
		const tp_sched_phase_t *a = tp_sched_phase(s, i);
		const tp_sched_phase_t *b = tp_sched_phase(even, i);
		assert_int_equal(a->nedges, b->nedges);
		for (size_t e = 0; e < a->nedges; e++)
			assert_close(a->edges[e].frac, b->edges[e].frac);
	}
	tp_sched_destroy(s);
	tp_sched_destroy(even);
}

/* Groups of 3 and 2 nodes, 2 ranks each: C = 3 channels; in the small
 * group node 3 holds channels 0 and 1, node 4 channel 2. Reduce-scatter
 * edges pass all but the sender's part (2/3, or 1/3 from node 3), cross
 * rings run between each channel's holders (2(m-1)/m / (g C) = 1/6 per
 * rank), node 3 runs its two one after the other (2 x 2(m-1) steps); the
 * all-gather passes all but the next member's part, so it is priced on
 * its own. Nodes with different rank counts get the ring schedule. */
static void test_hier_uneven(void **state)
{
	uint32_t key[5] = {0, 0, 0, 1, 1}, ranks[5] = {2, 2, 2, 2, 2};
	tjob_t t = {{key, key}, ranks, NULL, NULL};
	tp_sched_t *s = build(&t, 5, 1, 1, TP_SCHED_HIER), *r;
	const tp_sched_phase_t *ph;
	static const double rs[5] = {2 / 3., 2 / 3., 2 / 3., 1 / 3., 2 / 3.};
	static const double ag[5] = {2 / 3., 2 / 3., 2 / 3., 2 / 3., 1 / 3.};
	static const uint32_t src[6] = {0, 3, 1, 3, 2, 4};
	static const uint32_t dst[6] = {3, 0, 3, 1, 4, 2};

	(void)state;
	assert_int_equal(tp_sched_nphases(s), 5);
	assert_int_equal(tp_sched_hier_channels(s), 3);
	ph = tp_sched_phase(s, 1);
	assert_int_equal(ph->kind, TP_SCHED_PH_GROUP_RS);
	assert_int_equal(ph->nedges, 5);
	for (size_t e = 0; e < 5; e++)
		assert_close(ph->edges[e].frac, rs[e]);
	ph = tp_sched_phase(s, 2);
	assert_int_equal(ph->kind, TP_SCHED_PH_CROSS);
	assert_int_equal(ph->nedges, 6);
	for (size_t e = 0; e < 6; e++) {
		assert_int_equal(ph->edges[e].src, src[e]);
		assert_int_equal(ph->edges[e].dst, dst[e]);
		assert_int_equal(ph->edges[e].chan, e / 2);
		assert_close(ph->edges[e].frac, 1 / 3.);
	}
	assert_close(ph->steps, 4);
	ph = tp_sched_phase(s, 3);
	assert_int_equal(ph->mirror, TP_SCHED_NONE);
	for (size_t e = 0; e < 5; e++)
		assert_close(ph->edges[e].frac, ag[e]);
	assert_int_equal(tp_sched_phase(s, 4)->mirror, 0);
	assert_close(tp_sched_latency(s, 1, 0, NULL),
		     2 * TP_SCHED_SEG_WAIT + 2 * 2 + 4);
	tp_sched_destroy(s);

	ranks[2] = 1;
	s = build(&t, 5, 1, 1, TP_SCHED_HIER);
	r = build(&t, 5, 1, 1, TP_SCHED_RING);
	assert_int_equal(tp_sched_nphases(s), 1);
	assert_int_equal(tp_sched_hier_channels(s), 0);
	ph = tp_sched_phase(s, 0);
	assert_int_equal(ph->kind, TP_SCHED_PH_RING);
	assert_int_equal(ph->nedges, tp_sched_phase(r, 0)->nedges);
	for (size_t e = 0; e < ph->nedges; e++)
		assert_close(ph->edges[e].frac,
			     tp_sched_phase(r, 0)->edges[e].frac);
	assert_close(tp_sched_latency(s, 1, 0, NULL),
		     tp_sched_latency(r, 1, 0, NULL));
	tp_sched_destroy(r);
	tp_sched_destroy(s);
}

/* Hierarchical on one node of 8 ranks: the library's host segment, one
 * wait a host phase, where the ring takes 2(P-1) = 14; the same
 * bytes over the node's fabric. */
static void test_hier_one_node(void **state)
{
	uint32_t key[1] = {0}, ranks[1] = {8};
	tjob_t t = {{key, key}, ranks, NULL, NULL};
	tp_sched_t *h = build(&t, 1, 1, 0, TP_SCHED_HIER);
	tp_sched_t *r = build(&t, 1, 1, 0, TP_SCHED_RING);

	(void)state;
	assert_int_equal(tp_sched_phase(h, 0)->kind, TP_SCHED_PH_HOST_RS);
	assert_close(tp_sched_phase(h, 0)->local_steps, TP_SCHED_SEG_WAIT);
	assert_close(tp_sched_latency(h, 1, 0, NULL), 2 * TP_SCHED_SEG_WAIT);
	assert_close(tp_sched_latency(r, 1, 0, NULL), 14);
	assert_close(tp_sched_phase(h, 0)->edges[0].frac, 7.0 / 8);
	tp_sched_destroy(h);
	tp_sched_destroy(r);
}

/* One node: up to TP_SCHED_HOST_SMALL bytes the library runs the
 * hierarchical schedule as the segment's one exchange, one wait; above
 * it, or with rings on the host (host_ring), on two nodes, for the ring
 * and the tree, the schedule's own latency. */
static void test_host_small(void **state)
{
	uint32_t key[2] = {0, 0}, ranks[2] = {8, 8}, one[1] = {1};
	tjob_t t = {{key, key}, ranks, NULL, NULL};
	tjob_t t1 = {{key, key}, one, NULL, NULL};
	tp_sched_t *h = build(&t, 1, 1, 0, TP_SCHED_HIER);
	tp_sched_t *rings = build_job(&t, 1, 1, 0, TP_SCHED_HIER, 1);
	tp_sched_t *two = build(&t, 2, 1, 0, TP_SCHED_HIER);
	tp_sched_t *alone = build(&t1, 1, 1, 0, TP_SCHED_HIER);
	tp_sched_t *others[2] = {build(&t, 1, 1, 0, TP_SCHED_RING),
				 build(&t, 1, 1, 0, TP_SCHED_TREE)};

	(void)state;
	assert_true(tp_sched_host_small(h, 8));
	assert_true(tp_sched_host_small(h, TP_SCHED_HOST_SMALL));
	assert_false(tp_sched_host_small(h, TP_SCHED_HOST_SMALL + 1));
	assert_close(tp_sched_latency_at(h, 8, 1, 0, NULL), TP_SCHED_SEG_WAIT);
	assert_close(tp_sched_latency_at(h, 1 << 20, 1, 0, NULL),
		     2 * TP_SCHED_SEG_WAIT);
	assert_false(tp_sched_host_small(rings, 8));
	assert_close(tp_sched_latency_at(rings, 8, 1, 0, NULL), 14);
	assert_false(tp_sched_host_small(two, 8));
	assert_false(tp_sched_host_small(alone, 8));
	assert_false(tp_sched_host_small(NULL, 8));
	for (int a = 0; a < 2; a++) {
		assert_false(tp_sched_host_small(others[a], 8));
		assert_close(tp_sched_latency_at(others[a], 8, 1, 0, NULL),
			     tp_sched_latency(others[a], 1, 0, NULL));
		tp_sched_destroy(others[a]);
	}
	tp_sched_destroy(h);
	tp_sched_destroy(rings);
	tp_sched_destroy(two);
	tp_sched_destroy(alone);
}

/* Hierarchical on 4 nodes of 4 ranks in 2 units: the host phases go
 * through each node's segment, one wait (TP_SCHED_SEG_WAIT local steps)
 * each; with host_ring (TOPOPLACE_COLL_SHM=0) the library runs them as
 * rings, g - 1 = 3 each, over the same bytes. Latency 2 x wait + 2(K-1)
 * + 2(m-1) steps vs 10. */
static void test_hier_host_ring(void **state)
{
	uint32_t key[4] = {0, 0, 1, 1}, ranks[4] = {4, 4, 4, 4};
	tjob_t t = {{key, key}, ranks, NULL, NULL};
	tp_sched_t *seg = build_job(&t, 4, 1, 1, TP_SCHED_HIER, 0);
	tp_sched_t *ring = build_job(&t, 4, 1, 1, TP_SCHED_HIER, 1);

	(void)state;
	for (int a = 0; a < 2; a++) {
		const tp_sched_t *s = a ? ring : seg;
		size_t last = tp_sched_nphases(s) - 1;
		assert_int_equal(tp_sched_phase(s, 0)->kind,
				 TP_SCHED_PH_HOST_RS);
		assert_int_equal(tp_sched_phase(s, last)->kind,
				 TP_SCHED_PH_HOST_AG);
		assert_close(tp_sched_phase(s, 0)->local_steps,
			     a ? 3 : TP_SCHED_SEG_WAIT);
		assert_close(tp_sched_phase(s, last)->local_steps,
			     a ? 3 : TP_SCHED_SEG_WAIT);
		assert_close(tp_sched_phase(s, 0)->edges[0].frac, 3.0 / 4);
		assert_close(tp_sched_latency(s, 1, 0, NULL),
			     a ? 10 : 4 + 2 * TP_SCHED_SEG_WAIT);
	}
	tp_sched_destroy(seg);
	tp_sched_destroy(ring);
}

static int node2_rings(const void *arg, size_t node)
{
	(void)arg;
	return node == 2;
}

/* One node of four refusing the segment (node_host_ring) prices the host
 * phases as rings for the whole job, like host_ring: the phases end
 * together, so its g - 1 steps are everyone's. None refusing: the
 * segment's one step. */
static void test_hier_node_host_ring(void **state)
{
	uint32_t key[4] = {0, 0, 1, 1}, ranks[4] = {4, 4, 4, 4};
	tjob_t t = {{key, key}, ranks, NULL, NULL};
	tp_sched_job_t j = {0};
	tp_sched_t *s = NULL;

	(void)state;
	j.n = 4;
	j.nlevels = 1;
	j.nrails = 1;
	j.arg = &t;
	j.group = tj_group;
	j.nranks = tj_ranks;
	j.node_host_ring = node2_rings;
	assert_int_equal(tp_sched_build(&j, TP_SCHED_HIER, &s), TP_OK);
	assert_close(tp_sched_phase(s, 0)->local_steps, 3);
	assert_close(tp_sched_latency(s, 1, 0, NULL), 10);
	tp_sched_destroy(s);
	j.n = 2; /* nodes 0 and 1: none refuses */
	assert_int_equal(tp_sched_build(&j, TP_SCHED_HIER, &s), TP_OK);
	assert_close(tp_sched_phase(s, 0)->local_steps, TP_SCHED_SEG_WAIT);
	tp_sched_destroy(s);
}

/* Tree self edges: a node with g ranks moves S per tree over its local
 * fabric; 2(g-1) local steps. One node: no node edges at all. */
/* A node's ranks run each tree as a chain: inside it a rank sends S/2 up
 * and S/2 down (S a tree), an end one of them; with 2 ranks both are
 * ends, S/2 a tree. The self edges said S for 2 ranks too, pricing the
 * tree at up to twice what libtopoplace-coll moves (a review measured
 * 1.000 S a rank against the schedule's 2.000). */
static void test_tree_local(void **state)
{
	static const struct {
		uint32_t g;
		double local, each;
	} c[] = {{2, 2, 0.5}, {3, 4, 1}, {4, 6, 1}};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint32_t key[1] = {0}, ranks[1] = {c[i].g};
		tjob_t t = {{key, key}, ranks, NULL, NULL};
		tp_sched_t *s = build(&t, 1, 1, 0, TP_SCHED_TREE);
		const tp_sched_phase_t *ph = tp_sched_phase(s, 0);
		assert_int_equal(ph->nedges, 2);
		assert_close(ph->edges[0].frac, c[i].each);
		assert_close(ph->edges[1].frac, c[i].each);
		assert_close(ph->local_steps, c[i].local);
		assert_close(ph->steps, 0);
		tp_sched_destroy(s);
	}
}

static int fail_after;
static void *fmalloc(size_t n)
{
	return fail_after-- > 0 ? malloc(n) : NULL;
}
static void *fcalloc(size_t n, size_t m)
{
	return fail_after-- > 0 ? calloc(n, m) : NULL;
}
static void *frealloc(void *p, size_t n)
{
	return fail_after-- > 0 ? realloc(p, n) : NULL;
}

/* The pipeline's closed form against the recurrence the library runs,
 * stage by stage: RS(i) after RS(i-1); X(i) after RS(i) and X(i-1);
 * AG(i) after X(i), AG(i-1) and every RS. Stages of every balance
 * (reduce-scatters, exchange or all-gathers the longest), latencies on
 * and off, 1..40 segments. */
static double pipe_brute(const double t[3], const double lat[3], int n)
{
	double rs = 0, x = 0, ag = 0, all_rs = n * (t[0] / n + lat[0]);

	for (int i = 0; i < n; i++) {
		rs += t[0] / n + lat[0];
		x = (rs > x ? rs : x) + t[1] / n + lat[1];
		double start = x > ag ? x : ag;
		ag = (start > all_rs ? start : all_rs) + t[2] / n + lat[2];
	}
	return ag;
}

static void test_pipe_seconds(void **state)
{
	static const double ts[][3] = {
	    {0.75, 1, 0.75}, {0.75, 2, 0.75}, {0.1, 0.2, 3}, {3, 0.2, 0.1},
	    {1, 1, 1},	     {0, 1, 0},	      {2, 0, 2},     {0.3, 5, 0.01}};
	static const double lats[][3] = {{0, 0, 0}, {0.01, 0.002, 0.01}};

	(void)state;
	for (size_t a = 0; a < sizeof(ts) / sizeof(*ts); a++)
		for (size_t l = 0; l < 2; l++)
			for (int n = 1; n <= 40; n++) {
				double got =
				    tp_sched_pipe_seconds(ts[a], lats[l], n);
				double want = pipe_brute(ts[a], lats[l], n);
				if (fabs(got - want) > 1e-12 * (1 + want))
					fail_msg(
					    "case %zu lat %zu n %d: %.15g, "
					    "recurrence %.15g",
					    a, l, n, got, want);
			}
	/* the segment counts the library cuts */
	assert_true(tp_sched_pipe_nseg(1 << 20, 1 << 20) == 1);
	assert_true(tp_sched_pipe_nseg((1 << 20) + 1, 1 << 20) == 2);
	assert_true(tp_sched_pipe_nseg(16 << 20, 1 << 20) == 16);
	assert_true(tp_sched_pipe_nseg(1 << 30, 1 << 20) ==
		    TP_SCHED_PIPE_SEGS_MAX);
	assert_true(tp_sched_pipe_nseg(1 << 30, 0) == 1);
	/* TOPOPLACE_COLL_SEGMENT's values */
	size_t seg = 7;
	assert_int_equal(tp_sched_segment_parse(NULL, &seg), TP_OK);
	assert_int_equal(seg, TP_SCHED_HIER_SEGMENT);
	assert_int_equal(tp_sched_segment_parse("0", &seg), TP_OK);
	assert_int_equal(seg, 0);
	assert_int_equal(tp_sched_segment_parse("1073741824", &seg), TP_OK);
	assert_int_equal(seg, TP_SCHED_HIER_SEGMENT_MAX);
	static const char *const bad[] = {
	    "-1", "1k", " 8", "8 ", "1073741825", "99999999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		seg = 7;
		assert_int_equal(tp_sched_segment_parse(bad[i], &seg),
				 TP_ERR_INVAL);
		assert_int_equal(seg, 7);
	}
}

static void test_errors(void **state)
{
	uint32_t key[4] = {0}, zero[4] = {0};
	tjob_t t = {{key, key}, NULL, NULL, NULL};
	tp_sched_job_t j = {4,	  1,	0, &t,	 tj_group, NULL,
			    NULL, NULL, 0, NULL, NULL};
	tp_allocator_t a = {fmalloc, fcalloc, frealloc, free};
	tp_sched_t *s = NULL;

	(void)state;
	assert_int_equal(tp_sched_build(NULL, TP_SCHED_RING, &s), TP_ERR_INVAL);
	assert_int_equal(tp_sched_build(&j, (tp_sched_algo_t)7, &s),
			 TP_ERR_INVAL);
	assert_int_equal(tp_sched_build(&j, TP_SCHED_RING, NULL), TP_ERR_INVAL);
	j.n = 0;
	assert_int_equal(tp_sched_build(&j, TP_SCHED_RING, &s), TP_ERR_INVAL);
	j.n = 4;
	j.nlevels = TP_SCHED_MAX_LEVELS + 1;
	assert_int_equal(tp_sched_build(&j, TP_SCHED_RING, &s), TP_ERR_INVAL);
	j.nlevels = 1;
	j.nrails = TP_SCHED_MAX_RAILS + 1;
	assert_int_equal(tp_sched_build(&j, TP_SCHED_RING, &s), TP_ERR_INVAL);
	j.nrails = 0;
	j.group = NULL;
	assert_int_equal(tp_sched_build(&j, TP_SCHED_RING, &s), TP_ERR_INVAL);
	j.group = tj_group;
	t.ranks = zero;
	j.nranks = tj_ranks;
	assert_int_equal(tp_sched_build(&j, TP_SCHED_RING, &s), TP_ERR_INVAL);
	assert_null(s);
	t.ranks = NULL;
	int nomem = 0; /* the loop stops at the first success */
	for (int k = 0;; k++) {
		fail_after = k;
		tp_alloc_set(&a);
		tp_err_t err = tp_sched_build(&j, TP_SCHED_HIER, &s);
		tp_alloc_set(NULL);
		if (!err)
			break;
		assert_int_equal(err, TP_ERR_NOMEM);
		assert_null(s);
		nomem++;
	}
	assert_true(nomem > 0);
	tp_sched_destroy(s);
	tp_sched_destroy(NULL);
	assert_int_equal(tp_sched_nphases(NULL), 0);
	assert_null(tp_sched_phase(NULL, 0));
	assert_int_equal(tp_sched_group_of(NULL, 0), TP_SCHED_NONE);
	assert_int_equal(tp_sched_rail_leader(NULL, 0, 0), TP_SCHED_NONE);
	assert_int_equal(tp_sched_tree_parent(NULL, 0, 0), TP_SCHED_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tree_one_group),
	    cmocka_unit_test(test_tree_levelwise),
	    cmocka_unit_test(test_nokey),
	    cmocka_unit_test(test_no_levels),
	    cmocka_unit_test(test_ring),
	    cmocka_unit_test(test_hier_one_rail),
	    cmocka_unit_test(test_hier_rails),
	    cmocka_unit_test(test_hier_weights),
	    cmocka_unit_test(test_hier_uneven),
	    cmocka_unit_test(test_hier_one_node),
	    cmocka_unit_test(test_host_small),
	    cmocka_unit_test(test_hier_host_ring),
	    cmocka_unit_test(test_hier_node_host_ring),
	    cmocka_unit_test(test_tree_local),
	    cmocka_unit_test(test_pipe_seconds),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
