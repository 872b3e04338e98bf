/* Unit tests of plugin/'s Slurm-free half: topoplace.conf, the switch
 * tree topology/topoplace gives Slurm 22.05 and the 24.11 plugin's
 * decision writer queue. */
#include "config.h"

#include "tp_test.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_plugin.h"
#include "tp_topology.h"

/* ---- topoplace.conf ---- */

static void test_defaults(void **state)
{
	tp_pconf_t c;

	tp_pconf_defaults(&c);
	assert_null(c.fabric_file);
	assert_true(c.rank_nodes);
	assert_true(c.nvlink_level);
	assert_true(c.set_switches);
	assert_int_equal(c.switch_wait, 300);
	assert_int_equal(c.min_nodes, 2);
	assert_int_equal(c.max_nodes, 0);
	assert_int_equal(c.gpus_per_node, 0);
	assert_null(c.partitions);
	assert_null(c.link_state);
	assert_int_equal(c.comm_share, 30);
	assert_int_equal(c.price_budget, 8);
	assert_int_equal(c.plan_max_ranks, 131072);
	tp_pconf_free(&c);
	tp_pconf_free(&c); /* idempotent */
	tp_pconf_free(NULL);
}

static void test_parse_ok(void **state)
{
	tp_pconf_t c;
	char *err = NULL;
	const char *text = "# topoplace.conf\n"
			   "FabricFile=/etc/slurm/fabric.json\n"
			   "\n"
			   "  switchwait=60   MINNODES=4 # two on one line\r\n"
			   "Partitions=gpu,big RankNodes=no\n"
			   "NVLinkLevel=off SetSwitches=true\n"
			   /* blanks around '=', as Slurm's files allow */
			   "MaxNodes = 64 GpusPerNode= 8";

	tp_pconf_defaults(&c);
	assert_int_equal(tp_pconf_parse("t.conf", text, &c, &err), TP_OK);
	assert_null(err);
	assert_string_equal(c.fabric_file, "/etc/slurm/fabric.json");
	assert_int_equal(c.switch_wait, 60);
	assert_int_equal(c.min_nodes, 4);
	assert_int_equal(c.max_nodes, 64);
	assert_int_equal(c.gpus_per_node, 8);
	assert_string_equal(c.partitions, "gpu,big");
	assert_false(c.rank_nodes);
	assert_false(c.nvlink_level);
	assert_true(c.set_switches);
	tp_pconf_free(&c);
}

static void test_parse_quoted(void **state)
{
	tp_pconf_t c;

	tp_pconf_defaults(&c);
	assert_int_equal(tp_pconf_parse("q",
					"FabricFile=\"/a b/f#1.json\" "
					"SwitchWait=0\n",
					&c, NULL),
			 TP_OK);
	assert_string_equal(c.fabric_file, "/a b/f#1.json");
	assert_int_equal(c.switch_wait, 0);
	tp_pconf_free(&c);
}

