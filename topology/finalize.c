/*
 * Derived model: host names, switch levels, the group hierarchy, rails,
 * NVLink domains and GPU-to-HCA affinity. Everything here is recomputed
 * from the raw switches, CAs, links and node data, so finalize can run
 * again after more data arrives, and a fabric loaded from JSON derives the
 * same hierarchy it was saved with.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

/* Natural order: "node2" < "node10". Keeps hosts listed the way admins
 * count them, independent of the order a dump happened to list CAs. */
static int natcmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			const char *sa = a, *sb = b;
			while (*sa == '0')
				sa++;
			while (*sb == '0')
				sb++;
			const char *ea = sa, *eb = sb;
			while (isdigit((unsigned char)*ea))
				ea++;
			while (isdigit((unsigned char)*eb))
				eb++;
			if (ea - sa != eb - sb)
				return (ea - sa) < (eb - sb) ? -1 : 1;
			int c = strncmp(sa, sb, (size_t)(ea - sa));
			if (c)
				return c;
			/* equal value: fewer leading zeros first */
			if ((sa - a) != (sb - b))
				return (sa - a) < (sb - b) ? -1 : 1;
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

static int host_cmp(const void *x, const void *y)
{
	return natcmp(((const tp_host_t *)x)->name,
		      ((const tp_host_t *)y)->name);
}

/* CA order within a host: rail (subnet) first, then device name, GUID. */
static const tp_fabric_t *sort_fabric;
static int ca_cmp(const void *x, const void *y)
{
	const tp_ca_t *a = &sort_fabric->ca[*(const uint32_t *)x];
	const tp_ca_t *b = &sort_fabric->ca[*(const uint32_t *)y];

	if (a->subnet != b->subnet)
		return a->subnet < b->subnet ? -1 : 1;
	if (a->dev && b->dev && strcmp(a->dev, b->dev))
		return natcmp(a->dev, b->dev);
	return a->guid < b->guid ? -1 : a->guid > b->guid;
}

/* qsort with an empty array is fine in practice but undefined for NULL. */
static void sort_n(void *base, size_t n, size_t size,
		   int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* ---- union-find ---- */

static uint32_t uf_find(uint32_t *p, uint32_t x)
{
	while (p[x] != x) {
		p[x] = p[p[x]];
		x = p[x];
	}
	return x;
}

static void uf_union(uint32_t *p, uint32_t a, uint32_t b)
{
	a = uf_find(p, a);
	b = uf_find(p, b);
	if (a != b)
		p[a < b ? b : a] = a < b ? a : b;
}

/* ---- step 1: names ---- */

/* --guid-map entries that name no CA of the fabric (used[i]: entry i
 * did), warned as the domain map's absent hosts are: a count and the
 * first in the map's order. */
static void warn_unused_guid_map(tp_fabric_t *f, const bool *used)
{
	const tp_u64map_slot_t *ex = NULL;
	size_t n = 0;

	for (size_t i = 0; i < f->guid_name->cap; i++) {
		const tp_u64map_slot_t *sl = &f->guid_name->slot[i];
		if (sl->val == TP_MAP_NONE || used[sl->val])
			continue;
		n++;
		if (!ex || sl->val < ex->val)
			ex = sl;
	}
	if (n)
		tp__fabric_warn(f,
				"%zu GUID%s of the GUID map name%s no CA of "
				"the fabric (e.g. entry \"0x%016llx %s\"): "
				"ignored",
				n, n == 1 ? "" : "s", n == 1 ? "s" : "",
				(unsigned long long)ex->key,
				f->guid_names[ex->val]);
}

/* cname[i] receives CA i's host name (borrowed from the host, whose
 * string stays put when the host array moves or is sorted). */
static tp_err_t name_cas(tp_fabric_t *f, const char **cname)
{
	size_t unnamed = 0;
	const tp_ca_t *example = NULL;
	bool *used = tp_calloc(f->nguid_names + 1, sizeof(bool));
	tp_err_t err = TP_ERR_NOMEM;

	if (!used)
		return TP_ERR_NOMEM;
	f->unnamed_cas = f->sharp_cas = 0;
	for (size_t i = 0; i < f->nca; i++) {
		tp_ca_t *c = &f->ca[i];
		char *host = NULL, *dev = NULL;
		uint32_t g = tp_u64map_get(f->guid_name, c->guid), h;

		c->host = TP_ID_NONE;
		cname[i] = NULL;
		if (g != TP_MAP_NONE)
			used[g] = true;
		if (tp__desc_is_sharp(c->desc)) {
			c->role = TP_CA_SHARP;
			f->sharp_cas++;
			continue;
		}
		err = tp__desc_hostname(c->desc, &host, &dev);
		if (err)
			goto out;
		c->dev = dev ? tp__fabric_intern(f, dev) : NULL;
		if (dev && !c->dev) {
			tp_free(dev);
			tp_free(host);
			err = TP_ERR_NOMEM;
			goto out;
		}
		tp_free(dev);
		if (g != TP_MAP_NONE) {
			tp_free(host);
			host = tp_strdup(f->guid_names[g]);
			if (!host) {
				err = TP_ERR_NOMEM;
				goto out;
			}
		}
		if (!host) {
			c->role = TP_CA_UNNAMED;
			if (!example)
				example = c;
			unnamed++;
			continue;
		}
		c->role = TP_CA_HOST;
		err = tp__fabric_host_get(f, host, true, &h);
		tp_free(host);
		if (err)
			goto out;
		cname[i] = f->host[h].name;
	}
	f->unnamed_cas = unnamed;
	if (unnamed)
		tp__fabric_warn(f,
				"%zu CA%s without a usable hostname (e.g. GUID "
				"0x%016llx \"%s\"): not hosts; name them with "
				"--guid-map",
				unnamed, unnamed == 1 ? "" : "s",
				(unsigned long long)example->guid,
				example->desc);
	warn_unused_guid_map(f, used);
	err = TP_OK;
out:
	tp_free(used);
	return err;
}

static tp_err_t sort_hosts(tp_fabric_t *f)
{
	size_t k = 1;

	/* a fabric loaded from JSON (or finalized before) comes sorted, and
	 * its name map is then still right: check in one pass */
	while (k < f->nhost && host_cmp(&f->host[k - 1], &f->host[k]) < 0)
		k++;
	if (k >= f->nhost && f->host_by_name->len == f->nhost)
		return TP_OK;
	sort_n(f->host, f->nhost, sizeof(*f->host), host_cmp);
	tp_strmap_clear(f->host_by_name);
	for (size_t i = 0; i < f->nhost; i++) {
		if (i && strcmp(f->host[i - 1].name, f->host[i].name) == 0)
			continue;
		if (tp_strmap_put(f->host_by_name, f->host[i].name,
				  (uint32_t)i))
			return TP_ERR_NOMEM;
	}
	return TP_OK;
}

/* ---- step 2: CA attachment, host CA lists ---- */

static tp_err_t attach_cas(tp_fabric_t *f, const char *const *cname)
{
	int *minport = tp_malloc(f->nca * sizeof(int));
	size_t *count = tp_calloc(f->nhost, sizeof(size_t));
	tp_err_t err = TP_ERR_NOMEM;

	if (!minport || !count)
		goto out;
	for (size_t i = 0; i < f->nca; i++) {
		tp_ca_t *c = &f->ca[i];
		c->leaf = TP_ID_NONE;
		minport[i] = 1 << 30;
		if (c->role == TP_CA_HOST) {
			c->host = tp_strmap_get(f->host_by_name, cname[i]);
			count[c->host]++;
		}
	}
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		for (int e = 0; e < 2; e++) {
			if (l->kind[e] != TP_NODE_CA ||
			    l->kind[1 - e] != TP_NODE_SWITCH)
				continue;
			uint32_t ci = l->node[e];
			if (l->port[e] < minport[ci]) {
				minport[ci] = l->port[e];
				f->ca[ci].leaf = l->node[1 - e];
			}
		}
	}
	for (size_t h = 0; h < f->nhost; h++) {
		tp_host_t *hp = &f->host[h];
		tp_free(hp->cas);
		hp->cas = NULL;
		hp->ncas = 0;
		if (count[h] &&
		    !(hp->cas = tp_malloc(count[h] * sizeof(uint32_t))))
			goto out;
	}
	for (size_t i = 0; i < f->nca; i++)
		if (f->ca[i].role == TP_CA_HOST) {
			tp_host_t *hp = &f->host[f->ca[i].host];
			hp->cas[hp->ncas++] = (uint32_t)i;
		}
	sort_fabric = f;
	for (size_t h = 0; h < f->nhost; h++)
		sort_n(f->host[h].cas, f->host[h].ncas, sizeof(uint32_t),
		       ca_cmp);
	err = TP_OK;
out:
	tp_free(minport);
	tp_free(count);
	return err;
}

