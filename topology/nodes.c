/*
 * Per-node GPU data for a whole directory, and the multi-node NVLink
 * domain map.
 *
 * Node files are matched to hosts the IB readers already found: a file
 * for an unknown host is a typo or a node off the fabric, and creating a
 * host for it would give placement a node it cannot reach. Files are read
 * in name order so warnings and results do not depend on readdir.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

/* Regular files in dir ending in ext (with a non-empty stem), sorted. */
static tp_err_t list_dir(tp_fabric_t *f, const char *dir, const char *ext,
			 char ***names_p, size_t *n_p)
{
	tp_err_t err = tp_list_dir(dir, ext, names_p, n_p);

	if (err == TP_ERR_NOMEM)
		return tp__fabric_fail(f, err, "%s: out of memory", dir);
	if (err)
		return tp__fabric_fail(f, err, "%s: cannot open directory: %s",
				       dir, strerror(errno));
	return TP_OK;
}

tp_err_t tp_fabric_read_node_dir(tp_fabric_t *f, const char *dir, bool hwloc)
{
	const char *ext = hwloc ? ".xml" : ".txt";
	char **names = NULL, *first = NULL, *first_warn = NULL;
	tp_strbuf_t more = {0}; /* the next bad files' names, for the summary */
	size_t n = 0, nbad = 0;
	tp_err_t err, first_err = TP_OK;

	err = list_dir(f, dir, ext, &names, &n);
	if (err)
		return err;
	if (n == 0)
		tp__fabric_warn(f, "%s: no *%s node files", dir, ext);
	/* A bad file names itself and its host keeps no node data; the others
	 * are still read, so one run reports every bad file. */
	for (size_t i = 0; i < n && !err; i++) {
		size_t stem = strlen(names[i]) - strlen(ext);
		char *host = tp_strndup(names[i], stem);
		char *path = tp_asprintf("%s/%s", dir, names[i]);
		uint32_t idx;
		tp_err_t e = TP_OK;

		if (!host || !path) {
			err = tp__fabric_fail(f, TP_ERR_NOMEM,
					      "%s: out of memory", dir);
		} else if (tp__fabric_host_get(f, host, false, &idx) != TP_OK) {
			tp__fabric_warn(f,
					"%s: host %s is not in the fabric; "
					"skipped",
					path, host);
		} else if ((e = tp_file_check_regular(path))) {
			/* the listing keeps every entry by its name (a
			 * directory, device or dangling link is named, not
			 * passed over); a FIFO would block the reader */
			tp__fabric_fail(f, e, "%s: cannot read: %s", path,
					tp_file_strerror(e));
		} else if (hwloc) {
			e = tp_fabric_read_node_hwloc(f, host, path);
		} else {
			e = tp_fabric_read_node_nvsmi(f, host, path);
		}
		if (e == TP_ERR_NOMEM) {
			err = e;
		} else if (e && !nbad++) {
			first_err = e;
			first = tp_strdup(tp_fabric_error(f));
			first_warn = tp_asprintf("%s (host %s: no node data)",
						 tp_fabric_error(f), host);
		} else if (e) {
			/* the call's error is the first bad file's own: its
			 * warning would only say it twice until a second
			 * bad file makes the error a summary */
			if (first_warn) {
				tp__fabric_warn(f, "%s", first_warn);
				tp_free(first_warn);
				first_warn = NULL;
			}
			tp__fabric_warn(f, "%s (host %s: no node data)",
					tp_fabric_error(f), host);
			if (nbad <= 5)
				tp_strbuf_printf(&more, "%s%s",
						 nbad > 2 ? ", " : "",
						 nbad == 5 ? "..." : names[i]);
		}
		tp_free(host);
		tp_free(path);
	}
	tp_names_free(names, n);
	/* kept for a caller that goes on and writes the fabric */
	if (first_warn)
		tp__fabric_note(f, "%s", first_warn);
	tp_free(first_warn);
	if (!err && nbad)
		err = nbad == 1
			  ? tp__fabric_fail(f, first_err, "%s",
					    first ? first : dir)
			  : tp__fabric_fail(
				f, first_err,
				"%s; %zu more of %zu node files unreadable "
				"(%s; each one's reason is a warning)",
				first ? first : dir, nbad - 1, n,
				more.buf && !more.failed ? more.buf : "");
	tp_free(first);
	tp_free(more.buf);
	return err;
}

/* An NVLink domain is a rack or a few (NVL72: 18 hosts, NVL576: 144); the
 * largest fabric has 65,536 hosts. */
#define TP_DOMAIN_HOSTS_MAX 4096
#define TP_DOMAIN_MAP_MAX 65536

