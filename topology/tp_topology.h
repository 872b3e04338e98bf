/*
 * tp_topology.h - the fabric model: switches, HCAs, hosts, GPUs, links, the
 * derived hierarchy (groups per level, rails, oversubscription) and NVLink
 * domains; every reader fills it and every consumer reads it.
 *
 * Life cycle:
 *   f = tp_fabric_create();
 *   tp_fabric_read_*(f, ...)        any number of IB sources (one per subnet)
 *   tp_fabric_finalize(f, &opts)    names hosts, computes levels and groups
 *   tp_fabric_read_node_*(f, ...)   optional per-node GPU/NIC data
 *   tp_fabric_finalize(f, &opts)    again, to refresh derived data
 *   ... read with the accessors ...
 *   tp_fabric_destroy(f);
 * A fabric loaded from JSON or made by a generator is already finalized.
 *
 * Errors: functions return tp_err_t. When one fails, tp_fabric_error(f)
 * gives a one-line detail naming the file, line or object
 * ("fabric.txt:12: port 70 out of range (switch has 36 ports)").
 * Warnings (odd but loadable input) accumulate in the fabric and are also
 * sent to the log sink at TP_LOG_WARN.
 *
 * Ownership: every pointer returned by an accessor is borrowed from the
 * fabric and valid until the next call that modifies it (read/finalize/
 * set) or tp_fabric_destroy(). The structs are read-only for callers.
 *
 * Thread safety: a finalized fabric may be read from any number of threads
 * at once; modification needs exclusive access. No Slurm context
 * restriction: the library never blocks except for file I/O and live
 * discovery.
 */
#ifndef TP_TOPOLOGY_H
#define TP_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"

#define TP_FABRIC_FORMAT "topoplace-fabric/1"
#define TP_ID_NONE	 UINT32_MAX
/* Deepest hierarchy the model represents (levels 1..TP_MAX_LEVELS). */
#define TP_MAX_LEVELS 8

typedef struct tp_fabric tp_fabric_t;

typedef enum tp_node_kind {
	TP_NODE_SWITCH = 0,
	TP_NODE_CA = 1,
} tp_node_kind_t;

/* What a channel adapter turned out to be once names were resolved. */
typedef enum tp_ca_role {
	TP_CA_HOST = 0,	   /* belongs to a named host */
	TP_CA_UNNAMED = 1, /* no usable hostname and no --guid-map entry */
	TP_CA_SHARP = 2,   /* SHArP aggregation node inside a switch */
} tp_ca_role_t;

typedef struct tp_switch {
	uint64_t guid;
	char *desc;	/* node description, trimmed */
	int nports;	/* number of external ports */
	int subnet;	/* index of the source (file or live port) */
	int level;	/* 1 = leaf (has host links), 2.. above; 0 = isolated */
	int rank; /* cable hops from the highest-level switches of its part
		   * of the fabric (0 there): orders cables inside a level,
		   * see tp_fabric_switch_above() */
	uint32_t group; /* group at this switch's level, TP_ID_NONE if none */
} tp_switch_t;

typedef struct tp_ca {
	uint64_t guid;
	char *desc; /* node description, trimmed */
	char *dev;  /* device name from the description ("mlx5_3") or NULL */
	int nports;
	int subnet;
	tp_ca_role_t role;
	uint32_t host; /* host index, TP_ID_NONE unless role == TP_CA_HOST */
	uint32_t leaf; /* switch its first cabled port reaches, or TP_ID_NONE */
	/* guid is its cabled port's GUID, not the node's: read from an
	 * ibnetdiscover -p dump, which prints no node GUID (a dual-port HCA
	 * cabled twice is two CAs there); a live walk names such a CA so
	 * after tp_fabric_set_port_guid_cas() */
	bool by_port_guid;
	int rail; /* a host's CA: its subnet on a fabric of several, else its
		   * position in its host's CAs; on a host with fewer CAs than
		   * the most any host has, the position the hosts with all
		   * of them give its device name (a host without HCA-5 keeps
		   * HCA-6 on HCA-6's rail); -1 for CAs of no host */
} tp_ca_t;

