/* Generators (fat tree, rail-optimized, NVL72) and the writers built on the
 * model: Slurm topology.conf (tree, block) and the ibsim net file. The
 * expectations are the model's view of each generated shape, derived from
 * the parameters in the comment above each test. */
#include "tp_test.h"
#include "tp_test_fabric.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

/* ---- helpers ---- */

static const tp_group_t *group_of(const tp_fabric_t *f, const char *host,
				  int level)
{
	uint32_t h = tp_fabric_host_find(f, host);

	assert_int_not_equal(h, TP_ID_NONE);
	uint32_t g = tp_fabric_host(f, h)->group[level - 1];
	assert_int_not_equal(g, TP_ID_NONE);
	return tp_fabric_group(f, g);
}

static size_t parallel_links(const tp_fabric_t *f, const char *a, const char *b)
{
	return tp_test_cables_between(f, a, b, NULL);
}

/* Compare with tests/topology/data/<name>; TP_UPDATE_GOLDEN=1 rewrites it. */
static void check_golden(const char *name, const char *text)
{
	const char *path = tp_test_data(name);
	char *want = NULL;
	size_t len = 0;

	if (getenv("TP_UPDATE_GOLDEN")) {
		FILE *fp = fopen(path, "w");
		assert_non_null(fp);
		fputs(text, fp);
		fclose(fp);
		return;
	}
	assert_int_equal(tp_file_read(path, &want, &len), TP_OK);
	assert_string_equal(text, want);
	tp_free(want);
}

static char *conf(const tp_fabric_t *f, bool block)
{
	char *text = NULL;

	assert_int_equal(tp_fabric_topology_conf(f, block, &text), TP_OK);
	assert_non_null(text);
	return text;
}

/* The text without "LinkSpeed=..." fields. */
static char *strip_linkspeed(const char *s)
{
	tp_strbuf_t sb = {0};

	while (*s) {
		const char *e = strchr(s, '\n');
		const char *ls = strstr(s, " LinkSpeed=");
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (ls && ls < s + n)
			tp_strbuf_append(&sb, s, (size_t)(ls - s));
		else
			tp_strbuf_append(&sb, s, n);
		tp_strbuf_append(&sb, "\n", 1);
		s += n + (e ? 1 : 0);
	}
	tp_strbuf_append(&sb, "", 0);
	assert_false(sb.failed);
	return sb.buf;
}

/* ---- fat tree ---- */

/* Defaults: 8 leaves x 16 hosts, 4 spines, 2 cables leaf->each spine,
 * 8 GPUs per host, 400 Gb/s: 16 x 400 down vs 8 x 400 up per leaf. */
static void test_fat_tree_defaults(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;

	(void)state;
	tp_gen_fat_tree_defaults(&p);
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_non_null(f);
	assert_int_equal(tp_fabric_nsubnets(f), 1);
	assert_int_equal(tp_fabric_nswitches(f), 12);
	assert_int_equal(tp_fabric_nlevels(f), 2);
	assert_int_equal(tp_fabric_switches_at(f, 1), 8);
	assert_int_equal(tp_fabric_switches_at(f, 2), 4);
	assert_int_equal(tp_fabric_nhosts(f), 128);
	assert_int_equal(tp_fabric_ncas(f), 128);
	assert_int_equal(tp_fabric_nlinks(f), 128 + 8 * 4 * 2);
	assert_int_equal(parallel_links(f, "leaf03", "spine04"), 2);
	assert_int_equal(tp_fabric_total_gpus(f), 128 * 8);
	assert_int_equal(tp_fabric_rails(f), 1);
	assert_int_equal(tp_fabric_degraded_hosts(f), 0);
	assert_int_equal(tp_fabric_unnamed_cas(f), 0);
	assert_int_equal(tp_fabric_nwarnings(f), 0);
	assert_int_equal(tp_fabric_ngroup_levels(f), 2);
	assert_int_equal(tp_fabric_groups_at(f, 1), 8);
	assert_int_equal(tp_fabric_groups_at(f, 2), 1);

	const tp_switch_t *s0 = tp_fabric_switch(f, 0);
	assert_string_equal(s0->desc, "leaf01");
	assert_int_equal(s0->level, 1);
	assert_int_equal(s0->nports, 16 + 4 * 2);
	assert_string_equal(tp_fabric_switch(f, 8)->desc, "spine01");
	assert_int_equal(tp_fabric_switch(f, 8)->nports, 8 * 2);
	assert_string_equal(tp_fabric_ca(f, 0)->desc, "node001 mlx5_0");
	assert_string_equal(tp_fabric_ca(f, 0)->dev, "mlx5_0");

	const tp_link_t *l = tp_fabric_link(f, 0);
	assert_int_equal(l->width, 4);
	assert_true(fabs(l->gbps - 400) < 1e-9);
	assert_true(l->active);

	/* leaf group: 16 hosts x 400 down, 4 spines x 2 x 400 up = 2:1 */
	const tp_group_t *g1 = group_of(f, "node001", 1);
	assert_int_equal(g1->level, 1);
	assert_int_equal(g1->nhosts, 16);
	assert_int_equal(g1->nswitches, 1);
	assert_true(fabs(g1->down_gbps - 6400) < 1e-6);
	assert_true(fabs(g1->up_gbps - 3200) < 1e-6);
	assert_true(fabs(g1->down_gbps / g1->up_gbps - 2.0) < 1e-9);
	assert_ptr_equal(group_of(f, "node016", 1), g1);
	assert_ptr_not_equal(group_of(f, "node017", 1), g1);

	const tp_group_t *g2 = group_of(f, "node001", 2);
	assert_int_equal(g2->level, 2);
	assert_int_equal(g2->parent, TP_ID_NONE);
	assert_int_equal(g2->nhosts, 128);
	assert_int_equal(g2->nswitches, 4);
	assert_true(fabs(g2->down_gbps - 8 * 4 * 2 * 400) < 1e-6);
	assert_true(fabs(g2->up_gbps) < 1e-9);
	assert_ptr_equal(tp_fabric_group(f, g1->parent), g2);

	/* GPUs: node data from the generator, all near the one HCA */
	const tp_host_t *h =
	    tp_fabric_host(f, tp_fabric_host_find(f, "node128"));
	assert_non_null(h);
	assert_int_equal(h->ngpus, 8);
	assert_true(h->has_node_data);
	assert_int_equal(h->ncas, 1);
	assert_int_equal(h->nleaves, 1);
	for (size_t g = 0; g < h->ngpus; g++) {
		assert_int_equal(h->gpus[g].index, (int)g);
		assert_string_equal(h->gpus[g].model, "generated");
		assert_string_equal(h->gpus[g].nic, "mlx5_0");
		assert_int_equal(h->gpus[g].numa, -1);
		assert_int_equal(h->gpus[g].hca, 0);
	}
	/* node-local NVLink domains only */
	assert_int_equal(tp_fabric_nnvdomains(f), 128);
	assert_false(tp_fabric_nvdomain(f, 0)->multi_node);
	tp_fabric_destroy(f);
}

