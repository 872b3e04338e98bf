/*
 * test_coll.c - libtopoplace-coll: every op x dtype x algorithm on plans
 * of 1-9 ranks over 1-4 hosts, checked against a long-double reference;
 * init errors; a killed and a hung peer; the compressed all-reduce and
 * its wire format (built twice: test_coll_comp runs the test_comp_ ones,
 * test_coll the rest; see main).
 *
 * Each rank is a fork()ed child talking TCP over 127.0.0.1 (the harness:
 * coll_harness.h).
 */
#include "config.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coll_harness.h"
#include "tp_test_fabric.h"
#include "comp_wire.h"

/* ---- values and reference ------------------------------------------------ */

/* Exact in every dtype: quarters in [-2, 2]. */
static long double input(int rank, size_t i, tp_coll_dtype_t dt)
{
	long v = (long)((rank * 7 + (long)i * 3 + (long)(i / 5)) % 17) - 8;
	return dt == TP_COLL_INT32 || dt == TP_COLL_INT64
		   ? (long double)v * 3
		   : (long double)v * 0.25L;
}

static uint16_t to_half(float f, bool bf)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if (bf)
		return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
	/* Values here are normal or zero and exact in binary16. */
	if ((u & 0x7fffffffu) == 0)
		return (uint16_t)(u >> 16);
	uint32_t s = (u >> 16) & 0x8000u;
	int e = (int)((u >> 23) & 0xff) - 127 + 15;
	return (uint16_t)(s | ((uint32_t)e << 10) | ((u & 0x7fffffu) >> 13));
}

static long double from_half(uint16_t h, bool bf)
{
	if (bf) {
		uint32_t u = (uint32_t)h << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	long double v = e == 0 ? ldexpl(m, -24) : ldexpl(m + 1024, e - 25);
	return (h & 0x8000) ? -v : v;
}

static void store(void *buf, size_t i, tp_coll_dtype_t dt, long double v)
{
	switch (dt) {
	case TP_COLL_FP32:
		((float *)buf)[i] = (float)v;
		break;
	case TP_COLL_FP64:
		((double *)buf)[i] = (double)v;
		break;
	case TP_COLL_FP16:
		((uint16_t *)buf)[i] = to_half((float)v, false);
		break;
	case TP_COLL_BF16:
		((uint16_t *)buf)[i] = to_half((float)v, true);
		break;
	case TP_COLL_INT32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case TP_COLL_INT64:
		((int64_t *)buf)[i] = (int64_t)v;
		break;
	}
}

static long double load(const void *buf, size_t i, tp_coll_dtype_t dt)
{
	switch (dt) {
	case TP_COLL_FP32:
		return ((const float *)buf)[i];
	case TP_COLL_FP64:
		return ((const double *)buf)[i];
	case TP_COLL_FP16:
		return from_half(((const uint16_t *)buf)[i], false);
	case TP_COLL_BF16:
		return from_half(((const uint16_t *)buf)[i], true);
	case TP_COLL_INT32:
		return ((const int32_t *)buf)[i];
	case TP_COLL_INT64:
		return (long double)((const int64_t *)buf)[i];
	}
	return 0;
}

static long double reference(int n, size_t i, tp_coll_dtype_t dt,
			     tp_coll_op_t op)
{
	long double acc = input(0, i, dt);

	for (int r = 1; r < n; r++) {
		long double v = input(r, i, dt);
		if (op == TP_COLL_MAX)
			acc = v > acc ? v : acc;
		else if (op == TP_COLL_MIN)
			acc = v < acc ? v : acc;
		else
			acc += v;
	}
	if (op == TP_COLL_AVG) {
		if (dt == TP_COLL_INT32 || dt == TP_COLL_INT64)
			return (long double)((long long)acc / n);
		acc /= n;
	}
	return acc;
}

/* Rounding allowance of dtype (relative, at least absolute for |x|<1). */
static long double tolerance(tp_coll_dtype_t dt)
{
	switch (dt) {
	case TP_COLL_FP32:
		return 1e-6L;
	case TP_COLL_FP64:
		return 1e-12L;
	case TP_COLL_FP16:
		return 1.0L / 1024;
	case TP_COLL_BF16:
		return 1.0L / 128;
	default:
		return 0;
	}
}

static bool close_enough(long double got, long double want, tp_coll_dtype_t dt)
{
	long double tol = tolerance(dt) * (fabsl(want) > 1 ? fabsl(want) : 1);
	return fabsl(got - want) <= tol;
}

/* ---- the matrix ---------------------------------------------------------- */

#define MAXCOUNT 1031
static const size_t counts[] = {0, 1, 2, 3, 7, 31, 97, MAXCOUNT};
static const char *const dt_names[] = {"fp32", "fp64",	"fp16",
				       "bf16", "int32", "int64"};

static int check(tp_coll_comm_t *c, const char *what, const void *buf,
		 size_t count, size_t first, tp_coll_dtype_t dt,
		 tp_coll_op_t op)
{
	int n = tp_coll_comm_size(c);

	for (size_t i = 0; i < count; i++) {
		long double want = reference(n, first + i, dt, op);
		long double got = load(buf, i, dt);
		if (!close_enough(got, want, dt)) {
			fprintf(
			    stderr,
			    "# rank %d: %s %s op %d count %zu: [%zu] = %Lg, "
			    "want %Lg\n",
			    tp_coll_comm_rank(c), what, dt_names[dt], (int)op,
			    count, first + i, got, want);
			return 1;
		}
	}
	return 0;
}

static int call_failed(tp_coll_comm_t *c, const char *what, tp_err_t err)
{
	fprintf(stderr, "# rank %d: %s: %s: %s\n", tp_coll_comm_rank(c), what,
		tp_strerror(err), tp_coll_comm_detail(c));
	return 2;
}

static int matrix(tp_coll_comm_t *c, void *arg)
{
	static char in[MAXCOUNT * 16 * 8], out[MAXCOUNT * 16 * 8];
	int n = tp_coll_comm_size(c), me = tp_coll_comm_rank(c);
	tp_err_t err;

	(void)arg;
	for (int dti = 0; dti < TP_COLL_NDTYPES; dti++) {
		tp_coll_dtype_t dt = (tp_coll_dtype_t)dti;
		size_t dsz = tp_coll_dtype_size(dt);
		for (size_t k = 0; k < sizeof(counts) / sizeof(*counts); k++) {
			size_t cnt = counts[k];
			for (int a = 0; a < 4; a++) {
				for (int op = 0; op < TP_COLL_NOPS; op++) {
					for (size_t i = 0; i < cnt; i++)
						store(in, i, dt,
						      input(me, i, dt));
					/* odd counts in place, even out of
					 * place */
					void *dst = cnt % 2 ? in : out;
					err = tp_coll_allreduce(
					    c, in, dst, cnt, dt,
					    (tp_coll_op_t)op,
					    (tp_coll_algo_t)a);
					if (err)
						return call_failed(
						    c, "allreduce", err);
					if (check(c, tp_coll_algo_name(a), dst,
						  cnt, 0, dt, (tp_coll_op_t)op))
						return 1;
				}
			}
			/* reduce-scatter: block r of n x cnt elements */
			for (size_t i = 0; i < cnt * (size_t)n; i++)
				store(in, i, dt, input(me, i, dt));
			err = tp_coll_reduce_scatter(c, in, out, cnt, dt,
						     TP_COLL_SUM);
			if (err)
				return call_failed(c, "reduce_scatter", err);
			if (check(c, "reduce_scatter", out, cnt,
				  (size_t)me * cnt, dt, TP_COLL_SUM))
				return 1;
			/* all-gather: rank r contributes input(r, r*cnt + i) */
			for (size_t i = 0; i < cnt; i++)
				store(in, i, dt,
				      input(me, (size_t)me * cnt + i, dt));
			memset(out, 0, cnt * (size_t)n * dsz);
			err = tp_coll_allgather(c, in, out, cnt, dt);
			if (err)
				return call_failed(c, "allgather", err);
			for (size_t i = 0; i < cnt * (size_t)n; i++) {
				int r = (int)(i / cnt);
				if (load(out, i, dt) != input(r, i, dt)) {
					fprintf(stderr,
						"# rank %d: allgather "
						"[%zu] wrong\n",
						me, i);
					return 1;
				}
			}
			/* broadcast from the last rank */
			for (size_t i = 0; i < cnt; i++)
				store(in, i, dt,
				      me == n - 1 ? input(n - 1, i, dt) : 0);
			err = tp_coll_broadcast(c, in, cnt, dt, n - 1);
			if (err)
				return call_failed(c, "broadcast", err);
			for (size_t i = 0; i < cnt; i++) {
				if (load(in, i, dt) != input(n - 1, i, dt)) {
					fprintf(stderr,
						"# rank %d: broadcast %s "
						"count %zu [%zu] wrong\n",
						me, dt_names[dt], cnt, i);
					return 1;
				}
			}
		}
	}
	err = tp_coll_barrier(c);
	return err ? call_failed(c, "barrier", err) : 0;
}

static void run_matrix(int nh, int L)
{
	tp_plan_t *p = plan_of(nh, L, 0);
	char what[64];

	snprintf(what, sizeof(what), "%d hosts x %d", nh, L);
	/* 96-byte chunks: 1031 elements cross many, never evenly. */
	run_ranks_ok(p, 20, 96, matrix, NULL, 60, what);
	tp_plan_destroy(p);
}

/* The matrix on one plan shape: hosts x ranks per host (main's table). */
typedef struct shape {
	int nh, L;
} shape_t;

static void test_matrix(void **s)
{
	const shape_t *sh = *s;

	run_matrix(sh->nh, sh->L);
}

static shape_t shapes[] = {{1, 1}, {1, 3}, {2, 1}, {2, 2}, {3, 3}, {4, 2}};

/* One host, 64-byte rings: every message wraps, and elements arrive
 * split across the ring's room (the receiver reduces whole ones only). */
static void test_shm_tiny_ring(void **s)
{
	(void)s;
	setenv("TOPOPLACE_COLL_SHM_RING", "64", 1);
	run_matrix(1, 3);
	unsetenv("TOPOPLACE_COLL_SHM_RING");
}

/* One host, rank 1 refuses shared memory: pairs with it stay on TCP,
 * the 0-2 pair uses shared memory. */
static void test_shm_refused(void **s)
{
	(void)s;
	refuse_shm_rank = 1;
	run_matrix(1, 3);
	refuse_shm_rank = -1;
}

/* Rank 1 takes no wake-up FIFOs: rank 0 must drop the ones it made and
 * wake rank 1 over the socket; rank 1 wakes rank 2 over it too. */
static void test_shm_nofifo(void **s)
{
	(void)s;
	refuse_shm_rank = 1;
	shm_value = "nofifo";
	run_matrix(1, 3);
	refuse_shm_rank = -1;
	shm_value = "0";
}

/* Larger messages with the default chunk: pipelining over many chunks. */
static int large(tp_coll_comm_t *c, void *arg)
{
	size_t cnt = arg ? *(const size_t *)arg : 3 * 65536 + 17;
	float *b = malloc(cnt * sizeof(float));
	int n = tp_coll_comm_size(c), me = tp_coll_comm_rank(c);

	if (!b)
		return 3;
	for (int a = 1; a < 4; a++) {
		for (size_t i = 0; i < cnt; i++)
			b[i] = (float)((me + 1) * (int)(i % 101));
		tp_err_t err = tp_coll_allreduce(
		    c, b, b, cnt, TP_COLL_FP32, TP_COLL_SUM, (tp_coll_algo_t)a);
		if (err) {
			free(b);
			return call_failed(c, "allreduce", err);
		}
		for (size_t i = 0; i < cnt; i++) {
			if (b[i] !=
			    (float)((n * (n + 1) / 2) * (int)(i % 101))) {
				fprintf(stderr, "# large %s [%zu] = %g\n",
					tp_coll_algo_name(a), i, b[i]);
				free(b);
				return 1;
			}
		}
	}
	free(b);
	return 0;
}

static void test_large(void **s)
{
	tp_plan_t *p = plan_of(2, 2, 0);

	(void)s;
	run_ranks_ok(p, 20, 64 << 10, large, NULL, 60, "large");
	tp_plan_destroy(p);
}

/* One host: hierarchical through the host segment's blocks, 2.6 blocks
 * of 1 MiB (both buffers reused, the last block short, split unevenly
 * over 3 ranks), the ring and the tree on the same communicator between
 * its calls. */
static void test_host_blocks(void **s)
{
	tp_plan_t *p = plan_of(1, 3, 0);
	size_t cnt = (5 << 20) / 2 / sizeof(float) + 101;

	(void)s;
	run_ranks_ok(p, 20, 64 << 10, large, &cnt, 60, "host blocks");
	tp_plan_destroy(p);
}

/* Several hosts, 3 ranks each: hierarchical out of place, its host
 * phases through each host's segment in rounds (2.6 blocks: both
 * buffers reused, the last round short). *arg: whether the segment is
 * expected, i.e. no byte posted to a same-host peer (TOPOPLACE_COLL_SHM=0:
 * the host rings post some). */
static int host_phases(tp_coll_comm_t *c, void *arg)
{
	bool seg = *(const bool *)arg;
	size_t cnt = (5 << 20) / 2 / sizeof(float) + 101;
	int n = tp_coll_comm_size(c), me = tp_coll_comm_rank(c), rc = 0;
	float *in = malloc(cnt * sizeof(float));
	float *out = malloc(cnt * sizeof(float));
	uint64_t local = 0;

	if (!in || !out) {
		rc = 3;
		goto out;
	}
	for (size_t i = 0; i < cnt; i++)
		in[i] = (float)((me + 1) * (int)(i % 101));
	tp_coll_comm_stats_reset(c);
	tp_err_t err =
	    tp_coll_allreduce(c, in, out, cnt, TP_COLL_FP32, TP_COLL_SUM,
			      TP_COLL_ALGO_HIERARCHICAL);
	if (err) {
		rc = call_failed(c, "allreduce", err);
		goto out;
	}
	for (size_t i = 0; i < cnt && !rc; i++)
		if (out[i] != (float)((n * (n + 1) / 2) * (int)(i % 101)) ||
		    in[i] != (float)((me + 1) * (int)(i % 101))) {
			fprintf(stderr, "# host phases [%zu] = %g\n", i,
				out[i]);
			rc = 1;
		}
	for (int r = me / 3 * 3; r < me / 3 * 3 + 3; r++)
		local += tp_coll_comm_sent_bytes(c, r);
	if (!rc && (local == 0) != seg) {
		fprintf(stderr, "# rank %d: %llu bytes to its host's ranks\n",
			me, (unsigned long long)local);
		rc = 2;
	}
out:
	free(in);
	free(out);
	return rc;
}

static void test_host_phases(void **s)
{
	tp_plan_t *p = plan_of(2, 3, 0);
	bool seg = true, ring = false;

	(void)s;
	run_ranks_ok(p, 20, 64 << 10, host_phases, &seg, 60, "host phases");
	setenv("TOPOPLACE_COLL_SHM", "0", 1);
	run_ranks_ok(p, 20, 64 << 10, host_phases, &ring, 60,
		     "host phases, rings");
	unsetenv("TOPOPLACE_COLL_SHM");
	tp_plan_destroy(p);
}

/* Warnings the library logged in this (rank) process, the last one kept. */
static int nwarn;
static char last_warn[512];

static void count_warn(tp_log_level_t level, const char *msg, void *arg)
{
	(void)arg;
	if (level != TP_LOG_WARN)
		return;
	nwarn++;
	snprintf(last_warn, sizeof(last_warn), "%s", msg);
}

/* The library's own log sink: it links its copy of common/ in, so this
 * program's tp_log_set() would set another. Which copy: the library built
 * here, by the path the Makefile passes (TP_TEST_COLL_LIB), if it is the
 * one loaded (RTLD_NOLOAD matches a loaded object by file, so the soname's
 * link does). Only where it is not (another copy preloaded, an installed
 * one) the object that defines tp_coll_comm_init, which alone would point
 * at an LD_PRELOAD shim wrapping that symbol, or at this program where the
 * library is linked statically (then the only tp_log_set there is). */
static void coll_log_set(tp_log_fn_t fn)
{
	Dl_info di;
	void *h = NULL;
	void (*set)(tp_log_fn_t, void *) = NULL;

#ifdef TP_TEST_COLL_LIB
	h = dlopen(TP_TEST_COLL_LIB, RTLD_LAZY | RTLD_NOLOAD);
#endif
	if (!h && dladdr((void *)tp_coll_comm_init, &di) && di.dli_fname)
		h = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (h)
		*(void **)&set = dlsym(h, "tp_log_set");
	assert_non_null(set);
	set(fn, NULL);
	dlclose(h);
}

/* A plan with predictions over hosts 0 .. nh-1, L ranks each, priced
 * with the host phases as rings when host_ring. */
static tp_plan_t *priced_plan(int nh, int L, bool host_ring)
{
	tp_fabric_t *f = coll_fabric();
	const char *names[4];
	tp_cost_params_t cp;
	tp_cost_ctx_t *ctx = NULL;
	tp_plan_opts_t o;
	tp_plan_t *p = NULL;
	char *msg = NULL;

	for (int i = 0; i < nh; i++)
		names[i] = tp_fabric_host(f, (size_t)i)->name;
	tp_cost_params_defaults(&cp);
	cp.host_ring = host_ring;
	assert_int_equal(tp_cost_ctx_create(f, &cp, &ctx), TP_OK);
	tp_plan_opts_defaults(&o);
	o.gpus_per_host = L;
	if (tp_plan_build(f, ctx, names, (size_t)nh, &o, &p, &msg))
		fail_msg("plan: %s", msg);
	tp_cost_ctx_destroy(ctx);
	assert_int_equal(tp_plan_host_segment(p), !host_ring);
	return p;
}

/* The warning expected from the first rank of each host (host -1) or of
 * one host (3 ranks a host); want NULL: none. Nobody else says a thing. */
typedef struct want_warn {
	const char *want;
	int host;
} want_warn_t;

static int segment_warning(tp_coll_comm_t *c, void *arg)
{
	const want_warn_t *w = arg;
	int me = tp_coll_comm_rank(c);
	bool first = tp_coll_comm_nhosts(c) == 1 ? me == 0 : me % 3 == 0;
	int expect = w->want && first && (w->host < 0 || w->host == me / 3);

	if (nwarn != expect || (expect && !strstr(last_warn, w->want))) {
		fprintf(stderr, "# rank %d: %d warnings (wanted %d): %s\n", me,
			nwarn, expect, nwarn ? last_warn : "");
		return 1;
	}
	return 0;
}

/* A plan priced with the host segment run without one (and the other
 * way round): the host's first rank says so once, through the log sink;
 * a match says nothing. Multi-host (2 x 3) and one-host (1 x 2). */
static void test_segment_mismatch(void **s)
{
	tp_plan_t *seg = priced_plan(2, 3, false),
		  *ring = priced_plan(2, 3, true);
	tp_plan_t *one = priced_plan(1, 2, false);
	want_warn_t quiet = {NULL, -1};
	want_warn_t none = {"no shared-memory host segment", -1};
	want_warn_t rings = {"priced the hierarchical host phases as rings",
			     -1};
	want_warn_t host1 = {"no shared-memory host segment", 1};

	(void)s;
	coll_log_set(count_warn);
	run_ranks_ok(seg, 20, 64 << 10, segment_warning, &quiet, 60,
		     "segment as priced");
	run_ranks_ok(ring, 20, 64 << 10, segment_warning, &rings, 60,
		     "priced rings, segment runs");
	setenv("TOPOPLACE_COLL_SHM", "0", 1);
	run_ranks_ok(seg, 20, 64 << 10, segment_warning, &none, 60,
		     "priced segment, TOPOPLACE_COLL_SHM=0");
	run_ranks_ok(one, 20, 64 << 10, segment_warning, &none, 60,
		     "one host, TOPOPLACE_COLL_SHM=0");
	run_ranks_ok(ring, 20, 64 << 10, segment_warning, &quiet, 60,
		     "rings as priced");
	unsetenv("TOPOPLACE_COLL_SHM");
	/* one rank refusing takes the segment from its whole host */
	refuse_shm_rank = 4;
	run_ranks_ok(seg, 20, 64 << 10, segment_warning, &host1, 60,
		     "priced segment, rank 4 refuses");
	refuse_shm_rank = -1;
	coll_log_set(NULL);
	tp_plan_destroy(seg);
	tp_plan_destroy(ring);
	tp_plan_destroy(one);
}

/* Socket file descriptors this process holds. */
static int count_sockets(void)
{
	char path[64], link[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ssize_t k = readlink(path, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = '\0';
			n += !strncmp(link, "socket:", 7);
		}
	}
	return n;
}

/* The large all-reduces after checking how many sockets this rank holds:
 * at least *arg, or (negative) fewer than -*arg. */
static int striped(tp_coll_comm_t *c, void *arg)
{
	int want = *(const int *)arg, got = count_sockets();

	if (want > 0 ? got < want : got >= -want) {
		fprintf(stderr, "# rank %d holds %d sockets, want %s%d\n",
			tp_coll_comm_rank(c), got, want > 0 ? ">= " : "< ",
			want > 0 ? want : -want);
		return 1;
	}
	return large(c, NULL);
}

/* TOPOPLACE_COLL_SOCKETS=3: every message striped over 3 connections per
 * peer on another host (the matrix's 96-byte chunks and 1-element
 * messages leave stripes short or empty); 2 hosts x 1 rank hold 3
 * sockets to their one peer where 1 socket each holds fewer. Ranks that
 * disagree fail init naming the count; a bad value fails it too. */
static void test_sockets(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);
	tp_coll_opts_t o;
	tp_coll_comm_t *c = NULL;
	char *why = NULL;
	int st[16], three = 3, under3 = -3;

	(void)s;
	opts_for(&o, next_port(), 20, 64 << 10);
	run_ranks(p, &o, striped, &under3, 60, st);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	setenv("TOPOPLACE_COLL_SOCKETS", "3", 1);
	opts_for(&o, next_port(), 20, 64 << 10);
	run_ranks(p, &o, striped, &three, 60, st);
	assert_int_equal(st[0], 0);
	assert_int_equal(st[1], 0);
	run_matrix(2, 2);
	run_matrix(3, 1);
	setenv("TOPOPLACE_COLL_SOCKETS", "9", 1);
	assert_int_equal(tp_coll_comm_init(p, 0, NULL, &c, &why), TP_ERR_INVAL);
	assert_non_null(strstr(why, "TOPOPLACE_COLL_SOCKETS='9'"));
	tp_free(why);
	unsetenv("TOPOPLACE_COLL_SOCKETS");
	tp_plan_destroy(p);
}

