/* Built without nvcc: the GPU entry points exist and say so. The CPU path
 * (kref.c) is complete in this build too. */
#include "config.h"

#include <stdio.h>

#include "tp_cuda.h"

static tp_err_t none(char *detail, size_t detail_len)
{
	if (detail && detail_len)
		snprintf(detail, detail_len, "built without CUDA (no nvcc)");
	return TP_ERR_UNSUPPORTED;
}

tp_err_t tp_cuda_device_count(int *ndev_p, char *detail, size_t detail_len)
{
	*ndev_p = 0;
	return none(detail, detail_len);
}

/* No CUDA, no device memory: every pointer is host memory. */
tp_err_t tp_cuda_ptr_is_device(const void *p, bool *is_dev_p, char *detail,
			       size_t detail_len)
{
	*is_dev_p = false;
	return TP_OK;
}

tp_err_t tp_cuda_memcpy(void *dst, const void *src, size_t bytes, void *stream,
			char *detail, size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_stream_sync(void *stream, char *detail, size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_reduce(void *dst, const void *a, const void *b, size_t count,
			tp_cuda_dtype_t dtype, tp_cuda_op_t op, int avg_n,
			void *stream, char *detail, size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_scale(void *buf, size_t count, tp_cuda_dtype_t dtype, int n,
		       void *stream, char *detail, size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_int8_compress(const float *g, float *residual, size_t count,
			       const tp_cuda_comp_opts_t *o, int8_t *q,
			       float *scales, void *stream, char *detail,
			       size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_int8_decompress_acc(const int8_t *q, const float *scales,
				     size_t count, const tp_cuda_comp_opts_t *o,
				     float *out, void *stream, char *detail,
				     size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_1bit_compress(const float *g, float *residual, size_t count,
			       const tp_cuda_comp_opts_t *o, uint32_t *bits,
			       float *scales, void *stream, char *detail,
			       size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_1bit_decompress_acc(const uint32_t *bits, const float *scales,
				     size_t count, const tp_cuda_comp_opts_t *o,
				     float *out, void *stream, char *detail,
				     size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_topk_compress(const float *g, float *residual, size_t count,
			       const tp_cuda_comp_opts_t *o, uint32_t *idx,
			       float *val, uint32_t *nnz_dev, void *ws,
			       size_t ws_bytes, void *stream, char *detail,
			       size_t detail_len)
{
	return none(detail, detail_len);
}

tp_err_t tp_cuda_topk_decompress_acc(const uint32_t *idx, const float *val,
				     size_t nnz, size_t count, float *out,
				     void *stream, char *detail,
				     size_t detail_len)
{
	return none(detail, detail_len);
}
