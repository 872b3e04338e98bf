/* Unit tests for common/: host lists, hash maps, strings, files, allocator. */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_common.h"
#include "tp_test.h"

/* ---- helpers ---- */

static char *join(char **v, size_t n)
{
	tp_strbuf_t sb = {0};

	for (size_t i = 0; i < n; i++)
		tp_strbuf_printf(&sb, "%s%s", i ? " " : "", v[i]);
	tp_strbuf_append(&sb, "", 0);
	assert_false(sb.failed);
	return sb.buf;
}

static void check_expand(const char *list, const char *want, size_t n)
{
	char **v = NULL;
	size_t got = 0;
	char *s;

	assert_int_equal(tp_hostlist_expand(list, &v, &got), TP_OK);
	assert_int_equal(got, n);
	s = join(v, got);
	assert_string_equal(s, want);
	tp_free(s);
	tp_hostlist_free(v, got);
}

static void check_compress(const char *list, const char *want)
{
	char **v = NULL;
	size_t n = 0;
	char *s;

	assert_int_equal(tp_hostlist_expand(list, &v, &n), TP_OK);
	s = tp_hostlist_compress((const char *const *)v, n);
	assert_non_null(s);
	assert_string_equal(s, want);
	tp_free(s);
	tp_hostlist_free(v, n);
}

