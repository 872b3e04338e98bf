/*
 * Placement decision time: topoplace vs the slurm-tree model, same
 * fabric, same fragmented state, same requests, same run.
 *
 * Fabrics: fat trees of 2,048 hosts (16,384 GPUs) and 16,384 hosts, with
 * 50% of GPUs busy in a fragmented state (random jobs of random sizes on
 * random hosts); the 2,048-host one again with 5% of its links at half
 * health in the state (as a LinkState file reports bad cables).
 * Requests: a mix of multi-node (2-64 hosts x 8 GPUs) and single-node
 * (1-8 GPUs) jobs. Two decision times per request, each on the wall
 * clock and on the thread's CPU clock (other processes' load shows on
 * the first only; on a loaded machine compare CPU figures):
 *  - choose(): the policy's choose() alone (tp_placement_t.decision_s),
 *    the cost model always at hand and the library's PriceBudget (96),
 *    as `topoplace simulate` reports it (with a workspace kept over
 *    the decisions, as the simulator keeps one);
 *  - as slurmctld: the whole tp_place_choose_ws() call the 24.11 plugin
 *    times, with one workspace kept over the decisions as the plugin
 *    keeps it (offers, choose(), the answer check, ring order, spans), with
 *    the plugin's default PriceBudget (8) and the cost model, which
 *    slurmctld prices with on healthy links too (since 2026-12-03).
 * The prediction reported with a placement afterwards is in neither.
 * Usage: bench_place [N [--fabric FABRIC.json] [--link-state FILE]]
 *   N: decisions per policy (default 2000). --fabric: that fabric only
 *   (e.g. a 2,048-host ibsim walk) instead of the generated ones.
 *   --link-state: a topoplace-state/1 file (the monitor's) whose links are
 *   re-read before a decision whenever the file changed (inode, size or
 *   mtime), as the 24.11 plugin's LinkState= does off the decision path:
 *   the re-read is timed apart, not in the decision time.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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

/* The link-state file as the plugin follows it. */
typedef struct links_file {
	const char *path;
	struct stat sig;
	size_t reloads, bad;
	double reload_s;
} links_file_t;

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* topology_topoplace's PriceBudget default (plugin/conf.c) */
#define PLUGIN_PRICE_BUDGET 8

/* Re-read lf's links into s when the file changed. */
static void links_refresh(const tp_fabric_t *f, tp_state_t *s, links_file_t *lf)
{
	struct stat st;
	tp_state_t *file = NULL;
	char *why = NULL;
	double t0 = now_s();

	if (!lf->path || stat(lf->path, &st) ||
	    (st.st_ino == lf->sig.st_ino && st.st_size == lf->sig.st_size &&
	     st.st_mtim.tv_sec == lf->sig.st_mtim.tv_sec &&
	     st.st_mtim.tv_nsec == lf->sig.st_mtim.tv_nsec))
		return;
	lf->sig = st;
	if (tp_state_load_json(f, lf->path, &file, &why)) {
		lf->bad++;
		tp_free(why);
		return;
	}
	for (uint32_t l = 0; l < tp_fabric_nlinks(f); l++)
		tp_state_set_link(s, l, tp_state_link_health(file, l),
				  tp_state_link_background(file, l));
	tp_state_destroy(file);
	lf->reloads++;
	lf->reload_s += now_s() - t0;
}

/* Percentiles of one series of decision times (sorts t). */
typedef struct pct {
	double p50, p99;
} pct_t;

static pct_t pct_of(double *t, size_t m)
{
	pct_t p = {0, 0};

	qsort(t, m, sizeof(double), dcmp);
	if (m) {
		p.p50 = t[m / 2];
		p.p99 = t[(size_t)(0.99 * (double)(m - 1))];
	}
	return p;
}

/* What one policy's decisions cost, on two clocks (wall, this thread's
 * CPU: the load of other processes shows on the first only). */
enum { T_CHOOSE, T_CHOOSE_CPU, T_CTLD, T_CTLD_CPU, NT };

typedef struct times {
	double *t[NT];
	size_t m;
	pct_t p[NT];
} times_t;

/* The request mix: half multi-node (2-64 hosts x 8 GPUs), half 1-8 GPUs. */
static tp_request_t next_request(uint64_t *x)
{
	tp_request_t r = {0};

	if (rnd(x) % 2) {
		r.nodes = 2 << (rnd(x) % 6);
		r.gpus_per_node = 8;
	} else {
		r.gpus = 1 + (int)(rnd(x) % 8);
	}
	return r;
}

