/*
 * test_cuda.c - the shared kernel math (tp_kmath.h) and the CPU path of
 * tp_cuda.h, on every CI run (no GPU needed): fp16/bf16 bit patterns and
 * exhaustive round trips, reductions with NaN/Inf/denormals, each
 * compressor's round trip, error-feedback identities, top-k selection
 * against a sort, sizes 0/1/odd, bad arguments; and that the GPU entry
 * points fail cleanly (an error and a detail, no crash) without a GPU.
 *
 * The GPU is checked against this CPU path by tests/gpu/run.sh.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "tp_test.h"

#include "tp_cuda.h"
#include "tp_kmath.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint32_t rnd32(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return (uint32_t)(x >> 16);
}

/* Roughly normal-ish gradients spanning several octaves. */
static float rnd_grad(void)
{
	float m = (float)(rnd32() & 0xffffff) * 0x1p-24f;
	int e = (int)(rnd32() % 12) - 10;

	return ldexpf(m, e) * ((rnd32() & 1) ? -1.0f : 1.0f);
}

static int same_bits(float a, float b)
{
	return tp_km_f32_bits(a) == tp_km_f32_bits(b);
}

/* ---- conversions ---------------------------------------------------------
 */

static void test_f16_known(void **state)
{
	static const struct {
		float f;
		uint16_t h;
	} t[] = {
	    {1.0f, 0x3c00},	      {-2.0f, 0xc000},
	    {0.0f, 0x0000},	      {-0.0f, 0x8000},
	    {65504.0f, 0x7bff},	      {65519.0f, 0x7bff},
	    {65520.0f, 0x7c00},	      {0x1p-14f, 0x0400},
	    {0x1p-24f, 0x0001},	      {0x1p-25f, 0x0000},   /* tie to even */
	    {0x1.8p-25f, 0x0001},     {0x1.8p-24f, 0x0002}, /* tie up */
	    {0x1.ff8p-15f, 0x03ff}, /* largest subnormal */
	    {0x1.ffcp-15f, 0x0400}, /* tie: rounds into the normals */
	    {0.1f, 0x2e66},	      {1.0f / 3.0f, 0x3555},
	    {1.00048828125f, 0x3c00}, /* 1 + 2^-11: tie, stays even */
	    {1.00146484375f, 0x3c02}, /* 1 + 3 x 2^-11: tie, goes even */
	    {INFINITY, 0x7c00},	      {-INFINITY, 0xfc00},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(tp_km_f32_to_f16(t[i].f), t[i].h);
	}
	assert_int_equal(tp_km_f32_to_f16(NAN) & 0x7e00, 0x7e00);
	assert_true(isnan(tp_km_f16_to_f32(0x7e00)));
	assert_true(isnan(tp_km_f16_to_f32(0x7c01))); /* signalling */
	assert_true(same_bits(tp_km_f16_to_f32(0x0001), 0x1p-24f));
	assert_true(same_bits(tp_km_f16_to_f32(0x03ff), 0x1.ff8p-15f));
	assert_true(same_bits(tp_km_f16_to_f32(0x8000), -0.0f));
	assert_true(same_bits(tp_km_f16_to_f32(0x7bff), 65504.0f));
}

static void test_f16_exhaustive(void **state)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = tp_km_f16_to_f32((uint16_t)h);
		uint16_t back = tp_km_f32_to_f16(f);
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
			assert_true(isnan(f));
			assert_int_equal(back & 0x7e00, 0x7e00);
			continue;
		}
		assert_int_equal(back, h);
#ifdef __FLT16_MAX__
		assert_true(same_bits(
		    f, (float)*(const _Float16 *)&(uint16_t){(uint16_t)h}));
#endif
	}
#ifdef __FLT16_MAX__
	/* float -> half against the compiler's conversion (RNE). */
	for (int i = 0; i < 2000000; i++) {
		float f = tp_km_bits_f32(rnd32() ^ (rnd32() << 16));
		_Float16 r = (_Float16)f;
		uint16_t rb;
		if (isnan(f))
			continue;
		memcpy(&rb, &r, sizeof(rb));
		assert_int_equal(tp_km_f32_to_f16(f), rb);
	}
#endif
}

static void test_bf16(void **state)
{
	assert_int_equal(tp_km_f32_to_bf16(1.0f), 0x3f80);
	assert_int_equal(tp_km_f32_to_bf16(-1.0f), 0xbf80);
	assert_int_equal(tp_km_f32_to_bf16(tp_km_bits_f32(0x3f808000u)),
			 0x3f80); /* tie, even */
	assert_int_equal(tp_km_f32_to_bf16(tp_km_bits_f32(0x3f818000u)),
			 0x3f82); /* tie, up to even */
	assert_int_equal(tp_km_f32_to_bf16(tp_km_bits_f32(0x3f808001u)),
			 0x3f81);
	assert_int_equal(tp_km_f32_to_bf16(tp_km_bits_f32(0x7f7fffffu)),
			 0x7f80); /* max float rounds to Inf */
	assert_int_equal(tp_km_f32_to_bf16(INFINITY), 0x7f80);
	assert_int_equal(tp_km_f32_to_bf16(tp_km_bits_f32(0x7f800001u)),
			 0x7fc0); /* signalling NaN made quiet, not Inf */
	assert_int_equal(tp_km_f32_to_bf16(tp_km_bits_f32(0x00000001u)),
			 0x0000); /* smallest denormal */
	assert_int_equal(tp_km_f32_to_bf16(tp_km_bits_f32(0x00018000u)),
			 0x0002);
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = tp_km_bf16_to_f32((uint16_t)h);
		if (isnan(f))
			continue;
		assert_int_equal(tp_km_f32_to_bf16(f), h);
	}
}

