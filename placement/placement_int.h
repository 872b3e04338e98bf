/*
 * placement_int.h - private to placement/: the policy interface and the
 * state layout. Never include it from elsewhere.
 */
#ifndef TP_PLACEMENT_INT_H
#define TP_PLACEMENT_INT_H

#include "tp_placement.h"

/* One job's share of one host. */
typedef struct tp__share {
	uint64_t job;
	uint32_t host;
	int gpus;
} tp__share_t;

struct tp_state {
	const tp_fabric_t *f;
	int *free;	/* free GPUs per host */
	int *njobs;	/* jobs per host */
	bool *up;	/* host usable */
	double *health; /* per link, 1 = healthy */
	/* other jobs' Gb/s per link direction: bg[2 * link + d], d = 0 for
	 * node[0] -> node[1] (the cost model's directed resources) */
	double *bg;
	tp__share_t *share;
	size_t nshare, capshare;
	size_t busy; /* GPUs allocated */
	/* Each host's own cables (links with one of its CAs at an end, once
	 * per such end, ascending): hlink[hlink_off[h] .. hlink_off[h + 1]).
	 * Kept current by every health write (tp__state_cables_*), so a
	 * decision reads them instead of passing over every link: hlive how
	 * many carry anything (gbps x health > 0 on an active link), hcap
	 * the Gb/s a ring gets through the host (hlive x the slowest of
	 * them), cap_top the largest hcap and ntop the hosts at it. */
	uint32_t *hlink_off, *hlink;
	/* nics_by_rate (tp_state_set_nics_by_rate): hcap is the sum of the
	 * live cables' Gb/s, as NCCL's channels share them */
	bool nics_by_rate;
	double *hcap;
	uint32_t *hlive;
	double cap_top;
	size_t ntop;
	/* The up-links: active links from a switch of a level-1 or higher
	 * group to a switch above it (one level up, or on its level nearer
	 * the top: tp_fabric_switch_above), ascending, and that group
	 * (uplink[i], uplink_grp[i]); a cable between sibling groups under
	 * a parent without switches is listed for both. Fixed by the
	 * fabric, listed once so a decision reads nuplink links instead of
	 * every host cable. */
	uint32_t *uplink, *uplink_grp;
	size_t nuplink;
};

/* Recompute the cable table of the hosts at the ends of link l (after
 * its health changed), or of every host (after many links changed). */
void tp__state_cables_link(tp_state_t *s, uint32_t l);
void tp__state_cables_all(tp_state_t *s);

/* State s priced by ctx: its ring rates as ctx's parameters price them
 * (nics_by_rate); a no-op without either. */
static inline void tp__state_match_cost(tp_state_t *s, const tp_cost_ctx_t *ctx)
{
	if (s && ctx)
		tp_state_set_nics_by_rate(
		    s, tp_cost_ctx_params(ctx)->nics_by_rate);
}

/* No cable of host h carries anything on s (all down, or none at all: no
 * NIC, or NICs without links): cut off the fabric. */
static inline bool tp__state_cut_off(const tp_state_t *s, uint32_t h)
{
	return !s->hlive[h];
}

/* Host h is cut off even on the empty fabric (every link healthy): no
 * cable of it is active at a rate above 0. s only lends its cable table;
 * its health is not read. */
static inline bool tp__state_uncabled(const tp_state_t *s, uint32_t h)
{
	for (uint32_t i = s->hlink_off[h]; i < s->hlink_off[h + 1]; i++) {
		const tp_link_t *k = tp_fabric_link(s->f, s->hlink[i]);
		if (k->active && k->gbps > 0)
			return false;
	}
	return true;
}

/* Host h's cables carry less than the best-cabled host's (a NIC missing
 * or at half width, or a link the state marks unhealthy): a ring through
 * it runs at its pace. */
static inline bool tp__state_weak(const tp_state_t *s, uint32_t h)
{
	return s->hcap[h] < 0.99 * s->cap_top;
}