/* Each bad input: the error code and the exact message. */
static void test_parse_errors(void **state)
{
	static const struct {
		const char *text;
		tp_err_t err;
		const char *msg;
	} cases[] = {
	    {"SwitchWait=5\n\nFabric=/x\n", TP_ERR_PARSE,
	     "t.conf:3: unknown key 'Fabric'"},
	    {"SwitchWait=5 Bogus=1\n", TP_ERR_PARSE,
	     "t.conf:1: unknown key 'Bogus'"},
	    {"RankNodes=maybe\n", TP_ERR_PARSE,
	     "t.conf:1: RankNodes=maybe: expected yes or no"},
	    {"#\nMinNodes=1\n", TP_ERR_RANGE,
	     "t.conf:2: MinNodes=1: out of range 2..1000000"},
	    {"SwitchWait=604801\n", TP_ERR_RANGE,
	     "t.conf:1: SwitchWait=604801: out of range 0..604800"},
	    {"SwitchWait=99999999999999999999999\n", TP_ERR_RANGE,
	     "t.conf:1: SwitchWait=99999999999999999999999: out of "
	     "range 0..604800"},
	    {"PriceBudget=1001\n", TP_ERR_RANGE,
	     "t.conf:1: PriceBudget=1001: out of range 0..1000"},
	    {"CommShare=101\n", TP_ERR_RANGE,
	     "t.conf:1: CommShare=101: out of range 0..100"},
	    {"MinNodes=5 MaxNodes=3\n", TP_ERR_RANGE,
	     "t.conf:1: MinNodes=5 is above MaxNodes=3 (0: no limit): no job "
	     "would be touched"},
	    {"MaxNodes=1\n", TP_ERR_RANGE,
	     "t.conf:1: MinNodes=2 is above MaxNodes=1 (0: no limit): no job "
	     "would be touched"},
	    /* the later of the two keys' lines, either order */
	    {"MaxNodes=2\n#\nMinNodes=4\n", TP_ERR_RANGE,
	     "t.conf:3: MinNodes=4 is above MaxNodes=2 (0: no limit): no job "
	     "would be touched"},
	    {"MinNodes=4\nMaxNodes=2\n", TP_ERR_RANGE,
	     "t.conf:2: MinNodes=4 is above MaxNodes=2 (0: no limit): no job "
	     "would be touched"},
	    {"SwitchWait=-1\n", TP_ERR_PARSE,
	     "t.conf:1: SwitchWait=-1: expected a non-negative integer"},
	    {"SwitchWait=10s\n", TP_ERR_PARSE,
	     "t.conf:1: SwitchWait=10s: expected a non-negative integer"},
	    {"SwitchWait=1\nswitchwait=2\n", TP_ERR_PARSE,
	     "t.conf:2: SwitchWait given twice"},
	    {"FabricFile\n", TP_ERR_PARSE,
	     "t.conf:1: 'FabricFile': expected Key=Value"},
	    {"=x\n", TP_ERR_PARSE, "t.conf:1: '=x': expected Key=Value"},
	    {"FabricFile=\n", TP_ERR_PARSE,
	     "t.conf:1: FabricFile=: empty value"},
	    /* a blank after '=' and then a pair: no value */
	    {"FabricFile= RankNodes=no\n", TP_ERR_PARSE,
	     "t.conf:1: FabricFile=: empty value"},
	    {"FabricFile =\n", TP_ERR_PARSE,
	     "t.conf:1: FabricFile=: empty value"},
	    {"Partitions=a,,b\n", TP_ERR_PARSE,
	     "t.conf:1: Partitions=a,,b: empty item in list"},
	    {"Partitions=a,\n", TP_ERR_PARSE,
	     "t.conf:1: Partitions=a,: empty item in list"},
	    /* " cpu" would never match a partition */
	    {"Partitions=\"gpu, cpu\"\n", TP_ERR_PARSE,
	     "t.conf:1: Partitions=gpu, cpu: blank in list (items are "
	     "separated by ',' alone)"},
	    /* tp_oneline shows the tab as ? */
	    {"Partitions=\"gpu\t\"\n", TP_ERR_PARSE,
	     "t.conf:1: Partitions=gpu?: blank in list (items are "
	     "separated by ',' alone)"},
	    {"FabricFile=\"/x\n", TP_ERR_PARSE,
	     "t.conf:1: FabricFile: unterminated quote"},
	    {"FabricFile=\"/x\"y\n", TP_ERR_PARSE,
	     "t.conf:1: FabricFile: text after closing quote"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tp_pconf_t c;
		char *err = NULL;

		tp_pconf_defaults(&c);
		c.switch_wait = 77; /* must survive a failed parse */
		assert_int_equal(
		    tp_pconf_parse("t.conf", cases[i].text, &c, &err),
		    cases[i].err);
		assert_non_null(err);
		assert_string_equal(err, cases[i].msg);
		assert_int_equal(c.switch_wait, 77);
		tp_free(err);
		tp_pconf_free(&c);
	}
}

static void test_load(void **state)
{
	char path[] = "/tmp/tp-pconf.XXXXXX";
	int fd = mkstemp(path);
	tp_pconf_t c;
	char *err = NULL;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "FabricFile=f.json\n", 18), 18);
	close(fd);
	tp_pconf_defaults(&c);
	assert_int_equal(tp_pconf_load(path, &c, &err), TP_OK);
	assert_string_equal(c.fabric_file, "f.json");
	unlink(path);
	assert_int_equal(tp_pconf_load(path, &c, &err), TP_ERR_NOTFOUND);
	assert_non_null(err);
	tp_free(err);
	assert_string_equal(c.fabric_file, "f.json");
	tp_pconf_free(&c);
}

/* topoplace.conf is read as slurmctld reads it: a FIFO nobody writes is
 * refused at once (alarm: a hang fails instead of stalling the suite),
 * naming the file; a directory too; the configuration stays. */
