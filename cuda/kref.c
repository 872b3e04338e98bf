/* kref.c - the CPU path of tp_cuda.h: every kernel on host memory, built on
 * the element-wise code the GPU runs (tp_kmath.h), in the GPU's order.
 *
 * Notes: compiled in every build (the CPU compressors and the reference the
 * GPU tests compare against). Blocks are walked in the warp's order so the
 * 1-bit mean magnitude has the device's bits; max is order-free. Top-k
 * selects its threshold with the same three-digit radix select as the
 * device, so ties and sampled thresholds agree too. */
#include "config.h"

#include <string.h>

#include "tp_cuda.h"
#include "tp_kmath.h"

void tp_cuda_comp_opts_defaults(tp_cuda_comp_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->block = 256;
	o->round = TP_CUDA_ROUND_NEAREST;
	o->seed = 0;
	o->topk_frac = 0.01;
	o->topk_mode = TP_CUDA_TOPK_SAMPLED;
	o->topk_samples = 65536;
	o->topk_slack = 2.0;
}

size_t tp_cuda_nblocks(size_t count, const tp_cuda_comp_opts_t *o)
{
	return o->block ? (count + o->block - 1) / o->block : 0;
}

size_t tp_cuda_1bit_words(size_t count)
{
	return (count + 31) / 32;
}

size_t tp_cuda_topk_k(size_t count, const tp_cuda_comp_opts_t *o)
{
	return (size_t)tp_km_topk_k(count, o->topk_frac);
}

size_t tp_cuda_topk_capacity(size_t count, const tp_cuda_comp_opts_t *o)
{
	size_t k = tp_cuda_topk_k(count, o);
	double c;

	if (o->topk_mode == TP_CUDA_TOPK_EXACT)
		return k;
	c = (double)k * (o->topk_slack > 1.0 ? o->topk_slack : 1.0);
	if (c >= (double)count)
		return count;
	return (size_t)c + ((double)(size_t)c < c);
}

size_t tp_cuda_topk_workspace_size(size_t count, const tp_cuda_comp_opts_t *o)
{
	(void)o;
	return TP_KM_TOPK_STATE_BYTES +
	       (count + TP_KM_TOPK_TILE - 1) / TP_KM_TOPK_TILE * 8u;
}

/* ---- reduction ------------------------------------------------------------
 */

static float load(const void *p, size_t i, tp_cuda_dtype_t dt)
{
	switch (dt) {
	case TP_CUDA_FP16:
		return tp_km_f16_to_f32(((const uint16_t *)p)[i]);
	case TP_CUDA_BF16:
		return tp_km_bf16_to_f32(((const uint16_t *)p)[i]);
	default:
		return ((const float *)p)[i];
	}
}

static void store(void *p, size_t i, tp_cuda_dtype_t dt, float v)
{
	switch (dt) {
	case TP_CUDA_FP16:
		((uint16_t *)p)[i] = tp_km_f32_to_f16(v);
		break;
	case TP_CUDA_BF16:
		((uint16_t *)p)[i] = tp_km_f32_to_bf16(v);
		break;
	default:
		((float *)p)[i] = v;
		break;
	}
}

tp_err_t tp_cuda_cpu_reduce(void *dst, const void *a, const void *b,
			    size_t count, tp_cuda_dtype_t dtype,
			    tp_cuda_op_t op, int avg_n)
{
	if ((unsigned)dtype > TP_CUDA_BF16 || (unsigned)op > TP_CUDA_MIN ||
	    (op == TP_CUDA_AVG && avg_n <= 0) || (count && (!dst || !a || !b)))
		return TP_ERR_INVAL;
	for (size_t i = 0; i < count; i++)
		store(dst, i, dtype,
		      tp_km_reduce((int)op, load(a, i, dtype),
				   load(b, i, dtype), (float)avg_n));
	return TP_OK;
}

tp_err_t tp_cuda_cpu_scale(void *buf, size_t count, tp_cuda_dtype_t dtype,
			   int n)
{
	if ((unsigned)dtype > TP_CUDA_BF16 || n <= 0 || (count && !buf))
		return TP_ERR_INVAL;
	for (size_t i = 0; i < count; i++)
		store(buf, i, dtype, tp_km_div(load(buf, i, dtype), (float)n));
	return TP_OK;
}