static void check_error(const char *list, tp_err_t want)
{
	char **v = (char **)0x1;
	size_t n = 12345;

	assert_int_equal(tp_hostlist_expand(list, &v, &n), want);
	/* outputs untouched on error */
	assert_ptr_equal(v, (char **)0x1);
	assert_int_equal(n, 12345);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- host lists ---- */

static void test_hostlist_expand(void **state)
{
	(void)state;
	check_expand("gpu[001-004,7],cpu1",
		     "gpu001 gpu002 gpu003 gpu004 gpu7 cpu1", 6);
	check_expand("node[08-10]", "node08 node09 node10", 3);
	check_expand("n[9-11]", "n9 n10 n11", 3);
}

static void test_hostlist_expand_plain(void **state)
{
	(void)state;
	check_expand("a", "a", 1);
	check_expand("a,b c", "a b c", 3);
	check_expand(" a , ,b ", "a b", 2);
	check_expand("", "", 0);
	check_expand("rack[1-2]-gpu", "rack1-gpu rack2-gpu", 2);
	check_expand("x[5]", "x5", 1);
	check_expand("x[0]", "x0", 1);
}

static void test_hostlist_cartesian(void **state)
{
	(void)state;
	/* first bracket varies slowest, as in Slurm */
	check_expand("a[1-2]b[3-4]", "a1b3 a1b4 a2b3 a2b4", 4);
	check_expand("r[1-2]s[01,03]x", "r1s01x r1s03x r2s01x r2s03x", 4);
	check_expand("[1-2][1-2]", "11 12 21 22", 4);
}

static void test_hostlist_padding(void **state)
{
	char **v = NULL;
	size_t n = 0;

	(void)state;
	/* width of the lower bound is kept past 99 */
	assert_int_equal(tp_hostlist_expand("n[098-101]", &v, &n), TP_OK);
	assert_int_equal(n, 4);
	assert_string_equal(v[0], "n098");
	assert_string_equal(v[2], "n100");
	assert_string_equal(v[3], "n101");
	tp_hostlist_free(v, n);
	assert_int_equal(tp_hostlist_expand("n[01-100]", &v, &n), TP_OK);
	assert_int_equal(n, 100);
	assert_string_equal(v[0], "n01");
	assert_string_equal(v[98], "n99");
	assert_string_equal(v[99], "n100");
	tp_hostlist_free(v, n);
}

static void test_hostlist_errors(void **state)
{
	(void)state;
	check_error("a[1-2", TP_ERR_PARSE);
	check_error("a]", TP_ERR_PARSE);
	check_error("a[]", TP_ERR_PARSE);
	check_error("a[2-1]", TP_ERR_PARSE);
	check_error("a[1-]", TP_ERR_PARSE);
	check_error("a[-1]", TP_ERR_PARSE);
	check_error("a[1,]", TP_ERR_PARSE);
	check_error("a[x]", TP_ERR_PARSE);
	check_error("a[[1]]", TP_ERR_PARSE);
	check_error("a[1 2]", TP_ERR_PARSE);
	check_error("a[1234567890123456789]", TP_ERR_PARSE);
	/* size caps: one range, a product, a sum */
	check_error("a[1-1000001]", TP_ERR_RANGE);
	check_error("a[1-1000]b[1-1001]", TP_ERR_RANGE);
	check_error("a[1-600000],b[1-600000]", TP_ERR_RANGE);
	check_error("a[0-18446744073709551]", TP_ERR_RANGE);
	assert_int_equal(tp_hostlist_expand(NULL, NULL, NULL), TP_ERR_INVAL);
}

static void test_hostlist_max(void **state)
{
	char **v = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(tp_hostlist_expand("n[1-1000000]", &v, &n), TP_OK);
	assert_int_equal(n, 1000000);
	assert_string_equal(v[999999], "n1000000");
	tp_hostlist_free(v, n);
	tp_hostlist_free(NULL, 0);

	/* a client-made list (a step's node list in slurmstepd) must not make
	 * us allocate without bound: a 100 KB prefix with [1-999999] asked for
	 * ~100 GB before any check; names over 255 bytes and lists over
	 * 64 MiB of names fail first, with nothing allocated for them */
	char *big = malloc(100 * 1024 + 16);
	assert_non_null(big);
	memset(big, 'a', 100 * 1024);
	strcpy(big + 100 * 1024, "[1-999999]");
	v = (char **)0x1;
	assert_int_equal(tp_hostlist_expand(big, &v, &n), TP_ERR_RANGE);
	assert_ptr_equal(v, (char **)0x1);
	big[255] = '\0';
	assert_int_equal(tp_hostlist_expand(big, &v, &n), TP_OK); /* 255 */
	assert_int_equal(n, 1);
	tp_hostlist_free(v, n);
	big[255] = 'a';
	big[256] = '\0';
	assert_int_equal(tp_hostlist_expand(big, &v, &n), TP_ERR_RANGE);
	/* 250-byte names x 300,000 = 75 MB */
	memset(big, 'b', 244);
	strcpy(big + 244, "[1-300000]");
	assert_int_equal(tp_hostlist_expand(big, &v, &n), TP_ERR_RANGE);
	strcpy(big + 244, "[1-200000]"); /* 50 MB: allowed */
	assert_int_equal(tp_hostlist_expand(big, &v, &n), TP_OK);
	assert_int_equal(n, 200000);
	tp_hostlist_free(v, n);
	/* counting applies the same checks and builds nothing */
	assert_int_equal(tp_hostlist_count(big, &n), TP_OK);
	assert_int_equal(n, 200000);
	strcpy(big + 244, "[1-300000]");
	assert_int_equal(tp_hostlist_count(big, &n), TP_ERR_RANGE);
	assert_int_equal(tp_hostlist_count("a[1-3],b,c[01-02]", &n), TP_OK);
	assert_int_equal(n, 6);
	assert_int_equal(tp_hostlist_count("a[1-", &n), TP_ERR_PARSE);
	free(big);
}

/* Untrusted text in a log line: one printable ASCII line, cut. */
static void test_quote(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(tp_quote(buf, sizeof(buf), "node[1-4]", 100),
			    "node[1-4]");
	assert_string_equal(
	    tp_quote(buf, sizeof(buf), "a\nb\"c\\\xc3\xa9", 100),
	    "a\\x0ab\\x22c\\x5c\\xc3\\xa9");
	assert_string_equal(tp_quote(buf, sizeof(buf), "abcdefgh", 4),
			    "abcd...");
	assert_string_equal(tp_quote(buf, 8, "abcdefgh", 100), "abcd...");
	assert_string_equal(tp_quote(buf, sizeof(buf), NULL, 10), "");
	char big[200];
	memset(big, '\n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tp_quote(buf, sizeof(buf), big, 1000);
	assert_true(strlen(buf) < sizeof(buf));
	assert_null(strchr(buf, '\n'));
	assert_non_null(strstr(buf, "..."));
}

/* Well-formed UTF-8 sequences and what is none (RFC 3629), and a copy
 * that replaces strays with U+FFFD and never cuts a sequence. */
static void test_utf8(void **state)
{
	char buf[16];

	(void)state;
	assert_int_equal(tp_utf8_len("a"), 1);
	assert_int_equal(tp_utf8_len(""), 0);
	assert_int_equal(tp_utf8_len("\xc3\xa9"), 2);
	assert_int_equal(tp_utf8_len("\xe2\x82\xac"), 3);
	assert_int_equal(tp_utf8_len("\xf0\x9f\x98\x80"), 4);
	assert_int_equal(tp_utf8_len("\xe9t"), 0);	  /* Latin-1 */
	assert_int_equal(tp_utf8_len("\xc0\xaf"), 0);	  /* overlong */
	assert_int_equal(tp_utf8_len("\xe0\x80\xaf"), 0); /* overlong */
	assert_int_equal(tp_utf8_len("\xed\xa0\x80"), 0); /* surrogate */
	assert_int_equal(tp_utf8_len("\xf4\x90\x80\x80"), 0);
	assert_int_equal(tp_utf8_len("\xbf"), 0);
	assert_int_equal(tp_utf8_len("\xe2\x82"), 0); /* cut by the NUL */
	assert_int_equal(tp_utf8_len("\xff"), 0);

	assert_int_equal(tp_utf8_copy(buf, sizeof(buf),
				      "leaf\xe9\xff"
				      "01"),
			 12);
	assert_string_equal(buf, "leaf\xef\xbf\xbd\xef\xbf\xbd"
				 "01");
	tp_utf8_copy(buf, sizeof(buf), "a\"\\\n\xc3\xa9");
	assert_string_equal(buf, "a\"\\\n\xc3\xa9");
	/* 7 bytes of room: "ab", then an e-acute (2) fits, the next not */
	assert_int_equal(tp_utf8_copy(buf, 7, "ab\xc3\xa9\xc3\xa9\xc3\xa9"), 6);
	assert_string_equal(buf, "ab\xc3\xa9\xc3\xa9");
	assert_int_equal(tp_utf8_copy(buf, 6, "ab\xc3\xa9\xc3\xa9"), 4);
	assert_int_equal(tp_utf8_copy(buf, 4, "\xe9\xe9"), 3);
	assert_string_equal(buf, TP_UTF8_REPLACEMENT);
	assert_int_equal(tp_utf8_copy(buf, 3, "\xe9"), 0);
	assert_string_equal(buf, "");
	assert_int_equal(tp_utf8_copy(buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "");
	assert_int_equal(tp_utf8_copy(buf, 0, "x"), 0);
}

static void test_hostlist_compress(void **state)
{
	char *s;
	const char *odd[] = {"gpu3", "cpu2", "gpu1", "cpu1", "gpu2", "login"};
	const char *dup[] = {"a1", "a1", "a2", "b", "b"};

	(void)state;
	check_compress("gpu[001-003,007]", "gpu[001-003,007]");
	check_compress("gpu007,gpu001,gpu002,gpu003", "gpu[001-003,007]");
	check_compress("n[9-11]", "n[9-11]");
	check_compress("n[098-101]", "n[098-101]");
	/* an unpadded number cannot print at a smaller padded width */
	check_compress("n9,n10,n099", "n[9-10],n099");
	check_compress("x", "x");
	check_compress("x5", "x5");
	check_compress("n0,n00,n1", "n[0-1],n00");
	check_compress("a[1-2]b[3-4]", "a1b[3-4],a2b[3-4]");
	/* prefixes keep input order, numbers are sorted */
	s = tp_hostlist_compress(odd, 6);
	assert_string_equal(s, "gpu[1-3],cpu[1-2],login");
	tp_free(s);
	s = tp_hostlist_compress(dup, 5);
	assert_string_equal(s, "a[1-2],b");
	tp_free(s);
	s = tp_hostlist_compress(NULL, 0);
	assert_string_equal(s, "");
	tp_free(s);
}

/* expand(compress(x)) is x as a set, for a scrambled mix of widths. */
static void test_hostlist_roundtrip(void **state)
{
	const char *lists[] = {
	    "gpu[001-004,7],cpu1",   "node[1-300],node[0001-0020]",
	    "a[1-2]b[3-4],c",	     "rack[01-12]-n[1-18]",
	    "x[098-102,999-1001],y", "n[0-9],n[00-03]",
	};
	(void)state;
	for (size_t t = 0; t < sizeof(lists) / sizeof(*lists); t++) {
		char **a = NULL, **b = NULL, *c;
		size_t na = 0, nb = 0;

		assert_int_equal(tp_hostlist_expand(lists[t], &a, &na), TP_OK);
		/* scramble deterministically */
		for (size_t i = 0; i + 1 < na; i++) {
			size_t j = (i * 7919 + 13) % na;
			char *tmp = a[i];
			a[i] = a[j];
			a[j] = tmp;
		}
		c = tp_hostlist_compress((const char *const *)a, na);
		assert_non_null(c);
		assert_int_equal(tp_hostlist_expand(c, &b, &nb), TP_OK);
		assert_int_equal(na, nb);
		qsort(a, na, sizeof(char *), str_cmp);
		qsort(b, nb, sizeof(char *), str_cmp);
		for (size_t i = 0; i < na; i++)
			assert_string_equal(a[i], b[i]);
		tp_free(c);
		tp_hostlist_free(a, na);
		tp_hostlist_free(b, nb);
	}
}

/* ---- maps ---- */

static void test_u64map(void **state)
{
	tp_u64map_t m = {0};
	const uint32_t n = 100000;

	(void)state;
	assert_int_equal(tp_u64map_get(&m, 42), TP_MAP_NONE);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(
		    tp_u64map_put(&m, 0x0002c90300000000ULL + i * 977ULL, i),
		    TP_OK);
	assert_int_equal(m.len, n);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(
		    tp_u64map_get(&m, 0x0002c90300000000ULL + i * 977ULL), i);
	assert_int_equal(tp_u64map_get(&m, 1), TP_MAP_NONE);
	assert_int_equal(tp_u64map_put(&m, 0x0002c90300000000ULL, 7), TP_OK);
	assert_int_equal(tp_u64map_get(&m, 0x0002c90300000000ULL), 7);
	assert_int_equal(m.len, n);
	/* key 0 is an ordinary key */
	assert_int_equal(tp_u64map_put(&m, 0, 5), TP_OK);
	assert_int_equal(tp_u64map_get(&m, 0), 5);
	tp_u64map_clear(&m);
	assert_int_equal(tp_u64map_get(&m, 0), TP_MAP_NONE);
	tp_u64map_clear(&m);
}

/* TP_MAP_NONE is the empty-slot mark: storing it, new or over a key in
 * a probe chain, would hide keys and let len drift. Refused, the map
 * unchanged. */
static void test_map_none_refused(void **state)
{
	tp_u64map_t m = {0};
	tp_strmap_t s = {0};
	char name[64][8];
	const uint32_t n = 31; /* under half of the first 64 slots: chains */

	(void)state;
	assert_int_equal(tp_u64map_put(&m, 42, TP_MAP_NONE), TP_ERR_INVAL);
	assert_int_equal(m.len, 0);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(tp_u64map_put(&m, i * 7919ULL, i), TP_OK);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(tp_u64map_put(&m, i * 7919ULL, TP_MAP_NONE),
				 TP_ERR_INVAL);
	assert_int_equal(m.len, n);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(tp_u64map_get(&m, i * 7919ULL), i);
	assert_int_equal(tp_u64map_put(&m, 3 * 7919ULL, 100), TP_OK);
	assert_int_equal(m.len, n);

	assert_int_equal(tp_strmap_put(&s, "x", TP_MAP_NONE), TP_ERR_INVAL);
	assert_int_equal(s.len, 0);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name[i], sizeof(name[i]), "n%u", i);
		assert_int_equal(tp_strmap_put(&s, name[i], i), TP_OK);
	}
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(tp_strmap_put(&s, name[i], TP_MAP_NONE),
				 TP_ERR_INVAL);
	assert_int_equal(s.len, n);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(tp_strmap_get(&s, name[i]), i);
	/* a NULL key is refused, and found nowhere */
	assert_int_equal(tp_strmap_put(&s, NULL, 1), TP_ERR_INVAL);
	assert_int_equal(tp_strmap_get(&s, NULL), TP_MAP_NONE);
	assert_int_equal(s.len, n);
	tp_strmap_clear(&s);
	tp_u64map_clear(&m);
}

/* FNV-1a's published 64-bit vectors: the hash goes on the wire (the
 * communicator's plan hash), so it must not drift between builds */
static void test_hash_str(void **state)
{
	(void)state;
	assert_true(tp_hash_str("") == 0xcbf29ce484222325ULL);
	assert_true(tp_hash_str(NULL) == 0xcbf29ce484222325ULL);
	assert_true(tp_hash_str("a") == 0xaf63dc4c8601ec8cULL);
	assert_true(tp_hash_str("foobar") == 0x85944171f73967e8ULL);
}

static void test_strmap(void **state)
{
	tp_strmap_t m = {0};
	const size_t n = 50000;
	char **keys = calloc(n, sizeof(char *));

	(void)state;
	assert_non_null(keys);
	assert_int_equal(tp_strmap_get(&m, "x"), TP_MAP_NONE);
	for (size_t i = 0; i < n; i++) {
		keys[i] = tp_asprintf("node%05zu", i);
		assert_int_equal(tp_strmap_put(&m, keys[i], (uint32_t)i),
				 TP_OK);
	}
	for (size_t i = 0; i < n; i++)
		assert_int_equal(tp_strmap_get(&m, keys[i]), i);
	assert_int_equal(tp_strmap_get(&m, "node"), TP_MAP_NONE);
	assert_int_equal(tp_strmap_get(&m, ""), TP_MAP_NONE);
	assert_int_equal(tp_strmap_put(&m, keys[3], 99), TP_OK);
	assert_int_equal(tp_strmap_get(&m, "node00003"), 99);
	assert_int_equal(m.len, n);
	tp_strmap_clear(&m);
	for (size_t i = 0; i < n; i++)
		tp_free(keys[i]);
	free(keys);
}

/* ---- strings, files ---- */

static void test_strbuf(void **state)
{
	tp_strbuf_t sb = {0};
	char big[1000];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tp_strbuf_printf(&sb, "%d-%s", 12, "ab");
	tp_strbuf_append(&sb, "cd", 2);
	assert_string_equal(sb.buf, "12-abcd");
	tp_strbuf_printf(&sb, "%s", big);
	assert_int_equal(sb.len, 7 + 999);
	assert_int_equal(strlen(sb.buf), sb.len);
	assert_false(sb.failed);
	tp_free(sb.buf);
}

/* Sizes no memory can hold are refused before any arithmetic wraps:
 * tp_grow's doubling and the map's 2n + 2 used to loop for ever (the
 * alarm turns that into a failure), reserve(2^61) to write past a 1-byte
 * table, an append of SIZE_MAX - 2 to memcpy a "negative" size. */
static void test_size_overflow(void **state)
{
	void *arr = NULL;
	size_t cap = 0;
	tp_u64map_t m = {0};
	tp_strbuf_t sb = {0};

	(void)state;
	alarm(20);
	assert_int_equal(tp_grow(&arr, &cap, ((size_t)1 << 63) + 1, 1),
			 TP_ERR_NOMEM);
	assert_int_equal(tp_grow(&arr, &cap, SIZE_MAX, 1), TP_ERR_NOMEM);
	assert_int_equal(tp_grow(&arr, &cap, SIZE_MAX / 8 + 1, 16),
			 TP_ERR_NOMEM);
	assert_int_equal(tp_grow(&arr, &cap, 1, 0), TP_ERR_INVAL);
	assert_null(arr);
	assert_int_equal(cap, 0);
	assert_int_equal(tp_grow(&arr, &cap, 10, 4), TP_OK);
	assert_true(cap >= 10);
	tp_free(arr);

	assert_int_equal(tp_u64map_reserve(&m, (size_t)3 << 61), TP_ERR_NOMEM);
	assert_int_equal(tp_u64map_reserve(&m, (size_t)1 << 61), TP_ERR_NOMEM);
	assert_int_equal(tp_u64map_reserve(&m, SIZE_MAX), TP_ERR_NOMEM);
	assert_int_equal(m.cap, 0);
	assert_int_equal(tp_u64map_reserve(&m, 100), TP_OK);
	assert_true(m.cap >= 202);
	tp_u64map_clear(&m);

	tp_strbuf_append(&sb, "abc", 3);
	tp_strbuf_append(&sb, "x", SIZE_MAX - 2);
	assert_true(sb.failed);
	assert_int_equal(sb.len, 3);
	assert_string_equal(sb.buf, "abc");
	tp_free(sb.buf);
	alarm(0);
}

/* The first error sticks, named; later ones only pass their code back. */
static void test_first_error(void **state)
{
	char *slot = NULL;

	(void)state;
	assert_int_equal(
	    tp_first_error(&slot, "f.json", TP_ERR_PARSE, "links[%d]: bad", 3),
	    TP_ERR_PARSE);
	assert_string_equal(slot, "f.json: links[3]: bad");
	assert_int_equal(tp_first_error(&slot, "f.json", TP_ERR_RANGE, "later"),
			 TP_ERR_RANGE);
	assert_string_equal(slot, "f.json: links[3]: bad");
	tp_free(slot);

	/* input echoed in a detail stays one line (found by the fuzzers) */
	slot = NULL;
	tp_first_error(&slot, "f.json", TP_ERR_PARSE, "unknown key \"%s\"",
		       "a\nSwitchName=evil\x1b[2J\x7f\xc3\xa9");
	assert_string_equal(slot, "f.json: unknown key "
				  "\"a?SwitchName=evil?[2J?\xc3\xa9\"");
	tp_free(slot);
	assert_null(tp_oneline(NULL));
}

/* An error line is UTF-8 on the terminal and in logs: a byte of the input
 * that is no part of a UTF-8 character (a Latin-1 0xE9, 0xFF, a lone
 * continuation byte, a sequence cut short, an overlong form, a surrogate)
 * becomes '?' as a control byte does (they were echoed raw); valid UTF-8,
 * 2 to 4 bytes, is kept. */
static void test_oneline_utf8(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"node\xff.004", "node?.004"},
	    {"caf\xe9", "caf?"},
	    {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
	    {"a\x80.b\xbf", "a?.b?"},
	    {"cut \xe2\x82", "cut ??"},
	    {"cut \xe2\x82 x", "cut ?? x"},
	    {"over \xc0\xaf", "over ??"},
	    {"surrogate \xed\xa0\x80", "surrogate ???"},
	    {"\xf4\x90\x80\x80", "????"},
	    {"\xc3\xa9\n\xff\t", "\xc3\xa9???"},
	    /* NEL, CSI, U+2028 / U+2029: valid, but they break a line or
	     * steer a terminal; U+00A0 and U+2027 are kept */
	    {"a\xc2\x85"
	     "b\xc2\x9b"
	     "c",
	     "a??b??c"},
	    {"x\xe2\x80\xa8y\xe2\x80\xa9z", "x???y???z"},
	    {"\xc2\xa0\xe2\x80\xa7", "\xc2\xa0\xe2\x80\xa7"},
	};
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		assert_ptr_equal(tp_oneline(buf), buf);
		assert_string_equal(buf, cases[i].out);
	}
}

