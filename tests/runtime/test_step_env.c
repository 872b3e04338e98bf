/*
 * A Slurm step's ranks and environment (tp_plan_step_env and friends),
 * without Slurm: the values the SPANK plugin sets, checked against what
 * the plan says and against the layouts Slurm hands a step. The names
 * and values are the ones tests/integration/slurm_spank.sh checks on a
 * real cluster.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tp_test.h"
#include "tp_test_fabric.h"

#include "tp_runtime.h"

#define PATH "/run/topoplace/job7/plan-step0.json"

static const char *name(const tp_fabric_t *f, size_t h)
{
	return tp_fabric_host(f, h)->name;
}

static tp_step_in_t step(const char *const *hosts, const uint32_t *tasks,
			 size_t n, size_t id, uint64_t ntasks, int rails)
{
	return (tp_step_in_t){.hosts = hosts,
			      .tasks = tasks,
			      .n = n,
			      .node_id = id,
			      .ntasks = ntasks,
			      .fabric_rails = rails,
			      .plan_path = PATH};
}

/* SLURM_STEP_TASKS_PER_NODE's compressed form, and what it refuses. */
static void test_tasks_parse(void **state)
{
	uint32_t c[4];

	(void)state;
	assert_int_equal(tp_step_tasks_parse("4(x2),2,1", c, 4), TP_OK);
	assert_int_equal(c[0], 4);
	assert_int_equal(c[1], 4);
	assert_int_equal(c[2], 2);
	assert_int_equal(c[3], 1);
	assert_int_equal(tp_step_tasks_parse("3(x4)", c, 4), TP_OK);
	assert_int_equal(c[3], 3);
	assert_int_equal(tp_step_tasks_parse("8", c, 1), TP_OK);
	assert_int_equal(c[0], 8);
	/* too few, too many, malformed; then digits only, as Slurm writes
	 * them: strtoul alone would take leading white space (a line break
	 * the plugin's error line would then print), signs, and "-1"
	 * wrapped round */
	static const struct {
		const char *s;
		size_t n;
	} bad[] = {
	    {"4(x2)", 3},  {"4(x4)", 3},  {"", 1},     {"x", 1},
	    {"4(x0)", 1},  {"4(x", 1},	  {"4;2", 2},  {"99999999999", 1},
	    {"\n1", 1},	   {"1,\n2", 2},  {"+1", 1},   {"-0", 1},
	    {"1(x 2)", 2}, {"1(x+2)", 2}, {"2,2,", 2}, {"2(x2),", 2},
	    {"2,", 1},	   {",2", 1},	  {"2,,2", 2}, {"4(x1)(x2)", 2}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c[0] = c[1] = c[2] = c[3] = 77;
		if (tp_step_tasks_parse(bad[i].s, c, bad[i].n) != TP_ERR_PARSE)
			fail_msg("'%s' over %zu hosts was not refused",
				 bad[i].s, bad[i].n);
		/* outputs only on success */
		for (size_t k = 0; k < 4; k++)
			if (c[k] != 77)
				fail_msg("'%s' wrote counts[%zu] = %u",
					 bad[i].s, k, c[k]);
	}
	assert_int_equal(tp_step_tasks_parse(NULL, c, 1), TP_ERR_INVAL);
}

/* More tasks on a host than a plan gives one (srun --overcommit -n 5000
 * -N1): TP_ERR_RANGE, which the plugin says at info level and skips the
 * step on, not TP_ERR_INVAL, which it logs as an error; up to the limit
 * the plan is built. */
static void test_step_over_cap(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree_il(2, 2, 1);
	const char *hosts[2] = {name(f, 0), name(f, 1)};
	uint32_t over[2] = {1, TP_PLAN_MAX_HOST_RANKS + 1};
	uint32_t at[2] = {TP_PLAN_MAX_HOST_RANKS, 1};
	tp_plan_t *plan = NULL;
	char *msg = NULL, want[128];

	(void)state;
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2, over,
					    false, &plan, &msg),
			 TP_ERR_RANGE);
	assert_null(plan);
	assert_non_null(strstr(msg, "4096"));
	tp_free(msg);
	msg = NULL;
	assert_int_equal(tp_step_tasks_check(hosts, over, 2, &msg),
			 TP_ERR_RANGE);
	snprintf(want, sizeof(want),
		 "4097 tasks on %s, more than a plan's 4096 a host: no plan "
		 "for it",
		 hosts[1]);
	assert_string_equal(msg, want);
	tp_free(msg);
	msg = NULL;
	assert_int_equal(tp_step_tasks_check(hosts, at, 2, &msg), TP_OK);
	assert_null(msg);
	assert_int_equal(
	    tp_plan_build_step(f, NULL, NULL, hosts, 2, at, false, &plan, NULL),
	    TP_OK);
	assert_int_equal(tp_plan_world_size(plan), TP_PLAN_MAX_HOST_RANKS + 1);
	tp_plan_destroy(plan);
	assert_int_equal(tp_step_tasks_check(NULL, at, 2, NULL), TP_ERR_INVAL);
	tp_fabric_destroy(f);
}

/* One HCA per host on a fat tree: the plan file, node rank = the host's
 * ring position, world size, "=mlx5_0"-style HCA list, no
 * NCCL_CROSS_NIC, no topology file; every host's rank base is the tasks
 * of the hosts before it in the ring, so ranks cover 0 .. world-1 once.
 * The pairs come in the plugin's order. */
