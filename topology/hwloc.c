/*
 * hwloc XML of a GPU node: GPUs, their NUMA node, nearest HCA and NVLink
 * bandwidth.
 *
 * Notes:
 * - Debian's hwloc has no CUDA/NVML backend, so everything comes from XML
 *   exported on the node. I/O filters must be set before loading or hwloc
 *   drops the PCI and OS devices the XML holds.
 * - Many real exports have no CUDA/NVML OS devices at all; GPUs are then
 *   NVIDIA PCI devices of class 3D or VGA. The BMC's VGA fails the vendor
 *   test and NVSwitches are class 0x0680, so neither is counted.
 * - GPUs are numbered in PCI bus order: that is NVML's and nvidia-smi's
 *   order, which Slurm's GRES and our nvidia-smi reader use too.
 * - hwloc 2.9's XML importer crashes on some malformed files (objects
 *   without complete_nodeset, fixed in later hwloc): each file is read in
 *   a forked child with a time limit, and node XML is data to read in the
 *   CLI, never in a daemon that must stay up.
 */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hwloc.h>

#include "topology_int.h"

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_CLASS_VGA	  0x0300
#define PCI_CLASS_3D	  0x0302
#define PCI_CLASS_IB	  0x0207
/* hwloc reports NVLink bandwidth in MB/s; we store Gbit/s. */
#define MBS_TO_GBPS (8.0 / 1000.0)
/* "dddd:bb:dd.f" and its NUL, with room for hwloc's 32-bit domain */
#define TP_BUSID_MAX 24
/* The error for two GPUs at one PCI address (path, address). */
#define DUP_GPU_FMT "%s: two GPUs at PCI %s"

typedef struct gpu_cand {
	hwloc_obj_t pci;
	const char *model; /* borrowed from the topology */
	double nvlink_mbs;
} gpu_cand_t;

typedef struct nic_cand {
	hwloc_obj_t osdev;
	hwloc_obj_t pci;
} nic_cand_t;

/* How far apart two I/O objects are; smaller compares closer. */
typedef struct io_dist {
	int outside_io; /* 0: they share a PCI bridge, 1: only CPU-side objects
			 */
	int depth;	/* depth of the common ancestor (deeper is closer) */
	int hops;
} io_dist_t;

static bool name_num(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!name || strncmp(name, prefix, n) != 0 || !name[n])
		return false;
	for (const char *p = name + n; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

static bool is_nv_gpu_osdev(hwloc_obj_t o)
{
	hwloc_obj_osdev_type_t t = o->attr->osdev.type;

	if (t != HWLOC_OBJ_OSDEV_COPROC && t != HWLOC_OBJ_OSDEV_GPU)
		return false;
	/* Old exports (DGX-2) carry no subtype; the backend names are stable.
	 */
	return name_num(o->name, "cuda") || name_num(o->name, "nvml");
}

static bool is_nv_gpu_pci(hwloc_obj_t o)
{
	unsigned cls = o->attr->pcidev.class_id;

	return o->attr->pcidev.vendor_id == PCI_VENDOR_NVIDIA &&
	       (cls == PCI_CLASS_3D || cls == PCI_CLASS_VGA);
}

/* a's PCI address as NCCL and nvidia-smi write it: 0000:07:00.0 */
static void busid(char buf[TP_BUSID_MAX], const struct hwloc_pcidev_attr_s *a)
{
	snprintf(buf, TP_BUSID_MAX, "%04x:%02x:%02x.%x", (unsigned)a->domain,
		 a->bus, a->dev, a->func);
}

static int cand_cmp(const void *a, const void *b)
{
	const struct hwloc_pcidev_attr_s *x =
	    &((const gpu_cand_t *)a)->pci->attr->pcidev;
	const struct hwloc_pcidev_attr_s *y =
	    &((const gpu_cand_t *)b)->pci->attr->pcidev;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->bus != y->bus)
		return x->bus < y->bus ? -1 : 1;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->func != y->func)
		return x->func < y->func ? -1 : 1;
	return 0;
}

/* "mlx5_2" before "mlx5_10". */
static int natcmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			unsigned long x = strtoul(a, (char **)&a, 10);
			unsigned long y = strtoul(b, (char **)&b, 10);
			if (x != y)
				return x < y ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

static int nic_cmp(const void *a, const void *b)
{
	return natcmp(((const nic_cand_t *)a)->osdev->name,
		      ((const nic_cand_t *)b)->osdev->name);
}

static hwloc_obj_t pci_parent(hwloc_obj_t o)
{
	for (; o; o = o->parent)
		if (o->type == HWLOC_OBJ_PCI_DEVICE)
			return o;
	return NULL;
}

/* Edges from o up to the root. */
static int obj_height(hwloc_obj_t o)
{
	int n = 0;

	for (; o && o->parent; o = o->parent)
		n++;
	return n;
}

/* The common ancestor found by climbing both to one height and then in
 * step: no bound on how deep a PCI hierarchy goes. */
static io_dist_t io_distance(hwloc_obj_t a, hwloc_obj_t b)
{
	io_dist_t d = {2, 0, INT_MAX};
	int na = obj_height(a), nb = obj_height(b), ha = 0, hb = 0;
	hwloc_obj_t x = a, y = b;

	for (; na > nb; na--, ha++)
		x = x->parent;
	for (; nb > na; nb--, hb++)
		y = y->parent;
	while (x && y && x != y) {
		x = x->parent;
		y = y->parent;
		ha++;
		hb++;
	}
	if (!x || x != y)
		return d;
	d.hops = ha + hb + 1;
	if (x->cpuset) {
		d.outside_io = 1;
		d.depth = x->depth;
	} else {
		d.outside_io = 0;
		for (hwloc_obj_t o = x; o && !o->cpuset; o = o->parent)
			d.depth++;
	}
	return d;
}

static bool io_closer(io_dist_t x, io_dist_t y)
{
	if (x.outside_io != y.outside_io)
		return x.outside_io < y.outside_io;
	if (x.depth != y.depth)
		return x.depth > y.depth;
	return x.hops < y.hops;
}

/* -1 when the device hangs off an object spanning several NUMA nodes. */
static int numa_of(hwloc_topology_t topo, hwloc_obj_t pci)
{
	hwloc_obj_t o = hwloc_get_non_io_ancestor_obj(topo, pci);

	if (!o || !o->nodeset || hwloc_bitmap_weight(o->nodeset) != 1)
		return -1;
	return hwloc_bitmap_first(o->nodeset);
}

/* Major.minor of <topology version="..."> near the start; 0 if absent
 * (hwloc 1.x files carry none). */
