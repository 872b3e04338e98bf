/*
 * The topology diff: the fabric model against what a walk of the live
 * fabric found. Notes:
 * - Ports are matched by (node GUID, port number): descriptions change
 *   with a re-imaged host, GUIDs do not, and the walk's link order is not
 *   the model's.
 * - A CA port cabled elsewhere is one move (of the host or of its cable),
 *   not a link gone plus a new one: the admin's next step is the same
 *   either way (regenerate the fabric), and the placement must stop
 *   trusting the old position at once.
 * - A link neither of whose nodes was found is "unseen", not gone: a model
 *   spanning subnets is walked one subnet at a time. So is a link of a
 *   subnet the walk did not reach (none of the model's switches of its
 *   subnet found) even when an end's node was: a dual-port HCA is one GUID
 *   on two rails, and a walk of one rail finds it. But a walk that found
 *   no switch at all (from a host whose own cable is down) reached the
 *   subnets of the CAs it found: their links there are gone (a dual-rail
 *   host walking so would call both of its rails' cables gone).
 * - The fabric JSON is never rewritten here: a model that silently
 *   follows the cables would hide a miscabling from the admin.
 * - A cable in place at another width or lane rate is a change: a link
 *   trained down to 1x SDR carries a fortieth of a 4x EDR one, and the
 *   placement prices it by the model until the fabric is regenerated.
 *   What either side does not know (a "4x ???" dump line) is no change.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health_int.h"

/* Lane rates are nominal (names.c snaps signalling rates) and saved as
 * exact decimals, so only rounding may part two equal ones. */
#define RATE_EPS 1e-6

/* One end of a live link, sorted by (guid, port) for lookups. */
typedef struct pend {
	uint64_t guid;
	int port;
	size_t link;
} pend_t;

static int cmp_end(const void *a, const void *b)
{
	const pend_t *x = a, *y = b;

	if (x->guid != y->guid)
		return x->guid < y->guid ? -1 : 1;
	return (x->port > y->port) - (x->port < y->port);
}

