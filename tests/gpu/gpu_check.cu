/*
 * gpu_check.cu - every tp_cuda.h kernel against the CPU path (kref.c) on
 * random and adversarial inputs (NaN, Inf, denormals, all-zero blocks, ties,
 * -0), sizes 0/1/odd/2^28, aligned and misaligned pointers; then a
 * benchmark: GB/s per kernel next to cudaMemcpy device-to-device bandwidth
 * measured in the same run, as one JSON line on stdout
 * ({"format":"topoplace-gpu-bench/1", ...}). Progress and results on stderr.
 *
 * Built and run by tests/gpu/run.sh on a GPU, and by tests/cuda/simt.sh on
 * the CPU (kernels emulated, small sizes) in every make check. Exit: 0 all
 * checks passed, 1 a check failed, 77 no GPU, 99 a setup error (allocation,
 * CUDA call).
 *
 * "Equal" is bit-equal, except that two NaNs are equal whatever their
 * payload and sign (x86 and the GPU make different default NaNs).
 * Bytes per kernel are the bytes it must move at least (read + written);
 * memcpy_gbps counts read + written too, so the ratio is like for like.
 */
#include "config.h"

#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "tp_cuda.h"
#include "tp_kmath.h"

static char det[512];
#define DET det, sizeof(det)

#define CK(x)                                                                  \
	do {                                                                   \
		cudaError_t e_ = (x);                                          \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#x, cudaGetErrorString(e_));                   \
			exit(99);                                              \
		}                                                              \
	} while (0)
#define TK(x)                                                                  \
	do {                                                                   \
		det[0] = '\0';                                                 \
		tp_err_t e_ = (x);                                             \
		if (e_ != TP_OK) {                                             \
			fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__,      \
				__LINE__, #x, tp_strerror(e_), det);           \
			exit(99);                                              \
		}                                                              \
	} while (0)

static int failures, checks;

/* ---- inputs ------------------------------------------------------------- */

static uint64_t rs;
static uint32_t rnd32(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (uint32_t)(rs >> 16);
}

static float rnd_grad(void)
{
	float m = (float)(rnd32() & 0xffffff) * 0x1p-24f;
	int e = (int)(rnd32() % 12) - 10;
	return ldexpf(m, e) * ((rnd32() & 1) ? -1.0f : 1.0f);
}

/* kind 0: random; 1: adversarial, by 256-element block: all zero, one NaN,
 * one Inf, denormals, repeated magnitudes (ties), -0 and huge values, one
 * +-FLT_MAX (int8 scale overflow). */
static void fill(float *x, size_t n, int kind, uint64_t seed)
{
	rs = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < n; i++) {
		x[i] = rnd_grad();
		if (!kind)
			continue;
		switch ((i / 256) % 7) {
		case 0:
			x[i] = 0.0f;
			break;
		case 1:
			if (i % 256 == 77)
				x[i] = NAN;
			break;
		case 2:
			if (i % 256 == 5)
				x[i] = (i & 1024) ? -INFINITY : INFINITY;
			break;
		case 3:
			x[i] = ldexpf((float)(rnd32() % 1000), -140) *
			       ((i & 1) ? -1.0f : 1.0f);
			break;
		case 4:
			x[i] = (i % 3) ? 0.25f : -0.25f;
			break;
		case 5:
			if (i % 7 == 0)
				x[i] = -0.0f;
			if (i % 11 == 0)
				x[i] = 3e38f;
			break;
		case 6: /* one entry whose int8 scale x 127 overflows */
			if (i % 256 == 9)
				x[i] = (i & 2048) ? -FLT_MAX : FLT_MAX;
			break;
		default:
			break;
		}
	}
}

static bool feq(float a, float b)
{
	return tp_km_f32_bits(a) == tp_km_f32_bits(b) || (a != a && b != b);
}

static bool heq(uint16_t a, uint16_t b, tp_cuda_dtype_t dt)
{
	float fa =
	    dt == TP_CUDA_BF16 ? tp_km_bf16_to_f32(a) : tp_km_f16_to_f32(a);
	float fb =
	    dt == TP_CUDA_BF16 ? tp_km_bf16_to_f32(b) : tp_km_f16_to_f32(b);
	return a == b || (fa != fa && fb != fb);
}

