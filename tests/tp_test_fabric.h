/* Generated fabrics for the unit tests (header-only; needs libtptopology). */
#ifndef TP_TEST_FABRIC_H
#define TP_TEST_FABRIC_H

#include "tp_test.h"
#include "tp_topology.h"

/* A rail-optimized fabric: sus scalable units of hps hosts, `rails` HCAs
 * per host each on its own rail subnet, `spines` spines per rail. */
static inline tp_fabric_t *tp_test_rail(int sus, int hps, int rails, int spines,
					int gpus)
{
	tp_gen_rail_t p;
	tp_fabric_t *f = NULL;

	tp_gen_rail_defaults(&p);
	p.sus = sus;
	p.hosts_per_su = hps;
	p.rails = rails;
	p.spines_per_rail = spines;
	p.gpus_per_host = gpus;
	assert_int_equal(tp_gen_rail(&p, &f), TP_OK);
	return f;
}

#endif
