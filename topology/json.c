/*
 * topoplace-fabric/1: the JSON contract between discovery, the plugins, the
 * runtime and the tests. Raw data (switches, CAs, links, hosts' node data,
 * GUID names, NVLink domain entries, reader warnings) is authoritative;
 * derived data (levels, ranks, groups, rails) is written for scripts and
 * recomputed on load, so a file can never disagree with itself.
 *
 * Written and read directly (tp_strbuf out, flat tokens in) rather than
 * through a DOM: a 65,536-host fabric is ~30 MB of JSON and must load in
 * well under a second.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jscan_int.h"
#include "topology_int.h"

/* ---- save ---- */

static void put_lit(tp_strbuf_t *sb, const char *s)
{
	tp_strbuf_append(sb, s, strlen(s));
}

/*
 * A JSON string. Descriptions come from dumps and node-name maps that
 * may have been edited in another encoding (a Latin-1 0xE9); the file
 * must stay UTF-8 (RFC 8259; Python's json.load refuses it otherwise),
 * so each byte that starts no well-formed sequence is written as U+FFFD,
 * the replacement character. It is written as itself, not escaped, so
 * that save(load(save(f))) stays byte-identical.
 */
static void put_str(tp_strbuf_t *sb, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	put_lit(sb, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x80) {
			size_t n = tp_utf8_len(s);
			if (n) {
				s += n - 1;
				continue;
			}
		} else if (c >= 0x20 && c != '"' && c != '\\') {
			continue;
		}
		tp_strbuf_append(sb, run, (size_t)(s - run));
		run = s + 1;
		switch (c) {
		case '"':
			put_lit(sb, "\\\"");
			break;
		case '\\':
			put_lit(sb, "\\\\");
			break;
		case '\n':
			put_lit(sb, "\\n");
			break;
		case '\r':
			put_lit(sb, "\\r");
			break;
		case '\t':
			put_lit(sb, "\\t");
			break;
		default:
			if (c >= 0x80) {
				put_lit(sb, TP_UTF8_REPLACEMENT);
			} else {
				char u[6] = {'\\', 'u',		'0',
					     '0',  hex[c >> 4], hex[c & 15]};
				tp_strbuf_append(sb, u, 6);
			}
		}
	}
	tp_strbuf_append(sb, run, (size_t)(s - run));
	put_lit(sb, "\"");
}

static void put_guid(tp_strbuf_t *sb, uint64_t g)
{
	tp_strbuf_printf(sb, "\"0x%016llx\"", (unsigned long long)g);
}

static void put_key(tp_strbuf_t *sb, bool first, const char *key)
{
	tp_strbuf_printf(sb, "%s\"%s\":", first ? "" : ",", key);
}

static void put_host(tp_strbuf_t *sb, const tp_fabric_t *f, const tp_host_t *h)
{
	put_lit(sb, "{\"name\":");
	put_str(sb, h->name);
	tp_strbuf_printf(sb, ",\"node_data\":%s,\"gpus\":[",
			 h->has_node_data ? "true" : "false");
	for (size_t g = 0; g < h->ngpus; g++) {
		const tp_gpu_t *gp = &h->gpus[g];
		tp_strbuf_printf(sb, "%s{\"index\":%d", g ? "," : "",
				 gp->index);
		if (gp->model) {
			put_key(sb, false, "model");
			put_str(sb, gp->model);
		}
		if (gp->pci) {
			put_key(sb, false, "pci");
			put_str(sb, gp->pci);
		}
		tp_strbuf_printf(sb, ",\"numa\":%d", gp->numa);
		if (gp->nic) {
			put_key(sb, false, "nic");
			put_str(sb, gp->nic);
		}
		put_key(sb, false, "nvlink_gbps");
		tp_strbuf_num(sb, gp->nvlink_gbps);
		tp_strbuf_printf(sb, ",\"hca\":%d}", gp->hca);
	}
	/* derived, for scripts; ignored on load */
	tp_strbuf_printf(sb, "],\"degraded\":%s,\"groups\":[",
			 h->degraded ? "true" : "false");
	for (int l = 0; l < f->ngroup_levels; l++) {
		if (h->group[l] == TP_ID_NONE)
			tp_strbuf_printf(sb, "%snull", l ? "," : "");
		else
			tp_strbuf_printf(sb, "%s%u", l ? "," : "", h->group[l]);
	}
	put_lit(sb, "]}");
}