static const char *domain_of(const tp_fabric_t *f, const char *host)
{
	for (size_t i = 0; i < f->ndom_entries; i++)
		if (strcmp(f->dom_host[i], host) == 0)
			return f->dom_name[i];
	return "?";
}

static tp_err_t domain_line(tp_fabric_t *f, const char *path, size_t line,
			    char *s)
{
	char *hash = strchr(s, '#'), *list, **names = NULL;
	size_t n = 0;
	tp_err_t err;

	if (hash)
		*hash = '\0';
	s = tp_strtrim(s);
	if (!*s)
		return TP_OK;
	list = s + strcspn(s, " \t");
	if (*list)
		*list++ = '\0';
	list = tp_strtrim(list);
	if (!*list)
		return tp__fabric_fail(f, TP_ERR_PARSE,
				       "%s:%zu: domain %s has no hosts", path,
				       line, s);
	if (!tp__name_ok(s))
		return tp__fabric_fail(f, TP_ERR_PARSE,
				       "%s:%zu: domain name: 1-%d letters, "
				       "digits, '-', '_', '.'",
				       path, line, TP_NAME_MAX);
	/* One host list, no spaces: a stray word is a typo, not a host. */
	if (list[strcspn(list, " \t")])
		return tp__fabric_fail(f, TP_ERR_PARSE,
				       "%s:%zu: expected 'domain hostlist', "
				       "got more fields",
				       path, line);
	/* counted before anything is built: a few bytes of range can ask
	 * for a million names */
	if (tp_hostlist_count(list, &n) == TP_OK &&
	    (n > TP_DOMAIN_HOSTS_MAX ||
	     f->ndom_entries + n > TP_DOMAIN_MAP_MAX))
		return tp__fabric_fail(
		    f, TP_ERR_PARSE,
		    "%s:%zu: domain %s: %zu hosts (at most %d in a domain, %d "
		    "in a map)",
		    path, line, s, n, TP_DOMAIN_HOSTS_MAX, TP_DOMAIN_MAP_MAX);
	err = tp_hostlist_expand(list, &names, &n);
	if (err == TP_ERR_NOMEM)
		return tp__fabric_fail(f, err, "%s: out of memory", path);
	if (err)
		return tp__fabric_fail(f, TP_ERR_PARSE,
				       "%s:%zu: bad host list '%.64s': %s",
				       path, line, list, tp_strerror(err));
	for (size_t i = 0; i < n && !err; i++) {
		err = tp__fabric_domain_add(f, s, names[i]);
		if (err == TP_ERR_EXISTS)
			err = tp__fabric_fail(f, TP_ERR_PARSE,
					      "%s:%zu: host %s already in "
					      "domain %s",
					      path, line, names[i],
					      domain_of(f, names[i]));
		else if (err == TP_ERR_INVAL)
			err = tp__fabric_fail(
			    f, TP_ERR_PARSE,
			    "%s:%zu: host %zu of the list: "
			    "1-%d letters, digits, '-', '_', '.'",
			    path, line, i + 1, TP_NAME_MAX);
		else if (err)
			err =
			    tp__fabric_fail(f, err, "%s: out of memory", path);
	}
	tp_hostlist_free(names, n);
	return err;
}

/* A map that fails half way must not leave half its domains behind. */
static void domain_rollback(tp_fabric_t *f, size_t keep)
{
	while (f->ndom_entries > keep) {
		f->ndom_entries--;
		tp_free(f->dom_name[f->ndom_entries]);
		tp_free(f->dom_host[f->ndom_entries]);
	}
}

tp_err_t tp_fabric_read_domain_map(tp_fabric_t *f, const char *path)
{
	size_t len, line = 0, keep = f->ndom_entries;
	char *buf = NULL, *s, *end;
	tp_err_t err;

	err = tp_file_read(path, &buf, &len);
	if (err)
		return tp__fabric_fail(f, err, "%s: cannot read: %s", path,
				       tp_file_strerror(err));
	end = buf + len;
	for (s = buf + tp_text_bom(buf, len); s < end && !err; s++) {
		char *e = memchr(s, '\n', (size_t)(end - s));

		if (!e)
			e = end;
		line++;
		if (memchr(s, '\0', (size_t)(e - s))) {
			err = tp__fabric_fail(
			    f, TP_ERR_PARSE, "%s:%zu: binary data", path, line);
			break;
		}
		*e = '\0';
		err = domain_line(f, path, line, s);
		s = e;
	}
	tp_free(buf);
	if (err)
		domain_rollback(f, keep);
	return err;
}
