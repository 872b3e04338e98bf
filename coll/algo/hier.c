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
 * where the ring takes g - 1 dependent steps each. */
#include "config.h"

#include <string.h>

#include "coll_int.h"

tp_err_t tp__coll_hier_allreduce(tp_coll_comm_t *c, char *buf, const char *src,
				 size_t count, tp_coll_dtype_t dt,
				 tp_coll_op_t op)
{
	size_t dsz = tp_coll_dtype_size(dt);
	size_t off[TP__COLL_MAX_LEVELS + 1], cnt[TP__COLL_MAX_LEVELS + 1];
	size_t soff, scnt;
	int64_t t0 = tp__coll_now_ns();
	tp_err_t err;

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
	tp__coll_hier_spans(c, count, off, cnt, &soff, &scnt);
	/* with a host segment, level 0 (the host's) runs through it */
	int seg = c->host && c->host_lv ? 1 : 0;
	if (seg &&
	    (err = tp__coll_host_reduce_scatter(c, buf, src, count, dt, op)))
		return err;
	for (int l = seg; l < c->nlevels; l++) {
		const tp__coll_ring_t *r = &c->level[l];

		/* shift n-1: member i ends with segment i. Only the
		 * first level reads src: the others work on its result. */
		err = tp__coll_ring_reduce_scatter(c, r, buf + off[l] * dsz,
						   l == 0 ? src : NULL, cnt[l],
						   dt, op, r->n - 1);
		if (err)
			return err;
	}
	if (c->nlevels == 0 && src)
		memcpy(buf, src, count * dsz);
	t0 = tp__coll_lap(c, TP_COLL_PHASE_INNER, t0);
	for (int k = 0; k < c->ncross; k++) {
		size_t so, sc;
		tp__coll_seg(scnt, c->nchan, c->cross_chan[k], &so, &sc);
		err = tp__coll_ring_allreduce(
		    c, &c->cross[k], buf + (soff + so) * dsz, NULL, sc, dt, op);
		if (err)
			return err;
	}
	t0 = tp__coll_lap(c, TP_COLL_PHASE_CROSS, t0);
	for (int l = c->nlevels - 1; l >= seg; l--) {
		const tp__coll_ring_t *r = &c->level[l];

		err = tp__coll_ring_allgather(c, r, buf + off[l] * dsz, cnt[l],
					      dt, r->me);
		if (err)
			return err;
	}
	if (seg && (err = tp__coll_host_allgather(c, buf, count, dt)))
		return err;
	tp__coll_lap(c, TP_COLL_PHASE_INNER, t0);
	return TP_OK;
}
