/*
 * ibnetdiscover reader, GUID map, IB names. Every real dump under
 * ../shared/fixtures/ib loads with counts established independently of the
 * parser (the shell command that gives each number is next to it, run in
 * fixtures/ib); hand-written cases live in data/ibn-*; hostile inputs are
 * made here.
 */
#include "tp_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topology_int.h"

/* ---- helpers --------------------------------------------------------------- */

/* The failure detail is "<name>:<line>: ..."; line 0 means any. */
static void assert_where(const tp_fabric_t *f, const char *name, size_t line)
{
	const char *msg = tp_fabric_error(f);
	size_t n = strlen(name), l = 0;
	const char *p;

	if (strncmp(msg, name, n) != 0 || msg[n] != ':')
		fail_msg("error \"%s\" does not start with \"%s:\"", msg, name);
	p = msg + n + 1;
	if (*p < '0' || *p > '9')
		fail_msg("error \"%s\" has no line number", msg);
	while (*p >= '0' && *p <= '9')
		l = l * 10 + (size_t)(*p++ - '0');
	if (*p != ':' || strchr(msg, '\n'))
		fail_msg("error \"%s\" is not one \"file:line: what\" line", msg);
	if (line && l != line)
		fail_msg("error \"%s\": expected line %zu", msg, line);
}

static tp_err_t parse_str(tp_fabric_t *f, const char *name, const char *s)
{
	return tp_fabric_parse_ibnetdiscover(f, name, s, strlen(s));
}

static uint32_t find(const tp_fabric_t *f, tp_node_kind_t k, uint64_t guid)
{
	return tp__fabric_find_node(f, k, f->nsubnets - 1, guid);
}

/* The link on a port, or NULL. */
static const tp_link_t *link_at(const tp_fabric_t *f, tp_node_kind_t k,
				uint32_t node, int port)
{
	for (size_t i = 0; i < tp_fabric_nlinks(f); i++) {
		const tp_link_t *l = tp_fabric_link(f, i);
		for (int e = 0; e < 2; e++)
			if (l->kind[e] == k && l->node[e] == node &&
			    l->port[e] == port)
				return l;
	}
	return NULL;
}

static size_t count_sharp(const tp_fabric_t *f)
{
	size_t n = 0;

	for (size_t i = 0; i < tp_fabric_ncas(f); i++)
		n += tp__desc_is_sharp(tp_fabric_ca(f, i)->desc);
	return n;
}

static size_t count_warnings(const tp_fabric_t *f, const char *needle)
{
	size_t n = 0;

	for (size_t i = 0; i < tp_fabric_nwarnings(f); i++)
		n += strstr(tp_fabric_warning(f, i), needle) != NULL;
	return n;
}

/* ---- names.c ----------------------------------------------------------------- */

static void test_width(void **state)
{
	(void)state;
	assert_int_equal(tp__ib_width("1x"), 1);
	assert_int_equal(tp__ib_width("2x"), 2);
	assert_int_equal(tp__ib_width("4x"), 4);
	assert_int_equal(tp__ib_width(" 4X "), 4);
	assert_int_equal(tp__ib_width("8x"), 8);
	assert_int_equal(tp__ib_width("12x"), 12);
	assert_int_equal(tp__ib_width("3x"), 0);
	assert_int_equal(tp__ib_width("??"), 0);
	assert_int_equal(tp__ib_width("4"), 0);
	assert_int_equal(tp__ib_width("x"), 0);
	assert_int_equal(tp__ib_width("124x"), 0);
	assert_int_equal(tp__ib_width(""), 0);
	assert_int_equal(tp__ib_width(NULL), 0);
}

static void test_lane(void **state)
{
	(void)state;
	assert_true(tp__ib_lane_gbps("SDR") == 2.5);
	assert_true(tp__ib_lane_gbps("DDR") == 5.0);
	assert_true(tp__ib_lane_gbps("QDR") == 10.0);
	assert_true(tp__ib_lane_gbps("FDR10") == 10.0);
	assert_true(tp__ib_lane_gbps("FDR") == 14.0);
	assert_true(tp__ib_lane_gbps("EDR") == 25.0);
	assert_true(tp__ib_lane_gbps("HDR") == 50.0);
	assert_true(tp__ib_lane_gbps("NDR") == 100.0);
	assert_true(tp__ib_lane_gbps("XDR") == 200.0);
	assert_true(tp__ib_lane_gbps("ndr") == 100.0);
	assert_true(tp__ib_lane_gbps("2.5 Gbps") == 2.5);
	/* a rate no generation has stays as printed */
	assert_true(tp__ib_lane_gbps("7.5 Gbps") == 7.5);
	assert_true(tp__ib_lane_gbps("25.78125 Gbps") == 25.0);
	assert_true(tp__ib_lane_gbps("106.25 Gbps") == 100.0);
	assert_true(tp__ib_lane_gbps(" 14.0625Gbps ") == 14.0);
	assert_true(tp__ib_lane_gbps("???") == 0);
	assert_true(tp__ib_lane_gbps("GDR") == 0);
	assert_true(tp__ib_lane_gbps("25.78125") == 0);
	assert_true(tp__ib_lane_gbps("-2.5 Gbps") == 0);
	assert_true(tp__ib_lane_gbps("nan Gbps") == 0);
	assert_true(tp__ib_lane_gbps("1e999 Gbps") == 0);
	assert_true(tp__ib_lane_gbps("") == 0);
	assert_true(tp__ib_lane_gbps(NULL) == 0);
}

static void test_speed_name(void **state)
{
	/* FDR10 carries QDR's nominal 10 Gb/s per lane: it reads back as QDR */
	static const char *const names[] = { "SDR", "DDR", "QDR", "FDR",
					     "EDR", "HDR", "NDR", "XDR" };
	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_string_equal(
		    tp_ib_speed_name(tp__ib_lane_gbps(names[i])), names[i]);
	/* generators use round per-lane numbers */
	assert_string_equal(tp_ib_speed_name(100.0), "NDR");
	assert_string_equal(tp_ib_speed_name(50.0), "HDR");
	assert_string_equal(tp_ib_speed_name(25.0), "EDR");
	assert_string_equal(tp_ib_speed_name(10.0), "QDR");
	assert_string_equal(tp_ib_speed_name(0), "???");
	assert_string_equal(tp_ib_speed_name(-1), "???");
	assert_string_equal(tp_ib_speed_name(40.0), "???");
}

static void check_host(const char *desc, const char *host, const char *dev)
{
	char *h = (char *)1, *d = (char *)1;

	assert_int_equal(tp__desc_hostname(desc, &h, &d), TP_OK);
	if (!host) {
		if (h)
			fail_msg("\"%s\": expected no host, got \"%s\"", desc, h);
		assert_null(d);
		return;
	}
	if (!h || strcmp(h, host) != 0)
		fail_msg("\"%s\": expected host \"%s\", got \"%s\"", desc, host,
			 h ? h : "(null)");
	if (dev)
		assert_string_equal(d, dev);
	else
		assert_null(d);
	tp_free(h);
	tp_free(d);
}

/* Every CA description pattern in fixtures/ib, from
 *   grep -h '^Ca' -r . | sed 's/.*# //' | sed -E 's/[0-9]+/N/g' | sort -u
 *   grep -rh "^CA" . | sed -E "s/.*\( '([^']*)'.*\/\1/" | sort -u */