/* ---- int8 and 1-bit ---------------------------------------------------------
 */

static float ef_x(const float *g, const float *r, size_t i)
{
	return r ? tp_km_ef_in(g[i], r[i]) : g[i];
}

static tp_err_t check_block(const float *g, size_t count,
			    const tp_cuda_comp_opts_t *o, size_t align)
{
	if (!o || !o->block || o->block % align || (count && !g))
		return TP_ERR_INVAL;
	return TP_OK;
}

tp_err_t tp_cuda_cpu_int8_compress(const float *g, float *residual,
				   size_t count, const tp_cuda_comp_opts_t *o,
				   int8_t *q, float *scales)
{
	tp_err_t err = check_block(g, count, o, 1);

	if (err || (count && (!q || !scales)))
		return err ? err : TP_ERR_INVAL;
	for (size_t b0 = 0; b0 < count; b0 += o->block) {
		size_t n = count - b0 < o->block ? count - b0 : o->block;
		float amax = 0.0f, scale;
		int bad = 0;

		for (size_t i = b0; i < b0 + n; i++) {
			float x = ef_x(g, residual, i);
			bad |= !tp_km_is_finite(x);
			amax = tp_km_max(amax, tp_km_abs(x));
		}
		scale =
		    bad ? tp_km_bits_f32(0x7fc00000u) : tp_km_q8_scale(amax);
		scales[b0 / o->block] = scale;
		for (size_t i = b0; i < b0 + n; i++) {
			float x = ef_x(g, residual, i);
			q[i] = tp_km_q8(x, scale,
					o->round == TP_CUDA_ROUND_STOCHASTIC,
					o->seed, i);
			if (residual)
				residual[i] =
				    bad ? 0.0f
					: tp_km_ef_out(x,
						       tp_km_dq8(q[i], scale));
		}
	}
	return TP_OK;
}

tp_err_t tp_cuda_cpu_int8_decompress_acc(const int8_t *q, const float *scales,
					 size_t count,
					 const tp_cuda_comp_opts_t *o,
					 float *out)
{
	if (!o || !o->block || (count && (!q || !scales || !out)))
		return TP_ERR_INVAL;
	for (size_t i = 0; i < count; i++)
		out[i] =
		    tp_km_add(out[i], tp_km_dq8(q[i], scales[i / o->block]));
	return TP_OK;
}

tp_err_t tp_cuda_cpu_1bit_compress(const float *g, float *residual,
				   size_t count, const tp_cuda_comp_opts_t *o,
				   uint32_t *bits, float *scales)
{
	tp_err_t err = check_block(g, count, o, 32);

	if (err || (count && (!bits || !scales)))
		return err ? err : TP_ERR_INVAL;
	memset(bits, 0, tp_cuda_1bit_words(count) * sizeof(*bits));
	for (size_t b0 = 0; b0 < count; b0 += o->block) {
		size_t n = count - b0 < o->block ? count - b0 : o->block;
		float part[TP_KM_LANES] = {0}, scale;
		int bad = 0;

		for (size_t j = 0; j < n; j++) {
			float x = ef_x(g, residual, b0 + j);
			uint32_t l = tp_km_lane_of(j);
			bad |= !tp_km_is_finite(x);
			part[l] = tp_km_add(part[l], tp_km_abs(x));
		}
		scale = bad ? tp_km_bits_f32(0x7fc00000u)
			    : tp_km_mean(tp_km_tree32(part), (uint32_t)n);
		scales[b0 / o->block] = scale;
		for (size_t i = b0; i < b0 + n; i++) {
			float x = ef_x(g, residual, i);
			uint32_t s = tp_km_sign(x);
			bits[i / 32] |= s << (i % 32);
			if (residual)
				residual[i] =
				    bad ? 0.0f
					: tp_km_ef_out(x, tp_km_dq1(s, scale));
		}
	}
	return TP_OK;
}

