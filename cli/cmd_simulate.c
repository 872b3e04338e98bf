/* topoplace simulate: policies side by side on one fabric and trace. */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "tp_placement.h"

/* Seeds of a synthetic trace by default. The JCT ratio's spread from
 * seed to seed is queueing's (about 0.09 on the built-in default,
 * topoplace against slurm-tree): 8 seeds put the standard error near
 * 0.03, too wide to tell a 5% gain from a tie (seeds 1-8 read 0.961 +-
 * 0.032 where seeds 17-64 read 0.924 +- 0.009). 16 (se about 0.024)
 * flipped the verdict on a cost model change that moved seeds 1-64 by
 * 0.004 (2026-12-05: 0.948 +- 0.025 better, then 0.956 +- 0.023 tie;
 * the change was narrowed since): with the ratio near 0.93, 16 seeds
 * call it a tie about one time in four, 24 about one in twenty. All
 * figures here are from before backfill judged a job by its stretched
 * run time (2026-12-05), which narrowed the spread to about 0.06 (24
 * seeds: 0.933 +- 0.012). 24 take 7.2-12.4 s on this 2-core machine,
 * under 10 when it is quiet (2026-12-06; the goal: under 10; 9.4-14.6 s
 * before the head's plan was kept between backfill passes). */
#define DEFAULT_SEEDS	 24
/* The last seed a run may reach: --json writes seeds as JSON numbers,
 * which readers (and cJSON) hold as doubles, exact up to 2^53. */
#define SEED_MAX	 (1L << 53)
#define DEFAULT_POLICIES "topoplace,slurm-tree,slurm-linear,first-fit,random"
/* With multi-node NVLink domains Slurm's own choice is topology/block. */
#define DEFAULT_POLICIES_NVL                                                   \
	"topoplace,slurm-block,slurm-tree,slurm-linear,first-fit,random"

static const char usage[] =
    "Usage: topoplace simulate [--fabric F.json] [--trace T.csv |\n"
    "                          --synthetic NAME --jobs N --seed S --load L]\n"
    "                          [--seeds N] [--policies a,b,...] [--baseline "
    "P]\n"
    "                          [--price-budget N] [--nics-by-rate]\n"
    "                          [--slurm-weights health|SLURM.CONF]\n"
    "                          [--deflate-runs] [--json] [--svg FILE]\n"
    "\n"
    "Replay a job trace under each policy (FCFS + EASY backfill of the 64\n"
    "jobs behind the head; a job on several nodes holds its hosts whole; a\n"
    "job's run time stretches with its predicted all-reduce time on the\n"
    "hosts it got versus an ideal placement) and compare them in one table,\n"
    "over several\n"
    "seeds (synthetic traces: one trace per seed, the same for every policy).\n"
    "Each figure is the mean over seeds; JCT/base is the mean of the per-seed\n"
    "ratios of mean JCT to the baseline's, +- its standard error, and reads\n"
    "'better' or 'worse' only beyond 2 standard errors ('tie' otherwise).\n"
    "One trace (--trace, whatever --seeds: seeds change seeded policies only;\n"
    "or one synthetic seed of 200 jobs or more): JCT/base is its own ratio\n"
    "(JCTs summed over the seeds), +- the jackknife's standard error over 10\n"
    "batches of consecutive jobs (200 jobs or more; the queue links the\n"
    "batches, so the bar may read narrow). A policy that leaves out other\n"
    "jobs than the baseline (jobs it can never place) reads 'jobs differ',\n"
    "its ratios over the jobs both ran.\n"
    "\n"
    "Columns: util% GPU time allocated; useful% GPU time at the jobs' ideal\n"
    "run times, at most what each held (what a slowed job holds beyond that\n"
    "waits on the network); wait/JCT mean; slow: communication slowdown of\n"
    "multi-node jobs vs an ideal placement, as predicted at their start\n"
    "(mean, p95; later jobs' load shows in JCT); span%/span0%: multi-node\n"
    "jobs at the fewest leaf groups the free fabric / the empty fabric\n"
    "allowed (these four over the seeds with multi-node jobs, '-' when\n"
    "none has); frag%: free GPUs outside wholly free leaf groups,\n"
    "averaged over time; top TB/h: bytes across the top switch level per\n"
    "hour of simulated time. A second table gives JCT/base per job size\n"
    "(hosts asked for: 1, 2-8, 9-32, >32).\n"
    "\n"
    "With no arguments: the built-in fabric (a 2:1 fat tree, 8 leaves x 8\n"
    "hosts x 8 GPUs, one 400G NIC per GPU, each cable down or at half width\n"
    "with probability 5%, seed 1: 25 of its 768 cables down, 24 halved) and\n"
    "a synthetic LLM-cluster trace (Kalos job-size mix), 2,000 jobs, load "
    "0.9,\n"
    "seeds 1-24, every policy, baseline slurm-tree. Every job's all-reduce\n"
    "size is its model_bytes (default 1 GiB) and its communication share\n"
    "comm_frac (synthetic: about 0.3 for multi-node LLM jobs, 0.1\n"
    "otherwise; CSV default 0.3 for rows asking for several nodes, 0.1\n"
    "otherwise); the trace keeps its order for equal submit times.\n"
    "\n"
    "  --fabric F.json    fabric model (default: built-in)\n"
    "  --trace T.csv      CSV with a header: submit_s, gpus | nodes[,\n"
    "                     gpus_per_node], run_s [, comm_frac][, model_bytes];\n"
    "                     gpus and nodes in one row: gpus split evenly over\n"
    "                     the nodes; model_bytes takes K, M, G, T, P;\n"
    "                     or Slurm's record of the jobs that ran: sacct -P\n"
    "                     output or a jobcomp/filetxt log (topoplace trace\n"
    "                     --help: what is read, what left out)\n"
    "  --synthetic NAME   philly | helios | llm (default llm)\n"
    "  --jobs N           synthetic trace length (default 2000)\n"
    "  --seed S           first seed (default 1); the last, S+N-1 with\n"
    "                     --seeds N, at most 2^53 (9007199254740992, the\n"
    "                     largest a JSON number holds exactly)\n"
    "  --seeds N          seeds S .. S+N-1 (default 24; 1 with --trace, where\n"
    "                     only seeded policies change)\n"
    "  --load L           offered load, share of all GPUs (default 0.9)\n"
    "  --policies LIST    default " DEFAULT_POLICIES ";\n"
    "                     with multi-node NVLink domains (NVL72 racks)\n"
    "                     " DEFAULT_POLICIES_NVL "\n"
    "  --baseline P       policy the ratios are against (default slurm-tree;\n"
    "                     slurm-block, Slurm's topology/block on the NVLink\n"
    "                     domains, when the fabric has multi-node ones)\n"
    "  --price-budget N   predictions the topoplace policy may spend a\n"
    "                     decision pricing candidate sets, 0 to 96 (default\n"
    "                     96, and at most 1,536 host-NIC routes; slurmctld's\n"
    "                     PriceBudget in topoplace.conf defaults to 8: give 8\n"
    "                     to simulate what the daemon does; 0: the structure\n"
    "                     alone); refused when no topoplace policy runs\n"
    "  --nics-by-rate     price a ring's traffic over each host's NICs in\n"
    "                     proportion to their rates, as NCCL's channel search\n"
    "                     allots channels (a NIC at half width carries half\n"
    "                     as many), and a hierarchical all-reduce's ranks by\n"
    "                     their NICs' rates (libtopoplace-coll with a plan\n"
    "                     made with plan --nics-by-rate); default: evenly,\n"
    "                     one ring per rail, as NCCL spreads its channels,\n"
    "                     so the slowest NIC paces the host\n"
    "  --slurm-weights W  Slurm's node weights (Weight=): 'health' gives\n"
    "                     the weakly cabled hosts Weight=100 and the rest 1,\n"
    "                     as an admin keeps them last; or a slurm.conf's\n"
    "                     NodeName= lines; default: all equal. slurm-tree,\n"
    "                     slurm-tree-22.05 and slurm-block order nodes by\n"
    "                     them as cons_tres does (lower first); topoplace\n"
    "                     honours them as its native plugin does (the\n"
    "                     lightest hosts when they hold the job, else\n"
    "                     Slurm's tree selection). The other policies\n"
    "                     (slurm-linear's model has one weight tier) and\n"
    "                     the ideal placement ignore them\n"
    "  --deflate-runs     with Slurm's records (--trace of sacct output with\n"
    "                     NodeList, or a jobcomp log): a job's recorded run\n"
    "                     time is what it took on the hosts Slurm gave it;\n"
    "                     divide it by what those hosts cost it at its start\n"
    "                     ((1 - comm_frac) + comm_frac x, x the slowdown\n"
    "                     trace --price gives) to get its run on ideal hosts\n"
    "  --json             metrics per policy as JSON (means, per seed, "
    "ratios)\n"
    "  --svg FILE         utilisation, slowdowns and fragmentation (first "
    "seed;\n"
    "                     a file: the report takes stdout)\n"
    "  -h, --help         this text\n";

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