/* A second communicator over plan p next to c, on a port agreed
 * through c; NULL if it failed (said on stderr). */
static tp_coll_comm_t *second_comm(tp_coll_comm_t *c, const tp_plan_t *p)
{
	tp_coll_opts_t o;
	tp_coll_comm_t *d = NULL;
	char *why = NULL;
	int me = tp_coll_comm_rank(c);
	int32_t port = me == 0 ? next_port() : 0;

	if (tp_coll_broadcast(c, &port, 1, TP_COLL_INT32, 0))
		return NULL;
	opts_for(&o, port, 20, 4096);
	if (tp_coll_comm_init(p, me, &o, &d, &why)) {
		fprintf(stderr, "# second comm: %s\n", why);
		tp_free(why);
		return NULL;
	}
	return d;
}

/* Two communicators on one process, used alternately. */
static int two_comms(tp_coll_comm_t *c, void *arg)
{
	tp_coll_comm_t *d = second_comm(c, arg);
	int me = tp_coll_comm_rank(c);
	int64_t x[5];

	if (!d)
		return 2;
	for (int it = 0; it < 3; it++) {
		tp_coll_comm_t *e = it % 2 ? d : c;
		for (int i = 0; i < 5; i++)
			x[i] = me + i;
		if (tp_coll_allreduce(e, x, x, 5, TP_COLL_INT64, TP_COLL_MAX,
				      TP_COLL_ALGO_AUTO))
			return 2;
		for (int i = 0; i < 5; i++)
			if (x[i] != tp_coll_comm_size(c) - 1 + i)
				return 1;
	}
	tp_coll_comm_destroy(d);
	return 0;
}

static void test_two_comms(void **s)
{
	tp_plan_t *p = plan_of(2, 2, 0);

	(void)s;
	run_ranks_ok(p, 20, 4096, two_comms, p, 30, "two comms");
	tp_plan_destroy(p);
}

/* One host, more ranks than this machine has cores: all-reduces of up
 * to TP__COLL_SMALL bytes go through the host segment's one exchange
 * under auto and hierarchical (its waits yield, then sleep); counts on
 * both sides of that bound, odd ones, in place and out, on two
 * communicators used in turn, many rounds, exact int64 / int32 sums and
 * maxima. TOPOPLACE_COLL_YIELD_US=0: every wait sleeps at once. */
#define SMALL_ELEMS (TP_SCHED_HOST_SMALL / 8)
static int host_small(tp_coll_comm_t *c, void *arg)
{
	static int64_t in[SMALL_ELEMS + 1], out[SMALL_ELEMS + 1];
	static const size_t cnt[] = {1,	   3,		7,
				     1031, SMALL_ELEMS, SMALL_ELEMS + 1};
	tp_coll_comm_t *d = second_comm(c, arg), *e = c;
	int me = tp_coll_comm_rank(c), n = tp_coll_comm_size(c);
	tp_err_t err = TP_OK;

	if (!d)
		return 2;
	for (int it = 0; it < 400; it++) {
		size_t k = cnt[it % 6];
		bool max = it % 3 == 0, inplace = it % 2;
		tp_coll_algo_t a =
		    it % 4 < 2 ? TP_COLL_ALGO_AUTO : TP_COLL_ALGO_HIERARCHICAL;
		int64_t *dst = inplace ? in : out;
		e = it % 5 < 2 ? d : c;
		if (it % 7 == 0) { /* int32: half the bytes */
			int32_t *x = (int32_t *)in, *y = (int32_t *)dst;
			for (size_t i = 0; i < k; i++)
				x[i] = (me + 1) * (int32_t)(i + (size_t)it);
			err = tp_coll_allreduce(e, x, y, k, TP_COLL_INT32,
						TP_COLL_SUM, a);
			if (err)
				break;
			for (size_t i = 0; i < k; i++)
				if (y[i] !=
				    (int32_t)(i + (size_t)it) * n * (n + 1) / 2)
					return 1;
			continue;
		}
		for (size_t i = 0; i < k; i++)
			in[i] = (int64_t)(me + 1) * (int64_t)(i + (size_t)it);
		err = tp_coll_allreduce(e, in, dst, k, TP_COLL_INT64,
					max ? TP_COLL_MAX : TP_COLL_SUM, a);
		if (err)
			break;
		for (size_t i = 0; i < k; i++) {
			int64_t v = (int64_t)(i + (size_t)it);
			if (dst[i] != (max ? n * v : v * n * (n + 1) / 2)) {
				fprintf(stderr,
					"# rank %d: round %d count %zu [%zu] "
					"= %lld\n",
					me, it, k, i, (long long)dst[i]);
				return 1;
			}
		}
	}
	if (err)
		return call_failed(e, "allreduce", err);
	tp_coll_comm_destroy(d);
	return tp_coll_barrier(c) ? 2 : 0;
}

static void test_host_small(void **s)
{
	tp_fabric_t *f = tp_test_fat_tree(2, 2, 2, 1, 8, true);
	tp_plan_t *p = plan_on(f, 1, 8, 0);

	(void)s;
	run_ranks_ok(p, 20, 4096, host_small, p, 60, "host small");
	setenv("TOPOPLACE_COLL_YIELD_US", "0", 1);
	run_ranks_ok(p, 20, 4096, host_small, p, 60, "host small, no yield");
	unsetenv("TOPOPLACE_COLL_YIELD_US");
	tp_plan_destroy(p);
	tp_fabric_destroy(f);
}

/* ---- faults ---------------------------------------------------------------
 */

#define VICTIM 2
typedef struct fault {
	bool hang;    /* the victim stops answering instead of dying */
	bool small;   /* 8-byte auto all-reduces (one host: the host segment) */
	bool signals; /* the survivors take a signal every 20 ms (a handler
		       * without SA_RESTART, as Python installs them) */
	bool forked;  /* the victim leaves a forked child alive (a DataLoader
		       * worker) and its peers must still see it gone */
} fault_t;

static void on_tick(int sig)
{
	(void)sig;
}

/* Survivors: 0 = failed naming the victim, 3 = failed naming someone
 * else, 1 = the call succeeded (impossible), 4 = wrong error code. */
static int fault_rank(tp_coll_comm_t *c, void *arg)
{
	const fault_t *f = arg;
	static float b[1 << 18];
	tp_err_t err = TP_OK;

	struct timespec t0, t1;

	if (tp_coll_comm_rank(c) == VICTIM) {
		if (f->forked && fork() == 0) {
			/* outlives its peers' timeout; holds no pipe of the
			 * test driver's open meanwhile */
			close(STDOUT_FILENO);
			close(STDERR_FILENO);
			sleep(3);
			_exit(0);
		}
		if (f->hang)
			sleep(4); /* silent, connections open */
		raise(SIGKILL);
	}
	if (f->signals) {
		struct sigaction sa = {.sa_handler = on_tick};
		struct itimerval tick = {{0, 20000}, {0, 20000}};
		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &tick, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int it = 0; it < (f->small ? 1000000 : 1000) && !err; it++)
		err = tp_coll_allreduce(
		    c, b, b, f->small ? 2 : 1 << 18, TP_COLL_FP32, TP_COLL_SUM,
		    f->small ? TP_COLL_ALGO_AUTO : TP_COLL_ALGO_RING);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!err)
		return 1;
	/* Within the 1.5 s timeout (dead) or one more for the cascade. */
	if ((double)(t1.tv_sec - t0.tv_sec) > (f->hang ? 3.5 : 1.5))
		return 6;
	if (err != TP_ERR_PEER_LOST && (err != TP_ERR_TIMEOUT || f->forked))
		return 4;
	/* A broken communicator fails at once, keeping the first reason. */
	if (tp_coll_barrier(c) != TP_ERR_PEER_LOST)
		return 5;
	const char *d = tp_coll_comm_detail(c);
	fprintf(stderr, "# rank %d: %s\n", tp_coll_comm_rank(c), d);
	return strstr(d, "rank 2 (host ") ? 0 : 3;
}

/* ---- the library runs the schedule --------------------------------------
 */

typedef struct edges_arg {
	tp_coll_algo_t algo;
	size_t count;	/* fp32 elements */
	uint64_t *sent; /* shared with the parent: [rank x size + peer] */
} edges_arg_t;

static int edges_rank(tp_coll_comm_t *c, void *arg)
{
	edges_arg_t *e = arg;
	int n = tp_coll_comm_size(c), me = tp_coll_comm_rank(c);
	float *b = malloc(e->count * sizeof(float));

	if (!b)
		return 3;
	for (size_t i = 0; i < e->count; i++)
		b[i] = (float)(i % 7);
	tp_coll_comm_stats_reset(c);
	tp_err_t err = tp_coll_allreduce(c, b, b, e->count, TP_COLL_FP32,
					 TP_COLL_SUM, e->algo);
	if (err) {
		free(b);
		call_failed(c, "allreduce", err);
		return 1;
	}
	for (size_t i = 0; i < e->count; i++)
		if (b[i] != (float)(i % 7) * (float)n) {
			free(b);
			return 2;
		}
	for (int q = 0; q < n; q++)
		e->sent[(size_t)me * (size_t)n + (size_t)q] =
		    tp_coll_comm_sent_bytes(c, q);
	free(b);
	return 0;
}

static uint32_t host_of_rank(const tp_plan_t *p, int r)
{
	for (size_t h = 0; h < tp_plan_nhosts(p); h++) {
		const tp_plan_host_t *ph = tp_plan_host(p, h);
		if ((uint32_t)r >= ph->first_rank &&
		    (uint32_t)r < ph->first_rank + ph->nranks)
			return (uint32_t)h;
	}
	return TP_PLAN_NONE;
}

/* Run algo on p, then compare what every rank sent with the plan's
 * schedule for it: between two hosts, the bytes their ranks sent each
 * other equal S x the fractions of the schedule's edges between them,
 * every phase summed (mirrors included), exactly. Inside a host the self
 * edges are per-rank loads: hierarchical's sum to g x frac per host when
 * its host phases run as rings (TOPOPLACE_COLL_SHM=0), and go through
 * the host segment, not the transport, otherwise (seg: none posted); a
 * ring rank passes at most the self edge's share. */
