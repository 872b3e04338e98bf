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
 * Each block is read from memory once: the first loop over it (scale)
 * brings g and residual into L1, the second (quantise, residual) reads
 * them from there. The loops are branch-free over one block so the
 * vectoriser takes them; the residual-or-not and stochastic-or-not
 * choices are made once per block, outside them. */

static tp_err_t check_block(const float *g, size_t count,
			    const tp_cuda_comp_opts_t *o, size_t align)
{
	if (!o || !o->block || o->block % align || (count && !g))
		return TP_ERR_INVAL;
	return TP_OK;
}

/* Bits of max |g + r| over n elements (r may be NULL). The bits of a
 * non-negative float order like its value, so the integer max is the
 * float max; Inf and NaN give >= 0x7f800000. */
static uint32_t amax_bits(const float *g, const float *r, size_t n)
{
	uint32_t m = 0;

	if (r) {
		for (size_t i = 0; i < n; i++) {
			uint32_t k = tp_km_f32_bits(tp_km_ef_in(g[i], r[i])) &
				     0x7fffffffu;
			m = k > m ? k : m;
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			uint32_t k = tp_km_f32_bits(g[i]) & 0x7fffffffu;
			m = k > m ? k : m;
		}
	}
	return m;
}

static int bad_bits(uint32_t amax)
{
	return amax >= 0x7f800000u;
}

/* Nearest rounding with a usable scale: tp_km_q8's arithmetic, inlined
 * so the loop has no call and no branch. */
static void q8_nearest(const float *g, float *r, size_t n, float scale,
		       int8_t *q, int staged)
{
	if (staged && scale >= 0x1p-126f) {
		/* A normal scale is max |x| / 127 to half an ulp, so |x| /
		 * scale stays below 127.5 and rounds to at most 127: the
		 * clamp changes nothing, and the loop is shorter without. */
		for (size_t i = 0; i < n; i++) {
			float x = g[i];
			float v = tp_km_rint_small(tp_km_div(x, scale));
			q[i] = (int8_t)v;
			r[i] = tp_km_ef_out(x, tp_km_mul(v, scale));
		}
	} else if (staged) { /* g is x already */
		for (size_t i = 0; i < n; i++) {
			float x = g[i];
			float v = tp_km_rint_small(
			    tp_km_clamp127(tp_km_div(x, scale)));
			q[i] = (int8_t)v;
			r[i] = tp_km_ef_out(x, tp_km_mul(v, scale));
		}
	} else if (r) {
		for (size_t i = 0; i < n; i++) {
			float x = tp_km_ef_in(g[i], r[i]);
			float v = tp_km_rint_small(
			    tp_km_clamp127(tp_km_div(x, scale)));
			q[i] = (int8_t)v;
			r[i] = tp_km_ef_out(x, tp_km_mul(v, scale));
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			float v = tp_km_rint_small(
			    tp_km_clamp127(tp_km_div(g[i], scale)));
			q[i] = (int8_t)v;
		}
	}
}

/* Elements of a block staged on the stack (x = g + r computed once);
 * larger blocks are read twice instead. */
#define TP_KREF_STAGE 1024

/* x = g + r into x[0..n), and the bits of max |x| (see amax_bits). */
static uint32_t stage_x(const float *g, const float *r, size_t n, float *x)
{
	uint32_t m = 0;

	if (!r) {
		memcpy(x, g, n * sizeof(*x));
		return amax_bits(g, NULL, n);
	}
	for (size_t i = 0; i < n; i++) {
		float v = tp_km_ef_in(g[i], r[i]);
		uint32_t k = tp_km_f32_bits(v) & 0x7fffffffu;
		x[i] = v;
		m = k > m ? k : m;
	}
	return m;
}

static void q8_block(const float *g, float *r, size_t i0, size_t n,
		     const tp_cuda_comp_opts_t *o, int8_t *q, float *scale_p)
{
	float x[TP_KREF_STAGE];
	int staged = n <= TP_KREF_STAGE && r;
	uint32_t am = staged ? stage_x(g + i0, r + i0, n, x)
			     : amax_bits(g + i0, r ? r + i0 : NULL, n);
	int bad = bad_bits(am);
	float scale = bad ? tp_km_bits_f32(0x7fc00000u)
			  : tp_km_q8_scale(tp_km_bits_f32(am));

	bad = bad || !tp_km_is_finite(scale);
	*scale_p = scale;
	if (!bad && scale > 0.0f && o->round != TP_CUDA_ROUND_STOCHASTIC) {
		if (staged) /* r = 0 + x: the same as the unstaged g + r */
			q8_nearest(x, r + i0, n, scale, q + i0, 1);
		else
			q8_nearest(g + i0, r ? r + i0 : NULL, n, scale, q + i0,
				   0);
		return;
	}
	/* zero or bad scale, or stochastic rounding: tp_km_q8 itself */
	for (size_t i = i0; i < i0 + n; i++) {
		float xi = r ? tp_km_ef_in(g[i], r[i]) : g[i];
		q[i] = tp_km_q8(xi, scale, o->round == TP_CUDA_ROUND_STOCHASTIC,
				o->seed, i);
		if (r)
			r[i] = bad ? 0.0f
				   : tp_km_ef_out(xi, tp_km_dq8(q[i], scale));
	}
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
		q8_block(g, residual, b0, n, o, q, &scales[b0 / o->block]);
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
	for (size_t b0 = 0; b0 < count; b0 += o->block) {
		size_t n = count - b0 < o->block ? count - b0 : o->block;
		float s = scales[b0 / o->block];
		for (size_t i = b0; i < b0 + n; i++)
			out[i] = tp_km_add(out[i], tp_km_dq8(q[i], s));
	}
	return TP_OK;
}