static void test_parse_guid(void **state)
{
	uint64_t g = 0;

	(void)state;
	assert_true(tp_parse_guid("0x0002c90300a1b2c3", &g));
	assert_true(g == 0x0002c90300a1b2c3ULL);
	assert_true(tp_parse_guid("0002C90300A1B2C4", &g));
	assert_true(g == 0x0002c90300a1b2c4ULL);
	assert_true(tp_parse_guid("1", &g));
	assert_true(g == 1);
	assert_true(tp_parse_guid("0xffffffffffffffff", &g));
	assert_true(g == UINT64_MAX);
	g = 77;
	assert_false(tp_parse_guid("0x10000000000000000", &g));
	assert_false(tp_parse_guid("", &g));
	assert_false(tp_parse_guid("0x", &g));
	assert_false(tp_parse_guid("0x12g4", &g));
	assert_false(tp_parse_guid(" 0x12", &g));
	assert_true(g == 77);
}

/* One grammar for request bytes= and the CLI's --bytes: units, bounds. */
static void test_parse_bytes(void **state)
{
	double v = -1;

	(void)state;
	assert_true(tp_parse_bytes("4096", 1, 1e18, &v));
	assert_true(v == 4096.0);
	assert_true(tp_parse_bytes("1.5KiB", 1, 1e18, &v));
	assert_true(v == 1536.0);
	assert_true(tp_parse_bytes("256m", 1, 1e18, &v));
	assert_true(v == 256.0 * 1024 * 1024);
	assert_true(tp_parse_bytes("2GB", 1, 1e18, &v));
	assert_true(v == 2.0 * 1024 * 1024 * 1024);
	assert_true(tp_parse_bytes("1P", 1, 1e18, &v));
	assert_true(v == 1125899906842624.0);
	assert_true(tp_parse_bytes("0", 0, 1, &v));
	assert_true(v == 0.0);
	v = -1;
	assert_false(tp_parse_bytes("0", 1, 1e18, &v));
	assert_false(tp_parse_bytes("2P", 1, 1125899906842624.0, &v));
	assert_false(tp_parse_bytes("12Q", 1, 1e18, &v));
	assert_false(tp_parse_bytes("", 0, 1e18, &v));
	assert_false(tp_parse_bytes("G", 0, 1e18, &v));
	assert_false(tp_parse_bytes(" 1G", 0, 1e18, &v));
	assert_false(tp_parse_bytes("-1", -10, 1e18, &v));
	assert_false(tp_parse_bytes("inf", 0, 1e300, &v));
	assert_false(tp_parse_bytes("1GBx", 0, 1e18, &v));
	assert_false(tp_parse_bytes("0.4", 0, 1e18, &v));  /* not whole */
	assert_false(tp_parse_bytes("0x10", 0, 1e18, &v)); /* decimal only */
	assert_false(tp_parse_bytes("0X1G", 0, 1e18, &v));
	assert_false(tp_parse_bytes(".5K", 0, 1e18, &v)); /* digits first */
	assert_false(tp_parse_bytes("+1K", 0, 1e18, &v));
	assert_true(v == -1);
	/* an exponent is taken: trace CSVs and `topoplace trace` carry them */
	assert_true(tp_parse_bytes("1e3K", 0, 1e18, &v));
	assert_true(v == 1024000.0);
	assert_true(tp_parse_bytes("1e+15", 0, 1e18, &v));
	assert_true(v == 1e15);
	assert_true(tp_parse_bytes("1Kb", 0, 1e18, &v)); /* bytes, not bits */
	assert_true(v == 1024.0);
}

