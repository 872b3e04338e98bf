/* compress.c - tp_coll_allreduce_compressed(): options, the error-feedback
 * state per key, and which hops run compressed.
 *
 * Notes: the hierarchical route mirrors algo/hier.c level by level, with
 * each level's reduce-scatter / all-gather and each cross ring's
 * all-reduce swapped for the compressed one where opts->levels says so.
 * Residuals are indexed like the caller's buffer, one set per compressed
 * stage (the flat or cross rings; the group level), as a position this
 * rank compresses in one stage it may compress again in the other. */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "coll_int.h"
#include "comp_wire.h"

typedef struct tp__coll_ef {
	struct tp__coll_ef *next;
	uint64_t key;
	size_t count;
	tp_coll_comp_t kind;
	unsigned levels, block;
	uint64_t calls;
	float *res; /* [4][count]: stage x (reduce-scatter, all-gather) */
	float *vel; /* [count]: top-k's velocity (momentum), or NULL */
} tp__coll_ef_t;

static const char *const comp_names[] = {"none", "int8", "1bit", "topk"};

void tp_coll_comp_opts_defaults(tp_coll_comp_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = TP_COLL_COMP_NONE;
	o->levels = TP_COLL_LEVEL_CROSS;
	o->block = 256;
	o->topk_fraction = 0.01;
	o->error_feedback = true;
	o->momentum_masking = true;
}

const char *tp_coll_comp_name(tp_coll_comp_t kind)
{
	return (unsigned)kind <= TP_COLL_COMP_TOPK ? comp_names[kind] : NULL;
}

tp_err_t tp_coll_comp_parse(const char *name, tp_coll_comp_t *kind_p)
{
	for (unsigned k = 0; name && k <= TP_COLL_COMP_TOPK; k++)
		if (!strcasecmp(name, comp_names[k])) {
			*kind_p = (tp_coll_comp_t)k;
			return TP_OK;
		}
	return TP_ERR_INVAL;
}

uint64_t tp_coll_comm_cross_bytes(const tp_coll_comm_t *c)
{
	uint64_t b = 0;

	if (!c || !c->group_of)
		return 0;
	for (int p = 0; p < c->size; p++)
		if (c->group_of[p] != c->group_of[c->rank])
			b += c->sent[p];
	return b;
}

void tp_coll_comm_comp_reset(tp_coll_comm_t *c)
{
	if (!c)
		return;
	while (c->ef) {
		tp__coll_ef_t *e = c->ef;
		c->ef = e->next;
		tp_free(e->res);
		tp_free(e->vel);
		tp_free(e);
	}
}

void tp__coll_comp_free(tp_coll_comm_t *c)
{
	tp_coll_comm_comp_reset(c);
	tp_free(c->cmsg);
	c->cmsg = NULL;
	c->cmsg_cap = 0;
}

/* The key's state, re-created when the call's shape changed. */
static tp_err_t ef_get(tp_coll_comm_t *c, uint64_t key, size_t count,
		       const tp_coll_comp_opts_t *o, tp__coll_ef_t **e_p)
{
	tp__coll_ef_t *e = c->ef;

	while (e && e->key != key)
		e = e->next;
	if (!e) {
		if (!(e = tp_calloc(1, sizeof(*e))))
			return TP_ERR_NOMEM;
		e->key = key;
		e->next = c->ef;
		c->ef = e;
	}
	if (!e->res || e->count != count || e->kind != o->kind ||
	    e->levels != o->levels || e->block != o->block) {
		tp_free(e->res);
		tp_free(e->vel);
		e->vel = NULL;
		e->res = count ? tp_calloc(4 * count, sizeof(float)) : NULL;
		if (count && !e->res)
			return TP_ERR_NOMEM;
		e->count = count;
		e->kind = o->kind;
		e->levels = o->levels;
		e->block = o->block;
		e->calls = 0;
	}
	if (o->momentum > 0.0f && !e->vel &&
	    !(e->vel = tp_calloc(count, sizeof(float))))
		return TP_ERR_NOMEM;
	*e_p = e;
	return TP_OK;
}

