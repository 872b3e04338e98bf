/* Fabric model core: builder, finalize (names, levels, groups, rails,
 * capacities, NVLink domains, GPU affinity), accessors. Fabrics here are
 * built by hand so each expectation follows from the picture above it. */
#include "tp_test.h"

#include <string.h>

#include "topology_int.h"

#define LANE 25.0 /* 4 x 25 = 100 Gb/s links */

static uint32_t sw(tp_fabric_t *f, int subnet, uint64_t guid, const char *d)
{
	uint32_t i;
	assert_int_equal(tp__fabric_add_switch(f, subnet, guid, d, 36, &i), TP_OK);
	return i;
}

static uint32_t ca(tp_fabric_t *f, int subnet, uint64_t guid, const char *d)
{
	uint32_t i;
	assert_int_equal(tp__fabric_add_ca(f, subnet, guid, d, 1, &i), TP_OK);
	return i;
}

static void cable(tp_fabric_t *f, tp_node_kind_t ka, uint32_t a, int pa,
		  tp_node_kind_t kb, uint32_t b, int pb)
{
	bool added;
	assert_int_equal(tp__fabric_add_link(f, ka, a, pa, kb, b, pb, 4, LANE,
					     true, &added),
			 TP_OK);
	assert_true(added);
}

/*
 * spine0 (2 links to each leaf)     spine1 (1 link to each leaf)
 *     leaf0            leaf1              leaf2
 *   h1 h2 h3        h4 h5 + "MT25408..."   h6 + SHArP on every switch
 * Level-1 groups: {leaf0}, {leaf1}, {leaf2}; level 2: one group.
 * leaf0: down 3x100, up 3x100 (2 to spine0 + 1 to spine1).
 */
static tp_fabric_t *small_tree(void)
{
	tp_fabric_t *f = tp_fabric_create();
	int sn = tp__fabric_new_subnet(f);
	uint32_t leaf[3], spine[2];
	char d[64];

	for (int i = 0; i < 3; i++) {
		snprintf(d, sizeof(d), "leaf%d", i);
		leaf[i] = sw(f, sn, 0x100 + i, d);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(d, sizeof(d), "spine%d", i);
		spine[i] = sw(f, sn, 0x200 + i, d);
	}
	for (int l = 0; l < 3; l++) {
		cable(f, TP_NODE_SWITCH, leaf[l], 30, TP_NODE_SWITCH, spine[0], 1 + 2 * l);
		cable(f, TP_NODE_SWITCH, leaf[l], 31, TP_NODE_SWITCH, spine[0], 2 + 2 * l);
		cable(f, TP_NODE_SWITCH, leaf[l], 32, TP_NODE_SWITCH, spine[1], 1 + l);
	}
	const int where[] = {0, 0, 0, 1, 1, 2};
	for (int h = 0; h < 6; h++) {
		snprintf(d, sizeof(d), "h%d mlx5_0", h + 1);
		uint32_t c = ca(f, sn, 0x1000 + h, d);
		cable(f, TP_NODE_CA, c, 1, TP_NODE_SWITCH, leaf[where[h]], 1 + h);
	}
	uint32_t anon = ca(f, sn, 0x2000, "MT25408 ConnectX Mellanox Technologies");
	cable(f, TP_NODE_CA, anon, 1, TP_NODE_SWITCH, leaf[1], 20);
	for (int s = 0; s < 5; s++) {
		uint32_t sharp = ca(f, sn, 0x3000 + s,
				    "Mellanox Technologies Aggregation Node");
		cable(f, TP_NODE_CA, sharp, 1, TP_NODE_SWITCH, s < 3 ? leaf[s] : spine[s - 3], 35);
	}
	return f;
}

