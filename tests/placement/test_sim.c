/*
 * Simulator: FCFS with EASY backfill checked against hand-worked traces,
 * contention between running jobs, determinism, traces from CSV (good
 * and broken), bad arguments and allocation failure.
 *
 * The hand traces run on 2 leaves x 2 hosts x 2 GPUs (8 GPUs) with
 * first-fit and comm_frac 0, so run times are exactly run_s and every
 * number below is worked out in the comment above its test.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_test.h"
#include "tp_test_fabric.h"

#include "placement_int.h"
#include "tp_placement.h"

static void assert_close(double got, double want)
{
	double tol = 1e-9 * fabs(want) + 1e-12;
	if (fabs(got - want) > tol)
		fail_msg("got %.15g, want %.15g", got, want);
}

static tp_fabric_t *fat_tree(int leaves, int hosts_per_leaf, int gpus,
			     bool interleave)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;

	tp_gen_fat_tree_defaults(&p);
	p.leaves = leaves;
	p.spines = 1;
	p.uplinks_per_spine = 1;
	p.hosts_per_leaf = hosts_per_leaf;
	p.gpus_per_host = gpus;
	p.link_gbps = 400;
	p.interleave = interleave;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	return f;
}

/* submit, nodes, gpus per node, gpus (when nodes is 0), run, comm_frac */
typedef struct row {
	double submit;
	int nodes, gpn, gpus;
	double run, frac;
} row_t;

static void mktrace(tp_trace_t *t, const row_t *rows, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->name = strdup("hand");
	t->jobs = calloc(n, sizeof(*t->jobs));
	t->njobs = n;
	assert_non_null(t->name);
	assert_non_null(t->jobs);
	for (size_t i = 0; i < n; i++) {
		tp_job_spec_t *j = &t->jobs[i];
		j->submit_s = rows[i].submit;
		j->nodes = rows[i].nodes;
		j->gpus_per_node = rows[i].gpn;
		j->gpus =
		    rows[i].nodes ? rows[i].nodes * rows[i].gpn : rows[i].gpus;
		j->run_s = rows[i].run;
		j->comm_frac = rows[i].frac;
		j->bytes = 1024.0 * 1024 * 1024;
	}
}

/* trace_free frees with tp_free, which is libc free unless a test swaps
 * the allocator; the traces here are built with libc. */
static void freetrace(tp_trace_t *t)
{
	free(t->name);
	free(t->jobs);
	memset(t, 0, sizeof(*t));
}

static void run(const tp_fabric_t *f, const tp_trace_t *t, const char *pol,
		uint64_t seed, tp_sim_result_t *r)
{
	tp_cost_ctx_t *c = NULL;
	tp_policy_params_t pp;

	tp_policy_params_defaults(&pp);
	assert_int_equal(tp_cost_ctx_create(f, NULL, &c), TP_OK);
	assert_int_equal(tp_sim_run(f, t, tp_policy_find(pol), &pp, c, seed, r),
			 TP_OK);
	tp_cost_ctx_destroy(c);
}

/*
 * EASY: a short job backfills ahead of the blocked head when it ends
 * before the head's reservation; a long one that does not fit the spare
 * GPUs waits although GPUs are free.
 *   J0 t=0  2 nodes x 2 GPUs, 100 s: starts 0, ends 100.
 *   J1 t=1  4 nodes x 2 GPUs (all 8), 50 s: blocked; reservation at 100
 *           (J0's end), spare GPUs then 8 - 8 = 0.
 *   J2 t=2  2 GPUs, 90 s: ends at 92 <= 100, backfills at 2.
 *   J3 t=3  2 GPUs, 200 s: would end at 203 > 100 and 2 > 0 spare:
 *           waits while 2 GPUs sit free; again at 92 (J2 ends).
 *   100: J1 starts (ends 150). 150: J3 starts (ends 350).
 * Waits 0, 99, 0, 147: mean 61.5, p50 0, p95 147. Completion 100, 149,
 * 90, 347: mean 171.5, p50 100. Busy GPU-seconds 4*100 + 8*50 + 2*90 +
 * 2*200 = 1380 over 8 GPUs * 350 s. No multi-node job has a slowdown.
 */
static void test_backfill_reservation(void **state)
{
	static const row_t rows[] = {
	    {0, 2, 2, 0, 100, 0},
	    {1, 4, 2, 0, 50, 0},
	    {2, 0, 0, 2, 90, 0},
	    {3, 0, 0, 2, 200, 0},
	};
	tp_fabric_t *f = fat_tree(2, 2, 2, false);
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	mktrace(&t, rows, 4);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.jobs, 4);
	assert_int_equal(r.unplaceable, 0);
	assert_true(r.first_unplaceable == SIZE_MAX);
	assert_int_equal(r.multi_node_jobs, 2);
	assert_close(r.makespan_s, 350);
	assert_close(r.mean_wait_s, 61.5);
	assert_close(r.p50_wait_s, 0);
	assert_close(r.p95_wait_s, 147);
	assert_close(r.mean_jct_s, 171.5);
	assert_close(r.p50_jct_s, 100);
	assert_close(r.p95_jct_s, 347);
	assert_close(r.gpu_util, 1380.0 / (8 * 350));
	assert_close(r.comm_slowdown_mean, 1);
	assert_close(r.min_span_fraction, 1);
	/* the head short of GPUs: J1 (2-8 hosts) 1-100, J3 (1 host)
	 * 100-150; never with the GPUs free */
	assert_close(r.class_head_short[1], 99.0 / 350);
	assert_close(r.class_head_short[0], 50.0 / 350);
	assert_close(r.class_head_short[2] + r.class_head_short[3], 0);
	for (int c = 0; c < TP_SIM_NCLASSES; c++)
		assert_close(r.class_head_shape[c], 0);
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

/*
 * EASY's second rule: a job that runs past the reservation still
 * backfills when it fits the GPUs the head will not need.
 *   J0 t=0  2 x 2 GPUs, 100 s: ends 100.
 *   J1 t=1  3 x 2 GPUs (6), 50 s: blocked; at 100 there are 8, so 2 spare.
 *   J2 t=2  2 GPUs, 500 s: ends 502 > 100 but 2 <= 2 spare: starts at 2
 *           (on the fourth host, leaving J1 its three).
 *   J3 t=3  2 GPUs, 500 s: the spare GPUs are taken (0 left): waits.
 *   100: J1 starts, ends 150. 150: J3 starts, ends 650.
 * Waits 0, 99, 0, 147 (mean 61.5); completions 100, 149, 500, 647 (mean
 * 349); busy GPU-seconds 400 + 300 + 1000 + 1000 = 2700 over 8 * 650.
 */
static void test_backfill_spare(void **state)
{
	static const row_t rows[] = {
	    {0, 2, 2, 0, 100, 0},
	    {1, 3, 2, 0, 50, 0},
	    {2, 0, 0, 2, 500, 0},
	    {3, 0, 0, 2, 500, 0},
	};
	tp_fabric_t *f = fat_tree(2, 2, 2, false);
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	mktrace(&t, rows, 4);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.jobs, 4);
	assert_close(r.makespan_s, 650);
	assert_close(r.mean_wait_s, 61.5);
	assert_close(r.p95_wait_s, 147);
	assert_close(r.mean_jct_s, 349);
	assert_close(r.p95_jct_s, 647);
	assert_close(r.gpu_util, 2700.0 / (8 * 650));
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

/* 2 leaves x 4 hosts x 8 GPUs, one 400G NIC per GPU, one up-link to
 * each of 4 spines: 8:1 oversubscribed, so a cross-leaf ring is slow. */
static tp_fabric_t *thin_tree(bool interleave)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;

	tp_gen_fat_tree_defaults(&p);
	p.leaves = 2;
	p.spines = 4;
	p.uplinks_per_spine = 1;
	p.hosts_per_leaf = 4;
	p.gpus_per_host = 8;
	p.nics_per_host = 8;
	p.link_gbps = 400;
	p.interleave = interleave;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	return f;
}

/*
 * Backfill judges "ends before the head starts" by the run time on the
 * hosts the job would get, stretched by its predicted slowdown.
 *   J0, J2 t=0  3 hosts each, 1000 s; J1 t=0 2 hosts, 1 s (ends ~1.3).
 *   J3 t=1  all 8 hosts, 100 s: the head, planned for 1000 on every host.
 *   J4 t=2  2 hosts, 990 s, comm_frac 0.9: ideally ends at 992 <= 1000,
 *           but the two hosts free (one per leaf under first-fit) share
 *           the 8:1 up-links, stretching it well past 1000.
 * Judged by its ideal 990 s it would take the head's hosts and hold the
 * head back to ~1742; it must wait instead: J3 runs 1000-1100 (JCT 1099),
 * J4 after it.
 */
static void test_backfill_stretch(void **state)
{
	static const row_t rows[] = {
	    {0, 3, 0, 0, 1000, 0.3}, {0, 2, 0, 0, 1, 0.3},
	    {0, 3, 0, 0, 1000, 0.3}, {1, 8, 0, 0, 100, 0.3},
	    {2, 2, 0, 0, 990, 0.9},
	};
	tp_fabric_t *f = thin_tree(false);
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	mktrace(&t, rows, 5);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.jobs, 5);
	assert_close(r.job_jct_s[3], 1099);
	assert_true(r.job_jct_s[4] >= 1100 + 990 - 2 - 1e-9);
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

/*
 * A job on several nodes is exclusive: its hosts stay whole for its life.
 * 4 hosts x 2 GPUs: J0 2 nodes x 1 GPU, J1 and J2 one whole host each,
 * J3 1 GPU: only J0's hosts have a GPU left, so J3 waits for J0 (0-100,
 * then 100-200). It took one of them at once (mean JCT 100, makespan 100;
 * a review of the engine).
 */
static void test_exclusive_whole(void **state)
{
	static const row_t rows[] = {
	    {0, 2, 1, 0, 100, 0},
	    {0, 1, 2, 0, 100, 0},
	    {0, 1, 2, 0, 100, 0},
	    {0, 0, 0, 1, 100, 0},
	};
	static const char *const pol[] = {"first-fit", "slurm-tree",
					  "topoplace"};
	tp_fabric_t *f = fat_tree(2, 2, 2, false);

	(void)state;
	for (size_t i = 0; i < sizeof(pol) / sizeof(pol[0]); i++) {
		tp_trace_t t;
		tp_sim_result_t r;
		mktrace(&t, rows, 4);
		run(f, &t, pol[i], 1, &r);
		assert_int_equal(r.jobs, 4);
		assert_close(r.job_jct_s[3], 200);
		assert_close(r.makespan_s, 200);
		/* J0's hosts count as held: 8 GPUs busy for 100 s, then 1 */
		assert_close(r.gpu_util, (8 * 100.0 + 1 * 100) / (8 * 200));
		tp_sim_result_free(&r);
		freetrace(&t);
	}
	tp_fabric_destroy(f);
}

/*
 * A head that waits with enough GPUs free: three one-node jobs take 2 of
 * the 3 GPUs of hosts 1-3 (6 GPUs free), J1 wants 2 whole idle hosts (6
 * GPUs) and finds one. It waits 1-100 for them, counted as the shape of
 * the free GPUs, not their number (makespan 150). (It was one exclusive
 * 3-node job of 1 GPU a host, whose hosts now stay held whole.)
 */
