/*
 * slurm-block: a model of Slurm 24.11.5 topology/block node selection
 * (eval_nodes_block in src/plugins/topology/block/eval_nodes_block.c),
 * run on the blocks that `topoplace fabric topology-conf --block` writes
 * for the same fabric (tp_fabric_blocks: the writer's own table). Section
 * numbers refer to doc/slurm-block-model.md; Bnn are its source lines.
 *
 * Modelled exactly:
 *  - the block table (1): base block i is the i-th BlockName line;
 *    bblock_node_cnt is the first BlockSizes value (the smallest block);
 *    block_levels has bit k set for each base << k the file lists;
 *  - node index order = host index order (1.3);
 *  - the candidate filter (2): a host counts when it can take the job's
 *    per-node share (as slurm-tree) and sits in a base block;
 *  - the sizing (3, B252-265): blocks of 2^level base blocks where level
 *    is the first listed level >= ceil(log2(base blocks needed)), the whole
 *    system when none is listed; llblock = the last listed level below
 *    it; max_llblock = the llblocks the job may touch;
 *  - the block choice (4, B384-503): the llblock-limited count when
 *    nodes_on_llblock exists (its slice sorted, only the first
 *    bblock_per_block / bblock_per_llblock llblocks of a block counted),
 *    the smallest sufficient block by candidate count, ties to the last;
 *  - the GPU check after the block is chosen (B610-654): a --gpus job
 *    whose block lacks the GPUs fails although another block has them;
 *  - the base-block loop (5, B800-864) with _choose_best_bblock's rules as
 *    written (llblock first when nodes_on_llblock exists, then best fit,
 *    ties to the last fitting block with the fewest nodes or the last
 *    largest non-fitting one), the llblock budget, the stall stop, stale
 *    llblock counts, nodes of a base block in index order;
 *  - a job Slurm's rules cannot place on the idle system is TP_ERR_RANGE
 *    (6): Slurm rejects it at submit or holds it with BadConstraints.
 *
 * Request mapping as slurm-tree: nodes=N[,gpus-per-node=G] is -N N
 * (min = req = max = N); nodes=N alone takes whole idle nodes; gpus=T is
 * --gpus=T with min = req = 1 and no node cap.
 *
 * Weight tiers (node weights, then GPUs: doc/slurm-tree-model.md 7.2 and
 * 11.3, shared with slurm-tree in slurm_pick.c): the block with the
 * lightest tier goes first, then the fewest candidates; inside it the
 * tiers are gathered lightest first until they hold the job, the lighter
 * ones are the job's at once (req2), their base blocks required and
 * filled first (B558-765).
 *
 * Left out, and why (7 in the doc): required nodes (-w), segments, CPU
 * counts (one task per node: the CPU tests pass exactly when the node
 * tests do), the knapsack retries of common_topo_choose_nodes (node-count jobs succeed or fail on
 * the first pass; a --gpus job that fails on GPUs may succeed there on a
 * retry in Slurm), Slurm's fallback to plain selection when no candidate
 * is in any block (here: no placement), BlockSizes that skip a level
 * (the writer never does; the code handles them as Slurm does, untested
 * against Slurm).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm_pick_int.h"

#define NLEVELS 16 /* Slurm's MAX_BLOCK_LEVELS */

typedef struct blk {
	tp__slurm_pick_t pk;
	tp_block_t *bb; /* base blocks in file order */
	size_t nbb;
	long long bnc;	     /* bblock_node_cnt */
	unsigned levels;     /* block_levels */
	int *bb_of;	     /* per host: its base block, -1 if none */
	long long *on_bb;    /* nodes_on_bblock */
	long long *on_ll;    /* nodes_on_llblock (NULL when Slurm has none) */
	bool *req;	     /* bblock_required */
	int level, ll_level; /* for the explanation */
	size_t used;	     /* base blocks used */
	tp__slurm_key_t *key; /* per host: its weight tier */
	bool *inb, *r;	     /* per host: in the tiers gathered, in req2 */
	uint32_t *list;	     /* the chosen block's candidates */
} blk_t;

/* bit_ffs_from_bit / bit_fls_from_bit on the 16-bit block_levels */
static int ffs_from(unsigned lv, int bit)
{
	for (int b = bit < 0 ? 0 : bit; b < NLEVELS; b++)
		if (lv & (1u << b))
			return b;
	return -1;
}

static int fls_from(unsigned lv, int bit)
{
	for (int b = bit >= NLEVELS ? NLEVELS - 1 : bit; b >= 0; b--)
		if (lv & (1u << b))
			return b;
	return -1;
}