static void put_fabric(tp_strbuf_t *sb, const tp_fabric_t *f)
{
	tp_strbuf_printf(sb, "{\"format\":\"%s\",\"subnets\":%d,\"switches\":[",
			 TP_FABRIC_FORMAT, f->nsubnets);
	for (size_t i = 0; i < f->nsw; i++) {
		const tp_switch_t *s = &f->sw[i];
		put_lit(sb, i ? ",{\"guid\":" : "{\"guid\":");
		put_guid(sb, s->guid);
		put_key(sb, false, "desc");
		put_str(sb, s->desc);
		tp_strbuf_printf(sb,
				 ",\"ports\":%d,\"subnet\":%d,\"level\":%d,"
				 "\"rank\":%d}",
				 s->nports, s->subnet, s->level, s->rank);
	}
	put_lit(sb, "],\"cas\":[");
	for (size_t i = 0; i < f->nca; i++) {
		const tp_ca_t *c = &f->ca[i];
		put_lit(sb, i ? ",{\"guid\":" : "{\"guid\":");
		put_guid(sb, c->guid);
		put_key(sb, false, "desc");
		put_str(sb, c->desc);
		tp_strbuf_printf(sb, ",\"ports\":%d,\"subnet\":%d%s}",
				 c->nports, c->subnet,
				 c->by_port_guid ? ",\"port_guid\":true" : "");
	}
	/* links are most of a big fabric: one compact array each,
	 * [kind_a, node_a, port_a, kind_b, node_b, port_b, width, lane_gbps,
	 * active] (the loader also takes the object form) */
	put_lit(sb, "],\"links\":[");
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		tp_strbuf_printf(
		    sb, "%s[\"%s\",%u,%d,\"%s\",%u,%d,%d,", i ? "," : "",
		    l->kind[0] == TP_NODE_SWITCH ? "switch" : "ca", l->node[0],
		    l->port[0], l->kind[1] == TP_NODE_SWITCH ? "switch" : "ca",
		    l->node[1], l->port[1], l->width);
		tp_strbuf_num(sb, l->lane_gbps);
		tp_strbuf_printf(sb, ",%s]", l->active ? "true" : "false");
	}
	put_lit(sb, "],\"hosts\":[");
	for (size_t i = 0; i < f->nhost; i++) {
		if (i)
			put_lit(sb, ",");
		put_host(sb, f, &f->host[i]);
	}
	put_lit(sb, "],\"guid_map\":[");
	/* map slots are in hash order: emit in the order names were read */
	uint64_t *guids =
	    f->nguid_names ? tp_calloc(f->nguid_names, sizeof(uint64_t)) : NULL;
	if (f->nguid_names && !guids) {
		sb->failed = true;
		return;
	}
	for (size_t i = 0; i < f->guid_name->cap; i++)
		if (f->guid_name->slot[i].val < f->nguid_names)
			guids[f->guid_name->slot[i].val] =
			    f->guid_name->slot[i].key;
	for (size_t n = 0; n < f->nguid_names; n++) {
		put_lit(sb, n ? ",{\"guid\":" : "{\"guid\":");
		put_guid(sb, guids[n]);
		put_key(sb, false, "name");
		put_str(sb, f->guid_names[n]);
		put_lit(sb, "}");
	}
	tp_free(guids);
	put_lit(sb, "],\"nvlink_domains\":[");
	for (size_t i = 0; i < f->ndom_entries; i++) {
		put_lit(sb, i ? ",{\"domain\":" : "{\"domain\":");
		put_str(sb, f->dom_name[i]);
		put_key(sb, false, "host");
		put_str(sb, f->dom_host[i]);
		put_lit(sb, "}");
	}
	put_lit(sb, "],\"warnings\":[");
	for (size_t i = 0; i < f->nwarn; i++) {
		if (i)
			put_lit(sb, ",");
		put_str(sb, f->warn[i]);
	}
	tp_strbuf_printf(
	    sb, "],\"derived\":{\"rails\":%d,\"levels\":%d,\"groups\":[",
	    f->rails, f->nlevels);
	for (size_t i = 0; i < f->ngroup; i++) {
		const tp_group_t *g = &f->group[i];
		tp_strbuf_printf(
		    sb, "%s{\"level\":%d,\"parent\":", i ? "," : "", g->level);
		if (g->parent == TP_ID_NONE)
			put_lit(sb, "null");
		else
			tp_strbuf_printf(sb, "%u", g->parent);
		tp_strbuf_printf(sb, ",\"hosts\":%zu,\"switches\":[",
				 g->nhosts);
		for (size_t s = 0; s < g->nswitches; s++)
			tp_strbuf_printf(sb, "%s%u", s ? "," : "",
					 g->switches[s]);
		put_lit(sb, "],\"down_gbps\":");
		tp_strbuf_num(sb, g->down_gbps);
		put_lit(sb, ",\"up_gbps\":");
		tp_strbuf_num(sb, g->up_gbps);
		put_lit(sb, "}");
	}
	put_lit(sb, "]}}\n");
}

tp_err_t tp_fabric_to_json(const tp_fabric_t *f, char **json_p)
{
	tp_strbuf_t sb = {0};

	if (!f || !f->finalized)
		return TP_ERR_INVAL;
	put_fabric(&sb, f);
	if (sb.failed || !sb.buf) {
		tp_free(sb.buf);
		return TP_ERR_NOMEM;
	}
	*json_p = sb.buf;
	return TP_OK;
}

tp_err_t tp_fabric_save_json(const tp_fabric_t *f, const char *path)
{
	char *text;
	FILE *fp;
	tp_err_t err = tp_fabric_to_json(f, &text);

	if (err)
		return err;
	fp = fopen(path, "w");
	if (!fp) {
		tp_free(text);
		return TP_ERR_IO;
	}
	size_t n = strlen(text);
	bool ok = fwrite(text, 1, n, fp) == n;
	ok = (fclose(fp) == 0) && ok;
	tp_free(text);
	return ok ? TP_OK : TP_ERR_IO;
}

