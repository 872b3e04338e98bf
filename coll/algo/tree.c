/* tree.c - double binary tree all-reduce.
 *
 * Notes: tree t carries half t of the data (tree 1 all of it below 8 KiB),
 * cut into chunks. Per tree a
 * chunk goes through: children's copies received into slots, reduced into
 * the user buffer, sent to the parent (the root instead starts the way
 * down), then the final chunk received from the parent into the user
 * buffer and sent on to the children. Cursors per stage with a window of
 * TP__COLL_WINDOW chunks keep several chunks in flight at every level, so
 * up and down traffic of different chunks overlap. A chunk's receive from
 * the parent is posted only after its send to the parent completed, since
 * it lands on the same bytes. Every dependency points to an earlier chunk
 * or further down the tree, so the windows cannot deadlock. */
#include "config.h"

#include "coll_int.h"

#define W	   TP__COLL_WINDOW
#define TREE_SPLIT 8192

typedef struct tstate {
	const tp__coll_tree_t *t;
	char *base; /* this tree's half */
	size_t count, nch;
	size_t up_post, up_done, sup_done, dn_post, dn_done, sdn_done;
	tp__coll_req_t *rchild, *sup, *rdn, *sdn;
	char *slots;
} tstate_t;

static void chunk(const tstate_t *s, size_t ch, size_t ce, size_t dsz,
		  size_t *off_p, size_t *len_p)
{
	size_t lo = ch * ce;
	size_t n = s->count - lo < ce ? s->count - lo : ce;

	*off_p = lo * dsz;
	*len_p = n * dsz;
}

static bool all_done(const tp__coll_req_t *r, int n)
{
	for (int i = 0; i < n; i++)
		if (!r[i].done)
			return false;
	return true;
}

/* One pass over tree s's stages; true when anything advanced. */
static bool step(tp_coll_comm_t *c, tstate_t *s, size_t ce, size_t dsz,
		 tp_coll_dtype_t dt, tp_coll_op_t op)
{
	const tp__coll_xport_ops_t *xp = c->xp;
	const tp__coll_tree_t *t = s->t;
	int nc = t->nchildren, mc = c->max_children;
	bool root = t->parent < 0, moved = false;
	size_t cb = c->chunk_bytes, off, len;

	while (s->up_post < s->nch && s->up_post - s->up_done < W) {
		size_t w = s->up_post % W;
		chunk(s, s->up_post, ce, dsz, &off, &len);
		for (int k = 0; k < nc; k++)
			xp->irecv(c, t->children[k],
				  s->slots + (w * (size_t)mc + (size_t)k) * cb,
				  len, &s->rchild[w * (size_t)mc + (size_t)k]);
		s->up_post++;
		moved = true;
	}
	while (s->up_done < s->up_post &&
	       all_done(&s->rchild[(s->up_done % W) * (size_t)mc], nc) &&
	       (root ? s->up_done - s->sdn_done < W
		     : s->up_done - s->sup_done < W)) {
		size_t w = s->up_done % W;
		chunk(s, s->up_done, ce, dsz, &off, &len);
		for (int k = 0; k < nc; k++)
			c->kern->reduce(s->base + off,
					s->slots +
					    (w * (size_t)mc + (size_t)k) * cb,
					len / dsz, dt, op, NULL);
		if (root) {
			for (int k = 0; k < nc; k++)
				xp->isend(c, t->children[k], s->base + off, len,
					  &s->sdn[w * (size_t)mc + (size_t)k]);
			s->dn_post = s->dn_done = s->up_done + 1;
		} else {
			xp->isend(c, t->parent, s->base + off, len, &s->sup[w]);
		}
		s->up_done++;
		moved = true;
	}
	if (!root) {
		while (s->sup_done < s->up_done &&
		       s->sup[s->sup_done % W].done) {
			s->sup_done++;
			moved = true;
		}
		while (s->dn_post < s->sup_done &&
		       s->dn_post - s->dn_done < W) {
			chunk(s, s->dn_post, ce, dsz, &off, &len);
			xp->irecv(c, t->parent, s->base + off, len,
				  &s->rdn[s->dn_post % W]);
			s->dn_post++;
			moved = true;
		}
		while (s->dn_done < s->dn_post && s->rdn[s->dn_done % W].done &&
		       s->dn_done - s->sdn_done < W) {
			size_t w = s->dn_done % W;
			chunk(s, s->dn_done, ce, dsz, &off, &len);
			for (int k = 0; k < nc; k++)
				xp->isend(c, t->children[k], s->base + off, len,
					  &s->sdn[w * (size_t)mc + (size_t)k]);
			s->dn_done++;
			moved = true;
		}
	}
	while (s->sdn_done < s->dn_done &&
	       all_done(&s->sdn[(s->sdn_done % W) * (size_t)mc], nc)) {
		s->sdn_done++;
		moved = true;
	}
	return moved;
}

tp_err_t tp__coll_tree_allreduce(tp_coll_comm_t *c, char *buf, size_t count,
				 tp_coll_dtype_t dt, tp_coll_op_t op)
{
	if (c->size <= 1 || count == 0)
		return TP_OK;
	size_t dsz = tp_coll_dtype_size(dt), ce = c->chunk_bytes / dsz;
	size_t mc = (size_t)c->max_children, per = W * (2 * mc + 2);
	/* Below TREE_SPLIT bytes one tree carries everything: latency is
	 * the hop count, and a second tree only doubles the wake-ups. */
	size_t half = count * dsz < TREE_SPLIT ? 0 : count / 2;
	tstate_t st[2];

	if (!ce)
		ce = 1;
	for (int i = 0; i < 2; i++) {
		tstate_t *s = &st[i];
		tp__coll_req_t *rq = c->reqs + (size_t)i * per;

		*s = (tstate_t){0};
		s->t = &c->tree[i];
		s->base = buf + (i ? half * dsz : 0);
		s->count = i ? count - half : half;
		s->nch = (s->count + ce - 1) / ce;
		s->rchild = rq;
		s->sdn = rq + W * mc;
		s->sup = rq + 2 * W * mc;
		s->rdn = rq + 2 * W * mc + W;
		s->slots = c->slots + (size_t)i * W * mc * c->chunk_bytes;
	}
	while (st[0].sdn_done < st[0].nch || st[1].sdn_done < st[1].nch) {
		bool moved = step(c, &st[0], ce, dsz, dt, op);
		moved |= step(c, &st[1], ce, dsz, dt, op);
		if (!moved) {
			tp_err_t err = c->xp->progress(c);
			if (err)
				return err;
		}
	}
	return TP_OK;
}