static bool same_ll(int a, int b, int l)
{
	return a >= 0 && b >= 0 && (a >> l) == (b >> l);
}

/* _choose_best_bblock (5.2), bblock i against the best so far. */
static void choose_best(const blk_t *t, int l, int i, bool *best_same,
			bool *best_fit, int *best)
{
	bool fit = t->on_bb[i] >= t->pk.rem_nodes, same = false;

	if (t->on_ll && !same_ll(*best, i, l)) {
		int lo = i & ~((1 << l) - 1), hi = i | ((1 << l) - 1);
		long long bcnt, cnt;
		bool llfit, bllfit;

		for (int j = lo; j < (int)t->nbb && j <= hi; j++)
			if (t->req[j]) {
				same = true;
				break;
			}
		if (*best == -1 || (same && !*best_same))
			goto take;
		if (!same && *best_same)
			return;
		bcnt = t->on_ll[*best >> l];
		cnt = t->on_ll[i >> l];
		llfit = cnt >= t->pk.rem_nodes;
		bllfit = bcnt >= t->pk.rem_nodes;
		if (llfit != bllfit) {
			if (llfit)
				goto take;
			return;
		}
		/* both fit: fewer nodes; neither: more nodes */
		if (cnt != bcnt) {
			if ((llfit && cnt < bcnt) || (!llfit && cnt > bcnt))
				goto take;
			return;
		}
	}
	if (*best == -1 || (fit && !*best_fit) ||
	    (!fit && !*best_fit && t->on_bb[i] >= t->on_bb[*best]) ||
	    (fit && t->on_bb[i] <= t->on_bb[*best])) {
		*best = i;
		*best_fit = fit;
	}
	return;
take:
	*best = i;
	*best_fit = fit;
	*best_same = same;
}

static int desc(const void *x, const void *y)
{
	long long a = *(const long long *)x, b = *(const long long *)y;

	return a < b ? 1 : a > b ? -1 : 0;
}

/* Take base block i's candidates left, in index order (Slurm walks the
 * node bitmap); true when the job is done. */
static bool take_bblock(blk_t *t, int i)
{
	size_t nh = tp_fabric_nhosts(t->pk.in->f);

	for (uint32_t h = 0; h < nh && t->pk.max_nodes > 0; h++)
		if (t->bb_of[h] == i && tp__slurm_pick_try(&t->pk, h))
			return true;
	return false;
}