static void test_small_tree(void **state)
{
	(void)state;
	tp_fabric_t *f = small_tree();

	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 6);
	assert_int_equal(tp_fabric_nswitches(f), 5);
	assert_int_equal(tp_fabric_nlinks(f), 9 + 6 + 1 + 5);
	assert_int_equal(tp_fabric_nlevels(f), 2);
	assert_int_equal(tp_fabric_switches_at(f, 1), 3);
	assert_int_equal(tp_fabric_switches_at(f, 2), 2);
	assert_int_equal(tp_fabric_sharp_cas(f), 5);
	assert_int_equal(tp_fabric_unnamed_cas(f), 1);
	assert_int_equal(tp_fabric_rails(f), 1);
	assert_int_equal(tp_fabric_degraded_hosts(f), 0);
	assert_int_equal(tp_fabric_ngroup_levels(f), 2);
	assert_int_equal(tp_fabric_groups_at(f, 1), 3);
	assert_int_equal(tp_fabric_groups_at(f, 2), 1);

	/* hosts in natural name order; groups numbered in host order */
	const tp_host_t *h1 = tp_fabric_host(f, 0), *h4 = tp_fabric_host(f, 3);
	assert_string_equal(h1->name, "h1");
	assert_string_equal(h4->name, "h4");
	assert_int_equal(h1->group[0], 0);
	assert_int_equal(h4->group[0], 1);
	assert_int_equal(h1->group[1], h4->group[1]);
	const tp_group_t *g0 = tp_fabric_group(f, 0);
	assert_int_equal(g0->level, 1);
	assert_int_equal(g0->nhosts, 3);
	assert_true(g0->down_gbps == 300.0);
	assert_true(g0->up_gbps == 300.0);
	/* leaf1: two named hosts + the unnamed CA are all downlinks */
	assert_true(tp_fabric_group(f, 1)->down_gbps == 300.0);
	const tp_group_t *top = tp_fabric_group(f, h1->group[1]);
	assert_int_equal(top->level, 2);
	assert_int_equal(top->nhosts, 6);
	assert_int_equal(top->nswitches, 2);
	assert_true(top->down_gbps == 900.0);
	assert_true(top->up_gbps == 0.0);
	assert_int_equal(top->parent, TP_ID_NONE);
	assert_int_equal(tp_fabric_ca(f, 6)->role, TP_CA_UNNAMED);
	assert_int_equal(tp_fabric_ca(f, 7)->role, TP_CA_SHARP);
	assert_string_equal(tp_fabric_ca(f, 0)->dev, "mlx5_0");
	/* one aggregated warning for the unnamed CA */
	assert_int_equal(tp_fabric_nwarnings(f), 1);
	assert_non_null(strstr(tp_fabric_warning(f, 0), "0x0000000000002000"));

	/* finalize is idempotent */
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_ngroups(f), 4);
	assert_int_equal(tp_fabric_nwarnings(f), 1);
	tp_fabric_destroy(f);
}

/* Two rails as two subnets; 2 SUs of 2 hosts; host d4 has rail 1 uncabled.
 * Level-1 groups are SUs (hosts sharing rail leaves), rails = 2. */
/* tp_fabric_hosts_find: the names in order, or the first bad one */
static void test_hosts_find(void **state)
{
	(void)state;
	tp_fabric_t *f = small_tree();
	const char *ok[] = {"h4", "h1", "h6"};
	const char *unknown[] = {"h1", "h9", "h2"};
	const char *twice[] = {"h2", "h3", "h2"};
	const char *null[] = {"h1", NULL};
	uint32_t idx[3];
	size_t bad = 99;

	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_hosts_find(f, ok, 3, idx, &bad), TP_OK);
	assert_int_equal(bad, 99);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal(tp_fabric_host(f, idx[i])->name, ok[i]);
	assert_int_equal(tp_fabric_hosts_find(f, unknown, 3, idx, &bad),
			 TP_ERR_NOTFOUND);
	assert_int_equal(bad, 1);
	assert_int_equal(tp_fabric_hosts_find(f, twice, 3, idx, &bad),
			 TP_ERR_EXISTS);
	assert_int_equal(bad, 2);
	assert_int_equal(tp_fabric_hosts_find(f, null, 2, idx, NULL),
			 TP_ERR_INVAL);
	assert_int_equal(tp_fabric_hosts_find(f, ok, 0, idx, &bad), TP_OK);
	tp_fabric_destroy(f);
}