/* How weak host h is: 0 not weak, else 1 + 16 x the share of the best
 * host's ring rate it lacks (a missing cable of 8: 3, one at half
 * rate: 9), so the less weak go first where weak hosts cannot be
 * avoided. */
static inline int tp__state_weakness(const tp_state_t *s, uint32_t h)
{
	if (!tp__state_weak(s, h))
		return 0;
	return 1 + (int)(16 * (1 - s->hcap[h] / s->cap_top));
}

/* The scopes of a best-cabled set (cabled_sets in policy.c, the
 * simulator's slowdown sources): level-1 group g, or the whole fabric for
 * g == tp_fabric_ngroups(f). False for a group of another level; else
 * *n_p hosts, *hosts_p their indices (NULL for the fabric: host i is i). */
static inline bool tp__cabled_scope(const tp_fabric_t *f, size_t g,
				    const uint32_t **hosts_p, size_t *n_p)
{
	const tp_group_t *gp;

	if (g >= tp_fabric_ngroups(f)) {
		*hosts_p = NULL;
		*n_p = tp_fabric_nhosts(f);
		return true;
	}
	gp = tp_fabric_group(f, (uint32_t)g);
	*hosts_p = gp->hosts;
	*n_p = gp->nhosts;
	return gp->level == 1;
}

/* hosts[0..n) reordered so that the need best cabled come first (ring
 * rate through the host on s, tp_state_host_cables; the earlier in
 * hosts among equals). Only running out of memory fails. */
tp_err_t tp__cabled_first(const tp_state_t *s, uint32_t *hosts, size_t n,
			  size_t need);

/* hosts/gpus[0..n) put in ring order and priced, the faster algorithm, on
 * s (NULL: the idle fabric) into *seconds_p; tp_cost_predict_best's
 * error when they cannot be. */
tp_err_t tp__price_ring(const tp_cost_ctx_t *ctx, const tp_state_t *s,
			uint32_t *hosts, int *gpus, size_t n, double bytes,
			double *seconds_p);

/* What a policy gets: the request already normalised. */
typedef struct tp__policy_in {
	const tp_fabric_t *f;
	const tp_state_t *s;
	const tp_request_t *r;
	const tp_policy_params_t *params;
	const tp_cost_ctx_t *cost; /* may be NULL */
	uint64_t seed;
	/* normalised request: either nhosts hosts with gpus_per_host each
	 * (gpus_per_host == 0: whole idle hosts), or total_gpus spread over
	 * as few hosts as the policy likes (nhosts == 0). */
	size_t nhosts;
	int gpus_per_host;
	int total_gpus;
	bool exclusive;
	/* tp__host_offer's answers per host for s and this request, when
	 * the driver has them (NULL: computed on each call) */
	const int *offer;
	/* the caller's cost workspace (tp_place_choose_ws), NULL: the
	 * policy makes its own */
	struct tp__cost_ws *ws;
	/* NULL, or where a policy that prices candidate sets leaves the
	 * cheapest it priced (the reference's search: ideal_seconds) */
	struct tp__priced *priced;
} tp__policy_in_t;

/* The cheapest set a policy priced in a decision: n hosts and their
 * GPUs (room for the choice's max), t its predicted seconds; t < 0:
 * none priced. */
typedef struct tp__priced {
	uint32_t *hosts;
	int *gpus;
	size_t n;
	double t;
} tp__priced_t;

/* A policy writes at most max hosts into hosts[]/gpus[] (any order: the
 * caller puts them in ring order) and *n_p; it may write a short reason
 * (why these hosts) into why[0..whylen). Returns TP_ERR_NOTFOUND when it
 * finds no fit. It must not modify the state. */
struct tp_policy {
	const char *name;
	const char *doc;
	tp_err_t (*choose)(const tp__policy_in_t *in, uint32_t *hosts,
			   int *gpus, size_t max, size_t *n_p, char *why,
			   size_t whylen);
};

/* Can host h serve the request on its own terms? Returns the GPUs it
 * would give (0 = not usable). */
