/*
 * Running jobs' traffic (tp_traffic_*) and tp_place_choose: what the Slurm
 * plugin's selection prices with, checked against the cost model and
 * tp_place_run directly.
 */
#include "tp_test.h"
#include "tp_test_fabric.h"

#include <math.h>
#include <string.h>

#include "tp_placement.h"

/* 2 leaves x 4 hosts x 4 GPUs, one spine, 2 up-links per leaf (2:1),
 * one NIC per host: node001-004 on one leaf, node005-008 on the other. */
static tp_fabric_t *two_leaves(void)
{
	return tp_test_fat_tree(2, 1, 4, 2, 4, false);
}

static void test_fair_background(void **unused)
{
	(void)unused;
	/* nobody loads the link: nothing */
	assert_true(tp_traffic_fair_background(100, 50, 0) == 0);
	/* one job: its load, at most half the link */
	assert_true(tp_traffic_fair_background(100, 30, 1) == 30);
	assert_true(tp_traffic_fair_background(100, 80, 1) == 50);
	/* three jobs: at most 3/4 */
	assert_true(fabs(tp_traffic_fair_background(100, 90, 3) - 75) < 1e-9);
	/* dead link, negative or NaN load: nothing */
	assert_true(tp_traffic_fair_background(0, 30, 1) == 0);
	assert_true(tp_traffic_fair_background(100, -5, 1) == 0);
	assert_true(tp_traffic_fair_background(100, NAN, 1) == 0);
}

/* The background apply() gives one job equals tp_cost_link_load's load,
 * capped at half the link; removing the job leaves exactly zero. */