/* Bytes across the top switch level per hour of simulated time, in TB. */
static double get_top_tb_h(const tp_sim_result_t *r, size_t arg)
{
	(void)arg;
	return r->makespan_s > 0
		   ? r->cross_spine_bytes / 1e12 / (r->makespan_s / 3600)
		   : 0;
}

static cJSON *metrics_json(const tp_sim_result_t *r, double wall)
{
	cJSON *o = cJSON_CreateObject();
	/* figures of multi-node jobs: null without one, as in "mean" and
	 * "per_seed" (the simulator's placeholder is 1) */
	double none = r->multi_node_jobs ? 0 : NAN;

	cJSON_AddNumberToObject(o, "jobs", (double)r->jobs);
	cJSON_AddNumberToObject(o, "multi_node_jobs",
				(double)r->multi_node_jobs);
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
	cJSON_AddNumberToObject(o, "comm_slowdown_mean",
				r->comm_slowdown_mean + none);
	cJSON_AddNumberToObject(o, "comm_slowdown_p95",
				r->comm_slowdown_p95 + none);
	cJSON_AddNumberToObject(o, "min_span_fraction",
				r->min_span_fraction + none);
	cJSON_AddNumberToObject(o, "min_span_empty_fraction",
				r->min_span_empty_fraction + none);
	cJSON_AddNumberToObject(o, "cross_spine_bytes", r->cross_spine_bytes);
	cJSON_AddNumberToObject(o, "decision_p99_s", r->decision_p99_s);
	cJSON_AddNumberToObject(o, "fragmentation_mean", r->frag_time_mean);
	cJSON_AddNumberToObject(o, "top_level_tb_per_hour", get_top_tb_h(r, 0));
	cJSON *ts = cJSON_AddArrayToObject(o, "over_time");
	/* a coarse time series for scripts: at most 100 points (199
	 * samples would give 199 with a step of nsamples / 100) */
	size_t step = (r->nsamples + 99) / 100;
	if (!step)
		step = 1;
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

enum {
	SVG_W = 900,
	SVG_H = 320,   /* per panel */
	SVG_HEAD = 50, /* title lines */
	SVG_BINS = 48, /* time bins of the over-time panels */
};

static tp_svg_chart_t panel(int k, const char *title, const char *xlabel,
			    double xmin, double xmax, double ymax,
			    const char *yunit)
{
	return (tp_svg_chart_t){70,
				SVG_HEAD + k * SVG_H + 30,
				SVG_W - 70 - 220,
				SVG_H - 90,
				xmin,
				xmax,
				ymax,
				title,
				xlabel,
				yunit};
}

/* The legend right of a chart: policy names, with a figure each. */
static void legend(tp_strbuf_t *sb, const tp_svg_chart_t *c, const run_t *runs,
		   size_t n, const double *fig, const char *fmt)
{
	for (size_t i = 0; i < n; i++) {
		char label[96], id[32];
		snprintf(label, sizeof(label), fmt, runs[i].res.policy,
			 fig ? fig[i] : 0);
		snprintf(id, sizeof(id), "legend-%d-%zu", c->y, i);
		tp_svg_swatch(sb, c->x + c->w + 14, c->y + 12 + 16 * (double)i,
			      id, palette[i % 8], true, label);
	}
}

/* Time-weighted mean of the samples (a step function) per bin, in %:
 * each sample holds until the next. */
static void bin_samples(const tp_sim_result_t *r, double tmax, bool frag,
			double *mid, double *val)
{
	double w[SVG_BINS] = {0}, width = tmax / SVG_BINS;

	for (size_t b = 0; b < SVG_BINS; b++) {
		mid[b] = (b + 0.5) * width / 3600;
		val[b] = 0;
	}
	for (size_t k = 0; k + 1 < r->nsamples; k++) {
		double t0 = r->samples[k].t, t1 = r->samples[k + 1].t;
		double v =
		    100 * (frag ? r->samples[k].frag : r->samples[k].util);
		for (size_t b = (size_t)fmax(0, floor(t0 / width));
		     b < SVG_BINS && b * width < t1; b++) {
			double lo = fmax(t0, b * width),
			       hi = fmin(t1, (b + 1) * width);
			if (hi > lo) {
				val[b] += v * (hi - lo);
				w[b] += hi - lo;
			}
		}
	}
	for (size_t b = 0; b < SVG_BINS; b++)
		val[b] = w[b] > 0 ? val[b] / w[b] : 0;
}

/* A per-policy quantity over time, binned, as panel k. */
static void time_panel(tp_strbuf_t *sb, const run_t *runs, size_t n, int k,
		       double tmax, const char *title, bool frag)
{
	tp_svg_chart_t c = panel(k, title, "hours since the first arrival", 0,
				 tmax / 3600, 100, "%");
	double mid[SVG_BINS], val[SVG_BINS], mean[16];

	tp_svg_axes(sb, &c);
	for (size_t i = 0; i < n; i++) {
		bin_samples(&runs[i].res, tmax, frag, mid, val);
		tp_svg_series(sb, &c, mid, val, SVG_BINS, palette[i % 8]);
		mean[i] = 100 * (frag ? runs[i].res.frag_time_mean
				      : runs[i].res.gpu_util);
	}
	legend(sb, &c, runs, n, mean, "%s, mean %.1f%%");
}

/* CDF of the communication slowdown of multi-node jobs, as panel k. */
static void slowdown_panel(tp_strbuf_t *sb, const run_t *runs, size_t n, int k)
{
	double smax = 1.05, smin = 1;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < runs[i].res.multi_node_jobs; j++) {
			smax = fmax(smax, runs[i].res.slowdowns[j]);
			smin = fmin(smin, runs[i].res.slowdowns[j]);
		}
	/* the axis starts at 1 unless a placement beat the reference (the
	 * fastest set known on the idle fabric): then at a tenth below */
	smin = smin < 1 ? fmax(0, floor(smin * 10) / 10) : 1;
	tp_svg_chart_t c =
	    panel(k,
		  "Communication slowdown vs ideal placement "
		  "(CDF, multi-node jobs)",
		  smax > 4 ? "slowdown (x ideal; beyond 4 drawn at 4)"
			   : "slowdown (x ideal)",
		  smin, fmin(smax, 4), 100, "%");
	tp_svg_axes(sb, &c);
	for (size_t i = 0; i < n; i++) {
		const tp_sim_result_t *r = &runs[i].res;
		size_t m = r->multi_node_jobs;
		double *x = m ? tp_malloc(2 * m * sizeof(double)) : NULL;
		if (!x)
			continue;
		memcpy(x, r->slowdowns, m * sizeof(double));
		qsort(x, m, sizeof(double), dbl_cmp);
		for (size_t j = 0; j < m; j++)
			x[m + j] = 100.0 * (double)(j + 1) / (double)m;
		tp_svg_series(sb, &c, x, x + m, m, palette[i % 8]);
		tp_free(x);
	}
	legend(sb, &c, runs, n, NULL, "%s");
}

