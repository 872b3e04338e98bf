/* comp.c - compressed ring all-reduce: int8 / 1-bit reduce-scatter and
 * all-gather of quantised segments, top-k all-gather.
 *
 * Notes: a hop is one message each way, whole segments at a time (a
 * compressed segment is 4-28x smaller than the dense chunks the dense
 * ring pipelines, and a quantised segment cannot be reduced before all of
 * its block has arrived anyway). Messages are checked by comp_wire.c
 * before anything is added; a bad one breaks the communicator, since the
 * byte stream it came on can no longer be trusted. In the reduce-scatter
 * this rank compresses each position at most once per call (the segment
 * it sends at one step), so one residual per stage covers every hop; the
 * all-gather's owner compresses its reduced segment with the second and
 * decodes its own message, so every rank holds the same bits. Top-k sums
 * the members' messages in member order on every rank, for the same
 * reason. */
#include "config.h"

#include <string.h>

#include "coll_int.h"
#include "comp_wire.h"
#include "tp_kmath.h"

static int mod(int a, int n)
{
	a %= n;
	return a < 0 ? a + n : a;
}

static float *res_at(const tp__coll_comp_call_t *k, int st, int which,
		     size_t at)
{
	return k->res[st][which] ? k->res[st][which] + at : NULL;
}

/* Stage st's message buffer, at least bytes. */
static tp_err_t scratch(tp_coll_comm_t *c, int st, size_t bytes, char **p)
{
	if (bytes > c->cmsg_cap[st]) {
		char *n = tp_malloc(bytes);
		if (!n)
			return tp__coll_fail(c, TP_ERR_NOMEM,
					     "%zu bytes of message buffer",
					     bytes);
		tp_free(c->cmsg[st]);
		c->cmsg[st] = n;
		c->cmsg_cap[st] = bytes;
	}
	*p = c->cmsg[st];
	return TP_OK;
}

static tp_err_t wait_reqs(tp_coll_comm_t *c, tp__coll_req_t *a,
			  tp__coll_req_t *b)
{
	while (!a->done || !b->done) {
		tp_err_t err = c->xp->progress(c);
		if (err)
			return err;
	}
	return TP_OK;
}

/* A wire error from peer: name it and break the communicator. */
/* A refused message: made by rank `from`, received from `peer` (which
 * forwarded it when they differ; from -1: peer's own). */
static tp_err_t wire_fail(tp_coll_comm_t *c, int peer, int from, tp_err_t err,
			  const char *why)
{
	char name[96], via[96];

	if (from < 0 || from == peer)
		tp__coll_fail(c, err, "%s from %s", why,
			      tp__coll_peer_name(c, peer, name, sizeof(name)));
	else
		tp__coll_fail(c, err, "%s from %s, forwarded by %s", why,
			      tp__coll_peer_name(c, from, name, sizeof(name)),
			      tp__coll_peer_name(c, peer, via, sizeof(via)));
	tp__coll_break(c);
	return err;
}

