/*
 * tp_placement.h - choosing hosts for a job, predicting what its
 * collectives cost there, and simulating policies over job traces.
 *
 * Pure C on top of the fabric model (tp_topology.h); no Slurm. The same
 * calls run in the CLI, the simulator, the tests and (through thin
 * adapters) inside slurmctld.
 *
 * Objects:
 *   tp_state_t   allocation state of one fabric: free GPUs per host,
 *                down/drained hosts, degraded links, other jobs' traffic
 *   tp_request_t what a job asks for (nodes x GPUs per node, or GPUs)
 *   tp_policy_t  a placement policy behind one interface
 *   tp_placement_t  the answer: hosts in ring order, spans, cost, why
 *   tp_cost_ctx_t   routing and link tables for the cost model
 *
 * Ownership: functions that return objects through *_p give the caller
 * ownership (free with the matching _destroy/_free); pointers into a
 * fabric are borrowed and valid while the fabric lives. A state refers
 * to its fabric and must not outlive it.
 *
 * Thread safety: a policy run reads the fabric and state only; several
 * runs may proceed in parallel on the same (unmodified) state. Changing a
 * state needs exclusive access.
 */
#ifndef TP_PLACEMENT_H
#define TP_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"
#include "tp_topology.h"

/* ---- allocation state ------------------------------------------------------ */

typedef struct tp_state tp_state_t;

/* All hosts up and free, no background traffic. NULL on NOMEM. */
tp_state_t *tp_state_create(const tp_fabric_t *f);
void tp_state_destroy(tp_state_t *s);
tp_state_t *tp_state_clone(const tp_state_t *s);
const tp_fabric_t *tp_state_fabric(const tp_state_t *s);

int tp_state_free_gpus(const tp_state_t *s, uint32_t host);
bool tp_state_host_up(const tp_state_t *s, uint32_t host);
/* Host with no job at all (for exclusive requests). */
bool tp_state_host_idle(const tp_state_t *s, uint32_t host);
tp_err_t tp_state_set_host_up(tp_state_t *s, uint32_t host, bool up);
/* Host's cables as a ring sees them (the state's link health applied):
 * how many carry anything (returned), the Gb/s a ring gets through the
 * host (*ring_gbps_p: that count x the slowest of them; a ring splits
 * what a host sends evenly over its cables) and whether that is below
 * the best-cabled host's (*weak_p: a cable down or slower, so a ring
 * through it runs at its pace). Either pointer may be NULL; 0 and
 * nothing set for a host out of range. */
size_t tp_state_host_cables(const tp_state_t *s, uint32_t host,
			    double *ring_gbps_p, bool *weak_p);
/* Hosts whose *weak_p above is true: the weakly cabled hosts a ring runs
 * slower through (0 for NULL). */
size_t tp_state_weak_hosts(const tp_state_t *s);
/* The ring Gb/s above as tp_cost_params_t.nics_by_rate prices it: the
 * sum of the host's live cables, not their count x the slowest (default
 * off; NULL is a no-op). */
void tp_state_set_nics_by_rate(tp_state_t *s, bool on);
/* Fraction of a link's capacity still working (1 = healthy, 0.5 = half
 * its lanes or a bad cable), and other jobs' traffic on it in Gb/s, the
 * same in each direction (links are full duplex; the state keeps the two
 * directions apart, and the JSON below can give them separately).
 * tp_state_link_background returns the busier direction. A health under
 * 1e-6 is taken as 0 (dead: no finite time through it). */
tp_err_t tp_state_set_link(tp_state_t *s, uint32_t link, double health,
			   double background_gbps);
double tp_state_link_health(const tp_state_t *s, uint32_t link);
double tp_state_link_background(const tp_state_t *s, uint32_t link);
/* Give job_id gpus[i] GPUs on hosts[i]. Fails (TP_ERR_RANGE) without
 * changing anything when a host lacks the GPUs or is down. */
tp_err_t tp_state_alloc(tp_state_t *s, uint64_t job_id, const uint32_t *hosts,
			const int *gpus, size_t n);
/* Release everything job_id holds; TP_ERR_NOTFOUND if nothing. */
tp_err_t tp_state_release(tp_state_t *s, uint64_t job_id);
/* Job holding most GPUs on a host (for pictures), 0 when free. */
uint64_t tp_state_host_job(const tp_state_t *s, uint32_t host);
size_t tp_state_busy_gpus(const tp_state_t *s);

/* One job of a state: its id, the hosts it holds (ascending host index)
 * and the GPUs it holds on each. */
typedef struct tp_state_job {
	uint64_t id;
	uint32_t *hosts;
	int *gpus;
	size_t nhosts;
	size_t total_gpus;
} tp_state_job_t;
/* Every job of s in ascending id. The caller frees the array with
 * tp_state_jobs_free(); *jobs_p is NULL when there is none. TP_ERR_NOMEM,
 * TP_ERR_INVAL. */
tp_err_t tp_state_jobs(const tp_state_t *s, tp_state_job_t **jobs_p,
		       size_t *n_p);
void tp_state_jobs_free(tp_state_job_t *jobs, size_t n);

/* State JSON ("topoplace-state/1"):
 *   {"format":"topoplace-state/1",
 *    "down":["host",...],
 *    "jobs":[{"id":7,"hosts":{"node001":8,"node002":4}}],
 *    "links":[{"link":12,"health":0.5,"background_gbps":100},
 *             {"link":13,"background_gbps":[100,20]}]}
 * Hosts are named; unknown names are errors naming the object. An
 * optional "links_digest" (tp_fabric_links_digest_hex, which
 * tp_state_to_json and the monitor write) must be f's: a file written for
 * another fabric, whose link numbers mean other cables, is refused
 * (TP_ERR_FORMAT).
 * background_gbps is one number for both directions of the link or a pair
 * [node[0] -> node[1], node[1] -> node[0]], finite, at most the link's
 * gbps. A link given twice is an error naming both entries. A link's
 * "reason" (text, as `topoplace monitor` writes it) is accepted and
 * ignored. Loading takes time linear in the file and the fabric. */
tp_err_t tp_state_load_json(const tp_fabric_t *f, const char *path,
			    tp_state_t **s_p, char **err_p);
/* Largest state file tp_state_load_json_regular reads: a 65k-host
 * fabric's every link and a job on each host fit in a few MiB. Every
 * loader also refuses a file of more JSON values than one of f needs
 * (1024 + 16 a link + 16 a host and a GPU; TP_ERR_RANGE), before the
 * parse, which takes some 64 bytes a value. */
#define TP_STATE_FILE_MAX ((size_t)64 << 20)
/* The same for a daemon (plugins): path must be a regular file, found out
 * without blocking (TP_ERR_NOTREG for a FIFO, device or directory), of at
 * most TP_STATE_FILE_MAX bytes (TP_ERR_RANGE). *err_p names the file. */
tp_err_t tp_state_load_json_regular(const tp_fabric_t *f, const char *path,
				    tp_state_t **s_p, char **err_p);
/* The same with a smaller cap (1..TP_STATE_FILE_MAX bytes, else
 * TP_ERR_INVAL): a reader with a memory budget (the SPANK plugin's step
 * start; parsing takes several times the file's size). */
