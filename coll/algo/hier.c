/* hier.c - hierarchical all-reduce over the plan's levels.
 *
 * Notes: level 0 is the host (its local ranks), level 1 the ranks with the
 * same local rank on the hosts of one level-1 group, the last level the
 * corresponding ranks across groups (or across all hosts when groups are
 * uneven). Going down, each level reduce-scatters the part the level above
 * left to this rank, so the ring at the top moves only 1 / (ranks below)
 * of the data over the group boundaries; coming back, all-gathers in
 * reverse order. The levels are built at init (comm.c) only when every
 * member of a level sees the same shape, which is what makes the segment
 * each rank owns agree across levels. */
#include "config.h"

#include "coll_int.h"

tp_err_t tp__coll_hier_allreduce(tp_coll_comm_t *c, char *buf, const char *src,
				 size_t count, tp_coll_dtype_t dt,
				 tp_coll_op_t op)
{
	size_t dsz = tp_coll_dtype_size(dt);
	size_t off[TP__COLL_MAX_LEVELS + 1], cnt[TP__COLL_MAX_LEVELS + 1];
	int top = c->nlevels - 1;
	tp_err_t err;

	if (c->nlevels <= 1) /* one level is a ring over all ranks */
		return tp__coll_ring_allreduce(
		    c, c->nlevels ? &c->level[0] : &c->ring, buf, src, count,
		    dt, op);
	off[0] = 0;
	cnt[0] = count;
	for (int l = 0; l < top; l++) {
		const tp__coll_ring_t *r = &c->level[l];
		size_t so, sc;

		/* shift n-1: member i ends with segment i. Only the
		 * first level reads src: the others work on its result. */
		err = tp__coll_ring_reduce_scatter(c, r, buf + off[l] * dsz,
						   l == 0 ? src : NULL, cnt[l],
						   dt, op, r->n - 1);
		if (err)
			return err;
		tp__coll_seg(cnt[l], r->n, r->me, &so, &sc);
		off[l + 1] = off[l] + so;
		cnt[l + 1] = sc;
	}
	err = tp__coll_ring_allreduce(c, &c->level[top], buf + off[top] * dsz,
				      NULL, cnt[top], dt, op);
	if (err)
		return err;
	for (int l = top - 1; l >= 0; l--) {
		const tp__coll_ring_t *r = &c->level[l];

		err = tp__coll_ring_allgather(c, r, buf + off[l] * dsz, cnt[l],
					      dt, r->me);
		if (err)
			return err;
	}
	return TP_OK;
}