static void test_load_not_regular(void **state)
{
	char dir[] = "/tmp/tp-pconf-dir.XXXXXX", fifo[64], want[160];
	tp_pconf_t c;
	char *err = NULL;

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/topoplace.conf", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	tp_pconf_defaults(&c);
	c.switch_wait = 77;
	alarm(10);
	assert_int_equal(tp_pconf_load(fifo, &c, &err), TP_ERR_NOTREG);
	alarm(0);
	snprintf(want, sizeof(want),
		 "%s: not a regular file (a FIFO, device or directory)", fifo);
	assert_string_equal(err, want);
	tp_free(err);
	assert_int_equal(tp_pconf_load(dir, &c, &err), TP_ERR_NOTREG);
	assert_non_null(strstr(err, dir));
	tp_free(err);
	assert_int_equal(c.switch_wait, 77);
	tp_pconf_free(&c);
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* LinkState, CommShare, PriceBudget: parsed, ranges enforced, and the
 * path resolved as FabricFile's. */
static void test_link_keys(void **state)
{
	tp_pconf_t c;
	char *err = NULL, *p;

	tp_pconf_defaults(&c);
	assert_int_equal(tp_pconf_parse("t.conf",
					"LinkState=links.json CommShare=0 "
					"PriceBudget=0",
					&c, &err),
			 TP_OK);
	assert_string_equal(c.link_state, "links.json");
	assert_int_equal(c.comm_share, 0);
	assert_int_equal(c.price_budget, 0);
	assert_int_equal(tp_pconf_parse("t.conf", "CommShare=101", &c, &err),
			 TP_ERR_RANGE);
	assert_non_null(strstr(err, "t.conf:1"));
	tp_free(err);
	err = NULL;
	/* PriceBudget bounds a decision's work inside slurmctld */
	for (size_t i = 0; i < tp_pconf_nkeys(); i++)
		if (!strcmp(tp_pconf_key(i)->name, "PriceBudget"))
			assert_int_equal(tp_pconf_key(i)->max, 1000);
	assert_int_equal(tp_pconf_parse("t.conf",
					"LinkState=links.json PriceBudget=1000",
					&c, &err),
			 TP_OK);
	assert_int_equal(c.price_budget, 1000);
	assert_int_equal(
	    tp_pconf_parse("t.conf", "PriceBudget=100000", &c, &err),
	    TP_ERR_RANGE);
	assert_string_equal(
	    err, "t.conf:1: PriceBudget=100000: out of range 0..1000");
	tp_free(err);
	err = NULL;
	assert_int_equal(c.price_budget, 1000); /* untouched */
	assert_int_equal(tp_pconf_parse("t.conf", "LinkState=", &c, &err),
			 TP_ERR_PARSE);
	tp_free(err);
	assert_string_equal(c.link_state, "links.json"); /* untouched */

	p = tp_pconf_path("/etc/slurm/topoplace.conf", "links.json");
	assert_string_equal(p, "/etc/slurm/links.json");
	tp_free(p);
	p = tp_pconf_path("/etc/slurm/topoplace.conf", "/var/lib/l.json");
	assert_string_equal(p, "/var/lib/l.json");
	tp_free(p);
	p = tp_pconf_path("topoplace.conf", "l.json");
	assert_string_equal(p, "l.json");
	tp_free(p);
	assert_null(tp_pconf_path("/etc/slurm/topoplace.conf", NULL));
	tp_pconf_free(&c);
}

/* A file watched as LinkState: created, unchanged, rewritten in place
 * (same size), replaced by rename, removed, replaced by a FIFO (which the
 * plugin must not open: not regular). */
static void test_filesig(void **state)
{
	char dir[] = "/tmp/tp-sig.XXXXXX", path[64], tmp[64];
	tp_filesig_t sig;
	FILE *fp;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/links.json", dir);
	snprintf(tmp, sizeof(tmp), "%s/links.tmp", dir);
	memset(&sig, 0, sizeof(sig));
	assert_false(tp_filesig_update(path, &sig)); /* no file, as before */
	assert_false(sig.exists);
	assert_false(tp_filesig_update(NULL, &sig));
	assert_false(tp_filesig_update(path, NULL));

	assert_non_null(fp = fopen(path, "w"));
	fputs("{}", fp);
	fclose(fp);
	assert_true(tp_filesig_update(path, &sig));
	assert_true(sig.exists);
	assert_true(sig.regular);
	assert_false(tp_filesig_update(path, &sig)); /* looked at again */

	usleep(20000); /* a later time stamp, same size */
	assert_non_null(fp = fopen(path, "w"));
	fputs("[]", fp);
	fclose(fp);
	assert_true(tp_filesig_update(path, &sig));
	assert_false(tp_filesig_update(path, &sig));

	assert_non_null(fp = fopen(tmp, "w"));
	fputs("[]", fp);
	fclose(fp);
	assert_int_equal(rename(tmp, path), 0); /* another inode */
	assert_true(tp_filesig_update(path, &sig));

	/* replaced by a file of the same size and mtime (cp -p, a restore,
	 * a coarse clock): the inode tells */
	struct timespec same[2] = {
	    {.tv_sec = sig.mtime_s, .tv_nsec = sig.mtime_ns},
	    {.tv_sec = sig.mtime_s, .tv_nsec = sig.mtime_ns}};
	assert_non_null(fp = fopen(tmp, "w"));
	fputs("{}", fp);
	fclose(fp);
	assert_int_equal(utimensat(AT_FDCWD, tmp, same, 0), 0);
	assert_int_equal(rename(tmp, path), 0);
	assert_true(tp_filesig_update(path, &sig));
	assert_false(tp_filesig_update(path, &sig));

	assert_int_equal(unlink(path), 0);
	assert_true(tp_filesig_update(path, &sig));
	assert_false(sig.exists);
	assert_false(tp_filesig_update(path, &sig));

	assert_int_equal(mkfifo(path, 0600), 0);
	assert_true(tp_filesig_update(path, &sig));
	assert_true(sig.exists);
	assert_false(sig.regular);
	assert_false(tp_filesig_update(path, &sig));
	assert_int_equal(unlink(path), 0);

	/* a path that cannot be looked at (here a link loop; a directory
	 * on it not searchable does the same): unchanged, and why */
	assert_int_equal(sig.look_errno, 0);
	assert_int_equal(symlink(path, path), 0);
	assert_false(tp_filesig_update(path, &sig));
	assert_int_equal(sig.look_errno, ELOOP);
	assert_true(sig.exists); /* the FIFO, as last seen */
	assert_int_equal(unlink(path), 0);
	assert_true(tp_filesig_update(path, &sig)); /* gone */
	assert_int_equal(sig.look_errno, 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Each distinct failure reported once, its recovery once; the outcome
 * survives a change of the file. */
static void test_filesig_log(void **state)
{
	tp_filesig_t sig;

	memset(&sig, 0, sizeof(sig));
	assert_false(tp_filesig_log(&sig, TP_OK, NULL));
	assert_true(tp_filesig_log(&sig, TP_ERR_PARSE, "f:1: bad"));
	assert_false(tp_filesig_log(&sig, TP_ERR_PARSE, "f:1: bad"));
	assert_true(tp_filesig_log(&sig, TP_ERR_PARSE, "f:2: bad"));
	assert_true(tp_filesig_log(&sig, TP_ERR_IO, "f:2: bad"));
	assert_false(tp_filesig_log(&sig, TP_ERR_IO, "f:2: bad"));
	assert_false(tp_filesig_update("/nonexistent/x", &sig));
	assert_int_equal(sig.err, TP_ERR_IO);
	assert_true(tp_filesig_log(&sig, TP_OK, NULL));
	assert_false(tp_filesig_log(&sig, TP_OK, NULL));
	assert_int_equal(sig.err, TP_OK);
}

static void test_partitions(void **state)
{
	tp_pconf_t c;

	tp_pconf_defaults(&c);
	assert_true(tp_pconf_partition_enabled(&c, "any"));
	assert_true(tp_pconf_partition_enabled(&c, NULL));
	assert_int_equal(tp_pconf_parse("p", "Partitions=gpu,big", &c, NULL),
			 TP_OK);
	assert_true(tp_pconf_partition_enabled(&c, "gpu"));
	assert_true(tp_pconf_partition_enabled(&c, "big"));
	assert_true(tp_pconf_partition_enabled(&c, "debug,big"));
	assert_false(tp_pconf_partition_enabled(&c, "gp"));
	assert_false(tp_pconf_partition_enabled(&c, "gpus"));
	assert_false(tp_pconf_partition_enabled(&c, "debug"));
	assert_false(tp_pconf_partition_enabled(&c, NULL));
	tp_pconf_free(&c);
}

static void test_dump_roundtrip(void **state)
{
	tp_pconf_t a, b;
	char *d1, *d2;

	tp_pconf_defaults(&a);
	assert_int_equal(tp_pconf_parse("d",
					"FabricFile=\"/x y/f.json\" "
					"Partitions=a,b SwitchWait=5 "
					"RankNodes=no",
					&a, NULL),
			 TP_OK);
	d1 = tp_pconf_dump(&a);
	assert_non_null(d1);
	assert_non_null(strstr(d1, "FabricFile=\"/x y/f.json\"\n"));
	assert_non_null(strstr(d1, "RankNodes=no\n"));
	tp_pconf_defaults(&b);
	assert_int_equal(tp_pconf_parse("d", d1, &b, NULL), TP_OK);
	d2 = tp_pconf_dump(&b);
	assert_string_equal(d1, d2);
	/* every key of the table appears, documented */
	for (size_t i = 0; i < tp_pconf_nkeys(); i++) {
		assert_non_null(strstr(d1, tp_pconf_key(i)->name));
		assert_true(strlen(tp_pconf_key(i)->doc) > 10);
	}
	assert_null(tp_pconf_key(tp_pconf_nkeys()));
	tp_free(d1);
	tp_free(d2);
	tp_pconf_free(&a);
	tp_pconf_free(&b);
}

/* Allocation failure at every point: NOMEM or success, never a crash or a
 * half-filled struct (the ASan build checks for leaks). */
static int fail_after;
static void *f_malloc(size_t n)
{
	return fail_after-- > 0 ? malloc(n) : NULL;
}
static void *f_calloc(size_t n, size_t s)
{
	return fail_after-- > 0 ? calloc(n, s) : NULL;
}
static void *f_realloc(void *p, size_t n)
{
	return fail_after-- > 0 ? realloc(p, n) : NULL;
}

static void test_parse_nomem(void **state)
{
	static const tp_allocator_t a = {f_malloc, f_calloc, f_realloc, free};
	bool ok = false;
	int nomem = 0; /* the loop stops at the first success */

	for (int n = 0; n < 50 && !ok; n++) {
		tp_pconf_t c;
		char *err = NULL;
		tp_err_t rc;

		memset(&c, 0, sizeof(c));
		fail_after = n;
		tp_alloc_set(&a);
		rc = tp_pconf_parse("m", "FabricFile=/f Partitions=a,b\n", &c,
				    &err);
		tp_alloc_set(NULL);
		assert_true(rc == TP_OK || rc == TP_ERR_NOMEM);
		if (rc == TP_OK) {
			assert_string_equal(c.fabric_file, "/f");
			ok = true;
		} else {
			assert_null(c.fabric_file);
			nomem++;
		}
		tp_free(err);
		tp_pconf_free(&c);
	}
	assert_true(ok);
	assert_true(nomem > 0);
}

/* ---- switch tree ---- */

static uint32_t find_sw(const tp_stree_t *t, const char *name)
{
	for (size_t i = 0; i < t->nsw; i++)
		if (!strcmp(t->sw[i].name, name))
			return (uint32_t)i;
	fail_msg("switch %s not in the tree", name);
	return TP_ID_NONE;
}

static const char *host_name(const tp_fabric_t *f, uint32_t h)
{
	return tp_fabric_host(f, h)->name;
}

/* Interleaved fat tree: odd hosts on leaf01, even on leaf02. The tree is
 * topology.conf's, and the rank order walks leaf01 then leaf02. */
static void test_stree_fat_tree(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL;
	tp_stree_t t = {0};
	char *err = NULL;
	uint32_t l1, l2, sp;

	tp_gen_fat_tree_defaults(&p);
	p.leaves = 2;
	p.spines = 1;
	p.hosts_per_leaf = 4;
	p.interleave = true;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_int_equal(tp_stree_build(f, true, &t, &err), TP_OK);
	assert_int_equal(t.nsw, 3);
	assert_false(t.nvlink);
	assert_int_equal(t.levels, 1);
	l1 = find_sw(&t, "leaf01");
	l2 = find_sw(&t, "leaf02");
	sp = find_sw(&t, "spine01");
	assert_int_equal(t.sw[l1].level, 0);
	assert_int_equal(t.sw[sp].level, 1);
	assert_int_equal(t.sw[sp].parent, sp);
	assert_int_equal(t.sw[l1].parent, sp);
	assert_int_equal(t.sw[sp].nchildren, 2);
	assert_int_equal(t.sw[sp].children[0], l1);
	assert_int_equal(t.sw[sp].nbelow, 8);
	assert_int_equal(t.sw[l1].nhosts, 4);
	assert_int_equal(t.sw[l1].link_speed, 800);
	assert_int_equal(t.norder, 8);
	static const char *const want[] = {"node001", "node003", "node005",
					   "node007", "node002", "node004",
					   "node006", "node008"};
	for (size_t k = 0; k < 8; k++) {
		assert_string_equal(host_name(f, t.order[k]), want[k]);
		assert_int_equal(t.rank[t.order[k]], k);
	}
	assert_int_equal(tp_stree_dist(&t, l1, l1), 0);
	assert_int_equal(tp_stree_dist(&t, l1, sp), 1);
	assert_int_equal(tp_stree_dist(&t, l1, l2), 2);
	assert_int_equal(tp_stree_dist(&t, l1, 99), UINT32_MAX);
	tp_stree_free(&t);
	tp_stree_free(&t);
	tp_fabric_destroy(f);
}

/* Rail-optimized: a scalable unit (one leaf per rail) is one Slurm leaf. */
static void test_stree_rail(void **state)
{
	tp_gen_rail_t p;
	tp_fabric_t *f = NULL;
	tp_stree_t t = {0};

	tp_gen_rail_defaults(&p);
	p.sus = 2;
	p.hosts_per_su = 4;
	p.rails = 2;
	p.spines_per_rail = 1;
	assert_int_equal(tp_gen_rail(&p, &f), TP_OK);
	assert_int_equal(tp_stree_build(f, true, &t, NULL), TP_OK);
	assert_int_equal(t.nsw, 3);
	assert_int_equal(t.sw[find_sw(&t, "g1-1")].nhosts, 4);
	assert_int_equal(t.sw[find_sw(&t, "g1-2")].level, 0);
	assert_int_equal(t.sw[find_sw(&t, "g2-1")].level, 1);
	tp_stree_free(&t);
	tp_fabric_destroy(f);
}

/* NVL72-style racks split over two IB leaves each: with NVLinkLevel the
 * racks become the leaves (under the spines, their common ancestor) and
 * the emptied IB leaves vanish; without, topology.conf's tree. */
static void test_stree_nvl72(void **state)
{
	tp_gen_nvl72_t p;
	tp_fabric_t *f = NULL;
	tp_stree_t t = {0};
	uint32_t top;

	tp_gen_nvl72_defaults(&p);
	p.racks = 2;
	p.hosts_per_rack = 4;
	p.leaves_per_rack = 2;
	p.spines = 2;
	assert_int_equal(tp_gen_nvl72(&p, &f), TP_OK);
	assert_int_equal(tp_stree_build(f, true, &t, NULL), TP_OK);
	assert_true(t.nvlink);
	assert_int_equal(t.nsw, 3);
	top = find_sw(&t, "g2-1");
	assert_int_equal(t.sw[top].level, 1);
	assert_int_equal(t.sw[top].nchildren, 2);
	for (size_t k = 0; k < 2; k++) {
		const tp_stree_sw_t *d = &t.sw[t.sw[top].children[k]];
		assert_true(d->nvlink);
		assert_int_equal(d->level, 0);
		assert_int_equal(d->nhosts, 4);
		assert_int_equal(d->parent, top);
	}
	/* a rack's hosts are contiguous in the rank order */
	for (size_t k = 0; k < 8; k++)
		assert_int_equal(
		    tp_fabric_host(f, t.order[k])->nvdomain,
		    tp_fabric_host(f, t.order[k - k % 4])->nvdomain);
	tp_stree_free(&t);

	assert_int_equal(tp_stree_build(f, false, &t, NULL), TP_OK);
	assert_false(t.nvlink);
	assert_int_equal(t.nsw, 5);
	assert_int_equal(t.sw[find_sw(&t, "rack01-leaf1")].nhosts, 2);
	tp_stree_free(&t);
	tp_fabric_destroy(f);
}

static void test_min_leaves(void **state)
{
	const uint32_t a[] = {4, 4};
	const uint32_t b[] = {3, 1, 4, 0};

	assert_int_equal(tp_stree_min_leaves(a, 2, 4), 1);
	assert_int_equal(tp_stree_min_leaves(a, 2, 5), 2);
	assert_int_equal(tp_stree_min_leaves(a, 2, 8), 2);
	assert_int_equal(tp_stree_min_leaves(a, 2, 9), 0);
	assert_int_equal(tp_stree_min_leaves(a, 2, 0), 0);
	assert_int_equal(tp_stree_min_leaves(b, 4, 4), 1);
	assert_int_equal(tp_stree_min_leaves(b, 4, 5), 2);
	assert_int_equal(tp_stree_min_leaves(b, 4, 8), 3);
	assert_int_equal(tp_stree_min_leaves(b, 4, 9), 0);
	assert_int_equal(tp_stree_min_leaves(NULL, 0, 1), 0);
}

/* slurm.conf's nodes against the tree's hosts: same set, a node the
 * fabric lacks, a fabric host slurm.conf lacks. */
static void test_stree_match(void **state)
{
	tp_gen_fat_tree_t p;
	tp_fabric_t *f;
	tp_stree_t t;
	const char *names[9];
	char *why = NULL;

	(void)state;
	tp_gen_fat_tree_defaults(&p);
	p.leaves = 2;
	p.hosts_per_leaf = 4;
	p.spines = 1;
	assert_int_equal(tp_gen_fat_tree(&p, &f), TP_OK);
	assert_int_equal(tp_stree_build(f, true, &t, NULL), TP_OK);
	for (size_t i = 0; i < 8; i++)
		names[i] = tp_fabric_host(f, i)->name;
	assert_true(tp_stree_match(&t, f, names, 8, &why));
	assert_null(why);
	names[8] = "ghost";
	assert_false(tp_stree_match(&t, f, names, 9, &why));
	assert_string_equal(why, "1 node(s) not in the fabric's switch groups "
				 "(ghost), 0 fabric host(s) not in slurm.conf");
	tp_free(why);
	why = NULL;
	assert_false(tp_stree_match(&t, f, names + 1, 7, &why));
	assert_non_null(
	    strstr(why, "1 fabric host(s) not in slurm.conf (node001)"));
	tp_free(why);
	tp_stree_free(&t);
	tp_fabric_destroy(f);
}

/* topoplace.conf -> fabric -> tree, the way both topology plugins read
 * them: a relative FabricFile lies beside the conf file. */
static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static void test_load_fabric(void **state)
{
	char dir[] = "/tmp/tp-pconf-XXXXXX", conf[128], fab[128];
	tp_gen_fat_tree_t p;
	tp_fabric_t *f = NULL, *g = NULL;
	tp_stree_t t;
	tp_pconf_t c;
	char *why = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/topoplace.conf", dir);
	snprintf(fab, sizeof(fab), "%s/fabric.json", dir);
	tp_pconf_defaults(&c);
	assert_int_equal(tp_pconf_load_fabric(conf, 100, &c, &f, &t, &why),
			 TP_ERR_NOTFOUND);
	assert_non_null(strstr(why, "not found"));
	tp_free(why);
	write_file(conf, "SwitchWait=5\n");
	assert_int_equal(tp_pconf_load_fabric(conf, 100, &c, &f, &t, &why),
			 TP_ERR_NOTFOUND);
	assert_non_null(strstr(why, "sets no FabricFile"));
	assert_int_equal(c.switch_wait, 5);
	tp_free(why);
	write_file(conf, "FabricFile=fabric.json\n");
	write_file(fab, "{\"format\":");
	assert_int_equal(tp_pconf_load_fabric(conf, 100, &c, &f, &t, &why),
			 TP_ERR_PARSE);
	assert_non_null(strstr(why, fab));
	/* the line that names the fabric, once */
	assert_true(!strncmp(why, conf, strlen(conf)) &&
		    !strncmp(why + strlen(conf), ":1: FabricFile: ", 16));
	assert_null(strstr(strstr(why, fab) + 1, fab));
	assert_null(f);
	tp_free(why);
	tp_gen_fat_tree_defaults(&p);
	p.leaves = 2;
	p.hosts_per_leaf = 2;
	p.spines = 1;
	assert_int_equal(tp_gen_fat_tree(&p, &g), TP_OK);
	assert_int_equal(tp_fabric_save_json(g, fab), TP_OK);
	assert_int_equal(tp_pconf_load_fabric(conf, 2, &c, &f, &t, &why),
			 TP_ERR_RANGE);
	assert_non_null(
	    strstr(why, "3 switches in its switch tree, more than 2"));
	tp_free(why);
	why = NULL;
	/* more level-1 groups than the table takes: refused before the
	 * tree is built (its build grows with the square) */
	assert_int_equal(tp_pconf_load_fabric(conf, 1, &c, &f, &t, &why),
			 TP_ERR_RANGE);
	assert_null(f);
	assert_non_null(strstr(why, "2 level-1 groups, more switches than 1"));
	tp_free(why);
	why = NULL;
	assert_int_equal(tp_pconf_load_fabric(conf, 3, &c, &f, &t, &why),
			 TP_OK); /* at most max_switches */
	tp_fabric_destroy(f);
	f = NULL;
	tp_stree_free(&t);
	assert_int_equal(tp_pconf_load_fabric(conf, 100, &c, &f, &t, &why),
			 TP_OK);
	assert_null(why);
	assert_int_equal(tp_fabric_nhosts(f), 4);
	assert_int_equal(t.nsw, 3);
	tp_stree_free(&t);
	tp_fabric_destroy(f);
	tp_fabric_destroy(g);
	tp_pconf_free(&c);
	unlink(conf);
	unlink(fab);
	rmdir(dir);
}

/* ---- the decision writer's queue ---- */

/* The writer's next item, as a short string: "end:J", "rec:J:track" or
 * "empty". */
static const char *wq_next(tp_wqueue_t *q)
{
	static char buf[64];
	uint32_t job = 0;
	size_t slot = 0;
	bool track = false;

	switch (tp_wqueue_next(q, &job, &slot, &track)) {
	case TP_WQUEUE_END:
		snprintf(buf, sizeof(buf), "end:%u", job);
		break;
	case TP_WQUEUE_RECORD:
		snprintf(buf, sizeof(buf), "rec:%u:%d", job, track);
		break;
	default:
		snprintf(buf, sizeof(buf), "empty");
	}
	return buf;
}

/* A full queue drops its oldest record, never the end of a job whose
 * traffic the writer holds (review s38 #1: the end of JobId=42 behind
 * 1024 records was dropped and its traffic priced until restart). */
static void test_wqueue_end_kept(void **state)
{
	enum { CAP = 8 };
	tp_wqueue_t *q = tp_wqueue_create(CAP, 16);
	bool dropped;
	size_t slot;

	assert_non_null(q);
	slot = tp_wqueue_push(q, 42, true, &dropped);
	assert_false(dropped);
	assert_string_equal(wq_next(q), "rec:42:1"); /* 42 held */
	assert_int_equal(tp_wqueue_len(q), 0);
	tp_wqueue_end(q, 42);
	tp_wqueue_end(q, 42); /* once */
	for (uint32_t j = 100; j < 100 + CAP + 3; j++) {
		size_t s = tp_wqueue_push(q, j, false, &dropped);
		assert_true(s < CAP);
		assert_int_equal(dropped, j >= 100 + CAP);
	}
	assert_int_equal(tp_wqueue_take_dropped(q), 3);
	assert_int_equal(tp_wqueue_take_dropped(q), 0);
	assert_int_equal(tp_wqueue_len(q), CAP + 1);
	assert_string_equal(wq_next(q), "end:42");
	for (uint32_t j = 103; j < 100 + CAP + 3; j++) {
		char want[32];
		snprintf(want, sizeof(want), "rec:%u:0", j);
		assert_string_equal(wq_next(q), want);
	}
	assert_string_equal(wq_next(q), "empty");
	(void)slot;
	tp_wqueue_destroy(q);
	tp_wqueue_destroy(NULL);
}

/* An end whose record is still queued takes the traffic off the record
 * and keeps no end; ends of jobs never held are not kept; a job ended,
 * requeued and started again joins after its end leaves. */
static void test_wqueue_end_coalesced(void **state)
{
	tp_wqueue_t *q = tp_wqueue_create(4, 2);
	bool dropped;

	assert_non_null(q);
	assert_null(tp_wqueue_create(0, 2));
	(void)tp_wqueue_push(q, 1, true, &dropped);
	tp_wqueue_end(q, 1);
	tp_wqueue_end(q, 7); /* never held */
	assert_int_equal(tp_wqueue_len(q), 1);
	assert_string_equal(wq_next(q), "rec:1:0");
	assert_string_equal(wq_next(q), "empty");

	(void)tp_wqueue_push(q, 2, true, &dropped);
	assert_string_equal(wq_next(q), "rec:2:1");
	tp_wqueue_end(q, 2);
	(void)tp_wqueue_push(q, 2, true, &dropped); /* requeued, runs */
	assert_string_equal(wq_next(q), "end:2");
	assert_string_equal(wq_next(q), "rec:2:1");
	assert_string_equal(wq_next(q), "empty");

	/* held_max jobs held: a third cannot be, so it is not tracked */
	(void)tp_wqueue_push(q, 3, true, &dropped);
	(void)tp_wqueue_push(q, 4, true, &dropped);
	assert_string_equal(wq_next(q), "rec:3:1");
	assert_string_equal(wq_next(q), "rec:4:0");
	/* the link state freed: nothing held, no end kept */
	tp_wqueue_forget(q);
	tp_wqueue_end(q, 3);
	assert_int_equal(tp_wqueue_len(q), 0);
	tp_wqueue_destroy(q);
}

/* ---- --gpus as the engine's request ---- */

/* Counts the engine's int cannot hold are refused, never wrapped (review
 * s38 #3: 2^32+8 GPUs on one node became 8, 3*2^31 became INT_MIN). */
static void test_gpureq_split(void **state)
{
	int nodes = -1, gpn = -1, gpus = -1;

	assert_null(tp_gpureq_split(16, 0, 2, 2, &nodes, &gpn, &gpus));
	assert_int_equal(nodes, 2);
	assert_int_equal(gpn, 8);
	assert_int_equal(gpus, -1);
	assert_null(tp_gpureq_split(12, 0, 1, 4, &nodes, &gpn, &gpus));
	assert_int_equal(gpus, 12);
	assert_string_equal(tp_gpureq_split(12, 0, 5, 5, &nodes, &gpn, &gpus),
			    "--gpus not a multiple of the node count");
	assert_string_equal(tp_gpureq_split(12, 4, 1, 4, &nodes, &gpn, &gpus),
			    "--gpus with --gpus-per-node");

	nodes = gpn = gpus = -1;
	assert_non_null(tp_gpureq_split((UINT64_C(1) << 32) + 8, 0, 1, 1,
					&nodes, &gpn, &gpus));
	assert_non_null(
	    tp_gpureq_split(UINT64_C(3) << 31, 0, 1, 1, &nodes, &gpn, &gpus));
	assert_non_null(tp_gpureq_split((uint64_t)INT32_MAX + 1, 0, 1, 4,
					&nodes, &gpn, &gpus));
	assert_non_null(tp_gpureq_split(8, 0, 0, 0, &nodes, &gpn, &gpus));
	assert_int_equal(nodes, -1); /* nothing written on refusal */
	assert_int_equal(gpn, -1);
	assert_int_equal(gpus, -1);
	/* the largest the engine holds */
	assert_null(tp_gpureq_split((uint64_t)INT32_MAX * 2, 0, 2, 2, &nodes,
				    &gpn, &gpus));
	assert_int_equal(gpn, INT32_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_parse_ok),
	    cmocka_unit_test(test_parse_quoted),
	    cmocka_unit_test(test_parse_errors),
	    cmocka_unit_test(test_load),
	    cmocka_unit_test(test_load_not_regular),
	    cmocka_unit_test(test_partitions),
	    cmocka_unit_test(test_link_keys),
	    cmocka_unit_test(test_filesig),
	    cmocka_unit_test(test_filesig_log),
	    cmocka_unit_test(test_dump_roundtrip),
	    cmocka_unit_test(test_parse_nomem),
	    cmocka_unit_test(test_stree_fat_tree),
	    cmocka_unit_test(test_stree_match),
	    cmocka_unit_test(test_load_fabric),
	    cmocka_unit_test(test_stree_rail),
	    cmocka_unit_test(test_stree_nvl72),
	    cmocka_unit_test(test_min_leaves),
	    cmocka_unit_test(test_wqueue_end_kept),
	    cmocka_unit_test(test_wqueue_end_coalesced),
	    cmocka_unit_test(test_gpureq_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
