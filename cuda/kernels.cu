/* kernels.cu - the GPU side of tp_cuda.h.
 *
 * Notes: the arithmetic is tp_kmath.h's, so results match cuda/kref.c bit
 * for bit. Element-wise kernels are grid-stride loops over 128-bit vectors
 * when every pointer is 16-byte aligned (scalar otherwise) with a scalar
 * tail. Compressors give one warp a block: lane l owns the 4-element
 * vectors 4l, 4l + 128, ... of the block (tp_km_lane_of), sums in that order
 * and combines lanes with the xor butterfly tp_km_tree32 emulates. A block
 * is read twice (amax / mean first, then quantise): the second read of a
 * 256-element block hits L1/L2, so DRAM sees g and the residual once.
 * Top-k: radix select of the threshold over three digits (on a sample in
 * sampled mode), then a tile count, one scan of the tile counts and a
 * tile write that keeps the index order (ballots within a warp). Launches are on the caller's stream and never synchronise. */
#include "config.h"

#include <cuda_runtime.h>
#include <stdio.h>

#include "tp_cuda.h"
#include "tp_kmath.h"

#define THREADS 256
#define TILE TP_KM_TOPK_TILE

static tp_err_t fail(cudaError_t e, char *detail, size_t len)
{
	(void)cudaGetLastError(); /* clear a non-sticky error */
	if (detail && len)
		snprintf(detail, len, "%s: %s", cudaGetErrorName(e),
			 cudaGetErrorString(e));
	return TP_ERR_CUDA;
}

/* The one check: a failed CUDA call records its error and leaves. */
#define CU_CHECK(call)                                                         \
	do {                                                                   \
		cudaError_t e_ = (call);                                       \
		if (e_ != cudaSuccess)                                         \
			return fail(e_, detail, detail_len);                   \
	} while (0)

static tp_err_t grid_for(size_t work, unsigned *grid_p, char *detail,
			 size_t detail_len)
{
	int dev, sms;
	size_t g = (work + THREADS - 1) / THREADS;

	CU_CHECK(cudaGetDevice(&dev));
	CU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
					dev));
	if (g > (size_t)sms * 8)
		g = (size_t)sms * 8;
	*grid_p = g ? (unsigned)g : 1u;
	return TP_OK;
}

