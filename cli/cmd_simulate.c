/* topoplace simulate: policies side by side on one fabric and trace. */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "tp_placement.h"

#define DEFAULT_POLICIES "topoplace,slurm-tree,slurm-linear,first-fit,random"

static const char usage[] =
	"Usage: topoplace simulate [--fabric F.json] [--trace T.csv |\n"
	"                          --synthetic NAME --jobs N --seed S --load L]\n"
	"                          [--policies a,b,...] [--json] [--svg FILE]\n"
	"\n"
	"Replay a job trace under each policy (FCFS + EASY backfill; a job's run\n"
	"time stretches with its predicted all-reduce time on the hosts it got\n"
	"versus an ideal placement) and compare them in one table. util%:\n"
	"GPU time allocated; useful%: GPU time at the jobs' ideal run times\n"
	"(what a slowed job holds beyond that is spent waiting on the network).\n"
	"\n"
	"With no arguments: the built-in rail-optimized SuperPOD-style fabric\n"
	"(4 scalable units x 32 hosts x 8 rails, 1,024 GPUs) and a synthetic\n"
	"LLM-cluster trace (Kalos job-size mix), 2,000 jobs, seed 1, load 0.9.\n"
	"\n"
	"  --fabric F.json    fabric model (default: built-in)\n"
	"  --trace T.csv      CSV: submit_s, gpus | nodes[, gpus_per_node], run_s\n"
	"                     [, comm_frac][, model_bytes]\n"
	"  --synthetic NAME   philly | helios | llm (default llm)\n"
	"  --jobs N           synthetic trace length (default 2000)\n"
	"  --seed S           seed for the trace and seeded policies (default 1)\n"
	"  --load L           offered load, share of all GPUs (default 0.9)\n"
	"  --policies LIST    default " DEFAULT_POLICIES "\n"
	"  --json             metrics per policy as JSON\n"
	"  --svg FILE         utilisation over time and slowdown distributions\n";

typedef struct run {
	const tp_policy_t *policy;
	tp_sim_result_t res;
	double wall_s;
} run_t;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Mean share of free GPUs outside wholly free level-1 groups, over the
 * samples (taken at every scheduling event, thinned evenly). */
static double frag_mean(const tp_sim_result_t *r)
{
	double s = 0;

	for (size_t k = 0; k < r->nsamples; k++)
		s += r->samples[k].frag;
	return r->nsamples ? s / (double)r->nsamples : 0;
}

static cJSON *metrics_json(const tp_sim_result_t *r, double wall)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "jobs", (double)r->jobs);
	cJSON_AddNumberToObject(o, "multi_node_jobs", (double)r->multi_node_jobs);
	cJSON_AddNumberToObject(o, "unplaceable", (double)r->unplaceable);
	cJSON_AddNumberToObject(o, "gpu_util", r->gpu_util);
	cJSON_AddNumberToObject(o, "useful_util", r->useful_util);
	cJSON_AddNumberToObject(o, "makespan_s", r->makespan_s);
	cJSON_AddNumberToObject(o, "mean_wait_s", r->mean_wait_s);
	cJSON_AddNumberToObject(o, "p50_wait_s", r->p50_wait_s);
	cJSON_AddNumberToObject(o, "p95_wait_s", r->p95_wait_s);
	cJSON_AddNumberToObject(o, "mean_jct_s", r->mean_jct_s);
	cJSON_AddNumberToObject(o, "p50_jct_s", r->p50_jct_s);
	cJSON_AddNumberToObject(o, "p95_jct_s", r->p95_jct_s);
	cJSON_AddNumberToObject(o, "comm_slowdown_mean", r->comm_slowdown_mean);
	cJSON_AddNumberToObject(o, "comm_slowdown_p95", r->comm_slowdown_p95);
	cJSON_AddNumberToObject(o, "min_span_fraction", r->min_span_fraction);
	cJSON_AddNumberToObject(o, "min_span_empty_fraction", r->min_span_empty_fraction);
	cJSON_AddNumberToObject(o, "cross_spine_bytes", r->cross_spine_bytes);
	cJSON_AddNumberToObject(o, "decision_p99_s", r->decision_p99_s);
	cJSON_AddNumberToObject(o, "fragmentation_mean", frag_mean(r));
	cJSON *ts = cJSON_AddArrayToObject(o, "over_time");
	/* a coarse time series for scripts: at most 100 points */
	size_t step = r->nsamples > 100 ? r->nsamples / 100 : 1;
	for (size_t k = 0; ts && k < r->nsamples; k += step) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "t_s", r->samples[k].t);
		cJSON_AddNumberToObject(p, "util", r->samples[k].util);
		cJSON_AddNumberToObject(p, "fragmentation", r->samples[k].frag);
		cJSON_AddItemToArray(ts, p);
	}
	cJSON_AddNumberToObject(o, "sim_wall_s", wall);
	return o;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const char *const palette[] = {"#1b9e77", "#d95f02", "#7570b3",
				      "#e7298a", "#66a61e", "#e6ab02",
				      "#a6761d", "#666666"};

