/*
 * The monitor's outputs: the state file's links, a Prometheus textfile and
 * one sweep as JSON. Notes:
 * - The state file belongs to whoever else writes it too (down hosts,
 *   jobs, background traffic): only "links" health and reason are ours,
 *   every other field and a link's background_gbps are carried over.
 * - Prometheus label values escape '\\', '"' and newlines as the text
 *   format requires; node descriptions may hold any of them.
 * - Names reach JSON and the exposition as UTF-8 (both formats require
 *   it): a description of a dump edited in another encoding has its
 *   stray bytes replaced by U+FFFD, as the fabric JSON writer does, in the
 *   one place every name is made (tp__health_end_name).
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "health_int.h"

void tp__health_end_name(const tp_fabric_t *f, const tp_link_t *k, int e,
			 char *buf, size_t size)
{
	uint64_t guid;
	const char *desc;
	char port[16];
	size_t plen, dlen;

	if (k->kind[e] == TP_NODE_SWITCH) {
		const tp_switch_t *s = tp_fabric_switch(f, k->node[e]);
		guid = s->guid;
		desc = s->desc;
	} else {
		const tp_ca_t *c = tp_fabric_ca(f, k->node[e]);
		guid = c->guid;
		desc = c->desc;
	}
	if (!desc || !*desc) {
		snprintf(buf, size, "0x%016llx:%d", (unsigned long long)guid,
			 k->port[e]);
		return;
	}
	/* a long description is cut, not the port that tells ends apart */
	plen = (size_t)snprintf(port, sizeof(port), ":%d", k->port[e]);
	if (!size)
		return;
	dlen = size > plen ? tp_utf8_copy(buf, size - plen, desc) : 0;
	snprintf(buf + dlen, size - dlen, "%s", port);
}

static bool add(cJSON *o, const char *key, cJSON *v)
{
	return v && cJSON_AddItemToObject(o, key, v);
}

tp_err_t tp__health_print_json(cJSON *root, char **json_p)
{
	char *s = cJSON_PrintUnformatted(root);

	if (!s)
		return TP_ERR_NOMEM;
	*json_p = tp_strdup(s);
	cJSON_free(s);
	return *json_p ? TP_OK : TP_ERR_NOMEM;
}

/* Index of old's entry per link (NULL: none). */
static const cJSON **old_links(const cJSON *root, size_t nl)
{
	const cJSON **by = tp_calloc(nl + 1, sizeof(*by));
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "links");
	const cJSON *it;

	if (!by)
		return NULL;
	cJSON_ArrayForEach(it, arr)
	{
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(it, "link");
		if (cJSON_IsNumber(l) && l->valuedouble >= 0 &&
		    l->valuedouble < (double)nl)
			by[(size_t)l->valuedouble] = it;
	}
	return by;
}

/* The entry for a seen link: old's other keys, our health and reason;
 * NULL (no entry) when nothing is left to say. */
static cJSON *link_entry(const cJSON *old, size_t l, const tp_health_link_t *h,
			 bool *nomem_p)
{
	cJSON *o = old ? cJSON_Duplicate(old, true) : cJSON_CreateObject();

	if (!o) {
		*nomem_p = true;
		return NULL;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(o, "link");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "health");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "reason");
	if (h->health >= 1 && !cJSON_GetArraySize(o)) {
		cJSON_Delete(o);
		return NULL;
	}
	if (!cJSON_AddNumberToObject(o, "link", (double)l) ||
	    (h->health < 1 &&
	     (!cJSON_AddNumberToObject(o, "health",
				       round(h->health * 1e4) / 1e4) ||
	      !cJSON_AddStringToObject(o, "reason", h->reason)))) {
		cJSON_Delete(o);
		*nomem_p = true;
		return NULL;
	}
	return o;
}

/* Object o's members name a key twice. Pairwise for a few members; for
 * more, through a hash set (a 65k-host job's "hosts" object pairwise
 * took seconds, paid on every sweep), pairwise again without memory. */