int tp__host_offer(const tp__policy_in_t *in, uint32_t h);

/* tp_span_min on the free state s (span) and, span0 non-NULL, on the
 * empty fabric, in one pass over the hosts. offers: NULL, or the hosts'
 * offers on s then on the empty fabric (2 x hosts), already known. */
void tp__span_min2(const tp_fabric_t *f, const tp_state_t *s,
		   const tp_request_t *r, const int *offers,
		   size_t span[TP_SPAN_NLEVELS], size_t span0[TP_SPAN_NLEVELS]);

/* All-reduce bytes priced when the request gives none (1 GiB). */
#define TP__DEFAULT_BYTES (1024.0 * 1024.0 * 1024.0)

/* Buffers for many predictions in a row (a decision prices up to a
 * hundred sets): tp__place_predict_ws takes its scratch from ws and
 * leaves it there, grown, for the next call, with the last schedule
 * built and the routes met; the same answers as tp_cost_predict_best. The
 * routes hold for one context and state: a call with another context or
 * state pointer empties them, but a state changed in place between two
 * calls is not seen (a decision, which never changes it, owns one
 * workspace). One caller at a time. create: NULL on NOMEM. */
typedef struct tp__cost_ws tp__cost_ws_t;
tp__cost_ws_t *tp__cost_ws_create(void);
void tp__cost_ws_destroy(tp__cost_ws_t *w);
/* Forget the routes met: a new decision, on a state that may have
 * changed since (the buffers stay).
 * Tried (2026-12-04, reverted): routes and whole predictions kept over
 * decisions while the context and the state's links stayed the same (a
 * links version bumped at every write of health or background). No gain
 * where it was meant to help: in bench_slurm24_decision.sh the 5-7-host
 * decisions took 0.051/0.063/0.075 ms against 0.049/0.062/0.065 before
 * (each running job's traffic changes the links at its start and end),
 * and `topoplace simulate` with one workspace kept took the same time
 * (4.7 s of CPU either way, the same output). */
void tp__cost_ws_forget(tp__cost_ws_t *w);
tp_err_t tp__place_predict_ws(const tp_cost_ctx_t *ctx, const tp_state_t *s,
			      tp__cost_ws_t *ws, const uint32_t *hosts,
			      const int *gpus, size_t n, double bytes,
			      tp_algo_t *algo_p, tp_cost_t *c_p);

/* The hosts policy picks for r on s, as tp_place_run gives them (the
 * same checks, ring order), without timing the choice, spans, prediction
 * or explanation: for callers that want where a job would go (the
 * simulator's plan for a blocked head). ws may be NULL. */
tp_err_t tp__place_hosts(const tp_policy_t *policy, const tp_state_t *s,
			 const tp_request_t *r,
			 const tp_policy_params_t *params, uint64_t seed,
			 tp_place_ws_t *ws, tp_placement_t *out);

/* tp_ideal_cache_t's entries: one per request shape. Callers that embed a
 * cache (the simulator) zero-initialise it and free its entries with
 * tp__ideal_cache_free. */
typedef struct tp__ideal {
	size_t nhosts;
	int gpus_per_host, total_gpus;
	bool exclusive;
	double bytes, seconds;
} tp__ideal_t;

struct tp_ideal_cache {
	tp__ideal_t *e;
	size_t n, cap;
};

void tp__ideal_cache_free(tp_ideal_cache_t *c);

extern const tp_policy_t tp__policy_topoplace;
extern const tp_policy_t tp__policy_slurm_tree;
extern const tp_policy_t tp__policy_slurm_tree_22;
extern const tp_policy_t tp__policy_slurm_block;
extern const tp_policy_t tp__policy_slurm_linear;
extern const tp_policy_t tp__policy_first_fit;
extern const tp_policy_t tp__policy_random;