static void test_rails(void **state)
{
	(void)state;
	tp_fabric_t *f = tp_fabric_create();
	uint32_t leaf[2][2], spine[2];
	char d[64];

	for (int r = 0; r < 2; r++) {
		int sn = tp__fabric_new_subnet(f);
		assert_int_equal(sn, r);
		spine[r] = sw(f, sn, 0x900 + r, "spine");
		for (int su = 0; su < 2; su++) {
			leaf[su][r] = sw(f, sn, 0x100 + su * 16 + r, "leaf");
			cable(f, TP_NODE_SWITCH, leaf[su][r], 10, TP_NODE_SWITCH, spine[r], 1 + su);
		}
		for (int h = 0; h < 4; h++) {
			snprintf(d, sizeof(d), "d%d mlx5_%d", h + 1, r);
			uint32_t c = ca(f, sn, 0x1000 + h * 16 + r, d);
			if (h == 3 && r == 1)
				continue;
			cable(f, TP_NODE_CA, c, 1, TP_NODE_SWITCH, leaf[h / 2][r], 1 + h % 2);
		}
	}
	assert_int_equal(tp_fabric_finalize(f, &(tp_finalize_opts_t){.default_gpus = 8}), TP_OK);
	assert_int_equal(tp_fabric_nsubnets(f), 2);
	assert_int_equal(tp_fabric_nhosts(f), 4);
	assert_int_equal(tp_fabric_rails(f), 2);
	assert_int_equal(tp_fabric_degraded_hosts(f), 1);
	assert_true(tp_fabric_host(f, 3)->degraded);
	assert_int_equal(tp_fabric_groups_at(f, 1), 2);
	assert_int_equal(tp_fabric_groups_at(f, 2), 1);
	const tp_host_t *d1 = tp_fabric_host(f, 0);
	assert_int_equal(d1->ncas, 2);
	assert_int_equal(d1->nleaves, 2);
	assert_int_equal(tp_fabric_group(f, d1->group[0])->nswitches, 2);
	/* 8 default GPUs over 2 HCAs: GPUs 0-3 on rail 0, 4-7 on rail 1 */
	assert_int_equal(d1->ngpus, 8);
	assert_int_equal(d1->gpus[3].hca, 0);
	assert_int_equal(d1->gpus[4].hca, 1);
	assert_int_equal(tp_fabric_total_gpus(f), 32);
	/* node-local NVLink domain per host with GPUs */
	assert_int_equal(tp_fabric_nnvdomains(f), 4);
	assert_false(tp_fabric_nvdomain(f, 0)->multi_node);
	tp_fabric_destroy(f);
}

static void test_domains_and_guid_names(void **state)
{
	(void)state;
	tp_fabric_t *f = small_tree();

	assert_int_equal(tp__fabric_domain_add(f, "rackB", "h4"), TP_OK);
	assert_int_equal(tp__fabric_domain_add(f, "rackA", "h1"), TP_OK);
	assert_int_equal(tp__fabric_domain_add(f, "rackA", "h2"), TP_OK);
	assert_int_equal(tp__fabric_domain_add(f, "rackA", "nosuch"), TP_OK);
	/* sorts between the others; none of its hosts is here */
	assert_int_equal(tp__fabric_domain_add(f, "rackAA", "gone1"), TP_OK);
	assert_int_equal(tp__fabric_domain_add(f, "rackB", "h2"), TP_ERR_EXISTS);
	f->guid_names = tp_calloc(1, sizeof(char *));
	f->guid_names[0] = tp_strdup("named7");
	f->nguid_names = f->capguid_names = 1;
	assert_int_equal(tp_u64map_put(f->guid_name, 0x2000, 0), TP_OK);
	/* a map entry for a GUID the fabric does not hold */
	f->guid_names = tp_realloc(f->guid_names, 2 * sizeof(char *));
	f->guid_names[1] = tp_strdup("ghost");
	f->nguid_names = f->capguid_names = 2;
	assert_int_equal(tp_u64map_put(f->guid_name, 0xdead, 1), TP_OK);
	assert_int_equal(tp_fabric_finalize(f, &(tp_finalize_opts_t){.default_gpus = 4}), TP_OK);
	assert_int_equal(tp_fabric_unnamed_cas(f), 0);
	assert_int_equal(tp_fabric_nhosts(f), 7);
	assert_int_not_equal(tp_fabric_host_find(f, "named7"), TP_ID_NONE);
	/* multi-node domains first, sorted by name; then one per host */
	assert_string_equal(tp_fabric_nvdomain(f, 0)->name, "rackA");
	assert_int_equal(tp_fabric_nvdomain(f, 0)->nhosts, 2);
	assert_true(tp_fabric_nvdomain(f, 0)->multi_node);
	assert_string_equal(tp_fabric_nvdomain(f, 1)->name, "rackB");
	/* an empty domain is not created: the hosts' indices follow */
	assert_int_equal(tp_fabric_nnvdomains(f), 2 + 4);
	for (size_t d = 0; d < tp_fabric_nnvdomains(f); d++) {
		const tp_nvdomain_t *dp = tp_fabric_nvdomain(f, d);
		assert_true(dp->nhosts > 0);
		for (size_t i = 0; i < dp->nhosts; i++)
			assert_int_equal(
			    tp_fabric_host(f, dp->hosts[i])->nvdomain, d);
	}
	bool warned = false, empty = false, ghost = false;
	for (size_t i = 0; i < tp_fabric_nwarnings(f); i++) {
		warned |= strstr(tp_fabric_warning(f, i), "nosuch") != NULL;
		ghost |= strstr(tp_fabric_warning(f, i),
				"1 GUID of the GUID map names no CA of the "
				"fabric (e.g. entry \"0x000000000000dead "
				"ghost\")") != NULL;
		empty |= strstr(tp_fabric_warning(f, i),
				"no host of NVLink domain rackAA") != NULL;
	}
	assert_true(warned);
	assert_true(empty);
	assert_true(ghost);
	tp_fabric_destroy(f);
}