static void test_env_fat_tree(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree_il(2, 4, 8);
	const char *hosts[8];
	uint32_t tasks[8];
	tp_plan_t *plan = NULL;
	bool seen[16] = {false};

	(void)state;
	for (size_t i = 0; i < 8; i++) {
		hosts[i] = name(f, i);
		tasks[i] = 2;
	}
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 8, tasks,
					    false, &plan, NULL),
			 TP_OK);
	/* uniform tasks: the plan's ranks are the step's */
	assert_int_equal(tp_plan_world_size(plan), 16);
	for (size_t id = 0; id < 8; id++) {
		tp_step_in_t in = step(hosts, tasks, 8, id, 16, 1);
		tp_step_env_t env;
		const tp_plan_host_t *ph =
		    tp_plan_host(plan, tp_plan_rank_of(plan, hosts[id]));
		char want[64];

		assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL),
				 TP_OK);
		assert_int_equal(env.node_rank, ph->node_rank);
		assert_int_equal(env.rank_base, 2 * ph->node_rank);
		assert_int_equal(env.rank_base, ph->first_rank);
		assert_int_equal(env.world, 16);
		assert_int_equal(env.nvars, 4);
		assert_string_equal(env.vars[0].name, "TOPOPLACE_PLAN");
		assert_string_equal(env.vars[0].value, PATH);
		assert_string_equal(env.vars[1].name, "TOPOPLACE_NODE_RANK");
		snprintf(want, sizeof(want), "%u", ph->node_rank);
		assert_string_equal(env.vars[1].value, want);
		assert_string_equal(env.vars[2].name, "TOPOPLACE_WORLD_SIZE");
		assert_string_equal(env.vars[2].value, "16");
		assert_string_equal(env.vars[3].name, "NCCL_IB_HCA");
		snprintf(want, sizeof(want), "=%s", ph->hcas[0]);
		assert_string_equal(env.vars[3].value, want);
		assert_null(tp_step_env_get(&env, "NCCL_CROSS_NIC"));
		assert_null(tp_step_env_get(&env, "NCCL_TOPO_FILE"));
		for (uint32_t l = 0; l < 2; l++) {
			uint32_t r = tp_step_task_rank(&env, l);
			assert_true(r < 16);
			assert_false(seen[r]);
			seen[r] = true;
		}
		tp_step_env_free(&env);
		assert_int_equal(env.nvars, 0);
	}
	tp_step_env_free(NULL);
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
}

/* Uneven tasks per node: the plan gives each host as many ranks as it
 * runs tasks, so its ranks are the step's: the base follows the ring
 * over the step's real counts and is the plan host's first rank (the
 * plan had one rank per GPU and 16 ranks, which libtopoplace-coll then
 * refused against TOPOPLACE_WORLD_SIZE=10). A topology file is passed
 * through. */
static void test_env_uneven(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree_il(2, 2, 4);
	const char *hosts[4];
	uint32_t tasks[4] = {3, 1, 4, 2};
	tp_plan_t *plan = NULL;

	(void)state;
	for (size_t i = 0; i < 4; i++)
		hosts[i] = name(f, i);
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 4, tasks,
					    false, &plan, NULL),
			 TP_OK);
	assert_int_equal(tp_plan_world_size(plan), 10);
	for (size_t id = 0; id < 4; id++) {
		tp_step_in_t in = step(hosts, tasks, 4, id, 10, 1);
		tp_step_env_t env;
		uint32_t want = 0;

		in.topo_file = "/etc/nccl/topo.xml";
		for (size_t r = 0; r < tp_plan_rank_of(plan, hosts[id]); r++)
			for (size_t i = 0; i < 4; i++)
				if (!strcmp(hosts[i],
					    tp_plan_host(plan, r)->name))
					want += tasks[i];
		assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL),
				 TP_OK);
		assert_int_equal(env.rank_base, want);
		assert_int_equal(tp_step_task_rank(&env, 1), want + 1);
		const tp_plan_host_t *ph =
		    tp_plan_host(plan, tp_plan_rank_of(plan, hosts[id]));
		assert_int_equal(ph->first_rank, want);
		assert_int_equal(ph->nranks, tasks[id]);
		assert_string_equal(
		    tp_step_env_get(&env, "TOPOPLACE_WORLD_SIZE"), "10");
		assert_string_equal(tp_step_env_get(&env, "NCCL_TOPO_FILE"),
				    "/etc/nccl/topo.xml");
		assert_string_equal(env.vars[env.nvars - 1].name,
				    "NCCL_TOPO_FILE");
		tp_step_env_free(&env);
	}
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
}

/* Rails: every HCA in rail order, exact names; NCCL_CROSS_NIC 0 on a
 * rail-optimized fabric, 1 for several HCAs on one fat tree (the fabric's
 * rails as the input says). Tasks beyond the GPUs: the plan has them all
 * (the step's ranks), those past a host's GPUs without one. */
static void test_env_rails(void **state)
{
	tp_fabric_t *f = tp_test_rail(2, 2, 4, 1, 8);
	const char *hosts[4];
	uint32_t tasks[4] = {16, 16, 16, 16};
	tp_plan_t *plan = NULL;
	tp_step_env_t env;
	tp_step_in_t in;
	const tp_plan_host_t *ph;
	tp_strbuf_t want = {0};

	(void)state;
	for (size_t i = 0; i < 4; i++)
		hosts[i] = name(f, i);
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 4, tasks,
					    false, &plan, NULL),
			 TP_OK);
	assert_int_equal(tp_plan_world_size(plan), 64);
	assert_int_equal(tp_plan_nrails(plan), 4);
	assert_int_equal(tp_plan_host(plan, 0)->nranks, 16);
	assert_int_equal(tp_plan_host(plan, 0)->ranks[7].gpu, 7);
	assert_int_equal(tp_plan_host(plan, 0)->ranks[8].gpu, -1);
	in = step(hosts, tasks, 4, 2, 64, tp_fabric_rails(f));
	assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL), TP_OK);
	ph = tp_plan_host(plan, tp_plan_rank_of(plan, hosts[2]));
	for (int r = 0; r < 4; r++)
		tp_strbuf_printf(&want, "%s%s", r ? "," : "=", ph->hcas[r]);
	assert_string_equal(tp_step_env_get(&env, "NCCL_IB_HCA"), want.buf);
	assert_string_equal(tp_step_env_get(&env, "NCCL_CROSS_NIC"), "0");
	assert_int_equal(env.rank_base, 16 * ph->node_rank);
	tp_step_env_free(&env);
	in.fabric_rails = 1;
	assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL), TP_OK);
	assert_string_equal(tp_step_env_get(&env, "NCCL_CROSS_NIC"), "1");
	tp_step_env_free(&env);
	tp_free(want.buf);
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
}