static void xml_version(const char *buf, unsigned *major_p, unsigned *minor_p)
{
	const char *t = strstr(buf, "<topology");
	const char *end, *v;

	*major_p = *minor_p = 0;
	if (!t)
		return;
	end = strchr(t, '>');
	v = strstr(t, "version=\"");
	if (!end || !v || v > end)
		return;
	if (sscanf(v + 9, "%u.%u", major_p, minor_p) < 1)
		*major_p = 0;
}

/* Whether the XML at s (its first '<') is UTF-8: declared so, or
 * declaring no encoding (XML's default). A file declaring another is
 * libxml2's to decode. */
static bool utf8_declared(const char *s)
{
	const char *end, *enc;

	if (strncmp(s, "<?xml", 5))
		return true;
	end = strstr(s, "?>");
	enc = strstr(s, "encoding");
	if (!end || !enc || enc > end)
		return true;
	/* XML's Eq: white space allowed around '=' */
	enc += 8;
	enc += strspn(enc, " \t\r\n");
	if (*enc++ != '=')
		return true;
	enc += strspn(enc, " \t\r\n");
	if (*enc == '"' || *enc == '\'')
		enc++;
	return !strncasecmp(enc, "UTF-8", 5) || !strncasecmp(enc, "UTF8", 4);
}

/* What a file hwloc refused looks like, for its error line (buf holds
 * len bytes and a NUL after them): empty, not XML, binary, not UTF-8
 * (libxml2 stops at such a byte and says nothing: a description edited
 * in Latin-1), or cut short (no closing </topology>: a copy or an export
 * that stopped). A literal, or hint (size bytes) when it names an
 * offset. */
static const char *parse_hint(const char *buf, size_t len, char *hint,
			      size_t size)
{
	const char *nul = memchr(buf, '\0', len);
	size_t i = 0;

	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' ||
			   buf[i] == '\n'))
		i++;
	if (i == len)
		return " (empty file)";
	if (buf[i] != '<')
		return " (not XML)";
	if (nul) {
		snprintf(hint, size, " (NUL byte at offset %zu: binary data)",
			 (size_t)(nul - buf));
		return hint;
	}
	for (const char *p = utf8_declared(buf + i) ? buf + i : ""; *p; p++) {
		size_t n = tp_utf8_len(p);
		if (!n) {
			snprintf(hint, size,
				 " (byte 0x%02X at offset %zu is not UTF-8)",
				 (unsigned char)*p, (size_t)(p - buf));
			return hint;
		}
		p += n - 1;
	}
	if (!strstr(buf + i, "<topology"))
		return " (no <topology> element: not an hwloc XML export)";
	if (!strstr(buf + i, "</topology>"))
		return " (no closing </topology>: truncated?)";
	return "";
}

/* "<path>: hwloc cannot parse this XML (hint)" for the len bytes at buf,
 * the file as read. */
static char *parse_error(const char *path, const char *buf, size_t len)
{
	char hint[64];

	return tp_asprintf("%s: hwloc cannot parse this XML%s", path,
			   parse_hint(buf, len, hint, sizeof(hint)));
}

/* Load one XML; on failure *err_p is "<path>: why" (tp_free it), left NULL
 * when even that allocation failed. A 3.0 file is brought down once
 * (down true): a version the rewrite leaves as it was ("3.0.1" reads as
 * 3.0 here) is refused, not rewritten again and again. */
static tp_err_t load_xml(const char *path, const char *buf, size_t len,
			 bool down, hwloc_topology_t *topo_p, char **err_p)
{
	hwloc_topology_t topo;
	unsigned major, minor;

	*err_p = NULL;
	if (len >= INT_MAX) {
		*err_p = tp_asprintf("%s: file too large", path);
		return TP_ERR_RANGE;
	}
	xml_version(buf, &major, &minor);
	if (down && major == 3 && minor == 0 &&
	    hwloc_get_api_version() >> 16 < 3) {
		/* hwloc 3's export, read as the 2.x file it differs from
		 * in form only */
		char *v2 = NULL;
		size_t n2;
		tp_err_t err = tp__hwloc_xml_v3_to_v2(buf, len, &v2, &n2);
		if (err) {
			*err_p = tp_asprintf("%s: %s", path,
					     err == TP_ERR_NOMEM
						 ? "out of memory"
						 : "malformed hwloc 3.0 XML");
			return err;
		}
		err = load_xml(path, v2, n2, false, topo_p, err_p);
		tp_free(v2);
		if (err == TP_ERR_PARSE) {
			/* the hint's offsets are the file's, not the
			 * rewrite's */
			tp_free(*err_p);
			*err_p = parse_error(path, buf, len);
		}
		return err;
	}
	if (hwloc_topology_init(&topo) < 0) {
		*err_p = tp_asprintf("%s: cannot create hwloc topology", path);
		return TP_ERR_NOMEM;
	}
	if (hwloc_topology_set_io_types_filter(
		topo, HWLOC_TYPE_FILTER_KEEP_ALL) == 0 &&
	    hwloc_topology_set_xmlbuffer(topo, buf, (int)len + 1) == 0 &&
	    hwloc_topology_load(topo) == 0) {
		*topo_p = topo;
		return TP_OK;
	}
	hwloc_topology_destroy(topo);
	if (major > 2) {
		unsigned api = hwloc_get_api_version();
		*err_p = tp_asprintf("%s: hwloc %u.x cannot read this XML "
				     "(format %u.%u, from hwloc %u?)",
				     path, api >> 16, major, minor, major);
		return TP_ERR_FORMAT;
	}
	*err_p = parse_error(path, buf, len);
	return TP_ERR_PARSE;
}

/* hwloc writes some complaints to stderr itself ("hwloc: Topology does
 * not contain any NUMA node, aborting!"), and a library must not print:
 * the child's stderr goes to a memory file (fd returned, -1 when it
 * cannot), whose last line joins a parse error instead. */
