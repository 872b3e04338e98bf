/*
 * How often slurmctld's default PriceBudget (8) picks what the
 * simulator's (96) picks, the figure topoplace.conf(5) quotes beside
 * PriceBudget. On 2:1 fat trees of 8 hosts (2 leaves of 4) and 32 hosts
 * (4 leaves of 8), one NIC per host, seeded states as test_brute builds
 * them (each up-link loaded up to 90% with probability 0.3, else at half
 * health with probability 0.15; each host busy with probability 0.25)
 * and a request of 2 up to half the hosts (exclusive, whole hosts), the
 * topoplace policy is run at both budgets. Printed per fabric: the cases,
 * those with the same host set, and the budget-8 pick's predicted
 * all-reduce time over the budget-96 one's (mean, worst).
 * Then the same states with every link healthy and idle (only the busy
 * hosts kept): the budget-8 pick against the structural pick alone
 * (budget 0), which the 24.11 plugin took on such links until
 * 2026-12-03. Printed: the cases where pricing picks other hosts, and the
 * priced pick's predicted all-reduce time over the structural one's
 * (mean, best).
 * Usage: bench_place_budget [CASES] (default 500 per fabric).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_placement.h"
#include "tp_test_state.h"
#include "tp_topology.h"

static int u32cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The pick at this budget into pl; its hosts sorted. */
static tp_err_t pick(const tp_state_t *s, const tp_request_t *r,
		     const tp_cost_ctx_t *ctx, double budget,
		     tp_placement_t *pl)
{
	tp_policy_params_t pp;
	tp_err_t err;

	tp_policy_params_defaults(&pp);
	pp.price_budget = budget;
	memset(pl, 0, sizeof(*pl));
	err = tp_place_run(tp_policy_find("topoplace"), s, r, &pp, ctx, 1, pl);
	if (!err)
		qsort(pl->hosts, pl->nhosts, sizeof(uint32_t), u32cmp);
	return err;
}

/* One state and request of seed into s / r; false when too few hosts
 * are free. */
static bool make_case(const tp_fabric_t *f, uint64_t seed, tp_state_t *s,
		      tp_request_t *r)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL;
	size_t nh = tp_fabric_nhosts(f), nfree = 0;
	uint32_t *free_hosts = malloc((nh + 1) * sizeof(uint32_t));
	tp_err_t err = free_hosts
			   ? tp_test_brute_state(s, &x, free_hosts, &nfree)
			   : TP_ERR_NOMEM;

	free(free_hosts);
	if (err)
		return false;
	size_t k = 2 + (size_t)(tp_test_unit(&x) * (double)(nh / 2 - 1));
	if (k > nfree)
		return false;
	memset(r, 0, sizeof(*r));
	r->nodes = (int)k;
	r->exclusive = true;
	return true;
}

/* Every link of s healthy and idle. */
static void plain_links(tp_state_t *s)
{
	size_t nl = tp_fabric_nlinks(tp_state_fabric(s));

	for (size_t l = 0; l < nl; l++)
		tp_state_set_link(s, (uint32_t)l, 1, 0);
}

/* cases of label's fabric f at budgets a and b: the pick at a over the
 * pick at b (predicted all-reduce), every link healthy and idle when
 * plain. */
static void compare(const char *label, const tp_fabric_t *f,
		    const tp_cost_ctx_t *ctx, size_t cases, double a, double b,
		    bool plain)
{
	size_t n = 0, same = 0;
	double sum = 0, worst = 1, best = 1;

	for (uint64_t seed = 1; n < cases && seed < 100 * cases; seed++) {
		tp_state_t *s = tp_state_create(f);
		tp_request_t r;
		tp_placement_t pa, pb;
		if (!s || !make_case(f, seed, s, &r)) {
			tp_state_destroy(s);
			continue;
		}
		if (plain)
			plain_links(s);
		if (pick(s, &r, ctx, a, &pa)) {
			tp_state_destroy(s);
			continue;
		}
		if (!pick(s, &r, ctx, b, &pb)) {
			double q = pa.predicted_s / pb.predicted_s;
			n++;
			same += pa.nhosts == pb.nhosts &&
				!memcmp(pa.hosts, pb.hosts,
					pa.nhosts * sizeof(uint32_t));
			sum += q;
			worst = q > worst ? q : worst;
			best = q < best ? q : best;
			tp_placement_free(&pb);
		}
		tp_placement_free(&pa);
		tp_state_destroy(s);
	}
	if (!plain)
		printf("%-9s %zu cases: PriceBudget %.0f picks the same hosts "
		       "as %.0f in %zu (%.1f%%); its predicted all-reduce / "
		       "%.0f's: mean %.3f, worst %.3f\n",
		       label, n, a, b, same,
		       n ? 100.0 * (double)same / (double)n : 0, b,
		       n ? sum / (double)n : 0, worst);
	else
		printf("%-9s %zu cases, healthy idle links: PriceBudget %.0f "
		       "picks other hosts than the structure alone in %zu "
		       "(%.1f%%); its predicted all-reduce / the structural "
		       "pick's: mean %.4f, best %.3f\n",
		       label, n, a, n - same,
		       n ? 100.0 * (double)(n - same) / (double)n : 0,
		       n ? sum / (double)n : 0, best);
}

static int run(const char *label, int leaves, int hpl, int uplinks,
	       size_t cases)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;
	tp_cost_ctx_t *ctx = NULL;
	tp_cost_params_t cp;

	tp_gen_fat_tree_defaults(&p);
	p.leaves = leaves;
	p.spines = 2;
	p.hosts_per_leaf = hpl;
	p.uplinks_per_spine = uplinks;
	p.gpus_per_host = 8;
	p.nics_per_host = 1;
	tp_cost_params_defaults(&cp);
	if (tp_gen_fat_tree(&p, &f) || tp_cost_ctx_create(f, &cp, &ctx)) {
		fprintf(stderr,
			"bench_place_budget: %s: fabric or cost model\n",
			label);
		tp_fabric_destroy(f);
		return 1;
	}
	compare(label, f, ctx, cases, 8, 96, false);
	compare(label, f, ctx, cases, 8, 0, true);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
	return 0;
}

int main(int argc, char **argv)
{
	size_t cases =
	    argc > 1 && atol(argv[1]) > 0 ? (size_t)atol(argv[1]) : 500;

	return run("8-hosts", 2, 4, 1, cases) | run("32-hosts", 4, 8, 2, cases);
}