static bool al16(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

static bool al4(const void *p)
{
	return ((uintptr_t)p & 3u) == 0;
}

/* ---- reduction ---------------------------------------------------------- */

struct f32_t {
	typedef float T;
	enum { V = 4 };
	static __device__ float to(T v) { return v; }
	static __device__ T from(float f) { return f; }
};
struct f16_t {
	typedef uint16_t T;
	enum { V = 8 };
	static __device__ float to(T v) { return tp_km_f16_to_f32(v); }
	static __device__ T from(float f) { return tp_km_f32_to_f16(f); }
};
struct bf16_t {
	typedef uint16_t T;
	enum { V = 8 };
	static __device__ float to(T v) { return tp_km_bf16_to_f32(v); }
	static __device__ T from(float f) { return tp_km_f32_to_bf16(f); }
};

#define OP_SCALE 4 /* dst = a / avg_n */

template <class D, int OP>
__device__ __forceinline__ typename D::T elem(typename D::T x,
					      typename D::T y, float avg_n)
{
	float a = D::to(x);

	if (OP == OP_SCALE)
		return D::from(tp_km_div(a, avg_n));
	return D::from(tp_km_reduce(OP, a, D::to(y), avg_n));
}

template <class D, int OP>
__global__ void k_reduce(typename D::T *dst, const typename D::T *a,
			 const typename D::T *b, size_t n, float avg_n,
			 bool vec)
{
	typedef typename D::T T;
	union pack {
		uint4 v;
		T e[D::V];
	};
	size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t nv = vec ? n / D::V : 0;

	for (size_t v = tid; v < nv; v += stride) {
		pack x, y, z;
		x.v = ((const uint4 *)a)[v];
		y.v = ((const uint4 *)b)[v];
#pragma unroll
		for (int e = 0; e < D::V; e++)
			z.e[e] = elem<D, OP>(x.e[e], y.e[e], avg_n);
		((uint4 *)dst)[v] = z.v;
	}
	for (size_t i = nv * D::V + tid; i < n; i += stride)
		dst[i] = elem<D, OP>(a[i], b[i], avg_n);
}

template <class D>
static void launch_reduce(int op, unsigned grid, cudaStream_t s, void *dst,
			  const void *a, const void *b, size_t n, float avg_n,
			  bool vec)
{
	typedef typename D::T T;
	T *d = (T *)dst;
	const T *x = (const T *)a, *y = (const T *)b;

	switch (op) {
	case TP_KM_AVG:
		k_reduce<D, TP_KM_AVG><<<grid, THREADS, 0, s>>>(d, x, y, n,
								 avg_n, vec);
		break;
	case TP_KM_MAX:
		k_reduce<D, TP_KM_MAX><<<grid, THREADS, 0, s>>>(d, x, y, n,
								 avg_n, vec);
		break;
	case TP_KM_MIN:
		k_reduce<D, TP_KM_MIN><<<grid, THREADS, 0, s>>>(d, x, y, n,
								 avg_n, vec);
		break;
	case OP_SCALE:
		k_reduce<D, OP_SCALE><<<grid, THREADS, 0, s>>>(d, x, y, n,
								avg_n, vec);
		break;
	default:
		k_reduce<D, TP_KM_SUM><<<grid, THREADS, 0, s>>>(d, x, y, n,
								 avg_n, vec);
		break;
	}
}

static tp_err_t reduce_any(void *dst, const void *a, const void *b,
			   size_t count, tp_cuda_dtype_t dtype, int op,
			   float avg_n, void *stream, char *detail,
			   size_t detail_len)
{
	unsigned grid;
	size_t vl = dtype == TP_CUDA_FP32 ? 4 : 8;
	bool vec = al16(dst) && al16(a) && al16(b);
	cudaStream_t s = (cudaStream_t)stream;
	tp_err_t err;

	if (count == 0)
		return TP_OK;
	err = grid_for((count + vl - 1) / vl, &grid, detail, detail_len);
	if (err)
		return err;
	switch (dtype) {
	case TP_CUDA_FP16:
		launch_reduce<f16_t>(op, grid, s, dst, a, b, count, avg_n, vec);
		break;
	case TP_CUDA_BF16:
		launch_reduce<bf16_t>(op, grid, s, dst, a, b, count, avg_n,
				      vec);
		break;
	default:
		launch_reduce<f32_t>(op, grid, s, dst, a, b, count, avg_n, vec);
		break;
	}
	CU_CHECK(cudaGetLastError());
	return TP_OK;
}

extern "C" tp_err_t tp_cuda_reduce(void *dst, const void *a, const void *b,
				   size_t count, tp_cuda_dtype_t dtype,
				   tp_cuda_op_t op, int avg_n, void *stream,
				   char *detail, size_t detail_len)
{
	if ((unsigned)dtype > TP_CUDA_BF16 || (unsigned)op > TP_CUDA_MIN ||
	    (op == TP_CUDA_AVG && avg_n <= 0) ||
	    (count && (!dst || !a || !b)))
		return TP_ERR_INVAL;
	return reduce_any(dst, a, b, count, dtype, (int)op, (float)avg_n,
			  stream, detail, detail_len);
}

extern "C" tp_err_t tp_cuda_scale(void *buf, size_t count,
				  tp_cuda_dtype_t dtype, int n, void *stream,
				  char *detail, size_t detail_len)
{
	if ((unsigned)dtype > TP_CUDA_BF16 || n <= 0 || (count && !buf))
		return TP_ERR_INVAL;
	return reduce_any(buf, buf, buf, count, dtype, OP_SCALE, (float)n,
			  stream, detail, detail_len);
}

extern "C" tp_err_t tp_cuda_device_count(int *ndev_p, char *detail,
					 size_t detail_len)
{
	int n = 0;

	*ndev_p = 0;
	CU_CHECK(cudaGetDeviceCount(&n));
	*ndev_p = n;
	return TP_OK;
}

extern "C" tp_err_t tp_cuda_ptr_is_device(const void *p, bool *is_dev_p,
					  char *detail, size_t detail_len)
{
	cudaPointerAttributes at;
	cudaError_t e = cudaPointerGetAttributes(&at, p);

	*is_dev_p = false;
	if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
		(void)cudaGetLastError();
		return TP_OK; /* no device: nothing can be device memory */
	}
	CU_CHECK(e);
	*is_dev_p = at.type == cudaMemoryTypeDevice ||
		    at.type == cudaMemoryTypeManaged;
	return TP_OK;
}