static void test_links_dedup_and_conflicts(void **state)
{
	(void)state;
	tp_fabric_t *f = tp_fabric_create();
	int sn = tp__fabric_new_subnet(f);
	uint32_t a = sw(f, sn, 1, "a"), b = sw(f, sn, 2, "b"), c = sw(f, sn, 3, "c");
	bool added;

	cable(f, TP_NODE_SWITCH, a, 1, TP_NODE_SWITCH, b, 1);
	/* the same cable seen from b */
	assert_int_equal(tp__fabric_add_link(f, TP_NODE_SWITCH, b, 1, TP_NODE_SWITCH, a, 1, 4, LANE, true, &added), TP_OK);
	assert_false(added);
	/* a:1 is taken */
	assert_int_equal(tp__fabric_add_link(f, TP_NODE_SWITCH, a, 1, TP_NODE_SWITCH, c, 1, 4, LANE, true, &added), TP_ERR_EXISTS);
	assert_int_equal(tp_fabric_nlinks(f), 1);
	assert_true(tp_fabric_link(f, 0)->gbps == 100.0);
	/* a port beyond 65535 is refused, not taken for port 65537 - 65536
	 * (a:1, taken) */
	assert_int_equal(tp__fabric_add_link(f, TP_NODE_SWITCH, c, 2,
					     TP_NODE_SWITCH, a, 65537, 4, LANE,
					     true, &added),
			 TP_ERR_RANGE);
	assert_string_equal(tp_fabric_error(f),
			    "switch 0 port 65537: ports go up to 65535");
	assert_int_equal(tp__fabric_add_link(f, TP_NODE_SWITCH, c, 65536,
					     TP_NODE_SWITCH, b, 2, 4, LANE,
					     true, &added),
			 TP_ERR_RANGE);
	assert_int_equal(tp__fabric_add_link(f, TP_NODE_SWITCH, c, 65535,
					     TP_NODE_SWITCH, b, 2, 4, LANE,
					     true, &added),
			 TP_OK);
	assert_true(added);
	assert_int_equal(tp_fabric_nlinks(f), 2);
	/* same GUID in another subnet is another switch */
	int sn2 = tp__fabric_new_subnet(f);
	assert_int_not_equal(sw(f, sn2, 1, "a2"), a);
	assert_int_equal(sw(f, sn, 1, "again"), a);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 0);
	assert_int_equal(tp_fabric_nlevels(f), 0);
	assert_int_equal(tp_fabric_ngroups(f), 0);
	assert_null(tp_fabric_switch(f, 99));
	tp_fabric_destroy(NULL);
	tp_fabric_destroy(f);
}

/* Allocation failure anywhere in build + finalize is reported, not fatal. */
/*
 *            spine
 *        leafA    leafB          (2 cables each to the spine)
 *   hA   leafC  (1 cable to leafA)    hB
 *   hC   leafD  (1 cable to leafC)
 *   hD
 * leafC and leafD reach the spine only through leaves (plafrim has such
 * switches): ranks spine 0, A and B 1, C 2, D 3; the cables inside level
 * 1 run up C -> A and D -> C; all four leaf groups are under the
 * spine's, C's and D's up capacity their one cable each.
 */