static void check_edges(const tp_plan_t *p, tp_coll_algo_t algo,
			tp_sched_algo_t salgo, size_t count, bool seg)
{
	size_t n = tp_plan_world_size(p), nh = tp_plan_nhosts(p);
	double S = (double)count * sizeof(float);
	double got[8][8] = {{0}}, want[8][8] = {{0}}, self[8] = {0};
	double maxself[8] = {0};
	edges_arg_t e = {algo, count, NULL};
	tp_sched_t *s = NULL;

	assert_true(nh <= 8 && n <= 16);
	e.sent = mmap(NULL, n * n * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(e.sent != MAP_FAILED);
	run_ranks_ok(p, 20, 256 << 10, edges_rank, &e, 30,
		     tp_coll_algo_name(algo));
	for (size_t r = 0; r < n; r++) {
		uint32_t a = host_of_rank(p, (int)r);
		double local = 0;
		for (size_t q = 0; q < n; q++) {
			uint32_t b = host_of_rank(p, (int)q);
			got[a][b] += (double)e.sent[r * n + q];
			if (a == b)
				local += (double)e.sent[r * n + q];
		}
		if (local > maxself[a])
			maxself[a] = local;
	}
	assert_int_equal(tp_plan_sched(p, salgo, &s), TP_OK);
	for (size_t i = 0; i < tp_sched_nphases(s); i++) {
		const tp_sched_phase_t *ph = tp_sched_phase(s, i);
		for (size_t x = 0; x < ph->nedges; x++) {
			const tp_sched_edge_t *d = &ph->edges[x];
			if (d->src != d->dst)
				want[d->src][d->dst] += d->frac * S;
			else
				self[d->src] += d->frac * S;
		}
	}
	for (size_t a = 0; a < nh; a++) {
		double g = tp_plan_host(p, a)->nranks;
		for (size_t b = 0; b < nh; b++)
			if (a != b && fabs(got[a][b] - want[a][b]) > 0.5)
				fail_msg(
				    "%s: hosts %zu -> %zu sent %.0f bytes, "
				    "the schedule says %.1f",
				    tp_coll_algo_name(algo), a, b, got[a][b],
				    want[a][b]);
		if (salgo == TP_SCHED_HIER &&
		    fabs(got[a][a] - (seg ? 0 : g * self[a])) > 0.5)
			fail_msg("hierarchical: host %zu sent %.0f bytes "
				 "inside, the schedule says %.1f%s",
				 a, got[a][a], g * self[a],
				 seg ? " through the segment" : "");
		if (salgo == TP_SCHED_RING && maxself[a] > self[a] + 0.5)
			fail_msg("ring: a rank of host %zu sent %.0f bytes "
				 "inside, the schedule at most %.1f",
				 a, maxself[a], self[a]);
	}
	tp_sched_destroy(s);
	munmap(e.sent, n * n * sizeof(uint64_t));
}

/* Two level-1 groups of two hosts, two ranks per host (the shape the
 * hierarchical channels are about: every rank crosses on its own rail),
 * and three hosts in groups of two and one (uneven: the lone host holds
 * both channels and runs both cross rings): for ring, hierarchical and
 * tree the bytes each rank sends each peer, summed per pair of hosts,
 * are the plan's schedule's edges. */
static void test_runs_the_schedule(void **s)
{
	static const tp_coll_algo_t algo[3] = {
	    TP_COLL_ALGO_RING, TP_COLL_ALGO_HIERARCHICAL, TP_COLL_ALGO_TREE};
	static const tp_sched_algo_t salgo[3] = {TP_SCHED_RING, TP_SCHED_HIER,
						 TP_SCHED_TREE};
	tp_plan_t *p;

	(void)s;
	for (int shape = 0; shape < 3; shape++) {
		/* shape 2: a NIC per GPU, each rank's edges on its rail */
		p = shape == 2	 ? plan_on(coll_fabric_nics(), 4, 2, 0)
		    : shape == 1 ? plan_of(3, 2, 0)
				 : plan_of(4, 2, 0);
		if (shape != 1) {
			assert_int_equal(tp_plan_ngroups(p), 2);
			assert_int_equal(tp_plan_group(p, 0)->nhosts, 2);
		}
		for (int a = 0; a < 3; a++)
			/* 12288 floats: every segment of every level even */
			check_edges(p, algo[a], salgo[a], 12288, true);
		setenv("TOPOPLACE_COLL_SHM", "0", 1);
		check_edges(p, algo[1], salgo[1], 12288, false);
		unsetenv("TOPOPLACE_COLL_SHM");
		tp_plan_destroy(p);
	}
}

/* ---- HCA addresses -------------------------------------------------------
 */

/* Every TCP connection of this rank starts or ends at want (an address
 * in host order); the sockets work. */
static int conns_from(tp_coll_comm_t *c, uint32_t want)
{
	int me = tp_coll_comm_rank(c), conns = 0;
	float b[64];

	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_in a, peer;
		socklen_t al = sizeof(a), pl = sizeof(peer);
		if (getsockname(fd, (struct sockaddr *)&a, &al) < 0 ||
		    a.sin_family != AF_INET ||
		    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
			continue;
		conns++;
		if (ntohl(a.sin_addr.s_addr) != want) {
			fprintf(stderr, "# rank %d: a connection from %s\n", me,
				inet_ntoa(a.sin_addr));
			return 2;
		}
	}
	for (int i = 0; i < 64; i++)
		b[i] = 1;
	if (conns == 0 || tp_coll_allreduce(c, b, b, 64, TP_COLL_FP32,
					    TP_COLL_SUM, TP_COLL_ALGO_RING))
		return 3;
	return b[63] == (float)tp_coll_comm_size(c) ? 0 : 4;
}

/* ... at 127.0.0.(2 + the rail of its HCA), the address its HCA was
 * given. */
static int hca_rank(tp_coll_comm_t *c, void *arg)
{
	const tp_plan_t *p = arg;
	int me = tp_coll_comm_rank(c);
	const tp_plan_host_t *h = tp_plan_host(p, host_of_rank(p, me));
	uint32_t lr = (uint32_t)h->ranks[(uint32_t)me - h->first_rank].rail;

	return conns_from(c, 0x7f000002u + lr);
}

/* ... at *arg (host order), whatever its HCA. */
static int hca_fixed_rank(tp_coll_comm_t *c, void *arg)
{
	return conns_from(c, *(const uint32_t *)arg);
}

/* TOPOPLACE_COLL_HCA_ADDRS gives each HCA an address: a rank's peer
 * connections use its own HCA's (one rail per rank), and an address that
 * is not local fails init naming it. */
static void test_hca_addrs(void **s)
{
	tp_plan_t *p = plan_on(coll_fabric_nics(), 2, 4, 0);
	const tp_plan_host_t *h = tp_plan_host(p, 0);
	tp_coll_opts_t o;
	tp_coll_comm_t *c = NULL;
	char env[256] = "", *why = NULL;
	int st[16];

	(void)s;
	/* the generated hosts: rank l's HCA on rail r, every host alike */
	for (uint32_t l = 0; l < h->nranks; l++) {
		size_t n = strlen(env);
		assert_non_null(h->ranks[l].hca);
		snprintf(env + n, sizeof(env) - n, "%s%s=127.0.0.%d",
			 n ? "," : "", h->ranks[l].hca, 2 + h->ranks[l].rail);
	}
	assert_int_not_equal(h->ranks[0].rail, h->ranks[3].rail);
	setenv("TOPOPLACE_COLL_HCA_ADDRS", env, 1);
	opts_for(&o, next_port(), 20, 4096);
	run_ranks(p, &o, hca_rank, p, 30, st);
	expect_ranks_ok(p, st, "HCA addresses");

	/* TOPOPLACE_COLL_HCA_NAMES: the node names each HCA otherwise
	 * (ibN for the plan's mlx5_N); the addresses go by the local names */
	char names[256] = "";
	env[0] = '\0';
	for (uint32_t l = 0; l < h->nranks; l++) {
		size_t n = strlen(env), m = strlen(names);
		const char *d = h->ranks[l].hca;
		snprintf(env + n, sizeof(env) - n, "%sib%s=127.0.0.%d",
			 n ? "," : "", d + strlen("mlx5_"),
			 2 + h->ranks[l].rail);
		snprintf(names + m, sizeof(names) - m, "%s%s=ib%s",
			 m ? "," : "", d, d + strlen("mlx5_"));
	}
	setenv("TOPOPLACE_COLL_HCA_ADDRS", env, 1);
	setenv("TOPOPLACE_COLL_HCA_NAMES", names, 1);
	opts_for(&o, next_port(), 20, 4096);
	run_ranks(p, &o, hca_rank, p, 30, st);
	expect_ranks_ok(p, st, "HCA addresses by local names");
	setenv("TOPOPLACE_COLL_HCA_NAMES", "mlx5_0", 1);
	assert_int_equal(tp_coll_comm_init(p, 0, &o, &c, &why), TP_ERR_INVAL);
	assert_non_null(strstr(why, "'mlx5_0' is not FABRIC_DEV=LOCAL_DEV"));
	assert_null(c);
	tp_free(why);
	why = NULL;
	unsetenv("TOPOPLACE_COLL_HCA_NAMES");

	/* TOPOPLACE_COLL_HCA (the SPANK plugin's, for a task whose GPU is
	 * not its local rank's): every rank leaves by that HCA instead of
	 * its plan's; a value that is not a device name fails init */
	env[0] = '\0';
	for (uint32_t l = 0; l < h->nranks; l++) {
		size_t n = strlen(env);
		snprintf(env + n, sizeof(env) - n, "%s%s=127.0.0.%d",
			 n ? "," : "", h->ranks[l].hca, 2 + h->ranks[l].rail);
	}
	setenv("TOPOPLACE_COLL_HCA_ADDRS", env, 1);
	setenv("TOPOPLACE_COLL_HCA", h->ranks[3].hca, 1);
	uint32_t want = 0x7f000002u + (uint32_t)h->ranks[3].rail;
	opts_for(&o, next_port(), 20, 4096);
	run_ranks(p, &o, hca_fixed_rank, &want, 30, st);
	expect_ranks_ok(p, st, "TOPOPLACE_COLL_HCA");
	static const char *const notdev[] = {"mlx5/0", "mlx5_0,mlx5_1",
					     "mlx5 0", "a=b",
					     "0123456789012345678901234567890"
					     "1234567890123456789012345678901"
					     "23"};
	for (size_t i = 0; i < sizeof(notdev) / sizeof(notdev[0]); i++) {
		setenv("TOPOPLACE_COLL_HCA", notdev[i], 1);
		tp_err_t err = tp_coll_comm_init(p, 0, &o, &c, &why);
		if (err != TP_ERR_INVAL || !strstr(why, "is not a device name"))
			fail_msg("'%s': %s: %s", notdev[i], tp_strerror(err),
				 why ? why : "");
		assert_null(c);
		tp_free(why);
		why = NULL;
	}
	unsetenv("TOPOPLACE_COLL_HCA");

	snprintf(env, sizeof(env), "%s=192.0.2.7", h->ranks[0].hca);
	setenv("TOPOPLACE_COLL_HCA_ADDRS", env, 1);
	assert_int_equal(tp_coll_comm_init(p, 0, &o, &c, &why), TP_ERR_INVAL);
	assert_non_null(strstr(why, "192.0.2.7"));
	assert_null(c);
	tp_free(why);
	why = NULL;

	/* a malformed entry fails init at once naming it (it matched no
	 * device, so every rank ran without its rail, and this one waited
	 * for the others) */
	static const char *const typo[] = {"%s:127.0.0.2", "%s=127.0.0",
					   "=127.0.0.2,%s=127.0.0.2",
					   "%s = 127.0.0.2"};
	opts_for(&o, next_port(), 1, 4096);
	for (size_t i = 0; i < sizeof(typo) / sizeof(typo[0]); i++) {
		snprintf(env, sizeof(env), typo[i], h->ranks[0].hca);
		setenv("TOPOPLACE_COLL_HCA_ADDRS", env, 1);
		tp_err_t err = tp_coll_comm_init(p, 0, &o, &c, &why);
		if (err != TP_ERR_INVAL || !strstr(why, "is not DEV=IPv4"))
			fail_msg("'%s': %s: %s", env, tp_strerror(err),
				 why ? why : "");
		assert_null(c);
		tp_free(why);
		why = NULL;
	}
	unsetenv("TOPOPLACE_COLL_HCA_ADDRS");
	tp_plan_destroy(p);
}

static void run_fault(bool hang, bool one_host, bool signals, bool forked)
{
	tp_plan_t *p = one_host ? plan_of(1, 4, 0) : plan_of(2, 2, 0);
	tp_coll_opts_t o;
	fault_t f = {.hang = hang,
		     .small = one_host,
		     .signals = signals,
		     .forked = forked};
	int st[16], named = 0;

	opts_for(&o, next_port(), 1.5, 64 << 10);
	double t = run_ranks(p, &o, fault_rank, &f, 10, st);
	for (int r = 0; r < 4; r++) {
		if (r == VICTIM)
			continue;
		if (st[r] != 0 && st[r] != 3)
			fail_msg("rank %d exit %d", r, st[r]);
		named += st[r] == 0;
	}
	assert_true(named >= 1);
	/* the hung victim itself lives 4 s */
	assert_true(t < (hang ? 7.0 : 4.0));
	tp_plan_destroy(p);
}

static void test_killed_peer(void **s)
{
	(void)s;
	run_fault(false, false, false, false);
}

/* One host, small auto all-reduces: the host segment's waits notice a
 * dead neighbour's closed connection, and time out naming a hung one;
 * also while a signal every 20 ms cuts every wait short (they checked
 * only after a whole 50 ms asleep, so neither ever came). */
static void test_small_faults(void **s)
{
	(void)s;
	run_fault(false, true, false, false);
	run_fault(true, true, false, false);
	run_fault(false, true, true, false);
	run_fault(true, true, true, false);
}

static void test_hung_peer(void **s)
{
	(void)s;
	run_fault(true, false, false, false);
}

/* A rank that dies leaving a forked child alive (a DataLoader worker) is
 * still seen gone: the child closed its copies of the rank's sockets and
 * FIFOs (it kept them open, and its peers timed out instead). Over TCP
 * between hosts and over the host's shared memory. */
static void test_forked_victim(void **s)
{
	(void)s;
	run_fault(false, false, false, true);
	run_fault(false, true, false, true);
}

/* A child forked by a rank cannot use the communicator (every call:
 * TP_ERR_INVAL, saying why) and destroying it there leaves the parent's
 * working: after its child is gone the rank all-reduces with the others. */
static int fork_rank(tp_coll_comm_t *c, void *arg)
{
	int n = tp_coll_comm_size(c), st;
	float x = 1;
	tp_coll_comp_opts_t co;
	tp_err_t err;

	(void)arg;
	tp_coll_comp_opts_defaults(&co);
	co.kind = TP_COLL_COMP_INT8;
	pid_t pid = fork();
	if (pid < 0)
		return 7;
	if (pid == 0) {
		int bad =
		    tp_coll_barrier(c) != TP_ERR_INVAL ||
		    !strstr(tp_coll_comm_detail(c), "forked") ||
		    tp_coll_allreduce(c, &x, &x, 1, TP_COLL_FP32, TP_COLL_SUM,
				      TP_COLL_ALGO_RING) != TP_ERR_INVAL ||
		    tp_coll_allreduce_compressed(c, &x, 1, TP_COLL_SUM, &co,
						 0) != TP_ERR_INVAL;
		tp_coll_comm_destroy(c);
		_exit(bad);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return 8;
	for (int alg = TP_COLL_ALGO_RING; alg <= TP_COLL_ALGO_TREE; alg++) {
		x = 1;
		if ((err = tp_coll_allreduce(c, &x, &x, 1, TP_COLL_FP32,
					     TP_COLL_SUM, alg)))
			return call_failed(c, "allreduce", err);
		if (x != (float)n)
			return 1;
	}
	return 0;
}

/* Unchecked, a call one rank refuses (here a NULL buffer) breaks its
 * communicator: the others fail naming it, where they returned TP_OK
 * with its next call's data in their result. */
static int refuse_rank(tp_coll_comm_t *c, void *arg)
{
	float x[64];
	tp_err_t err;

	(void)arg;
	for (int i = 0; i < 64; i++)
		x[i] = 1;
	if (tp_coll_comm_rank(c) == 1) {
		if (tp_coll_allreduce(c, NULL, x, 64, TP_COLL_FP32, TP_COLL_SUM,
				      TP_COLL_ALGO_RING) != TP_ERR_INVAL)
			return 1;
		/* what its peers paired with */
		err = tp_coll_allreduce(c, x, x, 64, TP_COLL_FP32, TP_COLL_SUM,
					TP_COLL_ALGO_RING);
		return err == TP_ERR_PEER_LOST &&
			       strstr(tp_coll_comm_detail(c), "NULL buffer")
			   ? 0
			   : 2;
	}
	err = tp_coll_allreduce(c, x, x, 64, TP_COLL_FP32, TP_COLL_SUM,
				TP_COLL_ALGO_RING);
	if (!err)
		return 3;
	fprintf(stderr, "# rank %d: %s\n", tp_coll_comm_rank(c),
		tp_coll_comm_detail(c));
	return err == TP_ERR_PEER_LOST ? 0 : 4;
}

/* fn on 4 ranks of one host (shared memory) and of 2 hosts (TCP too). */
static void run_one_two(rank_fn fn, const char *what)
{
	tp_plan_t *one = plan_of(1, 4, 0), *two = plan_of(2, 2, 0);
	char a[96], b[96];

	snprintf(a, sizeof(a), "one host, %s", what);
	snprintf(b, sizeof(b), "two hosts, %s", what);
	run_ranks_ok(one, 20, 4096, fn, NULL, 30, a);
	run_ranks_ok(two, 20, 4096, fn, NULL, 30, b);
	tp_plan_destroy(one);
	tp_plan_destroy(two);
}

static void test_one_rank_refuses(void **s)
{
	(void)s;
	run_one_two(refuse_rank, "rank 1 refuses");
}

static void test_fork_child(void **s)
{
	(void)s;
	run_one_two(fork_rank, "forks");
}

/* A very long timeout (or INFINITY, "never") waits for a late rank
 * instead of failing at once: timeout_s x 1e9 must not overflow the
 * deadline arithmetic (it made the host segment's wait report "no
 * progress for 1e+10 s" after its first 50 ms slice). */
static int late_rank(tp_coll_comm_t *c, void *arg)
{
	tp_err_t err;

	(void)arg;
	if (tp_coll_comm_rank(c) == 1)
		usleep(300 * 1000);
	if ((err = tp_coll_barrier(c)))
		return call_failed(c, "barrier", err);
	float x = 1;
	if ((err = tp_coll_allreduce(c, &x, &x, 1, TP_COLL_FP32, TP_COLL_SUM,
				     TP_COLL_ALGO_RING)))
		return call_failed(c, "allreduce", err);
	return x == (float)tp_coll_comm_size(c) ? 0 : 1;
}

static void test_long_timeout(void **s)
{
	static const double t[] = {1e10, INFINITY};
	tp_plan_t *one = plan_of(1, 2, 0), *two = plan_of(2, 1, 0);

	(void)s;
	for (size_t i = 0; i < 2; i++) {
		run_ranks_ok(one, t[i], 4096, late_rank, NULL, 20,
			     "one host, long timeout");
		run_ranks_ok(two, t[i], 4096, late_rank, NULL, 20,
			     "two hosts, long timeout");
	}
	tp_plan_destroy(one);
	tp_plan_destroy(two);
}

/* A slow link, made here: the library's send() calls resolve to this
 * one (the program defines the symbol the shared library imports), which
 * in a rank that sets slow_send_us first sleeps that long and moves at
 * most slow_send_max bytes. Bytes keep moving, just slowly. */
static long slow_send_us;
static size_t slow_send_max;

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, const void *, size_t, int);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "send");
	if (slow_send_us > 0) {
		usleep((useconds_t)slow_send_us);
		if (len > slow_send_max)
			len = slow_send_max;
	}
	return real(fd, buf, len, flags);
}

enum { SLOW_RANK = 1, SLOW_COUNT = 1 << 20 };

static int slow_rail_rank(tp_coll_comm_t *c, void *arg)
{
	float *x = malloc(SLOW_COUNT * sizeof(*x));
	int n = tp_coll_comm_size(c), me = tp_coll_comm_rank(c), bad = 0;
	tp_err_t err;

	(void)arg;
	if (!x)
		return 4;
	for (size_t i = 0; i < SLOW_COUNT; i++)
		x[i] = (float)(me + 1);
	if (me == SLOW_RANK) {
		slow_send_us = 20 * 1000;
		slow_send_max = 16 << 10;
	}
	if ((err = tp_coll_allreduce(c, x, x, SLOW_COUNT, TP_COLL_FP32,
				     TP_COLL_SUM, TP_COLL_ALGO_HIERARCHICAL))) {
		free(x);
		return call_failed(c, "allreduce", err);
	}
	for (size_t i = 0; i < SLOW_COUNT; i++)
		bad += x[i] != (float)(n * (n + 1) / 2);
	free(x);
	return bad ? 1 : 0;
}

/* One rail slow but moving (rank 1 sends 16 KiB every 20 ms: its 4 MiB
 * hierarchical all-reduce takes seconds) with a 0.5 s timeout: rank 0,
 * on the same host, is done with its own rail long before and waits in
 * the host segment for rank 1's part. tp_coll.h promises a transfer that
 * moves never times out; the wait counted from rank 0's own last byte
 * and failed it after 0.5 s ("no progress ... waiting for rank 1"). */
static void test_slow_rail(void **s)
{
	tp_plan_t *p = plan_on(coll_fabric_nics(), 2, 2, 0);
	tp_coll_opts_t o;
	int st[16];

	(void)s;
	opts_for(&o, next_port(), 0.5, 64 << 10);
	double t = run_ranks(p, &o, slow_rail_rank, NULL, 60, st);
	expect_ranks_ok(p, st, "a slow rail within the timeout of each move");
	/* slower than the timeout: the case the test is about happened */
	if (t < 2 * o.timeout_s)
		fail_msg("%.2f s: not slow enough to test the wait", t);
	tp_plan_destroy(p);
}

/* Ranks that start over a longer span than timeout_s, each well within it
 * of the one before (6 ranks 400 ms apart, 1 s timeout): init waits
 * timeout_s without progress, not in all (rank 0 failed after 1 s with
 * ranks 3-5 "never came", the early ranks waiting for the table). */
static void test_staggered_start(void **s)
{
	tp_plan_t *p = plan_of(3, 2, 0);

	(void)s;
	join_delay_ms = 400;
	run_ranks_ok(p, 1, 4096, late_rank, NULL, 30,
		     "ranks joining 400 ms apart, 1 s timeout");
	join_delay_ms = 0;
	tp_plan_destroy(p);
}

/* ---- init errors ----------------------------------------------------------
 */

/* Joining p as rank refused alone, before any connection: TP_ERR_INVAL
 * with a reason containing what (NULL: any). */
static void init_refused(const tp_plan_t *p, int rank, const char *what)
{
	tp_coll_comm_t *c = NULL;
	char *why = NULL;

	assert_int_equal(tp_coll_comm_init(p, rank, NULL, &c, &why),
			 TP_ERR_INVAL);
	if (what && !strstr(why, what))
		fail_msg("reason '%s' lacks '%s'", why, what);
	assert_null(c);
	tp_free(why);
}

static void test_bad_rank(void **s)
{
	tp_plan_t *p = plan_of(2, 2, 0);

	(void)s;
	init_refused(p, 4, "rank 4 is not in the plan");
	init_refused(p, -1, NULL);
	tp_plan_destroy(p);
}

/* A zeroed tp_coll_opts_t is the defaults (timeout 30 s, 256 KiB
 * chunks), as master_port and sockets already were; a negative timeout
 * or a chunk under 8 bytes is still refused, naming the option and what
 * it may be. */
static void test_opts_zero(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);
	tp_coll_opts_t o = {0};
	tp_coll_comm_t *c = NULL;
	char *why = NULL;
	int st[16];

	(void)s;
	o.master_addr = "127.0.0.1";
	o.master_port = next_port();
	run_ranks(p, &o, late_rank, NULL, 30, st);
	expect_ranks_ok(p, st, "zeroed options");
	o.timeout_s = -1;
	assert_int_equal(tp_coll_comm_init(p, 0, &o, &c, &why), TP_ERR_INVAL);
	assert_non_null(strstr(why, "timeout_s -1: must be above 0"));
	tp_free(why);
	why = NULL;
	o.timeout_s = 0;
	o.chunk_bytes = 4;
	assert_int_equal(tp_coll_comm_init(p, 0, &o, &c, &why), TP_ERR_INVAL);
	assert_non_null(strstr(why, "chunk_bytes 4: not 8..1073741824"));
	assert_null(c);
	tp_free(why);
	tp_plan_destroy(p);
}

/* An init that runs out of memory (1 GiB chunks under a 4 GiB address
 * space) closes no descriptor it never opened: its peers' were zeroed,
 * and destroy closed fd 0, the process's stdin, over and over. Not under
 * AddressSanitizer, whose shadow memory needs more address space. */
#if defined(__SANITIZE_ADDRESS__)
#define TP_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_TEST_ASAN 1
#endif
#endif
static void test_init_nomem_fds(void **s)
{
#ifdef TP_TEST_ASAN
	(void)s;
	skip();
#else
	tp_plan_t *p = plan_of(2, 1, 0);
	pid_t pid;
	int st;

	(void)s;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)4 << 30, (rlim_t)4 << 30};
		tp_coll_opts_t o;
		tp_coll_comm_t *c = NULL;
		char *why = NULL;

		if (fcntl(0, F_GETFD) < 0 && open("/dev/null", O_RDONLY) != 0)
			_exit(3);
		if (setrlimit(RLIMIT_AS, &rl) < 0)
			_exit(4);
		opts_for(&o, next_port(), 2, (size_t)1 << 30);
		if (tp_coll_comm_init(p, 0, &o, &c, &why) != TP_ERR_NOMEM)
			_exit(2);
		_exit(fcntl(0, F_GETFD) < 0 ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) != 0)
		fail_msg("child exit %d (1: fd 0 closed)", WEXITSTATUS(st));
	tp_plan_destroy(p);
#endif
}

static char *write_plan(const tp_plan_t *p, size_t cut)
{
	static char path[64];
	char *json = NULL;

	snprintf(path, sizeof(path), "/tmp/tp_coll_plan_%d.json",
		 (int)getpid());
	assert_int_equal(tp_plan_to_json(p, &json), TP_OK);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	size_t len = strlen(json);
	fwrite(json, 1, cut && cut < len ? cut : len, fp);
	fclose(fp);
	tp_free(json);
	return path;
}

static void test_truncated_plan(void **s)
{
	tp_plan_t *p = plan_of(2, 2, 0);
	tp_coll_comm_t *c = NULL;
	char *why = NULL, *path = write_plan(p, 200);

	(void)s;
	assert_int_equal(tp_coll_comm_init_file(path, 0, NULL, &c, &why),
			 TP_ERR_PARSE);
	assert_non_null(strstr(why, path));
	assert_null(c);
	tp_free(why);
	unlink(path);
	tp_plan_destroy(p);
}

/* Rank 0 joins with plan a, rank 1 with plan b and sockets1 sockets per
 * peer (0: the default): both must fail init with TP_ERR_MISMATCH and a
 * reason containing what. */
static const char *mismatch_env1; /* putenv()ed by rank 1 when set */
static double mismatch_timeout = 5;