typedef struct tp_gpu {
	int index;   /* local index (CUDA / nvidia-smi order) */
	char *model; /* "NVIDIA A100-SXM4-40GB", or NULL */
	char *pci;   /* PCI bus id "0000:07:00.0", or NULL */
	int numa;    /* NUMA node, -1 unknown */
	char *nic;   /* nearest NIC device from node data ("mlx5_3") or NULL */
	int hca;     /* nearest HCA: index into host->cas, -1 unknown;
		      * finalize matches nic against the CAs' dev names,
		      * else spreads GPUs over the host's CAs in order */
	double nvlink_gbps; /* this GPU's NVLink bandwidth to the host's other
			     * GPUs, direct or through NVSwitches (sum;
			     * links to a CPU left out), 0 = none */
} tp_gpu_t;

typedef struct tp_host {
	char *name;
	uint32_t *cas; /* CA indices, ordered by subnet, device name
			* (natural order: mlx5_2 before mlx5_10), GUID */
	size_t ncas;
	uint32_t *leaves; /* distinct leaf switches cabled, ascending */
	size_t nleaves;
	tp_gpu_t *gpus;
	size_t ngpus;
	uint32_t nvdomain; /* NVLink domain index, TP_ID_NONE without GPUs */
	uint32_t group[TP_MAX_LEVELS]; /* group[l-1]: group at level l */
	bool degraded;	    /* cabled to fewer leaves than the fabric's rails */
	bool has_node_data; /* GPUs came from hwloc/nvidia-smi, not a default */
} tp_host_t;

typedef struct tp_link {
	tp_node_kind_t kind[2];
	uint32_t node[2]; /* switch or CA index according to kind */
	int port[2];
	int width;	  /* lanes: 1, 2, 4, 8, 12; 0 unknown */
	double lane_gbps; /* per-lane signalling rate: 2.5 SDR .. 100 NDR;
			   * 0 unknown */
	double gbps;	  /* width * lane_gbps, or finalize's assumption for
			   * an unknown one (tp_link_rate_known) */
	bool active;
} tp_link_t;

/* Whether l's width and lane rate are known, not assumed by finalize:
 * only a known rate is judged (fabric diff, the health rules). */
static inline bool tp_link_rate_known(const tp_link_t *l)
{
	return l->width > 0 && l->lane_gbps > 0;
}

typedef struct tp_group {
	int level;	 /* 1 = leaf group / scalable unit, 2.. above */
	uint32_t parent; /* group at level + 1, TP_ID_NONE at the top */
	uint32_t *hosts; /* ascending */
	size_t nhosts;
	uint32_t *switches; /* switches at this level that form the group;
			     * none (NULL, 0) for a parent of groups joined
			     * only by cables between their own switches */
	size_t nswitches;
	double down_gbps; /* capacity into the group's switches from below
			   * (no switches: the cables joining its groups) */
	double up_gbps;	  /* capacity from its switches to the level above,
			   * or up a cable inside its level (a leaf hanging
			   * off another); under a parent without switches,
			   * its cables to its siblings */
} tp_group_t;

typedef struct tp_nvdomain {
	char *name; /* host name for node-local domains, else given */
	uint32_t *hosts;
	size_t nhosts;
	bool multi_node; /* NVL72-style rack, from a generator or map */
} tp_nvdomain_t;

/* ---- life cycle -----------------------------------------------------------
 */

/* New empty fabric; NULL on NOMEM. Free with tp_fabric_destroy(). */
tp_fabric_t *tp_fabric_create(void);
/* NULL is a no-op. */
void tp_fabric_destroy(tp_fabric_t *f);

/* Detail of the last failure ("" if none); borrowed. */
const char *tp_fabric_error(const tp_fabric_t *f);

typedef struct tp_finalize_opts {
	/* Hosts without node data get this many GPUs (0: leave them GPU-less).
	 */
	int default_gpus;
} tp_finalize_opts_t;

/* Resolve host names (GUID map, node descriptions), compute switch levels,
 * groups, rails, degraded hosts, NVLink domains and GPU-to-HCA affinity.
 * Idempotent; opts may be NULL. */
tp_err_t tp_fabric_finalize(tp_fabric_t *f, const tp_finalize_opts_t *opts);

/* ---- readers (IB fabric) --------------------------------------------------
 */

/* GUID -> host name map ("0x0002c903000a1b2c  node17" per line, '#'
 * comments). Applied at finalize; names CAs the descriptions do not. */
