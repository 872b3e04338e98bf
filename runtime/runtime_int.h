/* Private to runtime/: the plan's storage, shared by the builder and the
 * JSON reader/writer. */
#ifndef TP_RUNTIME_INT_H
#define TP_RUNTIME_INT_H

#include "tp_runtime.h"

typedef struct tp__arena_blk tp__arena_blk_t;

struct tp_plan {
	/* Everything below (arrays and strings) lives in the arena, so a
	 * plan is freed in a few calls and built without per-host mallocs. */
	tp__arena_blk_t *arena;
	size_t nhosts;
	size_t world;
	int nrails;
	tp_plan_host_t *hosts; /* [node rank] */
	tp_strmap_t byname;    /* keys borrowed from hosts[].name */
	size_t ngroups;
	tp_plan_group_t *groups;
	uint32_t root[2];
	uint32_t *parent[2]; /* [node rank] */
	uint32_t *coff[2];   /* children of r: child[coff[r] .. coff[r+1]) */
	uint32_t *child[2];
	size_t nsizes;
	double sizes[TP_PLAN_MAX_SIZES];
	bool predicted;
	/* the predictions priced the hierarchical host phases through
	 * each host's shared segment (not as rings) */
	bool host_segment;
	/* [local rank] the ranks' weights (tp_plan_rank_weights), or NULL */
	uint32_t *weight;
	uint32_t nweight;
	double pred[TP_PLAN_NALGOS][TP_PLAN_MAX_SIZES];
	tp_algo_t rec[TP_PLAN_MAX_SIZES];
	bool rec_model[TP_PLAN_MAX_SIZES];
	/* hierarchical at size i (tp_plan_hier_pipelined): 0 not priced
	 * (the library's rule), 1 one piece, 2 pipelined */
	int8_t hier_pipe[TP_PLAN_MAX_SIZES];
};

/* How many HCA names tp__plan_host_hca() walks for host ph. */
static inline size_t tp__plan_host_nhca(const tp_plan_host_t *ph, int nrails)
{
	return ph->nranks + (size_t)(nrails > 0 ? nrails : 0) + ph->nmore_hcas;
}

/* The i-th of the HCA names host ph has in the plan (the fabric's):
 * its ranks' (i < nranks), then its HCAs in rail order (nrails of them,
 * NULL where none), then its more_hcas; NULL past them. */
static inline const char *tp__plan_host_hca(const tp_plan_host_t *ph,
					    int nrails, size_t i)
{
	size_t nr = (size_t)(nrails > 0 ? nrails : 0);

	if (i < ph->nranks)
		return ph->ranks[i].hca;
	i -= ph->nranks;
	if (i < nr)
		return ph->hcas[i];
	i -= nr;
	return i < ph->nmore_hcas ? ph->more_hcas[i].dev : NULL;
}

tp_plan_t *tp__plan_new(void);
/* Zeroed, suitably aligned, freed with the plan; NULL on NOMEM. */
void *tp__plan_alloc(tp_plan_t *p, size_t n, size_t size);
char *tp__plan_strdup(tp_plan_t *p, const char *s);
/* Name map from hosts[].name; TP_ERR_EXISTS when two hosts share a name
 * (*dup_p: the later node rank). */
tp_err_t tp__plan_index_names(tp_plan_t *p, uint32_t *dup_p);
/* Children lists (ascending) from parent[]. */
tp_err_t tp__plan_index_trees(tp_plan_t *p);
/* Whether parent[t] is one tree over all node ranks rooted at root[t];
 * otherwise *bad_p is a node rank on a cycle or a second root. */
bool tp__plan_tree_ok(const tp_plan_t *p, int t, uint32_t *bad_p);
/* Fill rec[] / rec_model[] from pred[] (model) or the fixed rule. */
void tp__plan_recommend(tp_plan_t *p);

#endif