static tp_err_t check_opts(tp_coll_comm_t *c, const tp_coll_comp_opts_t *o,
			   tp_coll_op_t op)
{
	if (op != TP_COLL_SUM && op != TP_COLL_AVG)
		return tp__coll_fail(c, TP_ERR_INVAL,
				     "op %d: compressed all-reduce sums "
				     "(TP_COLL_SUM, TP_COLL_AVG)",
				     (int)op);
	if ((unsigned)o->kind > TP_COLL_COMP_TOPK ||
	    o->levels & ~(TP_COLL_LEVEL_HOST | TP_COLL_LEVEL_GROUP |
			  TP_COLL_LEVEL_CROSS))
		return tp__coll_fail(c, TP_ERR_INVAL,
				     "bad compressor %d or levels %#x",
				     (int)o->kind, o->levels);
	if ((o->kind == TP_COLL_COMP_INT8 && o->block == 0) ||
	    (o->kind == TP_COLL_COMP_1BIT && (o->block == 0 || o->block % 32)))
		return tp__coll_fail(c, TP_ERR_INVAL,
				     "block %u (1-bit: a multiple of 32)",
				     o->block);
	if (o->kind == TP_COLL_COMP_TOPK &&
	    !(o->topk_fraction > 0.0 && o->topk_fraction <= 1.0))
		return tp__coll_fail(c, TP_ERR_INVAL,
				     "top-k fraction %g not in (0, 1]",
				     o->topk_fraction);
	if (!(o->momentum >= 0.0f && o->momentum < 1.0f) ||
	    (o->momentum > 0.0f &&
	     (o->kind != TP_COLL_COMP_TOPK || !o->error_feedback)))
		return tp__coll_fail(c, TP_ERR_INVAL,
				     "momentum %g: in [0, 1), top-k with error "
				     "feedback only",
				     (double)o->momentum);
	return TP_OK;
}

/* The hierarchical schedule with compressed stages (see tp_coll.h). */
static tp_err_t hier(tp_coll_comm_t *c, tp__coll_comp_call_t *k, float *buf,
		     size_t count, unsigned levels)
{
	size_t off[TP__COLL_MAX_LEVELS + 1], cnt[TP__COLL_MAX_LEVELS + 1];
	bool comp_lv[TP__COLL_MAX_LEVELS];
	int64_t t0 = tp__coll_now_ns();
	size_t soff, scnt;
	char *b = (char *)buf;
	tp_err_t err;

	tp__coll_hier_spans(c, count, off, cnt, &soff, &scnt);
	for (int l = 0; l < c->nlevels; l++) {
		const tp__coll_ring_t *r = &c->level[l];

		/* groups of different sizes: the group level stays dense,
		 * else the groups that have one would re-quantise the
		 * cross-group result and the others not */
		comp_lv[l] = l == c->group_lv &&
			     (levels & TP_COLL_LEVEL_GROUP) && c->groups_even;
		err = comp_lv[l] ? tp__coll_comp_ring_reduce_scatter(
				       c, r, k, 1, buf + off[l], off[l], cnt[l])
				 : tp__coll_ring_reduce_scatter(
				       c, r, b + off[l] * 4, NULL, cnt[l],
				       TP_COLL_FP32, TP_COLL_SUM, r->n - 1);
		if (err)
			return err;
	}
	t0 = tp__coll_lap(c, TP_COLL_PHASE_INNER, t0);
	for (int x = 0; x < c->ncross; x++) {
		size_t so, sc;
		tp__coll_seg(scnt, c->nchan, c->cross_chan[x], &so, &sc);
		err = levels & TP_COLL_LEVEL_CROSS
			  ? tp__coll_comp_ring_allreduce(c, &c->cross[x], k, 0,
							 buf + soff + so,
							 soff + so, sc)
			  : tp__coll_ring_allreduce(
				c, &c->cross[x], b + (soff + so) * 4, NULL, sc,
				TP_COLL_FP32, TP_COLL_SUM);
		if (err)
			return err;
	}
	t0 = tp__coll_lap(c, TP_COLL_PHASE_CROSS, t0);
	for (int l = c->nlevels - 1; l >= 0; l--) {
		const tp__coll_ring_t *r = &c->level[l];

		err = comp_lv[l] ? tp__coll_comp_ring_allgather(
				       c, r, k, 1, buf + off[l], off[l], cnt[l])
				 : tp__coll_ring_allgather(c, r, b + off[l] * 4,
							   cnt[l], TP_COLL_FP32,
							   r->me);
		if (err)
			return err;
	}
	tp__coll_lap(c, TP_COLL_PHASE_INNER, t0);
	return TP_OK;
}