/* Interleave: host i on leaf i % leaves, so leaf groups are strided. */
static void test_fat_tree_interleave(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;

	(void)state;
	tp_gen_fat_tree_defaults(&p);
	p.leaves = 4;
	p.hosts_per_leaf = 3;
	p.spines = 2;
	p.uplinks_per_spine = 1;
	p.gpus_per_host = 0;
	p.interleave = true;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	const tp_group_t *g = group_of(f, "node001", 1);
	assert_int_equal(g->nhosts, 3);
	assert_string_equal(tp_fabric_host(f, g->hosts[0])->name, "node001");
	assert_string_equal(tp_fabric_host(f, g->hosts[1])->name, "node005");
	assert_string_equal(tp_fabric_host(f, g->hosts[2])->name, "node009");
	assert_ptr_not_equal(group_of(f, "node002", 1), g);
	assert_int_equal(tp_fabric_total_gpus(f), 0);
	/* 3 down, 2 up: 1.5:1 */
	assert_true(fabs(g->down_gbps / g->up_gbps - 1.5) < 1e-9);
	tp_fabric_destroy(f);
}

/* ---- rail-optimized ---- */

/* Defaults: 4 SUs x 32 DGX, 8 rails (each its own subnet), 4 spines per
 * rail; leaves non-blocking: 32 hosts down, 4 x 8 cables up. */
static void test_rail_defaults(void **state)
{
	tp_gen_rail_t p;
	tp_fabric_t *f = NULL;

	(void)state;
	tp_gen_rail_defaults(&p);
	assert_int_equal(tp_gen_rail(&p, &f), TP_OK);
	assert_int_equal(tp_fabric_nsubnets(f), 8);
	assert_int_equal(tp_fabric_rails(f), 8);
	assert_int_equal(tp_fabric_nhosts(f), 128);
	assert_int_equal(tp_fabric_ncas(f), 128 * 8);
	assert_int_equal(tp_fabric_nswitches(f), 4 * 8 + 8 * 4);
	assert_int_equal(tp_fabric_switches_at(f, 1), 32);
	assert_int_equal(tp_fabric_switches_at(f, 2), 32);
	assert_int_equal(tp_fabric_nlinks(f), 1024 + 8 * 4 * 4 * 8);
	assert_int_equal(parallel_links(f, "su02-rail3-leaf", "rail3-spine04"),
			 8);
	assert_int_equal(parallel_links(f, "su02-rail3-leaf", "rail4-spine01"),
			 0);
	assert_int_equal(tp_fabric_total_gpus(f), 128 * 8);
	assert_int_equal(tp_fabric_degraded_hosts(f), 0);
	assert_int_equal(tp_fabric_ngroup_levels(f), 2);
	/* a level-1 group is a scalable unit across all 8 rails */
	assert_int_equal(tp_fabric_groups_at(f, 1), 4);
	assert_int_equal(tp_fabric_groups_at(f, 2), 1);

	const tp_group_t *su = group_of(f, "dgx033", 1);
	assert_int_equal(su->nhosts, 32);
	assert_int_equal(su->nswitches, 8);
	assert_string_equal(tp_fabric_host(f, su->hosts[0])->name, "dgx033");
	assert_true(fabs(su->down_gbps - 32 * 8 * 400) < 1e-6);
	assert_true(fabs(su->up_gbps - 8 * 32 * 400) < 1e-6);
	assert_ptr_equal(group_of(f, "dgx064", 1), su);
	assert_ptr_not_equal(group_of(f, "dgx065", 1), su);
	assert_int_equal(group_of(f, "dgx001", 2)->nswitches, 32);

	/* HCA r on rail r: GPU g nearest to mlx5_g, CAs ordered by rail */
	const tp_host_t *h =
	    tp_fabric_host(f, tp_fabric_host_find(f, "dgx007"));
	assert_int_equal(h->ncas, 8);
	assert_int_equal(h->nleaves, 8);
	for (size_t c = 0; c < h->ncas; c++) {
		const tp_ca_t *ca = tp_fabric_ca(f, h->cas[c]);
		char dev[32];
		snprintf(dev, sizeof(dev), "mlx5_%zu", c);
		assert_string_equal(ca->dev, dev);
		assert_int_equal(ca->subnet, (int)c);
	}
	for (size_t g = 0; g < h->ngpus; g++)
		assert_int_equal(h->gpus[g].hca, (int)g);
	tp_fabric_destroy(f);
}

/* Spines that do not divide the hosts: uplinks round up per spine. */
static void test_rail_uneven(void **state)
{
	tp_gen_rail_t p;
	tp_fabric_t *f = NULL;

	(void)state;
	tp_gen_rail_defaults(&p);
	p.sus = 2;
	p.hosts_per_su = 5;
	p.rails = 2;
	p.spines_per_rail = 2;
	p.gpus_per_host = 4;
	assert_int_equal(tp_gen_rail(&p, &f), TP_OK);
	assert_int_equal(parallel_links(f, "su01-rail1-leaf", "rail1-spine02"),
			 3);
	const tp_group_t *su = group_of(f, "dgx001", 1);
	assert_true(su->up_gbps >= su->down_gbps);
	/* 4 GPUs over 2 HCAs: two per HCA */
	const tp_host_t *h = tp_fabric_host(f, 0);
	assert_string_equal(h->gpus[1].nic, "mlx5_0");
	assert_string_equal(h->gpus[2].nic, "mlx5_1");
	assert_int_equal(h->gpus[3].hca, 1);
	tp_fabric_destroy(f);
}

/* ---- NVL72 ---- */

/* Defaults: 4 racks x 18 trays x 4 GPUs, 2 leaves per rack (9 trays
 * each), 4 spines, ceil(9 / 4) = 3 cables leaf->each spine. */
static void test_nvl72_defaults(void **state)
{
	tp_gen_nvl72_t p;
	tp_fabric_t *f = NULL;

	(void)state;
	tp_gen_nvl72_defaults(&p);
	assert_int_equal(tp_gen_nvl72(&p, &f), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 72);
	assert_int_equal(tp_fabric_total_gpus(f), 288);
	assert_int_equal(tp_fabric_nswitches(f), 8 + 4);
	assert_int_equal(tp_fabric_switches_at(f, 1), 8);
	assert_int_equal(tp_fabric_nlinks(f), 72 + 8 * 4 * 3);
	assert_int_equal(parallel_links(f, "rack02-leaf2", "spine03"), 3);
	assert_int_equal(tp_fabric_groups_at(f, 1), 8);
	assert_int_equal(tp_fabric_groups_at(f, 2), 1);
	assert_int_equal(group_of(f, "nvl010", 1)->nhosts, 9);
	assert_ptr_not_equal(group_of(f, "nvl009", 1),
			     group_of(f, "nvl010", 1));

	/* one multi-node NVLink domain per rack, nothing node-local */
	assert_int_equal(tp_fabric_nnvdomains(f), 4);
	for (size_t d = 0; d < 4; d++) {
		const tp_nvdomain_t *dp = tp_fabric_nvdomain(f, d);
		char name[32];
		snprintf(name, sizeof(name), "rack%02zu", d + 1);
		assert_string_equal(dp->name, name);
		assert_true(dp->multi_node);
		assert_int_equal(dp->nhosts, 18);
		assert_int_equal(tp_fabric_host(f, dp->hosts[0])->nvdomain, d);
	}
	assert_string_equal(
	    tp_fabric_host(f, tp_fabric_nvdomain(f, 1)->hosts[0])->name,
	    "nvl019");
	tp_fabric_destroy(f);
}