static void expect_mismatch(const tp_plan_t *a, const tp_plan_t *b,
			    int sockets1, const char *what)
{
	tp_coll_opts_t o;
	int port = next_port();
	pid_t pid[2];

	opts_for(&o, port, mismatch_timeout, 4096);
	fflush(NULL);
	for (int r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			tp_coll_comm_t *c = NULL;
			char *why = NULL;
			o.sockets = r ? sockets1 : 0;
			if (r && mismatch_env1)
				putenv((char *)mismatch_env1);
			tp_err_t err =
			    tp_coll_comm_init(r ? b : a, r, &o, &c, &why);
			if (err == TP_ERR_MISMATCH && strstr(why, what))
				_exit(0);
			fprintf(stderr, "# rank %d: %s: %s\n", r,
				tp_strerror(err), why ? why : "");
			_exit(1);
		}
	}
	for (int r = 0; r < 2; r++) {
		int ws;
		assert_int_equal(waitpid(pid[r], &ws, 0), pid[r]);
		assert_true(WIFEXITED(ws));
		assert_int_equal(WEXITSTATUS(ws), 0);
	}
}

/* Rank 1 brings a plan over other hosts (same world size): it is turned
 * away, and rank 0, its own rank 1 never coming, fails after its timeout
 * naming the peer it refused. */
static void test_mismatched_plan(void **s)
{
	tp_plan_t *a = plan_of(2, 1, 0), *b = plan_of(2, 1, 2);

	(void)s;
	mismatch_timeout = 3;
	expect_mismatch(a, b, 0, "another plan");
	mismatch_timeout = 5;
	tp_plan_destroy(a);
	tp_plan_destroy(b);
}

/* Child of the tests below: init rank r of p (port 0: the default from
 * SLURM_JOB_ID / SLURM_STEP_ID, step: the latter or NULL) with this
 * timeout; exit 0 when init ends with want (and, failing, its reason
 * contains what). */
static void join_within(const tp_plan_t *p, int r, int port, const char *step,
			double timeout_s, tp_err_t want, const char *what)
{
	tp_coll_opts_t o;
	tp_coll_comm_t *c = NULL;
	char *why = NULL;

	opts_for(&o, port, timeout_s, 4096);
	if (step)
		setenv("SLURM_STEP_ID", step, 1);
	tp_err_t err = tp_coll_comm_init(p, r, &o, &c, &why);
	if (err == want && (!err || strstr(why, what)))
		_exit(0);
	fprintf(stderr, "# rank %d (step %s): %s: %s\n", r, step ? step : "-",
		tp_strerror(err), why ? why : "");
	_exit(1);
}

/* join_within with a 10 s timeout. */
static void join_as(const tp_plan_t *p, int r, int port, const char *step,
		    tp_err_t want, const char *what)
{
	join_within(p, r, port, step, 10, want, what);
}

static void reap_ok(pid_t pid)
{
	int ws;

	assert_int_equal(waitpid(pid, &ws, 0), pid);
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
}

/* A rank of another plan reaching rank 0's port (another step or job on
 * the same port) is turned away alone: rank 0 and its own rank 1, coming
 * later, still make their communicator. */
static void test_foreign_peer_turned_away(void **s)
{
	tp_plan_t *a = plan_of(2, 1, 0), *b = plan_of(2, 1, 2),
		  *big = plan_of(4, 1, 0);
	int port = next_port();
	pid_t a0, a1, x;

	(void)s;
	fflush(NULL);
	if (!(a0 = fork()))
		join_as(a, 0, port, NULL, TP_OK, "");
	/* another plan of the same size, then another world size */
	if (!(x = fork()))
		join_as(b, 1, port, NULL, TP_ERR_MISMATCH, "another plan");
	reap_ok(x);
	if (!(x = fork()))
		join_as(big, 3, port, NULL, TP_ERR_MISMATCH, "world size 4");
	reap_ok(x);
	if (!(a1 = fork()))
		join_as(a, 1, port, NULL, TP_OK, "");
	reap_ok(a0);
	reap_ok(a1);
	tp_plan_destroy(a);
	tp_plan_destroy(b);
	tp_plan_destroy(big);
}

/* A rank's log (the library's sink): whether it said its
 * recommendations were not rank 0's. */
static bool said_differ;
static void note_differ(tp_log_level_t level, const char *msg, void *arg)
{
	(void)arg;
	if (level == TP_LOG_WARN && strstr(msg, "differ from rank 0's"))
		said_differ = true;
}

/* Rank r of plan p: init, then every plan size's auto choice must be
 * want's (rank 0's plan), and the rank must have said so when its own
 * plan recommends otherwise. */
static void join_adopt(const tp_plan_t *p, int r, int port,
		       const tp_plan_t *want)
{
	tp_coll_opts_t o;
	tp_coll_comm_t *c = NULL;
	char *why = NULL;
	bool differ = false;

	opts_for(&o, port, 10, 4096);
	coll_log_set(note_differ);
	if (tp_coll_comm_init(p, r, &o, &c, &why)) {
		fprintf(stderr, "# rank %d: %s\n", r, why ? why : "?");
		_exit(1);
	}
	for (size_t i = 0; i < tp_plan_nsizes(want); i++) {
		size_t bytes = (size_t)tp_plan_size(want, i);
		tp_algo_t a = tp_plan_recommend(want, i);
		tp_coll_algo_t w = a == TP_ALGO_TREE ? TP_COLL_ALGO_TREE
				   : a == TP_ALGO_HIERARCHICAL
				       ? TP_COLL_ALGO_HIERARCHICAL
				       : TP_COLL_ALGO_RING;
		differ |= tp_plan_recommend(p, i) != a;
		if (tp_coll_algo_select(c, bytes) != w) {
			fprintf(stderr, "# rank %d: %zu bytes: not rank 0's\n",
				r, bytes);
			_exit(1);
		}
	}
	tp_coll_comm_destroy(c);
	_exit(said_differ == differ ? 0 : 2);
}

/* The model's part of the plan (predictions, recommendations) is not
 * compared at rendezvous: a rank whose plan was priced and ranks whose
 * plan was not (a node that could not price) make one communicator, and
 * every rank runs rank 0's recommendations, whichever it is; a rank
 * whose own differ says so. */
static void test_adopts_rank0_choice(void **s)
{
	tp_plan_t *ruled = plan_of(4, 1, 0), *priced = priced_plan(4, 1, false);
	bool differ = false;

	(void)s;
	assert_true(tp_plan_predicted(priced));
	for (size_t i = 0; i < tp_plan_nsizes(ruled); i++)
		differ |=
		    tp_plan_recommend(priced, i) != tp_plan_recommend(ruled, i);
	assert_true(differ); /* else the test shows nothing */
	for (int first = 0; first < 2; first++) {
		const tp_plan_t *r0 = first ? priced : ruled;
		int port = next_port();
		pid_t pid[4];

		int ws, bad = 0;

		fflush(NULL);
		for (int r = 0; r < 4; r++)
			if (!(pid[r] = fork()))
				join_adopt((r + first) % 2 ? priced : ruled, r,
					   port, r0);
		/* every child reaped before judging */
		for (int r = 0; r < 4; r++)
			if (waitpid(pid[r], &ws, 0) != pid[r] ||
			    !WIFEXITED(ws) || WEXITSTATUS(ws))
				bad++;
		assert_int_equal(bad, 0);
	}
	tp_plan_destroy(priced);
	tp_plan_destroy(ruled);
}

/* Two steps of one job starting at once take the default port (no
 * MASTER_PORT): each step its own, so both make their communicators (one
 * port per job had the second rank 0 fail: address in use). */
static void test_steps_own_ports(void **s)
{
	tp_plan_t *a = plan_of(2, 1, 0), *b = plan_of(2, 1, 2);
	char job[32];
	pid_t pid[4];

	(void)s;
	snprintf(job, sizeof(job), "%d", 1000 + (int)(getpid() % 8000));
	setenv("SLURM_JOB_ID", job, 1);
	unsetenv("MASTER_PORT");
	fflush(NULL);
	for (int k = 0; k < 4; k++)
		if (!(pid[k] = fork()))
			join_as(k < 2 ? a : b, k % 2, 0, k < 2 ? "0" : "1",
				TP_OK, "");
	/* every child reaped, the environment restored, then judged */
	int ws[4], bad = 0;
	for (int k = 0; k < 4; k++)
		if (waitpid(pid[k], &ws[k], 0) != pid[k] || !WIFEXITED(ws[k]) ||
		    WEXITSTATUS(ws[k]))
			bad++;
	unsetenv("SLURM_JOB_ID");
	tp_plan_destroy(a);
	tp_plan_destroy(b);
	assert_int_equal(bad, 0);
}

/* Rank 1 asks for 2 sockets per peer, rank 0 for 1: both fail init. */
static void test_sockets_mismatch(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);

	(void)s;
	expect_mismatch(p, p, 2, "sockets per peer");
	tp_plan_destroy(p);
}

/* ---- TOPOPLACE_COLL_CHECK: every call compared across the ranks ------
 */

/* Expected failure of one checked call: every rank gets want, and the
 * detail names the odd call; 0 when so, else a line and 10 + step. */
static int check_fail(tp_coll_comm_t *c, int step, tp_err_t err, tp_err_t want,
		      const char *needle)
{
	const char *d = tp_coll_comm_detail(c);

	if (err == want && strstr(d, needle) && !strchr(d, '\n'))
		return 0;
	fprintf(stderr, "# rank %d step %d: %s: %s (wanted %s, '%s')\n",
		tp_coll_comm_rank(c), step, tp_strerror(err), d,
		tp_strerror(want), needle);
	return 10 + step;
}

/* Rank 2 (of 4 on 2 hosts: shared memory and TCP) calls what the others
 * do not; every rank fails at once, naming it, and the next agreed call
 * works. */
static int check_rank(tp_coll_comm_t *c, void *arg)
{
	int me = tp_coll_comm_rank(c), odd = me == 2, rc;
	float b[64];
	tp_err_t err;

	(void)arg;
	for (int i = 0; i < 64; i++)
		b[i] = 1.0f;
	/* agreed: the check passes and the call runs */
	err = tp_coll_allreduce(c, b, b, 64, TP_COLL_FP32, TP_COLL_SUM,
				TP_COLL_ALGO_RING);
	if (err || b[5] != 4.0f)
		return check_fail(c, 0, err, TP_OK, "");
	/* another count */
	err = tp_coll_allreduce(c, b, b, odd ? 32 : 64, TP_COLL_FP32,
				TP_COLL_SUM, TP_COLL_ALGO_RING);
	if ((rc = check_fail(c, 1, err, TP_ERR_MISMATCH,
			     odd ? "rank 0 called allreduce #2 (count 64, "
				   "fp32, sum, ring); this rank allreduce #2 "
				   "(count 32"
				 : "rank 2 called allreduce #2 (count 32")))
		return rc;
	/* another collective */
	err = odd ? tp_coll_broadcast(c, b, 64, TP_COLL_FP32, 1)
		  : tp_coll_allreduce(c, b, b, 64, TP_COLL_FP32, TP_COLL_SUM,
				      TP_COLL_ALGO_AUTO);
	if ((rc = check_fail(c, 2, err, TP_ERR_MISMATCH,
			     odd ? "this rank broadcast #3 (count 64, fp32, "
				   "root 1)"
				 : "rank 2 called broadcast #3")))
		return rc;
	/* another dtype, then another op */
	err = tp_coll_allreduce(c, b, b, 32, odd ? TP_COLL_INT32 : TP_COLL_FP32,
				TP_COLL_SUM, TP_COLL_ALGO_RING);
	if ((rc = check_fail(c, 3, err, TP_ERR_MISMATCH,
			     odd ? "int32"
				 : "rank 2 called allreduce #4 "
				   "(count 32, int32")))
		return rc;
	err = tp_coll_allreduce(c, b, b, 32, TP_COLL_FP32,
				odd ? TP_COLL_MAX : TP_COLL_SUM,
				TP_COLL_ALGO_RING);
	if ((rc = check_fail(c, 4, err, TP_ERR_MISMATCH, "max")))
		return rc;
	/* a rank's own refusal (NULL buffer): it keeps its reason, the
	 * others are told it refused instead of waiting for it */
	err = tp_coll_allreduce(c, odd ? NULL : b, b, 64, TP_COLL_FP32,
				TP_COLL_SUM, TP_COLL_ALGO_RING);
	if ((rc = check_fail(c, 5, err, odd ? TP_ERR_INVAL : TP_ERR_MISMATCH,
			     odd ? "NULL buffer"
				 : "refused by that rank: invalid argument")))
		return rc;
	/* a count of 0 is a call too */
	err = tp_coll_allreduce(c, b, b, odd ? 0 : 8, TP_COLL_FP32, TP_COLL_SUM,
				TP_COLL_ALGO_RING);
	if ((rc = check_fail(c, 6, err, TP_ERR_MISMATCH, "count 0")))
		return rc;
	/* compressed on one rank only */
	tp_coll_comp_opts_t co;
	tp_coll_comp_opts_defaults(&co);
	co.kind = TP_COLL_COMP_INT8;
	co.error_feedback = false;
	err = odd ? tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &co, 7)
		  : tp_coll_allreduce(c, b, b, 64, TP_COLL_FP32, TP_COLL_SUM,
				      TP_COLL_ALGO_AUTO);
	if ((rc = check_fail(c, 7, err, TP_ERR_MISMATCH,
			     odd ? "this rank allreduce_compressed #8 (count "
				   "64, fp32, sum, int8 on levels"
				 : "rank 2 called allreduce_compressed #8")))
		return rc;
	/* compressed everywhere, one rank with another block size: what
	 * shapes the messages is compared too, in full */
	co.block = odd ? 128 : 256;
	err = tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &co, 7);
	if ((rc = check_fail(
		 c, 10, err, TP_ERR_MISMATCH,
		 odd ? "this rank allreduce_compressed #9 (count 64, fp32, "
		       "sum, int8 on levels 4, block 128)"
		     : "rank 2 called allreduce_compressed #9 (count 64, "
		       "fp32, sum, int8 on levels 4, block 128); this rank "
		       "allreduce_compressed #9 "
		       "(count 64, fp32, sum, int8 on levels 4, block 256)")))
		return rc;
	/* segments at least the count cut the buffer alike: not compared
	 * (only the segment a call cuts is, and its overlap) */
	co.block = 256;
	co.segment = odd ? (2u << 20) : (1u << 20);
	co.overlap = odd;
	err = tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &co, 7);
	if (err)
		return check_fail(c, 15, err, TP_OK, "");
	co.segment = 1u << 20;
	co.overlap = true;
	/* what the kind or schedule does not use may differ: int8 with
	 * another top-k fraction and threshold; top-k with another block
	 * and segment; a flat int8 call with another segment */
	co.block = 256;
	co.topk_fraction = odd ? 0.5 : 0.01;
	co.topk_exact = odd;
	err = tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &co, 7);
	if (err)
		return check_fail(c, 11, err, TP_OK, "");
	co.kind = TP_COLL_COMP_TOPK;
	co.topk_fraction = 0.25;
	co.topk_exact = false;
	co.block = odd ? 32 : 256;
	co.segment = odd ? 4096 : 0;
	err = tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &co, 8);
	if (err)
		return check_fail(c, 12, err, TP_OK, "");
	co.kind = TP_COLL_COMP_INT8;
	co.block = 256;
	co.levels = 7;
	co.overlap = !odd;
	err = tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &co, 9);
	if (err)
		return check_fail(c, 13, err, TP_OK, "");
	/* and the top-k fraction is named when it differs */
	co.kind = TP_COLL_COMP_TOPK;
	co.levels = TP_COLL_LEVEL_CROSS;
	co.topk_fraction = odd ? 0.5 : 0.25;
	err = tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &co, 8);
	if ((rc = check_fail(c, 14, err, TP_ERR_MISMATCH,
			     odd ? "this rank allreduce_compressed #14 (count "
				   "64, fp32, sum, topk on levels 4, top-k "
				   "0.5 sampled)"
				 : "top-k 0.5 sampled); this rank")))
		return rc;
	/* still usable: agreed calls run and reduce right */
	for (int i = 0; i < 64; i++)
		b[i] = (float)me;
	err = tp_coll_allreduce(c, b, b, 64, TP_COLL_FP32, TP_COLL_SUM,
				TP_COLL_ALGO_HIERARCHICAL);
	if (err || b[63] != 6.0f)
		return check_fail(c, 8, err, TP_OK, "");
	err = tp_coll_barrier(c);
	return err ? check_fail(c, 9, err, TP_OK, "") : 0;
}

static void test_check_args(void **s)
{
	tp_plan_t *p = plan_of(2, 2, 0), *one = plan_of(1, 4, 0);

	(void)s;
	setenv("TOPOPLACE_COLL_CHECK", "1", 1);
	run_ranks_ok(p, 10, 4096, check_rank, NULL, 60,
		     "TOPOPLACE_COLL_CHECK=1, rank 2's odd calls");
	/* one host: shared memory only, the host segment's small path */
	run_ranks_ok(one, 10, 4096, check_rank, NULL, 60,
		     "TOPOPLACE_COLL_CHECK=1 on one host");
	unsetenv("TOPOPLACE_COLL_CHECK");
	tp_plan_destroy(p);
	tp_plan_destroy(one);
}

/* Rank 1 checks its calls, rank 0 does not: refused at init (checked
 * and unchecked calls would pair the check's exchange with data). A
 * value other than 0 or 1 is refused by the rank itself. */
static void test_check_mismatch(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);

	(void)s;
	mismatch_env1 = "TOPOPLACE_COLL_CHECK=1";
	expect_mismatch(p, p, 0,
			"rank 1 has TOPOPLACE_COLL_CHECK=1, rank 0 has 0");
	mismatch_env1 = NULL;
	setenv("TOPOPLACE_COLL_CHECK", "yes", 1);
	init_refused(p, 0, "TOPOPLACE_COLL_CHECK='yes' is not 0 or 1");
	unsetenv("TOPOPLACE_COLL_CHECK");
	tp_plan_destroy(p);
}

/* The pipelined hierarchical all-reduce (TOPOPLACE_COLL_SEGMENT bytes a
 * segment): every dtype and op over counts of one segment, a few and
 * many with a short last one, in place and out of place, on the
 * hierarchical schedule only. arg: the segment in bytes (a size_t),
 * for the message. */

static int hier_pipeline(tp_coll_comm_t *c, void *arg)
{
	static const size_t cnts[] = {1, 250, 1031, 4099};
	static char in[4099 * 8], out[4099 * 8];
	int me = tp_coll_comm_rank(c);
	char what[64];

	snprintf(what, sizeof(what), "hierarchical, segment %zu",
		 *(const size_t *)arg);
	for (int dti = 0; dti < TP_COLL_NDTYPES; dti++) {
		tp_coll_dtype_t dt = (tp_coll_dtype_t)dti;
		for (size_t k = 0; k < sizeof(cnts) / sizeof(*cnts); k++) {
			/* every count in fp32, 1031 (a short last
			 * segment) in every dtype */
			if (dt != TP_COLL_FP32 && cnts[k] != 1031)
				continue;
			for (int op = 0; op < TP_COLL_NOPS; op++) {
				size_t cnt = cnts[k];
				for (size_t i = 0; i < cnt; i++)
					store(in, i, dt, input(me, i, dt));
				void *dst = (k + (size_t)op) % 2 ? in : out;
				tp_err_t err = tp_coll_allreduce(
				    c, in, dst, cnt, dt, (tp_coll_op_t)op,
				    TP_COLL_ALGO_HIERARCHICAL);
				if (err)
					return call_failed(c, "allreduce", err);
				if (check(c, what, dst, cnt, 0, dt,
					  (tp_coll_op_t)op))
					return 1;
				if (dst == out)
					for (size_t i = 0; i < cnt; i++)
						if (load(in, i, dt) !=
						    input(me, i, dt)) {
							fprintf(stderr,
								"# rank %d: "
								"input [%zu] "
								"written\n",
								me, i);
							return 1;
						}
			}
		}
	}
	return 0;
}

/* Shapes: two groups of two hosts (host segment, group ring, one cross
 * channel a rank), groups of two and one host (the lone host's ranks
 * hold two channels each), a NIC per GPU, one rank a host (no host
 * level), and groups of two and one host with one rank a host (the
 * lone host has no level at all, and still cuts as the others do), and
 * the host phases as rings (TOPOPLACE_COLL_SHM=0). Segments of 1000
 * bytes (a part of an element's worth left over for 8-byte types), 12
 * (one element or a few; at most 16 segments, so larger ones for most
 * counts) and 0 (none: the schedule in one piece). A rank cutting
 * otherwise fails init. */