/* ---- load ---- */

/* The members the loader reads, in the order it reads them: a member's
 * checks need those before it (subnets, then nodes, then cables). */
enum {
	K_FORMAT,
	K_SUBNETS,
	K_SWITCHES,
	K_CAS,
	K_LINKS,
	K_HOSTS,
	K_GUID_MAP,
	K_NVLINK_DOMAINS,
	K_WARNINGS,
	K_N
};
static const char *const member[K_N] = {
    "format", "subnets",  "switches",	    "cas",	"links",
    "hosts",  "guid_map", "nvlink_domains", "warnings",
};

size_t tp__fabric_max_items = TP_FABRIC_MAX_ITEMS;

typedef struct loader {
	const char *name;
	tp_fabric_t *f;
	tp__jstream_t *s;
	tp__jmark_t mark[K_N];
	char *err;
} loader_t;

/* The loader's first error, "name: message" (tp_first_error). */
#define lfail(ld_, code_, ...)                                                 \
	tp_first_error(&(ld_)->err, (ld_)->name, (code_), __VA_ARGS__)

#define FOR_ITEMS(d, v, arr)                                                   \
	for (uint32_t v = tp__jfirst(d, arr); v != TP_J_NONE;                  \
	     v = tp__jnext(d, v, false, arr))

/* A stream failure: "name: line: [where: ]what near byte N" for bad
 * JSON (the writer puts a fabric on one line: the byte locates it), where
 * the member and item being read ("links[12]"), or NULL. */
static tp_err_t sfail(loader_t *ld, tp_err_t err, const char *where)
{
	const tp__jstream_t *s = ld->s;
	char key[TP_EXCERPT_SIZE];

	if (err != TP_ERR_PARSE)
		return lfail(ld, err, "%s", tp_strerror(err));
	if (s->errkey)
		return lfail(ld, err,
			     "%zu: %s%s%s \"%s\" given twice near byte "
			     "%llu",
			     s->errline, where ? where : "", where ? ": " : "",
			     where ? "key" : "top-level key",
			     tp_excerpt(s->errkey, key, sizeof(key)),
			     (unsigned long long)s->erroff);
	return lfail(ld, err, "%zu: %s%s%s near byte %llu", s->errline,
		     where ? where : "", where ? ": " : "", s->errmsg,
		     (unsigned long long)s->erroff);
}

typedef tp_err_t (*item_fn_t)(loader_t *ld, const tp__jdoc_t *d, int i);

/* fn on each item of member k, an array; each item is a document of its
 * own (root token 0). */
static tp_err_t each_item(loader_t *ld, int k, item_fn_t fn)
{
	const tp__jdoc_t *d;
	tp_err_t err = TP_ERR_FORMAT;
	int i = 0;

	if (ld->mark[k].found)
		err = tp__jstream_array(ld->s, &ld->mark[k]);
	if (err == TP_ERR_FORMAT)
		return lfail(ld, TP_ERR_PARSE,
			     "\"%s\": missing or not an array", member[k]);
	while (!err && !(err = tp__jstream_next(ld->s, &d)) && d)
		if ((err = fn(ld, d, i++)))
			return err;
	if (err) {
		char where[64];
		snprintf(where, sizeof(where), "%s[%d]", member[k], i);
		return sfail(ld, err, where);
	}
	return TP_OK;
}

/* Member k's value as a document (root token 0), NULL when absent. */
static tp_err_t scalar(loader_t *ld, int k, const tp__jdoc_t **d_p)
{
	tp_err_t err;

	*d_p = NULL;
	if (ld->mark[k].found &&
	    (err = tp__jstream_value(ld->s, &ld->mark[k], d_p)))
		return sfail(ld, err, member[k]);
	return TP_OK;
}

/* Finite only: JSON has no infinity, but 1e999 reads as one, and an
 * infinite nvlink_gbps or lane rate would price every transfer at 0 s. */
static bool num_of(const tp__jdoc_t *d, uint32_t v, double *x)
{
	if (tp__jtype(d, v) != TP_J_NUM || !isfinite(d->tok[v].v.num))
		return false;
	*x = d->tok[v].v.num;
	return true;
}

static bool int_of(const tp__jdoc_t *d, uint32_t v, long lo, long hi, long *x)
{
	double n;

	if (!num_of(d, v, &n) || n != floor(n) || n < (double)lo ||
	    n > (double)hi)
		return false;
	*x = (long)n;
	return true;
}

static bool get_int(const tp__jdoc_t *d, uint32_t o, const char *key, long lo,
		    long hi, long *x)
{
	return int_of(d, tp__jget(d, o, key), lo, hi, x);
}

static const char *get_str(const tp__jdoc_t *d, uint32_t o, const char *key)
{
	return tp__jstr(d, tp__jget(d, o, key));
}

static bool is_bool(const tp__jdoc_t *d, uint32_t v)
{
	return tp__jtype(d, v) == TP_J_TRUE || tp__jtype(d, v) == TP_J_FALSE;
}

