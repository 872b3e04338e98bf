/*
 * The node-taking steps common to Slurm's _eval_nodes_topo (22.05, and
 * 24.11's eval_nodes_tree) and eval_nodes_block (24.11): both walk
 * candidates and decrement the same counters, and both gather cons_tres's
 * GPU weight tiers the same way, so the models must not drift apart here.
 */
#include "config.h"

#include <limits.h>

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

bool tp__slurm_pick_try(tp__slurm_pick_t *p, uint32_t h)
{
	if (!p->cand[h] || p->n >= p->max)
		return false;
	tp__slurm_pick_take(p, h);
	return tp__slurm_pick_done(p);
}

bool tp__slurm_pick_req2(tp__slurm_pick_t *p, const bool *r, size_t nh)
{
	bool any = false;

	for (uint32_t h = 0; h < nh && p->max_nodes > 0; h++)
		if (r[h]) {
			any = true;
			tp__slurm_pick_try(p, h);
		}
	return any;
}

/* near_gpu_cnt, as the low byte holds it */
static int near_gpus(const tp__policy_in_t *in, uint32_t h)
{
	int free = tp__slurm_free_gpus(in, h);

	if (in->nhosts && !in->gpus_per_host)
		return 0;
	if (in->exclusive)
		return free;
	if (!in->nhosts)
		return free < in->total_gpus ? free : in->total_gpus;
	return in->gpus_per_host;
}

tp__slurm_key_t tp__slurm_tier_key(const tp__policy_in_t *in, uint32_t h)
{
	const tp_policy_params_t *pp = in->params;
	uint32_t w = pp && pp->node_weight ? pp->node_weight[h] : 1;
	int g = near_gpus(in, h);

	return (tp__slurm_key_t)(UINT32_MAX - w) << 16 | (g < 0xff ? g : 0xff);
}

bool tp__slurm_gather(const tp__slurm_pick_t *p, const tp__slurm_key_t *key,
		      const uint32_t *hosts, size_t n, bool *inb, bool *r)
{
	long long nb = 0, gb = 0;
	tp__slurm_key_t k = INT64_MAX;

	for (;;) {
		tp__slurm_key_t next = -1;
		for (size_t x = 0; x < n; x++) {
			uint32_t h = hosts[x];
			if (p->cand[h] && !inb[h] && key[h] < k &&
			    key[h] > next)
				next = key[h];
		}
		if (next < 0)
			return false;
		if (nb)
			for (size_t x = 0; x < n; x++)
				r[hosts[x]] = inb[hosts[x]];
		for (size_t x = 0; x < n; x++) {
			uint32_t h = hosts[x];
			if (p->cand[h] && key[h] == next) {
				inb[h] = true;
				nb++;
				gb += tp__slurm_free_gpus(p->in, h);
			}
		}
		if (nb >= p->rem_nodes && gb >= p->need_gpus)
			return true;
		k = next;
	}
}
