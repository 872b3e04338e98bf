/*
 * Slurm host list expressions: "gpu[001-004,7],cpu1", "a[1-2]b[3-4]".
 *
 * Several brackets in one name expand as a cartesian product with the
 * first bracket varying slowest, as Slurm's own hostlist does, so the
 * lists Slurm prints read back in the same order.
 *
 * Zero padding: a range takes the width of its lower bound ("[08-10]" ->
 * 08 09 10), which is also what Slurm does; compress prints numbers back
 * with the width they came with, so expand(compress(x)) == x as a set.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_common.h"

/* A typo like "node[1-999999999]" must fail fast instead of eating memory. */
#define MAX_NAMES 1000000
/* Up to 18 digits fit in a uint64_t without overflow checks. */
#define MAX_DIGITS 18
/* A host name is at most 255 bytes, and all of them together at most
 * 64 MiB: a list from an untrusted client (a step's node list in
 * slurmstepd, as root) cannot make us allocate more than that. */
#define MAX_NAME_LEN 255
#define MAX_BYTES    (64u << 20)

typedef struct range {
	uint64_t lo, hi;
	int width;
} range_t;

/* One host expression: literal text and bracket groups, alternating. */
typedef struct seg {
	const char *lit; /* literal text (not NUL-terminated) */
	size_t litlen;
	size_t r0, nr;	/* ranges of the bracket after it: item r[r0..] */
	uint64_t count; /* names the bracket yields; 1 without one */
} seg_t;

typedef struct item {
	seg_t *seg;
	size_t nseg, capseg;
	range_t *r; /* all ranges of the item, segments point into it */
	size_t nr, capr;
	size_t namelen; /* longest name the item yields */
} item_t;

static void item_reset(item_t *it)
{
	it->nseg = 0;
	it->nr = 0;
}

static void item_free(item_t *it)
{
	tp_free(it->seg);
	tp_free(it->r);
}