static tp_err_t load_node(loader_t *ld, const tp__jdoc_t *d, int i, bool sw)
{
	static const char *const keys[] = {"guid", "desc", "ports", "subnet",
					   "port_guid"};
	const char *what = sw ? "switches" : "cas";
	uint32_t v[5];
	long ports, subnet;
	uint64_t guid;
	uint32_t idx;
	tp_err_t err;

	tp__jgetv(d, 0, keys, 5, v);
	const char *gs = tp__jstr(d, v[0]), *desc = tp__jstr(d, v[1]);
	if (!gs || !tp_parse_guid(gs, &guid))
		return lfail(ld, TP_ERR_PARSE,
			     "%s[%d].guid: expected a hex GUID string", what,
			     i);
	/* as the ibnetdiscover reader says: a zeroed or edited file, where
	 * every node of GUID 0 would be one */
	if (!guid)
		return lfail(ld, TP_ERR_PARSE,
			     "%s[%d].guid: GUID 0 (no InfiniBand node or port "
			     "has it)",
			     what, i);
	if (!desc)
		return lfail(ld, TP_ERR_PARSE, "%s[%d].desc: expected a string",
			     what, i);
	/* a CA read from an ibnetdiscover -p dump (tp_ca_t.by_port_guid) */
	if (v[4] != TP_J_NONE && (sw || !is_bool(d, v[4])))
		return lfail(ld, TP_ERR_PARSE, "%s[%d].port_guid: %s", what, i,
			     sw ? "a CA's key, not a switch's"
				: "expected true or false");
	/* generated fabrics may hold logical switches wider than IB's
	 * 8-bit port numbers (a director as one node, a big spine for
	 * a scale study); the ibsim writer refuses those */
	if (!int_of(d, v[2], sw, TP__PORTS_MAX, &ports))
		return lfail(ld, TP_ERR_PARSE,
			     "%s[%d].ports: expected an integer %d..%d", what,
			     i, sw, TP__PORTS_MAX);
	if (!ld->f->nsubnets)
		return lfail(ld, TP_ERR_PARSE,
			     "%s[%d]: a subnet, where \"subnets\" says 0", what,
			     i);
	if (!int_of(d, v[3], 0, ld->f->nsubnets - 1, &subnet))
		return lfail(ld, TP_ERR_PARSE,
			     "%s[%d].subnet: expected an integer 0..%d", what,
			     i, ld->f->nsubnets - 1);
	/* switches load first: a CA's GUID may not be one of theirs (one
	 * node, both kinds: cabled to itself) */
	uint32_t other =
	    sw ? TP_MAP_NONE
	       : tp__fabric_find_node(ld->f, TP_NODE_SWITCH, (int)subnet, guid);
	if (other != TP_MAP_NONE)
		return lfail(ld, TP_ERR_PARSE,
			     "cas[%d]: GUID %s is both a switch (switches[%u]) "
			     "and a CA in subnet %ld",
			     i, gs, other, subnet);
	size_t before = sw ? ld->f->nsw : ld->f->nca;
	err = sw ? tp__fabric_add_switch(ld->f, (int)subnet, guid, desc,
					 (int)ports, &idx)
		 : tp__fabric_add_ca(ld->f, (int)subnet, guid, desc, (int)ports,
				     &idx);
	if (err)
		return lfail(ld, err, "%s[%d]: %s", what, i, tp_strerror(err));
	if ((sw ? ld->f->nsw : ld->f->nca) == before)
		return lfail(ld, TP_ERR_PARSE,
			     "%s[%d]: GUID %s appears twice in subnet %ld",
			     what, i, gs, subnet);
	if (!sw)
		ld->f->ca[idx].by_port_guid = tp__jtype(d, v[4]) == TP_J_TRUE;
	return TP_OK;
}

static tp_err_t load_switch(loader_t *ld, const tp__jdoc_t *d, int i)
{
	return load_node(ld, d, i, true);
}

static tp_err_t load_ca(loader_t *ld, const tp__jdoc_t *d, int i)
{
	return load_node(ld, d, i, false);
}

/* An endpoint: three values kind, node, port starting at token a. */
static bool parse_end(const loader_t *ld, const tp__jdoc_t *d, uint32_t a,
		      tp_node_kind_t *k, uint32_t *node, int *port)
{
	uint32_t b = d->tok[a].next, c = d->tok[b].next;
	long n, p;
	const char *kind;

	if (!(kind = tp__jstr(d, a)))
		return false;
	if (strcmp(kind, "switch") == 0)
		*k = TP_NODE_SWITCH;
	else if (strcmp(kind, "ca") == 0)
		*k = TP_NODE_CA;
	else
		return false;
	size_t lim = *k == TP_NODE_SWITCH ? ld->f->nsw : ld->f->nca;
	if (!lim || !int_of(d, b, 0, (long)lim - 1, &n) ||
	    !int_of(d, c, 0, TP__PORTS_MAX, &p))
		return false;
	*node = (uint32_t)n;
	*port = (int)p;
	return true;
}

static bool parse_ref(const loader_t *ld, const tp__jdoc_t *d, uint32_t r,
		      tp_node_kind_t *k, uint32_t *node, int *port)
{
	return tp__jtype(d, r) == TP_J_ARR && tp__jcount(d, r) == 3 &&
	       parse_end(ld, d, r + 1, k, node, port);
}