static void test_head_shape(void **state)
{
	static const row_t rows[] = {
	    {0, 1, 2, 0, 100, 0},
	    {0, 1, 2, 0, 100, 0},
	    {0, 1, 2, 0, 100, 0},
	    {1, 2, 0, 0, 50, 0},
	};
	tp_fabric_t *f = fat_tree(2, 2, 3, false);
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	mktrace(&t, rows, 4);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.jobs, 4);
	assert_close(r.makespan_s, 150);
	assert_close(r.mean_wait_s, 99.0 / 4);
	assert_close(r.class_head_shape[1], 99.0 / 150);
	for (int c = 0; c < TP_SIM_NCLASSES; c++) {
		assert_close(r.class_head_short[c], 0);
		if (c != 1)
			assert_close(r.class_head_shape[c], 0);
	}
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

/*
 * FCFS without backfill chances: jobs start strictly in order, each as
 * soon as the one before has the GPUs, and an arrival into an idle
 * fabric starts at once. A job larger than the fabric is dropped
 * (unplaceable), not left blocking the queue.
 *   J0 t=0   8 GPUs (4 x 2), 10 s: 0-10.
 *   J1 t=0   8 GPUs, 10 s: 10-20 (wait 10).
 *   J2 t=5   16 GPUs: never fits, dropped.
 *   J3 t=100 2 GPUs, 10 s: 100-110 on an idle fabric.
 * Busy GPU-seconds 80 + 80 + 20 = 180 over 8 GPUs * 110 s.
 */
static void test_fcfs(void **state)
{
	static const row_t rows[] = {
	    {0, 4, 2, 0, 10, 0},
	    {0, 4, 2, 0, 10, 0},
	    {5, 8, 2, 0, 10, 0},
	    {100, 0, 0, 2, 10, 0},
	};
	tp_fabric_t *f = fat_tree(2, 2, 2, false);
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	mktrace(&t, rows, 4);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.jobs, 3);
	assert_int_equal(r.unplaceable, 1);
	assert_int_equal(r.first_unplaceable, 2);
	assert_close(r.makespan_s, 110);
	assert_close(r.mean_wait_s, 10.0 / 3);
	assert_close(r.mean_jct_s, (10.0 + 20 + 10) / 3);
	assert_close(r.gpu_util, 180.0 / (8 * 110));
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

/*
 * A job dropped as never placeable stretches no figure: first in the
 * trace (t=0) or last (t=1000), the makespan runs from the first job
 * admitted to the last end, on 8 GPUs:
 *   drop first: J0 t=0 16 GPUs (dropped), J1 t=50 2 GPUs, 10 s: 50-60.
 *   drop last:  J0 t=0 2 GPUs, 10 s: 0-10; J1 t=1000 16 GPUs (dropped).
 *   drop when placed: J0 t=0 1 node x 3 GPUs (no host has 3), J1 as in
 *   the first.
 * Each: makespan 10, utilisation 20 / (8 x 10). The makespan read 60 and
 * 1000 (utilisation 4% and 0.25%; a review of the engine).
 */
static void test_dropped_outside(void **state)
{
	static const row_t first[] = {
	    {0, 8, 2, 0, 10, 0},
	    {50, 0, 0, 2, 10, 0},
	};
	static const row_t last[] = {
	    {0, 0, 0, 2, 10, 0},
	    {1000, 8, 2, 0, 10, 0},
	};
	/* few enough GPUs, but no host holds 3: dropped when first placed,
	 * after it was queued */
	static const row_t shape[] = {
	    {0, 1, 3, 0, 10, 0},
	    {50, 0, 0, 2, 10, 0},
	};
	const row_t *rows[] = {first, last, shape};
	tp_fabric_t *f = fat_tree(2, 2, 2, false);

	(void)state;
	for (int i = 0; i < 3; i++) {
		tp_trace_t t;
		tp_sim_result_t r;
		mktrace(&t, rows[i], 2);
		run(f, &t, "first-fit", 1, &r);
		assert_int_equal(r.jobs, 1);
		assert_int_equal(r.unplaceable, 1);
		assert_close(r.makespan_s, 10);
		assert_close(r.gpu_util, 20.0 / (8 * 10));
		assert_close(r.useful_util, 20.0 / (8 * 10));
		tp_sim_result_free(&r);
		freetrace(&t);
	}
	tp_fabric_destroy(f);
}

/*
 * Whole-host jobs (nodes alone) on hosts of 4, 2, 2 and 2 GPUs (10 in
 * all) need at least their smallest hosts' GPUs, not nodes x the largest
 * host's:
 *   admit: J0 t=0 3 whole hosts, 100 s: 0-100 (it was 12 GPUs > 10,
 *          dropped as never placeable); J1 t=10 1 host: 10-110 on the
 *          fourth; J2 t=20 5 whole hosts: dropped (4 hosts).
 *   head:  J0 t=0 1 host (first-fit: node001, 4 GPUs), J1 t=1 2 hosts:
 *          starts at 1 on two of the three idle hosts (it waited for J0's
 *          end, 8 GPUs > the 6 free, booked as the head short of GPUs).
 */
static void test_whole_hosts_mixed(void **state)
{
	static const row_t admit[] = {
	    {0, 3, 0, 0, 100, 0},
	    {10, 1, 0, 0, 100, 0},
	    {20, 5, 0, 0, 100, 0},
	};
	static const row_t head[] = {
	    {0, 1, 0, 0, 100, 0},
	    {1, 2, 0, 0, 100, 0},
	};
	static const int keep[] = {4, 2, 2, 2};
	tp_fabric_t *g = fat_tree(2, 2, 4, false);
	tp_fabric_t *f = tp_test_cut_gpus(g, keep, 4);
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	tp_fabric_destroy(g);
	assert_int_equal(tp_fabric_total_gpus(f), 10);
	mktrace(&t, admit, 3);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.jobs, 2);
	assert_int_equal(r.unplaceable, 1);
	assert_int_equal(r.first_unplaceable, 2);
	assert_close(r.mean_wait_s, 0);
	assert_close(r.makespan_s, 110);
	tp_sim_result_free(&r);
	freetrace(&t);

	mktrace(&t, head, 2);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.jobs, 2);
	assert_close(r.mean_wait_s, 0);
	assert_close(r.makespan_s, 101);
	for (int c = 0; c < TP_SIM_NCLASSES; c++)
		assert_close(r.class_head_short[c], 0);
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

/*
 * Contention. 2 leaves x 2 hosts x 1 GPU, one 400 Gb/s up-link per leaf
 * (2:1). Two 2-host jobs, comm_frac 0.5, start together; a third comes
 * alone after both ended.
 *  - Interleaved host numbering: first-fit gives each job one host per
 *    leaf, so both rings cross both up-links. The first one sees an idle
 *    fabric (slowdown 1 but for two extra switch hops of latency), then
 *    loads each up-link direction with ~B/2 (full rate, duty ~0.5); the
 *    second gets the ~B/2 left: its collective takes about twice the
 *    ideal. The third starts on a fabric the others left: the background
 *    is gone and it is back near 1.
 *  - Numbered by leaf: each job stays under its leaf, shares nothing and
 *    matches the ideal exactly.
 */
static void test_contention(void **state)
{
	static const row_t rows[] = {
	    {0, 2, 0, 0, 1000, 0.5},
	    {0, 2, 0, 0, 1000, 0.5},
	    {5000, 2, 0, 0, 1000, 0.5},
	};
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	mktrace(&t, rows, 3);

	tp_fabric_t *f = fat_tree(2, 2, 1, true);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.multi_node_jobs, 3);
	/* slowdowns come back sorted */
	assert_true(r.slowdowns[0] >= 1 && r.slowdowns[0] < 1.001);
	assert_true(r.slowdowns[1] >= 1 && r.slowdowns[1] < 1.001);
	assert_true(r.slowdowns[2] > 1.9 && r.slowdowns[2] < 2.1);
	assert_true(r.comm_slowdown_mean > 1.3);
	/* the slowed job runs 0.5 + 0.5 * x of its 1000 s */
	assert_true(r.mean_jct_s > 1000 + 0.5 * 1000 * 0.9 / 3);
	assert_true(r.cross_spine_bytes > 0);
	tp_sim_result_free(&r);
	tp_fabric_destroy(f);

	f = fat_tree(2, 2, 1, false);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.multi_node_jobs, 3);
	for (size_t i = 0; i < 3; i++)
		assert_close(r.slowdowns[i], 1);
	assert_close(r.comm_slowdown_mean, 1);
	assert_close(r.mean_jct_s, 1000);
	assert_true(r.cross_spine_bytes == 0);
	tp_sim_result_free(&r);
	tp_fabric_destroy(f);
	freetrace(&t);
}

/*
 * The policy sees the background too. 4 leaves x 2 hosts x 1 GPU, one
 * up-link each. Job A (3 hosts) spans two leaves, one of them half, and
 * loads both their up-links with ~B/2. Job B (3 hosts) must span two
 * leaves as well: with the half-used leaf it would share A's loaded
 * up-link (about twice the ideal time); topoplace, which reads the
 * state's background, takes the two untouched leaves and matches the
 * ideal. (On an idle fabric it would take the half-used leaf first, to
 * keep whole leaves free: a policy blind to the background fails here.)
 * first-fit, blind to it, pays.
 */
/* A running job is re-rated when a later job loads its links: alone it
 * takes exactly its 1000 s; with a second job on the same up-links from
 * t = 100 s both take longer, the first one included (without re-rating
 * its run time would stay fixed at its start and the shorter JCT would be
 * its 1000 s). */