static void test_desc_hostname(void **state)
{
	(void)state;
	check_host("gpu017 HCA-1", "gpu017", "HCA-1");
	check_host("a08-p1-dgx-04-c01 mlx5_5", "a08-p1-dgx-04-c01", "mlx5_5");
	check_host("b05-p1-dgx-05-c18 HCA-3", "b05-p1-dgx-05-c18", "HCA-3");
	check_host("B11-P1-CUFM-02 mlx5_1", "B11-P1-CUFM-02", "mlx5_1");
	check_host("dgx-gb200-n01-c1 HCA-1", "dgx-gb200-n01-c1", "HCA-1");
	check_host("o0001 HCA-1", "o0001", "HCA-1");
	check_host("r-ufm216 HCA-2", "r-ufm216", "HCA-2");
	check_host("compute-00-01 HCA-1", "compute-00-01", "HCA-1");
	check_host("nsn33-43 HCA-1", "nsn33-43", "HCA-1");
	check_host("miriel066 qib0", "miriel066", "qib0");
	check_host("bright mlx4_0", "bright", "mlx4_0");
	check_host("worker20 mlx5_3", "worker20", "mlx5_3");
	check_host("ubuntu mlx5_0", "ubuntu", "mlx5_0");
	check_host("  node179   HCA-1  ", "node179", "HCA-1");
	check_host("node17", "node17", NULL);
	check_host("node17.example.org mlx5_0 port1", "node17.example.org",
		   "mlx5_0");
	/* vendor defaults, placeholders, SHArP */
	check_host("MT25408 ConnectX Mellanox Technologies", NULL, NULL);
	check_host("MT23108 InfiniHost Mellanox Technologies", NULL, NULL);
	check_host("MT4129 ConnectX7   Mellanox Technologies", NULL, NULL);
	check_host("MT4129", NULL, NULL);
	check_host("Mellanox Technologies Aggregation Node", NULL, NULL);
	check_host("Mellanox ConnectX-6", NULL, NULL);
	check_host("ConnectX-7 Mellanox Technologies", NULL, NULL);
	check_host("localhost", NULL, NULL);
	check_host("localhost HCA-1", NULL, NULL);
	check_host("LOCALHOST mlx5_0", NULL, NULL);
	check_host("localhost.localdomain mlx5_0", NULL, NULL);
	check_host("MF0;switch-de779e:SX6012/U1", NULL, NULL);
	/* a first word the name rule refuses (over 255 bytes) names no
	 * host; finalize would refuse it as one, naming no CA */
	{
		char d[300 + 8], h[256];
		memset(d, 'a', 300);
		memcpy(d + 300, " HCA-1", 7);
		check_host(d, NULL, NULL);
		memcpy(d + 256, " HCA-1", 7);
		check_host(d, NULL, NULL);
		memcpy(d + 255, " HCA-1", 7);
		memcpy(h, d, 255);
		h[255] = '\0';
		check_host(d, h, "HCA-1");
	}
	check_host("", NULL, NULL);
	check_host("   ", NULL, NULL);
	check_host(NULL, NULL, NULL);
	/* "MT" alone, with letters, in lower case or with fewer than 4
	 * digits is a name, not a part number */
	check_host("MTA01 HCA-1", "MTA01", "HCA-1");
	check_host("mt01 mlx5_0", "mt01", "mlx5_0");
	check_host("MT01 mlx5_0", "MT01", "mlx5_0");
	check_host("mt4129 mlx5_0", "mt4129", "mlx5_0");
	check_host("MT123 HCA-1", "MT123", "HCA-1");

	assert_true(tp__desc_is_sharp("Mellanox Technologies Aggregation Node"));
	assert_false(tp__desc_is_sharp("gpu017 HCA-1"));
	assert_false(tp__desc_is_sharp(NULL));
}

/* ---- fixtures ------------------------------------------------------------------ */

struct fixture {
	const char *rel;
	size_t sw, ca, sharp, links;
	size_t self_warn, conflict_warn; /* warnings expected */
	size_t hosts, unnamed;           /* after tp_fabric_finalize() */
};

/*
 * Plain form (run in fixtures/ib, F = the file):
 *   switches: grep -c '^Switch' F
 *   CAs:      grep -c '^Ca' F
 *   SHArP:    grep -c '^Ca.*Aggregation Node' F
 *   links:    awk '/^(Switch|Ca)/{match($0,/"[SH]-[0-9a-f]+"/);
 *               n=substr($0,RSTART+1,RLENGTH-2)}
 *             /^\[/{p=substr($1,2)+0;match($0,/"[SH]-[0-9a-f]+"\[[0-9]+\]/);
 *               split(substr($0,RSTART+1,RLENGTH-1),x,/"\[/);
 *               if(x[1]==n)next;a=n":"p;b=x[1]":"x[2]+0;
 *               u[a<b?a" "b:b" "a]=1}END{print length(u)}' F
 *     (unique unordered port pairs; a port cabled to its own switch skipped)
 * -p form:
 *   switches: awk '$1=="SW"{s[$4]=1}$8=="SW"{s[$11]=1}END{print length(s)}' F
 *   CAs:      awk '$1=="CA"{s[$4]=1}$8=="CA"{s[$11]=1}END{print length(s)}' F
 *   SHArP:    awk '$1=="CA"&&/\( .Mellanox Technologies Aggregation Node. -/
 *               {s[$4]=1}$8=="CA"&&/- .Mellanox Technologies Aggregation
 *               Node. \)$/{s[$11]=1}END{print length(s)}' F
 *   links:    awk '$7=="-"&&$4!=$11{a=$4":"$3;b=$11":"$10;
 *               k=a<b?a" "b:b" "a;if(k in u)next;if((a in x)||(b in x))next;
 *               u[k]=1;x[a]=1;x[b]=1;n++}END{print n+0}' F
 *     (first cable on a port wins, as in the model)
 * Hosts and unnamed CAs (first word of the CA descriptions; vendor
 * defaults "MT<4+ digits> ...", "Mellanox ...", "localhost" name none):
 *   plain: grep '^Ca' F | sed 's/.*# "//; s/"$//' | awk '{print $1}' >h
 *   -p:    awk '$1=="CA"{split($0,q,"\047");d[$4]=q[2]}
 *            $8=="CA"{split($0,q,"\047");d[$11]=q[4]}
 *            END{for(g in d){n=split(d[g],t," ");print (n?t[1]:"")}}' F >h
 *   hosts:   grep -vE '^(MT[0-9]{4,}|Mellanox|localhost)?$' h | sort -u | wc -l
 *   unnamed: grep -cE '^(MT[0-9]{4,}|localhost)?$' h
 */
static const struct fixture fixtures[] = {
	/* path, switches, CAs, SHArP, links, self-cabled warnings, conflict
	 * warnings, hosts, unnamed CAs */
	/* plain form */
	{ "ib/NVIDIA-topograph/ibnetdiscover-example.out",
	  40, 582, 40, 1114, 0, 0, 121, 72 },
	{ "ib/NVIDIA-topograph/ibnetdiscover-example-bad.out",
	  0, 1, 0, 0, 0, 0, 1, 0 },
	{ "ib/jabl-ibtopotool/1.topo", 2, 4, 0, 7, 0, 0, 0, 4 },
	{ "ib/jabl-ibtopotool/2.topo", 1, 2, 0, 2, 0, 0, 2, 0 },
	/* self-cabled, one warning per port line:
	 * awk '/^Switch/{on=($0 ~ /S-e41d2d030003e470/)} /^$/{on=0}
	 *   on&&/^\[.*"S-e41d2d030003e470"/' 3.topo | wc -l -> 6 */
	{ "ib/jabl-ibtopotool/3.topo", 2, 6, 0, 7, 6, 0, 5, 0 },
	{ "ib/jabl-ibtopotool/4.topo", 1, 1, 0, 1, 0, 0, 1, 0 },
	/* -s -p form */
	{ "ib/hwloc-netloc/avakas/ib-subnet-fe80_0000_0000_0000.txt",
	  25, 281, 0, 569, 0, 0, 281, 0 },
	{ "ib/hwloc-netloc/plafrim/ib-subnet-fe80_0000_0000_0000.txt",
	  9, 125, 0, 201, 0, 0, 125, 0 },
	{ "ib/hwloc-netloc/plafrim2/ib-subnet-fe80_0000_0000_0000.txt",
	  7, 96, 0, 155, 0, 0, 96, 0 },
	{ "ib/hwloc-netloc/plafrim2/ib-subnet-fe80_0000_0000_0001.txt",
	  1, 23, 0, 23, 0, 0, 2, 21 },
	/* -p form; test2: CA 0x946dae0300630bfe port 1 is listed on two
	 * switches (line 5 conflicts with line 1) */
	{ "ib/treydock-infiniband_exporter/ibnetdiscover-p-test.out",
	  4, 3, 0, 4, 0, 0, 3, 0 },
	{ "ib/treydock-infiniband_exporter/ibnetdiscover-p-test2.out",
	  5, 2, 1, 2, 0, 1, 1, 0 },
	{ "ib/treydock-infiniband_exporter/ibnetdiscover-p-test3.out",
	  1, 0, 0, 0, 0, 0, 0, 0 },
};

static void test_fixture(void **state)
{
	const struct fixture *fx = *state;
	TP_FIXTURE_OR_SKIP(path, fx->rel);
	tp_fabric_t *f = tp_fabric_create();
	tp_err_t err = tp_fabric_read_ibnetdiscover(f, path);

	if (err)
		fail_msg("%s: %s", fx->rel, tp_fabric_error(f));
	assert_int_equal(tp_fabric_nsubnets(f), 1);
	assert_int_equal(tp_fabric_nswitches(f), fx->sw);
	assert_int_equal(tp_fabric_ncas(f), fx->ca);
	assert_int_equal(count_sharp(f), fx->sharp);
	assert_int_equal(tp_fabric_nlinks(f), fx->links);
	assert_int_equal(count_warnings(f, "cabled to its own port"),
			 fx->self_warn);
	assert_int_equal(count_warnings(f, "already cabled elsewhere"),
			 fx->conflict_warn);
	for (size_t i = 0; i < tp_fabric_nlinks(f); i++) {
		const tp_link_t *l = tp_fabric_link(f, i);
		assert_true(l->active);
		assert_true(l->gbps == l->width * l->lane_gbps);
	}
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), fx->hosts);
	assert_int_equal(tp_fabric_unnamed_cas(f), fx->unnamed);
	assert_int_equal(tp_fabric_sharp_cas(f), fx->sharp);
	/* descriptions are stored trimmed */
	for (size_t i = 0; i < tp_fabric_nswitches(f); i++) {
		const char *d = tp_fabric_switch(f, i)->desc;
		size_t n = strlen(d);
		assert_false(n && (d[0] == ' ' || d[n - 1] == ' '));
	}
	tp_fabric_destroy(f);
}