tp_err_t tp_cuda_cpu_1bit_decompress_acc(const uint32_t *bits,
					 const float *scales, size_t count,
					 const tp_cuda_comp_opts_t *o,
					 float *out)
{
	if (!o || !o->block || o->block % 32 ||
	    (count && (!bits || !scales || !out)))
		return TP_ERR_INVAL;
	for (size_t i = 0; i < count; i++)
		out[i] =
		    tp_km_add(out[i], tp_km_dq1((bits[i / 32] >> (i % 32)) & 1u,
						scales[i / o->block]));
	return TP_OK;
}

/* ---- top-k -----------------------------------------------------------------
 */

/* k-th largest key among the m elements sample_index(j, m, n) (m == n: all).
 * *need_eq_p: how many elements equal to the threshold rank within the k. */
static tp_err_t radix_select(const float *g, const float *r, size_t n, size_t m,
			     size_t k, uint32_t *t_p, size_t *need_eq_p)
{
	uint32_t prefix = 0, mask = 0;
	size_t kk = k;
	size_t *hist = tp_calloc(2048, sizeof(*hist));

	if (!hist)
		return TP_ERR_NOMEM;
	for (int p = 0; p < TP_KM_RADIX_PASSES; p++) {
		uint32_t sh = tp_km_radix_shift(p), nb = tp_km_radix_bins(p);

		memset(hist, 0, nb * sizeof(*hist));
		for (size_t j = 0; j < m; j++) {
			size_t i = m == n ? j : tp_km_sample_index(j, m, n);
			uint32_t key = tp_km_topk_key(ef_x(g, r, i));
			if ((key & mask) == prefix)
				hist[(key >> sh) & (nb - 1)]++;
		}
		uint32_t d = nb;
		while (d-- > 0) {
			if (hist[d] >= kk)
				break;
			kk -= hist[d];
		}
		prefix |= d << sh;
		mask |= (nb - 1) << sh;
	}
	tp_free(hist);
	*t_p = prefix;
	*need_eq_p = kk;
	return TP_OK;
}

tp_err_t tp_cuda_cpu_topk_compress(const float *g, float *residual,
				   size_t count, const tp_cuda_comp_opts_t *o,
				   uint32_t *idx, float *val, size_t *nnz_p)
{
	size_t k, cap, m, need_eq, nnz = 0, eq = 0;
	uint32_t t;
	tp_err_t err;
	int exact;

	if (!o || !nnz_p || count > UINT32_MAX || o->topk_frac <= 0.0 ||
	    (count && (!g || !idx || !val)))
		return TP_ERR_INVAL;
	if (count == 0) {
		*nnz_p = 0;
		return TP_OK;
	}
	exact = o->topk_mode == TP_CUDA_TOPK_EXACT;
	cap = tp_cuda_topk_capacity(count, o);
	m = exact || o->topk_samples >= count ? count : o->topk_samples;
	if (m == 0)
		return TP_ERR_INVAL;
	k = m == count ? tp_cuda_topk_k(count, o)
		       : (size_t)tp_km_topk_k(m, o->topk_frac);
	err = radix_select(g, residual, count, m, k, &t, &need_eq);
	if (err)
		return err;
	if (!exact)
		need_eq = SIZE_MAX;
	for (size_t i = 0; i < count; i++) {
		float x = ef_x(g, residual, i);
		uint32_t key = tp_km_topk_key(x);
		int take = key > t || (key == t && eq++ < need_eq);

		if (take && nnz < cap) {
			idx[nnz] = (uint32_t)i;
			val[nnz++] = x;
			if (residual)
				residual[i] = 0.0f;
		} else if (residual) {
			residual[i] = x;
		}
	}
	*nnz_p = nnz;
	return TP_OK;
}

tp_err_t tp_cuda_cpu_topk_decompress_acc(const uint32_t *idx, const float *val,
					 size_t nnz, size_t count, float *out)
{
	if (nnz && (!idx || !val || !out))
		return TP_ERR_INVAL;
	for (size_t j = 0; j < nnz; j++)
		if (idx[j] >= count)
			return TP_ERR_RANGE;
	for (size_t j = 0; j < nnz; j++)
		out[idx[j]] = tp_km_add(out[idx[j]], val[j]);
	return TP_OK;
}
