/*
 * The plan's schedules (tp_plan_sched): the groups, rail leaders and trees
 * the plan records are sched/'s; a plan read back from its JSON gives the
 * same edges as the one built, so a library running a loaded plan runs
 * what the cost model priced; the plan's predictions are the cost model's
 * price of those schedules.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tp_test.h"
#include "tp_test_fabric.h"

#include "tp_runtime.h"

static tp_plan_t *plan_of(const tp_fabric_t *f, size_t n, bool predict,
			  tp_cost_ctx_t **ctx_p)
{
	const char *hosts[64];
	tp_plan_t *p = NULL;
	tp_plan_opts_t o;

	assert_true(n <= 64);
	for (size_t i = 0; i < n; i++)
		hosts[i] = tp_fabric_host(f, i)->name;
	tp_plan_opts_defaults(&o);
	o.predict = predict;
	if (ctx_p)
		assert_int_equal(tp_cost_ctx_create(f, NULL, ctx_p), TP_OK);
	assert_int_equal(
	    tp_plan_build(f, ctx_p ? *ctx_p : NULL, hosts, n, &o, &p, NULL),
	    TP_OK);
	return p;
}

static void assert_same_sched(const tp_sched_t *a, const tp_sched_t *b)
{
	assert_int_equal(tp_sched_nphases(a), tp_sched_nphases(b));
	for (size_t i = 0; i < tp_sched_nphases(a); i++) {
		const tp_sched_phase_t *x = tp_sched_phase(a, i);
		const tp_sched_phase_t *y = tp_sched_phase(b, i);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->nedges, y->nedges);
		assert_int_equal(x->mirror, y->mirror);
		assert_true(x->steps == y->steps);
		assert_true(x->local_steps == y->local_steps);
		for (size_t e = 0; e < x->nedges; e++) {
			assert_int_equal(x->edges[e].src, y->edges[e].src);
			assert_int_equal(x->edges[e].dst, y->edges[e].dst);
			assert_int_equal(x->edges[e].chan, y->edges[e].chan);
			assert_int_equal(x->edges[e].rail, y->edges[e].rail);
			assert_true(x->edges[e].frac == y->edges[e].frac);
		}
	}
}

/* Rail-optimized, 2 scalable units x 4 hosts, 4 rails, 8 GPUs: the
 * hierarchical schedule's channels are (member, local rank): its cross
 * edges run between corresponding members of the units, one per rail,
 * on the rail of the ranks they carry; the rail leaders are recorded
 * (informational) and answered by the schedule; groups are the plan's;
 * the tree schedule's trees are the plan's; everything survives a JSON
 * round trip. */
static void test_rail_leaders_and_json(void **state)
{
	tp_fabric_t *f = tp_test_rail(2, 4, 4, 2, 8);
	tp_plan_t *p = plan_of(f, 8, false, NULL), *q = NULL;
	tp_sched_t *s = NULL, *s2 = NULL, *t = NULL;
	const tp_sched_phase_t *cross;
	char *json = NULL;

	(void)state;
	assert_int_equal(tp_plan_sched(p, TP_SCHED_HIER, &s), TP_OK);
	assert_int_equal(tp_sched_ngroups(s), tp_plan_ngroups(p));
	for (size_t g = 0; g < tp_plan_ngroups(p); g++) {
		const tp_plan_group_t *gp = tp_plan_group(p, g);
		const uint32_t *m;
		assert_int_equal(tp_sched_group_nodes(s, g, &m), gp->nhosts);
		assert_int_equal(m[0], gp->first);
		assert_int_equal(gp->nrail_leaders, 4);
		for (size_t i = 0; i < gp->nrail_leaders; i++)
			assert_int_equal(tp_sched_rail_leader(
					     s, g, gp->rail_leaders[i].rail),
					 gp->rail_leaders[i].node_rank);
	}
	cross = tp_sched_phase(s, 2);
	assert_int_equal(cross->kind, TP_SCHED_PH_CROSS);
	assert_int_equal(cross->nedges, 4 * 2 * 4);
	for (size_t e = 0; e < cross->nedges; e++) {
		const tp_sched_edge_t *x = &cross->edges[e];
		const tp_plan_host_t *a = tp_plan_host(p, x->src);
		const tp_plan_host_t *b = tp_plan_host(p, x->dst);
		bool on_rail = false;
		assert_true(a->group != b->group);
		assert_int_equal(x->src - tp_plan_group(p, a->group)->first,
				 x->chan);
		assert_int_equal(x->dst - tp_plan_group(p, b->group)->first,
				 x->chan);
		for (uint32_t l = 0; l < a->nranks; l++)
			on_rail |= a->ranks[l].rail == x->rail &&
				   b->ranks[l].rail == x->rail;
		assert_true(on_rail);
		/* 2 of the 8 ranks per rail: 2 x 2(m-1)/m / (K g) */
		assert_true(fabs(x->frac - 2.0 / 32) < 1e-12);
	}
	assert_int_equal(tp_plan_sched(p, TP_SCHED_TREE, &t), TP_OK);
	for (int tr = 0; tr < 2; tr++) {
		assert_int_equal(tp_sched_tree_root(t, tr),
				 tp_plan_tree_root(p, tr));
		for (size_t r = 0; r < 8; r++)
			assert_int_equal(tp_sched_tree_parent(t, tr, r),
					 tp_plan_tree_parent(p, tr, r));
	}
	assert_int_equal(tp_plan_to_json(p, &json), TP_OK);
	assert_int_equal(
	    tp_plan_parse_json("plan.json", json, strlen(json), &q, NULL),
	    TP_OK);
	assert_int_equal(tp_plan_sched(q, TP_SCHED_HIER, &s2), TP_OK);
	assert_same_sched(s, s2);
	tp_sched_destroy(s2);
	s2 = NULL;
	assert_int_equal(tp_plan_sched(q, TP_SCHED_TREE, &s2), TP_OK);
	assert_same_sched(t, s2);
	tp_sched_destroy(s2);
	tp_sched_destroy(t);
	tp_sched_destroy(s);
	tp_free(json);
	tp_plan_destroy(q);
	tp_plan_destroy(p);
	tp_fabric_destroy(f);
}

