/*
 * Peak memory of the SPANK plugin's step start (spank_topoplace.c
 * step_start) on the largest generated fabric, 16,384 hosts with 8 GPUs
 * and 8 HCAs each (runtime/test_step_mem_16k), and on 2,048 such hosts
 * (runtime/test_step_mem), each a step over every host, the 2,048-host
 * one priced with the cost model as the plugin's default
 * PlanPriceMaxHosts does, the 16k one not; and on the 16k fabric the
 * largest step that default prices (2,048 hosts x 8): at most 64 MB,
 * since it runs as root in slurmstepd
 * on nodes that jobs share. The same core calls in the same order as the
 * plugin, with a step over every host, run in a fresh process (this
 * program again, execed), which reports its own peak RSS (VmHWM: the
 * rusage of a child counts the parent's pages it was forked with). A
 * second run gives the hostile step environment the issue found: a
 * client-written SLURM_STEP_NODELIST of 1 MiB that would expand to a
 * million 255-byte names, which the plugin's count against Slurm's node
 * count must refuse before building anything.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp_test.h"

#include "tp_runtime.h"

#define LIMIT_KB       (64 * 1024)
/* topoplace.conf's PlanPriceMaxHosts default (plugin/conf.c; cli.sh
 * checks that config --dump says the same) */
#define PRICE_MAX_HOSTS 2048
#define HOSTS_PER_LEAF 32
/* 512 leaves: 16,384 hosts (runtime/test_step_mem_16k); 64: 2,048 hosts
 * (runtime/test_step_mem, with the hostile node list) */
#ifndef TP_STEP_LEAVES
#define TP_STEP_LEAVES 512
#endif
#define LEAVES TP_STEP_LEAVES

#if defined(__SANITIZE_ADDRESS__)
#define TP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_ASAN 1
#endif
#endif

static char dir[64];
static size_t links_listed; /* links the LinkState file lists */

/* ---- the measured side (argv: --step FABRIC SYSFS NNODES) ---- */

/* step_start's work, in its order, on the step in NODELIST_FILE (as
 * getenv_dup reads it: the whole value in memory) with TASKS per node. */
static int step(const char *fabric_path, const char *sysfs, uint32_t nnodes,
		const char *nodelist_file, const char *tpn,
		const char *state_path)
{
	tp_state_t *links = NULL;
	char **names = NULL, *msg = NULL, *json = NULL, *nodelist = NULL;
	uint32_t *counts = NULL;
	size_t n = 0, len, id;
	tp_fabric_t *f = NULL;
	tp_plan_t *plan = NULL;
	tp_hca_map_t *hcas = NULL;
	tp_cost_ctx_t *ctx = NULL;
	tp_cost_params_t cp;
	tp_step_env_t env = {0};
	tp_step_in_t in;
	uint64_t ranks = 0;
	int rc = 1;

	if (tp_file_read(nodelist_file, &nodelist, &len))
		return 2;
	/* counted (bounded, nothing built) and held to Slurm's node count
	 * before it is expanded */
	if (tp_hostlist_count(nodelist, &n) || !n || n > nnodes) {
		tp_free(nodelist);
		return 3; /* refused, as the plugin does */
	}
	if (tp_hostlist_expand(nodelist, &names, &n))
		goto out;
	id = n - 1;
	if (!(counts = tp_calloc(n, sizeof(*counts))) ||
	    tp_step_tasks_parse(tpn, counts, n) ||
	    tp_fabric_load_json(fabric_path, &f, &msg))
		goto out;
	for (size_t i = 0; i < n; i++)
		ranks += counts[i];
	tp_cost_params_defaults(&cp);
	/* LinkState, read where the plan is priced (the plugin's
	 * step_links), before the cost model's context */
	if (n <= PRICE_MAX_HOSTS && *state_path &&
	    tp_state_load_json_capped(f, state_path, TP_STEP_LINKSTATE_MAX,
				      &links, &msg))
		goto out;
	if (n <= PRICE_MAX_HOSTS && tp_cost_ctx_create(f, &cp, &ctx))
		goto out;
	if (tp_plan_build_step(f, ctx, links, (const char *const *)names, n,
			       counts, false, &plan, &msg))
		goto out;
	tp_state_destroy(links); /* as the plugin: once the plan is built */
	links = NULL;
	/* priced: predict() marks a plan predicted before it prices */
	if (ctx && isnan(tp_plan_predict_s(plan, 0, TP_ALGO_RING))) {
		fprintf(stderr, "step: %llu tasks, not priced\n",
			(unsigned long long)ranks);
		goto out;
	}
	tp_cost_ctx_destroy(ctx); /* as the plugin: once the plan is built */
	ctx = NULL;
	if (tp_hca_map_read(f, names[id], sysfs, &hcas))
		goto out;
	in = (tp_step_in_t){
	    .hosts = (const char *const *)names,
	    .tasks = counts,
	    .n = n,
	    .node_id = id,
	    .ntasks = ranks,
	    .fabric_rails = tp_fabric_rails(f),
	    .plan_path = "/run/topoplace/job1/plan-step0.json",
	    .hca_map = hcas,
	};
	tp_fabric_destroy(f); /* as the plugin: before the plan's text */
	f = NULL;
	if (tp_plan_step_env(plan, &in, &env, &msg) ||
	    tp_plan_to_json(plan, &json))
		goto out;
	rc = 0;
out:
	if (msg)
		fprintf(stderr, "step: %s\n", msg);
	tp_step_env_free(&env);
	tp_state_destroy(links);
	tp_hca_map_destroy(hcas);
	tp_cost_ctx_destroy(ctx);
	tp_free(json);
	tp_free(msg);
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
	tp_free(counts);
	tp_hostlist_free(names, n);
	tp_free(nodelist);
	return rc;
}

