/*
 * The job-start plan (runtime/): ring minimality against brute force,
 * tree validity and NCCL's double-tree property, determinism, errors,
 * JSON round trip and hostile JSON, rails, HCAs, predictions, NOMEM.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "tp_test.h"
#include "tp_test_fabric.h"

#include "tp_runtime.h"

/* ---- fabrics ---- */

/* Three switch levels: `mids` middle switches over `lpm` leaves each, one
 * top switch; host h on leaf h mod leaves (names interleaved). Written
 * as ibnetdiscover text, so level-2 (spine) groups really differ. */
static tp_fabric_t *three_level(int mids, int lpm, int hpl)
{
	int leaves = mids * lpm, nh = leaves * hpl;
	tp_strbuf_t sb = {0};
	tp_fabric_t *f = tp_fabric_create();

	for (int l = 0; l < leaves; l++) {
		tp_strbuf_printf(
		    &sb,
		    "Switch\t%d \"S-%016x\"\t\t# \"leaf%02d\" enhanced "
		    "port 0 lid %d lmc 0\n",
		    hpl + 1, 0x100 + l, l, 1 + l);
		for (int i = 0; i < hpl; i++) {
			int h = i * leaves + l;
			tp_strbuf_printf(
			    &sb,
			    "[%d]\t\"H-%016x\"[1](%x) \t\t# \"n%02d "
			    "mlx5_0\" lid %d 4xHDR\n",
			    i + 1, 0x1000 + h, 0x2000 + h, h, 100 + h);
		}
		tp_strbuf_printf(
		    &sb,
		    "[%d]\t\"S-%016x\"[%d]\t\t# \"mid%02d\" lid %d "
		    "4xHDR\n\n",
		    hpl + 1, 0x200 + l / lpm, l % lpm + 1, l / lpm,
		    50 + l / lpm);
	}
	for (int m = 0; m < mids; m++) {
		tp_strbuf_printf(
		    &sb,
		    "Switch\t%d \"S-%016x\"\t\t# \"mid%02d\" enhanced "
		    "port 0 lid %d lmc 0\n",
		    lpm + 1, 0x200 + m, m, 50 + m);
		for (int i = 0; i < lpm; i++)
			tp_strbuf_printf(
			    &sb,
			    "[%d]\t\"S-%016x\"[%d]\t\t# \"leaf%02d\" "
			    "lid %d 4xHDR\n",
			    i + 1, 0x100 + m * lpm + i, hpl + 1, m * lpm + i,
			    1 + m * lpm + i);
		tp_strbuf_printf(&sb,
				 "[%d]\t\"S-%016x\"[%d]\t\t# \"top\" lid 90 "
				 "4xHDR\n\n",
				 lpm + 1, 0x300, m + 1);
	}
	tp_strbuf_printf(&sb,
			 "Switch\t%d \"S-%016x\"\t\t# \"top\" enhanced port 0 "
			 "lid 90 lmc 0\n",
			 mids, 0x300);
	for (int m = 0; m < mids; m++)
		tp_strbuf_printf(
		    &sb,
		    "[%d]\t\"S-%016x\"[%d]\t\t# \"mid%02d\" lid %d "
		    "4xHDR\n",
		    m + 1, 0x200 + m, lpm + 1, m, 50 + m);
	tp_strbuf_printf(&sb, "\n");
	for (int h = 0; h < nh; h++)
		tp_strbuf_printf(&sb,
				 "Ca\t1 \"H-%016x\"\t\t# \"n%02d mlx5_0\"\n"
				 "[1](%x) \t\"S-%016x\"[%d]\t\t# lid %d lmc 0 "
				 "\"leaf%02d\" lid %d 4xHDR\n\n",
				 0x1000 + h, h, 0x2000 + h, 0x100 + h % leaves,
				 h / leaves + 1, 100 + h, h % leaves,
				 1 + h % leaves);
	assert_false(sb.failed);
	assert_int_equal(
	    tp_fabric_parse_ibnetdiscover(f, "3level", sb.buf, sb.len), TP_OK);
	tp_free(sb.buf);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_ngroup_levels(f), 3);
	assert_int_equal(tp_fabric_groups_at(f, 1), (size_t)leaves);
	assert_int_equal(tp_fabric_groups_at(f, 2), (size_t)mids);
	return f;
}