static void test_hanging_leaves(void **state)
{
	tp_fabric_t *f = tp_fabric_create();
	int sn = tp__fabric_new_subnet(f);
	uint32_t spine = sw(f, sn, 0x200, "spine"), lf[4];
	const char *names[] = {"leafA", "leafB", "leafC", "leafD"};
	char d[64];

	(void)state;
	for (int i = 0; i < 4; i++)
		lf[i] = sw(f, sn, 0x100 + i, names[i]);
	for (int i = 0; i < 2; i++) {
		cable(f, TP_NODE_SWITCH, lf[i], 30, TP_NODE_SWITCH, spine,
		      1 + 2 * i);
		cable(f, TP_NODE_SWITCH, lf[i], 31, TP_NODE_SWITCH, spine,
		      2 + 2 * i);
	}
	cable(f, TP_NODE_SWITCH, lf[2], 30, TP_NODE_SWITCH, lf[0], 32);
	cable(f, TP_NODE_SWITCH, lf[3], 30, TP_NODE_SWITCH, lf[2], 32);
	for (int h = 0; h < 4; h++) {
		snprintf(d, sizeof(d), "h%c mlx5_0", 'A' + h);
		uint32_t c = ca(f, sn, 0x1000 + h, d);
		cable(f, TP_NODE_CA, c, 1, TP_NODE_SWITCH, lf[h], 1);
	}
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_switch(f, spine)->level, 2);
	assert_int_equal(tp_fabric_switch(f, spine)->rank, 0);
	const int rank[] = {1, 1, 2, 3};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(tp_fabric_switch(f, lf[i])->level, 1);
		assert_int_equal(tp_fabric_switch(f, lf[i])->rank, rank[i]);
	}
	assert_true(tp_fabric_switch_above(f, lf[0], lf[2]));
	assert_false(tp_fabric_switch_above(f, lf[2], lf[0]));
	assert_true(tp_fabric_switch_above(f, lf[2], lf[3]));
	assert_true(tp_fabric_switch_above(f, spine, lf[0]));
	assert_false(tp_fabric_switch_above(f, lf[0], lf[0]));
	assert_int_equal(tp_fabric_ngroup_levels(f), 2);
	uint32_t top = tp_fabric_host(f, 0)->group[1];
	assert_int_not_equal(top, TP_ID_NONE);
	assert_int_equal(tp_fabric_group(f, top)->nhosts, 4);
	assert_int_equal(tp_fabric_group(f, top)->nswitches, 1);
	for (size_t h = 0; h < 4; h++) {
		const tp_host_t *hp = tp_fabric_host(f, h);
		const tp_group_t *g = tp_fabric_group(f, hp->group[0]);
		assert_int_equal(hp->group[1], top);
		assert_int_equal(g->parent, top);
		/* A, B: two cables to the spine; C, D: their one leaf cable */
		assert_true(g->up_gbps == (h < 2 ? 200.0 : 100.0));
	}
	assert_int_equal(tp_fabric_nwarnings(f), 0);
	tp_fabric_destroy(f);
}

/* Two leaves cabled to each other and to nothing above (jabl's third
 * dump): one parent without switches, each leaf's way up the cable
 * between them, the parent's down capacity that cable once. */