static void test_spot_nvidia(void **state)
{
	TP_FIXTURE_OR_SKIP(path, "ib/NVIDIA-topograph/ibnetdiscover-example.out");
	tp_fabric_t *f = tp_fabric_create();
	uint32_t s, c;
	const tp_link_t *l;

	(void)state;
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, path), TP_OK);
	s = find(f, TP_NODE_SWITCH, 0x2c5eab0300b87b40ULL);
	assert_int_not_equal(s, TP_MAP_NONE);
	assert_string_equal(f->sw[s].desc,
			    "MF0;A09-P1-IBLEAF-04-04:MQM9701/U1");
	assert_int_equal(f->sw[s].nports, 65);
	c = find(f, TP_NODE_CA, 0xe09d7303007a4bd8ULL);
	assert_int_not_equal(c, TP_MAP_NONE);
	assert_string_equal(f->ca[c].desc, "a08-p1-dgx-04-c01 mlx5_5");
	assert_int_equal(f->ca[c].nports, 1);
	l = link_at(f, TP_NODE_SWITCH, s, 1);
	assert_non_null(l);
	assert_int_equal(l->width, 4);
	assert_true(l->lane_gbps == 100.0);
	assert_true(l->gbps == 400.0);
	assert_true(link_at(f, TP_NODE_CA, c, 1) == l);
	/* port 65 is the SHArP aggregation node inside the switch */
	l = link_at(f, TP_NODE_SWITCH, s, 65);
	assert_non_null(l);
	c = l->kind[0] == TP_NODE_CA ? l->node[0] : l->node[1];
	assert_string_equal(f->ca[c].desc,
			    "Mellanox Technologies Aggregation Node");
	/* a spine, every port line of its block is a distinct cable (62 to
	 * leaves + SHArP): awk '/^Switch/{on=($0 ~ /S-2c5eab0300c26280/)}
	 * /^$/{on=0} on&&/^\[/' ibnetdiscover-example.out | wc -l -> 63 */
	s = find(f, TP_NODE_SWITCH, 0x2c5eab0300c26280ULL);
	assert_int_not_equal(s, TP_MAP_NONE);
	{
		size_t n = 0;
		for (size_t i = 0; i < tp_fabric_nlinks(f); i++) {
			const tp_link_t *k = tp_fabric_link(f, i);
			n += (k->kind[0] == TP_NODE_SWITCH && k->node[0] == s) ||
			     (k->kind[1] == TP_NODE_SWITCH && k->node[1] == s);
		}
		assert_int_equal(n, 63);
	}
	{
		/*
		 * Run in fixtures/ib/NVIDIA-topograph:
		 * hosts = 121:
		 *   grep '^Ca' ibnetdiscover-example.out | sed 's/.*# "//;
		 *   s/"$//' | awk '{print $1}' | grep -vE
		 *   '^(MT[0-9]{4,}|Mellanox|localhost)$' | sort -u | wc -l
		 * unnamed CAs = 72 (69 "MT4129 ConnectX7 ..." + 3 "localhost
		 *   HCA-N"): same pipeline, awk '$1 ~
		 * /^(MT[0-9]{4,}|localhost)$/' SHArP CAs = 40; rails = 4;
		 * degraded hosts = 12 (10 hosts on 3 leaves, 2 on 2): per host,
		 * distinct "S-" GUIDs on the port lines of its Ca blocks.
		 */
		assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
		assert_int_equal(tp_fabric_nhosts(f), 121);
		assert_int_equal(tp_fabric_unnamed_cas(f), 72);
		assert_int_equal(tp_fabric_sharp_cas(f), 40);
		assert_int_equal(tp_fabric_rails(f), 4);
		assert_int_equal(tp_fabric_degraded_hosts(f), 12);
	}
	tp_fabric_destroy(f);
}

static void test_spot_small(void **state)
{
	tp_fabric_t *f;
	uint32_t a, b;
	const tp_link_t *l;
	(void)state;

	{
		TP_FIXTURE_OR_SKIP(path, "ib/jabl-ibtopotool/1.topo");
		f = tp_fabric_create();
		assert_int_equal(tp_fabric_read_ibnetdiscover(f, path), TP_OK);
		/* [10] "S-0008f10400410015"[1] # ... 4xSDR, while the other
		 * end says 1xSDR: the first sighting's width is kept, so only
		 * the speed is pinned here */
		a = find(f, TP_NODE_SWITCH, 0x5442ba00003080ULL);
		b = find(f, TP_NODE_SWITCH, 0x8f10400410015ULL);
		assert_string_equal(f->sw[a].desc, "ISR9024 Voltaire");
		assert_int_equal(f->sw[a].nports, 24);
		assert_int_equal(f->sw[b].nports, 8);
		l = link_at(f, TP_NODE_SWITCH, a, 10);
		assert_non_null(l);
		assert_true(link_at(f, TP_NODE_SWITCH, b, 1) == l);
		assert_true(l->lane_gbps == 2.5);
		/* a dual-port CA with both ports cabled */
		a = find(f, TP_NODE_CA, 0x8f10403960558ULL);
		assert_int_equal(f->ca[a].nports, 2);
		assert_non_null(link_at(f, TP_NODE_CA, a, 1));
		assert_non_null(link_at(f, TP_NODE_CA, a, 2));
		tp_fabric_destroy(f);
	}
	{
		TP_FIXTURE_OR_SKIP(path, "ib/jabl-ibtopotool/3.topo");
		f = tp_fabric_create();
		assert_int_equal(tp_fabric_read_ibnetdiscover(f, path), TP_OK);
		assert_int_equal(count_warnings(f, "3.topo:1: skipped"), 1);
		a = find(f, TP_NODE_SWITCH, 0xe41d2d030003e470ULL);
		l = link_at(f, TP_NODE_SWITCH, a, 3);
		assert_non_null(l);
		assert_true(l->lane_gbps == 14.0);
		assert_null(link_at(f, TP_NODE_SWITCH, a, 1));
		assert_null(link_at(f, TP_NODE_SWITCH, a, 19));
		tp_fabric_destroy(f);
	}
	{
		TP_FIXTURE_OR_SKIP(
			path,
			"ib/hwloc-netloc/plafrim/ib-subnet-fe80_0000_0000_0000.txt");
		f = tp_fabric_create();
		assert_int_equal(tp_fabric_read_ibnetdiscover(f, path), TP_OK);
		a = find(f, TP_NODE_SWITCH, 0x0008f10500108c9eULL);
		assert_string_equal(f->sw[a].desc, "Voltaire 4036 # 4036-8C9E");
		/* "SW 142 36 ... - CA 139 1 0x0002c903004e26b1": CAs are known
		 * by port GUID in the -p form */
		b = find(f, TP_NODE_CA, 0x0002c903004e26b1ULL);
		assert_string_equal(f->ca[b].desc, "manumanu HCA-1");
		/* and say so, for health and diff to match them so */
		assert_true(f->ca[b].by_port_guid);
		assert_int_equal(tp_fabric_port_guid_cas(f), f->nca);
		l = link_at(f, TP_NODE_SWITCH, a, 36);
		assert_true(l && l == link_at(f, TP_NODE_CA, b, 1));
		assert_int_equal(l->width, 4);
		assert_true(l->lane_gbps == 10.0);
		/* -p: port count is the highest port seen (grep 0x0008f10500108c9e) */
		assert_int_equal(f->sw[a].nports, 36);
		tp_fabric_destroy(f);
	}
	{
		TP_FIXTURE_OR_SKIP(
			path,
			"ib/treydock-infiniband_exporter/ibnetdiscover-p-test2.out");
		f = tp_fabric_create();
		assert_int_equal(tp_fabric_read_ibnetdiscover(f, path), TP_OK);
		a = find(f, TP_NODE_SWITCH, 0x946dae0300618c83ULL);
		assert_string_equal(f->sw[a].desc, "5FB0406-spine-IB02");
		a = find(f, TP_NODE_SWITCH, 0x946dae0300630bf6ULL);
		l = link_at(f, TP_NODE_SWITCH, a, 81);
		assert_non_null(l);
		assert_true(l->lane_gbps == 50.0);
		assert_int_equal(count_warnings(f, "p-test2.out:5:"), 1);
		tp_fabric_destroy(f);
	}
	{
		TP_FIXTURE_OR_SKIP(
			path,
			"ib/treydock-infiniband_exporter/ibnetdiscover-p-test3.out");
		f = tp_fabric_create();
		assert_int_equal(tp_fabric_read_ibnetdiscover(f, path), TP_OK);
		assert_string_equal(f->sw[0].desc,
				    "Infiniscale-IV Mellanox Technologies");
		assert_int_equal(f->sw[0].nports, 22);
		tp_fabric_destroy(f);
	}
}