/* ---- helpers ---- */

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void shuffle(const char **v, size_t n, uint64_t seed)
{
	uint64_t x = seed * 2654435761u + 1;

	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(rnd(&x) % i);
		const char *t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

static tp_plan_t *build(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
			const char **names, size_t n, const tp_plan_opts_t *o)
{
	tp_plan_t *p = NULL;
	char *msg = NULL;
	tp_err_t err = tp_plan_build(f, ctx, names, n, o, &p, &msg);

	if (err)
		fail_msg("tp_plan_build: %s: %s", tp_strerror(err),
			 msg ? msg : "");
	tp_free(msg);
	return p;
}

static char *json_of(const tp_plan_t *p)
{
	char *j = NULL;

	assert_int_equal(tp_plan_to_json(p, &j), TP_OK);
	return j;
}

/* Level-l group of a fabric host (l = 0: level 1). */
static uint32_t grp(const tp_fabric_t *f, uint32_t h, int l)
{
	return tp_fabric_host(f, h)->group[l];
}

/* Group boundaries a cyclic ring over fabric hosts crosses at level l. */
static size_t crossings(const tp_fabric_t *f, const uint32_t *ring, size_t n,
			int l)
{
	size_t c = 0;

	for (size_t i = 0; n > 1 && i < n; i++)
		c += grp(f, ring[i], l) != grp(f, ring[(i + 1) % n], l);
	return c;
}

static void plan_ring(const tp_fabric_t *f, const tp_plan_t *p, uint32_t *ring)
{
	for (size_t r = 0; r < tp_plan_nhosts(p); r++) {
		ring[r] = tp_fabric_host_find(f, tp_plan_host(p, r)->name);
		assert_int_not_equal(ring[r], TP_ID_NONE);
	}
}

/* Least crossings at level l over every ring (rotations fixed: v[0]
 * stays), by Heap's algorithm over v[1..n). */
static size_t brute_min(const tp_fabric_t *f, uint32_t *v, size_t n, int l)
{
	size_t c[16] = {0}, best = crossings(f, v, n, l), i = 1;

	assert_true(n <= 16);
	while (i < n - 1) {
		if (c[i] < i) {
			size_t j = i % 2 ? c[i] : 0;
			uint32_t t = v[1 + j];
			v[1 + j] = v[1 + i];
			v[1 + i] = t;
			size_t x = crossings(f, v, n, l);
			if (x < best)
				best = x;
			c[i]++;
			i = 1;
		} else {
			c[i] = 0;
			i++;
		}
	}
	return best;
}

/* Fabric host names picked by index. */
static void names_of(const tp_fabric_t *f, const int *idx, size_t n,
		     const char **out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = tp_fabric_host(f, (size_t)idx[i])->name;
}

/* ---- ring ---- */

static void check_ring_minimal(const tp_fabric_t *f, const char **names,
			       size_t n, int levels)
{
	tp_plan_t *p = build(f, NULL, names, n, NULL);
	uint32_t ring[16], v[16];

	assert_int_equal(tp_plan_nhosts(p), n);
	plan_ring(f, p, ring);
	for (int l = 0; l < levels; l++) {
		size_t got = crossings(f, ring, n, l);
		memcpy(v, ring, n * sizeof(*v));
		/* a scrambled start, so brute force does not begin at the
		 * answer */
		for (size_t i = 1; i + 1 < n; i += 2) {
			uint32_t t = v[i];
			v[i] = v[i + 1];
			v[i + 1] = t;
		}
		size_t best = brute_min(f, v, n, l);
		if (got != best)
			fail_msg("level %d: ring crosses %zu boundaries, "
				 "brute force %zu",
				 l + 1, got, best);
	}
	/* each plan group is one run: the count of groups is the count of
	 * level-1 crossings (a one-group ring crosses none) */
	assert_int_equal(crossings(f, ring, n, 0),
			 tp_plan_ngroups(p) > 1 ? tp_plan_ngroups(p) : 0);
	tp_plan_destroy(p);
}

static void test_ring_minimal(void **state)
{
	(void)state;
	/* fat tree, 4 leaves of 4 hosts, host i on leaf i % 4 */
	tp_fabric_t *f = tp_test_fat_tree_il(4, 4, 8);
	const char *names[16];
	static const int a[] = {0, 5, 9, 13, 2, 6, 1, 10}; /* 3 groups */
	static const int b[] = {3, 4, 8, 12, 7, 11, 15};   /* 4 groups */
	static const int c[] = {0, 4, 8, 12, 1, 5, 2, 3};  /* 4 groups */

	names_of(f, a, 8, names);
	check_ring_minimal(f, names, 8, 1);
	names_of(f, b, 7, names);
	check_ring_minimal(f, names, 7, 1);
	names_of(f, c, 8, names);
	check_ring_minimal(f, names, 8, 1);
	tp_fabric_destroy(f);

	/* three levels: 2 spine groups of 2 leaves, 2 hosts per leaf; both
	 * leaf and spine crossings are at the minimum at once */
	f = three_level(2, 2, 2);
	static const int d[] = {7, 0, 5, 2, 3, 6, 1, 4};
	static const int e[] = {6, 1, 3, 4, 0, 7};
	names_of(f, d, 8, names);
	check_ring_minimal(f, names, 8, 2);
	names_of(f, e, 6, names);
	check_ring_minimal(f, names, 6, 2);
	tp_fabric_destroy(f);

	/* three levels, 3 spine groups */
	f = three_level(3, 2, 1);
	static const int g[] = {5, 0, 3, 1, 4, 2};
	names_of(f, g, 6, names);
	check_ring_minimal(f, names, 6, 2);
	tp_fabric_destroy(f);
}

/* ---- trees ---- */

/* Both trees: one root, every rank reaches it, children agree with
 * parents, and exactly (units - 1) edges cross each level's boundaries. */
static void check_trees(const tp_fabric_t *f, const tp_plan_t *p, int levels)
{
	size_t n = tp_plan_nhosts(p);
	uint32_t *ring = malloc(n * sizeof(uint32_t));

	plan_ring(f, p, ring);
	for (int t = 0; t < 2; t++) {
		uint32_t root = tp_plan_tree_root(p, t);
		size_t roots = 0, nchild = 0;
		assert_true(root < n);
		for (size_t r = 0; r < n; r++) {
			uint32_t up = tp_plan_tree_parent(p, t, r);
			const uint32_t *ch;
			size_t k = tp_plan_tree_children(p, t, r, &ch),
			       steps = 0;
			if (up == TP_PLAN_NONE) {
				roots++;
				assert_int_equal(r, root);
			}
			for (size_t x = r; x != root; steps++) {
				x = tp_plan_tree_parent(p, t, x);
				assert_true(x < n);
				assert_true(steps <= n); /* no cycle */
			}
			for (size_t i = 0; i < k; i++) {
				assert_int_equal(
				    tp_plan_tree_parent(p, t, ch[i]), r);
				if (i)
					assert_true(ch[i] > ch[i - 1]);
			}
			nchild += k;
		}
		assert_int_equal(roots, 1);
		assert_int_equal(nchild, n - 1);
		for (int l = 0; l < levels; l++) {
			size_t cross = 0, units = 0;
			for (size_t r = 0; r < n; r++) {
				uint32_t up = tp_plan_tree_parent(p, t, r);
				cross +=
				    up != TP_PLAN_NONE &&
				    grp(f, ring[r], l) != grp(f, ring[up], l);
				units += !r || grp(f, ring[r], l) !=
						   grp(f, ring[r - 1], l);
			}
			if (cross != units - 1)
				fail_msg("tree %d level %d: %zu crossing edges "
					 "for %zu units",
					 t, l + 1, cross, units);
		}
	}
	free(ring);
}

/* How many trees rank r is interior (has children) in. */
static int interior(const tp_plan_t *p, size_t r)
{
	const uint32_t *ch;

	return (tp_plan_tree_children(p, 0, r, &ch) > 0) +
	       (tp_plan_tree_children(p, 1, r, &ch) > 0);
}

static void test_trees_valid(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree_il(6, 8, 8),
		    *g = three_level(3, 3, 4);
	const char *names[48];

	(void)state;
	for (size_t n = 1; n <= 48; n++) {
		/* a random subset of n hosts */
		for (size_t i = 0; i < 48; i++)
			names[i] = tp_fabric_host(f, i)->name;
		shuffle(names, 48, n);
		tp_plan_t *p = build(f, NULL, names, n, NULL);
		check_trees(f, p, 1);
		tp_plan_destroy(p);
		for (size_t i = 0; i < 36; i++)
			names[i] = tp_fabric_host(g, i)->name;
		shuffle(names, 36, n + 7);
		p = build(g, NULL, names, n < 36 ? n : 36, NULL);
		check_trees(g, p, 2);
		tp_plan_destroy(p);
	}
	tp_fabric_destroy(f);
	tp_fabric_destroy(g);
}

/* ncclGetBtree as NCCL writes it: children of a rank. */
static void nccl_btree(int n, int rank, int *u, int *d0, int *d1)
{
	int bit;

	for (bit = 1; bit < n; bit <<= 1)
		if (bit & rank)
			break;
	if (rank == 0) {
		*u = -1;
		*d0 = -1;
		*d1 = n > 1 ? bit >> 1 : -1;
		return;
	}
	int up = (rank ^ bit) | (bit << 1);
	if (up >= n)
		up = rank ^ bit;
	*u = up;
	int lowbit = bit >> 1;
	*d0 = lowbit == 0 ? -1 : rank - lowbit;
	int down1 = lowbit == 0 ? -1 : rank + lowbit;
	while (down1 >= n) {
		down1 = lowbit == 0 ? -1 : rank + lowbit;
		lowbit >>= 1;
	}
	*d1 = down1;
}

/* ncclGetDtree's second tree. */
static void nccl_dtree(int n, int rank, int *u, int *d0, int *d1)
{
	if (n % 2 == 1) {
		int shift = (rank - 1 + n) % n;
		nccl_btree(n, shift, u, d0, d1);
		if (*u != -1)
			*u = (*u + 1) % n;
		if (*d0 != -1)
			*d0 = (*d0 + 1) % n;
		if (*d1 != -1)
			*d1 = (*d1 + 1) % n;
	} else {
		nccl_btree(n, n - 1 - rank, u, d0, d1);
		if (*u != -1)
			*u = n - 1 - *u;
		if (*d0 != -1)
			*d0 = n - 1 - *d0;
		if (*d1 != -1)
			*d1 = n - 1 - *d1;
	}
}

static void test_trees_nccl(void **state)
{
	/* one leaf of 40 hosts: a single group, so NCCL's trees exactly */
	tp_fabric_t *f = tp_test_fat_tree_il(1, 40, 8),
		    *g = tp_test_fat_tree_il(4, 6, 8);
	const char *names[40];

	(void)state;
	for (int n = 1; n <= 40; n++) {
		for (int i = 0; i < n; i++)
			names[i] = tp_fabric_host(f, (size_t)i)->name;
		tp_plan_t *p = build(f, NULL, names, (size_t)n, NULL);
		assert_int_equal(tp_plan_ngroups(p), 1);
		for (int t = 0; t < 2; t++)
			for (int r = 0; r < n; r++) {
				int u, d[2];
				const uint32_t *ch;
				size_t k =
				    tp_plan_tree_children(p, t, (size_t)r, &ch);
				size_t m = 0;
				(t ? nccl_dtree : nccl_btree)(n, r, &u, &d[0],
							      &d[1]);
				assert_int_equal(
				    tp_plan_tree_parent(p, t, (size_t)r),
				    u < 0 ? TP_PLAN_NONE : (uint32_t)u);
				for (int i = 0; i < 2; i++)
					if (d[i] >= 0) {
						bool found = false;
						for (size_t j = 0; j < k; j++)
							found |= ch[j] ==
								 (uint32_t)d[i];
						assert_true(found);
						m++;
					}
				assert_int_equal(k, m);
			}
		/* NCCL's guarantee: with an even count no rank is interior
		 * in both trees */
		for (int r = 0; n % 2 == 0 && r < n; r++)
			assert_true(interior(p, (size_t)r) <= 1);
		tp_plan_destroy(p);
	}
	/* across groups the property survives when every group is even:
	 * 4 leaves x {2, 4, 6} hosts, and two spine groups */
	for (int per = 2; per <= 6; per += 2) {
		size_t n = 0;
		for (int h = 0; h < 24; h++)
			if (h / 4 < per) /* interleaved: host h on leaf h % 4 */
				names[n++] = tp_fabric_host(g, (size_t)h)->name;
		shuffle(names, n, (uint64_t)per);
		tp_plan_t *p = build(g, NULL, names, n, NULL);
		assert_int_equal(tp_plan_ngroups(p), 4);
		for (size_t r = 0; r < n; r++)
			assert_true(interior(p, r) <= 1);
		tp_plan_destroy(p);
	}
	tp_fabric_destroy(g);
	g = three_level(2, 2, 4);
	for (int i = 0; i < 16; i++)
		names[i] = tp_fabric_host(g, (size_t)i)->name;
	tp_plan_t *p = build(g, NULL, names, 16, NULL);
	for (size_t r = 0; r < 16; r++)
		assert_true(interior(p, r) <= 1);
	tp_plan_destroy(p);
	tp_fabric_destroy(g);
	tp_fabric_destroy(f);
}

/* ---- determinism, errors ---- */

static void test_deterministic(void **state)
{
	tp_fabric_t *f = tp_test_rail(3, 6, 4, 2, 8);
	tp_cost_ctx_t *ctx = NULL;
	const char *names[18];
	char *first = NULL;

	(void)state;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	for (uint64_t s = 0; s < 8; s++) {
		for (size_t i = 0; i < 18; i++)
			names[i] = tp_fabric_host(f, i)->name;
		if (s)
			shuffle(names, 18, s);
		/* 13 hosts: the same set every time (the first 13 after a
		 * shuffle differ, so sort them back) */
		const char *set[13];
		size_t m = 0;
		for (size_t i = 0; i < 18; i++)
			if (strcmp(names[i], "dgx014") < 0)
				set[m++] = names[i];
		assert_int_equal(m, 13);
		tp_plan_t *p = build(f, ctx, set, m, NULL);
		char *j = json_of(p);
		if (!first)
			first = j;
		else {
			assert_string_equal(j, first);
			tp_free(j);
		}
		tp_plan_destroy(p);
	}
	tp_free(first);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

static void test_errors(void **state)
{
	tp_fabric_t *f = tp_test_fat_tree_il(2, 4, 8);
	tp_plan_t *p = (tp_plan_t *)&p; /* must stay untouched */
	tp_plan_t *const sentinel = p;
	tp_plan_opts_t o;
	char *msg = NULL;
	const char *names[] = {"node001", "nosuch07", "node002"};
	const char *dup[] = {"node001", "node002", "node001"};
	double bad_sizes[] = {1024, 512};

	(void)state;
	assert_int_equal(tp_plan_build(f, NULL, names, 3, NULL, &p, &msg),
			 TP_ERR_NOTFOUND);
	assert_ptr_equal(p, sentinel);
	assert_non_null(msg);
	assert_non_null(strstr(msg, "nosuch07"));
	assert_null(strchr(msg, '\n'));
	tp_free(msg);
	msg = NULL;
	assert_int_equal(tp_plan_build(f, NULL, dup, 3, NULL, &p, &msg),
			 TP_ERR_INVAL);
	assert_non_null(strstr(msg, "node001"));
	tp_free(msg);
	msg = NULL;
	assert_int_equal(tp_plan_build(f, NULL, names, 0, NULL, &p, &msg),
			 TP_ERR_INVAL);
	tp_free(msg);
	msg = NULL;
	assert_int_equal(tp_plan_build(NULL, NULL, names, 1, NULL, &p, NULL),
			 TP_ERR_INVAL);
	tp_plan_opts_defaults(&o);
	o.gpus_per_host = 9;
	assert_int_equal(tp_plan_build(f, NULL, names, 1, &o, &p, &msg),
			 TP_ERR_RANGE);
	assert_non_null(strstr(msg, "node001"));
	tp_free(msg);
	msg = NULL;
	tp_plan_opts_defaults(&o);
	o.sizes = bad_sizes;
	o.nsizes = 2;
	assert_int_equal(tp_plan_build(f, NULL, names, 1, &o, &p, &msg),
			 TP_ERR_INVAL);
	tp_free(msg);
	msg = NULL;
	o.nsizes = 0;
	assert_int_equal(tp_plan_build(f, NULL, names, 1, &o, &p, NULL),
			 TP_ERR_INVAL);
	assert_ptr_equal(p, sentinel);

	/* accessors on NULL and out of range */
	assert_int_equal(tp_plan_nhosts(NULL), 0);
	assert_null(tp_plan_host(NULL, 0));
	assert_int_equal(tp_plan_rank_of(NULL, "x"), TP_PLAN_NONE);
	assert_int_equal(tp_plan_tree_root(NULL, 0), TP_PLAN_NONE);
	assert_true(isnan(tp_plan_predict_s(NULL, 0, TP_ALGO_RING)));
	assert_true(tp_plan_host_segment(NULL));
	tp_plan_destroy(NULL);
	tp_fabric_destroy(f);
}

/* ---- JSON ---- */

static void roundtrip(const tp_plan_t *p)
{
	char *a = json_of(p), *b, *msg = NULL;
	tp_plan_t *q = NULL;

	if (tp_plan_parse_json("plan.json", a, strlen(a), &q, &msg))
		fail_msg("reload: %s", msg);
	b = json_of(q);
	assert_string_equal(a, b);
	assert_int_equal(tp_plan_nhosts(q), tp_plan_nhosts(p));
	assert_int_equal(tp_plan_world_size(q), tp_plan_world_size(p));
	for (size_t r = 0; r < tp_plan_nhosts(p); r++)
		assert_int_equal(tp_plan_rank_of(q, tp_plan_host(p, r)->name),
				 r);
	tp_free(a);
	tp_free(b);
	tp_plan_destroy(q);
}

/* Replace the first occurrence of `from` in a copy of s. */
static char *subst(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	char *out;

	if (!at)
		fail_msg("'%s' not in the plan JSON", from);
	out = malloc(strlen(s) + strlen(to) + 1);
	memcpy(out, s, (size_t)(at - s));
	strcpy(out + (at - s), to);
	strcat(out, at + strlen(from));
	return out;
}

static void test_json_roundtrip(void **state)
{
	tp_fabric_t *f = tp_test_rail(2, 4, 4, 2, 8),
		    *g = tp_test_fat_tree_il(3, 3, 0);
	tp_cost_ctx_t *ctx = NULL;
	const char *names[9];
	char path[] = "/tmp/tp_plan_XXXXXX", *msg = NULL, *j;
	tp_plan_t *p, *q = NULL;
	int fd;

	(void)state;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	for (size_t i = 0; i < 8; i++)
		names[i] = tp_fabric_host(f, i)->name;
	p = build(f, ctx, names, 8, NULL); /* with predictions and rails */
	roundtrip(p);
	/* the hierarchical predictions in one piece (the context has no
	 * pipeline segment); a file without hier_pipelined (an older plan)
	 * leaves every size to the library's rule, writes none back and
	 * loads again; null stands for the rule at one size */
	for (size_t i = 0; i < tp_plan_nsizes(p); i++)
		assert_int_equal(tp_plan_hier_pipelined(p, i), 0);
	j = json_of(p);
	{
		const char *at = strstr(j, ",\n  \"hier_pipelined\": [");
		assert_non_null(at);
		char *old = subst(j,
				  at == NULL ? ""
					     : ",\n  \"hier_pipelined\": "
					       "[false, false, false, "
					       "false, false]",
				  "");
		assert_int_equal(
		    tp_plan_parse_json("p", old, strlen(old), &q, &msg), TP_OK);
		for (size_t i = 0; i < tp_plan_nsizes(q); i++)
			assert_int_equal(tp_plan_hier_pipelined(q, i), -1);
		char *back = json_of(q);
		assert_null(strstr(back, "hier_pipelined"));
		roundtrip(q);
		tp_plan_destroy(q);
		q = NULL;
		tp_free(back);
		char *one = subst(j, "\"hier_pipelined\": [false",
				  "\"hier_pipelined\": [null");
		assert_int_equal(
		    tp_plan_parse_json("p", one, strlen(one), &q, &msg), TP_OK);
		assert_int_equal(tp_plan_hier_pipelined(q, 0), -1);
		assert_int_equal(tp_plan_hier_pipelined(q, 1), 0);
		roundtrip(q);
		tp_plan_destroy(q);
		q = NULL;
		free(one);
		free(old);
	}
	tp_free(j);

	/* through a file */
	j = json_of(p);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, j, strlen(j)), (ssize_t)strlen(j));
	close(fd);
	assert_int_equal(tp_plan_load_json(path, &q, &msg), TP_OK);
	tp_plan_destroy(q);
	q = NULL;
	unlink(path);
	assert_int_not_equal(tp_plan_load_json(path, &q, &msg), TP_OK);
	assert_null(q);
	assert_non_null(strstr(msg, path));
	tp_free(msg);
	msg = NULL;
	tp_free(j);
	tp_plan_destroy(p);

	/* priced with the host phases as rings (TOPOPLACE_COLL_SHM=0): the
	 * plan says so, and a file that does not say means the segment */
	tp_cost_params_t cp;
	tp_cost_ctx_t *rctx = NULL;
	tp_cost_params_defaults(&cp);
	cp.host_ring = true;
	assert_int_equal(tp_cost_ctx_create(f, &cp, &rctx), TP_OK);
	p = build(f, rctx, names, 8, NULL);
	assert_false(tp_plan_host_segment(p));
	j = json_of(p);
	assert_non_null(strstr(j, "\"host_segment\": false"));
	roundtrip(p);
	char *seg = subst(j, ",\n  \"host_segment\": false", "");
	assert_int_equal(tp_plan_parse_json("p", seg, strlen(seg), &q, &msg),
			 TP_OK);
	assert_true(tp_plan_host_segment(q));
	tp_plan_destroy(q);
	q = NULL;
	free(seg);
	tp_free(j);
	tp_plan_destroy(p);
	tp_cost_ctx_destroy(rctx);
	p = build(f, ctx, names, 8, NULL);
	assert_true(tp_plan_host_segment(p));
	tp_plan_destroy(p);

	/* GPU-less hosts, one rail, no predictions */
	for (size_t i = 0; i < 9; i++)
		names[i] = tp_fabric_host(g, i)->name;
	p = build(g, NULL, names, 9, NULL);
	j = json_of(p);
	assert_null(strstr(j, "rail_leaders"));
	assert_non_null(strstr(j, "\"predicted\": null"));
	roundtrip(p);
	tp_free(j);
	tp_plan_destroy(p);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
	tp_fabric_destroy(g);
}

