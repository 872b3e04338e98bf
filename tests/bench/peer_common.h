/*
 * Shared by the peer benchmarks (peer_mpi.c, peer_gloo.cc): the command line,
 * the table and the JSON lines of topoplace-coll-bench, so the three programs
 * read and print the same shape.
 *
 *   --min-bytes N (4K) --max-bytes N (256M) --factor F (4) --iters N (20)
 *   --warmup N (5) --check --json FILE --timeout S (300) --algo NAME
 *   --order plan|slurm --hosts H          (sizes take K, M, G)
 *
 * Time per size: the median over iterations of the slowest rank's time, a
 * barrier before each iteration. busbw = algbw * 2 (n - 1) / n (nccl-tests'
 * all-reduce factor): GB/s in the table, Gbit/s in the JSON. Rank 0 prints
 * the table and appends one JSON line per size to --json FILE. Header-only,
 * C and C++; everything is static.
 */
#ifndef PEER_COMMON_H
#define PEER_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct peer_opts {
	size_t min_bytes, max_bytes;
	double factor;
	int iters, warmup, check, timeout;
	const char *json, *algo, *order;
	int hosts; /* 0: count distinct host names */
	/* Gloo only. */
	int rank, size;
	const char *store, *addr;
};

static void peer_usage(const char *prog, const char *extra)
{
	fprintf(stderr,
		"usage: %s [--min-bytes N] [--max-bytes N] [--factor F] "
		"[--iters N] [--warmup N]\n"
		"       [--check] [--json FILE] [--timeout S] [--algo NAME] "
		"[--order plan|slurm]\n"
		"       [--hosts H]%s\n",
		prog, extra);
}

static int peer_num(const char *opt, const char *s, double lo, double hi,
		    double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* Sizes take K, M, G (binary), as topoplace-coll-bench's do. */
	if (end != s && *end && !end[1] && strchr("KkMmGg", *end)) {
		v *= *end == 'K' || *end == 'k'	  ? 1024.0
		     : *end == 'M' || *end == 'm' ? 1048576.0
						  : 1073741824.0;
		end++;
	}
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: expected a number %g..%g, got '%s'\n", opt,
			lo, hi, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* Returns 0, or -1 after printing why (unknown option, bad number). */
static int peer_parse(int argc, char **argv, struct peer_opts *o,
		      const char *extra)
{
	double v;
	int i;

	memset(o, 0, sizeof(*o));
	o->min_bytes = 4096;
	o->max_bytes = 256u << 20;
	o->factor = 4;
	o->iters = 20;
	o->warmup = 5;
	o->timeout = 300;
	o->algo = "default";
	o->order = "slurm";
	o->rank = -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = 1;

		if (!strcmp(a, "--check")) {
			o->check = 1;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			peer_usage(argv[0], extra);
			exit(0);
		}
		if (!val) {
			fprintf(stderr, "%s: unknown option or missing value\n",
				a);
			return -1;
		}
		if (!strcmp(a, "--min-bytes") || !strcmp(a, "--max-bytes")) {
			if (peer_num(a, val, 4, 4.0 * (1u << 30), &v))
				return -1;
			*(a[2] == 'm' && a[3] == 'i' ? &o->min_bytes
						     : &o->max_bytes) =
			    (size_t)v;
		} else if (!strcmp(a, "--factor")) {
			if (peer_num(a, val, 1.01, 1024, &o->factor))
				return -1;
		} else if (!strcmp(a, "--iters") || !strcmp(a, "--warmup") ||
			   !strcmp(a, "--timeout") || !strcmp(a, "--hosts") ||
			   !strcmp(a, "--rank") || !strcmp(a, "--size")) {
			if (peer_num(a, val,
				     !strcmp(a, "--iters") ||
					     !strcmp(a, "--size")
					 ? 1
					 : 0,
				     1e6, &v))
				return -1;
			*(!strcmp(a, "--iters")	    ? &o->iters
			  : !strcmp(a, "--warmup")  ? &o->warmup
			  : !strcmp(a, "--timeout") ? &o->timeout
			  : !strcmp(a, "--hosts")   ? &o->hosts
			  : !strcmp(a, "--rank")    ? &o->rank
						    : &o->size) = (int)v;
		} else if (!strcmp(a, "--json")) {
			o->json = val;
		} else if (!strcmp(a, "--algo")) {
			o->algo = val;
		} else if (!strcmp(a, "--order")) {
			if (strcmp(val, "plan") && strcmp(val, "slurm")) {
				fprintf(stderr,
					"--order: plan or slurm, got '%s'\n",
					val);
				return -1;
			}
			o->order = val;
		} else if (!strcmp(a, "--store")) {
			o->store = val;
		} else if (!strcmp(a, "--addr")) {
			o->addr = val;
		} else {
			takes = 0;
		}
		if (!takes) {
			fprintf(stderr, "%s: unknown option\n", a);
			peer_usage(argv[0], extra);
			return -1;
		}
		i++;
	}
	if (o->min_bytes > o->max_bytes) {
		fprintf(stderr, "--min-bytes %zu > --max-bytes %zu\n",
			o->min_bytes, o->max_bytes);
		return -1;
	}
	return 0;
}

