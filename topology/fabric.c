/* The fabric object: storage, builder API for readers, accessors. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "topology_int.h"

/* GUIDs are unique per subnet only in theory: rails cabled as separate
 * subnets keep distinct GUIDs in practice, but a dump taken twice (two
 * files of the same subnet) must not merge with itself wrongly either, so
 * lookups are per subnet. The key mixes the subnet into the high bits of a
 * second hash round instead of widening the map. */
static uint64_t node_key(int subnet, uint64_t guid)
{
	return guid ^ ((uint64_t)(uint32_t)subnet * 0x9e3779b97f4a7c15ULL);
}

/* port 0..TP__PORTS_MAX (tp__fabric_add_link refuses others) */
static uint64_t port_key(tp_node_kind_t kind, uint32_t node, int port)
{
	return ((uint64_t)kind << 63) | ((uint64_t)node << 16) |
	       (uint64_t)(uint16_t)port;
}

tp_fabric_t *tp_fabric_create(void)
{
	return tp_calloc(1, sizeof(tp_fabric_t));
}

void tp__gpu_free_strings(tp_gpu_t *g)
{
	tp_free(g->model);
	tp_free(g->pci);
	tp_free(g->nic);
	g->model = g->pci = g->nic = NULL;
}

static void free_derived(tp_fabric_t *f)
{
	for (size_t i = 0; i < f->ngroup; i++) {
		tp_free(f->group[i].hosts);
		tp_free(f->group[i].switches);
	}
	tp_free(f->group);
	f->group = NULL;
	f->ngroup = 0;
	for (size_t i = 0; i < f->nnvdom; i++) {
		tp_free(f->nvdom[i].name);
		tp_free(f->nvdom[i].hosts);
	}
	tp_free(f->nvdom);
	f->nvdom = NULL;
	f->nnvdom = 0;
}

void tp_fabric_destroy(tp_fabric_t *f)
{
	if (!f)
		return;
	free_derived(f);
	for (size_t i = 0; i < f->nsw; i++)
		tp_free(f->sw[i].desc);
	for (size_t i = 0; i < f->nca; i++) {
		tp_free(f->ca[i].desc);
	}
	for (size_t i = 0; i < f->nhost; i++) {
		tp_host_t *h = &f->host[i];
		tp_free(h->name);
		tp_free(h->cas);
		tp_free(h->leaves);
		tp_free(h->gpus);
	}
	for (size_t i = 0; i < f->ninterned; i++)
		tp_free(f->interned[i]);
	tp_free(f->interned);
	tp_strmap_clear(f->intern_index);
	for (size_t i = 0; i < f->nguid_names; i++)
		tp_free(f->guid_names[i]);
	for (size_t i = 0; i < f->ndom_entries; i++) {
		tp_free(f->dom_name[i]);
		tp_free(f->dom_host[i]);
	}
	for (size_t i = 0; i < f->nwarn; i++)
		tp_free(f->warn[i]);
	for (size_t i = 0; i < f->nfwarn; i++)
		tp_free(f->fwarn[i]);
	tp_free(f->fwarn);
	tp_free(f->sw);
	tp_free(f->ca);
	tp_free(f->host);
	tp_free(f->link);
	tp_free(f->guid_names);
	tp_free(f->dom_name);
	tp_free(f->dom_host);
	tp_free(f->warn);
	tp_u64map_clear(f->sw_by_guid);
	tp_u64map_clear(f->ca_by_guid);
	tp_u64map_clear(f->port_link);
	tp_u64map_clear(f->guid_name);
	tp_strmap_clear(f->host_by_name);
	tp_strmap_clear(f->dom_index);
	tp_free(f);
}

void tp__fabric_free_derived(tp_fabric_t *f)
{
	free_derived(f);
}

const char *tp_fabric_error(const tp_fabric_t *f)
{
	return f ? f->err : "";
}

tp_err_t tp__fabric_fail(tp_fabric_t *f, tp_err_t err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
	tp_oneline(f->err);
	return err;
}

