/*
 * tp_runtime.h - the job-start plan: how a job's processes should talk on
 * the hosts they actually got.
 *
 * From the fabric model (tp_topology.h) and a job's host list, in any
 * order, tp_plan_build() computes:
 *
 *   ring     hosts in an order that crosses every level-1 group (leaf
 *            group / scalable unit) and every higher group (spine group)
 *            boundary as few times as a ring can: each group's hosts are
 *            contiguous, groups follow their spine groups. A ring over k
 *            groups of some level crosses their boundaries exactly k
 *            times (0 when k = 1), which is the minimum.
 *   ranks    node rank = position in the ring; global ranks are handed out
 *            host by host in ring order, local rank l of host h being
 *            global rank first_rank(h) + l; world size = all local ranks.
 *   groups   one per level-1 group the job touches, in ring order (a host
 *            outside every group is a group of its own), with its leader
 *            (the member with the lowest node rank) and, when the job's
 *            hosts have more than one rail, one rail leader per rail
 *            (a host/local rank on that rail, spread round-robin over
 *            the group's hosts). Rail leaders are informational: the
 *            hierarchical schedule (tp_sched.h) sends every rank's own
 *            shard across groups on its own rail, not through them; the
 *            JSON keeps them for compatibility and for per-rail
 *            exchanges that want one host per rail (compression).
 *   trees    NCCL-style double binary trees over node ranks, built level
 *            by level: inside each level-1 group a binary tree over its
 *            hosts, then a binary tree over the groups' roots inside each
 *            spine group, and so on up. So every tree edge stays inside
 *            the smallest group it can: for each level, exactly (units at
 *            that level - 1) edges cross its boundaries, the least any
 *            spanning tree needs. Tree 0 is NCCL's ncclGetBtree at every
 *            level, tree 1 NCCL's ncclGetDtree (mirrored for an even
 *            count, shifted by one for an odd count). When every level-1
 *            group has an even number (>= 2) of hosts, no host is
 *            interior in both trees; for a single group the trees are
 *            exactly NCCL's.
 *   HCAs     per host, its HCA device names in rail order ("rails": one
 *            subnet per rail when the fabric has several subnets, else
 *            the host's CAs in their fabric order; a host may have
 *            several on a subnet), and per local rank the GPU it drives
 *            and that GPU's nearest HCA.
 *   cost     with a cost context: the predicted time of ring,
 *            hierarchical and tree all-reduce (tp_cost_predict, healthy
 *            idle fabric) for a few message sizes, and the fastest one
 *            per size as the recommendation. Without one, the
 *            recommendation follows a fixed rule (see
 *            tp_plan_recommend_basis()).
 *
 * Cost: without predictions a 1,024-host plan builds in well under a
 * millisecond. Each prediction routes the whole job over the fabric;
 * three of them (one per algorithm, at the largest size: all-reduce time
 * is latency + bytes x a per-byte term, so smaller sizes are exact
 * rescalings) take tens of milliseconds on a 1,024-host, 8-rail job
 * (measured with the CLI on the 2-core test box, fabric load included:
 * a 16,384-host x 8 job on a 16,384-host fat tree 1.15 s against 0.55 s
 * without, 147 MB against 71 MB; its first 2,048 hosts 0.52 / 0.46 s,
 * 58 / 45 MB; its first 1,024 0.50 / 0.45 s, 52 / 45 MB).
 * A caller on a tighter budget sets opts.predict = false or passes no
 * cost context.
 *
 * Ownership: a tp_plan_t is self-contained (it copies every name it
 * needs) and does not refer to the fabric or cost context after
 * tp_plan_build() returns; free it with tp_plan_destroy(). Every pointer
 * an accessor returns is borrowed from the plan, read-only, and valid
 * until tp_plan_destroy(). Error strings (*err_p) belong to the caller,
 * who frees them with tp_free().
 *
 * Thread safety: building reads the fabric and cost context only, so
 * several plans may be built from one finalized fabric at once. A built
 * plan is immutable: any number of threads may read it.
 *
 * Slurm context: no restriction; the library does not print, exit, block
 * (except the file read of tp_plan_load_json) or touch the environment,
 * so the SPANK plugin may call it in the remote (slurmstepd) context.
 */
