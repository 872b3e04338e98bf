/*
 * Generated fabrics for the unit tests and fuzz targets: the one place
 * their small fabrics are built (header-only; needs libtptopology).
 * tp_test_fat_tree_try never asserts (the fuzz targets use it); the
 * others fail the CMocka test when the generator refuses.
 */
#ifndef TP_TEST_FABRIC_H
#define TP_TEST_FABRIC_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "tp_topology.h"

/* A fat tree of leaves x hpl hosts (node001, ... in leaf order, or
 * interleaved over the leaves), `spines` spines with `uplinks` cables from
 * each leaf to each (0: as many as keep each leaf 2:1 oversubscribed),
 * gpus GPUs per host, nics 400 Gb/s NICs per host (0: one per GPU, each
 * on its own rail), a share `degrade` of the cables (host and up-link)
 * down or at half width, chosen by `seed` (the generator's --degrade). NULL
 * when the generator fails. Caller frees with tp_fabric_destroy(). */
static inline tp_fabric_t *tp_test_fat_tree_gen(int leaves, int spines, int hpl,
						int uplinks, int gpus,
						bool interleave, int nics,
						double degrade, uint64_t seed)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;

	tp_gen_fat_tree_defaults(&p);
	p.leaves = leaves;
	p.spines = spines;
	p.hosts_per_leaf = hpl;
	p.uplinks_per_spine = uplinks;
	p.gpus_per_host = gpus;
	p.interleave = interleave;
	p.nics_per_host = nics;
	p.degrade = degrade;
	p.degrade_seed = seed;
	return tp_gen_fat_tree(&p, &f) == TP_OK ? f : NULL;
}

/* tp_test_fat_tree_gen with every cable healthy. */
static inline tp_fabric_t *tp_test_fat_tree_try(int leaves, int spines, int hpl,
						int uplinks, int gpus,
						bool interleave, int nics)
{
	return tp_test_fat_tree_gen(leaves, spines, hpl, uplinks, gpus,
				    interleave, nics, 0, 0);
}

/* One NIC per GPU (8 GPUs a host) and degraded cables, as the
 * simulator's fabrics; must succeed. */
static inline tp_fabric_t *tp_test_fat_tree_deg(int leaves, int spines, int hpl,
						int uplinks, bool interleave,
						double degrade, uint64_t seed)
{
	tp_fabric_t *f = tp_test_fat_tree_gen(leaves, spines, hpl, uplinks, 8,
					      interleave, 0, degrade, seed);

	assert_non_null(f);
	return f;
}

/* f's JSON (tp_fabric_to_json), parsed: the helpers below edit a fabric
 * no generator makes through it. Caller frees it, or hands it to
 * tp_test_fabric_of. */
static inline cJSON *tp_test_json_of(const tp_fabric_t *f)
{
	char *js = NULL;
	cJSON *root;

	assert_int_equal(tp_fabric_to_json(f, &js), TP_OK);
	assert_non_null(root = cJSON_Parse(js));
	tp_free(js);
	return root;
}

/* The fabric root describes (f's JSON, edited): fails the test when it
 * does not load. Deletes root; caller frees with tp_fabric_destroy(). */
static inline tp_fabric_t *tp_test_fabric_of(cJSON *root, const char *name)
{
	char *out, *why = NULL;
	tp_fabric_t *g = NULL;

	assert_non_null(out = cJSON_PrintUnformatted(root));
	cJSON_Delete(root);
	if (tp_fabric_parse_json(name, out, &g, &why) != TP_OK)
		fail_msg("%s fabric: %s", name, why ? why : "?");
	cJSON_free(out);
	return g;
}

/* f again with host h's CA x cabled at half width (4 lanes to 2): a
 * fabric no generator makes, through its JSON (the CA's index is its
 * position in "cas", each link [kind, node, port, kind, node, port,
 * width, lane Gb/s, active]). Caller frees with tp_fabric_destroy(). */