static void add_warning(tp_fabric_t *f, bool log, const char *fmt, va_list ap)
{
	char *msg;
	char ***list = f->in_finalize ? &f->fwarn : &f->warn;
	size_t *n = f->in_finalize ? &f->nfwarn : &f->nwarn;
	size_t *cap = f->in_finalize ? &f->capfwarn : &f->capwarn;
	void *arr = *list;

	msg = tp_oneline(tp_vasprintf(fmt, ap));
	if (!msg)
		return;
	bool seen = !log || (f->in_finalize && f->quiet_finalize);
	for (size_t i = 0; f->in_finalize && i < f->npwarn && !seen; i++)
		seen = !strcmp(f->pwarn[i], msg);
	if (!seen)
		tp__log(TP_LOG_WARN, "%s", msg);
	if (*n >= TP__MAX_WARNINGS ||
	    tp_grow(&arr, cap, *n + 1, sizeof(char *))) {
		f->warn_dropped++;
		tp_free(msg);
		return;
	}
	*list = arr;
	(*list)[(*n)++] = msg;
}

void tp__fabric_warn(tp_fabric_t *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_warning(f, true, fmt, ap);
	va_end(ap);
}

void tp__fabric_note(tp_fabric_t *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_warning(f, false, fmt, ap);
	va_end(ap);
}

int tp__fabric_new_subnet(tp_fabric_t *f)
{
	return f->nsubnets++;
}

uint32_t tp__fabric_find_node(const tp_fabric_t *f, tp_node_kind_t kind,
			      int subnet, uint64_t guid)
{
	const tp_u64map_t *m =
	    kind == TP_NODE_SWITCH ? f->sw_by_guid : f->ca_by_guid;
	return tp_u64map_get(m, node_key(subnet, guid));
}

/* A node description as the model keeps it: ASCII control bytes (a
 * hostile or damaged fabric file's newline or escape) as '?', a tab or
 * line break as a blank (it still parts the host name from the rest),
 * since every text output prints descriptions within a line; other bytes
 * stay (the JSON writer escapes what is not UTF-8). NULL on NOMEM. */
static char *desc_dup(const char *desc)
{
	char *d = tp_strdup(desc ? desc : "");

	for (char *p = d; p && *p; p++)
		if (*p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' ||
		    *p == '\f')
			*p = ' ';
		else if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return d;
}

tp_err_t tp__fabric_add_switch(tp_fabric_t *f, int subnet, uint64_t guid,
			       const char *desc, int nports, uint32_t *idx_p)
{
	uint32_t idx = tp__fabric_find_node(f, TP_NODE_SWITCH, subnet, guid);
	void *arr = f->sw;
	tp_switch_t *s;

	if (idx != TP_MAP_NONE) {
		*idx_p = idx;
		return TP_OK;
	}
	if (tp_grow(&arr, &f->capsw, f->nsw + 1, sizeof(*f->sw)))
		return TP_ERR_NOMEM;
	f->sw = arr;
	s = &f->sw[f->nsw];
	memset(s, 0, sizeof(*s));
	s->guid = guid;
	s->desc = desc_dup(desc);
	s->nports = nports;
	s->subnet = subnet;
	s->group = TP_ID_NONE;
	if (!s->desc || tp_u64map_put(f->sw_by_guid, node_key(subnet, guid),
				      (uint32_t)f->nsw)) {
		tp_free(s->desc);
		return TP_ERR_NOMEM;
	}
	*idx_p = (uint32_t)f->nsw++;
	f->finalized = false;
	return TP_OK;
}

/* Exactly n elements of elem bytes (never fewer than held). */
static tp_err_t reserve_exact(void **arr, size_t *cap_p, size_t held, size_t n,
			      size_t elem)
{
	void *p;

	if (n <= *cap_p || n < held)
		return TP_OK;
	if (n > SIZE_MAX / elem || !(p = tp_realloc(*arr, n * elem)))
		return TP_ERR_NOMEM;
	*arr = p;
	*cap_p = n;
	return TP_OK;
}

tp_err_t tp__fabric_reserve(tp_fabric_t *f, size_t nsw, size_t nca,
			    size_t nlink, size_t nhost)
{
	void *sw = f->sw, *ca = f->ca, *link = f->link, *host = f->host;
	tp_err_t err;

	err = reserve_exact(&sw, &f->capsw, f->nsw, nsw, sizeof(*f->sw));
	f->sw = sw;
	if (!err)
		err =
		    reserve_exact(&ca, &f->capca, f->nca, nca, sizeof(*f->ca));
	f->ca = ca;
	if (!err)
		err = reserve_exact(&link, &f->caplink, f->nlink, nlink,
				    sizeof(*f->link));
	f->link = link;
	if (!err)
		err = reserve_exact(&host, &f->caphost, f->nhost, nhost,
				    sizeof(*f->host));
	f->host = host;
	/* two port keys per cable */
	if (!err)
		err = tp_u64map_reserve(f->port_link, 2 * nlink);
	return err;
}