static void test_kmath_misc(void **state)
{
	float p[32];
	float s = 0.0f;

	for (int l = 0; l < 32; l++)
		p[l] = (float)(l + 1);
	s = tp_km_tree32(p);
	assert_true(same_bits(s, 528.0f));
	/* the xor butterfly a warp runs, lane 0's result, on values whose
	 * sums round: the same bits */
	for (int t = 0; t < 1000; t++) {
		float b[32], w[32];
		for (int l = 0; l < 32; l++)
			p[l] = b[l] =
			    rnd_grad() * (float)(1 + (l * 7 + t) % 13);
		for (int off = 16; off > 0; off /= 2) {
			for (int l = 0; l < 32; l++)
				w[l] = b[l] + b[l ^ off];
			memcpy(b, w, sizeof(b));
		}
		assert_true(same_bits(tp_km_tree32(p), b[0]));
	}
	assert_int_equal(tp_km_lane_of(0), 0);
	assert_int_equal(tp_km_lane_of(3), 0);
	assert_int_equal(tp_km_lane_of(4), 1);
	assert_int_equal(tp_km_lane_of(127), 31);
	assert_int_equal(tp_km_lane_of(128), 0);
	/* u01: [0, 1), deterministic, seed-dependent */
	for (uint64_t i = 0; i < 10000; i++) {
		float u = tp_km_u01(7, i);
		assert_true(u >= 0.0f && u < 1.0f);
		assert_true(same_bits(u, tp_km_u01(7, i)));
	}
	assert_false(same_bits(tp_km_u01(1, 5), tp_km_u01(2, 5)));
	/* seeds derived for neighbouring hops, calls or keys do not draw
	 * shifted copies of one noise stream (they did when the parts were
	 * added in steps of the index's own constant) */
	for (uint64_t part = 0; part < 4; part++) {
		uint64_t a = tp_km_seed(42, part), b = tp_km_seed(42, part + 1);
		int same = 0;
		assert_true(a != b);
		for (uint64_t i = 0; i < 64; i++)
			same +=
			    same_bits(tp_km_u01(a, i + 1), tp_km_u01(b, i)) ||
			    same_bits(tp_km_u01(b, i + 1), tp_km_u01(a, i));
		assert_true(same < 4);
	}
	assert_true(isnan(tp_km_max(NAN, 1.0f)));
	assert_true(isnan(tp_km_max(1.0f, NAN)));
	assert_true(isnan(tp_km_min(NAN, 1.0f)));
	assert_true(isnan(tp_km_min(1.0f, NAN)));
	assert_int_equal(tp_km_topk_key(-2.0f), tp_km_topk_key(2.0f));
	assert_true(tp_km_topk_key(NAN) > tp_km_topk_key(INFINITY));
	assert_int_equal(tp_km_topk_k(1000, 0.01), 10);
	assert_int_equal(tp_km_topk_k(1001, 0.01), 11);
	assert_int_equal(tp_km_topk_k(5, 0.01), 1);
	assert_int_equal(tp_km_topk_k(0, 0.01), 0);
	/* frac x n just above a whole number in binary is that number */
	assert_int_equal(tp_km_topk_k(100, 0.07), 7);
	assert_int_equal(tp_km_topk_k(100, 0.28), 28);
	assert_int_equal(tp_km_topk_k(10000, 0.14), 1400);
	assert_int_equal(tp_km_topk_k(100, 0.57), 57);
	assert_int_equal(tp_km_topk_k(100, 0.071), 8);
	assert_int_equal(tp_km_topk_k(1u << 30, 1.0), 1u << 30);
	assert_int_equal(tp_km_q8(1.0f, 0.0f, 0, 0, 0), 0);
	assert_int_equal(tp_km_q8(1e30f, 1.0f, 0, 0, 0), 127);
	assert_int_equal(tp_km_q8(-1e30f, 1.0f, 0, 0, 0), -127);
	assert_int_equal(tp_km_q8(2.5f, 1.0f, 0, 0, 0), 2); /* ties even */
	assert_int_equal(tp_km_q8(3.5f, 1.0f, 0, 0, 0), 4);
}

/* The int8 rounding without libm: against rintf/floorf (round to nearest
 * even is the default mode) on a sweep of bit patterns up to 2^22, every
 * tie from -130.5 to 130.5, zeros and denormals. */
static void test_round_small(void **state)
{
	for (uint32_t u = 0; u <= 0x4a800000u; u += 97) {
		for (int sgn = 0; sgn < 2; sgn++) {
			float v = tp_km_bits_f32(u | (sgn ? 0x80000000u : 0));
			assert_true(tp_km_rint_small(v) == rintf(v));
			assert_true(tp_km_floor_small(v) == floorf(v));
		}
	}
	for (int i = -261; i <= 261; i += 2) {
		float v = (float)i * 0.5f;
		assert_true(tp_km_rint_small(v) == rintf(v));
		assert_true(tp_km_floor_small(v) == floorf(v));
	}
	assert_true(tp_km_rint_small(0x1p-149f) == 0.0f);
	assert_true(tp_km_floor_small(-0x1p-149f) == -1.0f);
	assert_true(tp_km_rint_small(0x1p22f) == 0x1p22f);
	/* q8 clamps before rounding: same as rounding then clamping */
	assert_int_equal(tp_km_q8(127.4f, 1.0f, 0, 0, 0), 127);
	assert_int_equal(tp_km_q8(127.6f, 1.0f, 0, 0, 0), 127);
	assert_int_equal(tp_km_q8(-127.6f, 1.0f, 0, 0, 0), -127);
	assert_int_equal(tp_km_q8(-0.3f, 1.0f, 0, 0, 0), 0);
	assert_int_equal(tp_km_q8(-0.5f, 1.0f, 0, 0, 0), 0);
	assert_int_equal(tp_km_q8(-1.5f, 1.0f, 0, 0, 0), -2);
	assert_int_equal(tp_km_q8(1.0f, 0x1p-149f, 0, 0, 0), 127);
}