/* Two subnets (plafrim2: the gateway 'bright' has a CA on each, miriel066
 * on the first only): bright's NCCL_IB_HCA leaves out its CA on the
 * subnet miriel066 is not on, and NCCL_CROSS_NIC is 0 (no NIC reaches
 * another subnet); alone in a step it lists both. */
static void test_env_subnets(void **state)
{
	static const char *const pair[] = {"bright", "miriel066"};
	static const uint32_t tasks[] = {1, 1};
	TP_FIXTURE_OR_SKIP(s0, "ib/hwloc-netloc/plafrim2/"
			       "ib-subnet-fe80_0000_0000_0000.txt");
	char *first = tp_strdup(s0); /* the fixture path's buffer is reused */
	TP_FIXTURE_OR_SKIP(s1, "ib/hwloc-netloc/plafrim2/"
			       "ib-subnet-fe80_0000_0000_0001.txt");
	tp_fabric_t *f = tp_fabric_create();
	tp_plan_t *plan = NULL;
	tp_step_env_t env;

	(void)state;
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, first), TP_OK);
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, s1), TP_OK);
	tp_free(first);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nsubnets(f), 2);
	for (size_t n = 2; n >= 1; n--) {
		tp_step_in_t in =
		    step(pair, tasks, n, 0, n, tp_fabric_rails(f));
		in.fabric_subnets = tp_fabric_nsubnets(f);
		assert_int_equal(tp_plan_build_step(f, NULL, NULL, pair, n,
						    tasks, false, &plan, NULL),
				 TP_OK);
		assert_int_equal(tp_plan_nrails(plan), 2);
		assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL),
				 TP_OK);
		const tp_plan_host_t *ph =
		    tp_plan_host(plan, tp_plan_rank_of(plan, "bright"));
		char want[64];
		if (n == 2)
			snprintf(want, sizeof(want), "=%s", ph->hcas[0]);
		else
			snprintf(want, sizeof(want), "=%s,%s", ph->hcas[0],
				 ph->hcas[1]);
		assert_string_equal(tp_step_env_get(&env, "NCCL_IB_HCA"), want);
		assert_string_equal(tp_step_env_get(&env, "NCCL_CROSS_NIC"),
				    "0");
		tp_step_env_free(&env);
		tp_plan_destroy(plan);
	}
	tp_fabric_destroy(f);
}

/* Two subnets, two CAs of each host on each: NCCL_IB_HCA lists all four
 * (it listed one a subnet), however few ranks use them; with a host on
 * the first subnet only, the second's stay out. */
static void test_env_subnet_hcas(void **state)
{
	tp_fabric_t *f = tp_test_subnets(2, 3, 2, 1);
	static const char *const both[] = {"host1", "host2"};
	static const char *const lone[] = {"host1", "host3"};
	static const uint32_t tasks[] = {1, 1};
	const char *const *hosts[] = {both, lone};
	static const char *const want[2][2] = {
	    {"=mlx5_0,mlx5_1,mlx5_2,mlx5_3", "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"},
	    {"=mlx5_0,mlx5_1", "=mlx5_0,mlx5_1"}};

	(void)state;
	assert_int_equal(tp_fabric_rails(f), 2);
	for (int c = 0; c < 2; c++) {
		tp_plan_t *plan = NULL;
		assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts[c], 2,
						    tasks, false, &plan, NULL),
				 TP_OK);
		for (size_t id = 0; id < 2; id++) {
			tp_step_in_t in =
			    step(hosts[c], tasks, 2, id, 2, tp_fabric_rails(f));
			tp_step_env_t env;
			in.fabric_subnets = tp_fabric_nsubnets(f);
			assert_int_equal(
			    tp_plan_step_env(plan, &in, &env, NULL), TP_OK);
			assert_string_equal(
			    tp_step_env_get(&env, "NCCL_IB_HCA"), want[c][id]);
			assert_string_equal(
			    tp_step_env_get(&env, "NCCL_CROSS_NIC"), "0");
			tp_step_env_free(&env);
		}
		tp_plan_destroy(plan);
	}
	tp_fabric_destroy(f);
}

/* A plan whose HCA names NCCL_IB_HCA cannot carry (':' reads as a port,
 * ',' and '=' as separators): they are left out, the others listed. */
static void test_env_bad_hca_names(void **state)
{
	tp_fabric_t *f = tp_test_rail(1, 2, 2, 1, 2);
	const char *hosts[2] = {name(f, 0), name(f, 1)};
	const char *bad[] = {"x:1", "a,b", "=y", "^z", "a b"};
	uint32_t tasks[2] = {2, 2};
	tp_plan_t *plan = NULL;
	char want[64];

	(void)state;
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2, tasks,
					    false, &plan, NULL),
			 TP_OK);
	const tp_plan_host_t *ph =
	    tp_plan_host(plan, tp_plan_rank_of(plan, hosts[0]));
	assert_int_equal(tp_plan_nrails(plan), 2);
	snprintf(want, sizeof(want), "=%s", ph->hcas[1]);
	for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
		tp_step_in_t in = step(hosts, tasks, 2, 0, 4, 2);
		tp_step_env_t env;
		/* as a plan file could name it (the arena is writable) */
		((const char **)ph->hcas)[0] = bad[b];
		assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL),
				 TP_OK);
		assert_string_equal(tp_step_env_get(&env, "NCCL_IB_HCA"), want);
		tp_step_env_free(&env);
	}
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
}