static void test_leaves_cabled(void **state)
{
	tp_fabric_t *f = tp_fabric_create();
	int sn = tp__fabric_new_subnet(f);
	uint32_t a = sw(f, sn, 0x100, "leafA"), b = sw(f, sn, 0x101, "leafB");
	char d[64];

	(void)state;
	cable(f, TP_NODE_SWITCH, a, 30, TP_NODE_SWITCH, b, 30);
	for (int h = 0; h < 4; h++) {
		snprintf(d, sizeof(d), "h%d mlx5_0", h);
		uint32_t c = ca(f, sn, 0x1000 + h, d);
		cable(f, TP_NODE_CA, c, 1, TP_NODE_SWITCH, h < 2 ? a : b,
		      1 + h);
	}
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_switch(f, a)->rank, 0);
	assert_int_equal(tp_fabric_switch(f, b)->rank, 0);
	assert_true(tp_fabric_switch_above(f, a, b)); /* equal ranks: index */
	assert_int_equal(tp_fabric_ngroup_levels(f), 2);
	uint32_t top = tp_fabric_host(f, 0)->group[1];
	assert_int_not_equal(top, TP_ID_NONE);
	assert_int_equal(tp_fabric_host(f, 3)->group[1], top);
	assert_int_not_equal(tp_fabric_host(f, 0)->group[0],
			     tp_fabric_host(f, 3)->group[0]);
	const tp_group_t *g = tp_fabric_group(f, top);
	assert_int_equal(g->level, 2);
	assert_int_equal(g->nswitches, 0);
	assert_int_equal(g->nhosts, 4);
	assert_true(g->down_gbps == 100.0);
	assert_true(
	    tp_fabric_group(f, tp_fabric_host(f, 0)->group[0])->up_gbps ==
	    100.0);
	assert_true(
	    tp_fabric_group(f, tp_fabric_host(f, 3)->group[0])->up_gbps ==
	    100.0);
	tp_fabric_destroy(f);
}

/* Rails of hosts missing a CA (one subnet; h0 and h4 are complete, one
 * CA on each of leaves 0-2; leaf 3 has no complete host):
 *  h1 lacks mlx5_1: its mlx5_2, on the rail 2 leaf, is on rail 2;
 *  h2 and h5 have names no complete host has: the rails of their leaves;
 *  h6 (the SuperPOD dump's "ubuntu") has mlx5_0 and mlx5_1 on the rail 1
 *   and 2 leaves: the leaves say rails 1 and 2, whatever the names say;
 *  h7's CAs are on leaf 3 (no majority there): the positions the complete
 *   hosts give their names, 0 and 2;
 *  h3, on leaf 3 too, would have two CAs on rail 0 by name, and h8 two on
 *   rail 0 by leaf (names unknown): their positions. */
static void test_ca_rails(void **state)
{
	tp_fabric_t *f = tp_fabric_create();
	int sn = tp__fabric_new_subnet(f);
	uint32_t leaf[4];
	const struct {
		const char *name[3];
		int leaf[3];
		int want[3];
	} host[] = {
	    {{"mlx5_0", "mlx5_1", "mlx5_2"}, {0, 1, 2}, {0, 1, 2}},
	    {{"mlx5_0", "mlx5_2"}, {0, 2}, {0, 2}},
	    {{"ib0", "ib1"}, {0, 1}, {0, 1}},
	    {{"HCA-1", "mlx5_0"}, {3, 3}, {0, 1}},
	    {{"HCA-1", "HCA-2", "HCA-3"}, {0, 1, 2}, {0, 1, 2}},
	    {{"ib0", "ib2"}, {0, 2}, {0, 2}},
	    {{"mlx5_0", "mlx5_1"}, {1, 2}, {1, 2}},
	    {{"mlx5_0", "mlx5_2"}, {3, 3}, {0, 2}},
	    {{"ib0", "ib1"}, {0, 0}, {0, 1}},
	};
	const int nh = (int)(sizeof(host) / sizeof(host[0]));
	char d[64];

	(void)state;
	for (int r = 0; r < 4; r++) {
		snprintf(d, sizeof(d), "leaf%d", r);
		leaf[r] = sw(f, sn, 0x100 + r, d);
	}
	for (int h = 0; h < nh; h++)
		for (int x = 0; x < 3 && host[h].name[x]; x++) {
			snprintf(d, sizeof(d), "h%d %s", h, host[h].name[x]);
			uint32_t c = ca(f, sn, 0x1000 + 16 * h + x, d);
			cable(f, TP_NODE_CA, c, 1, TP_NODE_SWITCH,
			      leaf[host[h].leaf[x]], 1 + 3 * h + x);
		}
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	for (int h = 0; h < nh; h++) {
		snprintf(d, sizeof(d), "h%d", h);
		const tp_host_t *hp =
		    tp_fabric_host(f, tp_fabric_host_find(f, d));
		for (size_t x = 0; x < hp->ncas; x++)
			if (tp_fabric_ca(f, hp->cas[x])->rail !=
			    host[h].want[x])
				fail_msg("h%d CA %zu: rail %d, want %d", h, x,
					 tp_fabric_ca(f, hp->cas[x])->rail,
					 host[h].want[x]);
	}
	tp_fabric_destroy(f);
}

