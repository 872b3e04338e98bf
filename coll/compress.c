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
#include "tp_kmath.h"

typedef struct tp__coll_ef {
	struct tp__coll_ef *next;
	uint64_t key;
	size_t count;
	tp_coll_comp_t kind;
	unsigned levels, block;
	size_t
	    seg; /* the pipeline's segment: it decides what each rank sends */
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
	o->segment = TP_COLL_COMP_SEGMENT;
	o->overlap = true;
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

void tp_coll_comm_comp_forget(tp_coll_comm_t *c, uint64_t key)
{
	tp__coll_ef_t **p = c ? &c->ef : NULL;

	while (p && *p && (*p)->key != key)
		p = &(*p)->next;
	if (!p || !*p)
		return;
	tp__coll_ef_t *e = *p;
	*p = e->next;
	tp_free(e->res);
	tp_free(e->vel);
	tp_free(e);
}

void tp__coll_comp_free(tp_coll_comm_t *c)
{
	tp_coll_comm_comp_reset(c);
	for (int st = 0; st < 2; st++) {
		tp_free(c->cmsg[st]);
		c->cmsg[st] = NULL;
		c->cmsg_cap[st] = 0;
	}
}

/* The key's state, re-created when the call's shape changed. */
static tp_err_t ef_get(tp_coll_comm_t *c, uint64_t key, size_t count,
		       size_t seg, const tp_coll_comp_opts_t *o,
		       tp__coll_ef_t **e_p)
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
	    e->levels != o->levels || e->block != o->block || e->seg != seg) {
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
		e->seg = seg;
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

/* Which levels' stages run compressed: only the group level, and only
 * when the groups are even, else the groups that have one would
 * re-quantise the cross-group result and the others not. */
static void comp_levels(const tp_coll_comm_t *c, unsigned levels, bool *lv)
{
	for (int l = 0; l < c->nlevels; l++)
		lv[l] = l == c->group_lv && (levels & TP_COLL_LEVEL_GROUP) &&
			c->groups_even;
}

/* The levels' reduce-scatters (down) or all-gathers of buf[a, a + n). */
static tp_err_t inner(tp_coll_comm_t *c, tp__coll_comp_call_t *k, float *buf,
		      size_t a, size_t n, const bool *comp_lv, bool down)
{
	size_t off[TP__COLL_MAX_LEVELS + 1], cnt[TP__COLL_MAX_LEVELS + 1];
	size_t soff, scnt;
	int64_t t0 = tp__coll_now_ns();
	tp_err_t err = TP_OK;

	tp__coll_hier_spans(c, n, off, cnt, &soff, &scnt);
	for (int i = 0; i < c->nlevels && !err; i++) {
		int l = down ? i : c->nlevels - 1 - i;
		const tp__coll_ring_t *r = &c->level[l];
		float *p = buf + a + off[l];

		if (comp_lv[l])
			err = tp__coll_comp_ring_stage(c, r, k, 1, !down, p,
						       a + off[l], cnt[l]);
		else
			err = down ? tp__coll_ring_reduce_scatter(
					 c, r, (char *)p, NULL, cnt[l],
					 TP_COLL_FP32, TP_COLL_SUM, r->n - 1)
				   : tp__coll_ring_allgather(
					 c, r, (char *)p, cnt[l], TP_COLL_FP32,
					 r->me);
	}
	tp__coll_lap(c, TP_COLL_PHASE_INNER, t0);
	return err;
}

/* The exchange across the groups of the whole buffer, run to its end:
 * each cross ring's all-reduce, compressed or dense. */
static tp_err_t cross_run(tp_coll_comm_t *c, tp__coll_comp_call_t *k,
			  float *buf, size_t count, unsigned levels)
{
	int64_t t0 = tp__coll_now_ns();
	tp_err_t err = TP_OK;

	for (int x = 0; x < c->ncross && !err; x++) {
		size_t at, sc;
		tp__coll_cross_span(c, 0, count, x, &at, &sc);
		err = levels & TP_COLL_LEVEL_CROSS
			  ? tp__coll_comp_ring_allreduce(c, &c->cross[x], k, 0,
							 buf + at, at, sc)
			  : tp__coll_ring_allreduce(
				c, &c->cross[x], (char *)(buf + at), NULL, sc,
				TP_COLL_FP32, TP_COLL_SUM);
	}
	tp__coll_lap(c, TP_COLL_PHASE_CROSS, t0);
	return err;
}

/* The hierarchical schedule with compressed stages (see tp_coll.h), on
 * the whole buffer. */
static tp_err_t hier(tp_coll_comm_t *c, tp__coll_comp_call_t *k, float *buf,
		     size_t count, unsigned levels)
{
	bool comp_lv[TP__COLL_MAX_LEVELS];
	tp_err_t err;

	comp_levels(c, levels, comp_lv);
	if ((err = inner(c, k, buf, 0, count, comp_lv, true)) ||
	    (err = cross_run(c, k, buf, count, levels)))
		return err;
	return inner(c, k, buf, 0, count, comp_lv, false);
}

/* The compressed exchange: each phase a compressed ring stage (stage 0). */
typedef struct comp_xq {
	tp__coll_xq_t q; /* first: the queue's callbacks get &q */
	tp__coll_comp_call_t *k;
	float *buf;
	tp__coll_comp_op_t op;
} comp_xq_t;

static tp_err_t comp_start(tp_coll_comm_t *c, tp__coll_xq_t *q, size_t at,
			   size_t n)
{
	comp_xq_t *x = (comp_xq_t *)q;

	return tp__coll_comp_op_start(c, &x->op, &c->cross[q->x], x->k, 0,
				      q->ag, x->buf + at, at, n);
}

static tp_err_t comp_pump(tp_coll_comm_t *c, tp__coll_xq_t *q, bool *fin)
{
	comp_xq_t *x = (comp_xq_t *)q;
	tp_err_t err = tp__coll_comp_op_poll(c, &x->op);

	*fin = !err && tp__coll_comp_op_done(&x->op);
	return err;
}

/* The same schedule cut into segments of seg elements, pipelined: every
 * segment's reduce-scatter inside the host and the group, each pushing
 * its exchange across the groups onto a queue that runs behind them,
 * then every segment's all-gather once its exchange is back. So the
 * up-link carries segment i while the host links carry the
 * reduce-scatters after it and the all-gathers before it, and a group
 * that runs ahead of the other does not wait for it segment by segment.
 * A compressed group level runs its stages the same way, with a message
 * buffer of its own (stage 1), the exchange still behind them. Without
 * overlap every exchange runs alone: the same bits, one stage at a time. */
static tp_err_t pipelined(tp_coll_comm_t *c, tp__coll_comp_call_t *k,
			  float *buf, size_t count, size_t seg, unsigned levels,
			  bool overlap)
{
	bool comp_lv[TP__COLL_MAX_LEVELS];
	size_t nseg = (count + seg - 1) / seg;
	comp_xq_t x = {.q = {.count = count,
			     .seg = seg,
			     .start = comp_start,
			     .pump = comp_pump},
		       .k = k,
		       .buf = buf};
	tp__coll_xq_t *q = &x.q;
	tp_err_t err = TP_OK;

	comp_levels(c, levels, comp_lv);
	if (overlap)
		tp__coll_xq_begin(c, q);
	for (size_t i = 0; i < nseg && !err; i++) {
		err = inner(c, k, buf, i * seg, tp__coll_xq_len(q, i), comp_lv,
			    true);
		if (!err && !(err = tp__coll_xq_push(c, q)) && !overlap)
			err = tp__coll_xq_wait(c, q, i);
	}
	for (size_t i = 0; i < nseg && !err; i++)
		if (!(err = tp__coll_xq_wait(c, q, i)))
			err = inner(c, k, buf, i * seg, tp__coll_xq_len(q, i),
				    comp_lv, false);
	return tp__coll_xq_end(c, q, err);
}

/* The pipeline's segment (elements, a multiple of the quantisation
 * block per rank), or 0 where the whole buffer goes in one piece: top-k
 * (its all-gather picks k per call), no compressed exchange across
 * groups, or a buffer of one segment. */
static size_t pipeline_seg(const tp_coll_comm_t *c,
			   const tp_coll_comp_opts_t *o, size_t count)
{
	size_t unit = (size_t)o->block * (size_t)c->size, seg;

	if (o->kind == TP_COLL_COMP_TOPK ||
	    !(o->levels & TP_COLL_LEVEL_CROSS) || c->ncross == 0 ||
	    o->segment == 0 || o->segment >= count)
		return 0;
	seg = (o->segment + unit - 1) / unit * unit;
	return seg < count ? seg : 0;
}

static void call_setup(tp_coll_comm_t *c, tp__coll_comp_call_t *k,
		       const tp_coll_comp_opts_t *o, tp__coll_ef_t *e,
		       uint64_t key, size_t count)
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
	k->o.topk_mode =
	    o->topk_exact ? TP_CUDA_TOPK_EXACT : TP_CUDA_TOPK_SAMPLED;
	k->o.seed = tp_km_seed(o->seed, key);
	/* the call number: the key's, or without its state (no error
	 * feedback) the communicator's, so the noise differs call to call
	 * (it repeated itself there, and rounding no longer averaged out) */
	k->o.seed = tp_km_seed(k->o.seed, e ? e->calls++ : c->comp_calls++);
	if (!e)
		return;
	for (int s = 0; s < 2; s++)
		for (int w = 0; w < 2; w++)
			k->res[s][w] = e->res + (size_t)(2 * s + w) * count;
	k->vel = e->vel;
	k->momentum = o->momentum;
	k->vel_mask = o->momentum_masking;
}

