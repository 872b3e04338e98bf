/* topoplace-fabric/1: round trips (byte-identical re-save, same derived
 * model) on hand-built, generated and real fabrics; hostile documents give
 * one-line errors naming the file and the object. */
#include "tp_test.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "topology_int.h"

static char *to_json(const tp_fabric_t *f)
{
	char *s = NULL;
	assert_int_equal(tp_fabric_to_json(f, &s), TP_OK);
	return s;
}

/* save -> load -> save must give the same bytes, and the loaded model
 * the same derived counts. */
static void round_trip(tp_fabric_t *f)
{
	char *a = to_json(f), *b, *err = NULL;
	tp_fabric_t *g = NULL;

	assert_int_equal(tp_fabric_parse_json("mem", a, &g, &err), TP_OK);
	assert_null(err);
	b = to_json(g);
	assert_string_equal(a, b);
	assert_int_equal(tp_fabric_nhosts(g), tp_fabric_nhosts(f));
	assert_int_equal(tp_fabric_nswitches(g), tp_fabric_nswitches(f));
	assert_int_equal(tp_fabric_nlinks(g), tp_fabric_nlinks(f));
	assert_int_equal(tp_fabric_ngroups(g), tp_fabric_ngroups(f));
	assert_int_equal(tp_fabric_rails(g), tp_fabric_rails(f));
	assert_int_equal(tp_fabric_degraded_hosts(g),
			 tp_fabric_degraded_hosts(f));
	assert_int_equal(tp_fabric_unnamed_cas(g), tp_fabric_unnamed_cas(f));
	assert_int_equal(tp_fabric_total_gpus(g), tp_fabric_total_gpus(f));
	assert_int_equal(tp_fabric_nnvdomains(g), tp_fabric_nnvdomains(f));
	assert_int_equal(tp_fabric_nwarnings(g), tp_fabric_nwarnings(f));
	for (size_t i = 0; i < tp_fabric_ngroups(f); i++) {
		assert_true(tp_fabric_group(f, i)->up_gbps ==
			    tp_fabric_group(g, i)->up_gbps);
		assert_int_equal(tp_fabric_group(f, i)->nhosts,
				 tp_fabric_group(g, i)->nhosts);
	}
	tp_free(a);
	tp_free(b);
	tp_fabric_destroy(g);
}

/* A description edited in Latin-1 or cut mid-character: 0xE9 alone, a
 * UTF-16 surrogate (ED A0 80), a lead byte at the end; valid UTF-8 (é,
 * U+1F600) among them. */
#define SPINE_DESC                                                             \
	"spine caf\xe9 \xc3\xa9 \xed\xa0\x80 \xf0\x9f\x98\x80 \xc0\xaf \xc3"

/* Is s well-formed UTF-8 (RFC 3629)? Written apart from the writer's
 * check, the way a strict reader (Python's json.load) checks. */
static bool utf8_ok(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		uint32_t cp;
		int n;
		if (*s < 0x80) {
			s++;
			continue;
		}
		n = (*s & 0xe0) == 0xc0	  ? 2
		    : (*s & 0xf0) == 0xe0 ? 3
		    : (*s & 0xf8) == 0xf0 ? 4
					  : 0;
		if (!n)
			return false;
		cp = *s & (0x7f >> n);
		for (int k = 1; k < n; k++) {
			if ((s[k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[k] & 0x3f);
		}
		if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		    (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp < 0xe000))
			return false;
		s += n;
	}
	return true;
}

static void test_round_trip_built(void **state)
{
	(void)state;
	tp_fabric_t *f = tp_fabric_create();
	int sn = tp__fabric_new_subnet(f);
	uint32_t leaf, spine, c;
	bool added;
	char d[64];

	assert_int_equal(
	    tp__fabric_add_switch(f, sn, 0xabc, "leaf \"quoted\"", 36, &leaf),
	    TP_OK);
	assert_int_equal(
	    tp__fabric_add_switch(f, sn, 0xdef, SPINE_DESC, 36, &spine), TP_OK);
	assert_int_equal(tp__fabric_add_link(f, TP_NODE_SWITCH, leaf, 36,
					     TP_NODE_SWITCH, spine, 1, 4,
					     106.25, true, &added),
			 TP_OK);
	for (int h = 0; h < 3; h++) {
		snprintf(d, sizeof(d), "n%d HCA-1", h);
		assert_int_equal(tp__fabric_add_ca(f, sn, 0x500 + h, d, 2, &c),
				 TP_OK);
		assert_int_equal(tp__fabric_add_link(
				     f, TP_NODE_CA, c, 1, TP_NODE_SWITCH, leaf,
				     h + 1, 4, 25.78125, h != 2, &added),
				 TP_OK);
	}
	assert_int_equal(tp__fabric_domain_add(f, "rack1", "n0"), TP_OK);
	assert_int_equal(tp__fabric_domain_add(f, "rack1", "n1"), TP_OK);
	tp__fabric_warn(f, "reader warning with \"quotes\" and \\ backslash");
	assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
	uint32_t h;
	assert_int_equal(tp__fabric_host_get(f, "n1", false, &h), TP_OK);
	tp_gpu_t *g = tp_calloc(2, sizeof(*g));
	g[0] = (tp_gpu_t){.index = 0,
			  .model = tp_strdup("NVIDIA A100"),
			  .pci = tp_strdup("0000:07:00.0"),
			  .numa = 1,
			  .nic = tp_strdup("HCA-1"),
			  .nvlink_gbps = 2400};
	g[1] = (tp_gpu_t){.index = 1, .numa = -1, .nvlink_gbps = 0.1};
	assert_int_equal(tp__fabric_host_set_gpus(f, h, g, 2), TP_OK);
	assert_int_equal(
	    tp_fabric_finalize(f, &(tp_finalize_opts_t){.default_gpus = 4}),
	    TP_OK);
	assert_int_equal(tp_fabric_total_gpus(f), 2 + 4 + 4);
	round_trip(f);

	/* the saved text carries the format tag and derived data */
	char *s = to_json(f);
	/* and is UTF-8: each byte that starts no character is U+FFFD,
	 * written as itself; valid characters stay as they are */
	assert_true(utf8_ok(s));
	assert_non_null(strstr(s, "\"spine caf\xef\xbf\xbd \xc3\xa9 "
				  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
				  "\xf0\x9f\x98\x80 \xef\xbf\xbd\xef\xbf\xbd "
				  "\xef\xbf\xbd\""));
	assert_non_null(strstr(s, "\"format\":\"topoplace-fabric/1\""));
	assert_non_null(strstr(s, "\"derived\""));
	tp_free(s);
	tp_fabric_destroy(f);
}