static void test_hier_pipeline(void **s)
{
	tp_plan_t *p[5] = {plan_of(4, 2, 0), plan_of(3, 2, 0),
			   plan_on(coll_fabric_nics(), 4, 2, 0),
			   plan_of(4, 1, 0), plan_of(3, 1, 0)};
	static const char *const segs[] = {"1000", "12", "0"};
	size_t seg;
	char what[96];

	(void)s;
	for (size_t g = 0; g < 3; g++) {
		setenv("TOPOPLACE_COLL_SEGMENT", segs[g], 1);
		seg = strtoul(segs[g], NULL, 10);
		for (int k = 0; k < 5; k++) {
			snprintf(what, sizeof(what), "segment %s, shape %d",
				 segs[g], k);
			run_ranks_ok(p[k], 20, 64 << 10, hier_pipeline, &seg,
				     120, what);
		}
		setenv("TOPOPLACE_COLL_SHM", "0", 1);
		run_ranks_ok(p[0], 20, 64 << 10, hier_pipeline, &seg, 120,
			     "host rings");
		unsetenv("TOPOPLACE_COLL_SHM");
	}
	unsetenv("TOPOPLACE_COLL_SEGMENT");
	mismatch_env1 = "TOPOPLACE_COLL_SEGMENT=4096";
	expect_mismatch(p[3], p[3], 0,
			"rank 1 cuts hierarchical calls into 4096 bytes, rank "
			"0 into 1048576 (TOPOPLACE_COLL_SEGMENT)");
	mismatch_env1 = NULL;
	static const char *const bad[] = {"-1", "1k", " 8", "1073741825",
					  "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		snprintf(what, sizeof(what),
			 "TOPOPLACE_COLL_SEGMENT='%s' is not a byte count",
			 bad[i]);
		setenv("TOPOPLACE_COLL_SEGMENT", bad[i], 1);
		init_refused(p[3], 0, what);
	}
	unsetenv("TOPOPLACE_COLL_SEGMENT");
	for (int k = 0; k < 5; k++)
		tp_plan_destroy(p[k]);
}

static void test_port_in_use(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	tp_coll_comm_t *c = NULL;
	tp_coll_opts_t o;
	char *why = NULL;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)s;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	getsockname(fd, (struct sockaddr *)&sa, &sl);
	opts_for(&o, ntohs(sa.sin_port), 2, 4096);
	assert_int_equal(tp_coll_comm_init(p, 0, &o, &c, &why),
			 TP_ERR_ADDRINUSE);
	assert_non_null(strstr(why, "in use"));
	tp_free(why);
	close(fd);
	tp_plan_destroy(p);
}

/* Host buffers take the CPU path in every build (with CUDA but no GPU,
 * cudaPointerGetAttributes fails and every buffer is host memory); asking
 * for a CUDA stream without a usable GPU is an error naming the cause, and
 * leaves the communicator working. */
static void test_device_stream(void **s)
{
	tp_plan_t *p = plan_of(1, 1, 0);
	tp_coll_comm_t *c = NULL;
	tp_coll_opts_t o;
	char *why = NULL;
	float a[5] = {1, 2, 3, 4, 5}, b[5];
	tp_err_t err;

	(void)s;
	opts_for(&o, next_port(), 5, 4096);
	assert_int_equal(tp_coll_comm_init(p, 0, &o, &c, &why), TP_OK);
	assert_int_equal(tp_coll_allreduce(c, a, b, 5, TP_COLL_FP32,
					   TP_COLL_AVG, TP_COLL_ALGO_AUTO),
			 TP_OK);
	assert_memory_equal(a, b, sizeof(a));
	err = tp_coll_comm_set_stream(c, (void *)&err);
	if (err != TP_OK) { /* no GPU here (the usual case) */
		assert_true(err == TP_ERR_CUDA || err == TP_ERR_UNSUPPORTED);
		assert_non_null(strstr(tp_coll_comm_detail(c), "set_stream: "));
		assert_true(strlen(tp_coll_comm_detail(c)) > 14);
	}
	assert_int_equal(tp_coll_comm_set_stream(c, NULL), TP_OK);
	assert_int_equal(tp_coll_allreduce(c, a, a, 5, TP_COLL_FP32,
					   TP_COLL_SUM, TP_COLL_ALGO_RING),
			 TP_OK);
	assert_int_equal(tp_coll_broadcast(c, a, 5, TP_COLL_FP32, 0), TP_OK);
	assert_memory_equal(a, b, sizeof(a));
	tp_coll_comm_destroy(c);
	tp_plan_destroy(p);
}

/* A rank that passes the rendezvous but never makes its peer
 * connections (here: out of file descriptors after its first one):
 * the rank left waiting for it names it, not just "timed out". */
static void test_peer_never_connects(void **s)
{
	tp_plan_t *p = plan_of(3, 1, 0);
	tp_coll_opts_t o;
	pid_t pid[3];
	int st[3];

	(void)s;
	opts_for(&o, next_port(), 1.5, 4096);
	fflush(NULL);
	for (int r = 0; r < 3; r++) {
		pid[r] = fork();
		assert_true(pid[r] >= 0);
		if (pid[r] > 0)
			continue;
		tp_coll_comm_t *c = NULL;
		char *why = NULL;
		if (r == 2) {
			/* room for the peer listener and one more socket:
			 * the master connection, then (closed) the first
			 * peer connection; the second fails */
			int low = dup(0);
			struct rlimit rl = {(rlim_t)low + 2, (rlim_t)low + 2};
			close(low);
			if (setrlimit(RLIMIT_NOFILE, &rl))
				_exit(9);
		}
		tp_err_t err = tp_coll_comm_init(p, r, &o, &c, &why);
		fprintf(stderr, "# rank %d: %s: %s\n", r, tp_strerror(err),
			why ? why : "");
		if (r == 1)
			_exit(err == TP_ERR_TIMEOUT &&
				      strstr(why, "rank 2 (host ") &&
				      strstr(why, "never connected")
				  ? 0
				  : 1);
		if (r == 2) /* and says where it failed */
			_exit(err == TP_ERR_IO &&
				      strstr(why, "connecting to rank 1 (host ")
				  ? 0
				  : 1);
		tp_coll_comm_destroy(c);
		_exit(0);
	}
	for (int r = 0; r < 3; r++) {
		int ws;
		assert_int_equal(waitpid(pid[r], &ws, 0), pid[r]);
		st[r] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	}
	assert_int_equal(st[2], 0);
	assert_int_equal(st[1], 0);
	tp_plan_destroy(p);
}

/* A connection to the rendezvous port that closes before saying
 * anything (a port probe, a health check) is not a rank: rank 0 goes on
 * waiting for the real ones instead of failing everyone's init with
 * "rendezvous hello: connection closed". */
static void test_rendezvous_probe(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	tp_coll_opts_t o;
	pid_t pid[2];
	int port = next_port(), connected = 0;

	(void)s;
	opts_for(&o, port, 5, 4096);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	fflush(NULL);
	for (int r = 0; r < 2; r++) {
		if (r == 1) /* the probe, once rank 0 listens */
			for (int k = 0; k < 500 && !connected; k++) {
				int fd = socket(AF_INET, SOCK_STREAM, 0);
				connected = connect(fd, (struct sockaddr *)&sa,
						    sizeof(sa)) == 0;
				close(fd);
				if (!connected)
					usleep(10000);
			}
		pid[r] = fork();
		assert_true(pid[r] >= 0);
		if (pid[r] > 0)
			continue;
		tp_coll_comm_t *c = NULL;
		char *why = NULL;
		tp_err_t err = tp_coll_comm_init(p, r, &o, &c, &why);
		if (!err)
			err = tp_coll_barrier(c);
		if (err)
			fprintf(stderr, "# rank %d: %s: %s\n", r,
				tp_strerror(err),
				why ? why : tp_coll_comm_detail(c));
		tp_coll_comm_destroy(c);
		_exit(err ? 1 : 0);
	}
	assert_true(connected);
	for (int r = 0; r < 2; r++) {
		int ws;
		assert_int_equal(waitpid(pid[r], &ws, 0), pid[r]);
		assert_true(WIFEXITED(ws));
		assert_int_equal(WEXITSTATUS(ws), 0);
	}
	tp_plan_destroy(p);
}

/* A connection to port on loopback once something listens there (-1
 * when nothing did within 5 s); it sends len bytes of buf. */
static int connect_when_up(int port, const void *buf, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);
	for (int k = 0; k < 500; k++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			if (len &&
			    send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
				close(fd);
				return -1;
			}
			return fd;
		}
		close(fd);
		usleep(10000);
	}
	return -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Connections to the rendezvous port that stay open saying nothing, or
 * a short hello of another protocol (an older library's 48 bytes, magic
 * "tpc5"), hold no rank back: rank 0 read each connection's hello to its
 * end before the next, so one silent probe failed every rank's init
 * ("rendezvous hello: timed out"). Rank 1 comes after both, and the two
 * make their communicator well inside the timeout. */
static void test_rendezvous_silent_probe(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);
	unsigned char old[48] = {0};
	uint32_t tpc5 = 0x74706335u;
	int port = next_port(), quiet, older;
	pid_t a0, a1;
	double t0 = now_s();

	(void)s;
	memcpy(old, &tpc5, sizeof(tpc5));
	fflush(NULL);
	if (!(a0 = fork()))
		join_as(p, 0, port, NULL, TP_OK, "");
	quiet = connect_when_up(port, NULL, 0);
	older = connect_when_up(port, old, sizeof(old));
	assert_true(quiet >= 0 && older >= 0);
	if (!(a1 = fork()))
		join_as(p, 1, port, NULL, TP_OK, "");
	reap_ok(a0);
	reap_ok(a1);
	/* join_as's timeout is 10 s, a silent connection's window too */
	assert_true(now_s() - t0 < 8);
	/* the older one was told why, at once */
	char rep[256] = {0};
	struct timeval tv = {.tv_sec = 2};
	setsockopt(older, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_true(recv(older, rep, sizeof(rep), MSG_WAITALL) > 8);
	assert_non_null(memmem(rep, sizeof(rep), "another protocol",
			       strlen("another protocol")));
	close(quiet);
	close(older);
	tp_plan_destroy(p);
}

/* More silent connections than rank 0 reads side by side (64): the
 * oldest that has been silent a second gives its slot to the next, so
 * rank 1 behind 80 of them still joins (with 16 slots and no eviction the
 * listener went unpolled until a window ended, 10 s). */
static void test_rendezvous_probe_flood(void **s)
{
	enum { NPROBE = 80 };
	tp_plan_t *p = plan_of(2, 1, 0);
	int port = next_port(), fd[NPROBE];
	pid_t a0, a1;

	(void)s;
	fflush(NULL);
	if (!(a0 = fork()))
		join_as(p, 0, port, NULL, TP_OK, "");
	for (int i = 0; i < NPROBE; i++)
		assert_true((fd[i] = connect_when_up(port, NULL, 0)) >= 0);
	double t0 = now_s();
	if (!(a1 = fork()))
		join_as(p, 1, port, NULL, TP_OK, "");
	reap_ok(a0);
	reap_ok(a1);
	assert_true(now_s() - t0 < 8); /* join_as's timeout is 10 s */
	for (int i = 0; i < NPROBE; i++)
		close(fd[i]);
	tp_plan_destroy(p);
}

/* Probes that keep connecting are no progress: rank 0 still gives up
 * at its timeout when its rank 1 never comes (every accepted connection
 * restarted the wait, so a port scanner kept it waiting for ever), and
 * says which rank never came. */
static void test_rendezvous_probes_no_progress(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);
	int port = next_port(), ws, probes = 0;
	pid_t a0;
	double t0 = now_s();

	(void)s;
	fflush(NULL);
	if (!(a0 = fork()))
		join_within(p, 0, port, NULL, 1.0, TP_ERR_TIMEOUT,
			    "1 of 1 never came (1)");
	while (waitpid(a0, &ws, WNOHANG) == 0 && now_s() - t0 < 10) {
		int fd = connect_when_up(port, NULL, 0);
		probes += fd >= 0;
		if (fd >= 0)
			close(fd);
		usleep(200000);
		if (waitpid(a0, &ws, WNOHANG) == a0)
			break;
	}
	if (now_s() - t0 >= 10) {
		kill(a0, SIGKILL);
		waitpid(a0, &ws, 0);
		fail_msg("rank 0 (timeout 1 s) still waiting after 10 s");
	}
	assert_true(WIFEXITED(ws));
	assert_int_equal(WEXITSTATUS(ws), 0);
	assert_true(probes >= 2);
	tp_plan_destroy(p);
}

/* A rank that joined learns why rank 0 gave up (here: rank 2 never
 * came), where it found only the connection closed. */
static void test_rendezvous_failure_told(void **s)
{
	tp_plan_t *p = plan_of(3, 1, 0);
	int port = next_port();
	pid_t a0, a1;

	(void)s;
	fflush(NULL);
	if (!(a0 = fork()))
		join_within(p, 0, port, NULL, 1.0, TP_ERR_TIMEOUT, "");
	if (!(a1 = fork()))
		join_as(p, 1, port, NULL, TP_ERR_TIMEOUT,
			"rank 0 refused: rank 0: rendezvous: waiting for the "
			"other ranks: 1 of 2 never came (2)");
	reap_ok(a0);
	reap_ok(a1);
	tp_plan_destroy(p);
}

/* Rank 0 holds a connection from every rank until the table goes out:
 * with its soft open-file limit below what the world needs it raises it
 * (up to the hard one) instead of failing "accept: Too many open
 * files" (16 ranks, a soft limit of 16). */
static void test_rendezvous_fd_limit(void **s)
{
	enum { W = 16 };
	tp_plan_t *p = plan_of(4, W / 4, 0);
	int port = next_port();
	pid_t pid[W];
	struct rlimit rl;

	(void)s;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < W + 256)
		skip(); /* the hard limit leaves nothing to raise */
	fflush(NULL);
	for (int r = 0; r < W; r++) {
		if ((pid[r] = fork()))
			continue;
		setenv("TOPOPLACE_COLL_SHM", "0", 1);
		if (r == 0) {
			struct rlimit lo = rl;
			lo.rlim_cur = W;
			if (setrlimit(RLIMIT_NOFILE, &lo))
				_exit(3);
		}
		join_as(p, r, port, NULL, TP_OK, "");
	}
	for (int r = 0; r < W; r++)
		reap_ok(pid[r]);
	tp_plan_destroy(p);
}

/* A reason taken from the environment stays one line. */
static void test_init_error_one_line(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);
	tp_coll_comm_t *c = NULL;
	tp_coll_opts_t o;
	char *why = NULL;

	(void)s;
	opts_for(&o, next_port(), 1, 4096);
	o.master_port = 0;
	setenv("MASTER_PORT", "2950\nFAKE: a second line", 1);
	assert_int_equal(tp_coll_comm_init(p, 1, &o, &c, &why), TP_ERR_INVAL);
	unsetenv("MASTER_PORT");
	assert_non_null(strstr(why, "MASTER_PORT"));
	assert_null(strchr(why, '\n'));
	tp_free(why);
	why = NULL;
	o.master_port = next_port();
	setenv("TOPOPLACE_COLL_HCA_ADDRS", "mlx5_0=1.2.3.4\nX", 1);
	setenv("TOPOPLACE_COLL_HCA", "mlx5_0", 1);
	tp_err_t err = tp_coll_comm_init(p, 1, &o, &c, &why);
	unsetenv("TOPOPLACE_COLL_HCA_ADDRS");
	unsetenv("TOPOPLACE_COLL_HCA");
	assert_int_not_equal(err, TP_OK);
	assert_non_null(why);
	assert_null(strchr(why, '\n'));
	tp_free(why);
	tp_plan_destroy(p);
}

/* A rank that never comes: rank 0 and a lone rank 1 both give up. */
static void test_init_timeout(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);
	tp_coll_comm_t *c = NULL;
	tp_coll_opts_t o;
	char *why = NULL;

	(void)s;
	opts_for(&o, next_port(), 0.4, 4096);
	assert_int_equal(tp_coll_comm_init(p, 0, &o, &c, &why), TP_ERR_TIMEOUT);
	assert_non_null(strstr(why, "1 of 1 never came (1)"));
	tp_free(why);
	why = NULL;
	assert_int_equal(tp_coll_comm_init(p, 1, &o, &c, &why), TP_ERR_TIMEOUT);
	assert_non_null(strstr(why, "rendezvous with rank 0 at 127.0.0.1"));
	assert_null(c);
	tp_free(why);
	tp_plan_destroy(p);
}

static void test_env(void **s)
{
	tp_plan_t *p = plan_of(1, 1, 0);
	tp_coll_comm_t *c = NULL;
	char *why = NULL, *path = write_plan(p, 0);
	float x = 2.5f;

	(void)s;
	unsetenv("TOPOPLACE_RANK");
	setenv("TOPOPLACE_PLAN", path, 1);
	assert_int_equal(tp_coll_comm_init_env(NULL, &c, &why), TP_ERR_INVAL);
	assert_non_null(strstr(why, "TOPOPLACE_RANK"));
	tp_free(why);
	why = NULL;
	/* a malformed value is quoted, so the launcher's mistake shows */
	setenv("TOPOPLACE_RANK", "3x", 1);
	assert_int_equal(tp_coll_comm_init_env(NULL, &c, &why), TP_ERR_INVAL);
	assert_non_null(strstr(why, "TOPOPLACE_RANK='3x'"));
	tp_free(why);
	why = NULL;
	setenv("TOPOPLACE_RANK", "0", 1);
	setenv("TOPOPLACE_LOCAL_RANK", "-1", 1);
	assert_int_equal(tp_coll_comm_init_env(NULL, &c, &why), TP_ERR_INVAL);
	assert_non_null(strstr(why, "TOPOPLACE_LOCAL_RANK='-1'"));
	tp_free(why);
	why = NULL;
	unsetenv("TOPOPLACE_LOCAL_RANK");
	setenv("TOPOPLACE_WORLD_SIZE", "2", 1);
	assert_int_equal(tp_coll_comm_init_env(NULL, &c, &why),
			 TP_ERR_MISMATCH);
	assert_non_null(strstr(why, "TOPOPLACE_WORLD_SIZE"));
	tp_free(why);
	why = NULL;
	setenv("TOPOPLACE_WORLD_SIZE", "1", 1);
	setenv("TOPOPLACE_LOCAL_RANK", "1", 1);
	assert_int_equal(tp_coll_comm_init_env(NULL, &c, &why),
			 TP_ERR_MISMATCH);
	assert_non_null(strstr(why, "TOPOPLACE_LOCAL_RANK=1"));
	tp_free(why);
	why = NULL;
	setenv("TOPOPLACE_LOCAL_RANK", "0", 1);
	assert_int_equal(tp_coll_comm_init_env(NULL, &c, &why), TP_OK);
	assert_int_equal(tp_coll_comm_size(c), 1);
	assert_int_equal(tp_coll_allreduce(c, &x, &x, 1, TP_COLL_FP32,
					   TP_COLL_AVG, TP_COLL_ALGO_AUTO),
			 TP_OK);
	assert_true(x == 2.5f);
	assert_int_equal(tp_coll_allreduce(c, &x, &x, 1, (tp_coll_dtype_t)9,
					   TP_COLL_SUM, TP_COLL_ALGO_AUTO),
			 TP_ERR_INVAL);
	assert_non_null(strstr(tp_coll_comm_detail(c), "allreduce: bad dtype"));
	tp_coll_comm_destroy(c);
	tp_coll_comm_destroy(NULL);
	/* the accessors take NULL too (they dereferenced it) */
	assert_int_equal(tp_coll_comm_rank(NULL), -1);
	assert_int_equal(tp_coll_comm_size(NULL), 0);
	assert_int_equal(tp_coll_comm_nhosts(NULL), 0);
	assert_non_null(strstr(tp_coll_comm_detail(NULL), "NULL"));
	assert_int_equal(tp_coll_algo_select(NULL, 1 << 20), TP_COLL_ALGO_RING);
	unsetenv("TOPOPLACE_PLAN");
	unsetenv("TOPOPLACE_RANK");
	unsetenv("TOPOPLACE_WORLD_SIZE");
	unsetenv("TOPOPLACE_LOCAL_RANK");
	unlink(path);
	tp_plan_destroy(p);
}

