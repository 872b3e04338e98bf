/*
 * The switch tree topology/topoplace gives Slurm 22.05.
 *
 * It starts from the tree `topoplace fabric topology-conf` prints
 * (tp_stree_conf): the names and the leaf/parent structure Slurm sees
 * through the plugin are then those of topology/tree with our
 * topology.conf, by construction, and the fidelity tests comparing the two
 * compare like with like.
 *
 * NVLink domains go under the lowest common ancestor of their hosts' IB
 * leaves, not under "their" leaf: an NVL72 rack is usually cabled to
 * several IB leaves, so it has none.
 */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "topology_int.h"

/* Slurm reads at most this many characters of a switch name. */
#define NAME_MAX_LEN 64

typedef struct bsw {
	char *name;
	uint32_t parent;
	uint32_t *hosts;
	size_t nhosts, caphosts;
	uint32_t link_speed;
	uint32_t group; /* fabric group, TP_ID_NONE when none */
	uint32_t key;	/* smallest original position among its hosts */
	bool nvlink;
	bool alive;
} bsw_t;

typedef struct build {
	const tp_fabric_t *f;
	bsw_t *sw;
	size_t nsw, cap;
	tp_strmap_t byname;
	uint32_t *hleaf; /* per host: its leaf, TP_ID_NONE if none */
	uint32_t *pos;	 /* per host: original depth-first position */
	char *err;
} build_t;