/* The two subnets of plafrim2 into one fabric: GUIDs are per subnet. */
static void test_two_subnets(void **state)
{
	TP_FIXTURE_OR_SKIP(
		p0, "ib/hwloc-netloc/plafrim2/ib-subnet-fe80_0000_0000_0000.txt");
	char path0[4096];
	tp_fabric_t *f = tp_fabric_create();

	(void)state;
	snprintf(path0, sizeof(path0), "%s", p0);
	TP_FIXTURE_OR_SKIP(
		p1, "ib/hwloc-netloc/plafrim2/ib-subnet-fe80_0000_0000_0001.txt");
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, path0), TP_OK);
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, p1), TP_OK);
	assert_int_equal(tp_fabric_nsubnets(f), 2);
	assert_int_equal(tp_fabric_nswitches(f), 7 + 1);
	assert_int_equal(tp_fabric_ncas(f), 96 + 23);
	assert_int_equal(tp_fabric_nlinks(f), 155 + 23);
	assert_int_equal(f->sw[7].subnet, 1);
	/* the same file twice: a switch in two subnets is refused, naming
	 * the file, its line and the GUID, and the fabric is left as it
	 * was */
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, p1), TP_ERR_PARSE);
	assert_non_null(strstr(tp_fabric_error(f), p1));
	assert_non_null(strstr(tp_fabric_error(f), "switch GUID 0x"));
	assert_non_null(strstr(tp_fabric_error(f), "already in subnet 1"));
	assert_int_equal(tp_fabric_nsubnets(f), 2);
	assert_int_equal(tp_fabric_ncas(f), 96 + 23);
	tp_fabric_destroy(f);
}

/* A dump cut down to its CA lines names its switches only as cable
 * peers: given twice, the second is still refused as the same subnet, in
 * the -p form and the plain one. */
static void test_same_subnet_ca_lines(void **state)
{
	static const char *const text[] = {
	    "CA     7  1 0x0000000000000011 4x QDR - SW     5  3 "
	    "0x0000000000000001 ( 'h1 mlx5_0' - 'sw1' )\n"
	    "CA     8  1 0x0000000000000021 4x QDR - SW     5  4 "
	    "0x0000000000000001 ( 'h2 mlx5_0' - 'sw1' )\n",
	    "Ca 1 \"H-10\" # \"h1 HCA-1\"\n"
	    "[1](11) \"S-01\"[3] # lid 7 lmc 0 \"sw1\" lid 5 4xQDR\n"
	    "Ca 1 \"H-20\" # \"h2 HCA-1\"\n"
	    "[1](21) \"S-01\"[4] # lid 8 lmc 0 \"sw1\" lid 5 4xQDR\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
		tp_fabric_t *f = tp_fabric_create();
		assert_int_equal(parse_str(f, "cas.txt", text[i]), TP_OK);
		assert_int_equal(parse_str(f, "cas.txt", text[i]),
				 TP_ERR_PARSE);
		assert_where(f, "cas.txt", i == 0 ? 1 : 2);
		assert_non_null(strstr(tp_fabric_error(f),
				       "switch GUID 0x0000000000000001 is "
				       "already in subnet 0"));
		assert_int_equal(tp_fabric_nsubnets(f), 1);
		assert_int_equal(tp_fabric_ncas(f), 2);
		tp_fabric_destroy(f);
	}
}

/* ---- hand-written inputs ---------------------------------------------------------- */

static void test_forward_refs(void **state)
{
	tp_fabric_t *f = tp_fabric_create();
	uint32_t spine, la, lb, n01, mt;
	const tp_link_t *l;

	(void)state;
	if (tp_fabric_read_ibnetdiscover(f, tp_test_data("ibn-forward.txt")))
		fail_msg("%s", tp_fabric_error(f));
	assert_int_equal(tp_fabric_nswitches(f), 3);
	assert_int_equal(tp_fabric_ncas(f), 2);
	/* spine-leaf-a, spine-leaf-b, leaf-a-n01, leaf-a-MT, n01-leaf-b; the
	 * router's cable is skipped */
	assert_int_equal(tp_fabric_nlinks(f), 5);
	assert_int_equal(count_warnings(f, "2 router lines skipped"), 1);

	spine = find(f, TP_NODE_SWITCH, 0x2c90100000001ULL);
	la = find(f, TP_NODE_SWITCH, 0x2c90100000002ULL);
	lb = find(f, TP_NODE_SWITCH, 0x2c90100000003ULL);
	n01 = find(f, TP_NODE_CA, 0x2c90200000010ULL);
	mt = find(f, TP_NODE_CA, 0x2c90200000020ULL);
	assert_string_equal(f->sw[spine].desc, "spine \"1\" # chip");
	assert_int_equal(f->sw[spine].nports, 24);
	/* header wins over the earlier reference, trimmed */
	assert_string_equal(f->sw[la].desc, "leaf-a");
	assert_int_equal(f->sw[la].nports, 36);
	/* known only from references: desc from the comment, ports seen */
	assert_string_equal(f->sw[lb].desc, "leaf-b");
	assert_int_equal(f->sw[lb].nports, 13);
	assert_string_equal(f->ca[n01].desc, "n01 HCA-1");
	assert_int_equal(f->ca[n01].nports, 2);
	assert_string_equal(f->ca[mt].desc,
			    "MT25408 ConnectX Mellanox Technologies");
	assert_int_equal(f->ca[mt].nports, 1);
	l = link_at(f, TP_NODE_CA, mt, 1);
	assert_non_null(l);
	assert_true(l->lane_gbps == 5.0);
	l = link_at(f, TP_NODE_CA, n01, 2);
	assert_true(l && l == link_at(f, TP_NODE_SWITCH, lb, 5));
	assert_true(link_at(f, TP_NODE_SWITCH, spine, 1) ==
		    link_at(f, TP_NODE_SWITCH, la, 13));
	assert_null(link_at(f, TP_NODE_SWITCH, spine, 3));

	/* the GUID map names the CA its description does not */
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 1);
	assert_int_equal(tp_fabric_unnamed_cas(f), 1);
	assert_int_equal(tp_fabric_read_guid_map(f, tp_test_data("ibn-guidmap.txt")),
			 TP_OK);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 2);
	assert_int_equal(tp_fabric_unnamed_cas(f), 0);
	assert_int_not_equal(tp_fabric_host_find(f, "n02"), TP_ID_NONE);
	assert_int_equal(f->ca[mt].host, tp_fabric_host_find(f, "n02"));
	tp_fabric_destroy(f);
}