/* The errors the plugin logs instead of touching the environment. */
static void test_env_errors(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree_il(2, 2, 1);
	const char *hosts[4], *other[4];
	uint32_t tasks[4] = {1, 1, 1, 1};
	tp_plan_t *plan = NULL;
	tp_step_env_t env;
	tp_step_in_t in;
	char *err = NULL;

	(void)state;
	for (size_t i = 0; i < 4; i++)
		hosts[i] = other[i] = name(f, i);
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 3, tasks,
					    false, &plan, NULL),
			 TP_OK);
	/* the step has 4 tasks by its counts, Slurm says 5 */
	in = step(hosts, tasks, 3, 0, 5, 1);
	assert_int_equal(tp_plan_step_env(plan, &in, &env, &err), TP_ERR_RANGE);
	assert_string_equal(err, "tasks per node give 3 tasks, the step has 5");
	tp_free(err);
	err = NULL;
	/* a plan host missing from the step */
	other[1] = hosts[3];
	in = step(other, tasks, 3, 0, 3, 1);
	assert_int_equal(tp_plan_step_env(plan, &in, &env, &err),
			 TP_ERR_NOTFOUND);
	assert_non_null(strstr(err, "not in step"));
	tp_free(err);
	err = NULL;
	/* this host outside the plan */
	in = step(hosts, tasks, 4, 3, 3, 1);
	assert_int_equal(tp_plan_step_env(plan, &in, &env, &err),
			 TP_ERR_NOTFOUND);
	assert_non_null(strstr(err, "not in its own plan"));
	tp_free(err);
	err = NULL;
	/* ... even when the step's counts add up: the missing host, not
	 * the task counts, is what the plugin must name */
	in = step(hosts, tasks, 4, 3, 4, 1);
	assert_int_equal(tp_plan_step_env(plan, &in, &env, &err),
			 TP_ERR_NOTFOUND);
	assert_string_equal(err, "node004 not in its own plan");
	tp_free(err);
	err = NULL;
	/* another step host outside the plan: named, not a count error */
	in = step(hosts, tasks, 4, 0, 4, 1);
	assert_int_equal(tp_plan_step_env(plan, &in, &env, &err),
			 TP_ERR_NOTFOUND);
	assert_string_equal(err, "step host node004 not in the plan");
	tp_free(err);
	err = NULL;
	/* more ranks than uint32_t holds: the rank bases would wrap onto
	 * each other's ranks */
	{
		const uint32_t huge[3] = {UINT32_MAX, UINT32_MAX, 1};
		in = step(hosts, huge, 3, 2, 2 * (uint64_t)UINT32_MAX + 1, 1);
		assert_int_equal(tp_plan_step_env(plan, &in, &env, &err),
				 TP_ERR_RANGE);
		assert_string_equal(err, "8589934591 tasks: more than "
					 "4294967295 ranks");
		tp_free(err);
		err = NULL;
	}
	in = step(hosts, tasks, 3, 0, 3, 1);
	in.hosts = (const char *const[]){hosts[0], NULL, hosts[2]};
	assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL), TP_ERR_INVAL);
	/* bad arguments */
	in = step(hosts, tasks, 3, 3, 3, 1);
	assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL), TP_ERR_INVAL);
	in = step(hosts, tasks, 3, 0, 3, 1);
	in.plan_path = NULL;
	assert_int_equal(tp_plan_step_env(plan, &in, &env, NULL), TP_ERR_INVAL);
	assert_int_equal(tp_plan_step_env(NULL, &in, &env, NULL), TP_ERR_INVAL);
	assert_null(tp_step_env_get(NULL, "TOPOPLACE_PLAN"));
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
}

static int fail_after;
static void *fmalloc(size_t n)
{
	return fail_after-- > 0 ? malloc(n) : NULL;
}
static void *fcalloc(size_t n, size_t m)
{
	return fail_after-- > 0 ? calloc(n, m) : NULL;
}
static void *frealloc(void *p, size_t n)
{
	return fail_after-- > 0 ? realloc(p, n) : NULL;
}

/* Allocation failure anywhere: TP_ERR_NOMEM, nothing half-filled (ASan
 * checks that nothing leaks). */
static void test_env_nomem(void **state)
{
	tp_allocator_t a = {fmalloc, fcalloc, frealloc, free};
	tp_fabric_t *f = tp_test_rail(1, 2, 2, 1, 2);
	const char *hosts[2] = {name(f, 0), name(f, 1)};
	uint32_t tasks[2] = {2, 2};
	tp_plan_t *plan = NULL;
	int nomem = 0; /* the loop stops at the first success */

	(void)state;
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2, tasks,
					    false, &plan, NULL),
			 TP_OK);
	for (int k = 0;; k++) {
		tp_step_in_t in = step(hosts, tasks, 2, 1, 4, 2);
		tp_step_env_t env;
		tp_err_t err;

		in.topo_file = "/x.xml";
		memset(&env, 0x5a, sizeof(env));
		fail_after = k;
		tp_alloc_set(&a);
		err = tp_plan_step_env(plan, &in, &env, NULL);
		tp_alloc_set(NULL);
		if (!err) {
			assert_int_equal(env.nvars, 6);
			tp_step_env_free(&env);
			break;
		}
		assert_int_equal(err, TP_ERR_NOMEM);
		assert_int_equal(env.nvars, 0x5a5a5a5a5a5a5a5a);
		nomem++;
	}
	assert_true(nomem > 0);
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
}

/* ---- the node's own device names ---------------------------------------- */

#define C01 "a06-p1-dgx-02-c01"

