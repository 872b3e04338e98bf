/*
 * Collective cost model: alpha-beta per algorithm on the routed link graph.
 *
 * Notes
 *
 * Routing follows what an InfiniBand subnet manager does on a fat tree
 * (up/down with destination-based ECMP): CA -> its leaf, up while the
 * current switch cannot reach the destination leaf downward, then down.
 * At every choice only links towards switches that reach the destination
 * qualify, and the pick is the destination's dense index in its subnet
 * (its "LID") modulo their count, afresh at every switch on the way up, as
 * OpenSM's engines balance each switch's routes over its ports: the hosts
 * under one leaf spread over its up-links, and one host's LIDs over a
 * spine's links to the cores (checked against OpenSM's tables on ibsim:
 * tests/integration/routes_ibsim.sh). Links the state marks dead (health 0) are
 * skipped, as the SM would route around them. Rails are separate subnets:
 * two hosts talk over pairs of CAs on the same subnet (the k-th CA of each
 * host on that subnet), never across.
 *
 * Each link direction is its own resource (full duplex) with capacity
 * gbps * health - background, floored at MIN_RESIDUAL of gbps * health.
 * The flows of one phase share them max-min fairly (progressive filling);
 * a transfer lasts bytes / rate of its slowest flow.
 *
 * Formulas (S bytes, n hosts in the given order, P = sum of ranks, alpha
 * and hop_s from the params, h = most switches any flow of the phase
 * crosses: 1 under one switch, 3 leaf-spine-leaf; NVLink hops count 0):
 *   ring       V = 2(P-1)/P * S on every ring edge; latency
 *              2(P-1) * (alpha + h * hop_s). Inside a host with g > 1
 *              ranks the ring passes g-1 NVLink edges of V each.
 *   RS / AG    the same ring with V = (P-1)/P * S, latency (P-1) * (...).
 *   tree and hierarchical
 *              the schedules of sched/ (tp_sched.h), the ones the plan
 *              records and the collective library runs, routed edge by
 *              edge, phase after phase:
 *              tree: the plan's two level-wise double binary trees (NCCL's
 *              btree/dtree inside each level-1 group, then over the groups'
 *              roots level by level), every edge S/2 up and S/2 down, both
 *              trees pipelined in one phase; in the chain inside a host
 *              each GPU sends S towards the root and S away from it over
 *              NVLink (2S); latency 2 * depth * (alpha + h * hop_s) +
 *              2(g-1) * alpha, depth = the deeper tree's. The chunks
 *              fill a pipeline of k = 2 depth + 2(g-1) stages: the
 *              flows' time x (1 + (k-1) / nch), nch = S/2 / chunk_bytes
 *              (rounded up) chunks a tree.
 *              hierarchical: reduce-scatter inside the host ((g-1)/g * S
 *              on NVLink), per local rank a ring reduce-scatter of its
 *              shard inside each level-1 group, per (member, local rank)
 *              channel a cross-group ring all-reduce of its sub-shard
 *              between corresponding members, each rank on its own rail
 *              (so every host and NIC of a group carries cross traffic),
 *              the all-gathers back. Latency 2 host phases (a wait
 *              on the host's segment each, TP_SCHED_SEG_WAIT * alpha;
 *              2(g-1) * alpha as rings with host_ring) + 2(K-1) *
 *              (alpha + h_group * hop_s) + 2(m-1) * (alpha + h_cross *
 *              hop_s). Uneven groups: as many channels as the largest
 *              group has hosts, a smaller group's hosts holding runs of
 *              them; uneven ranks per host: the ring. A phase that
 *              mirrors an earlier one (the all-gathers) is priced once.
 * A host's GPUs are counts (the state records how many GPUs a job holds,
 * not which): a job with g of a host's GPUs is priced on its first g GPUs
 * and their NICs, and so is the traffic tp_traffic adds for it; two jobs
 * sharing a host are priced as sharing its first NICs.
 * An inter-host edge (one that sched/ does not keep to a rail) is split
 * into R equal sub-flows, one per CA pair of the rails its GPUs use (NCCL
 * runs one channel per NIC; R is at most the ranks on either host because
 * a GPU drives its nearest NIC). Channels
 * are static, so the edge lasts (V/R) / slowest sub-flow: one degraded
 * rail slows the whole collective, as it does on a cluster. Consecutive
 * hosts in one multi-node NVLink domain talk over NVLink instead.
 * So on one switch with 1 GPU per host and links of B Gb/s, ring costs
 * exactly 2(P-1)/P * S/B + 2(P-1) * (alpha + hop_s).
 *
 * tp_cost_link_load runs the same phases and adds up the bytes of every
 * flow on every directed link it crosses (a mirrored phase counts twice).
 *
 * cross_top_bytes counts every flow that reaches a top-level switch once
 * with the bytes it carries (top = highest switch level, at least 2).
 *
 * GPUs without an NVLink rate (generated fabrics, nvidia-smi without
 * NVLink columns) get params.nvlink_gbps, as the header says; pcie_gbps
 * is checked but not used yet, because node data does not tell "no
 * NVLink" from "not measured".
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "placement_int.h"
#include "tp_sched.h"

/* A link saturated by other jobs still passes some of ours (IB arbitrates
 * between flows rather than starving one), and a finite prediction lets
 * policies rank placements on a loaded fabric. */
#define MIN_RESIDUAL 0.05
/* A host never has this many GPUs; bounds P so it cannot overflow. */
#define MAX_RANKS_PER_HOST (1 << 20)

typedef struct hop {
	uint32_t sw;  /* switch at the other end */
	uint32_t res; /* directed link: 2 * link + (0: node[0] -> node[1]) */
} hop_t;

struct tp_cost_ctx {
	const tp_fabric_t *f;
	tp_cost_params_t p;
	int top;		   /* highest switch level */
	size_t maxpath;		   /* most directed links one route can take */
	size_t maxcas;		   /* most CAs on one host */
	int *level;		   /* per switch */
	uint32_t *up_off, *dn_off; /* CSR per switch into up[] / dn[] */
	hop_t *up, *dn;		   /* dn[] sorted by child per switch */
	bool *up_same;	    /* all parents reach the same leaves (fat trees) */
	bool *up_direct;    /* a parent is a leaf (cables inside level 1) */
	uint32_t *leaf_bit; /* level-1 switch: its bit in its subnet's sets */
	size_t *reach_off;  /* level >= 2: first word of its leaf set */
	uint64_t *reach;
	uint32_t *ca_up, *ca_dn; /* CA -> leaf and leaf -> CA resources */
	uint32_t *ca_key;	 /* dense index of the CA in its subnet */
	uint32_t *ca_link; /* CA's cable to its leaf (tp_fabric_ca_cables) */
};

void tp_cost_params_defaults(tp_cost_params_t *p)
{
	if (!p)
		return;
	p->alpha_s = 5e-6;
	p->hop_s = 0.3e-6;
	/* H100 NVLink 4: 18 links x 25 GB/s per direction */
	p->nvlink_gbps = 3600;
	p->pcie_gbps = 256;
	p->chunk_bytes = 256 << 10;
	p->host_ring = false;
	p->nics_by_rate = false;
	p->coll_rings = false;
	p->hier_segment = 0;
}

static bool params_ok(const tp_cost_params_t *p)
{
	return isfinite(p->alpha_s) && p->alpha_s >= 0 && isfinite(p->hop_s) &&
	       p->hop_s >= 0 && isfinite(p->nvlink_gbps) &&
	       p->nvlink_gbps > 0 && isfinite(p->pcie_gbps) &&
	       p->pcie_gbps > 0 && isfinite(p->chunk_bytes) &&
	       p->chunk_bytes >= 0 && isfinite(p->hier_segment) &&
	       p->hier_segment >= 0;
}

void tp_cost_ctx_destroy(tp_cost_ctx_t *c)
{
	if (!c)
		return;
	tp_free(c->level);
	tp_free(c->up_direct);
	tp_free(c->up_off);
	tp_free(c->dn_off);
	tp_free(c->up);
	tp_free(c->dn);
	tp_free(c->up_same);
	tp_free(c->leaf_bit);
	tp_free(c->reach_off);
	tp_free(c->reach);
	tp_free(c->ca_up);
	tp_free(c->ca_dn);
	tp_free(c->ca_key);
	tp_free(c->ca_link);
	tp_free(c);
}

const tp_cost_params_t *tp_cost_ctx_params(const tp_cost_ctx_t *c)
{
	return &c->p;
}

static uint32_t res_from(const tp_link_t *l, size_t i, tp_node_kind_t kind,
			 uint32_t from)
{
	bool fwd = l->kind[0] == kind && l->node[0] == from;
	return (uint32_t)(2 * i + (fwd ? 0 : 1));
}

/* A usable switch-switch link that runs up (tp_fabric_switch_above):
 * *lo_p below, *hi_p above. A fat tree's links are one level apart; a
 * cable inside a level runs up towards the top of the fabric, as an updn
 * subnet manager routes it. Cables between subnets cannot exist but would
 * break the per-subnet leaf numbering. */
static bool updown(const tp_fabric_t *f, size_t i, uint32_t *lo_p,
		   uint32_t *hi_p)
{
	const tp_link_t *l = tp_fabric_link(f, i);
	uint32_t a = l->node[0], b = l->node[1];

	if (l->kind[0] != TP_NODE_SWITCH || l->kind[1] != TP_NODE_SWITCH ||
	    !l->active || !(l->gbps > 0) || a == b ||
	    tp_fabric_switch(f, a)->subnet != tp_fabric_switch(f, b)->subnet)
		return false;
	if (tp_fabric_switch_above(f, b, a)) {
		*lo_p = a;
		*hi_p = b;
		return true;
	}
	if (tp_fabric_switch_above(f, a, b)) {
		*lo_p = b;
		*hi_p = a;
		return true;
	}
	return false;
}

static int hop_cmp(const void *x, const void *y)
{
	const hop_t *a = x, *b = y;

	if (a->sw != b->sw)
		return a->sw < b->sw ? -1 : 1;
	return a->res < b->res ? -1 : a->res > b->res;
}

static tp_err_t build_adjacency(tp_cost_ctx_t *c, size_t nsw, size_t nlink)
{
	const tp_fabric_t *f = c->f;
	uint32_t *fill_up = NULL, *fill_dn = NULL;
	uint32_t lo, hi;
	tp_err_t err = TP_ERR_NOMEM;

	c->up_off = tp_calloc(nsw + 1, sizeof(uint32_t));
	c->dn_off = tp_calloc(nsw + 1, sizeof(uint32_t));
	if (!c->up_off || !c->dn_off)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < nlink; i++)
		if (updown(f, i, &lo, &hi)) {
			c->up_off[lo + 1]++;
			c->dn_off[hi + 1]++;
		}
	for (size_t s = 0; s < nsw; s++) {
		c->up_off[s + 1] += c->up_off[s];
		c->dn_off[s + 1] += c->dn_off[s];
	}
	c->up = tp_malloc((c->up_off[nsw] + 1) * sizeof(hop_t));
	c->dn = tp_malloc((c->dn_off[nsw] + 1) * sizeof(hop_t));
	fill_up = tp_malloc((nsw + 1) * sizeof(uint32_t));
	fill_dn = tp_malloc((nsw + 1) * sizeof(uint32_t));
	if (!c->up || !c->dn || !fill_up || !fill_dn)
		goto out;
	memcpy(fill_up, c->up_off, (nsw + 1) * sizeof(uint32_t));
	memcpy(fill_dn, c->dn_off, (nsw + 1) * sizeof(uint32_t));
	for (size_t i = 0; i < nlink; i++) {
		const tp_link_t *l = tp_fabric_link(f, i);
		if (!updown(f, i, &lo, &hi))
			continue;
		c->up[fill_up[lo]++] =
		    (hop_t){hi, res_from(l, i, TP_NODE_SWITCH, lo)};
		c->dn[fill_dn[hi]++] =
		    (hop_t){lo, res_from(l, i, TP_NODE_SWITCH, hi)};
	}
	/* a spine finds the cables to one leaf by binary search */
	for (size_t s = 0; s < nsw; s++)
		if (c->dn_off[s + 1] - c->dn_off[s] > 1)
			qsort(&c->dn[c->dn_off[s]],
			      c->dn_off[s + 1] - c->dn_off[s], sizeof(hop_t),
			      hop_cmp);
	err = TP_OK;