/* ---- determinism ---- */

static void same_fabric(const tp_fabric_t *a, const tp_fabric_t *b)
{
	char *ja = NULL, *jb = NULL;

	assert_int_equal(tp_fabric_nswitches(a), tp_fabric_nswitches(b));
	assert_int_equal(tp_fabric_ncas(a), tp_fabric_ncas(b));
	assert_int_equal(tp_fabric_nlinks(a), tp_fabric_nlinks(b));
	for (size_t i = 0; i < tp_fabric_nswitches(a); i++) {
		assert_true(tp_fabric_switch(a, i)->guid ==
			    tp_fabric_switch(b, i)->guid);
		assert_string_equal(tp_fabric_switch(a, i)->desc,
				    tp_fabric_switch(b, i)->desc);
	}
	for (size_t i = 0; i < tp_fabric_ncas(a); i++)
		assert_true(tp_fabric_ca(a, i)->guid ==
			    tp_fabric_ca(b, i)->guid);
	for (size_t i = 0; i < tp_fabric_nlinks(a); i++) {
		const tp_link_t *x = tp_fabric_link(a, i),
				*y = tp_fabric_link(b, i);
		for (int e = 0; e < 2; e++) {
			assert_int_equal(x->kind[e], y->kind[e]);
			assert_int_equal(x->node[e], y->node[e]);
			assert_int_equal(x->port[e], y->port[e]);
		}
		assert_true(x->gbps == y->gbps);
	}
	assert_int_equal(tp_fabric_to_json(a, &ja), TP_OK);
	assert_int_equal(tp_fabric_to_json(b, &jb), TP_OK);
	assert_string_equal(ja, jb);
	tp_free(ja);
	tp_free(jb);
}

static void test_deterministic(void **state)
{
	tp_gen_fat_tree_t ft;
	tp_gen_rail_t rl;
	tp_gen_nvl72_t nv;
	tp_fabric_t *a = NULL, *b = NULL;

	(void)state;
	tp_gen_fat_tree_defaults(&ft);
	ft.interleave = true;
	assert_int_equal(tp_gen_fat_tree(&ft, &a), TP_OK);
	assert_int_equal(tp_gen_fat_tree(&ft, &b), TP_OK);
	same_fabric(a, b);
	/* distinct GUIDs, switches and CAs in their own ranges */
	assert_true(tp_fabric_switch(a, 0)->guid == 0x0002c90300000001ULL);
	assert_true(tp_fabric_switch(a, 11)->guid == 0x0002c9030000000cULL);
	assert_true(tp_fabric_ca(a, 0)->guid == 0x0002c90400000001ULL);
	assert_true(tp_fabric_ca(a, 127)->guid == 0x0002c90400000080ULL);
	tp_fabric_destroy(a);
	tp_fabric_destroy(b);

	tp_gen_rail_defaults(&rl);
	assert_int_equal(tp_gen_rail(&rl, &a), TP_OK);
	assert_int_equal(tp_gen_rail(&rl, &b), TP_OK);
	same_fabric(a, b);
	tp_fabric_destroy(a);
	tp_fabric_destroy(b);

	tp_gen_nvl72_defaults(&nv);
	assert_int_equal(tp_gen_nvl72(&nv, &a), TP_OK);
	assert_int_equal(tp_gen_nvl72(&nv, &b), TP_OK);
	same_fabric(a, b);
	tp_fabric_destroy(a);
	tp_fabric_destroy(b);
}

/* ---- parameter errors ---- */

#define FT_BAD(field, value)                                                   \
	do {                                                                   \
		tp_gen_fat_tree_defaults(&ft);                                 \
		ft.field = value;                                              \
		assert_int_equal(tp_gen_fat_tree(&ft, &f), TP_ERR_RANGE);      \
		assert_ptr_equal(f, (tp_fabric_t *)0x1);                       \
	} while (0)
#define RAIL_BAD(field, value)                                                 \
	do {                                                                   \
		tp_gen_rail_defaults(&rl);                                     \
		rl.field = value;                                              \
		assert_int_equal(tp_gen_rail(&rl, &f), TP_ERR_RANGE);          \
		assert_ptr_equal(f, (tp_fabric_t *)0x1);                       \
	} while (0)
#define NVL_BAD(field, value)                                                  \
	do {                                                                   \
		tp_gen_nvl72_defaults(&nv);                                    \
		nv.field = value;                                              \
		assert_int_equal(tp_gen_nvl72(&nv, &f), TP_ERR_RANGE);         \
		assert_ptr_equal(f, (tp_fabric_t *)0x1);                       \
	} while (0)

/* One NIC per GPU on the host's leaf, up-links sized for at most 2:1, and
 * seeded degradation: the same seed the same cables, another seed others,
 * no host left without a cable. */
static void test_fat_tree_nics(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL, *g = NULL, *h = NULL;
	char *a = NULL, *b = NULL, *c = NULL;

	(void)state;
	tp_gen_fat_tree_defaults(&p);
	p.leaves = 4;
	p.hosts_per_leaf = 4;
	p.spines = 2;
	p.uplinks_per_spine = 0;
	p.nics_per_host = 0;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 16);
	for (size_t i = 0; i < tp_fabric_nhosts(f); i++) {
		assert_int_equal(tp_fabric_host(f, i)->ncas, 8);
		assert_int_equal(tp_fabric_host(f, i)->nleaves, 1);
	}
	/* 16 hosts x 8 NICs + 4 leaves x 2 spines x 8 up-links (32 down,
	 * 16 up per leaf: 2:1) */
	assert_int_equal(tp_fabric_nlinks(f), 16 * 8 + 4 * 2 * 8);
	const tp_group_t *gp =
	    tp_fabric_group(f, tp_fabric_host(f, 0)->group[0]);
	assert_true(fabs(gp->down_gbps - 2 * gp->up_gbps) < 1e-6);
	tp_fabric_destroy(f);

	/* at most 2:1: 6 NICs down want 3 cables up, rounded up to one per
	 * spine, 4 up: 1.5:1 */
	p.hosts_per_leaf = 6;
	p.gpus_per_host = 1;
	p.spines = 4;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	gp = tp_fabric_group(f, tp_fabric_host(f, 0)->group[0]);
	assert_true(fabs(gp->down_gbps - 1.5 * gp->up_gbps) < 1e-6);
	tp_fabric_destroy(f);
	p.hosts_per_leaf = 4;
	p.gpus_per_host = 8;
	p.spines = 2;

	p.degrade = 0.2;
	p.degrade_seed = 7;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_int_equal(tp_gen_fat_tree(&p, &g), TP_OK);
	p.degrade_seed = 8;
	assert_int_equal(tp_gen_fat_tree(&p, &h), TP_OK);
	assert_int_equal(tp_fabric_to_json(f, &a), TP_OK);
	assert_int_equal(tp_fabric_to_json(g, &b), TP_OK);
	assert_int_equal(tp_fabric_to_json(h, &c), TP_OK);
	assert_string_equal(a, b);
	assert_true(strcmp(a, c) != 0);
	size_t half = 0, links = tp_fabric_nlinks(f);
	assert_true(links < 16 * 8 + 4 * 2 * 8); /* some cables down */
	for (size_t i = 0; i < links; i++)
		half += tp_fabric_link(f, i)->width == 2;
	assert_true(half > 0); /* some at half width */
	for (size_t i = 0; i < tp_fabric_nhosts(f); i++)
		assert_true(tp_fabric_host(f, i)->ncas >= 1);
	tp_free(a);
	tp_free(b);
	tp_free(c);
	tp_fabric_destroy(f);
	tp_fabric_destroy(g);
	tp_fabric_destroy(h);
}