/* ---- reduction -------------------------------------------------------------
 */

static void test_reduce_f32(void **state)
{
	const size_t sizes[] = {0, 1, 3, 17, 1001};
	float a[1001], b[1001], d[1001];

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		for (size_t i = 0; i < n; i++) {
			a[i] = rnd_grad();
			b[i] = rnd_grad();
		}
		assert_int_equal(tp_cuda_cpu_reduce(d, a, b, n, TP_CUDA_FP32,
						    TP_CUDA_SUM, 1),
				 TP_OK);
		for (size_t i = 0; i < n; i++)
			assert_true(same_bits(d[i], a[i] + b[i]));
		assert_int_equal(tp_cuda_cpu_reduce(d, a, b, n, TP_CUDA_FP32,
						    TP_CUDA_AVG, 4),
				 TP_OK);
		for (size_t i = 0; i < n; i++)
			assert_true(same_bits(d[i], (a[i] + b[i]) / 4.0f));
		assert_int_equal(tp_cuda_cpu_reduce(d, a, b, n, TP_CUDA_FP32,
						    TP_CUDA_MAX, 1),
				 TP_OK);
		for (size_t i = 0; i < n; i++)
			assert_true(same_bits(d[i], fmaxf(a[i], b[i])));
		/* in place */
		memcpy(d, a, n * sizeof(*d));
		assert_int_equal(tp_cuda_cpu_reduce(d, d, b, n, TP_CUDA_FP32,
						    TP_CUDA_MIN, 1),
				 TP_OK);
		for (size_t i = 0; i < n; i++)
			assert_true(same_bits(d[i], fminf(a[i], b[i])));
	}
	/* NaN, Inf, denormals */
	a[0] = NAN, b[0] = 1.0f;
	a[1] = 1.0f, b[1] = NAN;
	a[2] = INFINITY, b[2] = -INFINITY;
	a[3] = 0x1p-149f, b[3] = 0x1p-149f;
	a[4] = INFINITY, b[4] = 1.0f;
	assert_int_equal(
	    tp_cuda_cpu_reduce(d, a, b, 5, TP_CUDA_FP32, TP_CUDA_SUM, 1),
	    TP_OK);
	assert_true(isnan(d[0]) && isnan(d[1]) && isnan(d[2]));
	assert_true(same_bits(d[3], 0x1p-148f));
	assert_true(isinf(d[4]));
	assert_int_equal(
	    tp_cuda_cpu_reduce(d, a, b, 5, TP_CUDA_FP32, TP_CUDA_MAX, 1),
	    TP_OK);
	assert_true(isnan(d[0]) && isnan(d[1]));
	assert_true(same_bits(d[2], INFINITY));
	assert_int_equal(
	    tp_cuda_cpu_reduce(d, a, b, 5, TP_CUDA_FP32, TP_CUDA_MIN, 1),
	    TP_OK);
	assert_true(isnan(d[0]) && isnan(d[1]));
	assert_true(same_bits(d[2], -INFINITY));
	assert_true(same_bits(d[3], 0x1p-149f));
}

static void test_reduce_half(void **state)
{
	uint16_t a[257], b[257], d[257];
	tp_cuda_dtype_t dts[] = {TP_CUDA_FP16, TP_CUDA_BF16};

	for (int t = 0; t < 2; t++) {
		float (*to)(uint16_t) =
		    t ? tp_km_bf16_to_f32 : tp_km_f16_to_f32;
		uint16_t (*from)(float) =
		    t ? tp_km_f32_to_bf16 : tp_km_f32_to_f16;
		for (int i = 0; i < 257; i++) {
			a[i] = from(rnd_grad() * 100.0f);
			b[i] = from(rnd_grad() * 100.0f);
		}
		a[0] = from(NAN), a[1] = from(INFINITY);
		a[2] = t ? 0x0001 : 0x0001; /* smallest subnormal */
		b[2] = a[2];
		assert_int_equal(
		    tp_cuda_cpu_reduce(d, a, b, 257, dts[t], TP_CUDA_SUM, 1),
		    TP_OK);
		for (int i = 0; i < 257; i++)
			assert_int_equal(d[i], from(to(a[i]) + to(b[i])));
		assert_true(isnan(to(d[0])));
		assert_true(isinf(to(d[1])));
		assert_int_equal(d[2], 0x0002);
		assert_int_equal(
		    tp_cuda_cpu_reduce(d, a, b, 257, dts[t], TP_CUDA_AVG, 3),
		    TP_OK);
		for (int i = 3; i < 257; i++)
			assert_int_equal(d[i],
					 from((to(a[i]) + to(b[i])) / 3.0f));
		memcpy(d, a, sizeof(d));
		assert_int_equal(tp_cuda_cpu_scale(d, 257, dts[t], 8), TP_OK);
		for (int i = 3; i < 257; i++)
			assert_int_equal(d[i], from(to(a[i]) / 8.0f));
	}
	/* fp16 sum overflows to Inf, as the hardware would */
	a[0] = 0x7bff, b[0] = 0x7bff;
	assert_int_equal(
	    tp_cuda_cpu_reduce(d, a, b, 1, TP_CUDA_FP16, TP_CUDA_SUM, 1),
	    TP_OK);
	assert_int_equal(d[0], 0x7c00);
}