tp_err_t tp_state_load_json_capped(const tp_fabric_t *f, const char *path,
				   size_t max, tp_state_t **s_p, char **err_p);
/* s as the JSON above (caller frees *json_p with tp_free). Background
 * over a link's gbps is written as its gbps, which prices the same (the
 * cost model's floor) and loads back. */
tp_err_t tp_state_to_json(const tp_state_t *s, char **json_p);

/* ---- requests --------------------------------------------------------------- */

typedef struct tp_request {
	int nodes;         /* 0: any number of hosts (gpus given) */
	int gpus_per_node; /* 0 with nodes: whole hosts (all their GPUs) */
	int gpus;          /* total GPUs when nodes == 0 */
	bool exclusive;    /* hosts may not be shared with other jobs */
	double bytes;      /* all-reduce message size for cost (0: 1 GiB) */
} tp_request_t;

/* "nodes=4,gpus-per-node=8", "nodes=2", "gpus=12", ",exclusive",
 * ",bytes=256M". On error *err_p (free with tp_free) names the token. */
tp_err_t tp_request_parse(const char *text, tp_request_t *r, char **err_p);
/* The all-reduce size the cost model prices for r: r->bytes, or 1 GiB when
 * the request gives none (0). */
double tp_request_bytes(const tp_request_t *r);

/* ---- cost model -------------------------------------------------------------- */

typedef enum tp_algo {
	TP_ALGO_RING = 0,         /* ring all-reduce */
	TP_ALGO_HIERARCHICAL = 1, /* node, then group, then leaders */
	TP_ALGO_TREE = 2,         /* double binary tree all-reduce */
	TP_ALGO_REDUCE_SCATTER = 3,
	TP_ALGO_ALL_GATHER = 4,
} tp_algo_t;

const char *tp_algo_name(tp_algo_t a);
tp_err_t tp_algo_parse(const char *s, tp_algo_t *a_p);

typedef struct tp_cost_params {
	double alpha_s;        /* per step software latency (default 5 us) */
	double hop_s;          /* per switch hop (default 0.3 us) */
	double nvlink_gbps;    /* per GPU when node data has none (3600) */
	double pcie_gbps;      /* GPU <-> NIC when no NVLink path (256) */
	double chunk_bytes;    /* pipelining unit of the tree (the collective
				* library's chunk, 256 KiB); 0: no fill */
	bool host_ring;        /* hierarchical: the library runs its host
				* phases as rings, not through the host's
				* shared segment (TOPOPLACE_COLL_SHM=0);
				* default false */
	/* A ring's traffic between two hosts over their NIC pairs in
	 * proportion to the slower end's rate, as NCCL's channel search
	 * allots channels to a NIC while its bandwidth lasts (a NIC at
	 * half width carries half the channels). Default false: evenly,
	 * as libtopoplace-coll runs the plan, so the slowest NIC sets the
	 * host's pace. States priced with it should say so too
	 * (tp_state_set_nics_by_rate). */
	bool nics_by_rate;
	/* Rings and trees as libtopoplace-coll runs them: one connection
	 * per host boundary, between the NICs of the ranks at it (a ring
	 * leaves a host from its last local rank and enters the next at
	 * its first; a tree joins hosts at their anchors, local rank 0 in
	 * tree 0 and the last in tree 1), so a ring between two hosts of 8
	 * NICs crosses on one NIC pair: what a job's plan predicts, and so
	 * what its `auto` runs. Default false: a host's ring and tree
	 * traffic spread over its NIC pairs, one channel each (by rate
	 * with nics_by_rate), as NCCL runs them: what placement and the
	 * simulator price jobs by. The hierarchical schedule's ranks each
	 * carry their own shard on their own NIC either way. */
	bool coll_rings;
	/* Hierarchical: the collective library's pipeline segment in bytes
	 * (TP_SCHED_HIER_SEGMENT, or the job's TOPOPLACE_COLL_SEGMENT): an
	 * all-reduce of more bytes is priced as the library runs it, its
	 * segments' exchanges across groups behind the other segments'
	 * in-group phases (tp_sched_pipe_seconds), and no faster than the
	 * busiest link carrying all its phases' bytes. 0 (the default):
	 * one piece, the phases one after another; the placement prices
	 * that, and so ranks host sets by their unpipelined schedule. */
	double hier_segment;
} tp_cost_params_t;

void tp_cost_params_defaults(tp_cost_params_t *p);

/* Routing tables for one fabric (up/down routes, ECMP by destination),
 * built once; read-only afterwards and shareable between threads. */
typedef struct tp_cost_ctx tp_cost_ctx_t;
tp_err_t tp_cost_ctx_create(const tp_fabric_t *f, const tp_cost_params_t *p,
			    tp_cost_ctx_t **ctx_p);
void tp_cost_ctx_destroy(tp_cost_ctx_t *ctx);
/* The parameters ctx prices with (borrowed, valid until
 * tp_cost_ctx_destroy()). */
const tp_cost_params_t *tp_cost_ctx_params(const tp_cost_ctx_t *ctx);

typedef struct tp_cost {
	double seconds;         /* predicted time of the collective */
	double bandwidth_s;     /* bandwidth term */
	double latency_s;       /* latency term */
	double bottleneck_gbps; /* rate of the slowest flow */
	uint32_t bottleneck_link; /* fabric link index, TP_ID_NONE: NVLink */
	double cross_top_bytes; /* bytes crossing the top level of the tree */
	double fill_stages;     /* tree: pipeline stages (0: no fill term) */
	double fill_chunk;      /* tree: chunk bytes of that pipeline */
	/* > 0: at most this many bytes run as one host-segment exchange
	 * (TP_SCHED_HOST_SMALL, one host), with latency term
	 * latency_small_s; above, latency_big_s. latency_s is the one of
	 * the predicted size. */
	double small_bytes;
	double latency_small_s, latency_big_s;
	/* > 0: hierarchical, pipelined in segments of pipe_seg bytes
	 * above that size (tp_cost_params_t.hier_segment). At the
	 * predicted size: pipe_s[] the reduce-scatters', the exchange
	 * across groups' and the all-gathers' time alone, pipe_lat[] their
	 * latency per segment, pipe_link_s the busiest link's bytes over
	 * every phase at its capacity. seconds and bandwidth_s are the
	 * pipeline's (bandwidth_s = seconds - latency_s). */
	double pipe_seg;
	double pipe_s[3], pipe_lat[3], pipe_link_s;
} tp_cost_t;

/* The same prediction at another size: the latency term stays (with
 * small_bytes > 0, latency_small_s or latency_big_s by the side of it
 * the size falls on), the flows' time scales with the bytes (max-min rates do
 * not depend on the size), the tree's pipeline fill is recomputed for the new
 * chunk count and a pipelined hierarchical one (pipe_seg > 0) for the new
 * segment count (one piece at most pipe_seg bytes). c was predicted at
 * `from` bytes. Exact, without routing again. */