/* Degradation never cuts a leaf off the spines: with these parameters
 * (seed 5, a fifth of the cables) both up-links of leaf03 draw "down",
 * which split the fabric in two. The last one is kept at half width
 * instead, so every leaf has a way up and every host a spine group. */
static void test_fat_tree_degrade_keeps_leaf(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;
	int leaves = 0;

	(void)state;
	tp_gen_fat_tree_defaults(&p);
	p.leaves = 8;
	p.hosts_per_leaf = 4;
	p.gpus_per_host = 1;
	p.spines = 2;
	p.uplinks_per_spine = 0;
	p.degrade = 0.2;
	p.degrade_seed = 5;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_int_equal(tp_fabric_ngroup_levels(f), 2);
	assert_int_equal(tp_fabric_groups_at(f, 2), 1);
	for (size_t i = 0; i < tp_fabric_ngroups(f); i++) {
		const tp_group_t *g = tp_fabric_group(f, i);
		if (g->level != 1)
			continue;
		leaves++;
		assert_true(g->up_gbps > 0);
		assert_int_not_equal(g->parent, TP_ID_NONE);
	}
	assert_int_equal(leaves, 8);
	for (size_t i = 0; i < tp_fabric_nhosts(f); i++)
		assert_int_not_equal(tp_fabric_host(f, i)->group[1],
				     TP_ID_NONE);
	/* leaf03 keeps one cable, halved: 4 x 400G down, 200G up */
	assert_int_equal(parallel_links(f, "leaf03", "spine01") +
			     parallel_links(f, "leaf03", "spine02"),
			 1);
	assert_true(fabs(group_of(f, "node009", 1)->up_gbps - 200) < 1e-6);
	tp_fabric_destroy(f);
}

/* ... nor leaves each left on a different spine: with every cable drawn
 * down or halved (--degrade 1, seed 1), leaf01 kept a halved cable to
 * spine01 and leaf02 one to spine02, two fabrics that could not reach
 * each other. Every draw here now leaves one spine group. */
static void test_fat_tree_degrade_connected(void **state)
{
	static const double share[] = {0.5, 1};
	tp_gen_fat_tree_t p;

	(void)state;
	for (int shape = 0; shape < 2; shape++)
		for (size_t d = 0; d < 2; d++)
			for (uint64_t seed = 1; seed <= 40; seed++) {
				tp_fabric_t *f = NULL;
				tp_gen_fat_tree_defaults(&p);
				p.leaves = shape ? 3 : 2;
				p.spines = shape ? 3 : 2;
				p.hosts_per_leaf = shape ? 2 : 4;
				p.gpus_per_host = 1;
				p.link_gbps = 100;
				p.degrade = share[d];
				p.degrade_seed = seed;
				assert_int_equal(tp_gen_fat_tree(&p, &f),
						 TP_OK);
				if (tp_fabric_groups_at(f, 2) != 1)
					fail_msg(
					    "%d leaves, --degrade %g, seed "
					    "%llu: %zu spine groups",
					    p.leaves, p.degrade,
					    (unsigned long long)seed,
					    tp_fabric_groups_at(f, 2));
				tp_fabric_destroy(f);
			}
}

/* --pods: three levels. 2 pods of 2 leaves, 2 spines a pod, 3 cores: each
 * pod's spines are one level-2 group, the cores the single level-3 group;
 * a leaf reaches only its pod's spines; a spine's cores get as many cables
 * as keep it non-blocking (2 leaves x 2 up-links over 3 cores: 2 each).
 * Degrading never takes a core cable and keeps every pod in one piece. */
static void test_fat_tree_pods(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;

	(void)state;
	tp_gen_fat_tree_defaults(&p);
	p.pods = 2;
	p.leaves = 4;
	p.spines = 2;
	p.cores = 3;
	p.hosts_per_leaf = 3;
	p.gpus_per_host = 2;
	p.uplinks_per_spine = 2;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_int_equal(tp_fabric_ngroup_levels(f), 3);
	assert_int_equal(tp_fabric_groups_at(f, 1), 4);
	assert_int_equal(tp_fabric_groups_at(f, 2), 2);
	assert_int_equal(tp_fabric_groups_at(f, 3), 1);
	assert_int_equal(parallel_links(f, "leaf02", "spine02"), 2);
	assert_int_equal(parallel_links(f, "leaf02", "spine03"), 0);
	assert_int_equal(parallel_links(f, "leaf03", "spine03"), 2);
	assert_int_equal(parallel_links(f, "spine01", "core03"), 2);
	assert_int_equal(parallel_links(f, "spine04", "core01"), 2);
	assert_true(group_of(f, "node001", 2) == group_of(f, "node006", 2));
	assert_true(group_of(f, "node001", 2) != group_of(f, "node007", 2));
	tp_fabric_destroy(f);
	for (uint64_t seed = 1; seed <= 20; seed++) {
		p.degrade = 0.6;
		p.degrade_seed = seed;
		assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
		assert_int_equal(tp_fabric_groups_at(f, 2), 2);
		assert_int_equal(tp_fabric_groups_at(f, 3), 1);
		assert_int_equal(parallel_links(f, "spine02", "core02"), 2);
		tp_fabric_destroy(f);
		f = NULL;
	}
	/* one pod is the two-level tree, degraded cables included */
	tp_gen_fat_tree_t q;
	tp_fabric_t *a = NULL, *b = NULL;
	tp_gen_fat_tree_defaults(&q);
	q.degrade = 0.1;
	q.degrade_seed = 3;
	assert_int_equal(tp_gen_fat_tree(&q, &a), TP_OK);
	q.pods = 1;
	assert_int_equal(tp_gen_fat_tree(&q, &b), TP_OK);
	assert_int_equal(tp_fabric_nlinks(a), tp_fabric_nlinks(b));
	for (size_t i = 0; i < tp_fabric_nlinks(a); i++) {
		const tp_link_t *x = tp_fabric_link(a, i),
				*y = tp_fabric_link(b, i);
		for (int e = 0; e < 2; e++) {
			assert_int_equal(x->node[e], y->node[e]);
			assert_int_equal(x->port[e], y->port[e]);
		}
		assert_int_equal(x->width, y->width);
	}
	tp_fabric_destroy(a);
	tp_fabric_destroy(b);
	a = NULL;
	/* refused: leaves that do not split, cores without pods, too many
	 * spines */
	tp_gen_fat_tree_defaults(&q);
	q.pods = 3;
	assert_int_equal(tp_gen_fat_tree(&q, &a), TP_ERR_RANGE);
	q.pods = 0;
	q.cores = 2;
	assert_int_equal(tp_gen_fat_tree(&q, &a), TP_ERR_RANGE);
	/* and more spines in all than a fabric may have */
	tp_gen_fat_tree_defaults(&q);
	q.pods = 4;
	q.leaves = 8;
	q.spines = 20000;
	assert_int_equal(tp_gen_fat_tree(&q, &a), TP_ERR_RANGE);
	assert_null(a);
}

