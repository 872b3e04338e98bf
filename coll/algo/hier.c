/* hier.c - hierarchical all-reduce: the plan's hierarchical schedule.
 *
 * Notes: the levels are the schedule's phases as rings of ranks (comm.c
 * build_levels): the host's ranks, the ranks of our local rank on our
 * level-1 unit's members, and per channel our node holds the ring of its
 * holders across the units. Going down, the host and group levels
 * reduce-scatter the part the level above left to this rank (the group
 * level leaves each member its channels' sub-shards of the shard it got
 * from the host level); each channel's ring all-reduces its sub-shard, a
 * member holding several running them in channel order (every ring's
 * members run it at the same point of that order, so none waits in a
 * cycle); coming back, all-gathers in reverse order. The host level
 * runs through the host segment when there is one (xport/shm.c): a
 * one-host communicator's whole all-reduce, two waits per block (one
 * exchange, one wait, up to TP__COLL_SMALL bytes); on
 * several hosts its reduce-scatter and all-gather, one wait per round,
 * where the ring takes g - 1 dependent steps each.
 *
 * Pipeline: a call of more than c->seg_bytes is cut into nseg segments
 * of ceil(count / nseg) elements (the last shorter; nseg from
 * tp_sched_pipe_nseg: ceil(bytes / seg_bytes), at most
 * TP_SCHED_PIPE_SEGS_MAX, so a segment is at most seg_bytes or a
 * sixteenth of the call), each run through the whole schedule above. Every
 * segment's reduce-scatters run first, in order; each one done queues its
 * segment's exchange across the units, and the queue runs behind the foreground
 * (ring.c calls c->bg whenever its own phase cannot move; the exchange's ring
 * phases use the second lane of requests and slots). Then every segment's
 * all-gathers, each once its exchange is back. So the up-links carry segment i
 * while the host links carry the reduce-scatters after it and the all-gathers
 * before it (tp_sched.h prices the same overlap). One segment (a call of at
 * most seg_bytes, or seg_bytes 0) is the schedule in one piece. Every rank cuts
 * alike: init checks that all use the same seg_bytes.
 *
 * Progress: a rank's foreground never waits on another rank's queued
 * exchange, and every rank runs its queue whenever it waits: on the
 * transport, and in the host segment's waits (xport/shm.c serve_bg,
 * which also moves the transport's bytes between short sleeps). A rank waiting
 * for segment i's exchange runs its own queue, and the peers it waits for have
 * all passed i's reduce-scatters, so the exchanges complete in segment order.
 */
#include "config.h"

#include <string.h>

#include "coll_int.h"

/* The reduce-scatters (down) or all-gathers of buf[a, a + n) through the
 * host and group levels; src (NULL: in place) is the call's input,
 * offset like buf. */
static tp_err_t inner(tp_coll_comm_t *c, char *buf, const char *src, size_t a,
		      size_t n, tp_coll_dtype_t dt, tp_coll_op_t op, bool down)
{
	size_t dsz = tp_coll_dtype_size(dt);
	size_t off[TP__COLL_MAX_LEVELS + 1], cnt[TP__COLL_MAX_LEVELS + 1];
	size_t soff, scnt;
	int64_t t0 = tp__coll_now_ns();
	/* with a host segment, level 0 (the host's) runs through it */
	int seg = c->host && c->host_lv ? 1 : 0;
	char *b = buf + a * dsz;
	const char *s = src ? src + a * dsz : NULL;
	tp_err_t err = TP_OK;

	tp__coll_hier_spans(c, n, off, cnt, &soff, &scnt);
	if (down) {
		if (seg)
			err = tp__coll_host_reduce_scatter(c, b, s, n, dt, op);
		for (int l = seg; l < c->nlevels && !err; l++) {
			const tp__coll_ring_t *r = &c->level[l];
			/* shift n-1: member i ends with segment i. Only
			 * the first level reads src: the others work on
			 * its result. */
			err = tp__coll_ring_reduce_scatter(
			    c, r, b + off[l] * dsz, l == 0 ? s : NULL, cnt[l],
			    dt, op, r->n - 1);
		}
		if (!err && c->nlevels == 0 && s)
			memcpy(b, s, n * dsz);
	} else {
		for (int l = c->nlevels - 1; l >= seg && !err; l--) {
			const tp__coll_ring_t *r = &c->level[l];
			err = tp__coll_ring_allgather(c, r, b + off[l] * dsz,
						      cnt[l], dt, r->me);
		}
		if (!err && seg)
			err = tp__coll_host_allgather(c, b, n, dt);
	}
	tp__coll_lap(c, TP_COLL_PHASE_INNER, t0);
	return err;
}

void tp__coll_cross_span(const tp_coll_comm_t *c, size_t a, size_t n, int x,
			 size_t *at_p, size_t *cnt_p)
{
	size_t off[TP__COLL_MAX_LEVELS + 1], cnt[TP__COLL_MAX_LEVELS + 1];
	size_t soff, scnt, so;

	tp__coll_hier_spans(c, n, off, cnt, &soff, &scnt);
	tp__coll_seg(scnt, c->nchan, c->cross_chan[x], &so, cnt_p);
	*at_p = a + soff + so;
}

/* Starts the head segment's phase: cross ring q->x, q->ag. */
static tp_err_t xq_start(tp_coll_comm_t *c, tp__coll_xq_t *q)
{
	size_t at, n;

	tp__coll_cross_span(c, q->done * q->seg, tp__coll_xq_len(q, q->done),
			    q->x, &at, &n);
	return q->start(c, q, at, n);
}