extern "C" tp_err_t tp_cuda_memcpy(void *dst, const void *src, size_t bytes,
				   void *stream, char *detail,
				   size_t detail_len)
{
	if (bytes == 0)
		return TP_OK;
	if (!dst || !src)
		return TP_ERR_INVAL;
	CU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
				 (cudaStream_t)stream));
	return TP_OK;
}

extern "C" tp_err_t tp_cuda_stream_sync(void *stream, char *detail,
					size_t detail_len)
{
	CU_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
	return TP_OK;
}

/* ---- int8 and 1-bit: one warp per block -------------------------------- */

/* The 4 elements of x = g + r from block offset c0 (< nb) on. */
__device__ __forceinline__ void ef_load4(const float *g, const float *r,
					 size_t i0, size_t left, bool vec,
					 float x[4])
{
	if (vec && left >= 4) {
		float4 gv = *(const float4 *)(g + i0);
		x[0] = gv.x, x[1] = gv.y, x[2] = gv.z, x[3] = gv.w;
		if (r) {
			float4 rv = *(const float4 *)(r + i0);
			x[0] = tp_km_ef_in(x[0], rv.x);
			x[1] = tp_km_ef_in(x[1], rv.y);
			x[2] = tp_km_ef_in(x[2], rv.z);
			x[3] = tp_km_ef_in(x[3], rv.w);
		}
		return;
	}
#pragma unroll
	for (int e = 0; e < 4; e++)
		x[e] = (size_t)e < left
			   ? (r ? tp_km_ef_in(g[i0 + e], r[i0 + e]) : g[i0 + e])
			   : 0.0f;
}

__device__ __forceinline__ void store4(float *r, size_t i0, size_t left,
				       bool vec, const float y[4])
{
	if (vec && left >= 4) {
		*(float4 *)(r + i0) = make_float4(y[0], y[1], y[2], y[3]);
		return;
	}
	for (int e = 0; e < 4 && (size_t)e < left; e++)
		r[i0 + e] = y[e];
}

#define WARP_ID() ((blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32)
#define NWARPS() ((size_t)gridDim.x * blockDim.x / 32)

__global__ void k_int8_compress(const float *g, float *r, size_t n, size_t B,
				int stoch, uint64_t seed, int8_t *q,
				float *scales, bool vec)
{
	unsigned lane = threadIdx.x & 31;
	size_t nblk = (n + B - 1) / B;

	for (size_t blk = WARP_ID(); blk < nblk; blk += NWARPS()) {
		size_t b0 = blk * B, nb = n - b0 < B ? n - b0 : B;
		float amax = 0.0f, x[4], scale;
		int bad = 0;

		for (size_t cb = 0; cb < nb; cb += 128) {
			size_t c0 = cb + 4 * lane;
			if (c0 >= nb)
				continue;
			ef_load4(g, r, b0 + c0, nb - c0, vec, x);
			for (int e = 0; e < 4 && c0 + e < nb; e++) {
				bad |= !tp_km_is_finite(x[e]);
				amax = tp_km_max(amax, tp_km_abs(x[e]));
			}
		}
		for (int off = 16; off > 0; off /= 2)
			amax = tp_km_max(amax,
					 __shfl_xor_sync(0xffffffffu, amax, off));
		bad = __any_sync(0xffffffffu, bad);
		scale = bad ? tp_km_bits_f32(0x7fc00000u) : tp_km_q8_scale(amax);
		bad = bad || !tp_km_is_finite(scale); /* warp-uniform */
		if (lane == 0)
			scales[blk] = scale;
		for (size_t cb = 0; cb < nb; cb += 128) {
			size_t c0 = cb + 4 * lane, i0 = b0 + c0;
			if (c0 >= nb)
				continue;
			size_t left = nb - c0;
			int8_t qq[4];
			float y[4];
			ef_load4(g, r, i0, left, vec, x);
#pragma unroll
			for (int e = 0; e < 4; e++) {
				qq[e] = tp_km_q8(x[e], scale, stoch, seed,
						 i0 + e);
				y[e] = bad ? 0.0f
					   : tp_km_ef_out(x[e],
							  tp_km_dq8(qq[e], scale));
			}
			if (vec && left >= 4)
				*(char4 *)(q + i0) =
				    make_char4(qq[0], qq[1], qq[2], qq[3]);
			else
				for (size_t e = 0; e < 4 && e < left; e++)
					q[i0 + e] = qq[e];
			if (r)
				store4(r, i0, left, vec, y);
		}
	}
}