/* <root>/class/infiniband/<dev>/node_guid = guid, as sysfs writes it. */
static void fake_dev(const char *root, const char *dev, uint64_t guid)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/class", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/class/infiniband", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/class/infiniband/%s", root, dev);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/node_guid", root,
		 dev);
	assert_non_null(fp = fopen(path, "w"));
	fprintf(fp, "%04x:%04x:%04x:%04x\n", (unsigned)(guid >> 48),
		(unsigned)(guid >> 32) & 0xffff,
		(unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
	fclose(fp);
}

static uint64_t guid_of(const tp_fabric_t *f, const char *dev)
{
	const tp_host_t *h = tp_fabric_host(f, tp_fabric_host_find(f, C01));

	for (size_t i = 0; i < h->ncas; i++)
		if (!strcmp(tp_fabric_ca(f, h->cas[i])->dev, dev))
			return tp_fabric_ca(f, h->cas[i])->guid;
	fail_msg("%s has no %s", C01, dev);
	return 0;
}

/* The step's pairs on C01 with the devices under root. */
static void env_with(const tp_fabric_t *f, const tp_plan_t *plan,
		     const char *root, tp_step_env_t *env)
{
	static const char *const hosts[] = {C01, "a06-p1-dgx-02-c02"};
	static const uint32_t tasks[] = {8, 8};
	tp_step_in_t in = step(hosts, tasks, 2, 0, 16, tp_fabric_rails(f));
	tp_hca_map_t *map = NULL;

	in.topo_file = "/etc/topoplace/nccl/" C01 ".xml";
	assert_int_equal(tp_hca_map_read(f, C01, root, &map), TP_OK);
	in.hca_map = map;
	assert_int_equal(tp_plan_step_env(plan, &in, env, NULL), TP_OK);
	tp_hca_map_destroy(map);
}

/* The real SuperPOD dump names its HCAs "HCA-1".."HCA-6" in node
 * descriptions; NCCL_IB_HCA must carry the node's mlx5_N found by GUID,
 * only those that exist, and nothing (nor a topology file) when none. */
static void test_env_local_hcas(void **state)
{
	static const char *const hosts[] = {C01, "a06-p1-dgx-02-c02"};
	TP_FIXTURE_OR_SKIP(dump,
			   "ib/NVIDIA-topograph/ibnetdiscover-example.out");
	char full[] = "/tmp/tp-sysfs-XXXXXX", part[] = "/tmp/tp-sysfs-XXXXXX";
	char none[] = "/tmp/tp-sysfs-XXXXXX", cmd[256];
	tp_fabric_t *f = tp_fabric_create();
	tp_plan_t *plan = NULL;
	tp_step_env_t env;
	tp_hca_map_t *map = NULL;
	const char *v;

	(void)state;
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, dump), TP_OK);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2, NULL,
					    false, &plan, NULL),
			 TP_OK);
	assert_non_null(mkdtemp(full));
	assert_non_null(mkdtemp(part));
	assert_non_null(mkdtemp(none));
	fake_dev(full, "mlx5_0", guid_of(f, "HCA-1"));
	fake_dev(full, "mlx5_1", guid_of(f, "HCA-2"));
	fake_dev(full, "mlx5_4", guid_of(f, "HCA-5"));
	fake_dev(full, "mlx5_5", guid_of(f, "HCA-6"));
	fake_dev(full, "mlx5_9", 0x0002c90300000001ull); /* not in the fabric */
	fake_dev(full, "bad,name", guid_of(f, "HCA-1")); /* never exported */
	fake_dev(part, "mlx5_1", guid_of(f, "HCA-2"));

	env_with(f, plan, full, &env);
	v = tp_step_env_get(&env, "NCCL_IB_HCA");
	assert_non_null(v);
	assert_null(strstr(v, "HCA-"));
	assert_null(strstr(v, "mlx5_9"));
	assert_null(strstr(v, "bad"));
	for (const char *d = "mlx5_0\0mlx5_1\0mlx5_4\0mlx5_5\0"; *d;
	     d += strlen(d) + 1)
		assert_non_null(strstr(v, d));
	assert_int_equal(strlen(v), strlen("=mlx5_0,mlx5_1,mlx5_4,mlx5_5"));
	/* the plan keeps the fabric's names (every rank checks it is the
	 * same plan): libtopoplace-coll gets the local ones of this host's
	 * ranks' HCAs (the dump has no GPUs: one rank, HCA-1) and of its
	 * HCAs in rail order (a task on another GPU may drive one:
	 * TOPOPLACE_COLL_HCA) beside it, each once */
	assert_string_equal(
	    tp_step_env_get(&env, "TOPOPLACE_COLL_HCA_NAMES"),
	    "HCA-1=mlx5_0,HCA-2=mlx5_1,HCA-5=mlx5_4,HCA-6=mlx5_5");
	assert_non_null(tp_step_env_get(&env, "NCCL_TOPO_FILE"));
	assert_false(env.hcas_unmapped);
	assert_int_equal(env.hcas_missing, 0);
	tp_step_env_free(&env);

	/* three of the four gone: counted, for the plugin's line */
	env_with(f, plan, part, &env);
	assert_string_equal(tp_step_env_get(&env, "NCCL_IB_HCA"), "=mlx5_1");
	assert_int_equal(env.hcas_missing, 3);
	assert_false(env.hcas_unmapped);
	tp_step_env_free(&env);

	/* the same CAs named by GUID alone (guid_map, their node
	 * descriptions the default ones): no device names in the fabric or
	 * the plan, the node's devices still found, by GUID and rail */
	{
		const tp_host_t *h =
		    tp_fabric_host(f, tp_fabric_host_find(f, C01));
		char *saved[16] = {NULL};
		tp_plan_t *gplan = NULL;
		assert_true(h->ncas <= 16);
		for (size_t i = 0; i < h->ncas; i++) {
			tp_ca_t *ca = (tp_ca_t *)tp_fabric_ca(f, h->cas[i]);
			saved[i] = ca->dev;
			ca->dev = NULL;
		}
		assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2,
						    NULL, false, &gplan, NULL),
				 TP_OK);
		env_with(f, gplan, full, &env);
		for (size_t i = 0; i < h->ncas; i++)
			((tp_ca_t *)tp_fabric_ca(f, h->cas[i]))->dev = saved[i];
		assert_string_equal(tp_step_env_get(&env, "NCCL_IB_HCA"),
				    "=mlx5_0,mlx5_1,mlx5_4,mlx5_5");
		assert_false(env.hcas_unmapped);
		tp_step_env_free(&env);
		tp_plan_destroy(gplan);
	}

	/* no InfiniBand device at all: neither HCAs nor a topology file */
	env_with(f, plan, none, &env);
	assert_null(tp_step_env_get(&env, "NCCL_IB_HCA"));
	assert_null(tp_step_env_get(&env, "NCCL_TOPO_FILE"));
	assert_non_null(tp_step_env_get(&env, "TOPOPLACE_PLAN"));
	assert_true(env.hcas_unmapped);
	tp_step_env_free(&env);

	/* an NCCL topology's root is <system>, not a <system...> found
	 * anywhere (a comment, an hwloc XML's own elements) */
	assert_true(tp_hca_map_topo_root_ok("<system version=\"1\"></system>"));
	assert_true(tp_hca_map_topo_root_ok(
	    "\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- node07 -->\n"
	    "<!DOCTYPE system>\n<system>\n</system>\n"));
	assert_true(tp_hca_map_topo_root_ok("\n\t<system/>"));
	assert_false(tp_hca_map_topo_root_ok(
	    "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">"
	    "<!-- <system> --></topology>"));
	assert_false(tp_hca_map_topo_root_ok("<!-- <system> -->"));
	assert_false(tp_hca_map_topo_root_ok("<systemd/>"));
	assert_false(tp_hca_map_topo_root_ok("<!-- unclosed <system>"));
	assert_false(tp_hca_map_topo_root_ok(""));
	assert_false(tp_hca_map_topo_root_ok(NULL));

	/* a topology file must name devices that are there */
	assert_int_equal(tp_hca_map_read(f, C01, part, &map), TP_OK);
	assert_int_equal(tp_hca_map_count(map), 1);
	assert_true(tp_hca_map_topo_ok(map, "<system version=\"1\"></system>"));
	assert_true(tp_hca_map_topo_ok(
	    map, "<nic>\n<net name=\"mlx5_1\" port=\"1\"/>\n</nic>"));
	assert_false(tp_hca_map_topo_ok(
	    map, "<net name=\"mlx5_1\"/><net name=\"mlx5_10\"/>"));
	assert_false(tp_hca_map_topo_ok(map, "<net name=\"mlx5_1"));
	/* a line break or tab ends the tag's name as a space does */
	assert_false(tp_hca_map_topo_ok(map, "<net\nname=\"mlx5_9\"/>"));
	assert_false(tp_hca_map_topo_ok(map, "<net\tname=\"mlx5_9\"/>"));
	assert_true(tp_hca_map_topo_ok(map, "<net\r\nname=\"mlx5_1\"/>"));
	assert_false(tp_hca_map_topo_ok(map, "<net/>"));
	assert_false(tp_hca_map_topo_ok(map, "<nic><net"));
	assert_true(tp_hca_map_topo_ok(map, "<network name=\"mlx5_9\"/>"));
	/* name="..." is the attribute NCCL reads, matched whole: not the
	 * tail of ifname= nor text inside another attribute's value */
	assert_false(tp_hca_map_topo_ok(
	    map, "<net ifname=\"mlx5_1\" name=\"mlx5_9\" dev=\"0\"/>"));
	assert_false(tp_hca_map_topo_ok(
	    map, "<net dev=\" name=\"mlx5_1\" name=\"mlx5_9\"/>"));
	assert_true(tp_hca_map_topo_ok(
	    map, "<net ifname=\"mlx5_9\"\n\tname=\"mlx5_1\" dev=\"0\"/>"));
	assert_false(tp_hca_map_topo_ok(map, "<net dev=\"0\"/>"));
	assert_false(tp_hca_map_topo_ok(map, "<net name=mlx5_1/>"));
	/* Azure's NCCL topology files (the fixtures): NDv2/v4/v5 list their
	 * NICs as PCI devices without a <net> (NCCL attaches its IB devices
	 * by bus id): taken; NCv4's names eth0 in a <nic> under a <cpu>, no
	 * device of this node's: refused */
	{
		static const struct {
			const char *file;
			bool ok;
		} azure[] = {{"ndv2-topo.xml", true},
			     {"ndv4-topo.xml", true},
			     {"ndv5-topo.xml", true},
			     {"ncv4-topo.xml", false}};
		for (size_t i = 0; i < sizeof(azure) / sizeof(azure[0]); i++) {
			char rel[128], *xml = NULL;
			size_t len;
			const char *path;
			snprintf(rel, sizeof(rel), "nccl/Azure-azhpc-images/%s",
				 azure[i].file);
			if (!(path = tp_test_fixture(rel)))
				continue; /* fixtures absent */
			assert_int_equal(tp_file_read(path, &xml, &len), TP_OK);
			assert_non_null(strstr(xml, "<system"));
			if (tp_hca_map_topo_ok(map, xml) != azure[i].ok)
				fail_msg("%s: taken %d, wanted %d", rel,
					 !azure[i].ok, azure[i].ok);
			tp_free(xml);
		}
	}
	tp_hca_map_destroy(map);
	assert_int_equal(tp_hca_map_read(f, "nohost", part, &map),
			 TP_ERR_NOTFOUND);

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s %s", full, part, none);
	assert_int_equal(system(cmd), 0);
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
}

