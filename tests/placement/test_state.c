/*
 * Allocation state, state JSON, request parsing, spans and ring order.
 */
#include "tp_test.h"
#include "tp_test_fabric.h"

#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "placement_int.h"
#include "topology_int.h"

/* 4 leaves x 4 hosts x 8 GPUs, 2 spines: node001-004 on leaf01, ... */
static tp_fabric_t *fat_tree(bool interleave)
{
	return tp_test_fat_tree(4, 2, 4, 1, 8, interleave);
}

/* ---- state ---- */

static void test_state_basics(void **unused)
{
	tp_fabric_t *f = fat_tree(false);
	tp_state_t *s = tp_state_create(f), *c;
	uint32_t hs[3] = {0, 1, 1};
	int gs[3] = {8, 2, 3};

	(void)unused;
	assert_non_null(s);
	assert_ptr_equal(tp_state_fabric(s), f);
	assert_int_equal(tp_state_free_gpus(s, 0), 8);
	assert_true(tp_state_host_up(s, 0));
	assert_true(tp_state_host_idle(s, 0));
	assert_int_equal(tp_state_busy_gpus(s), 0);
	/* out-of-range hosts read as unusable, never crash */
	assert_int_equal(tp_state_free_gpus(s, 1000), 0);
	assert_false(tp_state_host_up(s, 1000));

	/* the same host twice in one call: the sum counts */
	assert_int_equal(tp_state_alloc(s, 7, hs, gs, 3), TP_OK);
	assert_int_equal(tp_state_free_gpus(s, 0), 0);
	assert_int_equal(tp_state_free_gpus(s, 1), 3);
	assert_int_equal(tp_state_busy_gpus(s), 13);
	assert_false(tp_state_host_idle(s, 1));
	assert_int_equal(tp_state_host_job(s, 1), 7);
	assert_int_equal(tp_state_host_job(s, 2), 0);

	/* a second job on host 1 with more GPUs becomes its "main" job */
	gs[0] = 3;
	assert_int_equal(tp_state_alloc(s, 9, &hs[1], gs, 1), TP_OK);
	assert_int_equal(tp_state_free_gpus(s, 1), 0);
	assert_int_equal(tp_state_host_job(s, 1), 7); /* 5 vs 3 */

	/* refused calls change nothing */
	gs[0] = 1;
	assert_int_equal(tp_state_alloc(s, 11, &hs[1], gs, 1), TP_ERR_RANGE);
	assert_int_equal(tp_state_alloc(s, 0, &hs[1], gs, 1), TP_ERR_INVAL);
	{
		uint32_t two[2] = {2, 2};
		int g2[2] = {5, 4}; /* 9 > 8 on one host */
		assert_int_equal(tp_state_alloc(s, 12, two, g2, 2),
				 TP_ERR_RANGE);
		assert_int_equal(tp_state_free_gpus(s, 2), 8);
	}
	assert_int_equal(tp_state_busy_gpus(s), 16);

	/* down hosts refuse new jobs but keep old ones */
	assert_int_equal(tp_state_set_host_up(s, 3, false), TP_OK);
	assert_int_equal(tp_state_set_host_up(s, 999, false), TP_ERR_RANGE);
	hs[0] = 3;
	assert_int_equal(tp_state_alloc(s, 13, hs, gs, 1), TP_ERR_RANGE);

	/* links */
	assert_true(tp_state_link_health(s, 0) == 1.0);
	assert_int_equal(tp_state_set_link(s, 0, 0.5, 100), TP_OK);
	assert_true(tp_state_link_health(s, 0) == 0.5);
	assert_true(tp_state_link_background(s, 0) == 100);
	assert_int_equal(tp_state_set_link(s, 0, 1.5, 0), TP_ERR_RANGE);
	assert_int_equal(tp_state_set_link(s, 0, NAN, 0), TP_ERR_RANGE);
	assert_int_equal(tp_state_set_link(s, 0, 1, -1), TP_ERR_RANGE);
	assert_int_equal(tp_state_set_link(s, 1u << 30, 1, 0), TP_ERR_RANGE);

	/* a clone is independent */
	c = tp_state_clone(s);
	assert_non_null(c);
	assert_int_equal(tp_state_release(c, 7), TP_OK);
	assert_int_equal(tp_state_free_gpus(c, 0), 8);
	assert_int_equal(tp_state_free_gpus(s, 0), 0);
	assert_int_equal(tp_state_busy_gpus(c), 3);
	assert_int_equal(tp_state_host_job(c, 1), 9);
	assert_false(tp_state_host_up(c, 3));
	assert_true(tp_state_link_health(c, 0) == 0.5);

	assert_int_equal(tp_state_release(s, 7), TP_OK);
	assert_int_equal(tp_state_release(s, 7), TP_ERR_NOTFOUND);
	assert_int_equal(tp_state_release(s, 9), TP_OK);
	assert_int_equal(tp_state_busy_gpus(s), 0);
	assert_true(tp_state_host_idle(s, 1));
	assert_int_equal(tp_state_free_gpus(s, 1), 8);

	tp_state_destroy(c);
	tp_state_destroy(s);
	tp_state_destroy(NULL);
	tp_fabric_destroy(f);
}

/* ---- JSON ---- */