static int capture_stderr(void)
{
	int fd = memfd_create("hwloc-stderr", 0);

	if (fd < 0)
		return -1;
	fflush(stderr);
	if (dup2(fd, STDERR_FILENO) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The last non-empty line written to fd, without hwloc's "hwloc: " and
 * anything unprintable, cut to fit said (n > 1); false when none. */
static bool last_said(int fd, char *said, size_t n)
{
	char buf[4096];
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from =
	    end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0;
	ssize_t got = pread(fd, buf, sizeof(buf) - 1, from);
	char *line, *nl;
	size_t k = 0;

	if (got <= 0)
		return false;
	buf[got] = '\0';
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
		buf[--got] = '\0';
	nl = strrchr(buf, '\n');
	line = nl ? nl + 1 : buf;
	if (!strncmp(line, "hwloc: ", 7))
		line += 7;
	for (; *line && k + 1 < n; line++)
		said[k++] = isprint((unsigned char)*line) ? *line : '?';
	said[k] = '\0';
	return k > 0;
}

/* Read and load path, in the child only (stderr is taken over); errors
 * as load_xml, a parse error with what hwloc said. */
static tp_err_t read_xml(const char *path, hwloc_topology_t *topo_p,
			 char **err_p)
{
	char *buf = NULL;
	size_t len;
	tp_err_t err = tp_file_read(path, &buf, &len);
	int said_fd;
	char said[160];

	if (err) {
		*err_p = tp_asprintf("%s: cannot read: %s", path,
				     tp_file_strerror(err));
		return err;
	}
	said_fd = capture_stderr();
	err = load_xml(path, buf, len, true, topo_p, err_p);
	tp_free(buf);
	if (err == TP_ERR_PARSE && *err_p && said_fd >= 0 &&
	    last_said(said_fd, said, sizeof(said))) {
		char *m = tp_asprintf("%s (hwloc: %s)", *err_p, said);
		if (m) {
			tp_free(*err_p);
			*err_p = m;
		}
	}
	return err;
}

static tp_err_t add_cand(gpu_cand_t **c_p, size_t *n_p, size_t *cap_p,
			 hwloc_obj_t pci, const char *model)
{
	void *arr = *c_p;

	for (size_t i = 0; i < *n_p; i++)
		if ((*c_p)[i].pci == pci) {
			if (!(*c_p)[i].model)
				(*c_p)[i].model = model;
			return TP_OK;
		}
	if (tp_grow(&arr, cap_p, *n_p + 1, sizeof(**c_p)))
		return TP_ERR_NOMEM;
	*c_p = arr;
	(*c_p)[*n_p] = (gpu_cand_t){pci, model, 0};
	(*n_p)++;
	return TP_OK;
}

/* TP_ERR_PARSE, with the address in dup (hwloc's form), when two GPUs
 * share a PCI address: an edited or spliced file, whose GPU order (PCI
 * order, as NVML and Slurm's GRES number them) is not defined. */
static tp_err_t find_gpus(hwloc_topology_t topo, gpu_cand_t **c_p, size_t *n_p,
			  char dup[TP_BUSID_MAX])
{
	gpu_cand_t *c = NULL;
	size_t n = 0, cap = 0;
	hwloc_obj_t o = NULL, pci;

	/* CUDA, NVML and OpenCL describe the same device: keep one per PCI
	 * function. OpenCL alone does not make a GPU (AMD cards have it). */
	while ((o = hwloc_get_next_osdev(topo, o))) {
		if (!is_nv_gpu_osdev(o) || !(pci = pci_parent(o)))
			continue;
		if (add_cand(&c, &n, &cap, pci,
			     hwloc_obj_get_info_by_name(o, "GPUModel")))
			goto nomem;
	}
	if (n == 0) {
		while ((o = hwloc_get_next_pcidev(topo, o)))
			if (is_nv_gpu_pci(o) && add_cand(&c, &n, &cap, o, NULL))
				goto nomem;
	}
	for (size_t i = 0; i < n; i++)
		if (!c[i].model)
			c[i].model =
			    hwloc_obj_get_info_by_name(c[i].pci, "PCIDevice");
	if (n > 1)
		qsort(c, n, sizeof(*c), cand_cmp);
	for (size_t i = 1; i < n; i++)
		if (!cand_cmp(&c[i - 1], &c[i])) {
			busid(dup, &c[i].pci->attr->pcidev);
			tp_free(c);
			return TP_ERR_PARSE;
		}
	*c_p = c;
	*n_p = n;
	return TP_OK;
nomem:
	tp_free(c);
	return TP_ERR_NOMEM;
}

static tp_err_t find_nics(hwloc_topology_t topo, nic_cand_t **nics_p,
			  size_t *n_p)
{
	nic_cand_t *nics = NULL;
	size_t n = 0, cap = 0, nib = 0;
	hwloc_obj_t o = NULL;

	while ((o = hwloc_get_next_osdev(topo, o))) {
		void *arr = nics;
		if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS ||
		    !o->name)
			continue;
		if (tp_grow(&arr, &cap, n + 1, sizeof(*nics))) {
			tp_free(nics);
			return TP_ERR_NOMEM;
		}
		nics = arr;
		nics[n].osdev = o;
		nics[n].pci = pci_parent(o);
		if (nics[n].pci &&
		    nics[n].pci->attr->pcidev.class_id == PCI_CLASS_IB)
			nib++;
		n++;
	}
	/* The model is an InfiniBand fabric: a closer RoCE or usNIC port
	 * must not win over an IB HCA. Keep the rest when there is no IB. */
	if (nib > 0) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (nics[i].pci &&
			    nics[i].pci->attr->pcidev.class_id == PCI_CLASS_IB)
				nics[k++] = nics[i];
		n = k;
	}
	if (n > 1)
		qsort(nics, n, sizeof(*nics), nic_cmp);
	*nics_p = nics;
	*n_p = n;
	return TP_OK;
}

/* The GPU's nearest NIC; among equally near ones the one fewer GPUs took
 * so far (taken[], counted here; the earlier on a tie): a DGX A100 has
 * two GPUs and two HCAs behind each PCIe switch, and pairs them one to
 * one. NULL for none. */
static const char *nearest_nic(hwloc_obj_t gpu, const nic_cand_t *nics,
			       size_t n, size_t *taken)
{
	size_t best = SIZE_MAX;
	io_dist_t bd = {0, 0, 0};

	for (size_t i = 0; i < n; i++) {
		io_dist_t d;
		if (!nics[i].pci)
			continue;
		d = io_distance(gpu, nics[i].pci);
		if (d.hops == INT_MAX)
			continue;
		if (best == SIZE_MAX || io_closer(d, bd) ||
		    (!io_closer(bd, d) && taken[i] < taken[best])) {
			best = i;
			bd = d;
		}
	}
	if (best == SIZE_MAX)
		return NULL;
	taken[best]++;
	return nics[best].osdev->name;
}

static long cand_of(hwloc_obj_t o, const gpu_cand_t *c, size_t n)
{
	hwloc_obj_t pci = o ? pci_parent(o) : NULL;

	for (size_t i = 0; pci && i < n; i++)
		if (c[i].pci == pci)
			return (long)i;
	return -1;
}

/* Sum each GPU's row over its GPU and NVSwitch peers: the figure is what
 * the GPU reaches other GPUs of the host at (cost.c prices GPU-to-GPU
 * transfers with it). NVLinks to a POWER CPU carry host memory traffic,
 * not peer traffic; hwloc gives that peer as a CPU-side object (Package,
 * NUMA node), GPUs and NVSwitches as I/O objects. */
