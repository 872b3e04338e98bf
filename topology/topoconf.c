/*
 * Slurm topology.conf writer, tree and block formats.
 *
 * The tree is written from the derived groups, not from raw switches: Slurm's
 * tree plugin assumes a host hangs below one leaf, which a rail-optimized
 * host (one HCA on each of eight rail leaves) does not. A level-1 group (a
 * leaf in a fat tree, a scalable unit across rails) is exactly the unit
 * inside which every pair of hosts is one switch hop apart on every rail,
 * so it is what Slurm should see as a "leaf switch".
 *
 * Slurm's parsers care about the names: SwitchName is at most 64
 * characters and every name goes through its hostlist parser, so only
 * [A-Za-z0-9._-] are used; anything else gets a synthetic name.
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

/* Slurm keeps at most this many block levels (MAX_BLOCK_LEVELS). */
#define MAX_BLOCK_LEVELS 16

bool tp__slurm_name_ok(const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++, n++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' &&
		    *s != '.')
			return false;
	return n <= 64;
}

/* "g<level>-<n>" could clash with a switch that happens to be named so. */
static bool synthetic_like(const char *s)
{
	if (*s++ != 'g' || !isdigit((unsigned char)*s))
		return false;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s++ != '-' || !isdigit((unsigned char)*s))
		return false;
	while (isdigit((unsigned char)*s))
		s++;
	return *s == '\0';
}

/* Group g's switch description when it is a group of one switch and that
 * is a usable Slurm name (unique or not), else NULL. */
static const char *desc_name(const tp_fabric_t *f, size_t g)
{
	const tp_group_t *gp = &f->group[g];
	const char *d;

	if (gp->nswitches != 1)
		return NULL;
	d = f->sw[gp->switches[0]].desc;
	return tp__slurm_name_ok(d) && !synthetic_like(d) ? d : NULL;
}

/* The slot of ord[] counting group g's level. */
static int level_slot(const tp_fabric_t *f, size_t g)
{
	int lv = f->group[g].level;

	return lv < 1 ? 0 : lv > TP_MAX_LEVELS + 1 ? TP_MAX_LEVELS + 1 : lv;
}

void tp_fabric_group_name(const tp_fabric_t *f, size_t g, char *buf, size_t len)
{
	const char *d;
	size_t ord = 0;

	if (!buf || !len)
		return;
	buf[0] = '\0';
	if (!f || g >= f->ngroup)
		return;
	if ((d = desc_name(f, g))) {
		size_t h = 0;
		for (; h < f->ngroup; h++) {
			const char *e = h != g ? desc_name(f, h) : NULL;
			if (e && !strcmp(e, d))
				break;
		}
		if (h == f->ngroup) {
			snprintf(buf, len, "%s", d);
			return;
		}
	}
	for (size_t h = 0; h <= g; h++)
		ord += level_slot(f, h) == level_slot(f, g);
	snprintf(buf, len, "g%d-%zu", f->group[g].level, ord);
}

/* Every group's name (tp_fabric_group_name), in one pass over a map of
 * the descriptions. */
static tp_err_t group_names(const tp_fabric_t *f, char ***names_p)
{
	char **names = tp_calloc(f->ngroup + 1, sizeof(char *));
	size_t ord[TP_MAX_LEVELS + 2] = {0};
	tp_strmap_t seen = {0};
	uint32_t *dup = tp_calloc(f->ngroup + 1, sizeof(uint32_t));
	tp_err_t err = TP_ERR_NOMEM;

	if (!names || !dup)
		goto out;
	for (size_t g = 0; g < f->ngroup; g++) {
		const char *d = desc_name(f, g);
		uint32_t prev;

		if (!d)
			continue;
		prev = tp_strmap_get(&seen, d);
		if (prev != TP_MAP_NONE) {
			dup[prev] = 1;
			dup[g] = 1;
			continue;
		}
		if (tp_strmap_put(&seen, d, (uint32_t)g))
			goto out;
	}
	for (size_t g = 0; g < f->ngroup; g++) {
		const char *d = desc_name(f, g);

		ord[level_slot(f, g)]++;
		if (d && !dup[g])
			names[g] = tp_strdup(d);
		else
			names[g] = tp_asprintf("g%d-%zu", f->group[g].level,
					       ord[level_slot(f, g)]);
		if (!names[g])
			goto out;
	}
	*names_p = names;
	names = NULL;
	err = TP_OK;
out:
	if (names)
		for (size_t g = 0; g < f->ngroup; g++)
			tp_free(names[g]);
	tp_free(names);
	tp_free(dup);
	tp_strmap_clear(&seen);
	return err;
}