/* This process's peak RSS in KiB (VmHWM), -1 when unknown. */
static long peak_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *fp = fopen("/proc/self/status", "r");

	while (fp && fgets(line, sizeof(line), fp))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	if (fp)
		fclose(fp);
	return kb;
}

/* argv: --step FABRIC SYSFS NNODES NODELIST_FILE TASKS STATE (""
 * without LinkState): the step's exit status; the peak RSS on stdout. */
static int step_main(char **argv)
{
	int rc = step(argv[2], argv[3], (uint32_t)strtoul(argv[4], NULL, 10),
		      argv[5], argv[6], argv[7]);

	printf("%ld\n", peak_kb());
	return rc;
}

/* ---- the measuring side ---- */

/* Run the step in a fresh process; its exit status, and its peak RSS in
 * KiB into *kb_p. */
static int measure(const char *nodelist, const char *tasks, uint32_t nnodes,
		   bool with_links, long *kb_p)
{
	char fabric[128], sysfs[128], list[128], nn[16], self[4096];
	char links[128] = "";
	char out[64] = "";
	int fd[2], st;
	ssize_t len;
	FILE *fp;
	pid_t pid;

	snprintf(fabric, sizeof(fabric), "%s/fabric.json", dir);
	snprintf(sysfs, sizeof(sysfs), "%s/sys", dir);
	snprintf(list, sizeof(list), "%s/nodelist", dir);
	snprintf(nn, sizeof(nn), "%u", nnodes);
	if (with_links)
		snprintf(links, sizeof(links), "%s/links.json", dir);
	assert_non_null(fp = fopen(list, "w"));
	fputs(nodelist, fp);
	assert_int_equal(fclose(fp), 0);
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(len > 0);
	self[len] = '\0';
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		execl(self, self, "--step", fabric, sysfs, nn, list, tasks,
		      links, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	len = read(fd[0], out, sizeof(out) - 1);
	close(fd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_true(len > 0);
	*kb_p = strtol(out, NULL, 10);
	assert_true(*kb_p > 0);
	return WEXITSTATUS(st);
}

static int setup(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;
	char path[128];
	int rc;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tp-stepmem-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/sys", dir);
	mkdir(path, 0755); /* no class/infiniband: nothing maps */
	tp_gen_fat_tree_defaults(&p);
	p.leaves = LEAVES;
	p.spines = 32;
	p.hosts_per_leaf = HOSTS_PER_LEAF;
	p.uplinks_per_spine = 1;
	p.gpus_per_host = 8;
	p.nics_per_host = 0; /* one per GPU, as DGX H100-class hosts */
	if (tp_gen_fat_tree(&p, &f))
		return -1;
	snprintf(path, sizeof(path), "%s/fabric.json", dir);
	rc = tp_fabric_save_json(f, path) ? -1 : 0;
	/* the largest LinkState a step's start reads: as many links listed,
	 * degraded and loaded, as fit in TP_STEP_LINKSTATE_MAX bytes (from
	 * 90% of it up), or every link of a smaller fabric */
	char *json = NULL;
	FILE *fp;
	size_t nl = tp_fabric_nlinks(f), k = nl;
	for (int tries = 0; !rc && tries < 8; tries++) {
		tp_state_t *s = tp_state_create(f);
		tp_free(json);
		json = NULL;
		for (size_t l = 0; s && !rc && l < k; l++)
			rc = tp_state_set_link(s, (uint32_t)l, 0.5, 1) ? -1 : 0;
		if (!rc && (!s || tp_state_to_json(s, &json)))
			rc = -1;
		tp_state_destroy(s);
		size_t len = json ? strlen(json) : 0;
		if (rc || (len <= TP_STEP_LINKSTATE_MAX &&
			   (k == nl || len >= TP_STEP_LINKSTATE_MAX / 10 * 9)))
			break;
		/* scale to 95% of the cap */
		k = (size_t)((double)k * 0.95 * (double)TP_STEP_LINKSTATE_MAX /
			     (double)len);
		if (k > nl)
			k = nl;
	}
	if (!rc && (!json || strlen(json) > TP_STEP_LINKSTATE_MAX))
		rc = -1;
	links_listed = k;
	snprintf(path, sizeof(path), "%s/links.json", dir);
	if (!rc &&
	    (!(fp = fopen(path, "w")) || fputs(json, fp) < 0 || fclose(fp)))
		rc = -1;
	tp_free(json);
	tp_fabric_destroy(f);
	return rc;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A step over the fabric's first n hosts (0: all), tpn tasks each, with
 * the largest LinkState or none, held to the limit. */
static void step_of(size_t n, unsigned tpn, bool with_links)
{
	char path[128], tasks[32], *nodelist;
	const char **names;
	tp_fabric_t *f = NULL;
	size_t all;
	long kb = 0;

	snprintf(path, sizeof(path), "%s/fabric.json", dir);
	assert_int_equal(tp_fabric_load_json(path, &f, NULL), TP_OK);
	all = tp_fabric_nhosts(f);
	assert_int_equal(all, LEAVES * HOSTS_PER_LEAF);
	if (!n)
		n = all;
	assert_true(n <= all);
	names = tp_calloc(n, sizeof(*names));
	assert_non_null(names);
	for (size_t h = 0; h < n; h++)
		names[h] = tp_fabric_host(f, h)->name;
	nodelist = tp_hostlist_compress(names, n);
	assert_non_null(nodelist);
	tp_free(names);
	tp_fabric_destroy(f);

	snprintf(tasks, sizeof(tasks), "%u(x%zu)", tpn, n);
	assert_int_equal(measure(nodelist, tasks, (uint32_t)n, with_links, &kb),
			 0);
	printf("# step start on %zu of %zu hosts x %u tasks (%s", n, all, tpn,
	       n <= PRICE_MAX_HOSTS ? "priced" : "by rule");
	if (with_links)
		printf(", a LinkState of %zu links, the largest it reads",
		       links_listed);
	printf("): peak RSS %ld KiB (limit %d)\n", kb, LIMIT_KB);
	tp_free(nodelist);
	if (kb > LIMIT_KB)
		fail_msg("peak RSS %ld KiB over %d KiB", kb, LIMIT_KB);
}

static void test_whole_fabric(void **state)
{
	(void)state;
#ifdef TP_ASAN
	skip(); /* the sanitizer's shadow memory is no plugin's */
#endif
	step_of(0, 8, false);
}

#if TP_STEP_LEAVES < 512
/* ... and with a LinkState listing every link of the fabric, which the
 * plugin reads where it prices the plan (on 2,048 hosts, priced). */
static void test_whole_fabric_links(void **state)
{
	(void)state;
#ifdef TP_ASAN
	skip();
#endif
	step_of(0, 8, true);
}
#endif

#if TP_STEP_LEAVES >= 512
/* The largest step the default PlanPriceMaxHosts prices, on the largest
 * fabric: 2,048 hosts x 8. */
static void test_priced(void **state)
{
	(void)state;
#ifdef TP_ASAN
	skip();
#endif
	step_of(PRICE_MAX_HOSTS, 8, false);
}

static void test_priced_links(void **state)
{
	(void)state;
#ifdef TP_ASAN
	skip();
#endif
	step_of(PRICE_MAX_HOSTS, 8, true);
}
#endif

#if TP_STEP_LEAVES < 512
static void test_hostile_nodelist(void **state)
{
	size_t len = (size_t)1 << 20;
	char *hostile;
	long kb = 0;

	(void)state;
#ifdef TP_ASAN
	skip(); /* before the allocation: skip() does not return */
#endif
	hostile = malloc(len + 1);
	assert_non_null(hostile);
	/* 1 MiB, as much as getenv_dup takes: 200-byte prefixes, each
	 * with [000000-999999] (ranges of 206-byte names) */
	memset(hostile, 'a', len);
	for (size_t o = 0; o + 216 <= len; o += 216)
		memcpy(hostile + o + 200, "[000000-999999],", 16);
	hostile[len] = '\0';
	assert_int_equal(measure(hostile, "1", 16384, false, &kb), 3);
	printf("# hostile SLURM_STEP_NODELIST (1 MiB): refused, peak RSS %ld "
	       "KiB\n",
	       kb);
	free(hostile);
	if (kb > LIMIT_KB)
		fail_msg("peak RSS %ld KiB over %d KiB", kb, LIMIT_KB);
}
#endif

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_fabric),
#if TP_STEP_LEAVES < 512 /* once is enough */
		cmocka_unit_test(test_hostile_nodelist),
		/* the whole step is priced here: LinkState read */
		cmocka_unit_test(test_whole_fabric_links),
#else
		cmocka_unit_test(test_priced),
		cmocka_unit_test(test_priced_links),
#endif
	};

	if (argc == 8 && !strcmp(argv[1], "--step"))
		return step_main(argv);
	return cmocka_run_group_tests(tests, setup, teardown);
}
