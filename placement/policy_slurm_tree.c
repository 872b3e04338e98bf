/*
 * slurm-tree: a model of Slurm 24.11.5's topology/tree node selection
 * (plugins/topology/tree/eval_nodes_tree.c, _eval_nodes_topo), and
 * slurm-tree-22.05 of 22.05.8's (select/cons_tres/job_test.c, the same
 * function before the move), each run on the switch table that `topoplace
 * fabric topology-conf` writes for the same fabric. Section numbers refer
 * to doc/slurm-tree-model.md (22.05; section 11 for what 24.11 changed).
 *
 * What 24.11 changed, for the jobs modelled here (11.):
 *  - a leaf closer to the leaves already picked replaces the best one
 *    whenever it fits (as far as the comparison climbed: the ancestor it
 *    stopped at), where 22.05 also wanted it to compare no worse;
 *  - using a leaf takes its count off every switch above it
 *    (_decrement_node_cnt), and so does filling required leaves (with
 *    the running total of nodes taken, as 24.11.5 does); 22.05 kept the
 *    counts it took once.
 * Neither can change a pick on a two-level tree: every leaf there has the
 * same parent and the same distance to the leaves picked.
 *
 * The switch table (1.5), as Slurm would build it from our file: the
 * switches of tp_stree_conf, the tree the writer prints, one SwitchName
 * line per group, top level first and, within a level, in group index
 * order; that line order is the switch index. Level-1 groups are the leaves
 * (Slurm level 0) with their hosts as Nodes=; level-k groups list their
 * children as Switches= (Slurm level k-1). parent is the parent group's line,
 * and 0 for a switch nobody lists as a child (Slurm's zero-filled array: the
 * first root for a single tree, as Slurm has it). switches_dist is the hop
 * count in the group tree, INFINITE between trees. Hosts in no level-1
 * group are written as a comment only, so Slurm never selects them (8.7).
 *
 * Modelled exactly:
 *  - node index order = host index order, the natural name sort (1.4);
 *  - switch index order = the file order above (1.5, 4.3);
 *  - the candidate filter: a node counts, as 1, when it can take the
 *    job's per-node share: up, >= gpus-per-node free GPUs (>= 1 for a
 *    --gpus job), idle for exclusive or whole-node jobs (7.3);
 *  - node weights (Weight=, 7.2; tp_policy_params_t.node_weight): above
 *    the GPU tier in a node's sched_weight, in both versions
 *    (node_scheduler.c _set_sched_weight), so they order the tiers
 *    first;
 *  - GPU weight tiers (11.3; cons_tres job_test.c "favor nodes with more
 *    co-located GPUs", in both versions): a node's tier is its usable
 *    GPUs (all of them for an exclusive GPU job, min(free, T) for
 *    --gpus=T, the per-node count for a shared job, so one tier there);
 *    larger tiers go first;
 *  - T4: the top switch is the highest-level switch with enough
 *    candidates and a lightest tier no heavier than the top's so far,
 *    the last such in index order (>= / <=);
 *  - T10/T10b: tiers gathered under the top switch, lightest first, until
 *    they hold the job's nodes and GPUs; the lighter tiers are then the
 *    job's (taken first, their switches required, distances seeded from
 *    every required switch, required leaves filled first);
 *  - T6: no top switch, no placement (a job never spans two trees);
 *  - T8/T10: candidates restricted to the top switch; fail when they are
 *    not sufficient, GPUs included for --gpus jobs;
 *  - T11a: switch counts taken once over the gathered tiers; 22.05 zeroes
 *    only a used leaf's count afterwards, so parent counts stay stale
 *    (4.3), 24.11 brings them up to date;
 *  - T11d: the leaf loop with its stall stop, the exact sequential scan
 *    of choose_best (4.1) and compare with the parent climb (4.2), dist
 *    as sums of switches_dist over all picked leaves with INFINITE
 *    sticky, nodes of a leaf in index order, the final test on the
 *    minimum node count;
 *  - --gpus=T (7.4): rem_nodes = 1, so every leaf "fits" and the leaf
 *    with the fewest candidates goes first; each node credits all its
 *    free GPUs; the loop stops when the total is reached. The job gets
 *    the GPUs in selection order (the last node the remainder): which
 *    GPUs Slurm then binds is decided after node selection (7.4).
 *
 * Request mapping: nodes=N[,gpus-per-node=G] is -N N [--gpus-per-node=G]
 * (min = max = req = N, rem_cpus met with the N-th node); nodes=N alone is
 * -N N --exclusive taking whole nodes; gpus=T is --gpus=T without -N or
 * -n (min = req = 1, no node cap).
 *
 * Left out, and why:
 *  - required nodes (-w) and T2/T3/T7/T9/T11b/T11c: tp_request_t has no
 *    node list;
 *  - powered-down and rebooting nodes' heavier sched_weight (7.2): the
 *    state has no such nodes;
 *  - GPUs bound to cores (gres.conf Cores=): a GPU whose socket has no
 *    free core is not usable there, which can split a shared job's one
 *    tier; our gres.conf binds none;
 *  - the --switches gate (5): the request has no switch count and the
 *    gate is a scheduling-time decision (wait up to wait4switch from the
 *    first evaluation); the placement's level-1 group span is Slurm's
 *    leaf_switch_count, so a simulator can apply the gate on top;
 *  - CPUs, _select_cores and _cpus_to_use (10.2): with one task per node
 *    the CPU condition is met exactly when the node condition is;
 *  - the knapsack retries of choose_nodes (10.4): node-count jobs
 *    succeed or fail on the first pass; --gpus jobs have no node cap
 *    here, so the retry that drops small nodes never triggers;
 *  - test 0 vs test 1 (1.1, 10.3): one evaluation on the real free state;
 *  - dragonfly, spread, busy, LLN, serial (10.1), --contiguous and
 *    TopoOptional (1.3, 8.8): non-default settings;
 *  - multi-homed nodes (10.6): every host is in exactly one level-1 group
 *    in our table, so they cannot occur;
 *  - node ranges -N a-b (8.4): the request has one node count.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "slurm_pick_int.h"

#define DIST_INF UINT64_MAX

typedef struct sw {
	uint32_t group;	 /* fabric group on this line */
	int level;	 /* Slurm's: 0 = leaf */
	uint32_t parent; /* line index; 0 when no line lists it */
	uint32_t up;	 /* real parent line or TP_ID_NONE (for distances) */
	long long cnt;
} sw_t;