double tp_cost_seconds_at(const tp_cost_t *c, double from, double bytes);
/* As tp_cost_seconds_at, the schedule in one piece: a pipelined
 * hierarchical prediction (pipe_seg > 0) as the library runs it with no
 * segments (its phases one after another); any other, the same. The
 * plan takes the faster of the two per size. */
double tp_cost_one_piece_at(const tp_cost_t *c, double from, double bytes);

/* Predict one collective of `bytes` over hosts[0..n) in that (ring)
 * order, gpus[i] ranks on host i. state may be NULL (healthy, idle
 * fabric) or give degraded links and background traffic. Flows are
 * routed over the fabric (up/down, D-mod-K by destination, around dead
 * links); link capacity is shared max-min fairly among the flows crossing
 * it. Each step costs alpha + h * hop_s, h = the most switches a flow of
 * the phase crosses (1 under one leaf, 3 leaf-spine-leaf, 0 on NVLink).
 * bottleneck_gbps is the rate of the slowest flow (one rail's share).
 * TP_ERR_NOTFOUND when two consecutive hosts share no rail (subnet; a
 * host without a CA among several shares none) or no live route;
 * TP_ERR_INVAL for bad arguments. */
tp_err_t tp_cost_predict(const tp_cost_ctx_t *ctx, const tp_state_t *state,
			 const uint32_t *hosts, const int *gpus, size_t n,
			 double bytes, tp_algo_t algo, tp_cost_t *out);

/* The faster of ring and hierarchical all-reduce of `bytes` over
 * hosts[0..n) in that order (ring on a tie), as the placements price a
 * host set and report its cost: tp_cost_predict for both, the faster one
 * in *out and its algorithm in *algo_p (either may be NULL). state may
 * be NULL. The first algorithm's error when neither can be priced. */
tp_err_t tp_cost_predict_best(const tp_cost_ctx_t *ctx,
			      const tp_state_t *state, const uint32_t *hosts,
			      const int *gpus, size_t n, double bytes,
			      tp_algo_t *algo_p, tp_cost_t *out);

/* The traffic this collective puts on the fabric, as background for the
 * next prediction: ADDS to link_gbps[2 * l + d] (2 * tp_fabric_nlinks
 * entries, which the caller owns and zeroes once) the average Gb/s the
 * collective moves over fabric link l in direction d (0: node[0] ->
 * node[1], 1: back) while it runs, times duty (0..1, the share of time
 * the job spends communicating). Routing, the state's health and
 * background and the max-min rates are those of tp_cost_predict with the
 * same arguments; the average is the bytes crossing l divided by the
 * predicted seconds (flows that could go faster than their phase's
 * slowest wait for it). Links the job does not cross, NVLink and
 * single-host jobs add nothing.
 * TP_ERR_INVAL for bad arguments or duty outside 0..1, otherwise
 * tp_cost_predict's errors; link_gbps is untouched on error. Reads ctx
 * and state only: thread safety as tp_cost_predict. */
tp_err_t tp_cost_link_load(const tp_cost_ctx_t *ctx, const tp_state_t *state,
			   const uint32_t *hosts, const int *gpus, size_t n,
			   double bytes, tp_algo_t algo, double duty,
			   double *link_gbps);

/* Every job of s running one all-reduce of `bytes` over its hosts (in
 * ascending host order) at the same time, each with the fastest algorithm
 * tp_cost_predict finds for it on s (ring, hierarchical or tree): ADDS to
 * link_gbps[2 * l + d] what tp_cost_link_load gives for each at duty.
 * Jobs on one host add nothing; jobs without a live route add nothing and
 * are counted in *unrouted_p (may be NULL). TP_ERR_NOMEM, TP_ERR_INVAL;
 * link_gbps may hold a part of the sum on error. Reads ctx and s only. */
tp_err_t tp_state_jobs_link_load(const tp_cost_ctx_t *ctx, const tp_state_t *s,
				 double bytes, double duty, double *link_gbps,
				 size_t *unrouted_p);

/* ---- running jobs' traffic ------------------------------------------------------ */

/* The links that running jobs load, kept per job so a job's traffic leaves
 * with it, and summed per link direction: what the simulator does with
 * its running jobs, for callers that keep their own job list (the Slurm
 * plugin). One object per fabric; it refers to the fabric and must not
 * outlive it. Not thread-safe: one owner at a time. */
typedef struct tp_traffic tp_traffic_t;

/* NULL on NOMEM. */
tp_traffic_t *tp_traffic_create(const tp_fabric_t *f);
void tp_traffic_destroy(tp_traffic_t *t); /* NULL: no-op */

/* Job job_id runs on hosts[0..n) (ring order, gpus[i] ranks on host i)
 * and spends duty (0..1) of its time in collectives of bytes with algo:
 * keep the load tp_cost_link_load gives for it on state s (NULL: healthy,
 * idle), replacing what the job had. A job that loads no link (one host,
 * duty 0, no route) keeps nothing. tp_cost_link_load's errors; on error
 * the job's old load is gone. */
tp_err_t tp_traffic_add(tp_traffic_t *t, uint64_t job_id,
			const tp_cost_ctx_t *ctx, const tp_state_t *s,
			const uint32_t *hosts, const int *gpus, size_t n,
			double bytes, tp_algo_t algo, double duty);
/* Drop the job's load; TP_ERR_NOTFOUND when it has none. */
tp_err_t tp_traffic_remove(tp_traffic_t *t, uint64_t job_id);
/* Jobs holding a load. */
size_t tp_traffic_njobs(const tp_traffic_t *t);

/* Fair background for a newcomer on a directed link of cap_gbps that k
 * running jobs load with load_gbps in all: their load, but no more than
 * the k/(k+1) share max-min fairness leaves them among k + 1 competitors
 * (0 when k is 0). The simulator's rule. */
double tp_traffic_fair_background(double cap_gbps, double load_gbps, size_t k);

/* Set s's links: health and background of from (NULL: healthy, idle),
 * plus, t not NULL, the jobs' load on each direction as
 * tp_traffic_fair_background gives it for the link's capacity left
 * (rate x health). s, from and t must share one fabric (TP_ERR_INVAL). */
tp_err_t tp_traffic_apply(const tp_traffic_t *t, const tp_state_t *from,
			  tp_state_t *s);

/* ---- placement ---------------------------------------------------------------- */

/* Span levels reported for every placement. */
typedef enum tp_span_level {
	TP_SPAN_HOSTS = 0,
	TP_SPAN_NVDOMAINS = 1,
	TP_SPAN_GROUPS = 2,      /* level-1 groups (leaf / scalable unit) */
	TP_SPAN_SPINE_GROUPS = 3, /* level-2 groups */
	TP_SPAN_NLEVELS = 4,
} tp_span_level_t;