#ifndef TP_RUNTIME_H
#define TP_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"
#include "tp_placement.h"
#include "tp_sched.h"
#include "tp_topology.h"

#define TP_PLAN_FORMAT "topoplace-plan/1"
/* "No such rank / parent / group" in the uint32_t fields below. */
#define TP_PLAN_NONE UINT32_MAX
/* Most message sizes one plan predicts. */
#define TP_PLAN_MAX_SIZES 16
/* Most local ranks a plan gives one host (tp_plan_opts_t.ranks, a plan
 * file's hosts[].gpus): a step with more tasks on a node gets none
 * (tp_step_tasks_check). */
#define TP_PLAN_MAX_HOST_RANKS 4096
/* Algorithms a plan predicts and recommends among, in this order:
 * TP_ALGO_RING, TP_ALGO_HIERARCHICAL, TP_ALGO_TREE (enum values 0..2). */
#define TP_PLAN_NALGOS 3

typedef struct tp_plan tp_plan_t;

typedef struct tp_plan_opts {
	/* Local ranks per host. 0: each host's GPU count from the fabric
	 * (1 for a host without GPUs). Larger than a host's GPU count is an
	 * error unless the fabric knows no GPUs for that host. */
	int gpus_per_host;
	/* Local ranks of each host, in the order the hosts are given (a
	 * step's tasks per node), each 1..TP_PLAN_MAX_HOST_RANKS; NULL:
	 * gpus_per_host. A
	 * host may have more ranks than GPUs: those past its GPUs have
	 * gpu -1. Not copied. */
	const uint32_t *ranks;
	/* Predict with the cost context (when one is given). */
	bool predict;
	/* All-reduce sizes in bytes, each > 0, strictly ascending, at most
	 * TP_PLAN_MAX_SIZES; NULL: 64 KiB, 1 MiB, 16 MiB, 256 MiB, 1 GiB.
	 * Copied. */
	const double *sizes;
	size_t nsizes;
	/* Split each host's data over its ranks by their NICs' rates
	 * (tp_plan_rank_weights(); tp_fabric_rank_weights() says how), so
	 * a NIC at half width carries half the share instead of setting the
	 * host's pace; false: evenly. With predict and a cost context, the
	 * context's tp_cost_params_t.nics_by_rate must be the same (the
	 * predictions price what runs), else TP_ERR_INVAL. */
	bool nics_by_rate;
	/* The predictions' links: this state's health and other traffic
	 * (tp_state_set_link, a topoplace-state/1 file's "links"), made for
	 * the same fabric; NULL: every link healthy and idle. The prices
	 * only: the schedule, and so the plan's JSON without the model's
	 * part, is the same with any state. Not copied. */
	const tp_state_t *state;
} tp_plan_opts_t;

/* gpus_per_host 0, ranks NULL, predict true, default sizes. */
void tp_plan_opts_defaults(tp_plan_opts_t *o);

/* One local rank of a host. */
typedef struct tp_plan_rank {
	uint32_t rank;   /* global rank */
	int gpu;         /* GPU index on the host, -1 without GPU data */
	int rail;        /* rail of its HCA, -1 when the host has no HCA */
	const char *hca; /* that HCA's device ("mlx5_3"); NULL when unknown */
} tp_plan_rank_t;

/* One HCA of a host and its rail. */
typedef struct tp_plan_hca {
	const char *dev; /* device ("mlx5_1") */
	int rail;
} tp_plan_hca_t;

