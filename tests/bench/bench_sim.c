/*
 * Simulator quality and speed.
 *
 * Quality: the built-in default (rail-optimized 4 SU x 32 x 8, LLM trace)
 * and a classic 2:1-oversubscribed fat tree, every policy in the same run;
 * prints topoplace's figures and its ratios against slurm-tree.
 * Goals: comm slowdown mean <= 1.05, >= 95% of multi-node jobs at the
 * minimum group span, mean JCT below slurm-tree's, GPU utilisation no
 * more than 1 point below the best baseline.
 * Speed: a 10,000-job simulation on a 16,384-GPU fabric (goal < 60 s).
 * Usage: bench_sim [jobs for the quality runs (default 1000)] [--no-speed]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_placement.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *const policies[] = {"topoplace", "slurm-tree", "slurm-linear", "first-fit", "random"};
#define NPOL 5

static int quality(const char *label, tp_fabric_t *f, size_t jobs, FILE *js)
{
	tp_trace_t tr;
	tp_cost_params_t cp;
	tp_cost_ctx_t *ctx;
	tp_policy_params_t pp;
	tp_sim_result_t r[NPOL];
	int gph = (int)tp_fabric_host(f, 0)->ngpus;

	tp_cost_params_defaults(&cp);
	tp_policy_params_defaults(&pp);
	if (tp_trace_synthetic("llm", jobs, 1, (int)tp_fabric_total_gpus(f), gph, 0.9, &tr) ||
	    tp_cost_ctx_create(f, &cp, &ctx))
		return 1;
	for (int i = 0; i < NPOL; i++) {
		double t0 = now();
		if (tp_sim_run(f, &tr, tp_policy_find(policies[i]), &pp, ctx, 1, &r[i])) {
			fprintf(stderr, "bench_sim: %s failed\n", policies[i]);
			return 1;
		}
		printf("%-12s %-12s util %5.1f%% (useful %5.1f%%)  JCT %9.0f s  slowdown %.3f (p95 %.3f)  min-span %5.1f%%  %.1f s\n",
		       label, policies[i], 100 * r[i].gpu_util, 100 * r[i].useful_util, r[i].mean_jct_s, r[i].comm_slowdown_mean,
		       r[i].comm_slowdown_p95, 100 * r[i].min_span_fraction, now() - t0);
	}
	double best_util = 0, best_useful = 0;
	for (int i = 1; i < NPOL; i++) {
		if (r[i].gpu_util > best_util)
			best_util = r[i].gpu_util;
		if (r[i].useful_util > best_useful)
			best_useful = r[i].useful_util;
	}
	const tp_sim_result_t *tp = &r[0], *st = &r[1];
	printf("%-12s topoplace vs slurm-tree: JCT ratio %.3f, slowdown ratio %.3f, util %+.2f points vs best baseline\n",
	       label, tp->mean_jct_s / st->mean_jct_s, tp->comm_slowdown_mean / st->comm_slowdown_mean,
	       100 * (tp->gpu_util - best_util));
	printf("%-12s goals: slowdown<=1.05 %s, min-span>=95%% %s, JCT<slurm-tree %s, util>=best-1pt %s (useful util %s)\n", label,
	       tp->comm_slowdown_mean <= 1.05 ? "met" : "MISSED", tp->min_span_fraction >= 0.95 ? "met" : "MISSED",
	       tp->mean_jct_s < st->mean_jct_s ? "met" : "MISSED",
	       tp->gpu_util >= best_util - 0.01 ? "met" : "MISSED",
	       tp->useful_util >= best_useful - 0.01 ? "met" : "MISSED");
	fprintf(js, "  \"%s\": {\"jobs\": %zu, \"comm_slowdown_mean\": %.4f, \"min_span_fraction\": %.4f, "
		    "\"mean_jct_ratio_vs_slurm_tree\": %.4f, \"slowdown_ratio_vs_slurm_tree\": %.4f, "
		    "\"gpu_util\": %.4f, \"best_baseline_util\": %.4f, \"useful_util\": %.4f, \"best_baseline_useful_util\": %.4f, \"slurm_tree_slowdown\": %.4f},\n",
		label, jobs, tp->comm_slowdown_mean, tp->min_span_fraction, tp->mean_jct_s / st->mean_jct_s,
		tp->comm_slowdown_mean / st->comm_slowdown_mean, tp->gpu_util, best_util, tp->useful_util, best_useful, st->comm_slowdown_mean);
	for (int i = 0; i < NPOL; i++)
		tp_sim_result_free(&r[i]);
	tp_trace_free(&tr);
	tp_cost_ctx_destroy(ctx);
	return 0;
}

int main(int argc, char **argv)
{
	size_t jobs = argc > 1 && argv[1][0] != '-' ? (size_t)atol(argv[1]) : 1000;
	bool speed = !(argc > 2 && !strcmp(argv[2], "--no-speed"));
	tp_fabric_t *f;
	char *buf;
	size_t len;
	FILE *js = open_memstream(&buf, &len);

	fprintf(js, "{\n");
	tp_gen_rail_t rl;
	tp_gen_rail_defaults(&rl);
	if (tp_gen_rail(&rl, &f) || quality("default-rail", f, jobs, js))
		return 1;
	tp_fabric_destroy(f);
	tp_gen_fat_tree_t ft;
	tp_gen_fat_tree_defaults(&ft); /* 8 leaves x 16 hosts, 2:1 */
	ft.interleave = true;
	if (tp_gen_fat_tree(&ft, &f) || quality("fat-tree-2to1", f, jobs, js))
		return 1;
	tp_fabric_destroy(f);

	double wall = 0;
	if (speed) {
		tp_gen_fat_tree_defaults(&ft);
		ft.leaves = 64;
		ft.hosts_per_leaf = 32;
		ft.spines = 16;
		ft.uplinks_per_spine = 1;
		tp_trace_t tr;
		tp_cost_params_t cp;
		tp_cost_ctx_t *ctx;
		tp_policy_params_t pp;
		tp_sim_result_t r;
		tp_cost_params_defaults(&cp);
		tp_policy_params_defaults(&pp);
		if (tp_gen_fat_tree(&ft, &f) ||
		    tp_trace_synthetic("llm", 10000, 3, (int)tp_fabric_total_gpus(f), 8, 0.9, &tr) ||
		    tp_cost_ctx_create(f, &cp, &ctx))
			return 1;
		double t0 = now();
		if (tp_sim_run(f, &tr, tp_policy_find("topoplace"), &pp, ctx, 3, &r))
			return 1;
		wall = now() - t0;
		printf("speed: 10,000 jobs on %zu GPUs (topoplace policy): %.1f s (goal < 60 s), decision p99 %.3f ms\n",
		       tp_fabric_total_gpus(f), wall, r.decision_p99_s * 1e3);
		tp_sim_result_free(&r);
		tp_trace_free(&tr);
		tp_cost_ctx_destroy(ctx);
		tp_fabric_destroy(f);
	}
	fprintf(js, "  \"sim_10k_jobs_16k_gpus_s\": %.2f\n}\n", wall);
	fclose(js);
	printf("%s", buf);
	free(buf);
	return 0;
}