static void test_state_json_roundtrip(void **unused)
{
	tp_fabric_t *f = fat_tree(false);
	tp_state_t *s = tp_state_create(f), *t = NULL;
	uint32_t hs[2] = {tp_test_host(f, "node002"),
			  tp_test_host(f, "node005")};
	int gs[2] = {8, 4};
	char *a = NULL, *b = NULL, *err = NULL, *path;

	(void)unused;
	/* jobs written by id, whatever order they came in */
	assert_int_equal(tp_state_alloc(s, 20, hs, gs, 2), TP_OK);
	assert_int_equal(tp_state_alloc(s, 3, &hs[1], gs + 1, 1), TP_OK);
	assert_int_equal(
	    tp_state_set_host_up(s, tp_test_host(f, "node016"), false), TP_OK);
	assert_int_equal(tp_state_set_link(s, 2, 0.25, 50), TP_OK);
	assert_int_equal(tp_state_to_json(s, &a), TP_OK);
	char dig[TP_LINKS_DIGEST_LEN], want[512];
	tp_fabric_links_digest_hex(f, dig);
	assert_int_equal(strlen(dig), 16);
	snprintf(want, sizeof(want), "%s%s%s",
		 "{\"format\":\"topoplace-state/1\",\"links_digest\":\"", dig,
		 "\",\"down\":[\"node016\"],"
		 "\"jobs\":[{\"id\":3,\"hosts\":{\"node005\":4}},"
		 "{\"id\":20,\"hosts\":{\"node002\":8,\"node005\":4}}],"
		 "\"links\":[{\"link\":2,\"health\":0.25,"
		 "\"background_gbps\":50}]}");
	assert_string_equal(a, want);
	/* written for another fabric: refused, naming the key */
	char *other = strdup(a);
	assert_non_null(other);
	memcpy(strstr(other, dig), "0123456789abcdef", 16);
	path = tp_test_write_tmp(other);
	free(other);
	assert_int_equal(tp_state_load_json(f, path, &t, &err), TP_ERR_FORMAT);
	unlink(path);
	assert_non_null(
	    strstr(err, "links_digest: written for another fabric"));
	tp_free(err);
	err = NULL;
	/* the same links in another order are another fabric's numbers */
	tp_fabric_t *g = fat_tree(true);
	char gd[TP_LINKS_DIGEST_LEN];
	tp_fabric_links_digest_hex(g, gd);
	assert_string_not_equal(gd, dig);
	tp_fabric_destroy(g);
	path = tp_test_write_tmp(a);
	assert_int_equal(tp_state_load_json(f, path, &t, &err), TP_OK);
	unlink(path);
	assert_null(err);
	assert_int_equal(tp_state_to_json(t, &b), TP_OK);
	assert_string_equal(a, b);
	assert_int_equal(tp_state_free_gpus(t, hs[1]), 0);
	assert_false(tp_state_host_up(t, tp_test_host(f, "node016")));
	tp_free(a);
	tp_free(b);
	tp_state_destroy(t);
	t = NULL;

	/* the two directions of a link apart: read back as given, the
	 * busier one as the link's background */
	path = tp_test_write_tmp("{\"format\":\"topoplace-state/1\",\"links\":["
				 "{\"link\":3,\"background_gbps\":[100,20]}]}");
	assert_int_equal(tp_state_load_json(f, path, &t, &err), TP_OK);
	unlink(path);
	assert_true(tp_state_link_background(t, 3) == 100);
	assert_int_equal(tp_state_to_json(t, &a), TP_OK);
	assert_non_null(strstr(a, "{\"link\":3,\"health\":1,"
				  "\"background_gbps\":[100,20]}"));
	tp_free(a);
	tp_state_destroy(t);
	t = NULL;

	/* more traffic than a link carries (fair shares on a full link)
	 * is written as the full link, which loads back */
	double cap = tp_fabric_link(f, 2)->gbps;
	assert_int_equal(tp_state_set_link(s, 2, 0.25, 3 * cap), TP_OK);
	assert_int_equal(tp_state_to_json(s, &a), TP_OK);
	path = tp_test_write_tmp(a);
	assert_int_equal(tp_state_load_json(f, path, &t, &err), TP_OK);
	unlink(path);
	assert_true(tp_state_link_background(t, 2) == cap);
	tp_free(a);
	/* a health too small to price finitely is a dead link */
	assert_int_equal(tp_state_set_link(s, 2, 1e-310, 0), TP_OK);
	assert_true(tp_state_link_health(s, 2) == 0);
	tp_state_destroy(s);
	tp_state_destroy(t);
	tp_fabric_destroy(f);
}

/* Host h's cables (links to its CAs), in link order; returns how many. */
static size_t host_cables(const tp_fabric_t *f, uint32_t h, uint32_t *out)
{
	size_t n = 0;

	for (size_t l = 0; l < tp_fabric_nlinks(f); l++) {
		const tp_link_t *k = tp_fabric_link(f, l);
		for (int e = 0; e < 2; e++)
			if (k->kind[e] == TP_NODE_CA &&
			    tp_fabric_ca(f, k->node[e])->host == h)
				out[n++] = (uint32_t)l;
	}
	return n;
}

static size_t count_weak(const tp_state_t *s, size_t nh)
{
	size_t n = 0;

	for (uint32_t h = 0; h < nh; h++)
		n += tp__state_weak(s, h);
	return n;
}

/* The per-host cable table a decision reads instead of every link: weak
 * (a ring through it runs slower than through the best-cabled host) and
 * cut off (no live cable),
 * kept current by tp_state_set_link and the JSON loader, and cloned. */