static void test_add_apply_remove(void **unused)
{
	tp_fabric_t *f = two_leaves();
	tp_cost_ctx_t *ctx = NULL;
	tp_traffic_t *t = tp_traffic_create(f);
	tp_state_t *s = tp_state_create(f), *from = tp_state_create(f);
	size_t nl = tp_fabric_nlinks(f);
	double *load = calloc(2 * nl, sizeof(double));
	uint32_t hs[2] = {tp_test_host(f, "node001"),
			  tp_test_host(f, "node005")};
	uint32_t one[1] = {tp_test_host(f, "node002")};
	int gs[2] = {4, 4};
	size_t loaded = 0;

	(void)unused;
	assert_non_null(t);
	assert_non_null(s);
	assert_non_null(load);
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	assert_int_equal(tp_traffic_njobs(t), 0);

	/* one host loads no fabric link: nothing kept */
	assert_int_equal(
	    tp_traffic_add(t, 1, ctx, NULL, one, gs, 1, 1e9, TP_ALGO_RING, 0.3),
	    TP_OK);
	assert_int_equal(tp_traffic_njobs(t), 0);

	assert_int_equal(
	    tp_traffic_add(t, 7, ctx, NULL, hs, gs, 2, 1e9, TP_ALGO_RING, 0.3),
	    TP_OK);
	assert_int_equal(tp_traffic_njobs(t), 1);
	assert_int_equal(tp_cost_link_load(ctx, NULL, hs, gs, 2, 1e9,
					   TP_ALGO_RING, 0.3, load),
			 TP_OK);
	assert_int_equal(tp_traffic_apply(t, NULL, s), TP_OK);
	for (size_t l = 0; l < nl; l++) {
		double cap = tp_fabric_link(f, (uint32_t)l)->gbps;
		double want = fmax(fmin(load[2 * l], cap / 2),
				   fmin(load[2 * l + 1], cap / 2));
		assert_true(fabs(tp_state_link_background(s, (uint32_t)l) -
				 want) < 1e-9 * (1 + want));
		assert_true(tp_state_link_health(s, (uint32_t)l) == 1);
		loaded += want > 0;
	}
	assert_true(loaded >= 2); /* up from one leaf, down into the other */

	/* the same job again replaces its load, never doubles it */
	assert_int_equal(
	    tp_traffic_add(t, 7, ctx, NULL, hs, gs, 2, 1e9, TP_ALGO_RING, 0.3),
	    TP_OK);
	assert_int_equal(tp_traffic_njobs(t), 1);

	/* the file's links under the traffic: health copied, background
	 * added on top */
	assert_int_equal(tp_state_set_link(from, 0, 0.5, 10), TP_OK);
	assert_int_equal(tp_traffic_apply(t, from, s), TP_OK);
	assert_true(tp_state_link_health(s, 0) == 0.5);
	assert_true(tp_state_link_background(s, 0) >= 10);

	assert_int_equal(tp_traffic_remove(t, 7), TP_OK);
	assert_int_equal(tp_traffic_remove(t, 7), TP_ERR_NOTFOUND);
	assert_int_equal(tp_traffic_njobs(t), 0);
	assert_int_equal(tp_traffic_apply(t, NULL, s), TP_OK);
	for (size_t l = 0; l < nl; l++)
		assert_true(tp_state_link_background(s, (uint32_t)l) == 0);
	assert_int_equal(tp_traffic_apply(t, from, s), TP_OK);
	assert_true(tp_state_link_health(s, 0) == 0.5);
	assert_int_equal(tp_traffic_apply(NULL, NULL, s), TP_OK);
	for (size_t l = 0; l < nl; l++)
		assert_true(tp_state_link_health(s, (uint32_t)l) == 1 &&
			    tp_state_link_background(s, (uint32_t)l) == 0);

	free(load);
	tp_state_destroy(from);
	tp_state_destroy(s);
	tp_traffic_destroy(t);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

/* Many jobs in and out in another order: no ghost traffic. */
static void test_many_jobs(void **unused)
{
	tp_fabric_t *f = two_leaves();
	tp_cost_ctx_t *ctx = NULL;
	tp_traffic_t *t = tp_traffic_create(f);
	tp_state_t *s = tp_state_create(f);
	size_t nl = tp_fabric_nlinks(f);
	int gs[2] = {1, 1};

	(void)unused;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	for (uint32_t j = 0; j < 16; j++) {
		uint32_t hs[2] = {j % 4, 4 + (j * 3) % 4};
		assert_int_equal(tp_traffic_add(t, 100 + j, ctx, NULL, hs, gs,
						2, 1e8 * (j + 1), TP_ALGO_RING,
						0.1 * (j % 9 + 1)),
				 TP_OK);
	}
	assert_int_equal(tp_traffic_njobs(t), 16);
	assert_int_equal(tp_traffic_apply(t, NULL, s), TP_OK);
	for (size_t l = 0; l < nl; l++)
		assert_true(tp_state_link_background(s, (uint32_t)l) <=
			    tp_fabric_link(f, (uint32_t)l)->gbps);
	for (uint32_t j = 0; j < 16; j++)
		assert_int_equal(tp_traffic_remove(t, 100 + (j * 7) % 16),
				 TP_OK);
	assert_int_equal(tp_traffic_apply(t, NULL, s), TP_OK);
	for (size_t l = 0; l < nl; l++)
		assert_true(tp_state_link_background(s, (uint32_t)l) == 0);
	tp_state_destroy(s);
	tp_traffic_destroy(t);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

static void test_bad_args(void **unused)
{
	tp_fabric_t *f = two_leaves(), *g = two_leaves();
	tp_traffic_t *t = tp_traffic_create(f);
	tp_state_t *sg = tp_state_create(g), *sf = tp_state_create(f);
	uint32_t hs[2] = {0, 4};
	int gs[2] = {1, 1};

	(void)unused;
	assert_null(tp_traffic_create(NULL));
	tp_traffic_destroy(NULL);
	assert_int_equal(tp_traffic_njobs(NULL), 0);
	assert_int_equal(tp_traffic_remove(NULL, 1), TP_ERR_INVAL);
	assert_int_equal(tp_traffic_apply(NULL, NULL, NULL), TP_ERR_INVAL);
	/* another fabric's state */
	assert_int_equal(tp_traffic_apply(t, NULL, sg), TP_ERR_INVAL);
	assert_int_equal(tp_traffic_apply(NULL, sf, sg), TP_ERR_INVAL);
	assert_int_equal(
	    tp_traffic_add(t, 1, NULL, sg, hs, gs, 2, 1e9, TP_ALGO_RING, 0.3),
	    TP_ERR_INVAL);
	/* no cost context, duty out of range: the cost model's INVAL */
	assert_int_equal(
	    tp_traffic_add(t, 1, NULL, NULL, hs, gs, 2, 1e9, TP_ALGO_RING, 0.3),
	    TP_ERR_INVAL);
	assert_int_equal(tp_traffic_njobs(t), 0);
	tp_state_destroy(sf);
	tp_state_destroy(sg);
	tp_traffic_destroy(t);
	tp_fabric_destroy(g);
	tp_fabric_destroy(f);
}

/* tp_place_choose: the hosts of tp_place_run, unpredicted; with an
 * unhealthy up-link the priced choice moves off it, and price_budget 0
 * gives the structural choice. */
static void test_place_choose(void **unused)
{
	tp_fabric_t *f = two_leaves();
	tp_cost_ctx_t *ctx = NULL;
	tp_state_t *s = tp_state_create(f);
	tp_request_t r = {.nodes = 6, .exclusive = true};
	tp_policy_params_t pp, off;
	tp_placement_t a = {0}, b = {0}, c = {0};
	uint32_t up = TP_ID_NONE;

	(void)unused;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	tp_policy_params_defaults(&pp);
	assert_true(pp.price_budget == 96);
	off = pp;
	off.price_budget = 0;
	/* the first up-link of the leaf the structural pick takes whole */
	assert_int_equal(
	    tp_place_run(tp_policy_find("topoplace"), s, &r, &pp, ctx, 1, &a),
	    TP_OK);
	for (size_t l = 0; l < tp_fabric_nlinks(f) && up == TP_ID_NONE; l++) {
		const tp_link_t *lk = tp_fabric_link(f, (uint32_t)l);
		if (lk->kind[0] == TP_NODE_SWITCH &&
		    lk->kind[1] == TP_NODE_SWITCH)
			up = (uint32_t)l;
	}
	assert_int_not_equal(up, TP_ID_NONE);
	assert_int_equal(tp_place_choose(tp_policy_find("topoplace"), s, &r,
					 &pp, ctx, 1, &b),
			 TP_OK);
	assert_int_equal(a.nhosts, b.nhosts);
	assert_memory_equal(a.hosts, b.hosts, a.nhosts * sizeof(uint32_t));
	assert_true(a.predicted_s > 0);
	assert_true(b.predicted_s == 0 && b.ideal_s == 0);
	tp_placement_free(&a);
	tp_placement_free(&b);

	assert_int_equal(tp_state_set_link(s, up, 0.1, 0), TP_OK);
	assert_int_equal(
	    tp_place_run(tp_policy_find("topoplace"), s, &r, &pp, ctx, 1, &a),
	    TP_OK);
	assert_int_equal(tp_place_choose(tp_policy_find("topoplace"), s, &r,
					 &pp, ctx, 1, &b),
			 TP_OK);
	assert_memory_equal(a.hosts, b.hosts, a.nhosts * sizeof(uint32_t));
	assert_int_equal(tp_place_choose(tp_policy_find("topoplace"), s, &r,
					 &off, ctx, 1, &c),
			 TP_OK);
	/* pricing moved the job; without it, the structure alone */
	assert_true(memcmp(b.hosts, c.hosts, b.nhosts * sizeof(uint32_t)) != 0);
	tp_placement_free(&a);
	tp_placement_free(&b);
	tp_placement_free(&c);

	/* healthy, idle links and no host busy: pricing keeps the
	 * structural answer for every job size (with some hosts busy it
	 * need not: tests/bench/bench_place_budget) */
	assert_int_equal(tp_state_set_link(s, up, 1, 0), TP_OK);
	for (int n = 2; n <= 8; n++) {
		tp_request_t q = {.nodes = n, .exclusive = true};
		assert_int_equal(tp_place_choose(tp_policy_find("topoplace"), s,
						 &q, &pp, ctx, 1, &b),
				 TP_OK);
		assert_int_equal(tp_place_choose(tp_policy_find("topoplace"), s,
						 &q, &off, ctx, 1, &c),
				 TP_OK);
		assert_memory_equal(b.hosts, c.hosts,
				    b.nhosts * sizeof(uint32_t));
		tp_placement_free(&b);
		tp_placement_free(&c);
	}
	tp_state_destroy(s);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

/* A state's jobs, listed by id with their hosts, and their load: each
 * multi-host job's fastest all-reduce as tp_cost_link_load gives it,
 * summed; a one-host job adds nothing. */
static void test_state_jobs_load(void **unused)
{
	tp_fabric_t *f = two_leaves();
	tp_cost_ctx_t *ctx = NULL;
	tp_state_t *s = tp_state_create(f);
	size_t nl = tp_fabric_nlinks(f), n = 0, unrouted = 9;
	double *got = calloc(2 * nl, sizeof(double)),
	       *want = calloc(2 * nl, sizeof(double));
	uint32_t a[2] = {tp_test_host(f, "node005"),
			 tp_test_host(f, "node001")},
		 b[1] = {tp_test_host(f, "node003")};
	int ga[2] = {4, 2}, gb[1] = {1};
	tp_state_job_t *jobs = NULL;

	(void)unused;
	assert_non_null(got);
	assert_non_null(want);
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	assert_int_equal(tp_state_jobs(s, &jobs, &n), TP_OK);
	assert_int_equal(n, 0);
	assert_null(jobs);
	assert_int_equal(tp_state_alloc(s, 9, a, ga, 2), TP_OK);
	assert_int_equal(tp_state_alloc(s, 4, b, gb, 1), TP_OK);
	assert_int_equal(tp_state_jobs(s, &jobs, &n), TP_OK);
	assert_int_equal(n, 2);
	assert_true(jobs[0].id == 4 && jobs[1].id == 9);
	assert_int_equal(jobs[0].nhosts, 1);
	assert_int_equal(jobs[0].total_gpus, 1);
	assert_int_equal(jobs[1].nhosts, 2);
	assert_int_equal(jobs[1].total_gpus, 6);
	/* ascending host index, each with its own GPU count */
	assert_int_equal(jobs[1].hosts[0], a[1]);
	assert_int_equal(jobs[1].gpus[0], 2);
	assert_int_equal(jobs[1].hosts[1], a[0]);
	assert_int_equal(jobs[1].gpus[1], 4);

	/* the fastest of the three algorithms, priced as the state is */
	double best = INFINITY;
	tp_algo_t algo = TP_ALGO_RING;
	for (int k = 0; k < 3; k++) {
		tp_cost_t c;
		assert_int_equal(tp_cost_predict(ctx, s, jobs[1].hosts,
						 jobs[1].gpus, 2, 1e9,
						 (tp_algo_t)k, &c),
				 TP_OK);
		if (c.seconds < best) {
			best = c.seconds;
			algo = (tp_algo_t)k;
		}
	}
	assert_int_equal(tp_cost_link_load(ctx, s, jobs[1].hosts, jobs[1].gpus,
					   2, 1e9, algo, 0.5, want),
			 TP_OK);
	assert_int_equal(
	    tp_state_jobs_link_load(ctx, s, 1e9, 0.5, got, &unrouted), TP_OK);
	assert_int_equal(unrouted, 0);
	size_t loaded = 0;
	for (size_t r = 0; r < 2 * nl; r++) {
		assert_true(fabs(got[r] - want[r]) <= 1e-9 * (1 + want[r]));
		loaded += got[r] > 0;
	}
	assert_true(loaded >= 4); /* two host cables, up and down */
	assert_int_equal(tp_state_jobs_link_load(NULL, s, 1e9, 0.5, got, NULL),
			 TP_ERR_INVAL);
	tp_state_jobs_free(jobs, n);
	tp_state_jobs_free(NULL, 0);
	free(got);
	free(want);
	tp_state_destroy(s);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fair_background),
	    cmocka_unit_test(test_add_apply_remove),
	    cmocka_unit_test(test_many_jobs),
	    cmocka_unit_test(test_bad_args),
	    cmocka_unit_test(test_place_choose),
	    cmocka_unit_test(test_state_jobs_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