out:
	tp_free(fill_up);
	tp_free(fill_dn);
	return err;
}

static int subnet_of(int subnet, int nsub)
{
	return subnet >= 0 && subnet < nsub ? subnet : 0;
}

/* Leaves reachable downward, as one bitset per switch at level >= 2 (and
 * per leaf with a leaf below it, hanging off it) over the leaves of its
 * own subnet: a 16k-host rail fabric has a few thousand leaves split over
 * its rails, so the sets stay small and a route test is one bit. Built
 * bottom-up (level by level, inside a level from the highest rank): a
 * switch reaches its children and what they reach. */
typedef struct reach_ord {
	uint64_t key; /* level, then rank downward */
	uint32_t sw;
} reach_ord_t;

static int reach_ord_cmp(const void *x, const void *y)
{
	const reach_ord_t *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	/* on one level and rank the lower index is above: children first */
	return a->sw > b->sw ? -1 : a->sw < b->sw;
}

static tp_err_t build_reach(tp_cost_ctx_t *c, size_t nsw, int nsub)
{
	const tp_fabric_t *f = c->f;
	uint32_t *nleaf = tp_calloc((size_t)nsub, sizeof(uint32_t));
	size_t words = 0, longest = 0;
	reach_ord_t *order = tp_malloc((nsw + 1) * sizeof(reach_ord_t));
	size_t *dlen = tp_calloc(nsw + 1, sizeof(size_t));
	tp_err_t err = TP_ERR_NOMEM;

	c->leaf_bit = tp_malloc((nsw + 1) * sizeof(uint32_t));
	c->reach_off = tp_malloc((nsw + 1) * sizeof(size_t));
	if (!nleaf || !order || !dlen || !c->leaf_bit || !c->reach_off)
		goto out;
	for (size_t s = 0; s < nsw; s++) {
		int sub = subnet_of(tp_fabric_switch(f, s)->subnet, nsub);
		c->leaf_bit[s] = c->level[s] == 1 ? nleaf[sub]++ : TP_ID_NONE;
	}
	for (size_t s = 0; s < nsw; s++) {
		int sub = subnet_of(tp_fabric_switch(f, s)->subnet, nsub);
		int rank = tp_fabric_switch(f, s)->rank;
		c->reach_off[s] = SIZE_MAX;
		if (c->level[s] >= 2 ||
		    (c->level[s] == 1 && c->dn_off[s + 1] > c->dn_off[s])) {
			c->reach_off[s] = words;
			words += (nleaf[sub] + 63) / 64;
		}
		order[s] = (reach_ord_t){
		    (uint64_t)c->level[s] << 32 |
			(uint32_t)(INT32_MAX - (rank > 0 ? rank : 0)),
		    (uint32_t)s};
	}
	if (!(c->reach = tp_calloc(words + 1, sizeof(uint64_t))))
		goto out;
	qsort(order, nsw, sizeof(*order), reach_ord_cmp);
	for (size_t k = 0; k < nsw; k++) {
		uint32_t s = order[k].sw;
		int sub = subnet_of(tp_fabric_switch(f, s)->subnet, nsub);
		size_t nw = (nleaf[sub] + 63) / 64;
		uint64_t *set;

		for (uint32_t p = c->dn_off[s]; p < c->dn_off[s + 1]; p++)
			if (dlen[c->dn[p].sw] + 1 > dlen[s])
				dlen[s] = dlen[c->dn[p].sw] + 1;
		if (dlen[s] > longest)
			longest = dlen[s];
		if (c->reach_off[s] == SIZE_MAX)
			continue;
		set = &c->reach[c->reach_off[s]];
		for (uint32_t p = c->dn_off[s]; p < c->dn_off[s + 1]; p++) {
			uint32_t ch = c->dn[p].sw;
			if (c->level[ch] == 1)
				set[c->leaf_bit[ch] / 64] |=
				    1ULL << (c->leaf_bit[ch] % 64);
			if (c->reach_off[ch] == SIZE_MAX)
				continue;
			for (size_t w = 0; w < nw; w++)
				set[w] |= c->reach[c->reach_off[ch] + w];
		}
	}
	/* In a fat tree every parent of a switch reaches the same leaves, so
	 * a route asks one of them instead of all (most of a route's time). */
	/* a route climbs one chain of up-links and descends another: each
	 * at most the longest (a fat tree's: top - 1) */
	if (2 * longest + 2 > c->maxpath)
		c->maxpath = 2 * longest + 2;
	c->up_same = tp_calloc(nsw + 1, sizeof(bool));
	c->up_direct = tp_calloc(nsw + 1, sizeof(bool));
	if (!c->up_same || !c->up_direct)
		goto out;
	for (size_t s = 0; s < nsw; s++) {
		uint32_t lo = c->up_off[s], hi = c->up_off[s + 1];
		for (uint32_t p = lo; p < hi; p++)
			c->up_direct[s] |= c->level[c->up[p].sw] == 1;
		uint32_t a = lo < hi ? c->up[lo].sw : 0;
		int sub = subnet_of(tp_fabric_switch(f, s)->subnet, nsub);
		size_t nw = (nleaf[sub] + 63) / 64;
		bool same = true;

		for (uint32_t p = lo + 1; p < hi && same; p++) {
			uint32_t b = c->up[p].sw;
			if (b == a)
				continue;
			same = c->level[a] >= 2 && c->level[b] >= 2 &&
			       !memcmp(&c->reach[c->reach_off[a]],
				       &c->reach[c->reach_off[b]],
				       nw * sizeof(uint64_t));
		}
		c->up_same[s] = same;
	}
	err = TP_OK;
out:
	tp_free(nleaf);
	tp_free(order);
	tp_free(dlen);
	return err;
}

typedef struct ca_pos {
	uint32_t subnet, leaf, port, ca;
} ca_pos_t;

static int ca_pos_cmp(const void *x, const void *y)
{
	const ca_pos_t *a = x, *b = y;

	if (a->subnet != b->subnet)
		return a->subnet < b->subnet ? -1 : 1;
	if (a->leaf != b->leaf)
		return a->leaf < b->leaf ? -1 : 1;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	return a->ca < b->ca ? -1 : a->ca > b->ca;
}

/* Each CA's cable to its leaf, and its key: its dense index in its
 * subnet counted leaf by leaf in switch-port order, the order a subnet
 * manager discovers (and numbers) end ports in. D-mod-K on that key
 * spreads the hosts of one leaf over its up-links; a key in name order
 * would not (hosts cabled round-robin over leaves would all share one
 * residue and so one up-link). CAs without a leaf come last. */
static tp_err_t build_cas(tp_cost_ctx_t *c, size_t nca, int nsub)
{
	const tp_fabric_t *f = c->f;
	ca_pos_t *pos = tp_malloc((nca + 1) * sizeof(ca_pos_t));
	uint32_t *next = tp_calloc((size_t)nsub, sizeof(uint32_t));
	tp_err_t err = TP_ERR_NOMEM;

	c->ca_up = tp_malloc((nca + 1) * sizeof(uint32_t));
	c->ca_dn = tp_malloc((nca + 1) * sizeof(uint32_t));
	c->ca_key = tp_malloc((nca + 1) * sizeof(uint32_t));
	c->ca_link = tp_malloc((nca + 1) * sizeof(uint32_t));
	if (!pos || !next || !c->ca_up || !c->ca_dn || !c->ca_key ||
	    !c->ca_link)
		goto out;
	/* the cable finalize took for ca->leaf: the lowest cabled CA port */
	tp_fabric_ca_cables(f, c->ca_link);
	for (size_t i = 0; i < nca; i++) {
		const tp_ca_t *ca = tp_fabric_ca(f, i);
		uint32_t li = c->ca_link[i];
		c->ca_up[i] = c->ca_dn[i] = TP_ID_NONE;
		pos[i] = (ca_pos_t){(uint32_t)subnet_of(ca->subnet, nsub),
				    ca->leaf, UINT32_MAX, (uint32_t)i};
		if (li == TP_ID_NONE)
			continue;
		const tp_link_t *l = tp_fabric_link(f, li);
		int e = l->kind[0] == TP_NODE_CA && l->node[0] == i ? 0 : 1;
		pos[i].port = (uint32_t)l->port[1 - e];
		if (l->active && l->gbps > 0) {
			c->ca_up[i] = res_from(l, li, TP_NODE_CA, (uint32_t)i);
			c->ca_dn[i] =
			    res_from(l, li, TP_NODE_SWITCH, l->node[1 - e]);
		}
	}
	qsort(pos, nca, sizeof(*pos), ca_pos_cmp);
	for (size_t i = 0; i < nca; i++)
		c->ca_key[pos[i].ca] = next[pos[i].subnet]++;
	err = TP_OK;
out:
	tp_free(pos);
	tp_free(next);
	return err;
}

/* Switch s's cables up (dir 0) or down (dir 1): hop[*lo_p .. *hi_p). */
static const hop_t *cables(const tp_cost_ctx_t *c, uint32_t s, int dir,
			   uint32_t *lo_p, uint32_t *hi_p)
{
	*lo_p = dir ? c->dn_off[s] : c->up_off[s];
	*hi_p = dir ? c->dn_off[s + 1] : c->up_off[s + 1];
	return dir ? c->dn : c->up;
}

struct call;
static size_t cable_bfs(const tp_cost_ctx_t *c, const struct call *k,
			uint32_t from, int32_t *dist, uint32_t *q);

/* Room for any simple route: it crosses each switch of its connected part
 * at most once (minhop's shortest paths around cables dead in the state
 * can be long), so maxpath covers the largest part's switches and the
 * two CA cables. Only the reservation of one edge's routes grows with it
 * (add_edge_rail), not what a route takes. */
static tp_err_t path_bound(tp_cost_ctx_t *c, size_t nsw)
{
	uint32_t *q = tp_malloc((nsw + 1) * sizeof(uint32_t));
	int32_t *dist = tp_malloc((nsw + 1) * sizeof(int32_t));

	if (!q || !dist) {
		tp_free(q);
		tp_free(dist);
		return TP_ERR_NOMEM;
	}
	for (size_t s = 0; s < nsw; s++)
		dist[s] = -1;
	for (size_t s0 = 0; s0 < nsw; s0++) {
		size_t part = dist[s0] < 0
				  ? cable_bfs(c, NULL, (uint32_t)s0, dist, q)
				  : 0;
		if (part + 1 > c->maxpath)
			c->maxpath = part + 1;
	}
	tp_free(q);
	tp_free(dist);
	return TP_OK;
}

tp_err_t tp_cost_ctx_create(const tp_fabric_t *f, const tp_cost_params_t *p,
			    tp_cost_ctx_t **ctx_p)
{
	tp_cost_params_t def;
	tp_cost_ctx_t *c;
	size_t nsw, nca, nlink, nhost;
	int nsub = 1;
	tp_err_t err = TP_ERR_NOMEM;

	if (!f || !ctx_p)
		return TP_ERR_INVAL;
	if (!p) {
		tp_cost_params_defaults(&def);
		p = &def;
	}
	if (!params_ok(p))
		return TP_ERR_INVAL;
	nsw = tp_fabric_nswitches(f);
	nca = tp_fabric_ncas(f);
	nlink = tp_fabric_nlinks(f);
	nhost = tp_fabric_nhosts(f);
	/* resource ids are 2 * link + direction in 32 bits */
	if (nlink >= UINT32_MAX / 2 || nsw >= UINT32_MAX / 2 ||
	    nca >= UINT32_MAX / 2 || nhost >= UINT32_MAX / 2)
		return TP_ERR_RANGE;
	for (size_t s = 0; s < nsw; s++)
		if (tp_fabric_switch(f, s)->subnet >= nsub)
			nsub = tp_fabric_switch(f, s)->subnet + 1;
	for (size_t i = 0; i < nca; i++)
		if (tp_fabric_ca(f, i)->subnet >= nsub)
			nsub = tp_fabric_ca(f, i)->subnet + 1;
	if (!(c = tp_calloc(1, sizeof(*c))))
		return TP_ERR_NOMEM;
	c->f = f;
	c->p = *p;
	c->top = 0;
	if (!(c->level = tp_malloc((nsw + 1) * sizeof(int))))
		goto fail;
	for (size_t s = 0; s < nsw; s++) {
		int l = tp_fabric_switch(f, s)->level;
		c->level[s] = l > 0 ? l : 0;
		if (c->level[s] > c->top)
			c->top = c->level[s];
	}
	/* up strictly climbs and down strictly descends a level */
	c->maxpath = 2 * (size_t)c->top + 2;
	for (size_t h = 0; h < nhost; h++)
		if (tp_fabric_host(f, h)->ncas > c->maxcas)
			c->maxcas = tp_fabric_host(f, h)->ncas;
	if ((err = build_adjacency(c, nsw, nlink)) ||
	    (err = build_reach(c, nsw, nsub)) || (err = path_bound(c, nsw)) ||
	    (err = build_cas(c, nca, nsub)))
		goto fail;
	*ctx_p = c;
	return TP_OK;
fail:
	tp_cost_ctx_destroy(c);
	return err ? err : TP_ERR_NOMEM;
}

