/*
 * The fabric's HCAs of one host, matched to the kernel's device names on
 * that host by node GUID (tp_runtime.h).
 *
 * Notes:
 * - The fabric's device names come from node descriptions: on the real
 *   SuperPOD dump in the fixtures they are "HCA-1".."HCA-6", not the
 *   kernel's mlx5_N. NCCL_IB_HCA with such names matches no device and
 *   NCCL silently falls back to sockets, so only names found under
 *   <sysfs>/class/infiniband are exported.
 * - sysfs writes node_guid as four groups of four hex digits
 *   ("e09d:7303:0085:94bc"), the fabric's GUID is the node GUID
 *   ibnetdiscover prints as H-e09d7303008594bc.
 * - Device names are checked (short, no '/', printable): they go into an
 *   environment variable every task of the job reads.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime_int.h"
#include "tp_runtime.h"

/* Longer than any kernel IB device name (IB_DEVICE_NAME_MAX is 64). */
#define DEV_NAME_MAX 64

struct tp_hca_map {
	size_t n;	 /* this host's CAs in the fabric */
	char **fabric;	 /* [n] their names in the fabric (NULL: none) */
	uint64_t *guid;	 /* [n] */
	int *rail;	 /* [n] the rail of each (tp_ca_t.rail) */
	char **local;	 /* [n] the local device with that GUID, or NULL */
	size_t nlocal;	 /* devices found under class/infiniband */
	char **ldev;	 /* [nlocal] */
	uint64_t *lguid; /* [nlocal] */
};

bool tp_hca_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= DEV_NAME_MAX || s[0] == '.')
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 0x7f || *s == '/' || *s == ',' ||
		    *s == '=' || *s == '^' || *s == ':')
			return false;
	return true;
}

/* "e09d:7303:0085:94bc\n" */
static bool sysfs_guid(const char *s, uint64_t *guid_p)
{
	uint64_t g = 0;
	int digits = 0;

	for (; *s && *s != '\n'; s++) {
		int v;

		if (*s == ':')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			return false;
		if (++digits > 16)
			return false;
		g = g << 4 | (uint64_t)v;
	}
	if (digits != 16)
		return false;
	*guid_p = g;
	return true;
}

/* dirfd/<name>/node_guid; false when unreadable or malformed. */
static bool read_node_guid(int dirfd, const char *name, uint64_t *guid_p)
{
	char path[512], buf[64];
	ssize_t r;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/node_guid", name) >=
	    sizeof(path))
		return false;
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return false;
	buf[r] = '\0';
	return sysfs_guid(buf, guid_p);
}

static tp_err_t read_local(tp_hca_map_t *m, const char *sysfs_root)
{
	char *path = tp_asprintf("%s/class/infiniband", sysfs_root);
	size_t cap = 0, gcap = 0;
	struct dirent *de;
	tp_err_t err = TP_OK;
	DIR *d;

	if (!path)
		return TP_ERR_NOMEM;
	d = opendir(path);
	tp_free(path);
	if (!d)
		return TP_OK; /* no InfiniBand here: nothing maps */
	while (!err && (de = readdir(d))) {
		uint64_t g;
		char *name;

		/* a node has a handful; more is not a real sysfs */
		if (!tp_hca_name_ok(de->d_name) || m->nlocal >= 1024 ||
		    !read_node_guid(dirfd(d), de->d_name, &g))
			continue;
		if (tp_grow((void **)&m->ldev, &cap, m->nlocal + 1,
			    sizeof(char *)) ||
		    tp_grow((void **)&m->lguid, &gcap, m->nlocal + 1,
			    sizeof(uint64_t)) ||
		    !(name = tp_strdup(de->d_name))) {
			err = TP_ERR_NOMEM;
			break;
		}
		m->ldev[m->nlocal] = name;
		m->lguid[m->nlocal++] = g;
	}
	closedir(d);
	return err;
}

tp_err_t tp_hca_map_read(const tp_fabric_t *f, const char *host,
			 const char *sysfs_root, tp_hca_map_t **map_p)
{
	const tp_host_t *h;
	tp_hca_map_t *m;
	uint32_t hi;

	if (!f || !host || !sysfs_root || !map_p)
		return TP_ERR_INVAL;
	if ((hi = tp_fabric_host_find(f, host)) == TP_ID_NONE)
		return TP_ERR_NOTFOUND;
	h = tp_fabric_host(f, hi);
	if (!(m = tp_calloc(1, sizeof(*m))))
		return TP_ERR_NOMEM;
	m->n = h->ncas;
	m->fabric = tp_calloc(m->n, sizeof(char *));
	m->local = tp_calloc(m->n, sizeof(char *));
	m->guid = tp_calloc(m->n, sizeof(uint64_t));
	m->rail = tp_calloc(m->n, sizeof(int));
	if (!m->fabric || !m->local || !m->guid || !m->rail ||
	    read_local(m, sysfs_root) != TP_OK)
		goto nomem;
	for (size_t i = 0; i < m->n; i++) {
		const tp_ca_t *ca = tp_fabric_ca(f, h->cas[i]);

		m->guid[i] = ca->guid;
		m->rail[i] = ca->rail;
		if (ca->dev && !(m->fabric[i] = tp_strdup(ca->dev)))
			goto nomem;
		for (size_t k = 0; k < m->nlocal; k++)
			if (m->lguid[k] == ca->guid)
				m->local[i] = m->ldev[k];
	}
	*map_p = m;
	return TP_OK;
nomem:
	tp_hca_map_destroy(m);
	return TP_ERR_NOMEM;
}