static void add_nvlink(hwloc_topology_t topo, gpu_cand_t *c, size_t n)
{
	struct hwloc_distances_s *d;
	unsigned nr = 1;

	if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &d, 0) <
		0 ||
	    nr == 0)
		return;
	if (d->kind & HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH) {
		for (unsigned i = 0; i < d->nbobjs; i++) {
			long gi = cand_of(d->objs[i], c, n);
			if (gi < 0)
				continue;
			for (unsigned j = 0; j < d->nbobjs; j++)
				if (j != i && cand_of(d->objs[j], c, n) != gi &&
				    hwloc_obj_type_is_io(d->objs[j]->type))
					c[gi].nvlink_mbs +=
					    (double)
						d->values[i * d->nbobjs + j];
		}
	}
	hwloc_distances_release(topo, d);
}

static tp_err_t build_gpus(hwloc_topology_t topo, const gpu_cand_t *c, size_t n,
			   tp_gpu_t **gpus_p)
{
	nic_cand_t *nics = NULL;
	size_t nnics = 0;
	tp_gpu_t *gpus;
	size_t *taken;

	if (find_nics(topo, &nics, &nnics))
		return TP_ERR_NOMEM;
	gpus = tp_calloc(n ? n : 1, sizeof(*gpus));
	taken = tp_calloc(nnics + 1, sizeof(size_t));
	if (!gpus || !taken) {
		tp_free(gpus);
		tp_free(taken);
		tp_free(nics);
		return TP_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const char *nic = nearest_nic(c[i].pci, nics, nnics, taken);
		tp_gpu_t *g = &gpus[i];
		char id[TP_BUSID_MAX];

		g->index = (int)i;
		g->numa = numa_of(topo, c[i].pci);
		g->hca = -1;
		g->nvlink_gbps = c[i].nvlink_mbs * MBS_TO_GBPS;
		busid(id, &c[i].pci->attr->pcidev);
		g->pci = tp_strdup(id);
		g->model = c[i].model ? tp_strdup(c[i].model) : NULL;
		g->nic = nic ? tp_strdup(nic) : NULL;
		if (!g->pci || (c[i].model && !g->model) || (nic && !g->nic)) {
			for (size_t k = 0; k <= i; k++)
				tp__gpu_free_strings(&gpus[k]);
			tp_free(gpus);
			tp_free(taken);
			tp_free(nics);
			return TP_ERR_NOMEM;
		}
	}
	tp_free(taken);
	tp_free(nics);
	*gpus_p = gpus;
	return TP_OK;
}

/* ---- hwloc in a child ------------------------------------------------------
 *
 * hwloc runs in a forked child (tp_child_run): a crash or a loop in its XML
 * importer costs the one file. The child sends its result back as fields
 * each ended by a NUL byte (strings cannot hold one): a string that may be
 * NULL is "+text" or "-". On error the child sends the "<path>: why" text.
 */

/* Far above any real export (a DGX's XML loads in milliseconds). */
#define HWLOC_CHILD_MS 30000

typedef struct node_job {
	const char *path;
	bool has_pci;	/* out (parent) */
	tp_gpu_t *gpus; /* out (parent), ngpus of them */
	size_t ngpus;
} node_job_t;

static void put_field(tp_strbuf_t *sb, const char *s)
{
	tp_strbuf_append(sb, s, strlen(s) + 1);
}

static void put_opt(tp_strbuf_t *sb, const char *s)
{
	tp_strbuf_append(sb, s ? "+" : "-", 1);
	tp_strbuf_append(sb, s ? s : "", (s ? strlen(s) : 0) + 1);
}

/* Next NUL-ended field at *cur, NULL when the buffer ends first. */
static const char *get_field(const char **cur, const char *end)
{
	const char *s = *cur, *nul = memchr(s, '\0', (size_t)(end - s));

	if (!nul)
		return NULL;
	*cur = nul + 1;
	return s;
}

/* An optional string: *ok_p false on a malformed field or NOMEM. */
static char *get_opt(const char **cur, const char *end, bool *ok_p)
{
	const char *s = get_field(cur, end);
	char *dup;

	if (!s || (*s != '+' && *s != '-') || (*s == '-' && s[1])) {
		*ok_p = false;
		return NULL;
	}
	if (*s == '-')
		return NULL;
	dup = tp_strdup(s + 1);
	if (!dup)
		*ok_p = false;
	return dup;
}

/* Run job in a child; on error *msg_p is "<path>: why" (tp_free it). */
static tp_err_t contained(const char *path, tp_child_fn_t fn, void *job,
			  tp_strbuf_t *out, char **msg_p)
{
	int sig = 0;
	tp_err_t err = tp_child_run(fn, job, HWLOC_CHILD_MS, out, &sig);

	*msg_p = NULL;
	if (err == TP_OK)
		return TP_OK;
	if (sig) {
		*msg_p = tp_asprintf("%s: hwloc crashed reading this XML "
				     "(signal %d, %s)",
				     path, sig, strsignal(sig));
		err = TP_ERR_PARSE;
	} else if (err == TP_ERR_TIMEOUT) {
		*msg_p = tp_asprintf("%s: hwloc took more than %d s to read "
				     "this XML",
				     path, HWLOC_CHILD_MS / 1000);
		err = TP_ERR_PARSE;
	} else if (out->buf && !out->failed && out->buf[0]) {
		*msg_p = tp_strdup(out->buf);
	} else {
		*msg_p = tp_asprintf("%s: cannot run hwloc: %s", path,
				     tp_strerror(err));
	}
	tp_free(out->buf);
	*out = (tp_strbuf_t){0};
	return err;
}

/* Child: the node's GPUs, serialised. */
static tp_err_t node_child(void *arg, tp_strbuf_t *out)
{
	const node_job_t *job = arg;
	hwloc_topology_t topo = NULL;
	gpu_cand_t *c = NULL;
	tp_gpu_t *gpus = NULL;
	size_t n = 0;
	char *msg = NULL, dup[TP_BUSID_MAX];
	tp_err_t err = read_xml(job->path, &topo, &msg);

	if (err) {
		put_field(out, msg ? msg : tp_strerror(err));
		tp_free(msg);
		return err;
	}
	err = find_gpus(topo, &c, &n, dup);
	if (err == TP_ERR_PARSE) {
		msg = tp_asprintf(DUP_GPU_FMT, job->path, dup);
		put_field(out, msg ? msg : tp_strerror(err));
		hwloc_topology_destroy(topo);
		return err;
	}
	if (err == TP_OK) {
		add_nvlink(topo, c, n);
		err = build_gpus(topo, c, n, &gpus);
	}
	if (err == TP_OK) {
		tp_strbuf_printf(out, "%d%c%zu%c",
				 hwloc_get_next_pcidev(topo, NULL) != NULL, 0,
				 n, 0);
		for (size_t i = 0; i < n; i++) {
			tp_strbuf_printf(out, "%d%c%a%c", gpus[i].numa, 0,
					 gpus[i].nvlink_gbps, 0);
			put_opt(out, gpus[i].pci);
			put_opt(out, gpus[i].model);
			put_opt(out, gpus[i].nic);
		}
	}
	/* The child exits next: nothing else to free. */
	hwloc_topology_destroy(topo);
	return err;
}

