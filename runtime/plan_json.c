/*
 * topoplace-plan/1 out and in.
 *
 * Written with a string buffer (one line per host, group and tree rank,
 * so a plan diffs and greps well) and read through cJSON: plans are small
 * next to fabrics. The reader checks every cross-reference, because the
 * SPANK plugin and launch scripts act on what they read without a fabric
 * to compare against: a plan that loads is a consistent plan.
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_int.h"

/* ---- writing ---- */

static void put_lit(tp_strbuf_t *sb, const char *s)
{
	tp_strbuf_append(sb, s, strlen(s));
}

static void put_str(tp_strbuf_t *sb, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run;

	if (!s) {
		put_lit(sb, "null");
		return;
	}
	put_lit(sb, "\"");
	for (run = s; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		tp_strbuf_append(sb, run, (size_t)(s - run));
		run = s + 1;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			tp_strbuf_append(sb, e, 2);
		} else {
			char u[6] = {'\\', 'u',		'0',
				     '0',  hex[c >> 4], hex[c & 15]};
			tp_strbuf_append(sb, u, 6);
		}
	}
	tp_strbuf_append(sb, run, (size_t)(s - run));
	put_lit(sb, "\"");
}

/* Shortest text that reads back as the same double; null for NAN. */
static void put_num(tp_strbuf_t *sb, double v)
{
	if (isnan(v))
		put_lit(sb, "null");
	else
		tp_strbuf_num(sb, v);
}

/* Integers without printf: a 1,024-host plan prints ~60,000 of them. */
static void put_u(tp_strbuf_t *sb, uint64_t v)
{
	char b[24];
	size_t i = sizeof(b);

	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	tp_strbuf_append(sb, b + i, sizeof(b) - i);
}

static void put_i(tp_strbuf_t *sb, int64_t v)
{
	if (v < 0) {
		put_lit(sb, "-");
		put_u(sb, (uint64_t)(-(v + 1)) + 1);
		return;
	}
	put_u(sb, (uint64_t)v);
}

static void put_id(tp_strbuf_t *sb, uint32_t id)
{
	if (id == TP_ID_NONE)
		put_lit(sb, "null");
	else
		put_u(sb, id);
}

static void put_host(tp_strbuf_t *sb, const tp_plan_t *p,
		     const tp_plan_host_t *h)
{
	put_lit(sb, "{\"name\": ");
	put_str(sb, h->name);
	put_lit(sb, ", \"rank\": ");
	put_u(sb, h->node_rank);
	put_lit(sb, ", \"first_rank\": ");
	put_u(sb, h->first_rank);
	put_lit(sb, ", \"group\": ");
	put_u(sb, h->group);
	put_lit(sb, ", \"gpus\": ");
	put_u(sb, h->nranks);
	put_lit(sb, ", \"local_ranks\": [");
	for (uint32_t l = 0; l < h->nranks; l++) {
		const tp_plan_rank_t *rk = &h->ranks[l];
		put_lit(sb, l ? ", {\"local_rank\": " : "{\"local_rank\": ");
		put_u(sb, l);
		put_lit(sb, ", \"rank\": ");
		put_u(sb, rk->rank);
		put_lit(sb, ", \"gpu\": ");
		put_i(sb, rk->gpu);
		put_lit(sb, ", \"hca\": ");
		put_str(sb, rk->hca);
		put_lit(sb, ", \"rail\": ");
		put_i(sb, rk->rail);
		put_lit(sb, "}");
	}
	put_lit(sb, "], \"hcas\": [");
	for (int r = 0; r < p->nrails; r++) {
		if (r)
			put_lit(sb, ", ");
		put_str(sb, h->hcas[r]);
	}
	put_lit(sb, "]");
	if (h->nmore_hcas) {
		put_lit(sb, ", \"more_hcas\": [");
		for (uint32_t i = 0; i < h->nmore_hcas; i++) {
			put_lit(sb, i ? ", {\"hca\": " : "{\"hca\": ");
			put_str(sb, h->more_hcas[i].dev);
			put_lit(sb, ", \"rail\": ");
			put_i(sb, h->more_hcas[i].rail);
			put_lit(sb, "}");
		}
		put_lit(sb, "]");
	}
	put_lit(sb, "}");
}

static void put_group(tp_strbuf_t *sb, const tp_plan_t *p,
		      const tp_plan_group_t *g)
{
	put_lit(sb, "{\"id\": ");
	put_id(sb, g->id);
	put_lit(sb, ", \"spine\": ");
	put_id(sb, g->spine);
	put_lit(sb, ", \"hosts\": [");
	for (uint32_t i = 0; i < g->nhosts; i++) {
		if (i)
			put_lit(sb, ", ");
		put_str(sb, p->hosts[g->first + i].name);
	}
	put_lit(sb, "], \"leader\": ");
	put_str(sb, p->hosts[g->leader].name);
	if (p->nrails > 1) {
		put_lit(sb, ", \"rail_leaders\": [");
		for (size_t i = 0; i < g->nrail_leaders; i++) {
			const tp_plan_rail_leader_t *rl = &g->rail_leaders[i];
			const tp_plan_host_t *h = &p->hosts[rl->node_rank];
			tp_strbuf_printf(sb, "%s{\"rail\": %d, \"host\": ",
					 i ? ", " : "", rl->rail);
			put_str(sb, h->name);
			tp_strbuf_printf(sb,
					 ", \"local_rank\": %u, \"gpu\": %d, "
					 "\"hca\": ",
					 rl->local_rank,
					 h->ranks[rl->local_rank].gpu);
			put_str(sb, h->ranks[rl->local_rank].hca);
			put_lit(sb, "}");
		}
		put_lit(sb, "]");
	}
	put_lit(sb, "}");
}

static void put_tree(tp_strbuf_t *sb, const tp_plan_t *p, int t)
{
	put_lit(sb, "    {\"root\": ");
	put_str(sb, p->hosts[p->root[t]].name);
	put_lit(sb, ", \"ranks\": [\n");
	for (uint32_t r = 0; r < p->nhosts; r++) {
		uint32_t par = p->parent[t][r];
		put_lit(sb, "      {\"rank\": ");
		put_u(sb, r);
		put_lit(sb, ", \"host\": ");
		put_str(sb, p->hosts[r].name);
		put_lit(sb, ", \"parent\": ");
		put_i(sb, par == TP_PLAN_NONE ? -1 : (int64_t)par);
		put_lit(sb, ", \"children\": [");
		for (uint32_t c = p->coff[t][r]; c < p->coff[t][r + 1]; c++) {
			if (c > p->coff[t][r])
				put_lit(sb, ", ");
			put_u(sb, p->child[t][c]);
		}
		put_lit(sb, r + 1 < p->nhosts ? "]},\n" : "]}\n");
	}
	put_lit(sb, t ? "    ]}\n" : "    ]},\n");
}