static bool is_sep(char c)
{
	return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static tp_err_t parse_num(const char **sp, const char *end, uint64_t *v_p,
			  int *width_p)
{
	const char *s = *sp;
	uint64_t v = 0;
	int n = 0;

	while (s < end && isdigit((unsigned char)*s)) {
		if (++n > MAX_DIGITS)
			return TP_ERR_PARSE;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (!n)
		return TP_ERR_PARSE;
	*sp = s;
	*v_p = v;
	*width_p = n;
	return TP_OK;
}

/* Parse "lo-hi,n,..." between brackets into the item's range array. */
static tp_err_t parse_bracket(item_t *it, const char *s, const char *end,
			      uint64_t *count_p)
{
	uint64_t count = 0;

	if (s == end)
		return TP_ERR_PARSE;
	for (;;) {
		range_t r;
		int w2;
		void *arr = it->r;

		if (parse_num(&s, end, &r.lo, &r.width))
			return TP_ERR_PARSE;
		r.hi = r.lo;
		if (s < end && *s == '-') {
			s++;
			if (parse_num(&s, end, &r.hi, &w2) || r.hi < r.lo)
				return TP_ERR_PARSE;
		}
		if (r.hi - r.lo >= MAX_NAMES)
			return TP_ERR_RANGE;
		count += r.hi - r.lo + 1;
		if (count > MAX_NAMES)
			return TP_ERR_RANGE;
		if (tp_grow(&arr, &it->capr, it->nr + 1, sizeof(range_t)))
			return TP_ERR_NOMEM;
		it->r = arr;
		it->r[it->nr++] = r;
		if (s == end)
			break;
		if (*s != ',')
			return TP_ERR_PARSE;
		s++;
	}
	*count_p = count;
	return TP_OK;
}

static tp_err_t push_seg(item_t *it, const char *lit, size_t litlen,
			 size_t first_range, uint64_t count)
{
	void *arr = it->seg;
	seg_t *sg;

	if (tp_grow(&arr, &it->capseg, it->nseg + 1, sizeof(seg_t)))
		return TP_ERR_NOMEM;
	it->seg = arr;
	sg = &it->seg[it->nseg++];
	sg->lit = lit;
	sg->litlen = litlen;
	sg->r0 = first_range;
	sg->nr = it->nr - first_range;
	sg->count = count;
	return TP_OK;
}

/* Split one item ("a[1-2]b[3-4]c") into segments; *total_p = names. */
static tp_err_t parse_item(item_t *it, const char *s, const char *end,
			   uint64_t *total_p)
{
	uint64_t total = 1;
	tp_err_t err;

	item_reset(it);
	while (s < end) {
		const char *lb = s, *rb;
		size_t first = it->nr;
		uint64_t count = 1;

		while (lb < end && *lb != '[' && *lb != ']')
			lb++;
		if (lb < end && *lb == ']')
			return TP_ERR_PARSE;
		if (lb == end) {
			if ((err = push_seg(it, s, (size_t)(lb - s), first, 1)))
				return err;
			break;
		}
		rb = lb + 1;
		while (rb < end && *rb != ']' && *rb != '[')
			rb++;
		if (rb == end || *rb == '[')
			return TP_ERR_PARSE;
		if ((err = parse_bracket(it, lb + 1, rb, &count)))
			return err;
		if ((err = push_seg(it, s, (size_t)(lb - s), first, count)))
			return err;
		total *= count;
		if (total > MAX_NAMES)
			return TP_ERR_RANGE;
		s = rb + 1;
	}
	it->namelen = 0;
	for (size_t i = 0; i < it->nseg; i++) {
		int w = 0;
		for (size_t k = 0; k < it->seg[i].nr; k++) {
			const range_t *r = &it->r[it->seg[i].r0 + k];
			int d = 1;
			for (uint64_t v = r->hi; v >= 10; v /= 10)
				d++;
			d = d > r->width ? d : r->width;
			w = d > w ? d : w;
		}
		it->namelen += it->seg[i].litlen + (size_t)w;
	}
	if (it->namelen > MAX_NAME_LEN)
		return TP_ERR_RANGE;
	*total_p = total;
	return TP_OK;
}

/* k-th value of a bracket (k < count) and its width. */
static void seg_value(const item_t *it, const seg_t *sg, uint64_t k,
		      uint64_t *v_p, int *w_p)
{
	const range_t *r = it->r + sg->r0;

	*v_p = 0;
	*w_p = 1;
	for (size_t i = 0; i < sg->nr; i++) {
		uint64_t n = r[i].hi - r[i].lo + 1;
		if (k < n) {
			*v_p = r[i].lo + k;
			*w_p = r[i].width;
			return;
		}
		k -= n;
	}
}

/* v in decimal, zero-padded to w digits: what "%0*llu" prints, without
 * a printf per name (a list may expand to a million) */
static void put_padded(tp_strbuf_t *sb, uint64_t v, int w)
{
	char d[20];
	int n = 0;

	do
		d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
	while ((v /= 10));
	for (int z = n; z < w; z++)
		tp_strbuf_append(sb, "0", 1);
	tp_strbuf_append(sb, d + sizeof(d) - n, (size_t)n);
}

static tp_err_t emit_item(const item_t *it, uint64_t total, char **names,
			  size_t *n_p)
{
	tp_strbuf_t sb = {0};
	tp_err_t err = TP_OK;

	for (uint64_t idx = 0; idx < total; idx++) {
		uint64_t rest = idx, div = total;

		sb.len = 0;
		for (size_t i = 0; i < it->nseg; i++) {
			const seg_t *sg = &it->seg[i];
			uint64_t v;
			int w;

			tp_strbuf_append(&sb, sg->lit, sg->litlen);
			if (!sg->nr)
				continue;
			/* first bracket varies slowest */
			div /= sg->count;
			seg_value(it, sg, rest / div, &v, &w);
			rest %= div;
			put_padded(&sb, v, w);
		}
		if (sb.failed || !sb.buf ||
		    !(names[*n_p] = tp_strdup(sb.buf))) {
			err = TP_ERR_NOMEM;
			break;
		}
		(*n_p)++;
	}
	tp_free(sb.buf);
	return err;
}

/* First pass: validate and count, so nothing is built for a bad list. */
static tp_err_t count_names(item_t *it, const char *list, uint64_t *total_p)
{
	uint64_t total = 0, bytes = 0, cnt;
	const char *s, *e;
	tp_err_t err;

	for (s = list; *s;) {
		int depth = 0;

		if (is_sep(*s)) {
			s++;
			continue;
		}
		for (e = s; *e && (depth || !is_sep(*e)); e++)
			depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
		if ((err = parse_item(it, s, e, &cnt)))
			return err;
		total += cnt;
		bytes += cnt * (it->namelen + 1);
		if (total > MAX_NAMES || bytes > MAX_BYTES)
			return TP_ERR_RANGE;
		s = e;
	}
	*total_p = total;
	return TP_OK;
}

tp_err_t tp_hostlist_count(const char *list, size_t *n_p)
{
	item_t it = {0};
	uint64_t total = 0;
	tp_err_t err;

	if (!list || !n_p)
		return TP_ERR_INVAL;
	if (!(err = count_names(&it, list, &total)))
		*n_p = (size_t)total;
	item_free(&it);
	return err;
}

tp_err_t tp_hostlist_expand(const char *list, char ***names_p, size_t *n_p)
{
	item_t it = {0};
	char **names = NULL;
	uint64_t total = 0, cnt;
	size_t n = 0;
	const char *s, *e;
	tp_err_t err;

	if (!list || !names_p || !n_p)
		return TP_ERR_INVAL;
	if ((err = count_names(&it, list, &total)))
		goto out;
	names = tp_malloc((size_t)(total ? total : 1) * sizeof(char *));
	if (!names) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	for (s = list; *s;) {
		int depth = 0;

		if (is_sep(*s)) {
			s++;
			continue;
		}
		for (e = s; *e && (depth || !is_sep(*e)); e++)
			depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
		if ((err = parse_item(&it, s, e, &cnt)) ||
		    (err = emit_item(&it, cnt, names, &n)))
			goto out;
		s = e;
	}
	*names_p = names;
	*n_p = n;
	names = NULL;
	err = TP_OK;
out:
	if (names)
		tp_hostlist_free(names, n);
	item_free(&it);
	return err;
}

void tp_hostlist_free(char **names, size_t n)
{
	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		tp_free(names[i]);
	tp_free(names);
}

/* ---- compress ---- */

typedef struct name_info {
	size_t plen; /* prefix length; == strlen when there is no number */
	uint64_t v;
	int len;     /* digits in the suffix, 0 without one */
	bool padded; /* suffix has a leading zero ("007") */
	uint32_t group;
} name_info_t;

typedef struct hgroup {
	const char *name; /* first name of the group: prefix source */
	size_t plen;
	int width; /* printf width; -1: a name without number */
	uint64_t *v;
	size_t nv;
} hgroup_t;

static void split_name(const char *s, name_info_t *ni)
{
	size_t len = strlen(s), p = len;

	while (p > 0 && isdigit((unsigned char)s[p - 1]))
		p--;
	ni->plen = len;
	ni->len = 0;
	ni->v = 0;
	ni->padded = false;
	if (p == len || len - p > MAX_DIGITS)
		return;
	ni->plen = p;
	ni->len = (int)(len - p);
	ni->padded = s[p] == '0' && ni->len > 1;
	for (size_t i = p; i < len; i++)
		ni->v = ni->v * 10 + (uint64_t)(s[i] - '0');
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/*
 * A padded suffix fixes the group width; an unpadded one fits any width up
 * to its own length, so it joins the widest padded group of its prefix
 * that can print it ("node099,node100" -> node[099-100]) and otherwise the
 * unpadded group ("node9,node10" -> node[9-10]). padded holds a key
 * "<width>:<prefix>" for every padded width seen.
 */
static int pick_width(const tp_strmap_t *padded, const char *name,
		      const name_info_t *ni)
{
	char key[32 + 256];

	if (ni->len == 0)
		return -1;
	if (ni->padded)
		return ni->len;
	if (ni->plen > 256)
		return 1;
	for (int w = ni->len; w >= 2; w--) {
		snprintf(key, sizeof(key), "%d:%.*s", w, (int)ni->plen, name);
		if (tp_strmap_get(padded, key) != TP_MAP_NONE)
			return w;
	}
	return 1;
}

static void print_group(tp_strbuf_t *sb, const hgroup_t *g)
{
	tp_strbuf_append(sb, g->name, g->plen);
	if (g->width < 0)
		return;
	if (g->nv == 1) {
		tp_strbuf_printf(sb, "%0*llu", g->width,
				 (unsigned long long)g->v[0]);
		return;
	}
	tp_strbuf_append(sb, "[", 1);
	for (size_t i = 0; i < g->nv;) {
		size_t j = i;
		while (j + 1 < g->nv && g->v[j + 1] == g->v[j] + 1)
			j++;
		if (i)
			tp_strbuf_append(sb, ",", 1);
		tp_strbuf_printf(sb, "%0*llu", g->width,
				 (unsigned long long)g->v[i]);
		if (j > i)
			tp_strbuf_printf(sb, "-%0*llu", g->width,
					 (unsigned long long)g->v[j]);
		i = j + 1;
	}
	tp_strbuf_append(sb, "]", 1);
}

/* Keys of both maps live in one array, freed at the end. */
static tp_err_t key_put(tp_strmap_t *m, char **keys, size_t *nkeys, char *key,
			uint32_t val)
{
	if (!key)
		return TP_ERR_NOMEM;
	if (tp_strmap_put(m, key, val)) {
		tp_free(key);
		return TP_ERR_NOMEM;
	}
	keys[(*nkeys)++] = key;
	return TP_OK;
}

char *tp_hostlist_compress(const char *const *names, size_t n)
{
	size_t cap = n ? n : 1;
	name_info_t *ni = tp_calloc(cap, sizeof(*ni));
	hgroup_t *g = tp_calloc(cap, sizeof(*g));
	char **keys = tp_calloc(2 * cap, sizeof(char *));
	size_t *fill = tp_calloc(cap, sizeof(size_t));
	tp_strmap_t padded = {0}, by_key = {0};
	size_t ng = 0, nkeys = 0;
	tp_strbuf_t sb = {0};
	char *out = NULL;

	if (!ni || !g || !keys || !fill)
		goto out;
	for (size_t i = 0; i < n; i++) {
		split_name(names[i], &ni[i]);
		if (!ni[i].padded)
			continue;
		char *key = tp_asprintf("%d:%.*s", ni[i].len, (int)ni[i].plen,
					names[i]);
		if (key && tp_strmap_get(&padded, key) != TP_MAP_NONE) {
			tp_free(key);
			continue;
		}
		if (key_put(&padded, keys, &nkeys, key, 0))
			goto out;
	}
	/* group key: width, then the prefix; groups in first-seen order */
	for (size_t i = 0; i < n; i++) {
		int w = pick_width(&padded, names[i], &ni[i]);
		char *key =
		    tp_asprintf("%d:%.*s", w, (int)ni[i].plen, names[i]);
		uint32_t gi;

		if (!key)
			goto out;
		gi = tp_strmap_get(&by_key, key);
		if (gi == TP_MAP_NONE) {
			gi = (uint32_t)ng;
			if (key_put(&by_key, keys, &nkeys, key, gi))
				goto out;
			g[ng].name = names[i];
			g[ng].plen = ni[i].plen;
			g[ng].width = w;
			ng++;
		} else {
			tp_free(key);
		}
		ni[i].group = gi;
		g[gi].nv++;
	}
	for (size_t k = 0; k < ng; k++)
		if (!(g[k].v = tp_malloc(g[k].nv * sizeof(uint64_t))))
			goto out;
	for (size_t i = 0; i < n; i++)
		g[ni[i].group].v[fill[ni[i].group]++] = ni[i].v;
	for (size_t k = 0; k < ng; k++) {
		size_t u = 0;
		qsort(g[k].v, g[k].nv, sizeof(uint64_t), u64_cmp);
		for (size_t i = 0; i < g[k].nv; i++)
			if (!u || g[k].v[u - 1] != g[k].v[i])
				g[k].v[u++] = g[k].v[i];
		g[k].nv = u;
		if (k)
			tp_strbuf_append(&sb, ",", 1);
		print_group(&sb, &g[k]);
	}
	tp_strbuf_append(&sb, "", 0);
	if (!sb.failed) {
		out = sb.buf;
		sb.buf = NULL;
	}
out:
	tp_free(sb.buf);
	if (g)
		for (size_t k = 0; k < ng; k++)
			tp_free(g[k].v);
	if (keys)
		for (size_t k = 0; k < nkeys; k++)
			tp_free(keys[k]);
	tp_strmap_clear(&padded);
	tp_strmap_clear(&by_key);
	tp_free(keys);
	tp_free(fill);
	tp_free(g);
	tp_free(ni);
	return out;
}