typedef struct tp_plan_host {
	const char *name;
	uint32_t node_rank;  /* position in the ring */
	uint32_t first_rank; /* global rank of local rank 0 */
	uint32_t nranks;     /* local ranks (GPUs used) */
	const tp_plan_rank_t *ranks; /* [local rank] */
	uint32_t group;      /* index of its plan group */
	/* [rail], tp_plan_nrails() entries: HCA device on that rail (the
	 * first with a name), NULL where the host lacks the rail or the
	 * device has no name. */
	const char *const *hcas;
	/* The host's other named HCAs on rails of hcas[] (a rail that is a
	 * subnet the host has several CAs on: a fabric with several
	 * subnets), nmore_hcas of them, by rail, then in the fabric's
	 * order; NULL when none. NCCL_IB_HCA lists them after their rail's
	 * hcas[] entry. */
	const tp_plan_hca_t *more_hcas;
	uint32_t nmore_hcas;
} tp_plan_host_t;

typedef struct tp_plan_rail_leader {
	int rail;
	uint32_t node_rank;  /* the host */
	uint32_t local_rank; /* the rank on it whose HCA is on this rail */
} tp_plan_rail_leader_t;

typedef struct tp_plan_group {
	uint32_t id;     /* fabric level-1 group, TP_ID_NONE: no group */
	uint32_t spine;  /* fabric level-2 group, TP_ID_NONE: none */
	uint32_t first;  /* node rank of its first host; members are
			  * first .. first + nhosts - 1 */
	uint32_t nhosts;
	uint32_t leader; /* node rank (== first) */
	/* one per rail some member has, ascending rail; none when the plan
	 * has a single rail. Informational (see the top comment): no
	 * schedule routes through them. */
	const tp_plan_rail_leader_t *rail_leaders;
	size_t nrail_leaders;
} tp_plan_group_t;

/* ---- life cycle ---------------------------------------------------------- */

/* Build the plan for hosts[0..n) (names, any order, each once) on the
 * finalized fabric f. ctx (may be NULL: no predictions) must have been
 * made for f. opts may be NULL (defaults).
 * Returns TP_ERR_INVAL for NULL/empty/duplicate input or bad options,
 * TP_ERR_NOTFOUND for a host the fabric lacks, TP_ERR_RANGE when
 * gpus_per_host exceeds a host's GPUs or ranks[] gives a host more than
 * TP_PLAN_MAX_HOST_RANKS, TP_ERR_NOMEM. On failure *err_p
 * (when err_p is not NULL) gets a one-line detail naming the host or
 * option. A prediction the cost model cannot make (TP_ERR_NOTFOUND: two
 * hosts without a common rail) is left out (NAN) and logged at
 * TP_LOG_WARN; it does not fail the plan. *plan_p is set only on
 * success. Deterministic: the same host set gives the same plan (and
 * JSON) whatever the order of hosts[]. */
tp_err_t tp_plan_build(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
		       const char *const *hosts, size_t n,
		       const tp_plan_opts_t *opts, tp_plan_t **plan_p,
		       char **err_p);

/* NULL is a no-op. */
void tp_plan_destroy(tp_plan_t *plan);

/* ---- accessors ----------------------------------------------------------- */

size_t tp_plan_nhosts(const tp_plan_t *plan);
/* Sum of all hosts' local ranks. */
size_t tp_plan_world_size(const tp_plan_t *plan);
/* Rails the job's hosts have (>= 1 when any host has an HCA, else 0). */
int tp_plan_nrails(const tp_plan_t *plan);
/* Host at a node rank (= ring position); NULL out of range. */
const tp_plan_host_t *tp_plan_host(const tp_plan_t *plan, size_t node_rank);
/* Node rank of a host by name, TP_PLAN_NONE when not in the plan. */
uint32_t tp_plan_rank_of(const tp_plan_t *plan, const char *host);

size_t tp_plan_ngroups(const tp_plan_t *plan);
const tp_plan_group_t *tp_plan_group(const tp_plan_t *plan, size_t i);