/* ---- step 3: switch levels (BFS up from the leaves) ---- */

typedef struct adj {
	size_t *off; /* CSR over switches: switch-switch neighbours */
	uint32_t *nbr;
	uint32_t *lnk;
} adj_t;

static void adj_free(adj_t *a)
{
	tp_free(a->off);
	tp_free(a->nbr);
	tp_free(a->lnk);
}

static tp_err_t adj_build(const tp_fabric_t *f, adj_t *a)
{
	size_t n = 0;

	memset(a, 0, sizeof(*a));
	a->off = tp_calloc(f->nsw + 1, sizeof(size_t));
	if (!a->off)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		if (l->kind[0] == TP_NODE_SWITCH &&
		    l->kind[1] == TP_NODE_SWITCH && l->node[0] != l->node[1]) {
			a->off[l->node[0] + 1]++;
			a->off[l->node[1] + 1]++;
			n += 2;
		}
	}
	for (size_t s = 0; s < f->nsw; s++)
		a->off[s + 1] += a->off[s];
	a->nbr = tp_malloc(n * sizeof(uint32_t));
	a->lnk = tp_malloc(n * sizeof(uint32_t));
	size_t *fill = tp_malloc((f->nsw + 1) * sizeof(size_t));
	if (!a->nbr || !a->lnk || !fill) {
		tp_free(fill);
		adj_free(a);
		return TP_ERR_NOMEM;
	}
	memcpy(fill, a->off, (f->nsw + 1) * sizeof(size_t));
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		if (l->kind[0] == TP_NODE_SWITCH &&
		    l->kind[1] == TP_NODE_SWITCH && l->node[0] != l->node[1]) {
			size_t p = fill[l->node[0]]++;
			a->nbr[p] = l->node[1];
			a->lnk[p] = (uint32_t)i;
			p = fill[l->node[1]]++;
			a->nbr[p] = l->node[0];
			a->lnk[p] = (uint32_t)i;
		}
	}
	tp_free(fill);
	return TP_OK;
}

static tp_err_t switch_levels(tp_fabric_t *f, const adj_t *a)
{
	uint32_t *queue = tp_malloc((f->nsw + 1) * sizeof(uint32_t));
	size_t head = 0, tail = 0;

	if (!queue)
		return TP_ERR_NOMEM;
	for (size_t s = 0; s < f->nsw; s++) {
		f->sw[s].level = 0;
		f->sw[s].group = TP_ID_NONE;
	}
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		for (int e = 0; e < 2; e++)
			if (l->kind[e] == TP_NODE_SWITCH &&
			    l->kind[1 - e] == TP_NODE_CA &&
			    f->ca[l->node[1 - e]].role != TP_CA_SHARP &&
			    f->sw[l->node[e]].level == 0) {
				f->sw[l->node[e]].level = 1;
				queue[tail++] = l->node[e];
			}
	}
	f->nlevels = tail ? 1 : 0;
	while (head < tail) {
		uint32_t s = queue[head++];
		for (size_t p = a->off[s]; p < a->off[s + 1]; p++) {
			uint32_t n = a->nbr[p];
			if (f->sw[n].level)
				continue;
			f->sw[n].level = f->sw[s].level + 1;
			if (f->sw[n].level > f->nlevels)
				f->nlevels = f->sw[n].level;
			queue[tail++] = n;
		}
	}
	tp_free(queue);
	return TP_OK;
}

/* Ranks: hops from the highest-level switches of each connected part (a
 * BFS down from them), which orient the cables inside a level the way an
 * updn subnet manager does (tp_fabric_switch_above). In a fat tree a
 * switch's rank is the top level minus its own; they matter where a leaf
 * hangs off another leaf or two leaves are cabled directly (plafrim). */