static void test_param_errors(void **state)
{
	tp_gen_fat_tree_t ft;
	tp_gen_rail_t rl;
	tp_gen_nvl72_t nv;
	tp_fabric_t *f = (tp_fabric_t *)0x1;

	(void)state;
	FT_BAD(leaves, 0);
	FT_BAD(leaves, -3);
	FT_BAD(leaves, 65537);
	FT_BAD(spines, 0);
	FT_BAD(hosts_per_leaf, 0);
	FT_BAD(uplinks_per_spine, -1);
	FT_BAD(nics_per_host, -1);
	FT_BAD(nics_per_host, 65);
	FT_BAD(degrade, -0.1);
	FT_BAD(degrade, 1.5);
	FT_BAD(degrade, NAN);
	FT_BAD(gpus_per_host, -1);
	FT_BAD(gpus_per_host, 65);
	FT_BAD(link_gbps, 0);
	FT_BAD(link_gbps, -400);
	FT_BAD(link_gbps, NAN);
	FT_BAD(link_gbps, 1e9);
	FT_BAD(host_prefix, NULL);
	FT_BAD(host_prefix, "");
	FT_BAD(host_prefix, "gpu node");
	FT_BAD(host_prefix, "gpu[1]");
	/* each count fine, their product too many hosts */
	tp_gen_fat_tree_defaults(&ft);
	ft.leaves = 65536;
	ft.hosts_per_leaf = 65536;
	assert_int_equal(tp_gen_fat_tree(&ft, &f), TP_ERR_RANGE);
	assert_ptr_equal(f, (tp_fabric_t *)0x1);

	RAIL_BAD(sus, 0);
	RAIL_BAD(hosts_per_su, 0);
	RAIL_BAD(rails, 0);
	RAIL_BAD(rails, 33);
	RAIL_BAD(spines_per_rail, 0);
	RAIL_BAD(link_gbps, 0);
	RAIL_BAD(host_prefix, "a,b");

	NVL_BAD(racks, 0);
	NVL_BAD(hosts_per_rack, 0);
	NVL_BAD(leaves_per_rack, 0);
	NVL_BAD(leaves_per_rack, 19); /* more leaves than trays */
	NVL_BAD(spines, 0);
	NVL_BAD(gpus_per_host, 100);

	assert_int_equal(tp_gen_fat_tree(NULL, &f), TP_ERR_INVAL);
	assert_int_equal(tp_gen_rail(&rl, NULL), TP_ERR_INVAL);
	assert_ptr_equal(f, (tp_fabric_t *)0x1);
}

/* The last error the generator logged: it names the options. */
static char gen_err[512];

static void keep_err(tp_log_level_t level, const char *msg, void *arg)
{
	(void)arg;
	if (level == TP_LOG_ERROR)
		snprintf(gen_err, sizeof(gen_err), "%s", msg);
}

#define ASSERT_REFUSED(call, text)                                             \
	do {                                                                   \
		f = (tp_fabric_t *)0x1;                                        \
		gen_err[0] = '\0';                                             \
		tp_log_set(keep_err, NULL);                                    \
		tp_err_t err_ = (call);                                        \
		tp_log_set(NULL, NULL);                                        \
		assert_int_equal(err_, TP_ERR_RANGE);                          \
		assert_ptr_equal(f, (tp_fabric_t *)0x1);                       \
		if (!strstr(gen_err, text))                                    \
			fail_msg("\"%s\" lacks \"%s\"", gen_err, text);        \
	} while (0)

/* A switch needing more ports than a port number holds (65535) is
 * refused before anything is built, naming the options; port 65537
 * would otherwise meet port 1 in the cable index ("already exists"). */
static void test_port_limit(void **state)
{
	tp_gen_fat_tree_t ft;
	tp_gen_rail_t rl;
	tp_gen_nvl72_t nv;
	tp_fabric_t *f;

	(void)state;
	tp_gen_fat_tree_defaults(&ft);
	ft.leaves = 2;
	ft.hosts_per_leaf = 8192;
	ft.nics_per_host = 8;
	ft.spines = 1;
	ft.uplinks_per_spine = 1;
	ASSERT_REFUSED(tp_gen_fat_tree(&ft, &f),
		       "fat tree: a leaf needs 65537 ports, at most 65535: "
		       "fewer --hosts-per-leaf x --nics-per-host (8192 x 8) "
		       "or --spines x --uplinks (1 x 1)");
	tp_gen_fat_tree_defaults(&ft);
	ft.spines = 65409;
	ASSERT_REFUSED(tp_gen_fat_tree(&ft, &f),
		       "a leaf needs 130834 ports, at most 65535: fewer "
		       "--hosts-per-leaf x --nics-per-host (16 x 1) or "
		       "--spines x --uplinks (65409 x 2)");
	tp_gen_fat_tree_defaults(&ft);
	ft.leaves = 65536;
	ft.hosts_per_leaf = 1;
	ft.uplinks_per_spine = 1;
	ASSERT_REFUSED(tp_gen_fat_tree(&ft, &f),
		       "a spine needs 65536 ports, at most 65535: fewer "
		       "--leaves x --uplinks (65536 x 1)");

	tp_gen_rail_defaults(&rl);
	rl.sus = 1;
	rl.hosts_per_su = 65536;
	rl.rails = 1;
	ASSERT_REFUSED(tp_gen_rail(&rl, &f),
		       "rail fabric: a leaf needs 131072 ports");
	tp_gen_rail_defaults(&rl);
	rl.sus = 65536;
	rl.hosts_per_su = 4;
	rl.rails = 1;
	rl.spines_per_rail = 1;
	ASSERT_REFUSED(tp_gen_rail(&rl, &f),
		       "a spine needs 262144 ports (65536 leaves x 4 "
		       "up-links), at most 65535: fewer --sus or "
		       "--hosts-per-su, or more --spines-per-rail");

	tp_gen_nvl72_defaults(&nv);
	nv.racks = 1;
	nv.spines = 65536;
	ASSERT_REFUSED(tp_gen_nvl72(&nv, &f),
		       "NVL72 fabric: a leaf needs 65545 ports (9 hosts, "
		       "65536 spines x 1 up-link), at most 65535: fewer "
		       "--spines");
	tp_gen_nvl72_defaults(&nv);
	nv.racks = 65536;
	nv.hosts_per_rack = 4;
	nv.leaves_per_rack = 1;
	nv.spines = 1;
	ASSERT_REFUSED(tp_gen_nvl72(&nv, &f), "a spine needs 262144 ports");

	/* at the limit: built, written and loaded back */
	tp_gen_fat_tree_defaults(&ft);
	ft.leaves = 2;
	ft.hosts_per_leaf = 8191;
	ft.nics_per_host = 8;
	ft.gpus_per_host = 0;
	ft.spines = 1;
	ft.uplinks_per_spine = 7;
	f = NULL;
	assert_int_equal(tp_gen_fat_tree(&ft, &f), TP_OK);
	assert_int_equal(tp_fabric_switch(f, 0)->nports, 65535);
	assert_int_equal(tp_fabric_nlinks(f), 2 * 8191 * 8 + 2 * 7);
	char *json = NULL, *err = NULL;
	tp_fabric_t *g = NULL;
	assert_int_equal(tp_fabric_to_json(f, &json), TP_OK);
	if (tp_fabric_parse_json("max.json", json, &g, &err))
		fail_msg("%s", err);
	assert_int_equal(tp_fabric_nlinks(g), tp_fabric_nlinks(f));
	tp_fabric_destroy(g);
	tp_free(json);
	tp_fabric_destroy(f);
}