typedef struct tp_policy_params {
	/* topoplace policy weights; see the config table in policy.c */
	double w_time;        /* predicted all-reduce time */
	double w_frag;        /* fragmentation: breaking up free groups */
	double w_churn;       /* moving away from the last choice */
	/* job-size mix for look-ahead: share of future jobs needing a
	 * whole group / spine group (0..1) */
	double big_job_share;
	/* topoplace: cost-model predictions a decision may spend pricing
	 * candidates when a cost context is given (default and at most
	 * TP_PRICE_BUDGET_MAX: more prices as many; 0: the structural
	 * choice alone, as without a context) */
	double price_budget;
	/* Slurm's node weights (slurm.conf Weight=) per fabric host, which
	 * the slurm-tree, slurm-tree-22.05 and slurm-block models order
	 * nodes by, lower first, as cons_tres does (doc/slurm-tree-model.md
	 * 7.2); nnode_weight of them, which must be the fabric's host count
	 * (tp_node_weights_*() make such an array; a placement with another
	 * count fails, TP_ERR_INVAL). Borrowed; NULL: every node Weight=1,
	 * Slurm's default. topoplace honours them as its native plugin
	 * does: among the lightest offered hosts when they hold the job,
	 * else slurm-tree's choice. The other policies (slurm-linear's
	 * model has one weight tier), and the ideal placement a slowdown is
	 * measured against, never read them. */
	const uint32_t *node_weight;
	size_t nnode_weight;
} tp_policy_params_t;

/* Node weights for tp_policy_params_t.node_weight, one per fabric host
 * (caller frees with tp_free()). From a slurm.conf (or any file of its
 * NodeName= lines), read as Slurm reads it: '#' starts a comment (not
 * after an odd number of backslashes), a line ending in an odd number of
 * backslashes goes on with the next (the last one dropped), keys are
 * case-insensitive, values may be quoted. Each NodeName= line's hosts
 * get its Weight= (a number, base 0 with a k suffix, or INFINITE /
 * UNLIMITED, which Slurm takes as 2^32 - 2), or the last
 * NodeName=DEFAULT's, or 1; every other key and line is ignored, as are
 * nodes the fabric does not have (CPU nodes). TP_ERR_PARSE (a bad
 * Weight= or host list, named by line), TP_ERR_NOTFOUND (no line names a
 * host of the fabric), the file's errors; *err_p (may be NULL; caller
 * frees) says which, naming path. */
tp_err_t tp_node_weights_load(const tp_fabric_t *f, const char *path,
			      uint32_t **w_p, char **err_p);
/* Every node a slurm.conf names (NodeName= lines but DEFAULT, their host
 * lists expanded, in file order; free with tp_hostlist_free), read as
 * tp_node_weights_load reads it; *include_p: it has an Include line, whose
 * files this does not read (their nodes are missing). TP_ERR_PARSE (a bad
 * host list, named by line) and the file's errors; *err_p (may be NULL;
 * caller frees) names path. */
tp_err_t tp_slurm_conf_nodes(const char *path, char ***names_p, size_t *n_p,
			     bool *include_p, char **err_p);
/* The Weight= the CLI's and the benches' `health` weights give weak
 * hosts. */
#define TP_NODE_WEIGHT_WEAK 100
/* As an admin keeps weakly cabled hosts last: Weight=1 for every host,
 * `weak` (2 .. 2^32 - 2) for the ones tp_state_host_cables() calls weak
 * on s (its cables, and its link health). TP_ERR_INVAL, TP_ERR_NOMEM. */
tp_err_t tp_node_weights_health(const tp_state_t *s, uint32_t weak,
				uint32_t **w_p);

/* The most predictions the topoplace policy spends on one decision. */
#define TP_PRICE_BUDGET_MAX 96

void tp_policy_params_defaults(tp_policy_params_t *p);

typedef struct tp_placement {
	uint32_t *hosts;        /* ring order */
	int *gpus;              /* GPUs taken on each host */
	size_t nhosts;
	size_t span[TP_SPAN_NLEVELS];
	size_t min_span_empty[TP_SPAN_NLEVELS]; /* best on an empty fabric */
	size_t min_span_free[TP_SPAN_NLEVELS];  /* best on this free state */
	double predicted_s;     /* ring/hierarchical, whichever is faster */
	tp_algo_t algo;         /* the one that was (ring on a tie) */
	double cross_top_bytes; /* its bytes across the top switch level */
	double ideal_s;		/* the same on the fastest set known on the
				 * empty fabric (the packed set, every
				 * deterministic policy's choice there, for
				 * GPUs alone also split evenly, the
				 * cheapest set topoplace priced there and
				 * the best-cabled sets): one
				 * per request shape, whichever policy chose;
				 * above predicted_s only when these hosts
				 * beat them all. Whole hosts (nodes alone)
				 * on hosts of different GPU counts: those
				 * sets run different rank counts and the
				 * fastest is taken, so predicted_s /
				 * ideal_s there also holds the bigger
				 * collective of bigger hosts, not only the
				 * placement's cost (tp_place_ideal) */
	char *explain;          /* one or two sentences for humans */
	double decision_s;      /* time spent choosing (not predicting) */
	double decision_cpu_s;	/* the same on this thread's CPU clock: what
				 * the choice costs, without the time the
				 * thread waited for a CPU (tp_place_run
				 * only; the others leave 0: the clock is a
				 * system call, microseconds on a VM) */
} tp_placement_t;

void tp_placement_free(tp_placement_t *p); /* frees members; p itself not */
/* A deep copy of *from into *to (hosts, gpus and explain are new
 * allocations: the copy is independent of from; free it with
 * tp_placement_free). For callers that keep answers and hand them out
 * again, as the Slurm plugin's memo does: tp_place_choose is
 * deterministic, so a kept answer is the one the same policy, state,
 * request, parameters, context and seed would give. *to is written only
 * on success. TP_ERR_INVAL (NULL, or hosts missing), TP_ERR_NOMEM. */
tp_err_t tp_placement_copy(const tp_placement_t *from, tp_placement_t *to);

typedef struct tp_policy tp_policy_t;

/* Policies by name: "topoplace", "slurm-tree" (Slurm 24.11's tree
 * selection), "slurm-tree-22.05", "slurm-block", "slurm-linear",
 * "first-fit", "random". NULL if unknown. Static; do not free. */
const tp_policy_t *tp_policy_find(const char *name);
const char *tp_policy_name(const tp_policy_t *p);
/* Names joined by ", " for help texts (static). */
const char *tp_policy_names(void);

/* Choose hosts for r on the free part of s. TP_ERR_RANGE when the
 * request can never fit this fabric, TP_ERR_NOTFOUND when it does not
 * fit now. Deterministic for a given seed. ctx may be NULL (then no
 * prediction: predicted_s = ideal_s = 0). On success fills *out (caller
 * frees with tp_placement_free). */
tp_err_t tp_place_run(const tp_policy_t *policy, const tp_state_t *s,
		      const tp_request_t *r, const tp_policy_params_t *params,
		      const tp_cost_ctx_t *ctx, uint64_t seed,
		      tp_placement_t *out);

/* tp_place_run for callers on a time budget that price the answer
 * later, if at all (the Slurm plugin's selection): ctx, may be NULL,
 * serves only the policy's own choice (topoplace prices candidates with
 * it); the answer itself is not predicted: predicted_s, ideal_s,
 * cross_top_bytes and decision_cpu_s are 0, algo is ring. Same errors, ownership and thread
 * safety as tp_place_run. */
