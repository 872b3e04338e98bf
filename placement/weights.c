/*
 * weights.c - Slurm's node weights (slurm.conf Weight=) for the models of
 * its selection: read from a slurm.conf as Slurm's parser reads it
 * (src/common/parse_config.c, parse_value.c s_p_handle_uint32,
 * read_config.c), or made from the fabric's cable health as an admin
 * would set them to keep weakly cabled hosts last.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "placement_int.h"

/* Slurm's INFINITE; a node's Weight= of it is taken one lower. */
#define WEIGHT_INFINITE UINT32_MAX

static uint32_t *ones(size_t n)
{
	uint32_t *w = tp_malloc((n + 1) * sizeof(uint32_t));

	for (size_t h = 0; w && h < n; h++)
		w[h] = 1;
	return w;
}

typedef struct wload {
	const tp_fabric_t *f;
	const char *path;
	size_t line; /* the logical line's first */
	uint32_t *w;
	uint32_t def; /* NodeName=DEFAULT Weight= so far */
	size_t named; /* fabric hosts a line named */
	char *err;
	/* tp_slurm_conf_nodes: every node named, and an Include met */
	char **names;
	size_t nnames, capnames;
	bool include;
} wload_t;

#define wfail(ld_, code_, ...)                                                 \
	tp_first_error(&(ld_)->err, (ld_)->path, (code_), __VA_ARGS__)

/* s_p_handle_uint32: base 0, a k suffix (x 1024), INFINITE / UNLIMITED;
 * then read_config.c takes a node's INFINITE one lower. */
static tp_err_t parse_weight(wload_t *ld, const char *v, uint32_t *w_p)
{
	unsigned long long x;
	char *end;

	errno = 0;
	x = strtoull(v, &end, 0);
	if (*end == 'k' || *end == 'K') {
		x = x > ULLONG_MAX / 1024 ? ULLONG_MAX : x * 1024;
		end++;
	}
	if (*end || !*v) { /* "" read as 0 */
		if (strcasecmp(v, "INFINITE") && strcasecmp(v, "UNLIMITED"))
			return wfail(ld, TP_ERR_PARSE,
				     "line %zu: Weight=%s is not a number",
				     ld->line, v);
		x = WEIGHT_INFINITE;
	} else if (errno == ERANGE || x > UINT32_MAX || strchr(v, '-')) {
		return wfail(ld, TP_ERR_PARSE,
			     "line %zu: Weight=%s is not 0 .. 4294967295",
			     ld->line, v);
	}
	*w_p = x == WEIGHT_INFINITE ? WEIGHT_INFINITE - 1 : (uint32_t)x;
	return TP_OK;
}

/* The '=' of a KEY= (blanks before '=' allowed) at p, the key's end in
 * *kend_p; NULL when p starts none. */
static char *pair_eq(char *p, char **kend_p)
{
	char *k = p;

	while (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
		p++;
	*kend_p = p;
	while (isspace((unsigned char)*p))
		p++;
	return *p == '=' && *kend_p > k ? p : NULL;
}

/* The next KEY=VALUE of a logical line at *s (the value unquoted), as
 * Slurm's key-value expression takes them: a key of letters, digits, '_'
 * and '.', blanks around '=' allowed; false at its end. A word that
 * starts no pair is skipped. */
static bool next_pair(char **s, char **key, char **val)
{
	char *p = *s;

	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			return false;
		char *k = p, *kend, *eq = pair_eq(k, &kend);
		if (!eq) {
			while (*p && !isspace((unsigned char)*p))
				p++;
			continue;
		}
		*kend = '\0';
		*key = k;
		p = eq + 1;
		/* blanks after '=' lead to the value, unless the next word
		 * is a pair of its own ("NodeName= Weight=3": empty) */
		char *v = p;
		while (isspace((unsigned char)*v))
			v++;
		if (!pair_eq(v, &kend))
			p = v;
		if (*p == '"') {
			char *q = strchr(p + 1, '"');
			*val = p + 1;
			p = q ? q : p + strlen(p);
		} else {
			*val = p;
			while (*p && !isspace((unsigned char)*p))
				p++;
		}
		if (*p)
			*p++ = '\0';
		*s = p;
		return true;
	}
}