static tp_err_t switch_ranks(tp_fabric_t *f, const adj_t *a)
{
	uint32_t *queue = tp_malloc((f->nsw + 1) * sizeof(uint32_t));
	uint32_t *part = tp_malloc((f->nsw + 1) * sizeof(uint32_t));
	int *top = tp_calloc(f->nsw + 1, sizeof(int));
	size_t head, tail = 0;
	tp_err_t err = TP_ERR_NOMEM;

	if (!queue || !part || !top)
		goto out;
	for (size_t s = 0; s < f->nsw; s++) {
		part[s] = TP_ID_NONE;
		f->sw[s].rank = -1;
	}
	/* connected parts and the highest level in each */
	for (size_t s0 = 0; s0 < f->nsw; s0++) {
		if (part[s0] != TP_ID_NONE)
			continue;
		part[s0] = (uint32_t)s0;
		queue[0] = (uint32_t)s0;
		for (head = 0, tail = 1; head < tail; head++) {
			uint32_t s = queue[head];
			if (f->sw[s].level > top[s0])
				top[s0] = f->sw[s].level;
			for (size_t p = a->off[s]; p < a->off[s + 1]; p++)
				if (part[a->nbr[p]] == TP_ID_NONE) {
					part[a->nbr[p]] = (uint32_t)s0;
					queue[tail++] = a->nbr[p];
				}
		}
	}
	tail = 0;
	for (size_t s = 0; s < f->nsw; s++)
		if (f->sw[s].level == top[part[s]]) {
			f->sw[s].rank = 0;
			queue[tail++] = (uint32_t)s;
		}
	for (head = 0; head < tail; head++) {
		uint32_t s = queue[head];
		for (size_t p = a->off[s]; p < a->off[s + 1]; p++)
			if (f->sw[a->nbr[p]].rank < 0) {
				f->sw[a->nbr[p]].rank = f->sw[s].rank + 1;
				queue[tail++] = a->nbr[p];
			}
	}
	err = TP_OK;
out:
	tp_free(queue);
	tp_free(part);
	tp_free(top);
	return err;
}

/* ---- step 4: leaves, rails, degraded ---- */

/* Whether host hp's leaves are on several subnets. */
static bool spans_subnets(const tp_fabric_t *f, const tp_host_t *hp)
{
	for (size_t i = 1; i < hp->nleaves; i++)
		if (f->sw[hp->leaves[i]].subnet != f->sw[hp->leaves[0]].subnet)
			return true;
	return false;
}

/* Whether the hosts on several subnets are under a tenth of the cabled
 * hosts: then they are gateways (plafrim2's head node, 1 of 97 hosts, on
 * two networks), where a fabric whose subnets are rails has its GPU hosts
 * on all of them (a mixed cluster's 4 two-rail hosts of 9 are not
 * gateways). Gateways neither set the rail count nor join leaves into
 * groups. */
static bool few_spanning(const tp_fabric_t *f)
{
	size_t multi = 0, cabled = 0;

	for (size_t h = 0; h < f->nhost; h++) {
		cabled += f->host[h].nleaves > 0;
		multi += spans_subnets(f, &f->host[h]);
	}
	return multi * 10 < cabled;
}

static tp_err_t host_leaves(tp_fabric_t *f)
{
	size_t degraded = 0;
	const tp_host_t *example = NULL;

	f->rails = 0;
	for (size_t h = 0; h < f->nhost; h++) {
		tp_host_t *hp = &f->host[h];
		size_t n = 0;
		tp_free(hp->leaves);
		hp->leaves = NULL;
		hp->nleaves = 0;
		if (hp->ncas &&
		    !(hp->leaves = tp_malloc(hp->ncas * sizeof(uint32_t))))
			return TP_ERR_NOMEM;
		for (size_t c = 0; c < hp->ncas; c++) {
			uint32_t leaf = f->ca[hp->cas[c]].leaf;
			if (leaf != TP_ID_NONE)
				hp->leaves[n++] = leaf;
		}
		sort_n(hp->leaves, n, sizeof(uint32_t), tp_u32_cmp);
		size_t u = 0;
		for (size_t i = 0; i < n; i++)
			if (!u || hp->leaves[u - 1] != hp->leaves[i])
				hp->leaves[u++] = hp->leaves[i];
		hp->nleaves = u;
	}
	/* rails: the most leaves a host is cabled to, gateways left out (a
	 * head node on both subnets of a two-subnet fabric made every other
	 * host "degraded") */
	bool few = f->gateways = few_spanning(f);
	for (int pass = 0; pass < 2 && !f->rails; pass++)
		for (size_t h = 0; h < f->nhost; h++) {
			const tp_host_t *hp = &f->host[h];
			if (!pass && few && spans_subnets(f, hp))
				continue;
			if ((int)hp->nleaves > f->rails)
				f->rails = (int)hp->nleaves;
		}
	for (size_t h = 0; h < f->nhost; h++) {
		tp_host_t *hp = &f->host[h];
		hp->degraded = (int)hp->nleaves < f->rails;
		if (hp->degraded) {
			degraded++;
			if (!example)
				example = hp;
		}
	}
	f->degraded = degraded;
	if (degraded)
		tp__fabric_warn(f,
				"%zu host%s cabled to fewer than %d leaf "
				"switch%s (e.g. %s: %zu): marked degraded",
				degraded, degraded == 1 ? "" : "s", f->rails,
				f->rails == 1 ? "" : "es", example->name,
				example->nleaves);
	return TP_OK;
}

/* The rails of host hp's CAs from their leaves (a host missing a CA):
 * each CA the rail
 * most of the complete hosts' CAs on its leaf are on, when more than half
 * are and no other CA of hp has it; *ok_p false (nothing set) when a CA
 * has no such rail. *cnt_p: the complete hosts' CAs per leaf and rail,
 * then per leaf in all (nsw * (maxcas + 1)), counted on the first call. */
static tp_err_t leaf_rails(tp_fabric_t *f, const tp_host_t *hp, size_t maxcas,
			   uint32_t **cnt_p, bool *ok_p)
{
	uint32_t *cnt = *cnt_p, *tot;

	*ok_p = false;
	if (!cnt) {
		if (!(cnt = *cnt_p = tp_calloc(f->nsw * (maxcas + 1) + 1,
					       sizeof(uint32_t))))
			return TP_ERR_NOMEM;
		tot = cnt + f->nsw * maxcas;
		for (size_t h = 0; h < f->nhost; h++)
			for (size_t x = 0;
			     f->host[h].ncas == maxcas && x < f->host[h].ncas;
			     x++) {
				const tp_ca_t *c = &f->ca[f->host[h].cas[x]];
				if (c->leaf == TP_ID_NONE)
					continue;
				cnt[c->leaf * maxcas + x]++;
				tot[c->leaf]++;
			}
	}
	tot = cnt + f->nsw * maxcas;
	/* written as found; the caller rewrites them all when !*ok_p */
	for (size_t x = 0; x < hp->ncas; x++) {
		tp_ca_t *c = &f->ca[hp->cas[x]];
		if (c->leaf == TP_ID_NONE)
			return TP_OK;
		const uint32_t *row = &cnt[c->leaf * maxcas];
		size_t best = 0;
		for (size_t r = 1; r < maxcas; r++)
			if (row[r] > row[best])
				best = r;
		if (2 * row[best] <= tot[c->leaf])
			return TP_OK;
		for (size_t y = 0; y < x; y++)
			if (f->ca[hp->cas[y]].rail == (int)best)
				return TP_OK;
		c->rail = (int)best;
	}
	*ok_p = true;
	return TP_OK;
}