tp_err_t tp_fabric_read_guid_map(tp_fabric_t *f, const char *path);

/* ibnetdiscover output (plain, -s, -p forms) of one subnet; call once per
 * file. Unknown or malformed lines are errors with file:line, and so is a
 * GUID named both as a switch and as a CA (TP_ERR_PARSE); odd but
 * meaningful content (self-cabled ports, uncabled ports, vendor default
 * descriptions) loads with warnings. */
tp_err_t tp_fabric_read_ibnetdiscover(tp_fabric_t *f, const char *path);
/* Same from memory; name is used in messages. */
tp_err_t tp_fabric_parse_ibnetdiscover(tp_fabric_t *f, const char *name,
				       const char *buf, size_t len);

/* Live discovery through libibnetdisc (ca may be NULL, port 0 = default).
 * TP_ERR_UNSUPPORTED when built without libibnetdisc. */
tp_err_t tp_fabric_discover_live(tp_fabric_t *f, const char *ca, int port);
/* The same from a walk the caller made: fab is an ibnd_fabric_t * (kept
 * opaque so that this header needs no libibnetdisc), borrowed; what names
 * it in messages. For callers that need the walk's LIDs too, so that one
 * walk serves both. TP_ERR_UNSUPPORTED when built without libibnetdisc. */
tp_err_t tp_fabric_read_ibnd(tp_fabric_t *f, void *fab, const char *what);
/* Active lanes and per-lane Gb/s of a port from raw PortInfo data as
 * libibmad holds it (ibnd_port_t's info): cap is the PortInfo carrying the
 * CapabilityMask (a switch's port 0, else info itself; NULL: unknown
 * speed), mlnx_ext the Mellanox ExtendedPortInfo (may be NULL). The
 * decoding live discovery uses, for sweeps that read ports themselves.
 * Without libibnetdisc both outputs are 0. */
void tp_ib_port_rate(const void *info, const void *cap, const void *mlnx_ext,
		     int *width_p, double *lane_gbps_p);
/* The name of a per-lane rate as tp_link_t's lane_gbps holds it: "SDR",
 * "DDR", "QDR", "FDR", "EDR", "HDR", "NDR" or "XDR" for the nominal rate
 * nearest to it within 8% (generators round HDR to 50, NDR to 100),
 * "???" for none (0: unknown). A static string; pure. */
const char *tp_ib_speed_name(double lane_gbps);
/* The local port a walk leaves by, as messages name it, into buf:
 * "mlx5_0, port 2", "the first CA, its first active port" (ca NULL,
 * port 0: libibnetdisc's defaults). Returns buf. */
const char *tp_ib_where(const char *ca, int port, char *buf, size_t len);
/* The port's link is up: logical state not Down and physical LinkUp.
 * False without libibnetdisc. */
bool tp_ib_port_up(const void *info);
/* A libibnetdisc cache file (ibnetdiscover --cache / ibnd_cache_fabric). */
tp_err_t tp_fabric_read_ibnd_cache(tp_fabric_t *f, const char *path);

/* ---- readers (GPU nodes) --------------------------------------------------
 */

/* hwloc XML of one node; the host is created if the fabric lacks it.
 * Replaces the host's GPUs. TP_ERR_UNSUPPORTED without hwloc;
 * TP_ERR_FORMAT for XML that hwloc refuses (a format after 3.0: hwloc
 * 3.0's own is brought down to 2.x's first). */
tp_err_t tp_fabric_read_node_hwloc(tp_fabric_t *f, const char *host,
				   const char *path);
/* NCCL topology (the NCCL_TOPO_FILE format, <system version="1">) from one
 * node's hwloc XML: a <cpu> per NUMA node holding GPUs or OpenFabrics
 * NICs, the PCI bridges down to them, <gpu> with <nvlink> children from
 * hwloc's NVLinkBandwidth matrix, and <nic><net name=.../></nic>. Only
 * what hwloc knows is written; NCCL fills the rest (dev, sm, rank, gdr,
 * NIC speed, GUID) on the node, where a value in the file would override
 * its probe. Pure function of the file: nothing is added to any fabric.
 * On success *xml_p (caller frees with tp_free()) is the file's text.
 * On failure *xml_p is untouched and, if err_p is not NULL, *err_p
 * receives a one-line "<path>: why" to free with tp_free() (NULL if even
 * that allocation failed). Returns TP_ERR_NOTFOUND when the file is
 * missing or holds no GPU and no OpenFabrics device (exported without I/O),
 * TP_ERR_FORMAT for XML hwloc refuses (after 3.0), TP_ERR_PARSE,
 * TP_ERR_NOMEM, and TP_ERR_UNSUPPORTED when built without hwloc.
 * Warnings (NICs left for NCCL to fill) go to the log sink. Thread-safe
 * as long as the log sink is. Offline use only (CLI): hwloc's XML
 * importer is not trusted inside a Slurm daemon. */