/* Sum of |g + r| over one block of n elements in the warp's order
 * (tp_kmath.h): lane l adds elements 4l..4l+3 of every 128, in order. */
static float abs_sum(const float *g, const float *r, size_t n)
{
	float part[TP_KM_LANES] = {0};
	size_t full = n - n % (TP_KM_LANES * TP_KM_VEC), j;

	/* A lane's four elements of a 128 in one iteration: its partial
	 * sum stays in a register for the four additions, and the loop
	 * over the lanes is a de-interleaving load the vectoriser knows. */
	for (j = 0; j < full && !r; j += TP_KM_LANES * TP_KM_VEC) {
		for (uint32_t l = 0; l < TP_KM_LANES; l++) {
			const float *e = g + j + l * TP_KM_VEC;
			float p = part[l];
			for (uint32_t v = 0; v < TP_KM_VEC; v++)
				p = tp_km_add(p, tp_km_abs(e[v]));
			part[l] = p;
		}
	}
	for (j = r ? 0 : full; j < n; j++) {
		float x = r ? tp_km_ef_in(g[j], r[j]) : g[j];
		uint32_t l = tp_km_lane_of(j);
		part[l] = tp_km_add(part[l], tp_km_abs(x));
	}
	return tp_km_tree32(part);
}

/* Bit k of a word, as a table so the sign loop is a compare and an AND. */
static const uint32_t bit_of[32] = {
    1u << 0,  1u << 1,	1u << 2,  1u << 3,  1u << 4,  1u << 5,	1u << 6,
    1u << 7,  1u << 8,	1u << 9,  1u << 10, 1u << 11, 1u << 12, 1u << 13,
    1u << 14, 1u << 15, 1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 20,
    1u << 21, 1u << 22, 1u << 23, 1u << 24, 1u << 25, 1u << 26, 1u << 27,
    1u << 28, 1u << 29, 1u << 30, 1u << 31};

/* Signs of up to 32 elements x = g + rin (rin NULL: x = g) into one
 * word; rout (NULL: none) gets x - dq1, or 0 in a bad block. */
static uint32_t sign_word(const float *g, const float *rin, float *rout,
			  size_t n, float scale, int bad)
{
	uint32_t w = 0;

	if (rin && rout && !bad) {
		for (size_t k = 0; k < n; k++) {
			float x = tp_km_ef_in(g[k], rin[k]);
			uint32_t s = tp_km_sign(x);
			w |= s ? bit_of[k] : 0u;
			rout[k] = tp_km_ef_out(x, s ? -scale : scale);
		}
	} else if (rout && !bad) {
		for (size_t k = 0; k < n; k++) {
			uint32_t s = tp_km_sign(g[k]);
			w |= s ? bit_of[k] : 0u;
			rout[k] = tp_km_ef_out(g[k], s ? -scale : scale);
		}
	} else {
		for (size_t k = 0; k < n; k++)
			w |= tp_km_sign(rin ? tp_km_ef_in(g[k], rin[k]) : g[k])
				 ? bit_of[k]
				 : 0u;
		if (rout)
			memset(rout, 0, n * sizeof(*rout));
	}
	return w;
}