/* n decisions of pol: choose() as the simulator reports it (the
 * library's default PriceBudget, the cost model always at hand, the
 * simulator's kept workspace sim_ws), then
 * the same request as the 24.11 plugin decides it: the whole
 * tp_place_choose_ws() call (offers, choose(), answer check, ring order,
 * spans) with the plugin's kept workspace ws, its default PriceBudget
 * and the cost model. */
static void decide(const tp_policy_t *pol, tp_state_t *s,
		   const tp_cost_ctx_t *ctx, tp_place_ws_t *sim_ws,
		   tp_place_ws_t *ws, size_t n, links_file_t *lf, times_t *tm)
{
	const tp_fabric_t *f = tp_state_fabric(s);
	tp_policy_params_t pp, ctld;
	uint64_t x = 7;

	tp_policy_params_defaults(&pp);
	ctld = pp;
	ctld.price_budget = PLUGIN_PRICE_BUDGET;
	tm->m = 0;
	for (size_t i = 0; i < n; i++) {
		tp_request_t r = next_request(&x);
		tp_placement_t pl;
		size_t m = tm->m;
		if (lf)
			links_refresh(f, s, lf);
		if (tp_place_run_ws(pol, s, &r, &pp, ctx, i, sim_ws, &pl) !=
		    TP_OK)
			continue;
		tm->t[T_CHOOSE][m] = pl.decision_s;
		tm->t[T_CHOOSE_CPU][m] = pl.decision_cpu_s;
		tp_placement_free(&pl);
		double w0 = clock_s(CLOCK_MONOTONIC);
		double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		if (tp_place_choose_ws(pol, s, &r, &ctld, ctx, 1, ws, &pl) !=
		    TP_OK)
			continue;
		tm->t[T_CTLD_CPU][m] = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		tm->t[T_CTLD][m] = clock_s(CLOCK_MONOTONIC) - w0;
		tp_placement_free(&pl);
		tm->m++;
	}
	for (int k = 0; k < NT; k++)
		tm->p[k] = pct_of(tm->t[k], tm->m);
}

/* A share of the links at half health, as a monitor's LinkState file
 * reports bad cables: slurmctld then prices. */
static void sicken(const tp_fabric_t *f, tp_state_t *s, double share)
{
	uint64_t x = 99;

	for (uint32_t l = 0; l < tp_fabric_nlinks(f); l++)
		if ((double)(rnd(&x) % 1000) < share * 1000)
			tp_state_set_link(s, l, 0.5, 0);
}

