/*
 * The node-taking steps common to Slurm's _eval_nodes_topo (22.05) and
 * eval_nodes_block (24.11): both walk candidates and decrement the same
 * counters, so the two models must not drift apart here.
 */
#include "config.h"

#include "slurm_pick_int.h"

int tp__slurm_free_gpus(const tp__policy_in_t *in, uint32_t h)
{
	return in->s ? in->s->free[h] : (int)tp_fabric_host(in->f, h)->ngpus;
}

void tp__slurm_pick_reset(tp__slurm_pick_t *p, const tp__policy_in_t *in)
{
	p->in = in;
	p->n = 0;
	p->got_gpus = 0;
	if (in->nhosts) {
		p->rem_nodes = p->min_rem_nodes = p->max_nodes =
		    (long long)in->nhosts;
		p->need_gpus = 0;
	} else {
		p->rem_nodes = p->min_rem_nodes = 1;
		p->max_nodes = (long long)tp_fabric_nhosts(in->f);
		p->need_gpus = in->total_gpus;
	}
}

bool tp__slurm_pick_done(const tp__slurm_pick_t *p)
{
	return p->rem_nodes <= 0 && p->got_gpus >= p->need_gpus;
}

void tp__slurm_pick_take(tp__slurm_pick_t *p, uint32_t h)
{
	const tp__policy_in_t *in = p->in;
	int free = tp__slurm_free_gpus(in, h), g;

	if (in->nhosts) {
		g = tp__host_offer(in, h);
	} else {
		long long left = p->need_gpus - p->got_gpus;
		g = free < left ? free : (int)left;
	}
	p->hosts[p->n] = h;
	p->gpus[p->n++] = g;
	p->rem_nodes--;
	p->min_rem_nodes--;
	p->max_nodes--;
	p->got_gpus += free; /* gres_sched_add credits all free GPUs */
	p->cand[h] = false;
}