typedef struct tree {
	tp__slurm_pick_t pk; /* cand: in the gathered tiers, not yet taken */
	sw_t *sw;
	size_t nsw;
	uint64_t *dist; /* per line */
	bool v24;	/* Slurm 24.11's rules (else 22.05's) */
	tp__slurm_key_t *key; /* per host: its tier, larger first */
	bool *inb;	/* per host: in the gathered tiers B, taken or not */
	bool *r;	/* per host: in the lighter tiers R (req2) */
	bool *req;	/* per line: required (meets R) */
} tree_t;

/* The switches in topology.conf's line order (tp_stree_conf). */
static tp_err_t build_table(tree_t *t)
{
	tp_stree_t conf;
	tp_err_t err = tp_stree_conf(t->pk.in->f, &conf);

	if (err)
		return err;
	if (!(t->sw = tp_calloc(conf.nsw + 1, sizeof(sw_t)))) {
		tp_stree_free(&conf);
		return TP_ERR_NOMEM;
	}
	t->nsw = conf.nsw;
	for (uint32_t i = 0; i < conf.nsw; i++) {
		const tp_stree_sw_t *s = &conf.sw[i];
		bool root = s->parent == i;

		t->sw[i].group = s->group;
		t->sw[i].level = s->level;
		t->sw[i].up = root ? TP_ID_NONE : s->parent;
		t->sw[i].parent = root ? 0 : s->parent;
	}
	tp_stree_free(&conf);
	return TP_OK;
}