/* Decisions on f (consumed); lf may be NULL; sick: see sicken(). */
static int bench(tp_fabric_t *f, size_t n, const char *label, FILE *js,
		 bool last, links_file_t *lf, double sick)
{
	const char *names[] = {"topoplace", "slurm-tree"};
	times_t tm[2];
	bool ok = true;

	tp_state_t *s = tp_state_create(f);
	fragment(f, s, 42);
	sicken(f, s, sick);
	tp_cost_params_t cp;
	tp_cost_ctx_t *ctx = NULL;
	tp_cost_params_defaults(&cp);
	if (tp_cost_ctx_create(f, &cp, &ctx)) {
		fprintf(stderr, "bench_place: cost model failed\n");
		return 1;
	}
	/* the simulator's and the plugin's, kept over their decisions */
	tp_place_ws_t *sim_ws = tp_place_ws_create();
	tp_place_ws_t *ws = tp_place_ws_create();
	ok = sim_ws && ws;
	for (int k = 0; k < 2; k++)
		for (int c = 0; c < NT; c++)
			ok &= !!(tm[k].t[c] = malloc(n * sizeof(double)));
	for (int k = 0; k < 2 && ok; k++) {
		const pct_t *p = tm[k].p;
		decide(tp_policy_find(names[k]), s, ctx, sim_ws, ws, n, lf,
		       &tm[k]);
		printf("%-22s %-11s decisions %5zu  p50 %8.3f ms  p99 %8.3f ms"
		       "  (CPU p50 %.3f p99 %.3f)\n",
		       label, names[k], tm[k].m, p[T_CHOOSE].p50 * 1e3,
		       p[T_CHOOSE].p99 * 1e3, p[T_CHOOSE_CPU].p50 * 1e3,
		       p[T_CHOOSE_CPU].p99 * 1e3);
		printf("%-22s %-11s   as slurmctld (PriceBudget 8): p50 %8.3f "
		       "ms  p99 %8.3f ms  (CPU p50 %.3f p99 %.3f)\n",
		       label, names[k], p[T_CTLD].p50 * 1e3,
		       p[T_CTLD].p99 * 1e3, p[T_CTLD_CPU].p50 * 1e3,
		       p[T_CTLD_CPU].p99 * 1e3);
	}
	const pct_t *a = tm[0].p, *b = tm[1].p;
	double w0 = a[T_CHOOSE].p99, w1 = b[T_CHOOSE].p99;
	double c0 = a[T_CHOOSE_CPU].p99, c1 = b[T_CHOOSE_CPU].p99;
	printf("%-22s topoplace/slurm-tree p99 ratio %.2f (CPU %.2f)\n", label,
	       w1 > 0 ? w0 / w1 : 0, c1 > 0 ? c0 / c1 : 0);
	if (lf && lf->path)
		printf("%-22s link state re-read %zu times (%zu unreadable), "
		       "mean %.3f ms each (not in the decision time)\n",
		       label, lf->reloads, lf->bad,
		       lf->reloads ? lf->reload_s / (double)lf->reloads * 1e3
				   : 0);
	fprintf(js,
		"  \"%s\": {\"hosts\": %zu, \"topoplace_p50_ms\": %.4f, "
		"\"topoplace_p99_ms\": %.4f, "
		"\"slurm_tree_p50_ms\": %.4f, \"slurm_tree_p99_ms\": %.4f, "
		"\"p99_ratio\": %.3f, \"topoplace_cpu_p50_ms\": %.4f, "
		"\"topoplace_cpu_p99_ms\": %.4f, \"slurm_tree_cpu_p99_ms\": "
		"%.4f, \"topoplace_ctld_p99_ms\": %.4f, "
		"\"topoplace_ctld_cpu_p99_ms\": %.4f, "
		"\"slurm_tree_ctld_cpu_p99_ms\": %.4f, "
		"\"link_state_reloads\": %zu}%s\n",
		label, tp_fabric_nhosts(f), a[T_CHOOSE].p50 * 1e3, w0 * 1e3,
		b[T_CHOOSE].p50 * 1e3, w1 * 1e3, w1 > 0 ? w0 / w1 : 0,
		a[T_CHOOSE_CPU].p50 * 1e3, c0 * 1e3, c1 * 1e3,
		a[T_CTLD].p99 * 1e3, a[T_CTLD_CPU].p99 * 1e3,
		b[T_CTLD_CPU].p99 * 1e3, lf ? lf->reloads : 0, last ? "" : ",");
	for (int k = 0; k < 2; k++)
		for (int c = 0; c < NT; c++)
			free(tm[k].t[c]);
	tp_place_ws_destroy(sim_ws);
	tp_place_ws_destroy(ws);
	tp_cost_ctx_destroy(ctx);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	return ok ? 0 : 1;
}

static tp_fabric_t *fat_tree(int hosts_per_leaf, int leaves, int spines)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;

	tp_gen_fat_tree_defaults(&p);
	p.leaves = leaves;
	p.spines = spines;
	p.hosts_per_leaf = hosts_per_leaf;
	p.uplinks_per_spine = 1;
	if (tp_gen_fat_tree(&p, &f))
		fprintf(stderr, "bench_place: generator failed\n");
	return f;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)atol(argv[1]) : 2000;
	const char *fabric = NULL;
	links_file_t lf = {0};
	tp_fabric_t *f;
	char *buf, *why = NULL;
	size_t len;
	FILE *js;

	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--fabric"))
			fabric = argv[i + 1];
		else if (!strcmp(argv[i], "--link-state"))
			lf.path = argv[i + 1];
		else
			return 2;
	}
	if (!n || (argc > 2 && argc % 2) || !(js = open_memstream(&buf, &len)))
		return 2;
	fprintf(js, "{\n");
	if (fabric) {
		if (tp_fabric_load_json(fabric, &f, &why)) {
			fprintf(stderr, "bench_place: %s\n",
				why ? why : fabric);
			return 2;
		}
		if (bench(f, n, "fabric", js, true, &lf, 0))
			return 1;
	} else if (!(f = fat_tree(32, 64, 16)) ||
		   bench(f, n, "fat-tree-2048-hosts", js, false, &lf, 0) ||
		   !(f = fat_tree(32, 64, 16)) ||
		   bench(f, n, "fat-tree-2048-sick5", js, false, &lf, 0.05) ||
		   !(f = fat_tree(32, 512, 32)) ||
		   bench(f, n, "fat-tree-16384-hosts", js, true, &lf, 0)) {
		return 1;
	}
	fprintf(js, "}\n");
	fclose(js);
	printf("goal: p99 < 1 ms at 2,048 hosts, < 10 ms at 16,384 hosts (50%% "
	       "of GPUs busy)\n%s",
	       buf);
	free(buf);
	return 0;
}
