/*
 * tp_cuda.h - reduction and gradient-compression kernels on CUDA device
 * memory, and the same operations on host memory (the CPU path).
 *
 * A plain-C host API over (pointer, count, dtype, op, stream): it knows
 * nothing of communicators or frameworks. The GPU functions (tp_cuda_*) and
 * the CPU functions (tp_cuda_cpu_*) compute with the same element-wise code
 * (tp_kmath.h) and give the same bits: reductions, int8 and 1-bit
 * compression and decompression, and top-k in exact mode (sampled mode too,
 * given the same options).
 *
 * Streams: `stream` is a cudaStream_t passed as void * (NULL: the legacy
 * default stream). GPU functions only enqueue work on it and return; results
 * are valid once the stream has reached that point. Buffers must stay valid
 * until then. They must be device memory (or managed memory) of the current
 * device. No function synchronises the device.
 *
 * Errors: functions return TP_OK or a negative tp_err_t. TP_ERR_UNSUPPORTED:
 * the library was built without nvcc (every GPU function below except
 * tp_cuda_ptr_is_device(), which then reports host memory; the sizing and
 * option helpers and the CPU path work in every build). TP_ERR_CUDA: the
 * CUDA runtime failed (no device, no driver, bad pointer, launch failure);
 * when `detail` is not NULL the CUDA error name and string are written there
 * ("cudaErrorNoDevice: no CUDA-capable device is detected"), NUL-terminated
 * and cut to detail_len. TP_ERR_INVAL: a bad argument (unknown dtype/op,
 * block size 0, ...). An asynchronous kernel fault shows on a later call or
 * stream synchronisation, as in CUDA. Nothing prints, exits or aborts.
 *
 * Thread safety: every function may be called from several threads at once
 * on different buffers; none keeps state between calls.
 *
 * Compressed formats (the same for the GPU and the CPU functions):
 *   int8:  q[count] (int8), scales[ceil(count / block)] (fp32);
 *          x[i] ~ q[i] x scales[i / block].
 *   1-bit: bits[ceil(count / 32)] (uint32; bit i % 32 of word i / 32 set
 *          when x[i] < 0, padding bits 0), scales[ceil(count / block)]
 *          (fp32, mean |x| of the block); x[i] ~ +-scales[i / block].
 *          block must be a multiple of 32.
 *   top-k: idx[nnz] (uint32, increasing), val[nnz] (fp32, exact values);
 *          x[idx[j]] = val[j], every other element 0.
 * A block holding NaN or Inf is sent with a NaN scale (int8, 1-bit) so the
 * receiver sees the overflow; top-k always sends NaNs. The wire format
 * (headers, versions, delta-encoded indices) is the caller's.
 *
 * Error feedback: `residual` (count fp32, owned by the caller, zero at the
 * start; NULL for none) is read and rewritten in place: the compressor
 * compresses x = g + residual and stores residual = x - decompress(x), so
 * decompress(compressed) + residual == g + old residual up to one fp32
 * rounding per element. For a NaN/Inf block the residual restarts at 0.
 */
#ifndef TP_CUDA_H
#define TP_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tp_cuda_dtype {
	TP_CUDA_FP32 = 0,
	TP_CUDA_FP16 = 1, /* IEEE binary16 */
	TP_CUDA_BF16 = 2, /* bfloat16 */
} tp_cuda_dtype_t;

/* Values match tp_kmath.h's TP_KM_SUM ... TP_KM_MIN. */
typedef enum tp_cuda_op {
	TP_CUDA_SUM = 0,
	TP_CUDA_AVG = 1, /* (a + b) / avg_n, fp32 arithmetic */
	TP_CUDA_MAX = 2, /* NaN propagates */
	TP_CUDA_MIN = 3, /* NaN propagates */
} tp_cuda_op_t;

typedef enum tp_cuda_round {
	TP_CUDA_ROUND_NEAREST = 0,    /* to nearest, ties to even */
	TP_CUDA_ROUND_STOCHASTIC = 1, /* floor(x + u), u from (seed, index) */
} tp_cuda_round_t;