/* A malformed shared-memory setting fails init naming the variable
 * (before, TOPOPLACE_COLL_SHM=off meant "on" and a ring size that is not
 * a power of two fell back to 2 MiB, both without a word). */
static void test_bad_shm_env(void **s)
{
	struct env_case {
		const char *var, *val;
	};
	static const struct env_case bad[] = {
	    {"TOPOPLACE_COLL_SHM", "off"},
	    {"TOPOPLACE_COLL_SHM", "no"},
	    {"TOPOPLACE_COLL_SHM_RING", "3000"},
	    {"TOPOPLACE_COLL_SHM_RING", "2M"},
	    {"TOPOPLACE_COLL_SHM_RING", "32"},
	    {"TOPOPLACE_COLL_YIELD_US", "-1"},
	    {"TOPOPLACE_COLL_YIELD_US", "2000000"},
	    {"TOPOPLACE_COLL_YIELD_US", "10us"}};
	static const struct env_case good[] = {
	    {"TOPOPLACE_COLL_SHM", "0"},
	    {"TOPOPLACE_COLL_SHM", "1"},
	    {"TOPOPLACE_COLL_SHM", "nofifo"},
	    {"TOPOPLACE_COLL_SHM", ""},
	    {"TOPOPLACE_COLL_SHM_RING", "4096"},
	    {"TOPOPLACE_COLL_YIELD_US", "0"}};
	tp_plan_t *p = plan_of(1, 1, 0);
	tp_coll_comm_t *c = NULL;
	tp_coll_opts_t o;
	char *why = NULL;

	(void)s;
	opts_for(&o, next_port(), 2, 4096);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[96];
		setenv(bad[i].var, bad[i].val, 1);
		assert_int_equal(tp_coll_comm_init(p, 0, &o, &c, &why),
				 TP_ERR_INVAL);
		snprintf(want, sizeof(want), "%s='%s'", bad[i].var, bad[i].val);
		if (!strstr(why, want))
			fail_msg("%s: '%s'", want, why);
		assert_null(c);
		tp_free(why);
		why = NULL;
		unsetenv(bad[i].var);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		setenv(good[i].var, good[i].val, 1);
		if (tp_coll_comm_init(p, 0, &o, &c, &why) != TP_OK)
			fail_msg("%s=%s: %s", good[i].var, good[i].val, why);
		tp_coll_comm_destroy(c);
		c = NULL;
		unsetenv(good[i].var);
	}
	tp_plan_destroy(p);
}

static void test_names(void **s)
{
	tp_coll_algo_t a;

	(void)s;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(tp_coll_algo_parse(
				     tp_coll_algo_name((tp_coll_algo_t)i), &a),
				 TP_OK);
		assert_int_equal(a, i);
	}
	assert_int_equal(tp_coll_algo_parse("rings", &a), TP_ERR_INVAL);
	/* any case, as tp_coll_comp_parse() takes "INT8" */
	assert_int_equal(tp_coll_algo_parse("Tree", &a), TP_OK);
	assert_int_equal(a, TP_COLL_ALGO_TREE);
	assert_null(tp_coll_algo_name((tp_coll_algo_t)7));
	assert_int_equal(tp_coll_dtype_size(TP_COLL_BF16), 2);
	assert_int_equal(tp_coll_dtype_size((tp_coll_dtype_t)6), 0);
	assert_string_equal(tp_strerror(TP_ERR_PEER_LOST), "peer lost");
}

/* ---- compressed all-reduce ------------------------------------------------
 */

static void test_comp_names(void **s)
{
	tp_coll_comp_opts_t o;
	tp_coll_comp_t k;

	(void)s;
	tp_coll_comp_opts_defaults(&o);
	assert_int_equal(o.kind, TP_COLL_COMP_NONE);
	assert_int_equal(o.levels, TP_COLL_LEVEL_CROSS);
	assert_int_equal(o.block, 256);
	assert_true(o.topk_fraction == 0.01 && o.error_feedback &&
		    !o.stochastic);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(tp_coll_comp_parse(
				     tp_coll_comp_name((tp_coll_comp_t)i), &k),
				 TP_OK);
		assert_int_equal(k, i);
	}
	assert_string_equal(tp_coll_comp_name(TP_COLL_COMP_1BIT), "1bit");
	assert_int_equal(tp_coll_comp_parse("int4", &k), TP_ERR_INVAL);
	assert_null(tp_coll_comp_name((tp_coll_comp_t)4));
}

/* A count no buffer can have (a negative length cast to size_t, say)
 * is refused as an argument error before anything is sized from it:
 * 4 x count floats of residuals wrapped to 16 bytes at 2^62 + 1, and
 * only the message buffer's failed allocation (TP_ERR_NOMEM) stopped the
 * call. */
static int huge_count_rank(tp_coll_comm_t *c, void *arg)
{
	static const size_t huge[] = {((size_t)1 << 62) + 1, SIZE_MAX - 4};
	float b[64] = {0};
	tp_coll_comp_opts_t o;
	bool checked = arg != NULL;

	tp_coll_comp_opts_defaults(&o);
	o.levels =
	    TP_COLL_LEVEL_HOST | TP_COLL_LEVEL_GROUP | TP_COLL_LEVEL_CROSS;
	for (int k = TP_COLL_COMP_INT8; k <= TP_COLL_COMP_TOPK; k++) {
		o.kind = (tp_coll_comp_t)k;
		for (size_t i = 0; i < (checked ? 2 : 1); i++) {
			tp_err_t err = tp_coll_allreduce_compressed(
			    c, b, huge[i], TP_COLL_SUM, &o, 7);
			if (err != TP_ERR_INVAL ||
			    !strstr(tp_coll_comm_detail(c), "too large")) {
				fprintf(stderr, "# kind %d count %zu: %s: %s\n",
					k, huge[i], tp_strerror(err),
					tp_coll_comm_detail(c));
				return 1;
			}
		}
		if (!checked)
			break;
	}
	/* checked, every rank learnt of the refusal and the communicator
	 * works; unchecked, the refusal broke it (the other ranks would
	 * pair their call with this rank's next one), keeping why */
	o.kind = TP_COLL_COMP_INT8;
	tp_err_t err =
	    tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &o, 7);
	if (checked)
		return err ? 2 : 0;
	return err == TP_ERR_PEER_LOST &&
		       strstr(tp_coll_comm_detail(c), "too large")
		   ? 0
		   : 3;
}

static void test_comp_huge_count(void **s)
{
	tp_plan_t *p = plan_of(1, 2, 0);

	(void)s;
	run_ranks_ok(p, 5, 4096, huge_count_rank, NULL, 30,
		     "compressed all-reduce of a huge count, unchecked");
	setenv("TOPOPLACE_COLL_CHECK", "1", 1);
	run_ranks_ok(p, 5, 4096, huge_count_rank, p, 30,
		     "compressed all-reduce of a huge count, checked");
	unsetenv("TOPOPLACE_COLL_CHECK");
	tp_plan_destroy(p);
}

/* Top-k of 2^32 or more values across the groups is refused before the
 * dense stages touch the buffer (only a shard over 2^32 was, after the
 * in-group reduce-scatter had run over the buffer); the communicator
 * still works after. */
static int topk_range_rank(tp_coll_comm_t *c, void *arg)
{
	float b[64] = {0};
	tp_coll_comp_opts_t o;
	tp_err_t err;

	(void)arg;
	tp_coll_comp_opts_defaults(&o);
	o.kind = TP_COLL_COMP_TOPK;
	o.error_feedback = false;
	err = tp_coll_allreduce_compressed(c, b, ((size_t)1 << 32) + 1,
					   TP_COLL_SUM, &o, 7);
	if (err != TP_ERR_RANGE || !strstr(tp_coll_comm_detail(c), "2^32")) {
		fprintf(stderr, "# %s: %s\n", tp_strerror(err),
			tp_coll_comm_detail(c));
		return 1;
	}
	return tp_coll_allreduce_compressed(c, b, 64, TP_COLL_SUM, &o, 7) ? 2
									  : 0;
}

static void test_comp_topk_range(void **s)
{
	tp_plan_t *p = plan_of(4, 1, 0); /* two groups of two */

	(void)s;
	run_ranks_ok(p, 5, 4096, topk_range_rank, NULL, 30,
		     "top-k of 2^32 + 1 values across groups");
	tp_plan_destroy(p);
}

/* A message's checksum made right again for its header and payload
 * bytes. */
static void reseal(unsigned char *m, size_t payload)
{
	uint64_t h = tp__comp_hash(m + TP__COMP_HDR, payload,
				   tp__comp_hash(m, TP__COMP_CHECK, 0));

	memcpy(m + TP__COMP_CHECK, &h, 8);
}

/* Every kind and odd count round-trips; every flipped byte, every
 * truncation, an extension and a message of another kind, count, block
 * or pipeline segment are refused, naming the field, and leave the
 * output untouched. */
static void test_comp_wire(void **s)
{
	static const size_t cnts[] = {0, 1, 7, 257, 1031};
	static float g[1031], r[1031], out[1031], ref[1031];
	static uint64_t msg[2048], bad[2048];
	tp_cuda_comp_opts_t o;
	char why[96];
	size_t clen;

	(void)s;
	tp_cuda_comp_opts_defaults(&o);
	o.topk_frac = 0.05;
	for (int kind = TP__COMP_INT8; kind <= TP__COMP_TOPK; kind++) {
		for (size_t ci = 0; ci < 5; ci++) {
			size_t n = cnts[ci], len;
			for (size_t i = 0; i < n; i++) {
				g[i] = (float)input(3, i, TP_COLL_FP32);
				r[i] = 0.0f;
				ref[i] = out[i] = 1.0f;
			}
			assert_true(tp__comp_max_bytes(kind, n, &o) <=
				    sizeof(msg));
			assert_int_equal(tp__comp_encode(kind, g, r, n, &o,
							 4096, msg, sizeof(msg),
							 &len),
					 TP_OK);
			/* sent + kept == asked (error feedback) */
			assert_int_equal(tp__comp_decode(msg, len, kind, n, &o,
							 4096, out, 1, why,
							 sizeof(why)),
					 TP_OK);
			for (size_t i = 0; i < n; i++)
				assert_true(fabsf(out[i] + r[i] - g[i]) <=
					    fabsf(g[i]) * 0x1p-22f);
			for (size_t i = 0; i < n; i++)
				out[i] = ref[i];
			for (size_t b = 0; b < len; b++) {
				memcpy(bad, msg, len);
				((unsigned char *)bad)[b] ^= 0x10;
				assert_int_not_equal(
				    tp__comp_decode(bad, len, kind, n, &o, 4096,
						    out, 0, why, sizeof(why)),
				    TP_OK);
			}
			for (size_t l = 0; l < len; l++)
				assert_int_not_equal(
				    tp__comp_decode(msg, l, kind, n, &o, 4096,
						    out, 0, why, sizeof(why)),
				    TP_OK);
			assert_int_equal(tp__comp_decode(msg, len + 4, kind, n,
							 &o, 4096, out, 0, why,
							 sizeof(why)),
					 TP_ERR_PARSE);
			assert_int_equal(tp__comp_decode(msg, len, kind % 3 + 1,
							 n, &o, 4096, out, 0,
							 why, sizeof(why)),
					 TP_ERR_MISMATCH);
			/* named, as TOPOPLACE_COLL_CHECK names them */
			static const char *const kname[] = {"", "int8", "1bit",
							    "topk"};
			char kw[64];
			snprintf(kw, sizeof(kw), "with kind %s, this rank's %s",
				 kname[kind], kname[kind % 3 + 1]);
			if (!strstr(why, kw))
				fail_msg("'%s' lacks '%s'", why, kw);
			assert_int_equal(tp__comp_decode(msg, len, kind, n + 1,
							 &o, 4096, out, 0, why,
							 sizeof(why)),
					 TP_ERR_MISMATCH);
			assert_non_null(strstr(why, "count"));
			/* another segment: named, even where the count is
			 * the same */
			assert_int_equal(tp__comp_decode(msg, len, kind, n, &o,
							 2048, out, 0, why,
							 sizeof(why)),
					 TP_ERR_MISMATCH);
			assert_string_equal(why, "compressed message with "
						 "segment 4096, this rank's "
						 "2048");
			assert_memory_equal(out, ref, n * sizeof(float));
		}
	}
	/* An int8 message of block 256 read with block 128: named. */
	tp_cuda_comp_opts_defaults(&o);
	size_t len;
	assert_int_equal(tp__comp_encode(TP__COMP_INT8, g, NULL, 257, &o, 0,
					 msg, sizeof(msg), &len),
			 TP_OK);
	o.block = 128;
	assert_int_equal(tp__comp_decode(msg, len, TP__COMP_INT8, 257, &o, 0,
					 out, 0, why, sizeof(why)),
			 TP_ERR_MISMATCH);
	assert_string_equal(why, "compressed message with block 256, this "
				 "rank's 128");
	/* A message of version 1 (40 bytes of header, no segment): refused
	 * as such. */
	((unsigned char *)msg)[4] = 1;
	assert_int_equal(tp__comp_decode(msg, len, TP__COMP_INT8, 257, &o, 0,
					 out, 0, why, sizeof(why)),
			 TP_ERR_FORMAT);
	/* Top-k indices that pass the checksum but not the checks: a
	 * repeated index (gap 0), then one past the end. */
	for (int t = 0; t < 2; t++) {
		unsigned char *m = (unsigned char *)msg;
		const size_t H = TP__COMP_HDR;
		float v[2] = {1.0f, 2.0f};

		memset(m, 0, H + 16);
		memcpy(m, "TPCZ", 4);
		m[4] = TP__COMP_VERSION;
		m[5] = TP__COMP_TOPK;
		m[12] = 2;  /* nnz */
		m[16] = 10; /* count */
		m[24] = 10; /* payload: 2 values, 2 varints */
		memcpy(m + H, v, 8);
		m[H + 8] = 3;
		m[H + 9] = t ? 7 : 0; /* 3 + 7 = 10: out of range */
		reseal(m, 10);
		assert_int_equal(tp__comp_decode(m, H + 10, TP__COMP_TOPK, 10,
						 &o, 0, out, 0, why,
						 sizeof(why)),
				 TP_ERR_PARSE);
		assert_non_null(strstr(why, "indices"));
		m[H + 9] = 6; /* 3, 9: fine */
		reseal(m, 10);
		assert_int_equal(tp__comp_decode(m, H + 10, TP__COMP_TOPK, 10,
						 &o, 0, out, 1, why,
						 sizeof(why)),
				 TP_OK);
		assert_true(out[3] == 1.0f && out[9] == 2.0f && out[4] == 0.0f);
	}
	/* varints in their shortest form only: gaps 3 and 200 (0xc8 0x01)
	 * over 300 values decode; 3 spelt 0x83 0x00 is refused */
	for (int t = 0; t < 2; t++) {
		unsigned char *m = (unsigned char *)msg;
		const size_t H = TP__COMP_HDR, pl = t ? 12 : 11;
		float v[2] = {1.0f, 2.0f}, o300[300] = {0};

		memset(m, 0, H + 16);
		memcpy(m, "TPCZ", 4);
		m[4] = TP__COMP_VERSION;
		m[5] = TP__COMP_TOPK;
		m[12] = 2;	    /* nnz */
		m[16] = 300 & 0xff; /* count */
		m[17] = 300 >> 8;
		m[24] = (unsigned char)pl;
		memcpy(m + H, v, 8);
		memcpy(m + H + 8, t ? "\x83\x00\xc8\x01" : "\x03\xc8\x01",
		       pl - 8);
		reseal(m, pl);
		assert_int_equal(tp__comp_decode(m, H + pl, TP__COMP_TOPK, 300,
						 &o, 0, o300, 1, why,
						 sizeof(why)),
				 t ? TP_ERR_PARSE : TP_OK);
		if (!t)
			assert_true(o300[3] == 1.0f && o300[203] == 2.0f);
	}
	/* the call header the host level's ranks swap: the fields as a
	 * message's, no payload, sealed */
	tp__comp_encode_call(TP__COMP_INT8, 1031, &o, 4096, msg);
	assert_int_equal(tp__comp_check_call(msg, TP__COMP_INT8, 1031, &o, 4096,
					     why, sizeof(why)),
			 TP_OK);
	assert_int_equal(tp__comp_check_call(msg, TP__COMP_INT8, 1031, &o, 2048,
					     why, sizeof(why)),
			 TP_ERR_MISMATCH);
	assert_string_equal(why,
			    "call header with segment 4096, this rank's 2048");
	memcpy(bad, msg, TP__COMP_HDR);
	((unsigned char *)bad)[24] = 4; /* a payload */
	assert_int_equal(tp__comp_check_call(bad, TP__COMP_INT8, 1031, &o, 4096,
					     why, sizeof(why)),
			 TP_ERR_PARSE);
	memcpy(bad, msg, TP__COMP_HDR);
	((unsigned char *)bad)[TP__COMP_CHECK] ^= 1;
	assert_int_equal(tp__comp_check_call(bad, TP__COMP_INT8, 1031, &o, 4096,
					     why, sizeof(why)),
			 TP_ERR_PARSE);
	/* a real message is no call header */
	assert_int_equal(tp__comp_encode(TP__COMP_INT8, g, NULL, 7, &o, 0, msg,
					 sizeof(msg), &clen),
			 TP_OK);
	assert_int_equal(
	    tp__comp_check_call(msg, TP__COMP_INT8, 7, &o, 0, why, sizeof(why)),
	    TP_ERR_PARSE);
}

typedef struct comp_case {
	tp_coll_comp_t kind;
	unsigned levels;
	bool exact; /* one group and levels CROSS: plain dense */
} comp_case_t;

/* Same bits on every rank: the dense max and min of buf agree. */
static int same_everywhere(tp_coll_comm_t *c, const float *buf, size_t n)
{
	float *hi = malloc((n + 1) * sizeof(float));
	float *lo = malloc((n + 1) * sizeof(float));
	int rc = 0;

	if (!hi || !lo ||
	    tp_coll_allreduce(c, buf, hi, n, TP_COLL_FP32, TP_COLL_MAX,
			      TP_COLL_ALGO_RING) ||
	    tp_coll_allreduce(c, buf, lo, n, TP_COLL_FP32, TP_COLL_MIN,
			      TP_COLL_ALGO_RING) ||
	    memcmp(hi, lo, n * sizeof(float)))
		rc = 1;
	free(hi);
	free(lo);
	return rc;
}

/* Allowance of one call against the dense sum: each of at most n
 * compressions of a partial sum (|.| <= A) errs by at most half a step
 * (int8: A / 254) or the value plus the block's mean (1-bit: 2A), or
 * drops it (top-k: A). */
static double comp_bound(const comp_case_t *k, int n, double A)
{
	if (k->exact) /* fp32 rounding of the dense sum (and AVG) */
		return 1e-6 * A;
	return k->kind == TP_COLL_COMP_INT8   ? n * A / 127.0
	       : k->kind == TP_COLL_COMP_1BIT ? 2.0 * n * A
					      : n * A;
}

static int comp_call(tp_coll_comm_t *c, const comp_case_t *k, float *b,
		     size_t n, tp_coll_op_t op, uint64_t key)
{
	tp_coll_comp_opts_t o;
	tp_err_t err;

	tp_coll_comp_opts_defaults(&o);
	o.kind = k->kind;
	o.levels = k->levels;
	o.topk_fraction = 0.1;
	for (size_t i = 0; i < n; i++)
		b[i] = (float)input(tp_coll_comm_rank(c), i, TP_COLL_FP32);
	err = tp_coll_allreduce_compressed(c, b, n, op, &o, key);
	return err ? call_failed(c, "allreduce_compressed", err) : 0;
}

/* Error feedback: the mean of T calls of op on one key approaches the
 * dense result (for AVG too: its residuals are the sum's, and a call
 * that skipped the division would miss by (n - 1) x the mean). */