/* The plan's JSON; priced: with the model's part (predictions, host
 * segment, recommendations). */
static tp_err_t plan_json(const tp_plan_t *p, bool priced, char **json_p)
{
	tp_strbuf_t sb = {0};

	if (!p || !json_p)
		return TP_ERR_INVAL;
	tp_strbuf_printf(&sb,
			 "{\n  \"format\": \"%s\",\n  \"world_size\": %zu,\n"
			 "  \"nodes\": %zu,\n  \"rails\": %d,\n  \"ring\": [",
			 TP_PLAN_FORMAT, p->world, p->nhosts, p->nrails);
	for (size_t r = 0; r < p->nhosts; r++) {
		if (r)
			put_lit(&sb, ", ");
		put_str(&sb, p->hosts[r].name);
	}
	put_lit(&sb, "],\n  \"hosts\": [\n");
	for (size_t r = 0; r < p->nhosts; r++) {
		put_lit(&sb, "    ");
		put_host(&sb, p, &p->hosts[r]);
		put_lit(&sb, r + 1 < p->nhosts ? ",\n" : "\n");
	}
	put_lit(&sb, "  ],\n  \"groups\": [\n");
	for (size_t g = 0; g < p->ngroups; g++) {
		put_lit(&sb, "    ");
		put_group(&sb, p, &p->groups[g]);
		put_lit(&sb, g + 1 < p->ngroups ? ",\n" : "\n");
	}
	put_lit(&sb, "  ],\n  \"trees\": [\n");
	put_tree(&sb, p, 0);
	put_tree(&sb, p, 1);
	put_lit(&sb, "  ],\n  \"sizes\": [");
	for (size_t i = 0; i < p->nsizes; i++) {
		if (i)
			put_lit(&sb, ", ");
		put_num(&sb, p->sizes[i]);
	}
	put_lit(&sb, "]");
	if (!priced) {
		/* nothing of the model's */
	} else if (!p->predicted) {
		put_lit(&sb, ",\n  \"predicted\": ");
		put_lit(&sb, "null");
	} else {
		put_lit(&sb, ",\n  \"predicted\": ");
		for (int a = 0; a < TP_PLAN_NALGOS; a++) {
			tp_strbuf_printf(&sb, "%s\"%s\": [", a ? ", " : "{",
					 tp_algo_name((tp_algo_t)a));
			for (size_t i = 0; i < p->nsizes; i++) {
				if (i)
					put_lit(&sb, ", ");
				put_num(&sb, p->pred[a][i]);
			}
			put_lit(&sb, "]");
		}
		put_lit(&sb, "}");
		/* none where every size goes by the library's rule (a plan
		 * loaded from a file without them) */
		bool any = false;
		for (size_t i = 0; i < p->nsizes; i++)
			any |= p->hier_pipe[i] != 0;
		for (size_t i = 0; any && i < p->nsizes; i++)
			tp_strbuf_printf(&sb, "%s%s",
					 i ? ", "
					   : ",\n  \"hier_pipelined\": [",
					 p->hier_pipe[i] == 2	? "true"
					 : p->hier_pipe[i] == 1 ? "false"
								: "null");
		if (any)
			put_lit(&sb, "]");
	}
	if (priced && !p->host_segment)
		put_lit(&sb, ",\n  \"host_segment\": false");
	for (uint32_t l = 0; l < p->nweight; l++)
		tp_strbuf_printf(&sb, "%s%" PRIu32 "%s",
				 l ? ", " : ",\n  \"rank_weights\": [",
				 p->weight[l], l + 1 < p->nweight ? "" : "]");
	if (priced) {
		put_lit(&sb, ",\n  \"recommend\": [");
		for (size_t i = 0; i < p->nsizes; i++) {
			put_lit(&sb, i ? ",\n    {\"bytes\": "
				       : "\n    {\"bytes\": ");
			put_num(&sb, p->sizes[i]);
			tp_strbuf_printf(
			    &sb, ", \"algo\": \"%s\", \"basis\": \"%s\"}",
			    tp_algo_name(p->rec[i]),
			    p->rec_model[i] ? "model" : "rule");
		}
		put_lit(&sb, "\n  ]");
	}
	put_lit(&sb, "\n}\n");
	if (sb.failed) {
		tp_free(sb.buf);
		return TP_ERR_NOMEM;
	}
	*json_p = sb.buf;
	return TP_OK;
}

tp_err_t tp_plan_to_json(const tp_plan_t *p, char **json_p)
{
	if (!p || !json_p)
		return TP_ERR_INVAL;
	return plan_json(p, true, json_p);
}

tp_err_t tp_plan_to_json_schedule(const tp_plan_t *p, char **json_p)
{
	if (!p || !json_p)
		return TP_ERR_INVAL;
	return plan_json(p, false, json_p);
}

/* ---- reading ---- */

typedef struct loader {
	const char *name;
	tp_plan_t *p;
	char *err;
} loader_t;

/* The loader's first error, "name: message" (tp_first_error). */
#define lfail(ld_, code_, ...)                                                 \
	tp_first_error(&(ld_)->err, (ld_)->name, (code_), __VA_ARGS__)

static tp_err_t nomem(loader_t *ld)
{
	return lfail(ld, TP_ERR_NOMEM, "out of memory");
}

/* The checks below take the element's path as a format, expanded only
 * when they fail: a 1,024-host plan has some 10,000 elements, and
 * printing each path up front cost more than the parse. */
static tp_err_t at_fail(loader_t *ld, const char *what, const char *fmt,
			va_list ap)
{
	char *where = tp_vasprintf(fmt, ap);

	lfail(ld, TP_ERR_PARSE, "%s: %s", where ? where : "?", what);
	tp_free(where);
	return TP_ERR_PARSE;
}

#define AT_FAIL(what)                                                          \
	do {                                                                   \
		va_list ap_;                                                   \
		tp_err_t e_;                                                   \
		va_start(ap_, fmt);                                            \
		e_ = at_fail(ld, (what), fmt, ap_);                            \
		va_end(ap_);                                                   \
		return e_;                                                     \
	} while (0)

#define TP__WHERE __attribute__((format(printf, 5, 6)))

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Exactly these keys: all of req, any of opt (may be NULL). */
static tp_err_t keys(loader_t *ld, const cJSON *o, const char *const *req,
		     const char *const *opt, const char *fmt, ...) TP__WHERE;
