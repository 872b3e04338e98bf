/* device.c - collectives on CUDA device buffers, through tp_cuda.h.
 *
 * Notes: the transports move host memory (sockets, shared-memory rings), so
 * a device buffer is staged: copied to host scratch on the communicator's
 * stream (after whatever the caller queued there), run through the host
 * algorithms exactly as a host buffer is, copied back on the stream; AVG of
 * fp32/fp16/bf16 is divided on the device by the CUDA kernel (same bits as
 * the CPU's division: tp_kmath.h). The call returns once the stream has
 * finished, so the result is ready for the host and for later work on any
 * stream. Staging is pageable memory from tp_malloc: pinned buffers and a
 * transport that reads device memory (CUDA IPC between ranks of a host) are
 * what would make this path fast.
 *
 * Detection: cudaPointerGetAttributes. Without a driver or device every
 * buffer is host memory, so host callers never see CUDA. */
#include "config.h"

#include <string.h>

#include "coll_int.h"
#include "tp_cuda.h"

static tp_err_t cuda_fail(tp_coll_comm_t *c, tp_err_t err, const char *what,
			  const char *detail)
{
	return tp__coll_fail(c, err, "%s: %s", what, detail);
}

tp_err_t tp__coll_on_device(tp_coll_comm_t *c, const void *a, const void *b,
			    bool *dev_p)
{
	char d[256] = "";
	bool da = false, db = false;
	tp_err_t err = tp_cuda_ptr_is_device(a, &da, d, sizeof(d));

	if (!err && b != a)
		err = tp_cuda_ptr_is_device(b, &db, d, sizeof(d));
	if (err)
		return cuda_fail(c, err, "buffer lookup", d);
	if (da != db && a && b)
		return tp__coll_fail(
		    c, TP_ERR_INVAL,
		    "one buffer on the device, one on the host");
	*dev_p = da || db;
	return TP_OK;
}

/* Run a call on the host copies: the user's call was compared across the
 * ranks already (TOPOPLACE_COLL_CHECK) and its buffers looked up; the
 * inner one (AVG as SUM where the device divides) is neither. */
static void stage_on(tp_coll_comm_t *c)
{
	c->staged = true;
}

static tp_err_t stage_off(tp_coll_comm_t *c, tp_err_t err)
{
	c->staged = false;
	return err;
}

#define STAGED(c, call) (stage_on(c), stage_off((c), (call)))

/* Host copies of a device send and receive buffer. */
typedef struct stage {
	char *send, *recv;
} stage_t;

static tp_err_t stage_in(tp_coll_comm_t *c, stage_t *s, const void *sendbuf,
			 size_t send_bytes, size_t recv_bytes)
{
	char d[256] = "";
	tp_err_t err;

	s->send = tp_malloc(send_bytes ? send_bytes : 1);
	s->recv = tp_malloc(recv_bytes ? recv_bytes : 1);
	if (!s->send || !s->recv)
		return tp__coll_fail(c, TP_ERR_NOMEM, "staging %zu bytes",
				     send_bytes + recv_bytes);
	err = tp_cuda_memcpy(s->send, sendbuf, send_bytes, c->stream, d,
			     sizeof(d));
	if (!err)
		err = tp_cuda_stream_sync(c->stream, d, sizeof(d));
	return err ? cuda_fail(c, err, "copy to host", d) : TP_OK;
}

static tp_err_t stage_out(tp_coll_comm_t *c, stage_t *s, void *recvbuf,
			  size_t bytes, size_t count, tp_coll_dtype_t dt,
			  int avg_n)
{
	char d[256] = "";
	tp_err_t err =
	    tp_cuda_memcpy(recvbuf, s->recv, bytes, c->stream, d, sizeof(d));
	tp_cuda_dtype_t cdt = dt == TP_COLL_FP16   ? TP_CUDA_FP16
			      : dt == TP_COLL_BF16 ? TP_CUDA_BF16
						   : TP_CUDA_FP32;

	if (!err && avg_n > 1)
		err = tp_cuda_scale(recvbuf, count, cdt, avg_n, c->stream, d,
				    sizeof(d));
	if (!err)
		err = tp_cuda_stream_sync(c->stream, d, sizeof(d));
	return err ? cuda_fail(c, err, "copy to device", d) : TP_OK;
}

