/*
 * job_submit/topoplace for Slurm 22.05 (compatible mode).
 *
 * A multi-node job that did not ask for --switches gets the fewest leaf
 * switches that can hold it, with a bounded wait: cons_tres then keeps it
 * inside that many leaves when the free state allows, and after SwitchWait
 * seconds takes what there is. The count is always feasible (computed on
 * the leaves' nodes in the job's partitions): an infeasible --switches
 * only makes a job wait for nothing.
 *
 * Notes:
 * - The leaves are those of switch_record_table, i.e. whatever the
 *   topology plugin built: the fabric's level-1 groups (or NVLink domains)
 *   with topology/topoplace, topology.conf's leaves with topology/tree. No
 *   topology plugin, no change.
 * - Slurm calls job_submit()/job_modify() with at least read locks on
 *   config, job, node and partition (all job_submit_plugin_modify asserts)
 *   and its own plugin mutex held; the configuration here has a mutex of
 *   its own and is re-read when topoplace.conf changes. job_submit()
 *   writes only the request. job_modify() also rewrites the job's
 *   admin_comment in place, which relies on update_job's callers holding
 *   the job write lock (22.05: _slurm_rpc_update_job and
 *   fed_mgr's _handle_fed_job_update both lock job and node for writing).
 * - Never rejects a job: every problem is logged and the job goes on as
 *   submitted.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/common/slurm_xlator.h"

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/bitstring.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/slurm_topology.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "tp_plugin.h"

#define TP_EXPORT __attribute__((visibility("default")))

TP_EXPORT extern const char plugin_name[];
TP_EXPORT extern const char plugin_type[];
TP_EXPORT extern const uint32_t plugin_version;
TP_EXPORT extern int init(void);
TP_EXPORT extern int fini(void);
TP_EXPORT extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid,
				char **err_msg);
TP_EXPORT extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr,
				uint32_t submit_uid);

const char plugin_name[] = "job_submit topoplace plugin";
const char plugin_type[] = "job_submit/topoplace";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* Marks the jobs whose --switches this plugin chose (admin_comment). */
#define MARK "topoplace:"

static pthread_mutex_t conf_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_pconf_t pconf;
static bool conf_ok;
/* topoplace.conf as last read: its signature (a file replaced with the
 * same mtime still differs in inode, size or ctime) and that reading's
 * outcome, so each distinct failure is logged once */
static tp_filesig_t conf_sig;
static bool conf_seen;

static void log_sink(tp_log_level_t level, const char *msg, void *arg)
{
	if (level == TP_LOG_ERROR)
		error("%s: %s", plugin_type, msg);
	else if (level <= TP_LOG_INFO)
		info("%s: %s", plugin_type, msg);
	else
		debug("%s: %s", plugin_type, msg);
}

static long usec_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000000L +
	       (t1.tv_nsec - t0->tv_nsec) / 1000;
}

/* (Re)read topoplace.conf when it appeared, changed or vanished (or
 * could not be read: EIO, EACCES may pass). No file: the defaults. A file
 * that cannot be read or has errors disables the plugin (jobs go on as
 * submitted) until it is fixed, and is logged once per distinct failure,
 * then again when it reads fine. */
static void refresh_conf(void)
{
	char *path = get_extra_conf_path("topoplace.conf");
	bool changed = tp_filesig_update(path, &conf_sig);
	char *msg = NULL;
	tp_pconf_t c;
	tp_err_t err;

	if (conf_seen && !changed && conf_sig.err != TP_ERR_IO) {
		xfree(path);
		return;
	}
	conf_seen = true;
	memset(&c, 0, sizeof(c));
	/* read whatever stat said: a stat refused (EACCES) is no "no file" */
	err = tp_pconf_load(path, &c, &msg);
	if (err == TP_ERR_NOTFOUND) {
		tp_pconf_free(&pconf);
		tp_pconf_defaults(&pconf);
		conf_ok = true;
		if (tp_filesig_log(&conf_sig, err, NULL))
			info("%s: %s not found: defaults", plugin_type, path);
	} else if (err) {
		conf_ok = false;
		if (tp_filesig_log(&conf_sig, err, msg))
			error("%s: %s: jobs left unchanged until it is fixed",
			      plugin_type, msg ? msg : tp_strerror(err));
	} else {
		tp_pconf_free(&pconf);
		pconf = c;
		conf_ok = true;
		(void)tp_filesig_log(&conf_sig, TP_OK, NULL);
		info("%s: read %s (SetSwitches=%s SwitchWait=%u MinNodes=%u "
		     "MaxNodes=%u Partitions=%s)",
		     plugin_type, path, pconf.set_switches ? "yes" : "no",
		     pconf.switch_wait, pconf.min_nodes, pconf.max_nodes,
		     pconf.partitions ? pconf.partitions : "(all)");
	}
	tp_free(msg);
	xfree(path);
}

