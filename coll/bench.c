/* topoplace-coll-bench - all-reduce benchmark over libtopoplace-coll,
 * nccl-tests style. Every rank runs it; rank 0 prints.
 *
 * The command line and the --json line format are a contract with the
 * benchmark harness (tests/bench): change neither without it. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_coll.h"

typedef struct args {
	const char *plan, *master, *json;
	int rank;
	tp_coll_algo_t algo;
	size_t min_bytes, max_bytes;
	double factor, timeout_s;
	int iters, warmup;
	bool check;
	tp_coll_comp_opts_t comp; /* kind NONE: the dense all-reduce */
} args_t;

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: topoplace-coll-bench [--plan FILE --rank R] "
		"[--master HOST:PORT]\n"
		"  [--algo ring|hierarchical|tree|auto] [--min-bytes N] "
		"[--max-bytes N]\n"
		"  [--factor F] [--iters N] [--warmup N] [--check] "
		"[--json FILE] [--timeout S]\n"
		"  [--compress none|int8|1bit|topk [--levels "
		"host,group,cross]\n"
		"   [--segment N] [--no-overlap]]\n"
		"Without --plan and --rank (given together), "
		"$TOPOPLACE_PLAN / $TOPOPLACE_RANK;\nsizes take K/M/G; "
		"defaults 4K..256M, factor 4, 20 iterations, 5 warm-up,\n"
		"algo auto.\n"
		"--compress runs tp_coll_allreduce_compressed() (error "
		"feedback on) on the\nhops --levels names (default cross) "
		"and adds the bytes rank 0 sent across\ngroups per call. "
		"--segment: its pipeline segment in elements (0: one "
		"piece;\ndefault 1M), --no-overlap: the segments' stages one "
		"at a time.\n");
}

/* A size with K/M/G (tp_parse_bytes: binary units, digits first), at
 * most what a buffer could hold. */
static int parse_size(const char *s, size_t *out)
{
	double v;

	if (!tp_parse_bytes(s, 0, 0x1p62, &v))
		return -1;
	*out = (size_t)v;
	return 0;
}

/* A whole number in [lo, hi], nothing else (strtol alone wraps what an
 * int cannot hold: --rank 4294967296 was rank 0). */