/* Next size: multiply by the factor, at least one float more, rounded to whole
 * floats. */
static size_t peer_next_size(size_t b, double f)
{
	size_t n = (size_t)((double)b * f);

	if (n <= b)
		n = b + 4;
	return n & ~(size_t)3;
}

static int peer_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of n values; sorts in place. */
static double peer_median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), peer_cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void peer_header(const char *impl, const struct peer_opts *o, int ranks,
			int hosts)
{
	printf("# %s: %d ranks on %d hosts, algo %s, order %s, fp32 sum, %d "
	       "iters (median of the slowest rank)\n",
	       impl, ranks, hosts, o->algo, o->order, o->iters);
	printf("%12s %12s %12s %12s\n", "bytes", "time_us", "algbw_GBps",
	       "busbw_GBps");
	fflush(stdout);
}

/* One table row (GB/s, as topoplace-coll-bench prints it) and, with --json,
 * one JSON line (busbw in Gbit/s; appended: the file is shared by many runs).
 */
static int peer_report(const char *impl, const struct peer_opts *o, int ranks,
		       int hosts, size_t bytes, double seconds, long wrong)
{
	double algbw = seconds > 0 ? (double)bytes / seconds / 1e9 : 0;
	double busbw = algbw * 2 * (ranks - 1) / ranks;

	printf("%12zu %12.1f %12.3f %12.3f%s\n", bytes, seconds * 1e6, algbw,
	       busbw, wrong ? "  WRONG" : "");
	fflush(stdout);
	if (o->json) {
		FILE *f = fopen(o->json, "a");

		if (!f) {
			fprintf(stderr, "%s: %s\n", o->json, strerror(errno));
			return -1;
		}
		fprintf(f,
			"{\"impl\":\"%s\",\"algo\":\"%s\",\"order\":\"%s\","
			"\"ranks\":%d,\"hosts\":%d,"
			"\"bytes\":%zu,\"seconds\":%.9g,\"busbw_gbps\":%.6g}\n",
			impl, o->algo, o->order, ranks, hosts, bytes, seconds,
			busbw * 8);
		if (fclose(f)) {
			fprintf(stderr, "%s: %s\n", o->json, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Input pattern whose float sum over any rank count < 2^20 is exact. */
static float peer_value(int rank, size_t i)
{
	return (float)((rank + 1) * (int)(i % 7 + 1));
}

static long peer_check(const float *buf, size_t count, int ranks)
{
	long wrong = 0;
	size_t i;

	for (i = 0; i < count; i++)
		if (buf[i] !=
		    (float)(ranks * (ranks + 1) / 2 * (int)(i % 7 + 1)))
			wrong++;
	return wrong;
}

#endif
