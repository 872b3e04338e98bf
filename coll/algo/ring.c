/* ring.c - ring reduce-scatter, all-gather, all-reduce and the pipelined
 * chain broadcast.
 *
 * Notes: a ring phase of n members runs n-1 steps; each step moves one
 * segment (count / n elements) cut into chunks. The unit of work is
 * (step, chunk) in that order; the chunk a rank reduces at step s is the
 * one it sends at step s+1, so it goes out as soon as it is reduced, not
 * when the whole step ends: that overlaps reduction with the transfer.
 * At most TP__COLL_WINDOW receives and sends are in flight; the
 * reduce-scatter's receives reduce as they arrive (out of the shared
 * memory ring, or from a slot after TCP), all-gather and broadcast
 * receive in place. Every segment uses the same number of
 * chunks (empty ones complete at once), so both ends agree on the units
 * without exchanging sizes. */
#include "config.h"

#include <string.h>

#include "coll_int.h"

#define W TP__COLL_WINDOW

/* The work the caller runs behind this phase (c->bg), if any. */
static tp_err_t background(tp_coll_comm_t *c)
{
	return c->bg ? c->bg(c, c->bg_arg) : TP_OK;
}

static int mod(int a, int n)
{
	a %= n;
	return a < 0 ? a + n : a;
}

/* Chunk ch of segment seg: byte offset and length in buf. */
static void unit(const tp__coll_ring_t *r, size_t count, int seg, size_t ch,
		 size_t ce, size_t dsz, size_t *off_p, size_t *len_p)
{
	size_t off, cnt, lo = ch * ce;

	tp__coll_ring_seg(r, count, seg, &off, &cnt);
	*off_p = (off + lo) * dsz;
	*len_p = lo < cnt ? ((cnt - lo < ce ? cnt - lo : ce) * dsz) : 0;
}

static size_t chunk_elems(const tp_coll_comm_t *c, size_t dsz)
{
	size_t ce = c->chunk_bytes / dsz;
	return ce ? ce : 1;
}

tp_err_t tp__coll_ring_reduce_scatter(tp_coll_comm_t *c,
				      const tp__coll_ring_t *r, char *buf,
				      const char *src, size_t count,
				      tp_coll_dtype_t dt, tp_coll_op_t op,
				      int shift)
{
	const tp__coll_xport_ops_t *xp = c->xp;
	int n = r->n, me = r->me;
	if (n <= 1 || count == 0)
		return TP_OK;
	size_t dsz = tp_coll_dtype_size(dt), ce = chunk_elems(c, dsz);
	size_t maxseg = tp__coll_ring_maxseg(r, count);
	size_t nch = (maxseg + ce - 1) / ce;
	size_t nunits = (size_t)(n - 1) * nch;
	int prev = (int)r->members[mod(me - 1, n)];
	int next = (int)r->members[mod(me + 1, n)];
	tp__coll_req_t *rq = c->reqs, *sq = c->reqs + W;
	size_t rpost = 0, rdone = 0, spost = 0, sdone = 0;

	while (rdone < nunits || sdone < nunits) {
		bool moved = false;

		while (rpost < nunits && rpost - rdone < W) {
			int s = (int)(rpost / nch);
			size_t off, len;
			unit(r, count, mod(me - s - 1 + shift, n), rpost % nch,
			     ce, dsz, &off, &len);
			/* Out of place: this chunk's input goes where the
			 * peer's copy is reduced into, just before (hot). */
			if (src && len)
				memcpy(buf + off, src + off, len);
			xp->irecv_reduce(c, prev, buf + off,
					 c->slots +
					     (rpost % W) * c->chunk_bytes,
					 len, dt, op, &rq[rpost % W]);
			rpost++;
			moved = true;
		}
		while (rdone < rpost && rq[rdone % W].done) {
			rdone++;
			moved = true;
		}
		/* Unit u of step s > 0 sends what unit u - nch reduced. */
		while (spost < nunits && spost - sdone < W &&
		       (spost < nch || spost - nch < rdone)) {
			int s = (int)(spost / nch);
			size_t off, len;
			unit(r, count, mod(me - s + shift, n), spost % nch, ce,
			     dsz, &off, &len);
			/* Step 0 sends the untouched input. */
			xp->isend(c, next, (src && s == 0 ? src : buf) + off,
				  len, &sq[spost % W]);
			spost++;
			moved = true;
		}
		while (sdone < spost && sq[sdone % W].done) {
			sdone++;
			moved = true;
		}
		if (!moved) {
			tp_err_t err = background(c);
			if (err || (err = xp->progress(c)))
				return err;
		}
	}
	return TP_OK;
}