/* A cable on port p of a node with nports external ports: 1..nports (IB
 * numbers them from 1; a CA listed with 0 ports takes no cable). */
static tp_err_t port_check(loader_t *ld, int i, tp_node_kind_t k, uint32_t node,
			   int p)
{
	bool sw = k == TP_NODE_SWITCH;
	int n = sw ? ld->f->sw[node].nports : ld->f->ca[node].nports;

	if (!n)
		return lfail(ld, TP_ERR_PARSE,
			     "links[%d]: %s %u has no ports, not %d", i,
			     sw ? "switch" : "ca", node, p);
	if (p < 1 || p > n)
		return lfail(ld, TP_ERR_PARSE,
			     "links[%d]: %s %u has ports 1..%d, not %d", i,
			     sw ? "switch" : "ca", node, n, p);
	return TP_OK;
}

/* The IB link widths (1x..12x), or 0 for unknown: what the readers
 * produce (a 3x is no width, and the ibnetdiscover reader refuses it). */
static bool width_ok(long w)
{
	return w == 0 || w == 1 || w == 2 || w == 4 || w == 8 || w == 12;
}

static tp_err_t load_link(loader_t *ld, const tp__jdoc_t *d, int i)
{
	static const char *const keys[] = {"a", "b", "width", "lane_gbps",
					   "active"};
	const uint32_t o = 0;
	uint32_t v[5];
	tp_node_kind_t ka, kb;
	uint32_t a, b;
	int pa, pb;
	long width;
	double lane;
	bool added;
	tp_err_t err;

	if (tp__jtype(d, o) == TP_J_ARR) {
		/* compact: [ka, a, pa, kb, b, pb, width, lane, active] */
		uint32_t e = o + 1;
		if (tp__jcount(d, o) != 9 || !parse_end(ld, d, e, &ka, &a, &pa))
			return lfail(ld, TP_ERR_PARSE,
				     "links[%d]: expected [kind, node, port, "
				     "kind, node, port, width, lane_gbps, "
				     "active] naming existing nodes",
				     i);
		for (int k = 0; k < 3; k++)
			e = d->tok[e].next;
		if (!parse_end(ld, d, e, &kb, &b, &pb))
			return lfail(ld, TP_ERR_PARSE,
				     "links[%d]: second endpoint must be "
				     "\"switch\"|\"ca\", index, port naming an "
				     "existing node",
				     i);
		for (int k = 0; k < 3; k++)
			e = d->tok[e].next;
		v[2] = e;
		v[3] = d->tok[e].next;
		v[4] = d->tok[v[3]].next;
	} else {
		tp__jgetv(d, o, keys, 5, v);
		if (!parse_ref(ld, d, v[0], &ka, &a, &pa) ||
		    !parse_ref(ld, d, v[1], &kb, &b, &pb))
			return lfail(
			    ld, TP_ERR_PARSE,
			    "links[%d]: endpoints must be [\"switch\"|\"ca\", "
			    "index, port] naming existing nodes",
			    i);
	}
	if (!int_of(d, v[2], 0, 12, &width) || !width_ok(width) ||
	    !num_of(d, v[3], &lane) ||
	    !(lane >= 0 && lane <= TP__LANE_GBPS_MAX) || !is_bool(d, v[4]))
		return lfail(ld, TP_ERR_PARSE,
			     "links[%d]: width (1, 2, 4, 8, 12 or 0, "
			     "unknown), lane_gbps (0..%g) and active (bool) "
			     "required",
			     i, TP__LANE_GBPS_MAX);
	if (ka == kb && a == b && pa == pb)
		return lfail(ld, TP_ERR_PARSE,
			     "links[%d]: both ends are %s %u port %d", i,
			     ka == TP_NODE_SWITCH ? "switch" : "ca", a, pa);
	/* the ibnetdiscover reader drops such a cable (with a warning): a
	 * node's loop carries no traffic between nodes */
	if (ka == kb && a == b)
		return lfail(ld, TP_ERR_PARSE,
			     "links[%d]: %s %u port %d is cabled to its own "
			     "port %d",
			     i, ka == TP_NODE_SWITCH ? "switch" : "ca", a, pa,
			     pb);
	if ((err = port_check(ld, i, ka, a, pa)) ||
	    (err = port_check(ld, i, kb, b, pb)))
		return err;
	err = tp__fabric_add_link(ld->f, ka, a, pa, kb, b, pb, (int)width, lane,
				  tp__jtype(d, v[4]) == TP_J_TRUE, &added);
	if (err == TP_ERR_EXISTS || (!err && !added))
		return lfail(ld, TP_ERR_PARSE,
			     "links[%d]: a port is cabled twice", i);
	if (err)
		return lfail(ld, err, "links[%d]: %s", i, tp_strerror(err));
	return TP_OK;
}

/* Optional string member: absent is fine, another type is not. */
static bool opt_str(const tp__jdoc_t *d, uint32_t o, const char *key,
		    char **out)
{
	uint32_t v = tp__jget(d, o, key);

	*out = NULL;
	if (v == TP_J_NONE)
		return true;
	if (tp__jtype(d, v) != TP_J_STR)
		return false;
	return (*out = tp_strdup(tp__jstr(d, v))) != NULL;
}