tp_err_t tp_node_nccl_topo_from_hwloc(const char *path, char **xml_p,
				      char **err_p);
/* `nvidia-smi topo -m` text of one node. */
tp_err_t tp_fabric_read_node_nvsmi(tp_fabric_t *f, const char *host,
				   const char *path);
/* Every <host>.xml / <host>.txt in dir; files for unknown hosts are warned
 * about and skipped. A file that cannot be read is a warning naming it (its
 * host keeps no node data) and the rest are still read; the call then fails
 * with the first file's error (and how many more failed), leaving the
 * fabric usable: a caller may go on without those hosts' node data. When
 * only one file is bad, its warning is recorded in the fabric but not
 * logged: the error says the same. */
tp_err_t tp_fabric_read_node_dir(tp_fabric_t *f, const char *dir, bool hwloc);

/* Multi-node NVLink domains: "domain-name host[01-18]" per line; at most
 * 4,096 hosts in a domain and 65,536 in the map (TP_ERR_PARSE naming the
 * line: counted before a host list is expanded). */
tp_err_t tp_fabric_read_domain_map(tp_fabric_t *f, const char *path);

/* ---- generators ------------------------------------------------------------
 */

typedef struct tp_gen_fat_tree {
	int leaves; /* leaf switches */
	int spines; /* spine switches (each leaf to each spine) */
	int hosts_per_leaf;
	int uplinks_per_spine; /* parallel links leaf->each spine (>= 1) */
	int gpus_per_host;
	double link_gbps;	 /* 4x lane rate: 200 HDR, 400 NDR */
	const char *host_prefix; /* "node" */
	bool interleave; /* host i on leaf i % leaves (names not in order) */
	/* NICs per host, all on the host's leaf (mlx5_0 ..); 0: one per GPU,
	 * as DGX H100-class hosts have (1 for a host without GPUs).
	 * Defaults to 1, the classic one-NIC model. */
	int nics_per_host;
	/* uplinks_per_spine 0: as many as keep each leaf at most 2:1
	 * oversubscribed (hosts_per_leaf x NICs / 2 cables up, rounded up to
	 * a whole number per spine, so a leaf may be less oversubscribed) */
	/* Probability (0..1) that each cable (host and up-links) is degraded,
	 * reproducibly from degrade_seed, as real dumps show: a degraded
	 * cable is either missing (down) or runs at half width, one or the
	 * other at random, so the share degraded varies around it. A host's
	 * last NIC cable and a leaf's last up-link are only ever halved,
	 * never taken down: no host or leaf is cut off. */
	double degrade;
	uint64_t degrade_seed;
	/* Three levels: pods > 1 splits the leaves evenly into pods, each
	 * with its own `spines` spine switches (spines is then per pod), and
	 * puts `cores` core switches above them (0: as many as spines per
	 * pod), every spine cabled to every core by core_uplinks parallel
	 * links (0: as many as keep a spine non-blocking, its leaves' up-links
	 * spread over the cores, rounded up). Core cables are never degraded
	 * (and take no draw: a fabric with pods <= 1 is the two-level one,
	 * degraded cables included). */
	int pods;
	int cores;
	int core_uplinks;
} tp_gen_fat_tree_t;

typedef struct tp_gen_rail {
	int sus; /* scalable units */
	int hosts_per_su;
	int rails; /* HCAs per host = leaves per SU */
	int spines_per_rail;
	int gpus_per_host;
	double link_gbps;
	const char *host_prefix;
} tp_gen_rail_t;

typedef struct tp_gen_nvl72 {
	int racks;
	int hosts_per_rack;  /* 18 compute trays */
	int gpus_per_host;   /* 4 */
	int leaves_per_rack; /* IB leaves per rack (hosts split evenly) */
	int spines;
	double link_gbps;
	const char *host_prefix;
} tp_gen_nvl72_t;

