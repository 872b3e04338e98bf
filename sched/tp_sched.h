/*
 * tp_sched.h - collective schedules as data: who sends how much to whom.
 *
 * One schedule, three consumers: the cost model (placement/cost.c) routes
 * and prices exactly these edges, the plan (runtime/) records the trees,
 * groups and rail leaders they are built from, and the collective library
 * executes them. A prediction that is not the schedule is a bug, so the
 * schedules live here and nowhere else.
 *
 * A schedule is built over a job's nodes (hosts), numbered 0 .. n-1 in
 * ring order (node rank), each with some local ranks (GPUs/processes),
 * group keys per fabric level and the rails its ranks drive. It knows
 * nothing of the fabric: the caller answers three questions through
 * tp_sched_job_t (group of a node at a level, its rails, its ranks).
 *
 * Groups. At level 1 the nodes with the same key form a unit (a leaf
 * group / scalable unit); a node whose key is TP_SCHED_NOKEY is a unit of
 * its own. At level l >= 2 the units of level l-1 whose first node has
 * the same key form a unit (TP_SCHED_NOKEY is a key like any other
 * there), and one last level joins everything. Units are numbered in
 * order of their first node, members keep node rank order. For a ring
 * order in which every group is contiguous (tp_ring_order's, the plan's)
 * the units are the runs of equal keys.
 *
 * Algorithms (S = the all-reduce's bytes, P = all local ranks):
 *
 *   ring   one phase: node i -> i+1 (mod n), 2(P-1)/P of S per edge;
 *          inside a node with g > 1 ranks each rank passes the same
 *          amount over the node's local fabric (a self edge i -> i).
 *          Latency 2(P-1) steps.
 *   tree   NCCL-style double binary tree, built level by level: inside
 *          each level-1 unit a binary tree over its members, then a tree
 *          over the units' roots inside each level-2 unit, and so on
 *          (a unit's root keeps its child inside the unit, so with 4 or
 *          more units, or units of unequal size, it may have three
 *          children: its link carries 1.5 S/2 each way, as these edges
 *          say).
 *          Tree 0 is NCCL's ncclGetBtree at every level, tree 1 its
 *          ncclGetDtree (mirrored for an even count, shifted by one for an
 *          odd one). Each tree carries half of S, reduced up and broadcast
 *          down, both trees and both directions pipelined at once: one
 *          phase, every tree edge child -> parent and parent -> child at
 *          S/2, and per node with g > 2 ranks a self edge of S per tree
 *          (a rank inside the node's chain sends S/2 up and S/2 down;
 *          with g = 2 both ranks are ends of it: S/2 per tree). Exactly
 *          (units at level l - 1) edges of each tree cross the boundaries
 *          of the level-l units, the least a spanning tree needs.
 *          Latency 2 x depth steps (depth: the deeper tree's longest
 *          root-to-leaf path in edges) plus 2(g_max - 1) local steps.
 *   hier   over level-1 units (m units, the largest K nodes, g ranks
 *          per node), the shards moving rank by rank over C = K
 *          channels: channel (c, l) is local rank l of member
 *          floor(c K_u / C) of each unit u (member t of a unit of K_u
 *          holds the run of channels [ceil(tC/K_u), ceil((t+1)C/K_u)),
 *          one each when all units have K members: corresponding
 *          ranks). So every rank carries its own shard across the
 *          units on its own rail; no node funnels a unit's share
 *          through one NIC. Five phases:
 *          HOST_RS  reduce-scatter inside each node through the
 *                   node's shared segment (every rank reduces its
 *                   shard out of all ranks' copies): self edge (g-1)/g
 *                   of S, one wait (TP_SCHED_SEG_WAIT local steps);
 *                   local rank l ends with shard l
 *                   (S/g). With job->host_ring, or on any node
 *                   job->node_host_ring names, a ring instead: g - 1
 *                   local steps;
 *          GROUP_RS per local rank l a ring reduce-scatter of shard l
 *                   inside each unit, member t -> t+1, leaving member t
 *                   its channels' sub-shards (S/(gC) each): the edge
 *                   carries all but t's part, (1 - w_t)/g of S per rank,
 *                   w_t = channels of t / C ((K-1)/K of S per node edge
 *                   when all units have K members); K - 1 steps;
 *          CROSS    per channel (c, l) a ring all-reduce of its
 *                   sub-shard across the units between c's holders:
 *                   2(m-1)/m x S/(gC) per rank; a member holding several
 *                   channels runs their rings one after another:
 *                   2(m-1) x (most channels on one member) steps;
 *          GROUP_AG the ring all-gathers back, edge t -> t+1 carrying
 *                   all but (t+1)'s part (mirrors GROUP_RS when all
 *                   units have K members), then
 *          HOST_AG  (mirror HOST_RS).
 *          With job->weight local rank l's shard is weight[l] / (their
 *          sum) of S instead of 1/g: every rank's GROUP and CROSS
 *          shares above scale with it and a HOST phase's self edge
 *          carries (g - 1) x the largest share.
 *          Edges between two nodes are per rail: the ranks whose rank
 *          at the other end drives the same rail share one edge on that
 *          rail (job->rank_rail; -1 when they differ or it is unknown),
 *          `chan` being c in CROSS, 0 elsewhere; with one rail, one
 *          edge per node pair. Nodes with different local rank counts
 *          get the ring schedule instead (one RING phase): the shards
 *          would not line up. The collective library runs exactly this.
 *          The library may pipeline these phases over segments of
 *          the buffer (TP_SCHED_HIER_SEGMENT, tp_sched_pipe_seconds):
 *          the same edges and bytes, the phases overlapping.
 *          Rail leaders (tp_sched_rail_leader) are no part of this
 *          schedule any more: they stay as the plan's informational
 *          "which host of a unit to prefer for rail r" (the
 *          compression layer's one-per-rail exchange).
 * A phase's latency is steps x (alpha + hops x per-hop) + local_steps x
 * alpha, hops being the most switches a flow of the phase crosses: the
 * cost model's alpha-beta form.
 *
 * Ownership: tp_sched_build() returns a self-contained object (one
 * allocation) that the caller frees with tp_sched_destroy(); every
 * pointer an accessor returns is borrowed and valid until then. The job
 * description and its callbacks are used during the build only.
 *
 * Thread safety: a built schedule is immutable; any number of threads may
 * read it. Building calls the job's callbacks from the calling thread.
 *
 * Slurm context: any; the module does not print, block or touch the
 * environment.
 */