static int write_svg(const char *path, const run_t *runs, size_t n,
		     const char *fabric, const char *trace, const char *source,
		     size_t njobs, long seed)
{
	tp_strbuf_t sb = {0};
	double tmax = 1;

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < runs[i].res.nsamples; k++)
			tmax = fmax(tmax, runs[i].res.samples[k].t);
	tp_svg_begin(&sb, SVG_W, SVG_HEAD + 3 * SVG_H);
	tp_svg_text(&sb, 10, 20, "font-size='14' font-weight='bold'",
		    "Fabric: %s", fabric);
	tp_svg_text(&sb, 10, 38, "font-size='12'",
		    "Trace: %s%s%s%s, %zu jobs, seed %ld; lines are means "
		    "over %.1f-minute bins",
		    trace, source ? " (synthetic, " : "", source ? source : "",
		    source ? ")" : "", njobs, seed, tmax / SVG_BINS / 60);
	time_panel(&sb, runs, n, 0, tmax, "GPU utilisation over time", false);
	slowdown_panel(&sb, runs, n, 1);
	time_panel(&sb, runs, n, 2, tmax,
		   "Fragmentation: free GPUs outside wholly free level-1 "
		   "groups, share of free GPUs",
		   true);
	int rc = tp_svg_finish(&sb, path);
	tp_free(sb.buf);
	return rc;
}

/* ---- seeds side by side ---- */

typedef struct sims {
	const tp_fabric_t *f;
	const tp_cost_ctx_t *ctx;
	const tp_policy_params_t *pp;
	tp_trace_t *traces; /* [seed]; one_trace: [0] alone, trace_of */
	run_t *runs;	    /* [seed * npol + policy] */
	size_t nseeds, npol;
	bool one_trace; /* --trace: every seed runs the same jobs */
	long seed0;
	int max_host_gpus; /* the fabric's largest host */
	bool deflate;	   /* --deflate-runs */
	bool topoplace;	   /* a topoplace policy runs */
	size_t deflated;   /* --deflate-runs: jobs whose run time changed */
	const char *weights; /* --slurm-weights, or NULL */
	pthread_mutex_t lock;
	size_t next;
	tp_err_t err;
	size_t err_at;
} sims_t;

/* Seed s's trace: a CSV file (--trace) is loaded once and serves every
 * seed (only seeded policies change). */
static const tp_trace_t *trace_of(const sims_t *S, size_t s)
{
	return &S->traces[S->one_trace ? 0 : s];
}

/* Each thread keeps one cache of ideal times for all its runs: they share
 * the fabric, the cost context and the parameters, so a shape is priced
 * once a thread, not once a run (a fifth of simulate's time before). */
static void *sim_worker(void *arg)
{
	sims_t *S = arg;
	tp_sim_opts_t o = {.ideal = tp_ideal_cache_create()};

	for (;;) {
		pthread_mutex_lock(&S->lock);
		size_t k = S->err ? S->nseeds * S->npol : S->next++;
		pthread_mutex_unlock(&S->lock);
		if (k >= S->nseeds * S->npol)
			break;
		run_t *r = &S->runs[k];
		double t0 = now_s();
		tp_err_t err = tp_sim_run_opts(
		    S->f, trace_of(S, k / S->npol), r->policy, S->pp, S->ctx,
		    (uint64_t)S->seed0 + k / S->npol, &o, &r->res);
		r->wall_s = now_s() - t0;
		if (err) {
			pthread_mutex_lock(&S->lock);
			if (!S->err) {
				S->err = err;
				S->err_at = k;
			}
			pthread_mutex_unlock(&S->lock);
		}
	}
	tp_ideal_cache_destroy(o.ideal);
	return NULL;
}

/* Every (seed, policy) simulation, on up to as many threads as CPUs. */
static tp_err_t sims_run(sims_t *S)
{
	pthread_mutex_init(&S->lock, NULL);
	tp_threads_run(sim_worker, S, S->nseeds * S->npol);
	pthread_mutex_destroy(&S->lock);
	return S->err;
}

/* Mean and standard error of x[0..n) (se 0 for n < 2). */
static void mean_se(const double *x, size_t n, double *mean_p, double *se_p)
{
	double m = 0, v = 0;

	for (size_t i = 0; i < n; i++)
		m += x[i];
	m = n ? m / (double)n : 0;
	for (size_t i = 0; i < n; i++)
		v += (x[i] - m) * (x[i] - m);
	*mean_p = m;
	*se_p = n > 1 ? sqrt(v / (double)(n - 1) / (double)n) : 0;
}

/* Job j of trace t for a message: its line, or its index, and size. */
static void job_where(const tp_trace_t *t, const char *path, size_t j,
		      char *buf, size_t len)
{
	const tp_job_spec_t *js = &t->jobs[j];
	int n = js->line > 0 ? snprintf(buf, len, "%s:%d", path, js->line)
			     : snprintf(buf, len, "job %zu", j + 1);

	if (n < 0 || (size_t)n >= len)
		return;
	if (js->nodes > 0 && js->gpus_per_node > 0)
		snprintf(buf + n, len - (size_t)n, ", %d nodes x %d GPUs",
			 js->nodes, js->gpus_per_node);
	else if (js->nodes > 0)
		snprintf(buf + n, len - (size_t)n, ", %d whole nodes",
			 js->nodes);
	else
		snprintf(buf + n, len - (size_t)n, ", %d GPUs", js->gpus);
}

/* Jobs a policy can never place are left out of its figures: a warning
 * with the count and the first of them, and an error (false) when no
 * policy places a single job of the trace. A trace file is replayed, not
 * sampled anew, by every seed: its jobs are counted once. */
static bool report_unplaceable(const sims_t *S, const char *trace,
			       const char *fabric)
{
	size_t u[16] = {0}, placed = 0, total = 0, njobs = 0;
	size_t fs = 0, fj = SIZE_MAX;
	size_t nseeds = S->one_trace ? 1 : S->nseeds;
	char where[160];
	bool same = true;

	for (size_t s = 0; s < nseeds; s++) {
		njobs += S->traces[s].njobs;
		for (size_t p = 0; p < S->npol; p++) {
			const tp_sim_result_t *r =
			    &S->runs[s * S->npol + p].res;
			u[p] += r->unplaceable;
			placed += r->jobs;
			if (fj == SIZE_MAX && r->unplaceable) {
				fs = s;
				fj = r->first_unplaceable;
			}
		}
	}
	for (size_t p = 0; p < S->npol; p++) {
		total += u[p];
		same &= u[p] == u[0];
	}
	if (!total || fj >= S->traces[fs].njobs)
		return true;
	job_where(&S->traces[fs], trace, fj, where, sizeof(where));
	if (!placed) {
		tp_cli_err(
		    "simulate: %s: no job of the trace can ever be placed "
		    "on fabric %s (first: %s)",
		    trace, fabric, where);
		return false;
	}
	if (same) {
		tp_cli_err("warning: simulate: %zu of %zu jobs can never be "
			   "placed on this fabric and are left out of every "
			   "figure (first: %s)",
			   u[0], njobs, where);
		return true;
	}
	for (size_t p = 0; p < S->npol; p++)
		if (u[p])
			tp_cli_err(
			    "warning: simulate: policy %s can never place "
			    "%zu of %zu jobs, left out of its figures "
			    "(first over all policies: %s)",
			    tp_policy_name(S->runs[p].policy), u[p], njobs,
			    where);
	return true;
}

static const char *verdict(double mean, double se)
{
	if (!(se > 0) || fabs(mean - 1.0) <= 2 * se)
		return "tie";
	return mean < 1.0 ? "better" : "worse";
}

/* Does policy p leave out other jobs than the baseline b (jobs one of
 * them can never place)? Its ratios are then over the jobs both ran, and
 * it gets no verdict: dropping jobs frees the fabric for the others. */
static bool jobs_differ(const sims_t *S, size_t p, size_t b)
{
	for (size_t s = 0; s < S->nseeds; s++)
		if (S->runs[s * S->npol + p].res.unplaceable !=
		    S->runs[s * S->npol + b].res.unplaceable)
			return true;
	return false;
}

/* The verdict of p against b, mean +- se. */
static const char *verdict_of(const sims_t *S, size_t p, size_t b, double m,
			      double se)
{
	return jobs_differ(S, p, b) ? "jobs differ" : verdict(m, se);
}