static void test_reduce_inval(void **state)
{
	float a[1] = {1}, d[1];

	assert_int_equal(
	    tp_cuda_cpu_reduce(d, a, a, 1, (tp_cuda_dtype_t)7, TP_CUDA_SUM, 1),
	    TP_ERR_INVAL);
	assert_int_equal(
	    tp_cuda_cpu_reduce(d, a, a, 1, TP_CUDA_FP32, (tp_cuda_op_t)9, 1),
	    TP_ERR_INVAL);
	assert_int_equal(
	    tp_cuda_cpu_reduce(d, a, a, 1, TP_CUDA_FP32, TP_CUDA_AVG, 0),
	    TP_ERR_INVAL);
	assert_int_equal(
	    tp_cuda_cpu_reduce(NULL, a, a, 1, TP_CUDA_FP32, TP_CUDA_SUM, 1),
	    TP_ERR_INVAL);
	assert_int_equal(tp_cuda_cpu_reduce(NULL, NULL, NULL, 0, TP_CUDA_FP32,
					    TP_CUDA_SUM, 1),
			 TP_OK);
	assert_int_equal(tp_cuda_cpu_scale(d, 1, TP_CUDA_FP32, 0),
			 TP_ERR_INVAL);
}

/* ---- int8 -------------------------------------------------------------------
 */

#define N_BIG 4099 /* 16 full blocks of 256 and an odd tail */

static void test_int8_roundtrip(void **state)
{
	static float g[N_BIG], r[N_BIG], x[N_BIG], out[N_BIG], sc[N_BIG];
	static int8_t q[N_BIG];
	tp_cuda_comp_opts_t o;
	const size_t sizes[] = {0, 1, 31, 255, 256, 257, N_BIG};

	tp_cuda_comp_opts_defaults(&o);
	assert_int_equal(o.block, 256);
	for (int round = 0; round < 2; round++) {
		o.round =
		    round ? TP_CUDA_ROUND_STOCHASTIC : TP_CUDA_ROUND_NEAREST;
		o.seed = 42;
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t n = sizes[s], nb = tp_cuda_nblocks(n, &o);
			for (size_t i = 0; i < n; i++) {
				g[i] = rnd_grad();
				r[i] = rnd_grad() * 0.01f;
				x[i] = g[i] + r[i];
				out[i] = 0.0f;
			}
			assert_int_equal(
			    tp_cuda_cpu_int8_compress(g, r, n, &o, q, sc),
			    TP_OK);
			assert_int_equal(
			    tp_cuda_cpu_int8_decompress_acc(q, sc, n, &o, out),
			    TP_OK);
			for (size_t b = 0; b < nb; b++) {
				float amax = 0.0f;
				for (size_t i = b * 256;
				     i < n && i < b * 256 + 256; i++)
					amax = fmaxf(amax, fabsf(x[i]));
				assert_true(same_bits(sc[b], amax / 127.0f));
			}
			for (size_t i = 0; i < n; i++) {
				float s_ = sc[i / 256];
				/* nearest: half a step; stochastic: one */
				float bound =
				    (round ? 1.0f : 0.5f) * s_ * 1.0001f;
				assert_true(fabsf(out[i] - x[i]) <= bound);
				/* error feedback: what was sent plus what was
				 * kept is what was asked, to one rounding */
				assert_true(fabsf(out[i] + r[i] - x[i]) <=
					    fmaxf(fabsf(x[i]), fabsf(out[i])) *
						0x1p-23f);
			}
		}
	}
}

static void test_int8_special(void **state)
{
	float g[600], r[600], sc[3], out[600] = {0};
	int8_t q[600];
	tp_cuda_comp_opts_t o;

	tp_cuda_comp_opts_defaults(&o);
	for (int i = 0; i < 600; i++) {
		g[i] = 0.0f;
		r[i] = 0.0f;
	}
	/* block 0 all zero; block 1 holds a NaN; block 2 denormals */
	for (int i = 256; i < 512; i++)
		g[i] = (float)i;
	g[300] = NAN;
	for (int i = 512; i < 600; i++)
		g[i] = 0x1p-140f * (float)(i - 500);
	assert_int_equal(tp_cuda_cpu_int8_compress(g, r, 600, &o, q, sc),
			 TP_OK);
	assert_true(same_bits(sc[0], 0.0f));
	for (int i = 0; i < 256; i++) {
		assert_int_equal(q[i], 0);
		assert_true(same_bits(r[i], 0.0f));
	}
	assert_true(isnan(sc[1]));
	for (int i = 256; i < 512; i++) {
		assert_int_equal(q[i], 0);
		assert_true(same_bits(r[i], 0.0f)); /* restarts */
	}
	assert_true(sc[2] > 0.0f); /* denormal scale */
	assert_int_equal(tp_cuda_cpu_int8_decompress_acc(q, sc, 600, &o, out),
			 TP_OK);
	for (int i = 256; i < 512; i++)
		assert_true(isnan(out[i])); /* the receiver sees the NaN */
	for (int i = 512; i < 600; i++)
		assert_true(out[i] + r[i] == g[i]);
	/* Inf is treated as NaN would be */
	g[5] = INFINITY;
	assert_int_equal(tp_cuda_cpu_int8_compress(g, NULL, 600, &o, q, sc),
			 TP_OK);
	assert_true(isnan(sc[0]));
	/* a finite max |x| whose 127 x scale rounds past FLT_MAX is bad too:
	 * it came back as Inf and left an Inf residual (with and without
	 * the residual: both code paths) */
	g[5] = FLT_MAX;
	for (int i = 0; i < 256; i++)
		r[i] = 0.0f;
	assert_int_equal(tp_cuda_cpu_int8_compress(g, r, 600, &o, q, sc),
			 TP_OK);
	assert_true(isnan(sc[0]));
	for (int i = 0; i < 256; i++)
		assert_true(same_bits(r[i], 0.0f));
	assert_int_equal(tp_cuda_cpu_int8_compress(g, NULL, 600, &o, q, sc),
			 TP_OK);
	assert_true(isnan(sc[0]));
	assert_true(isnan(tp_km_q8_scale(FLT_MAX)));
	assert_true(tp_km_q8_scale(0x1p127f) > 0.0f); /* far enough below */
	/* bad arguments */
	o.block = 0;
	assert_int_equal(tp_cuda_cpu_int8_compress(g, r, 600, &o, q, sc),
			 TP_ERR_INVAL);
	assert_int_equal(tp_cuda_cpu_int8_compress(g, r, 600, NULL, q, sc),
			 TP_ERR_INVAL);
}