/* One evaluation on in's view; TP_ERR_NOTFOUND when Slurm finds none. */
static tp_err_t eval_block(blk_t *t)
{
	const tp__policy_in_t *in = t->pk.in;
	size_t nh = tp_fabric_nhosts(in->f);
	long long need, bpb, bpll, ll_size, max_ll, block_cnt, llcnt = 0;
	long long best_cnt = 0, prev;
	int level = 0, ll_level, binx = -1;
	tp__slurm_key_t best_key = -1;
	size_t nl = 0;

	for (uint32_t h = 0; h < nh; h++) {
		t->pk.cand[h] = t->bb_of[h] >= 0 && tp__host_offer(in, h) > 0;
		t->key[h] = t->pk.cand[h] ? tp__slurm_tier_key(in, h) : -1;
		t->inb[h] = t->r[h] = false;
	}
	/* 3: sizing (B252-265) */
	need = (t->pk.rem_nodes + t->bnc - 1) / t->bnc;
	while ((1LL << level) < need)
		level++;
	ll_level = level > 0 ? fls_from(t->levels, level - 1) : 0;
	level = ffs_from(t->levels, level);
	if (ll_level < 0)
		ll_level = 0; /* Slurm asserts; level 0 is always listed */
	bpll = 1LL << ll_level;
	ll_size = bpll * t->bnc;
	max_ll = (t->pk.rem_nodes + ll_size - 1) / ll_size;
	if (level < 0) {
		bpb = (long long)t->nbb;
		block_cnt = 1;
	} else {
		bpb = 1LL << level;
		block_cnt = ((long long)t->nbb + bpb - 1) / bpb;
	}
	t->level = level;
	t->ll_level = ll_level;
	if (bpb != bpll * max_ll) {
		llcnt = ((long long)t->nbb + bpll - 1) / bpll;
		t->on_ll = tp_calloc((size_t)llcnt + 1, sizeof(long long));
		if (!t->on_ll)
			return TP_ERR_NOMEM;
	}
	for (size_t i = 0; i < t->nbb; i++) {
		t->req[i] = false;
		t->on_bb[i] = 0;
		for (size_t k = 0; k < t->bb[i].nhosts; k++)
			t->on_bb[i] += t->pk.cand[t->bb[i].hosts[k]];
		if (t->on_ll)
			t->on_ll[(long long)i / bpll] += t->on_bb[i];
	}
	/* 4: the block (B435-503): the lightest GPU tier first (the largest
	 * key), then the fewest candidates that suffice, ties to the last */
	for (long long b = 0; b < block_cnt; b++) {
		long long bnc = 0, avail = 0;
		tp__slurm_key_t bkey = -1;
		for (long long i = b * bpb;
		     i < (b + 1) * bpb && i < (long long)t->nbb; i++) {
			bnc += t->on_bb[i];
			for (size_t k = 0; k < t->bb[i].nhosts; k++) {
				uint32_t h = t->bb[i].hosts[k];
				if (t->pk.cand[h] && t->key[h] > bkey)
					bkey = t->key[h];
			}
		}
		if (!t->on_ll) {
			avail = bnc;
		} else {
			long long per = bpb / bpll, off = b * per, cnt;
			cnt = per < llcnt - off ? per : llcnt - off;
			if (cnt > 0)
				qsort(&t->on_ll[off], (size_t)cnt,
				      sizeof(long long), desc);
			for (long long j = 0; j < (max_ll < cnt ? max_ll : cnt);
			     j++)
				avail += t->on_ll[off + j];
		}
		if (avail < t->pk.rem_nodes || !bnc)
			continue;
		if (binx == -1 || bkey > best_key ||
		    (bkey == best_key && bnc <= best_cnt)) {
			binx = (int)b;
			best_cnt = bnc;
			best_key = bkey;
		}
	}
	if (binx == -1)
		return TP_ERR_NOTFOUND;
	/* B558-654: the block's candidates, gathered by tier until they
	 * hold the job's nodes and GPUs */
	for (uint32_t h = 0; h < nh; h++) {
		if (t->pk.cand[h] && t->bb_of[h] / bpb != binx)
			t->pk.cand[h] = false;
		if (t->pk.cand[h])
			t->list[nl++] = h;
	}
	if (!tp__slurm_gather(&t->pk, t->key, t->list, nl, t->inb, t->r))
		return TP_ERR_NOTFOUND;
	for (uint32_t h = 0; h < nh; h++)
		t->pk.cand[h] = t->inb[h];
	/* B661-727: the lighter tiers are the job's, their base blocks
	 * required (each new llblock spends one of the budget) */
	if (tp__slurm_pick_req2(&t->pk, t->r, nh)) {
		int last = -1;
		if (tp__slurm_pick_done(&t->pk))
			return TP_OK;
		if (t->pk.max_nodes <= 0)
			return TP_ERR_NOTFOUND;
		for (long long i = binx * bpb;
		     i < (binx + 1) * bpb && i < (long long)t->nbb; i++) {
			bool meets = false;
			for (size_t k = 0; k < t->bb[i].nhosts && !meets; k++)
				meets = t->r[t->bb[i].hosts[k]];
			if (!meets)
				continue;
			t->req[i] = true;
			if (!same_ll(last, (int)i, ll_level)) {
				max_ll--;
				last = (int)i;
			}
		}
		if (max_ll < 0)
			return TP_ERR_NOTFOUND;
		/* B729-765: the required base blocks' other nodes first */
		for (long long i = binx * bpb;
		     i < (binx + 1) * bpb && i < (long long)t->nbb; i++) {
			if (!t->req[i])
				continue;
			t->used++;
			if (take_bblock(t, (int)i))
				return TP_OK;
		}
	}
	/* B767-798: counts over the gathered tiers, for the block's base
	 * blocks not required, taken once */
	if (t->on_ll)
		memset(t->on_ll, 0, (size_t)llcnt * sizeof(long long));
	for (long long i = binx * bpb;
	     i < (binx + 1) * bpb && i < (long long)t->nbb; i++) {
		if (t->req[i])
			continue;
		t->on_bb[i] = 0;
		for (size_t k = 0; k < t->bb[i].nhosts; k++)
			t->on_bb[i] += t->inb[t->bb[i].hosts[k]];
		if (t->on_ll)
			t->on_ll[i / bpll] += t->on_bb[i];
	}
	/* 5: base blocks (B800-864) */
	prev = t->pk.rem_nodes + 1;
	for (;;) {
		int best = -1;
		bool best_fit = false, best_same = true;
		if (prev == t->pk.rem_nodes)
			break; /* stalled */
		prev = t->pk.rem_nodes;
		for (long long i = binx * bpb;
		     i < (binx + 1) * bpb && i < (long long)t->nbb; i++)
			if (!t->req[i])
				choose_best(t, ll_level, (int)i, &best_same,
					    &best_fit, &best);
		if (best == -1)
			break;
		if (max_ll <= 0 && !best_same)
			break;
		t->req[best] = true;
		t->used++;
		if (take_bblock(t, best))
			return TP_OK;
		if (!best_same)
			max_ll--;
	}
	return t->pk.min_rem_nodes <= 0 && t->pk.got_gpus >= t->pk.need_gpus
		   ? TP_OK
		   : TP_ERR_NOTFOUND;
}