const tp_link_t *tp__fabric_port_cable(const tp_fabric_t *f, tp_node_kind_t k,
				       uint32_t node, int port)
{
	uint32_t l = port < 0 || port > TP__PORTS_MAX
			 ? TP_MAP_NONE
			 : tp_u64map_get(f->port_link, port_key(k, node, port));

	return l == TP_MAP_NONE ? NULL : &f->link[l];
}

void tp__fabric_drop_port_index(tp_fabric_t *f)
{
	tp_u64map_clear(f->port_link);
}

tp_err_t tp__fabric_add_ca(tp_fabric_t *f, int subnet, uint64_t guid,
			   const char *desc, int nports, uint32_t *idx_p)
{
	uint32_t idx = tp__fabric_find_node(f, TP_NODE_CA, subnet, guid);
	void *arr = f->ca;
	tp_ca_t *c;

	if (idx != TP_MAP_NONE) {
		*idx_p = idx;
		return TP_OK;
	}
	if (tp_grow(&arr, &f->capca, f->nca + 1, sizeof(*f->ca)))
		return TP_ERR_NOMEM;
	f->ca = arr;
	c = &f->ca[f->nca];
	memset(c, 0, sizeof(*c));
	c->guid = guid;
	c->desc = desc_dup(desc);
	c->nports = nports;
	c->subnet = subnet;
	c->role = TP_CA_UNNAMED;
	c->host = TP_ID_NONE;
	c->leaf = TP_ID_NONE;
	if (!c->desc || tp_u64map_put(f->ca_by_guid, node_key(subnet, guid),
				      (uint32_t)f->nca)) {
		tp_free(c->desc);
		return TP_ERR_NOMEM;
	}
	*idx_p = (uint32_t)f->nca++;
	f->finalized = false;
	return TP_OK;
}

tp_err_t tp__fabric_add_link(tp_fabric_t *f, tp_node_kind_t ka, uint32_t a,
			     int pa, tp_node_kind_t kb, uint32_t b, int pb,
			     int width, double lane_gbps, bool active,
			     bool *added_p)
{
	uint64_t k1 = port_key(ka, a, pa), k2 = port_key(kb, b, pb);
	uint32_t l1, l2;
	void *arr = f->link;
	tp_link_t *l;

	/* a wider port would meet another in the index (65537 is 1) */
	for (int e = 0; e < 2; e++) {
		int p = e ? pb : pa;
		if (p < 0 || p > TP__PORTS_MAX)
			return tp__fabric_fail(
			    f, TP_ERR_RANGE, "%s %u port %d: ports go up to %d",
			    (e ? kb : ka) == TP_NODE_SWITCH ? "switch" : "CA",
			    e ? b : a, p, TP__PORTS_MAX);
	}

	if (f->nlink && !f->port_link->len) {
		/* dropped by tp__fabric_drop_port_index */
		tp_err_t err = tp_u64map_reserve(f->port_link, 2 * f->nlink);
		for (size_t i = 0; !err && i < f->nlink; i++)
			for (int e = 0; !err && e < 2; e++)
				err =
				    tp_u64map_put(f->port_link,
						  port_key(f->link[i].kind[e],
							   f->link[i].node[e],
							   f->link[i].port[e]),
						  (uint32_t)i);
		if (err) {
			tp_u64map_clear(f->port_link);
			return err;
		}
	}
	l1 = tp_u64map_get(f->port_link, k1);
	l2 = tp_u64map_get(f->port_link, k2);
	if (added_p)
		*added_p = false;
	if (l1 != TP_MAP_NONE || l2 != TP_MAP_NONE) {
		/* Same cable seen from its other end. The ends may disagree
		 * on width when a link trained down; trust the narrower, and
		 * likewise the slower lane (which end is read first must not
		 * decide between two known figures). An unknown figure (0)
		 * gives way to a known one, whichever end is read first. */
		if (l1 == l2) {
			l = &f->link[l1];
			if (width > 0 && (width < l->width || l->width <= 0))
				l->width = width;
			if (lane_gbps > 0 &&
			    (lane_gbps < l->lane_gbps || !(l->lane_gbps > 0)))
				l->lane_gbps = lane_gbps;
			l->gbps = l->width * l->lane_gbps;
			return TP_OK;
		}
		return TP_ERR_EXISTS;
	}
	if (tp_grow(&arr, &f->caplink, f->nlink + 1, sizeof(*f->link)))
		return TP_ERR_NOMEM;
	f->link = arr;
	if (tp_u64map_put(f->port_link, k1, (uint32_t)f->nlink) ||
	    tp_u64map_put(f->port_link, k2, (uint32_t)f->nlink))
		return TP_ERR_NOMEM;
	l = &f->link[f->nlink++];
	l->kind[0] = ka;
	l->node[0] = a;
	l->port[0] = pa;
	l->kind[1] = kb;
	l->node[1] = b;
	l->port[1] = pb;
	l->width = width;
	l->lane_gbps = lane_gbps;
	l->gbps = width * lane_gbps;
	l->active = active;
	f->finalized = false;
	if (added_p)
		*added_p = true;
	return TP_OK;
}