static tp_err_t failf(build_t *b, tp_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tp_err_t failf(build_t *b, tp_err_t err, const char *fmt, ...)
{
	va_list ap;

	if (!b->err && err != TP_ERR_NOMEM) {
		va_start(ap, fmt);
		b->err = tp_oneline(tp_vasprintf(fmt, ap));
		va_end(ap);
	}
	return err;
}

static uint32_t add_switch(build_t *b, char *name)
{
	bsw_t *s;

	if (tp_grow((void **)&b->sw, &b->cap, b->nsw + 1, sizeof(bsw_t))) {
		tp_free(name);
		return TP_ID_NONE;
	}
	s = &b->sw[b->nsw];
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->parent = TP_ID_NONE;
	s->group = TP_ID_NONE;
	s->link_speed = 1;
	s->key = UINT32_MAX;
	s->alive = true;
	if (tp_strmap_put(&b->byname, name, (uint32_t)b->nsw)) {
		tp_free(name);
		return TP_ID_NONE;
	}
	return (uint32_t)b->nsw++;
}

static tp_err_t add_host(bsw_t *s, uint32_t h)
{
	if (tp_grow((void **)&s->hosts, &s->caphosts, s->nhosts + 1,
		    sizeof(uint32_t)))
		return TP_ERR_NOMEM;
	s->hosts[s->nhosts++] = h;
	return TP_OK;
}

/* A name not yet taken: base itself when usable, else base-2, base-3... */
static char *unique_name(build_t *b, const char *base)
{
	char *s = NULL;

	for (unsigned i = 1; i < 100000; i++) {
		tp_free(s);
		/* the base cut to leave room for the suffix: cut after it,
		 * a base of NAME_MAX_LEN characters gave back the base */
		int keep = NAME_MAX_LEN;
		if (i > 1)
			keep -= snprintf(NULL, 0, "-%u", i);
		s = i == 1 ? tp_strdup(base)
			   : tp_asprintf("%.*s-%u", keep, base, i);
		if (!s)
			return NULL;
		if (strlen(s) > NAME_MAX_LEN)
			s[NAME_MAX_LEN] = '\0';
		if (tp_strmap_get(&b->byname, s) == TP_MAP_NONE)
			return s;
	}
	tp_free(s);
	return NULL;
}

/* The switches topology.conf states (tp_stree_conf), in its line order:
 * sibling order below is then the file's. */
static tp_err_t from_conf(build_t *b)
{
	tp_stree_t c;
	tp_err_t err = tp_stree_conf(b->f, &c);

	if (err)
		return failf(b, err, "topology-conf: %s",
			     err == TP_ERR_INVAL ? "fabric not finalized"
						 : tp_strerror(err));
	for (uint32_t i = 0; i < c.nsw && !err; i++) {
		tp_stree_sw_t *cs = &c.sw[i];
		uint32_t k = add_switch(b, cs->name);

		cs->name = NULL;
		if (k == TP_ID_NONE) {
			err = TP_ERR_NOMEM;
			break;
		}
		b->sw[k].group = cs->group;
		b->sw[k].link_speed = cs->link_speed;
		b->sw[k].parent = cs->parent == i ? TP_ID_NONE : cs->parent;
		for (size_t j = 0; j < cs->nhosts && !err; j++) {
			uint32_t h = cs->hosts[j];
			if (b->hleaf[h] != TP_ID_NONE)
				err = failf(b, TP_ERR_PARSE,
					    "host %s on two leaves (%s, %s)",
					    tp_fabric_host(b->f, h)->name,
					    b->sw[b->hleaf[h]].name,
					    b->sw[k].name);
			else if (!(err = add_host(&b->sw[k], h)))
				b->hleaf[h] = k;
		}
	}
	tp_stree_free(&c);
	return err;
}

/* Children of p (TP_ID_NONE: the roots) that are alive, by key then index. */
typedef struct kid {
	uint32_t key, idx;
} kid_t;

static int cmp_kid(const void *x, const void *y)
{
	const kid_t *a = x, *c = y;
	if (a->key != c->key)
		return a->key < c->key ? -1 : 1;
	return a->idx < c->idx ? -1 : a->idx > c->idx;
}

static size_t kids_of(const build_t *b, uint32_t p, kid_t *out, bool by_key)
{
	size_t n = 0;

	for (size_t i = 0; i < b->nsw; i++)
		if (b->sw[i].alive && b->sw[i].parent == p) {
			out[n].key = by_key ? b->sw[i].key : (uint32_t)i;
			out[n].idx = (uint32_t)i;
			n++;
		}
	qsort(out, n, sizeof(*out), cmp_kid);
	return n;
}

/* Depth-first walk appending each switch's hosts to order[]. */
static bool walk(const build_t *b, uint32_t p, bool by_key, uint32_t *order,
		 size_t *n, kid_t *scratch)
{
	size_t nk = kids_of(b, p, scratch, by_key);
	kid_t *mine = tp_malloc((nk ? nk : 1) * sizeof(kid_t));
	bool ok = true;

	if (!mine)
		return false;
	memcpy(mine, scratch, nk * sizeof(kid_t));
	for (size_t k = 0; k < nk && ok; k++) {
		const bsw_t *s = &b->sw[mine[k].idx];
		for (size_t j = 0; j < s->nhosts; j++)
			order[(*n)++] = s->hosts[j];
		ok = walk(b, mine[k].idx, by_key, order, n, scratch);
	}
	tp_free(mine);
	return ok;
}

static uint32_t depth(const build_t *b, uint32_t i)
{
	uint32_t d = 0;
	while (b->sw[i].parent != TP_ID_NONE) {
		i = b->sw[i].parent;
		d++;
	}
	return d;
}

static uint32_t lca(const build_t *b, uint32_t x, uint32_t y)
{
	uint32_t dx = depth(b, x), dy = depth(b, y);

	while (dx > dy) {
		x = b->sw[x].parent;
		dx--;
	}
	while (dy > dx) {
		y = b->sw[y].parent;
		dy--;
	}
	while (x != y && x != TP_ID_NONE) {
		x = b->sw[x].parent;
		y = b->sw[y].parent;
	}
	return x;
}

/* Multi-node NVLink domains as leaves. false (with a warning) when the
 * domains do not fit the tree, and then nothing was changed. */
static tp_err_t add_nvlink(build_t *b, bool *done_p)
{
	const tp_fabric_t *f = b->f;
	size_t nd = tp_fabric_nnvdomains(f), nsw0 = b->nsw, ord = 0;
	uint32_t *anc = tp_calloc(nd + 1, sizeof(uint32_t));
	tp_err_t err = TP_OK;

	*done_p = false;
	if (!anc)
		return TP_ERR_NOMEM;
	for (size_t d = 0; d < nd; d++) {
		const tp_nvdomain_t *dp = tp_fabric_nvdomain(f, d);
		anc[d] = TP_ID_NONE;
		if (!dp->multi_node || dp->nhosts < 2)
			continue;
		for (size_t k = 0; k < dp->nhosts; k++) {
			uint32_t l = b->hleaf[dp->hosts[k]];
			if (l == TP_ID_NONE) {
				tp__log(TP_LOG_WARN,
					"NVLink domain %s: host %s is in no "
					"switch group; NVLink level skipped",
					dp->name,
					tp_fabric_host(f, dp->hosts[k])->name);
				goto out;
			}
			anc[d] = k ? lca(b, anc[d], l) : l;
			if (anc[d] == TP_ID_NONE) {
				tp__log(TP_LOG_WARN,
					"NVLink domain %s spans disconnected "
					"switch trees; NVLink level skipped",
					dp->name);
				goto out;
			}
		}
	}
	for (size_t d = 0; d < nd; d++) {
		const tp_nvdomain_t *dp = tp_fabric_nvdomain(f, d);
		char *nm;
		uint32_t i;

		if (anc[d] == TP_ID_NONE)
			continue;
		ord++;
		if (tp__slurm_name_ok(dp->name))
			nm = unique_name(b, dp->name);
		else {
			char *base = tp_asprintf("nvl-%zu", ord);
			nm = base ? unique_name(b, base) : NULL;
			tp_free(base);
		}
		if (!nm || (i = add_switch(b, nm)) == TP_ID_NONE) {
			err = TP_ERR_NOMEM;
			goto out;
		}
		b->sw[i].parent = anc[d];
		b->sw[i].nvlink = true;
		for (size_t k = 0; k < dp->nhosts; k++) {
			uint32_t h = dp->hosts[k];
			bsw_t *l = &b->sw[b->hleaf[h]];
			for (size_t j = 0; j < l->nhosts; j++)
				if (l->hosts[j] == h) {
					l->hosts[j] = l->hosts[--l->nhosts];
					break;
				}
			b->hleaf[h] = i;
			if ((err = add_host(&b->sw[i], h)))
				goto out;
		}
	}
	/* a leaf that now also has domains below moves its other hosts to a
	 * leaf of their own: a Slurm switch has nodes or switches, not both */
	for (size_t i = 0; i < nsw0; i++) {
		bool has_kids = false;
		for (size_t j = nsw0; j < b->nsw; j++)
			has_kids |= b->sw[j].parent == i;
		if (!has_kids || !b->sw[i].nhosts)
			continue;
		char *base =
		    tp_asprintf("%.*s-rest", NAME_MAX_LEN - 5, b->sw[i].name);
		char *nm = base ? unique_name(b, base) : NULL;
		uint32_t r;
		tp_free(base);
		if (!nm || (r = add_switch(b, nm)) == TP_ID_NONE) {
			err = TP_ERR_NOMEM;
			goto out;
		}
		b->sw[r].parent = (uint32_t)i;
		b->sw[r].link_speed = b->sw[i].link_speed;
		b->sw[r].hosts = b->sw[i].hosts;
		b->sw[r].nhosts = b->sw[i].nhosts;
		b->sw[r].caphosts = b->sw[i].caphosts;
		b->sw[i].hosts = NULL;
		b->sw[i].nhosts = b->sw[i].caphosts = 0;
		for (size_t k = 0; k < b->sw[r].nhosts; k++)
			b->hleaf[b->sw[r].hosts[k]] = r;
	}
	*done_p = ord > 0;
out:
	tp_free(anc);
	return err;
}

static void build_free(build_t *b)
{
	for (size_t i = 0; i < b->nsw; i++) {
		tp_free(b->sw[i].name);
		tp_free(b->sw[i].hosts);
	}
	tp_free(b->sw);
	tp_strmap_clear(&b->byname);
	tp_free(b->hleaf);
	tp_free(b->pos);
	tp_free(b->err);
}

void tp_stree_free(tp_stree_t *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nsw; i++) {
		tp_free(t->sw[i].name);
		tp_free(t->sw[i].children);
		tp_free(t->sw[i].hosts);
	}
	tp_free(t->sw);
	tp_free(t->order);
	tp_free(t->rank);
	memset(t, 0, sizeof(*t));
}