/* Each host CA's rail (tp_ca_t.rail): rails are positions, so a host
 * missing one CA (the SuperPOD dump's a05 hosts have no HCA-5) would put
 * its later CAs on the rails of the others' earlier ones (HCA-6 beside
 * HCA-5s, a leaf apart). Its CAs take the rails the complete hosts have
 * on their leaves instead (leaf_rails: the cabling says where its
 * traffic goes; the dump's ubuntu host has mlx5_0 and mlx5_1 on the
 * rail 2 and 3 leaves, where complete hosts name mlx5_0 and mlx5_1 their
 * rails 0 and 1); where a leaf has no majority (the A09 leaves have no
 * complete host), the position the complete hosts give their device
 * names; where names are not known there, or would share a rail, its
 * positions. */
static tp_err_t ca_rails(tp_fabric_t *f)
{
	tp_strmap_t names = {0};
	uint32_t *votes = NULL, *lcnt = NULL;
	size_t maxcas = 0, nnames = 0, cap = 0;
	tp_err_t err = TP_OK;

	for (size_t i = 0; i < f->nca; i++)
		f->ca[i].rail = -1;
	for (size_t h = 0; h < f->nhost; h++) {
		const tp_host_t *hp = &f->host[h];
		for (size_t x = 0; x < hp->ncas; x++)
			f->ca[hp->cas[x]].rail =
			    f->nsubnets > 1 ? f->ca[hp->cas[x]].subnet : (int)x;
		if (hp->ncas > maxcas)
			maxcas = hp->ncas;
	}
	/* one rail (a fat tree, jabl's 2-CA host beside 1-CA ones): a CA's
	 * name says nothing of a rail, positions stand */
	if (f->nsubnets > 1 || maxcas < 2 || f->rails < 2)
		return TP_OK;
	/* votes[name * maxcas + position] over the hosts with every CA */
	for (size_t h = 0; h < f->nhost; h++) {
		const tp_host_t *hp = &f->host[h];
		for (size_t x = 0; hp->ncas == maxcas && x < hp->ncas; x++) {
			const char *dev = f->ca[hp->cas[x]].dev;
			uint32_t k;
			if (!dev)
				continue;
			if ((k = tp_strmap_get(&names, dev)) == TP_MAP_NONE) {
				void *p = votes;
				if (tp_grow(&p, &cap, (nnames + 1) * maxcas,
					    sizeof(uint32_t)) ||
				    tp_strmap_put(&names, dev,
						  (uint32_t)nnames)) {
					votes = p;
					err = TP_ERR_NOMEM;
					goto out;
				}
				votes = p;
				memset(votes + nnames * maxcas, 0,
				       maxcas * sizeof(uint32_t));
				k = (uint32_t)nnames++;
			}
			votes[k * maxcas + x]++;
		}
	}
	for (size_t h = 0; h < f->nhost; h++) {
		const tp_host_t *hp = &f->host[h];
		bool part = hp->ncas > 0 && hp->ncas < maxcas, ok = false;
		if (part && (err = leaf_rails(f, hp, maxcas, &lcnt, &ok)))
			goto out;
		if (ok)
			continue;
		ok = part;
		for (size_t x = 0; ok && x < hp->ncas; x++) {
			const char *dev = f->ca[hp->cas[x]].dev;
			uint32_t k =
			    dev ? tp_strmap_get(&names, dev) : TP_MAP_NONE;
			size_t best = 0;
			ok = k != TP_MAP_NONE;
			for (size_t r = 1; ok && r < maxcas; r++)
				if (votes[k * maxcas + r] >
				    votes[k * maxcas + best])
					best = r;
			/* a rail another of the host's CAs took already */
			for (size_t y = 0; ok && y < x; y++)
				ok = f->ca[hp->cas[y]].rail != (int)best;
			if (ok)
				f->ca[hp->cas[x]].rail = (int)best;
		}
		for (size_t x = 0; !ok && x < hp->ncas; x++)
			f->ca[hp->cas[x]].rail = (int)x;
	}
out:
	tp_strmap_clear(&names);
	tp_free(votes);
	tp_free(lcnt);
	return err;
}

/* A complete host's CA on a leaf where most CAs serve another rail: a
 * cable swapped between rails (the SuperPOD dump's b08-p1-dgx-08-c01 has
 * HCA-5 on an HCA-6 leaf and HCA-6 on an HCA-5 leaf). NCCL keeps a
 * channel on its NIC's rail, so that rail's traffic to and from the host
 * crosses the spines (the cost model prices it so). Warned with a count
 * and the first; hosts with fewer CAs (a management server cabled where
 * ports were free) are not judged. */
static tp_err_t warn_cross_rail(tp_fabric_t *f)
{
	size_t maxcas = 0, n = 0, hosts = 0;
	uint32_t *cnt, *tot, first = TP_ID_NONE;

	for (size_t h = 0; h < f->nhost; h++)
		if (f->host[h].ncas > maxcas)
			maxcas = f->host[h].ncas;
	if (f->nsubnets > 1 || f->rails < 2 || maxcas < 2 || maxcas > 64)
		return TP_OK;
	cnt = tp_calloc(f->nsw * maxcas + 1, sizeof(uint32_t));
	tot = tp_calloc(f->nsw + 1, sizeof(uint32_t));
	if (!cnt || !tot) {
		tp_free(cnt);
		tp_free(tot);
		return TP_ERR_NOMEM;
	}
	for (size_t i = 0; i < f->nca; i++) {
		const tp_ca_t *c = &f->ca[i];
		if (c->rail >= 0 && (size_t)c->rail < maxcas &&
		    c->leaf != TP_ID_NONE) {
			cnt[c->leaf * maxcas + (size_t)c->rail]++;
			tot[c->leaf]++;
		}
	}
	for (size_t h = 0; h < f->nhost; h++) {
		const tp_host_t *hp = &f->host[h];
		size_t k = 0;
		for (size_t x = 0; hp->ncas == maxcas && x < hp->ncas; x++) {
			const tp_ca_t *c = &f->ca[hp->cas[x]];
			if (c->leaf == TP_ID_NONE || c->rail < 0)
				continue;
			const uint32_t *row = &cnt[c->leaf * maxcas];
			for (size_t r = 0; r < maxcas; r++)
				if ((int)r != c->rail &&
				    2 * row[r] > tot[c->leaf]) {
					if (first == TP_ID_NONE)
						first = hp->cas[x];
					k++;
				}
		}
		n += k;
		hosts += k > 0;
	}
	if (n) {
		const tp_ca_t *c = &f->ca[first];
		const uint32_t *row = &cnt[c->leaf * maxcas];
		size_t r = 0;
		while (2 * row[r] <= tot[c->leaf])
			r++;
		tp__fabric_warn(
		    f,
		    "%zu CA%s of %zu host%s cabled to another rail's leaf "
		    "(e.g. '%s' on '%s', where %u of %u CAs are on rail %zu, "
		    "it on %d): a cable swapped between rails? that rail's "
		    "transfers to and from the host cross the spines",
		    n, n == 1 ? "" : "s", hosts, hosts == 1 ? "" : "s", c->desc,
		    f->sw[c->leaf].desc, row[r], tot[c->leaf], r, c->rail);
	}
	tp_free(cnt);
	tp_free(tot);
	return TP_OK;
}

