/*
 * topoplace show job JOBID | jobs: what Slurm jobs got, measured against
 * the fabric - span against the minimum, predicted against ideal
 * all-reduce time, and why.
 *
 * The jobs come from slurmctld through libslurm as the calling user, so
 * Slurm's own visibility rules (PrivateData=jobs) decide what a user sees;
 * nothing here reads Slurm's state behind its back except the decision
 * records, and those only for jobs slurmctld already showed us.
 *
 * Where the decision comes from: the native (24.11) topology plugin
 * records each decision in <StateSaveLocation>/topoplace-decisions.jsonl;
 * a record for the job wins when its hosts are the job's hosts (job ids
 * restart after a cleared state). Otherwise - compatible mode, Slurm
 * 22.05, where cons_tres chose - the allocation is analysed here: spans
 * of the hosts the job holds, the minimum on an empty fabric, the cost
 * model on those hosts in fabric ring order, and the ideal on an empty
 * fabric (the fastest set known there), exactly as `topoplace place`
 * computes ideal_s.
 *
 * This is the one file outside plugin/ that includes Slurm: it is a client
 * of slurmctld, built only when configure finds libslurm
 * (cmd_show_none.c otherwise).
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "cli.h"
#include "tp_placement.h"
#include "tp_plugin.h"
#include "tp_runtime.h"

static const char show_usage[] =
    "Usage: topoplace show job JOBID [--json] [--fabric F.json] [--timeout S]\n"
    "       topoplace show jobs [--json] [--fabric F.json] [--timeout S]\n"
    "\n"
    "What Slurm jobs got (running and recently finished ones slurmctld still\n"
    "holds, as far as Slurm lets the caller see them): hosts, GPUs per host,\n"
    "span against the minimum on an empty fabric, predicted against ideal\n"
    "all-reduce time (1 GiB), the policy and a one-line reason. A decision\n"
    "recorded by the native plugin "
    "(StateSaveLocation/topoplace-decisions.jsonl)\n"
    "is shown as recorded; otherwise the allocation is analysed (compatible\n"
    "mode).\n"
    "  --fabric F.json  the fabric (default: FabricFile in topoplace.conf\n"
    "                   beside slurm.conf: $SLURM_CONF or "
    "/etc/slurm/slurm.conf)\n"
    "  --timeout S      give up on slurmctld after S seconds (default 5)\n"
    "  --json           job_id, user, state, nodelist, hosts (ring order), "
    "gpus,\n"
    "                   span{...}, predicted_s, ideal_s, policy, reason, "
    "source,\n"
    "                   plan: the topoplace-plan/1 the SPANK plugin gives a\n"
    "                   step of the job, with a task per GPU the job holds\n"
    "                   on each host (a step's own tasks are not known "
    "here)\n"
    "                   and NicsByRate, PlanPriceMaxHosts and LinkState\n"
    "                   from topoplace.conf, host phases priced as rings when\n"
    "                   TOPOPLACE_COLL_SHM=0 here, the hierarchical\n"
    "                   pipeline's segment TOPOPLACE_COLL_SEGMENT's; null\n"
    "                   when it cannot be built\n"
    "  -h, --help       this text\n"
    "Exit status: 2 unknown job or no fabric, 1 slurmctld unreachable.\n";

#define COMPAT_POLICY "slurm (compatible mode)"

/* One job as shown. Names and counts in ring order when analysed. */
typedef struct show_job {
	uint32_t id;
	char user[64];
	char state[32];
	char *nodelist; /* Slurm's, borrowed from the message */
	char **names;	/* hosts */
	int *gpus;	/* GPUs per host */
	size_t n;
	bool analysed; /* span and times below are valid */
	size_t span[TP_SPAN_NLEVELS];
	size_t min[TP_SPAN_NLEVELS];
	double predicted_s, ideal_s;
	char policy[64];
	char reason[320];
	const char *source; /* "analysis", "record", "none" */
	tp_plan_t *plan;    /* the job-start plan of its hosts, or NULL */
} show_job_t;

static unsigned alarm_s;