/* ---- max-min fair rates (progressive filling) ---- */

typedef struct hent {
	double key;
	uint32_t r;
} hent_t;

static bool hless(const hent_t *a, const hent_t *b)
{
	return a->key < b->key || (a->key == b->key && a->r < b->r);
}

static void hpush(hent_t *h, size_t *n, double key, uint32_t r)
{
	size_t i = (*n)++;

	h[i] = (hent_t){key, r};
	while (i) {
		size_t p = (i - 1) / 2;
		if (!hless(&h[i], &h[p]))
			break;
		hent_t t = h[p];
		h[p] = h[i];
		h[i] = t;
		i = p;
	}
}

static hent_t hpop(hent_t *h, size_t *n)
{
	hent_t top = h[0];
	size_t i = 0;

	h[0] = h[--(*n)];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && hless(&h[l], &h[m]))
			m = l;
		if (r < *n && hless(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		hent_t t = h[m];
		h[m] = h[i];
		h[i] = t;
		i = m;
	}
	return top;
}

static void hswap(hent_t *a, hent_t *b)
{
	hent_t t = *a;

	*a = *b;
	*b = t;
}

/* a[0..n) in hless order, in place: quicksort on the median of three,
 * the smaller side first so the stack stays O(log n), short runs by
 * insertion; the comparison inline. */