static void test_rerating(void **state)
{
	static const row_t rows[] = {
	    {0, 2, 0, 0, 1000, 0.5},
	    {100, 2, 0, 0, 1000, 0.5},
	};
	tp_trace_t t;
	tp_sim_result_t r;
	tp_fabric_t *f = fat_tree(2, 2, 1, true);

	(void)state;
	mktrace(&t, rows, 1);
	run(f, &t, "first-fit", 1, &r);
	/* a leaf-spine-leaf hop more than the ideal costs ~0.03 s */
	assert_true(r.mean_jct_s >= 1000 && r.mean_jct_s < 1001);
	assert_int_equal(r.rerated, 0);
	tp_sim_result_free(&r);
	freetrace(&t);

	mktrace(&t, rows, 2);
	run(f, &t, "first-fit", 1, &r);
	assert_true(r.rerated >= 2);	 /* A when B starts, B when A ends */
	assert_true(r.p50_jct_s > 1010); /* the shorter of the two */
	assert_true(r.p95_jct_s > r.p50_jct_s - 1e-9);
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

/*
 * Two like jobs that start together on the same links run at nearly the
 * same rate: each 2 hosts across the 8:1 up-links, comm_frac 0.5. Alone
 * one takes ~1421 s (rate ~0.704). Together A, started first, is re-rated
 * for B's traffic and ends ~1644 (rate ~0.608); B, priced against A's
 * traffic as it was before A slowed, used to run at ~0.583 over the same
 * stretch (4% slower, ending ~1704) and now, priced once more, at ~0.603.
 */
static void test_rerate_symmetric(void **state)
{
	static const row_t rows[] = {
	    {0, 2, 0, 0, 1000, 0.5},
	    {0, 2, 0, 0, 1000, 0.5},
	};
	tp_fabric_t *f = thin_tree(true);
	tp_trace_t t;
	tp_sim_result_t r;
	double alone, ta, tb, ra, rb;

	(void)state;
	mktrace(&t, rows, 1);
	run(f, &t, "first-fit", 1, &r);
	alone = 1000 / r.job_jct_s[0];
	tp_sim_result_free(&r);
	freetrace(&t);

	mktrace(&t, rows, 2);
	run(f, &t, "first-fit", 1, &r);
	ta = r.job_jct_s[0];
	tb = r.job_jct_s[1];
	assert_true(tb >= ta);
	/* B runs alone, at `alone`, once A has ended */
	ra = 1000 / ta;
	rb = (1000 - (tb - ta) * alone) / ta;
	assert_true(ra < alone);
	assert_true(fabs(rb - ra) < 0.015 * ra);
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

static void test_policy_sees_background(void **state)
{
	static const row_t rows[] = {
	    {0, 3, 0, 0, 1000, 0.5},
	    {0, 3, 0, 0, 1000, 0.5},
	};
	tp_fabric_t *f = fat_tree(4, 2, 1, false);
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	mktrace(&t, rows, 2);
	run(f, &t, "topoplace", 1, &r);
	assert_int_equal(r.multi_node_jobs, 2);
	assert_true(r.slowdowns[1] < 1.001);
	tp_sim_result_free(&r);
	run(f, &t, "first-fit", 1, &r);
	assert_int_equal(r.multi_node_jobs, 2);
	assert_true(r.slowdowns[1] > 1.5);
	tp_sim_result_free(&r);
	freetrace(&t);
	tp_fabric_destroy(f);
}

static void assert_same_result(const tp_sim_result_t *a,
			       const tp_sim_result_t *b)
{
	const double x[] = {
	    a->gpu_util,	  a->makespan_s,	a->mean_wait_s,
	    a->p50_wait_s,	  a->p95_wait_s,	a->mean_jct_s,
	    a->p50_jct_s,	  a->p95_jct_s,		a->comm_slowdown_mean,
	    a->comm_slowdown_p95, a->min_span_fraction, a->cross_spine_bytes};
	const double y[] = {
	    b->gpu_util,	  b->makespan_s,	b->mean_wait_s,
	    b->p50_wait_s,	  b->p95_wait_s,	b->mean_jct_s,
	    b->p50_jct_s,	  b->p95_jct_s,		b->comm_slowdown_mean,
	    b->comm_slowdown_p95, b->min_span_fraction, b->cross_spine_bytes};

	assert_memory_equal(x, y, sizeof(x));
	assert_int_equal(a->jobs, b->jobs);
	assert_int_equal(a->multi_node_jobs, b->multi_node_jobs);
	assert_int_equal(a->unplaceable, b->unplaceable);
	assert_memory_equal(a->slowdowns, b->slowdowns,
			    a->multi_node_jobs * sizeof(double));
}

/* njobs of the LLM mix at 90% load on f's GPUs, gpn a host. */
static void llm_trace(const tp_fabric_t *f, size_t njobs, int gpn,
		      uint64_t seed, tp_trace_t *t)
{
	assert_int_equal(tp_trace_synthetic("llm", njobs, seed,
					    (int)tp_fabric_total_gpus(f), gpn,
					    0.9, t),
			 TP_OK);
}

/* Same trace, policy and seed: bit-identical results, with contention
 * in play (a 2:1 fat tree, LLM mix at 90% load). */
static void test_determinism(void **state)
{
	static const char *const pols[] = {"topoplace", "slurm-tree", "random"};
	tp_fabric_t *f = fat_tree(4, 4, 8, true);
	tp_trace_t t;

	(void)state;
	llm_trace(f, 300, 8, 7, &t);
	for (size_t i = 0; i < 3; i++) {
		tp_sim_result_t a, b;
		run(f, &t, pols[i], 11, &a);
		run(f, &t, pols[i], 11, &b);
		assert_same_result(&a, &b);
		assert_true(a.jobs + a.unplaceable == 300);
		tp_sim_result_free(&a);
		tp_sim_result_free(&b);
	}
	tp_trace_free(&t);
	tp_fabric_destroy(f);
}

/* Where slowdowns come from: the hosts alone on the idle fabric are no
 * slower than with other jobs' traffic, the best the free hosts offered
 * is no slower than the hosts taken and, for a policy blind to cables,
 * faster; measuring it changes nothing else. A degraded fat tree, where
 * hosts differ. */
static void test_slowdown_sources(void **state)
{
	static const char *const pols[] = {"topoplace", "slurm-tree"};
	tp_fabric_t *f = tp_test_fat_tree_deg(4, 2, 4, 4, true, 0.1, 5);
	tp_sim_opts_t o = {.sources = true};
	tp_cost_ctx_t *c = NULL;
	tp_trace_t t;

	(void)state;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &c), TP_OK);
	llm_trace(f, 300, 8, 3, &t);
	for (size_t i = 0; i < 2; i++) {
		tp_sim_result_t a, b;
		const tp_policy_t *p = tp_policy_find(pols[i]);
		assert_int_equal(tp_sim_run(f, &t, p, NULL, c, 2, &a), TP_OK);
		assert_int_equal(tp_sim_run_opts(f, &t, p, NULL, c, 2, &o, &b),
				 TP_OK);
		assert_true(a.multi_node_jobs > 10);
		assert_true(a.comm_static_mean == 0);
		assert_true(a.comm_free_best_mean == 0);
		assert_true(b.comm_static_mean >= 1 - 1e-9);
		assert_true(b.comm_static_mean <=
			    b.comm_slowdown_mean * (1 + 1e-9));
		assert_true(b.comm_free_best_mean > 0);
		assert_true(b.comm_free_best_mean <=
			    b.comm_static_mean * (1 + 1e-9));
		/* slurm-tree does not look at cables: the free hosts offered
		 * better than it took */
		if (i == 1)
			assert_true(b.comm_free_best_mean <
				    0.99 * b.comm_static_mean);
		assert_same_result(&a, &b);
		tp_sim_result_free(&a);
		tp_sim_result_free(&b);
	}
	tp_trace_free(&t);
	tp_cost_ctx_destroy(c);
	tp_fabric_destroy(f);
}

/* Policy pol on t twice, plainly and with options o (NULL: none) while
 * *flag (if given) is set: the same results, job by job. */
static void same_twice(const tp_fabric_t *f, const tp_trace_t *t,
		       const char *pol, const tp_cost_ctx_t *c, uint64_t seed,
		       const tp_sim_opts_t *o, bool *flag)
{
	const tp_policy_t *p = tp_policy_find(pol);
	tp_sim_result_t a, b;

	assert_int_equal(tp_sim_run(f, t, p, NULL, c, seed, &a), TP_OK);
	if (flag)
		*flag = true;
	assert_int_equal(tp_sim_run_opts(f, t, p, NULL, c, seed, o, &b), TP_OK);
	if (flag)
		*flag = false;
	assert_true(a.multi_node_jobs > 10);
	assert_same_result(&a, &b);
	assert_memory_equal(a.job_jct_s, b.job_jct_s,
			    t->njobs * sizeof(double));
	tp_sim_result_free(&a);
	tp_sim_result_free(&b);
}

/* A cache of ideal times shared by runs of every policy and two traces on
 * one fabric (tp_sim_opts_t.ideal, as simulate's threads keep one) gives
 * each run the result it gets with a cache of its own, and holds each
 * shape once: the reference never depends on the policy or the trace. */
static void test_shared_ideal(void **state)
{
	static const char *const pols[] = {"topoplace", "slurm-tree",
					   "first-fit", "random"};
	tp_fabric_t *f = tp_test_fat_tree_deg(4, 2, 4, 4, true, 0.1, 5);
	tp_sim_opts_t o = {.ideal = tp_ideal_cache_create()};
	tp_cost_ctx_t *c = NULL;
	double shape[256][4];
	size_t nshape = 0;

	(void)state;
	assert_non_null(o.ideal);
	assert_int_equal(tp_cost_ctx_create(f, NULL, &c), TP_OK);
	for (uint64_t seed = 1; seed <= 2; seed++) {
		tp_trace_t t;
		llm_trace(f, 300, 8, seed, &t);
		for (size_t i = 0; i < sizeof(pols) / sizeof(pols[0]); i++)
			same_twice(f, &t, pols[i], c, seed, &o, NULL);
		/* one entry a request shape of the traces so far, however
		 * many policies ran them */
		for (size_t j = 0; j < t.njobs; j++) {
			const tp_job_spec_t *js = &t.jobs[j];
			bool seen = false;
			for (size_t k = 0; k < nshape && !seen; k++)
				seen = shape[k][0] == js->nodes &&
				       shape[k][1] == js->gpus_per_node &&
				       shape[k][2] == js->gpus &&
				       shape[k][3] == js->bytes;
			if (!seen) {
				assert_true(nshape < 256);
				shape[nshape][0] = js->nodes;
				shape[nshape][1] = js->gpus_per_node;
				shape[nshape][2] = js->gpus;
				shape[nshape++][3] = js->bytes;
			}
		}
		assert_true(tp_ideal_cache_size(o.ideal) > 0);
		assert_true(tp_ideal_cache_size(o.ideal) <= nshape);
		tp_trace_free(&t);
	}
	tp_ideal_cache_destroy(o.ideal);
	tp_cost_ctx_destroy(c);
	tp_fabric_destroy(f);
}

/* The plan for a blocked head is kept until a job starts or ends: the
 * same results as planning afresh at every backfill pass, for policies
 * that price (topoplace), that do not (slurm-tree) and a seeded one, on a
 * degraded 2:1 tree where backfill is busy. */
static void test_plan_kept(void **state)
{
	static const char *const pols[] = {"topoplace", "slurm-tree", "random"};
	tp_fabric_t *f = tp_test_fat_tree_deg(4, 2, 4, 4, true, 0.1, 5);
	tp_cost_ctx_t *c = NULL;

	(void)state;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &c), TP_OK);
	for (uint64_t seed = 1; seed <= 2; seed++) {
		tp_trace_t t;
		llm_trace(f, 300, 8, seed, &t);
		for (size_t i = 0; i < sizeof(pols) / sizeof(pols[0]); i++)
			same_twice(f, &t, pols[i], c, seed, NULL,
				   &tp__sim_replan);
		tp_trace_free(&t);
	}
	tp_cost_ctx_destroy(c);
	tp_fabric_destroy(f);
}

/* Useful GPU time never exceeds the time held. A placement the cost
 * model prices below the reference set (the fastest known on the idle
 * fabric) runs shorter than its ideal run time, and its useful share is
 * then what it held. Until the reference priced the even split over
 * NVLink domains (2026-12-04) topoplace's mean slowdown on NVL72 racks
 * read below 1 here; on none of these fabrics does it now, so the cap
 * is checked as the invariant, for every policy, on racks and trees. */
static void test_useful_capped(void **state)
{
	static const char *const pols[] = {"topoplace", "slurm-block",
					   "slurm-tree", "first-fit"};
	tp_fabric_t *f[3] = {NULL, NULL, NULL};
	tp_gen_nvl72_t g;

	(void)state;
	tp_gen_nvl72_defaults(&g);
	assert_int_equal(tp_gen_nvl72(&g, &f[0]), TP_OK);
	g.racks = 8;
	g.leaves_per_rack = 1;
	assert_int_equal(tp_gen_nvl72(&g, &f[1]), TP_OK);
	f[2] = fat_tree(4, 2, 8, true);
	for (size_t k = 0; k < 3; k++)
		for (size_t p = 0; p < sizeof(pols) / sizeof(pols[0]); p++) {
			tp_sim_result_t r;
			tp_trace_t t;
			if (k == 2 && p == 1)
				continue; /* no NVLink blocks on a tree */
			llm_trace(f[k], 300, 4, 1 + k, &t);
			run(f[k], &t, pols[p], 1 + k, &r);
			assert_true(r.useful_util > 0);
			assert_true(r.useful_util <= r.gpu_util * (1 + 1e-9));
			tp_sim_result_free(&r);
			tp_trace_free(&t);
		}
	for (size_t k = 0; k < 3; k++)
		tp_fabric_destroy(f[k]);
}