static void test_forms(void **state)
{
	tp_fabric_t *f;
	(void)state;

	/* CRLF, spaces for tabs, a -f suffix, an unknown speed (warning) */
	f = tp_fabric_create();
	assert_int_equal(
		parse_str(f, "crlf.txt",
			  "Switch 8 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\r\n"
			  "[1] \"H-10\"[1](11) # \"h1 HCA-1\" lid 2 4xEDR s=2 w=2 v=3\r\n"
			  "[2] \"H-20\"[1](21) # \"h2 HCA-1\" lid 3 4xZDR\r\n"
			  "[3] \"H-30\"[1](31) # \"h3 HCA-1\" lid 4 (4X 25.78125 Gbps Active/  LinkUp)\r\n"),
		TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 3);
	assert_true(f->link[0].lane_gbps == 25.0);
	assert_true(f->link[1].lane_gbps == 0);
	assert_true(f->link[2].lane_gbps == 25.0);
	assert_int_equal(count_warnings(f, "crlf.txt: 1 link with an unknown "
					   "speed"),
			 1);
	tp_fabric_destroy(f);

	/* a link with an unknown speed counts once, though both its ends
	 * are listed: plain form, -p form */
	f = tp_fabric_create();
	assert_int_equal(
	    parse_str(f, "gdr.txt",
		      "Switch 8 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\n"
		      "[1] \"H-10\"[1](11) # \"h1 HCA-1\" lid 2 4xGDR\n"
		      "[2] \"H-20\"[1](21) # \"h2 HCA-1\" lid 3 4xGDR\n"
		      "Ca 1 \"H-10\" # \"h1 HCA-1\"\n"
		      "[1](11) \"S-01\"[1] # lid 2 lmc 0 \"sw\" lid 1 4xGDR\n"
		      "Ca 1 \"H-20\" # \"h2 HCA-1\"\n"
		      "[1](21) \"S-01\"[2] # lid 3 lmc 0 \"sw\" lid 1 4xGDR\n"),
	    TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 2);
	assert_int_equal(count_warnings(f, "gdr.txt: 2 links with an unknown "
					   "speed"),
			 1);
	tp_fabric_destroy(f);
	f = tp_fabric_create();
	assert_int_equal(
	    parse_str(
		f, "gdrp.txt",
		"CA 2 1 0x11 4x GDR - SW 1 3 0x01 ( 'h1 HCA-1' - 'sw' )\n"
		"SW 1 3 0x01 4x GDR - CA 2 1 0x11 ( 'sw' - 'h1 HCA-1' )\n"
		"SW 1 4 0x01 4x GDR - CA 3 1 0x12 ( 'sw' - 'h2 HCA-1' )\n"),
	    TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 2);
	assert_int_equal(count_warnings(f, "gdrp.txt: 2 links with an unknown "
					   "speed"),
			 1);
	tp_fabric_destroy(f);
	/* "4x ???" on a cabled port is a speed the dump could not name (it
	 * went in at 0 Gb/s without a word); on an unconnected port it is
	 * the port's state, no warning */
	f = tp_fabric_create();
	assert_int_equal(
	    parse_str(f, "unk.txt",
		      "CA 2 1 0x11 4x ??? - SW 1 3 0x01 ( 'h1 HCA-1' - 'sw' )\n"
		      "SW 1 3 0x01 4x ??? - CA 2 1 0x11 ( 'sw' - 'h1 HCA-1' )\n"
		      "SW 1 4 0x01 4x EDR - CA 3 1 0x12 ( 'sw' - 'h2 HCA-1' )\n"
		      "SW 1 5 0x01 4x ???\n"),
	    TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 2);
	assert_int_equal(count_warnings(f, "unk.txt: 1 link with an unknown "
					   "speed"),
			 1);
	tp_fabric_destroy(f);

	/* a port claimed by two cables: warning, first one kept */
	f = tp_fabric_create();
	assert_int_equal(
		parse_str(f, "dup.txt",
			  "Switch 8 \"S-01\" # \"a\" base port 0 lid 1 lmc 0\n"
			  "[1] \"H-10\"[1](11) # \"h1 HCA-1\" lid 2 4xQDR\n"
			  "Switch 8 \"S-02\" # \"b\" base port 0 lid 5 lmc 0\n"
			  "[4] \"H-10\"[1](11) # \"h1 HCA-1\" lid 2 4xQDR\n"),
		TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 1);
	assert_int_equal(count_warnings(f, "dup.txt:4:"), 1);
	tp_fabric_destroy(f);

	/* a CA whose first word is too long to be a host: finalize counts it
	 * unnamed with the usual warning rather than failing on it */
	{
		char text[600];
		f = tp_fabric_create();
		snprintf(text, sizeof(text),
			 "Switch 8 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\n"
			 "[1] \"H-10\"[1](11) # \"%0300d HCA-1\" lid 2 4xQDR\n"
			 "[2] \"H-20\"[1](21) # \"h2 HCA-1\" lid 3 4xQDR\n",
			 0);
		assert_int_equal(parse_str(f, "long.txt", text), TP_OK);
		if (tp_fabric_finalize(f, NULL))
			fail_msg("%s", tp_fabric_error(f));
		assert_int_equal(tp_fabric_nhosts(f), 1);
		assert_int_equal(tp_fabric_unnamed_cas(f), 1);
		assert_int_equal(
		    count_warnings(f, "1 CA without a usable hostname"), 1);
		tp_fabric_destroy(f);
	}

	/* 12x links (rare: early switch-to-switch cables), both forms */
	f = tp_fabric_create();
	assert_int_equal(
	    parse_str(f, "w12.txt",
		      "Switch 8 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\n"
		      "[1] \"H-10\"[1](11) # \"h1 HCA-1\" lid 2 12xQDR\n"
		      "[2] \"S-02\"[3] # \"sw2\" lid 5 12xEDR\n"),
	    TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 2);
	assert_int_equal(f->link[0].width, 12);
	assert_int_equal(f->link[1].width, 12);
	assert_true(f->link[1].gbps == 12 * 25.0);
	tp_fabric_destroy(f);
	f = tp_fabric_create();
	assert_int_equal(
	    parse_str(f, "w12p.txt",
		      "SW     5  3 0x0000000000000001 12x EDR - CA     7  1 "
		      "0x0000000000000011 ( 'sw1' - 'h1 mlx5_0' )\n"),
	    TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 1);
	assert_int_equal(f->link[0].width, 12);
	assert_true(f->link[0].gbps == 12 * 25.0);
	tp_fabric_destroy(f);

	/* -p lines with width/speed unknown and an RT line */
	f = tp_fabric_create();
	assert_int_equal(
		parse_str(f, "p.txt",
			  "SW     5 12 0x0000000000000001 4x ???                                    'sw1'\n"
			  "SW     5  3 0x0000000000000001 ?? ??? - CA     7  1 0x0000000000000011 ( 'sw1' - 'h1 mlx5_0' )\n"
			  "RT     9  1 0x0000000000000099 4x QDR - SW     5  4 0x0000000000000001 ( 'r' - 'sw1' )\n"),
		TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 1);
	assert_int_equal(f->link[0].width, 0);
	assert_int_equal(f->sw[0].nports, 12);
	assert_string_equal(f->ca[0].desc, "h1 mlx5_0");
	tp_fabric_destroy(f);
}

/* Dump, then load the JSON: what the parser builds must load. */
static void assert_json_loads(tp_fabric_t *f)
{
	tp_fabric_t *g = NULL;
	char *json = NULL, *err = NULL;

	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	assert_int_equal(tp_fabric_to_json(f, &json), TP_OK);
	if (tp_fabric_parse_json("np.json", json, &g, &err))
		fail_msg("%s", err);
	tp_fabric_destroy(g);
	tp_free(json);
}

/* A speed the dump could not name ("???") on one end of a cable gives
 * way to the other end's, whichever line comes first (read first it
 * stayed: a 0 Gb/s cable, whose hosts could never hold a job); finalize
 * prices a link no end names at the fabric's most common rate, else at
 * 4x HDR, and keeps width and lane unknown (fabric diff and the health
 * rules judge nothing against an assumption). */
static void test_unknown_rate(void **state)
{
	static const char *const line[] = {
	    "CA 2 1 0x11 4x ??? - SW 1 3 0x01 ( 'h1 HCA-1' - 'sw' )\n",
	    "SW 1 3 0x01 4x EDR - CA 2 1 0x11 ( 'sw' - 'h1 HCA-1' )\n"};
	tp_fabric_t *f;

	(void)state;
	for (int order = 0; order < 2; order++) {
		char text[256];
		f = tp_fabric_create();
		snprintf(text, sizeof(text), "%s%s", line[order],
			 line[1 - order]);
		assert_int_equal(parse_str(f, "u.txt", text), TP_OK);
		assert_int_equal(tp_fabric_nlinks(f), 1);
		assert_true(f->link[0].lane_gbps == 25.0);
		assert_true(f->link[0].gbps == 100.0);
		/* and no "unknown speed" warning, in either order */
		assert_int_equal(count_warnings(f, "unknown speed"), 0);
		tp_fabric_destroy(f);
	}
	/* two EDR cables and one no end names: priced as 4x EDR */
	f = tp_fabric_create();
	assert_int_equal(
	    parse_str(
		f, "m.txt",
		"SW 1 3 0x01 4x EDR - CA 2 1 0x11 ( 'sw' - 'h1 HCA-1' )\n"
		"SW 1 4 0x01 4x EDR - CA 3 1 0x12 ( 'sw' - 'h2 HCA-1' )\n"
		"SW 1 5 0x01 4x ??? - CA 4 1 0x13 ( 'sw' - 'h3 HCA-1' )\n"),
	    TP_OK);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	const tp_link_t *u =
	    link_at(f, TP_NODE_CA, find(f, TP_NODE_CA, 0x13), 1);
	assert_non_null(u);
	assert_true(u->lane_gbps == 0 && u->width == 4);
	assert_true(u->gbps == 100.0);
	assert_int_equal(count_warnings(f, "1 link of unknown width or speed "
					   "priced as 4x EDR, the fabric's "
					   "most common"),
			 1);
	tp_fabric_destroy(f);
	/* none named: 4x HDR, said to be an assumption */
	f = tp_fabric_create();
	assert_int_equal(
	    parse_str(
		f, "n.txt",
		"SW 1 3 0x01 ?? ??? - CA 2 1 0x11 ( 'sw' - 'h1 HCA-1' )\n"
		"SW 1 4 0x01 ?? ??? - CA 3 1 0x12 ( 'sw' - 'h2 HCA-1' )\n"),
	    TP_OK);
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	for (size_t i = 0; i < tp_fabric_nlinks(f); i++) {
		assert_int_equal(f->link[i].width, 0);
		assert_true(f->link[i].gbps == 200.0);
	}
	assert_int_equal(count_warnings(f, "2 links of unknown width or speed "
					   "priced as 4x HDR, an assumption"),
			 1);
	assert_json_loads(f);
	tp_fabric_destroy(f);
}

/* The two ends of a cable giving different speeds (an edited or spliced
 * dump): the slower is kept whichever line comes first, as the narrower
 * width is, with one warning naming the second line. */