/* Numbers in file formats read and write '.' whatever LC_NUMERIC the
 * process set: under de_DE, printf writes "0,5" and strtod stops at '.'.
 * tp_parse_bytes took "1,5K" and refused "1.5G" there. */
static void test_c_numbers(void **state)
{
	char buf[64], *end = NULL;
	tp_strbuf_t sb = {0};
	double v = -1;

	(void)state;
	if (!tp_test_comma_locale())
		skip();
	snprintf(buf, sizeof(buf), "%g", 0.5);
	assert_string_equal(buf, "0,5"); /* the locale is in force */

	assert_int_equal(
	    tp_snprintf_c(buf, sizeof(buf), "%.17g|%.3f", 0.1, 1.5), 25);
	assert_string_equal(buf, "0.10000000000000001|1.500");
	assert_true(tp_strtod_c("2.25x", &end) == 2.25);
	assert_string_equal(end, "x");
	assert_true(tp_strtod_c("2,25", &end) == 2.0);
	assert_string_equal(end, ",25");
	tp_strbuf_printf(&sb, "%g %.9g ", 0.25, 1e-3);
	/* past the 256-byte first try: the second formatting is C too */
	tp_strbuf_printf(&sb, "%300.1f", 2.5);
	assert_false(sb.failed);
	assert_int_equal(strncmp(sb.buf, "0.25 0.001 ", 11), 0);
	assert_string_equal(sb.buf + sb.len - 3, "2.5");
	assert_null(strchr(sb.buf, ','));
	tp_free(sb.buf);

	assert_true(tp_parse_bytes("1.5K", 0, 1e18, &v));
	assert_true(v == 1536.0);
	assert_true(tp_parse_bytes("1.5G", 0, 1e18, &v));
	assert_true(v == 1.5 * 1024 * 1024 * 1024);
	v = -1;
	assert_false(tp_parse_bytes("1,5K", 0, 1e18, &v));
	assert_true(v == -1);
	tp_test_c_locale();
}