/* Trees 0 and 1 over node ranks. Root: TP_PLAN_NONE for a bad tree.
 * Parent: TP_PLAN_NONE for the root or bad arguments. Children: count,
 * ascending node ranks in *children_p (borrowed); 0 for bad arguments. */
uint32_t tp_plan_tree_root(const tp_plan_t *plan, int tree);
uint32_t tp_plan_tree_parent(const tp_plan_t *plan, int tree,
			     size_t node_rank);
size_t tp_plan_tree_children(const tp_plan_t *plan, int tree,
			     size_t node_rank, const uint32_t **children_p);

size_t tp_plan_nsizes(const tp_plan_t *plan);
/* Message size i in bytes; 0 out of range. */
double tp_plan_size(const tp_plan_t *plan, size_t i);
/* Whether the plan carries model predictions. */
bool tp_plan_predicted(const tp_plan_t *plan);
/* Predicted seconds of algo (one of the TP_PLAN_NALGOS) at size i; NAN
 * when not predicted or out of range. */
double tp_plan_predict_s(const tp_plan_t *plan, size_t i, tp_algo_t algo);
/* Recommended algorithm at size i (TP_ALGO_RING when out of range). */
tp_algo_t tp_plan_recommend(const tp_plan_t *plan, size_t i);
/* How the hierarchical all-reduce runs at size i: 1 pipelined in
 * segments (TP_SCHED_HIER_SEGMENT, or the TOPOPLACE_COLL_SEGMENT the
 * plan was priced with), 0 in one piece, whichever the model found
 * faster (its prediction at i is that one's); -1 without a prediction
 * there (or out of range): the collective library's own rule, pipelined
 * above one segment. libtopoplace-coll runs the plan's choice. */
int tp_plan_hier_pipelined(const tp_plan_t *plan, size_t i);
/* "model": the fastest predicted algorithm (ties: ring, hierarchical,
 * tree in that order), priced as libtopoplace-coll runs them when the
 * context says so (tp_cost_params_t.coll_rings: the plan command and the
 * SPANK plugin do). "rule" (no predictions): tree up to 1 MiB when the
 * job has more than two hosts (latency-bound, log-depth), else
 * hierarchical where some host's ranks leave by several NICs (the
 * library's ring crosses a host boundary on one), else ring (the
 * plan's ring crosses each group boundary the fewest times). Static
 * string. */
const char *tp_plan_recommend_basis(const tp_plan_t *plan, size_t i);
/* Whether the predictions priced the hierarchical schedule's host phases
 * through each host's shared-memory segment (one wait a phase: the
 * collective library's default) rather than as rings (the cost context
 * had host_ring set, as `TOPOPLACE_COLL_SHM=0 topoplace plan` does).
 * True for a plan without predictions, for a plan file that does not
 * say and for NULL. The library compares it with what it set up and
 * warns when they differ. */
bool tp_plan_host_segment(const tp_plan_t *plan);
/* Weights of the local ranks (every host alike; *n_p entries): the
 * hierarchical all-reduce leaves local rank l the share weight[l] / (their
 * sum) of a host's data (tp_plan_opts_t.nics_by_rate). NULL (*n_p 0):
 * an even split. */
const uint32_t *tp_plan_rank_weights(const tp_plan_t *plan, uint32_t *n_p);

/* The plan's schedule for algo (see tp_sched.h): the edges the cost model
 * priced for this plan and a collective library runs, rebuilt from what
 * the plan records (groups, spine groups, local ranks and their rails),
 * so a plan loaded from JSON gives the same schedule as the one built.
 * TP_SCHED_TREE: the trees must be the plan's (they are for fabrics of up
 * to two group levels); TP_ERR_UNSUPPORTED otherwise - use the
 * tp_plan_tree_* accessors then. TP_ERR_INVAL for bad arguments,
 * TP_ERR_RANGE for more than TP_SCHED_MAX_RAILS rails, TP_ERR_NOMEM.
 * Caller frees *sched_p with tp_sched_destroy(); it does not refer to
 * the plan. */