__global__ void k_int8_decompress(const int8_t *q, const float *scales,
				  size_t n, size_t B, float *out, bool vec)
{
	unsigned lane = threadIdx.x & 31;
	size_t nblk = (n + B - 1) / B;

	for (size_t blk = WARP_ID(); blk < nblk; blk += NWARPS()) {
		size_t b0 = blk * B, nb = n - b0 < B ? n - b0 : B;
		float scale = scales[blk];

		for (size_t c0 = 4 * lane; c0 < nb; c0 += 128) {
			size_t i0 = b0 + c0, left = nb - c0;
			if (vec && left >= 4) {
				char4 qv = *(const char4 *)(q + i0);
				float4 o = *(float4 *)(out + i0);
				o.x = tp_km_add(o.x, tp_km_dq8(qv.x, scale));
				o.y = tp_km_add(o.y, tp_km_dq8(qv.y, scale));
				o.z = tp_km_add(o.z, tp_km_dq8(qv.z, scale));
				o.w = tp_km_add(o.w, tp_km_dq8(qv.w, scale));
				*(float4 *)(out + i0) = o;
			} else {
				for (size_t e = 0; e < 4 && e < left; e++)
					out[i0 + e] = tp_km_add(
					    out[i0 + e],
					    tp_km_dq8(q[i0 + e], scale));
			}
		}
	}
}

__global__ void k_1bit_compress(const float *g, float *r, size_t n, size_t B,
				uint32_t *bits, float *scales, bool vec)
{
	unsigned lane = threadIdx.x & 31;
	size_t nblk = (n + B - 1) / B;

	for (size_t blk = WARP_ID(); blk < nblk; blk += NWARPS()) {
		size_t b0 = blk * B, nb = n - b0 < B ? n - b0 : B;
		float sum = 0.0f, x[4], scale;
		int bad = 0;

		for (size_t cb = 0; cb < nb; cb += 128) {
			size_t c0 = cb + 4 * lane;
			if (c0 >= nb)
				continue;
			ef_load4(g, r, b0 + c0, nb - c0, vec, x);
			for (int e = 0; e < 4 && c0 + e < nb; e++) {
				bad |= !tp_km_is_finite(x[e]);
				sum = tp_km_add(sum, tp_km_abs(x[e]));
			}
		}
		for (int off = 16; off > 0; off /= 2)
			sum = tp_km_add(sum,
					__shfl_xor_sync(0xffffffffu, sum, off));
		bad = __any_sync(0xffffffffu, bad);
		scale = bad ? tp_km_bits_f32(0x7fc00000u)
			    : tp_km_1bit_scale(sum, (uint32_t)nb);
		bad = bad || !tp_km_is_finite(scale); /* warp-uniform */
		if (lane == 0)
			scales[blk] = scale;
		/* uniform trip count: the shuffles need the whole warp */
		for (size_t cb = 0; cb < nb; cb += 128) {
			size_t c0 = cb + 4 * lane, i0 = b0 + c0;
			size_t left = c0 < nb ? nb - c0 : 0;
			uint32_t w = 0;
			float y[4];
			if (left)
				ef_load4(g, r, i0, left, vec, x);
			for (int e = 0; e < 4; e++) {
				uint32_t s = (size_t)e < left ? tp_km_sign(x[e])
							      : 0u;
				w |= s << (4 * (lane & 7) + e);
				y[e] = bad ? 0.0f
					   : tp_km_ef_out(x[e],
							  tp_km_dq1(s, scale));
			}
			w |= __shfl_xor_sync(0xffffffffu, w, 1);
			w |= __shfl_xor_sync(0xffffffffu, w, 2);
			w |= __shfl_xor_sync(0xffffffffu, w, 4);
			if (left && (lane & 7) == 0)
				bits[i0 / 32] = w;
			if (left && r)
				store4(r, i0, left, vec, y);
		}
	}
}