/* GPUs by index, for tp_sort. */
static int gpu_cmp(const void *a, const void *b)
{
	const tp_gpu_t *x = a, *y = b;

	return (x->index > y->index) - (x->index < y->index);
}

/* The first n GPUs read, dropped with their strings. */
static void free_gpus(tp_gpu_t *gv, size_t n)
{
	for (size_t k = 0; k < n; k++)
		tp__gpu_free_strings(&gv[k]);
	tp_free(gv);
}

static tp_err_t load_host(loader_t *ld, const tp__jdoc_t *d, int i)
{
	const char *name = get_str(d, 0, "name");
	uint32_t nd = tp__jget(d, 0, "node_data"),
		 gpus = tp__jget(d, 0, "gpus");
	uint32_t h;
	tp_gpu_t *gv = NULL;
	size_t n = 0;
	uint64_t taken[4096 / 64] = {0}; /* GPU indexes given */
	tp_err_t err;

	if (!name || !*name)
		return lfail(ld, TP_ERR_PARSE,
			     "hosts[%d].name: expected a non-empty string", i);
	if (!tp__name_ok(name))
		return lfail(ld, TP_ERR_PARSE,
			     "hosts[%d].name: not a host name (1-%d letters, "
			     "digits, '-', '_', '.')",
			     i, TP_NAME_MAX);
	if (!is_bool(d, nd) || tp__jtype(d, gpus) != TP_J_ARR)
		return lfail(ld, TP_ERR_PARSE,
			     "hosts[%d] (%s): node_data (bool) and gpus "
			     "(array) required",
			     i, name);
	size_t before = ld->f->nhost;
	if ((err = tp__fabric_host_get(ld->f, name, true, &h)))
		return lfail(ld, err, "hosts[%d]: %s", i, tp_strerror(err));
	if (ld->f->nhost == before)
		return lfail(ld, TP_ERR_PARSE,
			     "hosts[%d]: host %s appears twice", i, name);
	if (tp__jcount(d, gpus) > 4096)
		return lfail(ld, TP_ERR_PARSE, "hosts[%d] (%s): too many GPUs",
			     i, name);
	if (tp__jcount(d, gpus) &&
	    !(gv = tp_calloc(tp__jcount(d, gpus), sizeof(*gv))))
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	FOR_ITEMS(d, g, gpus)
	{
		tp_gpu_t *gp = &gv[n++];
		long idx, numa;
		bool ok = opt_str(d, g, "model", &gp->model) &&
			  opt_str(d, g, "pci", &gp->pci) &&
			  opt_str(d, g, "nic", &gp->nic) &&
			  get_int(d, g, "index", 0, 4095, &idx) &&
			  get_int(d, g, "numa", -1, 65535, &numa) &&
			  num_of(d, tp__jget(d, g, "nvlink_gbps"),
				 &gp->nvlink_gbps) &&
			  gp->nvlink_gbps >= 0 &&
			  gp->nvlink_gbps <= TP__NVLINK_GBPS_MAX;
		if (!ok) {
			free_gpus(gv, n);
			return lfail(
			    ld, TP_ERR_PARSE,
			    "hosts[%d] (%s).gpus[%zu]: index, numa, "
			    "nvlink_gbps (0..%g) required; model, pci, nic "
			    "strings",
			    i, name, n - 1, TP__NVLINK_GBPS_MAX);
		}
		gp->index = (int)idx;
		gp->numa = (int)numa;
		gp->hca = -1;
		if (taken[idx / 64] & (uint64_t)1 << (idx % 64)) {
			free_gpus(gv, n);
			return lfail(ld, TP_ERR_PARSE,
				     "hosts[%d] (%s).gpus[%zu]: index %ld "
				     "given before",
				     i, name, n - 1, idx);
		}
		taken[idx / 64] |= (uint64_t)1 << (idx % 64);
	}
	/* a host's GPU l is local rank l's (CUDA's and nvidia-smi's
	 * numbering has no gaps): gpus[] in index order, 0..n-1 */
	for (size_t k = 0; k < n; k++)
		if (!(taken[k / 64] & (uint64_t)1 << (k % 64))) {
			free_gpus(gv, n);
			return lfail(ld, TP_ERR_PARSE,
				     "hosts[%d] (%s).gpus: no GPU of index "
				     "%zu (a host's %zu GPUs are numbered "
				     "0..%zu, as CUDA numbers them)",
				     i, name, k, n, n - 1);
		}
	if (n > 1)
		tp_sort(gv, n, sizeof(*gv), gpu_cmp);
	if (tp__fabric_host_set_gpus(ld->f, h, gv, n))
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	ld->f->host[h].has_node_data = tp__jtype(d, nd) == TP_J_TRUE;
	return TP_OK;
}