#ifndef TP_SCHED_H
#define TP_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"

/* Most group levels a job describes (the fabric's TP_MAX_LEVELS fits). */
#define TP_SCHED_MAX_LEVELS 8
/* One wait on a host's shared segment, in local ring steps (alpha): the
 * hierarchical host phases' cost per phase. Fitted on one host, 2 ranks,
 * 16 KiB (latency-bound; two segment waits against the ring's two local
 * steps): the segment took 0.91x the ring's time (8 runs, geometric mean,
 * x/ 1.04). Below 1, it also settles the tie between the two on one
 * host with two ranks, where the segment measured faster. */
#define TP_SCHED_SEG_WAIT 0.9
/* All-reduces of at most this many bytes on one node take its host
 * segment in one exchange: every rank copies its vector into its slot,
 * the last to arrive reduces them, the rest wait once for the result
 * (the library's small path, also under `auto` and for the barrier):
 * one wait, TP_SCHED_SEG_WAIT local steps, where the hierarchical
 * schedule's host phases take one each (tp_sched_host_small()). Fitted
 * on one host, 2 cores, against those two phases (fp32 sum, median of
 * 100 calls, 3 runs each, load 19-23): 2 ranks 5.4/7.3/10.7/16.4 us
 * against 6.6/7.8/10.5/14.6 at 4/16/32/64 KiB (even at 32 KiB); 4 ranks
 * 15.0/22.0/38.2 against 27.4/32.6/54.8 at 16/32/64 KiB; 8 ranks ahead
 * up to 256 KiB (485.9 against 481.7 there). The crossover with a core
 * per rank decides: 32 KiB. */
#define TP_SCHED_HOST_SMALL 32768
/* The collective library cuts a hierarchical all-reduce of more bytes
 * than this into segments of at most this many, or a sixteenth of the
 * call when that is more (tp_sched_pipe_nseg()), and pipelines them: each
 * segment's exchange across the units runs while the later segments'
 * reduce-scatters and the earlier ones' all-gathers run inside them
 * (TOPOPLACE_COLL_SEGMENT changes it per job; tp_sched_pipe_seconds() prices
 * it). */
#define TP_SCHED_HIER_SEGMENT ((size_t)1 << 20)
/* At most this many segments: every segment pays each phase's
 * latency, so a large buffer gets larger segments (1 GiB: 64 MiB ones),
 * and the exchanges but one sixteenth still hide. */
#define TP_SCHED_PIPE_SEGS_MAX 16
/* Largest segment TOPOPLACE_COLL_SEGMENT may set (1 GiB). */
#define TP_SCHED_HIER_SEGMENT_MAX ((size_t)1 << 30)
/* "No node / no group" in uint32_t fields and keys. */
#define TP_SCHED_NONE  UINT32_MAX
#define TP_SCHED_NOKEY UINT32_MAX
/* Rails a node mask can hold. */
#define TP_SCHED_MAX_RAILS 64