/* The plan's predictions price its own schedules: the tree and the
 * hierarchical prediction at the largest size are tp_cost_predict's over
 * the plan's ring, whose cross-spine bytes for the tree are what the
 * plan's trees send across: 2 x (groups - 1) edges x S/2 each way. */
static void test_predictions_are_the_schedule(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree_il(3, 4, 1);
	tp_cost_ctx_t *ctx = NULL;
	tp_plan_t *p = plan_of(f, 12, true, &ctx);
	tp_sched_t *t = NULL;
	uint32_t ring[12];
	int gpus[12];
	size_t last = tp_plan_nsizes(p) - 1, cross_edges = 0;
	double S = tp_plan_size(p, last);
	tp_cost_t c;

	(void)state;
	for (size_t r = 0; r < 12; r++) {
		ring[r] = tp_fabric_host_find(f, tp_plan_host(p, r)->name);
		gpus[r] = (int)tp_plan_host(p, r)->nranks;
	}
	assert_int_equal(tp_plan_sched(p, TP_SCHED_TREE, &t), TP_OK);
	for (int tr = 0; tr < 2; tr++)
		for (size_t r = 0; r < 12; r++) {
			uint32_t up = tp_sched_tree_parent(t, tr, r);
			if (up != TP_SCHED_NONE &&
			    tp_plan_host(p, up)->group !=
				tp_plan_host(p, r)->group)
				cross_edges++;
		}
	assert_int_equal(cross_edges, 2 * (tp_plan_ngroups(p) - 1));
	assert_int_equal(
	    tp_cost_predict(ctx, NULL, ring, gpus, 12, S, TP_ALGO_TREE, &c),
	    TP_OK);
	assert_true(
	    fabs(c.seconds - tp_plan_predict_s(p, last, TP_ALGO_TREE)) <=
	    1e-12 * c.seconds);
	assert_true(fabs(c.cross_top_bytes - (double)cross_edges * S) <=
		    1e-9 * S);
	tp_sched_destroy(t);
	tp_plan_destroy(p);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

/* Hosts the fabric knows no GPUs of, many ranks each: the ranks spread
 * over the CAs, so every rail has a leader in every group, the
 * hierarchical prediction (which derives the same rails) is made, and
 * the cross edges keep to each rail the ranks drive. */
static void test_many_ranks_no_gpus(void **state)
{
	tp_fabric_t *f = tp_test_rail(2, 2, 4, 2, 0);
	tp_cost_ctx_t *ctx = NULL;
	const char *hosts[4];
	tp_plan_t *p = NULL;
	tp_plan_opts_t o;
	tp_sched_t *s = NULL;

	(void)state;
	for (size_t i = 0; i < 4; i++)
		hosts[i] = tp_fabric_host(f, i)->name;
	tp_plan_opts_defaults(&o);
	o.gpus_per_host = 4000;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	assert_int_equal(tp_plan_build(f, ctx, hosts, 4, &o, &p, NULL), TP_OK);
	assert_int_equal(tp_plan_nrails(p), 4);
	assert_int_equal(tp_plan_group(p, 0)->nrail_leaders, 4);
	assert_true(isfinite(tp_plan_predict_s(p, 0, TP_ALGO_HIERARCHICAL)));
	assert_int_equal(tp_plan_sched(p, TP_SCHED_HIER, &s), TP_OK);
	assert_int_equal(tp_sched_phase(s, 2)->nedges, 2 * 2 * 4);
	for (size_t e = 0; e < tp_sched_phase(s, 2)->nedges; e++)
		assert_int_equal(tp_sched_phase(s, 2)->edges[e].rail,
				 (int)(e % 4));
	tp_sched_destroy(s);
	tp_plan_destroy(p);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

static void test_errors(void **state)
{
	tp_sched_t *s = NULL;

	(void)state;
	assert_int_equal(tp_plan_sched(NULL, TP_SCHED_RING, &s), TP_ERR_INVAL);
	assert_null(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rail_leaders_and_json),
	    cmocka_unit_test(test_predictions_are_the_schedule),
	    cmocka_unit_test(test_many_ranks_no_gpus),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