typedef enum tp_cuda_topk_mode {
	TP_CUDA_TOPK_EXACT = 0,	  /* exactly k: the k largest |x|, ties to the
				   * lower index */
	TP_CUDA_TOPK_SAMPLED = 1, /* threshold = k-th largest of a sample;
				   * every |x| >= it, up to the capacity */
} tp_cuda_topk_mode_t;

/* Compression options; fill with tp_cuda_comp_opts_defaults(). */
typedef struct tp_cuda_comp_opts {
	size_t block;	       /* int8, 1-bit: elements per scale (256) */
	tp_cuda_round_t round; /* int8 (NEAREST) */
	uint64_t seed;	       /* stochastic rounding (0); vary per step */
	double topk_frac;      /* top-k: k = ceil(frac x count) (0.01) */
	tp_cuda_topk_mode_t topk_mode; /* (SAMPLED) */
	size_t topk_samples;	       /* sampled mode: sample size (65536) */
	double topk_slack; /* sampled mode: capacity = slack x k (2) */
} tp_cuda_comp_opts_t;

void tp_cuda_comp_opts_defaults(tp_cuda_comp_opts_t *o);

/* Sizes of the compressed arrays for count elements (host functions, no
 * CUDA needed, valid in every build). */
size_t tp_cuda_nblocks(size_t count, const tp_cuda_comp_opts_t *o);
size_t tp_cuda_1bit_words(size_t count);
/* k for count elements, and the most entries top-k may write (k in exact
 * mode, ceil(slack x k) capped at count in sampled mode). */
size_t tp_cuda_topk_k(size_t count, const tp_cuda_comp_opts_t *o);
size_t tp_cuda_topk_capacity(size_t count, const tp_cuda_comp_opts_t *o);

/* ---- GPU ------------------------------------------------------------------
 */

/* Number of usable devices in *ndev_p (0 with TP_ERR_CUDA when the runtime
 * finds no device or driver). */
tp_err_t tp_cuda_device_count(int *ndev_p, char *detail, size_t detail_len);

/* Whether p is device (or managed) memory: cudaPointerGetAttributes. Host
 * memory, registered or not, is not. Without a driver or device every
 * pointer is host memory (TP_OK, false). */
tp_err_t tp_cuda_ptr_is_device(const void *p, bool *is_dev_p, char *detail,
			       size_t detail_len);

/* Copy bytes between any two of host, device and managed memory
 * (cudaMemcpyDefault), ordered on the stream; pageable host memory makes
 * it return only once the host side has been read or written. */
tp_err_t tp_cuda_memcpy(void *dst, const void *src, size_t bytes, void *stream,
			char *detail, size_t detail_len);

/* Wait until the stream has run everything enqueued so far. */
tp_err_t tp_cuda_stream_sync(void *stream, char *detail, size_t detail_len);

/* dst[i] = a[i] op b[i] for count elements of dtype, computed in fp32 and
 * rounded once to dtype. dst may equal a or b (in place); otherwise the
 * arrays must not overlap. avg_n (> 0) is the AVG divisor, ignored by the
 * other ops. */
tp_err_t tp_cuda_reduce(void *dst, const void *a, const void *b, size_t count,
			tp_cuda_dtype_t dtype, tp_cuda_op_t op, int avg_n,
			void *stream, char *detail, size_t detail_len);

/* buf[i] /= n (n > 0), in fp32, rounded to dtype. */
tp_err_t tp_cuda_scale(void *buf, size_t count, tp_cuda_dtype_t dtype, int n,
		       void *stream, char *detail, size_t detail_len);

/* Fused error-feedback compressors: read g and residual once, write the
 * compressed form and the new residual once. g: count fp32 (device).
 * Output arrays sized by the helpers above (device). */
tp_err_t tp_cuda_int8_compress(const float *g, float *residual, size_t count,
			       const tp_cuda_comp_opts_t *o, int8_t *q,
			       float *scales, void *stream, char *detail,
			       size_t detail_len);
