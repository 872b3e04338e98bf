/*
 * GUID -> host name map, for CAs whose node description names no host
 * (vendor defaults, "localhost"). One "GUID name" pair per line; '#' starts
 * a comment. The name may also be quoted node-description style, as in
 * ibnetdiscover's --node-name-map files ("0x0002c903000a1b2c "node17
 * HCA-1""), so those files can be reused: the host is then taken from the
 * description by the same rule as for the fabric's own descriptions.
 * As in rdma-core's reader of those files, a comment may follow the
 * closing quote ("0x13 "mtx01 HCA-1" # rack 3").
 */
#include "config.h"

#include <string.h>

#include "topology_int.h"

#define LINE_MAX_LEN 4096

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static tp_err_t guid_name_put(tp_fabric_t *f, uint64_t guid, char *name)
{
	void *arr = f->guid_names;

	if (tp_grow(&arr, &f->capguid_names, f->nguid_names + 1,
		    sizeof(char *)))
		return TP_ERR_NOMEM;
	f->guid_names = arr;
	if (tp_u64map_put(f->guid_name, guid, (uint32_t)f->nguid_names))
		return TP_ERR_NOMEM;
	f->guid_names[f->nguid_names++] = name;
	f->finalized = false;
	return TP_OK;
}

/* Host name of the value part, freshly allocated; NULL with *why set when
 * the value names no host. */
static tp_err_t line_name(char *v, char **name_p, const char **why_p)
{
	char *q, *dev = NULL;
	tp_err_t err;

	*name_p = NULL;
	if (*v == '"') {
		/* the closing quote is the first one followed by nothing but
		 * blanks and a comment: a quote may sit inside the
		 * description or the comment */
		for (q = strchr(v + 1, '"'); q; q = strchr(q + 1, '"')) {
			const char *r = q + 1;
			while (is_blank(*r))
				r++;
			if (!*r || *r == '#')
				break;
		}
		if (!q) {
			*why_p = strchr(v + 1, '"')
				     ? "text after the quoted name"
				     : "unterminated quote";
			return TP_OK;
		}
		*q = '\0';
		err = tp__desc_hostname(v + 1, name_p, &dev);
		tp_free(dev);
		if (!err && !*name_p)
			*why_p = "description names no host";
		return err;
	}
	for (q = v; *q; q++) {
		if (is_blank(*q)) {
			*why_p = "host name has spaces (quote a description)";
			return TP_OK;
		}
	}
	/* a host name as the fabric takes it (a bad one failed finalize
	 * with "invalid argument", naming neither file nor line) */
	if (!tp__name_ok(v)) {
		*why_p = "not a host name (letters, digits, '-', '_', '.', "
			 "at most 255 characters)";
		return TP_OK;
	}
	*name_p = tp_strdup(v);
	return *name_p ? TP_OK : TP_ERR_NOMEM;
}

static tp_err_t parse_map(tp_fabric_t *f, const char *path, const char *buf,
			  size_t len)
{
	char line[LINE_MAX_LEN + 1], *s, *g, *v, *hash, *name;
	const char *p = buf + tp_text_bom(buf, len), *end = buf + len, *nl,
		   *why;
	size_t lineno = 0, n;
	uint64_t guid;
	uint32_t idx;
	tp_err_t err;

	while (p < end) {
		lineno++;
		nl = memchr(p, '\n', (size_t)(end - p));
		n = (size_t)((nl ? nl : end) - p);
		if (n > LINE_MAX_LEN)
			return tp__fabric_fail(f, TP_ERR_PARSE,
					       "%s:%zu: line too long", path,
					       lineno);
		if (memchr(p, '\0', n))
			return tp__fabric_fail(f, TP_ERR_PARSE,
					       "%s:%zu: NUL byte in text", path,
					       lineno);
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + 1;

		/* A '#' inside a quoted description is not a comment. */
		hash = strchr(line, '#');
		if (hash && !memchr(line, '"', (size_t)(hash - line)))
			*hash = '\0';
		s = tp_strtrim(line);
		if (!*s)
			continue;
		for (g = s; *g && !is_blank(*g); g++)
			;
		v = g;
		while (is_blank(*v))
			v++;
		*g = '\0';
		if (!tp_parse_guid(s, &guid))
			return tp__fabric_fail(f, TP_ERR_PARSE,
					       "%s:%zu: bad GUID \"%.40s\"",
					       path, lineno, s);
		if (!*v)
			return tp__fabric_fail(f, TP_ERR_PARSE,
					       "%s:%zu: GUID without a name",
					       path, lineno);
		why = NULL;
		err = line_name(v, &name, &why);
		if (err)
			return tp__fabric_fail(f, err, "%s:%zu: out of memory",
					       path, lineno);
		if (!name)
			return tp__fabric_fail(f, TP_ERR_PARSE, "%s:%zu: %s",
					       path, lineno, why);
		idx = tp_u64map_get(f->guid_name, guid);
		if (idx != TP_MAP_NONE) {
			bool same = strcmp(f->guid_names[idx], name) == 0;
			err = same ? TP_OK
				   : tp__fabric_fail(
					     f, TP_ERR_PARSE,
					     "%s:%zu: GUID 0x%016llx mapped to "
					     "both \"%s\" and \"%s\"",
					     path, lineno,
					     (unsigned long long)guid,
					     f->guid_names[idx], name);
			tp_free(name);
			if (err)
				return err;
			continue;
		}
		if (guid_name_put(f, guid, name)) {
			tp_free(name);
			return tp__fabric_fail(f, TP_ERR_NOMEM,
					       "%s:%zu: out of memory", path,
					       lineno);
		}
	}
	return TP_OK;
}

tp_err_t tp_fabric_read_guid_map(tp_fabric_t *f, const char *path)
{
	char *buf;
	size_t len;
	tp_err_t err;

	if (!f || !path)
		return TP_ERR_INVAL;
	err = tp_file_read(path, &buf, &len);
	if (err)
		return tp__fabric_fail(f, err, "%s: cannot read: %s", path,
				       tp_file_strerror(err));
	err = parse_map(f, path, buf, len);
	tp_free(buf);
	return err;
}