typedef enum tp_sched_algo {
	TP_SCHED_RING = 0,
	TP_SCHED_HIER = 1,
	TP_SCHED_TREE = 2,
} tp_sched_algo_t;

typedef enum tp_sched_phase_kind {
	TP_SCHED_PH_RING = 0,	 /* ring all-reduce */
	TP_SCHED_PH_TREE = 1,	 /* both trees, up and down, pipelined */
	TP_SCHED_PH_HOST_RS = 2, /* hierarchical, in order */
	TP_SCHED_PH_GROUP_RS = 3,
	TP_SCHED_PH_CROSS = 4,
	TP_SCHED_PH_GROUP_AG = 5,
	TP_SCHED_PH_HOST_AG = 6,
} tp_sched_phase_kind_t;

/* The job, as callbacks so that callers need not build arrays. */
typedef struct tp_sched_job {
	size_t n;    /* nodes, 1 .. TP_SCHED_NONE - 1, in ring order */
	int nlevels; /* group levels group() answers, 0..TP_SCHED_MAX_LEVELS */
	int nrails;  /* rails the job's nodes have (0 or 1: one) */
	const void *arg;
	/* Key of node at level 0 .. nlevels-1 (level 1 groups at 0). */
	uint32_t (*group)(const void *arg, size_t node, int level);
	/* Local ranks of node, >= 1; NULL: 1 each. */
	uint32_t (*nranks)(const void *arg, size_t node);
	/* Bit r: some rank of node drives rail r (r < nrails); NULL: none. */
	uint64_t (*rails)(const void *arg, size_t node);
	/* Rail (0 .. nrails-1) local rank l of node drives, -1 unknown;
	 * NULL: unknown for all (hierarchical edges then use any rail). */
	int (*rank_rail)(const void *arg, size_t node, uint32_t l);
	/* Nonzero: the library runs the hierarchical host phases as rings
	 * (no host segment: TOPOPLACE_COLL_SHM=0), g - 1 local steps each
	 * instead of 1. */
	int host_ring;
	/* Nonzero for a node that runs them as rings (it, or one of its
	 * ranks, refused the segment) when the others need not; NULL: none
	 * but what host_ring says. The phases end together on every node,
	 * so one such node prices them as rings for all: the slowest host. */
	int (*node_host_ring)(const void *arg, size_t node);
	/* Hierarchical: weight[l] of local rank l (> 0, the same on every
	 * node; as many entries as the nodes have ranks): HOST_RS leaves
	 * local rank l the share weight[l] / (their sum) of S instead of
	 * 1/g, and the phases above carry each rank's shard at that share
	 * (tp_fabric_rank_weights(): NICs by their rate). NULL: even. */
	const uint32_t *weight;
} tp_sched_job_t;

typedef struct tp_sched_edge {
	uint32_t src, dst; /* node ranks; src == dst: inside the node, per
			    * local rank over its local fabric */
	uint32_t chan;	   /* tree (0, 1), CROSS channel; else 0 */
	int rail;	   /* the rail it leaves src on, -1: any the nodes
			    * share */
	double frac;	   /* bytes it carries, as a share of S */
	int rail_dst;	   /* the rail it reaches dst on (-1 with rail -1) */
} tp_sched_edge_t;

typedef struct tp_sched_phase {
	tp_sched_phase_kind_t kind;
	const tp_sched_edge_t *edges; /* borrowed; node-to-node edges first,
				       * then the self edges */
	size_t nedges;
	double steps;	    /* each alpha + hops x per-hop */
	double local_steps; /* each alpha */
	/* an earlier phase with exactly these edges, TP_SCHED_NONE if none */
	uint32_t mirror;
} tp_sched_phase_t;

typedef struct tp_sched tp_sched_t;

/* Build algo's schedule for job. TP_ERR_INVAL for bad arguments (no
 * nodes, n too large, nlevels or nrails out of range, a missing group
 * callback with nlevels > 0, a node with 0 ranks), TP_ERR_NOMEM. *s_p is
 * set only on success. */
tp_err_t tp_sched_build(const tp_sched_job_t *job, tp_sched_algo_t algo,
			tp_sched_t **s_p);
/* NULL is a no-op. */
void tp_sched_destroy(tp_sched_t *s);

tp_sched_algo_t tp_sched_algo(const tp_sched_t *s);
size_t tp_sched_nnodes(const tp_sched_t *s);
/* Sum of the nodes' local ranks. */
size_t tp_sched_nranks(const tp_sched_t *s);