/* out[i] += dequantised x[i] (fp32, device). */
tp_err_t tp_cuda_int8_decompress_acc(const int8_t *q, const float *scales,
				     size_t count, const tp_cuda_comp_opts_t *o,
				     float *out, void *stream, char *detail,
				     size_t detail_len);
tp_err_t tp_cuda_1bit_compress(const float *g, float *residual, size_t count,
			       const tp_cuda_comp_opts_t *o, uint32_t *bits,
			       float *scales, void *stream, char *detail,
			       size_t detail_len);
tp_err_t tp_cuda_1bit_decompress_acc(const uint32_t *bits, const float *scales,
				     size_t count, const tp_cuda_comp_opts_t *o,
				     float *out, void *stream, char *detail,
				     size_t detail_len);

/* Device scratch for tp_cuda_topk_compress (bytes, valid in every build). */
size_t tp_cuda_topk_workspace_size(size_t count, const tp_cuda_comp_opts_t *o);
/* Top-k with error feedback: writes idx[nnz], val[nnz] and *nnz_dev (one
 * uint32 in device memory, nnz <= capacity); selected entries leave 0 in the
 * residual, the others leave x. ws: workspace_size bytes of device memory.
 * count must be below 2^32. */
tp_err_t tp_cuda_topk_compress(const float *g, float *residual, size_t count,
			       const tp_cuda_comp_opts_t *o, uint32_t *idx,
			       float *val, uint32_t *nnz_dev, void *ws,
			       size_t ws_bytes, void *stream, char *detail,
			       size_t detail_len);
/* out[idx[j]] += val[j] for j < nnz (host value; indices must be distinct;
 * one at or past count is skipped, where the CPU path refuses it). */
tp_err_t tp_cuda_topk_decompress_acc(const uint32_t *idx, const float *val,
				     size_t nnz, size_t count, float *out,
				     void *stream, char *detail,
				     size_t detail_len);

/* ---- CPU path (host memory, every build) -----------------------------------
 * The same operations and the same bits as the GPU functions above, on host
 * memory, synchronous, single-threaded. They return TP_ERR_INVAL for bad
 * arguments and TP_ERR_NOMEM (top-k scratch) only. */
tp_err_t tp_cuda_cpu_reduce(void *dst, const void *a, const void *b,
			    size_t count, tp_cuda_dtype_t dtype,
			    tp_cuda_op_t op, int avg_n);
tp_err_t tp_cuda_cpu_scale(void *buf, size_t count, tp_cuda_dtype_t dtype,
			   int n);
tp_err_t tp_cuda_cpu_int8_compress(const float *g, float *residual,
				   size_t count, const tp_cuda_comp_opts_t *o,
				   int8_t *q, float *scales);
tp_err_t tp_cuda_cpu_int8_decompress_acc(const int8_t *q, const float *scales,
					 size_t count,
					 const tp_cuda_comp_opts_t *o,
					 float *out);
tp_err_t tp_cuda_cpu_1bit_compress(const float *g, float *residual,
				   size_t count, const tp_cuda_comp_opts_t *o,
				   uint32_t *bits, float *scales);
tp_err_t tp_cuda_cpu_1bit_decompress_acc(const uint32_t *bits,
					 const float *scales, size_t count,
					 const tp_cuda_comp_opts_t *o,
					 float *out);
/* *nnz_p: entries written (<= tp_cuda_topk_capacity()). */
tp_err_t tp_cuda_cpu_topk_compress(const float *g, float *residual,
				   size_t count, const tp_cuda_comp_opts_t *o,
				   uint32_t *idx, float *val, size_t *nnz_p);
tp_err_t tp_cuda_cpu_topk_decompress_acc(const uint32_t *idx, const float *val,
					 size_t nnz, size_t count, float *out);

#ifdef __cplusplus
}
#endif

#endif /* TP_CUDA_H */