/* Fresh counters for one evaluation of in. */
static void reset(blk_t *t, const tp__policy_in_t *in)
{
	tp__slurm_pick_reset(&t->pk, in);
	t->used = 0;
	tp_free(t->on_ll);
	t->on_ll = NULL;
}

static tp_err_t build(blk_t *t, const tp_fabric_t *f)
{
	size_t nh = tp_fabric_nhosts(f), base;
	tp_err_t err;

	if ((err = tp_fabric_blocks(f, &t->bb, &t->nbb, &base)))
		return err;
	t->bb_of = tp_malloc((nh + 1) * sizeof(int));
	t->pk.cand = tp_calloc(nh + 1, sizeof(bool));
	t->on_bb = tp_calloc(t->nbb + 1, sizeof(long long));
	t->req = tp_calloc(t->nbb + 1, sizeof(bool));
	t->key = tp_calloc(nh + 1, sizeof(tp__slurm_key_t));
	t->inb = tp_calloc(nh + 1, sizeof(bool));
	t->r = tp_calloc(nh + 1, sizeof(bool));
	t->list = tp_calloc(nh + 1, sizeof(uint32_t));
	if (!t->bb_of || !t->pk.cand || !t->on_bb || !t->req || !t->key ||
	    !t->inb || !t->r || !t->list)
		return TP_ERR_NOMEM;
	t->bnc = (long long)base;
	/* BlockSizes=base,2*base,... while 2^k <= blocks (topoconf.c) */
	for (int k = 0; k < NLEVELS && ((size_t)1 << k) <= t->nbb; k++)
		t->levels |= 1u << k;
	for (size_t h = 0; h < nh; h++)
		t->bb_of[h] = -1;
	for (size_t i = 0; i < t->nbb; i++)
		for (size_t k = 0; k < t->bb[i].nhosts; k++)
			t->bb_of[t->bb[i].hosts[k]] = (int)i;
	return TP_OK;
}

static tp_err_t slurm_block(const tp__policy_in_t *in, uint32_t *hosts,
			    int *gpus, size_t max, size_t *n_p, char *why,
			    size_t whylen)
{
	blk_t t = {.pk = {.hosts = hosts, .gpus = gpus, .max = max}};
	tp_err_t err;

	if ((err = build(&t, in->f)))
		goto out;
	err = TP_ERR_NOTFOUND;
	if (!t.nbb || t.bnc <= 0)
		goto out;
	reset(&t, in);
	err = eval_block(&t);
	if (err == TP_ERR_NOTFOUND) {
		/* 6: what Slurm rejects at submit never runs */
		tp__policy_in_t idle = *in;
		idle.s = NULL;
		idle.offer = NULL;
		reset(&t, &idle);
		if (eval_block(&t) == TP_ERR_NOTFOUND)
			err = TP_ERR_RANGE;
		goto out;
	}
	if (err)
		goto out;
	*n_p = t.pk.n;
	if (t.level < 0)
		snprintf(why, whylen,
			 "slurm-block: the whole system as one block "
			 "(llblocks of %d base blocks), %zu base block%s "
			 "by Slurm's best fit.",
			 1 << t.ll_level, t.used, t.used == 1 ? "" : "s");
	else
		snprintf(why, whylen,
			 "slurm-block: a block of %d base block%s, %zu used "
			 "by Slurm's best fit.",
			 1 << t.level, t.level ? "s" : "", t.used);
out:
	tp_free(t.bb);
	tp_free(t.bb_of);
	tp_free(t.pk.cand);
	tp_free(t.on_bb);
	tp_free(t.on_ll);
	tp_free(t.req);
	tp_free(t.key);
	tp_free(t.inb);
	tp_free(t.r);
	tp_free(t.list);
	return err;
}

const tp_policy_t tp__policy_slurm_block = {
    .name = "slurm-block",
    .doc = "Slurm 24.11 topology/block (eval_nodes_block) on the blocks "
	   "`topology-conf --block` writes",
    .choose = slurm_block,
};