static int level_of(tp_stree_t *t, uint32_t i, int guard)
{
	int lv = 0;

	if (guard < 0)
		return 0;
	for (size_t k = 0; k < t->sw[i].nchildren; k++) {
		int c = level_of(t, t->sw[i].children[k], guard - 1) + 1;
		lv = c > lv ? c : lv;
	}
	t->sw[i].level = lv;
	return lv;
}

/* Sort a leaf's hosts by their original position (scratch holds n). */
static void sort_by_pos(uint32_t *hosts, size_t n, const uint32_t *pos,
			kid_t *scratch)
{
	for (size_t k = 0; k < n; k++) {
		scratch[k].key = pos[hosts[k]];
		scratch[k].idx = hosts[k];
	}
	qsort(scratch, n, sizeof(kid_t), cmp_kid);
	for (size_t k = 0; k < n; k++)
		hosts[k] = scratch[k].idx;
}

tp_err_t tp_stree_build(const tp_fabric_t *f, bool nvlink, tp_stree_t *t,
			char **err_p)
{
	build_t b = {0};
	tp_stree_t out = {0};
	size_t nh, n = 0, alive;
	uint32_t *newidx = NULL;
	kid_t *scratch = NULL, *hscratch = NULL;
	bool nvl = false, changed;
	tp_err_t err = TP_ERR_NOMEM;

	if (!f || !t)
		return TP_ERR_INVAL;
	b.f = f;
	nh = tp_fabric_nhosts(f);
	b.hleaf = tp_malloc((nh ? nh : 1) * sizeof(uint32_t));
	b.pos = tp_malloc((nh ? nh : 1) * sizeof(uint32_t));
	out.order = tp_malloc((nh ? nh : 1) * sizeof(uint32_t));
	out.rank = tp_malloc((nh ? nh : 1) * sizeof(uint32_t));
	hscratch = tp_malloc((nh ? nh : 1) * sizeof(kid_t));
	if (!b.hleaf || !b.pos || !out.order || !out.rank || !hscratch)
		goto fail;
	for (size_t h = 0; h < nh; h++)
		b.hleaf[h] = b.pos[h] = TP_ID_NONE;
	if ((err = from_conf(&b)))
		goto fail;
	err = TP_ERR_NOMEM;
	/* original positions: sibling order = topology.conf line order */
	for (size_t i = 0; i < b.nsw; i++)
		if (b.sw[i].nhosts)
			qsort(b.sw[i].hosts, b.sw[i].nhosts, sizeof(uint32_t),
			      tp_u32_cmp);
	if (!(scratch = tp_malloc((b.nsw + 1) * sizeof(kid_t))))
		goto fail;
	if (!walk(&b, TP_ID_NONE, false, out.order, &n, scratch))
		goto fail;
	for (size_t k = 0; k < n; k++)
		b.pos[out.order[k]] = (uint32_t)k;
	if (nvlink && (err = add_nvlink(&b, &nvl)))
		goto fail;
	err = TP_ERR_NOMEM;
	/* prune switches left without hosts, bottom up */
	do {
		changed = false;
		for (size_t i = 0; i < b.nsw; i++) {
			bool live = b.sw[i].nhosts > 0;
			for (size_t j = 0; j < b.nsw && !live; j++)
				live = b.sw[j].alive && b.sw[j].parent == i;
			if (b.sw[i].alive && !live) {
				b.sw[i].alive = false;
				changed = true;
			}
		}
	} while (changed);
	/* keys: smallest original position below each switch */
	for (size_t i = 0; i < b.nsw; i++) {
		sort_by_pos(b.sw[i].hosts, b.sw[i].nhosts, b.pos, hscratch);
		for (size_t k = 0; k < b.sw[i].nhosts; k++)
			for (uint32_t p = (uint32_t)i; p != TP_ID_NONE;
			     p = b.sw[p].parent)
				if (b.pos[b.sw[i].hosts[k]] < b.sw[p].key)
					b.sw[p].key = b.pos[b.sw[i].hosts[k]];
	}
	n = 0;
	if (!walk(&b, TP_ID_NONE, true, out.order, &n, scratch))
		goto fail;
	out.norder = n;
	out.nhosts = nh;
	for (size_t h = 0; h < nh; h++)
		out.rank[h] = TP_ID_NONE;
	for (size_t k = 0; k < n; k++)
		out.rank[out.order[k]] = (uint32_t)k;
	/* compact into the output */
	alive = 0;
	if (!(newidx = tp_malloc((b.nsw + 1) * sizeof(uint32_t))))
		goto fail;
	for (size_t i = 0; i < b.nsw; i++)
		newidx[i] = b.sw[i].alive ? (uint32_t)alive++ : TP_ID_NONE;
	if (!(out.sw = tp_calloc(alive + 1, sizeof(tp_stree_sw_t))))
		goto fail;
	out.nsw = alive;
	for (size_t i = 0; i < b.nsw; i++) {
		tp_stree_sw_t *o;
		size_t nk;

		if (!b.sw[i].alive)
			continue;
		o = &out.sw[newidx[i]];
		o->name = b.sw[i].name;
		b.sw[i].name = NULL;
		o->hosts = b.sw[i].hosts;
		o->nhosts = b.sw[i].nhosts;
		b.sw[i].hosts = NULL;
		b.sw[i].nhosts = 0;
		o->link_speed = b.sw[i].link_speed;
		o->group = b.sw[i].group;
		o->nvlink = b.sw[i].nvlink;
		o->parent = b.sw[i].parent == TP_ID_NONE
				? newidx[i]
				: newidx[b.sw[i].parent];
		nk = kids_of(&b, (uint32_t)i, scratch, true);
		if (!(o->children =
			  tp_malloc((nk ? nk : 1) * sizeof(uint32_t))))
			goto fail;
		o->nchildren = nk;
		for (size_t k = 0; k < nk; k++)
			o->children[k] = newidx[scratch[k].idx];
	}
	for (size_t i = 0; i < out.nsw; i++) {
		if (out.sw[i].parent == i) {
			int lv = level_of(&out, (uint32_t)i, (int)out.nsw);
			out.levels = lv > out.levels ? lv : out.levels;
		}
		for (size_t k = 0; k < out.sw[i].nhosts; k++)
			for (uint32_t p = (uint32_t)i;; p = out.sw[p].parent) {
				out.sw[p].nbelow++;
				if (out.sw[p].parent == p)
					break;
			}
	}
	out.nvlink = nvl;
	tp_free(newidx);
	tp_free(scratch);
	tp_free(hscratch);
	build_free(&b);
	*t = out;
	return TP_OK;
fail:
	if (err_p)
		*err_p = b.err
			     ? b.err
			     : tp_asprintf("switch tree: %s", tp_strerror(err));
	else
		tp_free(b.err);
	b.err = NULL;
	tp_free(newidx);
	tp_free(scratch);
	tp_free(hscratch);
	build_free(&b);
	tp_stree_free(&out);
	return err;
}