static void test_state_cables(void **unused)
{
	tp_fabric_t *f = NULL;
	tp_state_t *s, *c, *t = NULL;
	uint32_t a[4], b[4], h0 = 0, h1 = 5;
	size_t nh;
	char json[160], *err = NULL, *path;

	(void)unused;
	f = tp_test_fat_tree_try(2, 2, 4, 1, 8, false, 2);
	assert_non_null(f);
	nh = tp_fabric_nhosts(f);
	assert_int_equal(host_cables(f, h0, a), 2);
	assert_int_equal(host_cables(f, h1, b), 2);
	s = tp_state_create(f);
	assert_non_null(s);
	assert_int_equal(count_weak(s, nh), 0);
	assert_false(tp__state_cut_off(s, h0));

	/* one cable at half rate: weak, still on the fabric; the public
	 * accessor says the same, with the ring rate (2 cables x the slower
	 * one's Gb/s) and the cable count */
	double ring0 = 0, ring = 0;
	bool weak = true;
	assert_int_equal(tp_state_host_cables(s, h0, &ring0, &weak), 2);
	assert_false(weak);
	assert_int_equal(tp_state_set_link(s, a[0], 0.5, 0), TP_OK);
	assert_true(tp__state_weak(s, h0));
	assert_int_equal(tp_state_host_cables(s, h0, &ring, &weak), 2);
	assert_true(weak);
	assert_true(fabs(ring - ring0 / 2) < 1e-9 * ring0);
	/* priced as NCCL's channels share the cables: their sum, 3/4 of
	 * the best host's, still weak; a clone keeps the rule; and back */
	tp_state_set_nics_by_rate(s, true);
	assert_int_equal(tp_state_host_cables(s, h0, &ring, &weak), 2);
	assert_true(weak);
	assert_true(fabs(ring - ring0 * 3 / 4) < 1e-9 * ring0);
	c = tp_state_clone(s);
	assert_non_null(c);
	assert_int_equal(tp_state_set_link(c, a[0], 0.25, 0), TP_OK);
	assert_int_equal(tp_state_host_cables(c, h0, &ring, &weak), 2);
	assert_true(fabs(ring - ring0 * 5 / 8) < 1e-9 * ring0);
	tp_state_destroy(c);
	tp_state_set_nics_by_rate(s, false);
	tp_state_set_nics_by_rate(NULL, true);
	assert_int_equal(tp_state_host_cables(s, h0, &ring, &weak), 2);
	assert_true(fabs(ring - ring0 / 2) < 1e-9 * ring0);
	assert_int_equal(tp_state_host_cables(s, h0, NULL, NULL), 2);
	assert_int_equal(tp_state_host_cables(s, (uint32_t)nh, &ring, &weak),
			 0);
	assert_int_equal(tp_state_host_cables(NULL, h0, &ring, &weak), 0);
	assert_int_equal(count_weak(s, nh), 1);
	assert_int_equal(tp_state_weak_hosts(s), 1);
	assert_int_equal(tp_state_weak_hosts(NULL), 0);
	assert_false(tp__state_cut_off(s, h0));
	/* background traffic is no cable fault */
	assert_int_equal(tp_state_set_link(s, b[0], 1, 300), TP_OK);
	assert_false(tp__state_weak(s, h1));
	/* both dead: cut off; a clone reads the same */
	assert_int_equal(tp_state_set_link(s, a[1], 0, 0), TP_OK);
	assert_int_equal(tp_state_set_link(s, a[0], 0, 0), TP_OK);
	assert_true(tp__state_cut_off(s, h0));
	assert_int_equal(tp_state_host_cables(s, h0, &ring, &weak), 0);
	assert_true(weak && ring == 0);
	c = tp_state_clone(s);
	assert_non_null(c);
	assert_true(tp__state_cut_off(c, h0));
	assert_true(tp__state_weak(c, h0));
	assert_int_equal(count_weak(c, nh), 1);
	/* mended: the clone is its own copy */
	assert_int_equal(tp_state_set_link(s, a[0], 1, 0), TP_OK);
	assert_int_equal(tp_state_set_link(s, a[1], 1, 0), TP_OK);
	assert_int_equal(count_weak(s, nh), 0);
	assert_false(tp__state_cut_off(s, h0));
	assert_true(tp__state_cut_off(c, h0));
	tp_state_destroy(c);

	/* every host has a cable at half rate: the best-cabled host sets
	 * the bar, so none is weak; a ring splits its bytes evenly over the
	 * cables, so the slowest sets the pace: halving the other one too
	 * changes nothing, losing it does */
	for (uint32_t h = 0; h < nh; h++) {
		uint32_t k[4];
		host_cables(f, h, k);
		assert_int_equal(tp_state_set_link(s, k[1], 0.5, 0), TP_OK);
	}
	assert_int_equal(count_weak(s, nh), 0);
	assert_int_equal(tp_state_set_link(s, b[0], 0.5, 0), TP_OK);
	assert_int_equal(count_weak(s, nh), 0);
	assert_int_equal(tp_state_set_link(s, b[0], 0, 0), TP_OK);
	assert_int_equal(count_weak(s, nh), 1);
	assert_true(tp__state_weak(s, h1));
	tp_state_destroy(s);

	/* a state file with a dead cable */
	snprintf(json, sizeof(json),
		 "{\"format\":\"topoplace-state/1\",\"links\":["
		 "{\"link\":%u,\"health\":0},{\"link\":%u,\"health\":0}]}",
		 b[0], b[1]);
	path = tp_test_write_tmp(json);
	assert_int_equal(tp_state_load_json(f, path, &t, &err), TP_OK);
	unlink(path);
	assert_true(tp__state_cut_off(t, h1));
	assert_int_equal(count_weak(t, nh), 1);
	tp_state_destroy(t);
	tp_fabric_destroy(f);
}

/* The state's up-link list: every active cable from a leaf to a spine of
 * a 3-leaf, 2-spine tree with 2 cables per pair (3 x 2 x 2), each with
 * its leaf's level-1 group, none of the host cables; a clone has its
 * own copy. */
static void test_state_uplinks(void **unused)
{
	tp_fabric_t *f = tp_test_fat_tree(3, 2, 4, 2, 8, false);
	tp_state_t *s, *c;

	(void)unused;
	s = tp_state_create(f);
	assert_non_null(s);
	assert_int_equal(s->nuplink, 3 * 2 * 2);
	for (size_t i = 0; i < s->nuplink; i++) {
		const tp_link_t *k = tp_fabric_link(f, s->uplink[i]);
		assert_int_equal(k->kind[0], TP_NODE_SWITCH);
		assert_int_equal(k->kind[1], TP_NODE_SWITCH);
		const tp_switch_t *a = tp_fabric_switch(f, k->node[0]);
		const tp_switch_t *b = tp_fabric_switch(f, k->node[1]);
		const tp_switch_t *leaf = a->level < b->level ? a : b;
		assert_int_equal(s->uplink_grp[i], leaf->group);
		assert_int_equal(tp_fabric_group(f, leaf->group)->level, 1);
		if (i)
			assert_true(s->uplink[i] > s->uplink[i - 1]);
	}
	c = tp_state_clone(s);
	assert_non_null(c);
	assert_int_equal(c->nuplink, s->nuplink);
	assert_ptr_not_equal(c->uplink, s->uplink);
	assert_memory_equal(c->uplink_grp, s->uplink_grp,
			    s->nuplink * sizeof(uint32_t));
	tp_state_destroy(c);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
}

/* The generator's degraded cables make hosts weak (cabled to less than the
 * best host), which the policy takes last and prices. */
static void test_state_weak_fabric(void **unused)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *deg = NULL;
	tp_state_t *s;
	bool weak = false;

	(void)unused;
	/* the generator's degraded cables: hosts cabled to less */
	tp_gen_fat_tree_defaults(&p);
	p.degrade = 0.2;
	p.degrade_seed = 3;
	assert_int_equal(tp_gen_fat_tree(&p, &deg), TP_OK);
	s = tp_state_create(deg);
	assert_non_null(s);
	for (size_t h = 0; h < tp_fabric_nhosts(deg); h++)
		weak |= tp__state_weak(s, (uint32_t)h);
	assert_true(weak);
	tp_state_destroy(s);
	tp_fabric_destroy(deg);
}

/* A job on a host that went down after it started still loads. */
static void test_state_json_job_on_down_host(void **unused)
{
	tp_fabric_t *f = fat_tree(false);
	tp_state_t *t = NULL;
	char *err = NULL;
	char *path = tp_test_write_tmp(
	    "{\"format\":\"topoplace-state/1\","
	    "\"down\":[\"node001\"],"
	    "\"jobs\":[{\"id\":1,\"hosts\":{\"node001\":8}}]}");

	(void)unused;
	assert_int_equal(tp_state_load_json(f, path, &t, &err), TP_OK);
	unlink(path);
	assert_int_equal(tp_state_free_gpus(t, 0), 0);
	assert_false(tp_state_host_up(t, 0));
	tp_state_destroy(t);
	tp_fabric_destroy(f);
}