tp_err_t tp_plan_sched(const tp_plan_t *plan, tp_sched_algo_t algo,
		       tp_sched_t **sched_p);

/* ---- JSON (topoplace-plan/1) --------------------------------------------- */

/*
 * {"format": "topoplace-plan/1", "world_size": W, "nodes": N, "rails": R,
 *  "ring": [host, ...],                          node rank order
 *  "hosts": [{"name", "rank" (node rank), "first_rank", "group",
 *             "gpus" (local ranks),
 *             "local_ranks": [{"local_rank", "rank", "gpu", "hca", "rail"}],
 *             "hcas": [device or null, ...],        rail order
 *             "more_hcas": [{"hca", "rail"}]}],  only when the host has
 *                            several named HCAs on a rail (more_hcas)
 *  "groups": [{"id", "spine" (fabric group ids or null), "hosts": [...],
 *              "leader": host,
 *              "rail_leaders": [{"rail", "host", "local_rank", "gpu",
 *                                "hca"}]}],       only when R > 1
 *  "trees": [{"root": host,
 *             "ranks": [{"rank", "host", "parent" (-1: root),
 *                        "children": [node ranks]}]}, x2],
 *  "sizes": [bytes, ...],
 *  "predicted": {"ring": [s, ...], "hierarchical": [...], "tree": [...]}
 *               or null; a prediction the model could not make is null,
 *  "hier_pipelined": [bool, ...]  per size whether the hierarchical
 *                            prediction is the pipelined schedule's
 *                            (tp_plan_hier_pipelined()), null where
 *                            there is none (the library's rule); absent
 *                            when every size is null,
 *  "host_segment": false     only when the predictions priced the host
 *                            phases as rings (tp_plan_host_segment()),
 *  "rank_weights": [w, ...]  only when the ranks are weighted
 *                            (tp_plan_rank_weights()),
 *  "recommend": [{"bytes", "algo", "basis"}]}
 * Arrays are in node rank / ring / size order; numbers print as the
 * shortest text that reads back exactly, so to_json(load(to_json(p))) is
 * byte-identical to to_json(p).
 */

/* Caller frees *json_p with tp_free(). */
tp_err_t tp_plan_to_json(const tp_plan_t *plan, char **json_p);
/* The same without what the cost model added ("predicted",
 * "hier_pipelined", "host_segment", "recommend"): the schedule every rank of a
 * communicator must share (libtopoplace-coll hashes it at rendezvous;
 * the recommendations each rank takes from rank 0 there, so a node whose
 * fabric file priced otherwise, or that planned by rule, still joins).
 * Caller frees *json_p with tp_free(). */
tp_err_t tp_plan_to_json_schedule(const tp_plan_t *plan, char **json_p);
/* Strict: unknown keys, missing keys, wrong types and any inconsistency
 * (ranks, groups not contiguous in the ring, a tree that is not a tree
 * over all node ranks, children that disagree with parents) are
 * TP_ERR_PARSE (TP_ERR_FORMAT for another format string) with a one-line
 * *err_p naming the file and the element ("plan.json:
 * trees[1].ranks[7].parent: cycle"). *plan_p set only on success. */
tp_err_t tp_plan_load_json(const char *path, tp_plan_t **plan_p,
			   char **err_p);
tp_err_t tp_plan_parse_json(const char *name, const char *buf, size_t len,
			    tp_plan_t **plan_p, char **err_p);

/* ---- a Slurm step's ranks and environment -------------------------------- */