/* tp_cost_predict that also leaves the bytes each directed link carries
 * over the whole collective in load[] (2 x links doubles, zero on entry),
 * those links listed in touched[0..*ntouched_p) (room for 2 x links),
 * also on error, when load may hold a part. tp__cost_load_take then adds them
 * to link_gbps as tp_cost_link_load does (seconds: the prediction's) and zeroes
 * load again: one routing for both the time and the load. */
tp_err_t tp__cost_predict_load(const tp_cost_ctx_t *ctx,
			       const tp_state_t *state, const uint32_t *hosts,
			       const int *gpus, size_t n, double bytes,
			       tp_algo_t algo, double *load, uint32_t *touched,
			       size_t *ntouched_p, tp_cost_t *out);
void tp__cost_load_take(double *load, const uint32_t *touched, size_t ntouched,
			double seconds, double duty, double *link_gbps);

/* Whether routes from switch s may go down to leaf switch `leaf` (the
 * reach sets routing tests; s == leaf reaches it). Exposed for its unit
 * test, which holds the sets to a search over the cables. */
bool tp__cost_reaches(const tp_cost_ctx_t *c, uint32_t s, uint32_t leaf);

/* Max-min fair rates for flows over shared resources (progressive
 * filling). Flow i crosses res[off[i]..off[i+1]); cap[r] is resource r's
 * capacity. Writes rate[i] and the resource that limited it (bott[i]).
 * Exposed for its unit test. */
tp_err_t tp__cost_maxmin(size_t nflows, const uint32_t *off,
			 const uint32_t *res, size_t nres, const double *cap,
			 double *rate, uint32_t *bott);

/* Small deterministic PRNG (splitmix64) for seeded policies. */
static inline uint64_t tp__rand_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The simulator keeps its plan for a blocked head job until a job
 * starts or ends (sim.c's plan_head); true makes it plan afresh at every
 * backfill pass, as it did before, for the unit tests to compare. */
extern bool tp__sim_replan;

/* The longest run a trace job may have (the CSV's run_s, and what trace
 * reads from Slurm's records, which it writes as that CSV). */
#define TP__TRACE_RUN_MAX 1e9

/* The job-row limit of tp_trace_load_csv, TP_TRACE_MAX_JOBS; lowered
 * only by the unit tests, which cannot afford 10 million rows. */
extern size_t tp__trace_max_jobs;

/* Shared by the trace parsers (trace.c, trace_slurm.c): the next
 * non-blank line of *pos, trimmed (NULL at the end); room for job n
 * (zeroed; TP_ERR_RANGE past the limit, *msg naming path:lineno); the
 * jobs sorted into *t (which takes them; TP_ERR_PARSE when none). */
char *tp__trace_line(char **pos, int *lineno);
/* Splits line at sep into trimmed cell[0..max); returns the field count
 * (more than max: the rest not stored). */
int tp__trace_split(char *line, char sep, char **cell, int max);
tp_err_t tp__trace_grow(const char *path, int lineno, tp_job_spec_t **jobs,
			size_t *cap, size_t n, char **msg);
tp_err_t tp__trace_finish(const char *path, const char *format,
			  tp_job_spec_t **jobs, size_t n, tp_trace_t *t,
			  char **msg);
/* A time and an index, ordered by time, then index: a stable order
 * for qsort (which is not stable) of jobs by submit time or of events. */
typedef struct tp__dix {
	double t;
	size_t i;
} tp__dix_t;
int tp__dix_cmp(const void *a, const void *b);

/* The request a trace job makes: its hosts and GPUs, exclusive on
 * several hosts, its all-reduce size (sim.c). */
void tp__job_request(const tp_job_spec_t *j, tp_request_t *r);
/* What buf (a whole file) holds, by its first line: "jobcomp", "sacct"
 * (Slurm's records) or "csv" (static); and the parser of Slurm's records
 * (trace_slurm.c; tp_trace_load's rules). */
const char *tp__trace_kind(const char *buf);
tp_err_t tp__trace_parse_slurm(const char *path, char *buf, bool jobcomp,
			       int assume_gpus, tp_trace_t *t, char **msg);

#endif