static void report(const char *what, size_t n, int kind, long bad,
		   const char *how)
{
	checks++;
	if (bad < 0)
		return;
	failures++;
	fprintf(stderr, "FAIL %s n=%zu %s: first mismatch at %ld%s%s\n", what,
		n, kind ? "adversarial" : "random", bad, how ? ": " : "",
		how ? how : "");
}

static long cmp_f32(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!feq(a[i], b[i]))
			return (long)i;
	return -1;
}

static long cmp_bytes(const void *a, const void *b, size_t n)
{
	const unsigned char *x = (const unsigned char *)a,
			    *y = (const unsigned char *)b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

static long cmp_dt(const void *a, const void *b, size_t n, tp_cuda_dtype_t dt)
{
	for (size_t i = 0; i < n; i++) {
		bool ok =
		    dt == TP_CUDA_FP32
			? feq(((const float *)a)[i], ((const float *)b)[i])
			: heq(((const uint16_t *)a)[i],
			      ((const uint16_t *)b)[i], dt);
		if (!ok)
			return (long)i;
	}
	return -1;
}

/* Device copy of n elements of size sz at element offset off (off 1 makes
 * the pointer misaligned for vectors). */
struct dbuf {
	char *base = nullptr;
	void *p = nullptr;
	dbuf(size_t bytes, size_t off_bytes)
	{
		CK(cudaMalloc(&base, bytes + off_bytes + 16));
		p = base + off_bytes;
	}
	~dbuf()
	{
		cudaFree(base);
	}
	void put(const void *h, size_t bytes)
	{
		if (bytes)
			CK(cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice));
	}
	void get(void *h, size_t bytes)
	{
		if (bytes)
			CK(cudaMemcpy(h, p, bytes, cudaMemcpyDeviceToHost));
	}
};

/* ---- checks -------------------------------------------------------------- */

static void check_reduce(size_t n, int kind, size_t off)
{
	std::vector<float> a(n), b(n), ref(n), got(n);
	fill(a.data(), n, kind, 1);
	fill(b.data(), n, kind, 2);
	const tp_cuda_dtype_t dts[] = {TP_CUDA_FP32, TP_CUDA_FP16,
				       TP_CUDA_BF16};
	for (tp_cuda_dtype_t dt : dts) {
		size_t es = dt == TP_CUDA_FP32 ? 4 : 2, bytes = n * es;
		std::vector<char> ha(bytes + 1), hb(bytes + 1), hr(bytes + 1),
		    hg(bytes + 1);
		for (size_t i = 0; i < n; i++) {
			if (dt == TP_CUDA_FP32) {
				((float *)ha.data())[i] = a[i];
				((float *)hb.data())[i] = b[i];
			} else {
				uint16_t (*cv)(float) = dt == TP_CUDA_FP16
							    ? tp_km_f32_to_f16
							    : tp_km_f32_to_bf16;
				((uint16_t *)ha.data())[i] = cv(a[i]);
				((uint16_t *)hb.data())[i] = cv(b[i]);
			}
		}
		dbuf da(bytes, off * es), db(bytes, off * es),
		    dd(bytes, off * es);
		da.put(ha.data(), bytes);
		db.put(hb.data(), bytes);
		for (int op = 0; op <= TP_CUDA_MIN; op++) {
			for (int inplace = 0; inplace < 2; inplace++) {
				char name[64];
				void *dst = inplace ? da.p : dd.p;
				da.put(ha.data(),
				       bytes); /* in place overwrote it */
				TK(tp_cuda_reduce(dst, da.p, db.p, n, dt,
						  (tp_cuda_op_t)op, 8, NULL,
						  DET));
				CK(cudaDeviceSynchronize());
				(inplace ? da : dd).get(hg.data(), bytes);
				TK(tp_cuda_cpu_reduce(hr.data(), ha.data(),
						      hb.data(), n, dt,
						      (tp_cuda_op_t)op, 8));
				long bad = cmp_dt(hr.data(), hg.data(), n, dt);
				snprintf(name, sizeof(name),
					 "reduce dt=%d op=%d%s off=%zu",
					 (int)dt, op, inplace ? " inplace" : "",
					 off);
				report(name, n, kind, bad, NULL);
			}
		}
		/* scale */
		da.put(ha.data(), bytes);
		TK(tp_cuda_scale(da.p, n, dt, 3, NULL, DET));
		CK(cudaDeviceSynchronize());
		da.get(hg.data(), bytes);
		memcpy(hr.data(), ha.data(), bytes);
		TK(tp_cuda_cpu_scale(hr.data(), n, dt, 3));
		report("scale", n, kind, cmp_dt(hr.data(), hg.data(), n, dt),
		       NULL);
	}
}