static bool twice_in(const cJSON *o)
{
	tp_strmap_t seen = {0};
	size_t n = 0;
	bool twice = false;

	for (const cJSON *a = o->child; a && n <= 16; a = a->next)
		n++;
	for (const cJSON *a = o->child; n > 16 && a && !twice; a = a->next) {
		twice = tp_strmap_get(&seen, a->string) != TP_MAP_NONE;
		if (!twice && tp_strmap_put(&seen, a->string, 0)) {
			n = 0; /* no memory: pairwise below */
			break;
		}
	}
	tp_strmap_clear(&seen);
	if (n > 16)
		return twice;
	for (const cJSON *a = o->child; a; a = a->next)
		for (const cJSON *b = o->child; b != a; b = b->next)
			if (!strcmp(a->string, b->string))
				return true;
	return false;
}

/* Some object in v (v itself, any depth down) holds a key twice (cJSON
 * would take the first). The depth is cJSON's own nesting limit. */
static bool dup_key(const cJSON *v)
{
	if (v && cJSON_IsObject(v) && twice_in(v))
		return true;
	for (const cJSON *a = v ? v->child : NULL; a; a = a->next)
		if (dup_key(a))
			return true;
	return false;
}

/* old's value, NULL when it is no JSON. *damaged_p: text other than
 * white space after it, or a key given twice in any object (the top, a
 * "links" or "jobs" entry), which the state loader refuses; the value is
 * still returned so that its "format" can be told (a foreign file is
 * never rewritten). */
static cJSON *parse_old(const char *old, bool *damaged_p)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(old, &end, false);
	size_t len = strlen(old), rest;

	*damaged_p = false;
	if (!root)
		return NULL;
	rest = len - (size_t)(end - old);
	*damaged_p = tp_json_space(end, rest) < rest ||
		     tp_json_bad_byte(old, len, NULL) < len || dup_key(root);
	return root;
}

/* TP_OK when root may be rewritten as link state: no "format", or
 * topoplace-state/1. */
static tp_err_t state_format(const cJSON *root)
{
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");

	return !fmt || (cJSON_IsString(fmt) &&
			!strcmp(fmt->valuestring, "topoplace-state/1"))
		   ? TP_OK
		   : TP_ERR_FORMAT;
}

/* root's "links_digest" names another fabric than f: its link numbers
 * mean other cables. */
static bool other_fabric(const cJSON *root, const tp_fabric_t *f)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "links_digest");
	char here[TP_LINKS_DIGEST_LEN];

	if (!cJSON_IsString(d))
		return false;
	tp_fabric_links_digest_hex(f, here);
	return strcmp(d->valuestring, here) != 0;
}

bool tp_health_state_other_fabric(const char *old, const tp_fabric_t *f)
{
	bool damaged;
	cJSON *root = old && f ? parse_old(old, &damaged) : NULL;
	bool other = cJSON_IsObject(root) && !damaged && other_fabric(root, f);

	cJSON_Delete(root);
	return other;
}

tp_err_t tp_health_state_check(const char *old, char **format_p)
{
	bool damaged;
	cJSON *root = old ? parse_old(old, &damaged) : NULL;
	tp_err_t err = !root		       ? TP_ERR_PARSE
		       : !cJSON_IsObject(root) ? TP_ERR_PARSE
					       : state_format(root);

	if (!err && damaged)
		err = TP_ERR_PARSE;

	if (err == TP_ERR_FORMAT && format_p) {
		const cJSON *fmt =
		    cJSON_GetObjectItemCaseSensitive(root, "format");
		*format_p = tp_strdup(cJSON_IsString(fmt) ? fmt->valuestring
							  : "foreign");
	}
	cJSON_Delete(root);
	return err;
}

