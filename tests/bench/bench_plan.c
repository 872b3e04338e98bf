/*
 * Job-start plan building: a 1,024-host job, goal < 5 ms.
 *
 * Fabrics: a DGX SuperPOD-shaped rail fabric (32 SUs x 32 hosts, 8 rails,
 * 8,192 GPUs; the job takes every host) and a 2,048-host fat tree (64
 * leaves of 32, interleaved names; the job takes every other name, which
 * is every host of 32 leaves). Host lists are shuffled. Timed: tp_plan_build
 * without predictions (what job start needs) and with them (three cost
 * model calls), tp_plan_to_json and tp_plan_parse_json; best and median
 * of N runs (default 20). The cost context is built once per fabric and
 * reported separately.
 * Usage: bench_plan [runs]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_runtime.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

typedef struct stat {
	double best, median;
} stat_t;

static stat_t summarize(double *t, int n)
{
	stat_t s;

	qsort(t, (size_t)n, sizeof(double), dcmp);
	s.best = t[0];
	s.median = t[n / 2];
	return s;
}

static int bench(const char *label, tp_fabric_t *f, size_t stride, int runs,
		 FILE *js, bool last)
{
	size_t nh = tp_fabric_nhosts(f), n = 0;
	const char **names = malloc(nh * sizeof(char *));
	double *t = malloc((size_t)runs * sizeof(double));
	tp_cost_ctx_t *ctx = NULL;
	tp_plan_opts_t o;
	stat_t nopred, pred, out, in;
	tp_plan_t *p = NULL;
	char *json = NULL, *msg = NULL;
	uint64_t x = 12345;
	size_t touched = 0;
	double t0, ctx_s;

	for (size_t i = 0; i < nh; i += stride)
		names[n++] = tp_fabric_host(f, i)->name;
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(rnd(&x) % i);
		const char *s = names[i - 1];
		names[i - 1] = names[j];
		names[j] = s;
	}
	t0 = now();
	if (tp_cost_ctx_create(f, NULL, &ctx)) {
		fprintf(stderr, "bench_plan: cost context failed\n");
		return 1;
	}
	ctx_s = now() - t0;

	tp_plan_opts_defaults(&o);
	o.predict = false;
	for (int k = 0; k < runs; k++) {
		t0 = now();
		if (tp_plan_build(f, ctx, names, n, &o, &p, &msg)) {
			fprintf(stderr, "bench_plan: %s\n", msg);
			return 1;
		}
		t[k] = now() - t0;
		if (k + 1 < runs)
			tp_plan_destroy(p);
	}
	nopred = summarize(t, runs);
	for (int k = 0; k < runs; k++) {
		t0 = now();
		if (tp_plan_to_json(p, &json))
			return 1;
		t[k] = now() - t0;
		if (k + 1 < runs)
			tp_free(json);
	}
	out = summarize(t, runs);
	touched = tp_plan_ngroups(p);
	tp_plan_destroy(p);
	for (int k = 0; k < runs; k++) {
		t0 = now();
		if (tp_plan_parse_json("bench", json, strlen(json), &p, &msg)) {
			fprintf(stderr, "bench_plan: reload: %s\n", msg);
			return 1;
		}
		t[k] = now() - t0;
		tp_plan_destroy(p);
	}
	in = summarize(t, runs);
	o.predict = true;
	for (int k = 0; k < runs; k++) {
		t0 = now();
		if (tp_plan_build(f, ctx, names, n, &o, &p, &msg)) {
			fprintf(stderr, "bench_plan: %s\n", msg);
			return 1;
		}
		t[k] = now() - t0;
		tp_plan_destroy(p);
	}
	pred = summarize(t, runs);

	printf(
	    "%-26s job %zu hosts in %zu of %zu level-1 groups, JSON %zu KiB\n",
	    label, n, touched, tp_fabric_groups_at(f, 1), strlen(json) / 1024);
	printf("  %-30s best %8.3f ms  median %8.3f ms  %s\n",
	       "build, no predictions", nopred.best * 1e3, nopred.median * 1e3,
	       nopred.median < 5e-3 ? "(goal < 5 ms: met)"
				    : "(goal < 5 ms: MISSED)");
	printf("  %-30s best %8.3f ms  median %8.3f ms\n",
	       "build, with predictions", pred.best * 1e3, pred.median * 1e3);
	printf("  %-30s best %8.3f ms  median %8.3f ms\n", "tp_plan_to_json",
	       out.best * 1e3, out.median * 1e3);
	printf("  %-30s best %8.3f ms  median %8.3f ms\n", "tp_plan_parse_json",
	       in.best * 1e3, in.median * 1e3);
	printf("  %-30s %8.3f ms (once per fabric)\n", "tp_cost_ctx_create",
	       ctx_s * 1e3);
	fprintf(js,
		"  \"%s\": {\"hosts\": %zu, \"runs\": %d, "
		"\"build_best_ms\": %.4f, \"build_median_ms\": %.4f, "
		"\"build_predict_best_ms\": %.4f, "
		"\"build_predict_median_ms\": %.4f, "
		"\"to_json_median_ms\": %.4f, \"parse_json_median_ms\": %.4f, "
		"\"cost_ctx_ms\": %.4f, \"json_bytes\": %zu, "
		"\"goal_met\": %s}%s\n",
		label, n, runs, nopred.best * 1e3, nopred.median * 1e3,
		pred.best * 1e3, pred.median * 1e3, out.median * 1e3,
		in.median * 1e3, ctx_s * 1e3, strlen(json),
		nopred.median < 5e-3 ? "true" : "false", last ? "" : ",");
	tp_free(json);
	tp_cost_ctx_destroy(ctx);
	free(names);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 20;
	tp_gen_rail_t rp;
	tp_gen_fat_tree_t fp;
	tp_fabric_t *rail = NULL, *ft = NULL;
	char *buf;
	size_t len;
	FILE *js = open_memstream(&buf, &len);
	int rc;

	if (runs < 1 || !js)
		return 2;
	tp_gen_rail_defaults(&rp);
	rp.sus = 32;
	rp.hosts_per_su = 32;
	tp_gen_fat_tree_defaults(&fp);
	fp.leaves = 64;
	fp.spines = 16;
	fp.hosts_per_leaf = 32;
	fp.uplinks_per_spine = 1;
	fp.interleave = true;
	if (tp_gen_rail(&rp, &rail) || tp_gen_fat_tree(&fp, &ft)) {
		fprintf(stderr, "bench_plan: generator failed\n");
		return 1;
	}
	fprintf(js, "{\n");
	rc = bench("rail-32x32-8rails", rail, 1, runs, js, false) ||
	     bench("fat-tree-2048-half", ft, 2, runs, js, true);
	fprintf(js, "}\n");
	fclose(js);
	if (!rc)
		fputs(buf, stdout);
	free(buf);
	tp_fabric_destroy(rail);
	tp_fabric_destroy(ft);
	return rc;
}