static void test_round_trip_generated(void **state)
{
	(void)state;
	tp_gen_fat_tree_t ft;
	tp_gen_rail_t rl;
	tp_gen_nvl72_t nv;
	tp_fabric_t *f;

	tp_gen_fat_tree_defaults(&ft);
	ft.interleave = true;
	assert_int_equal(tp_gen_fat_tree(&ft, &f), TP_OK);
	round_trip(f);
	tp_fabric_destroy(f);
	tp_gen_rail_defaults(&rl);
	assert_int_equal(tp_gen_rail(&rl, &f), TP_OK);
	round_trip(f);
	tp_fabric_destroy(f);
	tp_gen_nvl72_defaults(&nv);
	assert_int_equal(tp_gen_nvl72(&nv, &f), TP_OK);
	round_trip(f);
	tp_fabric_destroy(f);
}

/* Fabric numbers are JSON's whatever LC_NUMERIC the process set: a
 * generated fabric with fractional rates (103.125 Gb/s, EDR signalling,
 * halved by degraded cables) saves to the same bytes under de_DE as in
 * "C" and survives the trip there. */
static void test_round_trip_locale(void **state)
{
	tp_gen_fat_tree_t ft;
	tp_fabric_t *f;
	char *c_text, *de_text;
	bool frac = false;

	(void)state;
	tp_gen_fat_tree_defaults(&ft);
	ft.degrade = 0.3;
	ft.link_gbps = 103.125;
	assert_int_equal(tp_gen_fat_tree(&ft, &f), TP_OK);
	c_text = to_json(f);
	for (const char *s = c_text; (s = strchr(s, '.')); s++)
		if (s > c_text && s[-1] >= '0' && s[-1] <= '9' && s[1] >= '0' &&
		    s[1] <= '9')
			frac = true;
	assert_true(frac); /* a number with a fraction is in the text */
	if (!tp_test_comma_locale()) {
		tp_free(c_text);
		tp_fabric_destroy(f);
		skip();
	}
	de_text = to_json(f);
	assert_string_equal(de_text, c_text);
	round_trip(f);
	tp_test_c_locale();
	tp_free(c_text);
	tp_free(de_text);
	tp_fabric_destroy(f);
}

/* Every real fabric dump survives the trip too. */
static void test_round_trip_fixtures(void **state)
{
	(void)state;
	static const char *const files[] = {
	    "ib/NVIDIA-topograph/ibnetdiscover-example.out",
	    "ib/hwloc-netloc/avakas/ib-subnet-fe80_0000_0000_0000.txt",
	    "ib/jabl-ibtopotool/3.topo",
	    "ib/treydock-infiniband_exporter/ibnetdiscover-p-test.out",
	};
	int done = 0;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *path = tp_test_fixture(files[i]);
		if (!path)
			continue;
		tp_fabric_t *f = tp_fabric_create();
		assert_int_equal(tp_fabric_read_ibnetdiscover(f, path), TP_OK);
		assert_int_equal(tp_fabric_finalize(f, NULL), TP_OK);
		round_trip(f);
		tp_fabric_destroy(f);
		done++;
	}
	if (!done)
		skip();
}

static void expect_error(const char *doc, const char *needle)
{
	tp_fabric_t *f = NULL;
	char *err = NULL;

	assert_int_not_equal(tp_fabric_parse_json("bad.json", doc, &f, &err),
			     TP_OK);
	assert_null(f);
	assert_non_null(err);
	if (strncmp(err, "bad.json: ", 10) != 0 || !strstr(err, needle) ||
	    strchr(err, '\n'))
		fail_msg("error '%s' lacks '%s'", err, needle);
	tp_free(err);
}

#define HEAD "{\"format\":\"topoplace-fabric/1\",\"subnets\":1,"
#define TAIL "\"guid_map\":[],\"nvlink_domains\":[],\"warnings\":[]}"
#define SW0  "{\"guid\":\"0x1\",\"desc\":\"s\",\"ports\":36,\"subnet\":0}"
#define CA0  "{\"guid\":\"0x2\",\"desc\":\"h1 mlx5_0\",\"ports\":1,\"subnet\":0}"