tp_err_t tp_health_state_json(const char *old, const tp_fabric_t *f,
			      const tp_health_link_t *links, char **json_p)
{
	size_t nl = tp_fabric_nlinks(f);
	bool damaged = false, nomem = false;
	cJSON *root = old ? parse_old(old, &damaged) : cJSON_CreateObject();
	cJSON *arr = NULL;
	const cJSON **by = NULL;
	tp_err_t err = TP_ERR_NOMEM;

	if (!root)
		return old ? TP_ERR_PARSE : TP_ERR_NOMEM;
	if (!cJSON_IsObject(root)) {
		err = TP_ERR_PARSE;
		goto out;
	}
	/* another format first: a damaged foreign file is still not ours */
	if ((err = state_format(root)))
		goto out;
	if (damaged) {
		err = TP_ERR_PARSE;
		goto out;
	}
	/* written for another fabric: none of its link entries is ours */
	if (other_fabric(root, f))
		cJSON_DeleteItemFromObjectCaseSensitive(root, "links");
	err = TP_ERR_NOMEM;
	if (!(by = old_links(root, nl)) || !(arr = cJSON_CreateArray()))
		goto out;
	for (size_t l = 0; l < nl && !nomem; l++) {
		cJSON *o;
		if (!links[l].seen)
			o = by[l] ? cJSON_Duplicate(by[l], true) : NULL;
		else
			o = link_entry(by[l], l, &links[l], &nomem);
		if (o && !cJSON_AddItemToArray(arr, o))
			cJSON_Delete(o), nomem = true;
	}
	if (nomem)
		goto out;
	cJSON_DeleteItemFromObjectCaseSensitive(root, "links");
	cJSON_DeleteItemFromObjectCaseSensitive(root, "links_digest");
	if (!cJSON_GetObjectItemCaseSensitive(root, "format") &&
	    !cJSON_AddStringToObject(root, "format", "topoplace-state/1"))
		goto out;
	/* the fabric the link numbers are f's: a reader on another one
	 * refuses the file instead of putting health on other cables */
	char digest[TP_LINKS_DIGEST_LEN];
	tp_fabric_links_digest_hex(f, digest);
	if (!cJSON_AddStringToObject(root, "links_digest", digest))
		goto out;
	if (!cJSON_AddItemToObject(root, "links", arr))
		goto out;
	arr = NULL;
	err = tp__health_print_json(root, json_p);
out:
	cJSON_Delete(arr);
	cJSON_Delete(root);
	tp_free(by);
	return err;
}

static void prom_label(tp_strbuf_t *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			tp_strbuf_printf(sb, "\\%c", *s);
		else if (*s == '\n')
			tp_strbuf_append(sb, "\\n", 2);
		else
			tp_strbuf_append(sb, s, 1);
	}
}

static void prom_labels(tp_strbuf_t *sb, const tp_fabric_t *f, size_t l)
{
	const tp_link_t *k = tp_fabric_link(f, l);
	char a[96], b[96];

	tp__health_end_name(f, k, 0, a, sizeof(a));
	tp__health_end_name(f, k, 1, b, sizeof(b));
	tp_strbuf_printf(sb, "link=\"%zu\",a=\"", l);
	prom_label(sb, a);
	tp_strbuf_append(sb, "\",b=\"", 5);
	prom_label(sb, b);
	tp_strbuf_append(sb, "\"", 1);
}

static void prom_head(tp_strbuf_t *sb, const char *name, const char *type,
		      const char *help)
{
	tp_strbuf_printf(sb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
			 type);
}