enum { SVG_W = 900, SVG_H = 300, SVG_L = 60, SVG_T = 30,
       SVG_PW = SVG_W - SVG_L - 160, SVG_PH = SVG_H - 70 };

/* One panel of a per-policy quantity over time, top edge at y. */
static void time_panel(tp_strbuf_t *sb, const run_t *runs, size_t n, int y,
		       double tmax, const char *title, bool frag)
{
	const int L = SVG_L, PW = SVG_PW, PH = SVG_PH, y0 = y + SVG_T;

	tp_strbuf_printf(sb, "<text x='%d' y='%d' font-size='13'>%s</text>\n"
			 "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#999'/>\n"
			 "<text x='%d' y='%d'>0</text><text x='%d' y='%d'>100%%</text>"
			 "<text x='%d' y='%d'>%.1f h</text>\n",
			 L, y + 18, title, L, y0, PW, PH, L - 20, y0 + PH, L - 40, y0 + 10,
			 L + PW - 30, y0 + PH + 15, tmax / 3600);
	for (size_t i = 0; i < n; i++) {
		const tp_sim_result_t *r = &runs[i].res;
		tp_strbuf_printf(sb, "<polyline fill='none' stroke='%s' stroke-width='1.2' points='", palette[i % 8]);
		for (size_t k = 0; k < r->nsamples; k++) {
			double v = frag ? r->samples[k].frag : r->samples[k].util;
			tp_strbuf_printf(sb, "%.1f,%.1f ", L + PW * r->samples[k].t / tmax,
					 y0 + PH * (1 - v));
		}
		tp_strbuf_printf(sb, "'/>\n<text x='%d' y='%d' fill='%s'>%s</text>\n", L + PW + 10,
				 y0 + 15 + 15 * (int)i, palette[i % 8], r->policy);
	}
}