/* A NodeName= value's host list expanded into *list_p, *n_p (one name at
 * least when need_one: "," expands to none); the error named by line. */
static tp_err_t expand_names(wload_t *ld, const char *names, bool need_one,
			     char ***list_p, size_t *n_p)
{
	tp_err_t err = tp_hostlist_expand(names, list_p, n_p);

	if (err == TP_ERR_NOMEM)
		return wfail(ld, err, "out of memory");
	if (!err && need_one && !*n_p) {
		tp_hostlist_free(*list_p, *n_p);
		err = TP_ERR_PARSE;
	}
	if (err)
		return wfail(ld, TP_ERR_PARSE,
			     "line %zu: NodeName=%s is not a host list",
			     ld->line, names);
	return TP_OK;
}

/* One logical line: its NodeName= and Weight=, every other key ignored. */
static tp_err_t node_line(wload_t *ld, char *s)
{
	char *names = NULL, *weight = NULL, *key, *val;
	uint32_t w;
	tp_err_t err;

	while (next_pair(&s, &key, &val)) {
		if (!strcasecmp(key, "NodeName"))
			names = val;
		else if (!strcasecmp(key, "Weight"))
			weight = val;
	}
	if (!names)
		return TP_OK;
	if (!*names)
		return wfail(ld, TP_ERR_PARSE, "line %zu: NodeName= is empty",
			     ld->line);
	w = ld->def;
	if (weight && (err = parse_weight(ld, weight, &w)))
		return err;
	if (!strcasecmp(names, "DEFAULT")) {
		ld->def = w;
		return TP_OK;
	}
	char **list = NULL;
	size_t n = 0;
	if ((err = expand_names(ld, names, false, &list, &n)))
		return err;
	for (size_t i = 0; i < n; i++) {
		uint32_t h = tp_fabric_host_find(ld->f, list[i]);
		if (h == TP_ID_NONE)
			continue; /* a node off the fabric: a CPU node */
		ld->w[h] = w;
		ld->named++;
	}
	tp_hostlist_free(list, n);
	return TP_OK;
}

/* _strip_comments: '#' ends the line unless an odd number of backslashes
 * comes right before it. */
static void strip_comment(char *s)
{
	size_t bs = 0;

	for (; *s; s++) {
		if (*s == '#' && bs % 2 == 0) {
			*s = '\0';
			return;
		}
		bs = *s == '\\' ? bs + 1 : 0;
	}
}

/* _strip_continuation: a line ending (blanks aside) in an odd number of
 * backslashes goes on with the next; the last backslash and the blanks
 * after it go. Whether it does. */
static bool strip_continuation(char *s)
{
	size_t len = strlen(s), bs = 0;
	char *p = s + len;

	while (p > s) {
		char c = p[-1];
		if (c == '\\')
			bs++;
		else if (!(isspace((unsigned char)c) && !bs))
			break;
		p--;
	}
	if (bs % 2 == 0)
		return false;
	p[bs - 1] = '\0';
	return true;
}

/* _strip_escapes: a backslash goes, "\\" leaves one. */
static void strip_escapes(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '\\' && *++s == '\0')
			break;
		*o++ = *s;
	}
	*o = '\0';
}

/* Each logical line of ld->path (comments stripped, continuations
 * joined, escapes undone) through fn, ld->line its first line's number,
 * until fn fails; the file's errors name it. */
static tp_err_t each_line(wload_t *ld, tp_err_t (*fn)(wload_t *, char *))
{
	tp_strbuf_t sb = {0};
	char *buf = NULL;
	size_t len, lines = 0;
	tp_err_t err;

	if ((err = tp_file_read(ld->path, &buf, &len)))
		wfail(ld, err, "%s", tp_file_strerror(err));
	char *p = buf ? buf + tp_text_bom(buf, len) : NULL;
	while (!err && p && p < buf + len) {
		char *nl = memchr(p, '\n', (size_t)(buf + len - p));
		char *end = nl ? nl : buf + len;
		if (!sb.len)
			ld->line = lines + 1;
		lines++;
		if (memchr(p, '\0', (size_t)(end - p))) {
			err = wfail(ld, TP_ERR_PARSE, "line %zu: a NUL byte",
				    lines);
			break;
		}
		*end = '\0';
		strip_comment(p);
		bool more = strip_continuation(p) && nl;
		tp_strbuf_append(&sb, p, strlen(p));
		p = end + 1;
		if (more)
			continue;
		if (sb.failed) {
			err = wfail(ld, TP_ERR_NOMEM, "out of memory");
			break;
		}
		if (sb.buf) {
			strip_escapes(sb.buf);
			err = fn(ld, sb.buf);
		}
		sb.len = 0;
		if (sb.buf)
			sb.buf[0] = '\0';
	}
	tp_free(sb.buf);
	tp_free(buf);
	return err;
}