/* ---- step 5: group hierarchy ---- */

static tp_err_t group_push(tp_fabric_t *f, size_t *cap, int level,
			   uint32_t **sw_p, size_t nsw, uint32_t *idx_p)
{
	void *arr = f->group;
	tp_group_t *g;

	if (tp_grow(&arr, cap, f->ngroup + 1, sizeof(tp_group_t)))
		return TP_ERR_NOMEM;
	f->group = arr;
	g = &f->group[f->ngroup];
	memset(g, 0, sizeof(*g));
	g->level = level;
	g->parent = TP_ID_NONE;
	g->switches = *sw_p;
	g->nswitches = nsw;
	*sw_p = NULL;
	*idx_p = (uint32_t)f->ngroup++;
	return TP_OK;
}

/* Link capacity of group g's switches towards level lv (0: the hosts). */
static double group_capacity(const tp_fabric_t *f, const adj_t *a,
			     const double *ca_gbps, const tp_group_t *g, int lv)
{
	double sum = 0;

	for (size_t i = 0; i < g->nswitches; i++) {
		uint32_t s = g->switches[i];
		if (lv == 0) {
			sum += ca_gbps[s];
			continue;
		}
		for (size_t p = a->off[s]; p < a->off[s + 1]; p++) {
			uint32_t u = a->nbr[p];
			if (f->sw[u].level == lv)
				sum += f->link[a->lnk[p]].gbps;
		}
	}
	return sum;
}

/* The switches of group g's level that g reaches going up the cables
 * inside that level (tp_fabric_switch_above), with every switch of each
 * group met on the way: g's own first. Into out[] (room for every
 * switch); mark[] holds stamp for the switches taken (one stamp a group).
 * Uses the groups' sw.group of that level. */
static size_t up_closure(const tp_fabric_t *f, const adj_t *a,
			 const tp_group_t *g, uint32_t *out, uint32_t *mark,
			 uint32_t stamp)
{
	size_t n = 0;

	for (size_t i = 0; i < g->nswitches; i++) {
		mark[g->switches[i]] = stamp;
		out[n++] = g->switches[i];
	}
	for (size_t head = 0; head < n; head++) {
		uint32_t s = out[head];
		for (size_t p = a->off[s]; p < a->off[s + 1]; p++) {
			uint32_t u = a->nbr[p];
			if (mark[u] == stamp || f->sw[u].level != g->level ||
			    !tp_fabric_switch_above(f, u, s))
				continue;
			const tp_group_t *h = f->sw[u].group < f->ngroup
						  ? &f->group[f->sw[u].group]
						  : NULL;
			for (size_t i = 0; h && i < h->nswitches; i++)
				if (mark[h->switches[i]] != stamp) {
					mark[h->switches[i]] = stamp;
					out[n++] = h->switches[i];
				}
			if (mark[u] != stamp) {
				mark[u] = stamp;
				out[n++] = u;
			}
		}
	}
	return n;
}