static int write_svg(const char *path, const run_t *runs, size_t n)
{
	tp_strbuf_t sb = {0};
	const int W = SVG_W, H = SVG_H, L = SVG_L, T = SVG_T, PW = SVG_PW, PH = SVG_PH;
	double tmax = 1;

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < runs[i].res.nsamples; k++)
			if (runs[i].res.samples[k].t > tmax)
				tmax = runs[i].res.samples[k].t;
	tp_strbuf_printf(&sb, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif' font-size='11'>\n"
			 "<rect width='100%%' height='100%%' fill='white'/>\n", W, 3 * H);
	time_panel(&sb, runs, n, 0, tmax, "GPU utilisation over time", false);
	/* panel 2: CDF of communication slowdown (multi-node jobs) */
	double smax = 1.05;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < runs[i].res.multi_node_jobs; k++)
			if (runs[i].res.slowdowns[k] > smax)
				smax = runs[i].res.slowdowns[k];
	if (smax > 4)
		smax = 4;
	int y0 = H + T;
	tp_strbuf_printf(&sb, "<text x='%d' y='%d' font-size='13'>Communication slowdown vs ideal placement (CDF, multi-node jobs)</text>\n"
			 "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#999'/>\n"
			 "<text x='%d' y='%d'>1.0</text><text x='%d' y='%d'>%.2f</text>"
			 "<text x='%d' y='%d'>0</text><text x='%d' y='%d'>1</text>\n",
			 L, H + 18, L, y0, PW, PH, L - 5, y0 + PH + 15, L + PW - 20, y0 + PH + 15, smax,
			 L - 15, y0 + PH, L - 15, y0 + 10);
	for (size_t i = 0; i < n; i++) {
		const tp_sim_result_t *r = &runs[i].res;
		size_t m = r->multi_node_jobs;
		if (!m)
			continue;
		double *v = tp_malloc(m * sizeof(double));
		if (!v)
			continue;
		memcpy(v, r->slowdowns, m * sizeof(double));
		qsort(v, m, sizeof(double), dbl_cmp);
		tp_strbuf_printf(&sb, "<polyline fill='none' stroke='%s' stroke-width='1.5' points='", palette[i % 8]);
		for (size_t k = 0; k < m; k++) {
			/* a placement can beat the "ideal" one by a hair
			 * (another algorithm wins there): clamp to the axis */
			double x = (fmax(1.0, fmin(v[k], smax)) - 1.0) / (smax - 1.0);
			tp_strbuf_printf(&sb, "%.1f,%.1f ", L + PW * x, y0 + PH * (1 - (double)(k + 1) / (double)m));
		}
		tp_strbuf_printf(&sb, "'/>\n<text x='%d' y='%d' fill='%s'>%s</text>\n", L + PW + 10,
				 y0 + 15 + 15 * (int)i, palette[i % 8], r->policy);
		tp_free(v);
	}
	time_panel(&sb, runs, n, 2 * H, tmax,
		   "Fragmentation: share of free GPUs outside wholly free level-1 groups", true);
	tp_strbuf_printf(&sb, "</svg>\n");
	int rc = sb.failed ? TP_EXIT_FAIL : tp_cli_write(path, sb.buf);
	tp_free(sb.buf);
	return rc;
}