static tp_err_t keys(loader_t *ld, const cJSON *o, const char *const *req,
		     const char *const *opt, const char *fmt, ...)
{
	const cJSON *it;
	char what[96];
	/* bit i: req[i] (or opt[i]) present; at most 32 keys each */
	uint32_t seen = 0, oseen = 0, bit = 0;

	if (!cJSON_IsObject(o))
		AT_FAIL("expected an object");
	cJSON_ArrayForEach(it, o)
	{
		uint32_t *set = &seen;
		bit = 0;
		for (size_t i = 0; req[i] && !bit; i++)
			if (strcmp(it->string, req[i]) == 0)
				bit = 1u << i;
		for (size_t i = 0; opt && opt[i] && !bit; i++)
			if (strcmp(it->string, opt[i]) == 0) {
				bit = 1u << i;
				set = &oseen;
			}
		if (!bit || (*set & bit)) {
			/* cJSON keeps both of a repeated key and we would
			 * read the first: a file that says two things */
			snprintf(what, sizeof(what), "%s key \"%.40s\"",
				 bit ? "repeated" : "unknown", it->string);
			AT_FAIL(what);
		}
		*set |= bit;
	}
	for (size_t i = 0; req[i]; i++)
		if (!(seen >> i & 1)) {
			snprintf(what, sizeof(what), "missing key \"%s\"",
				 req[i]);
			AT_FAIL(what);
		}
	return TP_OK;
}

static bool whole(const cJSON *it, double lo, double hi)
{
	return cJSON_IsNumber(it) &&
	       it->valuedouble == floor(it->valuedouble) &&
	       it->valuedouble >= lo && it->valuedouble <= hi;
}