void tp_gen_fat_tree_defaults(tp_gen_fat_tree_t *p);
void tp_gen_rail_defaults(tp_gen_rail_t *p);
void tp_gen_nvl72_defaults(tp_gen_nvl72_t *p);
/* Deterministic: same parameters, same fabric (GUIDs included). The result
 * is finalized. *f_p is set only on success. */
tp_err_t tp_gen_fat_tree(const tp_gen_fat_tree_t *p, tp_fabric_t **f_p);
tp_err_t tp_gen_rail(const tp_gen_rail_t *p, tp_fabric_t **f_p);
tp_err_t tp_gen_nvl72(const tp_gen_nvl72_t *p, tp_fabric_t **f_p);

/* ---- JSON (topoplace-fabric/1) --------------------------------------------
 */

/* Serialise a finalized fabric; stable order, so save(load(save(f))) is
 * byte-identical to save(f). Caller frees *json_p with tp_free(). */
tp_err_t tp_fabric_to_json(const tp_fabric_t *f, char **json_p);
tp_err_t tp_fabric_save_json(const tp_fabric_t *f, const char *path);
/* Most items in any one array of a fabric file (switches, cas, links,
 * hosts, ...): 16 times the links of a 65,536-host rail-optimized fabric,
 * and a bound on what the loader allocates before it reads an item. */
#define TP_FABRIC_MAX_ITEMS ((size_t)1 << 24)
/* Load and finalize. *f_p set only on success; on failure, if err_p is not
 * NULL, *err_p receives a one-line detail to free with tp_free().
 * TP_ERR_RANGE: an array of more than TP_FABRIC_MAX_ITEMS items (the file
 * itself is capped at TP_FILE_MAX). */
tp_err_t tp_fabric_load_json(const char *path, tp_fabric_t **f_p, char **err_p);
/* The same for a daemon (plugins): path must be a regular file, found out
 * without blocking; TP_ERR_NOTREG for a FIFO, device or directory, with
 * *err_p "PATH: cannot read: not a regular file ...". */
tp_err_t tp_fabric_load_json_regular(const char *path, tp_fabric_t **f_p,
				     char **err_p);
tp_err_t tp_fabric_parse_json(const char *name, const char *buf,
			      tp_fabric_t **f_p, char **err_p);

/* ---- writers ---------------------------------------------------------------
 */

/* Slurm topology.conf, tree format (SwitchName=... Nodes=/Switches=), or
 * block format (BlockName=... Nodes=) with NVLink domains as blocks.
 * Caller frees *text_p with tp_free(). */
tp_err_t tp_fabric_topology_conf(const tp_fabric_t *f, bool block,
				 char **text_p);
/* Group g's name in topology.conf (tp_fabric_topology_conf's SwitchName,
 * and the name a placement explanation gives it): its switch's
 * description for a group of one switch when that is a usable Slurm name
 * no other such group has, else g<level>-<n>, n counting that level's
 * groups from 1 in index order. Into buf (truncated to len - 1 bytes);
 * an empty string for g out of range. */
void tp_fabric_group_name(const tp_fabric_t *f, size_t g, char *buf,
			  size_t len);
/* The blocks of the block format, as Slurm's topology/block will index
 * them: blocks[i] is the i-th BlockName line (Slurm's base block i). With
 * any multi-node NVLink domain the blocks are those domains, else the
 * level-1 groups; either way ordered by the IB groups of their first host
 * (top level first), then by domain or group index, so that Slurm's
 * aggregation of neighbouring blocks pairs blocks that share switches.
 * *base_p is the smallest block's host count, the first BlockSizes value
 * (Slurm's bblock_node_cnt); BlockSizes then doubles it while 2^k <= *n_p.
 * Hosts in no block are in no entry. blocks[i].hosts is borrowed from the
 * fabric (valid while it lives); the caller frees *blocks_p with tp_free().
 * *blocks_p is NULL when *n_p is 0. */
typedef struct tp_block {
	const uint32_t *hosts; /* as the domain or group lists them */
	size_t nhosts;
	bool nvdomain;	/* an NVLink domain (else a level-1 group) */
	uint32_t index; /* its domain or group index */
} tp_block_t;
tp_err_t tp_fabric_blocks(const tp_fabric_t *f, tp_block_t **blocks_p,
			  size_t *n_p, size_t *base_p);
