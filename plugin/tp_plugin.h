/*
 * tp_plugin.h - the Slurm-free half of the Slurm plugins: topoplace.conf
 * (one table of keys, parsed once into a struct) and the switch tree that
 * topology/topoplace hands to Slurm 22.05 as switch_record_table.
 *
 * Nothing here includes Slurm: the plugins translate Slurm types to these
 * and back, so this part is unit-tested without a controller
 * (tests/plugin/test_plugin_config.c).
 *
 * Ownership: every struct filled here owns its members; free them with the
 * matching *_free() (NULL-safe, idempotent). Error details (*err_p) are
 * one-line strings the caller frees with tp_free().
 *
 * Thread safety: no global state except the log sink of tp_common.h; a
 * filled struct may be read from several threads at once. In slurmctld the
 * plugins call these under their own mutex, from any context.
 */
#ifndef TP_PLUGIN_H
#define TP_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"
#include "tp_topology.h"

/* ---- topoplace.conf --------------------------------------------------------
 *
 * Syntax, as Slurm's own files: "Key=Value" pairs, one or more per line,
 * separated by blanks; keys are case-insensitive; '#' starts a comment; a
 * value with blanks is written in double quotes. Each key at most once.
 * Unknown keys, malformed lines, bad values and out-of-range numbers are
 * errors naming the file and line ("topoplace.conf:3: unknown key 'Fabric'",
 * "topoplace.conf:4: PriceBudget=5000: out of range 0..1000").
 */

typedef struct tp_pconf {
	char *fabric_file;	/* FabricFile: fabric JSON; NULL = none */
	size_t fabric_line;	/* its line in the file (0: none) */
	bool rank_nodes;	/* RankNodes: order Slurm's node table */
	bool nvlink_level;	/* NVLinkLevel: NVLink domains as leaves */
	bool set_switches;	/* SetSwitches: job_submit sets --switches */
	uint32_t switch_wait;	/* SwitchWait: seconds for wait4switch */
	uint32_t min_nodes;	/* MinNodes: smallest job touched */
	uint32_t max_nodes;	/* MaxNodes: largest job touched, 0 = any */
	uint32_t gpus_per_node; /* GpusPerNode: 0 = from the nodes' Gres */
	char *partitions;	/* Partitions: "a,b"; NULL = all */
	char *selection;	/* Selection: "engine" (default) or "tree" */
	char *link_state;	/* LinkState: topoplace-state/1 file whose
				 * links the selection prices with; NULL = none */
	size_t link_state_line; /* its line in the file (0: none) */
	uint32_t comm_share;	/* CommShare: percent of a running job's time
				 * in collectives (its traffic's duty) */
	uint32_t price_budget;	/* PriceBudget: predictions per decision */
	bool nics_by_rate;	/* NicsByRate: step plans weigh ranks by NIC */
	uint32_t plan_max_ranks; /* PlanMaxRanks: largest step planned */
	uint32_t plan_price_max_hosts; /* PlanPriceMaxHosts: largest step
					* (hosts) whose plan the model prices */
} tp_pconf_t;

typedef enum tp_pconf_type {
	TP_PCONF_STRING = 0,
	TP_PCONF_BOOL = 1, /* yes/no, true/false, 1/0, on/off */
	TP_PCONF_UINT = 2, /* decimal, within [min, max] */
	TP_PCONF_LIST =
	    3, /* comma-separated names, no empty items, no blanks */
} tp_pconf_type_t;

/* One row of the key table (borrowed, static). */
typedef struct tp_pconf_key {
	const char *name;
	tp_pconf_type_t type;
	const char *def; /* default as written in the file; NULL = unset */
	uint32_t min, max;
	const char *doc;
	size_t offset; /* into tp_pconf_t */
	/* TP_PCONF_STRING only: the values allowed, "a|b|c" (compared without
	 * case, stored as written in the table); NULL = any non-empty text */
	const char *choices;
} tp_pconf_key_t;

size_t tp_pconf_nkeys(void);
/* NULL past the end. */
const tp_pconf_key_t *tp_pconf_key(size_t i);

/* Fill c with the table's defaults (c's old members are not freed). */
void tp_pconf_defaults(tp_pconf_t *c);
/* Free members and reset to zero. */
void tp_pconf_free(tp_pconf_t *c);