size_t tp_sched_nphases(const tp_sched_t *s);
/* NULL out of range. */
const tp_sched_phase_t *tp_sched_phase(const tp_sched_t *s, size_t i);
/* Sum of every phase's steps x (alpha + hops[i] x hop_s) + local_steps
 * x alpha; hops may be NULL (0). */
double tp_sched_latency(const tp_sched_t *s, double alpha_s, double hop_s,
			const int *hops);
/* Nonzero when the library runs s for an all-reduce of `bytes` as the
 * host segment's one exchange (TP_SCHED_HOST_SMALL): s is hierarchical
 * over one node of at least two ranks whose host phases go through the
 * segment (not host_ring), and bytes <= TP_SCHED_HOST_SMALL. */
int tp_sched_host_small(const tp_sched_t *s, double bytes);
/* tp_sched_latency() of an all-reduce of `bytes`: TP_SCHED_SEG_WAIT x
 * alpha_s, one wait, where tp_sched_host_small() holds. */
double tp_sched_latency_at(const tp_sched_t *s, double bytes, double alpha_s,
			   double hop_s, const int *hops);

/* Time of the hierarchical schedule cut into nseg segments as the
 * library pipelines it (TP_SCHED_HIER_SEGMENT): every segment's
 * reduce-scatters (host and group phases) one after another, each
 * segment's exchange across the units (CROSS) after its reduce-scatters
 * and the segment before's exchange, then every segment's all-gathers,
 * each after its exchange and the all-gather before. t[0], t[1], t[2]:
 * the reduce-scatters', the exchange's and the all-gathers' time for the
 * whole buffer alone (each segment takes 1/nseg of it), lat[]: their
 * latency, paid by every segment. Each stage runs at its own pace: the
 * caller bounds what stages sharing a link lose to each other (the cost
 * model: the busiest link's bytes over all phases). nseg 1 (or less):
 * the phases one after another. */
double tp_sched_pipe_seconds(const double t[3], const double lat[3],
			     double nseg);
/* Segments of a hierarchical all-reduce of `bytes` with segments of
 * seg bytes (0: none): ceil(bytes / seg), at most
 * TP_SCHED_PIPE_SEGS_MAX; 1 (one piece) when bytes <= seg. The library
 * cuts count elements into segments of ceil(count / nseg). */
double tp_sched_pipe_nseg(double bytes, double seg);
/* TOPOPLACE_COLL_SEGMENT's value v: a decimal byte count 0 ..
 * TP_SCHED_HIER_SEGMENT_MAX (0: no pipeline) into *seg_p; NULL or empty:
 * TP_SCHED_HIER_SEGMENT. TP_ERR_INVAL for anything else (*seg_p
 * untouched). The library, the SPANK plugin and the CLI read it alike. */
tp_err_t tp_sched_segment_parse(const char *v, size_t *seg_p);

/* Level-1 units (groups), in order of their first node. */
size_t tp_sched_ngroups(const tp_sched_t *s);
/* Members of group g in node rank order (borrowed); 0 out of range. */
size_t tp_sched_group_nodes(const tp_sched_t *s, size_t g,
			    const uint32_t **nodes_p);
/* Group of a node; TP_SCHED_NONE out of range. */
uint32_t tp_sched_group_of(const tp_sched_t *s, size_t node);
/* Rail leader of rail r in group g: its (r mod size)-th member, or the
 * next one round driving r. Informational (the plan records it; no
 * schedule routes through it, see hier above). TP_SCHED_NONE when no
 * member drives r, nrails <= 1 or out of range. Every algorithm's
 * schedule answers it (and the group calls above). */
uint32_t tp_sched_rail_leader(const tp_sched_t *s, size_t g, int rail);

/* Hierarchical: C, its channels (see hier above: the largest unit's
 * size); 0 for the other algorithms and for a hierarchical schedule that
 * fell back to the ring. */
uint32_t tp_sched_hier_channels(const tp_sched_t *s);

/* Trees 0 and 1 of a TP_SCHED_TREE schedule (the others have none:
 * TP_SCHED_NONE, depth 0): root, parent (TP_SCHED_NONE for the root or
 * out of range) and depth in edges. */
uint32_t tp_sched_tree_root(const tp_sched_t *s, int tree);
uint32_t tp_sched_tree_parent(const tp_sched_t *s, int tree, size_t node);
uint32_t tp_sched_tree_depth(const tp_sched_t *s, int tree);

/* The local ranks a ring hop between two nodes joins, as the library's
 * ring runs (one ring through every rank, local ranks in order): the
 * last of the node it leaves (of from_nranks) and the first of the next
 * (*to_l, 0). */
void tp_sched_ring_hop(uint32_t from_nranks, uint32_t *from_l, uint32_t *to_l);

#endif /* TP_SCHED_H */