/* One trace (a single seed) has no spread over seeds: its error bar is
 * the jackknife's over BATCHES batches of consecutive jobs in submit
 * order, when each holds at least BATCH_MIN jobs: the ratio of mean JCTs
 * is taken again without each batch in turn. The queue carries over from
 * one batch to the next, so batches are not independent and the bar can
 * read narrow: on simulate's default trace, seeds 1-16 one at a time, its
 * root mean square was 0.093 and the ratio's spread over those seeds
 * 0.099 (standard deviation). */
#define BATCHES	  10
#define BATCH_MIN 20

/* One trace's jobs (one seed, or --trace's file, which every seed
 * replays: seeds then change seeded policies only and are no sample of
 * jobs). */
static bool batched(const sims_t *S)
{
	return (S->nseeds == 1 || S->one_trace) &&
	       S->traces[0].njobs >= BATCHES * BATCH_MIN;
}

/* Does job j of trace t belong to class cls (-1: all)? */
static bool in_class(const sims_t *S, const tp_trace_t *t, size_t j, int cls)
{
	const tp_job_spec_t *js = &t->jobs[j];
	int hg = S->max_host_gpus > 0 ? S->max_host_gpus : 1;
	size_t hosts = js->nodes > 0 ? (size_t)js->nodes
				     : (size_t)((js->gpus + hg - 1) / hg);

	return cls < 0 || tp_sim_class_of(hosts) == cls;
}

/* Sums of p's and b's JCTs over the jobs [from, to) of seed s's trace in
 * class cls that both ran, added to *a and *c; false when a run kept no
 * per-job JCTs. */
static bool pair_sums(const sims_t *S, size_t s, size_t p, size_t b, int cls,
		      size_t from, size_t to, double *a, double *c, size_t *n)
{
	const tp_trace_t *t = trace_of(S, s);
	const tp_sim_result_t *r = &S->runs[s * S->npol + p].res;
	const tp_sim_result_t *q = &S->runs[s * S->npol + b].res;

	if (!r->job_jct_s || !q->job_jct_s || r->njob_jct != t->njobs ||
	    q->njob_jct != t->njobs)
		return false;
	for (size_t j = from; j < to && j < t->njobs; j++)
		if (in_class(S, t, j, cls) && !isnan(r->job_jct_s[j]) &&
		    !isnan(q->job_jct_s[j])) {
			*a += r->job_jct_s[j];
			*c += q->job_jct_s[j];
			++*n;
		}
	return true;
}

/* Sums of p's and b's JCTs per batch over the jobs of class cls (-1:
 * all) that both ran, over every seed, into a[] and c[]; false when
 * there are none. */
static bool batch_sums(const sims_t *S, size_t p, size_t b, int cls,
		       double a[BATCHES], double c[BATCHES])
{
	size_t nj = S->traces[0].njobs, n = 0;

	for (size_t k = 0; k < BATCHES; k++) {
		a[k] = c[k] = 0;
		for (size_t s = 0; s < S->nseeds; s++)
			if (!pair_sums(S, s, p, b, cls, nj * k / BATCHES,
				       nj * (k + 1) / BATCHES, &a[k], &c[k],
				       &n))
				return false;
	}
	return n > 0;
}

/* Ratios of policy p's mean JCT (class cls, -1: all jobs) to the
 * baseline's, into x, whose mean and standard error (mean_se) are the
 * figure and its error bar: one per seed; for one trace (batched()) the
 * jackknife's pseudo-values K R - (K - 1) R(-k) over the K batches that
 * hold jobs of the class (R the ratio over all of them, R(-k) without
 * batch k), shifted to mean R: the figure is the trace's own ratio, the
 * bar the jackknife's. Returns how many there are. */
static size_t jct_ratios(const sims_t *S, size_t p, size_t b, int cls,
			 double *x)
{
	size_t n = 0;

	if (batched(S)) {
		double a[BATCHES], c[BATCHES], sa = 0, sc = 0, K = 0;
		if (!batch_sums(S, p, b, cls, a, c))
			return 0;
		for (size_t k = 0; k < BATCHES; k++)
			if (c[k] > 0) {
				sa += a[k];
				sc += c[k];
				K++;
			}
		if (K < 2)
			return 0;
		double shift = 0;
		for (size_t k = 0; k < BATCHES; k++)
			if (c[k] > 0) {
				x[n] = K * (sa / sc) -
				       (K - 1) * (sa - a[k]) / (sc - c[k]);
				shift += x[n++] - sa / sc;
			}
		for (size_t k = 0; k < n; k++)
			x[k] -= shift / K;
		return n;
	}
	/* one trace too short for batches: one ratio over every seed */
	double sa = 0, sc = 0;
	size_t nj = 0;
	bool pool = S->one_trace && S->nseeds > 1;
	for (size_t s = 0; s < S->nseeds; s++) {
		const tp_sim_result_t *r = &S->runs[s * S->npol + p].res;
		const tp_sim_result_t *q = &S->runs[s * S->npol + b].res;
		double a = cls < 0 ? r->mean_jct_s : r->class_jct_mean_s[cls];
		double c = cls < 0 ? q->mean_jct_s : q->class_jct_mean_s[cls];
		if (pool || r->unplaceable != q->unplaceable) {
			/* over the jobs both ran */
			size_t m = 0;
			a = c = 0;
			if (!pair_sums(S, s, p, b, cls, 0, SIZE_MAX, &a, &c,
				       &m) ||
			    !m)
				continue;
			sa += a, sc += c, nj += m;
		}
		if (!pool && a > 0 && c > 0)
			x[n++] = a / c;
	}
	if (pool && nj && sa > 0 && sc > 0)
		x[n++] = sa / sc;
	return n;
}

typedef double (*getter_t)(const tp_sim_result_t *r, size_t arg);

static double get_field(const tp_sim_result_t *r, size_t off)
{
	return *(const double *)(const void *)((const char *)r + off);
}

static double get_class_jobs(const tp_sim_result_t *r, size_t cls)
{
	return (double)r->class_jobs[cls];
}

/* A figure over the multi-node jobs: NAN in a seed that has none (the
 * simulator's 1.0 there is no measurement). */
static double get_multi_field(const tp_sim_result_t *r, size_t off)
{
	return r->multi_node_jobs ? get_field(r, off) : NAN;
}

/* Mean over seeds of get(result, arg) for policy p, over the seeds where
 * it is a number (NAN when none is). */
static double seed_mean(const sims_t *S, size_t p, getter_t get, size_t arg)
{
	double acc = 0;
	size_t n = 0;

	for (size_t s = 0; s < S->nseeds; s++) {
		double v = get(&S->runs[s * S->npol + p].res, arg);
		if (!isnan(v))
			acc += v, n++;
	}
	return n ? acc / (double)n : NAN;
}

#define MEAN_OF(S, p, field)                                                   \
	seed_mean(S, p, get_field, offsetof(tp_sim_result_t, field))
#define MULTI_MEAN_OF(S, p, field)                                             \
	seed_mean(S, p, get_multi_field, offsetof(tp_sim_result_t, field))

/* v in a column of width w with prec decimals, "-" when not a number. */
static const char *col(char *buf, size_t len, int w, int prec, double v)
{
	if (isnan(v))
		snprintf(buf, len, "%*s", w, "-");
	else
		snprintf(buf, len, "%*.*f", w, prec, v);
	return buf;
}