static void test_speed_mismatch(void **state)
{
	static const char *const line[] = {
	    "SW  1 1 0x0000000000000001 4x EDR - CA  134  1 "
	    "0x0000000000000002 ( 'sw' - 'o0001 HCA-1' )\n",
	    "CA  134  1 0x0000000000000002 4x SDR - SW  1 1 "
	    "0x0000000000000001 ( 'o0001 HCA-1' - 'sw' )\n"};

	(void)state;
	for (int order = 0; order < 2; order++) {
		char text[512];
		tp_fabric_t *f = tp_fabric_create();
		snprintf(text, sizeof(text), "%s%s", line[order],
			 line[1 - order]);
		assert_int_equal(parse_str(f, "sp.txt", text), TP_OK);
		assert_int_equal(tp_fabric_nlinks(f), 1);
		assert_true(tp_fabric_link(f, 0)->lane_gbps == 2.5);
		assert_true(tp_fabric_link(f, 0)->gbps == 10);
		assert_int_equal(count_warnings(f, "give lanes of"), 1);
		assert_int_equal(count_warnings(f, "sp.txt:2: the ends of the "
						   "cable"),
				 1);
		tp_fabric_destroy(f);
	}
}

/* A cable naming a port above the count its node's header declares (an
 * edited or spliced dump): dropped with a warning whether the header
 * comes before or after it, the node keeps its declared ports, and the
 * fabric written loads. */
static void test_port_beyond_header(void **state)
{
	static const char *const text[] = {
	    /* the header after the cable */
	    "Ca 1 \"H-10\" # \"h1 HCA-1\"\n"
	    "[1](11) \"S-01\"[40] # lid 2 lmc 0 \"sw\" lid 1 4xQDR\n"
	    "Ca 1 \"H-20\" # \"h2 HCA-1\"\n"
	    "[1](21) \"S-01\"[2] # lid 3 lmc 0 \"sw\" lid 1 4xQDR\n"
	    "Switch 36 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\n"
	    "[2] \"H-20\"[1](21) # \"h2 HCA-1\" lid 3 4xQDR\n",
	    /* the header first */
	    "Switch 36 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\n"
	    "[2] \"H-20\"[1](21) # \"h2 HCA-1\" lid 3 4xQDR\n"
	    "Ca 1 \"H-10\" # \"h1 HCA-1\"\n"
	    "[1](11) \"S-01\"[40] # lid 2 lmc 0 \"sw\" lid 1 4xQDR\n"
	    "Ca 1 \"H-20\" # \"h2 HCA-1\"\n"
	    "[1](21) \"S-01\"[2] # lid 3 lmc 0 \"sw\" lid 1 4xQDR\n",
	    /* a CA's port: its header says 1 */
	    "Switch 36 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\n"
	    "[2] \"H-20\"[1](21) # \"h2 HCA-1\" lid 3 4xQDR\n"
	    "[3] \"H-10\"[2](12) # \"h1 HCA-1\" lid 2 4xQDR\n"
	    "Ca 1 \"H-10\" # \"h1 HCA-1\"\n"
	    "Ca 1 \"H-20\" # \"h2 HCA-1\"\n"
	    "[1](21) \"S-01\"[2] # lid 3 lmc 0 \"sw\" lid 1 4xQDR\n",
	};
	static const char *const warn[] = {
	    "np.txt:2: switch 0x0000000000000001 has ports 1..36, not 40; "
	    "cable ignored",
	    "np.txt:4: switch 0x0000000000000001 has ports 1..36, not 40; "
	    "cable ignored",
	    "np.txt:3: CA 0x0000000000000010 has ports 1..1, not 2; cable "
	    "ignored",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
		tp_fabric_t *f = tp_fabric_create();

		if (parse_str(f, "np.txt", text[i]))
			fail_msg("%zu: %s", i, tp_fabric_error(f));
		assert_int_equal(tp_fabric_nlinks(f), 1);
		assert_int_equal(f->sw[0].nports, 36);
		assert_int_equal(f->ca[find(f, TP_NODE_CA, 0x10)].nports, 1);
		if (count_warnings(f, warn[i]) != 1)
			fail_msg("%zu: no warning \"%s\"", i, warn[i]);
		assert_json_loads(f);
		tp_fabric_destroy(f);
	}

	/* the -p form of a mixed file holds to the headers as well */
	tp_fabric_t *f = tp_fabric_create();
	assert_int_equal(
	    parse_str(f, "np.txt",
		      "Switch 36 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\n"
		      "[2] \"H-20\"[1](21) # \"h2 HCA-1\" lid 3 4xQDR\n"
		      "SW     1 40 0x0000000000000001 4x QDR - CA     2  1 "
		      "0x0000000000000030 ( 'sw' - 'h3 mlx5_0' )\n"),
	    TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 1);
	assert_int_equal(count_warnings(f,
					"np.txt:3: switch 0x0000000000000001 "
					"has ports 1..36, not 40"),
			 1);
	assert_json_loads(f);
	tp_fabric_destroy(f);
}

static void expect_fail(const char *text, size_t line, const char *what)
{
	tp_fabric_t *f = tp_fabric_create();

	assert_int_equal(parse_str(f, "bad.txt", text), TP_ERR_PARSE);
	assert_where(f, "bad.txt", line);
	if (what && !strstr(tp_fabric_error(f), what))
		fail_msg("\"%s\" lacks \"%s\"", tp_fabric_error(f), what);
	/* nothing of a rejected file stays in the fabric */
	assert_int_equal(tp_fabric_nsubnets(f), 0);
	assert_int_equal(tp_fabric_nswitches(f), 0);
	assert_int_equal(tp_fabric_ncas(f), 0);
	assert_int_equal(tp_fabric_nlinks(f), 0);
	tp_fabric_destroy(f);
}

#define SW8 "Switch 8 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\n"

static void test_malformed(void **state)
{
	(void)state;
	expect_fail(SW8 "[9] \"H-10\"[1](11) # \"h\" lid 2 4xQDR\n", 2,
		    "port 9 out of range");
	expect_fail("# c\n[1] \"H-10\"[1](11) # \"h\" lid 2 4xQDR\n", 2,
		    "outside a node block");
	expect_fail(SW8 "\nhello world\n", 3, "unrecognised line");
	expect_fail(SW8 "[1] \"H-10\"[1](11) # \"h\" lid 2 3xQDR\n", 2,
		    "width");
	expect_fail(SW8 "[1] \"H-10\"[1](11) # \"h\" lid 2\n", 2, NULL);
	expect_fail(SW8 "[1] \"H-10\"[1](11) # \"h lid 2 4xQDR\n", 2, NULL);
	expect_fail(SW8 "[1] \"H-10\"[1](11)\n", 2, "description");
	expect_fail(SW8 "[1] \"H-10\"[0](11) # \"h\" lid 2 4xQDR\n", 2, NULL);
	expect_fail(SW8 "[1] \"X-10\"[1](11) # \"h\" lid 2 4xQDR\n", 2, NULL);
	expect_fail(SW8 "[1] \"H-10000000000000000\"[1] # \"h\" lid 2 4xQDR\n",
		    2, NULL);
	expect_fail("Switch 0 \"S-01\" # \"sw\"\n", 1, "port count");
	expect_fail("Switch 999 \"S-01\" # \"sw\"\n", 1, "port count");
	expect_fail("Switch 8 \"H-01\" # \"sw\"\n", 1, "GUID");
	expect_fail("Ca 2 \"H-01\" \"sw\"\n", 1, "description");
	/* -p: the peer port and the description pair, each named */
	expect_fail("SW 5 1 0x01 4x QDR - CA 7 1 0x11 ( 'a' - 'b'\n", 1,
		    "bad node descriptions, expected ( 'a' - 'b' ) near \"( "
		    "'a' - 'b'\"");
	expect_fail("SW 5 1 0x01 4x QDR - CA 7 1 0x11 ( 'a - 'b' )\n", 1,
		    "bad node descriptions");
	expect_fail("SW 5 1 0x01 4x QDR - CA 7 1 0x11 'a' - 'b'\n", 1,
		    "bad node descriptions");
	expect_fail("SW 5 1 0x01 4x QDR - CA 7 1 0x11\n", 1,
		    "missing node descriptions");
	expect_fail("SW 5 1 0x01 4x QDR - CA 7 1 ( 'a' - 'b' )\n", 1,
		    "bad peer port");
	expect_fail("SW 5 1 0x01 4x QDR - XX 7 1 0x11 ( 'a' - 'b' )\n", 1,
		    "bad peer port");
	expect_fail("SW 5 300 0x01 4x QDR 'a'\n", 1, NULL);
	expect_fail("SW 5 1 0x01 4x QDR 'a' junk\n", 1, NULL);
	expect_fail("vendid=zz\n", 1, NULL);
	/* one GUID, both a switch and a CA: in a header, a port line's
	 * peer, either end of a -p line, or the two forms mixed */
	expect_fail(SW8 "Ca 2 \"H-01\" # \"h\"\n", 2,
		    "GUID 0x0000000000000001 is both a switch and a CA (a "
		    "switch on line 1)");
	expect_fail(SW8 "[1] \"H-01\"[1](11) # \"h\" lid 2 4xQDR\n", 2,
		    "is both a switch and a CA");
	expect_fail(
	    "Ca 2 \"H-01\" # \"h\"\n"
	    "[1](11) \"S-02\"[1] # lid 2 lmc 0 \"sw\" lid 1 4xQDR\n" SW8,
	    3, "(a CA on line 1)");
	expect_fail("CA 7 1 0x01 4x QDR - SW 5 1 0x01 ( 'h' - 'sw' )\n", 1,
		    "GUID 0x0000000000000001 is both a switch and a CA (a CA "
		    "on line 1)");
	expect_fail("SW 5 1 0x01 4x QDR - CA 7 1 0x11 ( 'sw' - 'h' )\n"
		    "SW 5 2 0x11 4x QDR 'sw2'\n",
		    2, "is both a switch and a CA");
	expect_fail("CA 7 1 0x01 4x QDR 'h'\n" SW8, 2,
		    "is both a switch and a CA");
	/* GUID 0, no real node's or port's: a header (it loaded, warned
	 * only as cabled elsewhere), a port line's peer, either end of a -p
	 * line, an unconnected -p port */
	expect_fail(SW8 "[1] \"H-10\"[1](11) # \"h1\" lid 2 4xQDR\n"
			"Ca 1 \"H-0000000000000000\" # \"h2\"\n",
		    3, "bad.txt:3: GUID 0 (no InfiniBand node or port has it)");
	expect_fail("Switch 8 \"S-0\" # \"sw\" base port 0 lid 1 lmc 0\n", 1,
		    "GUID 0");
	expect_fail(SW8 "[1] \"H-0\"[1](11) # \"h\" lid 2 4xQDR\n", 2,
		    "GUID 0");
	expect_fail("SW 5 1 0x01 4x QDR - CA 7 1 0x0 ( 'sw' - 'h' )\n", 1,
		    "GUID 0");
	expect_fail("CA 7 1 0x01 4x QDR - SW 5 1 0x00 ( 'h' - 'sw' )\n", 1,
		    "GUID 0");
	expect_fail("CA 7 1 0x0000000000000000 4x QDR 'h'\n", 1, "GUID 0");
	expect_fail("#\n# only comments\n#\n", 3, "no switches or CAs");
	expect_fail("", 1, "no switches or CAs");
	expect_fail("\n\n\n", 3, "no switches or CAs");
}

