/*
 * bench_compress.c - throughput of the CPU gradient compressors
 * (tp_cuda.h's tp_cuda_cpu_*: int8, 1-bit, top-k with error feedback,
 * and their decompress-accumulate) and of the wire format's checksum, on
 * one core, with memcpy of the same bytes in the same run as the
 * reference.
 *
 * Usage: bench_compress [--count N] [--reps R] [--json FILE]
 * Prints a table (GB/s of fp32 input: count x 4 bytes / the best of R
 * runs' thread CPU time, so load from other processes does not count) and
 * the same figures as JSON {"format":"topoplace-compress-bench/1",...}
 * into FILE (default: stdout after the table).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comp_wire.h"
#include "tp_cuda.h"

/* CPU time of this thread: the machines running it are shared, and
 * the figure asked for is per core, so time other processes hold the
 * core does not count (wall time would). */
static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct bufs {
	size_t n;
	float *g, *r, *out, *copy;
	int8_t *q;
	uint32_t *bits, *idx;
	float *scales, *val;
	size_t nnz;
	tp_cuda_comp_opts_t o;
} bufs_t;

typedef void (*case_fn)(bufs_t *b);

static void c_memcpy(bufs_t *b)
{
	memcpy(b->copy, b->g, b->n * sizeof(float));
}

static void c_int8(bufs_t *b)
{
	tp_cuda_cpu_int8_compress(b->g, b->r, b->n, &b->o, b->q, b->scales);
}

static void c_int8_sr(bufs_t *b)
{
	b->o.round = TP_CUDA_ROUND_STOCHASTIC;
	tp_cuda_cpu_int8_compress(b->g, b->r, b->n, &b->o, b->q, b->scales);
	b->o.round = TP_CUDA_ROUND_NEAREST;
}

static void c_int8_dec(bufs_t *b)
{
	tp_cuda_cpu_int8_decompress_acc(b->q, b->scales, b->n, &b->o, b->out);
}

static void c_1bit(bufs_t *b)
{
	tp_cuda_cpu_1bit_compress(b->g, b->r, b->n, &b->o, b->bits, b->scales);
}

static void c_1bit_dec(bufs_t *b)
{
	tp_cuda_cpu_1bit_decompress_acc(b->bits, b->scales, b->n, &b->o,
					b->out);
}

static void c_topk(bufs_t *b)
{
	tp_cuda_cpu_topk_compress(b->g, b->r, b->n, &b->o, b->idx, b->val,
				  &b->nnz);
}

static void c_topk_exact(bufs_t *b)
{
	b->o.topk_mode = TP_CUDA_TOPK_EXACT;
	tp_cuda_cpu_topk_compress(b->g, b->r, b->n, &b->o, b->idx, b->val,
				  &b->nnz);
	b->o.topk_mode = TP_CUDA_TOPK_SAMPLED;
}

static void c_topk_dec(bufs_t *b)
{
	tp_cuda_cpu_topk_decompress_acc(b->idx, b->val, b->nnz, b->n, b->out);
}

static void c_hash(bufs_t *b)
{
	volatile uint64_t h = tp__comp_hash(b->g, b->n * sizeof(float), 0);
	(void)h;
}

static const struct {
	const char *name;
	case_fn fn;
	double goal; /* GB/s of fp32 input the issue asks for; 0: none */
} cases[] = {
    {"memcpy", c_memcpy, 0},
    {"int8_compress_ef", c_int8, 2.0},
    {"int8_compress_ef_stochastic", c_int8_sr, 0},
    {"int8_decompress_acc", c_int8_dec, 0},
    {"1bit_compress_ef", c_1bit, 2.0},
    {"1bit_decompress_acc", c_1bit_dec, 0},
    {"topk_compress_ef_sampled", c_topk, 0.5},
    {"topk_compress_ef_exact", c_topk_exact, 0},
    {"topk_decompress_acc", c_topk_dec, 0},
    {"wire_checksum", c_hash, 0},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static void *alloc(size_t bytes)
{
	void *p = calloc(1, bytes ? bytes : 1);

	if (!p) {
		fprintf(stderr, "bench_compress: out of memory\n");
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	size_t n = (size_t)1 << 22;
	int reps = 7;
	const char *json = NULL;
	double gbs[NCASES];
	bufs_t b;
	FILE *jf;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--count") && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else {
			fprintf(stderr, "usage: bench_compress [--count N] "
					"[--reps R] [--json FILE]\n");
			return 2;
		}
	}
	if (n == 0 || reps < 1) {
		fprintf(stderr, "bench_compress: count and reps must be > 0\n");
		return 2;
	}
	memset(&b, 0, sizeof(b));
	b.n = n;
	tp_cuda_comp_opts_defaults(&b.o);
	b.g = alloc(n * sizeof(float));
	b.r = alloc(n * sizeof(float));
	b.out = alloc(n * sizeof(float));
	b.copy = alloc(n * sizeof(float));
	b.q = alloc(n);
	b.bits = alloc(tp_cuda_1bit_words(n) * sizeof(uint32_t));
	b.scales = alloc(tp_cuda_nblocks(n, &b.o) * sizeof(float));
	b.idx = alloc(tp_cuda_topk_capacity(n, &b.o) * sizeof(uint32_t));
	b.val = alloc(tp_cuda_topk_capacity(n, &b.o) * sizeof(float));
	srand(1);
	for (size_t i = 0; i < n; i++) /* a gradient-like spread: +-1e-3 */
		b.g[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * 2e-3f;

	printf("# %zu fp32 values (%.1f MiB), best of %d, one core, thread "
	       "CPU time\n",
	       n, (double)n * 4 / 1048576.0, reps);
	printf("%-30s %10s %9s %8s\n", "case", "GB/s", "x memcpy", "goal");
	for (size_t c = 0; c < NCASES; c++) {
		double best = 1e30;
		cases[c].fn(&b); /* warm: page faults, caches */
		for (int k = 0; k < reps; k++) {
			double t0 = now();
			cases[c].fn(&b);
			double t = now() - t0;
			best = t < best ? t : best;
		}
		gbs[c] = (double)n * 4 / best / 1e9;
		printf("%-30s %10.2f %9.3f %8s\n", cases[c].name, gbs[c],
		       gbs[c] / gbs[0],
		       cases[c].goal == 0	 ? ""
		       : gbs[c] >= cases[c].goal ? "met"
						 : "MISSED");
	}
	jf = json ? fopen(json, "w") : stdout;
	if (!jf) {
		fprintf(stderr, "bench_compress: %s: cannot write\n", json);
		return 1;
	}
	fprintf(jf,
		"{\"format\":\"topoplace-compress-bench/1\",\"count\":%zu,"
		"\"reps\":%d,\"block\":%zu,\"topk_fraction\":%g,\"results\":[",
		n, reps, b.o.block, b.o.topk_frac);
	for (size_t c = 0; c < NCASES; c++)
		fprintf(jf,
			"%s{\"case\":\"%s\",\"gbps\":%.3f,\"vs_memcpy\":%.4f}",
			c ? "," : "", cases[c].name, gbs[c], gbs[c] / gbs[0]);
	fprintf(jf, "]}\n");
	if (jf != stdout)
		fclose(jf);
	return 0;
}