static tp_err_t load_guid_name(loader_t *ld, const tp__jdoc_t *d, int i)
{
	tp_fabric_t *f = ld->f;
	const char *gs = get_str(d, 0, "guid"), *name = get_str(d, 0, "name");
	uint64_t guid;
	void *p = f->guid_names;

	if (!gs || !name || !*name || !tp_parse_guid(gs, &guid))
		return lfail(
		    ld, TP_ERR_PARSE,
		    "guid_map[%d]: guid (hex string) and name required", i);
	if (!guid)
		return lfail(ld, TP_ERR_PARSE,
			     "guid_map[%d].guid: GUID 0 (no InfiniBand node or "
			     "port has it)",
			     i);
	/* finalize makes the name a host: checked here, where the entry
	 * can be named (the --guid-map reader checks it the same way) */
	if (!tp__name_ok(name))
		return lfail(ld, TP_ERR_PARSE,
			     "guid_map[%d].name: not a host name (1-%d "
			     "letters, digits, '-', '_', '.')",
			     i, TP_NAME_MAX);
	/* the writer lists a GUID once: a second is an edit, and which
	 * name it meant cannot be told */
	if (tp_u64map_get(f->guid_name, guid) != TP_MAP_NONE)
		return lfail(ld, TP_ERR_PARSE,
			     "guid_map[%d]: GUID 0x%016llx listed twice", i,
			     (unsigned long long)guid);
	if (tp_grow(&p, &f->capguid_names, f->nguid_names + 1, sizeof(char *)))
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	f->guid_names = p;
	if (!(f->guid_names[f->nguid_names] = tp_strdup(name)) ||
	    tp_u64map_put(f->guid_name, guid, (uint32_t)f->nguid_names))
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	f->nguid_names++;
	return TP_OK;
}

static tp_err_t load_domain(loader_t *ld, const tp__jdoc_t *d, int i)
{
	const char *dom = get_str(d, 0, "domain"),
		   *host = get_str(d, 0, "host");
	tp_err_t err;

	if (!dom || !host || !*dom || !*host)
		return lfail(
		    ld, TP_ERR_PARSE,
		    "nvlink_domains[%d]: domain and host strings required", i);
	if (!tp__name_ok(dom) || !tp__name_ok(host))
		return lfail(ld, TP_ERR_PARSE,
			     "nvlink_domains[%d]: domain and host must be "
			     "names (1-%d letters, digits, '-', '_', '.')",
			     i, TP_NAME_MAX);
	err = tp__fabric_domain_add(ld->f, dom, host);
	if (err)
		return lfail(ld, TP_ERR_PARSE, "nvlink_domains[%d]: host %s %s",
			     i, host,
			     err == TP_ERR_EXISTS ? "is in two domains"
						  : tp_strerror(err));
	return TP_OK;
}

static tp_err_t load_warning(loader_t *ld, const tp__jdoc_t *d, int i)
{
	tp_fabric_t *f = ld->f;
	void *p = f->warn;
	char *w;

	if (tp__jtype(d, 0) != TP_J_STR)
		return lfail(ld, TP_ERR_PARSE,
			     "warnings[%d]: expected a string", i);
	if (tp_grow(&p, &f->capwarn, f->nwarn + 1, sizeof(char *)) ||
	    !(w = tp_strdup(tp__jstr(d, 0))))
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	f->warn = p;
	f->warn[f->nwarn++] = w;
	return TP_OK;
}

/* The fewest bytes of a valid item: {"guid":"0","desc":"","ports":1,
 * "subnet":0}, ["ca",0,1,"ca",0,2,0,0,true], {"name":"a","node_data":
 * true,"gpus":[]}, each less a few for slack. */
#define MIN_NODE_BYTES 40
#define MIN_LINK_BYTES 24
#define MIN_HOST_BYTES 36

/* Items to set room aside for, before any is checked: the count of the
 * first pass, capped by what the array's bytes can hold valid, so that
 * memory stays proportional to the file. */
static size_t room(const tp__jmark_t *m, size_t min_bytes)
{
	uint64_t fit = (m->end - m->off) / min_bytes;

	return m->nitems < fit ? m->nitems : (size_t)fit;
}