static void call_setup(tp__coll_comp_call_t *k, const tp_coll_comp_opts_t *o,
		       tp__coll_ef_t *e, uint64_t key, size_t count)
{
	memset(k, 0, sizeof(*k));
	k->kind = o->kind == TP_COLL_COMP_INT8	 ? TP__COMP_INT8
		  : o->kind == TP_COLL_COMP_1BIT ? TP__COMP_1BIT
						 : TP__COMP_TOPK;
	tp_cuda_comp_opts_defaults(&k->o);
	k->o.block = o->block;
	k->o.round =
	    o->stochastic ? TP_CUDA_ROUND_STOCHASTIC : TP_CUDA_ROUND_NEAREST;
	k->o.topk_frac = o->topk_fraction;
	k->o.seed = o->seed ^ (key * 0xbf58476d1ce4e5b9ull);
	if (!e)
		return;
	k->o.seed += e->calls++ * 0x94d049bb133111ebull;
	for (int s = 0; s < 2; s++)
		for (int w = 0; w < 2; w++)
			k->res[s][w] = e->res + (size_t)(2 * s + w) * count;
	k->vel = e->vel;
	k->momentum = o->momentum;
	k->vel_mask = o->momentum_masking;
}

tp_err_t tp_coll_allreduce_compressed(tp_coll_comm_t *c, float *buf,
				      size_t count, tp_coll_op_t op,
				      const tp_coll_comp_opts_t *opts,
				      uint64_t key)
{
	tp_coll_comp_opts_t o;
	tp__coll_comp_call_t k;
	tp__coll_ef_t *e = NULL;
	bool dev = false, flat;
	int64_t t0;
	tp_err_t err;

	if (!c)
		return TP_ERR_INVAL;
	if (!opts)
		tp_coll_comp_opts_defaults(&o);
	else
		o = *opts;
	if (o.kind == TP_COLL_COMP_NONE || o.levels == 0)
		return tp_coll_allreduce(c, buf, buf, count, TP_COLL_FP32, op,
					 TP_COLL_ALGO_AUTO);
	c->call = "allreduce_compressed";
	if (c->broken)
		return TP_ERR_PEER_LOST;
	c->detail[0] = '\0';
	if ((err = check_opts(c, &o, op)))
		return err;
	if (count > 0 && !buf)
		return tp__coll_fail(c, TP_ERR_INVAL, "NULL buffer");
	if (count == 0)
		return TP_OK;
	if ((err = tp__coll_on_device(c, buf, buf, &dev)) || dev)
		return err ? err
			   : tp__coll_fail(c, TP_ERR_UNSUPPORTED,
					   "device buffers: compress on the "
					   "host (copy the gradient first)");
	if (o.error_feedback && (err = ef_get(c, key, count, &o, &e)))
		return tp__coll_fail(c, err, "residuals of key %llu",
				     (unsigned long long)key);
	call_setup(&k, &o, e, key, count);
	c->last_move_ns = t0 = tp__coll_now_ns();
	/* Top-k has no reduce-scatter: with the group level it runs flat. */
	flat = (o.levels & TP_COLL_LEVEL_HOST) ||
	       (c->nlevels == 0 && c->ncross == 0) ||
	       (k.kind == TP__COMP_TOPK && (o.levels & TP_COLL_LEVEL_GROUP));
	err = flat ? tp__coll_comp_ring_allreduce(c, &c->ring, &k, 0, buf, 0,
						  count)
		   : hier(c, &k, buf, count, o.levels);
	if (flat)
		tp__coll_lap(c, TP_COLL_PHASE_CROSS, t0);
	if (!err && op == TP_COLL_AVG)
		c->kern->scale(buf, count, TP_COLL_FP32, c->size, NULL);
	tp__coll_lap(c, TP_COLL_PHASE_CALL, t0);
	if (err && !c->detail[0])
		tp__coll_fail(c, err, "%s", tp_strerror(err));
	return err;
}