static void on_alarm(int sig)
{
	static const char m1[] =
	    "topoplace: show: no answer from slurmctld in ";
	static const char m2[] = " s\n";
	char num[16];
	size_t k = sizeof(num);
	unsigned v = alarm_s;

	(void)sig;
	do {
		num[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v && k);
	/* async-signal-safe only: libslurm may be inside a lock */
	if (write(STDERR_FILENO, m1, sizeof(m1) - 1) < 0 ||
	    write(STDERR_FILENO, num + k, sizeof(num) - k) < 0 ||
	    write(STDERR_FILENO, m2, sizeof(m2) - 1) < 0)
		_exit(TP_EXIT_FAIL);
	_exit(TP_EXIT_FAIL);
}

static const char *state_name(uint32_t st)
{
	static const char *const names[] = {
	    "PENDING",	 "RUNNING",   "SUSPENDED", "COMPLETED",
	    "CANCELLED", "FAILED",    "TIMEOUT",   "NODE_FAIL",
	    "PREEMPTED", "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY",
	};
	uint32_t b = st & JOB_STATE_BASE;

	if (st & JOB_COMPLETING)
		return "COMPLETING";
	return b < sizeof(names) / sizeof(names[0]) ? names[b] : "UNKNOWN";
}

static bool comm_error(int e)
{
	return e == SLURM_COMMUNICATIONS_CONNECTION_ERROR ||
	       e == SLURM_COMMUNICATIONS_SEND_ERROR ||
	       e == SLURM_COMMUNICATIONS_RECEIVE_ERROR ||
	       e == SLURM_COMMUNICATIONS_SHUTDOWN_ERROR ||
	       e == SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR ||
	       e == SLURMCTLD_COMMUNICATIONS_SEND_ERROR ||
	       e == SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR ||
	       e == SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR ||
	       e == SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT ||
	       e == SLURM_PROTOCOL_AUTHENTICATION_ERROR;
}

/* "gpu:2(IDX:0-1)", "gpu:a100:2(IDX:0,3)": the count before '('. */
static int gres_detail_gpus(const char *s)
{
	const char *g = s ? strstr(s, "gpu") : NULL;
	const char *end, *colon = NULL;

	if (!g)
		return -1;
	end = strchr(g, '(');
	if (!end)
		end = g + strlen(g);
	for (const char *p = g; p < end; p++)
		if (*p == ':')
			colon = p;
	return colon ? atoi(colon + 1) : -1;
}

/* "gres/gpu=8" in tres_alloc_str, "gres:gpu:2" / "gres/gpu:2" in
 * tres_per_node: the number after the last separator of the gpu item. */
static long tres_gpus(const char *s, const char *key)
{
	const char *p = s ? strstr(s, key) : NULL;
	const char *q;

	if (!p)
		return -1;
	p += strlen(key);
	q = p;
	while (*q && *q != ',' && *q != ';')
		q++;
	while (q > p && q[-1] >= '0' && q[-1] <= '9')
		q--;
	return *q >= '0' && *q <= '9' ? strtol(q, NULL, 10) : -1;
}

static void job_gpus(const slurm_job_info_t *j, size_t n, int *gpus)
{
	long per = -1, total;

	if (j->gres_detail_cnt == n && j->gres_detail_str) {
		bool ok = true;
		for (size_t i = 0; i < n && ok; i++)
			ok = (gpus[i] =
				  gres_detail_gpus(j->gres_detail_str[i])) >= 0;
		if (ok)
			return;
	}
	total = tres_gpus(j->tres_alloc_str, "gres/gpu");
	if (total >= 0 && n)
		per = total / (long)n;
	if (per < 0)
		per = tres_gpus(j->tres_per_node, "gpu");
	for (size_t i = 0; i < n; i++)
		gpus[i] = per > 0 ? (int)per : 0;
}

/* Faster of ring and hierarchical, as tp_place_run predicts. */
static tp_err_t predict(const tp_cost_ctx_t *ctx, const uint32_t *hosts,
			const int *gpus, size_t n, double *s_p)
{
	const tp_request_t none = {0}; /* the bytes tp_place_run prices */
	tp_cost_t c;
	tp_err_t err = tp_cost_predict_best(ctx, NULL, hosts, gpus, n,
					    tp_request_bytes(&none), NULL, &c);

	if (!err)
		*s_p = c.seconds;
	return err;
}

/* Compatible mode: measure the allocation against the fabric. */
static void analyse(show_job_t *sj, const slurm_job_info_t *j,
		    const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
		    tp_ideal_cache_t *ideals)
{
	uint32_t *hv = tp_calloc(sj->n, sizeof(*hv));
	int *gv = tp_calloc(sj->n, sizeof(*gv));
	tp_request_t r = {0};
	int gmin = -1;
	tp_err_t err;

	snprintf(sj->policy, sizeof(sj->policy), "%s", COMPAT_POLICY);
	sj->source = "analysis";
	if (!hv || !gv) {
		snprintf(sj->reason, sizeof(sj->reason), "out of memory");
		goto out;
	}
	for (size_t i = 0; i < sj->n; i++) {
		hv[i] = tp_fabric_host_find(f, sj->names[i]);
		if (hv[i] == TP_ID_NONE) {
			snprintf(sj->reason, sizeof(sj->reason),
				 "host %s is not in the fabric: not analysed",
				 sj->names[i]);
			goto out;
		}
		/* CPU-only jobs: one rank per host for the prediction */
		gv[i] = sj->gpus[i] > 0 ? sj->gpus[i] : 1;
		if (gmin < 0 || gv[i] < gmin)
			gmin = gv[i];
	}
	tp_ring_order(f, hv, gv, sj->n);
	for (size_t i = 0; i < sj->n; i++) {
		/* names follow the ring order the prediction assumed */
		sj->names[i] = tp_fabric_host(f, hv[i])->name;
		sj->gpus[i] = gv[i];
	}
	tp_span_of(f, hv, sj->n, sj->span);
	r.nodes = (int)sj->n;
	r.gpus_per_node = gmin;
	r.exclusive = j->shared == 0;
	tp_span_min(f, NULL, &r, sj->min);
	err = predict(ctx, hv, gv, sj->n, &sj->predicted_s);
	if (!err)
		err = tp_place_ideal(f, &r, NULL, ctx, ideals, &sj->ideal_s);
	if (err) {
		snprintf(sj->reason, sizeof(sj->reason),
			 "no prediction for these hosts: %s", tp_strerror(err));
		goto out;
	}
	sj->analysed = true;
	{
		size_t g = sj->span[TP_SPAN_GROUPS],
		       mg = sj->min[TP_SPAN_GROUPS];
		size_t sg = sj->span[TP_SPAN_SPINE_GROUPS];
		size_t msg = sj->min[TP_SPAN_SPINE_GROUPS];
		double ratio =
		    sj->ideal_s > 0 ? sj->predicted_s / sj->ideal_s : 1;
		int k;

		if (g <= mg && sg <= msg)
			k = snprintf(
			    sj->reason, sizeof(sj->reason),
			    "%zu host(s) on %zu level-1 group(s), the minimum",
			    sj->n, g);
		else
			k = snprintf(
			    sj->reason, sizeof(sj->reason),
			    "%zu host(s) on %zu level-1 group(s) and %zu spine "
			    "group(s) "
			    "where %zu and %zu would do on an empty fabric",
			    sj->n, g, sg, mg, msg);
		if (k > 0 && (size_t)k < sizeof(sj->reason))
			snprintf(sj->reason + k, sizeof(sj->reason) - (size_t)k,
				 ratio > 1.005 || ratio < 0.995
				     ? "; all-reduce %.2fx the ideal"
				     : "; all-reduce at the ideal",
				 ratio);
	}
out:
	tp_free(hv);
	tp_free(gv);
}

/* ---- decision records (native mode) ---- */

typedef struct records {
	tp_decision_t *v;
	size_t n;
} records_t;

/* The native plugin's records (tp_decisions_read, lenient: an older or
 * hand-edited line still counts); lines that do not decode (a write cut
 * short) are skipped with one warning. Nothing when the file is absent
 * or unreadable. */
static void load_records(const char *dir, records_t *r)
{
	char path[4096], *why = NULL;
	size_t bad = 0;

	if (!dir || !*dir ||
	    snprintf(path, sizeof(path), "%s/%s", dir, TP_DECISIONS_FILE) >=
		(int)sizeof(path))
		return;
	/* absent or unreadable (StateSaveLocation is usually SlurmUser's
	 * alone): analyse instead, silently */
	if (access(path, R_OK) || tp_decisions_read(path, TP_DECISION_LENIENT,
						    &r->v, &r->n, &bad, &why))
		return;
	if (bad && !tp_cli_quiet)
		fprintf(stderr,
			"topoplace: warning: %zu line%s of decision records "
			"skipped, the first: %s\n",
			bad, bad == 1 ? "" : "s", why ? why : path);
	tp_free(why);
}

static const tp_decision_t *find_record(const records_t *r, uint32_t id)
{
	const tp_decision_t *found = NULL;

	/* the last record for a job wins: a requeued job is placed again */
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].job_id == id)
			found = &r->v[i];
	return found;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The record's hosts are the job's. */