/* ibsim net file (one subnet: subnet < 0 means all, valid only when the
 * fabric has a single subnet). Caller frees *text_p. */
tp_err_t tp_fabric_ibsim_net(const tp_fabric_t *f, int subnet, char **text_p);

/* ---- accessors
 * --------------------------------------------------------------- */

size_t tp_fabric_nswitches(const tp_fabric_t *f);
size_t tp_fabric_ncas(const tp_fabric_t *f);
size_t tp_fabric_nhosts(const tp_fabric_t *f);
size_t tp_fabric_nlinks(const tp_fabric_t *f);
/* CAs named by their port's GUID (tp_ca_t.by_port_guid). */
size_t tp_fabric_port_guid_cas(const tp_fabric_t *f);
/* Live walks read into f from now on (tp_fabric_discover_live,
 * tp_fabric_read_ibnd, tp_fabric_read_ibnd_cache) name each cabled CA
 * port a CA of its own GUID, as an ibnetdiscover -p dump does: to compare
 * with a model read from one (tp_fabric_port_guid_cas()). */
void tp_fabric_set_port_guid_cas(tp_fabric_t *f, bool on);
size_t tp_fabric_ngroups(const tp_fabric_t *f);
size_t tp_fabric_nnvdomains(const tp_fabric_t *f);
int tp_fabric_nsubnets(const tp_fabric_t *f);
const tp_switch_t *tp_fabric_switch(const tp_fabric_t *f, size_t i);
/* Whether a cable between switches a and b runs up from b to a: a is one
 * level higher, or on the same level a is nearer the top (lower rank; on
 * equal ranks the lower index). This is the up/down rule of a subnet
 * manager's updn routing: cables between leaves (a leaf hanging off
 * another, two leaves cabled directly) carry routes too, never down and
 * then up again. False for a switch and itself, levels further apart, or
 * a switch without a level. */
bool tp_fabric_switch_above(const tp_fabric_t *f, uint32_t a, uint32_t b);
/* The groups whose way up cable l is, into up[] (0, 1 or 2 of them,
 * returned): the group of its lower end when it runs up out of that group
 * (tp_fabric_switch_above; not between two switches of one group), and,
 * under a parent without switches (two leaves cabled only to each other),
 * both sibling groups it joins: their way up is that cable either way.
 * Cables down or not (tp_link_t.active) alike; none for a host's cable.
 * The one rule behind tp_group_t.up_gbps and the placement's up-links. */
size_t tp_fabric_link_upgroups(const tp_fabric_t *f, size_t l, uint32_t up[2]);
const tp_ca_t *tp_fabric_ca(const tp_fabric_t *f, size_t i);
const tp_host_t *tp_fabric_host(const tp_fabric_t *f, size_t i);
const tp_link_t *tp_fabric_link(const tp_fabric_t *f, size_t i);
/* The GUID of the switch or CA at end e (0 or 1) of link k. */
uint64_t tp_fabric_link_end_guid(const tp_fabric_t *f, const tp_link_t *k,
				 int e);
/* What a link index means in f: a 64-bit FNV-1a digest of every link's
 * ends (kind, GUID, port) in index order, so a file naming links by index
 * (topoplace-state/1) can say which fabric it was written for. Rates and
 * health are no part of it. */
uint64_t tp_fabric_links_digest(const tp_fabric_t *f);
/* The same as the 16 lowercase hex digits files carry ("links_digest"). */
#define TP_LINKS_DIGEST_LEN 17
void tp_fabric_links_digest_hex(const tp_fabric_t *f,
				char out[TP_LINKS_DIGEST_LEN]);
const tp_group_t *tp_fabric_group(const tp_fabric_t *f, size_t i);
const tp_nvdomain_t *tp_fabric_nvdomain(const tp_fabric_t *f, size_t i);

/* Host index by name, TP_ID_NONE if absent. */
uint32_t tp_fabric_host_find(const tp_fabric_t *f, const char *name);
/* Each of names[0..n) as its host index, into idx[0..n) in order: the
 * check every list of hosts a caller names gets. TP_ERR_INVAL: a NULL
 * name; TP_ERR_NOTFOUND: a name that is no host of f; TP_ERR_EXISTS: a
 * host named twice; *bad_p (bad_p may be NULL) is then the offending
 * name's position. TP_ERR_NOMEM. */