static inline tp_fabric_t *tp_test_half_cable(const tp_fabric_t *f, size_t h,
					      size_t x)
{
	double ca = (double)tp_fabric_host(f, h)->cas[x];
	cJSON *root = tp_test_json_of(f), *l;
	int n = 0;

	cJSON_ArrayForEach(l, cJSON_GetObjectItem(root, "links"))
	{
		for (int e = 0; e < 2; e++) {
			cJSON *k = cJSON_GetArrayItem(l, 3 * e);
			cJSON *i = cJSON_GetArrayItem(l, 3 * e + 1);
			cJSON *w = cJSON_GetArrayItem(l, 6);
			if (cJSON_IsString(k) &&
			    !strcmp(k->valuestring, "ca") &&
			    cJSON_IsNumber(i) && i->valuedouble == ca) {
				cJSON_SetNumberValue(w, w->valuedouble / 2);
				n++;
			}
		}
	}
	assert_int_equal(n, 1);
	return tp_test_fabric_of(root, "half-cable");
}

/* f again with host i keeping only its first keep[i % nkeep] GPUs (their
 * NICs stay): hosts with different GPU counts, as mixed 4- and 8-GPU
 * nodes are. Caller frees with tp_fabric_destroy(). */
static inline tp_fabric_t *tp_test_cut_gpus(const tp_fabric_t *f,
					    const int *keep, size_t nkeep)
{
	cJSON *root = tp_test_json_of(f), *h;
	size_t i = 0;

	cJSON_ArrayForEach(h, cJSON_GetObjectItem(root, "hosts"))
	{
		cJSON *g = cJSON_GetObjectItem(h, "gpus");
		int k = keep[i++ % nkeep];
		assert_non_null(g);
		while (cJSON_GetArraySize(g) > k)
			cJSON_DeleteItemFromArray(g, cJSON_GetArraySize(g) - 1);
	}
	return tp_test_fabric_of(root, "cut-gpus");
}

/* f again with host h's CAs cabled to nothing (their links removed) and,
 * drop_cas, the CAs gone too: a GPU host with no NIC. Caller frees with
 * tp_fabric_destroy(). */
static inline tp_fabric_t *tp_test_uncabled(const tp_fabric_t *f, size_t h,
					    bool drop_cas)
{
	const tp_host_t *hp = tp_fabric_host(f, h);
	size_t nca = tp_fabric_ncas(f);
	cJSON *root, *links, *cas;
	int *to;

	assert_true(hp->ncas > 0);
	/* new index of each CA; -1 for the host's own */
	assert_non_null(to = calloc(nca + 1, sizeof(int)));
	for (size_t x = 0; x < hp->ncas; x++)
		to[hp->cas[x]] = -1;
	for (int c = 0, n = 0; c < (int)nca; c++)
		if (to[c] == 0)
			to[c] = drop_cas ? n++ : c;
	root = tp_test_json_of(f);
	assert_non_null(links = cJSON_GetObjectItem(root, "links"));
	for (int l = cJSON_GetArraySize(links) - 1; l >= 0; l--) {
		cJSON *lk = cJSON_GetArrayItem(links, l);
		bool mine = false;
		for (int e = 0; e < 2; e++) {
			cJSON *k = cJSON_GetArrayItem(lk, 3 * e);
			cJSON *i = cJSON_GetArrayItem(lk, 3 * e + 1);
			if (!cJSON_IsString(k) || strcmp(k->valuestring, "ca"))
				continue;
			int c = (int)i->valuedouble;
			assert_true(c >= 0 && (size_t)c < nca);
			if (to[c] < 0)
				mine = true;
			else
				cJSON_SetNumberValue(i, to[c]);
		}
		if (mine)
			cJSON_DeleteItemFromArray(links, l);
	}
	assert_non_null(cas = cJSON_GetObjectItem(root, "cas"));
	for (int c = (int)nca - 1; drop_cas && c >= 0; c--)
		if (to[c] < 0)
			cJSON_DeleteItemFromArray(cas, c);
	free(to);
	return tp_test_fabric_of(root, drop_cas ? "no-nic" : "uncabled");
}

/* tp_test_fat_tree_try with one NIC per host, that must succeed. */
static inline tp_fabric_t *tp_test_fat_tree(int leaves, int spines, int hpl,
					    int uplinks, int gpus,
					    bool interleave)
{
	tp_fabric_t *f = tp_test_fat_tree_try(leaves, spines, hpl, uplinks,
					      gpus, interleave, 1);

	assert_non_null(f);
	return f;
}