/* Range errors name the option that sets the parameter, and a relation
 * between two names both. */
static void test_param_names(void **state)
{
	tp_gen_fat_tree_t ft;
	tp_gen_rail_t rl;
	tp_gen_nvl72_t nv;
	tp_fabric_t *f;

	(void)state;
	tp_gen_nvl72_defaults(&nv);
	nv.hosts_per_rack = 36;
	nv.leaves_per_rack = 37;
	ASSERT_REFUSED(tp_gen_nvl72(&nv, &f),
		       "NVL72 fabric: --leaves-per-rack 37, at most "
		       "--hosts-per-rack (36)");
	tp_gen_nvl72_defaults(&nv);
	nv.leaves_per_rack = 0;
	ASSERT_REFUSED(tp_gen_nvl72(&nv, &f),
		       "--leaves-per-rack 0 out of range 1..1024");
	tp_gen_fat_tree_defaults(&ft);
	ft.hosts_per_leaf = 0;
	ASSERT_REFUSED(tp_gen_fat_tree(&ft, &f),
		       "fat tree: --hosts-per-leaf 0 out of range");
	tp_gen_fat_tree_defaults(&ft);
	ft.leaves = 65536;
	ft.hosts_per_leaf = 65536;
	ASSERT_REFUSED(tp_gen_fat_tree(&ft, &f),
		       "fat tree: 4294967296 hosts, at most 1048576: fewer "
		       "--leaves or --hosts-per-leaf");
	tp_gen_rail_defaults(&rl);
	rl.spines_per_rail = 0;
	ASSERT_REFUSED(tp_gen_rail(&rl, &f),
		       "rail fabric: --spines-per-rail 0 out of range");
	tp_gen_rail_defaults(&rl);
	rl.host_prefix = "a b";
	ASSERT_REFUSED(tp_gen_rail(&rl, &f), "--prefix \"a b\"");
}

/* ---- topology.conf ---- */

/* Tiny fat tree: 2 leaves x 3 hosts, interleaved, 2 spines x 1 cable. */
static tp_fabric_t *tiny_fat_tree(void)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;

	tp_gen_fat_tree_defaults(&p);
	p.leaves = 2;
	p.hosts_per_leaf = 3;
	p.spines = 2;
	p.uplinks_per_spine = 1;
	p.gpus_per_host = 2;
	p.interleave = true;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	return f;
}

/* Tiny rail fabric: 2 SUs x 2 hosts, 2 rails, 1 spine per rail. */
static tp_fabric_t *tiny_rail(void)
{
	tp_gen_rail_t p;
	tp_fabric_t *f = NULL;

	tp_gen_rail_defaults(&p);
	p.sus = 2;
	p.hosts_per_su = 2;
	p.rails = 2;
	p.spines_per_rail = 1;
	p.gpus_per_host = 2;
	assert_int_equal(tp_gen_rail(&p, &f), TP_OK);
	return f;
}

/* Tiny NVL72-style: 3 racks x 4 trays, one leaf each, 1 spine. */
static tp_fabric_t *tiny_nvl(void)
{
	tp_gen_nvl72_t p;
	tp_fabric_t *f = NULL;

	tp_gen_nvl72_defaults(&p);
	p.racks = 3;
	p.hosts_per_rack = 4;
	p.leaves_per_rack = 1;
	p.spines = 1;
	assert_int_equal(tp_gen_nvl72(&p, &f), TP_OK);
	return f;
}

static void test_topoconf_tree(void **state)
{
	tp_fabric_t *f;
	char *t;

	(void)state;
	f = tiny_fat_tree();
	t = conf(f, false);
	check_golden("gen-fat-tree.conf", t);
	/* leaf descriptions are valid Slurm names: used as switch names */
	assert_non_null(strstr(t, "SwitchName=leaf01 Nodes=node[001,003,005]"));
	assert_non_null(strstr(t, "Switches=leaf[01-02]"));
	tp_free(t);
	tp_fabric_destroy(f);

	f = tiny_rail();
	t = conf(f, false);
	check_golden("gen-rail.conf", t);
	/* an SU spans one leaf per rail: a synthetic name */
	assert_non_null(strstr(t, "SwitchName=g1-1 Nodes=dgx[001-002]"));
	tp_free(t);
	tp_fabric_destroy(f);
}

/* tp_stree_conf is what the writer prints: line i is switch i, with its
 * name, Nodes= or Switches=, and LinkSpeed; parents and children agree. */