tp_err_t tp_fabric_hosts_find(const tp_fabric_t *f, const char *const *names,
			      size_t n, uint32_t *idx, size_t *bad_p);
/* The name rule every reader applies to host and NVLink domain names
 * (1..255 bytes of letters, digits, '-', '_', '.'), for other readers of
 * names (decision records) to apply the same. */
bool tp_fabric_name_ok(const char *name);

/* Highest switch level (0 when there are no switches). */
int tp_fabric_nlevels(const tp_fabric_t *f);
/* Switches at a level (1 = leaf). */
size_t tp_fabric_switches_at(const tp_fabric_t *f, int level);
/* Group hierarchy depth and group count per level (level 1 first). */
int tp_fabric_ngroup_levels(const tp_fabric_t *f);
size_t tp_fabric_groups_at(const tp_fabric_t *f, int level);
/* Rails: the most distinct leaves a host is cabled to, leaving out
 * gateways (hosts on several subnets where most hosts are on one); a
 * host cabled to fewer is degraded. */
int tp_fabric_rails(const tp_fabric_t *f);
size_t tp_fabric_unnamed_cas(const tp_fabric_t *f);
size_t tp_fabric_sharp_cas(const tp_fabric_t *f);
size_t tp_fabric_degraded_hosts(const tp_fabric_t *f);
size_t tp_fabric_total_gpus(const tp_fabric_t *f);

/* The CA host h's local rank l of g drives: its GPU's nearest CA when the
 * host knows it, else CA l x ncas / g (ranks spread over the CAs); -1 for
 * a host without CAs. The plan and the cost model assign ranks so. */
int tp_host_rank_ca(const tp_host_t *h, uint32_t l, uint32_t g);
/* link[ca] (tp_fabric_ncas() entries): the index of each CA's cable to
 * its leaf, up or down - the one at the CA's lowest cabled port there, as
 * finalize took ca->leaf - or TP_ID_NONE for a CA without one. */
void tp_fabric_ca_cables(const tp_fabric_t *f, uint32_t *link);
/* Rank weights (most TP_RANK_WEIGHT): how a host's data splits over its
 * g local ranks when every rank's NIC carries its share by rate. Local
 * rank l weighs the slowest over hosts[0..n) of its CA's cable Gb/s
 * (ca_link: tp_fabric_ca_cables(); 0 when the cable is down) divided by
 * the local ranks sharing that CA, scaled so the heaviest weighs TP_RANK_WEIGHT
 * and rounded (at least 1). Fills w[0..g) and returns true; false (even split)
 * when all weigh the same, a rank has no cabled CA or g is over
 * TP_MAX_RANK_WEIGHTS. */
#define TP_RANK_WEIGHT 1024
/* Most local ranks a host's weights cover (more: an even split). */
#define TP_MAX_RANK_WEIGHTS 256
bool tp_fabric_rank_weights(const tp_fabric_t *f, const uint32_t *ca_link,
			    const uint32_t *hosts, size_t n, uint32_t g,
			    uint32_t *w);

size_t tp_fabric_nwarnings(const tp_fabric_t *f);
const char *tp_fabric_warning(const tp_fabric_t *f, size_t i);

/* ---- the switch tree the Slurm plugins hand Slurm ------------------------
 *
 * Built from the fabric exactly as `topoplace fabric topology-conf` writes
 * topology.conf (same switch names: one switch per derived group, so a
 * rail-optimized scalable unit is one leaf), then, when nvlink is set and
 * the fabric has multi-node NVLink domains, each domain becomes a leaf of
 * its own under the lowest group holding all its hosts: an NVL72 rack is
 * then what Slurm packs a job into first, the IB groups above it. Hosts of
 * a group outside any domain stay on a leaf of their own ("<group>-rest"
 * when the group also holds domains); groups left without hosts vanish.
 *
 * Switch 0..nsw-1 are in no particular order; level 0 is a leaf (has
 * hosts, no children), levels above hold children only; a root has
 * parent == its own index. Host lists are fabric host indices in rank
 * order; order[] is the whole rank order: a depth-first walk in which each
 * switch's hosts are contiguous and siblings follow the fabric's order.
 */