/* ---- hostile inputs ------------------------------------------------------------------ */

static char *load(const char *path, size_t *len_p)
{
	char *buf;

	assert_int_equal(tp_file_read(path, &buf, len_p), TP_OK);
	return buf;
}

/* Every prefix of a real dump: loads or fails with file:line. */
static void test_truncated(void **state)
{
	static const char *const rels[] = {
		"ib/jabl-ibtopotool/1.topo",
		"ib/treydock-infiniband_exporter/ibnetdiscover-p-test2.out",
		"ib/NVIDIA-topograph/ibnetdiscover-example.out",
	};
	(void)state;

	for (size_t r = 0; r < sizeof(rels) / sizeof(rels[0]); r++) {
		TP_FIXTURE_OR_SKIP(path, rels[r]);
		size_t len, step, ok = 0, bad = 0;
		char *buf = load(path, &len);

		/* all offsets of the small ones, ~600 of the big one */
		step = len > 20000 ? len / 600 : 1;
		for (size_t cut = 0; cut <= len; cut += step) {
			tp_fabric_t *f = tp_fabric_create();
			tp_err_t err = tp_fabric_parse_ibnetdiscover(
				f, "cut.txt", buf, cut);
			if (err) {
				assert_int_equal(err, TP_ERR_PARSE);
				assert_where(f, "cut.txt", 0);
				bad++;
			} else {
				ok++;
			}
			tp_fabric_destroy(f);
		}
		assert_true(ok > 0 && bad > 0);
		tp_free(buf);
	}
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

static void test_binary(void **state)
{
	size_t len = 65536;
	char *buf = malloc(len);
	uint32_t seed = 20240501;

	(void)state;
	assert_non_null(buf);
	for (int round = 0; round < 8; round++) {
		tp_fabric_t *f = tp_fabric_create();
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)lcg(&seed);
		/* some rounds: text-like bytes only, with newlines */
		if (round & 1)
			for (size_t i = 0; i < len; i++)
				buf[i] = (lcg(&seed) % 16 == 0)
						 ? '\n'
						 : " \t\"[]()#'-0123456789abcdefxSHCAW"
							   [lcg(&seed) % 31];
		assert_int_equal(
			tp_fabric_parse_ibnetdiscover(f, "random.bin", buf, len),
			TP_ERR_PARSE);
		assert_where(f, "random.bin", 0);
		tp_fabric_destroy(f);
	}
	free(buf);
}

static void test_long_line(void **state)
{
	size_t n = 1 << 20, hdr = strlen(SW8);
	char *buf = malloc(hdr + n + 2);
	tp_fabric_t *f = tp_fabric_create();

	(void)state;
	memcpy(buf, SW8, hdr);
	memcpy(buf + hdr, "\n", 1);
	memset(buf + hdr + 1, 'a', n);
	buf[hdr + 1 + n] = '\n';
	assert_int_equal(
		tp_fabric_parse_ibnetdiscover(f, "long.txt", buf, hdr + n + 2),
		TP_ERR_PARSE);
	assert_where(f, "long.txt", 3);
	assert_non_null(strstr(tp_fabric_error(f), "too long"));
	tp_fabric_destroy(f);
	free(buf);
}

/* Lines ended by CR alone (a classic Mac file) read as one comment line
 * ("no switches or CAs found") or one line too long: the error says what
 * the file holds. One line with a CR at its end, and CRLF, still load. */
static void test_cr_only(void **state)
{
	static const char cr[] =
	    "# a dump\r"
	    "Switch 8 \"S-01\" # \"sw\" base port 0 lid 1 lmc 0\r"
	    "[1] \"H-10\"[1](11) # \"h1 HCA-1\" lid 2 4xEDR\r";
	static const char one[] =
	    "SW 5 1 0x01 4x QDR - CA 7 1 0x11 ( 'sw' - 'h1 HCA-1' )\r";
	size_t n = 1 << 16, len = 0;
	char *big = malloc(n + sizeof(cr));
	tp_fabric_t *f;

	(void)state;
	expect_fail(cr, 1, "no newline: lines end in CR alone (old Mac");
	assert_non_null(big);
	while (len + sizeof(cr) < n) {
		memcpy(big + len, cr, sizeof(cr) - 1);
		len += sizeof(cr) - 1;
	}
	f = tp_fabric_create();
	assert_int_equal(tp_fabric_parse_ibnetdiscover(f, "big.txt", big, len),
			 TP_ERR_PARSE);
	assert_non_null(strstr(tp_fabric_error(f), "big.txt:1: no newline"));
	tp_fabric_destroy(f);
	free(big);
	f = tp_fabric_create();
	assert_int_equal(parse_str(f, "one.txt", one), TP_OK);
	assert_int_equal(tp_fabric_nlinks(f), 1);
	tp_fabric_destroy(f);
}

static void test_nul(void **state)
{
	static const char text[] = SW8 "[1] \"H-10\"[1](11) # \"h\0\" lid 2 4xQDR\n";
	tp_fabric_t *f = tp_fabric_create();

	(void)state;
	assert_int_equal(tp_fabric_parse_ibnetdiscover(f, "nul.txt", text,
						       sizeof(text) - 1),
			 TP_ERR_PARSE);
	assert_where(f, "nul.txt", 2);
	assert_non_null(strstr(tp_fabric_error(f), "NUL"));
	tp_fabric_destroy(f);

	/* a NUL in a real dump, and a NUL as the whole input */
	f = tp_fabric_create();
	assert_int_equal(tp_fabric_parse_ibnetdiscover(f, "z.txt", "\0", 1),
			 TP_ERR_PARSE);
	assert_where(f, "z.txt", 1);
	tp_fabric_destroy(f);
	{
		TP_FIXTURE_OR_SKIP(path, "ib/jabl-ibtopotool/2.topo");
		size_t len;
		char *buf = load(path, &len);
		/* the 12th line: "[2]     "H-0002c902002789ac"..." */
		char *p = buf;
		for (int i = 0; i < 11; i++)
			p = strchr(p, '\n') + 1;
		p[3] = '\0';
		f = tp_fabric_create();
		assert_int_equal(tp_fabric_parse_ibnetdiscover(f, "2.topo", buf,
							       len),
				 TP_ERR_PARSE);
		assert_where(f, "2.topo", 12);
		tp_fabric_destroy(f);
		tp_free(buf);
	}
}

static void test_read_errors(void **state)
{
	tp_fabric_t *f = tp_fabric_create();
	const char *path = tp_test_data("ibn-no-such-file.txt");

	(void)state;
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, path),
			 TP_ERR_NOTFOUND);
	assert_non_null(strstr(tp_fabric_error(f), "ibn-no-such-file.txt"));
	/* a file that is not an ibnetdiscover dump: names the file and line */
	path = tp_test_data("ibn-guidmap.txt");
	assert_int_equal(tp_fabric_read_ibnetdiscover(f, path), TP_ERR_PARSE);
	assert_where(f, path, 3);
	assert_int_equal(tp_fabric_read_ibnetdiscover(NULL, path),
			 TP_ERR_INVAL);
	assert_int_equal(tp_fabric_parse_ibnetdiscover(f, "x", NULL, 0),
			 TP_ERR_INVAL);
	tp_fabric_destroy(f);
}