static void stage_free(stage_t *s)
{
	tp_free(s->send);
	tp_free(s->recv);
}

tp_err_t tp__coll_device_allreduce(tp_coll_comm_t *c, const void *sendbuf,
				   void *recvbuf, size_t count,
				   tp_coll_dtype_t dt, tp_coll_op_t op,
				   tp_coll_algo_t algo)
{
	size_t bytes = count * tp_coll_dtype_size(dt);
	/* the device divides what it can; the host the rest */
	bool dev_avg =
	    op == TP_COLL_AVG &&
	    (dt == TP_COLL_FP32 || dt == TP_COLL_FP16 || dt == TP_COLL_BF16);
	stage_t s = {0};
	tp_err_t err = stage_in(c, &s, sendbuf, bytes, bytes);

	if (!err)
		err = STAGED(c, tp_coll_allreduce(c, s.send, s.recv, count, dt,
						  dev_avg ? TP_COLL_SUM : op,
						  algo));
	if (!err)
		err = stage_out(c, &s, recvbuf, bytes, count, dt,
				dev_avg ? c->size : 1);
	stage_free(&s);
	return err;
}

tp_err_t tp__coll_device_reduce_scatter(tp_coll_comm_t *c, const void *sendbuf,
					void *recvbuf, size_t recvcount,
					tp_coll_dtype_t dt, tp_coll_op_t op)
{
	size_t bytes = recvcount * tp_coll_dtype_size(dt);
	bool dev_avg =
	    op == TP_COLL_AVG &&
	    (dt == TP_COLL_FP32 || dt == TP_COLL_FP16 || dt == TP_COLL_BF16);
	stage_t s = {0};
	tp_err_t err = stage_in(c, &s, sendbuf, bytes * (size_t)c->size, bytes);

	if (!err)
		err = STAGED(
		    c, tp_coll_reduce_scatter(c, s.send, s.recv, recvcount, dt,
					      dev_avg ? TP_COLL_SUM : op));
	if (!err)
		err = stage_out(c, &s, recvbuf, bytes, recvcount, dt,
				dev_avg ? c->size : 1);
	stage_free(&s);
	return err;
}

tp_err_t tp__coll_device_allgather(tp_coll_comm_t *c, const void *sendbuf,
				   void *recvbuf, size_t sendcount,
				   tp_coll_dtype_t dt)
{
	size_t bytes = sendcount * tp_coll_dtype_size(dt);
	stage_t s = {0};
	tp_err_t err = stage_in(c, &s, sendbuf, bytes, bytes * (size_t)c->size);

	if (!err)
		err = STAGED(
		    c, tp_coll_allgather(c, s.send, s.recv, sendcount, dt));
	if (!err)
		err = stage_out(c, &s, recvbuf, bytes * (size_t)c->size, 0, dt,
				1);
	stage_free(&s);
	return err;
}

tp_err_t tp__coll_device_broadcast(tp_coll_comm_t *c, void *buf, size_t count,
				   tp_coll_dtype_t dt, int root)
{
	size_t bytes = count * tp_coll_dtype_size(dt);
	stage_t s = {0};
	tp_err_t err = stage_in(c, &s, buf, bytes, 0);

	if (!err)
		err = STAGED(c, tp_coll_broadcast(c, s.send, count, dt, root));
	if (!err) {
		char *t = s.recv;
		s.recv = s.send; /* broadcast is in place */
		s.send = t;
		err = stage_out(c, &s, buf, bytes, 0, dt, 1);
	}
	stage_free(&s);
	return err;
}

tp_err_t tp_coll_comm_set_stream(tp_coll_comm_t *c, void *stream)
{
	char d[256] = "";
	int ndev = 0;
	tp_err_t err;

	if (!c)
		return TP_ERR_INVAL;
	c->call = "set_stream"; /* its failure's detail names it */
	c->detail[0] = '\0';
	if (stream) {
		err = tp_cuda_device_count(&ndev, d, sizeof(d));
		if (err)
			return tp__coll_fail(c, err, "%s", d);
		if (ndev == 0)
			return tp__coll_fail(c, TP_ERR_CUDA, "no CUDA device");
	}
	c->stream = stream;
	return TP_OK;
}
