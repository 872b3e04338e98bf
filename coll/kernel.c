/* kernel.c - CPU reduction kernels.
 *
 * Notes: each kernel is a plain counted loop over restrict pointers with
 * the operation inlined, the shape GCC's vectoriser turns into SIMD code
 * at -O2 -ftree-vectorize / -O3. fp16 and bf16 are widened to fp32, reduced
 * and rounded back to nearest-even, one element at a time in the same loop
 * so the conversions vectorise too. */
#include "config.h"

#include <string.h>

#include "coll_int.h"
#include "tp_kmath.h"

/* One element-wise math with the CUDA kernels (tp_kmath.h): the same
 * conversions and NaN-propagating max/min, so host and device buffers
 * reduce to the same bits. */
#define bf16_to_f32 tp_km_bf16_to_f32
#define f32_to_bf16 tp_km_f32_to_bf16
#define f16_to_f32  tp_km_f16_to_f32
#define f32_to_f16  tp_km_f32_to_f16

#define OP_SUM(a, b) ((a) + (b))
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define OP_MIN(a, b) ((a) < (b) ? (a) : (b))
/* Floating point: NaN in either operand gives NaN, as tp_km_max/min. */
#define OP_FMAX(a, b) ((((a) != (a)) | ((a) > (b))) ? (a) : (b))
#define OP_FMIN(a, b) ((((a) != (a)) | ((a) < (b))) ? (a) : (b))

#define KERNEL(name, T, OP)                                                    \
	static void name(T *restrict d, const T *restrict s, size_t n)         \
	{                                                                      \
		for (size_t i = 0; i < n; i++)                                 \
			d[i] = OP(d[i], s[i]);                                 \
	}
#define KERNEL16(name, TO, FROM, OP)                                           \
	static void name(uint16_t *restrict d, const uint16_t *restrict s,     \
			 size_t n)                                             \
	{                                                                      \
		for (size_t i = 0; i < n; i++)                                 \
			d[i] = TO(OP(FROM(d[i]), FROM(s[i])));                 \
	}

KERNEL(sum_f32, float, OP_SUM)
KERNEL(max_f32, float, tp_km_max)
KERNEL(min_f32, float, tp_km_min)
KERNEL(sum_f64, double, OP_SUM)
KERNEL(max_f64, double, OP_FMAX)
KERNEL(min_f64, double, OP_FMIN)
KERNEL(max_i32, int32_t, OP_MAX)
KERNEL(min_i32, int32_t, OP_MIN)
KERNEL(max_i64, int64_t, OP_MAX)
KERNEL(min_i64, int64_t, OP_MIN)
KERNEL16(sum_f16, f32_to_f16, f16_to_f32, OP_SUM)
KERNEL16(max_f16, f32_to_f16, f16_to_f32, tp_km_max)
KERNEL16(min_f16, f32_to_f16, f16_to_f32, tp_km_min)
KERNEL16(sum_bf16, f32_to_bf16, bf16_to_f32, OP_SUM)
KERNEL16(max_bf16, f32_to_bf16, bf16_to_f32, tp_km_max)
KERNEL16(min_bf16, f32_to_bf16, bf16_to_f32, tp_km_min)

/* Integer sums wrap like the unsigned type (no UB on overflow). */
static void sum_i32w(void *d, const void *s, size_t n)
{
	uint32_t *restrict dd = d;
	const uint32_t *restrict ss = s;

	for (size_t i = 0; i < n; i++)
		dd[i] += ss[i];
}

static void sum_i64w(void *d, const void *s, size_t n)
{
	uint64_t *restrict dd = d;
	const uint64_t *restrict ss = s;

	for (size_t i = 0; i < n; i++)
		dd[i] += ss[i];
}

static void cpu_reduce(void *dst, const void *src, size_t n, tp_coll_dtype_t dt,
		       tp_coll_op_t op, void *stream)
{
	int o = op == TP_COLL_MAX ? 1 : op == TP_COLL_MIN ? 2 : 0;

	(void)stream;
	switch (dt) {
	case TP_COLL_FP32:
		(o == 0 ? sum_f32 : o == 1 ? max_f32 : min_f32)(dst, src, n);
		break;
	case TP_COLL_FP64:
		(o == 0 ? sum_f64 : o == 1 ? max_f64 : min_f64)(dst, src, n);
		break;
	case TP_COLL_FP16:
		(o == 0 ? sum_f16 : o == 1 ? max_f16 : min_f16)(dst, src, n);
		break;
	case TP_COLL_BF16:
		(o == 0 ? sum_bf16 : o == 1 ? max_bf16 : min_bf16)(dst, src, n);
		break;
	case TP_COLL_INT32:
		if (o == 0)
			sum_i32w(dst, src, n);
		else
			(o == 1 ? max_i32 : min_i32)(dst, src, n);
		break;
	case TP_COLL_INT64:
		if (o == 0)
			sum_i64w(dst, src, n);
		else
			(o == 1 ? max_i64 : min_i64)(dst, src, n);
		break;
	}
}

static void cpu_scale(void *buf, size_t n, tp_coll_dtype_t dt, int by,
		      void *stream)
{
	(void)stream;
	switch (dt) {
	case TP_COLL_FP32: {
		float *b = buf;
		for (size_t i = 0; i < n; i++)
			b[i] /= (float)by;
		break;
	}
	case TP_COLL_FP64: {
		double *b = buf;
		for (size_t i = 0; i < n; i++)
			b[i] /= by;
		break;
	}
	case TP_COLL_FP16: {
		uint16_t *b = buf;
		for (size_t i = 0; i < n; i++)
			b[i] = f32_to_f16(f16_to_f32(b[i]) / (float)by);
		break;
	}
	case TP_COLL_BF16: {
		uint16_t *b = buf;
		for (size_t i = 0; i < n; i++)
			b[i] = f32_to_bf16(bf16_to_f32(b[i]) / (float)by);
		break;
	}
	case TP_COLL_INT32: {
		int32_t *b = buf;
		for (size_t i = 0; i < n; i++)
			b[i] /= by;
		break;
	}
	case TP_COLL_INT64: {
		int64_t *b = buf;
		for (size_t i = 0; i < n; i++)
			b[i] /= by;
		break;
	}
	}
}

const tp__coll_kernel_t tp__coll_kernel_cpu = {
    .name = "cpu",
    .reduce = cpu_reduce,
    .scale = cpu_scale,
};
