/*
 * weights.c - Slurm's node weights (slurm.conf Weight=) for the models of
 * its selection: read from a slurm.conf, or made from the fabric's cable
 * health as an admin would set them to keep weakly cabled hosts last.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "placement_int.h"

/* Slurm's largest Weight= (INFINITE - 1 is its "never" for a node). */
#define WEIGHT_MAX ((uint32_t)UINT32_MAX - 1)

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
	size_t line;
	uint32_t *w;
	uint32_t def;  /* NodeName=DEFAULT Weight= so far */
	size_t named;  /* fabric hosts a line named */
	char *err;
} wload_t;

#define wfail(ld_, code_, ...)                                                 \
	tp_first_error(&(ld_)->err, (ld_)->path, (code_), __VA_ARGS__)

static tp_err_t parse_weight(wload_t *ld, const char *v, uint32_t *w_p)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno || x > WEIGHT_MAX)
		return wfail(ld, TP_ERR_PARSE,
			     "line %zu: Weight=%s is not a number 0..%u",
			     ld->line, v, WEIGHT_MAX);
	*w_p = (uint32_t)x;
	return TP_OK;
}

/* One logical line: its NodeName= and Weight=, every other key ignored. */
static tp_err_t node_line(wload_t *ld, char *s)
{
	char *names = NULL, *weight = NULL, *save = NULL;
	uint32_t w;
	tp_err_t err;

	for (char *tok = strtok_r(s, " \t\r", &save); tok;
	     tok = strtok_r(NULL, " \t\r", &save)) {
		if (!strncasecmp(tok, "NodeName=", 9))
			names = tok + 9;
		else if (!strncasecmp(tok, "Weight=", 7))
			weight = tok + 7;
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
	err = tp_hostlist_expand(names, &list, &n);
	if (err == TP_ERR_NOMEM)
		return wfail(ld, err, "out of memory");
	if (err)
		return wfail(ld, TP_ERR_PARSE,
			     "line %zu: NodeName=%s is not a host list",
			     ld->line, names);
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

tp_err_t tp_node_weights_load(const tp_fabric_t *f, const char *path,
			      uint32_t **w_p, char **err_p)
{
	wload_t ld = {.f = f, .path = path, .def = 1};
	char *buf = NULL;
	size_t len;
	tp_err_t err;

	if (!f || !path || !w_p)
		return TP_ERR_INVAL;
	if ((err = tp_file_read(path, &buf, &len)))
		wfail(&ld, err, "%s", tp_file_strerror(err));
	else if (!(ld.w = ones(tp_fabric_nhosts(f))))
		err = wfail(&ld, TP_ERR_NOMEM, "out of memory");
	size_t more = 0; /* lines a backslash joined to this one */

	for (char *p = buf, *next; !err && p < buf + len; p = next) {
		char *nl = memchr(p, '\n', (size_t)(buf + len - p));
		char *end = nl ? nl : buf + len;
		size_t l = (size_t)(end - p);
		next = end + 1;
		ld.line++;
		if (memchr(p, '\0', l)) {
			err = wfail(&ld, TP_ERR_PARSE, "line %zu: a NUL byte",
				    ld.line);
			break;
		}
		/* a line ending in a backslash goes on on the next one (the
		 * line number stays the first's) */
		while (l && isspace((unsigned char)p[l - 1]))
			l--;
		if (l && p[l - 1] == '\\' && nl && !memchr(p, '#', l)) {
			p[l - 1] = ' ';
			*end = ' ';
			next = p;
			ld.line--;
			more++;
			continue;
		}
		*end = '\0';
		char *hash = strchr(p, '#');
		if (hash)
			*hash = '\0';
		err = node_line(&ld, p);
		ld.line += more;
		more = 0;
	}
	if (!err && !ld.named)
		err = wfail(&ld, TP_ERR_NOTFOUND,
			    "no NodeName= line names a host of the fabric");
	tp_free(buf);
	if (err) {
		tp_free(ld.w);
		if (err_p) {
			*err_p = ld.err;
			ld.err = NULL;
		}
		tp_free(ld.err);
		return err;
	}
	*w_p = ld.w;
	return TP_OK;
}

tp_err_t tp_node_weights_health(const tp_state_t *s, uint32_t weak,
				uint32_t **w_p)
{
	const tp_fabric_t *f = s ? tp_state_fabric(s) : NULL;
	uint32_t *w;

	if (!f || !w_p || weak < 1 || weak > WEIGHT_MAX)
		return TP_ERR_INVAL;
	if (!(w = ones(tp_fabric_nhosts(f))))
		return TP_ERR_NOMEM;
	for (uint32_t h = 0; h < tp_fabric_nhosts(f); h++)
		if (tp__state_weak(s, h))
			w[h] = weak;
	*w_p = w;
	return TP_OK;
}