/* The caller's *err_p takes ld's error (or it is freed); returns err. */
static tp_err_t hand_error(wload_t *ld, tp_err_t err, char **err_p)
{
	if (err && err_p) {
		*err_p = ld->err;
		ld->err = NULL;
	}
	tp_free(ld->err);
	ld->err = NULL;
	return err;
}

tp_err_t tp_node_weights_load(const tp_fabric_t *f, const char *path,
			      uint32_t **w_p, char **err_p)
{
	wload_t ld = {.f = f, .path = path, .def = 1};
	tp_err_t err;

	if (!f || !path || !w_p)
		return TP_ERR_INVAL;
	if (!(ld.w = ones(tp_fabric_nhosts(f))))
		err = wfail(&ld, TP_ERR_NOMEM, "out of memory");
	else
		err = each_line(&ld, node_line);
	if (!err && !ld.named)
		err = wfail(&ld, TP_ERR_NOTFOUND,
			    "no NodeName= line names a host of the fabric");
	if (err) {
		tp_free(ld.w);
		return hand_error(&ld, err, err_p);
	}
	*w_p = ld.w;
	return TP_OK;
}

/* One logical line for tp_slurm_conf_nodes: its NodeName= hosts (not
 * DEFAULT), or an Include. */
static tp_err_t names_line(wload_t *ld, char *s)
{
	char *names = NULL, *key, *val, **list = NULL;
	size_t n = 0;
	tp_err_t err;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!strncasecmp(s, "include", 7) && (s[7] == ' ' || s[7] == '\t')) {
		ld->include = true;
		return TP_OK;
	}
	while (next_pair(&s, &key, &val))
		if (!strcasecmp(key, "NodeName"))
			names = val;
	if (!names || !strcasecmp(names, "DEFAULT"))
		return TP_OK;
	if ((err = expand_names(ld, names, true, &list, &n)))
		return err;
	void *a = ld->names;
	if (tp_grow(&a, &ld->capnames, ld->nnames + n, sizeof(char *))) {
		tp_hostlist_free(list, n);
		return wfail(ld, TP_ERR_NOMEM, "out of memory");
	}
	ld->names = a;
	memcpy(ld->names + ld->nnames, list, n * sizeof(char *));
	ld->nnames += n;
	tp_free(list); /* the names are ld's now */
	return TP_OK;
}

tp_err_t tp_slurm_conf_nodes(const char *path, char ***names_p, size_t *n_p,
			     bool *include_p, char **err_p)
{
	wload_t ld = {.path = path};
	tp_err_t err;

	if (!path || !names_p || !n_p || !include_p)
		return TP_ERR_INVAL;
	if ((err = each_line(&ld, names_line))) {
		tp_hostlist_free(ld.names, ld.nnames);
		return hand_error(&ld, err, err_p);
	}
	*names_p = ld.names;
	*n_p = ld.nnames;
	*include_p = ld.include;
	return TP_OK;
}

tp_err_t tp_node_weights_health(const tp_state_t *s, uint32_t weak,
				uint32_t **w_p)
{
	const tp_fabric_t *f = s ? tp_state_fabric(s) : NULL;
	uint32_t *w;

	if (!f || !w_p || weak < 2 || weak >= WEIGHT_INFINITE)
		return TP_ERR_INVAL;
	if (!(w = ones(tp_fabric_nhosts(f))))
		return TP_ERR_NOMEM;
	for (uint32_t h = 0; h < tp_fabric_nhosts(f); h++)
		if (tp__state_weak(s, h))
			w[h] = weak;
	*w_p = w;
	return TP_OK;
}