/* The fabric, member by member in the order their checks need. */
static tp_err_t load_doc(loader_t *ld, tp_fabric_t **f_p)
{
	const tp__jmark_t *m = ld->mark;
	const tp__jdoc_t *d;
	const char *fmt;
	char ex[TP_EXCERPT_SIZE];
	long subnets;
	tp_err_t err;

	if ((err = tp__jstream_index(ld->s, member, K_N, ld->mark)))
		return sfail(ld, err, NULL);
	for (int k = 0; k < K_N; k++)
		if (m[k].nitems > tp__fabric_max_items)
			return lfail(ld, TP_ERR_RANGE,
				     "%zu: \"%s\": %zu items, more than %zu "
				     "(the limit)",
				     m[k].line, member[k], m[k].nitems,
				     tp__fabric_max_items);
	if ((err = scalar(ld, K_FORMAT, &d)))
		return err;
	if (!(fmt = d ? tp__jstr(d, 0) : NULL))
		return lfail(ld, TP_ERR_FORMAT,
			     "no \"format\" key: not a topoplace fabric file");
	if (strcmp(fmt, TP_FABRIC_FORMAT) != 0)
		return lfail(ld, TP_ERR_FORMAT, "format \"%s\" is not %s",
			     tp_excerpt(fmt, ex, sizeof(ex)), TP_FABRIC_FORMAT);
	if ((err = scalar(ld, K_SUBNETS, &d)))
		return err;
	if (!d || !int_of(d, 0, 0, 1024, &subnets))
		return lfail(ld, TP_ERR_PARSE,
			     "\"subnets\": expected an integer 0..1024");
	if (!(ld->f = tp_fabric_create()))
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	ld->f->nsubnets = (int)subnets;
	/* the counts of the first pass: every array allocated once, at its
	 * size, but no larger than its bytes can hold (the first pass counts
	 * commas, and "[0,0,...]" is 2 bytes an item) */
	if (tp__fabric_reserve(ld->f, room(&m[K_SWITCHES], MIN_NODE_BYTES),
			       room(&m[K_CAS], MIN_NODE_BYTES),
			       room(&m[K_LINKS], MIN_LINK_BYTES),
			       room(&m[K_HOSTS], MIN_HOST_BYTES)))
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	if ((err = each_item(ld, K_SWITCHES, load_switch)) ||
	    (err = each_item(ld, K_CAS, load_ca)) ||
	    (err = each_item(ld, K_LINKS, load_link)))
		return err;
	tp__fabric_drop_port_index(ld->f);
	if ((err = each_item(ld, K_HOSTS, load_host)) ||
	    (err = each_item(ld, K_GUID_MAP, load_guid_name)) ||
	    (err = each_item(ld, K_NVLINK_DOMAINS, load_domain)) ||
	    (err = each_item(ld, K_WARNINGS, load_warning)))
		return err;
	*f_p = ld->f;
	ld->f = NULL;
	return TP_OK;
}

/* The derived hierarchy, once the reading buffers are freed: the SPANK
 * plugin loads a fabric per step in slurmstepd (peak memory). */
static tp_err_t finalize(loader_t *ld, tp_fabric_t *f)
{
	tp_err_t err;

	f->quiet_finalize = true;
	err = tp_fabric_finalize(f, NULL);
	f->quiet_finalize = false;
	if (err)
		return lfail(ld, err, "%s", tp_fabric_error(f));
	return TP_OK;
}

static tp_err_t load_stream(const char *name, tp__jstream_t *s,
			    tp_fabric_t **f_p, char **err_p)
{
	loader_t ld = {.name = name ? name : "<json>", .s = s};
	tp_fabric_t *f = NULL;
	tp_err_t err = load_doc(&ld, &f);

	tp__jstream_free(s);
	if (!err && (err = finalize(&ld, f)))
		tp_fabric_destroy(f);
	else if (!err)
		*f_p = f;
	tp_fabric_destroy(ld.f);
	if (err && err_p)
		*err_p = ld.err ? ld.err : tp_strdup(tp_strerror(err));
	else
		tp_free(ld.err);
	return err;
}

tp_err_t tp_fabric_parse_json(const char *name, const char *buf,
			      tp_fabric_t **f_p, char **err_p)
{
	tp__jstream_t s;

	tp__jstream_mem(&s, buf, strlen(buf));
	return load_stream(name, &s, f_p, err_p);
}

/* A regular file is read a window at a time, not whole. */
static tp_err_t load_fd(const char *path, int fd, uint64_t size,
			tp_fabric_t **f_p, char **err_p)
{
	tp__jstream_t s;
	tp_err_t err;

	tp__jstream_fd(&s, fd, size);
	err = load_stream(path, &s, f_p, err_p);
	close(fd);
	return err;
}

tp_err_t tp_fabric_load_json(const char *path, tp_fabric_t **f_p, char **err_p)
{
	tp__jstream_t s;
	struct stat st;
	char *buf = NULL;
	size_t len;
	tp_err_t err;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	/* anything but a regular file (a pipe) is read whole, through
	 * tp_file_read's checks */
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size <= TP_FILE_MAX)
		return load_fd(path, fd, (uint64_t)st.st_size, f_p, err_p);
	if (fd >= 0)
		close(fd);
	if ((err = tp_file_read(path, &buf, &len))) {
		if (err_p)
			*err_p = tp_asprintf("%s: cannot read: %s", path,
					     tp_file_strerror(err));
		return err;
	}
	if (strlen(buf) != len) {
		tp_free(buf);
		if (err_p)
			*err_p = tp_asprintf(
			    "%s: binary data (NUL byte) in JSON", path);
		return TP_ERR_PARSE;
	}
	tp__jstream_mem(&s, buf, len);
	err = load_stream(path, &s, f_p, err_p);
	tp_free(buf);
	return err;
}

tp_err_t tp_fabric_load_json_regular(const char *path, tp_fabric_t **f_p,
				     char **err_p)
{
	uint64_t size;
	tp_err_t err;
	int fd;

	if (!path || !f_p)
		return TP_ERR_INVAL;
	if (!(err = tp_file_open_regular(path, &fd, &size)) &&
	    size > TP_FILE_MAX) {
		close(fd);
		err = TP_ERR_RANGE;
	}
	if (err) {
		if (err_p)
			*err_p = tp_asprintf("%s: cannot read: %s", path,
					     tp_file_strerror(err));
		return err;
	}
	return load_fd(path, fd, size, f_p, err_p);
}