static int cmp_guid(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static const pend_t *find_end(const pend_t *ends, size_t n, uint64_t guid,
			      int port)
{
	pend_t key = {.guid = guid, .port = port};

	return bsearch(&key, ends, n, sizeof(*ends), cmp_end);
}

/* The end of live link l that is not (guid, port). */
static int other_end(const tp_fabric_t *live, size_t l, uint64_t guid, int port)
{
	const tp_link_t *k = tp_fabric_link(live, l);

	return tp_fabric_link_end_guid(live, k, 0) == guid &&
	       k->port[0] == port;
}

void tp_health_diff_free(tp_health_diff_t *d)
{
	if (!d)
		return;
	tp_free(d->link);
	tp_free(d->to);
	tp_free(d->fresh);
	memset(d, 0, sizeof(*d));
}

bool tp_health_diff_changed(const tp_health_diff_t *d)
{
	return d && (d->ngone || d->nmoved || d->nfresh || d->nrate);
}

static bool same_rate(const tp_link_t *m, const tp_link_t *q)
{
	if (m->width > 0 && q->width > 0 && m->width != q->width)
		return false;
	return !(m->lane_gbps > 0 && q->lane_gbps > 0) ||
	       fabs(m->lane_gbps - q->lane_gbps) <= RATE_EPS * m->lane_gbps;
}

static int end_subnet(const tp_fabric_t *f, const tp_link_t *k, int e)
{
	return k->kind[e] == TP_NODE_SWITCH
		   ? tp_fabric_switch(f, k->node[e])->subnet
		   : tp_fabric_ca(f, k->node[e])->subnet;
}

/* Model link k against the live ends; *to_p the live link it is (present
 * or at another rate) or a moved CA port sits on. walked[s]: the live
 * fabric holds model subnet s. */
static tp_health_change_t classify(const tp_fabric_t *model,
				   const tp_fabric_t *live, const tp_link_t *k,
				   const pend_t *ends, size_t nends,
				   const uint64_t *nodes, size_t nnodes,
				   const bool *walked, size_t *to_p)
{
	uint64_t g[2] = {tp_fabric_link_end_guid(model, k, 0),
			 tp_fabric_link_end_guid(model, k, 1)};
	const pend_t *p = find_end(ends, nends, g[0], k->port[0]);

	if (p) {
		const tp_link_t *q = tp_fabric_link(live, p->link);
		int o = other_end(live, p->link, g[0], k->port[0]);
		if (tp_fabric_link_end_guid(live, q, o) == g[1] &&
		    q->port[o] == k->port[1]) {
			*to_p = p->link;
			return same_rate(k, q) ? TP_HEALTH_PRESENT
					       : TP_HEALTH_RATE;
		}
	}
	for (int e = 0; e < 2; e++)
		if (k->kind[e] == TP_NODE_CA &&
		    (p = find_end(ends, nends, g[e], k->port[e]))) {
			*to_p = p->link;
			return TP_HEALTH_MOVED;
		}
	if (!walked[end_subnet(model, k, 0)] &&
	    !walked[end_subnet(model, k, 1)])
		return TP_HEALTH_UNSEEN;
	for (int e = 0; e < 2; e++)
		if (bsearch(&g[e], nodes, nnodes, sizeof(*nodes), cmp_guid))
			return TP_HEALTH_GONE;
	return TP_HEALTH_UNSEEN;
}

/* walked[s] for each model subnet s: one of its switches is in the live
 * fabric (a subnet without switches, cabled CA to CA: one of its CAs; a
 * walk that found no switch at all, the walking host's own cable down,
 * the subnets of the CAs it found: their links are gone, not unseen).
 * Returns how many model switches and CAs are. */
static size_t walked_subnets(const tp_fabric_t *model, const uint64_t *nodes,
			     size_t nnodes, bool no_switch, bool *walked)
{
	int nsub = tp_fabric_nsubnets(model);
	bool *has_sw = walked + nsub;
	size_t found = 0;

	for (size_t i = 0; i < tp_fabric_nswitches(model); i++) {
		const tp_switch_t *sw = tp_fabric_switch(model, i);
		has_sw[sw->subnet] = true;
		if (bsearch(&sw->guid, nodes, nnodes, sizeof(*nodes),
			    cmp_guid)) {
			walked[sw->subnet] = true;
			found++;
		}
	}
	for (size_t i = 0; i < tp_fabric_ncas(model); i++) {
		const tp_ca_t *ca = tp_fabric_ca(model, i);
		if (!bsearch(&ca->guid, nodes, nnodes, sizeof(*nodes),
			     cmp_guid))
			continue;
		found++;
		if (!has_sw[ca->subnet] || no_switch)
			walked[ca->subnet] = true;
	}
	return found;
}

tp_err_t tp_health_diff(const tp_fabric_t *model, const tp_fabric_t *live,
			tp_health_diff_t *d)
{
	size_t nl, ll, nnodes = 0;
	pend_t *ends = NULL;
	uint64_t *nodes = NULL;
	bool *used = NULL, *walked = NULL;
	tp_err_t err = TP_ERR_NOMEM;

	if (!model || !live || !d)
		return TP_ERR_INVAL;
	memset(d, 0, sizeof(*d));
	nl = tp_fabric_nlinks(model);
	ll = tp_fabric_nlinks(live);
	d->nlinks = nl;
	if (!(d->link = tp_calloc(nl + 1, sizeof(*d->link))) ||
	    !(d->to = tp_calloc(nl + 1, sizeof(*d->to))) ||
	    !(d->fresh = tp_calloc(ll + 1, sizeof(*d->fresh))) ||
	    !(ends = tp_calloc(2 * ll + 1, sizeof(*ends))) ||
	    !(used = tp_calloc(ll + 1, sizeof(*used))) ||
	    !(walked = tp_calloc(2 * (size_t)tp_fabric_nsubnets(model) + 1,
				 sizeof(*walked))) ||
	    !(nodes = tp_calloc(tp_fabric_nswitches(live) +
				    tp_fabric_ncas(live) + 1,
				sizeof(*nodes))))
		goto out;
	for (size_t l = 0; l < ll; l++)
		for (int e = 0; e < 2; e++) {
			const tp_link_t *k = tp_fabric_link(live, l);
			ends[2 * l + e] = (pend_t){
			    tp_fabric_link_end_guid(live, k, e), k->port[e], l};
		}
	qsort(ends, 2 * ll, sizeof(*ends), cmp_end);
	for (size_t i = 0; i < tp_fabric_nswitches(live); i++)
		nodes[nnodes++] = tp_fabric_switch(live, i)->guid;
	for (size_t i = 0; i < tp_fabric_ncas(live); i++)
		nodes[nnodes++] = tp_fabric_ca(live, i)->guid;
	qsort(nodes, nnodes, sizeof(*nodes), cmp_guid);
	/* nothing in common: every link "unseen" would read as no change */
	if (!walked_subnets(model, nodes, nnodes,
			    tp_fabric_nswitches(live) == 0, walked) &&
	    tp_fabric_nswitches(model) + tp_fabric_ncas(model)) {
		err = TP_ERR_MISMATCH;
		goto out;
	}
	for (size_t l = 0; l < nl; l++) {
		size_t to = SIZE_MAX;
		d->link[l] = classify(model, live, tp_fabric_link(model, l),
				      ends, 2 * ll, nodes, nnodes, walked, &to);
		if (to != SIZE_MAX)
			used[to] = true;
		d->to[l] = d->link[l] == TP_HEALTH_MOVED ||
				   d->link[l] == TP_HEALTH_RATE
			       ? to
			       : SIZE_MAX;
		d->ngone += d->link[l] == TP_HEALTH_GONE;
		d->nmoved += d->link[l] == TP_HEALTH_MOVED;
		d->nunseen += d->link[l] == TP_HEALTH_UNSEEN;
		d->nrate += d->link[l] == TP_HEALTH_RATE;
	}
	for (size_t l = 0; l < ll; l++)
		if (!used[l])
			d->fresh[d->nfresh++] = l;
	err = TP_OK;
out:
	tp_free(ends);
	tp_free(nodes);
	tp_free(used);
	tp_free(walked);
	if (err)
		tp_health_diff_free(d);
	return err;
}

/* ---- report ---------------------------------------------------------------
 */

typedef enum what { W_GONE, W_BACK, W_MOVED, W_NEW, W_RATE, W_N } what_t;
static const char *const what_name[W_N] = {"gone", "back", "moved", "new",
					   "rate"};

/* One change as names: a and b the link's ends ("desc:port"); for a
 * move, host is the host (or CA) and a / b where it was / is now; for a
 * rate, from / to the model's and the live rate. */
typedef struct change {
	what_t what;
	size_t link; /* model link; SIZE_MAX for a new one */
	char host[96], a[96], b[96];
	char from[48], to[48];
	double from_gbps, to_gbps;
} change_t;

typedef void (*emit_fn)(const change_t *c, void *arg);

/* The CA end of model link k that moved: the one cabled on live link to
 * (of a link CA to CA, either may have). */
static int moved_end(const tp_fabric_t *model, const tp_fabric_t *live,
		     const tp_link_t *k, size_t to)
{
	const tp_link_t *q = tp_fabric_link(live, to);

	for (int e = 0; e < 2; e++) {
		uint64_t g = tp_fabric_link_end_guid(model, k, e);
		for (int o = 0; k->kind[e] == TP_NODE_CA && o < 2; o++)
			if (tp_fabric_link_end_guid(live, q, o) == g &&
			    q->port[o] == k->port[e])
				return e;
	}
	return k->kind[0] == TP_NODE_CA ? 0 : 1;
}

static void moved_names(const tp_fabric_t *model, const tp_fabric_t *live,
			const tp_link_t *k, size_t to, change_t *c)
{
	int ce = moved_end(model, live, k, to);
	const tp_ca_t *ca = tp_fabric_ca(model, k->node[ce]);
	const tp_link_t *q = tp_fabric_link(live, to);
	int o = other_end(live, to, ca->guid, k->port[ce]);

	if (ca->role == TP_CA_HOST)
		snprintf(c->host, sizeof(c->host), "%s",
			 tp_fabric_host(model, ca->host)->name);
	else
		tp__health_end_name(model, k, ce, c->host, sizeof(c->host));
	tp__health_end_name(model, k, !ce, c->a, sizeof(c->a));
	tp__health_end_name(live, q, o, c->b, sizeof(c->b));
}

/* "4x EDR"; what is unknown as "??x" / "???", a lane rate of no IB
 * generation (a generator's odd figure) in Gb/s. */
static double rate_name(const tp_link_t *k, char *buf, size_t size)
{
	const char *speed = tp_ib_speed_name(k->lane_gbps);
	char w[16] = "??x";

	if (k->width > 0)
		snprintf(w, sizeof(w), "%dx", k->width);
	if (k->lane_gbps > 0 && !strcmp(speed, "???"))
		snprintf(buf, size, "%s %g Gb/s", w, k->lane_gbps);
	else
		snprintf(buf, size, "%s %s", w, speed);
	return k->width > 0 ? k->width * k->lane_gbps : 0;
}

static void rate_names(const tp_fabric_t *model, const tp_fabric_t *live,
		       const tp_link_t *k, size_t to, change_t *c)
{
	c->what = W_RATE;
	tp__health_end_name(model, k, 0, c->a, sizeof(c->a));
	tp__health_end_name(model, k, 1, c->b, sizeof(c->b));
	c->from_gbps = rate_name(k, c->from, sizeof(c->from));
	c->to_gbps = rate_name(tp_fabric_link(live, to), c->to, sizeof(c->to));
}

static void walk(const tp_fabric_t *model, const tp_fabric_t *live,
		 const tp_health_diff_t *d, const tp_health_diff_t *prev,
		 emit_fn emit, void *arg)
{
	change_t c;

	for (size_t l = 0; l < d->nlinks; l++) {
		const tp_link_t *k = tp_fabric_link(model, l);
		bool was_out = prev && prev->nlinks == d->nlinks &&
			       (prev->link[l] == TP_HEALTH_GONE ||
				prev->link[l] == TP_HEALTH_MOVED);
		bool in_place = d->link[l] == TP_HEALTH_PRESENT ||
				d->link[l] == TP_HEALTH_RATE;

		memset(&c, 0, sizeof(c));
		c.link = l;
		if (d->link[l] == TP_HEALTH_MOVED) {
			c.what = W_MOVED;
			moved_names(model, live, k, d->to[l], &c);
			emit(&c, arg);
		} else if (d->link[l] == TP_HEALTH_GONE ||
			   (in_place && was_out)) {
			c.what = d->link[l] == TP_HEALTH_GONE ? W_GONE : W_BACK;
			tp__health_end_name(model, k, 0, c.a, sizeof(c.a));
			tp__health_end_name(model, k, 1, c.b, sizeof(c.b));
			emit(&c, arg);
		}
		/* a cable back at another rate is both */
		if (d->link[l] == TP_HEALTH_RATE) {
			rate_names(model, live, k, d->to[l], &c);
			emit(&c, arg);
		}
	}
	for (size_t i = 0; i < d->nfresh; i++) {
		const tp_link_t *q = tp_fabric_link(live, d->fresh[i]);
		memset(&c, 0, sizeof(c));
		c.what = W_NEW;
		c.link = SIZE_MAX;
		tp__health_end_name(live, q, 0, c.a, sizeof(c.a));
		tp__health_end_name(live, q, 1, c.b, sizeof(c.b));
		emit(&c, arg);
	}
}

typedef struct jctx {
	cJSON *arr[W_N];
	bool ok;
} jctx_t;

static void emit_json(const change_t *c, void *arg)
{
	jctx_t *j = arg;
	cJSON *o = cJSON_CreateObject();
	bool ok = o && cJSON_AddItemToArray(j->arr[c->what], o);

	if (c->link != SIZE_MAX)
		ok = ok && cJSON_AddNumberToObject(o, "link", (double)c->link);
	if (c->what == W_MOVED)
		ok = ok && cJSON_AddStringToObject(o, "host", c->host) &&
		     cJSON_AddStringToObject(o, "from", c->a) &&
		     cJSON_AddStringToObject(o, "to", c->b);
	else
		ok = ok && cJSON_AddStringToObject(o, "a", c->a) &&
		     cJSON_AddStringToObject(o, "b", c->b);
	if (c->what == W_RATE)
		ok = ok && cJSON_AddStringToObject(o, "from", c->from) &&
		     cJSON_AddStringToObject(o, "to", c->to) &&
		     cJSON_AddNumberToObject(o, "from_gbps", c->from_gbps) &&
		     cJSON_AddNumberToObject(o, "to_gbps", c->to_gbps);
	if (!ok)
		j->ok = false;
}

tp_err_t tp_health_diff_json(const tp_fabric_t *model, const tp_fabric_t *live,
			     const tp_health_diff_t *d,
			     const tp_health_diff_t *prev, char **json_p)
{
	cJSON *root = cJSON_CreateObject();
	jctx_t j = {.ok = root != NULL};
	tp_err_t err = TP_ERR_NOMEM;

	if (!model || !live || !d || !json_p) {
		cJSON_Delete(root);
		return TP_ERR_INVAL;
	}
	j.ok =
	    j.ok &&
	    cJSON_AddStringToObject(root, "format", "topoplace-diff/1") &&
	    cJSON_AddBoolToObject(root, "changed", tp_health_diff_changed(d));
	for (int w = 0; j.ok && w < W_N; w++)
		j.ok = (j.arr[w] = cJSON_AddArrayToObject(root, what_name[w]));
	if (j.ok)
		walk(model, live, d, prev, emit_json, &j);
	if (j.ok && cJSON_AddNumberToObject(root, "unseen", (double)d->nunseen))
		err = tp__health_print_json(root, json_p);
	cJSON_Delete(root);
	return err;
}

/* " (100 Gb/s)", "" when unknown. */
static const char *gbps_text(double gbps, char *buf, size_t size)
{
	if (gbps > 0)
		snprintf(buf, size, " (%g Gb/s)", gbps);
	else
		buf[0] = '\0';
	return buf;
}

static void emit_text(const change_t *c, void *arg)
{
	tp_strbuf_t *sb = arg;
	char from[48], to[48];

	if (c->what == W_MOVED)
		tp_strbuf_printf(sb,
				 "moved: %s (link %zu) from %s to %s; "
				 "regenerate the fabric (topoplace discover "
				 "--live)\n",
				 c->host, c->link, c->a, c->b);
	else if (c->what == W_NEW)
		tp_strbuf_printf(sb, "new: %s - %s\n", c->a, c->b);
	else if (c->what == W_RATE)
		tp_strbuf_printf(sb,
				 "rate: link %zu %s - %s runs %s%s, the model "
				 "says %s%s\n",
				 c->link, c->a, c->b, c->to,
				 gbps_text(c->to_gbps, to, sizeof(to)), c->from,
				 gbps_text(c->from_gbps, from, sizeof(from)));
	else
		tp_strbuf_printf(sb, "%s: link %zu %s - %s\n",
				 what_name[c->what], c->link, c->a, c->b);
}

tp_err_t tp_health_diff_text(const tp_fabric_t *model, const tp_fabric_t *live,
			     const tp_health_diff_t *d,
			     const tp_health_diff_t *prev, char **text_p)
{
	tp_strbuf_t sb = {0};

	if (!model || !live || !d || !text_p)
		return TP_ERR_INVAL;
	walk(model, live, d, prev, emit_text, &sb);
	if (sb.failed || (!sb.buf && !(sb.buf = tp_strdup("")))) {
		tp_free(sb.buf);
		return TP_ERR_NOMEM;
	}
	*text_p = sb.buf;
	return TP_OK;
}

void tp_health_diff_apply(const tp_fabric_t *model, const tp_fabric_t *live,
			  const tp_health_diff_t *d,
			  const tp_health_port_t *ports,
			  tp_health_link_t *links, bool *stale_p)
{
	for (size_t l = 0; l < d->nlinks; l++) {
		const tp_health_port_t *p = &ports[2 * l];
		tp_health_link_t *h = &links[l];
		change_t c;

		if (d->link[l] != TP_HEALTH_GONE &&
		    d->link[l] != TP_HEALTH_MOVED)
			continue;
		/* a cable back in place: both ends up again. Not for a
		 * move: two hosts swapped between ports leave every port of
		 * the model's links up, and a host moved back changes port
		 * states, which the next walk finds */
		if (d->link[l] == TP_HEALTH_GONE && p[0].seen && p[0].up &&
		    p[1].seen && p[1].up) {
			if (stale_p)
				*stale_p = true;
			continue;
		}
		h->seen = h->alarm = true;
		h->health = 0;
		if (d->link[l] == TP_HEALTH_GONE) {
			snprintf(h->reason, sizeof(h->reason),
				 "gone (re-discovery)");
		} else {
			moved_names(model, live, tp_fabric_link(model, l),
				    d->to[l], &c);
			snprintf(h->reason, sizeof(h->reason),
				 "host moved to %s; regenerate the fabric",
				 c.b);
		}
	}
}
