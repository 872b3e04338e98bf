/*
 * tp_kmath.h - the element-wise math of the reduction and compression
 * kernels, shared by the CUDA kernels (cuda/kernels.cu), the CPU reference
 * path (cuda/kref.c) and the CPU unit tests.
 *
 * Contract: every function here gives the same bits on the host (any C11
 * compiler) and on the device, so the GPU and the CPU path agree bit for bit.
 * What makes that hold:
 *   - fp16/bf16 <-> fp32 conversions are integer arithmetic on the bits
 *     (fp16 subnormals: one exact multiply by 2^-24)
 *     (round to nearest even, NaN kept quiet, overflow to Inf, subnormals
 *     exact);
 *   - each float operation is one IEEE operation rounded to nearest: on the
 *     device through the __f*_rn intrinsics, which nvcc never fuses into an
 *     FMA nor relaxes under --use_fast_math; on the host through plain
 *     operators, so host code including this header must not contract
 *     (cuda/ and tests/cuda/ build with -ffp-contract=off);
 *   - sums over a block follow one fixed order (tp_km_lane_of and
 *     tp_km_tree32 below), the order a warp computes them in.
 *
 * Header-only, no state, thread-safe. Plain C11 when not compiled by nvcc.
 */
#ifndef TP_KMATH_H
#define TP_KMATH_H

#include <stdint.h>

#if defined(__CUDACC__)
#define TP_KM_FN static __host__ __device__ __forceinline__
#else
#include <string.h>
#define TP_KM_FN static inline
#endif

/* Elements of one block handed to each of the 32 lanes of a warp. */
#define TP_KM_LANES 32u
/* Consecutive elements a lane owns (one 128-bit load of fp32). */
#define TP_KM_VEC 4u

/* ---- bits ------------------------------------------------------------- */

TP_KM_FN uint32_t tp_km_f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
	return __float_as_uint(f);
#else
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
#endif
}

TP_KM_FN float tp_km_bits_f32(uint32_t u)
{
#if defined(__CUDA_ARCH__)
	return __uint_as_float(u);
#else
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
#endif
}

TP_KM_FN float tp_km_abs(float f)
{
	return tp_km_bits_f32(tp_km_f32_bits(f) & 0x7fffffffu);
}

TP_KM_FN int tp_km_is_finite(float f)
{
	return (tp_km_f32_bits(f) & 0x7f800000u) != 0x7f800000u;
}

/* ---- one IEEE operation each, rounded to nearest ------------------------ */

TP_KM_FN float tp_km_add(float a, float b)
{
#if defined(__CUDA_ARCH__)
	return __fadd_rn(a, b);
#else
	return a + b;
#endif
}

TP_KM_FN float tp_km_sub(float a, float b)
{
#if defined(__CUDA_ARCH__)
	return __fsub_rn(a, b);
#else
	return a - b;
#endif
}

TP_KM_FN float tp_km_mul(float a, float b)
{
#if defined(__CUDA_ARCH__)
	return __fmul_rn(a, b);
#else
	return a * b;
#endif
}

TP_KM_FN float tp_km_div(float a, float b)
{
#if defined(__CUDA_ARCH__)
	return __fdiv_rn(a, b);
#else
	return a / b;
#endif
}

/* ---- fp16 / bf16 --------------------------------------------------------- */

TP_KM_FN float tp_km_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;

	if (exp == 0x1f)
		return tp_km_bits_f32(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {
		/* zero or subnormal: man x 2^-24, exact in fp32 (no loop, so
		 * the CPU loops over it vectorise) */
		float f = tp_km_mul((float)man, 0x1p-24f);
		return tp_km_bits_f32(tp_km_f32_bits(f) | sign);
	}
	return tp_km_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

/* Round to nearest even; NaN stays NaN (quiet), overflow goes to Inf. */
TP_KM_FN uint16_t tp_km_f32_to_f16(float f)
{
	uint32_t u = tp_km_f32_bits(f);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
	int e = (int)exp - 127 + 15;

	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t half = 1u << (shift - 1);
		uint32_t r = man >> shift, rest = man & ((1u << shift) - 1);
		if (rest > half || (rest == half && (r & 1u)))
			r++; /* may become the smallest normal: still right */
		return (uint16_t)(sign | r);
	}
	uint32_t r = ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fffu;
	if (rest > 0x1000u || (rest == 0x1000u && (r & 1u)))
		r++; /* may carry into the exponent, up to Inf: still right */
	return (uint16_t)(sign | r);
}

TP_KM_FN float tp_km_bf16_to_f32(uint16_t h)
{
	return tp_km_bits_f32((uint32_t)h << 16);
}