void tp_hca_map_destroy(tp_hca_map_t *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->fabric && i < m->n; i++)
		tp_free(m->fabric[i]);
	for (size_t k = 0; k < m->nlocal; k++)
		tp_free(m->ldev[k]);
	tp_free(m->fabric);
	tp_free(m->local);
	tp_free(m->guid);
	tp_free(m->rail);
	tp_free(m->ldev);
	tp_free(m->lguid);
	tp_free(m);
}

const char *tp_hca_map_local(const tp_hca_map_t *m, const char *fabric_dev)
{
	for (size_t i = 0; m && fabric_dev && i < m->n; i++)
		if (m->fabric[i] && !strcmp(m->fabric[i], fabric_dev))
			return m->local[i];
	return NULL;
}

const char *tp_hca_map_local_rail(const tp_hca_map_t *m, int rail, bool *has_p)
{
	const char *dev = NULL;

	if (has_p)
		*has_p = false;
	for (size_t i = 0; m && i < m->n; i++)
		if (m->rail[i] == rail && !m->fabric[i]) {
			if (has_p)
				*has_p = true;
			if (!dev)
				dev = m->local[i];
		}
	return dev;
}

size_t tp_hca_map_count(const tp_hca_map_t *m)
{
	size_t n = 0;

	for (size_t i = 0; m && i < m->n; i++)
		n += m->local[i] != NULL;
	return n;
}

static bool is_local(const tp_hca_map_t *m, const char *name, size_t len)
{
	for (size_t k = 0; k < m->nlocal; k++)
		if (strlen(m->ldev[k]) == len && !memcmp(m->ldev[k], name, len))
			return true;
	return false;
}

/* The value of the name attribute of a tag whose attributes start at p,
 * walked one key="value" at a time as NCCL's parser does, so that
 * neither ifname="..." nor a value holding name="..." passes for it;
 * NULL when the tag ends without one or is malformed. */
static const char *tag_name(const char *p, size_t *len_p)
{
	for (;;) {
		const char *key, *val;

		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		key = p;
		while (*p && *p != '=' && *p != '>' && *p != '/' && *p != ' ' &&
		       *p != '\t' && *p != '\n' && *p != '\r')
			p++;
		if (p == key || p[0] != '=' || p[1] != '"')
			return NULL;
		val = p + 2;
		if (!(p = strchr(val, '"')))
			return NULL;
		if (val - key == 6 && !memcmp(key, "name", 4)) {
			*len_p = (size_t)(p - val);
			return val;
		}
		p++;
	}
}

bool tp_hca_map_topo_ok(const tp_hca_map_t *m, const char *xml)
{
	static const char tag[] = "<net";
	const char *p = xml;

	if (!m || !xml)
		return false;
	while ((p = strstr(p, tag))) {
		const char *name;
		size_t len;

		p += sizeof(tag) - 1;
		/* the tag's name ends where NCCL's parser ends it: at white
		 * space (a line break too), '/' or '>' (<network> is not
		 * it) */
		if (!*p)
			return false; /* cut off */
		if (!strchr(" \t\n\r/>", *p))
			continue;
		if (!(name = tag_name(p, &len)) || !is_local(m, name, len))
			return false;
	}
	return true;
}

bool tp_hca_map_topo_root_ok(const char *xml)
{
	const char *p = xml;

	if (!p)
		return false;
	if (!strncmp(p, "\xEF\xBB\xBF", 3))
		p += 3;
	for (;;) {
		const char *end = NULL;

		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (!strncmp(p, "<?", 2))
			end = strstr(p, "?>");
		else if (!strncmp(p, "<!--", 4))
			end = strstr(p + 4, "-->");
		else if (!strncmp(p, "<!", 2))
			end = strchr(p, '>');
		else
			break;
		if (!end)
			return false;
		/* past "?>", "-->" or ">" */
		p = end + (*end == '>' ? 1 : end[1] == '>' ? 2 : 3);
	}
	return !strncmp(p, "<system", 7) &&
	       (p[7] == '>' || p[7] == '/' || p[7] == ' ' || p[7] == '\t' ||
		p[7] == '\r' || p[7] == '\n');
}