static void print_table(const sims_t *S, size_t b, double *x)
{
	int pw = 13; /* the policy column: its longest name */

	for (size_t p = 0; p < S->npol; p++) {
		size_t len = strlen(tp_policy_name(S->runs[p].policy));
		if (len > (size_t)pw)
			pw = (int)len;
	}
	printf("%-*s %6s %7s %9s %9s %6s %6s %6s %6s %6s %7s  %-22s\n", pw,
	       "policy", "util%", "useful%", "wait", "JCT", "slow", "p95",
	       "span%", "span0%", "frag%", "top TB/h", "JCT/base (+- se)");
	for (size_t p = 0; p < S->npol; p++) {
		double m, se;
		char ratio[48];
		size_t n = jct_ratios(S, p, b, -1, x);
		mean_se(x, n, &m, &se);
		if (p == b)
			snprintf(ratio, sizeof(ratio), "1 (baseline)");
		else if (!n)
			snprintf(ratio, sizeof(ratio), "n/a");
		else if (n == 1)
			snprintf(ratio, sizeof(ratio), "%.3f (no error bar)",
				 m);
		else
			snprintf(ratio, sizeof(ratio), "%.3f +- %.3f %s", m, se,
				 verdict_of(S, p, b, m, se));
		char c1[16], c2[16], c3[16], c4[16];
		printf("%-*s %6.1f %7.1f %8.0fs %8.0fs %s %s %s "
		       "%s %6.1f %7.1f  %s\n",
		       pw, tp_policy_name(S->runs[p].policy),
		       100 * MEAN_OF(S, p, gpu_util),
		       100 * MEAN_OF(S, p, useful_util),
		       MEAN_OF(S, p, mean_wait_s), MEAN_OF(S, p, mean_jct_s),
		       col(c1, sizeof(c1), 6, 3,
			   MULTI_MEAN_OF(S, p, comm_slowdown_mean)),
		       col(c2, sizeof(c2), 6, 3,
			   MULTI_MEAN_OF(S, p, comm_slowdown_p95)),
		       col(c3, sizeof(c3), 6, 1,
			   100 * MULTI_MEAN_OF(S, p, min_span_fraction)),
		       col(c4, sizeof(c4), 6, 1,
			   100 * MULTI_MEAN_OF(S, p, min_span_empty_fraction)),
		       100 * MEAN_OF(S, p, frag_time_mean),
		       seed_mean(S, p, get_top_tb_h, 0), ratio);
	}
	printf("\nJCT/base by job size (hosts asked for; mean +- se over "
	       "%s)\n%-*s",
	       batched(S) ? "10 batches of the trace's jobs" : "seeds", pw,
	       "policy");
	for (int c = 0; c < TP_SIM_NCLASSES; c++)
		printf(" %22s", tp_sim_class_name(c));
	printf("\n%-*s", pw, "jobs/seed");
	for (int c = 0; c < TP_SIM_NCLASSES; c++) {
		double v = seed_mean(S, b, get_class_jobs, (size_t)c);
		/* a mean over seeds: 0.3 jobs a seed is not 0 */
		printf(v < 10 && v != floor(v) ? " %22.1f" : " %22.0f", v);
	}
	printf("\n");
	for (size_t p = 0; p < S->npol; p++) {
		if (p == b)
			continue;
		printf("%-*s", pw, tp_policy_name(S->runs[p].policy));
		for (int c = 0; c < TP_SIM_NCLASSES; c++) {
			double m, se;
			char cell[48] = "-";
			size_t n = jct_ratios(S, p, b, c, x);
			if (n == 1) {
				snprintf(cell, sizeof(cell), "%.3f", x[0]);
			} else if (n) {
				mean_se(x, n, &m, &se);
				snprintf(cell, sizeof(cell), "%.3f +- %.3f %s",
					 m, se, verdict_of(S, p, b, m, se));
			}
			printf(" %22s", cell);
		}
		printf("\n");
	}
}

static cJSON *ratio_json(const sims_t *S, size_t p, size_t b, int cls,
			 double *x)
{
	cJSON *o = cJSON_CreateObject();
	double m, se;
	size_t n = jct_ratios(S, p, b, cls, x);

	mean_se(x, n, &m, &se);
	if (batched(S)) {
		cJSON_AddNumberToObject(o, "seeds", (double)S->nseeds);
		cJSON_AddNumberToObject(o, "batches", (double)n);
	} else {
		/* one trace file: its one ratio sums every seed's JCTs */
		cJSON_AddNumberToObject(o, "seeds",
					S->one_trace && n ? (double)S->nseeds
							  : (double)n);
	}
	if (n)
		cJSON_AddNumberToObject(o, "jct_ratio_mean", m);
	else
		cJSON_AddNullToObject(o, "jct_ratio_mean");
	if (n > 1)
		cJSON_AddNumberToObject(o, "jct_ratio_se", se);
	else
		cJSON_AddNullToObject(o, "jct_ratio_se");
	/* one ratio has no error bar, so no verdict; the baseline against
	 * itself reads so in every class, as at the top */
	cJSON_AddStringToObject(o, "verdict",
				p == b	? "baseline"
				: n > 1 ? verdict_of(S, p, b, m, se)
					: "none");
	return o;
}

/* The result fields averaged over seeds in the JSON's "mean". */
static const struct {
	const char *name;
	size_t off;
	bool multi; /* over the seeds with multi-node jobs (null: none) */
} mean_fields[] = {
    {"gpu_util", offsetof(tp_sim_result_t, gpu_util), false},
    {"useful_util", offsetof(tp_sim_result_t, useful_util), false},
    {"mean_wait_s", offsetof(tp_sim_result_t, mean_wait_s), false},
    {"mean_jct_s", offsetof(tp_sim_result_t, mean_jct_s), false},
    {"comm_slowdown_mean", offsetof(tp_sim_result_t, comm_slowdown_mean), true},
    {"comm_slowdown_p95", offsetof(tp_sim_result_t, comm_slowdown_p95), true},
    {"min_span_fraction", offsetof(tp_sim_result_t, min_span_fraction), true},
    {"min_span_empty_fraction",
     offsetof(tp_sim_result_t, min_span_empty_fraction), true},
    /* the same figure as the per-policy fragmentation_mean, under its
     * name; fragmentation_time_mean kept for scripts that read it */
    {"fragmentation_mean", offsetof(tp_sim_result_t, frag_time_mean), false},
    {"fragmentation_time_mean", offsetof(tp_sim_result_t, frag_time_mean),
     false},
};

/* A seed as its digits: cJSON writes a double at 15 significant digits
 * whenever they read back within 2 ulps, so 9007199254740991 would come
 * out as 9.00719925474099e+15. */
static cJSON *seed_json(long seed)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%ld", seed);
	return cJSON_CreateRaw(buf);
}