/* A constant gradient: with error feedback the mean of what was sent over
 * T steps converges to it (the residual stays bounded by half a step). */
static void test_int8_feedback_converges(void **state)
{
	enum { N = 256, T = 1000 };
	float g[N], r[N] = {0}, sc[1], sent[N] = {0};
	int8_t q[N];
	tp_cuda_comp_opts_t o;

	tp_cuda_comp_opts_defaults(&o);
	for (int i = 0; i < N; i++)
		g[i] = 1.0f + (float)i * 0.0037f; /* not on the int8 grid */
	g[0] = 100.0f;				  /* makes the others coarse */
	for (int t = 0; t < T; t++) {
		assert_int_equal(tp_cuda_cpu_int8_compress(g, r, N, &o, q, sc),
				 TP_OK);
		assert_int_equal(
		    tp_cuda_cpu_int8_decompress_acc(q, sc, N, &o, sent), TP_OK);
	}
	for (int i = 0; i < N; i++) {
		assert_true(fabsf(r[i]) <= sc[0] * 0.5001f);
		assert_true(fabsf(sent[i] / T - g[i]) <= 1e-3f * g[i]);
	}
}

static void test_int8_stochastic(void **state)
{
	enum { N = 256 };
	float g[N], sc[1];
	int8_t q[N], q2[N];
	double mean = 0.0;
	tp_cuda_comp_opts_t o;

	tp_cuda_comp_opts_defaults(&o);
	o.round = TP_CUDA_ROUND_STOCHASTIC;
	for (int i = 0; i < N; i++)
		g[i] = 0.3f;
	g[0] = 127.0f; /* scale 1: q of 0.3 is 0 or 1 */
	for (uint64_t seed = 0; seed < 400; seed++) {
		o.seed = seed;
		assert_int_equal(
		    tp_cuda_cpu_int8_compress(g, NULL, N, &o, q, sc), TP_OK);
		assert_int_equal(
		    tp_cuda_cpu_int8_compress(g, NULL, N, &o, q2, sc), TP_OK);
		assert_memory_equal(q, q2, sizeof(q)); /* deterministic */
		for (int i = 1; i < N; i++) {
			assert_true(q[i] == 0 || q[i] == 1);
			mean += q[i];
		}
	}
	mean /= 400.0 * (N - 1);
	assert_true(fabs(mean - 0.3) < 0.01); /* unbiased */
}

/* ---- 1-bit
 * --------------------------------------------------------------------
 */

static void test_1bit_roundtrip(void **state)
{
	static float g[N_BIG], r[N_BIG], x[N_BIG], out[N_BIG], sc[N_BIG];
	static uint32_t bits[N_BIG];
	tp_cuda_comp_opts_t o;
	const size_t sizes[] = {0, 1, 31, 33, 255, 256, 257, N_BIG};

	tp_cuda_comp_opts_defaults(&o);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		for (size_t i = 0; i < n; i++) {
			g[i] = rnd_grad();
			r[i] = rnd_grad() * 0.01f;
			x[i] = g[i] + r[i];
			out[i] = 0.0f;
		}
		memset(bits, 0xff, sizeof(bits));
		assert_int_equal(
		    tp_cuda_cpu_1bit_compress(g, r, n, &o, bits, sc), TP_OK);
		assert_int_equal(
		    tp_cuda_cpu_1bit_decompress_acc(bits, sc, n, &o, out),
		    TP_OK);
		for (size_t b = 0; b < tp_cuda_nblocks(n, &o); b++) {
			double sum = 0.0;
			size_t m = 0;
			for (size_t i = b * 256; i < n && i < b * 256 + 256;
			     i++, m++)
				sum += fabs((double)x[i]);
			assert_true(fabs(sc[b] - sum / (double)m) <=
				    1e-6 * sum / (double)m);
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t bit = (bits[i / 32] >> (i % 32)) & 1u;
			assert_int_equal(bit, x[i] < 0.0f);
			assert_true(fabsf(out[i]) == sc[i / 256]);
			assert_true(fabsf(out[i] + r[i] - x[i]) <=
				    fmaxf(fabsf(x[i]), sc[i / 256]) * 0x1p-23f);
		}
		/* padding bits of the last word are zero */
		if (n % 32)
			assert_int_equal(bits[n / 32] >> (n % 32), 0);
	}
}