/* The runtime tests' fat tree: 2 spines, one cable from each leaf to
 * each, names interleaved (Slurm's order is not the ring's). */
static inline tp_fabric_t *tp_test_fat_tree_il(int leaves, int hpl, int gpus)
{
	return tp_test_fat_tree(leaves, 2, hpl, 1, gpus, true);
}

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

/* The index of host name in f, which must have it. */
static inline uint32_t tp_test_host(const tp_fabric_t *f, const char *name)
{
	uint32_t h = tp_fabric_host_find(f, name);

	assert_int_not_equal(h, TP_ID_NONE);
	return h;
}

/* Cables between the switches described a and b (either way round): how
 * many; *first_p (may be NULL) the first one's link index, UINT32_MAX
 * when none. */
static inline size_t tp_test_cables_between(const tp_fabric_t *f, const char *a,
					    const char *b, uint32_t *first_p)
{
	size_t n = 0;

	if (first_p)
		*first_p = UINT32_MAX;
	for (size_t i = 0; i < tp_fabric_nlinks(f); i++) {
		const tp_link_t *l = tp_fabric_link(f, i);
		if (l->kind[0] != TP_NODE_SWITCH ||
		    l->kind[1] != TP_NODE_SWITCH)
			continue;
		const char *x = tp_fabric_switch(f, l->node[0])->desc;
		const char *y = tp_fabric_switch(f, l->node[1])->desc;
		if ((!strcmp(x, a) && !strcmp(y, b)) ||
		    (!strcmp(x, b) && !strcmp(y, a))) {
			if (!n++ && first_p)
				*first_p = (uint32_t)i;
		}
	}
	return n;
}

/* nsub subnets (ibnetdiscover text, one switch each) and nhosts hosts,
 * host1 ..., each with cas CAs on every subnet (subnet s's named
 * mlx5_{s*cas} ..), except the last `lone` hosts, which are on subnet 0
 * only; no GPUs. Every subnet is a rail. Finalized; caller frees with
 * tp_fabric_destroy(). */
static inline tp_fabric_t *tp_test_subnets(int nsub, int nhosts, int cas,
					   int lone)
{
	tp_fabric_t *f = tp_fabric_create();

	assert_non_null(f);
	for (int s = 0; s < nsub; s++) {
		tp_strbuf_t sb = {0};
		int port = 0, on = s ? nhosts - lone : nhosts;
		tp_strbuf_printf(&sb,
				 "Switch\t36 \"S-0002c903000000%02x\"\t\t"
				 "# \"sw%d\" enhanced port 0 lid 1 lmc 0\n",
				 s, s);
		for (int h = 1; h <= on; h++)
			for (int k = 0; k < cas; k++, port++)
				tp_strbuf_printf(
				    &sb,
				    "[%d]\t\"H-0002c904%02x%02x%02x00\"[1]"
				    "(0002c904%02x%02x%02x00)\t\t"
				    "# \"host%d mlx5_%d\" lid %d 4xHDR\n",
				    port + 1, s, h, k, s, h, k, h, s * cas + k,
				    11 + port);
		port = 0;
		for (int h = 1; h <= on; h++)
			for (int k = 0; k < cas; k++, port++)
				tp_strbuf_printf(
				    &sb,
				    "\nCa\t1 \"H-0002c904%02x%02x%02x00\"\t\t"
				    "# \"host%d mlx5_%d\"\n"
				    "[1](0002c904%02x%02x%02x00)\t"
				    "\"S-0002c903000000%02x\"[%d]\t\t"
				    "# lid %d lmc 0 \"sw%d\" lid 1 4xHDR\n",
				    s, h, k, h, s * cas + k, s, h, k, s,
				    port + 1, 11 + port, s);
		assert_false(sb.failed);
		assert_int_equal(tp_fabric_parse_ibnetdiscover(f, "subnet.txt",
							       sb.buf, sb.len),
				 TP_OK);
		tp_free(sb.buf);
	}
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nsubnets(f), nsub);
	return f;
}

#endif