static void check_int8(size_t n, int kind, size_t off, int stoch)
{
	tp_cuda_comp_opts_t o;
	tp_cuda_comp_opts_defaults(&o);
	o.round = stoch ? TP_CUDA_ROUND_STOCHASTIC : TP_CUDA_ROUND_NEAREST;
	o.seed = 1234;
	size_t nb = tp_cuda_nblocks(n, &o);
	std::vector<float> g(n), r(n), r2(n), sc(nb), sc2(nb), out(n), out2(n);
	std::vector<int8_t> q(n), q2(n);
	fill(g.data(), n, kind, 3);
	fill(r.data(), n, 0, 4);
	for (size_t i = 0; i < n; i++)
		r[i] *= 0.01f, out[i] = (float)(i % 5);
	r2 = r;
	out2 = out;
	dbuf dg(4 * n, 4 * off), dr(4 * n, 4 * off), dq(n, off), ds(4 * nb, 0),
	    dout(4 * n, 4 * off);
	dg.put(g.data(), 4 * n);
	dr.put(r.data(), 4 * n);
	dout.put(out.data(), 4 * n);
	TK(tp_cuda_int8_compress((float *)dg.p, (float *)dr.p, n, &o,
				 (int8_t *)dq.p, (float *)ds.p, NULL, DET));
	TK(tp_cuda_int8_decompress_acc((int8_t *)dq.p, (float *)ds.p, n, &o,
				       (float *)dout.p, NULL, DET));
	CK(cudaDeviceSynchronize());
	dq.get(q2.data(), n);
	ds.get(sc2.data(), 4 * nb);
	dr.get(r2.data(), 4 * n);
	dout.get(out2.data(), 4 * n);
	TK(tp_cuda_cpu_int8_compress(g.data(), r.data(), n, &o, q.data(),
				     sc.data()));
	TK(tp_cuda_cpu_int8_decompress_acc(q.data(), sc.data(), n, &o,
					   out.data()));
	const char *nm = stoch ? "int8 stochastic" : "int8 nearest";
	char name[64];
	snprintf(name, sizeof(name), "%s q off=%zu", nm, off);
	report(name, n, kind, cmp_bytes(q.data(), q2.data(), n), NULL);
	snprintf(name, sizeof(name), "%s scales off=%zu", nm, off);
	report(name, n, kind, cmp_f32(sc.data(), sc2.data(), nb), NULL);
	snprintf(name, sizeof(name), "%s residual off=%zu", nm, off);
	report(name, n, kind, cmp_f32(r.data(), r2.data(), n), NULL);
	snprintf(name, sizeof(name), "%s decompress_acc off=%zu", nm, off);
	report(name, n, kind, cmp_f32(out.data(), out2.data(), n), NULL);
}

static void check_1bit(size_t n, int kind, size_t off)
{
	tp_cuda_comp_opts_t o;
	tp_cuda_comp_opts_defaults(&o);
	size_t nb = tp_cuda_nblocks(n, &o), nw = tp_cuda_1bit_words(n);
	std::vector<float> g(n), r(n), r2(n), sc(nb), sc2(nb), out(n), out2(n);
	std::vector<uint32_t> w(nw), w2(nw);
	fill(g.data(), n, kind, 5);
	fill(r.data(), n, 0, 6);
	for (size_t i = 0; i < n; i++)
		r[i] *= 0.01f, out[i] = (float)(i % 3);
	r2 = r;
	out2 = out;
	dbuf dg(4 * n, 4 * off), dr(4 * n, 4 * off), dw(4 * nw, 0),
	    ds(4 * nb, 0), dout(4 * n, 4 * off);
	dg.put(g.data(), 4 * n);
	dr.put(r.data(), 4 * n);
	dout.put(out.data(), 4 * n);
	TK(tp_cuda_1bit_compress((float *)dg.p, (float *)dr.p, n, &o,
				 (uint32_t *)dw.p, (float *)ds.p, NULL, DET));
	TK(tp_cuda_1bit_decompress_acc((uint32_t *)dw.p, (float *)ds.p, n, &o,
				       (float *)dout.p, NULL, DET));
	CK(cudaDeviceSynchronize());
	dw.get(w2.data(), 4 * nw);
	ds.get(sc2.data(), 4 * nb);
	dr.get(r2.data(), 4 * n);
	dout.get(out2.data(), 4 * n);
	TK(tp_cuda_cpu_1bit_compress(g.data(), r.data(), n, &o, w.data(),
				     sc.data()));
	TK(tp_cuda_cpu_1bit_decompress_acc(w.data(), sc.data(), n, &o,
					   out.data()));
	char name[64];
	snprintf(name, sizeof(name), "1bit bits off=%zu", off);
	report(name, n, kind, cmp_bytes(w.data(), w2.data(), 4 * nw), NULL);
	snprintf(name, sizeof(name), "1bit scales off=%zu", off);
	report(name, n, kind, cmp_f32(sc.data(), sc2.data(), nb), NULL);
	snprintf(name, sizeof(name), "1bit residual off=%zu", off);
	report(name, n, kind, cmp_f32(r.data(), r2.data(), n), NULL);
	snprintf(name, sizeof(name), "1bit decompress_acc off=%zu", off);
	report(name, n, kind, cmp_f32(out.data(), out2.data(), n), NULL);
}