/*
 * What the SPANK plugin hands every task of a step, computed without
 * Slurm so that it is tested here and the collective library's bootstrap
 * can share it. The plugin only reads Slurm's items and sets the pairs.
 *
 *   TOPOPLACE_PLAN        the plan file (in->plan_path)
 *   TOPOPLACE_NODE_RANK   this host's position in the plan's ring
 *   TOPOPLACE_WORLD_SIZE  the step's task count
 *   NCCL_IB_HCA           "=dev,dev,...": this host's HCAs in rail order,
 *                         all of a rail's (hcas[], more_hcas) in turn
 *                         (exact names: "mlx5_1" alone would also match
 *                         mlx5_10..mlx5_17); unset when it has none
 *   NCCL_CROSS_NIC        "0" on a rail-optimized fabric (fabric rails >
 *                         1: a ring or tree must stay on its rail) or one
 *                         of several subnets; "1" when the plan has
 *                         several rails on one fat tree; unset with one
 *                         rail. On several subnets NCCL_IB_HCA leaves out
 *                         a host's HCAs on subnets no other host of the
 *                         step is on (a gateway's other network)
 *   NCCL_TOPO_FILE        in->topo_file, when given
 * With in->hca_map, the HCA names are the node's own, and nothing of the
 * two is set when none of the plan's HCAs is on the node (see
 * tp_step_in_t). And per task (tp_step_task_rank): TOPOPLACE_RANK = rank_base +
 * the task's local id, TOPOPLACE_LOCAL_RANK = the local id. Global ranks follow
 * the plan's ring host by host with the step's real layout (the tasks of the
 * hosts before this one in the ring).
 */

/* Most pairs tp_plan_step_env() returns. */
#define TP_STEP_ENV_MAX 7

/* ---- this node's HCAs ---------------------------------------------------- */

/* The fabric's CAs of one host matched by node GUID to the kernel's
 * device names on the node (<sysfs_root>/class/infiniband/<dev>/node_guid).
 * The fabric's names come from node descriptions ("HCA-1" on a real
 * SuperPOD) and may not be the kernel's (mlx5_0): NCCL_IB_HCA must only
 * name devices that exist. Opaque; the caller frees it with
 * tp_hca_map_destroy(). Not thread-safe per object; any context (reads a
 * few sysfs files, bounded). */
typedef struct tp_hca_map tp_hca_map_t;

/* Read sysfs_root ("/sys", or a fake tree in tests) for host's CAs in f.
 * A missing class/infiniband is not an error (nothing maps). Returns
 * TP_ERR_NOTFOUND when host is not in f, TP_ERR_INVAL, TP_ERR_NOMEM;
 * *map_p set only on success. */
tp_err_t tp_hca_map_read(const tp_fabric_t *f, const char *host,
			 const char *sysfs_root, tp_hca_map_t **map_p);
/* NULL is a no-op. */
void tp_hca_map_destroy(tp_hca_map_t *map);
/* The local device of the CA the fabric names fabric_dev; NULL when no
 * local device has its GUID (borrowed, valid as long as map). */
const char *tp_hca_map_local(const tp_hca_map_t *map, const char *fabric_dev);
/* The local device of the first of the host's CAs on this rail that the
 * fabric gives no device name (a CA named by guid_map alone, its node
 * description the default one), found by GUID; NULL when none is found.
 * *has_p (if given): whether the host has such a CA on the rail. */
const char *tp_hca_map_local_rail(const tp_hca_map_t *map, int rail,
				  bool *has_p);
/* How many of the host's CAs were found on the node. */
size_t tp_hca_map_count(const tp_hca_map_t *map);
/* Whether every <net name="..."> of an NCCL topology file's text names a
 * device found on the node (a file without <net> passes). The name
 * attribute is matched whole, as NCCL reads it (not inside ifname="..."
 * or another attribute's value); a <net> tag without one, or whose
 * attributes are not key="value", fails. */
bool tp_hca_map_topo_ok(const tp_hca_map_t *map, const char *xml);
/* xml's root element is <system> (an NCCL topology file): past
 * white space, a byte-order mark, the XML declaration, processing
 * instructions, comments and a DOCTYPE, the first element is "system"
 * (an hwloc XML's is <topology>). */
bool tp_hca_map_topo_root_ok(const char *xml);