/* The step's plan by NIC rate (NicsByRate=yes): the slow NIC's rank
 * weighs half on the step's tasks per host; without the flag, or on the
 * hosts without it, the plan splits evenly. */
static void test_step_nics_by_rate(void **state)
{
	tp_fabric_t *clean =
	    tp_test_fat_tree_gen(2, 1, 2, 0, 4, false, 0, 0, 0);
	tp_fabric_t *f;
	const char *hosts[3];
	uint32_t tasks[3] = {4, 4, 4}, nw;
	tp_plan_t *plan = NULL;

	(void)state;
	assert_non_null(clean);
	f = tp_test_half_cable(clean, 0, 1);
	for (size_t i = 0; i < 3; i++)
		hosts[i] = name(f, i);
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2, tasks,
					    true, &plan, NULL),
			 TP_OK);
	const uint32_t *w = tp_plan_rank_weights(plan, &nw);
	assert_int_equal(nw, 4);
	assert_int_equal(w[1], 512);
	assert_int_equal(w[0] + w[2] + w[3], 3 * 1024);
	tp_plan_destroy(plan);
	plan = NULL;
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2, tasks,
					    false, &plan, NULL),
			 TP_OK);
	assert_null(tp_plan_rank_weights(plan, NULL));
	tp_plan_destroy(plan);
	plan = NULL;
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts + 1, 2, tasks,
					    true, &plan, NULL),
			 TP_OK);
	assert_null(tp_plan_rank_weights(plan, NULL));
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
	tp_fabric_destroy(clean);
}