/* GPU count of one Gres string: "gpu:4", "gpu:a100:4(S:0-1),nic:1". */
static uint64_t gres_gpus(const char *gres)
{
	uint64_t total = 0;
	const char *p = gres;

	while (p && *p) {
		size_t n = strcspn(p, ",");
		if (!strncmp(p, "gpu", 3) && (p[3] == ':' || p[3] == '/')) {
			/* the count is the last ':' field before '(' */
			const char *end = p + n, *paren = memchr(p, '(', n);
			const char *c;
			if (paren)
				end = paren;
			for (c = end; c > p && c[-1] != ':'; c--)
				;
			if (c > p + 3) {
				char *e;
				unsigned long long v = strtoull(c, &e, 10);
				/* saturate: a huge count must not wrap
				 * into a small one */
				if (e > c && e <= end)
					total = v > UINT64_MAX - total
						    ? UINT64_MAX
						    : total + v;
			}
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return total;
}

/* GPUs a job asks for in total (--gpus): "gres:gpu:16", "gres/gpu:a100:16". */
static uint64_t job_gpus(const char *tres)
{
	uint64_t total = 0;
	const char *p = tres;

	while (p && *p) {
		size_t n = strcspn(p, ",;");
		if (!strncmp(p, "gres:", 5) || !strncmp(p, "gres/", 5)) {
			char *item = xstrndup(p + 5, n - 5);
			uint64_t v = gres_gpus(item);
			total = v > UINT64_MAX - total ? UINT64_MAX : total + v;
			xfree(item);
		}
		p += n;
		if (*p == ',' || *p == ';')
			p++;
	}
	return total;
}

/* Union of the job's partitions' nodes (the default partition if none);
 * NULL when a partition is unknown (Slurm rejects the job later). */
static bitstr_t *job_part_nodes(const char *partitions)
{
	bitstr_t *nodes = bit_alloc(node_record_count);
	char *tmp, *tok, *save = NULL;

	if (!partitions || !*partitions) {
		if (!default_part_loc || !default_part_loc->node_bitmap) {
			FREE_NULL_BITMAP(nodes);
			return NULL;
		}
		bit_or(nodes, default_part_loc->node_bitmap);
		return nodes;
	}
	tmp = xstrdup(partitions);
	for (tok = strtok_r(tmp, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		part_record_t *part = find_part_record(tok);
		if (!part || !part->node_bitmap) {
			FREE_NULL_BITMAP(nodes);
			break;
		}
		bit_or(nodes, part->node_bitmap);
	}
	xfree(tmp);
	return nodes;
}

/* Most GPUs any node of the set has (GpusPerNode when set). */
static uint64_t gpus_per_node(bitstr_t *nodes)
{
	node_record_t *node_ptr;
	uint64_t best = 0;

	if (pconf.gpus_per_node)
		return pconf.gpus_per_node;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		uint64_t g;
		if (!bit_test(nodes, node_ptr->index) || !node_ptr->config_ptr)
			continue;
		g = gres_gpus(node_ptr->config_ptr->gres);
		best = g > best ? g : best;
	}
	return best;
}

/*
 * The decision: sets *req_p and *wait_p and returns a one-line note, or
 * returns NULL and leaves them alone (with *why_p saying why, for debug).
 */
/* decide()'s answers for a size it gives no count: the two after which a
 * resized job's old count is cleared (job_modify) */
static const char why_size[] = "size outside MinNodes..MaxNodes";
static const char why_leaves[] = "does not fit the partition's leaves";

static char *decide(uint32_t min_nodes, const char *tres_per_job,
		    const char *partition, uint32_t *req_p, uint32_t *wait_p,
		    const char **why_p)
{
	bitstr_t *part_nodes;
	uint32_t *avail, nleaves = 0, k;
	uint64_t nodes = (min_nodes == NO_VAL || !min_nodes) ? 1 : min_nodes;
	uint64_t gpus = job_gpus(tres_per_job), gpn = 0;
	char *note = NULL;

	if (!conf_ok) {
		*why_p = "topoplace.conf has errors";
		return NULL;
	}
	if (!pconf.set_switches) {
		*why_p = "SetSwitches=no";
		return NULL;
	}
	if (!tp_pconf_partition_enabled(&pconf, partition ? partition
						: default_part_loc
						    ? default_part_loc->name
						    : NULL)) {
		*why_p = "partition not in Partitions";
		return NULL;
	}
	if (!switch_record_cnt || !switch_record_table) {
		*why_p = "no switch table (topology plugin)";
		return NULL;
	}
	if (!(part_nodes = job_part_nodes(partition))) {
		*why_p = "unknown partition";
		return NULL;
	}
	if (gpus) {
		gpn = gpus_per_node(part_nodes);
		/* rounded up without gpus + gpn - 1, which wraps a
		 * saturated count back to a small one */
		if (gpn && gpus / gpn + !!(gpus % gpn) > nodes)
			nodes = gpus / gpn + !!(gpus % gpn);
	}
	if (nodes < pconf.min_nodes ||
	    (pconf.max_nodes && nodes > pconf.max_nodes)) {
		FREE_NULL_BITMAP(part_nodes);
		*why_p = why_size;
		return NULL;
	}
	avail = xcalloc(switch_record_cnt + 1, sizeof(uint32_t));
	for (int i = 0; i < switch_record_cnt; i++)
		if (switch_record_table[i].level == 0 &&
		    switch_record_table[i].node_bitmap)
			avail[nleaves++] = (uint32_t)bit_overlap(
			    switch_record_table[i].node_bitmap, part_nodes);
	FREE_NULL_BITMAP(part_nodes);
	k = tp_stree_min_leaves(avail, nleaves, nodes);
	xfree(avail);
	if (!k) {
		*why_p = why_leaves;
		return NULL;
	}
	*req_p = k;
	*wait_p = pconf.switch_wait;
	xstrfmtcat(note,
		   MARK " switches=%u@%us for %" PRIu64 " node(s)%s (min "
			"feasible of %u leaves)",
		   k, pconf.switch_wait, nodes, gpus ? " (from --gpus)" : "",
		   nleaves);
	return note;
}

static void note_admin_comment(char **admin_comment, const char *note)
{
	if (*admin_comment && **admin_comment)
		xstrfmtcat(*admin_comment, "; %s", note);
	else {
		xfree(*admin_comment);
		*admin_comment = xstrdup(note);
	}
}

/* This plugin's last note in comment (from its last MARK; a note holds no
 * "; "), NULL when there is none. */
static char *last_note(char *comment)
{
	char *m = NULL;

	for (char *p = comment; p && (p = strstr(p, MARK)); p += strlen(MARK))
		m = p;
	return m;
}

/* The count this plugin last gave the job, from its note: switches=N, 0
 * for "switches cleared"; false when the job has no note of it. */
static bool noted_count(char *comment, uint32_t *count_p)
{
	char *m = last_note(comment);

	if (!m)
		return false;
	m += strlen(MARK);
	if (sscanf(m, " switches=%" SCNu32, count_p) == 1)
		return true;
	*count_p = 0;
	return !strncmp(m, " switches cleared", strlen(" switches cleared"));
}

/* The job's note replaced by note (the rest of its comment kept). */
static void renote(char **comment, const char *note)
{
	char *m = last_note(*comment), *end, *s = NULL;

	if (!m)
		return;
	end = strstr(m, "; ");
	xstrfmtcat(s, "%.*s%s%s", (int)(m - *comment), *comment, note,
		   end ? end : "");
	xfree(*comment);
	*comment = s;
}

extern int init(void)
{
	tp_log_set(log_sink, NULL);
	verbose("%s loaded", plugin_name);
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	slurm_mutex_lock(&conf_lock);
	tp_pconf_free(&pconf);
	conf_ok = conf_seen = false;
	memset(&conf_sig, 0, sizeof(conf_sig));
	slurm_mutex_unlock(&conf_lock);
	tp_log_set(NULL, NULL);
	return SLURM_SUCCESS;
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid,
		      char **err_msg)
{
	struct timespec t0;
	const char *why = "";
	uint32_t req = NO_VAL, wait = NO_VAL;
	char *note = NULL;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* the user's own --switches is never touched */
	if (job_desc->req_switch != NO_VAL) {
		debug("%s: job from uid %u sets --switches=%u: unchanged",
		      plugin_type, submit_uid, job_desc->req_switch);
		return SLURM_SUCCESS;
	}
	slurm_mutex_lock(&conf_lock);
	refresh_conf();
	note = decide(job_desc->min_nodes, job_desc->tres_per_job,
		      job_desc->partition, &req, &wait, &why);
	slurm_mutex_unlock(&conf_lock);
	if (note) {
		job_desc->req_switch = req;
		job_desc->wait4switch = wait;
		note_admin_comment(&job_desc->admin_comment, note);
		debug("%s: uid %u: %s (%ld usec)", plugin_type, submit_uid,
		      note, usec_since(&t0));
		xfree(note);
	} else {
		debug("%s: uid %u: unchanged: %s (%ld usec)", plugin_type,
		      submit_uid, why, usec_since(&t0));
	}
	return SLURM_SUCCESS;
}

/* A pending job resized (or moved to another partition) by `scontrol
 * update` gets its count recomputed, or cleared when the new size is not
 * one this plugin gives a count, but only while the count is the one this
 * plugin chose: a Switches= the user set since is theirs. The note in
 * AdminComment follows (written into the job record: job_desc's would
 * need an operator), so it says the count the job has. update_job checks
 * who asks only after this hook: a request from anyone but the job's
 * owner or an operator is left alone here, else a refused one would
 * rewrite the note. Should update_job refuse the rest of an allowed
 * request, the note and the count disagree and the job is left alone
 * from then on. NumNodes=ALL (min_nodes INFINITE) is "no change" to
 * update_job. */
extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr,
		      uint32_t submit_uid)
{
	const char *why = "";
	uint32_t req = NO_VAL, wait = NO_VAL, had;
	uint32_t min_nodes =
	    job_desc->min_nodes == INFINITE ? NO_VAL : job_desc->min_nodes;
	char *note;

	if (!job_ptr || !IS_JOB_PENDING(job_ptr) ||
	    job_desc->req_switch != NO_VAL ||
	    (min_nodes == NO_VAL && !job_desc->tres_per_job &&
	     !job_desc->partition) ||
	    (submit_uid != job_ptr->user_id &&
	     !validate_operator((uid_t)submit_uid)) ||
	    !noted_count(job_ptr->admin_comment, &had))
		return SLURM_SUCCESS;
	if (job_ptr->req_switch != had) {
		debug("%s: %pJ: switches set to %u since this plugin's %u: "
		      "unchanged",
		      plugin_type, job_ptr, job_ptr->req_switch, had);
		return SLURM_SUCCESS;
	}
	slurm_mutex_lock(&conf_lock);
	refresh_conf();
	note = decide(min_nodes != NO_VAL ? min_nodes
		      : job_ptr->details  ? job_ptr->details->min_nodes
					  : 1,
		      job_desc->tres_per_job ? job_desc->tres_per_job
					     : job_ptr->tres_per_job,
		      job_desc->partition ? job_desc->partition
					  : job_ptr->partition,
		      &req, &wait, &why);
	slurm_mutex_unlock(&conf_lock);
	if (note) {
		job_desc->req_switch = req;
		job_desc->wait4switch = wait;
		renote(&job_ptr->admin_comment, note);
		debug("%s: %pJ resized: %s", plugin_type, job_ptr, note);
		xfree(note);
	} else if (why == why_size || why == why_leaves) {
		/* the count this plugin chose may not fit the new size: a
		 * job would wait up to SwitchWait for nothing */
		job_desc->req_switch = 0;
		xstrfmtcat(note, MARK " switches cleared (%s)", why);
		renote(&job_ptr->admin_comment, note);
		xfree(note);
		debug("%s: %pJ resized: switches cleared: %s", plugin_type,
		      job_ptr, why);
	} else {
		debug("%s: %pJ resized: unchanged: %s", plugin_type, job_ptr,
		      why);
	}
	return SLURM_SUCCESS;
}