static void free_names(const tp_fabric_t *f, char **names)
{
	if (!names)
		return;
	for (size_t g = 0; g < f->ngroup; g++)
		tp_free(names[g]);
	tp_free(names);
}

/* Append a compressed host list of host indices. */
static void put_hosts(tp_strbuf_t *sb, const tp_fabric_t *f,
		      const uint32_t *hosts, size_t n)
{
	const char **v = tp_malloc((n ? n : 1) * sizeof(char *));
	char *s;

	if (!v) {
		sb->failed = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = f->host[hosts[i]].name;
	s = tp_hostlist_compress(v, n);
	tp_free(v);
	if (!s) {
		sb->failed = true;
		return;
	}
	tp_strbuf_printf(sb, "%s", s);
	tp_free(s);
}

/* Hosts with no entry in the output are listed, never silently dropped:
 * Slurm would refuse jobs spanning them, and the admin must know why. */
static void put_orphans(tp_strbuf_t *sb, const tp_fabric_t *f,
			const bool *listed, const char *why)
{
	uint32_t *v = tp_malloc((f->nhost ? f->nhost : 1) * sizeof(uint32_t));
	size_t n = 0;

	if (!v) {
		sb->failed = true;
		return;
	}
	for (size_t h = 0; h < f->nhost; h++)
		if (!listed[h])
			v[n++] = (uint32_t)h;
	if (n) {
		tp_strbuf_printf(sb, "# %zu host%s %s: ", n, n == 1 ? "" : "s",
				 why);
		put_hosts(sb, f, v, n);
		tp_strbuf_append(sb, "\n", 1);
	}
	tp_free(v);
}

/* Switch descriptions of a synthetic group, as a reading aid. */
static void put_group_comment(tp_strbuf_t *sb, const tp_fabric_t *f,
			      const tp_group_t *gp, const char *name)
{
	const char **v;
	char *s;

	if (gp->nswitches == 1 &&
	    strcmp(name, f->sw[gp->switches[0]].desc) == 0)
		return;
	if (!gp->nswitches) {
		tp_strbuf_printf(sb,
				 "# %s: no switch: its groups' switches are "
				 "cabled to one another\n",
				 name);
		return;
	}
	v = tp_malloc((gp->nswitches ? gp->nswitches : 1) * sizeof(char *));
	if (!v) {
		sb->failed = true;
		return;
	}
	for (size_t i = 0; i < gp->nswitches; i++)
		v[i] = f->sw[gp->switches[i]].desc;
	s = tp_hostlist_compress(v, gp->nswitches);
	tp_free(v);
	if (!s) {
		sb->failed = true;
		return;
	}
	/* a description may hold anything; keep the comment on one line */
	for (char *p = s; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	tp_strbuf_printf(sb, "# %s: %zu switch%s: %s\n", name, gp->nswitches,
			 gp->nswitches == 1 ? "" : "es", s);
	tp_free(s);
}

static void put_children(tp_strbuf_t *sb, const tp_stree_t *t,
			 const tp_stree_sw_t *s)
{
	const char **v =
	    tp_malloc((s->nchildren ? s->nchildren : 1) * sizeof(char *));
	char *list;

	if (!v) {
		sb->failed = true;
		return;
	}
	for (size_t k = 0; k < s->nchildren; k++)
		v[k] = t->sw[s->children[k]].name;
	list = tp_hostlist_compress(v, s->nchildren);
	tp_free(v);
	if (!list) {
		sb->failed = true;
		return;
	}
	tp_strbuf_printf(sb, "%s", list);
	tp_free(list);
}

/* Slurm reads LinkSpeed as an integer, the "%.0f" the file prints (the
 * same rounding as nearbyint); 0 or none reads as 1. */
static uint32_t link_speed(double up_gbps)
{
	if (!(up_gbps >= 1.5) || isinf(up_gbps))
		return 1;
	return up_gbps >= UINT32_MAX ? UINT32_MAX
				     : (uint32_t)nearbyint(up_gbps);
}

/* Line i's parent, speed, and hosts (a leaf: as the group lists them) or
 * children (child groups in index order). */
static tp_err_t conf_switch(const tp_fabric_t *f, tp_stree_t *t,
			    const uint32_t *line, uint32_t i)
{
	tp_stree_sw_t *s = &t->sw[i];
	const tp_group_t *gp = &f->group[s->group];
	size_t n = 0;

	s->parent = gp->parent != TP_ID_NONE && line[gp->parent] != TP_ID_NONE
			? line[gp->parent]
			: i;
	s->link_speed = link_speed(gp->up_gbps);
	if (s->level == 0) {
		s->hosts =
		    tp_malloc((gp->nhosts ? gp->nhosts : 1) * sizeof(uint32_t));
		if (!s->hosts)
			return TP_ERR_NOMEM;
		memcpy(s->hosts, gp->hosts, gp->nhosts * sizeof(uint32_t));
		s->nhosts = s->nbelow = (uint32_t)gp->nhosts;
		return TP_OK;
	}
	for (size_t c = 0; c < f->ngroup; c++)
		n += f->group[c].parent == s->group && line[c] != TP_ID_NONE;
	if (!(s->children = tp_malloc((n ? n : 1) * sizeof(uint32_t))))
		return TP_ERR_NOMEM;
	for (size_t c = 0; c < f->ngroup; c++)
		if (f->group[c].parent == s->group && line[c] != TP_ID_NONE)
			s->children[s->nchildren++] = line[c];
	return TP_OK;
}

tp_err_t tp_stree_conf(const tp_fabric_t *f, tp_stree_t *t)
{
	tp_stree_t out = {0};
	char **names = NULL;
	uint32_t *line = NULL;
	tp_err_t err;

	if (!f || !t || !f->finalized)
		return TP_ERR_INVAL;
	if ((err = group_names(f, &names)))
		return err;
	err = TP_ERR_NOMEM;
	line = tp_malloc((f->ngroup + 1) * sizeof(uint32_t));
	out.sw = tp_calloc(f->ngroup + 1, sizeof(tp_stree_sw_t));
	if (!line || !out.sw)
		goto out;
	for (size_t g = 0; g < f->ngroup; g++)
		line[g] = TP_ID_NONE;
	/* top down, like Slurm's own examples */
	for (int lv = f->ngroup_levels; lv >= 1; lv--)
		for (size_t g = 0; g < f->ngroup; g++) {
			if (f->group[g].level != lv)
				continue;
			out.sw[out.nsw].group = (uint32_t)g;
			out.sw[out.nsw].level = lv - 1;
			out.sw[out.nsw].name = names[g];
			names[g] = NULL;
			line[g] = (uint32_t)out.nsw++;
		}
	for (uint32_t i = 0; i < out.nsw; i++)
		if (conf_switch(f, &out, line, i))
			goto out;
	/* each leaf's hosts up its chain */
	for (uint32_t i = 0; i < out.nsw; i++)
		for (uint32_t p = i, steps = 0;
		     out.sw[p].parent != p && steps < out.nsw; steps++) {
			p = out.sw[p].parent;
			out.sw[p].nbelow += (uint32_t)out.sw[i].nhosts;
		}
	out.levels = f->ngroup_levels > 0 ? f->ngroup_levels - 1 : 0;
	out.nhosts = f->nhost;
	*t = out;
	memset(&out, 0, sizeof(out));
	err = TP_OK;
out:
	free_names(f, names);
	tp_free(line);
	tp_stree_free(&out);
	return err;
}

static void write_tree(tp_strbuf_t *sb, const tp_fabric_t *f,
		       const tp_stree_t *t)
{
	bool *listed = tp_calloc(f->nhost + 1, sizeof(bool));

	if (!listed) {
		sb->failed = true;
		return;
	}
	tp_strbuf_printf(sb,
			 "# Slurm topology.conf (topology/tree) written by "
			 "topoplace: %zu hosts, %d group level%s\n"
			 "# LinkSpeed: Gb/s from the group's switches to the "
			 "level above\n",
			 f->nhost, f->ngroup_levels,
			 f->ngroup_levels == 1 ? "" : "s");
	for (size_t i = 0; i < t->nsw; i++) {
		const tp_stree_sw_t *s = &t->sw[i];
		const tp_group_t *gp = &f->group[s->group];

		put_group_comment(sb, f, gp, s->name);
		tp_strbuf_printf(sb, "SwitchName=%s ", s->name);
		if (s->level == 0) {
			tp_strbuf_printf(sb, "Nodes=");
			put_hosts(sb, f, s->hosts, s->nhosts);
			for (size_t k = 0; k < s->nhosts; k++)
				listed[s->hosts[k]] = true;
		} else {
			tp_strbuf_printf(sb, "Switches=");
			put_children(sb, t, s);
		}
		if (gp->up_gbps > 0)
			tp_strbuf_printf(sb, " LinkSpeed=%.0f", gp->up_gbps);
		tp_strbuf_append(sb, "\n", 1);
	}
	put_orphans(sb, f, listed, "in no switch group (no IB link)");
	tp_free(listed);
}

/* ---- block format ---- */

typedef struct block {
	tp_block_t b;
	uint32_t key[TP_MAX_LEVELS]; /* groups of its first host, top first */
} block_t;

static int block_cmp(const void *x, const void *y)
{
	const block_t *a = x, *b = y;

	for (int l = 0; l < TP_MAX_LEVELS; l++)
		if (a->key[l] != b->key[l])
			return a->key[l] < b->key[l] ? -1 : 1;
	return a->b.index < b->b.index ? -1 : a->b.index > b->b.index;
}

/* Slurm pairs neighbouring blocks into bigger ones, so blocks are ordered
 * by the IB groups they sit in: aggregated blocks then share switches. */
static void block_key(const tp_fabric_t *f, block_t *b)
{
	const tp_host_t *h = b->b.nhosts ? &f->host[b->b.hosts[0]] : NULL;

	for (int l = 0; l < TP_MAX_LEVELS; l++) {
		int src = f->ngroup_levels - 1 - l;
		b->key[l] = h && src >= 0 ? h->group[src] : TP_ID_NONE;
	}
}

tp_err_t tp_fabric_blocks(const tp_fabric_t *f, tp_block_t **blocks_p,
			  size_t *n_p, size_t *base_p)
{
	block_t *b;
	tp_block_t *out = NULL;
	size_t nb = 0, base = 0;
	bool multi = false;

	if (!f || !blocks_p || !n_p || !base_p)
		return TP_ERR_INVAL;
	b = tp_calloc(f->nnvdom + f->ngroup + 1, sizeof(block_t));
	if (!b)
		return TP_ERR_NOMEM;
	for (size_t d = 0; d < f->nnvdom; d++)
		multi |= f->nvdom[d].multi_node;
	if (multi) {
		for (size_t d = 0; d < f->nnvdom; d++) {
			const tp_nvdomain_t *dp = &f->nvdom[d];
			if (!dp->multi_node || !dp->nhosts)
				continue;
			b[nb].b = (tp_block_t){dp->hosts, dp->nhosts, true,
					       (uint32_t)d};
			block_key(f, &b[nb++]);
		}
	} else {
		for (size_t g = 0; g < f->ngroup; g++) {
			const tp_group_t *gp = &f->group[g];
			if (gp->level != 1 || !gp->nhosts)
				continue;
			b[nb].b = (tp_block_t){gp->hosts, gp->nhosts, false,
					       (uint32_t)g};
			block_key(f, &b[nb++]);
		}
	}
	qsort(b, nb, sizeof(*b), block_cmp);
	if (nb && !(out = tp_malloc(nb * sizeof(*out)))) {
		tp_free(b);
		return TP_ERR_NOMEM;
	}
	for (size_t i = 0; i < nb; i++) {
		out[i] = b[i].b;
		if (!base || out[i].nhosts < base)
			base = out[i].nhosts;
	}
	tp_free(b);
	*blocks_p = out;
	*n_p = nb;
	*base_p = base;
	return TP_OK;
}

/* BlockName for a domain whose own name Slurm would refuse: nvl-<ord>,
 * ord counting the multi-node domains in index order; suffixed -2, -3 ...
 * when a real domain is already so named (used: their names), as the tree
 * writer suffixes its own made-up names. Made-up names cannot meet each
 * other: ord and the suffix are both in them. */
static char *made_up_block_name(const tp_strmap_t *used, size_t ord)
{
	char *s = tp_asprintf("nvl-%zu", ord);

	for (unsigned k = 2; s && tp_strmap_get(used, s) != TP_MAP_NONE; k++) {
		tp_free(s);
		s = tp_asprintf("nvl-%zu-%u", ord, k);
	}
	return s;
}

static void write_block(tp_strbuf_t *sb, const tp_fabric_t *f, char **names)
{
	bool *listed = tp_calloc(f->nhost + 1, sizeof(bool));
	char **alt = tp_calloc(f->nnvdom + 1, sizeof(char *));
	tp_block_t *b = NULL;
	size_t nb = 0, base = 0, ord = 0;
	bool multi = false;
	tp_strmap_t used = {0};

	if (!listed || !alt || tp_fabric_blocks(f, &b, &nb, &base)) {
		sb->failed = true;
		goto out;
	}
	for (size_t d = 0; d < f->nnvdom; d++)
		multi |= f->nvdom[d].multi_node;
	for (size_t d = 0; multi && d < f->nnvdom; d++) {
		const tp_nvdomain_t *dp = &f->nvdom[d];
		if (dp->multi_node && dp->nhosts &&
		    tp__slurm_name_ok(dp->name) &&
		    tp_strmap_put(&used, dp->name, (uint32_t)d)) {
			sb->failed = true;
			goto out;
		}
	}
	for (size_t d = 0; multi && d < f->nnvdom; d++) {
		const tp_nvdomain_t *dp = &f->nvdom[d];
		if (!dp->multi_node || !dp->nhosts)
			continue;
		ord++;
		if (!tp__slurm_name_ok(dp->name) &&
		    !(alt[d] = made_up_block_name(&used, ord))) {
			sb->failed = true;
			goto out;
		}
	}
	tp_strbuf_printf(sb,
			 "# Slurm topology.conf (topology/block) written by "
			 "topoplace: %zu hosts, %zu blocks (%s)\n",
			 f->nhost, nb,
			 multi ? "multi-node NVLink domains"
			       : "level-1 switch groups");
	for (size_t i = 0; i < nb; i++) {
		const char *name =
		    multi ? f->nvdom[b[i].index].name : names[b[i].index];
		if (multi && alt[b[i].index]) {
			name = alt[b[i].index];
			tp_strbuf_printf(sb, "# %s: NVLink domain \"%s\"\n",
					 name, f->nvdom[b[i].index].name);
		}
		tp_strbuf_printf(sb, "BlockName=%s Nodes=", name);
		put_hosts(sb, f, b[i].hosts, b[i].nhosts);
		tp_strbuf_append(sb, "\n", 1);
		for (size_t k = 0; k < b[i].nhosts; k++)
			listed[b[i].hosts[k]] = true;
	}
	/*
	 * Without BlockSizes Slurm takes the first block's size as the base
	 * and refuses to start if a later block is smaller (one degraded rack
	 * is enough), so the smallest block is stated as the base; higher
	 * sizes double up to the block count, the aggregation Slurm does.
	 */
	if (nb) {
		tp_strbuf_printf(sb, "BlockSizes=%zu", base);
		for (int k = 1; k < MAX_BLOCK_LEVELS && ((size_t)1 << k) <= nb;
		     k++)
			tp_strbuf_printf(sb, ",%zu", base << k);
		tp_strbuf_append(sb, "\n", 1);
	}
	put_orphans(sb, f, listed,
		    multi ? "in no multi-node NVLink domain"
			  : "in no switch group (no IB link)");
out:
	tp_strmap_clear(&used);
	if (alt)
		for (size_t d = 0; d < f->nnvdom; d++)
			tp_free(alt[d]);
	tp_free(alt);
	tp_free(b);
	tp_free(listed);
}

tp_err_t tp_fabric_topology_conf(const tp_fabric_t *f, bool block,
				 char **text_p)
{
	/* The detail buffer is the only state a failing writer touches. */
	tp_fabric_t *fw = (tp_fabric_t *)f;
	tp_strbuf_t sb = {0};
	tp_stree_t tree = {0};
	char **names = NULL;
	tp_err_t err;

	if (!f || !text_p)
		return TP_ERR_INVAL;
	if (!f->finalized)
		return tp__fabric_fail(fw, TP_ERR_INVAL,
				       "topology.conf: fabric not finalized");
	if ((err = block ? group_names(f, &names) : tp_stree_conf(f, &tree)))
		return tp__fabric_fail(fw, err, "topology.conf: %s",
				       tp_strerror(err));
	if (block)
		write_block(&sb, f, names);
	else
		write_tree(&sb, f, &tree);
	free_names(f, names);
	tp_stree_free(&tree);
	tp_strbuf_append(&sb, "", 0);
	if (sb.failed) {
		tp_free(sb.buf);
		return tp__fabric_fail(fw, TP_ERR_NOMEM,
				       "topology.conf: out of memory");
	}
	*text_p = sb.buf;
	return TP_OK;
}
