/*
 * One placement decision as slurmctld makes it, with warm and with cold
 * caches: topoplace (the whole tp_place_choose_ws() call with one
 * workspace kept between decisions, as the 24.11 plugin makes it: its
 * default PriceBudget 8, the cost model) against the
 * slurm-tree model, on the fabric of the decision bench
 * (bench_slurm24_decision.sh): 8 hosts of 4 GPUs and one NIC on two
 * interleaved leaves, 2:1 up-links, the first up-link at half health
 * (its LinkState setting).
 *
 * Inside slurmctld the engine's code and data are cold at each decision
 * (the daemon does much else between two): the same decision there takes
 * about ten times what it takes in a loop. "cold" here writes a buffer of
 * COLD_BYTES before each timed call, which evicts the data caches and the
 * unified ones that hold code; "warm" repeats the call at once.
 *
 * Cases: exclusive requests of 2-7 whole hosts on seeded states (every
 * third one idle, the others with each host busy with probability 0.25;
 * states with too few free hosts skipped): the decision bench's
 * topoplace decisions price 5-7-host jobs over both leaves, most often
 * on an idle cluster. Each case is timed REPS times per
 * mode, interleaving the policies. Printed per policy and mode: the mean
 * decision on the wall and thread CPU clocks with its standard error
 * over the cases, the topoplace / slurm-tree ratio of the means; per job
 * size the cold CPU means. Then one JSON line.
 * Usage: bench_place_cold [CASES] (default 120)
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_placement.h"
#include "tp_topology.h"

#define COLD_BYTES	    (64u << 20)
#define REPS		    3
#define PLUGIN_PRICE_BUDGET 8 /* plugin/conf.c's default */
#define MAXN		    8

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile unsigned char *cold_buf;

/* Cold caches as a decision inside slurmctld finds them: the engine's
 * code and data evicted, but libc's allocator and printf warm, since
 * slurmctld itself uses them all the time (its logging, xmalloc). A bench
 * that evicted those too rewarded replacing snprintf in the explanations
 * by code of our own (2026-12-04): cheaper here, dearer inside
 * slurmctld, where our code is the cold one. */