/*
 * The hold what-if (tp_sim_opts_t.hold_slowdown / hold_s), first-fit on 2
 * leaves x 2 hosts x 1 GPU, hosts 0-1 on leaf 0, 2-3 on leaf 1:
 *   J0 t=0  1 GPU, 100 s: host 0.
 *   J1 t=1  2 nodes x 1 GPU, comm_frac 0.5, 10 s: first-fit offers hosts 1
 *           and 2, across the leaves, priced above its ideal (one leaf).
 * Without the hold J1 starts at 1. Held up to 50 s it starts at 51 (no
 * other event then: the hold's own wake-up) on the same hosts; held up
 * to 1000 s it starts at 100, when J0 ends and hosts 0-1 are offered, at
 * its ideal. Off (0) gives tp_sim_run's result exactly.
 */
static void test_hold(void **state)
{
	static const row_t rows[] = {
	    {0, 0, 0, 1, 100, 0},
	    {1, 2, 1, 0, 10, 0.5},
	};
	tp_fabric_t *f = fat_tree(2, 2, 1, false);
	const tp_policy_t *p = tp_policy_find("first-fit");
	tp_cost_ctx_t *c = NULL;
	tp_trace_t t;
	tp_sim_result_t r0, r;
	tp_sim_opts_t o = {.hold_slowdown = 1, .hold_s = 50};

	(void)state;
	mktrace(&t, rows, 2);
	assert_int_equal(tp_cost_ctx_create(f, NULL, &c), TP_OK);
	assert_int_equal(tp_sim_run(f, &t, p, NULL, c, 1, &r0), TP_OK);
	assert_int_equal(r0.multi_node_jobs, 1);
	assert_true(r0.slowdowns[0] > 1);
	assert_close(r0.mean_wait_s, 0);
	assert_int_equal(r0.held_jobs, 0);

	assert_int_equal(tp_sim_run_opts(f, &t, p, NULL, c, 1, &o, &r), TP_OK);
	assert_int_equal(r.held_jobs, 1);
	assert_close(r.mean_wait_s, 25); /* J0 0, J1 50 */
	assert_close(r.slowdowns[0], r0.slowdowns[0]);
	tp_sim_result_free(&r);

	o.hold_s = 1000;
	assert_int_equal(tp_sim_run_opts(f, &t, p, NULL, c, 1, &o, &r), TP_OK);
	assert_int_equal(r.held_jobs, 1);
	assert_close(r.mean_wait_s, 49.5); /* J0 0, J1 99 */
	assert_true(r.slowdowns[0] <= 1 + 1e-9);
	tp_sim_result_free(&r);

	o.hold_s = 0;
	assert_int_equal(tp_sim_run_opts(f, &t, p, NULL, c, 1, &o, &r), TP_OK);
	assert_same_result(&r0, &r);
	tp_sim_result_free(&r);

	/* what the hold's answer may not be: negative or not a number */
	o.hold_s = -1;
	assert_int_equal(tp_sim_run_opts(f, &t, p, NULL, c, 1, &o, &r),
			 TP_ERR_INVAL);
	o.hold_s = 10;
	o.hold_slowdown = NAN;
	assert_int_equal(tp_sim_run_opts(f, &t, p, NULL, c, 1, &o, &r),
			 TP_ERR_INVAL);
	tp_sim_result_free(&r0);
	tp_cost_ctx_destroy(c);
	freetrace(&t);
	tp_fabric_destroy(f);
}

/* Held without a bound for a set within 1.05x its ideal on a degraded
 * 2:1 tree under the LLM mix, jobs start slower than that only where
 * nothing else ran (an idle fabric, where waiting brings nothing better
 * but the policy's pick may still be slower than the reference set: on
 * this tree, with 10% of cables degraded, topoplace's pick often is,
 * against each leaf's best-cabled hosts): fewer than unheld, and the mean
 * slowdown falls near the bound. */
static size_t count_over(const tp_sim_result_t *r, double x)
{
	size_t n = 0;

	for (size_t i = 0; i < r->multi_node_jobs; i++)
		n += r->slowdowns[i] > x * (1 + 1e-12);
	return n;
}

static void test_hold_bound(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree_deg(4, 2, 4, 4, true, 0.1, 5);
	const tp_policy_t *p = tp_policy_find("topoplace");
	tp_sim_opts_t o = {.hold_slowdown = 1.05, .hold_s = 1e12};
	tp_cost_ctx_t *c = NULL;
	tp_sim_result_t a, b;
	tp_trace_t t;

	(void)state;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &c), TP_OK);
	llm_trace(f, 300, 8, 3, &t);
	assert_int_equal(tp_sim_run(f, &t, p, NULL, c, 2, &a), TP_OK);
	assert_int_equal(tp_sim_run_opts(f, &t, p, NULL, c, 2, &o, &b), TP_OK);
	size_t oa = count_over(&a, 1.05), ob = count_over(&b, 1.05);
	print_message("hold: %zu held; over 1.05x %zu of %zu (unheld %zu of "
		      "%zu); slowdown %.3f (unheld %.3f)\n",
		      b.held_jobs, ob, b.multi_node_jobs, oa,
		      a.multi_node_jobs, b.comm_slowdown_mean,
		      a.comm_slowdown_mean);
	assert_true(a.multi_node_jobs > 10);
	assert_int_equal(b.jobs, a.jobs);
	assert_true(b.held_jobs > 0);
	assert_true(ob < oa);
	assert_true(b.comm_slowdown_mean < a.comm_slowdown_mean);
	assert_true(b.comm_slowdown_mean < 1.1);
	tp_sim_result_free(&a);
	tp_sim_result_free(&b);
	tp_trace_free(&t);
	tp_cost_ctx_destroy(c);
	tp_fabric_destroy(f);
}