static void hsort(hent_t *a, size_t n)
{
	while (n > 12) {
		size_t m = n / 2, i = 0, j = n - 1;
		if (hless(&a[m], &a[0]))
			hswap(&a[m], &a[0]);
		if (hless(&a[n - 1], &a[m]))
			hswap(&a[n - 1], &a[m]);
		if (hless(&a[m], &a[0]))
			hswap(&a[m], &a[0]);
		hent_t p = a[m];
		for (;;) {
			while (hless(&a[i], &p))
				i++;
			while (hless(&p, &a[j]))
				j--;
			if (i >= j)
				break;
			hswap(&a[i++], &a[j--]);
		}
		/* a[0..j] <= p <= a[j+1..n) */
		if (j + 1 < n - j - 1) {
			hsort(a, j + 1);
			a += j + 1;
			n -= j + 1;
		} else {
			hsort(a + j + 1, n - j - 1);
			n = j + 1;
		}
	}
	for (size_t i = 1; i < n; i++) {
		hent_t v = a[i];
		size_t j = i;
		for (; j > 0 && hless(&v, &a[j - 1]); j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

/* A scratch block, grown as needed and kept by its owner between uses
 * (a prediction solves a phase at a time). */
typedef struct scratch {
	void *buf;
	size_t cap;
} scratch_t;

/* At least need bytes of s (old contents lost); NULL on NOMEM. */
static void *scratch_get(scratch_t *s, size_t need)
{
	if (need > s->cap) {
		void *p = tp_malloc(need);
		if (!p)
			return NULL;
		tp_free(s->buf);
		s->buf = p;
		s->cap = need;
	}
	return s->buf;
}

/* When no resource carries two flows (cnt[r + 1]: resource r's count), as
 * in a ring whose groups are contiguous or a ring inside each group, the
 * progressive filling below pops each flow's resources in order of
 * capacity, then index, and the first one freezes it at its whole
 * capacity: the same rates and bottlenecks without the heap. */
static bool alone(size_t nflows, const uint32_t *off, const uint32_t *res,
		  size_t nres, const double *cap, const uint32_t *cnt,
		  double *rate, uint32_t *bott)
{
	for (size_t r = 0; r < nres; r++)
		if (cnt[r + 1] > 1)
			return false;
	for (size_t i = 0; i < nflows; i++) {
		rate[i] = INFINITY;
		bott[i] = TP_ID_NONE;
		for (uint32_t j = off[i]; j < off[i + 1]; j++) {
			uint32_t r = res[j];
			double c = cap[r] > 0 ? cap[r] : 0;
			if (bott[i] == TP_ID_NONE || c < rate[i] ||
			    (c == rate[i] && r < bott[i])) {
				rate[i] = c;
				bott[i] = r;
			}
		}
	}
	return true;
}

/*
 * Flow i crosses resources res[off[i] .. off[i+1]) (indices < nres, each
 * of capacity cap[]). Fills rate[i] and bott[i], the resource that froze
 * it (TP_ID_NONE for a flow crossing nothing: rate INFINITY).
 *
 * Freezing the flows of the resource with the smallest fair share
 * rc/count never lowers another resource's share (it loses at most its
 * fair share per frozen flow), so a heap key is a lower bound of its
 * resource's share: a popped resource whose share grew since it was
 * pushed goes back with its share, otherwise it is the smallest. That
 * gives the exact progressive-filling answer with each resource in the
 * heap once, O(E log R), E = path entries, R = resources.
 *
 * The keys are distinct (ties go by resource), so any exact priority
 * queue pops in the same order: the first keys go in sorted once, the
 * few pushed back (about one pop in ten in the bench's cases) into a
 * heap, and the smaller head of the two pops. Half the pops find their
 * resource's flows all frozen: from the sorted run they cost a compare,
 * from the heap a sift-down. A resource is in one of the two at most
 * once, so the heap never outgrows the part of the sorted run already
 * popped and lives there: no more memory than the heap alone.
 */
static tp_err_t maxmin(scratch_t *ws, size_t nflows, const uint32_t *off,
		       const uint32_t *res, size_t nres, const double *cap,
		       double *rate, uint32_t *bott)
{
	size_t nent = off[nflows], nh = 0, ns = 0, next = 0;
	size_t need = (nres + 1) * (sizeof(double) + sizeof(hent_t)) +
		      (3 * (nres + 2) + nent + 1) * sizeof(uint32_t) +
		      (nflows + 1) * sizeof(bool);
	double *rc;
	hent_t *srt, *heap;
	uint32_t *roff, *fill, *cnt, *rfl;
	bool *done;

	if (!(rc = scratch_get(ws, need)))
		return TP_ERR_NOMEM;
	srt = heap = (hent_t *)(rc + nres + 1);
	roff = (uint32_t *)(srt + nres + 1);
	fill = roff + nres + 2;
	cnt = fill + nres + 2;
	rfl = cnt + nres + 2;
	done = (bool *)(rfl + nent + 1);
	memset(roff, 0, (nres + 2) * sizeof(uint32_t));
	memset(done, 0, (nflows + 1) * sizeof(bool));
	for (size_t j = 0; j < nent; j++)
		roff[res[j] + 1]++;
	if (alone(nflows, off, res, nres, cap, roff, rate, bott))
		return TP_OK;
	for (size_t r = 0; r < nres; r++)
		roff[r + 1] += roff[r];
	memcpy(fill, roff, nres * sizeof(uint32_t));
	for (size_t i = 0; i < nflows; i++) {
		rate[i] = INFINITY;
		bott[i] = TP_ID_NONE;
		for (uint32_t j = off[i]; j < off[i + 1]; j++)
			rfl[fill[res[j]]++] = (uint32_t)i;
	}
	/* A resource of one flow pops at its capacity; only the first of a
	 * flow's such resources to pop (smallest capacity, then index) can
	 * freeze it, any later one finds it frozen: the others stay out of
	 * the heap (fill[] marks the ones that go in). */
	for (size_t r = 0; r < nres; r++) {
		cnt[r] = roff[r + 1] - roff[r];
		rc[r] = cap[r] > 0 ? cap[r] : 0;
		fill[r] = cnt[r] > 1;
	}
	for (size_t i = 0; i < nflows; i++) {
		uint32_t m = TP_ID_NONE;
		for (uint32_t j = off[i]; j < off[i + 1]; j++) {
			uint32_t r = res[j];
			if (cnt[r] == 1 && (m == TP_ID_NONE || rc[r] < rc[m] ||
					    (rc[r] == rc[m] && r < m)))
				m = r;
		}
		if (m != TP_ID_NONE)
			fill[m] = 1;
	}
	for (size_t r = 0; r < nres; r++)
		if (fill[r])
			srt[ns++] = (hent_t){rc[r] / cnt[r], (uint32_t)r};
	hsort(srt, ns);
	while (next < ns || nh) {
		hent_t e = nh && (next == ns || hless(&heap[0], &srt[next]))
			       ? hpop(heap, &nh)
			       : srt[next++];
		uint32_t r = e.r;
		double share;

		if (!cnt[r])
			continue;
		share = (rc[r] > 0 ? rc[r] : 0) / cnt[r];
		if (share > e.key * (1 + 1e-12) + 1e-300) {
			hpush(heap, &nh, share, r);
			continue;
		}
		for (uint32_t k = roff[r]; k < roff[r + 1]; k++) {
			uint32_t i = rfl[k];
			if (done[i])
				continue;
			done[i] = true;
			rate[i] = share;
			bott[i] = r;
			for (uint32_t j = off[i]; j < off[i + 1]; j++) {
				rc[res[j]] -= share;
				cnt[res[j]]--;
			}
		}
	}
	return TP_OK;
}

tp_err_t tp__cost_maxmin(size_t nflows, const uint32_t *off,
			 const uint32_t *res, size_t nres, const double *cap,
			 double *rate, uint32_t *bott)
{
	scratch_t ws = {0};
	tp_err_t err = maxmin(&ws, nflows, off, res, nres, cap, rate, bott);

	tp_free(ws.buf);
	return err;
}

/* ---- one prediction ---- */

typedef struct flow {
	double bytes;
	uint32_t off; /* first entry in the phase's path[] */
	int hops;     /* switches crossed */
	bool top;     /* reaches a top-level switch */
} flow_t;

/* What one phase (a set of concurrent transfers) costs. */
typedef struct phase_out {
	double time_s;
	int hops;
	double cross_bytes;
	double bott_gbps;
	uint32_t bott_link;
} phase_out_t;

/* The buffers of one call, kept between calls (tp__cost_ws_create). */
/* A route the workspace keeps: its directed links at off in the route
 * pool, and route()'s other answers. */
typedef struct rte {
	uint32_t off;
	uint8_t len, hops;
	bool top;
} rte_t;

struct tp__cost_ws {
	scratch_t setup, seen, ps, mm, kept, keptn;
	flow_t *fl;
	size_t capfl;
	uint32_t *path;
	size_t cappath;
	/* the last schedule built (sched_cached), with the key of what it
	 * was built from (nkey words in key; knew: the next key) */
	tp_sched_t *sched;
	scratch_t key, knew;
	size_t nkey;
	/* routes met (cached_route), for this context and state: CA pair
	 * (a << 32 | b) -> entry of rt (nrt used), their links in rpool */
	const tp_cost_ctx_t *rctx;
	const tp_state_t *rst;
	tp_u64map_t rmap;
	rte_t *rt;
	size_t nrt, caprt;
	uint32_t *rpool;
	size_t rpooln, rpoolcap;
};

typedef struct call {
	const tp_cost_ctx_t *c;
	const tp_fabric_t *f;
	const tp_state_t *st;
	const uint32_t *hosts;
	const int *gpus;
	size_t n;
	double *nv;	   /* NVLink rate of the GPUs used on each host */
	uint64_t *rails;   /* per host: rails its ranks drive (the plan's) */
	int nrails;	   /* rails of the job's hosts */
	uint32_t *use_off; /* CAs the used GPUs sit next to, per host */
	uint32_t *use;
	uint32_t *pa, *pb; /* CA pairs of one edge */
	/* current phase: its flows and paths in b.fl, b.path */
	size_t nfl, npath;
	double nv_s, nv_gbps; /* slowest NVLink transfer */
	/* tp_cost_link_load only: bytes per directed link over the whole
	 * collective, the directed links touched, and how many times the
	 * current phase runs */
	double *load;
	uint32_t *touched;
	size_t ntouched;
	double load_mult;
	/* a pipelined hierarchical prediction only: per directed link
	 * touched (pipe_map: link -> index), the seconds its bytes over
	 * every phase take at its capacity */
	bool pipe;
	tp_u64map_t pipe_map;
	double *pipe_sec;
	size_t npipe, pipe_cap;
	/* the buffers (tp__cost_ws_t): call_setup's block, the phase's
	 * flows and paths, phase_solve's and max-min's scratch (ps, mm),
	 * and a solved phase kept for a later one with the same routes (see
	 * price_sched): its flows' rates and bottleneck links (kept), and
	 * how many flows each of its edges made (keptn) */
	struct tp__cost_ws b;
	flow_t *kfl;
	double *krate;
	uint32_t *klink, *kflows;
	bool keep;	   /* keep the phase being priced */
	tp__cost_ws_t *ws; /* where the buffers come from and go back to */
	/* hierarchical with nics_by_rate: the ranks' weights (wbuf), or
	 * NULL for an even split (job_weights) */
	const uint32_t *weight;
	uint32_t wbuf[TP_MAX_RANK_WEIGHTS];
	/* minhop: hops from every switch to leaf mh_dst over live cables,
	 * its queue; oom: it ran out of memory (the call fails NOMEM) */
	int32_t *mh_dist;
	uint32_t *mh_q, mh_dst;
	bool oom;
} call_t;

tp__cost_ws_t *tp__cost_ws_create(void)
{
	return tp_calloc(1, sizeof(tp__cost_ws_t));
}

static void ws_free_bufs(tp__cost_ws_t *w)
{
	tp_free(w->setup.buf);
	tp_free(w->seen.buf);
	tp_free(w->ps.buf);
	tp_free(w->mm.buf);
	tp_free(w->kept.buf);
	tp_free(w->keptn.buf);
	tp_free(w->fl);
	tp_free(w->path);
	tp_sched_destroy(w->sched);
	tp_free(w->key.buf);
	tp_free(w->knew.buf);
	tp_u64map_clear(&w->rmap);
	tp_free(w->rt);
	tp_free(w->rpool);
}

void tp__cost_ws_forget(tp__cost_ws_t *w)
{
	if (w)
		w->rctx = NULL; /* cached_route() starts again */
}

void tp__cost_ws_destroy(tp__cost_ws_t *w)
{
	if (w)
		ws_free_bufs(w);
	tp_free(w);
}

static bool link_dead(const call_t *k, uint32_t res)
{
	return k->st && !(k->st->health[res / 2] > 0);
}

static double link_cap(const call_t *k, uint32_t res)
{
	double base = tp_fabric_link(k->f, res / 2)->gbps, bg = 0, r;

	if (k->st) {
		double h = k->st->health[res / 2];
		base *= h > 0 ? h : 0;
		bg = k->st->bg[res] > 0 ? k->st->bg[res] : 0;
	}
	r = base - bg;
	return r > MIN_RESIDUAL * base ? r : MIN_RESIDUAL * base;
}

/* Gb/s of CA ca's cable after its health (other jobs' traffic aside): 0
 * when it is down. */
static double ca_gbps(const call_t *k, uint32_t ca)
{
	uint32_t r = k->c->ca_up[ca];
	double g;

	if (r == TP_ID_NONE || link_dead(k, r))
		return 0;
	g = tp_fabric_link(k->f, r / 2)->gbps;
	if (k->st)
		g *= k->st->health[r / 2];
	return g;
}

static bool reaches(const tp_cost_ctx_t *c, uint32_t s, uint32_t leaf)
{
	uint32_t b = c->leaf_bit[leaf];

	if (s == leaf)
		return true;
	if (c->reach_off[s] == SIZE_MAX || b == TP_ID_NONE)
		return false;
	return c->reach[c->reach_off[s] + b / 64] >> (b % 64) & 1;
}

bool tp__cost_reaches(const tp_cost_ctx_t *c, uint32_t s, uint32_t leaf)
{
	size_t n = c ? tp_fabric_nswitches(c->f) : 0;

	return s < n && leaf < n && c->level[leaf] == 1 && reaches(c, s, leaf);
}

/* Pick the key-th (mod count) of the live hops from hop[lo..hi) towards
 * switches reaching dst (all of them when all_reach), key the
 * destination's whole index at every switch (route()); going down the
 * path below a switch is nearly fixed and parallel cables are spread the
 * same way, as the switch's forwarding table would. */
static const hop_t *pick(const call_t *k, const hop_t *hop, uint32_t lo,
			 uint32_t hi, uint32_t dst, uint64_t key,
			 bool all_reach)
{
	const tp_cost_ctx_t *c = k->c;
	uint32_t cnt = 0, want;

	for (uint32_t p = lo; p < hi; p++)
		if (!link_dead(k, hop[p].res) &&
		    (all_reach || reaches(c, hop[p].sw, dst)))
			cnt++;
	if (!cnt)
		return NULL;
	want = (uint32_t)(key % cnt);
	for (uint32_t p = lo; p < hi; p++)
		if (!link_dead(k, hop[p].res) &&
		    (all_reach || reaches(c, hop[p].sw, dst)) && !want--)
			return &hop[p];
	return NULL;
}

static const hop_t *pick_up(const call_t *k, uint32_t cur, uint32_t dst,
			    uint64_t key)
{
	const tp_cost_ctx_t *c = k->c;
	uint32_t lo = c->up_off[cur], hi = c->up_off[cur + 1];

	/* a cable straight to dst's leaf (two leaves cabled directly) is
	 * the shortest way, which the subnet manager takes */
	if (c->up_direct[cur]) {
		uint32_t cnt = 0, want;
		for (uint32_t p = lo; p < hi; p++)
			cnt +=
			    c->up[p].sw == dst && !link_dead(k, c->up[p].res);
		want = cnt ? (uint32_t)(key % cnt) : 0;
		for (uint32_t p = lo; cnt && p < hi; p++)
			if (c->up[p].sw == dst && !link_dead(k, c->up[p].res) &&
			    !want--)
				return &c->up[p];
	}
	const hop_t *h = NULL;
	if (!c->up_same[cur])
		h = pick(k, c->up, lo, hi, dst, key, false);
	else if (lo < hi && reaches(c, c->up[lo].sw, dst))
		h = pick(k, c->up, lo, hi, dst, key, true);
	/* no parent reaches dst below it (a leaf of a 3-level fat tree
	 * under its pod's switches, a leaf hanging off another): climb on
	 * over any of them, D-mod-K */
	return h ? h : pick(k, c->up, lo, hi, dst, key, true);
}

static const hop_t *pick_down(const call_t *k, uint32_t cur, uint32_t dst,
			      uint64_t key)
{
	const tp_cost_ctx_t *c = k->c;
	uint32_t lo = c->dn_off[cur], hi = c->dn_off[cur + 1], a, b;

	if (c->level[cur] != 2)
		return pick(k, c->dn, lo, hi, dst, key, false);
	/* children are leaves: the cables to dst are one sorted run */
	a = lo;
	b = hi;
	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		if (c->dn[m].sw < dst)
			a = m + 1;
		else
			b = m;
	}
	for (b = a; b < hi && c->dn[b].sw == dst; b++)
		;
	if (a == b) /* dst hangs off a leaf below (cables inside a level) */
		return pick(k, c->dn, lo, hi, dst, key, false);
	return pick(k, c->dn, a, b, dst, key, true);
}

/* Breadth first from switch `from` over the cables up/down routing uses
 * (the live ones in k's state; every one when k is NULL): dist[] gets the
 * hops from `from` where it was -1 (the caller's), q is the queue (room
 * for every switch). Returns the switches reached, `from` included. */
static size_t cable_bfs(const tp_cost_ctx_t *c, const call_t *k, uint32_t from,
			int32_t *dist, uint32_t *q)
{
	size_t head = 0, tail = 0;

	dist[from] = 0;
	q[tail++] = from;
	while (head < tail) {
		uint32_t s = q[head++];
		for (int dir = 0; dir < 2; dir++) {
			uint32_t lo, hi;
			const hop_t *hop = cables(c, s, dir, &lo, &hi);
			for (uint32_t p = lo; p < hi; p++)
				if (dist[hop[p].sw] < 0 &&
				    !(k && link_dead(k, hop[p].res))) {
					dist[hop[p].sw] = dist[s] + 1;
					q[tail++] = hop[p].sw;
				}
		}
	}
	return tail;
}

/* The shortest leaf-to-leaf path over live cables, for pairs up/down
 * routing has none for (parts whose top switches do not reach each
 * other's leaves below them: two trees joined by a cable between two of
 * their leaves; a spine's cable to dst dead in the state), as OpenSM's
 * default min-hop engine routes any graph. Hops from every switch to dst
 * (breadth first from dst over live cables; kept for the call's next
 * route to the same leaf), then from `from` each step takes one of the
 * live cables one hop nearer, the key-th (mod count, the digit consumed
 * as D-mod-K does going up), so flows spread over equal paths. Its links
 * into out[n..); the new length, 0 when there is none (k->oom set when
 * memory ran out). */
static size_t minhop(call_t *k, uint32_t from, uint32_t dst, uint64_t key,
		     uint32_t *out, size_t n, int *hops_p, bool *top_p)
{
	const tp_cost_ctx_t *c = k->c;
	size_t nsw = tp_fabric_nswitches(k->f);
	int32_t *dist = k->mh_dist;

	if (k->oom)
		return 0;
	if (!dist) {
		dist = tp_malloc((nsw + 1) * sizeof(int32_t));
		uint32_t *q = tp_malloc((nsw + 1) * sizeof(uint32_t));
		if (!dist || !q) {
			tp_free(dist);
			tp_free(q);
			k->oom = true;
			return 0;
		}
		k->mh_dist = dist;
		k->mh_q = q;
		k->mh_dst = TP_ID_NONE;
	}
	if (k->mh_dst != dst) {
		for (size_t s = 0; s < nsw; s++)
			dist[s] = -1;
		cable_bfs(c, k, dst, dist, k->mh_q);
		k->mh_dst = dst;
	}
	if (dist[from] < 0 || n + (size_t)dist[from] + 1 > c->maxpath)
		return 0;
	for (uint32_t s = from; s != dst;) {
		const hop_t *pickh = NULL;
		uint32_t cnt = 0, want = 0;
		for (int pass = 0; pass < 2 && !pickh; pass++) {
			if (pass)
				want = (uint32_t)(key % cnt);
			for (int dir = 0; dir < 2 && !pickh; dir++) {
				uint32_t lo, hi;
				const hop_t *hop = cables(c, s, dir, &lo, &hi);
				for (uint32_t p = lo; p < hi && !pickh; p++) {
					if (dist[hop[p].sw] != dist[s] - 1 ||
					    link_dead(k, hop[p].res))
						continue;
					if (!pass)
						cnt++;
					else if (!want--)
						pickh = &hop[p];
				}
			}
			if (!cnt) /* cannot happen: dist[s] came from one */
				return 0;
		}
		key /= cnt;
		out[n++] = pickh->res;
		s = pickh->sw;
		(*hops_p)++;
		if (c->top >= 2 && c->level[s] == c->top)
			*top_p = true;
	}
	return n;
}

/* Route CA a -> CA b (same subnet) into out[0..maxpath); returns the
 * number of directed links, 0 when there is no live route. Up/down first
 * (D-mod-K), else the shortest path (minhop). */
static size_t route(call_t *k, uint32_t a, uint32_t b, uint32_t *out,
		    int *hops_p, bool *top_p)
{
	const tp_cost_ctx_t *c = k->c;
	uint32_t cur = tp_fabric_ca(k->f, a)->leaf;
	uint32_t dst = tp_fabric_ca(k->f, b)->leaf;
	size_t n = 0;
	const hop_t *h;

	*hops_p = 1;
	*top_p = false;
	if (cur == TP_ID_NONE || dst == TP_ID_NONE ||
	    c->ca_up[a] == TP_ID_NONE || c->ca_dn[b] == TP_ID_NONE ||
	    link_dead(k, c->ca_up[a]) || link_dead(k, c->ca_dn[b]))
		return 0;
	out[n++] = c->ca_up[a];
	while (!reaches(c, cur, dst)) {
		/* every switch spreads the destinations over its own up-links
		 * afresh, in their order, as OpenSM's engines do (min-hop's
		 * per-port route counters: a host's consecutive LIDs leave a
		 * spine by as many cables to the cores); consuming the digit
		 * at the leaf (textbook D-mod-K) sent all of them up one */
		h = pick_up(k, cur, dst, c->ca_key[b]);
		if (!h || n + 2 > c->maxpath)
			goto shortest;
		out[n++] = h->res;
		cur = h->sw;
		(*hops_p)++;
	}
	if (c->top >= 2 && c->level[cur] == c->top)
		*top_p = true;
	while (cur != dst) {
		h = pick_down(k, cur, dst, c->ca_key[b]);
		if (!h || n + 2 > c->maxpath)
			goto shortest;
		out[n++] = h->res;
		cur = h->sw;
		(*hops_p)++;
	}
	out[n++] = c->ca_dn[b];
	return n;
shortest:
	*hops_p = 1;
	*top_p = false;
	if (!(n = minhop(k, tp_fabric_ca(k->f, a)->leaf, dst, c->ca_key[b], out,
			 1, hops_p, top_p)))
		return 0;
	out[n++] = c->ca_dn[b];
	return n;
}

/* route() through the workspace's table: a decision routes the same CA
 * pairs for one set after another, on one context and state (a new
 * context or state empties the table). Without a workspace, or without
 * memory for the table, route() itself. */
static size_t cached_route(call_t *k, uint32_t a, uint32_t b, uint32_t *out,
			   int *hops_p, bool *top_p)
{
	tp__cost_ws_t *w = k->ws ? &k->b : NULL;
	uint64_t key = (uint64_t)a << 32 | b;
	uint32_t x;
	size_t len;

	if (!w)
		return route(k, a, b, out, hops_p, top_p);
	if (w->rctx != k->c || w->rst != k->st) {
		tp_u64map_clear(&w->rmap);
		w->nrt = w->rpooln = 0;
		w->rctx = k->c;
		w->rst = k->st;
	}
	if ((x = tp_u64map_get(&w->rmap, key)) != TP_MAP_NONE) {
		memcpy(out, w->rpool + w->rt[x].off,
		       w->rt[x].len * sizeof(uint32_t));
		*hops_p = w->rt[x].hops;
		*top_p = w->rt[x].top;
		return w->rt[x].len;
	}
	len = route(k, a, b, out, hops_p, top_p);
	if (k->oom || len > UINT8_MAX || *hops_p > UINT8_MAX || *hops_p < 0 ||
	    w->rpooln + len >= UINT32_MAX || w->nrt >= UINT32_MAX - 1)
		return len;
	void *pool = w->rpool, *rt = w->rt;
	if (tp_grow(&pool, &w->rpoolcap, w->rpooln + len + 1, sizeof(uint32_t)))
		return len;
	w->rpool = pool;
	if (tp_grow(&rt, &w->caprt, w->nrt + 1, sizeof(rte_t)))
		return len;
	w->rt = rt;
	if (tp_u64map_put(&w->rmap, key, (uint32_t)w->nrt))
		return len; /* without memory: not kept, still right */
	w->rt[w->nrt++] = (rte_t){(uint32_t)w->rpooln, (uint8_t)len,
				  (uint8_t)*hops_p, *top_p};
	memcpy(w->rpool + w->rpooln, out, len * sizeof(uint32_t));
	w->rpooln += len;
	return len;
}

static void phase_reset(call_t *k)
{
	k->nfl = k->npath = 0;
	k->nv_s = k->nv_gbps = 0;
}

static void add_nvlink(call_t *k, double bytes, double gbps)
{
	double t = bytes * 8 / (gbps * 1e9);

	if (t > k->nv_s) {
		k->nv_s = t;
		k->nv_gbps = gbps;
	}
}

/* Pairs of CAs for one transfer: CAs on the same rail first (NCCL keeps
 * a channel to its NIC's rail), then the k-th of the rest of a on each
 * subnet with the k-th of the rest of b there (GPUs next to different
 * rails on the two hosts: NCCL crosses over). Returns the number. */
static size_t pair_cas(call_t *k, const uint32_t *a, size_t na,
		       const uint32_t *b, size_t nb)
{
	uint64_t ua = 0, ub = 0; /* taken by a same-rail pair */
	size_t x = 0, y = 0, np = 0;

	for (x = 0; na <= 64 && nb <= 64 && x < na; x++) {
		const tp_ca_t *ca = tp_fabric_ca(k->f, a[x]);
		for (y = 0; y < nb; y++) {
			const tp_ca_t *cb = tp_fabric_ca(k->f, b[y]);
			if (!(ub >> y & 1) && ca->subnet == cb->subnet &&
			    ca->rail == cb->rail) {
				k->pa[np] = a[x];
				k->pb[np++] = b[y];
				ua |= 1ULL << x;
				ub |= 1ULL << y;
				break;
			}
		}
	}
	x = y = 0;
	while (x < na && y < nb) {
		int sa = tp_fabric_ca(k->f, a[x])->subnet;
		int sb = tp_fabric_ca(k->f, b[y])->subnet;
		if (x < 64 && ua >> x & 1) {
			x++;
		} else if (y < 64 && ub >> y & 1) {
			y++;
		} else if (sa < sb) {
			x++;
		} else if (sb < sa) {
			y++;
		} else {
			k->pa[np] = a[x++];
			k->pb[np++] = b[y++];
		}
	}
	return np;
}

static tp_err_t grow_phase(call_t *k, size_t nfl, size_t npath)
{
	void *p;

	if (nfl <= k->b.capfl && npath <= k->b.cappath)
		return TP_OK;
	p = k->b.fl;
	if (tp_grow(&p, &k->b.capfl, nfl, sizeof(flow_t)))
		return TP_ERR_NOMEM;
	k->b.fl = p;
	p = k->b.path;
	if (tp_grow(&p, &k->b.cappath, npath, sizeof(uint32_t)))
		return TP_ERR_NOMEM;
	k->b.path = p;
	return TP_OK;
}

/* Rail of the CA at position x of a host (tp_ca_t.rail, as the plan). */
static int rail_of(const call_t *k, const tp_host_t *h, size_t x)
{
	return tp_fabric_ca(k->f, h->cas[x])->rail;
}

/* Position of host h's first CA on rail r, SIZE_MAX when it has none. */
static size_t ca_on_rail(const call_t *k, const tp_host_t *h, int r)
{
	for (size_t x = 0; x < h->ncas; x++)
		if (rail_of(k, h, x) == r)
			return x;
	return SIZE_MAX;
}

/* Hosts in one multi-node NVLink domain talk over NVLink. */
static bool nvlink_edge(const call_t *k, const tp_host_t *hi,
			const tp_host_t *hj)
{
	return hi->nvdomain != TP_ID_NONE && hi->nvdomain == hj->nvdomain &&
	       tp_fabric_nvdomain(k->f, hi->nvdomain)->multi_node;
}

/* Transfer of `bytes` from host position i to j, split over the rails, or
 * on rail `rail` alone (>= 0) when both hosts have it. */
static tp_err_t add_edge_rail(call_t *k, size_t i, size_t j, double bytes,
			      int rail, int rail_dst)
{
	const tp_host_t *hi = tp_fabric_host(k->f, k->hosts[i]);
	const tp_host_t *hj = tp_fabric_host(k->f, k->hosts[j]);
	size_t np, routed = 0, first = k->nfl;
	bool by_rate = false;
	double wsum = 0;
	tp_err_t err;

	if (nvlink_edge(k, hi, hj)) {
		add_nvlink(k, bytes, k->nv[i] < k->nv[j] ? k->nv[i] : k->nv[j]);
		return TP_OK;
	}
	/* the pairs to route: the rail's own (rail >= 0), the CAs the GPUs
	 * use, or any two on a common rail (GPUs next to different rails
	 * on the two hosts: NCCL crosses over PCIe rather than fail); when
	 * none of a stage's pairs has a live route (a cable down or at
	 * health 0 in the state) the next stage is tried */
	for (int stage = rail >= 0 && rail_dst >= 0 ? 0 : 1;
	     stage < 3 && !routed; stage++) {
		np = 0;
		if (stage == 0) {
			size_t xa = ca_on_rail(k, hi, rail),
			       xb = ca_on_rail(k, hj, rail_dst);
			if (xa == SIZE_MAX || xb == SIZE_MAX)
				continue;
			k->pa[0] = hi->cas[xa];
			k->pb[0] = hj->cas[xb];
			np = 1;
		} else if (stage == 1) {
			np = pair_cas(k, &k->use[k->use_off[i]],
				      k->use_off[i + 1] - k->use_off[i],
				      &k->use[k->use_off[j]],
				      k->use_off[j + 1] - k->use_off[j]);
		} else {
			np = pair_cas(k, hi->cas, hi->ncas, hj->cas, hj->ncas);
		}
		if ((err = grow_phase(k, k->nfl + np,
				      k->npath + np * k->c->maxpath)))
			return err;
		/* each routed pair's weight: 1 (evenly), or with
		 * nics_by_rate the slower end's Gb/s, as NCCL allots
		 * channels by bandwidth */
		by_rate = k->c->p.nics_by_rate && np > 1;
		wsum = 0;
		for (size_t p = 0; p < np; p++) {
			flow_t *fl = &k->b.fl[k->nfl];
			size_t len = cached_route(k, k->pa[p], k->pb[p],
						  &k->b.path[k->npath],
						  &fl->hops, &fl->top);
			if (k->oom)
				return TP_ERR_NOMEM;
			if (!len)
				continue;
			fl->off = (uint32_t)k->npath;
			fl->bytes = by_rate ? fmin(ca_gbps(k, k->pa[p]),
						   ca_gbps(k, k->pb[p]))
					    : 1;
			wsum += fl->bytes;
			k->npath += len;
			k->nfl++;
			routed++;
		}
	}
	if (!routed)
		return TP_ERR_NOTFOUND;
	for (size_t f = first; f < k->nfl; f++)
		k->b.fl[f].bytes = by_rate ? bytes * k->b.fl[f].bytes / wsum
					   : bytes / (double)routed;
	return TP_OK;
}

static tp_err_t add_edge(call_t *k, size_t i, size_t j, double bytes)
{
	return add_edge_rail(k, i, j, bytes, -1, -1);
}

/* Compact the resources the phase's flows use, share them max-min and
 * take the slowest transfer. */
/* The phase's time from its flows' rates and the links that limited
 * them (TP_ID_NONE: none), and its NVLink transfers. */
static void phase_finish(const call_t *k, const double *rate,
			 const uint32_t *link, phase_out_t *o)
{
	memset(o, 0, sizeof(*o));
	o->bott_link = TP_ID_NONE;
	if (k->nv_s > 0) {
		o->time_s = k->nv_s;
		o->bott_gbps = k->nv_gbps;
	}
	for (size_t i = 0; i < k->nfl; i++) {
		const flow_t *fl = &k->b.fl[i];
		double t = fl->bytes * 8 / (rate[i] * 1e9);

		if (fl->hops > o->hops)
			o->hops = fl->hops;
		if (fl->top)
			o->cross_bytes += fl->bytes;
		/* the fabric wins a tie with NVLink: it is what a placement
		 * can change */
		if (t > o->time_s ||
		    (t == o->time_s && o->bott_link == TP_ID_NONE)) {
			o->time_s = t;
			o->bott_gbps = rate[i];
			o->bott_link = link[i];
		}
	}
}

/* Adds the solved phase's bytes on each directed link, in seconds at
 * its capacity, to the pipeline's per-link sums (k->pipe). off, rlink,
 * cap: phase_solve's flows' path offsets, the compacted resources'
 * links and capacities (Gb/s). */
static tp_err_t pipe_add(call_t *k, const uint32_t *off, const uint32_t *rlink,
			 const double *cap)
{
	for (size_t i = 0; i < k->nfl; i++)
		for (uint32_t j = off[i]; j < off[i + 1]; j++) {
			uint32_t res = k->b.path[j], r = rlink[res];
			uint32_t at = tp_u64map_get(&k->pipe_map, r);
			if (!(cap[res] > 0))
				continue;
			if (at == TP_MAP_NONE) {
				if (k->npipe == k->pipe_cap) {
					size_t nc =
					    k->pipe_cap ? 2 * k->pipe_cap : 256;
					double *p = tp_realloc(
					    k->pipe_sec, nc * sizeof(double));
					if (!p)
						return TP_ERR_NOMEM;
					k->pipe_sec = p;
					k->pipe_cap = nc;
				}
				at = (uint32_t)k->npipe++;
				if (tp_u64map_put(&k->pipe_map, r, at))
					return TP_ERR_NOMEM;
				k->pipe_sec[at] = 0;
			}
			k->pipe_sec[at] += k->b.fl[i].bytes * k->load_mult * 8 /
					   (cap[res] * 1e9);
		}
	return TP_OK;
}

static tp_err_t phase_solve(call_t *k, phase_out_t *o)
{
	size_t hcap = 16, nres = 0, need;
	uint32_t *hkey, *hval, *rlink, *off, *bott;
	double *cap, *rate;
	tp_err_t err;

	if (k->keep) {
		need = k->nfl *
		       (sizeof(flow_t) + sizeof(double) + sizeof(uint32_t));
		if (!(k->kfl = scratch_get(&k->b.kept, need + 1)))
			return TP_ERR_NOMEM;
		k->krate = (double *)(k->kfl + k->nfl);
		k->klink = (uint32_t *)(k->krate + k->nfl);
		if (k->nfl) /* k->b.fl may be NULL then */
			memcpy(k->kfl, k->b.fl, k->nfl * sizeof(flow_t));
	}
	if (!k->nfl) {
		phase_finish(k, NULL, NULL, o);
		return TP_OK;
	}
	while (hcap < 2 * k->npath)
		hcap *= 2;
	need = (k->npath + k->nfl + 2) * sizeof(double) +
	       (2 * hcap + k->npath + 2 * k->nfl + 3) * sizeof(uint32_t);
	if (!(cap = scratch_get(&k->b.ps, need)))
		return TP_ERR_NOMEM;
	rate = cap + k->npath + 1;
	hkey = (uint32_t *)(rate + k->nfl + 1);
	hval = hkey + hcap;
	rlink = hval + hcap;
	off = rlink + k->npath + 1;
	bott = off + k->nfl + 1;
	memset(hkey, 0xff, hcap * sizeof(uint32_t));
	for (size_t j = 0; j < k->npath; j++) {
		uint32_t r = k->b.path[j];
		size_t s = (r * 0x9e3779b1u) & (hcap - 1);
		while (hkey[s] != UINT32_MAX && hkey[s] != r)
			s = (s + 1) & (hcap - 1);
		if (hkey[s] == UINT32_MAX) {
			hkey[s] = r;
			hval[s] = (uint32_t)nres;
			rlink[nres] = r;
			cap[nres] = link_cap(k, r);
			nres++;
		}
		k->b.path[j] = hval[s];
	}
	for (size_t i = 0; i < k->nfl; i++)
		off[i] = k->b.fl[i].off;
	off[k->nfl] = (uint32_t)k->npath;
	if ((err = maxmin(&k->b.mm, k->nfl, off, k->b.path, nres, cap, rate,
			  bott)))
		return err;
	if (k->pipe && (err = pipe_add(k, off, rlink, cap)))
		return err;
	if (k->load)
		for (size_t i = 0; i < k->nfl; i++)
			for (uint32_t j = off[i]; j < off[i + 1]; j++) {
				uint32_t r = rlink[k->b.path[j]];
				double b = k->b.fl[i].bytes * k->load_mult;
				if (!(b > 0))
					continue;
				if (k->load[r] == 0)
					k->touched[k->ntouched++] = r;
				k->load[r] += b;
			}
	for (size_t i = 0; i < k->nfl; i++)
		bott[i] =
		    bott[i] == TP_ID_NONE ? TP_ID_NONE : rlink[bott[i]] / 2;
	phase_finish(k, rate, bott, o);
	if (k->keep) {
		memcpy(k->krate, rate, k->nfl * sizeof(double));
		memcpy(k->klink, bott, k->nfl * sizeof(uint32_t));
	}
	return TP_OK;
}

/* Rails the ranks of host i drive, as the plan assigns them: a GPU's
 * nearest CA, else rank l on CA l * ncas / g. Ranks beyond the GPUs (up
 * to MAX_RANKS_PER_HOST) cover a run of CAs: that run, not every rank. */
static uint64_t host_rails(call_t *k, const tp_host_t *h, size_t g)
{
	size_t lo = g, hi = 0;
	uint64_t m = 0;

	for (size_t x = 0; x < h->ncas; x++)
		if (rail_of(k, h, x) + 1 > k->nrails)
			k->nrails = rail_of(k, h, x) + 1;
	if (!h->ncas)
		return 0;
	for (size_t l = 0; l < g; l++) {
		size_t ca = l * h->ncas / g;
		int r;
		if (l >= h->ngpus && g - l > h->ncas) {
			/* g > ncas here: l * ncas / g steps by at most 1 */
			lo = ca;
			hi = (g - 1) * h->ncas / g;
			break;
		}
		if (l < h->ngpus && h->gpus[l].hca >= 0 &&
		    (size_t)h->gpus[l].hca < h->ncas)
			ca = (size_t)h->gpus[l].hca;
		r = rail_of(k, h, ca);
		if (r >= 0 && r < TP_SCHED_MAX_RAILS)
			m |= 1ULL << r;
	}
	for (size_t ca = lo; ca <= hi && ca < h->ncas; ca++) {
		int r = rail_of(k, h, ca);
		if (r >= 0 && r < TP_SCHED_MAX_RAILS)
			m |= 1ULL << r;
	}
	return m;
}

/* Per-host data every algorithm needs: NVLink rate of the GPUs in use, the
 * CAs next to them (rail affinity from gpu.hca) and their rails. One
 * block for all of it: the call allocates little on the hot path. */
static tp_err_t call_setup(call_t *k)
{
	size_t total = 0, mc = k->c->maxcas + 1;
	unsigned char *b;

	for (size_t i = 0; i < k->n; i++)
		total += tp_fabric_host(k->f, k->hosts[i])->ncas;
	size_t need = k->n * (sizeof(double) + sizeof(uint64_t)) +
		      (k->n + 1 + total + 1 + 2 * mc) * sizeof(uint32_t);
	b = scratch_get(&k->b.setup, need);
	if (!b)
		return TP_ERR_NOMEM;
	k->nv = (double *)b;
	k->rails = (uint64_t *)(k->nv + k->n);
	k->use_off = (uint32_t *)(k->rails + k->n);
	k->use = k->use_off + k->n + 1;
	k->pa = k->use + total + 1;
	k->pb = k->pa + mc;
	total = 0;
	for (size_t i = 0; i < k->n; i++) {
		const tp_host_t *h = tp_fabric_host(k->f, k->hosts[i]);
		size_t g = (size_t)k->gpus[i];
		double nv = INFINITY;
		uint64_t mask = 0;

		for (size_t x = 0; x < g; x++) {
			double r = k->c->p.nvlink_gbps;
			if (x < h->ngpus && h->gpus[x].nvlink_gbps > 0)
				r = h->gpus[x].nvlink_gbps;
			if (r < nv)
				nv = r;
			if (x < h->ngpus && h->gpus[x].hca >= 0 &&
			    h->gpus[x].hca < 64)
				mask |= 1ULL << h->gpus[x].hca;
			if (x >= h->ngpus)
				break;
		}
		k->nv[i] = nv;
		k->rails[i] = host_rails(k, h, g);
		k->use_off[i] = (uint32_t)total;
		/* no affinity known (or more CAs than a mask holds): all */
		if (!mask || h->ncas > 64)
			mask = ~0ULL;
		for (size_t x = 0; x < h->ncas; x++)
			if (mask >> (x % 64) & 1)
				k->use[total++] = h->cas[x];
	}
	k->use_off[k->n] = (uint32_t)total;
	return TP_OK;
}

static void call_free(call_t *k)
{
	tp_u64map_clear(&k->pipe_map);
	tp_free(k->pipe_sec);
	k->pipe_sec = NULL;
	tp_free(k->mh_dist);
	tp_free(k->mh_q);
	k->mh_dist = NULL;
	k->mh_q = NULL;
	if (k->ws)
		*k->ws = k->b; /* back to the workspace, grown or not */
	else
		ws_free_bufs(&k->b);
}

static void take_bottleneck(tp_cost_t *out, const phase_out_t *o, double *worst)
{
	if (o->time_s > *worst) {
		*worst = o->time_s;
		out->bottleneck_gbps = o->bott_gbps;
		out->bottleneck_link = o->bott_link;
	}
}

static int job_rank_rail(const void *arg, size_t i, uint32_t l);

/* Ring over all ranks, each edge carrying v bytes: between two hosts
 * spread over their NIC pairs as NCCL's channels, or with coll_rings on
 * the NICs of the last rank of one and the first of the next, as the
 * library's ring runs. */
static tp_err_t ring_phase(call_t *k, double v, phase_out_t *o)
{
	tp_err_t err;

	phase_reset(k);
	for (size_t i = 0; i < k->n; i++)
		if (k->gpus[i] > 1)
			add_nvlink(k, v, k->nv[i]);
	for (size_t i = 0; k->n > 1 && i < k->n; i++) {
		size_t j = (i + 1) % k->n;
		int ra = -1, rb = -1;
		if (k->c->p.coll_rings) {
			uint32_t la, lb;
			tp_sched_ring_hop((uint32_t)k->gpus[i], &la, &lb);
			ra = job_rank_rail(k, i, la);
			rb = job_rank_rail(k, j, lb);
			if (ra < 0 || rb < 0)
				ra = rb = -1;
		}
		if ((err = add_edge_rail(k, i, j, v, ra, rb)))
			return err;
	}
	return phase_solve(k, o);
}

static tp_err_t predict_ring(call_t *k, double steps, double v, tp_cost_t *out)
{
	const tp_cost_params_t *p = &k->c->p;
	phase_out_t o;
	double worst = 0;
	tp_err_t err;

	if ((err = ring_phase(k, v, &o)))
		return err;
	out->bandwidth_s = o.time_s;
	out->latency_s = steps * (p->alpha_s + o.hops * p->hop_s);
	out->cross_top_bytes = o.cross_bytes;
	take_bottleneck(out, &o, &worst);
	return TP_OK;
}

/* The job as sched/ sees it: node i is hosts[i]. */
static uint32_t job_group(const void *arg, size_t i, int level)
{
	const call_t *k = arg;

	return tp_fabric_host(k->f, k->hosts[i])->group[level];
}

static uint32_t job_nranks(const void *arg, size_t i)
{
	const call_t *k = arg;

	return (uint32_t)k->gpus[i];
}

static uint64_t job_rails(const void *arg, size_t i)
{
	const call_t *k = arg;

	return k->rails[i];
}

/* Rail of local rank l of host h running g ranks, as the plan assigns
 * it: its GPU's nearest CA, else CA l * ncas / g; -1 without CAs. */
static int rank_rail(const call_t *k, const tp_host_t *h, size_t g, uint32_t l)
{
	int ca = tp_host_rank_ca(h, l, (uint32_t)g);

	return ca < 0 ? -1 : rail_of(k, h, (size_t)ca);
}

static int job_rank_rail(const void *arg, size_t i, uint32_t l)
{
	const call_t *k = arg;

	return rank_rail(k, tp_fabric_host(k->f, k->hosts[i]),
			 (size_t)k->gpus[i], l);
}

static tp_err_t sched_of(call_t *k, tp_sched_algo_t algo, tp_sched_t **s_p)
{
	int nlev = tp_fabric_ngroup_levels(k->f);
	tp_sched_job_t job = {
	    .n = k->n,
	    .nlevels = nlev < TP_MAX_LEVELS ? nlev : TP_MAX_LEVELS,
	    /* more rails than a mask holds: no rail leaders (the plan
	     * refuses such jobs) */
	    .nrails = k->nrails <= TP_SCHED_MAX_RAILS ? k->nrails : 0,
	    .arg = k,
	    .group = job_group,
	    .nranks = job_nranks,
	    .rails = job_rails,
	    .rank_rail = job_rank_rail,
	    .host_ring = k->c->p.host_ring,
	    .weight = algo == TP_SCHED_HIER ? k->weight : NULL,
	};

	return tp_sched_build(&job, algo, s_p);
}

/* Edge x of a phase with the routes of the kept one (price_sched): the
 * flows the kept phase's edge x made, carrying bytes between them as
 * add_edge_rail splits them. *kf_p: the kept flows used so far. */
static tp_err_t reuse_edge(call_t *k, size_t x, size_t i, size_t j,
			   double bytes, size_t *kf_p)
{
	const tp_host_t *hi = tp_fabric_host(k->f, k->hosts[i]);
	const tp_host_t *hj = tp_fabric_host(k->f, k->hosts[j]);
	uint32_t routed = k->kflows[x];

	if (nvlink_edge(k, hi, hj)) {
		add_nvlink(k, bytes, k->nv[i] < k->nv[j] ? k->nv[i] : k->nv[j]);
		return TP_OK;
	}
	if (grow_phase(k, k->nfl + routed, k->npath))
		return TP_ERR_NOMEM;
	/* the kept flows' bytes are in add_edge_rail's proportions (even,
	 * or by NIC rate): the same shares of this edge's bytes */
	double kept = 0;
	for (uint32_t f = 0; f < routed; f++)
		kept += k->kfl[*kf_p + f].bytes;
	for (uint32_t f = 0; f < routed; f++) {
		double w = k->kfl[*kf_p].bytes;
		k->b.fl[k->nfl] = k->kfl[(*kf_p)++];
		k->b.fl[k->nfl++].bytes =
		    kept > 0 ? bytes * w / kept : bytes / (double)routed;
	}
	return TP_OK;
}

/* Route and share one phase of a schedule. Self edges (inside a host)
 * come after the others, a host's next to each other: their shares add
 * up to what each of its GPUs moves over NVLink. reuse: the phase has
 * the kept phase's edges with other shares; max-min rates do not depend
 * on the bytes, so its flows take the kept rates, unrouted and unshared.
 * k->keep: keep this phase's flows and rates for such a one. */
static tp_err_t price_phase(call_t *k, const tp_sched_phase_t *ph, double bytes,
			    bool reuse, phase_out_t *o)
{
	uint32_t self = TP_SCHED_NONE;
	double acc = 0;
	size_t kf = 0;
	tp_err_t err;

	phase_reset(k);
	if (k->keep && !(k->kflows = scratch_get(
			     &k->b.keptn, (ph->nedges + 1) * sizeof(uint32_t))))
		return TP_ERR_NOMEM;
	for (size_t x = 0; x < ph->nedges; x++) {
		const tp_sched_edge_t *e = &ph->edges[x];
		if (e->src != e->dst) {
			size_t nfl = k->nfl;
			if (reuse)
				err = reuse_edge(k, x, e->src, e->dst,
						 e->frac * bytes, &kf);
			else if ((ph->kind == TP_SCHED_PH_TREE ||
				  ph->kind == TP_SCHED_PH_RING) &&
				 !k->c->p.coll_rings)
				err = add_edge(k, e->src, e->dst,
					       e->frac * bytes);
			else
				err = add_edge_rail(k, e->src, e->dst,
						    e->frac * bytes, e->rail,
						    e->rail_dst);
			if (err)
				return err;
			if (k->keep)
				k->kflows[x] = (uint32_t)(k->nfl - nfl);
			continue;
		}
		if (e->src != self && self != TP_SCHED_NONE) {
			add_nvlink(k, acc * bytes, k->nv[self]);
			acc = 0;
		}
		self = e->src;
		acc += e->frac;
	}
	if (self != TP_SCHED_NONE)
		add_nvlink(k, acc * bytes, k->nv[self]);
	if (reuse) {
		phase_finish(k, k->krate, k->klink, o);
		return TP_OK;
	}
	return phase_solve(k, o);
}

/* The same transfers between the same hosts on the same rails, in the
 * same order: the same flows and routes (the shares may differ). */
static bool same_routes(const tp_sched_phase_t *a, const tp_sched_phase_t *b)
{
	if (a->nedges != b->nedges)
		return false;
	for (size_t x = 0; x < a->nedges; x++)
		if (a->edges[x].src != b->edges[x].src ||
		    a->edges[x].dst != b->edges[x].dst ||
		    a->edges[x].rail != b->edges[x].rail ||
		    a->edges[x].rail_dst != b->edges[x].rail_dst)
			return false;
	return true;
}

/* A pipeline of nch chunks through k stages takes (nch + k - 1) chunk
 * times where the flows alone would take nch: the tree's stages are its
 * hops up and down (2 depth) and the chain inside a host (2(g-1)), each
 * tree carrying S/2. A ring phase fills with one chunk: no term. */
static double fill_factor(double stages, double bytes, double chunk)
{
	double nch = chunk > 0 ? ceil(bytes / 2 / chunk) : 0;

	return nch >= 1 && stages > 0 ? 1 + (stages - 1) / nch : 1;
}

/* A pipelined hierarchical all-reduce predicted at `from` bytes, at
 * `bytes` in nseg segments: the stages' pipeline (tp_sched_pipe_seconds),
 * and no less than the busiest link's bytes take, plus one latency. */
static double pipe_seconds(const tp_cost_t *c, double from, double bytes,
			   double nseg)
{
	double x = from > 0 ? bytes / from : 0;
	double t[3] = {c->pipe_s[0] * x, c->pipe_s[1] * x, c->pipe_s[2] * x};
	double p = tp_sched_pipe_seconds(t, c->pipe_lat, nseg);
	double link = c->pipe_link_s * x + c->latency_s;

	return nseg > 1 && link > p ? link : p;
}

double tp_cost_one_piece_at(const tp_cost_t *c, double from, double bytes)
{
	return c->pipe_seg > 0 ? pipe_seconds(c, from, bytes, 1)
			       : tp_cost_seconds_at(c, from, bytes);
}

double tp_cost_seconds_at(const tp_cost_t *c, double from, double bytes)
{
	if (c->pipe_seg > 0)
		return pipe_seconds(c, from, bytes,
				    tp_sched_pipe_nseg(bytes, c->pipe_seg));
	double flows =
	    c->bandwidth_s / fill_factor(c->fill_stages, from, c->fill_chunk);
	double lat = c->small_bytes <= 0       ? c->latency_s
		     : bytes <= c->small_bytes ? c->latency_small_s
					       : c->latency_big_s;

	return lat + flows * (bytes / from) *
			 fill_factor(c->fill_stages, bytes, c->fill_chunk);
}

/* Every phase of the schedule, in order: they run one after the other.
 * A phase mirroring an earlier one (the all-gathers) is priced once and
 * its traffic counted twice. */
static tp_err_t price_sched(call_t *k, const tp_sched_t *s, double bytes,
			    tp_cost_t *out)
{
	const tp_cost_params_t *p = &k->c->p;
	size_t np = tp_sched_nphases(s);
	phase_out_t o[8];
	int hops[8];
	double worst = 0;
	tp_err_t err;

	if (np > 8)
		return TP_ERR_INVAL;
	/* pipelined as the library runs it: the hierarchical schedule
	 * (not its ring fallback) over two or more units */
	k->pipe = k->pipe && tp_sched_ngroups(s) > 1 &&
		  tp_sched_phase(s, 0)->kind != TP_SCHED_PH_RING;
	/* one phase with the routes of an earlier one and other shares (the
	 * hierarchical all-gather inside uneven groups) takes its rates;
	 * not while counting bytes per link, which needs the paths */
	size_t keep_at = SIZE_MAX, reuse_at = SIZE_MAX;
	for (size_t i = 1;
	     i < np && !k->load && !k->pipe && reuse_at == SIZE_MAX; i++)
		for (size_t j = 0; j < i && tp_sched_phase(s, i)->mirror >= i;
		     j++)
			if (tp_sched_phase(s, j)->mirror >= j &&
			    same_routes(tp_sched_phase(s, j),
					tp_sched_phase(s, i))) {
				keep_at = j;
				reuse_at = i;
				break;
			}
	out->bandwidth_s = out->cross_top_bytes = 0;
	for (size_t i = 0; i < np; i++) {
		const tp_sched_phase_t *ph = tp_sched_phase(s, i);
		if (ph->mirror < i) {
			o[i] = o[ph->mirror];
		} else {
			k->load_mult = 1;
			for (size_t j = i + 1; j < np; j++)
				k->load_mult +=
				    tp_sched_phase(s, j)->mirror == i;
			k->keep = i == keep_at;
			err = price_phase(k, ph, bytes, i == reuse_at, &o[i]);
			k->keep = false;
			if (err)
				return err;
			if (ph->kind == TP_SCHED_PH_TREE) {
				out->fill_stages = ph->steps + ph->local_steps;
				out->fill_chunk = p->chunk_bytes;
				o[i].time_s *= fill_factor(
				    out->fill_stages, bytes, p->chunk_bytes);
			}
		}
		hops[i] = o[i].hops;
		if (k->pipe) {
			int st = ph->kind == TP_SCHED_PH_CROSS	    ? 1
				 : ph->kind <= TP_SCHED_PH_GROUP_RS ? 0
								    : 2;
			out->pipe_s[st] += o[i].time_s;
			out->pipe_lat[st] +=
			    ph->steps * (p->alpha_s + hops[i] * p->hop_s) +
			    ph->local_steps * p->alpha_s;
		}
		out->bandwidth_s += o[i].time_s;
		out->cross_top_bytes += o[i].cross_bytes;
		take_bottleneck(out, &o[i], &worst);
	}
	out->latency_s =
	    tp_sched_latency_at(s, bytes, p->alpha_s, p->hop_s, hops);
	if (k->pipe) {
		out->pipe_seg = p->hier_segment;
		for (size_t i = 0; i < k->npipe; i++)
			if (k->pipe_sec[i] > out->pipe_link_s)
				out->pipe_link_s = k->pipe_sec[i];
	}
	if (tp_sched_host_small(s, 0)) {
		out->small_bytes = TP_SCHED_HOST_SMALL;
		out->latency_small_s =
		    tp_sched_latency_at(s, 0, p->alpha_s, p->hop_s, hops);
		out->latency_big_s =
		    tp_sched_latency(s, p->alpha_s, p->hop_s, hops);
	}
	return TP_OK;
}

/* Tree and hierarchical all-reduce: the schedules the plan records and
 * the library runs (tp_sched.h), routed edge by edge. */
/* Everything sched_of hands tp_sched_build, as words: the algorithm, the
 * job's size, levels, rails and host-ring rule, then per host its groups,
 * ranks, rails and each rank's rail. key: room for sched_key_max words;
 * returns the words written. */
static size_t sched_key_max(const call_t *k)
{
	size_t w = 6 + k->n * (TP_MAX_LEVELS + 3) + TP_MAX_RANK_WEIGHTS;

	for (size_t i = 0; i < k->n; i++)
		w += (size_t)k->gpus[i];
	return w;
}

static size_t sched_key(const call_t *k, tp_sched_algo_t algo, uint32_t *key)
{
	int nlev = tp_fabric_ngroup_levels(k->f);
	size_t w = 0;

	if (nlev > TP_MAX_LEVELS)
		nlev = TP_MAX_LEVELS;
#define PUT(v) (key[w++] = (uint32_t)(v))
	PUT(algo);
	PUT(k->n);
	PUT(nlev);
	PUT(k->nrails <= TP_SCHED_MAX_RAILS ? k->nrails : 0);
	PUT(k->c->p.host_ring);
	PUT(algo == TP_SCHED_HIER && k->weight);
	for (uint32_t l = 0;
	     algo == TP_SCHED_HIER && k->weight && l < (uint32_t)k->gpus[0];
	     l++)
		PUT(k->weight[l]); /* job.weight */
	for (size_t i = 0; i < k->n; i++) {
		const tp_host_t *h = tp_fabric_host(k->f, k->hosts[i]);
		uint32_t g = (uint32_t)k->gpus[i];
		for (int l = 0; l < nlev; l++)
			PUT(h->group[l]); /* job_group */
		PUT(g);
		PUT(k->rails[i]);
		PUT(k->rails[i] >> 32);
		for (uint32_t r = 0; r < g; r++)
			PUT(rank_rail(k, h, g, r)); /* job_rank_rail */
	}
#undef PUT
	return w;
}

/* The ranks' weights when NICs carry traffic by their rate
 * (tp_cost_params_t.nics_by_rate) and every host runs as many ranks, as
 * the plan gives them (tp_fabric_rank_weights()); else an even split. */
static void job_weights(call_t *k)
{
	uint32_t g = (uint32_t)k->gpus[0];

	k->weight = NULL;
	if (!k->c->p.nics_by_rate)
		return;
	for (size_t i = 1; i < k->n; i++)
		if (k->gpus[i] != k->gpus[0])
			return;
	if (tp_fabric_rank_weights(k->f, k->c->ca_link, k->hosts, k->n, g,
				   k->wbuf))
		k->weight = k->wbuf;
}

/* The schedule of algo over k's job into *s_p, owned by k->b: the last
 * one built when the job is the same in every input of the build (a
 * decision prices sets over the same groups again and again: other hosts
 * of the same leaves, swaps inside them), else a new one. */
static tp_err_t sched_cached(call_t *k, tp_sched_algo_t algo, tp_sched_t **s_p)
{
	uint32_t *key =
	    scratch_get(&k->b.knew, sched_key_max(k) * sizeof(uint32_t));
	tp_sched_t *s;
	tp_err_t err;

	if (!key)
		return TP_ERR_NOMEM;
	if (algo == TP_SCHED_HIER)
		job_weights(k);
	size_t nkey = sched_key(k, algo, key);
	if (k->b.sched && nkey == k->b.nkey &&
	    !memcmp(key, k->b.key.buf, nkey * sizeof(uint32_t))) {
		*s_p = k->b.sched;
		return TP_OK;
	}
	if ((err = sched_of(k, algo, &s)))
		return err;
	tp_sched_destroy(k->b.sched);
	k->b.sched = s;
	scratch_t t = k->b.key; /* the new key is the kept one now */
	k->b.key = k->b.knew;
	k->b.knew = t;
	k->b.nkey = nkey;
	*s_p = s;
	return TP_OK;
}

static tp_err_t predict_sched(call_t *k, tp_sched_algo_t algo, double bytes,
			      tp_cost_t *out)
{
	tp_sched_t *s;
	tp_err_t err;

	if ((err = sched_cached(k, algo, &s)))
		return err;
	return price_sched(k, s, bytes, out);
}

static tp_err_t check_input(const tp_cost_ctx_t *c, const tp_state_t *st,
			    const uint32_t *hosts, const int *gpus, size_t n,
			    double bytes, tp_algo_t algo, tp__cost_ws_t *ws,
			    double *ranks_p, int *gmax_p)
{
	size_t nhost = tp_fabric_nhosts(c->f);
	uint8_t *seen;
	tp_err_t err = TP_OK;

	if (!hosts || !gpus || !n || !isfinite(bytes) || bytes < 0 ||
	    (st && (st->f != c->f || !st->health || !st->bg)))
		return TP_ERR_INVAL;
	switch (algo) {
	case TP_ALGO_RING:
	case TP_ALGO_HIERARCHICAL:
	case TP_ALGO_TREE:
	case TP_ALGO_REDUCE_SCATTER:
	case TP_ALGO_ALL_GATHER:
		break;
	default:
		return TP_ERR_INVAL;
	}
	if (ws) {
		if (!(seen = scratch_get(&ws->seen, nhost / 8 + 1)))
			return TP_ERR_NOMEM;
		memset(seen, 0, nhost / 8 + 1);
	} else if (!(seen = tp_calloc(nhost / 8 + 1, 1))) {
		return TP_ERR_NOMEM;
	}
	*ranks_p = 0;
	*gmax_p = 0;
	for (size_t i = 0; i < n && err != TP_ERR_INVAL; i++) {
		uint32_t h = hosts[i];
		if (h >= nhost || gpus[i] < 1 || gpus[i] > MAX_RANKS_PER_HOST ||
		    seen[h / 8] >> (h % 8) & 1) {
			err = TP_ERR_INVAL;
			continue;
		}
		/* a host without a CA shares no rail with the others: a
		 * fact of the fabric, not a bad argument, unless one follows */
		if (n > 1 && !tp_fabric_host(c->f, h)->ncas)
			err = TP_ERR_NOTFOUND;
		seen[h / 8] |= (uint8_t)(1u << (h % 8));
		*ranks_p += gpus[i];
		if (gpus[i] > *gmax_p)
			*gmax_p = gpus[i];
	}
	if (!ws)
		tp_free(seen);
	return err;
}

/* Checks the input and sets k up for collectives over hosts (*P_p: their
 * ranks); on success the caller frees with call_free(). */
static tp_err_t call_open(call_t *k, const tp_cost_ctx_t *ctx,
			  const tp_state_t *state, const uint32_t *hosts,
			  const int *gpus, size_t n, double bytes,
			  tp_algo_t algo, tp__cost_ws_t *ws, double *P_p)
{
	int gmax;
	tp_err_t err;

	if (!ctx)
		return TP_ERR_INVAL;
	if ((err = check_input(ctx, state, hosts, gpus, n, bytes, algo, ws, P_p,
			       &gmax)))
		return err;
	memset(k, 0, sizeof(*k));
	if ((k->ws = ws))
		k->b = *ws;
	k->c = ctx;
	k->f = ctx->f;
	k->st = state;
	k->hosts = hosts;
	k->gpus = gpus;
	k->n = n;
	k->load_mult = 1;
	if ((err = call_setup(k)))
		call_free(k);
	return err;
}

/* One collective over k's hosts (P ranks). */
static tp_err_t call_algo(call_t *k, tp_algo_t algo, double P, double bytes,
			  tp_cost_t *out)
{
	tp_cost_t res;
	tp_err_t err = TP_ERR_INVAL;

	memset(&res, 0, sizeof(res));
	res.bottleneck_link = TP_ID_NONE;
	k->pipe = algo == TP_ALGO_HIERARCHICAL && k->c->p.hier_segment > 0;
	switch (algo) {
	case TP_ALGO_RING:
		err =
		    predict_ring(k, 2 * (P - 1), 2 * (P - 1) / P * bytes, &res);
		break;
	case TP_ALGO_REDUCE_SCATTER:
	case TP_ALGO_ALL_GATHER:
		err = predict_ring(k, P - 1, (P - 1) / P * bytes, &res);
		break;
	case TP_ALGO_TREE:
		err = predict_sched(k, TP_SCHED_TREE, bytes, &res);
		break;
	case TP_ALGO_HIERARCHICAL:
		err = predict_sched(k, TP_SCHED_HIER, bytes, &res);
		break;
	}
	if (err)
		return err;
	res.seconds = res.bandwidth_s + res.latency_s;
	if (res.pipe_seg > 0) {
		res.seconds = tp_cost_seconds_at(&res, bytes, bytes);
		res.bandwidth_s = res.seconds - res.latency_s;
	}
	*out = res;
	return TP_OK;
}

/* One collective; with load non-NULL (2 * nlinks zeroed doubles, and
 * touched room for as many entries) also the bytes each directed link
 * carries, listed in touched[0..*ntouched_p). */
static tp_err_t run_call(const tp_cost_ctx_t *ctx, const tp_state_t *state,
			 const uint32_t *hosts, const int *gpus, size_t n,
			 double bytes, tp_algo_t algo, double *load,
			 uint32_t *touched, size_t *ntouched_p, tp_cost_t *out)
{
	call_t k;
	double P;
	tp_err_t err;

	if (!out)
		return TP_ERR_INVAL;
	if ((err = call_open(&k, ctx, state, hosts, gpus, n, bytes, algo, NULL,
			     &P)))
		return err;
	k.load = load;
	k.touched = touched;
	err = call_algo(&k, algo, P, bytes, out);
	if (ntouched_p)
		*ntouched_p = k.ntouched;
	call_free(&k);
	return err;
}

/* Ring then hierarchical over one set-up of the hosts. */
tp_err_t tp_cost_predict_best(const tp_cost_ctx_t *ctx, const tp_state_t *s,
			      const uint32_t *hosts, const int *gpus, size_t n,
			      double bytes, tp_algo_t *algo_p, tp_cost_t *c_p)
{
	return tp__place_predict_ws(ctx, s, NULL, hosts, gpus, n, bytes, algo_p,
				    c_p);
}

tp_err_t tp__price_ring(const tp_cost_ctx_t *ctx, const tp_state_t *s,
			uint32_t *hosts, int *gpus, size_t n, double bytes,
			double *seconds_p)
{
	tp_cost_t c;
	tp_err_t err;

	if (!ctx)
		return TP_ERR_INVAL;
	tp_ring_order(ctx->f, hosts, gpus, n);
	if (!(err = tp_cost_predict_best(ctx, s, hosts, gpus, n, bytes, NULL,
					 &c)))
		*seconds_p = c.seconds;
	return err;
}

tp_err_t tp__place_predict_ws(const tp_cost_ctx_t *ctx, const tp_state_t *s,
			      tp__cost_ws_t *ws, const uint32_t *hosts,
			      const int *gpus, size_t n, double bytes,
			      tp_algo_t *algo_p, tp_cost_t *c_p)
{
	static const tp_algo_t algos[] = {TP_ALGO_RING, TP_ALGO_HIERARCHICAL};
	tp_err_t first = TP_OK;
	tp_cost_t best = {.seconds = -1};
	tp_algo_t best_algo = TP_ALGO_RING;
	call_t k;
	double P;
	tp_err_t err;

	if ((err = call_open(&k, ctx, s, hosts, gpus, n, bytes, TP_ALGO_RING,
			     ws, &P)))
		return err;
	for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
		tp_cost_t c;
		if ((err = call_algo(&k, algos[i], P, bytes, &c))) {
			if (!first || err == TP_ERR_NOMEM)
				first = err;
			if (err == TP_ERR_NOMEM)
				break; /* not "the other algorithm is faster" */
			continue;
		}
		if (best.seconds < 0 || c.seconds < best.seconds) {
			best = c;
			best_algo = algos[i];
		}
	}
	call_free(&k);
	if (best.seconds < 0 || first == TP_ERR_NOMEM)
		return first;
	if (algo_p)
		*algo_p = best_algo;
	if (c_p)
		*c_p = best;
	return TP_OK;
}

tp_err_t tp_cost_predict(const tp_cost_ctx_t *ctx, const tp_state_t *state,
			 const uint32_t *hosts, const int *gpus, size_t n,
			 double bytes, tp_algo_t algo, tp_cost_t *out)
{
	return run_call(ctx, state, hosts, gpus, n, bytes, algo, NULL, NULL,
			NULL, out);
}

/*
 * A link's load is the bytes the collective moves over it divided by the
 * collective's whole time, not the max-min rate of its flows: the
 * collective is bulk-synchronous, so a flow that could run faster than
 * the slowest edge of its phase waits for it and, averaged over the
 * call, moves no more than that. On the links the bottleneck flows cross
 * the two agree.
 */
tp_err_t tp__cost_predict_load(const tp_cost_ctx_t *ctx,
			       const tp_state_t *state, const uint32_t *hosts,
			       const int *gpus, size_t n, double bytes,
			       tp_algo_t algo, double *load, uint32_t *touched,
			       size_t *ntouched_p, tp_cost_t *out)
{
	*ntouched_p = 0;
	return run_call(ctx, state, hosts, gpus, n, bytes, algo, load, touched,
			ntouched_p, out);
}

void tp__cost_load_take(double *load, const uint32_t *touched, size_t ntouched,
			double seconds, double duty, double *link_gbps)
{
	for (size_t i = 0; i < ntouched; i++) {
		uint32_t r = touched[i];
		if (seconds > 0 && load[r] > 0)
			link_gbps[r] += duty * load[r] * 8 / (seconds * 1e9);
		load[r] = 0; /* a resource listed twice counts once */
	}
}

tp_err_t tp_cost_link_load(const tp_cost_ctx_t *ctx, const tp_state_t *state,
			   const uint32_t *hosts, const int *gpus, size_t n,
			   double bytes, tp_algo_t algo, double duty,
			   double *link_gbps)
{
	size_t nlink, ntouched = 0;
	double *load;
	uint32_t *touched;
	tp_cost_t c;
	tp_err_t err;

	if (!ctx || !link_gbps || !isfinite(duty) || duty < 0 || duty > 1)
		return TP_ERR_INVAL;
	nlink = tp_fabric_nlinks(ctx->f);
	load = tp_calloc(2 * nlink + 1, sizeof(double));
	touched = tp_malloc((2 * nlink + 1) * sizeof(uint32_t));
	if (!load || !touched) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	if (!(err = tp__cost_predict_load(ctx, state, hosts, gpus, n, bytes,
					  algo, load, touched, &ntouched, &c)))
		tp__cost_load_take(load, touched, ntouched, c.seconds, duty,
				   link_gbps);
out:
	tp_free(load);
	tp_free(touched);
	return err;
}
