/*
 * Placement decision time: topoplace vs the slurm-tree model, same
 * fabric, same fragmented state, same requests, same run.
 *
 * Fabrics: fat trees of 2,048 hosts (16,384 GPUs) and 16,384 hosts, with
 * 50% of GPUs busy in a fragmented state (random jobs of random sizes on
 * random hosts). Requests: a mix of multi-node (2-64 hosts x 8 GPUs) and
 * single-node (1-8 GPUs) jobs. Decision time is the policy's choose()
 * (tp_placement_t.decision_s), with the cost model at hand as the
 * plugins give it (topoplace prices its variants for jobs that span
 * groups inside choose()); the prediction reported with the placement
 * afterwards is not included.
 * Usage: bench_place [decisions per policy (default 2000)]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_placement.h"

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Random jobs on random hosts until half the GPUs are busy. */
static void fragment(const tp_fabric_t *f, tp_state_t *s, uint64_t seed)
{
	size_t total = tp_fabric_total_gpus(f), nh = tp_fabric_nhosts(f);
	uint64_t x = seed | 1, job = 1;

	while (tp_state_busy_gpus(s) < total / 2) {
		uint32_t h = (uint32_t)(rnd(&x) % nh);
		int free = tp_state_free_gpus(s, h);
		if (free <= 0)
			continue;
		int g = 1 + (int)(rnd(&x) % (uint64_t)free);
		tp_state_alloc(s, job++, &h, &g, 1);
	}
}

static int bench(int hosts_per_leaf, int leaves, int spines, size_t n,
		 const char *label, FILE *js, bool last)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f;
	tp_policy_params_t pp;
	const char *names[] = {"topoplace", "slurm-tree"};
	double p99[2], p50[2];

	tp_gen_fat_tree_defaults(&p);
	p.leaves = leaves;
	p.spines = spines;
	p.hosts_per_leaf = hosts_per_leaf;
	p.uplinks_per_spine = 1;
	if (tp_gen_fat_tree(&p, &f)) {
		fprintf(stderr, "bench_place: generator failed\n");
		return 1;
	}
	tp_state_t *s = tp_state_create(f);
	fragment(f, s, 42);
	tp_policy_params_defaults(&pp);
	tp_cost_params_t cp;
	tp_cost_ctx_t *ctx = NULL;
	tp_cost_params_defaults(&cp);
	if (tp_cost_ctx_create(f, &cp, &ctx)) {
		fprintf(stderr, "bench_place: cost model failed\n");
		return 1;
	}
	double *t = malloc(n * sizeof(double));
	for (int k = 0; k < 2; k++) {
		const tp_policy_t *pol = tp_policy_find(names[k]);
		uint64_t x = 7;
		size_t m = 0;
		for (size_t i = 0; i < n; i++) {
			tp_request_t r = {0};
			if (rnd(&x) % 2) {
				r.nodes = 2 << (rnd(&x) % 6);
				r.gpus_per_node = 8;
			} else {
				r.gpus = 1 + (int)(rnd(&x) % 8);
			}
			tp_placement_t pl;
			if (tp_place_run(pol, s, &r, &pp, ctx, i, &pl) ==
			    TP_OK) {
				t[m++] = pl.decision_s;
				tp_placement_free(&pl);
			}
		}
		qsort(t, m, sizeof(double), dcmp);
		p50[k] = m ? t[m / 2] : 0;
		p99[k] = m ? t[(size_t)(0.99 * (double)(m - 1))] : 0;
		printf(
		    "%-22s %-11s decisions %5zu  p50 %8.3f ms  p99 %8.3f ms\n",
		    label, names[k], m, p50[k] * 1e3, p99[k] * 1e3);
	}
	printf("%-22s topoplace/slurm-tree p99 ratio %.2f\n", label,
	       p99[1] > 0 ? p99[0] / p99[1] : 0);
	fprintf(js,
		"  \"%s\": {\"hosts\": %zu, \"topoplace_p50_ms\": %.4f, "
		"\"topoplace_p99_ms\": %.4f, "
		"\"slurm_tree_p50_ms\": %.4f, \"slurm_tree_p99_ms\": %.4f, "
		"\"p99_ratio\": %.3f}%s\n",
		label, tp_fabric_nhosts(f), p50[0] * 1e3, p99[0] * 1e3,
		p50[1] * 1e3, p99[1] * 1e3, p99[1] > 0 ? p99[0] / p99[1] : 0,
		last ? "" : ",");
	free(t);
	tp_cost_ctx_destroy(ctx);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	return 0;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)atol(argv[1]) : 2000;
	char *buf;
	size_t len;
	FILE *js = open_memstream(&buf, &len);

	if (!n || !js)
		return 2;
	fprintf(js, "{\n");
	if (bench(32, 64, 16, n, "fat-tree-2048-hosts", js, false) ||
	    bench(32, 512, 32, n, "fat-tree-16384-hosts", js, true))
		return 1;
	fprintf(js, "}\n");
	fclose(js);
	printf("goal: p99 < 1 ms at 2,048 hosts, < 10 ms at 16,384 hosts (50%% "
	       "of GPUs busy)\n%s",
	       buf);
	free(buf);
	return 0;
}