static void check_stree_conf(const tp_fabric_t *f)
{
	tp_stree_t t;
	char *text = conf(f, false), *line, *save = NULL;
	size_t i = 0, leaf_hosts = 0, root_below = 0;

	assert_int_equal(tp_stree_conf(f, &t), TP_OK);
	assert_null(t.order);
	assert_int_equal(t.nhosts, tp_fabric_nhosts(f));
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const tp_stree_sw_t *s;
		const char *ls;
		char want[256];

		if (*line == '#')
			continue;
		assert_true(i < t.nsw);
		s = &t.sw[i];
		snprintf(want, sizeof(want), "SwitchName=%s %s=", s->name,
			 s->level ? "Switches" : "Nodes");
		assert_true(strncmp(line, want, strlen(want)) == 0);
		/* the name a placement explanation gives the group */
		tp_fabric_group_name(f, s->group, want, sizeof(want));
		assert_string_equal(want, s->name);
		ls = strstr(line, " LinkSpeed=");
		assert_int_equal(s->link_speed,
				 ls ? strtoul(ls + 11, NULL, 10) : 1);
		assert_int_equal(s->level,
				 tp_fabric_group(f, s->group)->level - 1);
		if (s->level) {
			assert_int_equal(s->nhosts, 0);
			assert_true(s->nchildren > 0);
		} else
			leaf_hosts += s->nhosts;
		for (size_t k = 0; k < s->nchildren; k++) {
			assert_int_equal(t.sw[s->children[k]].parent, i);
			assert_int_equal(t.sw[s->children[k]].level,
					 s->level - 1);
			if (k)
				assert_true(t.sw[s->children[k - 1]].group <
					    t.sw[s->children[k]].group);
		}
		if (s->parent == i)
			root_below += s->nbelow;
		else
			assert_true(s->parent < i);
		i++;
	}
	assert_int_equal(i, t.nsw);
	assert_int_equal(root_below, leaf_hosts);
	assert_int_equal(leaf_hosts, tp_fabric_nhosts(f));
	tp_stree_free(&t);
	tp_free(text);
}

static void test_stree_conf(void **state)
{
	tp_fabric_t *f;
	tp_stree_t t;

	(void)state;
	f = tiny_fat_tree();
	check_stree_conf(f);
	tp_fabric_destroy(f);
	f = tiny_rail();
	check_stree_conf(f);
	tp_fabric_destroy(f);
	f = tiny_nvl();
	check_stree_conf(f);
	tp_fabric_destroy(f);

	/* two leaves described alike: neither name is used */
	f = tiny_fat_tree();
	for (size_t i = 0; i < tp_fabric_nswitches(f); i++)
		if (!strcmp(f->sw[i].desc, "leaf02")) {
			tp_free(f->sw[i].desc);
			assert_non_null(f->sw[i].desc = tp_strdup("leaf01"));
		}
	check_stree_conf(f);
	char name[80];
	size_t seen = 0;
	for (size_t g = 0; g < tp_fabric_ngroups(f); g++) {
		tp_fabric_group_name(f, g, name, sizeof(name));
		if (tp_fabric_group(f, g)->level == 1)
			seen |= strcmp(name, "g1-1") == 0   ? 1u
				: strcmp(name, "g1-2") == 0 ? 2u
							    : 4u;
		else
			assert_string_equal(name, "g2-1");
	}
	assert_int_equal(seen, 3);
	tp_fabric_group_name(f, tp_fabric_ngroups(f), name, sizeof(name));
	assert_string_equal(name, "");
	tp_fabric_destroy(f);

	f = tp_fabric_create();
	assert_int_equal(tp_stree_conf(f, &t), TP_ERR_INVAL);
	tp_fabric_destroy(f);
}

static void test_topoconf_block(void **state)
{
	tp_fabric_t *f;
	char *t;

	(void)state;
	f = tiny_nvl();
	t = conf(f, true);
	check_golden("gen-nvl72-block.conf", t);
	assert_non_null(strstr(t, "BlockName=rack02 Nodes=nvl[005-008]\n"));
	assert_non_null(strstr(t, "BlockSizes=4,8\n"));
	tp_free(t);
	/* the table the slurm-block model reads: the lines, in order */
	{
		tp_block_t *b;
		size_t n, base;
		assert_int_equal(tp_fabric_blocks(f, &b, &n, &base), TP_OK);
		assert_int_equal(n, 3);
		assert_int_equal(base, 4);
		assert_true(b[0].nvdomain && b[2].nvdomain);
		assert_string_equal(tp_fabric_nvdomain(f, b[1].index)->name,
				    "rack02");
		assert_int_equal(b[1].nhosts, 4);
		assert_string_equal(tp_fabric_host(f, b[1].hosts[0])->name,
				    "nvl005");
		tp_free(b);
		assert_int_equal(tp_fabric_blocks(NULL, &b, &n, &base),
				 TP_ERR_INVAL);
	}
	tp_fabric_destroy(f);

	/* no multi-node domain: leaf groups are the blocks */
	f = tiny_fat_tree();
	t = conf(f, true);
	check_golden("gen-fat-tree-block.conf", t);
	assert_non_null(
	    strstr(t, "BlockName=leaf02 Nodes=node[002,004,006]\n"));
	assert_non_null(strstr(t, "BlockSizes=3,6\n"));
	tp_free(t);
	{
		tp_block_t *b;
		size_t n, base;
		assert_int_equal(tp_fabric_blocks(f, &b, &n, &base), TP_OK);
		assert_int_equal(base, 3);
		assert_false(b[0].nvdomain);
		assert_int_equal(tp_fabric_group(f, b[0].index)->level, 1);
		tp_free(b);
	}
	tp_fabric_destroy(f);
}

/* Hosts without IB links or outside every block are listed, and a
 * smaller block sets the BlockSizes base. */
static void test_topoconf_orphans(void **state)
{
	tp_fabric_t *f = tiny_nvl();
	uint32_t h;
	char *t;

	(void)state;
	assert_int_equal(tp__fabric_host_get(f, "login01", true, &h), TP_OK);
	assert_int_equal(tp__fabric_host_get(f, "extra01", true, &h), TP_OK);
	assert_int_equal(tp__fabric_domain_add(f, "rack99", "extra01"), TP_OK);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	t = conf(f, false);
	assert_non_null(strstr(t, "# 2 hosts in no switch group (no IB link): "
				  "extra01,login01\n"));
	tp_free(t);
	t = conf(f, true);
	assert_non_null(strstr(t, "BlockName=rack99 Nodes=extra01\n"));
	assert_non_null(strstr(t, "BlockSizes=1,2,4\n"));
	assert_non_null(strstr(t, "# 1 host in no multi-node NVLink domain: "
				  "login01\n"));
	/* the IB-less block sorts last */
	assert_true(strstr(t, "rack99") > strstr(t, "rack03"));
	tp_free(t);
	tp_fabric_destroy(f);

	f = tp_fabric_create();
	assert_int_equal(tp_fabric_topology_conf(f, false, &t), TP_ERR_INVAL);
	assert_non_null(strstr(tp_fabric_error(f), "not finalized"));
	tp_fabric_destroy(f);
}

/* A domain name Slurm refuses (over 64 characters) gets a made-up
 * BlockName nvl-<n>; one a real domain already has is not used again. */