tp_err_t tp_cuda_cpu_1bit_compress(const float *g, float *residual,
				   size_t count, const tp_cuda_comp_opts_t *o,
				   uint32_t *bits, float *scales)
{
	tp_err_t err = check_block(g, count, o, 32);

	if (err || (count && (!bits || !scales)))
		return err ? err : TP_ERR_INVAL;
	for (size_t b0 = 0; b0 < count; b0 += o->block) {
		size_t n = count - b0 < o->block ? count - b0 : o->block;
		float *r = residual ? residual + b0 : NULL, x[TP_KREF_STAGE];
		int staged = n <= TP_KREF_STAGE && r;
		const float *src = staged ? x : g + b0;
		const float *rr = staged ? NULL : r;
		int bad = bad_bits(staged ? stage_x(g + b0, r, n, x)
					  : amax_bits(g + b0, r, n));
		float scale =
		    bad ? tp_km_bits_f32(0x7fc00000u)
			: tp_km_1bit_scale(abs_sum(src, rr, n), (uint32_t)n);

		bad = bad || !tp_km_is_finite(scale);

		scales[b0 / o->block] = scale;
		for (size_t k = 0; k < n; k += 32)
			bits[(b0 + k) / 32] = sign_word(
			    src + k, rr ? rr + k : NULL, r ? r + k : NULL,
			    n - k < 32 ? n - k : 32, scale, bad);
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
	for (size_t w0 = 0; w0 < count; w0 += 32) {
		size_t n = count - w0 < 32 ? count - w0 : 32;
		uint32_t w = bits[w0 / 32];
		float s = scales[w0 / o->block], ns = -s;
		float *ow = out + w0;

		for (size_t k = 0; k < n; k++)
			ow[k] = tp_km_add(ow[k], (w & bit_of[k]) ? ns : s);
	}
	return TP_OK;
}

/* ---- top-k -----------------------------------------------------------------
 * The threshold comes from the keys of m elements (all, or the sample),
 * gathered once into scratch; the selection pass then reads g and the
 * residual once, tile by tile: a branch-free loop writes x into the
 * residual and tells whether any key of the tile reaches the threshold,
 * and only such tiles (about frac x tile of them) are walked element by
 * element in index order, as the device does. */

static const size_t tile = 16;

/* k-th largest of keys[0..m). *need_eq_p: how many elements equal to the
 * threshold rank within the k. */
static tp_err_t radix_select(const uint32_t *keys, size_t m, size_t k,
			     uint32_t *t_p, size_t *need_eq_p)
{
	uint32_t prefix = 0, mask = 0;
	size_t kk = k;
	size_t *hist = tp_calloc(2048, sizeof(*hist));

	if (!hist)
		return TP_ERR_NOMEM;
	for (int p = 0; p < TP_KM_RADIX_PASSES; p++) {
		uint32_t sh = tp_km_radix_shift(p), nb = tp_km_radix_bins(p);

		memset(hist, 0, nb * sizeof(*hist));
		for (size_t j = 0; j < m; j++)
			if ((keys[j] & mask) == prefix)
				hist[(keys[j] >> sh) & (nb - 1)]++;
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

static tp_err_t topk_threshold(const float *g, const float *r, size_t n,
			       size_t m, size_t k, uint32_t *t_p,
			       size_t *need_eq_p)
{
	uint32_t *keys = tp_malloc(m * sizeof(*keys));
	tp_err_t err;

	if (!keys)
		return TP_ERR_NOMEM;
	if (m == n && r) {
		for (size_t i = 0; i < n; i++)
			keys[i] = tp_km_topk_key(tp_km_ef_in(g[i], r[i]));
	} else if (m == n) {
		for (size_t i = 0; i < n; i++)
			keys[i] = tp_km_topk_key(g[i]);
	} else {
		for (size_t j = 0; j < m; j++) {
			size_t i = tp_km_sample_index(j, m, n);
			keys[j] =
			    tp_km_topk_key(r ? tp_km_ef_in(g[i], r[i]) : g[i]);
		}
	}
	err = radix_select(keys, m, k, t_p, need_eq_p);
	tp_free(keys);
	return err;
}

/* Whether any of x[0..n) has a key >= t, and x = g + r into r. */
static int tile_hit(const float *g, float *r, size_t n, uint32_t t)
{
	uint32_t hit = 0;

	if (r) {
		for (size_t i = 0; i < n; i++) {
			float x = tp_km_ef_in(g[i], r[i]);
			r[i] = x;
			hit |= tp_km_topk_key(x) >= t;
		}
	} else {
		for (size_t i = 0; i < n; i++)
			hit |= tp_km_topk_key(g[i]) >= t;
	}
	return hit != 0;
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
	err = topk_threshold(g, residual, count, m, k, &t, &need_eq);
	if (err)
		return err;
	if (!exact)
		need_eq = SIZE_MAX;
	for (size_t i0 = 0; i0 < count; i0 += tile) {
		size_t n = count - i0 < tile ? count - i0 : tile;

		if (!tile_hit(g + i0, residual ? residual + i0 : NULL, n, t))
			continue;
		for (size_t i = i0; i < i0 + n; i++) {
			float x = residual ? residual[i] : g[i];
			uint32_t key = tp_km_topk_key(x);
			int take = key > t || (key == t && eq++ < need_eq);

			if (take && nnz < cap) {
				idx[nnz] = (uint32_t)i;
				val[nnz++] = x;
				if (residual)
					residual[i] = 0.0f;
			}
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