static int parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* "host,group,cross" (any of them) into TP_COLL_LEVEL_* bits. */
static int parse_levels(const char *s, unsigned *out)
{
	static const char *const names[] = {"host", "group", "cross"};
	unsigned v = 0;

	while (*s) {
		size_t n = strcspn(s, ","), k = 0;
		while (k < 3 &&
		       !(strlen(names[k]) == n && !strncmp(s, names[k], n)))
			k++;
		if (k == 3)
			return -1;
		v |= 1u << k;
		s += n + (s[n] == ',');
	}
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv, args_t *a)
{
	static const struct option lo[] = {
	    {"plan", required_argument, NULL, 'p'},
	    {"rank", required_argument, NULL, 'r'},
	    {"master", required_argument, NULL, 'm'},
	    {"algo", required_argument, NULL, 'a'},
	    {"min-bytes", required_argument, NULL, 'b'},
	    {"max-bytes", required_argument, NULL, 'e'},
	    {"factor", required_argument, NULL, 'f'},
	    {"iters", required_argument, NULL, 'n'},
	    {"warmup", required_argument, NULL, 'w'},
	    {"check", no_argument, NULL, 'c'},
	    {"json", required_argument, NULL, 'j'},
	    {"timeout", required_argument, NULL, 't'},
	    {"compress", required_argument, NULL, 'z'},
	    {"levels", required_argument, NULL, 'l'},
	    {"segment", required_argument, NULL, 's'},
	    {"no-overlap", no_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0}};
	bool pipe_opt = false, levels_opt = false;
	int o;

	*a = (args_t){.rank = -1,
		      .algo = TP_COLL_ALGO_AUTO,
		      .min_bytes = 4096,
		      .max_bytes = 256u << 20,
		      .factor = 4,
		      .iters = 20,
		      .warmup = 5,
		      .timeout_s = 30};
	tp_coll_comp_opts_defaults(&a->comp);
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		char *end = NULL;
		switch (o) {
		case 'p':
			a->plan = optarg;
			break;
		case 'r':
			if (parse_int(optarg, 0, INT_MAX, &a->rank)) {
				fprintf(stderr, "bad --rank '%s'\n", optarg);
				return -1;
			}
			break;
		case 'm':
			a->master = optarg;
			break;
		case 'a':
			if (tp_coll_algo_parse(optarg, &a->algo)) {
				fprintf(stderr, "bad --algo '%s'\n", optarg);
				return -1;
			}
			break;
		case 'b':
		case 'e':
			if (parse_size(optarg, o == 'b' ? &a->min_bytes
							: &a->max_bytes)) {
				fprintf(stderr, "bad size '%s'\n", optarg);
				return -1;
			}
			break;
		case 'f':
			a->factor = strtod(optarg, &end);
			break;
		case 'n':
		case 'w':
			if (parse_int(optarg, o == 'n' ? 1 : 0, INT_MAX,
				      o == 'n' ? &a->iters : &a->warmup)) {
				fprintf(stderr, "bad --%s '%s'\n",
					o == 'n' ? "iters" : "warmup", optarg);
				return -1;
			}
			break;
		case 'c':
			a->check = true;
			break;
		case 'j':
			a->json = optarg;
			break;
		case 't':
			a->timeout_s = strtod(optarg, &end);
			break;
		case 'z':
			if (tp_coll_comp_parse(optarg, &a->comp.kind)) {
				fprintf(stderr, "bad --compress '%s'\n",
					optarg);
				return -1;
			}
			break;
		case 'l':
			levels_opt = true;
			if (parse_levels(optarg, &a->comp.levels)) {
				fprintf(stderr, "bad --levels '%s'\n", optarg);
				return -1;
			}
			break;
		case 's':
			/* strtoull takes "-1" as SIZE_MAX: digits only */
			errno = 0;
			a->comp.segment = strtoull(optarg, &end, 10);
			if (!(*optarg >= '0' && *optarg <= '9') || errno ||
			    *end) {
				fprintf(stderr, "bad --segment '%s'\n", optarg);
				return -1;
			}
			pipe_opt = true;
			break;
		case 'o':
			a->comp.overlap = false;
			pipe_opt = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		if (end && *end) {
			fprintf(stderr, "bad number '%s'\n", optarg);
			return -1;
		}
	}
	if (a->check && a->comp.kind != TP_COLL_COMP_NONE) {
		fprintf(stderr, "--check wants exact sums: not with "
				"--compress\n");
		return -1;
	}
	if (a->rank >= 0 && !a->plan) {
		/* else $TOPOPLACE_RANK would win without a word */
		fprintf(stderr, "--rank goes with --plan\n");
		return -1;
	}
	if (pipe_opt && a->comp.kind == TP_COLL_COMP_NONE) {
		fprintf(stderr, "--segment and --no-overlap shape the "
				"compressed all-reduce: with --compress\n");
		return -1;
	}
	if (levels_opt && a->comp.kind == TP_COLL_COMP_NONE) {
		fprintf(stderr, "--levels names the hops the all-reduce "
				"compresses: with --compress\n");
		return -1;
	}
	if (optind < argc || a->iters < 1 || a->warmup < 0 ||
	    !(a->factor > 1) || !(a->timeout_s > 0) ||
	    a->min_bytes > a->max_bytes || (a->plan && a->rank < 0)) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* Small integers: every partial sum is exact in fp32. */
static float val(int rank, size_t i, int it)
{
	return (float)((rank + 1) * (int)((i + (size_t)it) % 13 + 1));
}

static int run_size(tp_coll_comm_t *c, const args_t *a, size_t bytes, float *in,
		    float *out, double *t, FILE *js)
{
	int rank = tp_coll_comm_rank(c), n = tp_coll_comm_size(c);
	size_t count = bytes / sizeof(float);
	long bad = 0;

	for (int it = -a->warmup; it < a->iters; it++) {
		/* the counters hold the timed calls, all of them */
		if (it == 0)
			tp_coll_comm_stats_reset(c);
		if (a->check)
			for (size_t i = 0; i < count; i++)
				in[i] = val(rank, i, it);
		if (tp_coll_barrier(c))
			goto fail;
		if (a->comp.kind != TP_COLL_COMP_NONE)
			memcpy(out, in, count * sizeof(float));
		double t0 = now_s();
		if (a->comp.kind != TP_COLL_COMP_NONE
			? tp_coll_allreduce_compressed(c, out, count,
						       TP_COLL_SUM, &a->comp, 0)
			: tp_coll_allreduce(c, in, out, count, TP_COLL_FP32,
					    TP_COLL_SUM, a->algo))
			goto fail;
		double dt = now_s() - t0;
		if (it >= 0)
			t[it] = dt;
		if (a->check) {
			/* sum over r of (r+1) x k = k n (n+1) / 2 */
			for (size_t i = 0; i < count; i++) {
				float k =
				    (float)((int)((i + (size_t)it) % 13 + 1));
				if (out[i] != k * (float)(n * (n + 1) / 2))
					bad++;
			}
		}
	}
	/* Time of an iteration = the slowest rank's. */
	if (tp_coll_allreduce(c, t, t, (size_t)a->iters, TP_COLL_FP64,
			      TP_COLL_MAX, TP_COLL_ALGO_RING))
		goto fail;
	int64_t nbad = bad;
	if (tp_coll_allreduce(c, &nbad, &nbad, 1, TP_COLL_INT64, TP_COLL_SUM,
			      TP_COLL_ALGO_RING))
		goto fail;
	qsort(t, (size_t)a->iters, sizeof(double), cmp_d);
	double med = a->iters % 2 ? t[a->iters / 2]
				  : (t[a->iters / 2 - 1] + t[a->iters / 2]) / 2;
	double algbw =
	    count && med > 0 ? (double)count * sizeof(float) / med / 1e9 : 0;
	double busbw = algbw * 2.0 * (n - 1) / n;
	/* counted since the stats reset before the last timed call */
	uint64_t cross = tp_coll_comm_cross_bytes(c);
	bool comp = a->comp.kind != TP_COLL_COMP_NONE;
	if (rank == 0) {
		printf("%12zu %12.1f %12.3f %12.3f", count * sizeof(float),
		       med * 1e6, algbw, busbw);
		if (comp)
			printf(" %12.0f", (double)cross / a->iters);
		printf("%s\n", nbad ? "  WRONG" : "");
		fflush(stdout);
		if (js) {
			fprintf(js,
				"{\"impl\":\"topoplace\",\"algo\":\"%s\","
				"\"order\":\"plan\",\"ranks\":%d,\"hosts\":%d,"
				"\"bytes\":%zu,\"seconds\":%.9g,"
				"\"busbw_gbps\":%.6g",
				tp_coll_algo_name(a->algo), n,
				tp_coll_comm_nhosts(c), count * sizeof(float),
				med, busbw * 8);
			if (comp)
				fprintf(js,
					",\"compress\":\"%s\",\"levels\":%u,"
					"\"segment\":%zu,\"overlap\":%s,"
					"\"cross_bytes_per_call\":%.0f",
					tp_coll_comp_name(a->comp.kind),
					a->comp.levels, a->comp.segment,
					a->comp.overlap ? "true" : "false",
					(double)cross / a->iters);
			fprintf(js, "}\n");
			fflush(js);
		}
	}
	if (nbad) {
		if (rank == 0)
			fprintf(stderr,
				"check failed: %lld wrong elements at "
				"%zu bytes\n",
				(long long)nbad, count * sizeof(float));
		return 2;
	}
	return 0;
fail:
	fprintf(stderr, "rank %d: %s\n", rank, tp_coll_comm_detail(c));
	return 1;
}

/* The library's warnings and errors, one line each on stderr. */
static void log_line(tp_log_level_t level, const char *msg, void *arg)
{
	(void)arg;
	if (level <= TP_LOG_WARN)
		fprintf(stderr, "topoplace-coll-bench: %s: %s\n",
			level == TP_LOG_ERROR ? "error" : "warning", msg);
}

int main(int argc, char **argv)
{
	args_t a;
	tp_coll_opts_t o;
	tp_coll_comm_t *c = NULL;
	char *why = NULL, host[256];
	tp_err_t err;
	int rc = 0, jsrc = 0;

	if (parse_args(argc, argv, &a))
		return 2;
	tp_coll_opts_defaults(&o);
	o.timeout_s = a.timeout_s;
	if (a.master) {
		const char *colon = strrchr(a.master, ':');
		if (!colon || colon == a.master ||
		    (size_t)(colon - a.master) >= sizeof(host)) {
			fprintf(stderr, "--master wants HOST:PORT\n");
			return 2;
		}
		memcpy(host, a.master, (size_t)(colon - a.master));
		host[colon - a.master] = '\0';
		o.master_addr = host;
		/* a port that is not one would silently become 0: the
		 * default port, where nobody else listens */
		if (parse_int(colon + 1, 1, 65535, &o.master_port)) {
			fprintf(stderr, "--master '%s': bad port\n", a.master);
			return 2;
		}
	}
	tp_log_set(log_line, NULL);
	if (a.plan)
		err = tp_coll_comm_init_file(a.plan, a.rank, &o, &c, &why);
	else
		err = tp_coll_comm_init_env(&o, &c, &why);
	if (err) {
		fprintf(stderr, "topoplace-coll-bench: %s: %s\n",
			tp_strerror(err), why ? why : "");
		tp_free(why);
		return 1;
	}
	float *in = malloc(a.max_bytes + 4), *out = malloc(a.max_bytes + 4);
	double *t = malloc((size_t)a.iters * sizeof(double));
	FILE *js = NULL;
	if (!in || !out || !t) {
		fprintf(stderr, "topoplace-coll-bench: out of memory\n");
		rc = 1;
		goto out;
	}
	for (size_t i = 0; i < a.max_bytes / sizeof(float); i++)
		in[i] = 1.0f;
	if (tp_coll_comm_rank(c) == 0) {
		if (a.json && !(js = fopen(a.json, "a"))) {
			fprintf(stderr, "topoplace-coll-bench: %s: %s\n",
				a.json, strerror(errno));
			jsrc = 1;
		}
		printf("# topoplace-coll-bench: %d ranks on %d hosts, algo %s, "
		       "fp32 sum, %d iters (median of the slowest rank)\n",
		       tp_coll_comm_size(c), tp_coll_comm_nhosts(c),
		       tp_coll_algo_name(a.algo), a.iters);
		if (a.comp.kind != TP_COLL_COMP_NONE)
			printf("# compressed: %s, levels %#x (host 1, group "
			       "2, cross 4), error feedback, segment %zu%s\n",
			       tp_coll_comp_name(a.comp.kind), a.comp.levels,
			       a.comp.segment,
			       a.comp.overlap ? "" : ", no overlap");
		printf("%12s %12s %12s %12s%s\n", "bytes", "time_us",
		       "algbw_GBps", "busbw_GBps",
		       a.comp.kind != TP_COLL_COMP_NONE ? "  cross_bytes" : "");
	}
	/* Every rank must run the same sizes even if rank 0 cannot write. */
	for (double b = (double)a.min_bytes;
	     rc == 0 && b <= (double)a.max_bytes;
	     b = b * a.factor < b + 4 ? b + 4 : b * a.factor) {
		size_t bytes = (size_t)b / sizeof(float) * sizeof(float);
		rc = run_size(c, &a, bytes, in, out, t, js);
	}
out:
	if (js)
		fclose(js);
	free(in);
	free(out);
	free(t);
	tp_coll_comm_destroy(c);
	return rc ? rc : jsrc;
}