static void test_state_json_errors(void **unused)
{
	static const struct {
		const char *text;
		tp_err_t err;
		const char *msg; /* after "FILE: " */
	} cases[] = {
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":["
	     "{\"id\":1,\"hosts\":{\"node001\":1}},"
	     "{\"id\":2,\"hosts\":{\"node002\":1}},"
	     "{\"id\":3,\"hosts\":{\"node009\":1,\"node99\":2}}]}",
	     TP_ERR_PARSE, "jobs[2].hosts.node99: unknown host"},
	    {"{\"format\":\"topoplace-state/1\",\"down\":[\"node001\",\"x\"]}",
	     TP_ERR_PARSE, "down[1].x: unknown host"},
	    {"{\"format\":\"topoplace-state/1\",\"down\":[\"node001\",3]}",
	     TP_ERR_PARSE, "down[1]: expected a host name"},
	    {"{\"format\":\"topoplace-state/2\"}", TP_ERR_FORMAT,
	     "format: \"topoplace-state/2\" is not \"topoplace-state/1\""},
	    /* an echoed string is cut at 40 bytes, its control bytes masked */
	    {"{\"format\":\"0123456789012345678901234567890123456789\\n"
	     "0123456789012345678901234567890123456789\"}",
	     TP_ERR_FORMAT,
	     "format: \"0123456789012345678901234567890123456789...\" is not "
	     "\"topoplace-state/1\""},
	    {"{\"jobs\":[]}", TP_ERR_FORMAT,
	     "format: missing; expected \"topoplace-state/1\""},
	    {"{\"format\":\"topoplace-state/1\",\"job\":[]}", TP_ERR_PARSE,
	     "job: unknown key"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":[{\"id\":1,"
	     "\"hosts\":{},\"gpus\":4}]}",
	     TP_ERR_PARSE, "jobs[0].gpus: unknown key"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":[{\"id\":0,"
	     "\"hosts\":{}}]}",
	     TP_ERR_PARSE, "jobs[0].id: expected an integer 1..2^53"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":[{\"id\":1.5,"
	     "\"hosts\":{}}]}",
	     TP_ERR_PARSE, "jobs[0].id: expected an integer 1..2^53"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":["
	     "{\"id\":4,\"hosts\":{}},{\"id\":4,\"hosts\":{\"node001\":1}},"
	     "{\"id\":4,\"hosts\":{}}]}",
	     TP_ERR_EXISTS, "jobs[1].id: job 4 appears twice"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":["
	     "{\"id\":1,\"hosts\":{\"node001\":6}},"
	     "{\"id\":2,\"hosts\":{\"node001\":4}}]}",
	     TP_ERR_RANGE, "jobs[1].hosts.node001: 4 GPUs asked, 2 free of 8"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":["
	     "{\"id\":1,\"hosts\":{\"node001\":-1}}]}",
	     TP_ERR_PARSE, "jobs[0].hosts.node001: expected a GPU count"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":["
	     "{\"id\":1,\"hosts\":{\"node001\":1,\"node001\":1}}]}",
	     TP_ERR_EXISTS, "jobs[0].hosts.node001: host listed twice"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":{}}", TP_ERR_PARSE,
	     "jobs: expected an array"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":[{\"id\":1}]}",
	     TP_ERR_PARSE,
	     "jobs[0].hosts: expected an object {\"host\": GPUs}"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":100000}]}",
	     TP_ERR_RANGE, "links[0].link: expected a link index 0..%zu"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1,"
	     "\"health\":2}]}",
	     TP_ERR_RANGE, "links[0].health: expected a number 0..1"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1,"
	     "\"background_gbps\":-3}]}",
	     TP_ERR_RANGE,
	     "links[0].background_gbps: expected a finite number >= 0 or a "
	     "pair of them"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1,"
	     "\"background_gbps\":[3]}]}",
	     TP_ERR_RANGE,
	     "links[0].background_gbps: expected a finite number >= 0 or a "
	     "pair of them"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1,"
	     "\"background_gbps\":[3,-1]}]}",
	     TP_ERR_RANGE,
	     "links[0].background_gbps: expected a finite number >= 0 or a "
	     "pair of them"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1,"
	     "\"bg\":3}]}",
	     TP_ERR_PARSE, "links[0].bg: unknown key"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1},"
	     "{\"link\":2},{\"link\":1,\"health\":0.5}]}",
	     TP_ERR_EXISTS, "links[2].link: link 1 already given in links[0]"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1,"
	     "\"background_gbps\":1e999}]}",
	     TP_ERR_RANGE,
	     "links[0].background_gbps: expected a finite number >= 0 or a "
	     "pair of them"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1,"
	     "\"background_gbps\":[1,-1e999]}]}",
	     TP_ERR_RANGE,
	     "links[0].background_gbps: expected a finite number >= 0 or a "
	     "pair of them"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1,"
	     "\"health\":1e999}]}",
	     TP_ERR_RANGE, "links[0].health: expected a number 0..1"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":1e999}]}",
	     TP_ERR_RANGE, "links[0].link: expected a link index 0..%zu"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":["
	     "{\"id\":1,\"hosts\":{\"node001\":1e999}}]}",
	     TP_ERR_PARSE, "jobs[0].hosts.node001: expected a GPU count"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":[{\"id\":1e999,"
	     "\"hosts\":{}}]}",
	     TP_ERR_PARSE, "jobs[0].id: expected an integer 1..2^53"},
	    {"[1,2]", TP_ERR_PARSE, "expected a JSON object"},
	    /* bytes cJSON would skip, keep or cut a name at */
	    {"\x01{\"format\":\"topoplace-state/1\"}", TP_ERR_PARSE,
	     "control byte 0x01 at byte 0"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":["
	     "{\"id\":1,\"hosts\":{\"node001\\u0000x\":1}}]}",
	     TP_ERR_PARSE, "\\u0000 in a string at byte 63"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":["
	     "{\"id\":1,\"hosts\":{\"node001\x1f\":1}}]}",
	     TP_ERR_PARSE, "control byte 0x1f at byte 63"},
	    {"{\"format\":\"topoplace-state/1\",", TP_ERR_PARSE,
	     "not valid JSON near byte 29"},
	    {"", TP_ERR_PARSE, "not valid JSON near byte 0"},
	    /* the parser stops after the first value: what follows is not
	     * ignored */
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":0,"
	     "\"health\":0}]} garbage {",
	     TP_ERR_PARSE, "not valid JSON near byte 63"},
	    {"{\"format\":\"topoplace-state/1\"}\n{\"format\":"
	     "\"topoplace-state/1\"}\n",
	     TP_ERR_PARSE, "not valid JSON near byte 31"},
	    /* a key given twice: which one the writer meant is unknown */
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":0,"
	     "\"health\":0}],\"links\":[{\"link\":1,\"health\":0.5}]}",
	     TP_ERR_PARSE, "links: key given twice"},
	    {"{\"format\":\"topoplace-state/1\",\"links\":[{\"link\":0,"
	     "\"health\":0,\"health\":1}]}",
	     TP_ERR_PARSE, "links[0].health: key given twice"},
	    {"{\"format\":\"topoplace-state/1\",\"jobs\":[{\"id\":1,"
	     "\"hosts\":{},\"id\":2}]}",
	     TP_ERR_PARSE, "jobs[0].id: key given twice"},
	};
	tp_fabric_t *f = fat_tree(false);

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = tp_test_write_tmp(cases[i].text), *err = NULL,
		     want[256], msg[200];
		tp_state_t *s = (tp_state_t *)0x1;

		snprintf(msg, sizeof(msg), cases[i].msg,
			 tp_fabric_nlinks(f) - 1);
		snprintf(want, sizeof(want), "%s: %s", path, msg);
		assert_int_equal(tp_state_load_json(f, path, &s, &err),
				 cases[i].err);
		unlink(path);
		/* output untouched on failure */
		assert_ptr_equal(s, (tp_state_t *)0x1);
		assert_non_null(err);
		assert_string_equal(err, want);
		tp_free(err);
	}
	{
		/* JSON white space after the object is fine */
		char *path = tp_test_write_tmp(
			 "{\"format\":\"topoplace-state/1\","
			 "\"links\":[{\"link\":1,\"health\":0."
			 "5}]} \r\n\t\n"),
		     *err = NULL;
		tp_state_t *s = NULL;
		assert_int_equal(tp_state_load_json(f, path, &s, &err), TP_OK);
		assert_true(tp_state_link_health(s, 1) == 0.5);
		tp_state_destroy(s);
		unlink(path);
	}
	{
		char *err = NULL;
		tp_state_t *s = NULL;
		assert_int_equal(
		    tp_state_load_json(f, "/nonexistent/s.json", &s, &err),
		    TP_ERR_NOTFOUND);
		assert_string_equal(err, "/nonexistent/s.json: no such file");
		tp_free(err);
	}
	{
		/* more background than the cable carries */
		double cap = tp_fabric_link(f, 1)->gbps;
		char text[200], want[300], *path, *err = NULL;
		tp_state_t *s = NULL;

		snprintf(text, sizeof(text),
			 "{\"format\":\"topoplace-state/1\",\"links\":"
			 "[{\"link\":1,\"background_gbps\":[%g,1]}]}",
			 cap + 1);
		path = tp_test_write_tmp(text);
		snprintf(want, sizeof(want),
			 "%s: links[0].background_gbps: %g Gb/s is more than "
			 "link 1's %g Gb/s",
			 path, cap + 1, cap);
		assert_int_equal(tp_state_load_json(f, path, &s, &err),
				 TP_ERR_RANGE);
		assert_string_equal(err, want);
		tp_free(err);
		unlink(path);
	}
	{
		/* more values than a file of this fabric holds (an array of
		 * zeros under an unknown key): refused before the parser,
		 * which took some 40 times the file's size for them (2.6 GB
		 * for 63 MiB in slurmctld); every link listed with a
		 * background pair and a reason still loads */
		size_t nl = tp_fabric_nlinks(f), nh = tp_fabric_nhosts(f);
		size_t gpus = 0, most, cap;
		tp_strbuf_t sb = {0};
		char *path, *err = NULL;
		tp_state_t *s = NULL;

		for (size_t h = 0; h < nh; h++)
			gpus += tp_fabric_host(f, h)->ngpus;
		most = 1024 + 16 * nl + 16 * (nh + gpus);
		tp_strbuf_printf(&sb, "{\"format\":\"topoplace-state/1\","
				      "\"links\":[");
		for (size_t l = 0; l < nl; l++) {
			cap = (size_t)tp_fabric_link(f, l)->gbps;
			tp_strbuf_printf(&sb,
					 "%s{\"link\":%zu,\"health\":0.5,"
					 "\"reason\":\"a, b [c] {d}\","
					 "\"background_gbps\":[%zu,%zu]}",
					 l ? "," : "", l, cap / 2, cap / 4);
		}
		tp_strbuf_printf(&sb, "]}");
		path = tp_test_write_tmp(sb.buf);
		assert_int_equal(tp_state_load_json(f, path, &s, &err), TP_OK);
		tp_state_destroy(s);
		unlink(path);
		sb.len = 0;
		tp_strbuf_printf(&sb, "{\"format\":\"topoplace-state/1\","
				      "\"pad\":[0");
		for (size_t i = 0; i < most; i++)
			tp_strbuf_printf(&sb, ",0");
		tp_strbuf_printf(&sb, "]}");
		path = tp_test_write_tmp(sb.buf);
		s = NULL;
		assert_int_equal(tp_state_load_json(f, path, &s, &err),
				 TP_ERR_RANGE);
		assert_null(s);
		if (!strstr(err, "JSON values, more than a state file of "
				 "this fabric holds"))
			fail_msg("%s", err);
		tp_free(err);
		unlink(path);
		tp_free(sb.buf);
	}
	tp_fabric_destroy(f);
}