static void test_strtrim(void **state)
{
	char a[] = "  node01 HCA-1 \t\r\n";
	char b[] = "\t\n ";
	char c[] = "x";

	(void)state;
	assert_string_equal(tp_strtrim(a), "node01 HCA-1");
	assert_string_equal(tp_strtrim(b), "");
	assert_string_equal(tp_strtrim(c), "x");
}

static void test_json_space(void **state)
{
	(void)state;
	assert_int_equal(tp_json_space(" \t\r\n}", 5), 4);
	assert_int_equal(tp_json_space("  ", 2), 2);
	assert_int_equal(tp_json_space("x ", 2), 0);
	assert_int_equal(tp_json_space("", 0), 0);
	/* not JSON white space: NUL, form feed, vertical tab, NBSP */
	assert_int_equal(tp_json_space(" \0", 2), 1);
	{
		bool esc = true;
		/* JSON white space and escapes are fine, a \\ before u0000
		 * too (an escaped backslash, then the text u0000) */
		assert_int_equal(
		    tp_json_bad_byte("{\"a\\n\\\\u0000\":\t1}\r\n", 19, &esc),
		    19);
		assert_false(esc);
		assert_int_equal(tp_json_bad_byte("\x01{}", 3, &esc), 0);
		assert_false(esc);
		assert_int_equal(tp_json_bad_byte("{\"\\u0000\"}", 10, &esc),
				 2);
		assert_true(esc);
		assert_int_equal(tp_json_bad_byte("{}\0", 3, NULL), 2);
		/* a backslash before a control byte does not hide it */
		assert_int_equal(tp_json_bad_byte("\"\\\x7f\\\x1b\"", 6, &esc),
				 4);
		assert_false(esc);
		/* a cut escape at the end */
		assert_int_equal(tp_json_bad_byte("\"\\u000", 6, &esc), 6);
	}
	assert_int_equal(tp_json_space(" \f", 2), 1);
	assert_int_equal(tp_json_space("\v", 1), 0);
	assert_int_equal(tp_json_space("\xc2\xa0", 2), 0);
	/* no further than len */
	assert_int_equal(tp_json_space("   ", 1), 1);
}