__global__ void k_1bit_decompress(const uint32_t *bits, const float *scales,
				  size_t n, size_t B, float *out, bool vec)
{
	unsigned lane = threadIdx.x & 31;
	size_t nblk = (n + B - 1) / B;

	for (size_t blk = WARP_ID(); blk < nblk; blk += NWARPS()) {
		size_t b0 = blk * B, nb = n - b0 < B ? n - b0 : B;
		float scale = scales[blk];

		for (size_t c0 = 4 * lane; c0 < nb; c0 += 128) {
			size_t i0 = b0 + c0, left = nb - c0;
			uint32_t w = bits[i0 / 32] >> (i0 % 32);
			float o[4];
			bool v = vec && left >= 4;
			if (v) {
				float4 t = *(float4 *)(out + i0);
				o[0] = t.x, o[1] = t.y, o[2] = t.z, o[3] = t.w;
			}
			for (size_t e = 0; e < 4 && e < left; e++) {
				float d = tp_km_dq1((w >> e) & 1u, scale);
				if (v)
					o[e] = tp_km_add(o[e], d);
				else
					out[i0 + e] = tp_km_add(out[i0 + e], d);
			}
			if (v)
				*(float4 *)(out + i0) =
				    make_float4(o[0], o[1], o[2], o[3]);
		}
	}
}

static tp_err_t comp_check(const void *g, size_t count,
			   const tp_cuda_comp_opts_t *o, size_t align,
			   const void *out1, const void *out2)
{
	if (!o || !o->block || o->block % align ||
	    (count && (!g || !out1 || !out2)))
		return TP_ERR_INVAL;
	return TP_OK;
}

extern "C" tp_err_t tp_cuda_int8_compress(const float *g, float *residual,
					  size_t count,
					  const tp_cuda_comp_opts_t *o,
					  int8_t *q, float *scales,
					  void *stream, char *detail,
					  size_t detail_len)
{
	tp_err_t err = comp_check(g, count, o, 1, q, scales);
	unsigned grid;

	if (err || count == 0)
		return err;
	err = grid_for(tp_cuda_nblocks(count, o) * 32, &grid, detail,
		       detail_len);
	if (err)
		return err;
	bool vec = o->block % 4 == 0 && al16(g) && al16(residual) && al4(q);
	k_int8_compress<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
	    g, residual, count, o->block,
	    o->round == TP_CUDA_ROUND_STOCHASTIC, o->seed, q, scales, vec);
	CU_CHECK(cudaGetLastError());
	return TP_OK;
}

extern "C" tp_err_t
tp_cuda_int8_decompress_acc(const int8_t *q, const float *scales, size_t count,
			    const tp_cuda_comp_opts_t *o, float *out,
			    void *stream, char *detail, size_t detail_len)
{
	tp_err_t err = comp_check(q, count, o, 1, scales, out);
	unsigned grid;

	if (err || count == 0)
		return err;
	err = grid_for(tp_cuda_nblocks(count, o) * 32, &grid, detail,
		       detail_len);
	if (err)
		return err;
	bool vec = o->block % 4 == 0 && al4(q) && al16(out);
	k_int8_decompress<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
	    q, scales, count, o->block, out, vec);
	CU_CHECK(cudaGetLastError());
	return TP_OK;
}

