/*
 * The topoplace policy against brute force: on small 2:1 fat trees with
 * loaded and degraded up-links and partly busy hosts, every feasible host
 * set is priced (in ring order, the faster of ring and hierarchical, on
 * the state's links and traffic, as the placement driver prices its
 * answer) and the policy's pick is compared with the cheapest. Two
 * families: one NIC a host with only up-links degraded, and hosts of
 * four NICs on fabrics whose generator took down or halved 30% of the
 * cables, host cables included (the missing cables real dumps show, at
 * a rate that leaves few hosts whole). The cases are seeded, so the
 * figures are exact. Issue 12's goal is within 5% of the cheapest in
 * >= 95% of the cases and never worse than 1.5x: both families hold it
 * (the second at the line: 114 of 120); the test prints its figures,
 * and TP_BRUTE_VERBOSE=1 lists the misses with the policy's
 * explanation of each pick.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "tp_test_fabric.h"
#include "tp_test_state.h"
#include "placement_int.h"

#define NCASES 120

typedef struct brute {
	const tp_cost_ctx_t *ctx;
	const tp_state_t *s;
	const uint32_t *cand; /* free hosts */
	size_t ncand, k;
	uint32_t pick[16];
	int gpus[16];
	double best;
	uint32_t best_set[16];
} brute_t;

/* What a family's cases came to. */
typedef struct tally {
	size_t cases, within;
	double worst, sum;
} tally_t;

static void enumerate(brute_t *b, size_t from, size_t depth)
{
	if (depth == b->k) {
		uint32_t h[16];
		int g[16];
		tp_cost_t c;
		memcpy(h, b->pick, b->k * sizeof(uint32_t));
		memcpy(g, b->gpus, b->k * sizeof(int));
		tp_ring_order(tp_state_fabric(b->s), h, g, b->k);
		if (!tp_cost_predict_best(b->ctx, b->s, h, g, b->k,
					  TP__DEFAULT_BYTES, NULL, &c) &&
		    (b->best < 0 || c.seconds < b->best)) {
			b->best = c.seconds;
			memcpy(b->best_set, h, b->k * sizeof(uint32_t));
		}
		return;
	}
	for (size_t i = from; i + (b->k - depth) <= b->ncand; i++) {
		b->pick[depth] = b->cand[i];
		b->gpus[depth] =
		    (int)tp_fabric_host(tp_state_fabric(b->s), b->cand[i])
			->ngpus;
		enumerate(b, i + 1, depth + 1);
	}
}

/* One case: a seeded state on f, a job of 2..6 whole hosts placed by the
 * policy and priced against every set of free hosts. False when the
 * state leaves too few hosts free for the job. */
static bool one_case(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
		     uint64_t seed, tally_t *t)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL;
	tp_state_t *s = tp_state_create(f);
	uint32_t cand[16];
	size_t ncand = 0;

	assert_non_null(s);
	assert_true(tp_fabric_nhosts(f) <= 16);
	assert_int_equal(tp_test_brute_state(s, &x, cand, &ncand), TP_OK);
	size_t k = 2 + (size_t)(tp_test_unit(&x) * 5); /* 2..6 hosts */
	if (k > ncand) {
		tp_state_destroy(s);
		return false;
	}
	tp_request_t r;
	memset(&r, 0, sizeof(r));
	r.nodes = (int)k;
	r.exclusive = true;
	tp_placement_t pl;
	memset(&pl, 0, sizeof(pl));
	assert_int_equal(tp_place_run(tp_policy_find("topoplace"), s, &r, NULL,
				      ctx, seed, &pl),
			 TP_OK);
	brute_t b = {.ctx = ctx,
		     .s = s,
		     .cand = cand,
		     .ncand = ncand,
		     .k = k,
		     .best = -1};
	enumerate(&b, 0, 0);
	assert_true(b.best > 0);
	double ratio = pl.predicted_s / b.best;
	/* the brute force includes the pick: it can never beat it */
	assert_true(ratio >= 1 - 1e-9);
	t->within += ratio <= 1.05;
	if (ratio > 1.05 && getenv("TP_BRUTE_VERBOSE")) {
		printf("# case %zu seed %llu k=%zu ratio %.3f pick", t->cases,
		       (unsigned long long)seed, k, ratio);
		for (size_t i = 0; i < pl.nhosts; i++)
			printf(" %s", tp_fabric_host(f, pl.hosts[i])->name);
		printf(" | best");
		for (size_t i = 0; i < k; i++)
			printf(" %s", tp_fabric_host(f, b.best_set[i])->name);
		printf(" | %s\n", pl.explain);
	}
	t->sum += ratio;
	if (ratio > t->worst)
		t->worst = ratio;
	t->cases++;
	tp_placement_free(&pl);
	tp_state_destroy(s);
	return true;
}

/* The family's figures, and at least `within` of its cases within 5%
 * of the cheapest, none worse than `worst`. */
static void report(const char *family, const tally_t *t, double within,
		   double worst)
{
	printf("# brute force, %s: %zu cases, %zu within 5%% of the cheapest "
	       "(%.1f%%), mean ratio %.3f, worst %.3f\n",
	       family, t->cases, t->within,
	       100.0 * (double)t->within / (double)t->cases,
	       t->sum / (double)t->cases, t->worst);
	assert_true((double)t->within >= within * (double)t->cases);
	assert_true(t->worst <= worst);
}

/* One fabric (3 leaves of 4 hosts, 2 spines, one NIC a host): only the
 * state's up-links are loaded or degraded. */
static void test_brute_force(void **st)
{
	tp_fabric_t *f = NULL;
	tp_cost_ctx_t *ctx = NULL;
	tp_cost_params_t cp;
	tally_t t = {.worst = 1};

	(void)st;
	f = tp_test_fat_tree(3, 2, 4, 1, 8, false); /* 4 down, 2 up: 2:1 */
	tp_cost_params_defaults(&cp);
	assert_int_equal(tp_cost_ctx_create(f, &cp, &ctx), TP_OK);
	for (uint64_t seed = 1; t.cases < NCASES; seed++)
		one_case(f, ctx, seed, &t);
	report("up-links", &t, 0.95, 1.5); /* issue 12's goal */
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

/* A fabric a case (3 leaves of 4 hosts of 4 GPUs and 4 NICs, 2 spines,
 * 2:1), 30% of its cables down or at half width, then the state's
 * up-links loaded or degraded as above. */
static void test_brute_degraded(void **st)
{
	tally_t t = {.worst = 1};

	(void)st;
	for (uint64_t seed = 1; t.cases < NCASES; seed++) {
		tp_fabric_t *f =
		    tp_test_fat_tree_gen(3, 2, 4, 0, 4, false, 4, 0.3, seed);
		tp_cost_ctx_t *ctx = NULL;
		tp_cost_params_t cp;
		assert_non_null(f);
		tp_cost_params_defaults(&cp);
		assert_int_equal(tp_cost_ctx_create(f, &cp, &ctx), TP_OK);
		one_case(f, ctx, seed, &t);
		tp_cost_ctx_destroy(ctx);
		tp_fabric_destroy(f);
	}
	/* issue 12's goal, met at the line: 114 of 120 within 5%, worst
	 * 1.44x (2026-12-07; it was 102, worst 2.20x, then 113 before the
	 * local search's steps went to the cheapest candidate). Over other
	 * seeds (a review's harness, seeds 201-600): 95.7%, worst 1.53x. */
	report("30% of cables degraded", &t, 0.95, 1.5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_brute_force),
	    cmocka_unit_test(test_brute_degraded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