tp_err_t tp__coll_ring_allgather(tp_coll_comm_t *c, const tp__coll_ring_t *r,
				 char *buf, size_t count, tp_coll_dtype_t dt,
				 int own)
{
	const tp__coll_xport_ops_t *xp = c->xp;
	int n = r->n, me = r->me;
	if (n <= 1 || count == 0)
		return TP_OK;
	size_t dsz = tp_coll_dtype_size(dt), ce = chunk_elems(c, dsz);
	size_t maxseg = tp__coll_ring_maxseg(r, count);
	size_t nch = (maxseg + ce - 1) / ce;
	size_t nunits = (size_t)(n - 1) * nch;
	int prev = (int)r->members[mod(me - 1, n)];
	int next = (int)r->members[mod(me + 1, n)];
	tp__coll_req_t *rq = c->reqs, *sq = c->reqs + W;
	size_t rpost = 0, rdone = 0, spost = 0, sdone = 0;

	while (rdone < nunits || sdone < nunits) {
		bool moved = false;

		while (rpost < nunits && rpost - rdone < W) {
			int s = (int)(rpost / nch);
			size_t off, len;
			unit(r, count, mod(own - s - 1, n), rpost % nch, ce,
			     dsz, &off, &len);
			xp->irecv(c, prev, buf + off, len, &rq[rpost % W]);
			rpost++;
			moved = true;
		}
		while (rdone < rpost && rq[rdone % W].done) {
			rdone++;
			moved = true;
		}
		while (spost < nunits && spost - sdone < W &&
		       (spost < nch || spost - nch < rdone)) {
			int s = (int)(spost / nch);
			size_t off, len;
			unit(r, count, mod(own - s, n), spost % nch, ce, dsz,
			     &off, &len);
			xp->isend(c, next, buf + off, len, &sq[spost % W]);
			spost++;
			moved = true;
		}
		while (sdone < spost && sq[sdone % W].done) {
			sdone++;
			moved = true;
		}
		if (!moved) {
			tp_err_t err = background(c);
			if (err || (err = xp->progress(c)))
				return err;
		}
	}
	return TP_OK;
}

tp_err_t tp__coll_ring_allreduce(tp_coll_comm_t *c, const tp__coll_ring_t *r,
				 char *buf, const char *src, size_t count,
				 tp_coll_dtype_t dt, tp_coll_op_t op)
{
	/* Reduce-scatter leaves segment me+1 complete here; the all-gather
	 * starts by sending it. All reduce-scatter sends have completed when
	 * it returns, so the all-gather may overwrite their source. */
	tp_err_t err;

	if (r->n <= 1) {
		if (src && count)
			memcpy(buf, src, count * tp_coll_dtype_size(dt));
		return TP_OK;
	}
	err = tp__coll_ring_reduce_scatter(c, r, buf, src, count, dt, op, 0);
	if (err)
		return err;
	return tp__coll_ring_allgather(c, r, buf, count, dt, r->me + 1);
}

tp_err_t tp__coll_ring_broadcast(tp_coll_comm_t *c, char *buf, size_t bytes,
				 int root)
{
	const tp__coll_xport_ops_t *xp = c->xp;
	const tp__coll_ring_t *r = &c->ring;
	int n = r->n, at = 0;
	if (n <= 1 || bytes == 0)
		return TP_OK;
	while (at < n - 1 && (int)r->members[at] != root)
		at++;
	int pos = mod(r->me - at, n);
	size_t cb = c->chunk_bytes, nch = (bytes + cb - 1) / cb;
	int prev = (int)r->members[mod(r->me - 1, n)];
	int next = (int)r->members[mod(r->me + 1, n)];
	bool recv = pos > 0, send = pos < n - 1;
	tp__coll_req_t *rq = c->reqs, *sq = c->reqs + W;
	size_t rpost = 0, rdone = recv ? 0 : nch, spost = 0;
	size_t sdone = send ? 0 : nch;

	while (rdone < nch || sdone < nch) {
		bool moved = false;

		while (recv && rpost < nch && rpost - rdone < W) {
			size_t off = rpost * cb;
			size_t len = bytes - off < cb ? bytes - off : cb;
			xp->irecv(c, prev, buf + off, len, &rq[rpost % W]);
			rpost++;
			moved = true;
		}
		while (recv && rdone < rpost && rq[rdone % W].done) {
			rdone++;
			moved = true;
		}
		while (send && spost < nch && spost - sdone < W &&
		       (!recv || spost < rdone)) {
			size_t off = spost * cb;
			size_t len = bytes - off < cb ? bytes - off : cb;
			xp->isend(c, next, buf + off, len, &sq[spost % W]);
			spost++;
			moved = true;
		}
		while (send && sdone < spost && sq[sdone % W].done) {
			sdone++;
			moved = true;
		}
		if (!moved) {
			tp_err_t err = background(c);
			if (err || (err = xp->progress(c)))
				return err;
		}
	}
	return TP_OK;
}