static size_t depth(const tree_t *t, uint32_t a)
{
	size_t d = 0;

	while (t->sw[a].up != TP_ID_NONE) {
		a = t->sw[a].up;
		d++;
	}
	return d;
}

/* switches_dist[a][b]: hops in the (undirected) switch tree (1.5). */
static uint64_t switches_dist(const tree_t *t, uint32_t a, uint32_t b)
{
	size_t da = depth(t, a), db = depth(t, b);
	uint64_t hops = 0;

	for (; da > db; da--, hops++)
		a = t->sw[a].up;
	for (; db > da; db--, hops++)
		b = t->sw[b].up;
	while (a != b) {
		if (t->sw[a].up == TP_ID_NONE)
			return DIST_INF; /* different trees */
		a = t->sw[a].up;
		b = t->sw[b].up;
		hops += 2;
	}
	return hops;
}

/* _topo_compare_switches (4.2): +1 if i is better than j for rem nodes.
 * *i_fit: whether i's side fitted where the climb stopped (24.11 reads
 * it: i's ancestor, not i, once the climb has gone up). */
static int compare(const tree_t *t, uint32_t i, uint32_t j, long long rem,
		   bool *i_fit)
{
	const sw_t *s = t->sw;
	uint32_t a = i, b = j;

	/* A climb ends at the roots (parent 0 is a root or leads to one);
	 * the bound only guards against a malformed table. */
	for (int guard = 0; guard < 2 * TP_MAX_LEVELS + 4; guard++) {
		bool fa = s[a].cnt >= rem, fb = s[b].cnt >= rem;

		*i_fit = fa;
		if (fa && fb) {
			if (s[a].cnt < s[b].cnt)
				return 1;
			if (s[a].cnt > s[b].cnt)
				return -1;
			break;
		}
		if (fa)
			return 1;
		if (fb)
			return -1;
		if ((s[a].parent != a || s[b].parent != b) &&
		    s[a].parent != s[b].parent) {
			a = s[a].parent;
			b = s[b].parent;
			continue;
		}
		break;
	}
	if (s[a].cnt > s[b].cnt)
		return 1;
	if (s[a].cnt < s[b].cnt)
		return -1;
	if (s[a].level < s[b].level)
		return 1;
	if (s[a].level > s[b].level)
		return -1;
	return 0;
}

/* _topo_choose_best_switch (4.1), one candidate leaf i. A closer leaf
 * replaces the best when it compares no worse (22.05) or when it fits
 * (24.11, eval_nodes_tree.c:126, however many candidates it has). */
static void choose_best(const tree_t *t, uint32_t i, uint32_t *best)
{
	bool fit;
	int tcs;

	if (*best == TP_ID_NONE || t->dist[i] == DIST_INF || !t->sw[i].cnt) {
		if (t->sw[i].cnt > 0 && t->dist[i] != DIST_INF)
			*best = i;
		return;
	}
	tcs = compare(t, i, *best, t->pk.rem_nodes, &fit);
	if ((t->dist[i] < t->dist[*best] && (t->v24 ? fit : tcs >= 0)) ||
	    (t->dist[i] == t->dist[*best] && tcs > 0))
		*best = i;
}

/* 24.11's _decrement_node_cnt: line and every switch above it lose num
 * (not below 0); 22.05 keeps the counts it took once. */
static void decrement(tree_t *t, long long num, uint32_t line)
{
	if (!t->v24)
		return;
	for (uint32_t x = line; x != TP_ID_NONE; x = t->sw[x].up)
		t->sw[x].cnt = t->sw[x].cnt <= num ? 0 : t->sw[x].cnt - num;
}

/* Hosts under a line (group), via the fabric's per-group host lists. */
static const tp_group_t *grp(const tree_t *t, uint32_t line)
{
	return tp_fabric_group(t->pk.in->f, t->sw[line].group);
}

/* Hosts of set[] under a line, and the largest tier key among them
 * (-1 for none). */