tp_err_t tp__fabric_host_get(tp_fabric_t *f, const char *name, bool create,
			     uint32_t *idx_p)
{
	uint32_t idx = tp_strmap_get(f->host_by_name, name);
	void *arr = f->host;
	tp_host_t *h;

	if (idx != TP_MAP_NONE) {
		*idx_p = idx;
		return TP_OK;
	}
	if (!create)
		return TP_ERR_NOTFOUND;
	if (!tp__name_ok(name))
		return TP_ERR_INVAL;
	if (tp_grow(&arr, &f->caphost, f->nhost + 1, sizeof(*f->host)))
		return TP_ERR_NOMEM;
	f->host = arr;
	h = &f->host[f->nhost];
	memset(h, 0, sizeof(*h));
	h->name = tp_strdup(name);
	h->nvdomain = TP_ID_NONE;
	for (int l = 0; l < TP_MAX_LEVELS; l++)
		h->group[l] = TP_ID_NONE;
	if (!h->name ||
	    tp_strmap_put(f->host_by_name, h->name, (uint32_t)f->nhost)) {
		tp_free(h->name);
		return TP_ERR_NOMEM;
	}
	*idx_p = (uint32_t)f->nhost++;
	f->finalized = false;
	return TP_OK;
}

char *tp__fabric_intern(tp_fabric_t *f, const char *s)
{
	uint32_t i = tp_strmap_get(f->intern_index, s);
	void *arr = f->interned;
	char *c;

	if (i != TP_MAP_NONE)
		return f->interned[i];
	if (tp_grow(&arr, &f->capinterned, f->ninterned + 1, sizeof(char *)))
		return NULL;
	f->interned = arr;
	if (!(c = tp_strdup(s)))
		return NULL;
	if (tp_strmap_put(f->intern_index, c, (uint32_t)f->ninterned)) {
		tp_free(c);
		return NULL;
	}
	return f->interned[f->ninterned++] = c;
}

/* *s_p by the fabric's copy; the reader's string is freed. */
static bool intern_own(tp_fabric_t *f, char **s_p)
{
	char *c;

	if (!*s_p)
		return true;
	c = tp__fabric_intern(f, *s_p);
	tp_free(*s_p);
	*s_p = c;
	return c != NULL;
}

tp_err_t tp__fabric_host_set_gpus(tp_fabric_t *f, uint32_t host, tp_gpu_t *gpus,
				  size_t ngpus)
{
	tp_host_t *h = &f->host[host];
	bool ok = true;

	for (size_t g = 0; g < ngpus; g++) {
		ok = intern_own(f, &gpus[g].model) && ok;
		ok = intern_own(f, &gpus[g].pci) && ok;
		ok = intern_own(f, &gpus[g].nic) && ok;
	}
	if (!ok) {
		tp_free(gpus);
		return TP_ERR_NOMEM;
	}
	tp_free(h->gpus);
	h->gpus = gpus;
	h->ngpus = ngpus;
	h->has_node_data = true;
	f->finalized = false;
	return TP_OK;
}