static void test_topoconf_block_made_up_names(void **state)
{
	tp_fabric_t *f = tiny_nvl();
	char longname[71], *t;
	uint32_t h;

	(void)state;
	memset(longname, 'a', 70);
	longname[70] = '\0';
	for (int i = 1; i <= 9; i++) {
		char host[16];
		snprintf(host, sizeof(host), "x%d", i);
		assert_int_equal(tp__fabric_host_get(f, host, true, &h), TP_OK);
	}
	assert_int_equal(tp__fabric_domain_add(f, longname, "x1"), TP_OK);
	assert_int_equal(tp__fabric_domain_add(f, longname, "x2"), TP_OK);
	for (int i = 1; i <= 7; i++) {
		char dom[24], host[16];
		snprintf(dom, sizeof(dom), "nvl-%d", i);
		snprintf(host, sizeof(host), "x%d", i + 2);
		assert_int_equal(tp__fabric_domain_add(f, dom, host), TP_OK);
	}
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	t = conf(f, true);
	/* the long name sorts first: ord 1, whose nvl-1 a real domain has */
	assert_non_null(strstr(t, "# nvl-1-2: NVLink domain \"aaaa"));
	assert_non_null(strstr(t, "BlockName=nvl-1-2 Nodes=x[1-2]\n"));
	assert_non_null(strstr(t, "BlockName=nvl-1 Nodes=x3\n"));
	/* no BlockName twice */
	for (const char *p = t; (p = strstr(p, "BlockName=")); p++) {
		size_t n = strcspn(p, " ") + 1;
		for (const char *q = p + n; (q = strstr(q, "BlockName=")); q++)
			if (!strncmp(p, q, n))
				fail_msg("%.*s twice", (int)n, p);
	}
	tp_free(t);
	tp_fabric_destroy(f);
}

/* ---- ibsim net ---- */

static void test_ibsim_net(void **state)
{
	tp_fabric_t *f = tiny_fat_tree(), *g;
	char *net = NULL, *a, *b, *ta, *tb;

	(void)state;
	assert_int_equal(tp_fabric_ibsim_net(f, -1, &net), TP_OK);
	check_golden("gen-fat-tree.net", net);
	/* ibsim 0.10 knows no NDR: 4x NDR goes out as 8x HDR (400 Gb/s) */
	assert_non_null(strstr(net, "lid 0 8xHDR\n"));
	assert_null(strstr(net, "NDR"));
	assert_non_null(strstr(net, "switchguid=0x0002c90300000001\n"
				    "Switch\t5 \"S-0002c90300000001\""));
	assert_non_null(strstr(net, "caguid=0x0002c90400000006\n"));

	/* it reads back as the same fabric */
	g = tp_fabric_create();
	assert_int_equal(
	    tp_fabric_parse_ibnetdiscover(g, "gen.net", net, strlen(net)),
	    TP_OK);
	assert_int_equal(tp_fabric_finalize(g, NULL), TP_OK);
	assert_int_equal(tp_fabric_nswitches(g), tp_fabric_nswitches(f));
	assert_int_equal(tp_fabric_ncas(g), tp_fabric_ncas(f));
	assert_int_equal(tp_fabric_nlinks(g), tp_fabric_nlinks(f));
	assert_int_equal(tp_fabric_nhosts(g), tp_fabric_nhosts(f));
	assert_int_equal(tp_fabric_nwarnings(g), 0);
	for (size_t i = 0; i < tp_fabric_nswitches(f); i++) {
		uint64_t guid = tp_fabric_switch(f, i)->guid;
		assert_int_not_equal(
		    tp__fabric_find_node(g, TP_NODE_SWITCH, 0, guid),
		    TP_MAP_NONE);
	}
	/* every link keeps its 400 Gb/s (written as 8x HDR for ibsim) */
	for (size_t i = 0; i < tp_fabric_nlinks(g); i++)
		assert_true(fabs(tp_fabric_link(g, i)->gbps - 400) < 1e-6);
	ta = conf(f, false);
	tb = conf(g, false);
	assert_string_equal(ta, tb);
	a = strip_linkspeed(ta);
	b = strip_linkspeed(tb);
	assert_string_equal(a, b);
	tp_free(a);
	tp_free(b);
	tp_free(ta);
	tp_free(tb);
	tp_free(net);
	tp_fabric_destroy(g);
	tp_fabric_destroy(f);
}

static void test_ibsim_net_subnets(void **state)
{
	tp_fabric_t *f = tiny_rail();
	char *net = (char *)0x1;

	(void)state;
	/* one file per rail: which one must be said */
	assert_int_equal(tp_fabric_ibsim_net(f, -1, &net), TP_ERR_INVAL);
	assert_non_null(strstr(tp_fabric_error(f), "2 subnets"));
	assert_int_equal(tp_fabric_ibsim_net(f, 2, &net), TP_ERR_RANGE);
	assert_ptr_equal(net, (char *)0x1);
	assert_int_equal(tp_fabric_ibsim_net(f, 1, &net), TP_OK);
	/* rail 2 only: its 2 leaves, 1 spine and 4 HCAs (mlx5_1) */
	assert_non_null(strstr(net, "3 switches, 4 CAs, 8 links"));
	assert_non_null(strstr(net, "\"dgx001 mlx5_1\""));
	assert_null(strstr(net, "mlx5_0"));
	tp_free(net);
	tp_fabric_destroy(f);
}

/* A switch with more ports than IB can number is refused. */
static void test_ibsim_net_limits(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;
	char *net = (char *)0x1;

	(void)state;
	tp_gen_fat_tree_defaults(&p);
	p.leaves = 300;
	p.hosts_per_leaf = 1;
	p.spines = 1;
	p.uplinks_per_spine = 1;
	p.gpus_per_host = 0;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_int_equal(tp_fabric_ibsim_net(f, 0, &net), TP_ERR_RANGE);
	assert_non_null(
	    strstr(tp_fabric_error(f), "\"spine01\" has 300 ports"));
	assert_ptr_equal(net, (char *)0x1);
	tp_fabric_destroy(f);

	/* above ibsim's default limits the header says how to start it */
	p.leaves = 100;
	p.hosts_per_leaf = 30;
	p.spines = 2;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_int_equal(tp_fabric_ibsim_net(f, 0, &net), TP_OK);
	assert_non_null(strstr(net, "# needs: ibsim -N 3102 -S 102 -P "));
	tp_free(net);
	tp_fabric_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fat_tree_defaults),
	    cmocka_unit_test(test_fat_tree_interleave),
	    cmocka_unit_test(test_fat_tree_nics),
	    cmocka_unit_test(test_fat_tree_degrade_keeps_leaf),
	    cmocka_unit_test(test_fat_tree_degrade_connected),
	    cmocka_unit_test(test_fat_tree_pods),
	    cmocka_unit_test(test_rail_defaults),
	    cmocka_unit_test(test_rail_uneven),
	    cmocka_unit_test(test_nvl72_defaults),
	    cmocka_unit_test(test_deterministic),
	    cmocka_unit_test(test_param_errors),
	    cmocka_unit_test(test_port_limit),
	    cmocka_unit_test(test_param_names),
	    cmocka_unit_test(test_topoconf_tree),
	    cmocka_unit_test(test_topoconf_block),
	    cmocka_unit_test(test_stree_conf),
	    cmocka_unit_test(test_topoconf_orphans),
	    cmocka_unit_test(test_topoconf_block_made_up_names),
	    cmocka_unit_test(test_ibsim_net),
	    cmocka_unit_test(test_ibsim_net_subnets),
	    cmocka_unit_test(test_ibsim_net_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