static void gpus_free(tp_gpu_t *gpus, size_t n)
{
	if (gpus)
		for (size_t i = 0; i < n; i++)
			tp__gpu_free_strings(&gpus[i]);
	tp_free(gpus);
}

/* Parent: the child's fields into job->gpus. */
static tp_err_t node_unpack(node_job_t *job, const tp_strbuf_t *in)
{
	const char *cur = in->buf, *end = in->buf + in->len, *f;
	bool ok = true;
	char *e;

	if (!cur || !(f = get_field(&cur, end)))
		return TP_ERR_PARSE;
	job->has_pci = *f == '1';
	if (!(f = get_field(&cur, end)))
		return TP_ERR_PARSE;
	job->ngpus = strtoul(f, &e, 10);
	if (*e || job->ngpus > in->len)
		return TP_ERR_PARSE;
	job->gpus = tp_calloc(job->ngpus, sizeof(*job->gpus));
	if (!job->gpus)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < job->ngpus && ok; i++) {
		tp_gpu_t *g = &job->gpus[i];
		const char *numa = get_field(&cur, end);
		const char *bw = get_field(&cur, end);

		g->index = (int)i;
		g->hca = -1;
		if (!numa || !bw)
			return TP_ERR_PARSE;
		g->numa = (int)strtol(numa, NULL, 10);
		g->nvlink_gbps = tp_strtod_c(bw, NULL);
		g->pci = get_opt(&cur, end, &ok);
		g->model = get_opt(&cur, end, &ok);
		g->nic = get_opt(&cur, end, &ok);
	}
	return ok ? TP_OK : TP_ERR_PARSE;
}

tp_err_t tp_fabric_read_node_hwloc(tp_fabric_t *f, const char *host,
				   const char *path)
{
	node_job_t job = {.path = path};
	tp_strbuf_t out = {0};
	char *msg = NULL;
	uint32_t hidx;
	tp_err_t err;

	if (!host || !*host)
		return tp__fabric_fail(f, TP_ERR_INVAL, "%s: no host name",
				       path);
	err = contained(path, node_child, &job, &out, &msg);
	if (err) {
		err =
		    tp__fabric_fail(f, err, "%s", msg ? msg : tp_strerror(err));
		tp_free(msg);
		return err;
	}
	err = node_unpack(&job, &out);
	tp_free(out.buf);
	if (err == TP_OK)
		err = tp__fabric_host_get(f, host, true, &hidx);
	if (err) {
		gpus_free(job.gpus, job.ngpus);
		return tp__fabric_fail(f, err, "%s: %s", path,
				       err == TP_ERR_NOMEM
					   ? "out of memory"
					   : "garbled result from hwloc's "
					     "child process");
	}
	/* a figure no GPU reaches is an edited or garbled matrix: unknown
	 * (0), not a price of 0 s for every transfer */
	for (size_t g = 0; g < job.ngpus; g++)
		if (!(job.gpus[g].nvlink_gbps <= TP__NVLINK_GBPS_MAX)) {
			tp__fabric_warn(f,
					"%s: GPU%d's NVLinkBandwidth sums to "
					"%g Gb/s, above %g: taken as unknown "
					"(0)",
					path, job.gpus[g].index,
					job.gpus[g].nvlink_gbps,
					TP__NVLINK_GBPS_MAX);
			job.gpus[g].nvlink_gbps = 0;
		}
	if (job.ngpus == 0 && !job.has_pci) {
		/* Exported without I/O: the GPU count is unknown, not zero. */
		tp__fabric_warn(f,
				"%s: no PCI devices in this XML (exported "
				"without I/O?); GPUs of %s left unknown",
				path, host);
		tp_free(job.gpus);
	} else if (tp__fabric_host_set_gpus(f, hidx, job.gpus, job.ngpus)) {
		return tp__fabric_fail(f, TP_ERR_NOMEM, "%s: out of memory",
				       path);
	}
	return TP_OK;
}

/* ---- NCCL topology (NCCL_TOPO_FILE) ---------------------------------------
 *
 * Notes:
 * - NCCL reads the file first and then fills in, from sysfs, NVML and its
 *   network plugin, only the attributes the file lacks ("if unset"). A
 *   value written here therefore overrides NCCL's own probe. So gpu dev,
 *   sm, rank, gdr and net dev, speed, guid, maxconn, gdr, latency are left
 *   out: hwloc does not know them, or (dev: NVML index in bus order) they
 *   change inside a job's device cgroup.
 * - NCCL skips its sysfs walk for a NIC whose <net name> is already in the
 *   file, so that NIC's <pci> chain and <cpu> must be complete: every <pci>
 *   carries class, ids, link_speed and link_width, and a <net> is written
 *   only under a <cpu> with arch (and, on x86, vendor/family/model).
 *   Otherwise the NIC's <pci> is written bare and NCCL fills it.
 * - NCCL's parser knows no entities, comments or <?xml?> declaration and
 *   takes values up to 255 characters: values are checked, never escaped.
 * - hwloc keeps class without prog-if (class 0x0604 -> "0x060400") and
 *   link bandwidth without width/generation: the widest x16-first
 *   (generation, width) pair giving that bandwidth is written; NCCL's
 *   bandwidth model only uses their product. Unknown: "" and 0, which is
 *   how NCCL itself records an unreadable sysfs link (Gen3 x16 for it).
 */

#define NCCL_MAX_STR 255
/* hwloc's NVLink per-link figures (MB/s): NVLink 1 = 20000, 2-4 = 25000. */
#define NVL_MBS_V2 25000
#define NVL_MBS_V1 20000

typedef struct nccl_cpu {
	int numaid;
	hwloc_obj_t numa; /* NULL when unknown */
	const char *arch; /* NCCL spelling, NULL unknown */
	const char *vendor;
	int family, model; /* NCCL's encoding, -1 unknown */
	bool complete;
} nccl_cpu_t;

/* A host bridge or device hanging off a CPU-side object. */
typedef struct nccl_top {
	hwloc_obj_t io;
	int numaid;
} nccl_top_t;

typedef struct nccl_ctx {
	hwloc_topology_t topo;
	gpu_cand_t *gpus;
	size_t ngpus;
	struct hwloc_distances_s *nvl; /* NVLinkBandwidth, NULL if none */
	unsigned cpuset_words;	       /* 32-bit words in Linux cpumap */
	nccl_top_t *tops;
	size_t ntops, captops;
	tp_strbuf_t sb;
	size_t nnics_bare; /* NICs written without <net> */
	char dup[TP_BUSID_MAX]; /* two GPUs' PCI address (TP_ERR_PARSE) */
} nccl_ctx_t;