static tp_err_t decode(tp_coll_comm_t *c, int peer, int from, const char *m,
		       size_t len, const tp__coll_comp_call_t *k, size_t count,
		       float *out, int overwrite)
{
	char why[128];
	int64_t t0 = tp__coll_now_ns();
	tp_err_t err = tp__comp_decode(m, len, k->kind, count, &k->o, k->seg,
				       out, overwrite, why, sizeof(why));

	tp__coll_lap(c, TP_COLL_PHASE_DECOMPRESS, t0);
	return err ? wire_fail(c, peer, from, err, why) : TP_OK;
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* This hop's options: the call's, with noise of its own. who: the rank
 * (reduce-scatter, top-k), or the ring position in the all-gather, whose
 * owners in every group quantise the same values and must draw the same
 * noise to keep the groups' results equal; at: the pipeline segment's
 * offset (every member of a ring works on the same one), so segments do
 * not repeat each other's noise. */
static tp_cuda_comp_opts_t hop_opts(const tp__coll_comp_call_t *k, int who,
				    int st, int step, size_t at)
{
	tp_cuda_comp_opts_t o = k->o;

	o.seed = tp_km_seed(tp_km_seed(tp_km_seed(o.seed, (uint64_t)who),
				       (uint64_t)(st * 1024 + step)),
			    (uint64_t)at);
	return o;
}

/* Fills h (tp__coll_hop_t): nslots of cap bytes (a message of `most`
 * elements), then `extra` bytes. */
static tp_err_t hop_setup(tp_coll_comm_t *c, const tp__coll_ring_t *r,
			  const tp__coll_comp_call_t *k, int st, size_t most,
			  int nslots, size_t extra, tp__coll_hop_t *h)
{
	h->prev = (int)r->members[mod(r->me - 1, r->n)];
	h->next = (int)r->members[mod(r->me + 1, r->n)];
	h->from = -1;
	h->cap = align8(tp__comp_max_bytes(k->kind, most, &k->o));
	return scratch(c, st, (size_t)nslots * h->cap + extra, &h->m);
}

static tp_err_t encode(tp_coll_comm_t *c, const tp__coll_comp_call_t *k,
		       const tp_cuda_comp_opts_t *o, float *x, float *res,
		       size_t count, char *m, size_t cap, size_t *len_p)
{
	int64_t t0 = tp__coll_now_ns();
	tp_err_t err =
	    tp__comp_encode(k->kind, x, res, count, o, k->seg, m, cap, len_p);

	tp__coll_lap(c, TP_COLL_PHASE_COMPRESS, t0);
	return err ? tp__coll_fail(c, err, "compress: %s", tp_strerror(err))
		   : TP_OK;
}

/* The header of a received message is in slot: check it against what
 * this rank expects (a peer that disagrees - another compressor, block,
 * segment or count - is caught here, before its payload's length matters) and
 * post the receive of the payload it announces. */
static tp_err_t recv_payload(tp_coll_comm_t *c, int peer, int from, char *slot,
			     size_t cap, const tp__coll_comp_call_t *k,
			     size_t count, tp__coll_req_t *rq, size_t *len_p)
{
	tp__comp_hdr_t h;
	char why[128];
	tp_err_t err;

	err = tp__comp_check_header(slot, TP__COMP_HDR, k->kind, count, &k->o,
				    k->seg, &h, why, sizeof(why));
	if (err)
		return wire_fail(c, peer, from, err, why);
	if (TP__COMP_HDR + h.payload > cap)
		return wire_fail(c, peer, from, TP_ERR_PARSE,
				 "compressed message too long");
	c->xp->irecv(c, peer, slot + TP__COMP_HDR, (size_t)h.payload, rq);
	*len_p = TP__COMP_HDR + (size_t)h.payload;
	return TP_OK;
}

tp_err_t tp__coll_comp_agree(tp_coll_comm_t *c, const tp__coll_ring_t *r,
			     const tp__coll_comp_call_t *k, size_t count)
{
	uint64_t mine[TP__COMP_HDR / 8], theirs[2][TP__COMP_HDR / 8];
	tp__coll_req_t sq[2], rq[2];
	int peer[2], np = r->n == 2 ? 1 : 2;
	char why[128];
	tp_err_t err;

	if (r->n <= 1)
		return TP_OK;
	peer[0] = (int)r->members[mod(r->me - 1, r->n)];
	peer[1] = (int)r->members[mod(r->me + 1, r->n)];
	tp__comp_encode_call(k->kind, count, &k->o, k->seg, mine);
	for (int i = 0; i < np; i++) {
		c->xp->irecv(c, peer[i], theirs[i], TP__COMP_HDR, &rq[i]);
		c->xp->isend(c, peer[1 - i], mine, TP__COMP_HDR, &sq[i]);
	}
	for (int i = 0; i < np; i++)
		if ((err = wait_reqs(c, &sq[i], &rq[i])))
			return err;
	for (int i = 0; i < np; i++) {
		err = tp__comp_check_call(theirs[i], k->kind, count, &k->o,
					  k->seg, why, sizeof(why));
		if (err)
			return wire_fail(c, peer[i], -1, err, why);
	}
	return TP_OK;
}

/* Send the len-byte message at slot to peer as the receiver reads it: the
 * header, then the payload, two requests (hq, pq). The transport cuts
 * each request over a peer's sockets by its own length
 * (TOPOPLACE_COLL_SOCKETS), so one request for both would stripe
 * otherwise than the receiver's two and the header read would hold
 * payload bytes. */
static void send_msg(tp_coll_comm_t *c, int peer, const char *slot, size_t len,
		     tp__coll_req_t *hq, tp__coll_req_t *pq)
{
	c->xp->isend(c, peer, slot, TP__COMP_HDR, hq);
	c->xp->isend(c, peer, slot + TP__COMP_HDR, len - TP__COMP_HDR, pq);
}

/* Receive one message from peer into slot (cap bytes); waits for the
 * sends (send_msg's header and payload requests) too. */
static tp_err_t recv_msg(tp_coll_comm_t *c, int peer, int from, char *slot,
			 size_t cap, const tp__coll_comp_call_t *k,
			 size_t count, tp__coll_req_t *shdr,
			 tp__coll_req_t *spay, size_t *len_p)
{
	tp_err_t err;

	c->xp->irecv(c, peer, slot, TP__COMP_HDR, &c->reqs[1]);
	while (!c->reqs[1].done)
		if ((err = c->xp->progress(c)))
			return err;
	err = recv_payload(c, peer, from, slot, cap, k, count, &c->reqs[1],
			   len_p);
	if (err || (err = wait_reqs(c, shdr, &c->reqs[1])) ||
	    (err = wait_reqs(c, spay, spay)))
		return err;
	return TP_OK;
}

/* One ring step: send slen bytes of sslot to next while receiving prev's
 * message for rcount elements into rslot (its length in *rlen_p); then,
 * out non-NULL, decode it into out (overwrite as decode's). */
static tp_err_t hop_step(tp_coll_comm_t *c, const tp__coll_hop_t *h,
			 const tp__coll_comp_call_t *k, const char *sslot,
			 size_t slen, char *rslot, size_t rcount,
			 size_t *rlen_p, float *out, int overwrite)
{
	tp_err_t err;

	send_msg(c, h->next, sslot, slen, &c->reqs[0], &c->reqs[2]);
	err = recv_msg(c, h->prev, h->from, rslot, h->cap, k, rcount,
		       &c->reqs[0], &c->reqs[2], rlen_p);
	if (err || !out)
		return err;
	return decode(c, h->prev, h->from, rslot, *rlen_p, k, rcount, out,
		      overwrite);
}

/*
 * The int8 / 1-bit reduce-scatter and all-gather as step machines
 * (tp__coll_comp_op_t): start posts the first step, poll moves on when
 * the step's send and receive are done, so a caller can run them behind
 * other transfers (compress.c's pipeline). The reduce-scatter sends the
 * segment it reduced at the step before: slot 0 out, slot 1 in. The
 * all-gather's owner first encodes its reduced segment and decodes its
 * own message, then forwards what it received: slots alternate.
 */

static tp_err_t op_post(tp_coll_comm_t *c, tp__coll_comp_op_t *op)
{
	const tp__coll_ring_t *r = op->r;
	int n = r->n, me = r->me, s = op->step;
	size_t so, sc, ro, rc;
	char *sslot, *rslot;
	tp_err_t err;

	if (s == n - 1) {
		op->state = TP__OP_DONE;
		return TP_OK;
	}
	if (!op->ag) {
		int ss = mod(me - s - 1, n);
		float *res = res_at(op->k, op->st, 0, op->at);
		tp_cuda_comp_opts_t o =
		    hop_opts(op->k, c->rank, op->st, s, op->at);

		tp__coll_ring_seg(r, op->count, ss, &so, &sc);
		err = encode(c, op->k, &o, op->buf + so, res ? res + so : NULL,
			     sc, op->h.m, op->h.cap, &op->len[0]);
		if (err)
			return err;
		sslot = op->h.m;
		op->slen = op->len[0];
		rslot = op->h.m + op->h.cap;
		tp__coll_ring_seg(r, op->count, mod(me - s - 2, n), &ro, &rc);
		op->h.from = -1;
	} else {
		int a = s % 2;

		sslot = op->h.m + (size_t)a * op->h.cap;
		op->slen = op->len[a];
		rslot = op->h.m + (size_t)(1 - a) * op->h.cap;
		tp__coll_ring_seg(r, op->count, mod(me - s - 1, n), &ro, &rc);
		/* that segment's owner encoded it */
		op->h.from = (int)r->members[mod(me - s - 1, n)];
	}
	op->rslot = rslot;
	op->ro = ro;
	op->rc = rc;
	send_msg(c, op->h.next, sslot, op->slen, &op->sq, &op->pq);
	c->xp->irecv(c, op->h.prev, rslot, TP__COMP_HDR, &op->rq);
	op->state = TP__OP_HDR;
	return TP_OK;
}

tp_err_t tp__coll_comp_op_start(tp_coll_comm_t *c, tp__coll_comp_op_t *op,
				const tp__coll_ring_t *r,
				tp__coll_comp_call_t *k, int st, int ag,
				float *buf, size_t at, size_t count)
{
	size_t most = tp__coll_ring_maxseg(r, count);
	tp_err_t err;

	memset(op, 0, sizeof(*op));
	op->r = r;
	op->k = k;
	op->st = st;
	op->ag = ag;
	op->buf = buf;
	op->at = at;
	op->count = count;
	op->state = TP__OP_DONE;
	if (r->n <= 1 || count == 0)
		return TP_OK;
	if ((err = hop_setup(c, r, k, st, most, 2, 0, &op->h)))
		return err;
	if (ag) {
		size_t mo, mc;
		float *res = res_at(k, st, 1, at);
		tp_cuda_comp_opts_t o = hop_opts(k, r->me, st, r->n, at);

		tp__coll_ring_seg(r, count, r->me, &mo, &mc);
		err = encode(c, k, &o, buf + mo, res ? res + mo : NULL, mc,
			     op->h.m, op->h.cap, &op->len[0]);
		if (err || (err = decode(c, c->rank, -1, op->h.m, op->len[0], k,
					 mc, buf + mo, 1)))
			return err;
	}
	return op_post(c, op);
}

tp_err_t tp__coll_comp_op_poll(tp_coll_comm_t *c, tp__coll_comp_op_t *op)
{
	tp_err_t err;

	if (op->state == TP__OP_HDR && op->rq.done) {
		err = recv_payload(c, op->h.prev, op->h.from, op->rslot,
				   op->h.cap, op->k, op->rc, &op->rq,
				   &op->len[op->ag ? 1 - op->step % 2 : 1]);
		if (err)
			return err;
		op->state = TP__OP_PAYLOAD;
	}
	if (op->state != TP__OP_PAYLOAD || !op->rq.done || !op->sq.done ||
	    !op->pq.done)
		return TP_OK;
	err = decode(c, op->h.prev, op->h.from, op->rslot,
		     op->len[op->ag ? 1 - op->step % 2 : 1], op->k, op->rc,
		     op->buf + op->ro, op->ag);
	if (err)
		return err;
	op->step++;
	return op_post(c, op);
}

/* Runs op to its end, and the caller's work behind it (c->bg). */
static tp_err_t op_run(tp_coll_comm_t *c, tp__coll_comp_op_t *op)
{
	tp_err_t err = TP_OK;

	while (!err && op->state != TP__OP_DONE &&
	       !(err = tp__coll_comp_op_poll(c, op)) &&
	       op->state != TP__OP_DONE) {
		if (c->bg && (err = c->bg(c, c->bg_arg)))
			break;
		err = c->xp->progress(c);
	}
	return err;
}

tp_err_t tp__coll_comp_ring_stage(tp_coll_comm_t *c, const tp__coll_ring_t *r,
				  tp__coll_comp_call_t *k, int st, int ag,
				  float *buf, size_t at, size_t count)
{
	tp__coll_comp_op_t op;
	tp_err_t err =
	    tp__coll_comp_op_start(c, &op, r, k, st, ag, buf, at, count);

	return err ? err : op_run(c, &op);
}

/* DGC's momentum correction: u = momentum u + x; returns u, what is
 * compressed. */
static float *velocity(const tp__coll_comp_call_t *k, float *u, const float *x,
		       size_t count)
{
	for (size_t i = 0; i < count; i++)
		u[i] = k->momentum * u[i] + x[i];
	return u;
}

/* DGC's momentum factor masking: the compressor cleared the residual of
 * the entries it sent; clear their velocity too. (An entry not sent
 * whose residual is exactly 0 was 0 in sum, so clearing it is harmless
 * in all but the exact cancellation of u and the old residual.) */
static void mask_sent(float *u, const float *res, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (res[i] == 0.0f)
			u[i] = 0.0f;
}

static tp_err_t topk_allreduce(tp_coll_comm_t *c, const tp__coll_ring_t *r,
			       tp__coll_comp_call_t *k, int st, float *buf,
			       size_t at, size_t count)
{
	int n = r->n, me = r->me;
	tp_cuda_comp_opts_t o = hop_opts(k, c->rank, st, 0, at);
	float *res = res_at(k, st, 0, at), *vel = k->vel ? k->vel + at : NULL;
	size_t *len;
	tp__coll_hop_t h = {0};
	tp_err_t err;

	if (count > UINT32_MAX)
		return tp__coll_fail(c, TP_ERR_RANGE,
				     "top-k of %zu values (2^32 at most)",
				     count);
	/* n message slots, then their lengths */
	err = hop_setup(c, r, k, st, count, n, (size_t)n * sizeof(size_t), &h);
	if (err)
		return err;
	len = (size_t *)(void *)(h.m + (size_t)n * h.cap);
	err = encode(c, k, &o, vel ? velocity(k, vel, buf, count) : buf, res,
		     count, h.m + (size_t)me * h.cap, h.cap, &len[me]);
	if (!err && vel && k->vel_mask)
		mask_sent(vel, res, count);
	for (int s = 0; s < n - 1 && !err; s++) {
		int ss = mod(me - s, n), rs = mod(me - s - 1, n);

		h.from = (int)r->members[rs];
		err = hop_step(c, &h, k, h.m + (size_t)ss * h.cap, len[ss],
			       h.m + (size_t)rs * h.cap, count, &len[rs], NULL,
			       0);
	}
	/* slot i holds member i's message, which prev forwarded: a refusal
	 * names the member that made it */
	for (int i = 0; i < n && !err; i++)
		err = decode(c, i == me ? c->rank : h.prev, (int)r->members[i],
			     h.m + (size_t)i * h.cap, len[i], k, count, buf,
			     i == 0);
	return err;
}

tp_err_t tp__coll_comp_ring_allreduce(tp_coll_comm_t *c,
				      const tp__coll_ring_t *r,
				      tp__coll_comp_call_t *k, int st,
				      float *buf, size_t at, size_t count)
{
	tp_err_t err;

	if (r->n <= 1 || count == 0)
		return TP_OK;
	if (k->kind == TP__COMP_TOPK)
		return topk_allreduce(c, r, k, st, buf, at, count);
	err = tp__coll_comp_ring_stage(c, r, k, st, 0, buf, at, count);
	if (err)
		return err;
	return tp__coll_comp_ring_stage(c, r, k, st, 1, buf, at, count);
}