static void check_topk(size_t n, int kind, int exact)
{
	tp_cuda_comp_opts_t o;
	tp_cuda_comp_opts_defaults(&o);
	o.topk_mode = exact ? TP_CUDA_TOPK_EXACT : TP_CUDA_TOPK_SAMPLED;
	size_t cap = tp_cuda_topk_capacity(n, &o), nnz = 0;
	size_t wsb = tp_cuda_topk_workspace_size(n, &o);
	std::vector<float> g(n), r(n), r2(n), v(cap + 1), v2(cap + 1), out(n),
	    out2(n);
	std::vector<uint32_t> ix(cap + 1), ix2(cap + 1);
	uint32_t nnz2 = 0;
	fill(g.data(), n, kind, 7);
	fill(r.data(), n, 0, 8);
	for (size_t i = 0; i < n; i++)
		r[i] *= 0.1f;
	r2 = r;
	dbuf dg(4 * n, 0), dr(4 * n, 0), di(4 * cap, 0), dv(4 * cap, 0),
	    dn(4, 0), dws(wsb, 0), dout(4 * n, 0);
	dg.put(g.data(), 4 * n);
	dr.put(r.data(), 4 * n);
	CK(cudaMemset(dout.p, 0, 4 * n + 4));
	TK(tp_cuda_topk_compress((float *)dg.p, (float *)dr.p, n, &o,
				 (uint32_t *)di.p, (float *)dv.p,
				 (uint32_t *)dn.p, dws.p, wsb, NULL, DET));
	CK(cudaDeviceSynchronize());
	dn.get(&nnz2, 4);
	if (nnz2 > cap) {
		report(exact ? "topk exact nnz > capacity"
			     : "topk sampled nnz > capacity",
		       n, kind, 0, NULL);
		return;
	}
	TK(tp_cuda_topk_decompress_acc((uint32_t *)di.p, (float *)dv.p, nnz2, n,
				       (float *)dout.p, NULL, DET));
	CK(cudaDeviceSynchronize());
	di.get(ix2.data(), 4 * nnz2);
	dv.get(v2.data(), 4 * nnz2);
	dr.get(r2.data(), 4 * n);
	dout.get(out2.data(), 4 * n);
	TK(tp_cuda_cpu_topk_compress(g.data(), r.data(), n, &o, ix.data(),
				     v.data(), &nnz));
	for (size_t i = 0; i < n; i++)
		out[i] = 0.0f;
	TK(tp_cuda_cpu_topk_decompress_acc(ix.data(), v.data(), nnz, n,
					   out.data()));
	const char *nm = exact ? "topk exact" : "topk sampled";
	char name[64], how[64];
	snprintf(how, sizeof(how), "nnz cpu %zu gpu %u", nnz, nnz2);
	snprintf(name, sizeof(name), "%s nnz", nm);
	report(name, n, kind, nnz == nnz2 ? -1 : 0, how);
	if (nnz != nnz2)
		return;
	snprintf(name, sizeof(name), "%s idx", nm);
	report(name, n, kind, cmp_bytes(ix.data(), ix2.data(), 4 * nnz), NULL);
	snprintf(name, sizeof(name), "%s val", nm);
	report(name, n, kind, cmp_f32(v.data(), v2.data(), nnz), NULL);
	snprintf(name, sizeof(name), "%s residual", nm);
	report(name, n, kind, cmp_f32(r.data(), r2.data(), n), NULL);
	snprintf(name, sizeof(name), "%s decompress_acc", nm);
	report(name, n, kind, cmp_f32(out.data(), out2.data(), n), NULL);
}