uint32_t tp_stree_dist(const tp_stree_t *t, uint32_t i, uint32_t j)
{
	uint32_t di = 0, dj = 0, d = 0;

	if (!t || i >= t->nsw || j >= t->nsw)
		return UINT32_MAX;
	for (uint32_t p = i; t->sw[p].parent != p; p = t->sw[p].parent)
		di++;
	for (uint32_t p = j; t->sw[p].parent != p; p = t->sw[p].parent)
		dj++;
	for (; di > dj; di--, d++)
		i = t->sw[i].parent;
	for (; dj > di; dj--, d++)
		j = t->sw[j].parent;
	while (i != j) {
		if (t->sw[i].parent == i)
			return UINT32_MAX; /* two roots */
		i = t->sw[i].parent;
		j = t->sw[j].parent;
		d += 2;
	}
	return d;
}

static int cmp_u32_desc(const void *x, const void *y)
{
	return -tp_u32_cmp(x, y);
}

uint32_t tp_stree_min_leaves(const uint32_t *avail, size_t n, uint64_t need)
{
	uint32_t *v;
	uint64_t sum = 0;
	uint32_t k = 0;

	if (!need || !avail || !n)
		return 0;
	if (!(v = tp_malloc(n * sizeof(uint32_t))))
		return 0;
	memcpy(v, avail, n * sizeof(uint32_t));
	qsort(v, n, sizeof(uint32_t), cmp_u32_desc);
	for (size_t i = 0; i < n && sum < need; i++) {
		if (!v[i])
			break;
		sum += v[i];
		k++;
	}
	tp_free(v);
	return sum >= need ? k : 0;
}