/* Parse text (name is used in messages). On success c is replaced
 * (old members freed); on failure c is untouched, TP_ERR_PARSE (syntax,
 * unknown or repeated key), TP_ERR_RANGE or TP_ERR_NOMEM is returned and
 * *err_p, if err_p is not NULL, gets "name:line: what". */
tp_err_t tp_pconf_parse(const char *name, const char *text, tp_pconf_t *c,
			char **err_p);
/* Same from a file, read as the daemons read it: TP_ERR_NOTFOUND when it
 * does not exist, TP_ERR_NOTREG when it is a FIFO, device or directory
 * (refused without blocking), TP_ERR_RANGE over 1 MiB, TP_ERR_IO when it
 * cannot be read. */
tp_err_t tp_pconf_load(const char *path, tp_pconf_t *c, char **err_p);

/* Whether Selection= sends every job to Slurm's own topology/tree
 * selection (a benchmark mode) instead of the engine. */
bool tp_pconf_select_tree(const tp_pconf_t *c);

/* A path from the file as the plugins open it: absolute, or relative
 * to the directory of conf_path (as FabricFile). NULL when value is NULL
 * or out of memory; caller frees with tp_free(). */
char *tp_pconf_path(const char *conf_path, const char *value);

/* Whether a job in partition (a comma list as Slurm's --partition allows;
 * NULL = the default partition) is covered by Partitions: true when
 * Partitions is unset or names any of them. */
bool tp_pconf_partition_enabled(const tp_pconf_t *c, const char *partition);

/* Every key as "Key=Value\n", table order; caller frees with tp_free(). */
char *tp_pconf_dump(const tp_pconf_t *c);

/* ---- watching a file ---------------------------------------------------
 *
 * What tells a rewritten file from the one read before without reading
 * it: device, inode (a rename), size and both times to the nanosecond.
 */

typedef struct tp_filesig {
	bool exists, regular; /* regular: not a FIFO, device or directory */
	uint64_t dev, ino;
	int64_t size, mtime_s, mtime_ns, ctime_s, ctime_ns;
	/* The last reading's outcome (tp_filesig_log): TP_OK, or the error
	 * and a hash of its message, so each distinct failure is logged
	 * once, not at every look. Kept by tp_filesig_update. */
	tp_err_t err;
	uint64_t err_hash;
	/* errno of the last look when stat failed for another reason than
	 * a missing file (EACCES, ELOOP, EIO), 0 otherwise */
	int look_errno;
} tp_filesig_t;

/* Look at path (one stat) and tell whether it differs from *sig: it
 * appeared, vanished or changed; then *sig describes it now (err kept).
 * A zeroed sig is "no file". A stat failing for another reason than a
 * missing file (EACCES, ELOOP, EIO) reads as unchanged and leaves *sig
 * alone but for look_errno, which says why (the caller tells the admin:
 * nothing is known about the file then). */
bool tp_filesig_update(const char *path, tp_filesig_t *sig);

/* Record a reading's outcome in sig: err (TP_OK when it read fine) and
 * why, its one-line message (NULL: none). True when it differs from the
 * last one recorded, i.e. when the caller should log it: a new or
 * changed failure, or the recovery from one. A zeroed sig holds TP_OK. */
bool tp_filesig_log(tp_filesig_t *sig, tp_err_t err, const char *why);

/* ---- reading the fabric for a topology plugin ---------------------------- */

/* Most switches a topology plugin builds Slurm's switch table for. The
 * table holds a distance and a descendant slot for every pair of switches
 * (switches_dist, switch_desc_index: 6 bytes, and 4 more for the rows it
 * is built from), so its memory grows with the square of the count: 8192
 * switches take 640 MiB at the peak, 65535 (Slurm's uint16 limit) would
 * take 40 GiB of slurmctld's. Real trees are far smaller: `topoplace
 * fabric topology-conf` lists 1,025 switches for a generated 9,216-host
 * NVL72 fabric (nvl72 --racks 512), 65 for a 2,048-host fat tree. */
#define TP_SWITCH_TABLE_MAX 8192