static void print_json(const sims_t *S, size_t b, double *x,
		       const char *fabric_name, const char *trace_name,
		       const char *source)
{
	cJSON *o = cJSON_CreateObject(), *pol, *seeds;

	cJSON_AddStringToObject(o, "fabric", fabric_name);
	cJSON_AddStringToObject(o, "trace", trace_name);
	if (source)
		cJSON_AddStringToObject(o, "trace_source", source);
	cJSON_AddNumberToObject(o, "jobs", (double)S->traces[0].njobs);
	cJSON_AddStringToObject(o, "trace_format", S->traces[0].format);
	/* what jct_ratio_se is over: seeds, or batches of one trace */
	cJSON_AddStringToObject(o, "jct_ratio_over",
				batched(S) ? "batches" : "seeds");
	cJSON_AddNumberToObject(o, "gpus", (double)tp_fabric_total_gpus(S->f));
	size_t weak = tp_cli_weak_hosts(S->f);
	if (weak != SIZE_MAX)
		cJSON_AddNumberToObject(o, "weak_hosts", (double)weak);
	cJSON_AddItemToObject(o, "seed", seed_json(S->seed0));
	seeds = cJSON_AddArrayToObject(o, "seeds");
	for (size_t s = 0; s < S->nseeds; s++)
		cJSON_AddItemToArray(seeds, seed_json(S->seed0 + (long)s));
	cJSON_AddStringToObject(o, "baseline",
				tp_policy_name(S->runs[b].policy));
	/* null when no topoplace policy ran: the budget bounds none */
	if (S->topoplace)
		cJSON_AddNumberToObject(o, "price_budget", S->pp->price_budget);
	else
		cJSON_AddNullToObject(o, "price_budget");
	if (S->weights)
		cJSON_AddStringToObject(o, "slurm_weights", S->weights);
	else
		cJSON_AddNullToObject(o, "slurm_weights");
	cJSON_AddBoolToObject(o, "nics_by_rate",
			      tp_cost_ctx_params(S->ctx)->nics_by_rate);
	/* the count null without the option: 0 would say it changed none */
	cJSON_AddBoolToObject(o, "deflate_runs", S->deflate);
	if (S->deflate)
		cJSON_AddNumberToObject(o, "runs_deflated",
					(double)S->deflated);
	else
		cJSON_AddNullToObject(o, "runs_deflated");
	/* Slurm's records: what the header says was left out, under trace
	 * --json's names; null for a CSV or synthetic trace */
	const tp_trace_t *t = &S->traces[0];
	cJSON *left;
	if (S->one_trace && strcmp(t->format, "csv") &&
	    (left = cJSON_AddObjectToObject(o, "left_out"))) {
		cJSON_AddNumberToObject(left, "no_gpu", (double)t->left_nogpu);
		cJSON_AddNumberToObject(left, "not_run", (double)t->left_unrun);
		cJSON_AddNumberToObject(left, "steps", (double)t->left_steps);
		cJSON_AddNumberToObject(left, "ended_before_start",
					(double)t->left_backwards);
		cJSON_AddNumberToObject(o, "eligible_later",
					(double)t->eligible_later);
		cJSON_AddNumberToObject(o, "repeated", (double)t->repeated);
	} else {
		cJSON_AddNullToObject(o, "left_out");
		cJSON_AddNullToObject(o, "eligible_later");
		cJSON_AddNullToObject(o, "repeated");
	}
	/* false under TOPOPLACE_COLL_SHM=0: host phases priced as rings */
	cJSON_AddBoolToObject(o, "host_segment",
			      !tp_cost_ctx_params(S->ctx)->host_ring);
	pol = cJSON_AddObjectToObject(o, "policies");
	for (size_t p = 0; p < S->npol; p++) {
		/* the first seed's full metrics, then means and ratios */
		cJSON *m = metrics_json(&S->runs[p].res, S->runs[p].wall_s);
		cJSON *mean = cJSON_AddObjectToObject(m, "mean");
		for (size_t k = 0;
		     k < sizeof(mean_fields) / sizeof(mean_fields[0]); k++)
			cJSON_AddNumberToObject(mean, mean_fields[k].name,
						seed_mean(S, p,
							  mean_fields[k].multi
							      ? get_multi_field
							      : get_field,
							  mean_fields[k].off));
		cJSON_AddNumberToObject(mean, "top_level_tb_per_hour",
					seed_mean(S, p, get_top_tb_h, 0));
		cJSON *ps = cJSON_AddArrayToObject(m, "per_seed");
		for (size_t s = 0; s < S->nseeds; s++) {
			const run_t *r = &S->runs[s * S->npol + p];
			cJSON *e = cJSON_CreateObject();
			cJSON_AddItemToObject(e, "seed",
					      seed_json(S->seed0 + (long)s));
			cJSON_AddNumberToObject(e, "mean_jct_s",
						r->res.mean_jct_s);
			cJSON_AddNumberToObject(e, "useful_util",
						r->res.useful_util);
			/* null in a seed without multi-node jobs */
			cJSON_AddNumberToObject(
			    e, "comm_slowdown_mean",
			    get_multi_field(
				&r->res,
				offsetof(tp_sim_result_t, comm_slowdown_mean)));
			cJSON_AddItemToArray(ps, e);
		}
		cJSON *all = ratio_json(S, p, b, -1, x);
		cJSON_AddItemToObject(
		    m, "jct_ratio_mean",
		    cJSON_Duplicate(cJSON_GetObjectItem(all, "jct_ratio_mean"),
				    false));
		cJSON_AddItemToObject(
		    m, "jct_ratio_se",
		    cJSON_Duplicate(cJSON_GetObjectItem(all, "jct_ratio_se"),
				    false));
		cJSON_AddStringToObject(
		    m, "verdict",
		    cJSON_GetObjectItem(all, "verdict")->valuestring);
		cJSON_Delete(all);
		cJSON *cl = cJSON_AddArrayToObject(m, "by_size");
		for (int c = 0; c < TP_SIM_NCLASSES; c++) {
			cJSON *e = ratio_json(S, p, b, c, x);
			cJSON_AddStringToObject(e, "hosts",
						tp_sim_class_name(c));
			cJSON_AddNumberToObject(
			    e, "jobs_per_seed",
			    seed_mean(S, p, get_class_jobs, (size_t)c));
			cJSON_AddItemToArray(cl, e);
		}
		cJSON_AddItemToObject(pol, tp_policy_name(S->runs[p].policy),
				      m);
	}
	tp_cli_put_json(o);
}

/* The main job's fabric: where placement matters as on real clusters. */
static tp_err_t builtin_fabric(tp_fabric_t **f_p)
{
	tp_gen_fat_tree_t g;

	tp_gen_fat_tree_defaults(&g);
	g.leaves = 8;
	g.hosts_per_leaf = 8;
	g.gpus_per_host = 8;
	g.nics_per_host = 8;
	g.spines = 4;
	g.uplinks_per_spine = 8; /* 64 NICs down, 32 cables up: 2:1 */
	g.degrade = 0.05;
	g.degrade_seed = 1;
	return tp_gen_fat_tree(&g, f_p);
}

/* Its degraded cables, counted once (25 of the 768 cables missing, 24
 * at 2 lanes of 4); test_generate checks the counts. */
#define BUILTIN_NAME                                                           \
	"built-in 2:1 fat tree 8 leaves x 8 hosts x 8 GPUs, 1 NIC/GPU, 25 of " \
	"768 cables down and 24 at half width"

static const char *policy_list(char *plist, const tp_policy_t **pol,
			       size_t *n_p)
{
	bool any = plist[strspn(plist, ", \t")] != '\0';

	for (char *tok = plist, *next; tok; tok = next) {
		if ((next = strchr(tok, ',')))
			*next++ = '\0';
		tok = tp_strtrim(tok);
		/* "a,,b" is a typo, as `place --request` says of its items */
		if (!*tok)
			return any ? "(an empty item" : "(no policy named";
		const tp_policy_t *p = tp_policy_find(tok);
		if (!p)
			return tok;
		for (size_t i = 0; i < *n_p; i++)
			if (pol[i] == p)
				return "(a policy named twice";
		if (*n_p == 16)
			return "(more than 16 policies";
		pol[(*n_p)++] = p;
	}
	return *n_p ? NULL : "(no policy named";
}

/* What the command line asks for. */
typedef struct sim_args {
	tp_cli_args_t a;
	const char *trace, *synth, *svg, *basename;
	const char *synth_opt; /* --jobs or --load, given */
	const char *weights;   /* --slurm-weights */
	char *plist; /* owned */
	long njobs, seed, nseeds;
	long price_budget; /* -1: the policy parameters' default */
	bool nics_by_rate; /* tp_cost_params_t's */
	bool deflate;	   /* tp_trace_deflate a Slurm trace */
	double load;
} sim_args_t;

/* The options into *o; false when the command ends here, with *rc its
 * exit code (--help, or a bad option: its line printed). */