static void evict(void)
{
	char buf[64];
	void *p;

	for (size_t i = 0; i < COLD_BYTES; i += 64)
		cold_buf[i] = (unsigned char)(cold_buf[i] + 1);
	snprintf(buf, sizeof(buf), "%s %zu %d %.3g", "x", (size_t)1, 2, 0.5);
	for (size_t sz = 16; sz <= 4096; sz *= 2) {
		if ((p = malloc(sz)))
			((volatile char *)p)[0] = buf[0];
		free(p);
	}
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Running sums of one series. */
typedef struct acc {
	double s, ss;
	size_t n;
} acc_t;

static void add(acc_t *a, double v)
{
	a->s += v;
	a->ss += v * v;
	a->n++;
}

static double mean(const acc_t *a)
{
	return a->n ? a->s / (double)a->n : 0;
}

static double se(const acc_t *a)
{
	if (a->n < 2)
		return 0;
	double m = mean(a),
	       var = (a->ss - (double)a->n * m * m) / (double)(a->n - 1);
	return var > 0 ? sqrt(var / (double)a->n) : 0;
}

enum { WARM, COLD, NMODE };
enum { WALL, CPU, NCLK };
static const char *const pol_names[] = {"topoplace", "slurm-tree"};

static tp_place_ws_t *ws; /* the plugin's sel_ws */

/* Mean of REPS timed calls of one policy on one case into w / c (s). */
static int timed(const tp_policy_t *pol, const tp_state_t *s,
		 const tp_request_t *r, const tp_policy_params_t *pp,
		 const tp_cost_ctx_t *ctx, int mode, double *w, double *c)
{
	tp_placement_t pl;

	*w = *c = 0;
	if (mode == WARM) { /* one untimed call to warm up */
		if (tp_place_choose_ws(pol, s, r, pp, ctx, 1, ws, &pl))
			return -1;
		tp_placement_free(&pl);
	}
	for (int k = 0; k < REPS; k++) {
		if (mode == COLD)
			evict();
		double w0 = clock_s(CLOCK_MONOTONIC);
		double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		tp_err_t err =
		    tp_place_choose_ws(pol, s, r, pp, ctx, 1, ws, &pl);
		double c1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		double w1 = clock_s(CLOCK_MONOTONIC);
		if (err)
			return -1;
		tp_placement_free(&pl);
		*w += (w1 - w0) / REPS;
		*c += (c1 - c0) / REPS;
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t cases = argc > 1 ? (size_t)atol(argv[1]) : 120, done = 0;
	tp_gen_fat_tree_t gp;
	tp_fabric_t *f = NULL;
	tp_cost_params_t cp;
	tp_cost_ctx_t *ctx = NULL;
	tp_policy_params_t pp;
	acc_t t[2][NMODE][NCLK], by_n[2][MAXN + 1];
	uint64_t x = 12345;

	if (!cases || argc > 2)
		return 2;
	memset(t, 0, sizeof(t));
	memset(by_n, 0, sizeof(by_n));
	tp_gen_fat_tree_defaults(&gp);
	gp.leaves = 2;
	gp.spines = 1;
	gp.hosts_per_leaf = 4;
	gp.uplinks_per_spine = 2;
	gp.gpus_per_host = 4;
	gp.nics_per_host = 1;
	gp.interleave = true;
	gp.host_prefix = "node";
	tp_cost_params_defaults(&cp);
	tp_policy_params_defaults(&pp);
	pp.price_budget = PLUGIN_PRICE_BUDGET;
	if (tp_gen_fat_tree(&gp, &f) || tp_cost_ctx_create(f, &cp, &ctx) ||
	    !(ws = tp_place_ws_create()) ||
	    !(cold_buf = calloc(COLD_BYTES, 1))) {
		fprintf(stderr, "bench_place_cold: setup failed\n");
		return 1;
	}
	size_t nh = tp_fabric_nhosts(f);
	/* the first up-link (switch to switch) at half health */
	uint32_t up = TP_ID_NONE;
	for (uint32_t l = 0; l < tp_fabric_nlinks(f) && up == TP_ID_NONE; l++) {
		const tp_link_t *lk = tp_fabric_link(f, l);
		if (lk->kind[0] == TP_NODE_SWITCH &&
		    lk->kind[1] == TP_NODE_SWITCH)
			up = l;
	}
	for (uint64_t seed = 1; done < cases && seed < 100 * cases; seed++) {
		tp_state_t *s = tp_state_create(f);
		size_t nfree = 0;
		if (!s || up == TP_ID_NONE || tp_state_set_link(s, up, 0.5, 0))
			return 1;
		bool idle = seed % 3 == 0;
		for (uint32_t h = 0; h < nh; h++) {
			int g = 4;
			if (!idle && rnd(&x) % 4 == 0)
				tp_state_alloc(s, h + 1, &h, &g, 1);
			else
				nfree++;
		}
		tp_request_t r = {0};
		r.nodes = 2 + (int)(rnd(&x) % 6);
		r.gpus_per_node = 4;
		r.exclusive = true;
		if ((size_t)r.nodes > nfree) {
			tp_state_destroy(s);
			continue;
		}
		double v[2][NMODE][NCLK];
		bool ok = true;
		for (int mode = 0; mode < NMODE && ok; mode++)
			for (int p = 0; p < 2 && ok; p++)
				ok =
				    !timed(tp_policy_find(pol_names[p]), s, &r,
					   &pp, p ? NULL : ctx, mode,
					   &v[p][mode][WALL], &v[p][mode][CPU]);
		tp_state_destroy(s);
		if (!ok)
			continue;
		for (int p = 0; p < 2; p++) {
			for (int mode = 0; mode < NMODE; mode++)
				for (int c = 0; c < NCLK; c++)
					add(&t[p][mode][c], v[p][mode][c]);
			add(&by_n[p][r.nodes], v[p][COLD][CPU]);
		}
		done++;
	}
	printf("8 hosts (2 leaves, 2:1, one up-link at half health), %zu "
	       "cases of 2-7 exclusive hosts, %d calls each; ms, mean +- se\n",
	       done, REPS);
	for (int mode = 0; mode < NMODE; mode++) {
		for (int p = 0; p < 2; p++)
			printf(
			    "%-5s %-10s wall %.4f +- %.4f  cpu %.4f +- %.4f\n",
			    mode ? "cold" : "warm", pol_names[p],
			    mean(&t[p][mode][WALL]) * 1e3,
			    se(&t[p][mode][WALL]) * 1e3,
			    mean(&t[p][mode][CPU]) * 1e3,
			    se(&t[p][mode][CPU]) * 1e3);
		printf("%-5s topoplace / slurm-tree: wall %.2f, cpu %.2f\n",
		       mode ? "cold" : "warm",
		       mean(&t[0][mode][WALL]) / mean(&t[1][mode][WALL]),
		       mean(&t[0][mode][CPU]) / mean(&t[1][mode][CPU]));
	}
	printf("cold cpu by size (topoplace / slurm-tree, ms):");
	for (int n = 2; n <= 7; n++)
		printf(" %d: %.4f/%.4f", n, mean(&by_n[0][n]) * 1e3,
		       mean(&by_n[1][n]) * 1e3);
	printf(
	    "\n{\"format\": \"topoplace-bench-place-cold/1\", \"cases\": %zu",
	    done);
	for (int p = 0; p < 2; p++)
		for (int mode = 0; mode < NMODE; mode++)
			printf(", \"%s_%s_cpu_ms\": %.5f, \"%s_%s_cpu_se_ms\": "
			       "%.5f",
			       p ? "slurm_tree" : "topoplace",
			       mode ? "cold" : "warm",
			       mean(&t[p][mode][CPU]) * 1e3,
			       p ? "slurm_tree" : "topoplace",
			       mode ? "cold" : "warm",
			       se(&t[p][mode][CPU]) * 1e3);
	printf(", \"cold_cpu_ratio\": %.3f, \"warm_cpu_ratio\": %.3f}\n",
	       mean(&t[0][COLD][CPU]) / mean(&t[1][COLD][CPU]),
	       mean(&t[0][WARM][CPU]) / mean(&t[1][WARM][CPU]));
	free((void *)cold_buf);
	tp_place_ws_destroy(ws);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
	return 0;
}
