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
/* Take h if it is still a candidate and the output has room; true when
 * the job is then done. */
bool tp__slurm_pick_try(tp__slurm_pick_t *p, uint32_t h);
/* Take every host r[] marks (of nh), in index order while max_nodes
 * lasts: the lighter tiers, the job's before any switch or block is
 * chosen (req2). False when r marks none. */
bool tp__slurm_pick_req2(tp__slurm_pick_t *p, const bool *r, size_t nh);

/* A host's weight tier as a key, larger first (lighter); -1: none. */
typedef int64_t tp__slurm_key_t;

/* Weight tiers: slurmctld sets a node's sched_weight to its Weight=
 * (tp_policy_params_t.node_weight) << 8 | 0xff (node_scheduler.c
 * _set_sched_weight, copied to the nodes by _sync_node_weight; cons_tres's
 * will-run tests shift by 16) and cons_tres the low byte to 0xff -
 * near_gpu_cnt (doc/slurm-tree-model.md 7.2, 11.3), so a lower Weight=
 * goes first and, among equal ones, more usable GPUs. Candidate h's key,
 * larger first: its GPU count is all its GPUs for an exclusive GPU job
 * (whole_node sets no per-node maximum), the per-node count for a shared
 * one (one tier), min(free, T) for a shared --gpus=T; none for a job
 * without GPUs. */
tp__slurm_key_t tp__slurm_tier_key(const tp__policy_in_t *in, uint32_t h);
/* Gather the tiers (key[], per host) of p's candidates among
 * hosts[0..n), lightest first, until they hold p's remaining nodes and
 * GPUs: inb[h] set for B, and r[h] for the tiers before the last one (R:
 * Slurm's req2, the job's before it picks). False when all of them
 * together do not hold it. inb and r start cleared. */
bool tp__slurm_gather(const tp__slurm_pick_t *p, const tp__slurm_key_t *key,
		      const uint32_t *hosts, size_t n, bool *inb, bool *r);

#endif