/* A generated rail-less fat tree: 256 leaves x 32 hosts, 128 spines. */
static void test_generated(void **state)
{
	enum { LEAVES = 256, DOWN = 32, UP = 32, SPINES = LEAVES * UP / 64 };
	tp_strbuf_t sb = { 0 };
	tp_fabric_t *f = tp_fabric_create();

	(void)state;
	for (int l = 0; l < LEAVES; l++) {
		tp_strbuf_printf(&sb,
				 "\nswitchguid=0x%x\nSwitch\t64 \"S-%016x\"\t\t"
				 "# \"leaf%03d\" enhanced port 0 lid %d lmc 0\n",
				 0x100000 + l, 0x100000 + l, l, l + 1);
		for (int p = 0; p < DOWN; p++) {
			int h = l * DOWN + p;
			tp_strbuf_printf(&sb,
					 "[%d]\t\"H-%016x\"[1](%x) \t\t# "
					 "\"node%05d HCA-1\" lid %d 4xNDR\n",
					 p + 1, 0x800000 + h, 0x800000 + h, h,
					 h + 1000);
		}
		for (int u = 0; u < UP; u++) {
			int k = l * UP + u;
			tp_strbuf_printf(&sb,
					 "[%d]\t\"S-%016x\"[%d]\t\t# "
					 "\"spine%03d\" lid %d 4xNDR\n",
					 DOWN + u + 1, 0x200000 + k / 64,
					 k % 64 + 1, k / 64, 500 + k / 64);
		}
	}
	assert_false(sb.failed);
	assert_int_equal(tp_fabric_parse_ibnetdiscover(f, "gen.txt", sb.buf,
						       sb.len),
			 TP_OK);
	assert_int_equal(tp_fabric_nswitches(f), LEAVES + SPINES);
	assert_int_equal(tp_fabric_ncas(f), LEAVES * DOWN);
	assert_int_equal(tp_fabric_nlinks(f), LEAVES * (DOWN + UP));
	/* only the leaves have blocks: the spines and hosts are cabled but
	 * never described, as in a dump cut short, and said so */
	assert_int_equal(tp_fabric_nwarnings(f), 1);
	assert_non_null(strstr(tp_fabric_warning(f, 0),
			       "gen.txt: 128 switches and 8192 CAs cabled but "
			       "never described"));
	tp_free(sb.buf);
	tp_fabric_destroy(f);
}

/* ---- guidmap.c ---------------------------------------------------------------------- */

static const char *guid_name(const tp_fabric_t *f, uint64_t guid)
{
	uint32_t i = tp_u64map_get(f->guid_name, guid);

	return i == TP_MAP_NONE ? NULL : f->guid_names[i];
}

static void test_guidmap(void **state)
{
	tp_fabric_t *f = tp_fabric_create();
	const char *path;

	(void)state;
	if (tp_fabric_read_guid_map(f, tp_test_data("ibn-guidmap.txt")))
		fail_msg("%s", tp_fabric_error(f));
	assert_int_equal(f->nguid_names, 3);
	assert_string_equal(guid_name(f, 0x2c90200000020ULL), "n02");
	assert_string_equal(guid_name(f, 0xe09d730300858d88ULL), "gpu-a17");
	/* quoted, with a comment after the closing quote */
	assert_string_equal(guid_name(f, 0xe09d730300857448ULL), "gpu-a18");
	assert_null(guid_name(f, 0x1ULL));
	/* reading it again is harmless: same names */
	assert_int_equal(tp_fabric_read_guid_map(f, tp_test_data("ibn-guidmap.txt")),
			 TP_OK);
	assert_int_equal(f->nguid_names, 3);

	path = tp_test_data("ibn-guidmap-badguid.txt");
	assert_int_equal(tp_fabric_read_guid_map(f, path), TP_ERR_PARSE);
	assert_where(f, path, 3);
	path = tp_test_data("ibn-guidmap-dup.txt");
	assert_int_equal(tp_fabric_read_guid_map(f, path), TP_ERR_PARSE);
	assert_where(f, path, 4);
	assert_non_null(strstr(tp_fabric_error(f), "\"n1\" and \"n3\""));
	path = tp_test_data("ibn-no-such-map.txt");
	assert_int_equal(tp_fabric_read_guid_map(f, path), TP_ERR_NOTFOUND);
	assert_non_null(strstr(tp_fabric_error(f), "ibn-no-such-map.txt"));
	/* any ibnetdiscover dump is a bad map, at its first data line */
	path = tp_test_data("ibn-forward.txt");
	assert_int_equal(tp_fabric_read_guid_map(f, path), TP_ERR_PARSE);
	assert_where(f, path, 7);
	/* a name no host can have is refused at its line (it failed
	 * finalize later with "invalid argument", naming nothing) */
	char tmp[] = "/tmp/tp_guidmap_XXXXXX";
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	static const char bad[] = "0x0002c90200000020 n02\n"
				  "0x0002c90200000021 bad!\n";
	assert_int_equal(write(fd, bad, sizeof(bad) - 1),
			 (ssize_t)(sizeof(bad) - 1));
	close(fd);
	assert_int_equal(tp_fabric_read_guid_map(f, tmp), TP_ERR_PARSE);
	assert_where(f, tmp, 2);
	assert_non_null(strstr(tp_fabric_error(f), "not a host name"));
	unlink(tmp);
	/* text after a quoted name that is no comment, and a quote left
	 * open (the '#' inside it is no comment either) */
	static const char *const quoted[][2] = {
	    {"0x21 \"n21 HCA-1\" rack 3\n", "text after the quoted name"},
	    {"0x21 \"n21 HCA-1\" rack \"3\" x\n", "text after the quoted name"},
	    {"0x21 \"n21 # HCA-1\n", "unterminated quote"},
	};
	for (size_t i = 0; i < sizeof(quoted) / sizeof(quoted[0]); i++) {
		strcpy(tmp, "/tmp/tp_guidmap_XXXXXX");
		fd = mkstemp(tmp);
		assert_true(fd >= 0);
		size_t n = strlen(quoted[i][0]);
		assert_int_equal(write(fd, quoted[i][0], n), (ssize_t)n);
		close(fd);
		assert_int_equal(tp_fabric_read_guid_map(f, tmp), TP_ERR_PARSE);
		assert_where(f, tmp, 1);
		if (!strstr(tp_fabric_error(f), quoted[i][1]))
			fail_msg("\"%s\" lacks \"%s\"", tp_fabric_error(f),
				 quoted[i][1]);
		unlink(tmp);
	}
	/* a byte order mark before the first line (a Windows editor) */
	strcpy(tmp, "/tmp/tp_guidmap_XXXXXX");
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	static const char bom[] = "\xef\xbb\xbf"
				  "0x0002c90200000099 n99\n";
	assert_int_equal(write(fd, bom, sizeof(bom) - 1),
			 (ssize_t)(sizeof(bom) - 1));
	close(fd);
	if (tp_fabric_read_guid_map(f, tmp))
		fail_msg("%s", tp_fabric_error(f));
	assert_string_equal(guid_name(f, 0x2c90200000099ULL), "n99");
	unlink(tmp);
	tp_fabric_destroy(f);
}

int main(void)
{
	enum { NFIX = sizeof(fixtures) / sizeof(fixtures[0]) };
	const struct CMUnitTest fixed[] = {
	    cmocka_unit_test(test_width),
	    cmocka_unit_test(test_lane),
	    cmocka_unit_test(test_speed_name),
	    cmocka_unit_test(test_desc_hostname),
	    cmocka_unit_test(test_spot_nvidia),
	    cmocka_unit_test(test_spot_small),
	    cmocka_unit_test(test_two_subnets),
	    cmocka_unit_test(test_same_subnet_ca_lines),
	    cmocka_unit_test(test_forward_refs),
	    cmocka_unit_test(test_forms),
	    cmocka_unit_test(test_speed_mismatch),
	    cmocka_unit_test(test_unknown_rate),
	    cmocka_unit_test(test_port_beyond_header),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_truncated),
	    cmocka_unit_test(test_binary),
	    cmocka_unit_test(test_long_line),
	    cmocka_unit_test(test_cr_only),
	    cmocka_unit_test(test_nul),
	    cmocka_unit_test(test_read_errors),
	    cmocka_unit_test(test_generated),
	    cmocka_unit_test(test_guidmap),
	};
	enum { NFIXED = sizeof(fixed) / sizeof(fixed[0]) };
	struct CMUnitTest tests[NFIXED + NFIX];

	memcpy(tests, fixed, sizeof(fixed));
	/* one test per fixture, named by its path */
	for (size_t i = 0; i < NFIX; i++) {
		struct CMUnitTest t = cmocka_unit_test_prestate(
			test_fixture, (void *)&fixtures[i]);
		t.name = fixtures[i].rel;
		tests[NFIXED + i] = t;
	}
	return cmocka_run_group_tests_name("ibnetdiscover", tests, NULL, NULL);
}