void tp__coll_xq_begin(tp_coll_comm_t *c, tp__coll_xq_t *q)
{
	c->bg = tp__coll_xq_poll;
	c->bg_arg = q;
}

tp_err_t tp__coll_xq_poll(tp_coll_comm_t *c, void *arg)
{
	tp__coll_xq_t *q = arg;
	tp_err_t err;
	bool fin;

	while (q->active) {
		if ((err = q->pump(c, q, &fin)))
			return err;
		if (!fin)
			return TP_OK;
		q->ag = !q->ag;
		if (!q->ag && ++q->x == c->ncross) {
			q->x = 0;
			if (++q->done == q->queued) {
				q->active = false;
				break;
			}
		}
		if ((err = xq_start(c, q)))
			return err;
	}
	return TP_OK;
}

tp_err_t tp__coll_xq_push(tp_coll_comm_t *c, tp__coll_xq_t *q)
{
	if (q->queued++ > q->done)
		return TP_OK;
	q->active = true;
	q->x = 0;
	q->ag = false;
	return xq_start(c, q);
}

tp_err_t tp__coll_xq_wait(tp_coll_comm_t *c, tp__coll_xq_t *q, size_t i)
{
	int64_t t0 = tp__coll_now_ns();
	tp_err_t err = TP_OK;

	while (!err && q->done <= i && !(err = tp__coll_xq_poll(c, q)) &&
	       q->done <= i)
		err = c->xp->progress(c);
	tp__coll_lap(c, TP_COLL_PHASE_CROSS, t0);
	return err;
}

tp_err_t tp__coll_xq_end(tp_coll_comm_t *c, tp__coll_xq_t *q, tp_err_t err)
{
	c->bg = NULL;
	if (err && q->active)
		tp__coll_break(c);
	return err;
}

/* The dense exchange: each phase a ring phase on lane 1. */
typedef struct dense_xq {
	tp__coll_xq_t q; /* first: the queue's callbacks get &q */
	char *buf;
	tp_coll_dtype_t dt;
	tp_coll_op_t op;
	tp__coll_ring_phase_t ph;
} dense_xq_t;

static tp_err_t dense_start(tp_coll_comm_t *c, tp__coll_xq_t *q, size_t at,
			    size_t n)
{
	dense_xq_t *d = (dense_xq_t *)q;
	const tp__coll_ring_t *r = &c->cross[q->x];

	/* the reduce-scatter leaves segment me + 1 complete here; the
	 * all-gather starts by sending it (tp__coll_ring_allreduce) */
	tp__coll_ring_phase_init(c, &d->ph, r, q->ag,
				 d->buf + at * tp_coll_dtype_size(d->dt), NULL,
				 n, d->dt, d->op, q->ag ? r->me + 1 : r->me, 1);
	return TP_OK;
}

static tp_err_t dense_pump(tp_coll_comm_t *c, tp__coll_xq_t *q, bool *fin)
{
	dense_xq_t *d = (dense_xq_t *)q;

	*fin = tp__coll_ring_phase_done(&d->ph) ||
	       (tp__coll_ring_phase_pump(c, &d->ph) &&
		tp__coll_ring_phase_done(&d->ph));
	return TP_OK;
}

tp_err_t tp__coll_hier_allreduce(tp_coll_comm_t *c, char *buf, const char *src,
				 size_t count, tp_coll_dtype_t dt,
				 tp_coll_op_t op, int pipe)
{
	size_t dsz = tp_coll_dtype_size(dt);
	tp_err_t err = TP_OK;

	if (c->nlevels == 0 && c->ncross == 0) /* the schedule is the ring */
		return tp__coll_ring_allreduce(c, &c->ring, buf, src, count, dt,
					       op);
	/* One host: its reduce-scatter and all-gather through the segment,
	 * or one exchange there for a small call */
	if (c->host && c->nhosts == 1)
		return count * dsz <= TP__COLL_SMALL
			   ? tp__coll_host_allreduce(c, buf, src, count, dt, op)
			   : tp__coll_host_allreduce_large(c, buf, src, count,
							   dt, op);
	dense_xq_t d = {.q = {.count = count,
			      .seg = count,
			      .start = dense_start,
			      .pump = dense_pump},
			.buf = buf,
			.dt = dt,
			.op = op};
	tp__coll_xq_t *q = &d.q;
	/* segments only where there is an exchange across units; the same
	 * choice on every rank (the schedule's units, not this rank's
	 * levels or cross rings: a host alone in its unit with one rank has
	 * no level, and holds every channel) */
	if (pipe != 0 && c->nunits > 1) {
		size_t n = (size_t)tp_sched_pipe_nseg((double)(count * dsz),
						      (double)c->seg_bytes);
		q->seg = (count + n - 1) / n;
	}
	size_t nseg = (count + q->seg - 1) / q->seg;

	tp__coll_xq_begin(c, q);
	for (size_t i = 0; i < nseg && !err; i++)
		if (!(err = inner(c, buf, src, i * q->seg,
				  tp__coll_xq_len(q, i), dt, op, true)) &&
		    c->ncross)
			err = tp__coll_xq_push(c, q);
	for (size_t i = 0; i < nseg && !err; i++)
		if (!c->ncross || !(err = tp__coll_xq_wait(c, q, i)))
			err = inner(c, buf, NULL, i * q->seg,
				    tp__coll_xq_len(q, i), dt, op, false);
	return tp__coll_xq_end(c, q, err);
}
