/*
 * slurm_pick_int.h - private to placement/: the node-taking half that
 * the slurm-tree and slurm-block models share (Slurm's rem_nodes /
 * min_rem_nodes / max_nodes counters and gres_sched_add's GPU credit).
 * Never include it from elsewhere.
 */
#ifndef TP_SLURM_PICK_INT_H
#define TP_SLURM_PICK_INT_H

#include "placement_int.h"

/* One evaluation's counters and output. hosts/gpus/max are the caller's
 * (borrowed); cand is owned by the model that embeds this. */
typedef struct tp__slurm_pick {
	const tp__policy_in_t *in;
	bool *cand; /* per host: still a candidate */
	long long rem_nodes, min_rem_nodes, max_nodes, need_gpus, got_gpus;
	uint32_t *hosts;
	int *gpus;
	size_t n, max;
} tp__slurm_pick_t;

/* Free GPUs of host h on in's view (the whole host with no state). */
int tp__slurm_free_gpus(const tp__policy_in_t *in, uint32_t h);

/* Fresh counters for one evaluation of in: -N N is min = req = max = N;
 * a --gpus=T job is min = req = 1 with no node cap. */
void tp__slurm_pick_reset(tp__slurm_pick_t *p, const tp__policy_in_t *in);

/* Nodes and GPUs both reached. */
bool tp__slurm_pick_done(const tp__slurm_pick_t *p);

/* Take host h: it gives its offer (or, for --gpus, what is still
 * missing), and credits all its free GPUs as gres_sched_add does. */
void tp__slurm_pick_take(tp__slurm_pick_t *p, uint32_t h);

#endif