static tp_err_t build_groups(tp_fabric_t *f, const adj_t *a)
{
	/* groups: at most one a switch, and each parent without switches
	 * takes two groups or more of the level below */
	size_t maxg = 2 * f->nsw + 2;
	uint32_t *uf = tp_malloc((f->nsw + 1) * sizeof(uint32_t));
	uint32_t *root_group = tp_malloc((f->nsw + 1) * sizeof(uint32_t));
	uint32_t *close = tp_malloc((f->nsw + 1) * sizeof(uint32_t));
	uint32_t *mark = tp_calloc(f->nsw + 1, sizeof(uint32_t));
	uint32_t *guf = tp_malloc(maxg * sizeof(uint32_t));
	uint32_t *gup = tp_malloc(maxg * sizeof(uint32_t));
	uint32_t *vroot = tp_malloc(maxg * sizeof(uint32_t));
	size_t *gcnt = tp_calloc(maxg, sizeof(size_t));
	double *ca_gbps = tp_calloc(f->nsw + 1, sizeof(double));
	size_t *count = NULL;
	size_t cap = 0, first, last;
	tp_err_t err = TP_ERR_NOMEM;

	f->ngroup_levels = 0;
	for (size_t h = 0; h < f->nhost; h++)
		for (int l = 0; l < TP_MAX_LEVELS; l++)
			f->host[h].group[l] = TP_ID_NONE;
	if (!uf || !root_group || !close || !mark || !guf || !gup || !vroot ||
	    !gcnt || !ca_gbps)
		goto out;
	for (size_t g = 0; g < maxg; g++)
		vroot[g] = TP_ID_NONE;
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		for (int e = 0; e < 2; e++)
			if (l->kind[e] == TP_NODE_SWITCH &&
			    l->kind[1 - e] == TP_NODE_CA &&
			    f->ca[l->node[1 - e]].role != TP_CA_SHARP)
				ca_gbps[l->node[e]] += l->gbps;
	}

	/* Level 1: leaves joined by the hosts cabled to them. */
	for (size_t s = 0; s < f->nsw; s++) {
		uf[s] = (uint32_t)s;
		root_group[s] = TP_ID_NONE;
	}
	/* a gateway (few_spanning: plafrim2's head node on both subnets)
	 * joins none: its second subnet's leaf would put that subnet's
	 * hosts in a group, and under spines, of the first */
	for (size_t h = 0; h < f->nhost; h++)
		for (size_t i = 1;
		     i < f->host[h].nleaves &&
		     !(f->gateways && spans_subnets(f, &f->host[h]));
		     i++)
			uf_union(uf, f->host[h].leaves[0],
				 f->host[h].leaves[i]);
	/* groups are numbered in host order: stable for the same fabric */
	for (size_t h = 0; h < f->nhost; h++) {
		tp_host_t *hp = &f->host[h];
		if (!hp->nleaves)
			continue;
		uint32_t r = uf_find(uf, hp->leaves[0]);
		if (root_group[r] == TP_ID_NONE) {
			uint32_t *sw = NULL;
			size_t n = 0, c2 = 0;
			for (size_t s = 0; s < f->nsw; s++)
				if (f->sw[s].level == 1 &&
				    uf_find(uf, (uint32_t)s) == r) {
					void *p = sw;
					if (tp_grow(&p, &c2, n + 1,
						    sizeof(uint32_t))) {
						tp_free(sw);
						goto out;
					}
					sw = p;
					sw[n++] = (uint32_t)s;
				}
			if (group_push(f, &cap, 1, &sw, n, &root_group[r])) {
				tp_free(sw);
				goto out;
			}
		}
		hp->group[0] = root_group[r];
	}
	first = 0;
	last = f->ngroup;
	if (last)
		f->ngroup_levels = 1;

	/* Level k+1: level-k groups joined by the switches above them, found
	 * from every level-k switch the group's own reach going up the cables
	 * inside level k (a leaf hanging off another leaf is under that
	 * leaf's spines). Groups that reach no switch above but one another
	 * (two leaves cabled directly) get a parent without switches. */
	for (int lv = 1; lv < TP_MAX_LEVELS && first < last; lv++) {
		for (size_t g = first; g < last; g++)
			for (size_t i = 0; i < f->group[g].nswitches; i++)
				f->sw[f->group[g].switches[i]].group =
				    (uint32_t)g;
		/* uf over level-(lv+1) switches, keyed by switch index, and
		 * over the level-lv groups without one (guf) */
		for (size_t s = 0; s < f->nsw; s++) {
			uf[s] = (uint32_t)s;
			root_group[s] = TP_ID_NONE;
		}
		for (size_t g = first; g < last; g++) {
			guf[g] = (uint32_t)g;
			gup[g] = TP_ID_NONE;
		}
		bool any = false;
		for (size_t g = first; g < last; g++) {
			size_t n = up_closure(f, a, &f->group[g], close, mark,
					      (uint32_t)g + 1);
			for (size_t i = 0; i < n; i++) {
				uint32_t s = close[i];
				for (size_t p = a->off[s]; p < a->off[s + 1];
				     p++) {
					uint32_t u = a->nbr[p];
					if (f->sw[u].level != lv + 1)
						continue;
					if (gup[g] != TP_ID_NONE)
						uf_union(uf, gup[g], u);
					else
						gup[g] = u;
				}
			}
			/* closure groups without a switch above: none has */
			for (size_t i = 0; gup[g] == TP_ID_NONE && i < n; i++)
				if (f->sw[close[i]].group != g &&
				    f->sw[close[i]].group != TP_ID_NONE)
					uf_union(guf, (uint32_t)g,
						 f->sw[close[i]].group);
		}
		for (size_t g = first; g < last; g++)
			gcnt[g] = 0;
		for (size_t g = first; g < last; g++)
			if (gup[g] == TP_ID_NONE)
				gcnt[uf_find(guf, (uint32_t)g)]++;
		for (size_t g = first; g < last; g++)
			any |= gup[g] != TP_ID_NONE || gcnt[g] > 1;
		if (!any)
			break;
		size_t next_first = f->ngroup;
		for (size_t g = first; g < last; g++) {
			uint32_t up = gup[g], *slot;
			if (up != TP_ID_NONE) {
				slot = &root_group[uf_find(uf, up)];
			} else {
				uint32_t r = uf_find(guf, (uint32_t)g);
				if (gcnt[r] < 2)
					continue; /* a top on its own */
				slot = &vroot[r];
			}
			if (*slot == TP_ID_NONE) {
				uint32_t *sw = NULL;
				size_t n = 0, c2 = 0;
				for (size_t s = 0;
				     up != TP_ID_NONE && s < f->nsw; s++)
					if (f->sw[s].level == lv + 1 &&
					    uf_find(uf, (uint32_t)s) ==
						uf_find(uf, up)) {
						void *p = sw;
						if (tp_grow(&p, &c2, n + 1,
							    sizeof(uint32_t))) {
							tp_free(sw);
							goto out;
						}
						sw = p;
						sw[n++] = (uint32_t)s;
					}
				if (group_push(f, &cap, lv + 1, &sw, n, slot)) {
					tp_free(sw);
					goto out;
				}
			}
			f->group[g].parent = *slot;
		}
		for (size_t g = first; g < last; g++)
			vroot[g] = TP_ID_NONE;
		first = next_first;
		last = f->ngroup;
		if (last > first)
			f->ngroup_levels = lv + 1;
	}
	for (size_t g = first; g < last; g++)
		for (size_t i = 0; i < f->group[g].nswitches; i++)
			f->sw[f->group[g].switches[i]].group = (uint32_t)g;

	/* hosts per group through the parent chain */
	for (size_t h = 0; h < f->nhost; h++) {
		tp_host_t *hp = &f->host[h];
		uint32_t g = hp->group[0];
		for (int l = 1; g != TP_ID_NONE && l < TP_MAX_LEVELS; l++) {
			g = f->group[g].parent;
			hp->group[l] = g;
		}
	}
	if (!(count = tp_calloc(f->ngroup + 1, sizeof(size_t))))
		goto out;
	for (size_t h = 0; h < f->nhost; h++)
		for (int l = 0; l < TP_MAX_LEVELS; l++)
			if (f->host[h].group[l] != TP_ID_NONE)
				count[f->host[h].group[l]]++;
	for (size_t g = 0; g < f->ngroup; g++)
		if (count[g] && !(f->group[g].hosts =
				      tp_malloc(count[g] * sizeof(uint32_t))))
			goto out;
	for (size_t h = 0; h < f->nhost; h++)
		for (int l = 0; l < TP_MAX_LEVELS; l++) {
			uint32_t g = f->host[h].group[l];
			if (g != TP_ID_NONE)
				f->group[g].hosts[f->group[g].nhosts++] =
				    (uint32_t)h;
		}
	for (size_t g = 0; g < f->ngroup; g++)
		f->group[g].down_gbps = group_capacity(
		    f, a, ca_gbps, &f->group[g], f->group[g].level - 1);
	for (size_t l = 0; l < f->nlink; l++) {
		uint32_t up[2];
		size_t n = tp_fabric_link_upgroups(f, l, up);
		for (size_t i = 0; i < n; i++)
			f->group[up[i]].up_gbps += f->link[l].gbps;
	}
	/* a parent without switches: down, its groups' cables to one
	 * another, once */
	for (size_t g = 0; g < f->ngroup; g++) {
		const tp_group_t *gp = &f->group[g];
		if (gp->parent != TP_ID_NONE && !f->group[gp->parent].nswitches)
			f->group[gp->parent].down_gbps += gp->up_gbps / 2;
	}
	err = TP_OK;