/* A daemon's LinkState: a FIFO nobody writes is refused at once (the
 * open does not wait for a writer), and so are a directory and a file
 * over TP_STATE_FILE_MAX; a regular file loads as with the plain loader. */
static void test_state_json_regular(void **unused)
{
	char dir[] = "/tmp/tp-state-dir-XXXXXX", fifo[64], big[64], want[200];
	tp_fabric_t *f = fat_tree(false);
	tp_state_t *s = NULL;
	char *err = NULL, *path;
	int fd;

	(void)unused;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/ls.json", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10); /* a hang fails the test instead of stalling the suite */
	assert_int_equal(tp_state_load_json_regular(f, fifo, &s, &err),
			 TP_ERR_NOTREG);
	snprintf(want, sizeof(want),
		 "%s: not a regular file (a FIFO, device or directory)", fifo);
	assert_string_equal(err, want);
	tp_free(err);
	assert_int_equal(tp_state_load_json_regular(f, dir, &s, &err),
			 TP_ERR_NOTREG);
	snprintf(want, sizeof(want),
		 "%s: not a regular file (a FIFO, device or directory)", dir);
	assert_string_equal(err, want);
	tp_free(err);
	alarm(0);
	assert_null(s);
	unlink(fifo);

	snprintf(big, sizeof(big), "%s/big.json", dir);
	fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)TP_STATE_FILE_MAX + 1), 0);
	close(fd);
	assert_int_equal(tp_state_load_json_regular(f, big, &s, &err),
			 TP_ERR_RANGE);
	snprintf(want, sizeof(want),
		 "%s: larger than 64 MiB (TP_STATE_FILE_MAX)", big);
	assert_string_equal(err, want);
	tp_free(err);
	unlink(big);
	assert_int_equal(rmdir(dir), 0);

	path = tp_test_write_tmp("{\"format\":\"topoplace-state/1\",\"jobs\":["
				 "{\"id\":3,\"hosts\":{\"node002\":2}}]}");
	assert_int_equal(tp_state_load_json_regular(f, path, &s, &err), TP_OK);
	assert_int_equal(tp_state_busy_gpus(s), 2);
	tp_state_destroy(s);
	s = NULL;

	/* a smaller cap (the SPANK plugin's step start): the same file
	 * loads at its own size, not a byte less; the cap in range */
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(
	    tp_state_load_json_capped(f, path, (size_t)sb.st_size, &s, &err),
	    TP_OK);
	tp_state_destroy(s);
	s = NULL;
	assert_int_equal(tp_state_load_json_capped(
			     f, path, (size_t)sb.st_size - 1, &s, &err),
			 TP_ERR_RANGE);
	snprintf(want, sizeof(want), "%s: larger than %lld bytes", path,
		 (long long)sb.st_size - 1);
	assert_string_equal(err, want);
	tp_free(err);
	err = NULL;
	assert_null(s);
	assert_int_equal(tp_state_load_json_capped(f, path, 0, &s, &err),
			 TP_ERR_INVAL);
	assert_int_equal(
	    tp_state_load_json_capped(f, path, TP_STATE_FILE_MAX + 1, &s, &err),
	    TP_ERR_INVAL);
	assert_null(s);
	unlink(path);
	tp_fabric_destroy(f);
}