static void test_1bit_special(void **state)
{
	float g[320], r[320] = {0}, sc[2];
	uint32_t bits[10];
	tp_cuda_comp_opts_t o;

	tp_cuda_comp_opts_defaults(&o);
	memset(g, 0, sizeof(g));
	g[300] = -INFINITY;
	g[10] = -0.0f;
	assert_int_equal(tp_cuda_cpu_1bit_compress(g, r, 320, &o, bits, sc),
			 TP_OK);
	assert_true(same_bits(sc[0], 0.0f)); /* all-zero block */
	assert_int_equal(bits[0], 0);	     /* -0 sent as + */
	assert_true(isnan(sc[1]));
	for (int i = 256; i < 320; i++)
		assert_true(same_bits(r[i], 0.0f));
	/* finite values whose sum of |x| overflows: the scale was +Inf,
	 * every entry came back +-Inf and the residual -+Inf; now the
	 * block is bad (with and without the residual) */
	for (int i = 0; i < 256; i++) {
		g[i] = i % 2 ? -3e36f : 3e36f;
		r[i] = 0.0f;
	}
	assert_int_equal(tp_cuda_cpu_1bit_compress(g, r, 320, &o, bits, sc),
			 TP_OK);
	assert_true(isnan(sc[0]));
	for (int i = 0; i < 256; i++)
		assert_true(same_bits(r[i], 0.0f));
	assert_int_equal(tp_cuda_cpu_1bit_compress(g, NULL, 320, &o, bits, sc),
			 TP_OK);
	assert_true(isnan(sc[0]));
	o.block = 100; /* not a multiple of 32 */
	assert_int_equal(tp_cuda_cpu_1bit_compress(g, r, 320, &o, bits, sc),
			 TP_ERR_INVAL);
	assert_int_equal(tp_cuda_cpu_1bit_decompress_acc(bits, sc, 320, &o, g),
			 TP_ERR_INVAL);
}

/* The block mean is the warp's order, which is not left to right: check
 * against that order written out independently. */
static void test_1bit_order(void **state)
{
	float g[256], sc[1], part[32] = {0};
	uint32_t bits[8];
	tp_cuda_comp_opts_t o;

	tp_cuda_comp_opts_defaults(&o);
	for (int i = 0; i < 256; i++)
		g[i] = rnd_grad();
	for (int c = 0; c < 2; c++)
		for (int l = 0; l < 32; l++)
			for (int e = 0; e < 4; e++)
				part[l] += fabsf(g[c * 128 + l * 4 + e]);
	for (int off = 16; off > 0; off /= 2) {
		float t[32];
		for (int l = 0; l < 32; l++)
			t[l] = part[l] + part[l ^ off];
		memcpy(part, t, sizeof(t));
	}
	assert_int_equal(tp_cuda_cpu_1bit_compress(g, NULL, 256, &o, bits, sc),
			 TP_OK);
	assert_true(same_bits(sc[0], part[0] / 256.0f));
}

/* ---- top-k
 * --------------------------------------------------------------------
 */

static const float *sort_keys;

static int by_mag_desc(const void *a, const void *b)
{
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	uint32_t ka = tp_km_topk_key(sort_keys[ia]);
	uint32_t kb = tp_km_topk_key(sort_keys[ib]);

	if (ka != kb)
		return ka > kb ? -1 : 1;
	return ia < ib ? -1 : 1; /* ties to the lower index */
}

static int by_index(const void *a, const void *b)
{
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;

	return ia < ib ? -1 : ia > ib;
}

static void test_topk_exact(void **state)
{
	static float g[N_BIG], r[N_BIG], x[N_BIG], val[N_BIG], out[N_BIG];
	static uint32_t idx[N_BIG], order[N_BIG];
	tp_cuda_comp_opts_t o;
	const size_t sizes[] = {1, 2, 99, 100, 1000, N_BIG};

	tp_cuda_comp_opts_defaults(&o);
	o.topk_mode = TP_CUDA_TOPK_EXACT;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s], nnz = 12345;
		for (size_t i = 0; i < n; i++) {
			g[i] = rnd_grad();
			/* many ties: a quarter of the values repeat */
			if (i % 4 == 1)
				g[i] = (i & 8) ? -0.5f : 0.5f;
			r[i] = (i % 3) ? rnd_grad() * 0.1f : 0.0f;
			x[i] = g[i] + r[i];
			order[i] = (uint32_t)i;
			out[i] = 0.0f;
		}
		if (n > 50)
			x[40] = g[40] = NAN, r[40] = 0.0f;
		for (int f = 0; f < 3; f++) {
			float rr[N_BIG];
			o.topk_frac = f == 0 ? 0.01 : f == 1 ? 0.1 : 0.5;
			size_t k = tp_cuda_topk_k(n, &o);
			memcpy(rr, r, n * sizeof(*r));
			assert_int_equal(tp_cuda_cpu_topk_compress(
					     g, rr, n, &o, idx, val, &nnz),
					 TP_OK);
			assert_int_equal(nnz, k);
			sort_keys = x;
			qsort(order, n, sizeof(*order), by_mag_desc);
			qsort(order, k, sizeof(*order), by_index);
			assert_memory_equal(idx, order, k * sizeof(*idx));
			for (size_t j = 0; j < k; j++) {
				assert_true(same_bits(val[j], x[idx[j]]));
				assert_true(same_bits(rr[idx[j]], 0.0f));
			}
			if (n > 50)
				assert_int_equal(idx[0] <= 40, 1);
			memset(out, 0, n * sizeof(*out));
			assert_int_equal(tp_cuda_cpu_topk_decompress_acc(
					     idx, val, nnz, n, out),
					 TP_OK);
			for (size_t i = 0; i < n; i++) {
				/* sent + kept == asked, exactly */
				float back = out[i] + rr[i];
				assert_true(same_bits(back, x[i]) ||
					    (isnan(back) && isnan(x[i])));
			}
			for (size_t i = 0; i < n; i++)
				order[i] = (uint32_t)i;
		}
	}
}