tp_err_t tp__fabric_domain_add(tp_fabric_t *f, const char *domain,
			       const char *host)
{
	void *a1 = f->dom_name, *a2 = f->dom_host;
	size_t cap1 = f->capdom, cap2 = f->capdom;
	char *d, *h;

	if (!tp__name_ok(domain) || !tp__name_ok(host))
		return TP_ERR_INVAL;
	if (f->dom_indexed != f->ndom_entries) {
		tp_strmap_clear(f->dom_index);
		f->dom_indexed = 0;
		for (; f->dom_indexed < f->ndom_entries; f->dom_indexed++)
			if (tp_strmap_put(f->dom_index,
					  f->dom_host[f->dom_indexed],
					  (uint32_t)f->dom_indexed))
				return TP_ERR_NOMEM;
	}
	if (tp_strmap_get(f->dom_index, host) != TP_MAP_NONE)
		return TP_ERR_EXISTS;
	if (tp_grow(&a1, &cap1, f->ndom_entries + 1, sizeof(char *)))
		return TP_ERR_NOMEM;
	f->dom_name = a1;
	if (tp_grow(&a2, &cap2, f->ndom_entries + 1, sizeof(char *)))
		return TP_ERR_NOMEM;
	f->dom_host = a2;
	f->capdom = cap1 < cap2 ? cap1 : cap2;
	d = tp_strdup(domain);
	h = tp_strdup(host);
	if (!d || !h) {
		tp_free(d);
		tp_free(h);
		return TP_ERR_NOMEM;
	}
	if (tp_strmap_put(f->dom_index, h, (uint32_t)f->ndom_entries)) {
		tp_free(d);
		tp_free(h);
		return TP_ERR_NOMEM;
	}
	f->dom_name[f->ndom_entries] = d;
	f->dom_host[f->ndom_entries] = h;
	f->ndom_entries++;
	f->dom_indexed++;
	f->finalized = false;
	return TP_OK;
}

/* ---- accessors ---- */

size_t tp_fabric_nswitches(const tp_fabric_t *f)
{
	return f->nsw;
}
size_t tp_fabric_ncas(const tp_fabric_t *f)
{
	return f->nca;
}
size_t tp_fabric_port_guid_cas(const tp_fabric_t *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->nca; i++)
		n += f->ca[i].by_port_guid;
	return n;
}
void tp_fabric_set_port_guid_cas(tp_fabric_t *f, bool on)
{
	if (f)
		f->walk_port_guids = on;
}
size_t tp_fabric_nhosts(const tp_fabric_t *f)
{
	return f->nhost;
}
size_t tp_fabric_nlinks(const tp_fabric_t *f)
{
	return f->nlink;
}
size_t tp_fabric_ngroups(const tp_fabric_t *f)
{
	return f->ngroup;
}
size_t tp_fabric_nnvdomains(const tp_fabric_t *f)
{
	return f->nnvdom;
}
int tp_fabric_nsubnets(const tp_fabric_t *f)
{
	return f->nsubnets;
}
int tp_fabric_nlevels(const tp_fabric_t *f)
{
	return f->nlevels;
}
int tp_fabric_ngroup_levels(const tp_fabric_t *f)
{
	return f->ngroup_levels;
}
int tp_fabric_rails(const tp_fabric_t *f)
{
	return f->rails;
}
size_t tp_fabric_unnamed_cas(const tp_fabric_t *f)
{
	return f->unnamed_cas;
}
size_t tp_fabric_sharp_cas(const tp_fabric_t *f)
{
	return f->sharp_cas;
}
size_t tp_fabric_degraded_hosts(const tp_fabric_t *f)
{
	return f->degraded;
}
size_t tp_fabric_nwarnings(const tp_fabric_t *f)
{
	return f->nwarn + f->nfwarn;
}

const tp_switch_t *tp_fabric_switch(const tp_fabric_t *f, size_t i)
{
	return i < f->nsw ? &f->sw[i] : NULL;
}

bool tp_fabric_switch_above(const tp_fabric_t *f, uint32_t a, uint32_t b)
{
	if (!f || a >= f->nsw || b >= f->nsw || a == b)
		return false;
	const tp_switch_t *x = &f->sw[a], *y = &f->sw[b];
	if (x->level < 1 || y->level < 1)
		return false;
	if (x->level != y->level)
		return x->level == y->level + 1;
	return x->rank != y->rank ? x->rank < y->rank : a < b;
}

