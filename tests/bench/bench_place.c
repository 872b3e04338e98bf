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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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

/* Decisions on f (consumed); lf may be NULL. */
static int bench(tp_fabric_t *f, size_t n, const char *label, FILE *js,
		 bool last, links_file_t *lf)
{
	tp_policy_params_t pp;
	const char *names[] = {"topoplace", "slurm-tree"};
	double p99[2], p50[2];

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
			if (lf)
				links_refresh(f, s, lf);
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
		"\"p99_ratio\": %.3f, \"link_state_reloads\": %zu}%s\n",
		label, tp_fabric_nhosts(f), p50[0] * 1e3, p99[0] * 1e3,
		p50[1] * 1e3, p99[1] * 1e3, p99[1] > 0 ? p99[0] / p99[1] : 0,
		lf ? lf->reloads : 0, last ? "" : ",");
	free(t);
	tp_cost_ctx_destroy(ctx);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	return 0;
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
		if (bench(f, n, "fabric", js, true, &lf))
			return 1;
	} else if (!(f = fat_tree(32, 64, 16)) ||
		   bench(f, n, "fat-tree-2048-hosts", js, false, &lf) ||
		   !(f = fat_tree(32, 512, 32)) ||
		   bench(f, n, "fat-tree-16384-hosts", js, true, &lf)) {
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