static bool record_matches(const tp_decision_t *rec, const show_job_t *sj)
{
	char **a = NULL, **b = NULL;
	size_t na = 0;
	bool same = false;

	if (!rec->hosts)
		return true;
	if (tp_hostlist_expand(rec->hosts, &a, &na))
		return false;
	if (na != sj->n || !(b = tp_calloc(na + 1, sizeof(char *))))
		goto out;
	memcpy(b, sj->names, na * sizeof(char *));
	qsort(a, na, sizeof(char *), cmp_str);
	qsort(b, na, sizeof(char *), cmp_str);
	same = true;
	for (size_t i = 0; i < na && same; i++)
		same = !strcmp(a[i], b[i]);
out:
	tp_hostlist_free(a, na);
	tp_free(b);
	return same;
}

/* Overlay what the plugin recorded on the analysis. */
static void apply_record(show_job_t *sj, const tp_decision_t *rec)
{
	sj->source = "record";
	for (int l = 0; l < TP_SPAN_NLEVELS; l++) {
		if (rec->span[l] != TP_DECISION_NONE)
			sj->span[l] = rec->span[l];
		/* what an empty fabric allows, else the free state's */
		if (rec->min_empty[l] != TP_DECISION_NONE)
			sj->min[l] = rec->min_empty[l];
		else if (rec->min_free[l] != TP_DECISION_NONE)
			sj->min[l] = rec->min_free[l];
	}
	if (rec->priced) {
		sj->predicted_s = rec->predicted_s;
		sj->ideal_s = rec->ideal_s;
	}
	if (rec->policy)
		snprintf(sj->policy, sizeof(sj->policy), "%s", rec->policy);
	if (rec->reason)
		snprintf(sj->reason, sizeof(sj->reason), "%s", rec->reason);
	sj->analysed = true;
}

