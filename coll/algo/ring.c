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

void tp__coll_ring_phase_init(tp_coll_comm_t *c, tp__coll_ring_phase_t *p,
			      const tp__coll_ring_t *r, bool ag, char *buf,
			      const char *src, size_t count, tp_coll_dtype_t dt,
			      tp_coll_op_t op, int base, int lane)
{
	int n = r->n;

	memset(p, 0, sizeof(*p));
	p->r = r;
	p->ag = ag;
	p->buf = buf;
	p->src = ag ? NULL : src;
	p->count = count;
	p->dt = dt;
	p->op = op;
	p->base = base;
	p->dsz = tp_coll_dtype_size(dt);
	p->ce = chunk_elems(c, p->dsz);
	if (n > 1 && count > 0) {
		size_t maxseg = tp__coll_ring_maxseg(r, count);
		p->nch = (maxseg + p->ce - 1) / p->ce;
		p->nunits = (size_t)(n - 1) * p->nch;
		p->prev = (int)r->members[mod(r->me - 1, n)];
		p->next = (int)r->members[mod(r->me + 1, n)];
	}
	p->rq = c->reqs + (size_t)lane * 2 * W;
	p->sq = p->rq + W;
	p->slots = c->slots + (size_t)lane * W * c->chunk_bytes;
}

bool tp__coll_ring_phase_pump(tp_coll_comm_t *c, tp__coll_ring_phase_t *p)
{
	const tp__coll_xport_ops_t *xp = c->xp;
	int n = p->r->n;
	size_t nch = p->nch, nunits = p->nunits;
	bool moved = false;

	while (p->rpost < nunits && p->rpost - p->rdone < W) {
		int s = (int)(p->rpost / nch);
		size_t off, len;
		unit(p->r, p->count, mod(p->base - s - 1, n), p->rpost % nch,
		     p->ce, p->dsz, &off, &len);
		tp__coll_req_t *q = &p->rq[p->rpost % W];
		if (p->ag) {
			/* all-gather: received in place */
			xp->irecv(c, p->prev, p->buf + off, len, q);
		} else {
			/* Out of place: this chunk's input goes where the
			 * peer's copy is reduced into, just before (hot). */
			if (p->src && len)
				memcpy(p->buf + off, p->src + off, len);
			xp->irecv_reduce(c, p->prev, p->buf + off,
					 p->slots +
					     (p->rpost % W) * c->chunk_bytes,
					 len, p->dt, p->op, q);
		}
		p->rpost++;
		moved = true;
	}
	while (p->rdone < p->rpost && p->rq[p->rdone % W].done) {
		p->rdone++;
		moved = true;
	}
	/* Unit u of step s > 0 sends what unit u - nch received. */
	while (p->spost < nunits && p->spost - p->sdone < W &&
	       (p->spost < nch || p->spost - nch < p->rdone)) {
		int s = (int)(p->spost / nch);
		size_t off, len;
		unit(p->r, p->count, mod(p->base - s, n), p->spost % nch, p->ce,
		     p->dsz, &off, &len);
		/* The reduce-scatter's step 0 sends the untouched input. */
		xp->isend(c, p->next,
			  (p->src && s == 0 ? p->src : p->buf) + off, len,
			  &p->sq[p->spost % W]);
		p->spost++;
		moved = true;
	}
	while (p->sdone < p->spost && p->sq[p->sdone % W].done) {
		p->sdone++;
		moved = true;
	}
	return moved;
}

/* Runs phase p to its end in the foreground (lane 0), the caller's work
 * behind it. */
static tp_err_t phase_run(tp_coll_comm_t *c, tp__coll_ring_phase_t *p)
{
	while (!tp__coll_ring_phase_done(p))
		if (!tp__coll_ring_phase_pump(c, p)) {
			tp_err_t err = background(c);
			if (err || (err = c->xp->progress(c)))
				return err;
		}
	return TP_OK;
}

tp_err_t tp__coll_ring_reduce_scatter(tp_coll_comm_t *c,
				      const tp__coll_ring_t *r, char *buf,
				      const char *src, size_t count,
				      tp_coll_dtype_t dt, tp_coll_op_t op,
				      int shift)
{
	tp__coll_ring_phase_t p;

	tp__coll_ring_phase_init(c, &p, r, false, buf, src, count, dt, op,
				 r->me + shift, 0);
	return phase_run(c, &p);
}

tp_err_t tp__coll_ring_allgather(tp_coll_comm_t *c, const tp__coll_ring_t *r,
				 char *buf, size_t count, tp_coll_dtype_t dt,
				 int own)
{
	tp__coll_ring_phase_t p;

	tp__coll_ring_phase_init(c, &p, r, true, buf, NULL, count, dt,
				 TP_COLL_SUM, own, 0);
	return phase_run(c, &p);
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