/* The plan's numbers are JSON's whatever LC_NUMERIC the process set:
 * under de_DE the writer gave "0,0015" (two array entries), and the
 * loader refused the library's own output. The text must be the same
 * bytes as in "C" and load back. */
static void test_json_locale(void **state)
{
	tp_fabric_t *f = tp_test_rail(2, 4, 4, 2, 8);
	tp_cost_ctx_t *ctx = NULL;
	const char *names[8];
	char *c_text, *de_text;
	tp_plan_t *p;

	(void)state;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	for (size_t i = 0; i < 8; i++)
		names[i] = tp_fabric_host(f, i)->name;
	p = build(f, ctx, names, 8, NULL); /* predictions: fractions */
	c_text = json_of(p);
	assert_non_null(strstr(c_text, "\"predicted\": {"));
	if (!tp_test_comma_locale()) {
		tp_free(c_text);
		tp_plan_destroy(p);
		tp_cost_ctx_destroy(ctx);
		tp_fabric_destroy(f);
		skip();
	}
	de_text = json_of(p);
	assert_string_equal(de_text, c_text);
	roundtrip(p);
	tp_test_c_locale();
	tp_free(c_text);
	tp_free(de_text);
	tp_plan_destroy(p);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

static void expect_bad(const char *json, tp_err_t want, const char *needle)
{
	tp_plan_t *q = NULL;
	char *msg = NULL;
	tp_err_t err =
	    tp_plan_parse_json("p.json", json, strlen(json), &q, &msg);

	if (err != want)
		fail_msg("expected %s for '%s', got %s (%s)", tp_strerror(want),
			 needle, tp_strerror(err), msg ? msg : "");
	assert_null(q);
	assert_non_null(msg);
	assert_null(strchr(msg, '\n'));
	if (!strstr(msg, needle))
		fail_msg("message '%s' lacks '%s'", msg, needle);
	tp_free(msg);
}

/* j with its first `from` replaced by `to`: refused as expect_bad(). */
static void expect_bad_subst(const char *j, const char *from, const char *to,
			     tp_err_t want, const char *needle)
{
	char *bad = subst(j, from, to);

	expect_bad(bad, want, needle);
	free(bad);
}

static void test_json_hostile(void **state)
{
	tp_fabric_t *f = tp_test_rail(2, 4, 2, 2, 4);
	const char *names[8];
	tp_plan_t *p;
	char *j;

	(void)state;
	for (size_t i = 0; i < 8; i++)
		names[i] = tp_fabric_host(f, i)->name;
	p = build(f, NULL, names, 8, NULL);
	j = json_of(p);

	/* truncated anywhere: an error, never a crash or a plan */
	for (size_t len = 0; len < strlen(j); len += 1 + len / 50) {
		tp_plan_t *q = NULL;
		char *msg = NULL;
		assert_int_not_equal(tp_plan_parse_json("t", j, len, &q, &msg),
				     TP_OK);
		assert_null(q);
		tp_free(msg);
	}
	expect_bad("[]", TP_ERR_PARSE, "expected a JSON object");
	expect_bad("{\"format\": \"topoplace-fabric/1\"}", TP_ERR_FORMAT,
		   "format");
	expect_bad_subst(j, "topoplace-plan/1", "topoplace-plan/2",
			 TP_ERR_FORMAT, "format");
	expect_bad_subst(j, "\"rails\": 2,", "\"rails\": 2, \"extra\": 1,",
			 TP_ERR_PARSE, "plan: unknown key \"extra\"");
	/* a key twice, required or optional: never the first one read */
	expect_bad_subst(j, "\"rails\": 2,", "\"rails\": 2, \"rails\": 4,",
			 TP_ERR_PARSE, "plan: repeated key \"rails\"");
	expect_bad_subst(
	    j, "\"rails\": 2,",
	    "\"rails\": 2, \"host_segment\": true, \"host_segment\": true,",
	    TP_ERR_PARSE, "plan: repeated key \"host_segment\"");
	expect_bad_subst(j, "\"world_size\": 32", "\"world_size\": 33",
			 TP_ERR_PARSE, "world_size");
	expect_bad_subst(j, "\"rails\": 2,",
			 "\"rails\": 2, \"host_segment\": 0,", TP_ERR_PARSE,
			 "host_segment: expected true or false");
	/* a tree with a cycle: rank 1's parent in tree 0 is 2; make 2's 1 */
	expect_bad_subst(j,
			 "{\"rank\": 2, \"host\": \"dgx003\", \"parent\": 0,",
			 "{\"rank\": 2, \"host\": \"dgx003\", \"parent\": 1,",
			 TP_ERR_PARSE, "cycle");
	/* children that disagree with the parents */
	expect_bad_subst(j, "\"children\": [1, 3]", "\"children\": [3, 1]",
			 TP_ERR_PARSE, "children");
	/* a second root */
	expect_bad_subst(j,
			 "{\"rank\": 1, \"host\": \"dgx002\", \"parent\": 2,",
			 "{\"rank\": 1, \"host\": \"dgx002\", \"parent\": -1,",
			 TP_ERR_PARSE, "second root");
	/* groups must be runs of the ring */
	expect_bad_subst(j, "\"hosts\": [\"dgx001\", \"dgx002\"",
			 "\"hosts\": [\"dgx002\", \"dgx001\"", TP_ERR_PARSE,
			 "groups[0].hosts[0]");
	expect_bad_subst(j, "\"leader\": \"dgx001\"", "\"leader\": \"dgx002\"",
			 TP_ERR_PARSE, "leader");
	expect_bad_subst(j, "\"ring\": [\"dgx001\", \"dgx002\"",
			 "\"ring\": [\"dgx001\", \"dgx001\"", TP_ERR_PARSE,
			 "listed twice");
	expect_bad_subst(j, "\"rail\": 1, \"host\": \"dgx002\"",
			 "\"rail\": 0, \"host\": \"dgx002\"", TP_ERR_PARSE,
			 "rail_leaders[1].rail");
	expect_bad_subst(j, "\"algo\": \"", "\"algo\": \"x", TP_ERR_PARSE,
			 "recommend[0].algo");
	/* two ranks of a host on one GPU */
	expect_bad_subst(
	    j, "\"local_rank\": 1, \"rank\": 1, \"gpu\": 1,",
	    "\"local_rank\": 1, \"rank\": 1, \"gpu\": 0,", TP_ERR_PARSE,
	    "hosts[0].local_ranks[1].gpu: GPU 0 is local rank 0's");
	expect_bad_subst(j, "\"basis\": \"rule\"", "\"basis\": \"model\"",
			 TP_ERR_PARSE, "without a prediction");
	expect_bad_subst(j, "\n}\n", "\n} x", TP_ERR_PARSE, "trailing");
	/* NUL bytes after the document are not JSON white space */
	{
		size_t n = strlen(j);
		char *t = malloc(n + 3), *msg = NULL;
		tp_plan_t *q = NULL;

		assert_non_null(t);
		memcpy(t, j, n);
		memset(t + n, 0, 3);
		assert_int_equal(
		    tp_plan_parse_json("p.json", t, n + 3, &q, &msg),
		    TP_ERR_PARSE);
		assert_null(q);
		assert_non_null(strstr(msg, "control byte 0x00 at byte"));
		tp_free(msg);
		free(t);
	}
	/* cJSON ends a string at a decoded \u0000: "H\u0000other" would
	 * load as host H, a second text for one name */
	{
		char from[300], to[300];

		snprintf(from, sizeof(from), "\"name\": \"%s\"",
			 tp_plan_host(p, 0)->name);
		snprintf(to, sizeof(to), "\"name\": \"%s\\u0000other\"",
			 tp_plan_host(p, 0)->name);
		expect_bad_subst(j, from, to, TP_ERR_PARSE,
				 "\\u0000 in a string at byte");
	}
	/* a raw control byte: invalid JSON cJSON takes, inside a string
	 * (kept in the name) or between tokens (skipped as white space) */
	{
		char from[300], to[300];

		snprintf(from, sizeof(from), "\"name\": \"%s\"",
			 tp_plan_host(p, 0)->name);
		snprintf(to, sizeof(to), "\"name\": \"%s\x01\"",
			 tp_plan_host(p, 0)->name);
		expect_bad_subst(j, from, to, TP_ERR_PARSE,
				 "control byte 0x01 at byte");
	}
	expect_bad_subst(j, "\n}\n", "\n}\x0c\n", TP_ERR_PARSE,
			 "control byte 0x0c at byte");
	/* "host_segment": false is written only beside predictions */
	expect_bad_subst(j, "\"predicted\": null",
			 "\"predicted\": null, \"host_segment\": false",
			 TP_ERR_PARSE,
			 "host_segment: false without predictions");
	expect_bad_subst(j, "\"predicted\": null",
			 "\"predicted\": null, \"hier_pipelined\": [true, "
			 "true, true, true, true]",
			 TP_ERR_PARSE, "hier_pipelined: without predictions");
	/* a node count far beyond the ring: the ring's length is the
	 * error, not the allocation that count would ask for */
	expect_bad_subst(j, "\"nodes\": 8,", "\"nodes\": 4294967294,",
			 TP_ERR_PARSE, "ring: expected 4294967294 entries");
	/* two groups naming one level-1 group */
	expect_bad_subst(j, "{\"id\": 1,", "{\"id\": 0,", TP_ERR_PARSE,
			 "groups: id 0 twice");
	/* a recommendation the plan does not give: without predictions the
	 * fixed rule's (a tree below 1 MiB on 8 hosts) */
	expect_bad_subst(
	    j, "\"algo\": \"tree\", \"basis\": \"rule\"",
	    "\"algo\": \"ring\", \"basis\": \"rule\"", TP_ERR_PARSE,
	    "recommend[0]: ring by rule, where the plan gives tree "
	    "by rule (no prediction: the fixed rule)");
	/* a rank bound to another HCA than NCCL_IB_HCA names for its rail */
	{
		char from[300], to[300];
		const char *hca = tp_plan_host(p, 0)->hcas[0];

		assert_non_null(hca);
		snprintf(from, sizeof(from), "\"hcas\": [\"%s\"", hca);
		snprintf(to, sizeof(to), "\"hcas\": [\"%sx\"", hca);
		expect_bad_subst(j, from, to, TP_ERR_PARSE,
				 "where hosts[0].hcas[0] is");
	}
	tp_free(j);
	tp_plan_destroy(p);
	tp_fabric_destroy(f);

	/* a spine's groups are one run: 3 leaves under one spine, the
	 * middle one's spine changed, the last one's spine is met again */
	f = tp_test_fat_tree_il(3, 2, 1);
	for (size_t i = 0; i < 6; i++)
		names[i] = tp_fabric_host(f, i)->name;
	p = build(f, NULL, names, 6, NULL);
	char *js = NULL, *at;
	assert_int_equal(tp_plan_to_json(p, &js), TP_OK);
	at = strstr(js, "\"spine\": ");
	assert_non_null(at);
	assert_non_null(at = strstr(at + 1, "\"spine\": "));
	char *bad = malloc(strlen(js) + 16);
	size_t pre = (size_t)(at - js) + 9;
	memcpy(bad, js, pre);
	strcpy(bad + pre, "99999");
	strcat(bad, strchr(at + 9, ','));
	expect_bad(bad, TP_ERR_PARSE,
		   "groups[2].spine: 3 again after another spine");
	free(bad);
	/* a spine with no group id: the builder never writes one */
	expect_bad_subst(js, "{\"id\": 0,", "{\"id\": null,", TP_ERR_PARSE,
			 "groups[0].spine: a spine without a group id");
	tp_free(js);
	tp_plan_destroy(p);
	tp_fabric_destroy(f);
}

/* ---- rails and HCAs ---- */

static void test_rail_leaders(void **state)
{
	tp_fabric_t *f = tp_test_rail(3, 4, 4, 2, 8);
	const char *names[12];
	tp_plan_t *p;

	(void)state;
	for (size_t i = 0; i < 12; i++)
		names[i] = tp_fabric_host(f, i)->name;
	shuffle(names, 12, 5);
	/* 10 of them: groups of 4, 4 and 2 hosts */
	p = build(f, NULL, names, 10, NULL);
	assert_int_equal(tp_plan_nrails(p), 4);
	for (size_t g = 0; g < tp_plan_ngroups(p); g++) {
		const tp_plan_group_t *gp = tp_plan_group(p, g);
		assert_int_equal(gp->leader, gp->first);
		assert_int_equal(gp->nrail_leaders, 4);
		for (size_t i = 0; i < 4; i++) {
			const tp_plan_rail_leader_t *rl = &gp->rail_leaders[i];
			const tp_plan_host_t *h =
			    tp_plan_host(p, rl->node_rank);
			assert_int_equal(rl->rail, (int)i);
			assert_true(rl->node_rank >= gp->first &&
				    rl->node_rank < gp->first + gp->nhosts);
			assert_int_equal(h->ranks[rl->local_rank].rail,
					 rl->rail);
			/* spread: rail i on the group's (i mod size)-th host */
			assert_int_equal(rl->node_rank,
					 gp->first + i % gp->nhosts);
			/* the lowest local rank on that rail */
			assert_int_equal(rl->local_rank, 2 * i);
		}
	}
	tp_plan_destroy(p);
	tp_fabric_destroy(f);

	/* one rail: no rail leaders */
	f = tp_test_fat_tree_il(2, 2, 8);
	for (size_t i = 0; i < 4; i++)
		names[i] = tp_fabric_host(f, i)->name;
	p = build(f, NULL, names, 4, NULL);
	assert_int_equal(tp_plan_nrails(p), 1);
	for (size_t g = 0; g < tp_plan_ngroups(p); g++)
		assert_int_equal(tp_plan_group(p, g)->nrail_leaders, 0);
	tp_plan_destroy(p);
	tp_fabric_destroy(f);
}

static void test_gpu_hcas(void **state)
{
	tp_fabric_t *f = tp_test_rail(2, 3, 4, 2, 8),
		    *g = tp_test_fat_tree_il(2, 2, 0);
	const char *names[6];
	tp_plan_opts_t o;
	tp_plan_t *p;
	char dev[32];

	(void)state;
	for (size_t i = 0; i < 6; i++)
		names[i] = tp_fabric_host(f, i)->name;
	shuffle(names, 6, 3);
	p = build(f, NULL, names, 6, NULL);
	assert_int_equal(tp_plan_world_size(p), 48);
	for (size_t r = 0; r < 6; r++) {
		const tp_plan_host_t *h = tp_plan_host(p, r);
		assert_int_equal(tp_plan_rank_of(p, h->name), r);
		assert_int_equal(h->node_rank, r);
		assert_int_equal(h->first_rank, 8 * r);
		assert_int_equal(h->nranks, 8);
		for (int rl = 0; rl < 4; rl++) {
			snprintf(dev, sizeof(dev), "mlx5_%d", rl);
			assert_string_equal(h->hcas[rl], dev);
		}
		for (uint32_t l = 0; l < 8; l++) {
			/* the generator puts GPUs 2k, 2k+1 next to mlx5_k */
			snprintf(dev, sizeof(dev), "mlx5_%u", l / 2);
			assert_int_equal(h->ranks[l].rank, 8 * r + l);
			assert_int_equal(h->ranks[l].gpu, (int)l);
			assert_int_equal(h->ranks[l].rail, (int)(l / 2));
			assert_string_equal(h->ranks[l].hca, dev);
		}
	}
	assert_int_equal(tp_plan_rank_of(p, "nosuch"), TP_PLAN_NONE);
	tp_plan_destroy(p);

	/* fewer ranks than GPUs */
	tp_plan_opts_defaults(&o);
	o.gpus_per_host = 2;
	p = build(f, NULL, names, 6, &o);
	assert_int_equal(tp_plan_world_size(p), 12);
	assert_string_equal(tp_plan_host(p, 0)->ranks[1].hca, "mlx5_0");
	tp_plan_destroy(p);

	/* GPU-less hosts: one rank each by default, or as many as asked,
	 * with no GPU index and the host's one HCA */
	for (size_t i = 0; i < 4; i++)
		names[i] = tp_fabric_host(g, i)->name;
	p = build(g, NULL, names, 4, NULL);
	assert_int_equal(tp_plan_world_size(p), 4);
	assert_int_equal(tp_plan_host(p, 0)->ranks[0].gpu, -1);
	tp_plan_destroy(p);
	o.gpus_per_host = 4;
	p = build(g, NULL, names, 4, &o);
	assert_int_equal(tp_plan_world_size(p), 16);
	assert_int_equal(tp_plan_host(p, 3)->first_rank, 12);
	assert_string_equal(tp_plan_host(p, 3)->ranks[3].hca, "mlx5_0");
	assert_int_equal(tp_plan_host(p, 3)->ranks[3].rail, 0);
	tp_plan_destroy(p);
	tp_fabric_destroy(f);
	tp_fabric_destroy(g);
}

/* Two subnets, two CAs of each host on each: hcas[] has each subnet's
 * first, more_hcas the others; ranks bound to them load back (a rank on
 * a rail's second CA was refused), and the loader checks more_hcas. */
static void test_subnet_hcas(void **state)
{
	tp_fabric_t *f = tp_test_subnets(2, 2, 2, 0);
	const char *names[2] = {"host1", "host2"};
	const char *more = "\"more_hcas\": [{\"hca\": \"mlx5_1\", "
			   "\"rail\": 0}, {\"hca\": \"mlx5_3\", \"rail\": 1}]";
	tp_plan_opts_t o;
	tp_plan_t *p;
	char *j;

	(void)state;
	tp_plan_opts_defaults(&o);
	o.gpus_per_host = 4;
	p = build(f, NULL, names, 2, &o);
	assert_int_equal(tp_plan_nrails(p), 2);
	for (size_t r = 0; r < 2; r++) {
		const tp_plan_host_t *h = tp_plan_host(p, r);
		assert_string_equal(h->hcas[0], "mlx5_0");
		assert_string_equal(h->hcas[1], "mlx5_2");
		assert_int_equal(h->nmore_hcas, 2);
		assert_string_equal(h->more_hcas[0].dev, "mlx5_1");
		assert_int_equal(h->more_hcas[0].rail, 0);
		assert_string_equal(h->more_hcas[1].dev, "mlx5_3");
		assert_int_equal(h->more_hcas[1].rail, 1);
		assert_string_equal(h->ranks[1].hca, "mlx5_1");
		assert_string_equal(h->ranks[3].hca, "mlx5_3");
	}
	roundtrip(p);
	j = json_of(p);
	assert_non_null(strstr(j, more));
	expect_bad_subst(j, "{\"hca\": \"mlx5_1\"", "{\"hca\": \"mlx5_0\"",
			 TP_ERR_PARSE,
			 "hosts[0].more_hcas[0].hca: \"mlx5_0\" is "
			 "hosts[0].hcas[0]");
	expect_bad_subst(j, more,
			 "\"more_hcas\": [{\"hca\": \"mlx5_3\", \"rail\": 1}, "
			 "{\"hca\": \"mlx5_1\", \"rail\": 0}]",
			 TP_ERR_PARSE, "hosts[0].more_hcas[1].rail: expected");
	expect_bad_subst(j, more,
			 "\"more_hcas\": [{\"hca\": \"mlx5_1\", \"rail\": 0}, "
			 "{\"hca\": \"mlx5_1\", \"rail\": 1}]",
			 TP_ERR_PARSE, "more_hcas[1].hca: \"mlx5_1\" listed");
	expect_bad_subst(j, more, "\"more_hcas\": []", TP_ERR_PARSE,
			 "hosts[0].more_hcas: empty");
	expect_bad_subst(j, "{\"hca\": \"mlx5_1\"", "{\"hca\": null",
			 TP_ERR_PARSE, "more_hcas[0].hca: expected a string");
	expect_bad_subst(j, "{\"hca\": \"mlx5_1\"", "{\"hca\": \"mlx5_9\"",
			 TP_ERR_PARSE,
			 "hosts[0].local_ranks[1].hca: \"mlx5_1\", where "
			 "hosts[0].hcas[0] is \"mlx5_0\" (nor in more_hcas)");
	expect_bad_subst(
	    j, "\"hcas\": [\"mlx5_0\", \"mlx5_2\"]",
	    "\"hcas\": [null, \"mlx5_2\"]", TP_ERR_PARSE,
	    "hosts[0].more_hcas[0].rail: hosts[0].hcas[0] is null");
	expect_bad_subst(j, "{\"hca\": \"mlx5_1\", \"rail\": 0}",
			 "{\"hca\": \"mlx5_1\", \"rail\": 0, \"x\": 1}",
			 TP_ERR_PARSE, "unknown key \"x\"");
	tp_free(j);
	tp_plan_destroy(p);
	tp_fabric_destroy(f);
}

/* ---- predictions ---- */

/* Plan p's prediction of algorithm a at its size i, which must equal
 * the cost model's direct one on state (NULL: idle) for ring[0..n) with
 * gpus[]: the plan rescales one prediction per algorithm. */
static double model_checked(const tp_cost_ctx_t *ctx, const tp_state_t *s,
			    const tp_plan_t *p, size_t i, int a,
			    const uint32_t *ring, const int *gpus, size_t n)
{
	tp_cost_t c;
	double got = tp_plan_predict_s(p, i, (tp_algo_t)a);

	assert_int_equal(tp_cost_predict(ctx, s, ring, gpus, n,
					 tp_plan_size(p, i), (tp_algo_t)a, &c),
			 TP_OK);
	if (fabs(got - c.seconds) > 1e-9 * c.seconds)
		fail_msg("%s at %g: plan %.15g, model %.15g",
			 tp_algo_name((tp_algo_t)a), tp_plan_size(p, i), got,
			 c.seconds);
	return got;
}

static void test_predictions(void **state)
{
	tp_fabric_t *f = tp_test_rail(3, 4, 2, 2, 8);
	tp_cost_ctx_t *ctx = NULL;
	const char *names[12];
	uint32_t ring[12];
	int gpus[12];
	tp_plan_opts_t o;
	tp_plan_t *p;

	(void)state;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	for (size_t i = 0; i < 12; i++)
		names[i] = tp_fabric_host(f, i)->name;
	shuffle(names, 12, 11);
	p = build(f, ctx, names, 10, NULL);
	assert_true(tp_plan_predicted(p));
	assert_int_equal(tp_plan_nsizes(p), 5);
	assert_true(tp_plan_size(p, 0) == 65536);
	assert_true(tp_plan_size(p, 4) == 1073741824.0);
	plan_ring(f, p, ring);
	for (size_t r = 0; r < 10; r++)
		gpus[r] = 8;
	for (size_t i = 0; i < tp_plan_nsizes(p); i++) {
		int best = 0;
		for (int a = 0; a < TP_PLAN_NALGOS; a++) {
			double got =
			    model_checked(ctx, NULL, p, i, a, ring, gpus, 10);
			if (got < tp_plan_predict_s(p, i, (tp_algo_t)best))
				best = a;
		}
		assert_int_equal(tp_plan_recommend(p, i), best);
		assert_string_equal(tp_plan_recommend_basis(p, i), "model");
	}
	tp_plan_destroy(p);

	/* no predictions: by opts or without a context; rule basis */
	tp_plan_opts_defaults(&o);
	o.predict = false;
	p = build(f, ctx, names, 10, &o);
	assert_false(tp_plan_predicted(p));
	assert_true(isnan(tp_plan_predict_s(p, 0, TP_ALGO_RING)));
	assert_string_equal(tp_plan_recommend_basis(p, 0), "rule");
	assert_int_equal(tp_plan_recommend(p, 0), TP_ALGO_TREE);
	/* 8 ranks a host on 2 rails: the ring would cross on one NIC */
	assert_int_equal(tp_plan_recommend(p, 4), TP_ALGO_HIERARCHICAL);
	tp_plan_destroy(p);
	/* one rank a host: ring */
	o.gpus_per_host = 1;
	p = build(f, ctx, names, 10, &o);
	assert_string_equal(tp_plan_recommend_basis(p, 4), "rule");
	assert_int_equal(tp_plan_recommend(p, 4), TP_ALGO_RING);
	tp_plan_destroy(p);

	/* two hosts of 8 GPUs and 8 NICs: priced as libtopoplace-coll
	 * runs its ring and trees (coll_rings: one NIC pair a host
	 * boundary, the trees' anchors'), the recommendation at 1 GiB is
	 * the hierarchical schedule, each rank on its own NIC; priced as
	 * NCCL's channels over all 8 pairs the model finds the tree
	 * faster */
	tp_fabric_t *g = tp_test_fat_tree_deg(2, 1, 2, 0, false, 0, 0);
	const char *two[2] = {tp_fabric_host(g, 0)->name,
			      tp_fabric_host(g, 1)->name};
	tp_cost_params_t cp;
	tp_cost_ctx_t *coll = NULL, *nccl = NULL;
	tp_cost_params_defaults(&cp);
	assert_int_equal(tp_cost_ctx_create(g, &cp, &nccl), TP_OK);
	cp.coll_rings = true;
	assert_int_equal(tp_cost_ctx_create(g, &cp, &coll), TP_OK);
	p = build(g, coll, two, 2, NULL);
	assert_int_equal(tp_plan_recommend(p, 4), TP_ALGO_HIERARCHICAL);
	assert_true(tp_plan_predict_s(p, 4, TP_ALGO_RING) >
		    4 * tp_plan_predict_s(p, 4, TP_ALGO_HIERARCHICAL));
	tp_plan_destroy(p);
	p = build(g, nccl, two, 2, NULL);
	assert_int_equal(tp_plan_recommend(p, 4), TP_ALGO_TREE);
	tp_plan_destroy(p);
	tp_cost_ctx_destroy(coll);
	tp_cost_ctx_destroy(nccl);
	tp_fabric_destroy(g);

	/* custom sizes */
	static const double sizes[] = {4096, 8192};
	tp_plan_opts_defaults(&o);
	o.sizes = sizes;
	o.nsizes = 2;
	p = build(f, NULL, names, 2, &o);
	assert_int_equal(tp_plan_nsizes(p), 2);
	assert_true(tp_plan_size(p, 1) == 8192);
	assert_true(tp_plan_size(p, 2) == 0);
	tp_plan_destroy(p);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

/* A link state prices the plan: the predictions are the cost model's on
 * that state (every switch-to-switch link at a quarter of its lanes, one
 * cable of a host at 20 Gb/s of other traffic), slower than on the idle
 * fabric; the schedule is the same (its JSON without the model's part);
 * a state of another fabric is refused, naming it. */
static void test_state_prices(void **state)
{
	tp_fabric_t *f = tp_test_rail(3, 4, 2, 2, 8);
	tp_fabric_t *g = tp_test_rail(3, 4, 2, 2, 8);
	tp_cost_ctx_t *ctx = NULL;
	tp_state_t *s = tp_state_create(f), *other = tp_state_create(g);
	const char *names[12];
	uint32_t ring[12];
	int gpus[12];
	tp_plan_opts_t o;
	tp_plan_t *idle, *p = NULL;
	char *a = NULL, *b = NULL, *msg = NULL;

	(void)state;
	assert_non_null(s);
	assert_non_null(other);
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	for (size_t l = 0; l < tp_fabric_nlinks(f); l++) {
		const tp_link_t *k = tp_fabric_link(f, l);
		if (k->kind[0] == TP_NODE_SWITCH &&
		    k->kind[1] == TP_NODE_SWITCH)
			assert_int_equal(
			    tp_state_set_link(s, (uint32_t)l, 0.25, 0), TP_OK);
		else if (k->kind[0] == TP_NODE_CA || k->kind[1] == TP_NODE_CA)
			assert_int_equal(
			    tp_state_set_link(s, (uint32_t)l, 1, 20), TP_OK);
	}
	for (size_t i = 0; i < 12; i++)
		names[i] = tp_fabric_host(f, i)->name;
	shuffle(names, 12, 5);
	idle = build(f, ctx, names, 10, NULL);
	tp_plan_opts_defaults(&o);
	o.state = s;
	p = build(f, ctx, names, 10, &o);
	plan_ring(f, p, ring);
	for (size_t r = 0; r < 10; r++)
		gpus[r] = 8;
	for (size_t i = 0; i < tp_plan_nsizes(p); i++)
		for (int x = 0; x < TP_PLAN_NALGOS; x++) {
			double got =
			    model_checked(ctx, s, p, i, x, ring, gpus, 10);
			if (!(got > tp_plan_predict_s(idle, i, (tp_algo_t)x)))
				fail_msg(
				    "%s at %g: %.15g on the state, %.15g "
				    "idle",
				    tp_algo_name((tp_algo_t)x),
				    tp_plan_size(p, i), got,
				    tp_plan_predict_s(idle, i, (tp_algo_t)x));
		}
	assert_int_equal(tp_plan_to_json_schedule(idle, &a), TP_OK);
	assert_int_equal(tp_plan_to_json_schedule(p, &b), TP_OK);
	assert_string_equal(a, b);
	tp_plan_destroy(p);
	p = NULL;

	o.state = other;
	assert_int_equal(tp_plan_build(f, ctx, names, 10, &o, &p, &msg),
			 TP_ERR_INVAL);
	assert_null(p);
	assert_non_null(strstr(msg, "another fabric"));
	tp_free(msg);
	tp_free(a);
	tp_free(b);
	tp_plan_destroy(idle);
	tp_state_destroy(s);
	tp_state_destroy(other);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
	tp_fabric_destroy(g);
}

/* NICs by rate: host node001's second NIC at half width weighs its
 * local rank 1 half the others, on every host of a plan that holds it
 * (none without it, none on the clean fabric); the JSON carries the
 * weights and reads them back; the predictions are the cost model's by
 * rate, the hierarchical one faster than an even split's on those
 * hosts; a plan and a cost context that disagree are refused, and so are
 * weights that cannot be. */
static void test_rank_weights(void **state)
{
	tp_fabric_t *clean =
	    tp_test_fat_tree_gen(2, 1, 2, 0, 4, false, 0, 0, 0);
	tp_fabric_t *f;
	tp_cost_params_t cp;
	tp_cost_ctx_t *ctx = NULL, *even = NULL;
	tp_plan_opts_t o;
	const char *names[4];
	uint32_t ring[4], nw;
	int gpus[4] = {4, 4, 4, 4};
	tp_plan_t *p, *q = NULL;
	char *j, *msg = NULL;

	(void)state;
	assert_non_null(clean);
	f = tp_test_half_cable(clean, 0, 1);
	tp_cost_params_defaults(&cp);
	cp.nics_by_rate = true;
	assert_int_equal(tp_cost_ctx_create(f, &cp, &ctx), TP_OK);
	assert_int_equal(tp_cost_ctx_create(f, NULL, &even), TP_OK);
	for (size_t i = 0; i < 4; i++)
		names[i] = tp_fabric_host(f, i)->name;
	tp_plan_opts_defaults(&o);
	o.nics_by_rate = true;
	p = build(f, ctx, names, 4, &o);
	const uint32_t *w = tp_plan_rank_weights(p, &nw);
	assert_non_null(w);
	assert_int_equal(nw, 4);
	assert_int_equal(w[0], 1024);
	assert_int_equal(w[1], 512);
	assert_int_equal(w[2], 1024);
	assert_int_equal(w[3], 1024);
	j = json_of(p);
	assert_non_null(strstr(j, "\"rank_weights\": [1024, 512, 1024, 1024]"));
	roundtrip(p);
	plan_ring(f, p, ring);
	for (int a = 0; a < TP_PLAN_NALGOS; a++) {
		tp_cost_t c;
		assert_int_equal(tp_cost_predict(ctx, NULL, ring, gpus, 4,
						 tp_plan_size(p, 4),
						 (tp_algo_t)a, &c),
				 TP_OK);
		assert_true(fabs(tp_plan_predict_s(p, 4, (tp_algo_t)a) -
				 c.seconds) <= 1e-9 * c.seconds);
	}
	tp_plan_t *pe = build(f, even, names, 4, NULL);
	assert_null(tp_plan_rank_weights(pe, &nw));
	assert_int_equal(nw, 0);
	assert_true(tp_plan_predict_s(p, 4, TP_ALGO_HIERARCHICAL) <
		    0.9 * tp_plan_predict_s(pe, 4, TP_ALGO_HIERARCHICAL));
	tp_plan_destroy(pe);

	/* weights that cannot be */
	expect_bad_subst(j, "[1024, 512,", "[0, 512,", TP_ERR_PARSE,
			 "rank_weights[0]");
	expect_bad_subst(j, "[1024, 512,", "[1024,", TP_ERR_PARSE,
			 "rank_weights");
	expect_bad_subst(j, "[1024, 512,", "[1024, 1e9,", TP_ERR_PARSE,
			 "rank_weights[1]");
	tp_free(j);
	tp_plan_destroy(p);

	/* the plan and the cost model disagree */
	assert_int_equal(tp_plan_build(f, even, names, 4, &o, &q, &msg),
			 TP_ERR_INVAL);
	assert_null(q);
	assert_non_null(strstr(msg, "NICs by rate"));
	tp_free(msg);

	/* without the slow NIC's host, and on the clean fabric: even */
	o.predict = false;
	p = build(f, NULL, names + 1, 3, &o);
	assert_null(tp_plan_rank_weights(p, NULL));
	assert_null(strstr(j = json_of(p), "rank_weights"));
	tp_free(j);
	tp_plan_destroy(p);
	p = build(clean, NULL, names, 4, &o);
	assert_null(tp_plan_rank_weights(p, NULL));
	tp_plan_destroy(p);
	tp_cost_ctx_destroy(even);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
	tp_fabric_destroy(clean);
}

/* ---- allocation failure ---- */

static long fail_after = -1;

static void *f_malloc(size_t n)
{
	return fail_after-- == 0 ? NULL : malloc(n);
}

static void *f_calloc(size_t n, size_t s)
{
	return fail_after-- == 0 ? NULL : calloc(n, s);
}

static void *f_realloc(void *p, size_t n)
{
	return fail_after-- == 0 ? NULL : realloc(p, n);
}

static void test_nomem(void **state)
{
	static const tp_allocator_t a = {f_malloc, f_calloc, f_realloc, free};
	tp_fabric_t *f = tp_test_rail(2, 4, 2, 2, 8);
	tp_cost_ctx_t *ctx = NULL;
	const char *names[8];
	char *ref = NULL;
	bool done_build = false, done_parse = false;
	/* each call is retried until its first success: unless some try
	 * failed first, no failure path ran */
	int build_nomem = 0, parse_nomem = 0;

	(void)state;
	assert_int_equal(tp_cost_ctx_create(f, NULL, &ctx), TP_OK);
	for (size_t i = 0; i < 8; i++)
		names[i] = tp_fabric_host(f, i)->name;
	{
		tp_plan_t *p = build(f, ctx, names, 8, NULL);
		ref = json_of(p);
		tp_plan_destroy(p);
	}
	for (long k = 0; !done_build || !done_parse; k++) {
		tp_plan_t *p = NULL;
		char *msg = NULL;
		tp_err_t err;
		tp_alloc_set(&a);
		fail_after = k;
		if (!done_build) {
			err = tp_plan_build(f, ctx, names, 8, NULL, &p, &msg);
			tp_alloc_set(NULL);
			assert_true(err == TP_OK || err == TP_ERR_NOMEM);
			done_build = err == TP_OK;
			build_nomem += err == TP_ERR_NOMEM;
			tp_plan_destroy(p);
			tp_free(msg);
			p = NULL;
			msg = NULL;
			tp_alloc_set(&a);
			fail_after = k;
		}
		if (!done_parse) {
			err =
			    tp_plan_parse_json("p", ref, strlen(ref), &p, &msg);
			tp_alloc_set(NULL);
			assert_true(err == TP_OK || err == TP_ERR_NOMEM);
			done_parse = err == TP_OK;
			parse_nomem += err == TP_ERR_NOMEM;
			tp_plan_destroy(p);
			tp_free(msg);
		}
		tp_alloc_set(NULL);
		assert_true(k < 100000);
	}
	assert_true(build_nomem > 0);
	assert_true(parse_nomem > 0);
	tp_free(ref);
	tp_cost_ctx_destroy(ctx);
	tp_fabric_destroy(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_minimal),
	    cmocka_unit_test(test_trees_valid),
	    cmocka_unit_test(test_trees_nccl),
	    cmocka_unit_test(test_deterministic),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_json_roundtrip),
	    cmocka_unit_test(test_json_locale),
	    cmocka_unit_test(test_json_hostile),
	    cmocka_unit_test(test_rail_leaders),
	    cmocka_unit_test(test_gpu_hcas),
	    cmocka_unit_test(test_subnet_hcas),
	    cmocka_unit_test(test_predictions),
	    cmocka_unit_test(test_state_prices),
	    cmocka_unit_test(test_rank_weights),
	    cmocka_unit_test(test_nomem),
	};

	return cmocka_run_group_tests_name("runtime", tests, NULL, NULL);
}
