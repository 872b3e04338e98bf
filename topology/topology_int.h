/*
 * topology_int.h - private to topology/: the fabric object and the builder
 * API the readers and generators use. Never include it from elsewhere.
 */
#ifndef TP_TOPOLOGY_INT_H
#define TP_TOPOLOGY_INT_H

#include "tp_topology.h"

/* Warnings kept in the fabric; more are counted but not stored. */
#define TP__MAX_WARNINGS 200

/* The most ports a node has in the model. Generated fabrics may hold
 * logical switches wider than IB's 8-bit port numbers (a director as one
 * node, a big spine for a scale study); the fabric file allows this many
 * and the port -> cable index keys a port in 16 bits. */
#define TP__PORTS_MAX 65535
/* Bounds on the rates every reader takes, in Gb/s: a link's lane (XDR is
 * 200) and a GPU's NVLink to the other GPUs of its host, summed over its
 * links (18 NVLink 5 links are 14,400). Above either is an edit or a
 * garbled file, not hardware, and would price a collective at 0 s. */
#define TP__LANE_GBPS_MAX   1e4
#define TP__NVLINK_GBPS_MAX 1e5

struct tp_fabric {
	tp_switch_t *sw;
	size_t nsw, capsw;
	tp_ca_t *ca;
	size_t nca, capca;
	tp_host_t *host;
	size_t nhost, caphost;
	tp_link_t *link;
	size_t nlink, caplink;
	int nsubnets;

	/* derived by finalize */
	tp_group_t *group;
	size_t ngroup;
	tp_nvdomain_t *nvdom;
	size_t nnvdom;
	int nlevels; /* highest switch level */
	int ngroup_levels;
	int rails;
	bool gateways; /* hosts on several subnets are gateways (finalize.c) */
	bool walk_port_guids; /* tp_fabric_set_port_guid_cas() */
	size_t unnamed_cas, sharp_cas, degraded;

	/* lookups; keys borrowed from the arrays above */
	tp_u64map_t sw_by_guid[1]; /* key: guid ^ subnet salt, see fabric.c */
	tp_u64map_t ca_by_guid[1];
	tp_u64map_t port_link[1]; /* (kind, node, port) -> link index */
	tp_strmap_t host_by_name[1];
	tp_u64map_t guid_name[1]; /* from --guid-map: guid -> index */
	char **guid_names;
	size_t nguid_names, capguid_names;

	/* multi-node NVLink domains given by map or generator */
	char **dom_name;
	char **dom_host; /* parallel arrays: host name -> domain name */
	size_t ndom_entries, capdom;
	/* dom_host -> entry, for the first dom_indexed entries (keys
	 * borrowed from dom_host); rebuilt when that is not ndom_entries
	 * (entries dropped): a map of 10^5 hosts is not checked in O(n^2) */
	tp_strmap_t dom_index[1];
	size_t dom_indexed;

	/* one copy of each GPU model, PCI id, NIC and CA device name: the
	 * same few strings on every host (16,384 hosts hold 400k of them) */
	tp_strmap_t intern_index[1];
	char **interned;
	size_t ninterned, capinterned;

	char **warn; /* from readers (saved in JSON) */
	size_t nwarn, capwarn, warn_dropped;
	char **fwarn; /* from finalize (recomputed each time) */
	size_t nfwarn, capfwarn;
	bool in_finalize;
	/* during finalize: the last run's warnings (not logged again) */
	const char *const *pwarn;
	size_t npwarn;
	/* finalize logs nothing: a fabric loaded from JSON, whose warnings
	 * were shown when it was discovered (fabric show lists them) */
	bool quiet_finalize;
	char err[512];
	bool finalized;
};