static long long count_in(const tree_t *t, uint32_t line, const bool *set,
			  tp__slurm_key_t *key_p)
{
	const tp_group_t *gp = grp(t, line);
	long long c = 0;
	tp__slurm_key_t key = -1;

	for (size_t k = 0; k < gp->nhosts; k++) {
		uint32_t h = gp->hosts[k];
		if (!set[h])
			continue;
		c++;
		if (t->key[h] > key)
			key = t->key[h];
	}
	if (key_p)
		*key_p = key;
	return c;
}

/* _topo_add_dist: every line's distance plus its hops from line i
 * (INFINITE sticky). */
static void add_dist(tree_t *t, uint32_t i)
{
	for (uint32_t k = 0; k < t->nsw; k++) {
		uint64_t d = switches_dist(t, i, k);
		t->dist[k] = d == DIST_INF || t->dist[k] == DIST_INF
				 ? DIST_INF
				 : t->dist[k] + d;
	}
}

static tp_err_t eval_topo(tree_t *t, char *why, size_t whylen)
{
	const tp__policy_in_t *in = t->pk.in;
	size_t nh = tp_fabric_nhosts(in->f), span[TP_SPAN_NLEVELS], n0;
	uint32_t top = TP_ID_NONE;
	long long prev;
	tp__slurm_key_t top_key = -1;
	bool any_r;

	for (uint32_t h = 0; h < nh; h++) {
		t->pk.cand[h] =
		    tp__host_offer(in, h) > 0 &&
		    tp_fabric_host(in->f, h)->group[0] != TP_ID_NONE;
		t->key[h] = t->pk.cand[h] ? tp__slurm_tier_key(in, h) : -1;
	}
	/* T4: the highest-level switch with enough candidates and a tier no
	 * heavier than the top's so far; ties go to the last line (>=) */
	for (uint32_t i = 0; i < t->nsw; i++) {
		tp__slurm_key_t key;
		long long c = count_in(t, i, t->pk.cand, &key);

		if (c < t->pk.rem_nodes)
			continue;
		if (top == TP_ID_NONE ||
		    (t->sw[i].level >= t->sw[top].level && key >= top_key)) {
			top = i;
			top_key = key;
		}
	}
	/* T6 */
	if (top == TP_ID_NONE)
		return TP_ERR_NOTFOUND;
	/* T8, T10: the top switch's candidates, gathered by tier; the rest
	 * are candidates no more */
	if (!tp__slurm_gather(&t->pk, t->key, grp(t, top)->hosts,
			      grp(t, top)->nhosts, t->inb, t->r))
		return TP_ERR_NOTFOUND;
	for (uint32_t h = 0; h < nh; h++)
		t->pk.cand[h] = t->inb[h];
	/* T10b: the lighter tiers are the job's before any leaf is chosen,
	 * and every switch over one of them is required */
	if ((any_r = tp__slurm_pick_req2(&t->pk, t->r, nh))) {
		if (tp__slurm_pick_done(&t->pk))
			goto fini;
		if (t->pk.max_nodes <= 0)
			return TP_ERR_NOTFOUND;
	}
	/* T11a: counts once, over B (taken or not) */
	for (uint32_t i = 0; i < t->nsw; i++) {
		t->sw[i].cnt = count_in(t, i, t->inb, NULL);
		t->req[i] = any_r && count_in(t, i, t->r, NULL) > 0;
		t->dist[i] = 0;
	}
	/* T11b: the required leaves first, in line order; 24.11 takes the
	 * count of every node the fill took so far off each (its running
	 * total) */
	n0 = t->pk.n;
	for (uint32_t i = 0; any_r && i < t->nsw; i++) {
		const tp_group_t *gp = grp(t, i);
		if (!t->req[i] || t->sw[i].level != 0)
			continue;
		for (size_t k = 0; k < gp->nhosts; k++)
			if (tp__slurm_pick_try(&t->pk, gp->hosts[k]))
				goto fini;
		decrement(t, (long long)(t->pk.n - n0), i);
	}
	for (uint32_t i = 0; i < t->nsw; i++)
		if (t->req[i])
			add_dist(t, i);
	/* T11d */
	prev = t->pk.rem_nodes + 1;
	for (;;) {
		uint32_t best = TP_ID_NONE;
		const tp_group_t *gp;

		if (t->pk.rem_nodes == prev)
			break; /* stall */
		prev = t->pk.rem_nodes;
		for (uint32_t i = 0; i < t->nsw; i++)
			if (t->sw[i].level == 0 && !t->req[i])
				choose_best(t, i, &best);
		if (best == TP_ID_NONE)
			break;
		add_dist(t, best);
		gp = grp(t, best);
		for (size_t k = 0; k < gp->nhosts && t->pk.max_nodes > 0; k++)
			if (tp__slurm_pick_try(&t->pk, gp->hosts[k]))
				goto fini;
		decrement(t, t->sw[best].cnt, best);
		t->sw[best].cnt = 0;
	}
	if (t->pk.min_rem_nodes > 0 || t->pk.got_gpus < t->pk.need_gpus)
		return TP_ERR_NOTFOUND;
fini:
	tp_span_of(in->f, t->pk.hosts, t->pk.n, span);
	snprintf(why, whylen,
		 "%s: top switch on level %d, %zu leaf switch%s by "
		 "Slurm's best fit in switch order.",
		 t->v24 ? "slurm-tree" : "slurm-tree-22.05", t->sw[top].level,
		 span[TP_SPAN_GROUPS], span[TP_SPAN_GROUPS] == 1 ? "" : "es");
	return TP_OK;
}

