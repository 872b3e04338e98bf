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
 *   without complete_nodeset, fixed in later hwloc): node XML is data
 *   to read in the CLI, never in a daemon that must stay up.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "topology_int.h"

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_CLASS_VGA	  0x0300
#define PCI_CLASS_3D	  0x0302
#define PCI_CLASS_IB	  0x0207
/* hwloc reports NVLink bandwidth in MB/s; we store Gbit/s. */
#define MBS_TO_GBPS (8.0 / 1000.0)
/* Deeper than any real PCI hierarchy below one NUMA node. */
#define MAX_ANCESTORS 64

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

static io_dist_t io_distance(hwloc_obj_t a, hwloc_obj_t b)
{
	hwloc_obj_t up[MAX_ANCESTORS], lca = NULL;
	io_dist_t d = {2, 0, INT_MAX};
	int na = 0, hb = 0, ha = 0;

	for (hwloc_obj_t o = a; o && na < MAX_ANCESTORS; o = o->parent)
		up[na++] = o;
	for (hwloc_obj_t o = b; o && !lca; o = o->parent, hb++)
		for (int i = 0; i < na; i++)
			if (up[i] == o) {
				lca = o;
				ha = i;
				hb--;
				break;
			}
	if (!lca)
		return d;
	d.hops = ha + hb + 1;
	if (lca->cpuset) {
		d.outside_io = 1;
		d.depth = lca->depth;
	} else {
		d.outside_io = 0;
		for (hwloc_obj_t o = lca; o && !o->cpuset; o = o->parent)
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

static tp_err_t load_xml(tp_fabric_t *f, const char *path, const char *buf,
			 size_t len, hwloc_topology_t *topo_p)
{
	hwloc_topology_t topo;
	unsigned major, minor;

	if (len >= INT_MAX)
		return tp__fabric_fail(f, TP_ERR_RANGE, "%s: file too large",
				       path);
	if (hwloc_topology_init(&topo) < 0)
		return tp__fabric_fail(
		    f, TP_ERR_NOMEM, "%s: cannot create hwloc topology", path);
	if (hwloc_topology_set_io_types_filter(
		topo, HWLOC_TYPE_FILTER_KEEP_ALL) == 0 &&
	    hwloc_topology_set_xmlbuffer(topo, buf, (int)len + 1) == 0 &&
	    hwloc_topology_load(topo) == 0) {
		*topo_p = topo;
		return TP_OK;
	}
	hwloc_topology_destroy(topo);
	xml_version(buf, &major, &minor);
	if (major > 2) {
		unsigned api = hwloc_get_api_version();
		return tp__fabric_fail(f, TP_ERR_FORMAT,
				       "%s: hwloc %u.x cannot read this XML "
				       "(format %u.%u, from hwloc %u?)",
				       path, api >> 16, major, minor, major);
	}
	return tp__fabric_fail(f, TP_ERR_PARSE,
			       "%s: hwloc cannot parse this XML", path);
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

static tp_err_t find_gpus(hwloc_topology_t topo, gpu_cand_t **c_p, size_t *n_p)
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

static const char *nearest_nic(hwloc_obj_t gpu, const nic_cand_t *nics,
			       size_t n)
{
	const char *best = NULL;
	io_dist_t bd = {0, 0, 0};

	for (size_t i = 0; i < n; i++) {
		io_dist_t d;
		if (!nics[i].pci)
			continue;
		d = io_distance(gpu, nics[i].pci);
		if (d.hops == INT_MAX)
			continue;
		if (!best || io_closer(d, bd)) {
			best = nics[i].osdev->name;
			bd = d;
		}
	}
	return best;
}

static long cand_of(hwloc_obj_t o, const gpu_cand_t *c, size_t n)
{
	hwloc_obj_t pci = o ? pci_parent(o) : NULL;

	for (size_t i = 0; pci && i < n; i++)
		if (c[i].pci == pci)
			return (long)i;
	return -1;
}

/* Sum each GPU's row: links to peers, NVSwitches and NVLink CPUs alike,
 * so the figure is the GPU's whole NVLink bandwidth. */
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
				if (j != i && cand_of(d->objs[j], c, n) != gi)
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

	if (find_nics(topo, &nics, &nnics))
		return TP_ERR_NOMEM;
	gpus = tp_calloc(n ? n : 1, sizeof(*gpus));
	if (!gpus) {
		tp_free(nics);
		return TP_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct hwloc_pcidev_attr_s *pa = &c[i].pci->attr->pcidev;
		const char *nic = nearest_nic(c[i].pci, nics, nnics);
		tp_gpu_t *g = &gpus[i];

		g->index = (int)i;
		g->numa = numa_of(topo, c[i].pci);
		g->hca = -1;
		g->nvlink_gbps = c[i].nvlink_mbs * MBS_TO_GBPS;
		g->pci = tp_asprintf("%04x:%02x:%02x.%x", pa->domain, pa->bus,
				     pa->dev, pa->func);
		g->model = c[i].model ? tp_strdup(c[i].model) : NULL;
		g->nic = nic ? tp_strdup(nic) : NULL;
		if (!g->pci || (c[i].model && !g->model) || (nic && !g->nic)) {
			for (size_t k = 0; k <= i; k++)
				tp__gpu_free_strings(&gpus[k]);
			tp_free(gpus);
			tp_free(nics);
			return TP_ERR_NOMEM;
		}
	}
	tp_free(nics);
	*gpus_p = gpus;
	return TP_OK;
}

tp_err_t tp_fabric_read_node_hwloc(tp_fabric_t *f, const char *host,
				   const char *path)
{
	hwloc_topology_t topo = NULL;
	gpu_cand_t *c = NULL;
	tp_gpu_t *gpus = NULL;
	size_t n = 0, len;
	char *buf = NULL;
	uint32_t hidx;
	tp_err_t err;

	if (!host || !*host)
		return tp__fabric_fail(f, TP_ERR_INVAL, "%s: no host name",
				       path);
	err = tp_file_read(path, &buf, &len);
	if (err)
		return tp__fabric_fail(f, err, "%s: cannot read: %s", path,
				       tp_strerror(err));
	err = load_xml(f, path, buf, len, &topo);
	tp_free(buf);
	if (err)
		return err;
	err = find_gpus(topo, &c, &n);
	if (err)
		goto nomem;
	add_nvlink(topo, c, n);
	err = build_gpus(topo, c, n, &gpus);
	if (err)
		goto nomem;
	err = tp__fabric_host_get(f, host, true, &hidx);
	if (err)
		goto nomem;
	if (n == 0 && !hwloc_get_next_pcidev(topo, NULL)) {
		/* Exported without I/O: the GPU count is unknown, not zero. */
		tp__fabric_warn(f,
				"%s: no PCI devices in this XML (exported "
				"without I/O?); GPUs of %s left unknown",
				path, host);
		tp_free(gpus);
	} else {
		tp__fabric_host_set_gpus(f, hidx, gpus, n);
	}
	tp_free(c);
	hwloc_topology_destroy(topo);
	return TP_OK;
nomem:
	if (gpus)
		for (size_t i = 0; i < n; i++)
			tp__gpu_free_strings(&gpus[i]);
	tp_free(gpus);
	tp_free(c);
	hwloc_topology_destroy(topo);
	return tp__fabric_fail(f, TP_ERR_NOMEM, "%s: out of memory", path);
}