static char *write_tmp(const char *text, size_t len)
{
	char *path = strdup("/tmp/tp_test_sim_XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

/* The backfill trace of test_backfill_reservation as CSV (columns in any
 * order, comments, blank lines, nodes or gpus) gives the same result. */
static void test_csv_trace(void **state)
{
	static const char csv[] = "# hand trace\n"
				  "run_s, submit_s, nodes, gpus_per_node, "
				  "gpus, comm_frac\n"
				  "100, 0, 2, 2, , 0\n"
				  "\n"
				  "90, 2, , , 2, 0\n"
				  "50, 1, 4, 2, , 0\n"
				  "200, 3, , , 2, 0\n";
	char *path = write_tmp(csv, sizeof(csv) - 1), *err = NULL;
	tp_fabric_t *f = fat_tree(2, 2, 2, false);
	tp_trace_t t;
	tp_sim_result_t r;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(tp_trace_load_csv(path, &t, &err), TP_OK);
	assert_null(err);
	assert_int_equal(t.njobs, 4);
	assert_close(t.jobs[1].submit_s, 1); /* sorted by submit time */
	assert_int_equal(t.jobs[1].gpus, 8);
	assert_int_equal(t.jobs[1].line, 6); /* its line for messages */
	assert_int_equal(t.jobs[0].line, 3);
	run(f, &t, "first-fit", 1, &r);
	assert_close(r.mean_wait_s, 61.5);
	assert_close(r.mean_jct_s, 171.5);
	/* each job's JCT, in trace order, for error bars over one trace */
	assert_int_equal(r.njob_jct, 4);
	double jsum = 0;
	for (size_t i = 0; i < r.njob_jct; i++)
		jsum += r.job_jct_s[i];
	assert_close(jsum, 4 * 171.5);
	assert_close(r.job_jct_s[0], 100); /* the first job waits for none */
	assert_close(r.gpu_util, 1380.0 / (8 * 350));
	tp_sim_result_free(&r);
	tp_trace_free(&t);
	tp_fabric_destroy(f);
	unlink(path);
	free(path);
}

/* gpus beside nodes is the GPUs of the job, split evenly over its nodes
 * (they were dropped: 8 GPUs on 2 nodes read as 2 whole nodes); sizes
 * with units in model_bytes. */
static void test_csv_gpus_and_nodes(void **state)
{
	/* a spreadsheet's byte-order mark before the header; gpus with
	 * gpus_per_node alone: that many a node, as a request reads them */
	static const char csv[] =
	    "\xef\xbb\xbfsubmit_s,gpus,nodes,gpus_per_node,"
	    "run_s,model_bytes\n"
	    "0,8,2,,10,1G\n"
	    "1,6,3,2,10,256M\n"
	    "2,,2,,10,\n"
	    "3,4,,1,10,1P\n";
	char *path = write_tmp(csv, sizeof(csv) - 1), *err = NULL;
	tp_trace_t t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_int_equal(tp_trace_load_csv(path, &t, &err), TP_OK);
	assert_int_equal(t.njobs, 4);
	assert_int_equal(t.jobs[0].nodes, 2);
	assert_int_equal(t.jobs[0].gpus_per_node, 4);
	assert_int_equal(t.jobs[0].gpus, 8);
	assert_close(t.jobs[0].bytes, 1073741824.0);
	assert_int_equal(t.jobs[1].gpus_per_node, 2);
	assert_int_equal(t.jobs[1].gpus, 6);
	assert_close(t.jobs[1].bytes, 268435456.0);
	assert_int_equal(t.jobs[2].gpus_per_node, 0); /* whole nodes */
	assert_int_equal(t.jobs[3].nodes, 4);
	assert_int_equal(t.jobs[3].gpus_per_node, 1);
	assert_int_equal(t.jobs[3].gpus, 4);
	assert_close(t.jobs[3].bytes, 1125899906842624.0);
	tp_trace_free(&t);
	unlink(path);
	free(path);
}

/* Broken traces: each error names the file and, where there is one, the
 * line; nothing is returned. */
static void test_csv_errors(void **state)
{
	static const struct {
		const char *text;
		size_t len;
		const char *want;
	} cases[] = {
	    {"submit_s,gpus,run_s,color\n0,1,10,red\n", 0,
	     ":1: unknown column 'color'"},
	    {"submit_s,gpus\n0,1\n", 0, ":1: header needs"},
	    {"# c\nsubmit_s,gpus,run_s\n0,1,10\n1,x,10\n", 0,
	     ":4: gpus: 'x': not a number"},
	    /* strtod reads hex; no trace means it */
	    {"submit_s,gpus,run_s\n0x10,1,10\n", 0,
	     ":2: submit_s: '0x10': not a number"},
	    {"submit_s,gpus,run_s\n0,1,10,5\n", 0,
	     ":2: 4 fields, header has 3"},
	    {"submit_s,gpus,run_s\n0,1.5,10\n", 0, ":2: a job needs whole"},
	    {"submit_s,gpus,run_s\n0,0,10\n", 0, ":2: a job needs whole"},
	    {"submit_s,gpus,run_s\n-1,1,10\n", 0, ":2: submit_s"},
	    {"submit_s,gpus,run_s,comm_frac\n0,1,10,1.5\n", 0,
	     ":2: comm_frac: '1.5': out of range 0 .. 1"},
	    {"submit_s,gpus,run_s\n0,1,\n", 0, ":2: run_s: empty"},
	    {"submit_s,gpus,gpus,run_s\n0,1,1,10\n", 0,
	     ":1: column 'gpus' given twice"},
	    {"submit_s,gpus,nodes,run_s\n0,3,5,10\n", 0,
	     ":2: gpus 3 do not split evenly over nodes 5"},
	    {"submit_s,gpus,nodes,gpus_per_node,run_s\n0,8,3,2,10\n", 0,
	     ":2: gpus 8 is not nodes 3 x gpus_per_node 2"},
	    {"submit_s,gpus,run_s,model_bytes\n0,1,10,1Q\n", 0,
	     ":2: model_bytes: '1Q': not a size"},
	    {"submit_s,gpus,run_s,model_bytes\n0,1,10,2P\n", 0,
	     ":2: model_bytes: '2P': out of range 1 .. 1P"},
	    /* none would be priced as the default 1 GiB */
	    {"submit_s,gpus,run_s,model_bytes\n0,1,10,0\n", 0,
	     ":2: model_bytes: '0': out of range 1 .. 1P"},
	    {"submit_s,gpus,gpus_per_node,run_s\n0,4,3,10\n", 0,
	     ":2: gpus 4 is not a multiple of gpus_per_node 3"},
	    {"submit_s,gpus,run_s\n0,1,nan\n", 0,
	     ":2: run_s: 'nan': not a number"},
	    {"submit_s,gpus,nodes,run_s\n0,2048,1,10\n", 0,
	     ":2: gpus 2048 on nodes 1: more than 1024 a node"},
	    {"submit_s,gpus,run_s\n# only a comment\n", 0, ": no jobs"},
	    {"submit_s,gpus,run_s\n0,1\0,10\n", 28, "NUL byte"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len =
		    cases[i].len ? cases[i].len : strlen(cases[i].text);
		char *path = write_tmp(cases[i].text, len), *err = NULL;
		tp_trace_t t;

		memset(&t, 0, sizeof(t));
		assert_int_equal(tp_trace_load_csv(path, &t, &err),
				 TP_ERR_PARSE);
		assert_non_null(err);
		if (!strstr(err, cases[i].want) ||
		    strncmp(err, path, strlen(path)))
			fail_msg("case %zu: '%s' lacks '%s'", i, err,
				 cases[i].want);
		assert_null(t.jobs);
		tp_free(err);
		unlink(path);
		free(path);
	}
	char *err = NULL;
	tp_trace_t t;
	memset(&t, 0, sizeof(t));
	assert_int_equal(tp_trace_load_csv("/nonexistent/trace.csv", &t, &err),
			 TP_ERR_NOTFOUND);
	assert_non_null(strstr(err, "/nonexistent/trace.csv: cannot read"));
	tp_free(err);
}

/* Slurm's records: sacct -P rows (a step, a pending job, a CPU job, a
 * running one, typed GPUs that do not split evenly) and jobcomp/filetxt
 * lines (a name and a work directory with spaces and '=') become the
 * jobs that ran on GPUs, submit times from the first kept job's; they
 * replay as the same trace written as CSV does. */
static void test_slurm_trace(void **state)
{
	static const char sacct[] =
	    "JobID|JobName|Submit|Start|End|NNodes|AllocTRES|State|\n"
	    "101|a|2026-11-30T23:59:50|2026-12-01T00:00:10|"
	    "2026-12-01T00:01:50|2|billing=4,cpu=4,gres/gpu=4,node=2|"
	    "COMPLETED|\n"
	    "101.batch|batch|2026-11-30T23:59:50|2026-12-01T00:00:10|"
	    "2026-12-01T00:01:50|1|cpu=2,gres/gpu=2,node=1|COMPLETED|\n"
	    "102|b|2026-12-01T00:00:00|None|Unknown|1||PENDING|\n"
	    "103|c|2026-12-01T00:00:01|2026-12-01T00:00:01|"
	    "2026-12-01T00:05:00|1|cpu=4,mem=8G,node=1|COMPLETED|\n"
	    "104|d|2026-12-01T00:00:02|2026-12-01T00:00:03|Unknown|2|"
	    "gres/gpu=4,node=2|RUNNING|\n"
	    "105|e|2026-11-30T23:59:51|2026-12-01T00:00:11|"
	    "2026-12-01T00:00:51|1|cpu=2,gres/gpu:h100=2|COMPLETED|\n"
	    "106|f|2026-11-30T23:59:52|2026-12-01T00:01:00|"
	    "2026-12-01T00:03:00||gres/gpu:h100=2,gres/gpu:a100=1,node=2|"
	    "CANCELLED by 0|\n";
	static const char jobcomp[] =
	    "JobId=7 UserId=u(1) GroupId=g(1) Name=a b NodeCnt=9 "
	    "JobState=COMPLETED Partition=p TimeLimit=UNLIMITED "
	    "StartTime=2026-12-01T00:00:10 EndTime=2026-12-01T00:01:50 "
	    "NodeList=n[1-2] NodeCnt=2 ProcCnt=4 WorkDir=/x y Tres=z "
	    "ReservationName= Tres=cpu=4,node=2,billing=4,gres/gpu=4 "
	    "Account= QOS=normal WcKey= Cluster=c "
	    "SubmitTime=2026-11-30T23:59:50 EligibleTime=2026-11-30T23:59:50 "
	    "DerivedExitCode=0:0 ExitCode=0:0\n"
	    "JobId=8 StartTime=Unknown EndTime=2026-12-01T00:00:00 NodeCnt=1 "
	    "Tres=cpu=1,gres/gpu=1 SubmitTime=2026-12-01T00:00:00\n"
	    "JobId=9 StartTime=2026-12-01T00:00:11 EndTime=2026-12-01T00:00:51 "
	    "NodeCnt=1 Tres=cpu=2,gres/gpu=2 "
	    "SubmitTime=2026-11-30T23:59:51\n"
	    /* cancelled while pending, as 22.05 logs it */
	    "JobId=10 JobState=CANCELLED StartTime=2026-12-01T00:00:20 "
	    "EndTime=2026-12-01T00:00:20 NodeList=(null) NodeCnt=0 "
	    "Tres=cpu=2,node=2,gres/gpu=8 SubmitTime=2026-12-01T00:00:20\n"
	    /* ended before it started: left out, counted apart */
	    "JobId=11 StartTime=2026-12-01T00:00:30 "
	    "EndTime=2026-12-01T00:00:10 NodeList=n1 NodeCnt=1 "
	    "Tres=cpu=2,node=1,gres/gpu=2 SubmitTime=2026-12-01T00:00:05\n";
	static const char csv[] = "submit_s,nodes,gpus_per_node,run_s\n"
				  "0,2,2,100\n1,1,2,40\n2,2,2,120\n";
	char *sp = write_tmp(sacct, sizeof(sacct) - 1);
	char *jp = write_tmp(jobcomp, sizeof(jobcomp) - 1);
	char *cp = write_tmp(csv, sizeof(csv) - 1), *err = NULL;
	tp_fabric_t *f = fat_tree(2, 2, 2, false);
	tp_trace_t t, tj, tc;
	tp_sim_result_t r, rc;

	(void)state;
	assert_int_equal(tp_trace_load(sp, &t, &err), TP_OK);
	assert_null(err);
	assert_string_equal(t.format, "sacct");
	assert_int_equal(t.njobs, 3);
	assert_int_equal(t.left_steps, 1);
	assert_int_equal(t.left_unrun, 2); /* 102 pending, 104 running */
	assert_int_equal(t.left_nogpu, 1); /* 103 */
	assert_int_equal(t.rounded, 1);	   /* 106: 3 GPUs on 2 hosts */
	assert_close(t.jobs[0].submit_s, 0);
	assert_int_equal(t.jobs[0].nodes, 2);
	assert_int_equal(t.jobs[0].gpus_per_node, 2);
	assert_close(t.jobs[0].run_s, 100);
	assert_close(t.jobs[0].comm_frac, 0.3);
	assert_int_equal(t.jobs[0].line, 2);
	assert_close(t.jobs[1].submit_s, 1); /* across midnight */
	assert_int_equal(t.jobs[1].nodes, 1);
	assert_int_equal(t.jobs[1].gpus, 2); /* typed GPUs */
	assert_close(t.jobs[1].comm_frac, 0.1);
	assert_close(t.jobs[2].submit_s, 2);
	assert_int_equal(t.jobs[2].nodes, 2); /* TRES node= */
	assert_int_equal(t.jobs[2].gpus_per_node, 2);
	assert_close(t.jobs[2].run_s, 120);

	assert_int_equal(tp_trace_load(jp, &tj, &err), TP_OK);
	assert_string_equal(tj.format, "jobcomp");
	assert_int_equal(tj.njobs, 2);
	assert_int_equal(tj.left_unrun, 2);
	assert_int_equal(tj.left_backwards, 1);
	assert_int_equal(t.left_backwards, 0);
	assert_int_equal(tj.jobs[0].nodes, 2); /* the last NodeCnt= */
	assert_int_equal(tj.jobs[0].gpus, 4);  /* the last Tres= */
	assert_close(tj.jobs[0].run_s, 100);
	assert_close(tj.jobs[1].submit_s, 1);
	assert_int_equal(tj.jobs[1].gpus_per_node, 2);
	assert_int_equal(tj.jobs[1].line, 3);

	assert_int_equal(tp_trace_load(cp, &tc, &err), TP_OK);
	assert_string_equal(tc.format, "csv");
	run(f, &t, "first-fit", 1, &r);
	run(f, &tc, "first-fit", 1, &rc);
	assert_close(r.mean_jct_s, rc.mean_jct_s);
	assert_close(r.mean_wait_s, rc.mean_wait_s);
	assert_close(r.gpu_util, rc.gpu_util);
	tp_sim_result_free(&r);
	tp_sim_result_free(&rc);
	tp_trace_free(&t);
	tp_trace_free(&tj);
	tp_trace_free(&tc);
	tp_fabric_destroy(f);
	unlink(sp);
	unlink(jp);
	unlink(cp);
	free(sp);
	free(jp);
	free(cp);
}

/* TZ set to tz (tzset() too); returns the old value for restore_tz(). */
static char *set_tz(const char *tz)
{
	const char *old = getenv("TZ");
	char *keep = old ? strdup(old) : NULL;

	setenv("TZ", tz, 1);
	tzset();
	return keep;
}

/* TZ as set_tz() found it; frees keep. */
static void restore_tz(char *keep)
{
	if (keep)
		setenv("TZ", keep, 1);
	else
		unsetenv("TZ");
	tzset();
	free(keep);
}

/* A job held or waiting on a dependency arrives when it became eligible
 * (sacct's Eligible, jobcomp's EligibleTime), not when it was submitted;
 * an Eligible no later than Submit, after Start or never reached changes
 * nothing. Concatenated sacct dumps, each with its header (here in
 * another field order), read as one. */
static void test_slurm_trace_eligible(void **state)
{
	static const char sacct[] =
	    "JobID|Submit|Eligible|Start|End|AllocTRES\n"
	    /* held for 50 s */
	    "1|2026-12-01T00:00:00|2026-12-01T00:00:50|2026-12-01T00:01:00|"
	    "2026-12-01T00:02:00|gres/gpu=8,node=1\n"
	    /* eligible at submit */
	    "2|2026-12-01T00:00:10|2026-12-01T00:00:10|2026-12-01T00:00:20|"
	    "2026-12-01T00:01:00|gres/gpu=8,node=1\n"
	    /* Eligible after Start (a requeue): Submit stands */
	    "3|2026-12-01T00:00:20|2026-12-01T00:09:00|2026-12-01T00:00:30|"
	    "2026-12-01T00:01:00|gres/gpu=8,node=1\n"
	    "JobID|Start|End|AllocTRES|Submit|Eligible\n"
	    "4|2026-12-01T00:05:00|2026-12-01T00:06:00|gres/gpu=4,node=1|"
	    "2026-12-01T00:00:30|Unknown\n"
	    "5|2026-12-01T00:05:00|2026-12-01T00:06:00|gres/gpu=4,node=1|"
	    "2026-12-01T00:00:40|2026-12-01T00:04:40\n";
	static const char jobcomp[] =
	    "JobId=7 StartTime=2026-12-01T00:01:00 EndTime=2026-12-01T00:02:00 "
	    "NodeCnt=1 Tres=gres/gpu=8 SubmitTime=2026-12-01T00:00:00 "
	    "EligibleTime=2026-12-01T00:00:45\n"
	    "JobId=8 StartTime=2026-12-01T00:01:00 EndTime=2026-12-01T00:02:00 "
	    "NodeCnt=1 Tres=gres/gpu=8 SubmitTime=2026-12-01T00:00:05\n";
	char *sp = write_tmp(sacct, sizeof(sacct) - 1);
	char *jp = write_tmp(jobcomp, sizeof(jobcomp) - 1), *err = NULL;
	char *keep = set_tz("UTC");
	tp_trace_t t, tj;

	(void)state;
	assert_int_equal(tp_trace_load(sp, &t, &err), TP_OK);
	assert_null(err);
	assert_int_equal(t.njobs, 5);
	assert_int_equal(t.eligible_later, 2);
	/* by arrival, from the first (job 2 at 10 s): 2, 3 (20 s), 4 (30
	 * s), 1 (eligible at 50 s), 5 (eligible at 280 s) */
	assert_int_equal(t.jobs[0].line, 3);
	assert_close(t.jobs[0].submit_s, 0);
	assert_int_equal(t.jobs[1].line, 4);
	assert_close(t.jobs[1].submit_s, 10);
	assert_int_equal(t.jobs[2].line, 6);
	assert_close(t.jobs[2].submit_s, 20);
	assert_int_equal(t.jobs[2].gpus, 4);
	assert_close(t.jobs[2].run_s, 60);
	assert_int_equal(t.jobs[3].line, 2);
	assert_close(t.jobs[3].submit_s, 40);
	assert_close(t.jobs[3].start_s, 50);
	assert_int_equal(t.jobs[4].line, 7);
	assert_close(t.jobs[4].submit_s, 270);

	assert_int_equal(tp_trace_load(jp, &tj, &err), TP_OK);
	assert_int_equal(tj.eligible_later, 1);
	assert_close(tj.jobs[0].submit_s, 0); /* job 8, at 5 s */
	assert_int_equal(tj.jobs[0].line, 2);
	assert_close(tj.jobs[1].submit_s, 40); /* job 7, eligible at 45 s */
	tp_trace_free(&t);
	tp_trace_free(&tj);
	restore_tz(keep);
	unlink(sp);
	unlink(jp);
	free(sp);
	free(jp);
}

/* sacct dumps of overlapping windows, concatenated: a job in both is
 * read once (a repeated row counted; a row of the job running or
 * pending then gives way to the later one, its count undone), a job run
 * again (requeued: another start) is another job, and a job named
 * "jobid" is a job, not a header. */
static void test_slurm_trace_repeated(void **state)
{
	static const char sacct[] =
	    "JobID|JobName|Submit|Start|End|AllocTRES\n"
	    "1|a|2026-12-01T00:00:00|2026-12-01T00:00:10|2026-12-01T00:01:00|"
	    "gres/gpu=8,node=1\n"
	    "2|jobid|2026-12-01T00:00:01|2026-12-01T00:00:10|Unknown|"
	    "gres/gpu=8,node=1\n"
	    "3|c|2026-12-01T00:00:02|None|Unknown|gres/gpu=8,node=1\n"
	    "4|cpu|2026-12-01T00:00:03|2026-12-01T00:00:10|"
	    "2026-12-01T00:01:00|cpu=4,node=1\n"
	    "JobID|JobName|Submit|Start|End|AllocTRES\n"
	    "1|a|2026-12-01T00:00:00|2026-12-01T00:00:10|2026-12-01T00:01:00|"
	    "gres/gpu=8,node=1\n"
	    "2|jobid|2026-12-01T00:00:01|2026-12-01T00:00:10|"
	    "2026-12-01T00:02:00|gres/gpu=8,node=1\n"
	    "3|c|2026-12-01T00:00:02|None|Unknown|gres/gpu=8,node=1\n"
	    "4|cpu|2026-12-01T00:00:03|2026-12-01T00:00:10|"
	    "2026-12-01T00:01:00|cpu=4,node=1\n"
	    /* requeued: run again from 00:05 */
	    "1|a|2026-12-01T00:00:00|2026-12-01T00:05:00|2026-12-01T00:06:00|"
	    "gres/gpu=8,node=1\n";
	char *sp = write_tmp(sacct, sizeof(sacct) - 1), *err = NULL;
	tp_trace_t t;

	(void)state;
	assert_int_equal(tp_trace_load(sp, &t, &err), TP_OK);
	assert_null(err);
	assert_int_equal(t.njobs, 3); /* 1, 2 and 1's second run */
	assert_int_equal(t.repeated, 1);
	assert_int_equal(t.left_unrun, 1); /* 3, pending in both */
	assert_int_equal(t.left_nogpu, 1); /* 4, in both */
	/* by submit, ties in file order: 1, its second run, 2 */
	assert_close(t.jobs[0].run_s, 50);
	assert_close(t.jobs[1].run_s, 60);
	assert_close(t.jobs[2].run_s, 110); /* 2, as it ended */
	tp_trace_free(&t);
	unlink(sp);
	free(sp);
}

/* Records whose TRES names no GPU (Slurm without
 * AccountingStorageTRES=gres/gpu): left out by default, whole hosts or N
 * GPUs a host when the caller says so; gres/gpu=0 stays a CPU job. */
static void test_slurm_trace_assume(void **state)
{
	static const char jc[] =
	    "JobId=1 StartTime=2026-12-01T00:00:10 EndTime=2026-12-01T00:01:50 "
	    "NodeCnt=2 Tres=cpu=2,mem=1000M,node=2,billing=2 "
	    "SubmitTime=2026-12-01T00:00:00\n"
	    "JobId=2 StartTime=2026-12-01T00:00:10 EndTime=2026-12-01T00:00:50 "
	    "NodeCnt=1 Tres=cpu=1,gres/gpu=0,node=1 "
	    "SubmitTime=2026-12-01T00:00:01\n";
	char *path = write_tmp(jc, sizeof(jc) - 1), *err = NULL;
	tp_trace_opts_t o = {.assume_gpus = -1};
	tp_trace_t t;

	(void)state;
	assert_int_equal(tp_trace_load_opts(path, &o, &t, &err), TP_ERR_PARSE);
	assert_non_null(strstr(err, "no job that ran on GPUs (2 without"));
	tp_free(err);
	err = NULL;
	o.assume_gpus = 0;
	assert_int_equal(tp_trace_load_opts(path, &o, &t, &err), TP_OK);
	assert_int_equal(t.njobs, 1);
	assert_int_equal(t.assumed, 1);
	assert_int_equal(t.left_nogpu, 1); /* gres/gpu=0 */
	assert_int_equal(t.jobs[0].nodes, 2);
	assert_int_equal(t.jobs[0].gpus_per_node, 0); /* whole hosts */
	tp_trace_free(&t);
	o.assume_gpus = 4;
	assert_int_equal(tp_trace_load_opts(path, &o, &t, &err), TP_OK);
	assert_int_equal(t.jobs[0].gpus_per_node, 4);
	assert_int_equal(t.jobs[0].gpus, 8);
	assert_int_equal(t.rounded, 0);
	tp_trace_free(&t);
	o.assume_gpus = -2;
	assert_int_equal(tp_trace_load_opts(path, &o, &t, &err), TP_ERR_INVAL);
	assert_null(t.jobs);
	tp_free(err);
	unlink(path);
	free(path);
}

/* What Slurm's placements cost, on a 4:1 tree of 2 leaves x 3 hosts
 * (node001-003 on leaf01, node004-006 on leaf02; 2 GPUs and 2 NICs a
 * host, one up-link a leaf): jobs 11 and 12 both cross the up-link, 12
 * starting while 11 runs. A job priced on its recorded hosts alone is
 * tp_cost_predict_best in ring order, against the ideal for its shape;
 * at its start (the sweep) 12 also carries 11's traffic; topoplace's
 * picks from the hosts free at each start stay under one leaf. A host the
 * fabric lacks, or no node list, is an error naming it. */
static void test_trace_price(void **state)
{
	static const char sacct[] =
	    "JobID|Submit|Start|End|NNodes|NodeList|AllocTRES\n"
	    "11|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T01:00:00|2|"
	    "node[003-004]|gres/gpu=4,node=2\n"
	    "12|2026-12-01T00:00:01|2026-12-01T00:00:01|2026-12-01T01:00:00|2|"
	    "node[002,005]|gres/gpu=4,node=2\n"
	    "13|2026-12-01T00:00:02|2026-12-01T00:00:02|2026-12-01T01:00:00|2|"
	    "node001,gpu9|gres/gpu=4,node=2\n"
	    "14|2026-12-01T00:00:03|2026-12-01T00:00:03|2026-12-01T01:00:00|2|"
	    "|gres/gpu=4,node=2\n";
	char *path = write_tmp(sacct, sizeof(sacct) - 1), *err = NULL;
	tp_gen_fat_tree_t g;
	tp_fabric_t *f = NULL;

	tp_gen_fat_tree_defaults(&g);
	g.leaves = g.gpus_per_host = g.nics_per_host = 2;
	g.hosts_per_leaf = 3;
	g.spines = g.uplinks_per_spine = 1; /* 6 NICs down, 1 up */
	assert_int_equal(tp_gen_fat_tree(&g, &f), TP_OK);
	tp_state_t *s = tp_state_create(f);
	tp_cost_params_t cp;
	tp_cost_ctx_t *ctx;
	tp_policy_params_t pp;
	tp_trace_t t;
	tp_trace_price_t p11, p12, loaded[4], alt[4];
	tp_cost_t c;
	tp_algo_t algo;

	(void)state;
	tp_cost_params_defaults(&cp);
	tp_policy_params_defaults(&pp);
	assert_int_equal(tp_cost_ctx_create(f, &cp, &ctx), TP_OK);
	assert_int_equal(tp_trace_load(path, &t, &err), TP_OK);
	assert_int_equal(t.njobs, 4);
	assert_string_equal(tp_trace_job_id(&t, 0), "11");
	assert_string_equal(tp_trace_job_nodes(&t, 0), "node[003-004]");
	assert_null(tp_trace_job_nodes(&t, 3)); /* an empty NodeList */
	assert_null(tp_trace_job_id(&t, 4));	/* past the end */

	/* the hosts alone */
	assert_int_equal(
	    tp_trace_price_job(f, s, ctx, &pp, NULL, &t, 0, &p11, &err), TP_OK);
	assert_int_equal(
	    tp_trace_price_job(f, s, ctx, &pp, NULL, &t, 1, &p12, &err), TP_OK);
	assert_int_equal(p11.nhosts, 2);
	assert_int_equal(p11.gpus, 4);
	assert_int_equal(p11.groups, 2);
	assert_int_equal(p11.groups_min, 1);
	uint32_t hv[2] = {tp_fabric_host_find(f, "node003"),
			  tp_fabric_host_find(f, "node004")};
	int gv[2] = {2, 2};
	tp_ring_order(f, hv, gv, 2);
	assert_int_equal(tp_cost_predict_best(ctx, s, hv, gv, 2,
					      1024.0 * 1024 * 1024, &algo, &c),
			 TP_OK);
	assert_close(p11.predicted_s, c.seconds);
	assert_int_equal(p11.algo, algo);
	assert_true(p11.predicted_s > 1.5 * p11.ideal_s); /* thin up-link */
	assert_close(p12.predicted_s, p11.predicted_s);

	/* at each start */
	assert_int_equal(tp_trace_price_sweep(f, s, ctx, &pp, NULL,
					      tp_policy_find("topoplace"), &t,
					      loaded, alt),
			 TP_OK);
	assert_close(loaded[0].predicted_s, p11.predicted_s); /* first */
	assert_true(loaded[1].predicted_s > 1.1 * p12.predicted_s);
	assert_close(loaded[1].ideal_s, p12.ideal_s);
	assert_int_equal(loaded[1].groups, 2);
	assert_int_equal(alt[0].groups, 1);
	assert_close(alt[0].predicted_s, alt[0].ideal_s);
	assert_int_equal(alt[1].groups, 1);
	assert_int_equal(alt[1].nhosts, 2);
	assert_int_equal(alt[1].gpus, 4);
	assert_true(alt[1].predicted_s < loaded[1].predicted_s);
	for (int k = 2; k < 4; k++) /* a host not in f; no node list */
		assert_true(isnan(loaded[k].predicted_s) &&
			    isnan(alt[k].predicted_s));
	/* run times as on ideal hosts: divided by the stretch the
	 * recorded hosts cost at comm_frac 0.3 */
	size_t nd = 0;
	double run1 = t.jobs[1].run_s;
	assert_int_equal(tp_trace_deflate(f, ctx, &pp, &t, &nd), TP_OK);
	assert_int_equal(nd, 2);
	assert_close(
	    t.jobs[0].run_s,
	    3600 / (0.7 + 0.3 * loaded[0].predicted_s / loaded[0].ideal_s));
	assert_close(
	    t.jobs[1].run_s,
	    run1 / (0.7 + 0.3 * loaded[1].predicted_s / loaded[1].ideal_s));
	assert_close(t.jobs[2].run_s, 3600 - 2); /* not priced: as it was */

	assert_int_equal(
	    tp_trace_price_job(f, s, ctx, &pp, NULL, &t, 2, &p11, &err),
	    TP_ERR_NOTFOUND);
	assert_string_equal(err, "host gpu9 is not in the fabric");
	tp_free(err);
	err = NULL;
	assert_int_equal(
	    tp_trace_price_job(f, s, ctx, &pp, NULL, &t, 3, &p11, &err),
	    TP_ERR_NOTFOUND);
	assert_string_equal(err, "no node list recorded");
	tp_free(err);
	tp_trace_free(&t);
	tp_cost_ctx_destroy(ctx);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	unlink(path);
	free(path);
}

/* Jobs Slurm's records put where the model has no route, or no set of
 * their shape, are left unpriced and the sweep goes on (it stopped
 * with a bare "not found" for the whole trace); a job on hosts as good
 * as the ideal is not counted as deflated. 2 leaves x 2 hosts, 2 GPUs a
 * host: f whole (4:1), g the same with its switch-to-switch cables
 * removed (two parts of 2 hosts). */
static void test_trace_price_unrouted(void **state)
{
	static const char sacct[] =
	    "JobID|Submit|Start|End|NNodes|NodeList|AllocTRES\n"
	    "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T01:00:00|2|"
	    "node[001-002]|gres/gpu=4,node=2\n"
	    "2|2026-12-01T02:00:00|2026-12-01T02:00:00|2026-12-01T03:00:00|2|"
	    "node[002-003]|gres/gpu=4,node=2\n"
	    "3|2026-12-01T04:00:00|2026-12-01T04:00:00|2026-12-01T05:00:00|3|"
	    "node[001-003]|gres/gpu=6,node=3\n";
	char *path = write_tmp(sacct, sizeof(sacct) - 1), *err = NULL;
	tp_gen_fat_tree_t gen;
	tp_fabric_t *f = NULL, *g = NULL;
	tp_policy_params_t pp;
	tp_cost_params_t cp;
	tp_trace_price_t loaded[3], alt[3], p;
	tp_trace_t t;
	cJSON *root, *links, *l;

	(void)state;
	tp_gen_fat_tree_defaults(&gen);
	gen.leaves = gen.hosts_per_leaf = gen.gpus_per_host = 2;
	gen.nics_per_host = 1;
	gen.spines = gen.uplinks_per_spine = 1;
	assert_int_equal(tp_gen_fat_tree(&gen, &f), TP_OK);
	root = tp_test_json_of(f);
	links = cJSON_GetObjectItem(root, "links");
	for (int i = cJSON_GetArraySize(links) - 1; i >= 0; i--) {
		l = cJSON_GetArrayItem(links, i);
		if (!strcmp(cJSON_GetArrayItem(l, 0)->valuestring, "switch") &&
		    !strcmp(cJSON_GetArrayItem(l, 3)->valuestring, "switch"))
			cJSON_DeleteItemFromArray(links, i);
	}
	g = tp_test_fabric_of(root, "split");
	tp_cost_params_defaults(&cp);
	tp_policy_params_defaults(&pp);
	for (int k = 0; k < 2; k++) {
		const tp_fabric_t *h = k ? g : f;
		tp_state_t *s = tp_state_create(h);
		tp_cost_ctx_t *ctx;
		size_t nd = 99;
		assert_int_equal(tp_cost_ctx_create(h, &cp, &ctx), TP_OK);
		assert_int_equal(tp_trace_load(path, &t, &err), TP_OK);
		assert_int_equal(
		    tp_trace_price_sweep(h, s, ctx, &pp, NULL,
					 tp_policy_find("topoplace"), &t,
					 loaded, alt),
		    TP_OK);
		assert_close(loaded[0].predicted_s, loaded[0].ideal_s);
		/* whole: job 2 crosses the up-link; split: no route */
		assert_true(k ? isnan(loaded[1].predicted_s)
			      : loaded[1].predicted_s > loaded[1].ideal_s);
		assert_true(isnan(loaded[2].predicted_s) == (k == 1));
		if (k) {
			assert_int_equal(tp_trace_price_job(h, s, ctx, &pp,
							    NULL, &t, 1, &p,
							    &err),
					 TP_ERR_NOTFOUND);
			assert_string_equal(
			    err, "no route between its hosts in the fabric");
			tp_free(err);
			err = NULL;
		}
		/* only the jobs whose hosts cost them a stretch change:
		 * job 2 when whole (job 3's 3 hosts cross the up-link as
		 * any 3 do here: its ideal) */
		assert_int_equal(tp_trace_deflate(h, ctx, &pp, &t, &nd), TP_OK);
		assert_int_equal(nd, k ? 0 : 1);
		assert_close(t.jobs[2].run_s, 3600);
		assert_close(t.jobs[0].run_s, 3600);
		assert_true(k ? t.jobs[1].run_s == 3600
			      : t.jobs[1].run_s < 3600);
		tp_trace_free(&t);
		tp_cost_ctx_destroy(ctx);
		tp_state_destroy(s);
	}
	tp_fabric_destroy(f);
	tp_fabric_destroy(g);
	unlink(path);
	free(path);
}

/* Broken Slurm records: one line naming file, line and field. */
/* Slurm prints local times: read in TZ's zone, a job over the spring
 * daylight-saving change (01:30 -> 03:30 CET/CEST) ran one hour, one over
 * the autumn change three; in UTC both two. A POSIX TZ rule, so no
 * zoneinfo file is needed. */
static void test_slurm_trace_tz(void **state)
{
	static const char txt[] = "JobID|Submit|Start|End|AllocTRES\n"
				  "1|2026-03-29T01:00:00|2026-03-29T01:30:00|"
				  "2026-03-29T03:30:00|gres/gpu=1,node=1\n"
				  "1|2026-10-25T01:00:00|2026-10-25T01:30:00|"
				  "2026-10-25T03:30:00|gres/gpu=1,node=1\n";
	char *path = write_tmp(txt, sizeof(txt) - 1), *err = NULL;
	char *keep = set_tz("UTC0");
	tp_trace_t t;

	(void)state;
	for (int k = 0; k < 2; k++) {
		setenv("TZ", k ? "CET-1CEST,M3.5.0,M10.5.0/3" : "UTC0", 1);
		tzset();
		memset(&t, 0, sizeof(t));
		assert_int_equal(tp_trace_load(path, &t, &err), TP_OK);
		assert_int_equal(t.njobs, 2);
		assert_close(t.jobs[0].run_s, k ? 3600 : 7200);
		assert_close(t.jobs[1].run_s, k ? 10800 : 7200);
		/* 210 days apart, an hour less in CEST than in CET */
		assert_close(t.jobs[1].submit_s,
			     210 * 86400.0 - (k ? 3600 : 0));
		tp_trace_free(&t);
	}
	/* 02:30 on the spring-forward day does not exist in CET/CEST: the
	 * file was written in another zone (it read as a run of 0 s) */
	static const char gap[] = "JobID|Submit|Start|End|AllocTRES\n"
				  "1|2026-03-29T01:00:00|2026-03-29T02:30:00|"
				  "2026-03-29T03:30:00|gres/gpu=1,node=1\n";
	char *gp = write_tmp(gap, sizeof(gap) - 1);
	memset(&t, 0, sizeof(t));
	assert_int_equal(tp_trace_load(gp, &t, &err), TP_ERR_PARSE);
	assert_non_null(strstr(err, ":2: start time '2026-03-29T02:30:00' does "
				    "not exist in this time zone "
				    "(TZ=CET-1CEST,M3.5.0,M10.5.0/3"));
	tp_free(err);
	err = NULL;
	setenv("TZ", "UTC0", 1);
	tzset();
	assert_int_equal(tp_trace_load(gp, &t, &err), TP_OK);
	assert_close(t.jobs[0].run_s, 3600);
	tp_trace_free(&t);
	unlink(gp);
	free(gp);
	restore_tz(keep);
	unlink(path);
	free(path);
}

static void test_slurm_trace_errors(void **state)
{
	static const char *const cases[][2] = {
	    {"JobID|Submit|Start\n1|x|y\n", ":1: sacct's header needs"},
	    /* no id: job steps (101.batch) would read as jobs */
	    {"Submit|Start|End|AllocTRES\n"
	     "2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "gres/gpu=1,node=1\n",
	     ":1: sacct's header needs JobID (or JobIDRaw"},
	    {"JobID|Submit|Start|End|NNodes|NodeList|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "2|n[1-2]]|gres/gpu=2,node=2\n",
	     ":2: node list 'n[1-2]]': not a host list"},
	    /* sacct without -P: one CSV column of blank-separated names */
	    {"JobID        Submit               Start\n"
	     "------------ -------------------- -------------------\n",
	     ":1: sacct's output without -P (--parsable2)"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "gres/gpu=1|x\n",
	     ":2: 6 fields, sacct's header has 5"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01 00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "gres/gpu=1\n",
	     ":2: submit time: not valid ('2026-12-01 00:00:00')"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-13-01T00:00:00|2026-12-01T00:00:09|"
	     "gres/gpu=1\n",
	     ":2: start time: not valid"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-02-28T00:00:00|2026-02-30T00:00:00|2026-03-01T00:00:09|"
	     "gres/gpu=1,node=1\n",
	     ":2: start time: not valid ('2026-02-30T00:00:00')"},
	    {"JobID|Submit|Start|End|NNodes|NodeList|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "3|node[001-002]|gres/gpu=16,node=2\n",
	     ":2: node list 'node[001-002]' names 2 hosts, the record 3"},
	    /* over the CSV's run_s limit, which trace's output must meet */
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2100-11-01T11:00:00|"
	     "gres/gpu=1,node=1\n",
	     " s, over 1e9 (from its start to its end)"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "gres/gpu=x,node=1\n",
	     ":2: TRES: not valid ('gres/gpu=x,node=1')"},
	    {"JobID|Submit|Start|End|NNodes|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "two|gres/gpu=1\n",
	     ":2: node count: not valid ('two')"},
	    /* an impossible GPU count is not called a node count */
	    {"JobID|Submit|Start|End|NNodes|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "2|gres/gpu=1T\n",
	     ":2: 1099511627776 GPUs: more than 10000000"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "gres/gpu=1\n",
	     ":2: no node count"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "gres/gpu=2K,node=1\n",
	     ":2: 2048 GPUs on 1 hosts: more than 1024 a host"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|None|Unknown|\n"
	     "2|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "cpu=1,gres/gpu=0,node=1\n",
	     ": no job that ran on GPUs (1 without GPUs, 1 that never ran"},
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "cpu=1,node=1\n",
	     ": no job's TRES counts GPUs (no gres/gpu): Slurm records them "
	     "with AccountingStorageTRES=gres/gpu"},
	    {"JobId=1 StartTime=2026-12-01T00:00:00 NodeCnt=1 Tres=gres/gpu=1 "
	     "SubmitTime=2026-12-01T00:00:00\n",
	     ":1: no EndTime= in the jobcomp record"},
	    {"JobId=1 StartTime=2026-12-01T00:00:00 "
	     "EndTime=2026-12-01T00:00:01 "
	     "NodeCnt=1 Tres=gres/gpu=1 SubmitTime=2026-12-01T00:00:00 "
	     "EligibleTime=x\n",
	     ":1: eligible time: not valid ('x')"},
	    {"JobID|Submit|Eligible|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|soon|2026-12-01T00:00:00|"
	     "2026-12-01T00:00:09|gres/gpu=1,node=1\n",
	     ":2: eligible time: not valid ('soon')"},
	    /* a second dump's header must name the fields as the first */
	    {"JobID|Submit|Start|End|AllocTRES\n"
	     "1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T00:00:09|"
	     "gres/gpu=1,node=1\n"
	     "JobID|Submit|Start|End\n",
	     ":3: sacct's header needs"},
	    {"JobId=1 StartTime=2026-12-01T00:00:00 "
	     "EndTime=2026-12-01T00:00:01 "
	     "NodeCnt=1 Tres=gres/gpu=1 SubmitTime=2026-12-01T00:00:00\n"
	     "garbage\n",
	     ":2: not a jobcomp/filetxt record"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = write_tmp(cases[i][0], strlen(cases[i][0]));
		char *err = NULL;
		tp_trace_t t;

		assert_int_equal(tp_trace_load(path, &t, &err), TP_ERR_PARSE);
		assert_non_null(err);
		if (!strstr(err, cases[i][1]) ||
		    strncmp(err, path, strlen(path)))
			fail_msg("case %zu: '%s' lacks '%s'", i, err,
				 cases[i][1]);
		assert_null(t.jobs);
		tp_free(err);
		unlink(path);
		free(path);
	}
}

/* sacct's JobIDRaw tells steps as JobID does; a job that never ran,
 * cancelled while pending, read with ReqTRES (whose TRES it keeps) and
 * its "None assigned" node list, is left out as one that never ran. */
static void test_slurm_trace_ids(void **state)
{
	static const char sacct[] =
	    "JobIDRaw|Submit|Start|End|NNodes|NodeList|ReqTRES\n"
	    "100|2026-12-01T00:00:00|2026-12-01T00:00:10|2026-12-01T00:01:10|"
	    "2|n[1-2]|gres/gpu=4,node=2\n"
	    "100.batch|2026-12-01T00:00:00|2026-12-01T00:00:10|"
	    "2026-12-01T00:01:10|1|n1|gres/gpu=2,node=1\n"
	    "100.0|2026-12-01T00:00:00|2026-12-01T00:00:10|"
	    "2026-12-01T00:01:10|2|n[1-2]|gres/gpu=4,node=2\n"
	    "101|2026-12-01T00:00:05|2026-12-01T00:00:20|2026-12-01T00:00:20|"
	    "2|None assigned|gres/gpu=16,node=2\n";
	char *path = write_tmp(sacct, sizeof(sacct) - 1), *err = NULL;
	tp_trace_t t;

	(void)state;
	assert_int_equal(tp_trace_load(path, &t, &err), TP_OK);
	assert_null(err);
	assert_int_equal(t.njobs, 1);
	assert_int_equal(t.left_steps, 2);
	assert_int_equal(t.left_unrun, 1);
	tp_trace_free(&t);
	unlink(path);
	free(path);
}

/* A job row past the trace limit: one line naming the file, the row's
 * line and the limit, nothing kept; at the limit the trace loads. (The
 * limit is lowered here: 10 million rows are 70 MB and 480 MB of jobs.) */
static void test_csv_row_limit(void **state)
{
	const char *text = "submit_s,gpus,run_s\n0,1,10\n# c\n1,2,10\n2,1,10\n";
	char *path = write_tmp(text, strlen(text)), *err = NULL, want[512];
	size_t saved = tp__trace_max_jobs;
	tp_trace_t t;

	(void)state;
	assert_int_equal(TP_TRACE_MAX_JOBS, 10000000);
	memset(&t, 0, sizeof(t));
	tp__trace_max_jobs = 3;
	assert_int_equal(tp_trace_load_csv(path, &t, NULL), TP_OK);
	assert_int_equal(t.njobs, 3);
	tp_trace_free(&t);
	memset(&t, 0, sizeof(t));
	tp__trace_max_jobs = 2;
	assert_int_equal(tp_trace_load_csv(path, &t, &err), TP_ERR_RANGE);
	snprintf(want, sizeof(want), "%s:5: more than 2 jobs (the limit)",
		 path);
	assert_string_equal(err, want);
	assert_null(t.jobs);
	tp__trace_max_jobs = saved;
	tp_free(err);
	unlink(path);
	free(path);
}

static void test_bad_args(void **state)
{
	static const row_t rows[] = {{0, 0, 0, 1, 10, 0}};
	tp_fabric_t *f = fat_tree(2, 2, 2, false);
	const tp_policy_t *p = tp_policy_find("first-fit");
	tp_trace_t t, empty = {0};
	tp_sim_result_t r;

	(void)state;
	mktrace(&t, rows, 1);
	assert_int_equal(tp_sim_run(NULL, &t, p, NULL, NULL, 1, &r),
			 TP_ERR_INVAL);
	assert_int_equal(tp_sim_run(f, NULL, p, NULL, NULL, 1, &r),
			 TP_ERR_INVAL);
	assert_int_equal(tp_sim_run(f, &t, NULL, NULL, NULL, 1, &r),
			 TP_ERR_INVAL);
	assert_int_equal(tp_sim_run(f, &t, p, NULL, NULL, 1, NULL),
			 TP_ERR_INVAL);
	assert_int_equal(tp_sim_run(f, &empty, p, NULL, NULL, 1, &r),
			 TP_ERR_INVAL);
	/* without a cost context: no predictions, no contention, runs */
	assert_int_equal(tp_sim_run(f, &t, p, NULL, NULL, 1, &r), TP_OK);
	assert_int_equal(r.jobs, 1);
	tp_sim_result_free(&r);
	tp_sim_result_free(NULL);
	freetrace(&t);
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

/* Every allocation failing in turn: TP_ERR_NOMEM (or a run that did not
 * need the allocation), never a crash or a leak (the ASan build checks),
 * and once it gets through, the hand-worked answer with contention. */
static void test_nomem(void **state)
{
	static const row_t rows[] = {
	    {0, 2, 0, 0, 1000, 0.5},
	    {0, 2, 0, 0, 1000, 0.5},
	    {1, 0, 0, 1, 10, 0},
	};
	tp_allocator_t a = {fmalloc, fcalloc, frealloc, free};
	tp_sim_opts_t opts = {.sources = true};
	tp_fabric_t *f = fat_tree(2, 2, 1, true);
	tp_cost_ctx_t *c = NULL;
	tp_trace_t t;
	tp_sim_result_t r;
	tp_err_t err = TP_ERR_NOMEM;
	int nomem = 0; /* the loop stops at the first success */

	(void)state;
	mktrace(&t, rows, 3);
	assert_int_equal(tp_cost_ctx_create(f, NULL, &c), TP_OK);
	for (int k = 0; err; k++) {
		memset(&r, 0, sizeof(r));
		fail_after = k;
		tp_alloc_set(&a);
		err = tp_sim_run_opts(f, &t, tp_policy_find("first-fit"), NULL,
				      c, 1, &opts, &r);
		tp_alloc_set(NULL);
		if (err) {
			assert_int_equal(err, TP_ERR_NOMEM);
			nomem++;
		}
		assert_true(k < 100000);
	}
	assert_true(nomem > 0);
	assert_int_equal(r.multi_node_jobs, 2);
	assert_true(r.slowdowns[1] > 1.9);
	tp_sim_result_free(&r);
	tp_cost_ctx_destroy(c);
	freetrace(&t);
	tp_fabric_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_backfill_reservation),
	    cmocka_unit_test(test_backfill_spare),
	    cmocka_unit_test(test_backfill_stretch),
	    cmocka_unit_test(test_plan_kept),
	    cmocka_unit_test(test_head_shape),
	    cmocka_unit_test(test_exclusive_whole),
	    cmocka_unit_test(test_fcfs),
	    cmocka_unit_test(test_dropped_outside),
	    cmocka_unit_test(test_whole_hosts_mixed),
	    cmocka_unit_test(test_contention),
	    cmocka_unit_test(test_rerating),
	    cmocka_unit_test(test_rerate_symmetric),
	    cmocka_unit_test(test_policy_sees_background),
	    cmocka_unit_test(test_determinism),
	    cmocka_unit_test(test_slowdown_sources),
	    cmocka_unit_test(test_useful_capped),
	    cmocka_unit_test(test_hold),
	    cmocka_unit_test(test_hold_bound),
	    cmocka_unit_test(test_shared_ideal),
	    cmocka_unit_test(test_csv_trace),
	    cmocka_unit_test(test_csv_gpus_and_nodes),
	    cmocka_unit_test(test_csv_errors),
	    cmocka_unit_test(test_csv_row_limit),
	    cmocka_unit_test(test_slurm_trace),
	    cmocka_unit_test(test_slurm_trace_tz),
	    cmocka_unit_test(test_slurm_trace_errors),
	    cmocka_unit_test(test_slurm_trace_eligible),
	    cmocka_unit_test(test_slurm_trace_repeated),
	    cmocka_unit_test(test_slurm_trace_ids),
	    cmocka_unit_test(test_slurm_trace_assume),
	    cmocka_unit_test(test_trace_price),
	    cmocka_unit_test(test_trace_price_unrouted),
	    cmocka_unit_test(test_bad_args),
	    cmocka_unit_test(test_nomem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