tp_err_t tp_health_prom_text(const tp_fabric_t *f,
			     const tp_health_link_t *links, double sweep_s,
			     double state_s, double now, char **text_p)
{
	tp_strbuf_t sb = {0};
	size_t nl = tp_fabric_nlinks(f);

	prom_head(&sb, "topoplace_link_health", "gauge",
		  "Link health 0..1 (1 healthy, 0 down) by topoplace's rules");
	for (size_t l = 0; l < nl; l++) {
		if (!links[l].seen)
			continue;
		tp_strbuf_append(&sb, "topoplace_link_health{", 22);
		prom_labels(&sb, f, l);
		tp_strbuf_printf(&sb, "} %g\n", links[l].health);
	}
	prom_head(&sb, "topoplace_link_utilization", "gauge",
		  "Share of the cabled rate sent over the last interval, per "
		  "direction (ab: a to b)");
	for (size_t l = 0; l < nl; l++)
		for (int d = 0; d < 2 && links[l].seen; d++) {
			if (isnan(links[l].util[d]))
				continue; /* unknown: no sample */
			tp_strbuf_append(&sb, "topoplace_link_utilization{",
					 27);
			prom_labels(&sb, f, l);
			tp_strbuf_printf(&sb, ",direction=\"%s\"} %g\n",
					 d ? "ba" : "ab", links[l].util[d]);
		}
	prom_head(&sb, "topoplace_link_errors_delta", "gauge",
		  "PMA error counter increase over the last interval, both "
		  "ends of the link");
	for (size_t l = 0; l < nl; l++)
		for (int c = 0; c < TP_HC_FIRST_DATA && links[l].seen; c++) {
			tp_strbuf_append(&sb, "topoplace_link_errors_delta{",
					 28);
			prom_labels(&sb, f, l);
			tp_strbuf_printf(&sb, ",counter=\"%s\"} %llu\n",
					 tp_health_counter_name(c),
					 (unsigned long long)links[l].delta[c]);
		}
	prom_head(&sb, "topoplace_health_sweep_seconds", "gauge",
		  "Time the last sweep took");
	tp_strbuf_printf(&sb, "topoplace_health_sweep_seconds %g\n", sweep_s);
	if (state_s >= 0) {
		prom_head(&sb, "topoplace_health_sweep_state_seconds", "gauge",
			  "Time the last sweep's first pass (port states) "
			  "took");
		tp_strbuf_printf(
		    &sb, "topoplace_health_sweep_state_seconds %g\n", state_s);
	}
	prom_head(&sb, "topoplace_health_last_sweep_timestamp_seconds", "gauge",
		  "Unix time of the last sweep");
	tp_strbuf_printf(
	    &sb, "topoplace_health_last_sweep_timestamp_seconds %.3f\n", now);
	if (sb.failed || !sb.buf) {
		tp_free(sb.buf);
		return TP_ERR_NOMEM;
	}
	*text_p = sb.buf;
	return TP_OK;
}

static cJSON *sweep_link(const tp_fabric_t *f, size_t l,
			 const tp_health_link_t *h)
{
	const tp_link_t *k = tp_fabric_link(f, l);
	cJSON *o = cJSON_CreateObject(), *d, *u;
	char a[96], b[96];
	bool ok;

	tp__health_end_name(f, k, 0, a, sizeof(a));
	tp__health_end_name(f, k, 1, b, sizeof(b));
	ok = o && add(o, "link", cJSON_CreateNumber((double)l)) &&
	     add(o, "health",
		 cJSON_CreateNumber(round(h->health * 1e4) / 1e4)) &&
	     add(o, "reason", cJSON_CreateString(h->reason)) &&
	     add(o, "a", cJSON_CreateString(a)) &&
	     add(o, "b", cJSON_CreateString(b)) &&
	     add(o, "utilization", u = cJSON_CreateArray()) &&
	     add(o, "deltas", d = cJSON_CreateObject());
	for (int e = 0; ok && e < 2; e++)
		ok = cJSON_AddItemToArray(
		    u, isnan(h->util[e]) ? cJSON_CreateNull()
					 : cJSON_CreateNumber(h->util[e]));
	for (int c = 0; ok && c < TP_HC_N; c++)
		ok = add(d, tp_health_counter_name(c),
			 cJSON_CreateNumber((double)h->delta[c]));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

tp_err_t tp_health_links_json(const tp_fabric_t *f,
			      const tp_health_link_t *links, char **json_p)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	size_t nl = tp_fabric_nlinks(f), bad = 0, seen = 0;
	tp_err_t err = TP_ERR_NOMEM;

	if (!root ||
	    !add(root, "format", cJSON_CreateString("topoplace-health/1")) ||
	    !add(root, "links", arr = cJSON_CreateArray()))
		goto out;
	for (size_t l = 0; l < nl; l++) {
		cJSON *o;
		if (!links[l].seen)
			continue;
		seen++;
		bad += links[l].alarm;
		if (!(o = sweep_link(f, l, &links[l])) ||
		    !cJSON_AddItemToArray(arr, o))
			goto out;
	}
	if (!add(root, "seen", cJSON_CreateNumber((double)seen)) ||
	    !add(root, "alarms", cJSON_CreateNumber((double)bad)))
		goto out;
	err = tp__health_print_json(root, json_p);
out:
	cJSON_Delete(root);
	return err;
}