static void test_file_read(void **state)
{
	char path[] = "/tmp/tp-test-common-XXXXXX";
	const char data[] = "line1\n\0binary\nend";
	char *buf = NULL;
	size_t len = 0;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, sizeof(data) - 1), sizeof(data) - 1);
	close(fd);
	assert_int_equal(tp_file_read(path, &buf, &len), TP_OK);
	assert_int_equal(len, sizeof(data) - 1);
	assert_memory_equal(buf, data, len);
	assert_int_equal(buf[len], '\0');
	tp_free(buf);
	unlink(path);
	assert_int_equal(tp_file_read(path, &buf, &len), TP_ERR_NOTFOUND);
	assert_int_equal(tp_strerror(TP_ERR_NOTFOUND)[0] != '\0', 1);
	assert_string_equal(tp_strerror(TP_OK), "success");
}

/* What a daemon reads: regular files only, refused without blocking (a
 * FIFO nobody writes would hang a plain open; alarm turns a hang into a
 * failure), the size cap applied before reading. */
static void test_file_read_regular(void **state)
{
	char dir[] = "/tmp/tp-test-common-dir-XXXXXX", fifo[64], file[64];
	char *buf = NULL;
	size_t len = 0;
	uint64_t size = 0;
	int fd = -1;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10);
	assert_int_equal(tp_file_read_regular(fifo, 1024, &buf, &len),
			 TP_ERR_NOTREG);
	assert_int_equal(tp_file_open_regular(fifo, &fd, &size), TP_ERR_NOTREG);
	alarm(0);
	assert_int_equal(fd, -1);
	assert_int_equal(tp_file_read_regular(dir, 1024, &buf, &len),
			 TP_ERR_NOTREG);
	assert_int_equal(tp_file_read_regular("/dev/null", 1024, &buf, &len),
			 TP_ERR_NOTREG);
	assert_int_equal(tp_file_read_regular(file, 1024, &buf, &len),
			 TP_ERR_NOTFOUND);
	assert_null(buf);
	assert_string_equal(tp_file_strerror(TP_ERR_NOTREG),
			    "not a regular file (a FIFO, device or directory)");

	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	close(fd);
	assert_int_equal(tp_file_read_regular(file, 9, &buf, &len),
			 TP_ERR_RANGE);
	assert_int_equal(tp_file_read_regular(file, 10, &buf, &len), TP_OK);
	assert_int_equal(len, 10);
	assert_string_equal(buf, "0123456789");
	tp_free(buf);
	assert_int_equal(tp_file_open_regular(file, &fd, &size), TP_OK);
	assert_int_equal(size, 10);
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	/* the command line's reader still takes what it always took */
	assert_int_equal(tp_file_read(dir, &buf, &len), TP_ERR_INVAL);
	unlink(file);
	unlink(fifo);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- allocation failure ---- */

static long fail_after; /* allocations left before failing; <0: never */
static long live;	/* outstanding allocations */
static long refused;	/* allocations failed on purpose */

static void *t_malloc(size_t n)
{
	void *p;

	if (fail_after == 0) {
		refused++;
		return NULL;
	}
	if (fail_after > 0)
		fail_after--;
	p = malloc(n);
	if (p)
		live++;
	return p;
}

static void *t_calloc(size_t n, size_t m)
{
	void *p;

	if (fail_after == 0) {
		refused++;
		return NULL;
	}
	if (fail_after > 0)
		fail_after--;
	p = calloc(n, m);
	if (p)
		live++;
	return p;
}