int tp_cmd_simulate(int argc, char **argv)
{
	static const struct option opts[] = {
		{"fabric", required_argument, NULL, 'f'},
		{"trace", required_argument, NULL, 't'},
		{"synthetic", required_argument, NULL, 'y'},
		{"jobs", required_argument, NULL, 'n'},
		{"seed", required_argument, NULL, 's'},
		{"load", required_argument, NULL, 'l'},
		{"policies", required_argument, NULL, 'p'},
		{"json", no_argument, NULL, 'j'},
		{"svg", required_argument, NULL, 'g'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *fabric = NULL, *trace = NULL, *synth = NULL, *svg = NULL;
	char *plist = NULL;
	long njobs = 2000, seed = 1;
	double load = 0.9;
	bool json = false;
	int c, rc = TP_EXIT_INPUT;
	tp_fabric_t *f = NULL;
	tp_cost_ctx_t *ctx = NULL;
	tp_trace_t tr = {0};
	run_t runs[16];
	size_t nruns = 0;
	tp_err_t err;

	memset(runs, 0, sizeof(runs));
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': fabric = optarg; break;
		case 't': trace = optarg; break;
		case 'y': synth = optarg; break;
		case 'n':
			if (!tp_cli_int("--jobs", optarg, 1, 10000000, &njobs))
				return TP_EXIT_INPUT;
			break;
		case 's':
			if (!tp_cli_int("--seed", optarg, 0, 1L << 62, &seed))
				return TP_EXIT_INPUT;
			break;
		case 'l':
			if (!tp_cli_double("--load", optarg, 0.01, 10, &load))
				return TP_EXIT_INPUT;
			break;
		case 'p':
			tp_free(plist);
			plist = tp_strdup(optarg);
			break;
		case 'j': json = true; break;
		case 'g': svg = optarg; break;
		case 'h': fputs(usage, stdout); rc = TP_EXIT_OK; goto out;
		default: fputs(usage, stderr); goto out;
		}
	}
	if (optind < argc) {
		tp_cli_err("simulate: unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (trace && synth) {
		tp_cli_err("simulate: give --trace or --synthetic, not both");
		goto out;
	}
	if (!plist && !(plist = tp_strdup(DEFAULT_POLICIES))) {
		rc = TP_EXIT_FAIL;
		goto out;
	}
	for (char *tok = strtok(plist, ","); tok; tok = strtok(NULL, ",")) {
		const tp_policy_t *p = tp_policy_find(tp_strtrim(tok));
		if (!p) {
			tp_cli_err("simulate: unknown policy '%s' (%s)", tok, tp_policy_names());
			goto out;
		}
		if (nruns == 16) {
			tp_cli_err("simulate: at most 16 policies");
			goto out;
		}
		runs[nruns++].policy = p;
	}
	if (fabric) {
		if (!(f = tp_cli_load(fabric, &rc)))
			goto out;
	} else {
		tp_gen_rail_t g;
		tp_gen_rail_defaults(&g);
		if ((err = tp_gen_rail(&g, &f))) {
			tp_cli_err("simulate: built-in fabric: %s", tp_strerror(err));
			rc = TP_EXIT_FAIL;
			goto out;
		}
	}
	int gph = 0;
	for (size_t h = 0; h < tp_fabric_nhosts(f); h++)
		if ((int)tp_fabric_host(f, h)->ngpus > gph)
			gph = (int)tp_fabric_host(f, h)->ngpus;
	if (!tp_fabric_total_gpus(f)) {
		tp_cli_err("simulate: %s: the fabric has no GPUs (discover with --gpus-per-host N or node data)",
			   fabric ? fabric : "built-in");
		goto out;
	}
	if (trace) {
		char *msg = NULL;
		if ((err = tp_trace_load_csv(trace, &tr, &msg))) {
			tp_cli_err("%s", msg ? msg : tp_strerror(err));
			tp_free(msg);
			rc = tp_cli_exit_code(err);
			goto out;
		}
	} else {
		if (!synth)
			synth = "llm";
		if (!tp_trace_synthetic_source(synth)) {
			tp_cli_err("simulate: unknown synthetic trace '%s' (%s)", synth, tp_trace_synthetic_names());
			goto out;
		}
		if ((err = tp_trace_synthetic(synth, (size_t)njobs, (uint64_t)seed,
					      (int)tp_fabric_total_gpus(f), gph, load, &tr))) {
			tp_cli_err("simulate: synthetic trace: %s", tp_strerror(err));
			rc = tp_cli_exit_code(err);
			goto out;
		}
	}
	tp_cost_params_t cp;
	tp_cost_params_defaults(&cp);
	if ((err = tp_cost_ctx_create(f, &cp, &ctx))) {
		tp_cli_err("simulate: cost model: %s", tp_strerror(err));
		rc = tp_cli_exit_code(err);
		goto out;
	}
	tp_policy_params_t pp;
	tp_policy_params_defaults(&pp);
	for (size_t i = 0; i < nruns; i++) {
		double t0 = now_s();
		err = tp_sim_run(f, &tr, runs[i].policy, &pp, ctx, (uint64_t)seed, &runs[i].res);
		runs[i].wall_s = now_s() - t0;
		if (err) {
			tp_cli_err("simulate: policy %s: %s", tp_policy_name(runs[i].policy), tp_strerror(err));
			rc = tp_cli_exit_code(err);
			goto out;
		}
	}
	const run_t *base = NULL;
	for (size_t i = 0; i < nruns; i++)
		if (!strcmp(tp_policy_name(runs[i].policy), "slurm-tree"))
			base = &runs[i];
	if (json) {
		cJSON *o = cJSON_CreateObject(), *pol;
		cJSON_AddStringToObject(o, "fabric", fabric ? fabric : "built-in rail 4x32x8");
		cJSON_AddStringToObject(o, "trace", trace ? trace : synth);
		if (!trace)
			cJSON_AddStringToObject(o, "trace_source", tp_trace_synthetic_source(synth));
		cJSON_AddNumberToObject(o, "jobs", (double)tr.njobs);
		cJSON_AddNumberToObject(o, "gpus", (double)tp_fabric_total_gpus(f));
		cJSON_AddNumberToObject(o, "seed", (double)seed);
		pol = cJSON_AddObjectToObject(o, "policies");
		for (size_t i = 0; i < nruns; i++)
			cJSON_AddItemToObject(pol, tp_policy_name(runs[i].policy),
					      metrics_json(&runs[i].res, runs[i].wall_s));
		if (base) {
			cJSON *r = cJSON_AddObjectToObject(o, "vs_slurm_tree");
			for (size_t i = 0; i < nruns; i++) {
				cJSON *x = cJSON_AddObjectToObject(r, tp_policy_name(runs[i].policy));
				cJSON_AddNumberToObject(x, "mean_jct_ratio", base->res.mean_jct_s > 0 ? runs[i].res.mean_jct_s / base->res.mean_jct_s : 0);
				cJSON_AddNumberToObject(x, "comm_slowdown_ratio", runs[i].res.comm_slowdown_mean / base->res.comm_slowdown_mean);
				cJSON_AddNumberToObject(x, "gpu_util_points", 100 * (runs[i].res.gpu_util - base->res.gpu_util));
			}
		}
		char *txt = cJSON_Print(o);
		cJSON_Delete(o);
		if (txt)
			puts(txt);
		cJSON_free(txt);
	} else {
		printf("fabric %s: %zu hosts, %zu GPUs; trace %s: %zu jobs (seed %ld)\n",
		       fabric ? fabric : "built-in rail-optimized 4 SU x 32 hosts x 8 rails",
		       tp_fabric_nhosts(f), tp_fabric_total_gpus(f), trace ? trace : synth,
		       tr.njobs, seed);
		printf("%-13s %6s %7s %10s %10s %10s %8s %8s %8s %6s %9s %8s\n", "policy", "util%", "useful%",
		       "wait mean", "wait p95", "JCT mean", "slow", "slow p95", "minspan%",
		       "frag%", "xspine TB", "JCT/tree");
		for (size_t i = 0; i < nruns; i++) {
			const tp_sim_result_t *r = &runs[i].res;
			char ratio[16] = "-";
			if (base && base->res.mean_jct_s > 0)
				snprintf(ratio, sizeof(ratio), "%.3f", r->mean_jct_s / base->res.mean_jct_s);
			printf("%-13s %6.1f %7.1f %9.0fs %9.0fs %9.0fs %8.3f %8.3f %8.1f %6.1f %9.2f %8s\n", r->policy,
			       100 * r->gpu_util, 100 * r->useful_util, r->mean_wait_s, r->p95_wait_s, r->mean_jct_s,
			       r->comm_slowdown_mean, r->comm_slowdown_p95, 100 * r->min_span_fraction,
			       100 * frag_mean(r), r->cross_spine_bytes / 1e12, ratio);
		}
	}
	rc = TP_EXIT_OK;
	if (svg)
		rc = write_svg(svg, runs, nruns);
out:
	for (size_t i = 0; i < nruns; i++)
		tp_sim_result_free(&runs[i].res);
	tp_trace_free(&tr);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
	tp_free(plist);
	return rc;
}