TP_KM_FN uint16_t tp_km_f32_to_bf16(float f)
{
	uint32_t u = tp_km_f32_bits(f);

	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
		return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/* ---- reduction ------------------------------------------------------------
 * Operations, in tp_cuda_op_t's order. MAX and MIN propagate NaN (either
 * operand NaN gives NaN), as torch.maximum does. AVG is a SUM whose result is
 * divided by avg_n in the same pass (one rounding for fp32 input, one more
 * when stored as fp16/bf16). */
#define TP_KM_SUM 0
#define TP_KM_AVG 1
#define TP_KM_MAX 2
#define TP_KM_MIN 3

/* `|`, not `||`: no branch, so CPU loops over it vectorise. */
TP_KM_FN float tp_km_max(float a, float b)
{
	return ((a != a) | (a > b)) ? a : b;
}

TP_KM_FN float tp_km_min(float a, float b)
{
	return ((a != a) | (a < b)) ? a : b;
}

TP_KM_FN float tp_km_reduce(int op, float a, float b, float avg_n)
{
	switch (op) {
	case TP_KM_MAX:
		return tp_km_max(a, b);
	case TP_KM_MIN:
		return tp_km_min(a, b);
	case TP_KM_AVG:
		return tp_km_div(tp_km_add(a, b), avg_n);
	default:
		return tp_km_add(a, b);
	}
}

/* ---- block order ------------------------------------------------------------
 * Element j of a block belongs to lane (j / 4) mod 32: a warp reads a block
 * as consecutive 128-bit vectors. Each lane sums its elements in increasing
 * j; the 32 partial sums are combined by the xor butterfly of a warp shuffle
 * (offsets 16, 8, 4, 2, 1), which leaves the same bits in every lane because
 * float addition is commutative. */

TP_KM_FN uint32_t tp_km_lane_of(uint64_t j)
{
	return (uint32_t)(j / TP_KM_VEC) % TP_KM_LANES;
}

/* Combine p[32] in the butterfly's order; p is overwritten. Lane 0's
 * result needs, at the step of offset off, lanes [0, 2 off) only, and
 * lane l + off (l < off) gets p[l + off] + p[l], which is p[l] + p[l +
 * off] bit for bit: so each step halves the array, a contiguous add the
 * host vectorises. */
TP_KM_FN float tp_km_tree32(float *p)
{
	for (uint32_t off = TP_KM_LANES / 2; off > 0; off /= 2)
		for (uint32_t l = 0; l < off; l++)
			p[l] = tp_km_add(p[l], p[l + off]);
	return p[0];
}

/* ---- error feedback ------------------------------------------------------ */

/* The value compressed: gradient plus the residual carried over. */
TP_KM_FN float tp_km_ef_in(float g, float r)
{
	return tp_km_add(g, r);
}

/* What the compression lost, carried to the next step. */
TP_KM_FN float tp_km_ef_out(float x, float dequantised)
{
	return tp_km_sub(x, dequantised);
}

/* ---- stochastic rounding noise ------------------------------------------- */

/* splitmix64's finaliser: a bijection of 64-bit words that scatters
 * neighbouring inputs. */
TP_KM_FN uint64_t tp_km_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 24 bits, a pure function of (seed, index): the
 * same on every device and launch shape. Index i + 1 of a seed is index
 * i of that seed plus 0x9e3779b97f4a7c15, so seeds derived from one
 * another (tp_km_seed()) are hashed, never stepped by that constant. */
TP_KM_FN float tp_km_u01(uint64_t seed, uint64_t index)
{
	uint64_t z = tp_km_mix64(seed + (index + 1) * 0x9e3779b97f4a7c15ull);

	return (float)(uint32_t)(z >> 40) * 0x1p-24f;
}

/* A seed derived from seed and one more part (a key, a call, a hop): each
 * part hashed in, so no two parts' noise streams are shifted copies of
 * each other. */
TP_KM_FN uint64_t tp_km_seed(uint64_t seed, uint64_t part)
{
	return tp_km_mix64(seed ^ tp_km_mix64(part + 0x9e3779b97f4a7c15ull));
}

/* ---- int8 with one fp32 scale per block ------------------------------------
 * scale = max|x| / 127 over the block; q = round(x / scale) clamped to
 * [-127, 127]; x ~ q x scale. An all-zero block has scale 0 and q 0. A block
 * holding NaN or Inf, or whose scale overflows (tp_km_q8_scale(),
 * tp_km_1bit_scale() give NaN), is sent with a NaN scale, so the receiver
 * (and a loss scaler) sees the overflow, and its residual restarts at zero
 * so one bad step does not poison the later ones. */

TP_KM_FN float tp_km_q8_scale(float amax)
{
	float s = tp_km_div(amax, 127.0f);

	/* max |x| within rounding of FLT_MAX: 127 x scale would come back
	 * as Inf, so the block is sent as bad (NaN) */
	return tp_km_is_finite(tp_km_mul(127.0f, s))
		   ? s
		   : tp_km_bits_f32(0x7fc00000u);
}

/* Round to nearest even, |v| <= 2^22, by two IEEE additions: no libm call,
 * vectorises on the host, the same bits on the device. */
TP_KM_FN float tp_km_rint_small(float v)
{
	const float magic = 12582912.0f; /* 1.5 x 2^23 */

	return tp_km_sub(tp_km_add(v, magic), magic);
}

TP_KM_FN float tp_km_floor_small(float v)
{
	float r = tp_km_rint_small(v);

	return r > v ? tp_km_sub(r, 1.0f) : r;
}

TP_KM_FN float tp_km_clamp127(float v)
{
	return v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
}

/* Clamping before rounding gives what rounding then clamping would. */
TP_KM_FN int8_t tp_km_q8(float x, float scale, int stochastic, uint64_t seed,
			 uint64_t index)
{
	float v;

	if (!(scale > 0.0f) || !tp_km_is_finite(scale))
		return 0;
	v = tp_km_div(x, scale);
	if (stochastic)
		return (int8_t)tp_km_floor_small(
		    tp_km_clamp127(tp_km_add(v, tp_km_u01(seed, index))));
	return (int8_t)tp_km_rint_small(tp_km_clamp127(v));
}

TP_KM_FN float tp_km_dq8(int8_t q, float scale)
{
	return tp_km_mul((float)q, scale);
}

/* ---- 1-bit sign with the block's mean magnitude --------------------------
 * bit set = negative; zero is sent as +scale. scale = sum|x| / n in the
 * block order above. NaN/Inf in a block: as for int8. */

TP_KM_FN uint32_t tp_km_sign(float x)
{
	return x < 0.0f ? 1u : 0u;
}

TP_KM_FN float tp_km_dq1(uint32_t bit, float scale)
{
	return bit ? -scale : scale;
}

TP_KM_FN float tp_km_mean(float sum, uint32_t n)
{
	return n ? tp_km_div(sum, (float)n) : 0.0f;
}

/* The block's scale from its sum of |x|: NaN when that sum overflowed
 * (finite values of 1.3e36 and up in a 256 block), which would otherwise
 * send +-Inf for every entry and leave an Inf residual behind. */
TP_KM_FN float tp_km_1bit_scale(float sum, uint32_t n)
{
	return tp_km_is_finite(sum) ? tp_km_mean(sum, n)
				    : tp_km_bits_f32(0x7fc00000u);
}

/* ---- top-k ---------------------------------------------------------------
 * Order key of |x|: the bits of a non-negative float order like the value
 * (NaN above Inf, so NaNs are always sent). */
TP_KM_FN uint32_t tp_km_topk_key(float x)
{
	return tp_km_f32_bits(x) & 0x7fffffffu;
}

/* k of n for a fraction: ceil(frac x n), at least 1 when n > 0, at most n.
 * frac x n a few units in the last place above a whole number is that
 * number: 0.07 x 100 is 7.000000000000001 in binary, and k is 7. */
TP_KM_FN uint64_t tp_km_topk_k(uint64_t n, double frac)
{
	double kd = frac * (double)n;
	uint64_t k = (uint64_t)kd;

	if ((double)k < kd && kd - (double)k > kd * 0x1p-50)
		k++;
	if (k < 1 && n > 0)
		k = 1;
	return k > n ? n : k;
}

/* Radix select over the 32-bit keys, most significant digit first: the
 * digits' widths and shifts. */
#define TP_KM_RADIX_PASSES 3
TP_KM_FN uint32_t tp_km_radix_shift(int pass)
{
	return pass == 0 ? 21u : pass == 1 ? 10u : 0u;
}

TP_KM_FN uint32_t tp_km_radix_bins(int pass)
{
	return pass == 2 ? 1024u : 2048u;
}

/* Device top-k scratch: selection state, then one uint2 per tile. */
#define TP_KM_TOPK_TILE	       4096u
#define TP_KM_TOPK_STATE_BYTES 8448u

/* Sampled threshold: sample j of m reads element j x n / m (n < 2^40 and
 * m <= 2^20 keep the product in 64 bits). */
TP_KM_FN uint64_t tp_km_sample_index(uint64_t j, uint64_t m, uint64_t n)
{
	return j * n / m;
}

#endif /* TP_KMATH_H */