/* The largest LinkState file a step's start reads to price its plan (the
 * SPANK plugin; tp_state_load_json_capped): parsing takes several times
 * the file's size, and the start must stay within 64 MB on a 16,384-host
 * fabric (runtime/test_step_mem_16k measures it with a file this size).
 * `topoplace monitor` lists degraded links only: a few percent of a
 * fabric's links fit. */
#define TP_STEP_LINKSTATE_MAX ((size_t)1 << 20)

typedef struct tp_step_in {
	/* the step's hosts in Slurm's order (SLURM_STEP_NODELIST expanded)
	 * and their task counts (SLURM_STEP_TASKS_PER_NODE) */
	const char *const *hosts;
	const uint32_t *tasks;
	size_t n;
	size_t node_id;	       /* this host: hosts[node_id] (S_JOB_NODEID) */
	uint64_t ntasks;       /* the step's tasks (S_JOB_TOTAL_TASK_COUNT) */
	int fabric_rails;      /* tp_fabric_rails() of the plan's fabric */
	const char *plan_path; /* where the plan file is (not checked) */
	const char *topo_file; /* NCCL topology file for this host, or NULL */
	/* The node's devices (tp_hca_map_read): NCCL_IB_HCA then lists the
	 * local names of the plan's HCAs that exist on the node; when none
	 * does, NCCL_IB_HCA and NCCL_TOPO_FILE are not set and
	 * hcas_unmapped is true. NULL: the plan's names as they are. */
	const tp_hca_map_t *hca_map;
	/* tp_fabric_nsubnets() of the plan's fabric: with several, the
	 * plan's rails are subnets, which no NIC crosses (0: as 1) */
	int fabric_subnets;
} tp_step_in_t;

typedef struct tp_step_var {
	const char *name; /* static */
	char *value;
} tp_step_var_t;

typedef struct tp_step_env {
	uint32_t node_rank; /* this host's position in the ring */
	uint32_t rank_base; /* TOPOPLACE_RANK of its local task 0 */
	uint64_t world;	    /* the step's tasks */
	bool hcas_unmapped; /* none of the plan's HCAs is on the node */
	/* of this host's HCAs the plan names, how many are not on the node
	 * (found by GUID): left out of NCCL_IB_HCA (a card replaced since
	 * the fabric was discovered) */
	uint32_t hcas_missing;
	size_t nvars;	    /* the pairs to set, in this order */
	tp_step_var_t vars[TP_STEP_ENV_MAX];
} tp_step_env_t;

/* "4(x2),2,1" (SLURM_STEP_TASKS_PER_NODE) into counts[0..n), written
 * only on success. TP_ERR_PARSE when malformed (signs, white space, an
 * empty or trailing ",") or not exactly n hosts, TP_ERR_INVAL for NULL
 * arguments. */
tp_err_t tp_step_tasks_parse(const char *text, uint32_t *counts, size_t n);

/* Whether a plan can be built for a step of tasks[0..n) on hosts[0..n):
 * TP_ERR_RANGE when a host runs more than TP_PLAN_MAX_HOST_RANKS tasks
 * (srun --overcommit allows that): expected, not a fault - the step runs
 * without a plan, and the SPANK plugin says so at info level; *err_p
 * (caller frees with tp_free) gets one line naming the host and the
 * limit. TP_ERR_INVAL for NULL arguments. Cheap and pure: the plugin
 * asks before it loads the fabric. */
tp_err_t tp_step_tasks_check(const char *const *hosts, const uint32_t *tasks,
			     size_t n, char **err_p);

/* The step's plan: each host as many ranks as it runs tasks
 * (tp_plan_opts_t.ranks: the plan's ranks are the step's, whatever the
 * layout; tasks past a host's GPUs have none); without tasks one rank
 * per GPU. With a cost context (its nics_by_rate must be nics_by_rate)
 * the plan carries the model's predictions for the step's ranks and
 * recommends the fastest all-reduce per size (what libtopoplace-coll's
 * auto runs); without one (NULL), the rule. nics_by_rate and state
 * (NULL: healthy, idle links) as tp_plan_opts_t's. Errors and *err_p as
 * tp_plan_build(). */