out:
	tp_free(uf);
	tp_free(root_group);
	tp_free(close);
	tp_free(mark);
	tp_free(guf);
	tp_free(gup);
	tp_free(vroot);
	tp_free(gcnt);
	tp_free(count);
	tp_free(ca_gbps);
	return err;
}

/* ---- step 6: GPUs and NVLink domains ---- */

static tp_err_t default_gpus(tp_fabric_t *f, int n)
{
	for (size_t h = 0; h < f->nhost && n > 0; h++) {
		tp_host_t *hp = &f->host[h];
		if (hp->ngpus || hp->has_node_data)
			continue;
		hp->gpus = tp_calloc((size_t)n, sizeof(tp_gpu_t));
		if (!hp->gpus)
			return TP_ERR_NOMEM;
		hp->ngpus = (size_t)n;
		for (int g = 0; g < n; g++) {
			hp->gpus[g].index = g;
			hp->gpus[g].numa = -1;
			hp->gpus[g].hca = -1;
		}
	}
	return TP_OK;
}

static void gpu_affinity(tp_fabric_t *f)
{
	size_t unmatched = 0;
	const tp_host_t *ex = NULL;
	const char *ex_nic = NULL;

	for (size_t h = 0; h < f->nhost; h++) {
		tp_host_t *hp = &f->host[h];
		const char *named = NULL;
		bool matched = false;
		for (size_t g = 0; g < hp->ngpus; g++) {
			tp_gpu_t *gp = &hp->gpus[g];
			gp->hca = -1;
			if (!hp->ncas)
				continue;
			if (gp->nic)
				for (size_t c = 0; c < hp->ncas; c++) {
					const char *dev = f->ca[hp->cas[c]].dev;
					if (dev && strcmp(dev, gp->nic) == 0) {
						gp->hca = (int)c;
						break;
					}
				}
			matched |= gp->hca >= 0;
			if (gp->nic && !named)
				named = gp->nic;
			if (gp->hca < 0)
				gp->hca = (int)(g * hp->ncas / hp->ngpus);
		}
		/* one NIC not found is a NIC whose cable is down; none
		 * found is another naming */
		if (named && !matched && hp->ncas && !unmatched++) {
			ex = hp;
			ex_nic = named;
		}
	}
	/* node data names the GPUs' nearest NICs (mlx5_2) so that none is
	 * one of the host's CAs (descriptions naming HCA-3): spread evenly,
	 * and said */
	if (unmatched)
		tp__fabric_warn(f,
				"%zu %s GPUs name NICs the fabric does not "
				"call so (e.g. %s: %s, its CAs '%s'...): "
				"their GPUs are spread evenly over the CAs",
				unmatched, unmatched == 1 ? "host's" : "hosts'",
				ex->name, ex_nic,
				f->ca[ex->cas[0]].dev ? f->ca[ex->cas[0]].dev
						      : "?");
}

static tp_err_t nvdom_push(tp_fabric_t *f, size_t *cap, const char *name,
			   bool multi)
{
	void *arr = f->nvdom;
	tp_nvdomain_t *d;

	if (tp_grow(&arr, cap, f->nnvdom + 1, sizeof(tp_nvdomain_t)))
		return TP_ERR_NOMEM;
	f->nvdom = arr;
	d = &f->nvdom[f->nnvdom];
	memset(d, 0, sizeof(*d));
	if (!(d->name = tp_strdup(name)))
		return TP_ERR_NOMEM;
	d->multi_node = multi;
	f->nnvdom++;
	return TP_OK;
}

static tp_err_t nvdom_add_host(tp_nvdomain_t *d, uint32_t h)
{
	uint32_t *p = tp_realloc(d->hosts, (d->nhosts + 1) * sizeof(uint32_t));

	if (!p)
		return TP_ERR_NOMEM;
	d->hosts = p;
	d->hosts[d->nhosts++] = h;
	return TP_OK;
}

static int str_ptr_cmp(const void *x, const void *y)
{
	return natcmp(*(char *const *)x, *(char *const *)y);
}

/* Domains of the map none of whose hosts is in the fabric are dropped:
 * an empty one would still count as a multi-node domain, while Slurm's
 * topology/block gets no block for it. */
static void drop_empty_nvdomains(tp_fabric_t *f)
{
	size_t n = 0, nempty = 0;
	const char *ex = NULL;

	for (size_t d = 0; d < f->nnvdom; d++)
		if (!f->nvdom[d].nhosts && !nempty++)
			ex = f->nvdom[d].name;
	if (!nempty)
		return;
	if (nempty == 1)
		tp__fabric_warn(f,
				"no host of NVLink domain %s (domain map) is "
				"in the fabric: domain not created",
				ex);
	else
		tp__fabric_warn(f,
				"no host of %zu NVLink domains of the domain "
				"map (e.g. %s) is in the fabric: not created",
				nempty, ex);
	for (size_t d = 0; d < f->nnvdom; d++) {
		tp_nvdomain_t *dp = &f->nvdom[d];
		if (!dp->nhosts) {
			tp_free(dp->name);
			tp_free(dp->hosts);
			continue;
		}
		for (size_t i = 0; i < dp->nhosts; i++)
			f->host[dp->hosts[i]].nvdomain = (uint32_t)n;
		f->nvdom[n++] = *dp;
	}
	f->nnvdom = n;
}