static void test_topk_sampled(void **state)
{
	enum { N = 200000 };
	static float g[N], val[N], r[N];
	static uint32_t idx[N];
	tp_cuda_comp_opts_t o;
	size_t nnz = 0, cap, k;

	tp_cuda_comp_opts_defaults(&o);
	for (size_t i = 0; i < N; i++) {
		g[i] = rnd_grad();
		r[i] = 0.0f;
	}
	k = tp_cuda_topk_k(N, &o);
	cap = tp_cuda_topk_capacity(N, &o);
	assert_int_equal(k, 2000);
	assert_int_equal(cap, 4000);
	assert_int_equal(tp_cuda_cpu_topk_compress(g, r, N, &o, idx, val, &nnz),
			 TP_OK);
	/* a sample of 65536 estimates the 1% threshold within a factor */
	assert_true(nnz > k / 2 && nnz <= cap);
	for (size_t j = 1; j < nnz; j++)
		assert_true(idx[j] > idx[j - 1]);
	/* everything sent is at least everything kept */
	float minsent = INFINITY, maxkept = 0.0f;
	for (size_t j = 0; j < nnz; j++)
		minsent = fminf(minsent, fabsf(val[j]));
	for (size_t i = 0; i < N; i++)
		if (r[i] != 0.0f)
			maxkept = fmaxf(maxkept, fabsf(r[i]));
	assert_true(minsent > maxkept || nnz == cap);
	/* capacity caps in index order */
	o.topk_slack = 1.0;
	assert_int_equal(
	    tp_cuda_cpu_topk_compress(g, NULL, N, &o, idx, val, &nnz), TP_OK);
	assert_true(nnz <= k);
}

static void test_topk_edges(void **state)
{
	float g[4] = {0}, val[4];
	uint32_t idx[4] = {0, 9, 0, 0};
	size_t nnz = 7;
	tp_cuda_comp_opts_t o;

	tp_cuda_comp_opts_defaults(&o);
	assert_int_equal(
	    tp_cuda_cpu_topk_compress(NULL, NULL, 0, &o, NULL, NULL, &nnz),
	    TP_OK);
	assert_int_equal(nnz, 0);
	/* all zero: exact mode still sends k zeros (lowest indices) */
	o.topk_mode = TP_CUDA_TOPK_EXACT;
	assert_int_equal(
	    tp_cuda_cpu_topk_compress(g, NULL, 4, &o, idx, val, &nnz), TP_OK);
	assert_int_equal(nnz, 1);
	assert_int_equal(idx[0], 0);
	o.topk_frac = 0.0;
	assert_int_equal(
	    tp_cuda_cpu_topk_compress(g, NULL, 4, &o, idx, val, &nnz),
	    TP_ERR_INVAL);
	idx[1] = 9;
	assert_int_equal(tp_cuda_cpu_topk_decompress_acc(idx, val, 2, 4, g),
			 TP_ERR_RANGE);
	assert_true(tp_cuda_topk_workspace_size(1u << 28, &o) >=
		    (1u << 28) / 4096 * 8);
}

/* ---- GPU entry points without a GPU
 * ---------------------------------------------
 */

/* Error feedback on a constant gradient, for 1-bit and top-k: the mean of
 * what was sent over T steps approaches the gradient (the residual stays
 * bounded, so the error of the sum does not grow with T). */
static void test_feedback_converges_1bit_topk(void **state)
{
	enum { N = 997, T = 2000 }; /* a prime: blocks and words left over */
	static float g[N], r1[N], rk[N], s1[N], sk[N], val[N], sc[4];
	static uint32_t bits[N], idx[N];
	tp_cuda_comp_opts_t o;
	size_t nnz;

	tp_cuda_comp_opts_defaults(&o);
	o.topk_mode = TP_CUDA_TOPK_EXACT;
	o.topk_frac = 0.01;
	float sum = 0.0f;
	for (int i = 0; i < N; i++) {
		g[i] = (i % 3 ? 1.0f : -0.25f) * (1.0f + (float)i * 0.001f);
		sum += fabsf(g[i]);
	}
	for (int t = 0; t < T; t++) {
		assert_int_equal(
		    tp_cuda_cpu_1bit_compress(g, r1, N, &o, bits, sc), TP_OK);
		assert_int_equal(
		    tp_cuda_cpu_1bit_decompress_acc(bits, sc, N, &o, s1),
		    TP_OK);
		assert_int_equal(
		    tp_cuda_cpu_topk_compress(g, rk, N, &o, idx, val, &nnz),
		    TP_OK);
		assert_int_equal(
		    tp_cuda_cpu_topk_decompress_acc(idx, val, nnz, N, sk),
		    TP_OK);
	}
	for (int i = 0; i < N; i++) {
		/* top-k: in steady state an element is sent once its
		 * residual reaches about R = sum |g| / k (k slots per step
		 * shared by all), so the error of the mean is below
		 * ~R / T: it shrinks as 1/T */
		assert_true(fabsf(sk[i] / T - g[i]) <= 2.0f * (sum / 10) / T);
		assert_true(fabsf(s1[i] / T - g[i]) <= 0.01f * fabsf(g[i]));
	}
}