static void check_all(size_t n, bool big)
{
	for (int kind = 0; kind < (big ? 1 : 2); kind++) {
		for (size_t off = 0; off < (big ? 1u : 2u); off++) {
			if (!big || off == 0)
				check_reduce(n, kind, off);
			check_int8(n, kind, off, 0);
			if (!big)
				check_int8(n, kind, off, 1);
			check_1bit(n, kind, off);
		}
		if (n > 0) {
			check_topk(n, kind, 1);
			check_topk(n, kind, 0);
		}
	}
	fprintf(stderr, "checked n=%zu: %d checks, %d failures so far\n", n,
		checks, failures);
}

/* ---- benchmark ------------------------------------------------------------
 */

struct result {
	const char *name;
	double bytes, gbps;
};

template <class F> static double time_ms(F f)
{
	cudaEvent_t a, b;
	float ms = 0;
	const int iters = 20;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int i = 0; i < 3; i++)
		f();
	CK(cudaEventRecord(a));
	for (int i = 0; i < iters; i++)
		f();
	CK(cudaEventRecord(b));
	CK(cudaEventSynchronize(b));
	CK(cudaEventElapsedTime(&ms, a, b));
	CK(cudaGetLastError());
	cudaEventDestroy(a);
	cudaEventDestroy(b);
	return ms / iters;
}