/* ---- requests ---- */

static void test_request_parse(void **unused)
{
	tp_request_t r;
	char *err = NULL;

	(void)unused;
	assert_int_equal(tp_request_parse("nodes=4,gpus-per-node=8", &r, &err),
			 TP_OK);
	assert_int_equal(r.nodes, 4);
	assert_int_equal(r.gpus_per_node, 8);
	assert_int_equal(r.gpus, 32);
	assert_false(r.exclusive);
	assert_true(r.bytes == 0);
	assert_null(err);

	/* nodes alone: whole hosts */
	assert_int_equal(tp_request_parse("nodes=2", &r, NULL), TP_OK);
	assert_int_equal(r.nodes, 2);
	assert_int_equal(r.gpus_per_node, 0);
	assert_int_equal(r.gpus, 0);
	/* no size given: the cost model prices 1 GiB */
	assert_true(tp_request_bytes(&r) == 1024.0 * 1024 * 1024);

	assert_int_equal(
	    tp_request_parse(" gpus=12 , exclusive,bytes=256M ", &r, NULL),
	    TP_OK);
	assert_int_equal(r.nodes, 0);
	assert_int_equal(r.gpus, 12);
	assert_true(r.exclusive);
	assert_true(r.bytes == 256.0 * 1024 * 1024);
	assert_true(tp_request_bytes(&r) == r.bytes);

	assert_int_equal(
	    tp_request_parse("gpus=16,gpus-per-node=8,shared", &r, NULL),
	    TP_OK);
	assert_int_equal(r.nodes, 2);
	assert_false(r.exclusive);
	assert_int_equal(tp_request_parse("nodes=2,gpus=16", &r, NULL), TP_OK);
	assert_int_equal(r.gpus_per_node, 8);

	assert_int_equal(tp_request_parse("gpus=1,bytes=1.5KiB", &r, NULL),
			 TP_OK);
	assert_true(r.bytes == 1536);
	assert_int_equal(tp_request_parse("gpus=1,bytes=4096", &r, NULL),
			 TP_OK);
	assert_true(r.bytes == 4096);
	assert_int_equal(tp_request_parse("gpus=1,bytes=2g", &r, NULL), TP_OK);
	assert_true(r.bytes == 2.0 * 1024 * 1024 * 1024);
}

static void test_request_errors(void **unused)
{
	static const struct {
		const char *text;
		tp_err_t err;
		const char *msg;
	} cases[] = {
	    {"", TP_ERR_PARSE, "empty request: give nodes=N or gpus=T"},
	    {"nodes=0", TP_ERR_RANGE,
	     "\"nodes=0\": expected a whole number 1..1000000"},
	    {"nodes=4x", TP_ERR_RANGE,
	     "\"nodes=4x\": expected a whole number 1..1000000"},
	    {"nodes=-2", TP_ERR_RANGE,
	     "\"nodes=-2\": expected a whole number 1..1000000"},
	    {"nodes=2,gpus-per-node=2000", TP_ERR_RANGE,
	     "\"gpus-per-node=2000\": expected a whole number 1..1024"},
	    {"gpus=99999999999", TP_ERR_RANGE,
	     "\"gpus=99999999999\": expected a whole number 1..16777216"},
	    {"nodes=2,nodes=3", TP_ERR_PARSE, "\"nodes\" given twice"},
	    {"nodes=2,color=red", TP_ERR_PARSE,
	     "\"color\": unknown item (expected nodes=, gpus-per-node=, "
	     "gpus=, bytes=, exclusive or shared)"},
	    {"nodes=2,,exclusive", TP_ERR_PARSE,
	     "\"nodes=2,,exclusive\": empty item"},
	    {"nodes=2,", TP_ERR_PARSE, "\"nodes=2,\": empty item"},
	    {"nodes=2, ,shared", TP_ERR_PARSE, "empty item"},
	    {"nodes", TP_ERR_PARSE, "\"nodes\": expected nodes=VALUE"},
	    {"nodes=", TP_ERR_PARSE, "\"nodes\": expected nodes=VALUE"},
	    {"exclusive=yes,nodes=1", TP_ERR_PARSE,
	     "\"exclusive=yes\": exclusive takes no value"},
	    {"nodes=1,exclusive,shared", TP_ERR_PARSE,
	     "\"exclusive\" and \"shared\" contradict each other"},
	    {"gpus-per-node=4", TP_ERR_PARSE,
	     "\"gpus-per-node\" needs nodes= or gpus="},
	    {"exclusive", TP_ERR_PARSE, "request needs nodes=N or gpus=T"},
	    {"gpus=12,gpus-per-node=8", TP_ERR_RANGE,
	     "\"gpus=12\" is not a multiple of \"gpus-per-node=8\""},
	    {"nodes=5,gpus=12", TP_ERR_RANGE,
	     "\"gpus=12\" does not split evenly over \"nodes=5\""},
	    {"nodes=2,gpus-per-node=4,gpus=9", TP_ERR_RANGE,
	     "\"gpus=9\" is not nodes x gpus-per-node (2 x 4)"},
	    {"nodes=1000000,gpus-per-node=1000", TP_ERR_RANGE,
	     "nodes=1000000 x gpus-per-node=1000: more than 16777216 GPUs"},
	    {"gpus=1,bytes=12Q", TP_ERR_RANGE,
	     "\"bytes=12Q\": expected a size such as 4096, 256M or 1G "
	     "(binary units, 1 B .. 1 PiB)"},
	    {"gpus=1,bytes=0", TP_ERR_RANGE,
	     "\"bytes=0\": expected a size such as 4096, 256M or 1G (binary "
	     "units, 1 B .. 1 PiB)"},
	    {"gpus=1,bytes=2P", TP_ERR_RANGE,
	     "\"bytes=2P\": expected a size such as 4096, 256M or 1G (binary "
	     "units, 1 B .. 1 PiB)"},
	};
	tp_request_t r = {.nodes = 77};

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *err = NULL;
		assert_int_equal(tp_request_parse(cases[i].text, &r, &err),
				 cases[i].err);
		assert_non_null(err);
		assert_string_equal(err, cases[i].msg);
		tp_free(err);
		assert_int_equal(r.nodes, 77); /* untouched on error */
	}
	assert_int_equal(tp_request_parse(NULL, &r, NULL), TP_ERR_INVAL);
}