static int comp_mean(tp_coll_comm_t *c, const comp_case_t *k, tp_coll_op_t op,
		     uint64_t key)
{
	int n = tp_coll_comm_size(c), rc;
	double A = 2.0 * n; /* inputs are quarters in [-2, 2] */
	static float b[MAXCOUNT], sum[MAXCOUNT];
	enum { T = 60 };

	memset(sum, 0, sizeof(sum));
	for (int t = 0; t < T; t++) {
		if ((rc = comp_call(c, k, b, MAXCOUNT, op, key)))
			return rc;
		for (size_t i = 0; i < MAXCOUNT; i++)
			sum[i] += b[i];
	}
	for (size_t i = 0; i < MAXCOUNT; i++) {
		double want = (double)reference(n, i, TP_COLL_FP32, op);
		double err = fabs(sum[i] / T - want);
		/* the residuals stay bounded, so the mean of T calls errs
		 * by ~1/T of them: measured here at 60 calls, int8 5e-5 A,
		 * 1-bit 0.034 A, top-k 0.019 A (one call: up to 4e-3 A,
		 * 0.5 A, 0.9 A); AVG by those over n */
		double lim = k->exact			    ? 1e-6 * A
			     : k->kind == TP_COLL_COMP_INT8 ? 1e-3 * A
			     : k->kind == TP_COLL_COMP_1BIT ? 0.08 * A
							    : 0.05 * A;
		if (op == TP_COLL_AVG)
			lim /= n;
		if (err > lim) {
			fprintf(stderr,
				"# rank %d: %s %s mean of %d [%zu] = %g, "
				"want %g +- %g\n",
				tp_coll_comm_rank(c),
				tp_coll_comp_name(k->kind),
				op == TP_COLL_AVG ? "avg" : "sum", T, i,
				sum[i] / T, want, lim);
			return 5;
		}
	}
	return 0;
}

static int comp_rank(tp_coll_comm_t *c, void *arg)
{
	const comp_case_t *k = arg;
	static const size_t cnts[] = {0, 1, 7, 257, MAXCOUNT};
	int n = tp_coll_comm_size(c), rc;
	double A = 2.0 * n; /* inputs are quarters in [-2, 2] */
	static float b[MAXCOUNT], sumcall[MAXCOUNT], first[MAXCOUNT];

	for (size_t ci = 0; ci < 5; ci++) {
		size_t cnt = cnts[ci];
		for (int avg = 0; avg < 2; avg++) {
			tp_coll_op_t op = avg ? TP_COLL_AVG : TP_COLL_SUM;
			if ((rc = comp_call(c, k, b, cnt, op, cnt + 100 * avg)))
				return rc;
			/* one call's allowance is wider than the values'
			 * range, so it cannot tell AVG from SUM: AVG is the
			 * compressed sum divided by n, and from fresh
			 * residuals (new keys, no stochastic rounding) the
			 * same inputs compress alike, so it is the SUM
			 * call's bits each divided by n */
			for (size_t i = 0; avg && i < cnt; i++) {
				float want = sumcall[i] / (float)n;
				if (memcmp(&b[i], &want, sizeof(want))) {
					fprintf(stderr,
						"# rank %d: %s avg count %zu "
						"[%zu] = %g, sum / %d = %g\n",
						tp_coll_comm_rank(c),
						tp_coll_comp_name(k->kind), cnt,
						i, b[i], n, want);
					return 7;
				}
			}
			for (size_t i = 0; i < cnt; i++) {
				double want =
				    (double)reference(n, i, TP_COLL_FP32, op);
				double lim =
				    comp_bound(k, n, A) / (avg ? n : 1);
				if (!(fabs(b[i] - want) <= lim)) {
					fprintf(stderr,
						"# rank %d: %s count %zu [%zu] "
						"= %g, want %g +- %g\n",
						tp_coll_comm_rank(c),
						tp_coll_comp_name(k->kind), cnt,
						i, b[i], want, lim);
					return 1;
				}
			}
			if (same_everywhere(c, b, cnt))
				return 4;
			if (!avg)
				memcpy(sumcall, b, cnt * sizeof(float));
		}
	}
	if ((rc = comp_mean(c, k, TP_COLL_SUM, 777)) ||
	    (rc = comp_mean(c, k, TP_COLL_AVG, 778)))
		return rc;
	/* a key whose count changes starts from fresh residuals: its call
	 * gives what a new key gives */
	if ((rc = comp_call(c, k, first, 257, TP_COLL_SUM, 4242)) ||
	    (rc = comp_call(c, k, b, 257, TP_COLL_SUM, 777)))
		return rc;
	return memcmp(first, b, 257 * sizeof(float)) ? 6 : 0;
}

static void run_comp_on(tp_fabric_t *f, int nh, int L, const comp_case_t *k,
			bool tcp_only)
{
	tp_plan_t *p = plan_on(f, nh, L, 0);
	char what[96];

	snprintf(what, sizeof(what), "%s levels %u, %d hosts x %d%s",
		 tp_coll_comp_name(k->kind), k->levels, nh, L,
		 tcp_only ? " (TCP)" : "");
	if (tcp_only)
		setenv("TOPOPLACE_COLL_SHM", "0", 1);
	run_ranks_ok(p, 20, 1024, comp_rank, (void *)k, 120, what);
	unsetenv("TOPOPLACE_COLL_SHM");
	tp_plan_destroy(p);
}

static void run_comp(int nh, int L, const comp_case_t *k, bool tcp_only)
{
	run_comp_on(coll_fabric(), nh, L, k, tcp_only);
}

/* 2 groups (hosts alternate leaves): 2x1, 4x2 over shm and over TCP
 * only, 3x2 (groups of 2 and 1 hosts); flat, hierarchical, group+cross;
 * one host (one group): levels CROSS is the dense all-reduce, exactly. */
static void test_comp_allreduce(void **s)
{
	const unsigned lv[3] = {
	    TP_COLL_LEVEL_CROSS, TP_COLL_LEVEL_GROUP | TP_COLL_LEVEL_CROSS,
	    TP_COLL_LEVEL_HOST | TP_COLL_LEVEL_GROUP | TP_COLL_LEVEL_CROSS};

	(void)s;
	for (int kind = 1; kind <= 3; kind++) {
		for (int l = 0; l < 3; l++) {
			comp_case_t k = {(tp_coll_comp_t)kind, lv[l], false};
			run_comp(2, 1, &k, false);
			run_comp(4, 2, &k, l == 1);
			run_comp(3, 2, &k, false);
		}
		comp_case_t one = {(tp_coll_comp_t)kind, TP_COLL_LEVEL_CROSS,
				   true};
		run_comp(1, 3, &one, false);
	}
}

/* TOPOPLACE_COLL_SOCKETS=3: a compressed message is a header and a
 * payload the receiver reads apart, so the sender must post them apart
 * too (each request is striped over the sockets by its own length; as
 * one they failed every call, "impossible lengths"). Every compressor,
 * flat and hierarchical, step by step (2 x 1) and pipelined (4 x 2). */
static void test_comp_sockets(void **s)
{
	const unsigned lv[2] = {TP_COLL_LEVEL_CROSS,
				TP_COLL_LEVEL_GROUP | TP_COLL_LEVEL_CROSS};

	(void)s;
	setenv("TOPOPLACE_COLL_SOCKETS", "3", 1);
	for (int kind = 1; kind <= 3; kind++)
		for (int l = 0; l < 2; l++) {
			comp_case_t k = {(tp_coll_comp_t)kind, lv[l], false};
			run_comp(2, 1, &k, false);
			run_comp(4, 2, &k, false);
		}
}

/* test_comp_sockets' environment gone whether it passed or not */
static int unset_sockets(void **s)
{
	(void)s;
	unsetenv("TOPOPLACE_COLL_SOCKETS");
	return 0;
}

/* A NIC per GPU: 4 rails, so the group level leaves each rank its
 * channels' sub-shards and 4 cross rings per group pair run at once. */
static void test_comp_rails(void **s)
{
	(void)s;
	for (int kind = 1; kind <= 3; kind++)
		for (unsigned lv = 4; lv <= 6; lv += 2) {
			comp_case_t k = {(tp_coll_comp_t)kind, lv, false};
			run_comp_on(coll_fabric_nics(), 4, 4, &k, false);
		}
}

/* Rank weights (a plan made with nics_by_rate, host 0's second NIC at
 * half width: weights 1024 512 1024 1024): the host level splits every
 * buffer unevenly, and every collective still gives the exact result
 * (the matrix: odd counts, every algorithm, dtype and op) over the host
 * segment and over TCP rings, 2 and 4 hosts. */
static void test_rank_weights(void **s)
{
	tp_fabric_t *f = tp_test_half_cable(coll_fabric_nics(), 0, 1);
	uint32_t nw;

	(void)s;
	plan_by_rate = true;
	for (int nh = 2; nh <= 4; nh += 2) {
		tp_plan_t *p = plan_on(f, nh, 4, 0);
		const uint32_t *w = tp_plan_rank_weights(p, &nw);
		char what[64];
		assert_non_null(w);
		assert_int_equal(nw, 4);
		assert_int_equal(w[0], 1024);
		assert_int_equal(w[1], 512);
		assert_int_equal(w[3], 1024);
		snprintf(what, sizeof(what), "weighted, %d hosts x 4", nh);
		run_ranks_ok(p, 20, 96, matrix, NULL, 120, what);
		setenv("TOPOPLACE_COLL_SHM", "0", 1);
		run_ranks_ok(p, 20, 96, matrix, NULL, 120, what);
		unsetenv("TOPOPLACE_COLL_SHM");
		tp_plan_destroy(p);
	}
	plan_by_rate = false;
	tp_fabric_destroy(f);
}

/* The compressed all-reduce on test_rank_weights' uneven shards (levels
 * group and cross; with host, flat). */
static void test_comp_rank_weights(void **s)
{
	tp_fabric_t *f = tp_test_half_cable(coll_fabric_nics(), 0, 1);

	(void)s;
	plan_by_rate = true;
	for (int kind = 1; kind <= 3; kind++)
		for (unsigned lv = 6; lv <= 7; lv++) {
			comp_case_t k = {(tp_coll_comp_t)kind, lv, false};
			run_comp_on(f, 4, 4, &k, false);
		}
	plan_by_rate = false;
	tp_fabric_destroy(f);
}

/* NaN and Inf from one rank: the result is NaN / non-finite there on
 * every rank, the rest of the buffer survives (int8 and 1-bit lose the
 * blocks around them, top-k nothing), and the next call is finite again:
 * the residuals restarted instead of carrying the NaN on. */
static int nan_rank(tp_coll_comm_t *c, void *arg)
{
	enum { N = 4096 };
	const comp_case_t *k = arg;
	static float b[N];
	tp_coll_comp_opts_t o;
	size_t bad = 0;

	tp_coll_comp_opts_defaults(&o);
	o.kind = k->kind;
	o.levels = k->levels;
	for (int call = 0; call < 2; call++) {
		/* distinct values: sampled top-k's capacity (2k) is not
		 * spent on ties before the Inf's index */
		for (size_t i = 0; i < N; i++)
			b[i] = sinf((float)i * 0.37f +
				    (float)tp_coll_comm_rank(c));
		if (call == 0 && tp_coll_comm_rank(c) == 1) {
			b[5] = NAN;
			b[3000] = INFINITY;
		}
		if (tp_coll_allreduce_compressed(c, b, N, TP_COLL_SUM, &o, 1))
			return 2;
		for (size_t i = 0; i < N; i++)
			bad += !isfinite(b[i]);
		if (call == 0 &&
		    (!isnan(b[5]) || isfinite(b[3000]) || bad > N / 2))
			return 3;
		if (call == 1 && bad)
			return 4;
		bad = 0;
	}
	return 0;
}

static void test_comp_nan(void **s)
{
	tp_plan_t *p = plan_of(2, 2, 0);
	char what[64];

	(void)s;
	for (int kind = 1; kind <= 3; kind++) {
		for (unsigned lv = 4; lv <= 7; lv += 3) {
			comp_case_t k = {(tp_coll_comp_t)kind, lv, false};
			snprintf(what, sizeof(what), "%s levels %u",
				 tp_coll_comp_name(k.kind), lv);
			run_ranks_ok(p, 20, 64 << 10, nan_rank, &k, 60, what);
		}
	}
	tp_plan_destroy(p);
}

/* Stochastic int8 without error feedback: the same input twice rounds
 * with new noise (the call number moves on without a key's state; it
 * stayed 0 and every call drew the same noise), and alike on every rank. */
static int stoch_rank(tp_coll_comm_t *c, void *arg)
{
	enum { N = 4096 };
	static float b[2][N];
	tp_coll_comp_opts_t o;
	size_t differ = 0;

	(void)arg;
	tp_coll_comp_opts_defaults(&o);
	o.kind = TP_COLL_COMP_INT8;
	o.stochastic = true;
	o.error_feedback = false;
	for (int call = 0; call < 2; call++) {
		for (size_t i = 0; i < N; i++)
			b[call][i] = sinf((float)i * 0.37f +
					  (float)tp_coll_comm_rank(c));
		if (tp_coll_allreduce_compressed(c, b[call], N, TP_COLL_SUM, &o,
						 7))
			return 2;
	}
	for (size_t i = 0; i < N; i++)
		differ += b[0][i] != b[1][i];
	/* the same on every rank: rank 0's second result broadcast */
	static float r0[N];
	memcpy(r0, b[1], sizeof(r0));
	if (tp_coll_broadcast(c, r0, N, TP_COLL_FP32, 0))
		return 3;
	if (memcmp(r0, b[1], sizeof(r0)))
		return 4;
	return differ > N / 10 ? 0 : 5;
}

static void test_comp_stochastic(void **s)
{
	tp_plan_t *p = plan_of(2, 2, 0);

	(void)s;
	run_ranks_ok(p, 20, 64 << 10, stoch_rank, NULL, 60,
		     "int8 stochastic, no error feedback");
	tp_plan_destroy(p);
}

/* Top-k's threshold (topk_exact): on 1,000 equal entries per rank the
 * sampled threshold sends every entry at it up to 2k, the exact selection
 * the first k, flat and across the groups; a rank whose mode differs is
 * named by TOPOPLACE_COLL_CHECK (run_ranks_ok sets it). */
static int exact_rank(tp_coll_comm_t *c, void *arg)
{
	enum { N = 1000 };
	static float b[N];
	tp_coll_comp_opts_t o;
	size_t nz[2][2] = {{0}};

	(void)arg;
	tp_coll_comp_opts_defaults(&o);
	o.kind = TP_COLL_COMP_TOPK;
	o.error_feedback = false;
	for (int flat = 0; flat < 2; flat++) {
		for (int exact = 0; exact < 2; exact++) {
			for (size_t i = 0; i < N; i++)
				b[i] = 1.0f;
			o.levels = flat ? 7 : TP_COLL_LEVEL_CROSS;
			o.topk_exact = exact;
			if (tp_coll_allreduce_compressed(c, b, N, TP_COLL_SUM,
							 &o, 3))
				return 2;
			for (size_t i = 0; i < N; i++)
				nz[flat][exact] += b[i] != 0.0f;
		}
	}
	/* flat: k = 10 of 1,000 from every rank, the same entries; across
	 * the groups each rank compresses its group's 500-entry shard,
	 * k = 5: 10 in all, or 20 sampled */
	if (nz[1][0] != 20 || nz[1][1] != 10 || nz[0][0] != 20 ||
	    nz[0][1] != 10) {
		fprintf(stderr, "# flat %zu / %zu, cross %zu / %zu\n", nz[1][0],
			nz[1][1], nz[0][0], nz[0][1]);
		return 3;
	}
	o.topk_exact = tp_coll_comm_rank(c) == 1;
	tp_err_t err =
	    tp_coll_allreduce_compressed(c, b, N, TP_COLL_SUM, &o, 3);
	if (err != TP_ERR_MISMATCH || !strstr(tp_coll_comm_detail(c), "exact"))
		return 4;
	return 0;
}

/* A top-k message a receiver refuses is blamed on the rank that made
 * it, not only on the neighbour that forwarded it. On the ring 0, 1, 2,
 * 3: rank 0 sends 20 entries (sampled threshold, 1,000 equal values),
 * ranks 1 and 3 sampled and rank 2 exact send 10 (distinct values), so
 * only rank 2 (room for k = 10) refuses, and the first message it
 * refuses is rank 0's, which rank 1 forwards (it was named alone).
 * Exit 0: as expected, or the communicator broke under this rank; 1:
 * the wrong rank named; 2: another outcome. */
static int blame_rank(tp_coll_comm_t *c, void *arg)
{
	enum { N = 1000 };
	static float b[N];
	tp_coll_comp_opts_t o;
	int me = tp_coll_comm_rank(c);
	tp_err_t err;
	const char *d;

	(void)arg;
	tp_coll_comp_opts_defaults(&o);
	o.kind = TP_COLL_COMP_TOPK;
	o.levels = 7;
	o.error_feedback = false;
	o.topk_exact = me == 2;
	for (size_t i = 0; i < N; i++)
		b[i] = me == 0 ? 1.0f : 1.0f + 0.001f * (float)i;
	err = tp_coll_allreduce_compressed(c, b, N, TP_COLL_SUM, &o, 3);
	d = tp_coll_comm_detail(c);
	fprintf(stderr, "# rank %d: %s: %s\n", me, tp_strerror(err), d);
	if (err == TP_ERR_PEER_LOST || err == TP_ERR_TIMEOUT)
		return me == 2 ? 2 : 0;
	if (me != 2)
		return err == TP_OK ? 0 : 2;
	if (err == TP_OK)
		return 2;
	return strstr(d, "from rank 0 (host node001), forwarded by rank 1 "
			 "(host node003)")
		   ? 0
		   : 1;
}

static void test_comp_blame(void **s)
{
	tp_plan_t *p = plan_of(4, 1, 0);

	(void)s;
	run_ranks_ok(p, 5, 64 << 10, blame_rank, NULL, 30,
		     "top-k refused message blamed on its maker");
	tp_plan_destroy(p);
}

static void test_comp_exact(void **s)
{
	tp_plan_t *p = plan_of(4, 1, 0); /* two groups of two */

	(void)s;
	setenv("TOPOPLACE_COLL_CHECK", "1", 1);
	run_ranks_ok(p, 20, 64 << 10, exact_rank, NULL, 60,
		     "top-k exact and sampled");
	unsetenv("TOPOPLACE_COLL_CHECK");
	tp_plan_destroy(p);
}

/* The phase profile of the calls since the last reset: nested intervals,
 * so the whole calls hold the stages and the stages the (de)compression;
 * compressed: whether encoding and decoding ran. */
static bool phases_ok(const tp_coll_comm_t *c, bool compressed)
{
	uint64_t t[TP_COLL_PHASES];

	for (int p = 0; p < TP_COLL_PHASES; p++)
		t[p] = tp_coll_comm_phase_ns(c, (tp_coll_phase_t)p);
	return tp_coll_comm_phase_ns(c, TP_COLL_PHASES) == 0 &&
	       t[TP_COLL_PHASE_INNER] > 0 && t[TP_COLL_PHASE_CROSS] > 0 &&
	       t[TP_COLL_PHASE_CALL] >=
		   t[TP_COLL_PHASE_INNER] + t[TP_COLL_PHASE_CROSS] &&
	       t[TP_COLL_PHASE_INNER] + t[TP_COLL_PHASE_CROSS] >=
		   t[TP_COLL_PHASE_COMPRESS] + t[TP_COLL_PHASE_DECOMPRESS] &&
	       (t[TP_COLL_PHASE_COMPRESS] > 0) == compressed &&
	       (t[TP_COLL_PHASE_DECOMPRESS] > 0) == compressed;
}

/* Bytes across the up-links: dense hierarchical against compressed, on
 * 4 hosts in 2 groups; the phase profile of each. */
