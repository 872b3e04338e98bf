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

/* The segments' exchanges across the units: a queue run behind the
 * foreground. `queued` segments have finished their reduce-scatters,
 * `done` are back; the head runs cross ring x's reduce-scatter, then its
 * all-gather, for x in channel order. */
typedef struct xq {
	char *buf;
	size_t count, seg, queued, done;
	tp_coll_dtype_t dt;
	tp_coll_op_t op;
	int x;
	bool active;
	tp__coll_ring_phase_t ph;
} xq_t;

static size_t seg_len(const xq_t *q, size_t i)
{
	return q->count - i * q->seg < q->seg ? q->count - i * q->seg : q->seg;
}

/* Starts cross ring x's reduce-scatter (ag false) or all-gather of the
 * head segment, on lane 1. */
static void xq_start(tp_coll_comm_t *c, xq_t *q, bool ag)
{
	size_t off[TP__COLL_MAX_LEVELS + 1], cnt[TP__COLL_MAX_LEVELS + 1];
	size_t soff, scnt, so, sc, dsz = tp_coll_dtype_size(q->dt);
	const tp__coll_ring_t *r = &c->cross[q->x];

	tp__coll_hier_spans(c, seg_len(q, q->done), off, cnt, &soff, &scnt);
	tp__coll_seg(scnt, c->nchan, c->cross_chan[q->x], &so, &sc);
	char *b = q->buf + (q->done * q->seg + soff + so) * dsz;
	/* the reduce-scatter leaves segment me + 1 complete here; the
	 * all-gather starts by sending it (tp__coll_ring_allreduce) */
	tp__coll_ring_phase_init(c, &q->ph, r, ag, b, NULL, sc, q->dt, q->op,
				 ag ? r->me + 1 : r->me, 1);
}

/* Moves the queue on without blocking (c->bg). */
static tp_err_t xq_poll(tp_coll_comm_t *c, void *arg)
{
	xq_t *q = arg;

	while (q->active) {
		if (!tp__coll_ring_phase_done(&q->ph)) {
			if (!tp__coll_ring_phase_pump(c, &q->ph) ||
			    !tp__coll_ring_phase_done(&q->ph))
				return TP_OK;
		}
		if (!q->ph.ag) {
			xq_start(c, q, true);
			continue;
		}
		if (++q->x == c->ncross) {
			q->x = 0;
			if (++q->done == q->queued) {
				q->active = false;
				break;
			}
		}
		xq_start(c, q, false);
	}
	return TP_OK;
}

/* The next segment's reduce-scatters are done: queue its exchange. */
static void xq_push(tp_coll_comm_t *c, xq_t *q)
{
	if (q->queued++ > q->done)
		return;
	q->active = true;
	q->x = 0;
	xq_start(c, q, false);
}

/* Waits until segment i is back (the time not hidden: CROSS). */
static tp_err_t xq_wait(tp_coll_comm_t *c, xq_t *q, size_t i)
{
	int64_t t0 = tp__coll_now_ns();
	tp_err_t err = TP_OK;

	while (!err && q->done <= i && !(err = xq_poll(c, q)) && q->done <= i)
		err = c->xp->progress(c);
	tp__coll_lap(c, TP_COLL_PHASE_CROSS, t0);
	return err;
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
	xq_t q = {.buf = buf, .count = count, .seg = count, .dt = dt, .op = op};
	/* segments only where there is an exchange across units; the same
	 * choice on every rank (the schedule's units, not this rank's
	 * levels or cross rings: a host alone in its unit with one rank has
	 * no level, and holds every channel) */
	if (pipe != 0 && c->nunits > 1) {
		size_t n = (size_t)tp_sched_pipe_nseg((double)(count * dsz),
						      (double)c->seg_bytes);
		q.seg = (count + n - 1) / n;
	}
	size_t nseg = (count + q.seg - 1) / q.seg;

	c->bg = xq_poll, c->bg_arg = &q;
	for (size_t i = 0; i < nseg && !err; i++)
		if (!(err = inner(c, buf, src, i * q.seg, seg_len(&q, i), dt,
				  op, true)) &&
		    c->ncross)
			xq_push(c, &q);
	for (size_t i = 0; i < nseg && !err; i++)
		if (!c->ncross || !(err = xq_wait(c, &q, i)))
			err = inner(c, buf, NULL, i * q.seg, seg_len(&q, i), dt,
				    op, false);
	c->bg = NULL;
	/* requests still queued point into q: nothing can use them again */
	if (err && q.active)
		tp__coll_break(c);
	return err;
}