/* Appends name to a list of at most five, counting the rest. */
static void stray(tp_strbuf_t *sb, size_t *count, const char *name)
{
	if ((*count)++ < 5)
		tp_strbuf_printf(sb, "%s%s", sb->len ? "," : "", name);
}

bool tp_stree_match(const tp_stree_t *t, const tp_fabric_t *f,
		    const char *const *names, size_t n, char **why_p)
{
	tp_strbuf_t missing = {0}, extra = {0};
	size_t nmissing = 0, nextra = 0;
	bool *seen = tp_calloc(t->nhosts + 1, sizeof(bool));
	bool ok;

	if (!seen) {
		if (why_p)
			*why_p = tp_strdup(tp_strerror(TP_ERR_NOMEM));
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t h = tp_fabric_host_find(f, names[i]);
		if (h == TP_ID_NONE || h >= t->nhosts ||
		    t->rank[h] == TP_ID_NONE)
			stray(&missing, &nmissing, names[i]);
		else
			seen[h] = true;
	}
	for (size_t k = 0; k < t->norder; k++)
		if (!seen[t->order[k]])
			stray(&extra, &nextra,
			      tp_fabric_host(f, t->order[k])->name);
	ok = !nmissing && !nextra;
	if (!ok && why_p)
		*why_p = tp_asprintf(
		    "%zu node(s) not in the fabric's switch groups%s%s%s, "
		    "%zu fabric host(s) not in slurm.conf%s%s%s",
		    nmissing, nmissing ? " (" : "",
		    missing.buf ? missing.buf : "", nmissing ? ")" : "", nextra,
		    nextra ? " (" : "", extra.buf ? extra.buf : "",
		    nextra ? ")" : "");
	tp_free(missing.buf);
	tp_free(extra.buf);
	tp_free(seen);
	return ok;
}