/* What TOPOPLACE_COLL_CHECK compares: the options the call's kind and
 * schedule use (the others may differ between ranks: the messages and
 * results are the same). Top-k has no block and never pipelines; int8
 * and 1-bit have no top-k fraction or threshold; segment is the one the
 * call cuts (seg: pipeline_seg's, 0 where it does not pipeline: flat,
 * top-k, or segments at least the count), overlap only where it does. */
static void sig_opts(const tp_coll_comp_opts_t *o, size_t seg,
		     tp_coll_comp_opts_t *sig)
{
	*sig = *o;
	if (o->kind == TP_COLL_COMP_TOPK) {
		sig->block = 0;
	} else {
		sig->topk_fraction = 0.0;
		sig->topk_exact = false;
	}
	sig->segment = seg;
	if (seg == 0)
		sig->overlap = false;
}

tp_err_t tp_coll_allreduce_compressed(tp_coll_comm_t *c, float *buf,
				      size_t count, tp_coll_op_t op,
				      const tp_coll_comp_opts_t *opts,
				      uint64_t key)
{
	tp_coll_comp_opts_t o, sig;
	tp__coll_comp_call_t k;
	tp__coll_ef_t *e = NULL;
	bool dev = false, flat;
	size_t seg;
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
		return tp__coll_broken_err(c);
	c->detail[0] = '\0';
	err = check_opts(c, &o, op);
	if (!err && count > 0 && !buf)
		err = tp__coll_fail(c, TP_ERR_INVAL, "NULL buffer");
	/* as tp_coll_allreduce(): 4 x count floats of residuals must not
	 * wrap (a count of 2^62 + 1 allocated 16 bytes for them) */
	if (!err && count > SIZE_MAX / 16 / (size_t)c->size)
		err = tp__coll_fail(c, TP_ERR_INVAL, "count %zu too large",
				    count);

	/* Top-k has no reduce-scatter: with the group level it runs flat. */
	flat =
	    (o.levels & TP_COLL_LEVEL_HOST) ||
	    (c->nlevels == 0 && c->ncross == 0) ||
	    (o.kind == TP_COLL_COMP_TOPK && (o.levels & TP_COLL_LEVEL_GROUP));
	/* device memory is refused before the comparison below, which
	 * then names this rank's refusal to the others */
	if (!err && count > 0 &&
	    !(err = tp__coll_on_device(c, buf, buf, &dev)) && dev)
		err = tp__coll_fail(c, TP_ERR_UNSUPPORTED,
				    "device buffers: compress on the host "
				    "(copy the gradient first)");
	/* TOPOPLACE_COLL_CHECK: every rank compares its call with the
	 * others', its own refusal included */
	/* the segment every rank cuts alike (options refused: none) */
	seg = flat || err ? 0 : pipeline_seg(c, &o, count);
	sig_opts(&o, seg, &sig);
	if ((err =
		 tp__coll_check_args(c, TP__COLL_CALL_COMPRESSED, count,
				     TP_COLL_FP32, (int)op, -1, -1, &sig, err)))
		return err;
	if (count == 0)
		return TP_OK;
	/* top-k's indices are 32 bits: a top-k of more is refused before
	 * its residuals are allocated (16 bytes a value) and, across the
	 * groups, before the dense stages reduce part of the buffer (each
	 * rank's shard is its own size, but every rank passes the same
	 * count, so all refuse alike) */
	if (o.kind == TP_COLL_COMP_TOPK && count > UINT32_MAX)
		return tp__coll_fail(c, TP_ERR_RANGE,
				     "top-k of %zu values (fewer than 2^32)",
				     count);
	if (o.error_feedback && (err = ef_get(c, key, count, seg, &o, &e))) {
		/* the others went on into the call: as below */
		tp__coll_fail(c, err, "residuals of key %llu",
			      (unsigned long long)key);
		tp__coll_break(c);
		return err;
	}
	call_setup(c, &k, &o, e, key, count);
	k.seg = seg;
	c->last_move_ns = t0 = tp__coll_now_ns();
	/* the host level is never compressed here: its ranks agree first */
	if (!flat && c->host_lv &&
	    (err = tp__coll_comp_agree(c, &c->level[0], &k, count)))
		return err;
	err = flat  ? tp__coll_comp_ring_allreduce(c, &c->ring, &k, 0, buf, 0,
						   count)
	      : seg ? pipelined(c, &k, buf, count, seg, o.levels, o.overlap)
		    : hier(c, &k, buf, count, o.levels);
	if (flat)
		tp__coll_lap(c, TP_COLL_PHASE_CROSS, t0);
	if (!err && op == TP_COLL_AVG)
		c->kern->scale(buf, count, TP_COLL_FP32, c->size, NULL);
	tp__coll_lap(c, TP_COLL_PHASE_CALL, t0);
	if (err && !c->detail[0])
		tp__coll_fail(c, err, "%s", tp_strerror(err));
	/* every rank went into the call: this rank's next one would pair
	 * with the others' current one (tp_coll.h, Errors) */
	if (err)
		tp__coll_break(c);
	return err;
}