/* Blocks larger than the compressors' stack staging (1024) take the
 * unstaged loops: the same bounds, prime counts. */
static void test_large_blocks(void **state)
{
	enum { N = 5003 };
	static float g[N], r[N], x[N], out[N], sc[N];
	static int8_t q[N];
	static uint32_t bits[N];
	tp_cuda_comp_opts_t o;

	tp_cuda_comp_opts_defaults(&o);
	o.block = 2048;
	for (int i = 0; i < N; i++) {
		g[i] = rnd_grad();
		r[i] = rnd_grad() * 0.01f;
		x[i] = g[i] + r[i];
	}
	assert_int_equal(tp_cuda_cpu_int8_compress(g, r, N, &o, q, sc), TP_OK);
	assert_int_equal(tp_cuda_cpu_int8_decompress_acc(q, sc, N, &o, out),
			 TP_OK);
	for (int i = 0; i < N; i++) {
		assert_true(fabsf(out[i] - x[i]) <= 0.5001f * sc[i / 2048]);
		assert_true(fabsf(out[i] + r[i] - x[i]) <=
			    fmaxf(fabsf(x[i]), fabsf(out[i])) * 0x1p-23f);
		r[i] = x[i] - g[i];
		out[i] = 0.0f;
	}
	assert_int_equal(tp_cuda_cpu_1bit_compress(g, r, N, &o, bits, sc),
			 TP_OK);
	assert_int_equal(tp_cuda_cpu_1bit_decompress_acc(bits, sc, N, &o, out),
			 TP_OK);
	for (int i = 0; i < N; i++) {
		assert_true(fabsf(out[i]) == sc[i / 2048]);
		assert_true(fabsf(out[i] + r[i] - x[i]) <=
			    fmaxf(fabsf(x[i]), sc[i / 2048]) * 0x1p-23f);
	}
}

static void test_gpu_absent(void **state)
{
	char detail[256] = "";
	float h[4] = {1, 2, 3, 4};
	bool dev = true;
	int ndev = -1;
	tp_err_t err = tp_cuda_device_count(&ndev, detail, sizeof(detail));
	tp_cuda_comp_opts_t o;

	if (err == TP_OK && ndev > 0)
		skip(); /* a GPU is here: tests/gpu/run.sh covers it */
	assert_true(err == TP_ERR_CUDA || err == TP_ERR_UNSUPPORTED);
	assert_int_equal(ndev, 0);
	assert_true(detail[0] != '\0');
	/* host memory is host memory, with or without CUDA */
	assert_int_equal(tp_cuda_ptr_is_device(h, &dev, detail, sizeof(detail)),
			 TP_OK);
	assert_false(dev);
	/* a kernel launch fails with an error and the CUDA string */
	detail[0] = '\0';
	err = tp_cuda_reduce(h, h, h, 4, TP_CUDA_FP32, TP_CUDA_SUM, 1, NULL,
			     detail, sizeof(detail));
	assert_true(err == TP_ERR_CUDA || err == TP_ERR_UNSUPPORTED);
	assert_true(detail[0] != '\0');
	/* a short detail buffer is cut, still terminated */
	char tiny[8];
	memset(tiny, 'x', sizeof(tiny));
	err = tp_cuda_scale(h, 4, TP_CUDA_FP32, 2, NULL, tiny, sizeof(tiny));
	assert_true(err == TP_ERR_CUDA || err == TP_ERR_UNSUPPORTED);
	assert_true(memchr(tiny, '\0', sizeof(tiny)) != NULL);
	tp_cuda_comp_opts_defaults(&o);
	int8_t q[4];
	float sc[1];
	err = tp_cuda_int8_compress(h, NULL, 4, &o, q, sc, NULL, NULL, 0);
	assert_true(err == TP_ERR_CUDA || err == TP_ERR_UNSUPPORTED);
	assert_string_equal(h[0] == 1.0f ? "ok" : "touched", "ok");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_f16_known),
	    cmocka_unit_test(test_f16_exhaustive),
	    cmocka_unit_test(test_bf16),
	    cmocka_unit_test(test_kmath_misc),
	    cmocka_unit_test(test_round_small),
	    cmocka_unit_test(test_reduce_f32),
	    cmocka_unit_test(test_reduce_half),
	    cmocka_unit_test(test_reduce_inval),
	    cmocka_unit_test(test_int8_roundtrip),
	    cmocka_unit_test(test_int8_special),
	    cmocka_unit_test(test_int8_feedback_converges),
	    cmocka_unit_test(test_int8_stochastic),
	    cmocka_unit_test(test_1bit_roundtrip),
	    cmocka_unit_test(test_1bit_special),
	    cmocka_unit_test(test_1bit_order),
	    cmocka_unit_test(test_topk_exact),
	    cmocka_unit_test(test_topk_sampled),
	    cmocka_unit_test(test_topk_edges),
	    cmocka_unit_test(test_feedback_converges_1bit_topk),
	    cmocka_unit_test(test_large_blocks),
	    cmocka_unit_test(test_gpu_absent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