tp_err_t tp_plan_build_step(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
			    const tp_state_t *state, const char *const *hosts,
			    size_t n, const uint32_t *tasks, bool nics_by_rate,
			    tp_plan_t **plan_p, char **err_p);

/* Ranks and pairs for in->hosts[in->node_id]. TP_ERR_INVAL for bad
 * arguments (a NULL host name among them); TP_ERR_NOTFOUND when this
 * host is not in the plan (checked first), a plan host is not in the
 * step, or a step host is not in the plan; TP_ERR_RANGE when the task
 * counts do not add up to in->ntasks, or to more than UINT32_MAX ranks;
 * TP_ERR_NOMEM. *err_p (caller frees with tp_free) gets one line naming
 * the host or counts. *env_p is filled only on success; the caller frees
 * it with tp_step_env_free(). Pure: reads the plan and in only. */
tp_err_t tp_plan_step_env(const tp_plan_t *plan, const tp_step_in_t *in,
			  tp_step_env_t *env_p, char **err_p);
/* Frees the values and empties env; NULL is a no-op. */
void tp_step_env_free(tp_step_env_t *env);
/* Value of a pair by name, NULL when not set (borrowed). */
const char *tp_step_env_get(const tp_step_env_t *env, const char *name);
/* TOPOPLACE_RANK of local task `local`. */
uint32_t tp_step_task_rank(const tp_step_env_t *env, uint32_t local);

/* An HCA device name the step's variables can carry (NCCL_IB_HCA,
 * TOPOPLACE_COLL_HCA_NAMES, TOPOPLACE_COLL_HCA): printable, no white
 * space and none of NCCL_IB_HCA's separators (',', '=', '^', ':') nor
 * '/', not starting with '.', shorter than a sysfs name's limit (64).
 * false for NULL. */
bool tp_hca_name_ok(const char *s);

/* ---- a task's GPU ---------------------------------------------------------
 * The plan gives local rank l GPU l and that GPU's nearest HCA; a step
 * given other GPUs of a node (a node shared with another job,
 * --gpus-per-task) runs task l on the step's l-th GPU. Built where the
 * step starts, from the fabric and the plan for one host; asked per task
 * with what Slurm's SLURM_STEP_GPUS says there. */
typedef struct tp_step_gpus tp_step_gpus_t;
/* Largest GPU index (exclusive) read from SLURM_STEP_GPUS or a host. */
#define TP_STEP_GPUS_MAX 1024
/* host's GPUs' nearest HCAs (the fabric's names, as the plan's) and the
 * plan's HCA for each of its local ranks. TP_ERR_NOTFOUND when host is
 * in the fabric or the plan not, TP_ERR_INVAL, TP_ERR_NOMEM; *g_p set
 * only on success. */
tp_err_t tp_step_gpus_create(const tp_fabric_t *f, const tp_plan_t *plan,
			     const char *host, tp_step_gpus_t **g_p);
/* NULL is a no-op. */
void tp_step_gpus_destroy(tp_step_gpus_t *g);
/* The HCA (the fabric's name) local task `local` drives when it is not
 * the plan's for that local rank, else NULL. task_gpus: SLURM_STEP_GPUS
 * as the task sees it, this host's GPU indices comma-separated ("4,5");
 * step_gpus: as the step had it before Slurm bound GPUs per task (NULL:
 * unknown). The task's GPU is its list's first where that differs from
 * the step's (bound per task) or holds one GPU, else the local-th of
 * the step's. NULL too for no list, a malformed one, a GPU the host
 * does not have or whose nearest HCA the plan does not name for the
 * host (or no variable can carry), and a task past the list. Borrowed
 * from g. */
const char *tp_step_gpus_hca(const tp_step_gpus_t *g, uint32_t local,
			     const char *step_gpus, const char *task_gpus);

#endif /* TP_RUNTIME_H */