size_t tp_fabric_link_upgroups(const tp_fabric_t *f, size_t l, uint32_t up[2])
{
	if (!f || l >= f->nlink)
		return 0;
	const tp_link_t *k = &f->link[l];
	if (k->kind[0] != TP_NODE_SWITCH || k->kind[1] != TP_NODE_SWITCH ||
	    k->node[0] >= f->nsw || k->node[1] >= f->nsw)
		return 0;
	const tp_switch_t *a = &f->sw[k->node[0]], *b = &f->sw[k->node[1]];
	const tp_switch_t *lo, *hi;
	if (tp_fabric_switch_above(f, k->node[0], k->node[1]))
		lo = b, hi = a;
	else if (tp_fabric_switch_above(f, k->node[1], k->node[0]))
		lo = a, hi = b;
	else
		return 0;
	if (lo->group >= f->ngroup ||
	    (a->level == b->level && a->group == b->group))
		return 0;
	up[0] = lo->group;
	uint32_t p = f->group[lo->group].parent;
	if (a->level != b->level || hi->group >= f->ngroup || p == TP_ID_NONE ||
	    f->group[hi->group].parent != p || f->group[p].nswitches)
		return 1;
	up[1] = hi->group;
	return 2;
}

const tp_ca_t *tp_fabric_ca(const tp_fabric_t *f, size_t i)
{
	return i < f->nca ? &f->ca[i] : NULL;
}

const tp_host_t *tp_fabric_host(const tp_fabric_t *f, size_t i)
{
	return i < f->nhost ? &f->host[i] : NULL;
}

const tp_link_t *tp_fabric_link(const tp_fabric_t *f, size_t i)
{
	return i < f->nlink ? &f->link[i] : NULL;
}

static uint64_t fnv_mix(uint64_t h, uint64_t v)
{
	for (int b = 0; b < 8; b++) {
		h ^= (v >> (8 * b)) & 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t tp_fabric_link_end_guid(const tp_fabric_t *f, const tp_link_t *k,
				 int e)
{
	return k->kind[e] == TP_NODE_SWITCH ? f->sw[k->node[e]].guid
					    : f->ca[k->node[e]].guid;
}

uint64_t tp_fabric_links_digest(const tp_fabric_t *f)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = fnv_mix(h, f->nlink);
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		for (int e = 0; e < 2; e++) {
			h = fnv_mix(h, (uint64_t)l->kind[e]);
			h = fnv_mix(h, tp_fabric_link_end_guid(f, l, e));
			h = fnv_mix(h, (uint64_t)(uint32_t)l->port[e]);
		}
	}
	return h;
}

void tp_fabric_links_digest_hex(const tp_fabric_t *f,
				char out[TP_LINKS_DIGEST_LEN])
{
	snprintf(out, TP_LINKS_DIGEST_LEN, "%016" PRIx64,
		 tp_fabric_links_digest(f));
}

const tp_group_t *tp_fabric_group(const tp_fabric_t *f, size_t i)
{
	return i < f->ngroup ? &f->group[i] : NULL;
}

const tp_nvdomain_t *tp_fabric_nvdomain(const tp_fabric_t *f, size_t i)
{
	return i < f->nnvdom ? &f->nvdom[i] : NULL;
}

const char *tp_fabric_warning(const tp_fabric_t *f, size_t i)
{
	if (i < f->nwarn)
		return f->warn[i];
	i -= f->nwarn;
	return i < f->nfwarn ? f->fwarn[i] : NULL;
}

uint32_t tp_fabric_host_find(const tp_fabric_t *f, const char *name)
{
	return tp_strmap_get(f->host_by_name, name);
}

tp_err_t tp_fabric_hosts_find(const tp_fabric_t *f, const char *const *names,
			      size_t n, uint32_t *idx, size_t *bad_p)
{
	uint8_t *seen;
	tp_err_t err = TP_OK;
	size_t i;

	if (!(seen = tp_calloc(f->nhost + 1, 1)))
		return TP_ERR_NOMEM;
	for (i = 0; i < n && !err; i++) {
		if (!names[i])
			err = TP_ERR_INVAL;
		else if ((idx[i] = tp_fabric_host_find(f, names[i])) >=
			 f->nhost)
			err = TP_ERR_NOTFOUND; /* TP_ID_NONE too */
		else if (seen[idx[i]]++)
			err = TP_ERR_EXISTS;
	}
	if (err && bad_p)
		*bad_p = i - 1;
	tp_free(seen);
	return err;
}