typedef struct tp_stree_sw {
	char *name;
	int level;	    /* 0 = leaf */
	uint32_t parent;    /* own index at a root */
	uint32_t *children; /* rank order */
	size_t nchildren;
	uint32_t *hosts; /* leaves only: fabric host indices, rank order */
	size_t nhosts;
	uint32_t nbelow;     /* hosts in the whole subtree */
	uint32_t link_speed; /* Gb/s to the level above (1 when unknown) */
	uint32_t group;	     /* fabric group; TP_ID_NONE for an NVLink
			      * domain or a "-rest" leaf */
	bool nvlink;	     /* an NVLink domain */
} tp_stree_sw_t;

typedef struct tp_stree {
	tp_stree_sw_t *sw;
	size_t nsw;
	int levels;	 /* highest level */
	bool nvlink;	 /* NVLink domains were made leaves */
	uint32_t *order; /* fabric host indices in rank order */
	size_t norder;
	uint32_t *rank; /* per fabric host: position in order[] or
			 * TP_ID_NONE (host in no group) */
	size_t nhosts;	/* fabric host count (length of rank[]) */
} tp_stree_t;

/* The tree as Slurm's topology.conf (topology/tree) states it, the one
 * `topoplace fabric topology-conf` prints (tp_fabric_topology_conf): one
 * switch per group of level 1 and above, in the file's line order (the
 * highest level first, groups in index order within a level), which is
 * Slurm's switch index order. Level-1 groups are the leaves with the
 * group's hosts; a switch's children are its child groups in index order;
 * level is the group's level - 1 (Slurm's); nothing is pruned, so a switch
 * may have neither hosts nor children. There is no rank order: order and
 * rank are NULL. TP_ERR_INVAL for a fabric not finalized. */
tp_err_t tp_stree_conf(const tp_fabric_t *f, tp_stree_t *t);

/* Build the tree from tp_stree_conf's. With nvlink set but a domain whose hosts
 * are not all in the tree, the NVLink level is skipped (a warning goes to the
 * log sink). On failure t is untouched and *err_p (if not NULL) says why. */
tp_err_t tp_stree_build(const tp_fabric_t *f, bool nvlink, tp_stree_t *t,
			char **err_p);
void tp_stree_free(tp_stree_t *t);

/* Whether Slurm's node names (slurm.conf) and the tree's hosts are the
 * same set. When not, returns false and *why_p (if not NULL; free with
 * tp_free) says how: "N node(s) not in the fabric's switch groups (a,b,..),
 * M fabric host(s) not in slurm.conf (c,..)", the first five of each.
 * Both Slurm generations' plugins call this with their node table's
 * names, so the rule and the message are one. */
bool tp_stree_match(const tp_stree_t *t, const tp_fabric_t *f,
		    const char *const *names, size_t n, char **why_p);

/* Hops between two switches along the tree (0 for i == j), UINT32_MAX
 * when they share no root. */
uint32_t tp_stree_dist(const tp_stree_t *t, uint32_t i, uint32_t j);

/* Fewest leaves that can hold need nodes when leaf i offers avail[i]:
 * the largest first. 0 when need is 0 or the leaves cannot hold it. */
uint32_t tp_stree_min_leaves(const uint32_t *avail, size_t n, uint64_t need);

/* The switch table both Slurm generations' topology plugins hand Slurm
 * (switch_record_table), in plain C: one row per switch of t, row i for
 * t->sw[i]. node_of[h] is the Slurm node index of fabric host h, -1 when
 * Slurm has no node for it (or the caller leaves it out); a host's node
 * is under its leaf and every ancestor. The adapters copy the rows into
 * Slurm's types. Free with tp_stree_table_free. */
typedef struct tp_stree_row {
	char *switches; /* children's names, "a,b"; NULL without children */
	uint32_t *desc; /* descendants, depth first */
	size_t ndesc;
	uint32_t *dist; /* [t->nsw]: tp_stree_dist to every switch */
	int *nodes;	/* node indices under the switch, ascending */
	size_t nnodes;
} tp_stree_row_t;

tp_err_t tp_stree_table(const tp_stree_t *t, const int *node_of,
			tp_stree_row_t **rows_p);
void tp_stree_table_free(tp_stree_row_t *rows, size_t n);

#endif /* TP_TOPOLOGY_H */