/* Two rail leaves, four complete hosts; h3's cables are swapped (its
 * mlx5_0 on the mlx5_1 leaf and back): one warning naming it, with the
 * leaf's majority. The same cabling with h3 alone on the leaves (no
 * majority) is not judged. */
static void test_cross_rail(void **state)
{
	(void)state;
	for (int nhost = 4; nhost >= 2; nhost -= 2) {
		tp_fabric_t *f = tp_fabric_create();
		int sn = tp__fabric_new_subnet(f);
		uint32_t leaf[2] = {sw(f, sn, 0x100, "rail0"),
				    sw(f, sn, 0x101, "rail1")};
		char d[64];

		for (int h = 4 - nhost; h < 4; h++)
			for (int x = 0; x < 2; x++) {
				snprintf(d, sizeof(d), "h%d mlx5_%d", h, x);
				uint32_t c = ca(f, sn, 0x1000 + 16 * h + x, d);
				cable(f, TP_NODE_CA, c, 1, TP_NODE_SWITCH,
				      leaf[h == 3 ? 1 - x : x], 1 + h);
			}
		assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
		size_t hits = 0;
		for (size_t i = 0; i < tp_fabric_nwarnings(f); i++)
			if (strstr(tp_fabric_warning(f, i),
				   "another rail's leaf")) {
				hits++;
				assert_non_null(strstr(
				    tp_fabric_warning(f, i),
				    "2 CAs of 1 host cabled to another rail's "
				    "leaf (e.g. 'h3 mlx5_0' on 'rail1', where "
				    "3 "
				    "of 4 CAs are on rail 1, it on 0)"));
			}
		assert_int_equal(hits, nhost == 4 ? 1 : 0);
		tp_fabric_destroy(f);
	}
}

static int fail_after;
static void *fail_malloc(size_t n) { return fail_after-- > 0 ? malloc(n) : NULL; }
static void *fail_calloc(size_t n, size_t s) { return fail_after-- > 0 ? calloc(n, s) : NULL; }
static void *fail_realloc(void *p, size_t n) { return fail_after-- > 0 ? realloc(p, n) : NULL; }

static void test_alloc_failure(void **state)
{
	(void)state;
	const tp_allocator_t failing = {fail_malloc, fail_calloc, fail_realloc, free};
	int failures = 0;

	for (int n = 0; n < 400; n += 3) {
		tp_fabric_t *f = small_tree();
		fail_after = n;
		tp_alloc_set(&failing);
		tp_err_t err = tp_fabric_finalize(f, &(tp_finalize_opts_t){.default_gpus = 2});
		tp_alloc_set(NULL);
		if (err) {
			assert_int_equal(err, TP_ERR_NOMEM);
			failures++;
		}
		tp_fabric_destroy(f);
	}
	assert_true(failures > 10);
}

/* Node descriptions keep no ASCII control byte (a fabric JSON's
 * "ctl\u0001\nnew\u001bline" printed a raw newline and escape in fabric
 * hosts and topology-conf): a blank for a tab or line break, '?' for the
 * rest; other bytes stay. */
static void test_desc_controls(void **state)
{
	tp_fabric_t *f = tp_fabric_create();

	(void)state;
	uint32_t s = sw(f, 0, 0x1, "ctl\x01\nnew\x1bline\x7f");
	uint32_t c = ca(f, 0, 0x2, "h1\tHCA-1 caf\xc3\xa9");
	assert_string_equal(f->sw[s].desc, "ctl? new?line?");
	assert_string_equal(f->ca[c].desc, "h1 HCA-1 caf\xc3\xa9");
	tp_fabric_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_desc_controls),
	    cmocka_unit_test(test_small_tree),
	    cmocka_unit_test(test_hosts_find),
	    cmocka_unit_test(test_rails),
	    cmocka_unit_test(test_domains_and_guid_names),
	    cmocka_unit_test(test_links_dedup_and_conflicts),
	    cmocka_unit_test(test_hanging_leaves),
	    cmocka_unit_test(test_leaves_cabled),
	    cmocka_unit_test(test_ca_rails),
	    cmocka_unit_test(test_cross_rail),
	    cmocka_unit_test(test_alloc_failure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