size_t tp_fabric_switches_at(const tp_fabric_t *f, int level)
{
	size_t n = 0;

	for (size_t i = 0; i < f->nsw; i++)
		n += f->sw[i].level == level;
	return n;
}

size_t tp_fabric_groups_at(const tp_fabric_t *f, int level)
{
	size_t n = 0;

	for (size_t i = 0; i < f->ngroup; i++)
		n += f->group[i].level == level;
	return n;
}

size_t tp_fabric_total_gpus(const tp_fabric_t *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->nhost; i++)
		n += f->host[i].ngpus;
	return n;
}

int tp_host_rank_ca(const tp_host_t *h, uint32_t l, uint32_t g)
{
	if (!h->ncas || !g)
		return -1;
	if (l < h->ngpus && h->gpus[l].hca >= 0 &&
	    (size_t)h->gpus[l].hca < h->ncas)
		return h->gpus[l].hca;
	return (int)((size_t)l * h->ncas / g);
}

/* The port of link l's end at CA ca. */
static int ca_port(const tp_link_t *l, uint32_t ca)
{
	return l->kind[0] == TP_NODE_CA && l->node[0] == ca ? l->port[0]
							    : l->port[1];
}

void tp_fabric_ca_cables(const tp_fabric_t *f, uint32_t *link)
{
	for (size_t i = 0; i < f->nca; i++)
		link[i] = TP_ID_NONE;
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		for (int e = 0; e < 2; e++) {
			uint32_t ca = l->node[e];
			if (l->kind[e] != TP_NODE_CA ||
			    l->kind[1 - e] != TP_NODE_SWITCH ||
			    f->ca[ca].leaf != l->node[1 - e])
				continue;
			if (link[ca] == TP_ID_NONE ||
			    l->port[e] < ca_port(&f->link[link[ca]], ca))
				link[ca] = (uint32_t)i;
		}
	}
}

/* Gb/s of CA ca's cable (ca_link: tp_fabric_ca_cables()), 0 when it is
 * down or missing. */
static double cable_gbps(const tp_fabric_t *f, const uint32_t *ca_link,
			 uint32_t ca)
{
	const tp_link_t *l =
	    ca_link[ca] == TP_ID_NONE ? NULL : &f->link[ca_link[ca]];

	return l && l->active && l->gbps > 0 ? l->gbps : 0;
}

bool tp_fabric_rank_weights(const tp_fabric_t *f, const uint32_t *ca_link,
			    const uint32_t *hosts, size_t n, uint32_t g,
			    uint32_t *w)
{
	double d[TP_MAX_RANK_WEIGHTS], most = 0;
	int ca_of[TP_MAX_RANK_WEIGHTS];
	bool even = true;

	if (!n || !g || g > TP_MAX_RANK_WEIGHTS)
		return false;
	for (uint32_t l = 0; l < g; l++)
		d[l] = INFINITY;
	for (size_t i = 0; i < n; i++) {
		const tp_host_t *h = &f->host[hosts[i]];
		for (uint32_t l = 0; l < g; l++)
			ca_of[l] = tp_host_rank_ca(h, l, g);
		for (uint32_t l = 0; l < g; l++) {
			uint32_t share = 0;
			double r;
			if (ca_of[l] < 0 ||
			    !((r = cable_gbps(f, ca_link, h->cas[ca_of[l]])) >
			      0))
				return false;
			for (uint32_t m = 0; m < g; m++)
				share += ca_of[m] == ca_of[l];
			if (r / share < d[l])
				d[l] = r / share;
		}
	}
	for (uint32_t l = 0; l < g; l++) {
		even = even && d[l] == d[0];
		most = d[l] > most ? d[l] : most;
	}
	if (even)
		return false;
	for (uint32_t l = 0; l < g; l++) {
		long x = lround(TP_RANK_WEIGHT * d[l] / most);
		w[l] = x < 1 ? 1 : (uint32_t)x;
	}
	return true;
}