static tp_err_t want_int(loader_t *ld, const cJSON *it, double lo, double hi,
			 double *v_p, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static tp_err_t want_int(loader_t *ld, const cJSON *it, double lo, double hi,
			 double *v_p, const char *fmt, ...)
{
	char what[96];

	if (whole(it, lo, hi)) {
		*v_p = it->valuedouble;
		return TP_OK;
	}
	snprintf(what, sizeof(what), "expected an integer %.0f..%.0f", lo, hi);
	AT_FAIL(what);
}

static tp_err_t want_eq(loader_t *ld, const cJSON *it, double want,
			const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tp_err_t want_eq(loader_t *ld, const cJSON *it, double want,
			const char *fmt, ...)
{
	char what[64];

	if (cJSON_IsNumber(it) && it->valuedouble == want)
		return TP_OK;
	snprintf(what, sizeof(what), "expected %.0f", want);
	AT_FAIL(what);
}

/* An array of lo..hi entries (counted without walking twice). */
static tp_err_t want_array(loader_t *ld, const cJSON *it, size_t lo, size_t hi,
			   size_t *n_p, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static tp_err_t want_array(loader_t *ld, const cJSON *it, size_t lo, size_t hi,
			   size_t *n_p, const char *fmt, ...)
{
	char what[96];
	size_t n = 0;
	const cJSON *x;

	if (!cJSON_IsArray(it))
		AT_FAIL("expected an array");
	cJSON_ArrayForEach(x, it)
	{
		n++;
	}
	if (n >= lo && n <= hi) {
		*n_p = n;
		return TP_OK;
	}
	if (lo == hi)
		snprintf(what, sizeof(what), "expected %zu entries, got %zu",
			 lo, n);
	else
		snprintf(what, sizeof(what),
			 "expected %zu..%zu entries, got %zu", lo, hi, n);
	AT_FAIL(what);
}

/* A host name of the ring; its node rank in *r_p. */
static tp_err_t want_host(loader_t *ld, const cJSON *it, uint32_t *r_p,
			  const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tp_err_t want_host(loader_t *ld, const cJSON *it, uint32_t *r_p,
			  const char *fmt, ...)
{
	char what[128];

	if (!cJSON_IsString(it))
		AT_FAIL("expected a host name");
	*r_p = tp_strmap_get(&ld->p->byname, it->valuestring);
	if (*r_p != TP_MAP_NONE)
		return TP_OK;
	snprintf(what, sizeof(what), "'%.64s' is not in the ring",
		 it->valuestring);
	AT_FAIL(what);
}

/* The host at node rank r, by name. */
static tp_err_t want_name(loader_t *ld, const cJSON *it, uint32_t r,
			  const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tp_err_t want_name(loader_t *ld, const cJSON *it, uint32_t r,
			  const char *fmt, ...)
{
	char what[128];

	if (cJSON_IsString(it) &&
	    !strcmp(it->valuestring, ld->p->hosts[r].name))
		return TP_OK;
	snprintf(what, sizeof(what), "expected \"%.64s\" (ring order)",
		 ld->p->hosts[r].name);
	AT_FAIL(what);
}

/* A string (copied into the plan) or null. */
static tp_err_t want_opt_str(loader_t *ld, const cJSON *it, const char **s_p,
			     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static tp_err_t want_opt_str(loader_t *ld, const cJSON *it, const char **s_p,
			     const char *fmt, ...)
{
	if (cJSON_IsNull(it)) {
		*s_p = NULL;
		return TP_OK;
	}
	if (!cJSON_IsString(it))
		AT_FAIL("expected a string or null");
	if (!(*s_p = tp__plan_strdup(ld->p, it->valuestring)))
		return nomem(ld);
	return TP_OK;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static tp_err_t load_ring(loader_t *ld, const cJSON *ring)
{
	tp_plan_t *p = ld->p;
	const cJSON *it;
	uint32_t r = 0, dup;
	size_t n;
	tp_err_t err;

	/* the ring's length first: "nodes" alone must not size an
	 * allocation (4294967294 would ask for hundreds of GB) */
	if ((err = want_array(ld, ring, p->nhosts, p->nhosts, &n, "ring")))
		return err;
	if (!(p->hosts = tp__plan_alloc(p, p->nhosts, sizeof(*p->hosts))))
		return nomem(ld);
	cJSON_ArrayForEach(it, ring)
	{
		if (!cJSON_IsString(it) || !*it->valuestring)
			return lfail(ld, TP_ERR_PARSE,
				     "ring[%u]: expected a host name", r);
		if (!(p->hosts[r].name = tp__plan_strdup(p, it->valuestring)))
			return nomem(ld);
		p->hosts[r].node_rank = r;
		r++;
	}
	err = tp__plan_index_names(p, &dup);
	if (err == TP_ERR_EXISTS)
		return lfail(ld, TP_ERR_PARSE, "ring[%u]: '%s' listed twice",
			     dup, p->hosts[dup].name);
	return err ? nomem(ld) : TP_OK;
}

static tp_err_t load_rank(loader_t *ld, const cJSON *o, uint32_t r, uint32_t l,
			  tp_plan_rank_t *rk)
{
	static const char *const req[] = {"local_rank", "rank", "gpu",
					  "hca",	"rail", NULL};
	const tp_plan_host_t *h = &ld->p->hosts[r];
	double v;
	tp_err_t err;

#define RANK_AT "hosts[%u].local_ranks[%u]"
	if ((err = keys(ld, o, req, NULL, RANK_AT, r, l)) ||
	    (err = want_eq(ld, get(o, "local_rank"), l, RANK_AT ".local_rank",
			   r, l)) ||
	    (err = want_eq(ld, get(o, "rank"), (double)h->first_rank + l,
			   RANK_AT ".rank", r, l)))
		return err;
	rk->rank = h->first_rank + l;
	if ((err = want_int(ld, get(o, "gpu"), -1, 1 << 20, &v, RANK_AT ".gpu",
			    r, l)))
		return err;
	rk->gpu = (int)v;
	if ((err = want_int(ld, get(o, "rail"), -1, ld->p->nrails - 1, &v,
			    RANK_AT ".rail", r, l)))
		return err;
	rk->rail = (int)v;
	if ((err = want_opt_str(ld, get(o, "hca"), &rk->hca, RANK_AT ".hca", r,
				l)))
		return err;
	if (rk->hca && rk->rail < 0)
		return lfail(ld, TP_ERR_PARSE,
			     RANK_AT ".hca: an HCA without a rail", r, l);
#undef RANK_AT
	return TP_OK;
}

/* hosts[r].more_hcas (h->hcas loaded): each a named HCA on a rail
 * hcas[] names, rails ascending, no name twice on the host's rails. */
static tp_err_t load_more_hcas(loader_t *ld, const cJSON *arr, uint32_t r)
{
	static const char *const req[] = {"hca", "rail", NULL};
	tp_plan_host_t *h = &ld->p->hosts[r];
	tp_plan_hca_t *more;
	const cJSON *it;
	size_t n;
	uint32_t i = 0;
	double v;
	tp_err_t err;

#define MORE_AT "hosts[%u].more_hcas[%u]"
	if ((err = want_array(ld, arr, 0, UINT32_MAX, &n, "hosts[%u].more_hcas",
			      r)))
		return err;
	/* the writer leaves it out then: a file with [] is not one */
	if (!n)
		return lfail(ld, TP_ERR_PARSE,
			     "hosts[%u].more_hcas: empty (written only with "
			     "an HCA)",
			     r);
	if (!(more = tp__plan_alloc(ld->p, n, sizeof(*more))))
		return nomem(ld);
	cJSON_ArrayForEach(it, arr)
	{
		tp_plan_hca_t *m = &more[i];
		if ((err = keys(ld, it, req, NULL, MORE_AT, r, i)) ||
		    (err = want_int(ld, get(it, "rail"),
				    i ? more[i - 1].rail : 0, ld->p->nrails - 1,
				    &v, MORE_AT ".rail", r, i)))
			return err;
		m->rail = (int)v;
		if (!h->hcas[m->rail])
			return lfail(ld, TP_ERR_PARSE,
				     MORE_AT ".rail: hosts[%u].hcas[%d] is "
					     "null",
				     r, i, r, m->rail);
		if ((err = want_opt_str(ld, get(it, "hca"), &m->dev,
					MORE_AT ".hca", r, i)))
			return err;
		if (!m->dev)
			return lfail(ld, TP_ERR_PARSE,
				     MORE_AT ".hca: expected a string", r, i);
		for (int k = 0; k < ld->p->nrails; k++)
			if (same_str(h->hcas[k], m->dev))
				return lfail(ld, TP_ERR_PARSE,
					     MORE_AT ".hca: \"%s\" is "
						     "hosts[%u].hcas[%d]",
					     r, i, m->dev, r, k);
		for (uint32_t k = 0; k < i; k++)
			if (!strcmp(more[k].dev, m->dev))
				return lfail(ld, TP_ERR_PARSE,
					     MORE_AT ".hca: \"%s\" listed "
						     "twice",
					     r, i, m->dev);
		i++;
	}
#undef MORE_AT
	h->more_hcas = more;
	h->nmore_hcas = i;
	return TP_OK;
}

/* Whether host h has HCA dev (NULL: none named) on rail. */
static bool host_has_hca(const tp_plan_host_t *h, int rail, const char *dev)
{
	if (same_str(h->hcas[rail], dev))
		return true;
	for (uint32_t i = 0; dev && i < h->nmore_hcas; i++)
		if (h->more_hcas[i].rail == rail &&
		    !strcmp(h->more_hcas[i].dev, dev))
			return true;
	return false;
}

static tp_err_t load_host(loader_t *ld, const cJSON *o, uint32_t r,
			  uint32_t *first_p)
{
	static const char *const req[] = {"name",  "rank", "first_rank",
					  "group", "gpus", "local_ranks",
					  "hcas",  NULL};
	static const char *const opt[] = {"more_hcas", NULL};
	tp_plan_t *p = ld->p;
	tp_plan_host_t *h = &p->hosts[r];
	tp_plan_rank_t *rk;
	const char **hcas;
	const cJSON *it;
	size_t n;
	double v;
	uint32_t l = 0;
	tp_err_t err;

	if ((err = keys(ld, o, req, opt, "hosts[%u]", r)) ||
	    (err = want_name(ld, get(o, "name"), r, "hosts[%u].name", r)) ||
	    (err = want_eq(ld, get(o, "rank"), r, "hosts[%u].rank", r)) ||
	    (err = want_eq(ld, get(o, "first_rank"), *first_p,
			   "hosts[%u].first_rank", r)))
		return err;
	h->first_rank = *first_p;
	if ((err = want_int(ld, get(o, "group"), 0, (double)p->nhosts - 1, &v,
			    "hosts[%u].group", r)))
		return err;
	h->group = (uint32_t)v;
	if ((err = want_int(ld, get(o, "gpus"), 1, TP_PLAN_MAX_HOST_RANKS, &v,
			    "hosts[%u].gpus", r)))
		return err;
	h->nranks = (uint32_t)v;
	if ((err = want_array(ld, get(o, "local_ranks"), h->nranks, h->nranks,
			      &n, "hosts[%u].local_ranks", r)))
		return err;
	if (!(rk = tp__plan_alloc(p, n, sizeof(*rk))))
		return nomem(ld);
	cJSON_ArrayForEach(it, get(o, "local_ranks"))
	{
		if ((err = load_rank(ld, it, r, l, &rk[l])))
			return err;
		/* a GPU runs one rank of a host (a rank without one: -1) */
		for (uint32_t k = 0; k < l; k++)
			if (rk[l].gpu >= 0 && rk[k].gpu == rk[l].gpu)
				return lfail(ld, TP_ERR_PARSE,
					     "hosts[%u].local_ranks[%u].gpu: "
					     "GPU %d is local rank %u's",
					     r, l, rk[l].gpu, k);
		l++;
	}
	h->ranks = rk;
	if ((err = want_array(ld, get(o, "hcas"), (size_t)p->nrails,
			      (size_t)p->nrails, &n, "hosts[%u].hcas", r)))
		return err;
	if (!(hcas = tp__plan_alloc(p, n ? n : 1, sizeof(char *))))
		return nomem(ld);
	l = 0;
	cJSON_ArrayForEach(it, get(o, "hcas"))
	{
		if ((err = want_opt_str(ld, it, &hcas[l], "hosts[%u].hcas[%u]",
					r, l)))
			return err;
		l++;
	}
	h->hcas = hcas;
	if (get(o, "more_hcas") &&
	    (err = load_more_hcas(ld, get(o, "more_hcas"), r)))
		return err;
	/* NCCL_IB_HCA comes from hcas and more_hcas, each rank's binding
	 * from its own hca: the builder gives a rank one of its rail's */
	for (l = 0; l < h->nranks; l++)
		if (h->ranks[l].rail >= 0 &&
		    !host_has_hca(h, h->ranks[l].rail, h->ranks[l].hca))
			return lfail(
			    ld, TP_ERR_PARSE,
			    "hosts[%u].local_ranks[%u].hca: \"%s\", "
			    "where hosts[%u].hcas[%d] is \"%s\"%s",
			    r, l, h->ranks[l].hca ? h->ranks[l].hca : "null", r,
			    h->ranks[l].rail,
			    hcas[h->ranks[l].rail] ? hcas[h->ranks[l].rail]
						   : "null",
			    h->nmore_hcas ? " (nor in more_hcas)" : "");
	*first_p += h->nranks;
	return TP_OK;
}

static tp_err_t load_rail_leaders(loader_t *ld, const cJSON *arr, size_t g)
{
	static const char *const req[] = {"rail", "host", "local_rank",
					  "gpu",  "hca",  NULL};
	tp_plan_t *p = ld->p;
	tp_plan_group_t *gp = &p->groups[g];
	tp_plan_rail_leader_t *rl;
	const cJSON *it;
	size_t n, i = 0;
	double v;
	tp_err_t err;

#define RL_AT "groups[%zu].rail_leaders"
	if ((err = want_array(ld, arr, 0, (size_t)p->nrails, &n, RL_AT, g)))
		return err;
	if (!(rl = tp__plan_alloc(p, n ? n : 1, sizeof(*rl))))
		return nomem(ld);
	cJSON_ArrayForEach(it, arr)
	{
		const tp_plan_rank_t *rk;
		const cJSON *x;
		if ((err = keys(ld, it, req, NULL, RL_AT "[%zu]", g, i)) ||
		    (err = want_int(ld, get(it, "rail"),
				    i ? rl[i - 1].rail + 1 : 0, p->nrails - 1,
				    &v, RL_AT "[%zu].rail", g, i)))
			return err;
		rl[i].rail = (int)v;
		if ((err = want_host(ld, get(it, "host"), &rl[i].node_rank,
				     RL_AT "[%zu].host", g, i)))
			return err;
		if (rl[i].node_rank < gp->first ||
		    rl[i].node_rank >= gp->first + gp->nhosts)
			return lfail(ld, TP_ERR_PARSE,
				     RL_AT "[%zu].host: not in this group", g,
				     i);
		if ((err = want_int(ld, get(it, "local_rank"), 0,
				    p->hosts[rl[i].node_rank].nranks - 1.0, &v,
				    RL_AT "[%zu].local_rank", g, i)))
			return err;
		rl[i].local_rank = (uint32_t)v;
		rk = &p->hosts[rl[i].node_rank].ranks[rl[i].local_rank];
		if (rk->rail != rl[i].rail)
			return lfail(ld, TP_ERR_PARSE,
				     RL_AT "[%zu].local_rank: that rank is on "
					   "rail %d",
				     g, i, rk->rail);
		if ((err = want_eq(ld, get(it, "gpu"), rk->gpu,
				   RL_AT "[%zu].gpu", g, i)))
			return err;
		x = get(it, "hca");
		if (!(cJSON_IsNull(x) && !rk->hca) &&
		    !(cJSON_IsString(x) && same_str(x->valuestring, rk->hca)))
			return lfail(ld, TP_ERR_PARSE,
				     RL_AT "[%zu].hca: expected %s%s%s", g, i,
				     rk->hca ? "\"" : "",
				     rk->hca ? rk->hca : "null",
				     rk->hca ? "\"" : "");
		i++;
	}
#undef RL_AT
	gp->rail_leaders = rl;
	gp->nrail_leaders = n;
	return TP_OK;
}

static tp_err_t load_group_id(loader_t *ld, const cJSON *it, uint32_t *id_p,
			      size_t g, const char *key)
{
	double v;
	tp_err_t err;

	*id_p = TP_ID_NONE;
	if (cJSON_IsNull(it))
		return TP_OK;
	if ((err = want_int(ld, it, 0, TP_ID_NONE - 1.0, &v, "groups[%zu].%s",
			    g, key)))
		return err;
	*id_p = (uint32_t)v;
	return TP_OK;
}

/* A value other than TP_ID_NONE twice among v[0..m) (sorts v), or
 * TP_ID_NONE. */
static uint32_t twice(uint32_t *v, size_t m)
{
	tp_sort(v, m, sizeof(*v), tp_u32_cmp);
	for (size_t i = 1; i < m; i++)
		if (v[i] == v[i - 1] && v[i] != TP_ID_NONE)
			return v[i];
	return TP_ID_NONE;
}

/* The groups name distinct level-1 groups, and those of one spine are one
 * run of the ring, as the builder makes them (a spine met again after
 * another left the plan's schedules unbuildable). */
static tp_err_t groups_distinct(loader_t *ld)
{
	const tp_plan_t *p = ld->p;
	uint32_t *v = tp_malloc((p->ngroups + 1) * sizeof(uint32_t)), d;
	size_t m = 0;

	if (!v)
		return nomem(ld);
	for (size_t g = 0; g < p->ngroups; g++)
		v[g] = p->groups[g].id;
	if ((d = twice(v, p->ngroups)) != TP_ID_NONE) {
		tp_free(v);
		return lfail(ld, TP_ERR_PARSE, "groups: id %u twice", d);
	}
	for (size_t g = 0; g < p->ngroups; g++)
		if (!g || p->groups[g].spine != p->groups[g - 1].spine)
			v[m++] = p->groups[g].spine;
	d = twice(v, m);
	tp_free(v);
	for (size_t g = 1; d != TP_ID_NONE && g < p->ngroups; g++)
		if (p->groups[g].spine == d && p->groups[g - 1].spine != d) {
			for (size_t h = 0; h < g; h++)
				if (p->groups[h].spine == d)
					return lfail(
					    ld, TP_ERR_PARSE,
					    "groups[%zu].spine: %u again after "
					    "another spine (a spine's groups "
					    "are one run of the ring)",
					    g, d);
		}
	return TP_OK;
}

static tp_err_t load_groups(loader_t *ld, const cJSON *arr)
{
	static const char *const req[] = {"id", "spine", "hosts", "leader",
					  NULL};
	static const char *const opt[] = {"rail_leaders", NULL};
	tp_plan_t *p = ld->p;
	const cJSON *it;
	uint32_t next = 0;
	size_t n, g = 0;
	tp_err_t err;

	if ((err = want_array(ld, arr, 1, p->nhosts, &n, "groups")))
		return err;
	if (!(p->groups = tp__plan_alloc(p, n, sizeof(*p->groups))))
		return nomem(ld);
	p->ngroups = n;
	cJSON_ArrayForEach(it, arr)
	{
		tp_plan_group_t *gp = &p->groups[g];
		const cJSON *x;
		size_t nh, i = 0;
		if ((err = keys(ld, it, req, opt, "groups[%zu]", g)) ||
		    (err =
			 load_group_id(ld, get(it, "id"), &gp->id, g, "id")) ||
		    (err = load_group_id(ld, get(it, "spine"), &gp->spine, g,
					 "spine")) ||
		    (gp->id == TP_ID_NONE && gp->spine != TP_ID_NONE &&
		     (err = lfail(ld, TP_ERR_PARSE,
				  "groups[%zu].spine: a spine without a "
				  "group id",
				  g))) ||
		    (err = want_array(ld, get(it, "hosts"), 1, p->nhosts - next,
				      &nh, "groups[%zu].hosts", g)))
			return err;
		/* a group is a run of the ring, and runs tile it in order */
		gp->first = next;
		gp->nhosts = (uint32_t)nh;
		cJSON_ArrayForEach(x, get(it, "hosts"))
		{
			uint32_t r;
			if ((err = want_host(ld, x, &r,
					     "groups[%zu].hosts[%zu]", g, i)))
				return err;
			if (r != next)
				return lfail(ld, TP_ERR_PARSE,
					     "groups[%zu].hosts[%zu]: expected "
					     "\"%s\" (groups are consecutive "
					     "runs of the ring)",
					     g, i, p->hosts[next].name);
			if (p->hosts[r].group != g)
				return lfail(ld, TP_ERR_PARSE,
					     "hosts[%u].group: expected %zu", r,
					     g);
			next++;
			i++;
		}
		if ((err = want_host(ld, get(it, "leader"), &gp->leader,
				     "groups[%zu].leader", g)))
			return err;
		if (gp->leader != gp->first)
			return lfail(ld, TP_ERR_PARSE,
				     "groups[%zu].leader: expected \"%s\" "
				     "(lowest rank of the group)",
				     g, p->hosts[gp->first].name);
		x = get(it, "rail_leaders");
		if (!x != !(p->nrails > 1))
			return lfail(ld, TP_ERR_PARSE,
				     "groups[%zu].rail_leaders: %s", g,
				     x ? "not expected with one rail"
				       : "missing (more than one rail)");
		if (x && (err = load_rail_leaders(ld, x, g)))
			return err;
		g++;
	}
	if (next != p->nhosts)
		return lfail(ld, TP_ERR_PARSE,
			     "groups: \"%s\" (and later hosts) in no group",
			     p->hosts[next].name);
	return groups_distinct(ld);
}

static tp_err_t load_tree(loader_t *ld, const cJSON *o, int t)
{
	static const char *const req[] = {"root", "ranks", NULL};
	static const char *const rreq[] = {"rank", "host", "parent", "children",
					   NULL};
	tp_plan_t *p = ld->p;
	const cJSON *it;
	uint32_t r = 0, bad;
	size_t n;
	double v;
	tp_err_t err;

	if ((err = keys(ld, o, req, NULL, "trees[%d]", t)) ||
	    (err = want_host(ld, get(o, "root"), &p->root[t], "trees[%d].root",
			     t)) ||
	    (err = want_array(ld, get(o, "ranks"), p->nhosts, p->nhosts, &n,
			      "trees[%d].ranks", t)))
		return err;
	if (!(p->parent[t] = tp__plan_alloc(p, n, sizeof(uint32_t))))
		return nomem(ld);
	cJSON_ArrayForEach(it, get(o, "ranks"))
	{
#define TR_AT "trees[%d].ranks[%u]"
		if ((err = keys(ld, it, rreq, NULL, TR_AT, t, r)) ||
		    (err = want_eq(ld, get(it, "rank"), r, TR_AT ".rank", t,
				   r)) ||
		    (err = want_name(ld, get(it, "host"), r, TR_AT ".host", t,
				     r)) ||
		    (err = want_int(ld, get(it, "parent"), -1,
				    (double)p->nhosts - 1, &v, TR_AT ".parent",
				    t, r)))
			return err;
		if (v == r)
			return lfail(ld, TP_ERR_PARSE,
				     TR_AT ".parent: its own parent", t, r);
		if ((v < 0) != (r == p->root[t]))
			return lfail(
			    ld, TP_ERR_PARSE, TR_AT ".parent: %s", t, r,
			    v < 0 ? "a second root" : "the root has a parent");
		p->parent[t][r] = v < 0 ? TP_PLAN_NONE : (uint32_t)v;
		r++;
	}
	if (!tp__plan_tree_ok(p, t, &bad)) {
		if (bad == TP_PLAN_NONE)
			return nomem(ld);
		return lfail(ld, TP_ERR_PARSE, TR_AT ".parent: cycle", t, bad);
	}
#undef TR_AT
	return TP_OK;
}

/* After the children index is built from the parents. */
static tp_err_t check_children(loader_t *ld, const cJSON *o, int t)
{
	const tp_plan_t *p = ld->p;
	const cJSON *it;
	uint32_t r = 0;

	cJSON_ArrayForEach(it, get(o, "ranks"))
	{
		const cJSON *c = get(it, "children"), *x;
		uint32_t k = p->coff[t][r], end = p->coff[t][r + 1];
		bool ok = cJSON_IsArray(c);
		const cJSON *list = ok ? c : NULL;
		cJSON_ArrayForEach(x, list)
		{
			ok = ok && k < end && cJSON_IsNumber(x) &&
			     x->valuedouble == p->child[t][k];
			k++;
		}
		if (!ok || k != end)
			return lfail(ld, TP_ERR_PARSE,
				     "trees[%d].ranks[%u].children: expected "
				     "the ranks whose parent it is, ascending",
				     t, r);
		r++;
	}
	return TP_OK;
}

/* "hier_pipelined": with predictions, per size true or false (only
 * where there is a hierarchical prediction) or null, the library's rule
 * (tp_plan_hier_pipelined()); absent: the rule at every size. */
static tp_err_t load_pipelined(loader_t *ld, const cJSON *arr)
{
	tp_plan_t *p = ld->p;
	const cJSON *it;
	size_t n, i = 0;
	tp_err_t err;

	if (!arr)
		return TP_OK;
	if (!p->predicted)
		return lfail(ld, TP_ERR_PARSE,
			     "hier_pipelined: without predictions");
	if ((err = want_array(ld, arr, p->nsizes, p->nsizes, &n,
			      "hier_pipelined")))
		return err;
	cJSON_ArrayForEach(it, arr)
	{
		bool have = !isnan(p->pred[TP_ALGO_HIERARCHICAL][i]);
		if (!cJSON_IsNull(it) && !(have && cJSON_IsBool(it)))
			return lfail(ld, TP_ERR_PARSE,
				     "hier_pipelined[%zu]: expected %s", i,
				     have ? "true, false or null"
					  : "null (no hierarchical "
					    "prediction)");
		p->hier_pipe[i] = cJSON_IsNull(it)   ? 0
				  : cJSON_IsTrue(it) ? 2
						     : 1;
		i++;
	}
	return TP_OK;
}

static tp_err_t load_cost(loader_t *ld, const cJSON *root)
{
	static const char *const rreq[] = {"bytes", "algo", "basis", NULL};
	tp_plan_t *p = ld->p;
	const cJSON *it, *pred = get(root, "predicted");
	size_t n, i = 0;
	tp_err_t err;

	if ((err = want_array(ld, get(root, "sizes"), 1, TP_PLAN_MAX_SIZES,
			      &p->nsizes, "sizes")))
		return err;
	cJSON_ArrayForEach(it, get(root, "sizes"))
	{
		if (!cJSON_IsNumber(it) || !(it->valuedouble > 0) ||
		    !isfinite(it->valuedouble) ||
		    (i && !(it->valuedouble > p->sizes[i - 1])))
			return lfail(ld, TP_ERR_PARSE,
				     "sizes[%zu]: expected a positive size "
				     "above the previous one",
				     i);
		p->sizes[i++] = it->valuedouble;
	}
	for (int a = 0; a < TP_PLAN_NALGOS; a++)
		for (i = 0; i < TP_PLAN_MAX_SIZES; i++)
			p->pred[a][i] = NAN;
	if (!cJSON_IsNull(pred)) {
		static const char *const preq[] = {"ring", "hierarchical",
						   "tree", NULL};
		if ((err = keys(ld, pred, preq, NULL, "predicted")))
			return err;
		p->predicted = true;
		for (int a = 0; a < TP_PLAN_NALGOS; a++) {
			const char *an = tp_algo_name((tp_algo_t)a);
			if ((err =
				 want_array(ld, get(pred, an), p->nsizes,
					    p->nsizes, &n, "predicted.%s", an)))
				return err;
			i = 0;
			cJSON_ArrayForEach(it, get(pred, an))
			{
				if (!cJSON_IsNull(it) &&
				    !(cJSON_IsNumber(it) &&
				      it->valuedouble >= 0 &&
				      isfinite(it->valuedouble)))
					return lfail(ld, TP_ERR_PARSE,
						     "predicted.%s[%zu]: "
						     "expected seconds or null",
						     an, i);
				if (cJSON_IsNumber(it))
					p->pred[a][i] = it->valuedouble;
				i++;
			}
		}
	}
	if ((err = load_pipelined(ld, get(root, "hier_pipelined"))))
		return err;
	if ((err = want_array(ld, get(root, "recommend"), p->nsizes, p->nsizes,
			      &n, "recommend")))
		return err;
	i = 0;
	cJSON_ArrayForEach(it, get(root, "recommend"))
	{
		const cJSON *algo, *basis;
		tp_algo_t a;
		if ((err = keys(ld, it, rreq, NULL, "recommend[%zu]", i)))
			return err;
		if (!cJSON_IsNumber(get(it, "bytes")) ||
		    get(it, "bytes")->valuedouble != p->sizes[i])
			return lfail(ld, TP_ERR_PARSE,
				     "recommend[%zu].bytes: expected "
				     "sizes[%zu]",
				     i, i);
		algo = get(it, "algo");
		if (!cJSON_IsString(algo) ||
		    tp_algo_parse(algo->valuestring, &a) ||
		    (int)a >= TP_PLAN_NALGOS)
			return lfail(ld, TP_ERR_PARSE,
				     "recommend[%zu].algo: expected ring, "
				     "hierarchical or tree",
				     i);
		basis = get(it, "basis");
		if (!cJSON_IsString(basis) ||
		    (strcmp(basis->valuestring, "model") &&
		     strcmp(basis->valuestring, "rule")))
			return lfail(ld, TP_ERR_PARSE,
				     "recommend[%zu].basis: expected model or "
				     "rule",
				     i);
		p->rec[i] = a;
		p->rec_model[i] = strcmp(basis->valuestring, "model") == 0;
		if (p->rec_model[i] && isnan(p->pred[a][i]))
			return lfail(ld, TP_ERR_PARSE,
				     "recommend[%zu]: basis model without a "
				     "prediction",
				     i);
		i++;
	}
	return TP_OK;
}

/* "rank_weights": one integer 1..TP_RANK_WEIGHT per local rank, every
 * host running as many ranks (tp_plan_rank_weights()). */
static tp_err_t load_weights(loader_t *ld, const cJSON *it)
{
	tp_plan_t *p = ld->p;
	uint32_t g = p->hosts[0].nranks, l = 0;
	const cJSON *w;
	size_t n;
	double v;
	tp_err_t err;

	if (!it)
		return TP_OK;
	for (size_t r = 1; r < p->nhosts; r++)
		if (p->hosts[r].nranks != g)
			return lfail(ld, TP_ERR_PARSE,
				     "rank_weights: the hosts run different "
				     "rank counts (%" PRIu32 " and %" PRIu32
				     ")",
				     g, p->hosts[r].nranks);
	if ((err = want_array(ld, it, g, g, &n, "rank_weights")))
		return err;
	if (!(p->weight = tp__plan_alloc(p, g, sizeof(uint32_t))))
		return nomem(ld);
	cJSON_ArrayForEach(w, it)
	{
		if ((err = want_int(ld, w, 1, TP_RANK_WEIGHT, &v,
				    "rank_weights[%" PRIu32 "]", l)))
			return err;
		p->weight[l++] = (uint32_t)v;
	}
	p->nweight = g;
	return TP_OK;
}

/* Each size's recommendation is the builder's (tp__plan_recommend): the
 * fastest prediction ("model", ties to the first algorithm), or the fixed
 * rule where none is predicted. libtopoplace-coll's auto choice runs it. */
static tp_err_t check_recommend(loader_t *ld)
{
	tp_plan_t *p = ld->p;
	tp_algo_t rec[TP_PLAN_MAX_SIZES];
	bool model[TP_PLAN_MAX_SIZES];

	memcpy(rec, p->rec, sizeof(rec));
	memcpy(model, p->rec_model, sizeof(model));
	tp__plan_recommend(p);
	for (size_t i = 0; i < p->nsizes; i++) {
		if (rec[i] == p->rec[i] && model[i] == p->rec_model[i])
			continue;
		return lfail(
		    ld, TP_ERR_PARSE,
		    "recommend[%zu]: %s by %s, where the plan gives %s "
		    "by %s (%s)",
		    i, tp_algo_name(rec[i]), model[i] ? "model" : "rule",
		    tp_algo_name(p->rec[i]), p->rec_model[i] ? "model" : "rule",
		    p->rec_model[i] ? "the fastest prediction"
				    : "no prediction: the fixed rule");
	}
	return TP_OK;
}

static tp_err_t load_root(loader_t *ld, const cJSON *root)
{
	static const char *const req[] = {
	    "format", "world_size", "nodes", "rails",	  "ring",      "hosts",
	    "groups", "trees",	    "sizes", "predicted", "recommend", NULL};
	static const char *const opt[] = {"host_segment", "rank_weights",
					  "hier_pipelined", NULL};
	tp_plan_t *p = ld->p;
	const cJSON *it, *fmt = get(root, "format"), *trees;
	uint32_t first = 0, r = 0;
	size_t n;
	double v;
	tp_err_t err;

	if (!cJSON_IsObject(root))
		return lfail(ld, TP_ERR_PARSE, "expected a JSON object");
	if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, TP_PLAN_FORMAT))
		return lfail(ld, TP_ERR_FORMAT, "format: expected \"%s\"",
			     TP_PLAN_FORMAT);
	if ((err = keys(ld, root, req, opt, "plan")) ||
	    (err = want_int(ld, get(root, "nodes"), 1, TP_PLAN_NONE - 1.0, &v,
			    "nodes")))
		return err;
	p->nhosts = (size_t)v;
	if ((err = want_int(ld, get(root, "rails"), 0, 1024, &v, "rails")))
		return err;
	p->nrails = (int)v;
	it = get(root, "host_segment");
	if (it && !cJSON_IsBool(it))
		return lfail(ld, TP_ERR_PARSE,
			     "host_segment: expected true or false");
	p->host_segment = !it || cJSON_IsTrue(it);
	if ((err = load_ring(ld, get(root, "ring"))) ||
	    (err = want_array(ld, get(root, "hosts"), p->nhosts, p->nhosts, &n,
			      "hosts")))
		return err;
	cJSON_ArrayForEach(it, get(root, "hosts"))
	{
		if ((err = load_host(ld, it, r, &first)))
			return err;
		r++;
	}
	if ((err = want_eq(ld, get(root, "world_size"), first, "world_size")))
		return err;
	p->world = first;
	trees = get(root, "trees");
	if ((err = load_groups(ld, get(root, "groups"))) ||
	    (err = want_array(ld, trees, 2, 2, &n, "trees")) ||
	    (err = load_tree(ld, cJSON_GetArrayItem(trees, 0), 0)) ||
	    (err = load_tree(ld, cJSON_GetArrayItem(trees, 1), 1)))
		return err;
	if (tp__plan_index_trees(p))
		return nomem(ld);
	if ((err = check_children(ld, cJSON_GetArrayItem(trees, 0), 0)) ||
	    (err = check_children(ld, cJSON_GetArrayItem(trees, 1), 1)) ||
	    (err = load_weights(ld, get(root, "rank_weights"))) ||
	    (err = load_cost(ld, root)))
		return err;
	/* the writer says false only of predictions that priced the host
	 * phases as rings; without them the header promises true */
	if (!p->host_segment && !p->predicted)
		return lfail(ld, TP_ERR_PARSE,
			     "host_segment: false without predictions");
	return check_recommend(ld);
}

tp_err_t tp_plan_parse_json(const char *name, const char *buf, size_t len,
			    tp_plan_t **plan_p, char **err_p)
{
	loader_t ld = {.name = name ? name : "plan"};
	const char *end = NULL;
	size_t off;
	char bad[64];
	cJSON *root = NULL;
	tp_err_t err;

	if (!buf || !plan_p) {
		err = lfail(&ld, TP_ERR_INVAL, "no input");
		goto out;
	}
	if (tp_json_bad_text(buf, len, bad, sizeof(bad))) {
		err = lfail(&ld, TP_ERR_PARSE, "%s", bad);
		goto out;
	}
	root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root) {
		err =
		    lfail(&ld, TP_ERR_PARSE, "not valid JSON near byte %zu",
			  end && end >= buf ? (size_t)(end - buf) : (size_t)0);
		goto out;
	}
	/* JSON white space only after the document: not NUL bytes */
	off = end && end >= buf ? (size_t)(end - buf) : len;
	if (off < len && (off += tp_json_space(end, len - off)) < len) {
		err =
		    lfail(&ld, TP_ERR_PARSE, "trailing data at byte %zu", off);
		goto out;
	}
	if (!(ld.p = tp__plan_new())) {
		err = nomem(&ld);
		goto out;
	}
	if ((err = load_root(&ld, root)))
		goto out;
	*plan_p = ld.p;
	ld.p = NULL;
out:
	if (err && err_p) {
		*err_p = ld.err;
		ld.err = NULL;
	}
	tp_free(ld.err);
	tp_plan_destroy(ld.p);
	cJSON_Delete(root);
	return err;
}

tp_err_t tp_plan_load_json(const char *path, tp_plan_t **plan_p, char **err_p)
{
	char *buf = NULL;
	size_t len;
	tp_err_t err;

	if (!path) {
		if (err_p)
			*err_p = tp_strdup("no plan file");
		return TP_ERR_INVAL;
	}
	if ((err = tp_file_read(path, &buf, &len))) {
		if (err_p)
			*err_p =
			    tp_asprintf("%s: %s", path, tp_file_strerror(err));
		return err;
	}
	err = tp_plan_parse_json(path, buf, len, plan_p, err_p);
	tp_free(buf);
	return err;
}