static tp_err_t slurm_tree(const tp__policy_in_t *in, bool v24, uint32_t *hosts,
			   int *gpus, size_t max, size_t *n_p, char *why,
			   size_t whylen)
{
	size_t nh = tp_fabric_nhosts(in->f);
	tree_t t = {.pk = {.in = in, .hosts = hosts, .gpus = gpus, .max = max},
		    .v24 = v24};
	tp_err_t err;

	if ((err = build_table(&t)))
		goto out;
	t.pk.cand = tp_calloc(nh + 1, sizeof(bool));
	t.inb = tp_calloc(nh + 1, sizeof(bool));
	t.r = tp_calloc(nh + 1, sizeof(bool));
	t.key = tp_calloc(nh + 1, sizeof(tp__slurm_key_t));
	t.dist = tp_calloc(t.nsw + 1, sizeof(uint64_t));
	t.req = tp_calloc(t.nsw + 1, sizeof(bool));
	if (!t.pk.cand || !t.inb || !t.r || !t.key || !t.dist || !t.req) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	tp__slurm_pick_reset(&t.pk, in);
	if (!(err = eval_topo(&t, why, whylen)))
		*n_p = t.pk.n;
out:
	tp_free(t.sw);
	tp_free(t.pk.cand);
	tp_free(t.inb);
	tp_free(t.r);
	tp_free(t.key);
	tp_free(t.dist);
	tp_free(t.req);
	return err;
}

static tp_err_t slurm_tree_24(const tp__policy_in_t *in, uint32_t *hosts,
			      int *gpus, size_t max, size_t *n_p, char *why,
			      size_t whylen)
{
	return slurm_tree(in, true, hosts, gpus, max, n_p, why, whylen);
}

static tp_err_t slurm_tree_22(const tp__policy_in_t *in, uint32_t *hosts,
			      int *gpus, size_t max, size_t *n_p, char *why,
			      size_t whylen)
{
	return slurm_tree(in, false, hosts, gpus, max, n_p, why, whylen);
}

const tp_policy_t tp__policy_slurm_tree = {
    .name = "slurm-tree",
    .doc = "Slurm 24.11 cons_tres with topology/tree (eval_nodes_tree) on "
	   "the topology.conf topoplace writes",
    .choose = slurm_tree_24,
};

const tp_policy_t tp__policy_slurm_tree_22 = {
    .name = "slurm-tree-22.05",
    .doc = "Slurm 22.05 cons_tres with topology/tree (_eval_nodes_topo) on "
	   "the topology.conf topoplace writes",
    .choose = slurm_tree_22,
};