/* With a cost context (the plugin's, PlanPriceMaxHosts) the step's plan carries
 * the model's predictions for its ranks and recommends the fastest per
 * size; without, the rule. On 16 one-NIC hosts over 2 leaves with one
 * up-link each the two disagree at 1 MiB (the rule's tree, the model's
 * faster choice), so the model is seen to decide. A context priced
 * otherwise (NICs by rate) than the plan is refused. */
static void test_step_predict(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree(2, 1, 8, 1, 1, true);
	const char *hosts[16];
	uint32_t tasks[16];
	tp_cost_params_t cp;
	tp_cost_ctx_t *ctx = NULL;
	tp_plan_t *plan = NULL, *ruled = NULL;

	(void)state;
	for (size_t i = 0; i < 16; i++) {
		hosts[i] = name(f, i);
		tasks[i] = 1;
	}
	tp_cost_params_defaults(&cp);
	assert_int_equal(tp_cost_ctx_create(f, &cp, &ctx), TP_OK);
	assert_int_equal(tp_plan_build_step(f, ctx, NULL, hosts, 16, tasks,
					    false, &plan, NULL),
			 TP_OK);
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 16, tasks,
					    false, &ruled, NULL),
			 TP_OK);
	assert_true(tp_plan_predicted(plan));
	assert_false(tp_plan_predicted(ruled));
	assert_int_equal(tp_plan_world_size(plan), 16);
	bool differ = false;
	for (size_t i = 0; i < tp_plan_nsizes(plan); i++) {
		int best = 0;
		for (int a = 1; a < TP_PLAN_NALGOS; a++)
			if (tp_plan_predict_s(plan, i, (tp_algo_t)a) <
			    tp_plan_predict_s(plan, i, (tp_algo_t)best))
				best = a;
		assert_true(tp_plan_predict_s(plan, i, (tp_algo_t)best) > 0);
		assert_int_equal(tp_plan_recommend(plan, i), best);
		assert_string_equal(tp_plan_recommend_basis(plan, i), "model");
		assert_string_equal(tp_plan_recommend_basis(ruled, i), "rule");
		if (tp_plan_size(plan, i) == 1048576) {
			assert_int_equal(tp_plan_recommend(ruled, i),
					 TP_ALGO_TREE);
			differ = tp_plan_recommend(plan, i) != TP_ALGO_TREE;
		}
	}
	assert_true(differ);
	tp_plan_destroy(plan);
	plan = NULL;
	/* the plan splits evenly, the context priced by rate */
	tp_cost_ctx_destroy(ctx);
	cp.nics_by_rate = true;
	assert_int_equal(tp_cost_ctx_create(f, &cp, &ctx), TP_OK);
	assert_int_equal(tp_plan_build_step(f, ctx, NULL, hosts, 16, tasks,
					    false, &plan, NULL),
			 TP_ERR_INVAL);
	assert_null(plan);
	tp_plan_destroy(ruled);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

/* The fabric's name of host h's GPU g's nearest HCA. */
static const char *gpu_dev(const tp_fabric_t *f, size_t h, int g)
{
	const tp_host_t *hp = tp_fabric_host(f, h);

	for (size_t i = 0; i < hp->ngpus; i++)
		if (hp->gpus[i].index == g)
			return tp_fabric_ca(f, hp->cas[hp->gpus[i].hca])->dev;
	return NULL;
}

/* A step given other GPUs than 0..k-1 (SLURM_STEP_GPUS): each task
 * drives its own GPU's HCA where that is not its local rank's (a rail
 * fabric: GPU i nearest NIC i), the plan's otherwise; one GPU is the
 * task's whatever its local rank; what cannot name a GPU of the host
 * changes nothing. */