static void bench(const char *dev_name)
{
	const size_t n = 64u << 20; /* 256 MiB of fp32 */
	tp_cuda_comp_opts_t o;
	std::vector<result> res;
	float *a, *b, *c, *r, *sc, *val;
	int8_t *q;
	uint32_t *bits, *idx, *nnz;
	void *ws;

	tp_cuda_comp_opts_defaults(&o);
	size_t cap = tp_cuda_topk_capacity(n, &o);
	size_t wsb = tp_cuda_topk_workspace_size(n, &o);
	CK(cudaMalloc(&a, 4 * n));
	CK(cudaMalloc(&b, 4 * n));
	CK(cudaMalloc(&c, 4 * n));
	CK(cudaMalloc(&r, 4 * n));
	CK(cudaMalloc(&sc, 4 * n / 256 + 4));
	CK(cudaMalloc(&q, n));
	CK(cudaMalloc(&bits, n / 8 + 4));
	CK(cudaMalloc(&idx, 4 * cap));
	CK(cudaMalloc(&val, 4 * cap));
	CK(cudaMalloc(&nnz, 4));
	CK(cudaMalloc(&ws, wsb));
	{
		std::vector<float> h(n);
		fill(h.data(), n, 0, 9);
		CK(cudaMemcpy(a, h.data(), 4 * n, cudaMemcpyHostToDevice));
		fill(h.data(), n, 0, 10);
		CK(cudaMemcpy(b, h.data(), 4 * n, cudaMemcpyHostToDevice));
		for (auto &x : h)
			x *= 0.01f;
		CK(cudaMemcpy(r, h.data(), 4 * n, cudaMemcpyHostToDevice));
	}
	double B = 4.0 * n;
	double mc = time_ms([&] {
		CK(cudaMemcpyAsync(c, a, 4 * n, cudaMemcpyDeviceToDevice));
	});
	double memcpy_gbps = 2 * B / mc / 1e6;
	auto add = [&](const char *name, double bytes, double ms) {
		res.push_back({name, bytes, bytes / ms / 1e6});
		fprintf(stderr, "bench %-28s %8.1f GB/s  %5.1f%% of memcpy\n",
			name, bytes / ms / 1e6,
			100.0 * bytes / ms / 1e6 / memcpy_gbps);
	};
	fprintf(stderr, "bench %-28s %8.1f GB/s (read + written)\n",
		"memcpy_d2d", memcpy_gbps);
	add("reduce_sum_fp32", 3 * B, time_ms([&] {
		    TK(tp_cuda_reduce(c, a, b, n, TP_CUDA_FP32, TP_CUDA_SUM, 1,
				      NULL, DET));
	    }));
	add("reduce_sum_fp32_inplace", 3 * B, time_ms([&] {
		    TK(tp_cuda_reduce(c, c, b, n, TP_CUDA_FP32, TP_CUDA_SUM, 1,
				      NULL, DET));
	    }));
	add("reduce_avg_fp32", 3 * B, time_ms([&] {
		    TK(tp_cuda_reduce(c, a, b, n, TP_CUDA_FP32, TP_CUDA_AVG, 8,
				      NULL, DET));
	    }));
	add("reduce_sum_bf16", 3 * B, time_ms([&] {
		    TK(tp_cuda_reduce(c, a, b, 2 * n, TP_CUDA_BF16, TP_CUDA_SUM,
				      1, NULL, DET));
	    }));
	add("reduce_sum_fp16", 3 * B, time_ms([&] {
		    TK(tp_cuda_reduce(c, a, b, 2 * n, TP_CUDA_FP16, TP_CUDA_SUM,
				      1, NULL, DET));
	    }));
	double sb = 4.0 * n / 256;
	add("int8_compress_ef", 3 * B + n + sb, time_ms([&] {
		    TK(tp_cuda_int8_compress(a, r, n, &o, q, sc, NULL, DET));
	    }));
	add("int8_decompress_acc", 2 * B + n + sb, time_ms([&] {
		    TK(tp_cuda_int8_decompress_acc(q, sc, n, &o, c, NULL, DET));
	    }));
	add("1bit_compress_ef", 3 * B + n / 8.0 + sb, time_ms([&] {
		    TK(tp_cuda_1bit_compress(a, r, n, &o, bits, sc, NULL, DET));
	    }));
	add("1bit_decompress_acc", 2 * B + n / 8.0 + sb, time_ms([&] {
		    TK(tp_cuda_1bit_decompress_acc(bits, sc, n, &o, c, NULL,
						   DET));
	    }));
	double kb = 8.0 * (double)tp_cuda_topk_k(n, &o);
	add("topk1pct_sampled_compress_ef", 3 * B + kb, time_ms([&] {
		    TK(tp_cuda_topk_compress(a, r, n, &o, idx, val, nnz, ws,
					     wsb, NULL, DET));
	    }));
	o.topk_mode = TP_CUDA_TOPK_EXACT;
	add("topk1pct_exact_compress_ef", 3 * B + kb, time_ms([&] {
		    TK(tp_cuda_topk_compress(a, r, n, &o, idx, val, nnz, ws,
					     wsb, NULL, DET));
	    }));
	printf("{\"format\":\"topoplace-gpu-bench/1\",\"device\":\"%s\","
	       "\"memcpy_gbps\":%.1f,\"kernels\":[",
	       dev_name, memcpy_gbps);
	for (size_t i = 0; i < res.size(); i++)
		printf("%s{\"name\":\"%s\",\"bytes\":%.0f,\"gbps\":%.1f}",
		       i ? "," : "", res[i].name, res[i].bytes, res[i].gbps);
	printf("]}\n");
	fflush(stdout);
	cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(r), cudaFree(sc);
	cudaFree(q), cudaFree(bits), cudaFree(idx), cudaFree(val);
	cudaFree(nnz), cudaFree(ws);
}

int main(int argc, char **argv)
{
	int ndev = 0;
	bool quick = false, no_bench = false, no_check = false;
	size_t max_n = (size_t)1 << 28;
	cudaDeviceProp prop;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = true; /* no 2^28 */
		else if (!strcmp(argv[i], "--no-bench"))
			no_bench = true;
		else if (!strcmp(argv[i], "--no-check"))
			no_check = true;
		else if (!strcmp(argv[i], "--max-n") && i + 1 < argc)
			max_n = strtoull(argv[++i], NULL, 0);
	}
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "SKIP: no CUDA device\n");
		return 77;
	}
	CK(cudaGetDeviceProperties(&prop, 0));
	fprintf(stderr, "device 0: %s, sm_%d%d, %.1f GiB\n", prop.name,
		prop.major, prop.minor, prop.totalGlobalMem / 1073741824.0);
	if (!no_check) {
		const size_t sizes[] = {0,
					1,
					3,
					31,
					33,
					255,
					256,
					257,
					4099,
					65537,
					(1u << 20) + 7};
		for (size_t n : sizes)
			if (n <= max_n)
				check_all(n, false);
		if (!quick && max_n >= (size_t)1 << 28)
			check_all((size_t)1 << 28, true);
		fprintf(stderr, "checks: %d, failures: %d\n", checks, failures);
	}
	if (!no_bench)
		bench(prop.name);
	return failures ? 1 : 0;
}