void tp_stree_table_free(tp_stree_row_t *rows, size_t n)
{
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++) {
		tp_free(rows[i].switches);
		tp_free(rows[i].desc);
		tp_free(rows[i].dist);
		tp_free(rows[i].nodes);
	}
	tp_free(rows);
}

/* Descendants of switch i appended to r->desc, depth first. */
static void add_desc(const tp_stree_t *t, tp_stree_row_t *r, uint32_t i)
{
	for (size_t k = 0; k < t->sw[i].nchildren; k++) {
		uint32_t c = t->sw[i].children[k];
		r->desc[r->ndesc++] = c;
		add_desc(t, r, c);
	}
}

/* How many switches are below switch i. */
static size_t count_desc(const tp_stree_t *t, uint32_t i)
{
	size_t n = t->sw[i].nchildren;

	for (size_t k = 0; k < t->sw[i].nchildren; k++)
		n += count_desc(t, t->sw[i].children[k]);
	return n;
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

static tp_err_t table_row(const tp_stree_t *t, uint32_t i, tp_stree_row_t *r)
{
	const tp_stree_sw_t *s = &t->sw[i];
	tp_strbuf_t sb = {0};

	for (size_t k = 0; k < s->nchildren; k++)
		tp_strbuf_printf(&sb, "%s%s", k ? "," : "",
				 t->sw[s->children[k]].name);
	r->switches = sb.buf;
	/* its descendants only (a row of every switch took 4 bytes a pair
	 * of switches more than tp_plugin.h's peak says) */
	size_t nd = count_desc(t, i);
	r->desc = tp_calloc(nd ? nd : 1, sizeof(*r->desc));
	r->dist = tp_calloc(t->nsw, sizeof(*r->dist));
	r->nodes = tp_calloc(s->nbelow ? s->nbelow : 1, sizeof(*r->nodes));
	if (sb.failed || !r->desc || !r->dist || !r->nodes)
		return TP_ERR_NOMEM;
	add_desc(t, r, i);
	for (uint32_t j = 0; j < t->nsw; j++)
		r->dist[j] = tp_stree_dist(t, i, j);
	return TP_OK;
}

tp_err_t tp_stree_table(const tp_stree_t *t, const int *node_of,
			tp_stree_row_t **rows_p)
{
	tp_stree_row_t *rows = tp_calloc(t->nsw ? t->nsw : 1, sizeof(*rows));

	if (!rows)
		return TP_ERR_NOMEM;
	for (uint32_t i = 0; i < t->nsw; i++)
		if (table_row(t, i, &rows[i])) {
			tp_stree_table_free(rows, t->nsw);
			return TP_ERR_NOMEM;
		}
	/* each leaf host's node into its leaf and every ancestor */
	for (uint32_t i = 0; i < t->nsw; i++)
		for (size_t k = 0; k < t->sw[i].nhosts; k++) {
			int inx = node_of[t->sw[i].hosts[k]];
			uint32_t p = i;
			if (inx < 0)
				continue;
			for (;;) {
				rows[p].nodes[rows[p].nnodes++] = inx;
				if (t->sw[p].parent == p)
					break;
				p = t->sw[p].parent;
			}
		}
	for (uint32_t i = 0; i < t->nsw; i++)
		qsort(rows[i].nodes, rows[i].nnodes, sizeof(int), cmp_int);
	*rows_p = rows;
	return TP_OK;
}