static void *t_realloc(void *old, size_t n)
{
	void *p;

	if (fail_after == 0) {
		refused++;
		return NULL;
	}
	if (fail_after > 0)
		fail_after--;
	p = realloc(old, n);
	if (p && !old)
		live++;
	return p;
}

static void t_free(void *p)
{
	if (p)
		live--;
	free(p);
}

static const tp_allocator_t failing = {t_malloc, t_calloc, t_realloc, t_free};

/* Every allocation point fails once; each must report NOMEM and leak
 * nothing, and the outputs stay untouched. */
static void test_alloc_failure_expand(void **state)
{
	const char *list = "gpu[001-040,77],cpu[1-3]x[1-2],login";
	bool ok = false;
	int nomem = 0; /* the loop stops at the first success */

	(void)state;
	tp_alloc_set(&failing);
	for (long k = 0; k < 10000 && !ok; k++) {
		char **v = (char **)0x1;
		size_t n = 999;
		tp_err_t err;

		live = 0;
		fail_after = k;
		err = tp_hostlist_expand(list, &v, &n);
		fail_after = -1;
		if (err == TP_OK) {
			assert_int_equal(n, 40 + 1 + 6 + 1);
			tp_hostlist_free(v, n);
			ok = true;
		} else {
			assert_int_equal(err, TP_ERR_NOMEM);
			assert_ptr_equal(v, (char **)0x1);
			assert_int_equal(n, 999);
			nomem++;
		}
		assert_int_equal(live, 0);
	}
	tp_alloc_set(NULL);
	assert_true(ok);
	assert_true(nomem > 0);
}

static void test_alloc_failure_compress(void **state)
{
	const char *names[] = {"gpu003", "gpu001", "gpu7", "cpu1", "n9", "n10"};
	bool ok = false;
	int nomem = 0; /* the loop stops at the first success */

	(void)state;
	tp_alloc_set(&failing);
	for (long k = 0; k < 10000 && !ok; k++) {
		char *s;

		live = 0;
		fail_after = k;
		s = tp_hostlist_compress(names, 6);
		fail_after = -1;
		if (s) {
			assert_string_equal(s,
					    "gpu[001,003],gpu7,cpu1,n[9-10]");
			tp_free(s);
			ok = true;
		} else {
			nomem++;
		}
		assert_int_equal(live, 0);
	}
	tp_alloc_set(NULL);
	assert_true(ok);
	assert_true(nomem > 0);
}

static void test_alloc_failure_strbuf(void **state)
{
	tp_strbuf_t sb = {0};

	(void)state;
	tp_alloc_set(&failing);
	live = 0;
	fail_after = 0;
	tp_strbuf_printf(&sb, "%s", "abc");
	fail_after = -1;
	assert_true(sb.failed);
	assert_null(sb.buf);
	/* a failed buffer stays failed */
	tp_strbuf_append(&sb, "x", 1);
	assert_true(sb.failed);
	assert_null(sb.buf);
	tp_alloc_set(NULL);
	assert_int_equal(live, 0);
}

/* ---- stable sort ---- */

typedef struct sort_item {
	int key;       /* few values: many ties */
	size_t at;     /* position before sorting */
	char pad[300]; /* big items: the allocated temporary */
} sort_item_t;

static size_t item_size; /* how much of sort_item_t a test sorts */