static void test_algo_names(void **unused)
{
	tp_algo_t a;

	(void)unused;
	for (int i = 0; i <= TP_ALGO_ALL_GATHER; i++) {
		assert_int_equal(tp_algo_parse(tp_algo_name((tp_algo_t)i), &a),
				 TP_OK);
		assert_int_equal(a, i);
	}
	assert_string_equal(tp_algo_name(TP_ALGO_REDUCE_SCATTER),
			    "reduce-scatter");
	assert_string_equal(tp_algo_name((tp_algo_t)42), "unknown");
	assert_int_equal(tp_algo_parse("butterfly", &a), TP_ERR_NOTFOUND);
}

/* ---- spans and ring order ---- */

static void test_span_of(void **unused)
{
	tp_fabric_t *f = fat_tree(false);
	uint32_t hs[5];
	size_t span[TP_SPAN_NLEVELS];

	(void)unused;
	hs[0] = tp_test_host(f, "node001");
	hs[1] = tp_test_host(f, "node002");
	hs[2] = tp_test_host(f, "node006");
	hs[3] = tp_test_host(f, "node016");
	hs[4] = tp_test_host(f, "node003");
	tp_span_of(f, hs, 5, span);
	assert_int_equal(span[TP_SPAN_HOSTS], 5);
	assert_int_equal(span[TP_SPAN_NVDOMAINS], 5); /* one per host */
	assert_int_equal(span[TP_SPAN_GROUPS], 3);
	assert_int_equal(span[TP_SPAN_SPINE_GROUPS], 1);
	tp_span_of(f, hs, 0, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 0);
	tp_fabric_destroy(f);
}

/* NVL72: racks are multi-node NVLink domains over two leaves each. */
static void test_span_nvl72(void **unused)
{
	tp_gen_nvl72_t p;
	tp_fabric_t *f = NULL;
	tp_request_t r = {.nodes = 18, .gpus_per_node = 4};
	uint32_t hs[3];
	size_t span[TP_SPAN_NLEVELS];

	(void)unused;
	tp_gen_nvl72_defaults(&p);
	assert_int_equal(tp_gen_nvl72(&p, &f), TP_OK);
	hs[0] = tp_test_host(f, "nvl001");
	hs[1] = tp_test_host(f, "nvl018");
	hs[2] = tp_test_host(f, "nvl019");
	tp_span_of(f, hs, 3, span);
	assert_int_equal(span[TP_SPAN_NVDOMAINS], 2);
	assert_int_equal(span[TP_SPAN_GROUPS], 3);
	tp_span_min(f, NULL, &r, span);
	assert_int_equal(span[TP_SPAN_HOSTS], 18);
	assert_int_equal(span[TP_SPAN_NVDOMAINS], 1);
	assert_int_equal(span[TP_SPAN_GROUPS], 2);
	assert_int_equal(span[TP_SPAN_SPINE_GROUPS], 1);
	tp_fabric_destroy(f);
}

static void test_span_min(void **unused)
{
	tp_fabric_t *f = fat_tree(false);
	tp_state_t *s = tp_state_create(f);
	tp_request_t r = {.nodes = 6, .gpus_per_node = 8};
	size_t span[TP_SPAN_NLEVELS];
	int eight = 8, two = 2;
	uint32_t h;

	(void)unused;
	tp_span_min(f, NULL, &r, span);
	assert_int_equal(span[TP_SPAN_HOSTS], 6);
	assert_int_equal(span[TP_SPAN_NVDOMAINS], 6);
	assert_int_equal(span[TP_SPAN_GROUPS], 2);
	assert_int_equal(span[TP_SPAN_SPINE_GROUPS], 1);
	/* free state: leaf01 has 1 usable host (3 busy), leaf02 2 (1 busy,
	 * 1 down), leaf03 3 (1 with 2 GPUs taken), leaf04 4 */
	for (int i = 1; i <= 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "node%03d", i);
		h = tp_test_host(f, name);
		assert_int_equal(tp_state_alloc(s, (uint64_t)i, &h, &eight, 1),
				 TP_OK);
	}
	h = tp_test_host(f, "node005");
	assert_int_equal(tp_state_alloc(s, 5, &h, &eight, 1), TP_OK);
	assert_int_equal(
	    tp_state_set_host_up(s, tp_test_host(f, "node006"), false), TP_OK);
	h = tp_test_host(f, "node009");
	assert_int_equal(tp_state_alloc(s, 9, &h, &two, 1), TP_OK);
	tp_span_min(f, s, &r, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 2); /* 4 + 3 */
	r.nodes = 8;
	tp_span_min(f, s, &r, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 3); /* 4 + 3 + 2 */
	/* 2 GPUs per node: node009 (6 free) counts again */
	r.gpus_per_node = 2;
	tp_span_min(f, s, &r, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 2); /* 4 + 4 */
	/* whole hosts: node009 is not idle */
	r.gpus_per_node = 0;
	tp_span_min(f, s, &r, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 3); /* 4 + 3 + 2 */
	r.nodes = 11;
	tp_span_min(f, s, &r, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 0); /* cannot fit */
	assert_int_equal(span[TP_SPAN_HOSTS], 0);
	/* GPU counts: fewest hosts by free GPUs */
	r = (tp_request_t){.gpus = 20};
	tp_span_min(f, s, &r, span);
	assert_int_equal(span[TP_SPAN_HOSTS], 3);
	assert_int_equal(span[TP_SPAN_GROUPS], 1);
	r.gpus = 33;
	tp_span_min(f, s, &r, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 2);
	r.gpus = 8 + 16 + 30 + 32 + 1; /* one more than is free */
	tp_span_min(f, s, &r, span);
	assert_int_equal(span[TP_SPAN_HOSTS], 0);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
}