extern "C" tp_err_t tp_cuda_1bit_compress(const float *g, float *residual,
					  size_t count,
					  const tp_cuda_comp_opts_t *o,
					  uint32_t *bits, float *scales,
					  void *stream, char *detail,
					  size_t detail_len)
{
	tp_err_t err = comp_check(g, count, o, 32, bits, scales);
	unsigned grid;

	if (err || count == 0)
		return err;
	err = grid_for(tp_cuda_nblocks(count, o) * 32, &grid, detail,
		       detail_len);
	if (err)
		return err;
	bool vec = al16(g) && al16(residual);
	k_1bit_compress<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
	    g, residual, count, o->block, bits, scales, vec);
	CU_CHECK(cudaGetLastError());
	return TP_OK;
}

extern "C" tp_err_t
tp_cuda_1bit_decompress_acc(const uint32_t *bits, const float *scales,
			    size_t count, const tp_cuda_comp_opts_t *o,
			    float *out, void *stream, char *detail,
			    size_t detail_len)
{
	tp_err_t err = comp_check(bits, count, o, 32, scales, out);
	unsigned grid;

	if (err || count == 0)
		return err;
	err = grid_for(tp_cuda_nblocks(count, o) * 32, &grid, detail,
		       detail_len);
	if (err)
		return err;
	k_1bit_decompress<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
	    bits, scales, count, o->block, out, al16(out));
	CU_CHECK(cudaGetLastError());
	return TP_OK;
}

/* ---- top-k ------------------------------------------------------------- */

/* Device scratch, at the start of the workspace. */
struct topk_state {
	uint32_t prefix, mask, kk; /* radix select in progress */
	uint32_t need_eq;	   /* ties taken (UINT32_MAX: all) */
	uint32_t hist[2048];
};
static_assert(sizeof(topk_state) <= TP_KM_TOPK_STATE_BYTES,
	      "tp_cuda_topk_workspace_size() too small");

__device__ __forceinline__ float ef_x(const float *g, const float *r,
				      uint32_t i)
{
	return r ? tp_km_ef_in(g[i], r[i]) : g[i];
}

__global__ void k_topk_init(topk_state *st, uint32_t k)
{
	for (unsigned i = threadIdx.x; i < 2048; i += blockDim.x)
		st->hist[i] = 0;
	if (threadIdx.x == 0) {
		st->prefix = 0;
		st->mask = 0;
		st->kk = k;
	}
}

__global__ void k_topk_hist(const float *g, const float *r, uint32_t n,
			    uint32_t m, int pass, topk_state *st)
{
	__shared__ uint32_t h[2048];
	uint32_t sh = tp_km_radix_shift(pass), nb = tp_km_radix_bins(pass);
	uint32_t prefix = st->prefix, mask = st->mask;

	for (unsigned i = threadIdx.x; i < nb; i += blockDim.x)
		h[i] = 0;
	__syncthreads();
	for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < m;
	     j += (size_t)gridDim.x * blockDim.x) {
		uint32_t i =
		    m == n ? (uint32_t)j : (uint32_t)tp_km_sample_index(j, m, n);
		uint32_t key = tp_km_topk_key(ef_x(g, r, i));
		if ((key & mask) == prefix)
			atomicAdd(&h[(key >> sh) & (nb - 1)], 1u);
	}
	__syncthreads();
	for (unsigned i = threadIdx.x; i < nb; i += blockDim.x)
		if (h[i])
			atomicAdd(&st->hist[i], h[i]);
}

/* One thread: walk the digits from the top, as kref.c's radix_select. */
__global__ void k_topk_pick(int pass, topk_state *st)
{
	uint32_t sh = tp_km_radix_shift(pass), nb = tp_km_radix_bins(pass);
	uint32_t kk = st->kk, d = nb;

	while (d-- > 0) {
		if (st->hist[d] >= kk)
			break;
		kk -= st->hist[d];
	}
	st->kk = kk;
	st->prefix |= d << sh;
	st->mask |= (nb - 1) << sh;
	for (uint32_t i = 0; i < 2048; i++)
		st->hist[i] = 0;
}