/* ---- one job ---- */

static tp_err_t show_job_fill(show_job_t *sj, const slurm_job_info_t *j)
{
	struct passwd *pw = getpwuid((uid_t)j->user_id);
	tp_err_t err;

	memset(sj, 0, sizeof(*sj));
	sj->id = j->job_id;
	sj->source = "none";
	if (pw)
		snprintf(sj->user, sizeof(sj->user), "%s", pw->pw_name);
	else
		snprintf(sj->user, sizeof(sj->user), "%u", j->user_id);
	snprintf(sj->state, sizeof(sj->state), "%s", state_name(j->job_state));
	sj->nodelist = j->nodes;
	if (!j->nodes || !*j->nodes ||
	    (j->job_state & JOB_STATE_BASE) == JOB_PENDING) {
		snprintf(sj->reason, sizeof(sj->reason), "%s",
			 (j->job_state & JOB_STATE_BASE) == JOB_PENDING
			     ? "pending: no hosts yet"
			     : "no hosts");
		return TP_OK;
	}
	if ((err = tp_hostlist_expand(j->nodes, &sj->names, &sj->n)))
		return err;
	if (!(sj->gpus = tp_calloc(sj->n + 1, sizeof(int))))
		return TP_ERR_NOMEM;
	job_gpus(j, sj->n, sj->gpus);
	return TP_OK;
}