static tp_err_t build_nvdomains(tp_fabric_t *f)
{
	size_t cap = 0, unknown = 0;
	const char *unknown_ex = NULL;
	char **names = NULL;
	size_t nnames = 0;
	tp_strmap_t dom_of[1] = {{0}};
	tp_err_t err = TP_ERR_NOMEM;

	for (size_t h = 0; h < f->nhost; h++)
		f->host[h].nvdomain = TP_ID_NONE;
	/* distinct domain names (a map holds one entry per host, up to
	 * 65,536), sorted; then each entry finds its domain by name:
	 * O(entries + domains log domains), not a sort of every entry and
	 * a scan of every domain per entry */
	if (f->ndom_entries) {
		names = tp_malloc(f->ndom_entries * sizeof(char *));
		if (!names)
			return TP_ERR_NOMEM;
		for (size_t i = 0; i < f->ndom_entries; i++) {
			if (tp_strmap_get(dom_of, f->dom_name[i]) !=
			    TP_MAP_NONE)
				continue;
			if (tp_strmap_put(dom_of, f->dom_name[i], 0))
				goto out;
			names[nnames++] = f->dom_name[i];
		}
		sort_n(names, nnames, sizeof(char *), str_ptr_cmp);
	}
	for (size_t i = 0; i < nnames; i++)
		if (nvdom_push(f, &cap, names[i], true) ||
		    tp_strmap_put(dom_of, names[i], (uint32_t)(f->nnvdom - 1)))
			goto out;
	for (size_t i = 0; i < f->ndom_entries; i++) {
		uint32_t h = tp_strmap_get(f->host_by_name, f->dom_host[i]);
		uint32_t d = tp_strmap_get(dom_of, f->dom_name[i]);
		if (h == TP_MAP_NONE) {
			if (!unknown++)
				unknown_ex = f->dom_host[i];
			continue;
		}
		if (nvdom_add_host(&f->nvdom[d], h))
			goto out;
		f->host[h].nvdomain = d;
	}
	for (size_t d = 0; d < f->nnvdom; d++)
		sort_n(f->nvdom[d].hosts, f->nvdom[d].nhosts, sizeof(uint32_t),
		       tp_u32_cmp);
	if (unknown)
		tp__fabric_warn(
		    f,
		    "%zu host%s in the NVLink domain map not in the "
		    "fabric (e.g. %s): ignored",
		    unknown, unknown == 1 ? "" : "s", unknown_ex);
	drop_empty_nvdomains(f);
	for (size_t h = 0; h < f->nhost; h++) {
		tp_host_t *hp = &f->host[h];
		if (hp->nvdomain != TP_ID_NONE || !hp->ngpus)
			continue;
		if (nvdom_push(f, &cap, hp->name, false) ||
		    nvdom_add_host(&f->nvdom[f->nnvdom - 1], (uint32_t)h))
			goto out;
		hp->nvdomain = (uint32_t)(f->nnvdom - 1);
	}
	err = TP_OK;
out:
	tp_strmap_clear(dom_of);
	tp_free(names);
	return err;
}

/* The width or lane rate assumed where the fabric knows none at all: an
 * ibnetdiscover prints "???" for a speed newer than it knows. */
#define ASSUMED_WIDTH 4
#define ASSUMED_LANE  50.0 /* HDR */

/* The most common known value among the links' widths (lane false) or
 * lane rates, 0 when no link knows one. */
static double common_rate(const tp_fabric_t *f, bool lane)
{
	double val[16] = {0};
	size_t cnt[16] = {0}, nv = 0, best = 0;

	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		double v = lane ? l->lane_gbps : (double)l->width;
		size_t k = 0;
		if (!tp_link_rate_known(l))
			continue;
		while (k < nv && val[k] != v)
			k++;
		if (k == nv) {
			if (nv == 16)
				continue; /* more rates than any fabric has */
			val[nv++] = v;
		}
		cnt[k]++;
	}
	for (size_t k = 1; k < nv; k++)
		if (cnt[k] > cnt[best] ||
		    (cnt[k] == cnt[best] && val[k] > val[best]))
			best = k;
	return nv ? val[best] : 0;
}

/* A link whose width or lane rate no end gave (an ibnetdiscover "4x
 * ???", a walk that could not read the port) carries, for the cost model,
 * what the fabric's most common link does, else 4x HDR: priced as
 * nothing, it was a dead cable and its hosts could never hold a job. Its
 * width and lane_gbps stay unknown (0): fabric diff and the health rules
 * judge no rate against an assumption. */
static void assume_rates(tp_fabric_t *f)
{
	double w = 0, ln = 0, aw = 0, al = 0;
	size_t n = 0;

	for (size_t i = 0; i < f->nlink; i++) {
		tp_link_t *l = &f->link[i];
		if (tp_link_rate_known(l))
			continue;
		if (!n++) {
			w = common_rate(f, false);
			ln = common_rate(f, true);
			aw = w > 0 ? w : ASSUMED_WIDTH;
			al = ln > 0 ? ln : ASSUMED_LANE;
		}
		l->gbps = (l->width > 0 ? l->width : aw) *
			  (l->lane_gbps > 0 ? l->lane_gbps : al);
	}
	if (n)
		tp__fabric_warn(
		    f,
		    "%zu link%s of unknown width or speed priced "
		    "as %dx %s, %s",
		    n, n == 1 ? "" : "s", (int)aw, tp_ib_speed_name(al),
		    w > 0 && ln > 0 ? "the fabric's most common"
				    : "an assumption (no link gives one)");
}

tp_err_t tp_fabric_finalize(tp_fabric_t *f, const tp_finalize_opts_t *opts)
{
	adj_t a;
	tp_err_t err;

	if (!f)
		return TP_ERR_INVAL;
	tp__fabric_free_derived(f);
	/* finalize may run repeatedly: its own warnings are recomputed, and
	 * logged only when they are new (tp__fabric_warn looks at the last
	 * run's, kept here until this one ends) */
	char **prev = f->fwarn;
	size_t nprev = f->nfwarn;
	f->fwarn = NULL;
	f->nfwarn = f->capfwarn = 0;
	f->pwarn = (const char *const *)prev;
	f->npwarn = nprev;
	f->in_finalize = true;
	const char **cname = tp_malloc((f->nca + 1) * sizeof(char *));
	if (!cname) {
		err = TP_ERR_NOMEM;
		goto fail;
	}
	assume_rates(f);
	if (!(err = name_cas(f, cname)) && !(err = sort_hosts(f)))
		err = attach_cas(f, cname);
	tp_free(cname);
	if (err)
		goto fail;
	if ((err = adj_build(f, &a)))
		goto fail;
	if (!(err = switch_levels(f, &a)) && !(err = switch_ranks(f, &a)) &&
	    !(err = host_leaves(f)) && !(err = ca_rails(f)) &&
	    !(err = warn_cross_rail(f)))
		err = build_groups(f, &a);
	adj_free(&a);
	if (err)
		goto fail;
	if (opts && opts->default_gpus > 0 &&
	    (err = default_gpus(f, opts->default_gpus)))
		goto fail;
	gpu_affinity(f);
	if ((err = build_nvdomains(f)))
		goto fail;
	f->finalized = true;
	err = TP_OK;
fail:
	f->in_finalize = false;
	f->pwarn = NULL;
	f->npwarn = 0;
	for (size_t i = 0; i < nprev; i++)
		tp_free(prev[i]);
	tp_free(prev);
	if (!err)
		return TP_OK;
	return tp__fabric_fail(f, err, "finalize: %s", tp_strerror(err));
}