static int cross_rank(tp_coll_comm_t *c, void *arg)
{
	enum { N = 1 << 16 };
	static float b[N];
	tp_coll_comp_opts_t o;
	const double goal[4] = {0, 3.5, 10, 10};

	(void)arg;
	tp_coll_comp_opts_defaults(&o);
	tp_coll_comm_stats_reset(c);
	if (tp_coll_allreduce(c, b, b, N, TP_COLL_FP32, TP_COLL_SUM,
			      TP_COLL_ALGO_HIERARCHICAL))
		return 2;
	uint64_t dense = tp_coll_comm_cross_bytes(c);
	if (!phases_ok(c, false))
		return 4;
	for (int kind = 1; kind <= 3; kind++) {
		for (size_t i = 0; i < N; i++)
			b[i] =
			    (float)input(tp_coll_comm_rank(c), i, TP_COLL_FP32);
		o.kind = (tp_coll_comp_t)kind;
		tp_coll_comm_stats_reset(c);
		if (tp_coll_allreduce_compressed(c, b, N, TP_COLL_SUM, &o, 1))
			return 3;
		if (!phases_ok(c, true))
			return 5;
		uint64_t comp = tp_coll_comm_cross_bytes(c);
		fprintf(stderr,
			"# rank %d: %s: %llu cross bytes, dense %llu "
			"(%.1fx)\n",
			tp_coll_comm_rank(c), tp_coll_comp_name(o.kind),
			(unsigned long long)comp, (unsigned long long)dense,
			(double)dense / (double)comp);
		if (dense == 0 || comp == 0 ||
		    (double)dense / (double)comp < goal[kind])
			return 10 + kind;
	}
	return 0;
}

static void test_comp_cross_bytes(void **s)
{
	tp_plan_t *p = plan_of(4, 1, 0);

	(void)s;
	run_ranks_ok(p, 20, 64 << 10, cross_rank, NULL, 60, "cross bytes");
	tp_plan_destroy(p);
}

/* ---- the pipelined hierarchical compressed all-reduce ---------------- */

enum { PIPE_N = 40000 + 13, PIPE_SEG = 2048 };

static int pipe_call(tp_coll_comm_t *c, tp_coll_comp_t kind, unsigned levels,
		     float *b, size_t seg, bool overlap, uint64_t key)
{
	tp_coll_comp_opts_t o;
	tp_err_t err;

	tp_coll_comp_opts_defaults(&o);
	o.kind = kind;
	o.levels = levels;
	o.segment = seg;
	o.overlap = overlap;
	err = tp_coll_allreduce_compressed(c, b, PIPE_N, TP_COLL_SUM, &o, key);
	return err ? call_failed(c, "allreduce_compressed", err) : 0;
}

/* Three calls of int8 and 1-bit with error feedback, pipelined and with
 * every stage run alone (overlap off, fresh keys): the
 * same bits on every call, within the one-call bound of the dense sum,
 * and the same on every rank. arg: the levels compressed. */
static int pipe_rank(tp_coll_comm_t *c, void *arg)
{
	static float a[PIPE_N], b[PIPE_N];
	int n = tp_coll_comm_size(c), me = tp_coll_comm_rank(c), rc;
	unsigned levels = *(const unsigned *)arg;

	for (int kind = 1; kind <= 2; kind++) {
		comp_case_t k = {(tp_coll_comp_t)kind, levels, false};
		for (int call = 0; call < 3; call++) {
			for (size_t i = 0; i < PIPE_N; i++)
				a[i] = b[i] =
				    (float)input(me + call, i, TP_COLL_FP32);
			if ((rc = pipe_call(c, k.kind, levels, a, PIPE_SEG,
					    true, 10 + kind)) ||
			    (rc = pipe_call(c, k.kind, levels, b, PIPE_SEG,
					    false, 20 + kind)))
				return rc;
			if (memcmp(a, b, sizeof(a))) {
				fprintf(stderr,
					"# rank %d: %s call %d: "
					"pipelined != one at a time\n",
					me, tp_coll_comp_name(k.kind), call);
				return 2;
			}
			for (size_t i = 0; i < PIPE_N && call == 0; i++)
				if (!(fabs(a[i] -
					   (double)reference(n, i, TP_COLL_FP32,
							     TP_COLL_SUM)) <=
				      comp_bound(&k, n, 2.0 * n)))
					return 3;
			if (same_everywhere(c, a, PIPE_N))
				return 4;
		}
	}
	return 0;
}

/* Every rank sends +-1 with the same sign at each position, so each
 * group's dense sum has one magnitude and 1-bit carries it exactly: the
 * result must be exactly ranks x sign, a check of where every segment's
 * exchange lands (one segment's result in another's place fails it), in
 * a call pipelined over many segments and in one of a single piece. */
static float pipe_sign(size_t i)
{
	return (i * 0x9e3779b97f4a7c15ull) >> 63 ? -1.0f : 1.0f;
}

static int order_rank(tp_coll_comm_t *c, void *arg)
{
	static float b[PIPE_N];
	int n = tp_coll_comm_size(c), rc;
	const size_t segs[3] = {PIPE_SEG, 3 * PIPE_SEG, 0};
	unsigned levels = *(const unsigned *)arg;

	for (int t = 0; t < 3; t++) {
		for (size_t i = 0; i < PIPE_N; i++)
			b[i] = pipe_sign(i);
		if ((rc = pipe_call(c, TP_COLL_COMP_1BIT, levels, b, segs[t],
				    true, 30 + t)))
			return rc;
		for (size_t i = 0; i < PIPE_N; i++)
			if (b[i] != (float)n * pipe_sign(i)) {
				fprintf(stderr,
					"# rank %d: segment %zu: [%zu] = %g, "
					"want %g\n",
					tp_coll_comm_rank(c), segs[t], i, b[i],
					(float)n * pipe_sign(i));
				return 5;
			}
	}
	return 0;
}

/* 4 hosts x 2 ranks in 2 groups, over shm and TCP, and 4 rails (several
 * cross rings per rank); the exchange across groups compressed alone, and
 * with the group level's stages compressed too. */
static void test_comp_pipeline(void **s)
{
	tp_plan_t *p = plan_on(coll_fabric(), 4, 2, 0);
	tp_plan_t *q = plan_on(coll_fabric_nics(), 4, 4, 0);
	unsigned cross = TP_COLL_LEVEL_CROSS,
		 group = TP_COLL_LEVEL_CROSS | TP_COLL_LEVEL_GROUP;

	(void)s;
	run_ranks_ok(p, 20, 1024, pipe_rank, &cross, 120, "pipeline");
	run_ranks_ok(p, 20, 1024, order_rank, &cross, 60, "segment order");
	run_ranks_ok(p, 20, 1024, pipe_rank, &group, 120, "pipeline, group");
	run_ranks_ok(p, 20, 1024, order_rank, &group, 60, "order, group");
	setenv("TOPOPLACE_COLL_SHM", "0", 1);
	run_ranks_ok(p, 20, 1024, pipe_rank, &cross, 120, "pipeline (TCP)");
	run_ranks_ok(p, 20, 1024, pipe_rank, &group, 120, "group (TCP)");
	unsetenv("TOPOPLACE_COLL_SHM");
	run_ranks_ok(q, 20, 1024, pipe_rank, &cross, 120, "pipeline, rails");
	run_ranks_ok(q, 20, 1024, order_rank, &cross, 60, "order, rails");
	run_ranks_ok(q, 20, 1024, order_rank, &group, 60, "group, rails");
	tp_plan_destroy(p);
	tp_plan_destroy(q);
}

/* Ranks that disagree (block 128 against 256) fail at the first header
 * they read, naming the peer; nobody hangs. */
static int mismatch_rank(tp_coll_comm_t *c, void *arg)
{
	static float b[1000];
	tp_coll_comp_opts_t o;
	tp_err_t err;

	(void)arg;
	tp_coll_comp_opts_defaults(&o);
	o.kind = TP_COLL_COMP_INT8;
	o.block = tp_coll_comm_rank(c) == 1 ? 128 : 256;
	err = tp_coll_allreduce_compressed(c, b, 1000, TP_COLL_SUM, &o, 0);
	if (err == TP_ERR_MISMATCH &&
	    !strstr(tp_coll_comm_detail(c), "from rank"))
		return 2;
	return err == TP_ERR_MISMATCH || err == TP_ERR_PEER_LOST ? 0 : 1;
}

static void test_comp_mismatch(void **s)
{
	tp_plan_t *p = plan_of(2, 1, 0);

	(void)s;
	run_ranks_ok(p, 5, 64 << 10, mismatch_rank, NULL, 20, "mismatch");
	tp_plan_destroy(p);
}

/* One rank of a group whose level is compressed, and of a cross-group
 * exchange, disagrees with the others on the block or on the pipeline
 * segment (0: the whole buffer in one piece). Exit 0: the call failed
 * with TP_ERR_MISMATCH naming the field and a peer; 3: it failed as the
 * communicator broke under it (a peer gone: PEER_LOST, or a wait timed
 * out); 1: a result; 2: another error. */
typedef struct odd_case {
	unsigned levels, block;
	size_t segment;
	const char *field;
} odd_case_t;

static int odd_rank(tp_coll_comm_t *c, void *arg)
{
	static float b[PIPE_N];
	const odd_case_t *oc = arg;
	tp_coll_comp_opts_t o;
	tp_err_t err;
	const char *d;

	for (size_t i = 0; i < PIPE_N; i++)
		b[i] = pipe_sign(i);
	tp_coll_comp_opts_defaults(&o);
	o.kind = TP_COLL_COMP_INT8;
	o.levels = oc->levels;
	o.segment = PIPE_SEG;
	if (tp_coll_comm_rank(c) == 1) {
		o.block = oc->block;
		o.segment = oc->segment;
	}
	err = tp_coll_allreduce_compressed(c, b, PIPE_N, TP_COLL_SUM, &o, 7);
	d = tp_coll_comm_detail(c);
	fprintf(stderr, "# rank %d: %s: %s\n", tp_coll_comm_rank(c),
		tp_strerror(err), d);
	if (err == TP_OK)
		return 1;
	if (err == TP_ERR_MISMATCH)
		return strstr(d, oc->field) && strstr(d, "from rank") ? 0 : 2;
	return err == TP_ERR_PEER_LOST || err == TP_ERR_TIMEOUT ? 3 : 2;
}

/* Every rank of the call gets an error, none a result, and the ranks
 * that read the odd one's messages name the field that differs. 4 hosts
 * x 1 rank in 2 groups of 2, the group level's stages and the exchange
 * across groups compressed and pipelined; then the exchange alone
 * compressed (the odd rank's cross ring reads it). */
static void test_comp_odd_rank(void **s)
{
	tp_plan_t *p = plan_of(4, 1, 0);
	unsigned group = TP_COLL_LEVEL_CROSS | TP_COLL_LEVEL_GROUP,
		 cross = TP_COLL_LEVEL_CROSS;
	const odd_case_t cases[] = {
	    {group, 128, PIPE_SEG, "block"},
	    {group, 256, 2 * PIPE_SEG, "segment"},
	    {group, 256, 0, "segment"},
	    {cross, 128, PIPE_SEG, "block"},
	    {cross, 256, 2 * PIPE_SEG, "segment"},
	};
	tp_coll_opts_t o;
	int st[16];

	(void)s;
	for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
		int named = 0;

		opts_for(&o, next_port(), 5, 64 << 10);
		run_ranks(p, &o, odd_rank, (void *)&cases[t], 30, st);
		for (int r = 0; r < 4; r++) {
			if (st[r] != 0 && st[r] != 3)
				fail_msg("case %zu (%s): rank %d exit %d", t,
					 cases[t].field, r, st[r]);
			named += st[r] == 0;
		}
		if (named == 0)
			fail_msg("case %zu (%s): no rank names it", t,
				 cases[t].field);
	}
	tp_plan_destroy(p);
}

/* The odd rank shares its host with rank 0 (4 hosts x 2 ranks, 2 groups
 * of 2), the host level dense: the two name the field and both values
 * (the odd rank's first, want: "<field> <theirs>, this rank's <ours>" as
 * rank 0 reads it); the others fail as the communicator breaks. Exit 0:
 * as wanted; 1: a result; 2: another error or text; 3: PEER_LOST on a
 * rank that need not name it; 4: a timeout. */
typedef struct odd_host_case {
	odd_case_t odd;
	uint64_t theirs, ours; /* as rank 0 reads the odd rank's header */
} odd_host_case_t;

static int odd_host_rank(tp_coll_comm_t *c, void *arg)
{
	static float b[PIPE_N];
	const odd_host_case_t *oc = arg;
	int me = tp_coll_comm_rank(c);
	tp_coll_comp_opts_t o;
	char want[96];
	tp_err_t err;
	const char *d;

	for (size_t i = 0; i < PIPE_N; i++)
		b[i] = pipe_sign(i);
	tp_coll_comp_opts_defaults(&o);
	o.kind = TP_COLL_COMP_INT8;
	o.levels = oc->odd.levels;
	o.segment = PIPE_SEG;
	if (me == 1) {
		o.block = oc->odd.block;
		o.segment = oc->odd.segment;
	}
	err = tp_coll_allreduce_compressed(c, b, PIPE_N, TP_COLL_SUM, &o, 7);
	d = tp_coll_comm_detail(c);
	fprintf(stderr, "# rank %d: %s: %s\n", me, tp_strerror(err), d);
	snprintf(want, sizeof(want), "%s %llu, this rank's %llu", oc->odd.field,
		 (unsigned long long)(me == 1 ? oc->ours : oc->theirs),
		 (unsigned long long)(me == 1 ? oc->theirs : oc->ours));
	if (err == TP_OK)
		return 1;
	if (me <= 1)
		return err == TP_ERR_MISMATCH && strstr(d, want) &&
			       strstr(d, me ? "from rank 0" : "from rank 1")
			   ? 0
			   : 2;
	if (err == TP_ERR_TIMEOUT)
		return 4;
	return err == TP_ERR_PEER_LOST || err == TP_ERR_MISMATCH ? 3 : 2;
}

/* A rank cut differently from the other rank of its host, where the host
 * level runs dense (no header of its own): both fail at once with
 * TP_ERR_MISMATCH naming the field and both values, no rank waits for
 * the 5 s timeout (the whole run well under it), over shared memory and
 * TCP. Effective segments: block x 8 ranks rounds PIPE_SEG to 2048 for
 * block 256 and 128. */
static void test_comp_odd_host(void **s)
{
	tp_plan_t *p = plan_of(4, 2, 0);
	unsigned group = TP_COLL_LEVEL_CROSS | TP_COLL_LEVEL_GROUP,
		 cross = TP_COLL_LEVEL_CROSS;
	const odd_host_case_t cases[] = {
	    {{cross, 256, 2 * PIPE_SEG, "segment"}, 4096, 2048},
	    {{cross, 256, 0, "segment"}, 0, 2048},
	    {{cross, 128, PIPE_SEG, "block"}, 128, 256},
	    {{group, 256, 2 * PIPE_SEG, "segment"}, 4096, 2048},
	    {{group, 128, PIPE_SEG, "block"}, 128, 256},
	};
	const double timeout = 5.0;
	tp_coll_opts_t o;
	int st[16];

	(void)s;
	for (int tcp = 0; tcp < 2; tcp++) {
		if (tcp)
			setenv("TOPOPLACE_COLL_SHM", "0", 1);
		for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
			double wall;

			opts_for(&o, next_port(), timeout, 64 << 10);
			wall = run_ranks(p, &o, odd_host_rank,
					 (void *)&cases[t], 30, st);
			for (int r = 0; r < 8; r++)
				if (st[r] != 0 && !(r > 1 && st[r] == 3))
					fail_msg("%s case %zu (%s): rank %d "
						 "exit %d",
						 tcp ? "TCP" : "shm", t,
						 cases[t].odd.field, r, st[r]);
			if (wall > timeout / 2)
				fail_msg("%s case %zu (%s): %.2f s",
					 tcp ? "TCP" : "shm", t,
					 cases[t].odd.field, wall);
		}
	}
	unsetenv("TOPOPLACE_COLL_SHM");
	tp_plan_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_bad_rank),
	    cmocka_unit_test(test_truncated_plan),
	    cmocka_unit_test(test_port_in_use),
	    cmocka_unit_test(test_device_stream),
	    cmocka_unit_test(test_env),
	    cmocka_unit_test(test_bad_shm_env),
	    cmocka_unit_test(test_init_timeout),
	    cmocka_unit_test(test_peer_never_connects),
	    cmocka_unit_test(test_rendezvous_probe),
	    cmocka_unit_test(test_rendezvous_silent_probe),
	    cmocka_unit_test(test_rendezvous_probe_flood),
	    cmocka_unit_test(test_rendezvous_probes_no_progress),
	    cmocka_unit_test(test_rendezvous_failure_told),
	    cmocka_unit_test(test_rendezvous_fd_limit),
	    cmocka_unit_test(test_init_error_one_line),
	    cmocka_unit_test(test_mismatched_plan),
	    cmocka_unit_test(test_foreign_peer_turned_away),
	    cmocka_unit_test(test_steps_own_ports),
	    cmocka_unit_test(test_adopts_rank0_choice),
	    {"test_1x1", test_matrix, NULL, NULL, &shapes[0]},
	    {"test_1x3", test_matrix, NULL, NULL, &shapes[1]},
	    {"test_2x1", test_matrix, NULL, NULL, &shapes[2]},
	    {"test_2x2", test_matrix, NULL, NULL, &shapes[3]},
	    {"test_3x3", test_matrix, NULL, NULL, &shapes[4]},
	    {"test_4x2", test_matrix, NULL, NULL, &shapes[5]},
	    cmocka_unit_test(test_shm_refused),
	    cmocka_unit_test(test_shm_nofifo),
	    cmocka_unit_test(test_shm_tiny_ring),
	    cmocka_unit_test(test_large),
	    cmocka_unit_test(test_host_blocks),
	    cmocka_unit_test(test_host_phases),
	    cmocka_unit_test(test_hier_pipeline),
	    cmocka_unit_test(test_segment_mismatch),
	    cmocka_unit_test(test_sockets),
	    cmocka_unit_test(test_sockets_mismatch),
	    cmocka_unit_test(test_check_args),
	    cmocka_unit_test(test_check_mismatch),
	    cmocka_unit_test(test_two_comms),
	    cmocka_unit_test(test_host_small),
	    cmocka_unit_test(test_runs_the_schedule),
	    cmocka_unit_test(test_hca_addrs),
	    cmocka_unit_test(test_killed_peer),
	    cmocka_unit_test(test_hung_peer),
	    cmocka_unit_test(test_small_faults),
	    cmocka_unit_test(test_forked_victim),
	    cmocka_unit_test(test_fork_child),
	    cmocka_unit_test(test_one_rank_refuses),
	    cmocka_unit_test(test_opts_zero),
	    cmocka_unit_test(test_init_nomem_fds),
	    cmocka_unit_test(test_long_timeout),
	    cmocka_unit_test(test_slow_rail),
	    cmocka_unit_test(test_staggered_start),
	    cmocka_unit_test(test_comp_names),
	    cmocka_unit_test(test_comp_huge_count),
	    cmocka_unit_test(test_comp_topk_range),
	    cmocka_unit_test(test_comp_wire),
	    cmocka_unit_test(test_comp_allreduce),
	    cmocka_unit_test(test_comp_rails),
	    cmocka_unit_test_teardown(test_comp_sockets, unset_sockets),
	    cmocka_unit_test(test_rank_weights),
	    cmocka_unit_test(test_comp_rank_weights),
	    cmocka_unit_test(test_comp_nan),
	    cmocka_unit_test(test_comp_stochastic),
	    cmocka_unit_test(test_comp_exact),
	    cmocka_unit_test(test_comp_blame),
	    cmocka_unit_test(test_comp_cross_bytes),
	    cmocka_unit_test(test_comp_mismatch),
	    cmocka_unit_test(test_comp_pipeline),
	    cmocka_unit_test(test_comp_odd_rank),
	    cmocka_unit_test(test_comp_odd_host),
	};

	signal(SIGPIPE, SIG_DFL); /* the library must not need SIG_IGN */
	/* Two programs from this file, so `make -j2 check` runs them side by
	 * side (about 25 and 15 s here): test_coll_comp the compressed
	 * all-reduce's tests, test_coll the others. TP_TEST_FILTER (e.g.
	 * 'test_2x*') picks the tests instead: test_coll still leaves out
	 * the test_comp_ ones, test_coll_comp runs any it matches. */
#ifdef TP_TEST_COLL_COMP
	cmocka_set_test_filter("test_comp_*");
#else
	cmocka_set_skip_filter("test_comp_*");
#endif
	if (getenv("TP_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TP_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