static cJSON *job_json(const show_job_t *sj)
{
	cJSON *o = cJSON_CreateObject(), *h, *g;

	cJSON_AddNumberToObject(o, "job_id", sj->id);
	cJSON_AddStringToObject(o, "user", sj->user);
	cJSON_AddStringToObject(o, "state", sj->state);
	if (sj->nodelist && *sj->nodelist)
		cJSON_AddStringToObject(o, "nodelist", sj->nodelist);
	else
		cJSON_AddNullToObject(o, "nodelist");
	h = cJSON_AddArrayToObject(o, "hosts");
	g = cJSON_AddArrayToObject(o, "gpus");
	for (size_t i = 0; i < sj->n; i++) {
		cJSON_AddItemToArray(h, cJSON_CreateString(sj->names[i]));
		cJSON_AddItemToArray(g, cJSON_CreateNumber(sj->gpus[i]));
	}
	if (sj->analysed) {
		cJSON *s = cJSON_AddObjectToObject(o, "span");
		cJSON_AddNumberToObject(s, "hosts",
					(double)sj->span[TP_SPAN_HOSTS]);
		cJSON_AddNumberToObject(s, "nvlink_domains",
					(double)sj->span[TP_SPAN_NVDOMAINS]);
		cJSON_AddNumberToObject(s, "groups",
					(double)sj->span[TP_SPAN_GROUPS]);
		cJSON_AddNumberToObject(s, "spine_groups",
					(double)sj->span[TP_SPAN_SPINE_GROUPS]);
		cJSON_AddNumberToObject(s, "min_nvlink_domains",
					(double)sj->min[TP_SPAN_NVDOMAINS]);
		cJSON_AddNumberToObject(s, "min_groups",
					(double)sj->min[TP_SPAN_GROUPS]);
		cJSON_AddNumberToObject(s, "min_spine_groups",
					(double)sj->min[TP_SPAN_SPINE_GROUPS]);
		cJSON_AddNumberToObject(o, "predicted_s", sj->predicted_s);
		cJSON_AddNumberToObject(o, "ideal_s", sj->ideal_s);
	} else {
		cJSON_AddNullToObject(o, "span");
		cJSON_AddNullToObject(o, "predicted_s");
		cJSON_AddNullToObject(o, "ideal_s");
	}
	if (*sj->policy)
		cJSON_AddStringToObject(o, "policy", sj->policy);
	else
		cJSON_AddNullToObject(o, "policy");
	cJSON_AddStringToObject(o, "reason", sj->reason);
	cJSON_AddStringToObject(o, "source", sj->source);
	/* the plan the SPANK plugin gives a step of the job: deterministic
	 * for the hosts and tasks, so rebuilt here rather than read from the
	 * job's private directory (gone once the job ends) */
	char *pj = NULL;
	cJSON *plan = sj->plan && !tp_plan_to_json(sj->plan, &pj)
			  ? cJSON_Parse(pj)
			  : NULL;
	tp_free(pj);
	if (plan)
		cJSON_AddItemToObject(o, "plan", plan);
	else
		cJSON_AddNullToObject(o, "plan");
	return o;
}

static void job_text(const show_job_t *sj)
{
	printf("job %u (%s, %s)\n", sj->id, sj->user, sj->state);
	if (sj->n) {
		printf("  hosts      %s (ring order", sj->nodelist);
		for (size_t i = 0; i < sj->n; i++)
			printf(" %s:%d", sj->names[i], sj->gpus[i]);
		printf(")\n");
	}
	if (sj->analysed) {
		printf("  span       %zu host%s, %zu NVLink domain%s, %zu "
		       "group%s (minimum %zu), %zu spine group%s (minimum "
		       "%zu)\n",
		       sj->span[TP_SPAN_HOSTS],
		       tp_cli_s(sj->span[TP_SPAN_HOSTS]),
		       sj->span[TP_SPAN_NVDOMAINS],
		       tp_cli_s(sj->span[TP_SPAN_NVDOMAINS]),
		       sj->span[TP_SPAN_GROUPS],
		       tp_cli_s(sj->span[TP_SPAN_GROUPS]),
		       sj->min[TP_SPAN_GROUPS], sj->span[TP_SPAN_SPINE_GROUPS],
		       tp_cli_s(sj->span[TP_SPAN_SPINE_GROUPS]),
		       sj->min[TP_SPAN_SPINE_GROUPS]);
		printf(
		    "  all-reduce predicted %.3f ms, ideal %.3f ms (1 GiB)\n",
		    sj->predicted_s * 1e3, sj->ideal_s * 1e3);
	}
	if (*sj->policy)
		printf("  policy     %s\n", sj->policy);
	printf("  why        %s\n", sj->reason);
	if (sj->plan) {
		printf("  plan       %zu ranks; group leaders",
		       tp_plan_world_size(sj->plan));
		for (size_t g = 0; g < tp_plan_ngroups(sj->plan); g++) {
			const tp_plan_group_t *gp = tp_plan_group(sj->plan, g);
			printf(" %s", tp_plan_host(sj->plan, gp->leader)->name);
		}
		printf(" (topoplace plan --fabric FABRIC --nodes %s "
		       "--no-predict for the rest)\n",
		       sj->nodelist);
	}
}

static void show_job_free(show_job_t *sj, char **own)
{
	tp_plan_destroy(sj->plan);
	tp_hostlist_free(own, sj->n);
	tp_free(sj->gpus);
	memset(sj, 0, sizeof(*sj));
}