/* A fabric with one group level reports spine span 1 (the shared "no
 * group" unit), for spans and minimum spans alike. */
static void test_span_one_level(void **unused)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;
	tp_request_t r = {.nodes = 3};
	size_t span[TP_SPAN_NLEVELS];
	uint32_t hs[2] = {0, 3};

	(void)unused;
	tp_gen_fat_tree_defaults(&p);
	p.leaves = 1;
	p.spines = 1;
	p.hosts_per_leaf = 4;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	tp_span_of(f, hs, 2, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 1);
	assert_int_equal(span[TP_SPAN_SPINE_GROUPS], 1);
	tp_span_min(f, NULL, &r, span);
	assert_int_equal(span[TP_SPAN_GROUPS], 1);
	assert_int_equal(span[TP_SPAN_SPINE_GROUPS], 1);
	tp_fabric_destroy(f);
}

static void test_ring_order(void **unused)
{
	/* interleaved: node001 on leaf01, node002 on leaf02, ... */
	tp_fabric_t *f = fat_tree(true);
	uint32_t hs[6];
	int gs[6];
	const char *names[6] = {"node001", "node002", "node005",
				"node006", "node009", "node003"};

	(void)unused;
	for (int i = 0; i < 6; i++) {
		hs[i] = tp_test_host(f, names[i]);
		gs[i] = i + 1;
	}
	tp_ring_order(f, hs, gs, 6);
	for (int i = 1; i < 6; i++) {
		const tp_host_t *a = tp_fabric_host(f, hs[i - 1]);
		const tp_host_t *b = tp_fabric_host(f, hs[i]);
		/* groups contiguous, in group order, hosts ascending inside */
		assert_true(a->group[0] < b->group[0] ||
			    (a->group[0] == b->group[0] && hs[i - 1] < hs[i]));
	}
	/* gpus follow their hosts */
	for (int i = 0; i < 6; i++)
		for (int k = 0; k < 6; k++)
			if (hs[i] == tp_test_host(f, names[k]))
				assert_int_equal(gs[i], k + 1);
	/* leaf01 holds node001, node005, node009 */
	assert_int_equal(hs[0], tp_test_host(f, "node001"));
	assert_int_equal(hs[1], tp_test_host(f, "node005"));
	assert_int_equal(hs[2], tp_test_host(f, "node009"));
	tp_ring_order(f, hs, NULL, 6); /* gpus optional */
	tp_fabric_destroy(f);
}

/* Up-links of irregular fabrics (the state lists them for the policy's
 * up-link quality): three leaves cabled in a triangle and to nothing
 * above (one parent without switches) give each leaf group both of its
 * cables, as finalize's up_gbps counts them; a leaf hanging off a leaf
 * under a spine gives its cable to the hanging leaf's group only. */
static void test_state_irregular_uplinks(void **unused)
{
	(void)unused;
	for (int shape = 0; shape < 2; shape++) {
		tp_fabric_t *f = tp_fabric_create();
		int sn = tp__fabric_new_subnet(f);
		uint32_t sw[4], c;
		bool added;
		char d[32];

		for (int i = 0; i < 4; i++) {
			snprintf(d, sizeof(d), "s%d", i);
			assert_int_equal(
			    tp__fabric_add_switch(f, sn, 0x100 + (uint64_t)i, d,
						  36, &sw[i]),
			    TP_OK);
		}
		/* shape 0: triangle s0 s1 s2; shape 1: s0, s1 under s3, s2 off
		 * s1 */
		const uint32_t pairs[2][3][2] = {{{0, 1}, {1, 2}, {0, 2}},
						 {{0, 3}, {1, 3}, {2, 1}}};
		for (int e = 0; e < 3; e++)
			assert_int_equal(
			    tp__fabric_add_link(
				f, TP_NODE_SWITCH, sw[pairs[shape][e][0]],
				20 + e, TP_NODE_SWITCH, sw[pairs[shape][e][1]],
				30 + e, 4, 25.0, true, &added),
			    TP_OK);
		for (int h = 0; h < 3; h++) {
			snprintf(d, sizeof(d), "n%d mlx5_0", h);
			assert_int_equal(tp__fabric_add_ca(f, sn,
							   0x1000 + (uint64_t)h,
							   d, 1, &c),
					 TP_OK);
			assert_int_equal(tp__fabric_add_link(f, TP_NODE_CA, c,
							     1, TP_NODE_SWITCH,
							     sw[h], 1, 4, 25.0,
							     true, &added),
					 TP_OK);
		}
		assert_int_equal(
		    tp_fabric_finalize(
			f, &(tp_finalize_opts_t){.default_gpus = 1}),
		    TP_OK);
		tp_state_t *s = tp_state_create(f);
		assert_non_null(s);
		size_t per[3] = {0};
		for (size_t j = 0; j < s->nuplink; j++)
			for (int h = 0; h < 3; h++)
				per[h] +=
				    s->uplink_grp[j] ==
				    tp_fabric_host(f, (size_t)h)->group[0];
		for (int h = 0; h < 3; h++) {
			const tp_group_t *g = tp_fabric_group(
			    f, tp_fabric_host(f, (size_t)h)->group[0]);
			assert_int_equal(per[h], shape ? 1 : 2);
			assert_true(g->up_gbps == (shape ? 100.0 : 200.0));
		}
		tp_state_destroy(s);
		tp_fabric_destroy(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_state_basics),
	    cmocka_unit_test(test_state_irregular_uplinks),
	    cmocka_unit_test(test_state_json_roundtrip),
	    cmocka_unit_test(test_state_cables),
	    cmocka_unit_test(test_state_uplinks),
	    cmocka_unit_test(test_state_weak_fabric),
	    cmocka_unit_test(test_state_json_job_on_down_host),
	    cmocka_unit_test(test_state_json_errors),
	    cmocka_unit_test(test_state_json_regular),
	    cmocka_unit_test(test_request_parse),
	    cmocka_unit_test(test_request_errors),
	    cmocka_unit_test(test_algo_names),
	    cmocka_unit_test(test_span_of),
	    cmocka_unit_test(test_span_nvl72),
	    cmocka_unit_test(test_span_min),
	    cmocka_unit_test(test_span_one_level),
	    cmocka_unit_test(test_ring_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