/* Per tile: elements above the threshold and equal to it. */
__global__ void k_topk_count(const float *g, const float *r, uint32_t n,
			     const topk_state *st, uint2 *tiles)
{
	__shared__ uint32_t s_gt, s_eq;
	uint32_t t = st->prefix, gt = 0, eq = 0;
	size_t base = (size_t)blockIdx.x * TILE;

	if (threadIdx.x == 0)
		s_gt = s_eq = 0;
	__syncthreads();
	for (size_t i = base + threadIdx.x; i < base + TILE && i < n;
	     i += blockDim.x) {
		uint32_t key = tp_km_topk_key(ef_x(g, r, (uint32_t)i));
		gt += key > t;
		eq += key == t;
	}
	atomicAdd(&s_gt, gt);
	atomicAdd(&s_eq, eq);
	__syncthreads();
	if (threadIdx.x == 0)
		tiles[blockIdx.x] = make_uint2(s_gt, s_eq);
}

/* Exclusive scan of the tile counts (one CTA); nnz from the totals. */
__global__ void k_topk_scan(uint2 *tiles, uint32_t ntiles, topk_state *st,
			    int exact, uint32_t cap, uint32_t *nnz)
{
	__shared__ uint2 part[THREADS];
	uint32_t per = (ntiles + THREADS - 1) / THREADS;
	uint32_t lo = threadIdx.x * per, hi = lo + per < ntiles ? lo + per
								 : ntiles;
	uint2 s = make_uint2(0, 0);

	for (uint32_t i = lo; i < hi; i++)
		s.x += tiles[i].x, s.y += tiles[i].y;
	part[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		uint2 run = make_uint2(0, 0);
		for (int i = 0; i < THREADS; i++) {
			uint2 v = part[i];
			part[i] = run;
			run.x += v.x, run.y += v.y;
		}
		uint32_t need = exact ? st->kk : UINT32_MAX;
		uint32_t tot = run.x + (run.y < need ? run.y : need);
		st->need_eq = need;
		*nnz = tot < cap ? tot : cap;
	}
	__syncthreads();
	s = part[threadIdx.x];
	for (uint32_t i = lo; i < hi; i++) {
		uint2 v = tiles[i];
		tiles[i] = s;
		s.x += v.x, s.y += v.y;
	}
}

/* A tile in rounds of THREADS consecutive elements (coalesced): ballots
 * give each element its rank in the warp, the warp totals its rank in the
 * round, and the running count carries over rounds and tiles, so every
 * element finds its place in index order. */
__global__ void k_topk_write(const float *g, float *r, uint32_t n,
			     const topk_state *st, const uint2 *tiles,
			     uint32_t cap, uint32_t *idx, float *val)
{
	__shared__ uint2 wsum[THREADS / 32];
	const unsigned lane = threadIdx.x & 31, warp = threadIdx.x / 32;
	const unsigned lt = (1u << lane) - 1;
	uint32_t t = st->prefix, need = st->need_eq;
	uint2 run = tiles[blockIdx.x];
	size_t base0 = (size_t)blockIdx.x * TILE;

	for (size_t base = base0; base < base0 + TILE && base < n;
	     base += THREADS) {
		size_t i = base + threadIdx.x;
		bool in = i < n;
		float x = in ? ef_x(g, r, (uint32_t)i) : 0.0f;
		uint32_t key = tp_km_topk_key(x);
		bool gt = in && key > t, eq = in && key == t;
		unsigned bg = __ballot_sync(0xffffffffu, gt);
		unsigned be = __ballot_sync(0xffffffffu, eq);
		if (lane == 0)
			wsum[warp] = make_uint2(__popc(bg), __popc(be));
		__syncthreads();
		uint2 before = run, tot = run;
		for (unsigned w = 0; w < THREADS / 32; w++) {
			uint2 v = wsum[w];
			if (w < warp)
				before.x += v.x, before.y += v.y;
			tot.x += v.x, tot.y += v.y;
		}
		before.x += __popc(bg & lt);
		before.y += __popc(be & lt);
		if (in) {
			bool take = gt || (eq && before.y < need);
			uint32_t pos =
			    before.x + (before.y < need ? before.y : need);
			if (take && pos < cap) {
				idx[pos] = (uint32_t)i;
				val[pos] = x;
				if (r)
					r[i] = 0.0f;
			} else if (r) {
				r[i] = x;
			}
		}
		run = tot;
		__syncthreads(); /* wsum is rewritten next round */
	}
}