/* An array longer than the item limit is refused from the first pass's
 * counts, before anything is allocated for it: the error names the line
 * where the array starts, the count and the limit; at the limit the file
 * loads. (The limit is lowered here: 2^24 items are a 50 MB file.) */
static void test_item_limit(void **state)
{
	static const char *const host[] = {
	    "{\"name\":\"a\",\"node_data\":true,\"gpus\":[]}",
	    "{\"name\":\"b\",\"node_data\":true,\"gpus\":[]}",
	    "{\"name\":\"c\",\"node_data\":true,\"gpus\":[]}"};
	char doc[1024], *err = NULL;
	tp_fabric_t *f = NULL;
	size_t saved = tp__fabric_max_items;

	(void)state;
	assert_true(TP_FABRIC_MAX_ITEMS >= (size_t)1 << 20);
	tp__fabric_max_items = 2;
	snprintf(doc, sizeof(doc),
		 HEAD "\"switches\":[],\"cas\":[],\"links\":[],\n"
		      "\"hosts\":[%s,%s]," TAIL,
		 host[0], host[1]);
	assert_int_equal(tp_fabric_parse_json("ok.json", doc, &f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 2);
	tp_fabric_destroy(f);
	f = NULL;
	snprintf(doc, sizeof(doc),
		 HEAD "\"switches\":[],\"cas\":[],\"links\":[],\n"
		      "\"hosts\":[%s,%s,%s]," TAIL,
		 host[0], host[1], host[2]);
	assert_int_equal(tp_fabric_parse_json("big.json", doc, &f, &err),
			 TP_ERR_RANGE);
	assert_null(f);
	assert_non_null(err);
	assert_string_equal(err, "big.json: 2: \"hosts\": 3 items, more than "
				 "2 (the limit)");
	tp_free(err);
	tp__fabric_max_items = saved;
}

static void test_hostile(void **state)
{
	(void)state;
	expect_error("", "not valid JSON near byte 0");
	expect_error("{\n\"a\":\n", "3: not valid JSON near byte 7");
	/* lines are the file's: escaped newlines in a string are none (the
	 * reader unescapes in place, and counted those) */
	{
		char doc[512] =
		    HEAD "\"switches\":[{\"guid\":\"0x1\",\"desc\":\"";
		for (int k = 0; k < 40; k++)
			strcat(doc, "a\\n");
		strcat(doc, "\",}]," TAIL);
		expect_error(doc, "bad.json: 1: switches[0]: not valid JSON");
		memmove(doc + 2, doc + 1, strlen(doc));
		doc[1] = '\n';
		expect_error(doc, "bad.json: 2: switches[0]: not valid JSON");
	}
	expect_error("[]", "not a topoplace fabric");
	expect_error("{\"format\":\"topoplace-fabric/2\"}",
		     "is not topoplace-fabric/1");
	/* an echoed string is cut at 40 bytes (a 1 MB one was echoed whole),
	 * its control bytes masked */
	expect_error(
	    "{\"format\":\"0123456789012345678901234567890123456789"
	    "\\n0123456789012345678901234567890123456789\"}",
	    "bad.json: format \"0123456789012345678901234567890123456789"
	    "...\" is not topoplace-fabric/1");
	expect_error(
	    "{\"format\":\"012345678901234567890123456789012345678"
	    "\\n\"}",
	    "bad.json: format \"012345678901234567890123456789012345678?"
	    "\" is not topoplace-fabric/1");
	expect_error(HEAD "\"switches\":{}}", "\"switches\"");
	expect_error(HEAD "\"switches\":[{\"guid\":\"xyz\"}]," TAIL,
		     "switches[0].guid");
	/* GUID 0, as the ibnetdiscover reader refuses it: a zeroed file,
	 * where every node so named would be one */
	expect_error(HEAD
		     "\"switches\":[" SW0 "],\"cas\":[{\"guid\":\"0x0\","
		     "\"desc\":\"h1 mlx5_0\",\"ports\":1,\"subnet\":0}]," TAIL,
		     "cas[0].guid: GUID 0 (no InfiniBand node or port has "
		     "it)");
	expect_error(HEAD "\"switches\":[{\"guid\":\"0x0000000000000000\","
			  "\"desc\":\"s\",\"ports\":36,\"subnet\":0}]," TAIL,
		     "switches[0].guid: GUID 0");
	expect_error(HEAD "\"switches\":[" SW0 "," SW0 "]," TAIL,
		     "appears twice");
	expect_error(HEAD "\"switches\":[{\"guid\":\"0x1\",\"desc\":\"s\","
			  "\"ports\":36,\"subnet\":3}]," TAIL,
		     "switches[0].subnet");
	/* one GUID, both a switch and a CA: a node cabled to itself */
	expect_error(
	    HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
		 ",{\"guid\":\"0x1\",\"desc\":\"h2 mlx5_0\",\"ports\":1,"
		 "\"subnet\":0}]," TAIL,
	    "bad.json: cas[1]: GUID 0x1 is both a switch (switches[0]) "
	    "and a CA in subnet 0");
	expect_error(HEAD
		     "\"switches\":[" SW0 "],\"cas\":[" CA0
		     "],\"links\":[{\"a\":[\"switch\",0,1],\"b\":[\"ca\",7,1],"
		     "\"width\":4,\"lane_gbps\":25,\"active\":true}]," TAIL,
		     "links[0]");
	expect_error(
	    HEAD
	    "\"switches\":[" SW0 "],\"cas\":[" CA0
	    "],\"links\":[{\"a\":[\"switch\",0,1],\"b\":[\"ca\",0,1],\"width\":"
	    "4,\"lane_gbps\":25,\"active\":true},{\"a\":[\"switch\",0,1],\"b\":"
	    "[\"ca\",0,1],\"width\":4,\"lane_gbps\":25,\"active\":true}]," TAIL,
	    "links[1]: a port is cabled twice");
	expect_error(
	    HEAD
	    "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{\"name\":"
	    "\"a\",\"node_data\":true,\"gpus\":[{\"index\":\"0\"}]}]," TAIL,
	    "hosts[0] (a).gpus[0]");
	/* rates no hardware has: they would price a collective at 0 s */
	expect_error(
	    HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{\"name\":"
		 "\"a\",\"node_data\":true,\"gpus\":[{\"index\":0,\"numa\":0,"
		 "\"nvlink_gbps\":1e300}]}]," TAIL,
	    "bad.json: hosts[0] (a).gpus[0]: index, numa, nvlink_gbps "
	    "(0..100000) required");
	expect_error(
	    HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
		 "],\"links\":[[\"switch\",0,1,\"ca\",0,1,4,10001,true]]," TAIL,
	    "links[0]: width (1, 2, 4, 8, 12 or 0, unknown), lane_gbps "
	    "(0..10000)");
	{
		tp_fabric_t *f = NULL;
		assert_int_equal(
		    tp_fabric_parse_json(
			"ok.json",
			HEAD "\"switches\":[],\"cas\":[],\"links\":[],"
			     "\"hosts\":[{\"name\":\"a\",\"node_data\":true,"
			     "\"gpus\":[{\"index\":0,\"numa\":0,"
			     "\"nvlink_gbps\":1e5}]}]," TAIL,
			&f, NULL),
		    TP_OK);
		tp_fabric_destroy(f);
	}
	/* non-finite numbers (1e999 reads as infinity) */
	expect_error(
	    HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{\"name\":"
		 "\"a\",\"node_data\":true,\"gpus\":[{\"index\":0,\"model\":"
		 "\"m\",\"numa\":0,\"nvlink_gbps\":1e999}]}]," TAIL,
	    "hosts[0] (a).gpus[0]");
	expect_error(
	    HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
		 "],\"links\":[[\"switch\",0,1,\"ca\",0,1,4,1e999,true]]," TAIL,
	    "links[0]: width (1, 2, 4, 8, 12 or 0, unknown), lane_gbps "
	    "(0..10000)");
	/* the compact link form the writer uses */
	expect_error(HEAD
		     "\"switches\":[" SW0 "],\"cas\":[" CA0
		     "],\"links\":[[\"switch\",0,1,\"ca\",0,1,4,25]]," TAIL,
		     "links[0]: expected [kind, node, port");
	expect_error(
	    HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
		 "],\"links\":[[\"switch\",0,1,\"ca\",3,1,4,25,true]]," TAIL,
	    "links[0]: second endpoint");
	expect_error(HEAD
		     "\"switches\":[" SW0 "],\"cas\":[" CA0
		     "],\"links\":[[\"switch\",0,1,\"ca\",0,1,4,25,1]]," TAIL,
		     "links[0]: width");
	/* a cable from a port to itself, to a port the node lacks, a switch
	 * without ports */
	expect_error(HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
			  "],\"links\":[[\"switch\",0,1,\"switch\",0,1,4,25,"
			  "true]]," TAIL,
		     "links[0]: both ends are switch 0 port 1");
	expect_error(HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
			  "],\"links\":[[\"switch\",0,500,\"ca\",0,1,4,25,"
			  "true]]," TAIL,
		     "links[0]: switch 0 has ports 1..36, not 500");
	expect_error(HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
			  "],\"links\":[[\"switch\",0,0,\"ca\",0,1,4,25,"
			  "true]]," TAIL,
		     "links[0]: switch 0 has ports 1..36, not 0");
	expect_error(HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
			  "],\"links\":[[\"switch\",0,1,\"ca\",0,2,4,25,"
			  "true]]," TAIL,
		     "links[0]: ca 0 has ports 1..1, not 2");
	expect_error(HEAD "\"switches\":[{\"guid\":\"0x1\",\"desc\":\"s\","
			  "\"ports\":0,\"subnet\":0}]," TAIL,
		     "switches[0].ports: expected an integer 1..65535");
	/* what the ibnetdiscover reader drops or refuses: a switch cabled
	 * to another port of itself, a cable on a CA without ports (on
	 * port 0 or any), a 3x width, two GPUs of one index */
	expect_error(HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
			  "],\"links\":[[\"switch\",0,5,\"switch\",0,6,4,25,"
			  "true]]," TAIL,
		     "links[0]: switch 0 port 5 is cabled to its own port 6");
	expect_error(HEAD
		     "\"switches\":[" SW0 "],\"cas\":[{\"guid\":\"0x2\","
		     "\"desc\":\"h1 mlx5_0\",\"ports\":0,\"subnet\":0}],"
		     "\"links\":[[\"switch\",0,1,\"ca\",0,0,4,25,true]]," TAIL,
		     "links[0]: ca 0 has no ports, not 0");
	expect_error(HEAD "\"switches\":[" SW0 "],\"cas\":[{\"guid\":\"0x2\","
			  "\"desc\":\"h1 mlx5_0\",\"ports\":0,\"subnet\":0}],"
			  "\"links\":[[\"switch\",0,1,\"ca\",0,65535,4,25,"
			  "true]]," TAIL,
		     "links[0]: ca 0 has no ports, not 65535");
	expect_error(HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
			  "],\"links\":[[\"switch\",0,1,\"ca\",0,1,3,25,"
			  "true]]," TAIL,
		     "links[0]: width (1, 2, 4, 8, 12 or 0, unknown)");
	expect_error(
	    HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{\"name\":"
		 "\"a\",\"node_data\":true,\"gpus\":[{\"index\":0,\"numa\":0,"
		 "\"nvlink_gbps\":0},{\"index\":1,\"numa\":0,\"nvlink_gbps\":"
		 "0},{\"index\":0,\"numa\":0,\"nvlink_gbps\":0}]}]," TAIL,
	    "hosts[0] (a).gpus[2]: index 0 given before");
	expect_error(HEAD "\"switches\":[" SW0 "],\"cas\":[{\"guid\":\"0x2\","
			  "\"desc\":\"h1 mlx5_0\",\"ports\":1,\"subnet\":0,"
			  "\"port_guid\":1}],\"links\":[]," TAIL,
		     "cas[0].port_guid: expected true or false");
	/* local rank l runs on GPU l: a gap would give a rank no GPU */
	expect_error(
	    HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{\"name\":"
		 "\"a\",\"node_data\":true,\"gpus\":[{\"index\":0,\"numa\":0,"
		 "\"nvlink_gbps\":0},{\"index\":3,\"numa\":0,\"nvlink_gbps\":"
		 "0}]}]," TAIL,
	    "hosts[0] (a).gpus: no GPU of index 1 (a host's 2 GPUs are "
	    "numbered 0..1");
	expect_error(HEAD
		     "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{"
		     "\"name\":\"a\",\"node_data\":true,\"gpus\":[]},{\"name\":"
		     "\"a\",\"node_data\":true,\"gpus\":[]}]," TAIL,
		     "host a appears twice");
	expect_error(
	    HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[],\"guid_"
		 "map\":[],\"nvlink_domains\":[{\"domain\":\"r\",\"host\":"
		 "\"a\"},{\"domain\":\"q\",\"host\":\"a\"}],\"warnings\":[]}",
	    "two domains");
	expect_error(HEAD
		     "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[],"
		     "\"guid_map\":[],\"nvlink_domains\":[],\"warnings\":[1]}",
		     "warnings[0]");
	/* one name rule: a newline would inject a topology.conf line, bytes
	 * >= 0x80 would make the plan JSON invalid UTF-8, and the error line
	 * must not echo them */
	expect_error(HEAD
		     "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{"
		     "\"name\":\"a\\nSwitchName=evil "
		     "Nodes=node001\",\"node_data\":true,\"gpus\":[]}]," TAIL,
		     "hosts[0].name: not a host name");
	expect_error(
	    HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{\"name\":"
		 "\"caf\xc3\xa9\",\"node_data\":true,\"gpus\":[]}]," TAIL,
	    "hosts[0].name: not a host name");
	expect_error(HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[]"
			  ",\"guid_map\":[],\"nvlink_domains\":[{\"domain\":"
			  "\"r\\n1\",\"host\":\"a\"}],\"warnings\":[]}",
		     "nvlink_domains[0]: domain and host must be names");
	/* a GUID map's names become hosts at finalize: a bad one is refused
	 * naming its entry, as is a GUID given twice (the --guid-map reader
	 * refuses both too) */
	expect_error(HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[]"
			  ",\"guid_map\":[{\"guid\":\"0x2\",\"name\":\"bad "
			  "name!\"}],\"nvlink_domains\":[],\"warnings\":[]}",
		     "guid_map[0].name: not a host name");
	expect_error(HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[]"
			  ",\"guid_map\":[{\"guid\":\"0x2\",\"name\":\"a\"},"
			  "{\"guid\":\"0x3\",\"name\":\"b\"},{\"guid\":"
			  "\"0x02\",\"name\":\"c\"}],\"nvlink_domains\":[],"
			  "\"warnings\":[]}",
		     "guid_map[2]: GUID 0x0000000000000002 listed twice");
	expect_error(HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[]"
			  ",\"guid_map\":[{\"guid\":\"0x0\",\"name\":\"a\"}],"
			  "\"nvlink_domains\":[],\"warnings\":[]}",
		     "guid_map[0].guid: GUID 0");

	/* a minimal valid document */
	tp_fabric_t *f = NULL;
	assert_int_equal(tp_fabric_parse_json(
			     "ok.json",
			     HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
				  "],\"links\":[{\"a\":[\"switch\",0,1],\"b\":["
				  "\"ca\",0,1],\"width\":4,\"lane_gbps\":25,"
				  "\"active\":true}],\"hosts\":[]," TAIL,
			     &f, NULL),
			 TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 1);
	assert_int_equal(tp_fabric_groups_at(f, 1), 1);
	tp_fabric_destroy(f);
}

/* A key given twice in one object leaves unknown which was meant: refused
 * naming the key, the item and the byte, at the top level and inside
 * items, for objects of a few keys and of many (a hash set). */
static void test_repeated_key(void **state)
{
	char doc[4096];

	(void)state;
	expect_error("{\"format\":\"topoplace-fabric/1\",\"format\":\"x\"}",
		     "bad.json: 1: top-level key \"format\" given twice near "
		     "byte 31");
	expect_error(HEAD "\"switches\":[],\"switches\":[]," TAIL,
		     "top-level key \"switches\" given twice");
	/* keys the loader does not read count too */
	expect_error(HEAD "\"derived\":{},\"switches\":[],\"cas\":[],"
			  "\"links\":[],\"hosts\":[],\"derived\":1," TAIL,
		     "top-level key \"derived\" given twice");
	expect_error(HEAD "\"switches\":[" SW0 ",{\"guid\":\"0x5\",\"desc\":"
			  "\"s\",\"ports\":36,\"subnet\":0,\"ports\":1}]," TAIL,
		     "bad.json: 1: switches[1]: key \"ports\" given twice near "
		     "byte ");
	/* "\u0061" is "a": the same key */
	expect_error(HEAD "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{"
			  "\"name\":\"a\",\"node_data\":true,\"gpus\":[{"
			  "\"index\":0,\"numa\":0,\"nvlink_gbps\":1,"
			  "\"ind\\u0065x\":1}]}]," TAIL,
		     "hosts[0]: key \"index\" given twice");
	/* 40 keys, the last a repeat of the 20th */
	snprintf(doc, sizeof(doc),
		 HEAD "\"switches\":[],\"cas\":[],\"links\":[],"
		      "\"hosts\":[{\"name\":\"a\",\"node_data\":true,"
		      "\"gpus\":[]");
	for (int k = 0; k < 40; k++)
		snprintf(doc + strlen(doc), sizeof(doc) - strlen(doc),
			 ",\"x%d\":%d", k < 39 ? k : 19, k);
	strcat(doc, "}]," TAIL);
	expect_error(doc, "hosts[0]: key \"x19\" given twice");
	/* and 40 distinct keys load */
	strstr(doc, "\"x19\":39")[2] = '3';
	tp_fabric_t *f = NULL;
	assert_int_equal(tp_fabric_parse_json("ok.json", doc, &f, NULL), TP_OK);
	tp_fabric_destroy(f);
	/* a long key is cut in the message, and its control bytes masked */
	snprintf(doc, sizeof(doc), "{\"%s\\n\":1,\"%s\\n\":2}",
		 "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
		 "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk");
	expect_error(doc, "key \"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...\" "
			  "given twice");
}

/* Syntax errors locate the fault by byte (the writer puts the whole file
 * on one line, so the line is always 1) and the item being read, and
 * say when nesting is the cause. */
static void test_syntax_where(void **state)
{
	char doc[1024];

	(void)state;
	expect_error(HEAD "\"switches\":[" SW0 ",," SW0 "]," TAIL,
		     "bad.json: 1: switches[1]: not valid JSON near byte 103");
	snprintf(doc, sizeof(doc), HEAD "\"x\":");
	for (int k = 0; k < 70; k++)
		strcat(doc, "[");
	for (int k = 0; k < 70; k++)
		strcat(doc, "]");
	strcat(doc, "}");
	expect_error(doc, "bad.json: 1: nesting deeper than 64 near "
			  "byte 112");
	expect_error(HEAD "\"switches\":[" SW0 "]", "not valid JSON near byte");
}

/* JSON's number grammar, not strtod's: a leading zero, a point or an
 * exponent without digits are refused at the number ("subnets": 01 and
 * 1. loaded as 1); every form JSON has reads as its value. */
static void test_numbers(void **state)
{
	static const char *const bad[] = {
	    "01", "-01", "00",	"1.",	 "1.e5", ".5",	"-.5",
	    "-",  "1e",	 "1e+", "1.5.2", "12-",	 "12+", "1.5-",
	};
	static const char *const good[] = {
	    "25",     "25.0",	"2.5e1",	 "2.5E+1",
	    "250e-1", "0.25e2", "25.0000000000",
	};
	char doc[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(doc, sizeof(doc),
			 "{\"format\":\"topoplace-fabric/1\",\"subnets\":%s,"
			 "\"switches\":[],\"cas\":[],\"links\":[],"
			 "\"hosts\":[]," TAIL,
			 bad[i]);
		expect_error(
		    doc, "bad.json: 1: subnets: not valid JSON near byte 41");
		snprintf(doc, sizeof(doc),
			 HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
			      "],\"links\":[[\"switch\",0,1,\"ca\",0,1,4,%s,"
			      "true]],\"hosts\":[]," TAIL,
			 bad[i]);
		expect_error(doc, "bad.json: 1: links[0]: not valid JSON near "
				  "byte 201");
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		tp_fabric_t *f = NULL;
		snprintf(doc, sizeof(doc),
			 HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
			      "],\"links\":[[\"switch\",0,1,\"ca\",0,1,4,%s,"
			      "true]],\"hosts\":[]," TAIL,
			 good[i]);
		assert_int_equal(tp_fabric_parse_json("ok.json", doc, &f, NULL),
				 TP_OK);
		assert_true(tp_fabric_link(f, 0)->lane_gbps == 25.0);
		tp_fabric_destroy(f);
	}
}

/* A UTF-8 byte order mark before the object (a file saved by a Windows
 * editor) is skipped, as the other readers and the state loader skip it
 * (it read as "1: not valid JSON near byte 0"); offsets stay the file's,
 * and one anywhere else is still not JSON. */
static void test_bom(void **state)
{
	static const char ok[] =
	    "\xef\xbb\xbf" HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
	    "],\"links\":[[\"switch\",0,1,\"ca\",0,1,4,25,true]],"
	    "\"hosts\":[]," TAIL;
	char path[] = "/tmp/tp-json-bom-XXXXXX", *err = NULL;
	tp_fabric_t *f = NULL;
	int fd;

	(void)state;
	assert_int_equal(tp_fabric_parse_json("ok.json", ok, &f, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(f), 1);
	tp_fabric_destroy(f);
	f = NULL;
	/* a regular file is read a window at a time */
	assert_true((fd = mkstemp(path)) >= 0);
	assert_int_equal(write(fd, ok, sizeof(ok) - 1), sizeof(ok) - 1);
	close(fd);
	assert_int_equal(tp_fabric_load_json(path, &f, &err), TP_OK);
	assert_null(err);
	assert_int_equal(tp_fabric_nlinks(f), 1);
	tp_fabric_destroy(f);
	unlink(path);
	expect_error("\xef\xbb\xbf", "bad.json: 1: not valid JSON near byte 3");
	expect_error("\xef\xbb\xbf\xef\xbb\xbf{}",
		     "bad.json: 1: not valid JSON near byte 3");
	expect_error("\xef\xbb{}", "bad.json: 1: not valid JSON near byte 0");
	expect_error("\xef\xbb\xbf{\"x\":1,,}",
		     "bad.json: 1: not valid JSON near byte 10");
}

/* Memory before an item is checked is bounded by the file's bytes, not by
 * its comma count: 100,000 links of "0," (200 kB) sets no block of more
 * than 8 times that aside before links[0] is refused (it took 4 MB
 * for the link array and 8 MB for the cable index). */
static size_t big_block;

static void *count_malloc(size_t n)
{
	big_block = n > big_block ? n : big_block;
	return malloc(n);
}

static void *count_calloc(size_t n, size_t size)
{
	big_block = n * size > big_block ? n * size : big_block;
	return calloc(n, size);
}

static void *count_realloc(void *p, size_t n)
{
	big_block = n > big_block ? n : big_block;
	return realloc(p, n);
}

static void test_reserve_bounded(void **state)
{
	static const tp_allocator_t counting = {count_malloc, count_calloc,
						count_realloc, free};
	size_t n = 100000, len;
	char *doc = malloc(2 * n + 256), *err = NULL;
	tp_fabric_t *f = NULL;

	(void)state;
	len = (size_t)sprintf(doc, HEAD "\"switches\":[" SW0 "],\"cas\":[" CA0
					"],\"hosts\":[],\"links\":[0");
	for (size_t i = 1; i < n; i++) {
		doc[len++] = ',';
		doc[len++] = '0';
	}
	strcpy(doc + len, "]," TAIL);
	len = strlen(doc);
	big_block = 0;
	tp_alloc_set(&counting);
	assert_int_equal(tp_fabric_parse_json("zeros.json", doc, &f, &err),
			 TP_ERR_PARSE);
	tp_alloc_set(NULL);
	assert_non_null(strstr(err, "links[0]: endpoints must be"));
	if (big_block > 8 * len)
		fail_msg("a %zu-byte block for a %zu-byte file", big_block,
			 len);
	free(err);
	free(doc);
}

/* The loader reads members in the order it needs, whatever the file's
 * order. A loaded fabric's cable
 * index (dropped after loading) comes back for the next cable added. */
static void test_member_order(void **state)
{
	(void)state;
	static const char doc[] =
	    "{\"x\":{\"y\":[1,{\"z\":null}]},\"warnings\":[\"w\"],"
	    "\"nvlink_domains\":[],\"guid_map\":[],\"hosts\":[],"
	    "\"links\":[[\"switch\",0,1,\"ca\",0,1,4,25,true]],"
	    "\"cas\":[" CA0 "],\"switches\":[" SW0 "],\"subnets\":1,"
	    "\"format\":\"topoplace-fabric/1\"}";
	tp_fabric_t *f = NULL;
	uint32_t c;
	bool added;

	assert_int_equal(tp_fabric_parse_json("order.json", doc, &f, NULL),
			 TP_OK);
	assert_int_equal(tp_fabric_nsubnets(f), 1);
	assert_int_equal(tp_fabric_nhosts(f), 1);
	assert_int_equal(tp_fabric_nlinks(f), 1);
	/* switch 0 port 1 is cabled: the rebuilt index says so */
	assert_int_equal(tp__fabric_add_ca(f, 0, 0x3, "h2 mlx5_0", 1, &c),
			 TP_OK);
	assert_int_equal(tp__fabric_add_link(f, TP_NODE_CA, c, 1,
					     TP_NODE_SWITCH, 0, 1, 4, 25, true,
					     &added),
			 TP_ERR_EXISTS);
	assert_int_equal(tp__fabric_add_link(f, TP_NODE_CA, c, 1,
					     TP_NODE_SWITCH, 0, 2, 4, 25, true,
					     &added),
			 TP_OK);
	assert_true(added);
	tp_fabric_destroy(f);

	/* bad JSON inside a member read item by item names its line */
	char *err = NULL;
	assert_int_equal(
	    tp_fabric_parse_json(
		"l.json",
		HEAD
		"\n\"switches\":[\n" SW0
		",\n{\"guid\":}],\"cas\":[],\"links\":[],\"hosts\":[]," TAIL,
		&f, &err),
	    TP_ERR_PARSE);
	if (!strstr(err,
		    "l.json: 4: switches[1]: not valid JSON near byte 114"))
		fail_msg("%s", err);
	tp_free(err);
}

/* GPUs listed out of index order load in it: the model's GPU l is local
 * rank l's, with its own NIC. */
static void test_gpu_order(void **state)
{
	(void)state;
	static const char doc[] = HEAD
	    "\"switches\":[],\"cas\":[],\"links\":[],\"hosts\":[{"
	    "\"name\":\"a\",\"node_data\":true,\"gpus\":["
	    "{\"index\":2,\"numa\":1,\"nvlink_gbps\":0,\"nic\":\"mlx5_2\"},"
	    "{\"index\":0,\"numa\":0,\"nvlink_gbps\":0,\"nic\":\"mlx5_0\"},"
	    "{\"index\":1,\"numa\":0,\"nvlink_gbps\":0,\"nic\":\"mlx5_1\"}"
	    "]}]," TAIL;
	tp_fabric_t *f = NULL;

	assert_int_equal(tp_fabric_parse_json("order.json", doc, &f, NULL),
			 TP_OK);
	const tp_host_t *h = tp_fabric_host(f, 0);
	assert_int_equal(h->ngpus, 3);
	for (int l = 0; l < 3; l++) {
		char nic[8];
		snprintf(nic, sizeof(nic), "mlx5_%d", l);
		assert_int_equal(h->gpus[l].index, l);
		assert_string_equal(h->gpus[l].nic, nic);
		assert_int_equal(h->gpus[l].numa, l == 2);
	}
	tp_fabric_destroy(f);
}

/* GPU and device names are held once per fabric, however many hosts. */
static void test_interned_names(void **state)
{
	(void)state;
	tp_gen_fat_tree_t ft;
	tp_fabric_t *f;

	tp_gen_fat_tree_defaults(&ft);
	assert_int_equal(tp_gen_fat_tree(&ft, &f), TP_OK);
	const tp_host_t *a = tp_fabric_host(f, 0), *b = tp_fabric_host(f, 1);
	assert_true(a->ngpus > 1 && b->ngpus > 1);
	assert_ptr_equal(a->gpus[0].model, b->gpus[1].model);
	assert_ptr_equal(a->gpus[0].nic, b->gpus[0].nic);
	assert_ptr_equal(tp_fabric_ca(f, a->cas[0])->dev,
			 tp_fabric_ca(f, b->cas[0])->dev);
	tp_fabric_destroy(f);
}

static void test_files(void **state)
{
	(void)state;
	tp_fabric_t *f = NULL;
	char *err = NULL;
	char path[] = "/tmp/tp-json-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"format\"\0:1}", 13), 13);
	close(fd);
	assert_int_equal(tp_fabric_load_json(path, &f, &err), TP_ERR_PARSE);
	assert_non_null(strstr(err, "NUL byte"));
	tp_free(err);
	err = NULL;
	assert_int_equal(tp_fabric_load_json("/nonexistent/x.json", &f, &err),
			 TP_ERR_NOTFOUND);
	assert_non_null(strstr(err, "/nonexistent/x.json: cannot read"));
	tp_free(err);

	/* what a daemon reads: a FIFO nobody writes refused at once (alarm:
	 * a hang fails instead of stalling the suite), a directory too */
	char dir[] = "/tmp/tp-json-dir-XXXXXX", fifo[64];
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fabric.json", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10);
	assert_int_equal(tp_fabric_load_json_regular(fifo, &f, &err),
			 TP_ERR_NOTREG);
	alarm(0);
	assert_non_null(strstr(err, fifo));
	assert_non_null(strstr(err, ": cannot read: not a regular file"));
	tp_free(err);
	assert_int_equal(tp_fabric_load_json_regular(dir, &f, &err),
			 TP_ERR_NOTREG);
	assert_non_null(strstr(err, dir));
	tp_free(err);
	err = NULL;
	unlink(fifo);
	rmdir(dir);

	tp_gen_fat_tree_t ft;
	tp_gen_fat_tree_defaults(&ft);
	assert_int_equal(tp_gen_fat_tree(&ft, &f), TP_OK);
	assert_int_equal(tp_fabric_save_json(f, path), TP_OK);
	tp_fabric_t *g = NULL;
	assert_int_equal(tp_fabric_load_json(path, &g, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(g), tp_fabric_nhosts(f));
	tp_fabric_destroy(g);
	assert_int_equal(tp_fabric_load_json_regular(path, &g, NULL), TP_OK);
	assert_int_equal(tp_fabric_nhosts(g), tp_fabric_nhosts(f));
	tp_fabric_destroy(f);
	tp_fabric_destroy(g);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip_built),
	    cmocka_unit_test(test_round_trip_generated),
	    cmocka_unit_test(test_round_trip_locale),
	    cmocka_unit_test(test_round_trip_fixtures),
	    cmocka_unit_test(test_hostile),
	    cmocka_unit_test(test_item_limit),
	    cmocka_unit_test(test_files),
	    cmocka_unit_test(test_member_order),
	    cmocka_unit_test(test_gpu_order),
	    cmocka_unit_test(test_interned_names),
	    cmocka_unit_test(test_repeated_key),
	    cmocka_unit_test(test_syntax_where),
	    cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_bom),
	    cmocka_unit_test(test_reserve_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