static int key_cmp(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

/* The order a stable sort must give: by key, then where it was. */
static int ref_cmp(const void *x, const void *y)
{
	const sort_item_t *a = x, *b = y;

	if (a->key != b->key)
		return (a->key > b->key) - (a->key < b->key);
	return (a->at > b->at) - (a->at < b->at);
}

static void test_sort(void **state)
{
	/* key and position only, a little more, all of it (> 256 bytes) */
	const size_t sizes[] = {offsetof(sort_item_t, pad), 24,
				sizeof(sort_item_t)};
	uint64_t x = 88172645463325252ULL;

	(void)state;
	for (size_t z = 0; z < 3; z++) {
		item_size = sizes[z];
		for (size_t n = 0; n <= 200; n += n < 60 ? 1 : 47) {
			unsigned char *v = tp_calloc(n + 1, item_size);
			sort_item_t *ref = tp_calloc(n + 1, sizeof(*ref));
			assert_non_null(v);
			assert_non_null(ref);
			for (size_t i = 0; i < n; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				ref[i].key = (int)(x % 7);
				ref[i].at = i;
				memcpy(v + i * item_size, &ref[i], item_size);
			}
			qsort(ref, n, sizeof(*ref), ref_cmp);
			tp_sort(v, n, item_size, key_cmp);
			for (size_t i = 0; i < n; i++) {
				sort_item_t got = {0};
				memcpy(&got, v + i * item_size,
				       offsetof(sort_item_t, pad));
				assert_int_equal(got.key, ref[i].key);
				assert_int_equal(got.at, ref[i].at);
			}
			tp_free(v);
			tp_free(ref);
		}
	}
	tp_sort(NULL, 2, 4, key_cmp); /* nothing: no crash */
}

/* Without memory: still sorted, stably, big items (no room for one
 * either) and long arrays (no merge buffer) alike. */
static void test_sort_nomem(void **state)
{
	const size_t sizes[] = {offsetof(sort_item_t, pad),
				sizeof(sort_item_t)};
	const size_t n = 3 * TP_SORT_SHORT;
	sort_item_t *ref = tp_calloc(n, sizeof(*ref));
	unsigned char *v = tp_calloc(n, sizeof(sort_item_t));

	(void)state;
	assert_non_null(ref);
	assert_non_null(v);
	for (size_t z = 0; z < 2; z++) {
		for (size_t i = 0; i < n; i++) {
			ref[i].key = (int)((n - i) % 5);
			ref[i].at = i;
			memcpy(v + i * sizes[z], &ref[i], sizes[z]);
		}
		qsort(ref, n, sizeof(*ref), ref_cmp);
		tp_alloc_set(&failing);
		live = 0;
		refused = 0;
		fail_after = 0;
		tp_sort(v, n, sizes[z], key_cmp);
		fail_after = -1;
		tp_alloc_set(NULL);
		assert_int_equal(live, 0);
		/* tp_sort never fails: only a refusal shows that the
		 * fallback without memory sorted this */
		assert_true(refused > 0);
		for (size_t i = 0; i < n; i++) {
			sort_item_t got = {0};
			memcpy(&got, v + i * sizes[z],
			       offsetof(sort_item_t, pad));
			assert_int_equal(got.key, ref[i].key);
			assert_int_equal(got.at, ref[i].at);
		}
	}
	tp_free(ref);
	tp_free(v);
}

/* ---- contained child ---- */

static tp_err_t child_echo(void *arg, tp_strbuf_t *out)
{
	size_t n = *(size_t *)arg;

	for (size_t i = 0; i < n; i++)
		tp_strbuf_append(out, "0123456789abcdef", 16);
	return n ? TP_OK : TP_ERR_PARSE;
}

static tp_err_t child_crash(void *arg, tp_strbuf_t *out)
{
	(void)arg;
	tp_strbuf_append(out, "partial", 7);
	raise(SIGSEGV);
	return TP_OK;
}

static tp_err_t child_hang(void *arg, tp_strbuf_t *out)
{
	(void)arg;
	(void)out;
	for (;;)
		pause();
	return TP_OK;
}

static void test_child_run(void **state)
{
	tp_strbuf_t sb = {0};
	size_t n = 100000; /* 1.6 MB: more than a pipe holds */
	int sig = -1;

	(void)state;
	assert_int_equal(tp_child_run(child_echo, &n, 30000, &sb, &sig), TP_OK);
	assert_int_equal(sig, 0);
	assert_int_equal(sb.len, 16 * n);
	assert_memory_equal(sb.buf + 16 * (n - 1), "0123456789abcdef", 16);
	tp_free(sb.buf);

	sb = (tp_strbuf_t){0};
	n = 0;
	assert_int_equal(tp_child_run(child_echo, &n, 30000, &sb, &sig),
			 TP_ERR_PARSE);
	assert_int_equal(sig, 0);

	assert_int_equal(tp_child_run(child_crash, NULL, 30000, &sb, &sig),
			 TP_ERR_IO);
	assert_int_equal(sig, SIGSEGV);
	tp_free(sb.buf);

	sb = (tp_strbuf_t){0};
	assert_int_equal(tp_child_run(child_hang, NULL, 200, &sb, &sig),
			 TP_ERR_TIMEOUT);
	assert_int_equal(sig, 0);
	assert_null(sb.buf);
}

/* Work for test_threads_run: items taken under a lock, each marked by the
 * thread that took it. */
typedef struct items {
	pthread_mutex_t lock;
	size_t next, n;
	int done[64];
	pthread_t who[64];
} items_t;

static void *take_items(void *arg)
{
	items_t *it = arg;

	for (;;) {
		pthread_mutex_lock(&it->lock);
		size_t k = it->next++;
		pthread_mutex_unlock(&it->lock);
		if (k >= it->n)
			return NULL;
		it->done[k]++;
		it->who[k] = pthread_self();
	}
}

/* Every item once, whatever the thread count; max 1 runs on the caller
 * alone; never more threads than CPUs, TP_THREADS_MAX or max. */
static void test_threads_run(void **state)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t cap = ncpu > 1 ? (size_t)ncpu : 1;

	(void)state;
	if (cap > TP_THREADS_MAX)
		cap = TP_THREADS_MAX;
	for (size_t max = 1; max <= 20; max += 19) {
		items_t it = {.n = 64};
		pthread_mutex_init(&it.lock, NULL);
		size_t ran = tp_threads_run(take_items, &it, max);
		pthread_mutex_destroy(&it.lock);
		assert_true(ran >= 1);
		assert_true(ran <= (max < cap ? max : cap));
		for (size_t k = 0; k < it.n; k++) {
			assert_int_equal(it.done[k], 1);
			if (max == 1)
				assert_true(
				    pthread_equal(it.who[k], pthread_self()));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hostlist_expand),
	    cmocka_unit_test(test_hostlist_expand_plain),
	    cmocka_unit_test(test_hostlist_cartesian),
	    cmocka_unit_test(test_hostlist_padding),
	    cmocka_unit_test(test_hostlist_errors),
	    cmocka_unit_test(test_hostlist_max),
	    cmocka_unit_test(test_quote),
	    cmocka_unit_test(test_utf8),
	    cmocka_unit_test(test_hostlist_compress),
	    cmocka_unit_test(test_hostlist_roundtrip),
	    cmocka_unit_test(test_u64map),
	    cmocka_unit_test(test_hash_str),
	    cmocka_unit_test(test_strmap),
	    cmocka_unit_test(test_map_none_refused),
	    cmocka_unit_test(test_strbuf),
	    cmocka_unit_test(test_size_overflow),
	    cmocka_unit_test(test_first_error),
	    cmocka_unit_test(test_oneline_utf8),
	    cmocka_unit_test(test_parse_guid),
	    cmocka_unit_test(test_parse_bytes),
	    cmocka_unit_test(test_c_numbers),
	    cmocka_unit_test(test_strtrim),
	    cmocka_unit_test(test_json_space),
	    cmocka_unit_test(test_file_read),
	    cmocka_unit_test(test_file_read_regular),
	    cmocka_unit_test(test_alloc_failure_expand),
	    cmocka_unit_test(test_alloc_failure_compress),
	    cmocka_unit_test(test_alloc_failure_strbuf),
	    cmocka_unit_test(test_sort),
	    cmocka_unit_test(test_sort_nomem),
	    cmocka_unit_test(test_child_run),
	    cmocka_unit_test(test_threads_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