/* Record a failure detail (printf-style) and return err. */
tp_err_t tp__fabric_fail(tp_fabric_t *f, tp_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record a warning (also logged). */
void tp__fabric_warn(tp_fabric_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Record a warning without logging it: for one the caller's error
 * already says. */
void tp__fabric_note(tp_fabric_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Start a new subnet (one per source file / live port); returns its index. */
int tp__fabric_new_subnet(tp_fabric_t *f);

/* Room for this many switches, CAs, cables and hosts, allocated at that
 * size (a loader that knows its counts); more still fit, by regrowth. */
tp_err_t tp__fabric_reserve(tp_fabric_t *f, size_t nsw, size_t nca,
			    size_t nlink, size_t nhost);

/* Free the port -> cable index that tp__fabric_add_link keeps (two keys
 * per cable: 16 MiB at 16,384 hosts) once no more cables are coming;
 * the next tp__fabric_add_link rebuilds it. */
void tp__fabric_drop_port_index(tp_fabric_t *f);

/* Add or find a switch / CA by GUID within a subnet. The same GUID in one
 * subnet is one node (desc and nports of the first sighting win). On
 * success *idx_p is the index. */
tp_err_t tp__fabric_add_switch(tp_fabric_t *f, int subnet, uint64_t guid,
			       const char *desc, int nports, uint32_t *idx_p);
tp_err_t tp__fabric_add_ca(tp_fabric_t *f, int subnet, uint64_t guid,
			   const char *desc, int nports, uint32_t *idx_p);
uint32_t tp__fabric_find_node(const tp_fabric_t *f, tp_node_kind_t kind,
			      int subnet, uint64_t guid);

/* The cable on a port, or NULL (also once the port index is dropped).
 * Borrowed, valid until the next cable is added. */
const tp_link_t *tp__fabric_port_cable(const tp_fabric_t *f, tp_node_kind_t k,
				       uint32_t node, int port);
/* Add a cable. A cable already recorded from the other end (same two
 * ports) is not added again, but keeps the narrower width and the slower
 * known lane rate of the two: *added_p tells (may be NULL). A port already
 * cabled elsewhere is TP_ERR_EXISTS (caller decides how to report); a port
 * above TP__PORTS_MAX is TP_ERR_RANGE with the fabric's error set. */
tp_err_t tp__fabric_add_link(tp_fabric_t *f, tp_node_kind_t ka, uint32_t a,
			     int pa, tp_node_kind_t kb, uint32_t b, int pb,
			     int width, double lane_gbps, bool active,
			     bool *added_p);

/* Host by name, created when absent (for generators and node data). */
tp_err_t tp__fabric_host_get(tp_fabric_t *f, const char *name, bool create,
			     uint32_t *idx_p);
/* Replace a host's GPUs (takes ownership of gpus, allocated with
 * tp_malloc, strings inside too, even on failure: NOMEM). The fabric's
 * GPUs hold interned strings (tp__fabric_intern), never freed one by one. */
tp_err_t tp__fabric_host_set_gpus(tp_fabric_t *f, uint32_t host, tp_gpu_t *gpus,
				  size_t ngpus);
/* The fabric's one copy of s (borrowed, lives as long as the fabric);
 * NULL on NOMEM. */
char *tp__fabric_intern(tp_fabric_t *f, const char *s);
/* Put a host into a named multi-node NVLink domain. */
tp_err_t tp__fabric_domain_add(tp_fabric_t *f, const char *domain,
			       const char *host);

/* IB width code from text ("4x") and lane rate from speed text ("NDR",
 * "HDR", "25.78125 Gbps", "QDR", "2.5 Gbps"); 0 when unknown. */
int tp__ib_width(const char *s);
double tp__ib_lane_gbps(const char *s);

/* Host name from a CA node description, or NULL when the description
 * holds none (vendor defaults, "localhost", SHArP). *dev_p receives the
 * device token ("mlx5_3", "HCA-1") or NULL. Both freshly allocated. */
tp_err_t tp__desc_hostname(const char *desc, char **host_p, char **dev_p);
bool tp__desc_is_sharp(const char *desc);
/* Longest host or NVLink domain name (a DNS name is at most 253). */
#define TP_NAME_MAX 255
/* The one name rule of every reader and writer: 1..TP_NAME_MAX bytes of
 * letters, digits, '-', '_' and '.' - what host names from node
 * descriptions are made of. So no name can inject a line into
 * topology.conf or invalid UTF-8 into JSON. */
bool tp__name_ok(const char *s);

/* A name Slurm takes as a switch name in topology.conf (and the switch
 * tree's): 1..64 letters, digits, '-', '_', '.'. */
bool tp__slurm_name_ok(const char *s);

void tp__gpu_free_strings(tp_gpu_t *g);
/* Drop groups and NVLink domains (before recomputing them). */
void tp__fabric_free_derived(tp_fabric_t *f);

/* hwloc 3.0's XML (buf, len bytes) in the 2.x format hwloc 2.x reads
 * (hwloc_xml3.c says what changes), into *out_p (NUL-terminated,
 * *outlen_p bytes before the NUL; tp_free it). TP_ERR_PARSE for a tag
 * cut short or an attribute without a quoted value, TP_ERR_NOMEM. */
tp_err_t tp__hwloc_xml_v3_to_v2(const char *buf, size_t len, char **out_p,
				size_t *outlen_p);

/* The per-array item limit of the fabric JSON loader,
 * TP_FABRIC_MAX_ITEMS; lowered only by the unit tests. */
extern size_t tp__fabric_max_items;

#endif /* TP_TOPOLOGY_INT_H */