/* Address of this marks an I/O object with a GPU or NIC below it. */
static int nccl_mark;

static bool nccl_safe(const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++, n++)
		if (*s < 0x20 || *s > 0x7e || strchr("\"'&<>", *s))
			return false;
	return n <= NCCL_MAX_STR;
}

static bool is_io_pci(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_PCI_DEVICE ||
	       (o->type == HWLOC_OBJ_BRIDGE &&
		o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI);
}

static const struct hwloc_pcidev_attr_s *pci_attr(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_PCI_DEVICE ? &o->attr->pcidev
					       : &o->attr->bridge.upstream.pci;
}

static bool is_ofed(hwloc_obj_t o)
{
	return o->type == HWLOC_OBJ_OS_DEVICE &&
	       o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && o->name;
}

static void mark_up(hwloc_obj_t o)
{
	for (; o && !o->cpuset; o = o->parent)
		o->userdata = &nccl_mark;
}

static bool is_gpu_pci(const nccl_ctx_t *x, hwloc_obj_t o)
{
	for (size_t i = 0; i < x->ngpus; i++)
		if (x->gpus[i].pci == o)
			return true;
	return false;
}

/* NUMA node of a CPU-side object: its only one, else its first (Linux
 * reports one numa_node per device), -1 without NUMA information. */
static int obj_numa(hwloc_obj_t o)
{
	if (!o->nodeset || hwloc_bitmap_iszero(o->nodeset))
		return -1;
	return hwloc_bitmap_first(o->nodeset);
}

static tp_err_t collect_tops(nccl_ctx_t *x, hwloc_obj_t o)
{
	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
		void *arr = x->tops;
		if (c->userdata != &nccl_mark)
			continue;
		if (tp_grow(&arr, &x->captops, x->ntops + 1, sizeof(*x->tops)))
			return TP_ERR_NOMEM;
		x->tops = arr;
		x->tops[x->ntops++] = (nccl_top_t){c, obj_numa(o)};
	}
	for (hwloc_obj_t c = o->first_child; c; c = c->next_sibling)
		if (collect_tops(x, c))
			return TP_ERR_NOMEM;
	return TP_OK;
}

static const char *nccl_arch(const char *a)
{
	if (!a)
		return NULL;
	if (!strcmp(a, "x86_64"))
		return "x86_64";
	if (!strcmp(a, "aarch64") || !strcmp(a, "arm64"))
		return "arm64";
	if (!strncmp(a, "ppc64", 5))
		return "ppc64";
	return NULL;
}

static int info_int(hwloc_obj_t o, const char *name)
{
	const char *v = o ? hwloc_obj_get_info_by_name(o, name) : NULL;
	char *end;
	long n;

	if (!v)
		return -1;
	n = strtol(v, &end, 0);
	return (end == v || *end || n < 0 || n > 0xffff) ? -1 : (int)n;
}

static void cpu_describe(nccl_ctx_t *x, nccl_cpu_t *c, int numaid)
{
	hwloc_obj_t root = hwloc_get_root_obj(x->topo), pkg = NULL;
	int fam;

	c->numaid = numaid;
	c->numa =
	    numaid >= 0
		? hwloc_get_numanode_obj_by_os_index(x->topo, (unsigned)numaid)
		: NULL;
	for (hwloc_obj_t o = c->numa; o && !pkg; o = o->parent)
		if (o->type == HWLOC_OBJ_PACKAGE)
			pkg = o;
	if (!pkg)
		pkg = hwloc_get_obj_by_type(x->topo, HWLOC_OBJ_PACKAGE, 0);
	c->arch = nccl_arch(hwloc_obj_get_info_by_name(root, "Architecture"));
	c->vendor = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUVendor") : NULL;
	if (!nccl_safe(c->vendor))
		c->vendor = NULL;
	/* hwloc: display family (base + extended). NCCL: base + (extended
	 * << 4), e.g. AMD 0x17 -> 0x8f. The model is the same in both. */
	fam = info_int(pkg, "CPUFamilyNumber");
	c->family = fam >= 15 ? 15 + ((fam - 15) << 4) : fam;
	c->model = info_int(pkg, "CPUModelNumber");
	c->complete =
	    c->arch && (strcmp(c->arch, "x86_64") != 0 ||
			(c->vendor && c->family >= 0 && c->model >= 0));
}

/* Linux cpumap text: 32-bit words, most significant first. */
static void put_affinity(nccl_ctx_t *x, hwloc_const_bitmap_t set)
{
	size_t start = x->sb.len;

	if (!set || hwloc_bitmap_iszero(set) || x->cpuset_words == 0)
		return;
	tp_strbuf_printf(&x->sb, " affinity=\"");
	for (unsigned w = x->cpuset_words; w-- > 0;) {
		unsigned long v = 0;
		for (unsigned b = 0; b < 32; b++)
			if (hwloc_bitmap_isset(set, w * 32 + b))
				v |= 1UL << b;
		tp_strbuf_printf(&x->sb, "%08lx%s", v, w ? "," : "");
	}
	tp_strbuf_printf(&x->sb, "\"");
	/* Past NCCL's limit: leave it to NCCL (affinity is optional). */
	if (!x->sb.failed &&
	    x->sb.len - start - sizeof(" affinity=\"\"") + 1 > NCCL_MAX_STR) {
		x->sb.len = start;
		x->sb.buf[start] = '\0';
	}
}

static void indent(nccl_ctx_t *x, int depth)
{
	tp_strbuf_printf(&x->sb, "%*s", depth * 2, "");
}

static void put_link(nccl_ctx_t *x, float gbs)
{
	static const struct {
		const char *name; /* NCCL's kvDictPciGen spelling */
		double lane_gbs;
	} gen[] = {
	    {"2.5 GT/s", 0.25},
	    {"5 GT/s", 0.5},
	    {"8 GT/s", 8.0 * 128 / 130 / 8},
	    {"16 GT/s", 16.0 * 128 / 130 / 8},
	    {"32 GT/s", 32.0 * 128 / 130 / 8},
	    {"64.0 GT/s PCIe", 64.0 * 242 / 256 / 8},
	};
	static const int widths[] = {16, 8, 4, 2, 1, 32};

	for (size_t w = 0; gbs > 0 && w < sizeof(widths) / sizeof(*widths); w++)
		for (size_t g = 0; g < sizeof(gen) / sizeof(*gen); g++) {
			double want = gen[g].lane_gbs * widths[w];
			if (gbs > want * 0.97 && gbs < want * 1.03) {
				tp_strbuf_printf(
				    &x->sb,
				    " link_speed=\"%s\" link_width=\"%d\"",
				    gen[g].name, widths[w]);
				return;
			}
		}
	tp_strbuf_printf(&x->sb, " link_speed=\"\" link_width=\"0\"");
}