extern "C" tp_err_t
tp_cuda_topk_compress(const float *g, float *residual, size_t count,
		      const tp_cuda_comp_opts_t *o, uint32_t *idx, float *val,
		      uint32_t *nnz_dev, void *ws, size_t ws_bytes,
		      void *stream, char *detail, size_t detail_len)
{
	cudaStream_t s = (cudaStream_t)stream;
	topk_state *st = (topk_state *)ws;
	uint2 *tiles = (uint2 *)(st + 1);
	unsigned grid;
	tp_err_t err;

	if (!o || !nnz_dev || count > UINT32_MAX || o->topk_frac <= 0.0 ||
	    (count && (!g || !idx || !val || !ws)) ||
	    ws_bytes < tp_cuda_topk_workspace_size(count, o))
		return TP_ERR_INVAL;
	if (count == 0) {
		CU_CHECK(cudaMemsetAsync(nnz_dev, 0, sizeof(*nnz_dev), s));
		return TP_OK;
	}
	int exact = o->topk_mode == TP_CUDA_TOPK_EXACT;
	size_t m = exact || o->topk_samples >= count ? count : o->topk_samples;
	if (m == 0)
		return TP_ERR_INVAL;
	size_t k = m == count ? tp_cuda_topk_k(count, o)
			      : (size_t)tp_km_topk_k(m, o->topk_frac);
	uint32_t cap = (uint32_t)tp_cuda_topk_capacity(count, o);
	uint32_t ntiles = (uint32_t)((count + TILE - 1) / TILE);

	err = grid_for(m, &grid, detail, detail_len);
	if (err)
		return err;
	k_topk_init<<<1, THREADS, 0, s>>>(st, (uint32_t)k);
	for (int p = 0; p < TP_KM_RADIX_PASSES; p++) {
		k_topk_hist<<<grid, THREADS, 0, s>>>(g, residual, (uint32_t)count,
						     (uint32_t)m, p, st);
		k_topk_pick<<<1, 1, 0, s>>>(p, st);
	}
	k_topk_count<<<ntiles, THREADS, 0, s>>>(g, residual, (uint32_t)count,
						st, tiles);
	k_topk_scan<<<1, THREADS, 0, s>>>(tiles, ntiles, st, exact, cap,
					  nnz_dev);
	k_topk_write<<<ntiles, THREADS, 0, s>>>(g, residual, (uint32_t)count,
						st, tiles, cap, idx, val);
	CU_CHECK(cudaGetLastError());
	return TP_OK;
}

__global__ void k_topk_scatter(const uint32_t *idx, const float *val,
			       size_t nnz, size_t count, float *out)
{
	for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < nnz;
	     j += (size_t)gridDim.x * blockDim.x)
		if (idx[j] < count) /* never a write past the buffer */
			out[idx[j]] = tp_km_add(out[idx[j]], val[j]);
}

extern "C" tp_err_t tp_cuda_topk_decompress_acc(const uint32_t *idx,
						const float *val, size_t nnz,
						size_t count, float *out,
						void *stream, char *detail,
						size_t detail_len)
{
	unsigned grid;
	tp_err_t err;

	/* the wire format checks the indices; the kernel skips one at or
	 * past count rather than write there (no error comes back from a
	 * kernel without a sync) */
	if (nnz && (!idx || !val || !out))
		return TP_ERR_INVAL;
	if (nnz == 0)
		return TP_OK;
	err = grid_for(nnz, &grid, detail, detail_len);
	if (err)
		return err;
	k_topk_scatter<<<grid, THREADS, 0, (cudaStream_t)stream>>>(
	    idx, val, nnz, count, out);
	CU_CHECK(cudaGetLastError());
	return TP_OK;
}