tp_err_t tp_place_choose(const tp_policy_t *policy, const tp_state_t *s,
			 const tp_request_t *r,
			 const tp_policy_params_t *params,
			 const tp_cost_ctx_t *ctx, uint64_t seed,
			 tp_placement_t *out);

/* Buffers one thread's decisions keep between them: the cost model's
 * (flows, paths, solver queues, the last hierarchical schedule), grown
 * once instead of at every decision. Inside slurmctld each decision
 * starts with cold caches and each allocation costs there. Holds nothing
 * a decision's answer depends on (the routes met are forgotten at each
 * decision). Not thread safe: one per thread. */
typedef struct tp_place_ws tp_place_ws_t;

tp_place_ws_t *tp_place_ws_create(void); /* NULL: out of memory */
void tp_place_ws_destroy(tp_place_ws_t *ws); /* NULL: nothing */

/* tp_place_choose with the caller's workspace (NULL: as tp_place_choose):
 * the same answer. */
tp_err_t tp_place_choose_ws(const tp_policy_t *policy, const tp_state_t *s,
			    const tp_request_t *r,
			    const tp_policy_params_t *params,
			    const tp_cost_ctx_t *ctx, uint64_t seed,
			    tp_place_ws_t *ws, tp_placement_t *out);

/* The ideal all-reduce times of the request shapes one caller meets.
 * tp_place_run's ideal_s depends on the request's shape only (hosts, GPUs
 * per host or in all, exclusive, bytes), with the fabric, the cost
 * context and the policy parameters, and is costly: every deterministic
 * policy chooses on the empty fabric and each choice is priced. A cache
 * works each shape out once. It serves one fabric, cost context and set
 * of parameters: clear it when any of them changes. Not thread safe: one
 * per thread. */
typedef struct tp_ideal_cache tp_ideal_cache_t;

tp_ideal_cache_t *tp_ideal_cache_create(void); /* NULL: out of memory */
void tp_ideal_cache_clear(tp_ideal_cache_t *c);
void tp_ideal_cache_destroy(tp_ideal_cache_t *c);
size_t tp_ideal_cache_size(const tp_ideal_cache_t *c); /* shapes held */

/* tp_place_run with the caller's workspace (NULL: as tp_place_run): the
 * same answer, without the buffers made anew for each decision, for
 * callers that decide many times. */
tp_err_t tp_place_run_ws(const tp_policy_t *policy, const tp_state_t *s,
			 const tp_request_t *r,
			 const tp_policy_params_t *params,
			 const tp_cost_ctx_t *ctx, uint64_t seed,
			 tp_place_ws_t *ws, tp_placement_t *out);

/* tp_place_run_ws with the ideal taken from, or added to, cache, for
 * callers that decide many times (the simulator): decision_cpu_s is 0
 * (the thread's CPU clock is a system call, a tenth of a simulation's
 * time on a VM). cache and ws may be NULL. */
tp_err_t tp_place_run_cached(const tp_policy_t *policy, const tp_state_t *s,
			     const tp_request_t *r,
			     const tp_policy_params_t *params,
			     const tp_cost_ctx_t *ctx, uint64_t seed,
			     tp_ideal_cache_t *cache, tp_place_ws_t *ws,
			     tp_placement_t *out);

/* The ideal all-reduce seconds of r's shape on fabric f: tp_place_run's
 * ideal_s without a choice on a state. A shape of whole hosts (nodes
 * alone) fixes no GPU count: on a fabric whose hosts hold different
 * counts this is the fastest of the sets it prices whatever their GPU
 * counts (2 hosts of 4 GPUs in one leaf beat 4 + 8 there), not the
 * same collective as the pick's on the best hosts for it; where all
 * hosts hold as many GPUs the two agree. cache may be NULL. TP_ERR_INVAL
 * (NULL ctx, a malformed request), TP_ERR_RANGE (r can never fit f),
 * TP_ERR_NOMEM. */
tp_err_t tp_place_ideal(const tp_fabric_t *f, const tp_request_t *r,
			const tp_policy_params_t *params,
			const tp_cost_ctx_t *ctx, tp_ideal_cache_t *cache,
			double *seconds_p);

/* Spans of a host set and the minimum spans for the same size. */
void tp_span_of(const tp_fabric_t *f, const uint32_t *hosts, size_t n,
		size_t span[TP_SPAN_NLEVELS]);
void tp_span_min(const tp_fabric_t *f, const tp_state_t *s,
		 const tp_request_t *r, size_t span[TP_SPAN_NLEVELS]);

/* Reorder hosts so each level-1 group is contiguous and groups follow
 * their spine groups (fewest group-boundary crossings on a ring). */
void tp_ring_order(const tp_fabric_t *f, uint32_t *hosts, int *gpus, size_t n);

/* ---- traces and the simulator -------------------------------------------- */

typedef struct tp_job_spec {
	double submit_s;   /* arrival time */
	int nodes;         /* hosts (0: gpus anywhere) */
	int gpus_per_node; /* with nodes; 0 = whole hosts */
	int gpus;          /* total GPUs (derived when nodes is set) */
	int line;          /* its line in the CSV file (0: synthetic) */
	double run_s;      /* run time on an ideal placement */
	double comm_frac;  /* share of run_s spent in all-reduce (0..1) */
	double bytes;      /* all-reduce size per step */
	/* Slurm's records: offsets into tp_trace_t.strings of the job's id
	 * and of the hosts it ran on (NodeList; 0: none); tp_trace_job_id,
	 * tp_trace_job_nodes read them */
	uint32_t id_at, nodes_at;
	double start_s; /* Slurm's records: when it started (as submit_s) */
} tp_job_spec_t;

typedef struct tp_trace {
	char *name;
	tp_job_spec_t *jobs; /* sorted by submit time */
	size_t njobs;
	const char *format; /* "csv", "sacct", "jobcomp" or "synthetic" */
	/* Slurm's records (sacct, jobcomp): what was not a job of the trace */
	size_t left_nogpu; /* jobs that held no GPU */
	size_t left_unrun; /* jobs that never started or had not ended */
	size_t left_backwards; /* jobs whose end is before their start (a
				* clock stepped back?) */
	size_t left_steps; /* sacct rows of job steps (JobID with a '.') */
	size_t rounded;	   /* jobs whose GPUs did not split evenly over
			    * their hosts: GPUs per host rounded up */
	bool gpu_tres;	   /* some record's TRES named gres/gpu */
	char *strings;	   /* job ids and node lists (NUL-separated) */
	size_t assumed;	   /* jobs whose TRES named no GPU, given
			    * tp_trace_opts_t.assume_gpus */
	size_t eligible_later; /* jobs that arrive at their Eligible time,
				* after their Submit (held, dependent) */
	size_t repeated;       /* sacct rows of a job read before (concatenated
				* dumps whose windows it ran in): read once */
} tp_trace_t;

void tp_trace_free(tp_trace_t *t); /* members only */

/* Most jobs a trace holds, CSV or synthetic (Helios, the largest
 * published trace, has 3.4 million; 10 million job specs take 480 MB). */