static void put_busid(nccl_ctx_t *x, const char *key,
		      const struct hwloc_pcidev_attr_s *a)
{
	char id[TP_BUSID_MAX];

	busid(id, a);
	tp_strbuf_printf(&x->sb, " %s=\"%s\"", key, id);
}

static void put_pci_open(nccl_ctx_t *x, hwloc_obj_t o, int depth)
{
	const struct hwloc_pcidev_attr_s *a = pci_attr(o);

	indent(x, depth);
	tp_strbuf_printf(&x->sb, "<pci");
	put_busid(x, "busid", a);
	tp_strbuf_printf(&x->sb,
			 " class=\"0x%04x00\" vendor=\"0x%04x\" "
			 "device=\"0x%04x\" subsystem_vendor=\"0x%04x\" "
			 "subsystem_device=\"0x%04x\"",
			 a->class_id, a->vendor_id, a->device_id,
			 a->subvendor_id, a->subdevice_id);
	put_link(x, a->linkspeed);
}

static unsigned nvlink_count(uint64_t mbs)
{
	if (mbs % NVL_MBS_V2 == 0)
		return (unsigned)(mbs / NVL_MBS_V2);
	if (mbs % NVL_MBS_V1 == 0)
		return (unsigned)(mbs / NVL_MBS_V1);
	return mbs < NVL_MBS_V2
		   ? 1
		   : (unsigned)((mbs + NVL_MBS_V2 / 2) / NVL_MBS_V2);
}

typedef struct nvl_peer {
	hwloc_obj_t pci; /* NULL: the CPU (POWER NVLink) */
	uint64_t mbs;
} nvl_peer_t;

/* One <nvlink> per peer: GPUs by bus id and class, NVSwitches (any other
 * PCI peer hwloc reports) as 0x068000, CPU-side peers as NCCL's POWER NPU
 * class 0x068001, whose target NCCL ignores (hwloc does not keep the NPU's
 * bus id, so the GPU's own is written). */
static tp_err_t put_nvlinks(nccl_ctx_t *x, hwloc_obj_t gpu, int depth,
			    bool *any_p)
{
	struct hwloc_distances_s *d = x->nvl;
	nvl_peer_t *p = NULL;
	size_t np = 0, cap = 0;

	*any_p = false;
	if (!d)
		return TP_OK;
	for (unsigned i = 0; i < d->nbobjs; i++) {
		if (pci_parent(d->objs[i]) != gpu)
			continue;
		for (unsigned j = 0; j < d->nbobjs; j++) {
			uint64_t v = d->values[i * d->nbobjs + j];
			hwloc_obj_t peer = pci_parent(d->objs[j]);
			size_t k;
			void *arr = p;

			if (j == i || v == 0 || peer == gpu)
				continue;
			for (k = 0; k < np && p[k].pci != peer; k++)
				;
			if (k == np) {
				if (tp_grow(&arr, &cap, np + 1, sizeof(*p))) {
					tp_free(p);
					return TP_ERR_NOMEM;
				}
				p = arr;
				p[np++] = (nvl_peer_t){peer, 0};
			}
			p[k].mbs += v;
		}
	}
	for (size_t k = 0; k < np; k++) {
		const struct hwloc_pcidev_attr_s *t =
		    pci_attr(p[k].pci ? p[k].pci : gpu);
		unsigned tclass = !p[k].pci ? 0x068001
				  : (t->class_id >> 8) == 0x03
				      ? (unsigned)t->class_id << 8
				      : 0x068000;

		indent(x, depth);
		tp_strbuf_printf(&x->sb, "<nvlink");
		put_busid(x, "target", t);
		tp_strbuf_printf(&x->sb, " count=\"%u\" tclass=\"0x%06x\"/>\n",
				 nvlink_count(p[k].mbs), tclass);
	}
	*any_p = np > 0;
	tp_free(p);
	return TP_OK;
}

/* The single port hwloc describes ("Port<N>State"), 0 if not exactly one. */
static unsigned ofed_port(hwloc_obj_t o)
{
	unsigned port = 0, n = 0;

	for (unsigned i = 0; i < o->infos_count; i++) {
		unsigned p;
		int end = 0;
		if (sscanf(o->infos[i].name, "Port%u%n", &p, &end) == 1 &&
		    end > 0 && !strcmp(o->infos[i].name + end, "State")) {
			port = p;
			n++;
		}
	}
	return n == 1 ? port : 0;
}