static void test_step_gpus(void **state)
{
	tp_fabric_t *f = tp_test_rail(2, 2, 4, 1, 4);
	const char *hosts[2] = {name(f, 0), name(f, 2)};
	uint32_t tasks[2] = {2, 6};
	tp_plan_t *plan = NULL;
	tp_step_gpus_t *g = NULL, *g1 = NULL;

	(void)state;
	assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2, tasks,
					    false, &plan, NULL),
			 TP_OK);
	assert_int_equal(tp_step_gpus_create(f, plan, hosts[0], &g), TP_OK);
	/* four different NICs, or the test proves nothing */
	for (int a = 0; a < 4; a++)
		for (int b = a + 1; b < 4; b++)
			assert_string_not_equal(gpu_dev(f, 0, a),
						gpu_dev(f, 0, b));
	/* the other job holds GPUs 0-1: this step's tasks run on 2 and 3 */
	assert_string_equal(tp_step_gpus_hca(g, 0, "2,3", "2,3"),
			    gpu_dev(f, 0, 2));
	assert_string_equal(tp_step_gpus_hca(g, 1, "2,3", "2,3"),
			    gpu_dev(f, 0, 3));
	assert_string_equal(tp_step_gpus_hca(g, 0, "3,2", "3,2"),
			    gpu_dev(f, 0, 3));
	/* GPUs 0 and 1: the plan's own */
	assert_null(tp_step_gpus_hca(g, 0, "0,1", "0,1"));
	assert_null(tp_step_gpus_hca(g, 1, "0,1", "0,1"));
	/* bound one a task: its GPU, whatever its local rank */
	assert_string_equal(tp_step_gpus_hca(g, 0, "3", "3"), gpu_dev(f, 0, 3));
	assert_string_equal(tp_step_gpus_hca(g, 1, "0", "0"), gpu_dev(f, 0, 0));
	assert_null(tp_step_gpus_hca(g, 1, "1", "1"));
	assert_string_equal(tp_step_gpus_hca(g, 1, "0003", "0003"),
			    gpu_dev(f, 0, 3));
	/* nothing to go by: no list, past it, malformed, not this host's */
	static const char *const bad[] = {"",
					  ",",
					  "2,",
					  ",2",
					  "2,,3",
					  "a",
					  "-1",
					  " 2",
					  "2 ",
					  "+2",
					  "2;3",
					  "0x2",
					  "99999999999999999999",
					  "1024",
					  "4",
					  "4,5"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (tp_step_gpus_hca(g, 0, bad[i], bad[i]))
			fail_msg("'%s' gave %s", bad[i],
				 tp_step_gpus_hca(g, 0, bad[i], bad[i]));
	assert_null(tp_step_gpus_hca(g, 0, NULL, NULL));
	assert_null(tp_step_gpus_hca(g, 0, "2,3", NULL));
	assert_null(tp_step_gpus_hca(g, 2, "2,3", "2,3"));
	assert_null(tp_step_gpus_hca(NULL, 0, "2,3", "2,3"));
	/* bound per task (its list not the step's): its first GPU, one or
	 * several, whatever its local rank; the step's list unknown: as
	 * the step's */
	assert_string_equal(tp_step_gpus_hca(g, 0, "0,1,2,3", "3"),
			    gpu_dev(f, 0, 3));
	assert_string_equal(tp_step_gpus_hca(g, 1, "0,1,2,3", "2,3"),
			    gpu_dev(f, 0, 2));
	assert_null(tp_step_gpus_hca(g, 1, "0,1,2,3", "1,3"));
	assert_string_equal(tp_step_gpus_hca(g, 1, NULL, "2,3"),
			    gpu_dev(f, 0, 3));
	/* more tasks than GPUs: those past the GPUs have none in the plan;
	 * given one by Slurm, its HCA */
	assert_int_equal(tp_step_gpus_create(f, plan, hosts[1], &g1), TP_OK);
	assert_null(tp_step_gpus_hca(g1, 3, "0,1,2,3,4,5", "0,1,2,3,4,5"));
	assert_null(tp_step_gpus_hca(g1, 5, "0,1,2,3,4,5", "0,1,2,3,4,5"));
	assert_string_equal(tp_step_gpus_hca(g1, 0, "1,2,3,0", "1,2,3,0"),
			    gpu_dev(f, 2, 1));
	/* hosts not in the plan or the fabric */
	tp_step_gpus_t *none = NULL;
	assert_int_equal(tp_step_gpus_create(f, plan, name(f, 1), &none),
			 TP_ERR_NOTFOUND);
	assert_int_equal(tp_step_gpus_create(f, plan, "nosuch", &none),
			 TP_ERR_NOTFOUND);
	assert_null(none);
	assert_int_equal(tp_step_gpus_create(NULL, plan, hosts[0], &none),
			 TP_ERR_INVAL);
	/* a name no variable can carry (':' separates NCCL_IB_HCA's ports)
	 * is never handed to a task: its HCA stays the plan's */
	{
		const tp_host_t *h = tp_fabric_host(f, 0);
		tp_ca_t *ca = NULL;
		for (size_t i = 0; i < h->ncas; i++)
			if (!strcmp(tp_fabric_ca(f, h->cas[i])->dev,
				    gpu_dev(f, 0, 3)))
				ca = (tp_ca_t *)tp_fabric_ca(f, h->cas[i]);
		assert_non_null(ca);
		char *saved = ca->dev, bad_dev[] = "hca:3";
		tp_plan_t *p2 = NULL;
		tp_step_gpus_t *g2 = NULL;
		ca->dev = bad_dev;
		assert_int_equal(tp_plan_build_step(f, NULL, NULL, hosts, 2,
						    tasks, false, &p2, NULL),
				 TP_OK);
		assert_int_equal(tp_step_gpus_create(f, p2, hosts[0], &g2),
				 TP_OK);
		ca->dev = saved;
		assert_null(tp_step_gpus_hca(g2, 0, "3", "3"));
		assert_string_equal(tp_step_gpus_hca(g2, 0, "2", "2"),
				    gpu_dev(f, 0, 2));
		tp_step_gpus_destroy(g2);
		tp_plan_destroy(p2);
	}
	tp_step_gpus_destroy(NULL);
	tp_step_gpus_destroy(g);
	tp_step_gpus_destroy(g1);
	tp_plan_destroy(plan);
	tp_fabric_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tasks_parse),
	    cmocka_unit_test(test_env_fat_tree),
	    cmocka_unit_test(test_env_uneven),
	    cmocka_unit_test(test_env_rails),
	    cmocka_unit_test(test_env_subnets),
	    cmocka_unit_test(test_env_subnet_hcas),
	    cmocka_unit_test(test_step_over_cap),
	    cmocka_unit_test(test_env_bad_hca_names),
	    cmocka_unit_test(test_step_nics_by_rate),
	    cmocka_unit_test(test_step_predict),
	    cmocka_unit_test(test_env_errors),
	    cmocka_unit_test(test_env_nomem),
	    cmocka_unit_test(test_env_local_hcas),
	    cmocka_unit_test(test_step_gpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