#define TP_TRACE_MAX_JOBS ((size_t)10000000)
/* CSV with a header line naming the columns, any order:
 *   submit_s, gpus | (nodes, gpus_per_node), run_s,
 *   comm_frac | model_bytes (one of them; the other gets a default)
 * '#' comments. Errors name FILE:LINE; TP_ERR_RANGE: a job row past
 * TP_TRACE_MAX_JOBS (besides tp_file_read's 1 GiB). */
tp_err_t tp_trace_load_csv(const char *path, tp_trace_t *t, char **err_p);
/* A trace file of any kind: the CSV above, or Slurm's own records of
 * the jobs that ran, told apart by their first line:
 *  - `sacct --parsable2` (or --parsable) output with its header, fields
 *    by name in any order: Submit, Start, End, NNodes and AllocTRES or
 *    ReqTRES are needed (JobID, State, Elapsed and others are read or
 *    ignored), e.g. sacct -a -X -P -S 2026-11-01
 *    --format=JobID,Submit,Eligible,Start,End,NNodes,NodeList,AllocTRES;
 *  - the job completion log of JobCompType=jobcomp/filetxt (lines of
 *    JobId=... SubmitTime=... StartTime=... EndTime=... NodeCnt=...
 *    Tres=...).
 * A record is a job submitted at its Submit time (seconds after the
 * trace's first; at its Eligible time, sacct's Eligible or jobcomp's
 * EligibleTime, when that is later and no later than its start: a job
 * held or waiting on a dependency; counted in eligible_later), run for
 * End - Start on its hosts with the GPUs of its
 * TRES (gres/gpu) spread evenly over them; comm_frac and model_bytes
 * get the CSV's defaults. Jobs without GPUs, jobs that never ran or had
 * not ended, and job steps are left out and counted in *t; a header
 * line met again (sacct dumps concatenated) heads the rows after it, and
 * a job's row met again with the same start is read once (a job left out
 * then, running or pending, is read as the later row says).
 * Times are
 * Slurm's ISO 8601 ones (YYYY-MM-DDTHH:MM:SS, in the local zone, TZ:
 * each converted with its own offset, so a daylight-saving change
 * inside the trace shifts nothing; an hour written twice when clocks go
 * back reads as its first; a time in an hour they skip is an error: the
 * file was written in another zone). Errors name FILE:LINE and the
 * field. */
tp_err_t tp_trace_load(const char *path, tp_trace_t *t, char **err_p);
/* Job j's id and the hosts it ran on (a Slurm host list) as Slurm
 * recorded them; NULL when the trace has none (CSV, synthetic). */
const char *tp_trace_job_id(const tp_trace_t *t, size_t j);
const char *tp_trace_job_nodes(const tp_trace_t *t, size_t j);

/* What the placement Slurm gave a job of a trace cost (topoplace trace
 * --price): its hosts (the record's NodeList) in ring order, as a plan
 * runs them, with its GPUs per host (all of a host's when whole), the
 * faster of ring and hierarchical all-reduce of its bytes there on the
 * state (link health, background: tp_cost_predict_best), the ideal for
 * its shape (tp_place_ideal: the fastest set known on the idle fabric)
 * and the level-1 groups it spans against the fewest its size needs on
 * the empty fabric. */
typedef struct tp_trace_price {
	size_t nhosts, gpus; /* its hosts, the GPUs it held on them */
	double predicted_s, ideal_s;
	tp_algo_t algo;
	size_t groups, groups_min; /* level-1 groups spanned, fewest */
	/* tp_trace_price_sweep: its hosts' GPUs were already held by the
	 * records running then (overlapping records: oversubscribed nodes
	 * or bad data; not hosts down or busy in the state given), so it
	 * held and loaded nothing */
	bool overbooked;
} tp_trace_price_t;
/* TP_ERR_NOTFOUND: the job has no node list, or a host of it is not in
 * f; TP_ERR_PARSE: a node list that is no host list; TP_ERR_RANGE: a
 * host with fewer GPUs than the job held there; *err_p (may be NULL)
 * then says which. Other errors: the cost model's. */
tp_err_t tp_trace_price_job(const tp_fabric_t *f, const tp_state_t *s,
			    const tp_cost_ctx_t *ctx,
			    const tp_policy_params_t *pp,
			    tp_ideal_cache_t *cache, const tp_trace_t *t,
			    size_t j, tp_trace_price_t *out, char **err_p);
/* Each multi-node job of t priced at its start, as the simulator
 * prices a start, in one sweep over the jobs' starts and ends on a copy
 * of s: the trace's other running jobs hold their recorded hosts and
 * GPUs and load their links with their all-reduce at their duty cycle
 * (comm_frac stretched by their own slowdown; tp_traffic, as the Slurm
 * plugin keeps running jobs' traffic); a job whose hosts are not in f
 * holds and loads nothing. Into slurm[0..t->njobs) (NULL: not wanted)
 * the job's recorded hosts in ring order priced there (the faster of ring
 * and hierarchical, tp_cost_predict_best) against the ideal for its shape
 * on the idle fabric, and into alt[] (NULL: not wanted) the pick of
 * policy from the hosts free then, for the job's GPUs on each of its
 * number of hosts, sharing hosts by GPU as Slurm let it (not exclusive;
 * whole-host jobs take whole hosts), priced there: nhosts, gpus,
 * predicted_s, ideal_s, algo, groups, groups_min (the fewest on the empty
 * fabric). predicted_s is NAN for single-host jobs, jobs whose hosts are
 * not in f, and jobs that could not be priced or placed. Each pick is
 * made as if every earlier job ran where Slurm put it: a decision next to
 * Slurm's, not a replay. */
tp_err_t tp_trace_price_sweep(const tp_fabric_t *f, const tp_state_t *s,
			      const tp_cost_ctx_t *ctx,
			      const tp_policy_params_t *pp,
			      tp_ideal_cache_t *cache,
			      const tp_policy_t *policy, const tp_trace_t *t,
			      tp_trace_price_t *slurm, tp_trace_price_t *alt);
/* Slurm's recorded run times are what each job took on the hosts it
 * got; the simulator takes run_s as the run on ideal hosts. Divide each
 * multi-node job's run_s by the stretch its recorded hosts cost it at
 * its start, (1 - comm_frac) + comm_frac x for the slowdown x that
 * tp_trace_price_sweep prices there (its "slurm" output, on f healthy
 * and idle but for the trace's own running jobs); *n_p: the jobs changed
 * (those priced at a stretch other than 1). A job with no route between
 * its hosts, or no ideal for its shape, is not priced and keeps its run
 * time. The stretch rests on comm_frac, which Slurm does not record. */
tp_err_t tp_trace_deflate(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
			  const tp_policy_params_t *pp, tp_trace_t *t,
			  size_t *n_p);
/* Job j's hosts in f as Slurm recorded them (record order) and the GPUs
 * it held on each, into *hosts_p and *gpus_p (tp_free both; n in *n_p);
 * tp_trace_price_job's errors and messages. */
tp_err_t tp_trace_job_hosts(const tp_fabric_t *f, const tp_trace_t *t, size_t j,
			    uint32_t **hosts_p, int **gpus_p, size_t *n_p,
			    char **err_p);