static tp_err_t put_io(nccl_ctx_t *x, hwloc_obj_t o, int depth,
		       const nccl_cpu_t *cpu)
{
	bool gpu, nic = false, sub = false;

	if (o->userdata != &nccl_mark)
		return TP_OK;
	if (!is_io_pci(o)) {
		/* Host bridge: NCCL hangs what is below it off the <cpu>. */
		for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
			if (put_io(x, c, depth, cpu))
				return TP_ERR_NOMEM;
		return TP_OK;
	}
	gpu = o->type == HWLOC_OBJ_PCI_DEVICE && is_gpu_pci(x, o);
	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) {
		if (is_ofed(c) && nccl_safe(c->name))
			nic = true;
		else if (c->userdata == &nccl_mark)
			sub = true;
	}
	if (nic && !cpu->complete) {
		nic = false;
		x->nnics_bare++;
	}
	put_pci_open(x, o, depth);
	if (!gpu && !nic && !sub) {
		tp_strbuf_printf(&x->sb, "/>\n");
		return TP_OK;
	}
	tp_strbuf_printf(&x->sb, ">\n");
	if (gpu) {
		size_t at;
		bool any;

		indent(x, depth + 1);
		at = x->sb.len;
		tp_strbuf_printf(&x->sb, "<gpu>\n");
		if (put_nvlinks(x, o, depth + 2, &any))
			return TP_ERR_NOMEM;
		if (any) {
			indent(x, depth + 1);
			tp_strbuf_printf(&x->sb, "</gpu>\n");
		} else if (!x->sb.failed) {
			x->sb.len = at;
			tp_strbuf_printf(&x->sb, "<gpu/>\n");
		}
	}
	if (nic) {
		indent(x, depth + 1);
		tp_strbuf_printf(&x->sb, "<nic>\n");
		for (hwloc_obj_t c = o->io_first_child; c;
		     c = c->next_sibling) {
			unsigned port;
			if (!is_ofed(c) || !nccl_safe(c->name))
				continue;
			indent(x, depth + 2);
			tp_strbuf_printf(&x->sb, "<net name=\"%s\"", c->name);
			if ((port = ofed_port(c)))
				tp_strbuf_printf(&x->sb, " port=\"%u\"", port);
			tp_strbuf_printf(&x->sb, "/>\n");
		}
		indent(x, depth + 1);
		tp_strbuf_printf(&x->sb, "</nic>\n");
	}
	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
		if (!is_ofed(c) && put_io(x, c, depth + 1, cpu))
			return TP_ERR_NOMEM;
	indent(x, depth);
	tp_strbuf_printf(&x->sb, "</pci>\n");
	return TP_OK;
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static tp_err_t put_system(nccl_ctx_t *x)
{
	int *ids = tp_calloc(x->ntops ? x->ntops : 1, sizeof(*ids));
	size_t nids = 0;

	if (!ids)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < x->ntops; i++)
		ids[nids++] = x->tops[i].numaid;
	if (nids > 1)
		qsort(ids, nids, sizeof(*ids), int_cmp);
	tp_strbuf_printf(&x->sb, "<system version=\"1\">\n");
	for (size_t i = 0; i < nids; i++) {
		nccl_cpu_t cpu;

		if (i > 0 && ids[i] == ids[i - 1])
			continue;
		cpu_describe(x, &cpu, ids[i]);
		tp_strbuf_printf(&x->sb, "  <cpu numaid=\"%d\"", cpu.numaid);
		if (cpu.numa)
			put_affinity(x, cpu.numa->cpuset);
		if (cpu.arch)
			tp_strbuf_printf(&x->sb, " arch=\"%s\"", cpu.arch);
		if (cpu.vendor)
			tp_strbuf_printf(&x->sb, " vendor=\"%s\"", cpu.vendor);
		if (cpu.family >= 0)
			tp_strbuf_printf(&x->sb, " familyid=\"%d\"",
					 cpu.family);
		if (cpu.model >= 0)
			tp_strbuf_printf(&x->sb, " modelid=\"%d\"", cpu.model);
		tp_strbuf_printf(&x->sb, ">\n");
		for (size_t t = 0; t < x->ntops; t++)
			if (x->tops[t].numaid == ids[i] &&
			    put_io(x, x->tops[t].io, 2, &cpu)) {
				tp_free(ids);
				return TP_ERR_NOMEM;
			}
		tp_strbuf_printf(&x->sb, "  </cpu>\n");
	}
	tp_strbuf_printf(&x->sb, "</system>\n");
	tp_free(ids);
	return x->sb.failed ? TP_ERR_NOMEM : TP_OK;
}

static tp_err_t nccl_build(nccl_ctx_t *x)
{
	hwloc_obj_t o = NULL, root = hwloc_get_root_obj(x->topo);
	unsigned nr = 1;
	int last;

	tp_err_t err = find_gpus(x->topo, &x->gpus, &x->ngpus, x->dup);

	if (err)
		return err;
	for (size_t i = 0; i < x->ngpus; i++)
		mark_up(x->gpus[i].pci);
	while ((o = hwloc_get_next_osdev(x->topo, o)))
		if (is_ofed(o) && pci_parent(o))
			mark_up(pci_parent(o));
	if (collect_tops(x, root))
		return TP_ERR_NOMEM;
	if (x->ntops == 0)
		return TP_ERR_NOTFOUND;
	last = root->complete_cpuset ? hwloc_bitmap_last(root->complete_cpuset)
				     : -1;
	x->cpuset_words = last >= 0 ? (unsigned)last / 32 + 1 : 0;
	if (hwloc_distances_get_by_name(x->topo, "NVLinkBandwidth", &nr,
					&x->nvl, 0) < 0 ||
	    nr == 0)
		x->nvl = NULL;
	else if (!(x->nvl->kind & HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH)) {
		hwloc_distances_release(x->topo, x->nvl);
		x->nvl = NULL;
	}
	return put_system(x);
}

/* Child: "<NICs written bare>\0<xml>" or the error message. */
static tp_err_t nccl_child(void *arg, tp_strbuf_t *out)
{
	const char *path = arg;
	nccl_ctx_t x = {0};
	char *msg = NULL;
	tp_err_t err;

	err = read_xml(path, &x.topo, &msg);
	if (err) {
		put_field(out, msg ? msg : tp_strerror(err));
		return err;
	}
	err = nccl_build(&x);
	if (err == TP_ERR_NOTFOUND) {
		/* the hint only where it can be: a file with PCI devices
		 * had I/O exported (an IB card whose OS device hwloc typed
		 * as a network interface is not taken for one) */
		bool io = hwloc_get_next_pcidev(x.topo, NULL) != NULL;
		tp_strbuf_printf(out,
				 "%s: no GPU or InfiniBand device in this "
				 "XML%s",
				 path,
				 io ? " (PCI devices, but none a GPU or an "
				      "OpenFabrics device)"
				    : " (exported without I/O?)");
		tp_strbuf_append(out, "", 1);
	} else if (err == TP_ERR_PARSE) {
		tp_strbuf_printf(out, DUP_GPU_FMT, path, x.dup);
		tp_strbuf_append(out, "", 1);
	} else if (err) {
		tp_strbuf_printf(out, "%s: out of memory", path);
		tp_strbuf_append(out, "", 1);
	} else if (!x.sb.failed) {
		tp_strbuf_printf(out, "%zu%c", x.nnics_bare, 0);
		tp_strbuf_append(out, x.sb.buf, x.sb.len);
	}
	/* The child exits next: nothing else to free. */
	return x.sb.failed ? TP_ERR_NOMEM : err;
}

tp_err_t tp_node_nccl_topo_from_hwloc(const char *path, char **xml_p,
				      char **err_p)
{
	tp_strbuf_t out = {0};
	const char *cur, *bare;
	char *msg = NULL, *xml = NULL;
	tp_err_t err;

	if (err_p)
		*err_p = NULL;
	err = contained(path, nccl_child, (void *)path, &out, &msg);
	if (err == TP_OK) {
		cur = out.buf;
		bare = cur ? get_field(&cur, out.buf + out.len) : NULL;
		if (!bare) {
			msg = tp_asprintf("%s: garbled result from hwloc's "
					  "child process",
					  path);
			err = TP_ERR_PARSE;
		} else if (!(xml = tp_strdup(cur))) {
			msg = tp_asprintf("%s: out of memory", path);
			err = TP_ERR_NOMEM;
		} else if (strcmp(bare, "0") != 0) {
			tp__log(TP_LOG_WARN,
				"%s: CPU vendor/model unknown: %s NIC(s) "
				"written without <net> (NCCL fills them in)",
				path, bare);
		}
	}
	tp_free(out.buf);
	if (err) {
		if (err_p)
			*err_p = msg;
		else
			tp_free(msg);
		return err;
	}
	*xml_p = xml;
	return TP_OK;
}