/* ---- the command ---- */

/* The fabric, NicsByRate (*nbr_p), PlanPriceMaxHosts (*price_p) and
 * LinkState (*links_p, resolved beside the conf; NULL without one) as the
 * plugins find them in topoplace.conf beside slurm.conf; --fabric
 * replaces the fabric alone: the conf, when there is one, still says how
 * the SPANK plugin weighs and prices a plan's ranks (a conf that does not
 * read: a warning, and the defaults). */
static tp_fabric_t *fabric_from_conf(const char *fabric, bool *nbr_p,
				     uint32_t *price_p, char **links_p,
				     int *rc_p)
{
	const char *conf = getenv("SLURM_CONF");
	char path[4096];
	char *why = NULL;
	const char *slash;
	tp_pconf_t pc;
	tp_stree_t tree;
	tp_fabric_t *f = NULL;
	tp_err_t err;

	if (!conf || !*conf)
		conf = "/etc/slurm/slurm.conf";
	slash = strrchr(conf, '/');
	snprintf(path, sizeof(path), "%.*s%stopoplace.conf",
		 slash ? (int)(slash - conf) : 0, conf, slash ? "/" : "");
	tp_pconf_defaults(&pc);
	if (fabric) {
		err = tp_pconf_load(path, &pc, &why);
		if (err && err != TP_ERR_NOTFOUND && !tp_cli_quiet)
			tp_cli_err("warning: show: %s; plans with its defaults",
				   why ? why : tp_strerror(err));
		*nbr_p = !err && pc.nics_by_rate;
		*price_p = pc.plan_price_max_hosts; /* a bad conf: defaults */
		if (!err && pc.link_state)
			*links_p = tp_pconf_path(path, pc.link_state);
		tp_free(why);
		tp_pconf_free(&pc);
		return tp_cli_load(fabric, rc_p);
	}
	/* the fabric exactly as the plugins find it */
	err = tp_pconf_load_fabric(path, SIZE_MAX, &pc, &f, &tree, &why);
	if (err) {
		if (err == TP_ERR_NOTFOUND)
			tp_cli_err("show: no fabric: %s (give --fabric F.json)",
				   why ? why : tp_strerror(err));
		else
			tp_cli_err("show: %s", why ? why : tp_strerror(err));
		*rc_p = err == TP_ERR_NOMEM ? TP_EXIT_FAIL : TP_EXIT_INPUT;
	} else {
		tp_stree_free(&tree);
		*nbr_p = pc.nics_by_rate;
		*price_p = pc.plan_price_max_hosts;
		if (pc.link_state)
			*links_p = tp_pconf_path(path, pc.link_state);
	}
	tp_free(why);
	tp_pconf_free(&pc);
	return f;
}

/* The plan the SPANK plugin gives a step of the job on its hosts (in
 * the ring order analyse() left them): a task per GPU the job holds on
 * each, one on a host without, as `srun` runs a step of one task per
 * GPU; priced with ctx when it has at most price_max hosts
 * (PlanPriceMaxHosts), else by rule. NULL when it cannot be built (a
 * host not in the fabric). */
static tp_plan_t *job_plan(const tp_fabric_t *f, const tp_cost_ctx_t *ctx,
			   const tp_state_t *links, const show_job_t *sj,
			   bool nics_by_rate, uint32_t price_max)
{
	uint32_t *tasks = tp_calloc(sj->n, sizeof(*tasks));
	tp_plan_t *plan = NULL;

	if (!tasks)
		return NULL;
	for (size_t i = 0; i < sj->n; i++)
		tasks[i] = sj->gpus[i] > 0 ? (uint32_t)sj->gpus[i] : 1;
	if (sj->n > price_max)
		ctx = NULL;
	if (tp_plan_build_step(f, ctx, links, (const char *const *)sj->names,
			       sj->n, tasks, nics_by_rate, &plan, NULL))
		plan = NULL;
	tp_free(tasks);
	return plan;
}

