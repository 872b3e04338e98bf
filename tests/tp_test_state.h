/*
 * Seeded allocation states on small fat trees, shared by test_brute,
 * test_topoplace's extra-leaf guard and bench_place_budget so that they
 * price the same kind of case (header-only; needs libtpplacement's
 * internals). Only links between switches are loaded or degraded; host
 * cables stay whole.
 */
#ifndef TP_TEST_STATE_H
#define TP_TEST_STATE_H

#include "placement_int.h"

/* Uniform in [0, 1) from x. */
static inline double tp_test_unit(uint64_t *x)
{
	return (double)(tp__rand_next(x) >> 11) / 9007199254740992.0;
}

/* Into the empty state s from *x: each up-link loaded up to 90% of its
 * cable with probability 0.3, else at half health with probability 0.15;
 * each host busy (a job of all its GPUs) with probability 0.25, the others
 * listed in free_hosts (room for every host) and counted in *nfree_p.
 * TP_OK, or the state call's error. */
static inline tp_err_t tp_test_brute_state(tp_state_t *s, uint64_t *x,
					   uint32_t *free_hosts,
					   size_t *nfree_p)
{
	const tp_fabric_t *f = tp_state_fabric(s);
	size_t nh = tp_fabric_nhosts(f), nl = tp_fabric_nlinks(f), nfree = 0;
	tp_err_t err;

	for (size_t l = 0; l < nl; l++) {
		const tp_link_t *lk = tp_fabric_link(f, l);
		if (lk->kind[0] != TP_NODE_SWITCH ||
		    lk->kind[1] != TP_NODE_SWITCH)
			continue;
		double u = tp_test_unit(x), health = 1, bg = 0;
		if (u < 0.3)
			bg = lk->gbps * 0.9 * tp_test_unit(x);
		else if (u < 0.45)
			health = 0.5;
		if ((err = tp_state_set_link(s, (uint32_t)l, health, bg)))
			return err;
	}
	for (uint32_t h = 0; h < nh; h++) {
		int g = (int)tp_fabric_host(f, h)->ngpus;
		if (tp_test_unit(x) >= 0.25)
			free_hosts[nfree++] = h;
		else if ((err = tp_state_alloc(s, 1000 + h, &h, &g, 1)))
			return err;
	}
	*nfree_p = nfree;
	return TP_OK;
}

#endif