static bool sim_options(int argc, char **argv, sim_args_t *o, int *rc)
{
	static const struct option opts[] = {
	    {"fabric", required_argument, NULL, TP_CLI_OPT_FABRIC},
	    {"trace", required_argument, NULL, 't'},
	    {"synthetic", required_argument, NULL, 'y'},
	    {"jobs", required_argument, NULL, 'n'},
	    {"seed", required_argument, NULL, 's'},
	    {"seeds", required_argument, NULL, 'S'},
	    {"load", required_argument, NULL, 'l'},
	    {"policies", required_argument, NULL, 'p'},
	    {"baseline", required_argument, NULL, 'b'},
	    {"price-budget", required_argument, NULL, 'B'},
	    {"nics-by-rate", no_argument, NULL, 'N'},
	    {"deflate-runs", no_argument, NULL, 'D'},
	    {"slurm-weights", required_argument, NULL, 'W'},
	    {"json", no_argument, NULL, TP_CLI_OPT_JSON},
	    {"svg", required_argument, NULL, 'g'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	bool ok = true;

	*rc = TP_EXIT_INPUT;
	optind = 1;
	while (ok && (c = tp_cli_getopt(argc, argv, "h", opts, &o->a)) != -1) {
		switch (c) {
		case 't':
			o->trace = optarg;
			break;
		case 'y':
			o->synth = optarg;
			break;
		case 'n':
			ok = tp_cli_int("--jobs", optarg, 1, 10000000,
					&o->njobs);
			o->synth_opt = "--jobs";
			break;
		case 's':
			ok =
			    tp_cli_int("--seed", optarg, 0, SEED_MAX, &o->seed);
			break;
		case 'S':
			ok = tp_cli_int("--seeds", optarg, 1, 1000, &o->nseeds);
			break;
		case 'l':
			ok =
			    tp_cli_double("--load", optarg, 0.01, 10, &o->load);
			o->synth_opt = "--load";
			break;
		case 'p':
			tp_free(o->plist);
			if (!(o->plist = tp_strdup(optarg))) {
				*rc = TP_EXIT_FAIL;
				return false;
			}
			break;
		case 'b':
			o->basename = optarg;
			break;
		case 'B':
			ok = tp_cli_int("--price-budget", optarg, 0,
					TP_PRICE_BUDGET_MAX, &o->price_budget);
			break;
		case 'N':
			o->nics_by_rate = true;
			break;
		case 'D':
			o->deflate = true;
			break;
		case 'W':
			o->weights = optarg;
			break;
		case 'g':
			o->svg = optarg;
			break;
		}
	}
	if (!ok)
		return false;
	if (o->a.exit >= 0) {
		*rc = o->a.exit;
		return false;
	}
	if (optind < argc) {
		tp_cli_err("simulate: unexpected argument '%s'", argv[optind]);
		return false;
	}
	if (o->trace && o->synth) {
		tp_cli_err("simulate: give --trace or --synthetic, not both");
		return false;
	}
	if (o->trace && o->synth_opt) {
		tp_cli_err("simulate: %s shapes a synthetic trace; --trace %s "
			   "brings its own jobs",
			   o->synth_opt, o->trace);
		return false;
	}
	/* the report (table or JSON) takes stdout: an SVG after it would
	 * leave neither readable */
	if (o->svg && !strcmp(o->svg, "-")) {
		tp_cli_err("simulate: --svg -: the report%s goes to stdout; "
			   "give the SVG a file",
			   o->a.json ? " (--json)" : "");
		return false;
	}
	if (o->svg && tp_cli_check_output("simulate: --svg", o->svg)) {
		*rc = TP_EXIT_FAIL;
		return false;
	}
	if (o->deflate && !o->trace) {
		tp_cli_err("simulate: --deflate-runs needs --trace (Slurm's "
			   "records)");
		return false;
	}
	if (o->nseeds < 0)
		o->nseeds = o->trace ? 1 : DEFAULT_SEEDS;
	if (o->seed > SEED_MAX - (o->nseeds - 1)) {
		tp_cli_err("simulate: --seed %ld with %ld seeds runs to seed "
			   "%ld, above %ld (2^53, the largest a JSON number "
			   "holds exactly)",
			   o->seed, o->nseeds, o->seed + o->nseeds - 1,
			   SEED_MAX);
		return false;
	}
	if (!o->synth)
		o->synth = "llm";
	return true;
}

/* The policies o->plist names (this fabric's defaults when it names
 * none) into pol[0..*npol_p), with the baseline among them at *b_p
 * (added last when the list lacks it); TP_EXIT_OK or the exit code
 * (after an error line for a bad name). */
static int sim_policies(sim_args_t *o, const tp_fabric_t *f,
			const tp_policy_t **pol, size_t *npol_p, size_t *b_p)
{
	bool nvl = false;
	size_t npol = 0, b = SIZE_MAX;

	for (size_t d = 0; d < tp_fabric_nnvdomains(f); d++)
		nvl |= tp_fabric_nvdomain(f, d)->multi_node;
	if (!o->basename)
		o->basename = nvl ? "slurm-block" : "slurm-tree";
	if (!o->plist && !(o->plist = tp_strdup(nvl ? DEFAULT_POLICIES_NVL
						    : DEFAULT_POLICIES)))
		return TP_EXIT_FAIL;
	const char *bad = policy_list(o->plist, pol, &npol);
	if (bad && *bad == '(') {
		tp_cli_err("simulate: --policies: %s", bad + 1);
		return TP_EXIT_INPUT;
	} else if (bad) {
		tp_cli_err("simulate: unknown policy '%s' (%s)", bad,
			   tp_policy_names());
		return TP_EXIT_INPUT;
	}
	for (size_t i = 0; i < npol; i++)
		if (!strcmp(tp_policy_name(pol[i]), o->basename))
			b = i;
	if (b == SIZE_MAX) {
		if (!tp_policy_find(o->basename)) {
			tp_cli_err("simulate: unknown baseline '%s' (%s)",
				   o->basename, tp_policy_names());
			return TP_EXIT_INPUT;
		}
		if (npol == 16) {
			tp_cli_err(
			    "simulate: at most 16 policies with the baseline");
			return TP_EXIT_INPUT;
		}
		b = npol;
		pol[npol++] = tp_policy_find(o->basename);
	}
	*npol_p = npol;
	*b_p = b;
	return TP_EXIT_OK;
}

/* --deflate-runs: the trace's run times (Slurm's records) divided by
 * what their recorded hosts cost them, priced once with the run's cost
 * context and parameters; every seed holds the same file, so the other
 * seeds' copies take the first's. The count into S->deflated. An exit
 * code. */
static int deflate(const sim_args_t *o, const tp_fabric_t *f, sims_t *S)
{
	tp_trace_t *t = &S->traces[0];
	tp_err_t err;

	if (!tp_cli_trace_has_nodes("simulate: --deflate-runs", o->trace, t))
		return TP_EXIT_INPUT;
	if ((err = tp_trace_deflate(f, S->ctx, S->pp, t, &S->deflated))) {
		tp_cli_err("simulate: --deflate-runs: %s", tp_strerror(err));
		return tp_cli_exit_code(err);
	}
	return TP_EXIT_OK;
}

/* S's traces, one per seed (a CSV trace loaded once, into traces[0]:
 * trace_of), and its runs' policies; TP_EXIT_OK or the exit code after
 * an error line. */
static int sim_traces(const sim_args_t *o, const tp_fabric_t *f,
		      const tp_policy_t *const *pol, sims_t *S)
{
	int gph = 0;
	tp_err_t err;

	for (size_t h = 0; h < tp_fabric_nhosts(f); h++)
		if ((int)tp_fabric_host(f, h)->ngpus > gph)
			gph = (int)tp_fabric_host(f, h)->ngpus;
	S->max_host_gpus = gph;
	S->traces = tp_calloc(S->nseeds, sizeof(tp_trace_t));
	S->runs = tp_calloc(S->nseeds * S->npol, sizeof(run_t));
	if (!S->traces || !S->runs)
		return TP_EXIT_FAIL;
	S->one_trace = o->trace != NULL;
	for (size_t s = 0; s < S->nseeds; s++) {
		for (size_t p = 0; p < S->npol; p++)
			S->runs[s * S->npol + p].policy = pol[p];
		if (o->trace) {
			char *msg = NULL;
			if (s) /* the one file serves every seed */
				continue;
			if ((err = tp_trace_load(o->trace, &S->traces[s],
						 &msg))) {
				tp_cli_err("%s", msg ? msg : tp_strerror(err));
				tp_free(msg);
				return tp_cli_exit_code(err);
			}
		} else if ((err = tp_trace_synthetic(
				o->synth, (size_t)o->njobs,
				(uint64_t)o->seed + s,
				(int)tp_fabric_total_gpus(f), gph, o->load,
				&S->traces[s]))) {
			tp_cli_err("simulate: synthetic trace: %s",
				   tp_strerror(err));
			return tp_cli_exit_code(err);
		}
	}
	return TP_EXIT_OK;
}

/* The header and the table (or the JSON) of a finished run. */
static void sim_report(const sim_args_t *o, const tp_fabric_t *f,
		       const sims_t *S, const tp_policy_t *base, size_t b,
		       double *x)
{
	const char *fname = o->a.fabric ? o->a.fabric : BUILTIN_NAME;
	const char *tname = o->trace ? o->trace : o->synth;

	if (o->a.json) {
		print_json(S, b, x, fname, tname,
			   o->trace ? NULL
				    : tp_trace_synthetic_source(o->synth));
		return;
	}
	size_t weak = tp_cli_weak_hosts(f);
	printf("fabric %s: %zu hosts, %zu GPUs", fname, tp_fabric_nhosts(f),
	       tp_fabric_total_gpus(f));
	if (weak && weak != SIZE_MAX)
		printf(", %zu weakly cabled (a ring runs at its weakest host's "
		       "pace)",
		       weak);
	const tp_trace_t *t = &S->traces[0];
	printf("\ntrace %s: %zu job%s", tname, t->njobs, tp_cli_s(t->njobs));
	if (o->trace && strcmp(t->format, "csv")) {
		printf(
		    " from %s (left out %zu without GPUs, %zu that never "
		    "ran%s",
		    t->format, t->left_nogpu, t->left_unrun + t->left_backwards,
		    t->left_backwards ? " or ended before they started" : "");
		if (t->left_steps) /* as trace counts them */
			printf(", %zu job step%s", t->left_steps,
			       tp_cli_s(t->left_steps));
		printf(")");
		if (t->eligible_later)
			printf("; %zu arriving when eligible, after submit",
			       t->eligible_later);
		if (t->repeated)
			printf("; %zu repeated record%s read once", t->repeated,
			       tp_cli_s(t->repeated));
	}
	if (o->deflate)
		printf("; %zu run time%s deflated by what %s hosts cost "
		       "%s",
		       S->deflated, tp_cli_s(S->deflated),
		       S->deflated == 1 ? "its" : "their",
		       S->deflated == 1 ? "it" : "them");
	printf("; seeds %ld-%ld; baseline %s", o->seed, o->seed + o->nseeds - 1,
	       tp_policy_name(base));
	if (batched(S))
		printf("; error bars: the jackknife's over %d batches of "
		       "consecutive jobs (one trace: they may read narrow)",
		       BATCHES);
	if (S->topoplace)
		printf("; topoplace prices up to %.0f sets a decision",
		       S->pp->price_budget);
	if (tp_cost_ctx_params(S->ctx)->nics_by_rate)
		printf("; NICs loaded by rate (NCCL)");
	if (S->weights)
		printf("; Slurm's node weights: %s", S->weights);
	if (S->weights && !strcmp(S->weights, "health"))
		printf(" (Weight=%d on the weakly cabled hosts)",
		       TP_NODE_WEIGHT_WEAK);
	if (tp_cost_ctx_params(S->ctx)->host_ring)
		printf("; host phases as rings (TOPOPLACE_COLL_SHM=0)");
	printf("\n\n");
	print_table(S, b, x);
}

/* Every policy on every seed's trace, then the report (and the SVG);
 * the exit code. */
static int sim_run(const sim_args_t *o, tp_fabric_t *f, sims_t *S,
		   const tp_policy_t *base, size_t b, double *x)
{
	const char *fname = o->a.fabric ? o->a.fabric : BUILTIN_NAME;
	const char *tname = o->trace ? o->trace : o->synth;
	tp_cost_ctx_t *ctx;
	tp_cost_params_t cp;
	tp_policy_params_t pp;
	uint32_t *w = NULL;
	tp_err_t err;
	int rc = TP_EXIT_INPUT;

	tp_cli_cost_params(&cp);
	cp.nics_by_rate = o->nics_by_rate;
	if ((err = tp_cost_ctx_create(f, &cp, &ctx))) {
		tp_cli_err("simulate: cost model: %s", tp_strerror(err));
		return tp_cli_exit_code(err);
	}
	tp_policy_params_defaults(&pp);
	if (o->price_budget >= 0)
		pp.price_budget = (double)o->price_budget;
	if (o->weights &&
	    !(w = tp_cli_node_weights("simulate: --slurm-weights", f, NULL,
				      o->weights, &rc))) {
		tp_cost_ctx_destroy(ctx);
		return rc;
	}
	pp.node_weight = w;
	pp.nnode_weight = w ? tp_fabric_nhosts(f) : 0;
	S->weights = o->weights;
	S->deflate = o->deflate;
	S->f = f;
	S->ctx = ctx;
	S->pp = &pp;
	if (o->deflate && (rc = deflate(o, f, S)) != TP_EXIT_OK) {
		/* said */
	} else if ((err = sims_run(S))) {
		tp_cli_err("simulate: policy %s, seed %ld: %s",
			   tp_policy_name(S->runs[S->err_at].policy),
			   o->seed + (long)(S->err_at / S->npol),
			   tp_strerror(err));
		rc = tp_cli_exit_code(err);
	} else if (report_unplaceable(S, tname,
				      o->a.fabric ? o->a.fabric : "built-in")) {
		sim_report(o, f, S, base, b, x);
		rc = o->svg
			 ? write_svg(o->svg, S->runs, S->npol, fname, tname,
				     o->trace
					 ? NULL
					 : tp_trace_synthetic_source(o->synth),
				     S->traces[0].njobs, o->seed)
			 : TP_EXIT_OK;
	}
	S->ctx = NULL;
	S->pp = NULL;
	tp_cost_ctx_destroy(ctx);
	tp_free(w);
	return rc;
}

int tp_cmd_simulate(int argc, char **argv)
{
	sim_args_t o = {.a = {.usage = usage},
			.njobs = 2000,
			.seed = 1,
			.nseeds = -1,
			.price_budget = -1,
			.load = 0.9};
	int rc = TP_EXIT_INPUT;
	tp_fabric_t *f = NULL;
	const tp_policy_t *pol[16];
	size_t npol = 0, b = SIZE_MAX;
	sims_t S;
	double *x = NULL;
	tp_err_t err;

	memset(&S, 0, sizeof(S));
	if (!sim_options(argc, argv, &o, &rc))
		goto out;
	if (o.a.fabric) {
		if (!(f = tp_cli_load(o.a.fabric, &rc)))
			goto out;
	} else if ((err = builtin_fabric(&f))) {
		tp_cli_err("simulate: built-in fabric: %s", tp_strerror(err));
		rc = TP_EXIT_FAIL;
		goto out;
	}
	if ((rc = sim_policies(&o, f, pol, &npol, &b)) != TP_EXIT_OK)
		goto out;
	rc = TP_EXIT_INPUT;
	/* a budget nothing spends would read in the JSON as if it had */
	bool tpl = false;
	for (size_t p = 0; p < npol; p++)
		tpl |= !strcmp(tp_policy_name(pol[p]), "topoplace");
	S.topoplace = tpl;
	if (o.price_budget >= 0 && !tpl) {
		tp_cli_err("simulate: --price-budget %ld bounds the topoplace "
			   "policy, which neither --policies nor --baseline "
			   "names",
			   o.price_budget);
		goto out;
	}
	if (!tp_fabric_total_gpus(f)) {
		tp_cli_err("simulate: %s: the fabric has no GPUs (discover "
			   "with --gpus-per-host N or node data)",
			   o.a.fabric ? o.a.fabric : "built-in");
		goto out;
	}
	if (!o.trace && !tp_trace_synthetic_source(o.synth)) {
		tp_cli_err("simulate: unknown synthetic trace '%s' (%s)",
			   o.synth, tp_trace_synthetic_names());
		goto out;
	}
	S.nseeds = (size_t)o.nseeds;
	S.npol = npol;
	S.seed0 = o.seed;
	if (!(x = tp_calloc(S.nseeds + BATCHES + 1, sizeof(double)))) {
		rc = TP_EXIT_FAIL;
		goto out;
	}
	if ((rc = sim_traces(&o, f, pol, &S)) == TP_EXIT_OK)
		rc = sim_run(&o, f, &S, pol[b], b, x);
out:
	for (size_t i = 0; S.runs && i < S.nseeds * S.npol; i++)
		tp_sim_result_free(&S.runs[i].res);
	for (size_t s = 0; S.traces && s < S.nseeds; s++)
		tp_trace_free(&S.traces[s]);
	tp_free(S.runs);
	tp_free(S.traces);
	tp_free(x);
	tp_fabric_destroy(f);
	tp_free(o.plist);
	return rc;
}