/* Everything a topology plugin reads at (re)configuration: topoplace.conf
 * at conf_path, the fabric it names (a relative FabricFile lies beside
 * conf_path) and its switch tree, which may hold at most max_switches
 * switches (TP_SWITCH_TABLE_MAX in the plugins; TP_ERR_RANGE beyond). On TP_OK,
 * c, *f_p (free with tp_fabric_destroy) and t are filled. Otherwise none of f_p
 * and t is, c holds what could be read (defaults at worst) and *why_p (free
 * with tp_free) says why in one line: TP_ERR_NOTFOUND when the file is absent
 * or names no fabric (a flat topology by choice), any other code for a broken
 * input. */
tp_err_t tp_pconf_load_fabric(const char *conf_path, size_t max_switches,
			      tp_pconf_t *c, tp_fabric_t **f_p, tp_stree_t *t,
			      char **why_p);

/* ---- the decision writer's queue -----------------------------------------
 *
 * The 24.11 plugin hands two things to its writer thread: decision records
 * (payloads the caller keeps in its own array, one per slot of this ring)
 * and the ends of jobs whose traffic the writer holds as background. A
 * record may be dropped when the writer falls behind (the oldest goes,
 * counted); an end never is, or the ended job's traffic would be priced
 * until the next reconfigure. Memory stays bounded: an end is kept only
 * for a job whose record the writer has taken with its traffic (a held
 * job), at most one per job, and there are at most held_max of those;
 * the end of a job whose record is still queued instead takes the
 * traffic off that record (its track flag).
 *
 * Not thread-safe: the plugin calls every function under its queue lock.
 */

typedef struct tp_wqueue tp_wqueue_t;

/* A queue of cap record slots (numbered 0 .. cap - 1) for a writer that
 * holds the traffic of at most held_max jobs. NULL on NOMEM or a zero
 * size. Free with tp_wqueue_destroy() (NULL-safe). */
tp_wqueue_t *tp_wqueue_create(size_t cap, size_t held_max);
void tp_wqueue_destroy(tp_wqueue_t *q);

/* Queue the record of job_id (track: its traffic joins the background
 * once the writer takes it). Returns the slot the caller stores the
 * payload in. When the queue was full its oldest record was dropped to
 * make room, in that same slot: *dropped_p is then true and the caller
 * frees the old payload first. */
size_t tp_wqueue_push(tp_wqueue_t *q, uint32_t job_id, bool track,
		      bool *dropped_p);

/* job_id's traffic leaves the background: its queued records lose their
 * track flag, and an end is kept for the writer when it holds the job. */
void tp_wqueue_end(tp_wqueue_t *q, uint32_t job_id);

typedef enum tp_wqueue_item {
	TP_WQUEUE_EMPTY = 0,
	TP_WQUEUE_END = 1,    /* *job_id_p ended: remove its traffic */
	TP_WQUEUE_RECORD = 2, /* the payload in *slot_p, *track_p */
} tp_wqueue_item_t;

/* The writer's next item: every kept end before the oldest record (each
 * end was kept after the records it concerns had been taken). A record
 * taken with *track_p true makes its job held; *track_p is false when
 * held_max jobs are held already. The slot is free again on return. */
tp_wqueue_item_t tp_wqueue_next(tp_wqueue_t *q, uint32_t *job_id_p,
				size_t *slot_p, bool *track_p);

/* Records and ends waiting. */
size_t tp_wqueue_len(const tp_wqueue_t *q);
/* Records dropped since the last call (the count restarts at 0). */
size_t tp_wqueue_take_dropped(tp_wqueue_t *q);
/* The writer holds no traffic any more (its link state was freed): held
 * jobs and kept ends forgotten; queued records stay. */
void tp_wqueue_forget(tp_wqueue_t *q);

/* ---- a job's --gpus as the engine's request ----------------------------- */

/* The engine's request for a job asking per_job GPUs in all (--gpus,
 * > 0) on min_nodes..max_nodes nodes (min_nodes > 0), per_node its
 * --gpus-per-node (0: none). An exact node count that divides the GPUs:
 * *nodes_p nodes of *gpus_per_node_p GPUs; otherwise *gpus_p GPUs the
 * engine spreads over as few nodes as it can (the others untouched).
 * NULL, or why the engine does not take the job (nothing written then):
 * among the reasons, a count the engine's int cannot hold. */
const char *tp_gpureq_split(uint64_t per_job, uint64_t per_node,
			    uint32_t min_nodes, uint32_t max_nodes,
			    int *nodes_p, int *gpus_per_node_p, int *gpus_p);

#endif /* TP_PLUGIN_H */