int tp_cmd_show(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"fabric", required_argument, NULL, TP_CLI_OPT_FABRIC},
	    {"timeout", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, TP_CLI_OPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tp_cli_args_t a = {.usage = show_usage};
	const char *what;
	bool one;
	long timeout = 5, id = 0;
	int c, rc = TP_EXIT_INPUT, e;
	tp_fabric_t *f = NULL;
	tp_cost_ctx_t *ctx = NULL;
	/* the plans' (the library's pipeline segment priced) */
	tp_cost_ctx_t *pctx = NULL;
	/* jobs of one shape share their ideal */
	tp_ideal_cache_t *ideals = NULL;
	job_info_msg_t *jobs = NULL;
	slurm_conf_t *sconf = NULL;
	records_t recs = {0};
	cJSON *out = NULL;
	bool nics_by_rate = false; /* topoplace.conf's NicsByRate */
	uint32_t price_max = 0;	   /* and its PlanPriceMaxHosts */
	char *links_path = NULL;   /* and its LinkState */
	tp_state_t *links = NULL;  /* read: the plans are priced on it */
	tp_err_t err;

	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "h", opts, &a)) != -1) {
		switch (c) {
		case 't':
			if (!tp_cli_int("--timeout", optarg, 1, 3600, &timeout))
				return TP_EXIT_INPUT;
			break;
		}
	}
	if (a.exit >= 0)
		return a.exit;
	what = optind < argc ? argv[optind] : "";
	one = !strcmp(what, "job");
	if (one ? optind + 2 != argc
		: (strcmp(what, "jobs") || optind + 1 != argc)) {
		tp_cli_err("show: expected 'job JOBID' or 'jobs' (see --help)");
		return TP_EXIT_INPUT;
	}
	if (one &&
	    !tp_cli_int("show job", argv[optind + 1], 1, 0xfffffffeL, &id))
		return TP_EXIT_INPUT;
	if (!(f = fabric_from_conf(a.fabric, &nics_by_rate, &price_max,
				   &links_path, &rc))) {
		tp_free(links_path);
		return rc;
	}
	/* the plans priced on LinkState as the SPANK plugin prices them; one
	 * that does not read: a warning, and healthy links, as there */
	if (links_path && price_max) {
		char *why = NULL;
		/* the plugin's cap (the step start's memory) */
		err = tp_state_load_json_capped(
		    f, links_path, TP_STEP_LINKSTATE_MAX, &links, &why);
		if (err && !tp_cli_quiet)
			tp_cli_err("warning: show: LinkState %s; plans priced "
				   "on healthy links",
				   why ? why : tp_strerror(err));
		tp_free(why);
	}
	tp_free(links_path);
	tp_cost_params_t cp;
	tp_cli_cost_params(&cp);
	/* priced as the plan below splits the data */
	cp.nics_by_rate = nics_by_rate;
	/* without a cache (no memory) each job works its ideal out anew */
	ideals = tp_ideal_cache_create();
	tp_cost_params_t pp = cp;
	pp.coll_rings = true; /* the plan's predictions: what auto runs */
	if (!tp_cli_plan_segment("show", &pp)) {
		rc = TP_EXIT_INPUT;
		goto out;
	}
	if ((err = tp_cost_ctx_create(f, &cp, &ctx)) ||
	    (price_max && (err = tp_cost_ctx_create(f, &pp, &pctx)))) {
		tp_cli_err("show: cost model: %s", tp_strerror(err));
		rc = tp_cli_exit_code(err);
		goto out;
	}

	/* without slurm.conf (and no configless server) libslurm would print
	 * its DNS SRV attempts and exit on its own */
	{
		const char *sc = getenv("SLURM_CONF");
		if (!sc || !*sc)
			sc = "/etc/slurm/slurm.conf";
		if (access(sc, R_OK) && !getenv("SLURM_CONF_SERVER")) {
			tp_cli_err("show: cannot read %s (set SLURM_CONF): %s",
				   sc, strerror(errno));
			rc = TP_EXIT_FAIL;
			goto out;
		}
	}
	/* libslurm retries an absent controller for MessageTimeout and more;
	 * an admin's question deserves a quick "no" */
	alarm_s = (unsigned)timeout;
	signal(SIGALRM, on_alarm);
	alarm(alarm_s);
	slurm_init(NULL);
	e = one ? slurm_load_job(&jobs, (uint32_t)id, SHOW_DETAIL)
		: slurm_load_jobs(0, &jobs, SHOW_ALL | SHOW_DETAIL);
	if (e != SLURM_SUCCESS) {
		e = slurm_get_errno();
		alarm(0);
		if (e == SLURM_UNEXPECTED_MSG_ERROR ||
		    e == SLURM_PROTOCOL_VERSION_ERROR) {
			/* a controller two or more releases apart (Slurm
			 * talks to two back): 22.05's libslurm and 24.11 */
			long v = SLURM_VERSION_NUMBER; /* built with */
			tp_cli_err(
			    "show: slurmctld: %s: it runs another Slurm "
			    "release than this build's libslurm (%ld.%02ld): "
			    "build topoplace with the cluster's Slurm "
			    "(its native plugin's decisions are in "
			    "StateSaveLocation/topoplace-decisions.jsonl)",
			    slurm_strerror(e), SLURM_VERSION_MAJOR(v),
			    SLURM_VERSION_MINOR(v));
			rc = TP_EXIT_FAIL;
		} else if (comm_error(e)) {
			tp_cli_err("show: slurmctld: %s", slurm_strerror(e));
			rc = TP_EXIT_FAIL;
		} else if (one && (e == ESLURM_INVALID_JOB_ID ||
				   e == ESLURM_ACCESS_DENIED)) {
			tp_cli_err("show: job %ld: no such job (or not visible "
				   "to you)",
				   id);
			rc = TP_EXIT_INPUT;
		} else {
			tp_cli_err("show: slurmctld: %s", slurm_strerror(e));
			rc = TP_EXIT_FAIL;
		}
		goto out;
	}
	if (slurm_load_ctl_conf(0, &sconf) == SLURM_SUCCESS)
		load_records(sconf->state_save_location, &recs);
	alarm(0);

	size_t nshown = 0;
	out = a.json && !one ? cJSON_CreateArray() : NULL;
	for (uint32_t i = 0; jobs && i < jobs->record_count; i++) {
		const slurm_job_info_t *j = &jobs->job_array[i];
		show_job_t sj;
		char **own;
		const tp_decision_t *rec;

		if (one && j->job_id != (uint32_t)id)
			continue; /* array / het siblings */
		if ((err = show_job_fill(&sj, j))) {
			tp_cli_err("show: job %u: node list '%s': %s",
				   j->job_id, j->nodes ? j->nodes : "",
				   tp_strerror(err));
			show_job_free(&sj, sj.names);
			rc = tp_cli_exit_code(err);
			goto out;
		}
		/* analyse() re-points names[] into the fabric (ring order):
		 * the expanded strings stay in own[] for freeing */
		own = sj.names;
		if (sj.n && !(sj.names = tp_calloc(sj.n, sizeof(char *)))) {
			sj.names = own;
			show_job_free(&sj, own);
			rc = TP_EXIT_FAIL;
			goto out;
		}
		if (sj.n) {
			memcpy(sj.names, own, sj.n * sizeof(char *));
			rec = find_record(&recs, sj.id);
			analyse(&sj, j, f, ctx, ideals);
			if (rec && record_matches(rec, &sj))
				apply_record(&sj, rec);
			sj.plan = job_plan(f, pctx, links, &sj, nics_by_rate,
					   price_max);
		}
		if (a.json) {
			cJSON *o = job_json(&sj);
			if (out)
				cJSON_AddItemToArray(out, o);
			else
				out = o;
		} else {
			if (nshown)
				putchar('\n');
			job_text(&sj);
		}
		nshown++;
		tp_free(sj.names);
		show_job_free(&sj, own);
	}
	if (one && !nshown) {
		tp_cli_err("show: job %ld: no such job (or not visible to you)",
			   id);
		rc = TP_EXIT_INPUT;
		goto out;
	}
	if (a.json) {
		char *txt = out ? cJSON_Print(out) : NULL;
		if (!txt) {
			rc = TP_EXIT_FAIL;
			goto out;
		}
		puts(txt);
		cJSON_free(txt);
	}
	if (fflush(stdout)) {
		tp_cli_err("stdout: %s", strerror(errno));
		rc = TP_EXIT_FAIL;
		goto out;
	}
	rc = TP_EXIT_OK;
out:
	alarm(0);
	cJSON_Delete(out);
	tp_decisions_free(recs.v, recs.n);
	if (sconf)
		slurm_free_ctl_conf(sconf);
	if (jobs)
		slurm_free_job_info_msg(jobs);
	tp_ideal_cache_destroy(ideals);
	tp_cost_ctx_destroy(ctx);
	tp_cost_ctx_destroy(pctx);
	tp_state_destroy(links);
	tp_fabric_destroy(f);
	return rc;
}