/* tp_trace_load with options (NULL: the defaults). */
typedef struct tp_trace_opts {
	/* Slurm's records whose TRES names no GPU at all (slurm.conf without
	 * AccountingStorageTRES=gres/gpu, where Slurm tracks none): -1 left
	 * out as jobs without GPUs (the default); 0 taken to hold their
	 * hosts whole (gpus_per_node 0, as on clusters that give GPU jobs
	 * whole nodes); N > 0 taken to hold N GPUs on each host. A TRES
	 * with gres/gpu=0 is a job without GPUs either way. */
	int assume_gpus;
} tp_trace_opts_t;
tp_err_t tp_trace_load_opts(const char *path, const tp_trace_opts_t *o,
			    tp_trace_t *t, char **err_p);
/* Built-in synthetic traces, seeded: "philly", "helios", "llm"; GPU
 * counts capped at max_gpus; arrival rate set so the offered load is
 * `load` (e.g. 0.9) of max_gpus. */
tp_err_t tp_trace_synthetic(const char *name, size_t njobs, uint64_t seed,
			    int max_gpus, int gpus_per_host, double load,
			    tp_trace_t *t);
/* "philly, helios, llm" and the citation for each (static). */
const char *tp_trace_synthetic_names(void);
const char *tp_trace_synthetic_source(const char *name);

typedef struct tp_sim_sample {
	double t;           /* seconds since the first arrival */
	double util;        /* busy GPUs / all GPUs */
	double frag;        /* free GPUs outside wholly free level-1 groups,
			     * as a share of free GPUs */
} tp_sim_sample_t;

/* Job-size classes of tp_sim_result_t.class_*: hosts a job asks for. */
#define TP_SIM_NCLASSES 4
/* Class of a job on n hosts: 0 (1), 1 (2-8), 2 (9-32), 3 (> 32). */
int tp_sim_class_of(size_t nhosts);
/* "1", "2-8", "9-32", ">32" (static). */
const char *tp_sim_class_name(int cls);

typedef struct tp_sim_result {
	const char *policy;
	size_t jobs, multi_node_jobs;
	/* jobs dropped because the policy can never place them on this
	 * fabric (more GPUs than it has, more whole hosts of a size than
	 * exist, ...), left out of every other figure; first_unplaceable:
	 * the lowest trace index among them (SIZE_MAX: none) */
	size_t unplaceable, first_unplaceable;
	double gpu_util;          /* busy GPU-seconds / (GPUs * makespan) */
	double useful_util;       /* the same counting each job at its ideal
				   * run time, at most the time it held: GPUs
				   * held while slowed by a bad placement do
				   * not count as useful */
	double makespan_s;	  /* first job admitted to last end (jobs
				   * dropped as never placeable left out) */
	double mean_wait_s, p50_wait_s, p95_wait_s;
	double mean_jct_s, p50_jct_s, p95_jct_s;
	double comm_slowdown_mean, comm_slowdown_p95; /* multi-node jobs */
	/* where the slowdown comes from (tp_sim_opts_t.sources; 0
	 * otherwise), mean over the multi-node jobs: comm_static_mean, the
	 * hosts each got on the idle fabric against the ideal (the rest of
	 * comm_slowdown_mean is other jobs' traffic); comm_free_best_mean,
	 * the best of those hosts and the sets the hosts idle at its start
	 * offered (each level-1 group's and the fabric's best cabled, on the
	 * idle fabric): what choosing among the free hosts could have
	 * reached */
	double comm_static_mean, comm_free_best_mean;
	double min_span_fraction; /* multi-node jobs at the minimum group
				   * span the free state allowed */
	double min_span_empty_fraction; /* ... the empty fabric allows */
	double cross_spine_bytes;
	double frag_time_mean;    /* sample frag weighted by time */
	/* mean JCT per job-size class (TP_SIM_NCLASSES) by the hosts the
	 * job asks for (nodes, or its GPUs over the largest host): 1, 2-8,
	 * 9-32, more than 32; 0 where a class has no job */
	double class_jct_mean_s[4];
	/* ... split into the wait before the start and the run after it
	 * (jct = wait + run); class_ideal_run_mean_s: the run each job would
	 * take at its ideal placement on an idle fabric */
	double class_wait_mean_s[4], class_run_mean_s[4];
	double class_ideal_run_mean_s[4];
	size_t class_jobs[4];
	/* Why the queue waited: share of the makespan during which the
	 * queue head was of class c and held fewer free GPUs than it asks
	 * for (head_short) or enough free GPUs that the policy would not
	 * take (head_shape: fragmentation, or a rule of the policy's such as
	 * waiting for one NVLink domain) */
	double class_head_short[TP_SIM_NCLASSES],
	    class_head_shape[TP_SIM_NCLASSES];
	double decision_p99_s;
	size_t rerated;           /* re-predictions of running jobs */
	size_t held_jobs; /* jobs the hold what-if made wait (hold_s) */
	double *slowdowns;        /* per multi-node job, for plots */
	/* per trace job, in trace order (njob_jct: the trace's length):
	 * its JCT, NAN where it never ran (unplaceable); error bars over
	 * parts of one trace pair jobs by it */
	double *job_jct_s;
	size_t njob_jct;
	tp_sim_sample_t *samples; /* over time */
	size_t nsamples;
} tp_sim_result_t;

void tp_sim_result_free(tp_sim_result_t *r); /* members only */

/* FCFS with EASY backfill over the trace, placing with `policy`; a job's
 * run time stretches by its predicted communication time on the hosts it
 * got compared with an ideal placement. Deterministic for a seed. */
tp_err_t tp_sim_run(const tp_fabric_t *f, const tp_trace_t *t,
		    const tp_policy_t *policy, const tp_policy_params_t *pp,
		    const tp_cost_ctx_t *ctx, uint64_t seed,
		    tp_sim_result_t *out);

typedef struct tp_sim_opts {
	/* comm_static_mean and comm_free_best_mean: a level-1 group's
	 * count plus two predictions more per multi-node job */
	bool sources;
	/* A what-if, not what slurmctld does: a multi-node job whose hosts
	 * the policy chose are predicted slower than hold_slowdown x its
	 * ideal waits for a better set (the policy's choice when it is next
	 * tried), at most hold_s seconds after the first such choice; then
	 * it takes what it is offered. EASY backfill goes on around it as
	 * around any blocked head. 0 in either: off. */
	double hold_slowdown, hold_s;
	/* The ideal time of each request shape (NULL: a cache of the run's
	 * own). It depends on the fabric, the cost context and the policy
	 * parameters, never on the policy, seed or trace, so runs that
	 * share those three may share one cache (not at once: it is not
	 * locked) and price each shape once instead of once a run. */
	tp_ideal_cache_t *ideal;
} tp_sim_opts_t;

/* tp_sim_run with options (NULL: none). */
tp_err_t tp_sim_run_opts(const tp_fabric_t *f, const tp_trace_t *t,
			 const tp_policy_t *policy,
			 const tp_policy_params_t *pp, const tp_cost_ctx_t *ctx,
			 uint64_t seed, const tp_sim_opts_t *opts,
			 tp_sim_result_t *out);

/* ---- decision records (topoplace-decision/1) ----------------------------- */

/* The native (24.11) plugin records each confirmed placement in
 * StateSaveLocation/TP_DECISIONS_FILE, one JSON object per line, and
 * `topoplace show` reads them back. This is the one owner of that format:
 *
 *   {"format":"topoplace-decision/1","job_id":N,"time":EPOCH,
 *    "hosts":"node[001,003]","ring":["node001",...],"gpus":[2,...],
 *    "span_groups":1,"min_groups":1,"min_groups_empty":1,
 *    "predicted_s":X,"ideal_s":Y (both absent when unpriced),
 *    "policy":"topoplace","decision_ms":Z,"reason":"..."}
 *
 * The file is written by slurmctld as SlurmUser: anyone who can write
 * StateSaveLocation can write it, so readers treat it as untrusted. */
#define TP_DECISIONS_FILE "topoplace-decisions.jsonl"
#define TP_DECISION_FORMAT "topoplace-decision/1"
/* Longest record line read or written (a 65,536-host ring is ~1.2 MB). */
#define TP_DECISION_LINE_MAX ((size_t)4 << 20)
/* A count the record does not carry. */
#define TP_DECISION_NONE SIZE_MAX

typedef struct tp_decision {
	uint32_t job_id;  /* 1..UINT32_MAX */
	int64_t time;     /* seconds since the epoch */
	char *hosts;      /* Slurm host list of the job's nodes */
	char **ring;      /* host names in ring order (NULL: not recorded) */
	int *gpus;        /* GPUs per ring host */
	size_t nring;
	/* per TP_SPAN_* level; TP_DECISION_NONE where not recorded (format
	 * /1 records the group level only) */
	size_t span[TP_SPAN_NLEVELS];
	size_t min_free[TP_SPAN_NLEVELS];  /* best on the free state */
	size_t min_empty[TP_SPAN_NLEVELS]; /* best on an empty fabric */
	bool priced;      /* predicted_s and ideal_s are valid */
	double predicted_s, ideal_s;
	char *policy;     /* NULL: not recorded */
	double decision_ms; /* < 0: not recorded */
	char *reason;     /* NULL: not recorded */
} tp_decision_t;

/* An empty record: every count TP_DECISION_NONE, nothing priced. */
void tp_decision_init(tp_decision_t *d);
/* Members only; a zeroed or initialised record is fine. */
void tp_decision_free(tp_decision_t *d);

/* One record line, '\n'-terminated, into *line_p (caller frees with
 * tp_free) and its length into *len_p. hosts, ring, gpus, policy and
 * reason must be set; strings are escaped (control bytes, quotes, every
 * code point beyond ASCII as \uXXXX, a byte that is no UTF-8 as U+FFFD),
 * so any input gives one printable ASCII JSON line, and decoding it and
 * encoding again gives the same bytes.
 * TP_ERR_INVAL: a required member missing or a count TP_DECISION_NONE;
 * TP_ERR_RANGE: over TP_DECISION_LINE_MAX; TP_ERR_NOMEM. */
tp_err_t tp_decision_encode(const tp_decision_t *d, char **line_p,
			    size_t *len_p);

/* How strictly tp_decision_decode reads. */
typedef enum tp_decision_mode {
	/* exactly what tp_decision_encode writes: every key present once,
	 * no other key, types and ranges checked, names by the fabric's
	 * name rule, hosts a valid host list, ring and gpus of one length */
	TP_DECISION_STRICT = 0,
	/* what `topoplace show` accepts: an object with an integer job_id
	 * and, if present, this format; members of the wrong type or out of
	 * range are left unrecorded; hosts may be an array of names; "span"
	 * and "min_span" objects ({"hosts":N,"groups":N,...}) are read too */
	TP_DECISION_LENIENT = 1,
} tp_decision_mode_t;

/* Parse one line (len bytes, without or with its '\n'; need not be
 * NUL-terminated) into *d (initialised here; free with tp_decision_free
 * on success, untouched on error). TP_ERR_PARSE with *why_p (caller
 * frees with tp_free; may be NULL) naming the member and what is wrong,
 * as one printable line; TP_ERR_RANGE over TP_DECISION_LINE_MAX;
 * TP_ERR_NOMEM. */
tp_err_t tp_decision_decode(const char *line, size_t len,
			    tp_decision_mode_t mode, tp_decision_t *d,
			    char **why_p);

/* Every record of a decisions file, in file order, into *recs_p (*n_p of
 * them; free with tp_decisions_free). Lines that do not decode (a write
 * cut short, an edit) are skipped and counted in *bad_p, the first
 * one's "FILE:LINE: why" in *why_p when why_p is given (caller frees;
 * NULL when every line decoded). Errors: tp_file_read's. */
tp_err_t tp_decisions_read(const char *path, tp_decision_mode_t mode,
			   tp_decision_t **recs_p, size_t *n_p, size_t *bad_p,
			   char **why_p);
void tp_decisions_free(tp_decision_t *recs, size_t n);

/* The file the records are appended to, and what its writer knows of it.
 * Several processes (controllers sharing StateSaveLocation) may append
 * to and trim the same file: both hold an flock on PATH.lock (the trim
 * renames a copy over PATH, so PATH's own inode cannot carry the lock).
 * One journal per thread at a time. */
typedef struct tp_decision_journal {
	const char *path; /* borrowed */
	size_t keep;      /* records kept by a trim; trimmed past 2 * keep */
	long gid;         /* group of the file and its lock; -1: leave */
	size_t lines;     /* whole lines in the file; SIZE_MAX: unknown,
			   * counted (and a line cut short dropped) at the
			   * next append */
	bool lock_missed; /* the last wait for the lock ran out: the next
			   * call tries once, without waiting */
} tp_decision_journal_t;

/* Append one encoded line with one write(2) on an O_APPEND descriptor
 * (the record is in the file whole or not at all), creating the file
 * 0640 (mending an older mode and the group), under the lock; trim
 * first when lines is unknown and after when it passes 2 * keep.
 * TP_ERR_IO when the record was not written (j->lines then unknown);
 * TP_ERR_NOTREG when PATH is a FIFO, device or directory (found without
 * blocking; nothing written);
 * a lock that cannot be had is logged (debug) and the record written
 * anyway; one another holds is waited for TP_DECISION_LOCK_WAIT_MS once,
 * then tried without waiting until had again (lock_missed), and while
 * another holds it nothing is trimmed. Logs failures at debug level only: the
 * caller says what was lost. */
#define TP_DECISION_LOCK_WAIT_MS 2000
tp_err_t tp_decision_append(tp_decision_journal_t *j, const char *line,
			    size_t len);
/* Under the lock: drop a last line cut short, then keep the last
 * j->keep lines (a copy synced and renamed over the file); j->lines
 * gets the count. TP_ERR_NOTFOUND (no file: lines 0), TP_ERR_IO. */
tp_err_t tp_decision_trim(tp_decision_journal_t *j);

#endif /* TP_PLACEMENT_H */
