/* topoplace trace: a job trace (CSV, sacct output, a jobcomp log) as the
 * CSV simulate reads, with what was left out, so an admin can replay the
 * cluster's own jobs and edit what Slurm does not record (comm_frac,
 * model_bytes). */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: topoplace trace FILE [--assume-gpus all|N] [-o OUT] [--json]\n"
    "       topoplace trace FILE --price --fabric F.json [--state S.json]\n"
    "                       [--nics-by-rate] [--policy P]\n"
    "                       [--assume-gpus all|N] [-o OUT] [--json]\n"
    "\n"
    "Read a job trace and print it as the CSV 'simulate --trace' reads:\n"
    "submit_s,gpus,nodes,gpus_per_node,run_s,comm_frac,model_bytes, one\n"
    "job a line in submit order, after a '#' line that says what was read\n"
    "and left out. FILE is any trace simulate takes:\n"
    "  - our CSV (simulate --help has its columns);\n"
    "  - sacct's parsable output with its header, e.g.\n"
    "      sacct -a -X -P -S 2026-11-01 -E now \\\n"
    "        "
    "--format=JobID,Submit,Eligible,Start,End,NNodes,NodeList,AllocTRES\n"
    "    (Submit, Start, End and AllocTRES or ReqTRES needed; NNodes or\n"
    "    TRES node= gives the hosts; other fields are ignored; dumps\n"
    "    concatenated, each with its header, are read as one);\n"
    "  - the job completion log of JobCompType=jobcomp/filetxt (the file\n"
    "    JobCompLoc names: JobId=... lines).\n"
    "From Slurm's records a job is submitted at Submit (seconds after the\n"
    "first job's; at Eligible, sacct's field or jobcomp's EligibleTime, when\n"
    "that is later: a job held or waiting on a dependency, whose wait until\n"
    "then no placement shortens), runs End - Start on NNodes hosts with the\n"
    "GPUs of its TRES (gres/gpu, or its typed counts) split evenly over them\n"
    "(rounded up when they do not divide), comm_frac 0.3 on several hosts\n"
    "and 0.1 on one, model_bytes 1 GiB (Slurm records neither: edit the CSV\n"
    "for the jobs you know; run_s is the time the job took on the hosts it\n"
    "got, which simulate takes as its run on ideal hosts: jobs Slurm placed\n"
    "badly come already slowed, by what --price says). Left out and counted:\n"
    "jobs without GPUs, jobs that never started or had not ended, job steps\n"
    "(rows whose JobID has a '.'; sacct -X prints none). Times are Slurm's\n"
    "YYYY-MM-DDTHH:MM:SS local times, read in this process's time zone (TZ),\n"
    "so a job over a daylight-saving change gets its real run time: read the\n"
    "file with the TZ sacct (or slurmctld, for jobcomp) printed it in, or\n"
    "TZ=UTC for both (a time in an hour the clocks skip there is refused).\n"
    "sacct -r PARTITION keeps one partition's jobs, as the fabric you\n"
    "simulate may hold only its nodes. Slurm tracks GPUs in TRES only with\n"
    "AccountingStorageTRES=gres/gpu in slurm.conf (which needs slurmdbd);\n"
    "without it no record names a GPU and the file is refused, unless\n"
    "--assume-gpus says what such jobs held.\n"
    "\n"
    "--price: what the placements Slurm made cost. Each multi-node job is\n"
    "priced on the hosts Slurm gave it (sacct's NodeList field, add it to\n"
    "--format; jobcomp's NodeList=), in the ring order a plan runs them:\n"
    "the faster of ring and hierarchical all-reduce of its model_bytes there\n"
    "'alone' on idle links and 'loaded' at its start, where the trace's\n"
    "other running jobs hold their hosts and load their links with their\n"
    "all-reduce at their duty cycle, as simulate's running jobs do (--state:\n"
    "link health and background under both), against the ideal for its\n"
    "shape (the fastest set known on the idle fabric, as simulate's\n"
    "slowdown), with the level-1 groups it spans and the fewest its size\n"
    "needs. The summary gives the mean slowdown (loaded, +- its standard\n"
    "error), p95 and max, the hosts alone's mean, and the share of those\n"
    "jobs' GPU-hours spent beyond what ideal hosts would have taken at\n"
    "their comm_frac (Slurm records none: 0.3). Jobs whose hosts are not in\n"
    "the fabric, have no route between them there, or have no node list\n"
    "are counted, not priced, the first named with why (none priced:\n"
    "no slowdown, null in the JSON); a trace with no node list at all (our\n"
    "CSV, sacct output without NodeList) is refused. Next to each,\n"
    "topoplace's pick from the hosts free\n"
    "when the job started, priced there the same way, and the mean per job\n"
    "of its all-reduce time over Slurm's pick's (loaded): a decision next to\n"
    "Slurm's, not a replay (later jobs still find Slurm's placements).\n"
    "\n"
    "Options:\n"
    "  --assume-gpus all|N\n"
    "                    a record whose TRES names no GPU held all the\n"
    "                    GPUs of its hosts (all: whole hosts, as where GPU\n"
    "                    jobs get whole nodes) or N on each (default: such\n"
    "                    jobs are left out as jobs without GPUs; gres/gpu=0\n"
    "                    is one either way)\n"
    "  --price           the cost report above instead of the CSV\n"
    "  --fabric F.json   the fabric the jobs ran on (with --price)\n"
    "  --state S.json    link health and background traffic (with --price;\n"
    "                    default: the fabric as it is, idle)\n"
    "  --nics-by-rate    load each host's NICs by their rates (with --price;\n"
    "                    as simulate --nics-by-rate)\n"
    "  --policy P        whose picks stand beside Slurm's (with --price;\n"
    "                    default topoplace; slurm-tree: what a topology.conf\n"
    "                    would have done)\n"
    "  -o, --output OUT  write there instead of stdout\n"
    "  --json            the jobs and the counts as JSON (format\n"
    "                    topoplace-trace/1; with --price\n"
    "                    topoplace-trace-price/1)\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit status: 0 done; 1 out of memory or a failed write; 2 bad usage,\n"
    "or a file that cannot be read or holds no job that ran on GPUs (the\n"
    "error names FILE:LINE and the field).\n";

/* o printed, with a newline, when complete (NULL when not, or out of
 * memory); o is freed. */
static char *json_text(cJSON *o, bool complete)
{
	char *txt = complete ? cJSON_Print(o) : NULL, *withnl;

	cJSON_Delete(o);
	if (!txt)
		return NULL;
	withnl = tp_asprintf("%s\n", txt);
	free(txt);
	return withnl;
}

static char *trace_csv(const char *path, const tp_trace_t *t,
		       const char *assume_what)
{
	tp_strbuf_t sb = {0};

	tp_strbuf_printf(&sb, "# topoplace trace: %s (%s): %zu job%s", path,
			 t->format, t->njobs, tp_cli_s(t->njobs));
	if (t->left_nogpu || t->left_unrun || t->left_steps ||
	    t->left_backwards)
		tp_strbuf_printf(&sb,
				 "; left out %zu without GPUs, %zu that never "
				 "ran or had not ended, %zu job step%s",
				 t->left_nogpu, t->left_unrun, t->left_steps,
				 t->left_steps == 1 ? "" : "s");
	if (t->left_backwards)
		tp_strbuf_printf(&sb,
				 ", %zu that ended before they started (a "
				 "clock stepped back?)",
				 t->left_backwards);
	if (t->assumed)
		tp_strbuf_printf(&sb,
				 "; %zu whose GPUs Slurm did not track taken "
				 "to hold %s",
				 t->assumed, assume_what);
	if (t->rounded)
		tp_strbuf_printf(&sb,
				 "; %zu with GPUs per host rounded up to an "
				 "even split",
				 t->rounded);
	if (t->eligible_later)
		tp_strbuf_printf(&sb,
				 "; %zu submitted when eligible (held or "
				 "waiting on a dependency before)",
				 t->eligible_later);
	if (t->repeated)
		tp_strbuf_printf(&sb,
				 "; %zu repeated record%s (dumps whose windows "
				 "overlap) read once",
				 t->repeated, t->repeated == 1 ? "" : "s");
	tp_strbuf_printf(&sb, "\nsubmit_s,gpus,nodes,gpus_per_node,run_s,"
			      "comm_frac,model_bytes\n");
	for (size_t i = 0; i < t->njobs; i++) {
		const tp_job_spec_t *j = &t->jobs[i];
		tp_strbuf_num(&sb, j->submit_s);
		tp_strbuf_printf(&sb, ",%d,", j->gpus);
		if (j->nodes > 0)
			tp_strbuf_printf(&sb, "%d,%d", j->nodes,
					 j->gpus_per_node);
		else
			tp_strbuf_printf(&sb, ",");
		tp_strbuf_printf(&sb, ",");
		tp_strbuf_num(&sb, j->run_s);
		tp_strbuf_printf(&sb, ",");
		tp_strbuf_num(&sb, j->comm_frac);
		tp_strbuf_printf(&sb, ",");
		tp_strbuf_num(&sb, j->bytes);
		tp_strbuf_printf(&sb, "\n");
	}
	if (sb.failed) {
		tp_free(sb.buf);
		return NULL;
	}
	return sb.buf;
}

static char *trace_json(const char *path, const tp_trace_t *t)
{
	cJSON *o = cJSON_CreateObject(), *jobs, *left;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "format", "topoplace-trace/1");
	cJSON_AddStringToObject(o, "file", path);
	cJSON_AddStringToObject(o, "source_format", t->format);
	cJSON_AddNumberToObject(o, "jobs", (double)t->njobs);
	if ((left = cJSON_AddObjectToObject(o, "left_out"))) {
		cJSON_AddNumberToObject(left, "no_gpu", (double)t->left_nogpu);
		cJSON_AddNumberToObject(left, "not_run", (double)t->left_unrun);
		cJSON_AddNumberToObject(left, "steps", (double)t->left_steps);
		cJSON_AddNumberToObject(left, "ended_before_start",
					(double)t->left_backwards);
	}
	cJSON_AddNumberToObject(o, "rounded", (double)t->rounded);
	cJSON_AddNumberToObject(o, "assumed", (double)t->assumed);
	cJSON_AddNumberToObject(o, "eligible_later", (double)t->eligible_later);
	cJSON_AddNumberToObject(o, "repeated", (double)t->repeated);
	if (!(jobs = cJSON_AddArrayToObject(o, "trace")))
		goto out;
	for (size_t i = 0; i < t->njobs; i++) {
		const tp_job_spec_t *j = &t->jobs[i];
		cJSON *e = cJSON_CreateObject();
		if (!e || !cJSON_AddItemToArray(jobs, e)) {
			cJSON_Delete(e);
			goto out;
		}
		cJSON_AddNumberToObject(e, "line", j->line);
		cJSON_AddNumberToObject(e, "submit_s", j->submit_s);
		cJSON_AddNumberToObject(e, "gpus", j->gpus);
		cJSON_AddNumberToObject(e, "nodes", j->nodes);
		cJSON_AddNumberToObject(e, "gpus_per_node", j->gpus_per_node);
		cJSON_AddNumberToObject(e, "run_s", j->run_s);
		cJSON_AddNumberToObject(e, "comm_frac", j->comm_frac);
		cJSON_AddNumberToObject(e, "model_bytes", j->bytes);
	}
	return json_text(o, true);
out:
	return json_text(o, false);
}

/* ---- --price ---- */

typedef struct priced {
	size_t job;
	tp_trace_price_t p; /* its hosts alone (predicted_s: idle links) */
	double loaded_s;    /* the same with the running jobs' traffic */
} priced_t;

typedef struct price_run {
	priced_t *v;
	tp_trace_price_t *alt;	  /* topoplace's pick, per trace job */
	tp_trace_price_t *loaded; /* Slurm's pick at its start, per job */
	size_t nalt;	       /* priced jobs with a pick */
	double alt_slow_mean, ratio_mean, ratio_se; /* pick / Slurm's */
	size_t n, not_priced;
	char *first_not; /* the first job not priced, and why */
	size_t overbooked; /* records whose hosts were full at their start */
	char *first_over;  /* the first of them */
	double slow_mean, slow_se, slow_p95, slow_max;
	double alone_mean;    /* the slowdown of the hosts alone */
	double gpu_h, lost_h; /* GPU-hours, and beyond the ideal's */
} price_run_t;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Every multi-node job of t priced on f into *R; an exit code. */
static int price_jobs(const tp_cli_args_t *a, const tp_trace_t *t,
		      bool nics_by_rate, const tp_policy_t *policy,
		      price_run_t *R)
{
	tp_fabric_t *f = NULL;
	tp_state_t *s = NULL;
	tp_cost_ctx_t *ctx = NULL;
	tp_ideal_cache_t *cache = tp_ideal_cache_create();
	tp_policy_params_t pp;
	tp_cost_params_t cp;
	double *x = NULL;
	int rc = TP_EXIT_FAIL;
	tp_err_t err;

	R->v = tp_calloc(t->njobs ? t->njobs : 1, sizeof(*R->v));
	R->alt = tp_calloc(t->njobs ? t->njobs : 1, sizeof(*R->alt));
	R->loaded = tp_calloc(t->njobs ? t->njobs : 1, sizeof(*R->loaded));
	if (!R->v || !R->alt || !R->loaded || !cache)
		goto nomem;
	if (!(f = tp_cli_load(a->fabric, &rc)) ||
	    !(s = tp_cli_load_state(f, a->state, &rc)))
		goto out;
	tp_cli_cost_params(&cp);
	cp.nics_by_rate = nics_by_rate;
	tp_state_set_nics_by_rate(s, nics_by_rate);
	tp_policy_params_defaults(&pp);
	if ((err = tp_cost_ctx_create(f, &cp, &ctx))) {
		tp_cli_err("trace: cost model: %s", tp_strerror(err));
		rc = tp_cli_exit_code(err);
		goto out;
	}
	for (size_t j = 0; j < t->njobs; j++) {
		if (t->jobs[j].nodes < 2)
			continue;
		char *msg = NULL;
		priced_t *e = &R->v[R->n];
		err = tp_trace_price_job(f, s, ctx, &pp, cache, t, j, &e->p,
					 &msg);
		if (err == TP_ERR_NOTFOUND || err == TP_ERR_PARSE ||
		    err == TP_ERR_RANGE) {
			if (!R->not_priced++) {
				const char *id = tp_trace_job_id(t, j);
				R->first_not = tp_asprintf(
				    "job %s (line %d): %s", id ? id : "?",
				    t->jobs[j].line, msg ? msg : "?");
			}
			tp_free(msg);
			continue;
		}
		tp_free(msg);
		if (err) {
			tp_cli_err("trace: pricing line %d: %s",
				   t->jobs[j].line, tp_strerror(err));
			rc = tp_cli_exit_code(err);
			goto out;
		}
		e->job = j;
		R->n++;
	}
	if ((err = tp_trace_price_sweep(f, s, ctx, &pp, cache, policy, t,
					R->loaded, R->alt))) {
		tp_cli_err("trace: pricing the starts: %s", tp_strerror(err));
		rc = tp_cli_exit_code(err);
		goto out;
	}
	/* with the running jobs' traffic where the sweep could price it
	 * (a record its state could not hold: its hosts alone) */
	for (size_t i = 0; i < R->n; i++) {
		double lo = R->loaded[R->v[i].job].predicted_s;
		R->v[i].loaded_s = isnan(lo) ? R->v[i].p.predicted_s : lo;
	}
	for (size_t j = 0; j < t->njobs; j++)
		if (R->loaded[j].overbooked && !R->overbooked++) {
			const char *id = tp_trace_job_id(t, j);
			R->first_over = tp_asprintf(
			    "job %s (line %d)", id ? id : "?", t->jobs[j].line);
		}
	if (!(x = tp_calloc(R->n ? R->n : 1, sizeof(double))))
		goto nomem;
	/* topoplace's pick against Slurm's, job by job */
	double rs = 0, rv = 0, as = 0;
	for (size_t i = 0; i < R->n; i++) {
		const tp_trace_price_t *q = &R->alt[R->v[i].job];
		if (isnan(q->predicted_s) || !(R->v[i].p.predicted_s > 0))
			continue;
		x[R->nalt++] = q->predicted_s / R->v[i].loaded_s;
		rs += q->predicted_s / R->v[i].loaded_s;
		as += q->ideal_s > 0 ? q->predicted_s / q->ideal_s : 1.0;
	}
	if (R->nalt) {
		R->ratio_mean = rs / (double)R->nalt;
		R->alt_slow_mean = as / (double)R->nalt;
		for (size_t i = 0; i < R->nalt; i++)
			rv += (x[i] - R->ratio_mean) * (x[i] - R->ratio_mean);
		R->ratio_se =
		    R->nalt > 1
			? sqrt(rv / (double)(R->nalt - 1) / (double)R->nalt)
			: 0;
	}
	double sum = 0, var = 0, alone = 0;
	for (size_t i = 0; i < R->n; i++) {
		const tp_job_spec_t *js = &t->jobs[R->v[i].job];
		double id = R->v[i].p.ideal_s;
		double sl = id > 0 ? R->v[i].loaded_s / id : 1.0;
		alone += id > 0 ? R->v[i].p.predicted_s / id : 1.0;
		/* the run Slurm's hosts took against the ideal hosts' */
		double stretch = (1 - js->comm_frac) + js->comm_frac * sl;
		double h = (double)R->v[i].p.gpus * js->run_s / 3600.0;
		x[i] = sl;
		sum += sl;
		R->gpu_h += h;
		R->lost_h += h * (1 - 1 / stretch);
	}
	R->slow_mean = R->n ? sum / (double)R->n : 0;
	R->alone_mean = R->n ? alone / (double)R->n : 0;
	for (size_t i = 0; i < R->n; i++)
		var += (x[i] - R->slow_mean) * (x[i] - R->slow_mean);
	R->slow_se =
	    R->n > 1 ? sqrt(var / (double)(R->n - 1) / (double)R->n) : 0;
	qsort(x, R->n, sizeof(double), cmp_double);
	if (R->n) {
		R->slow_p95 = x[(size_t)ceil(0.95 * (double)R->n) - 1];
		R->slow_max = x[R->n - 1];
	}
	rc = TP_EXIT_OK;
	goto out;
nomem:
	tp_cli_err("trace: out of memory");
	rc = TP_EXIT_FAIL;
out:
	tp_free(x);
	tp_ideal_cache_destroy(cache);
	tp_cost_ctx_destroy(ctx);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	return rc;
}

/* " +- se" after a mean over n jobs; one job has no spread, as
 * simulate says of one seed. */
static void pm_se(char *buf, size_t len, double se, size_t n)
{
	if (n > 1)
		snprintf(buf, len, " +- %.3f", se);
	else
		snprintf(buf, len, " (one job: no error bar)");
}

static char *price_text(const char *path, const char *fabric,
			const tp_trace_t *t, const price_run_t *R,
			const char *pname)
{
	tp_strbuf_t sb = {0};

	tp_strbuf_printf(&sb,
			 "# topoplace trace --price: %s (%s) on %s: each "
			 "multi-node job's all-reduce (the faster of ring and "
			 "hierarchical) on the hosts Slurm gave it, against "
			 "the fastest set of its shape\n",
			 path, t->format, fabric);
	tp_strbuf_printf(
	    &sb, "%-12s %5s %5s %-12s %10s %10s %10s %8s %12s %10s %8s  %s\n",
	    "job", "hosts", "GPUs", "algo", "alone", "loaded", "ideal",
	    "slowdown", "groups (min)", pname, "slowdown", "nodes");
	for (size_t i = 0; i < R->n; i++) {
		const tp_trace_price_t *p = &R->v[i].p;
		const tp_trace_price_t *q = &R->alt[R->v[i].job];
		const char *id = tp_trace_job_id(t, R->v[i].job);
		char groups[32], alt[2][24] = {"-", "-"};
		snprintf(groups, sizeof(groups), "%zu (%zu)", p->groups,
			 p->groups_min);
		if (!isnan(q->predicted_s)) {
			snprintf(alt[0], sizeof(alt[0]), "%.4fs",
				 q->predicted_s);
			snprintf(alt[1], sizeof(alt[1]), "%.3f",
				 q->ideal_s > 0 ? q->predicted_s / q->ideal_s
						: 1.0);
		}
		tp_strbuf_printf(
		    &sb,
		    "%-12s %5zu %5zu %-12s %9.4fs %9.4fs %9.4fs %8.3f %12s "
		    "%10s "
		    "%8s  %s\n",
		    id ? id : "-", p->nhosts, p->gpus, tp_algo_name(p->algo),
		    p->predicted_s, R->v[i].loaded_s, p->ideal_s,
		    p->ideal_s > 0 ? R->v[i].loaded_s / p->ideal_s : 1.0,
		    groups, alt[0], alt[1], tp_trace_job_nodes(t, R->v[i].job));
	}
	tp_strbuf_printf(&sb, "%zu multi-node job%s priced", R->n,
			 tp_cli_s(R->n));
	if (R->not_priced)
		tp_strbuf_printf(&sb, ", %zu not (the first: %s)",
				 R->not_priced, R->first_not);
	tp_strbuf_printf(&sb, "\n");
	if (R->overbooked)
		tp_strbuf_printf(
		    &sb,
		    "%zu record%s found GPUs already held by records running "
		    "then (overlapping records: oversubscribed nodes or bad "
		    "data; the first: %s): they hold and load nothing\n",
		    R->overbooked, R->overbooked == 1 ? "" : "s",
		    R->first_over ? R->first_over : "?");
	if (R->n) {
		char bar[40];
		pm_se(bar, sizeof(bar), R->slow_se, R->n);
		tp_strbuf_printf(
		    &sb,
		    "slowdown (loaded) mean %.3f%s, p95 %.3f, max %.3f "
		    "(the hosts alone: %.3f); at their comm_frac those jobs' "
		    "GPU-hours were %.1f%% beyond what ideal hosts would have "
		    "taken (%.1f of %.1f)\n",
		    R->slow_mean, bar, R->slow_p95, R->slow_max, R->alone_mean,
		    R->gpu_h > 0 ? 100 * R->lost_h / R->gpu_h : 0, R->lost_h,
		    R->gpu_h);
	}
	if (R->nalt) {
		char bar[40] = "";
		if (R->nalt > 1)
			pm_se(bar, sizeof(bar), R->ratio_se, R->nalt);
		tp_strbuf_printf(&sb,
				 "%s, from the hosts free at each start (%zu "
				 "job%s): slowdown mean %.3f; its all-reduce "
				 "took %.3f%s of Slurm's pick's (mean per "
				 "job%s)\n",
				 pname, R->nalt, tp_cli_s(R->nalt),
				 R->alt_slow_mean, R->ratio_mean, bar,
				 R->nalt > 1 ? "" : "; one job: no error bar");
	}
	if (sb.failed) {
		tp_free(sb.buf);
		return NULL;
	}
	return sb.buf;
}

/* v under key, or null when it is over fewer than min jobs (0 for a
 * mean, 2 for a standard error: one job has none). */
static void num_or_null(cJSON *o, const char *key, double v, size_t n,
			size_t min)
{
	if (n >= min)
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

static char *price_json(const char *path, const char *fabric,
			const tp_trace_t *t, const price_run_t *R,
			const char *pname)
{
	cJSON *o = cJSON_CreateObject(), *jobs;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "format", "topoplace-trace-price/1");
	cJSON_AddStringToObject(o, "file", path);
	cJSON_AddStringToObject(o, "source_format", t->format);
	cJSON_AddStringToObject(o, "fabric", fabric);
	cJSON_AddNumberToObject(o, "priced", (double)R->n);
	cJSON_AddNumberToObject(o, "not_priced", (double)R->not_priced);
	if (R->first_not)
		cJSON_AddStringToObject(o, "first_not_priced", R->first_not);
	cJSON_AddNumberToObject(o, "overbooked", (double)R->overbooked);
	/* no job priced, no figure: null, as simulate's ratios without data */
	num_or_null(o, "slowdown_mean", R->slow_mean, R->n, 1);
	num_or_null(o, "slowdown_alone_mean", R->alone_mean, R->n, 1);
	num_or_null(o, "slowdown_se", R->slow_se, R->n, 2);
	num_or_null(o, "slowdown_p95", R->slow_p95, R->n, 1);
	num_or_null(o, "slowdown_max", R->slow_max, R->n, 1);
	cJSON_AddNumberToObject(o, "gpu_hours", R->gpu_h);
	cJSON_AddNumberToObject(o, "gpu_hours_beyond_ideal", R->lost_h);
	/* the policy's picks ("policy" names it) */
	cJSON_AddStringToObject(o, "policy", pname);
	cJSON *tpo = cJSON_AddObjectToObject(o, "pick");
	if (tpo) {
		cJSON_AddNumberToObject(tpo, "jobs", (double)R->nalt);
		num_or_null(tpo, "slowdown_mean", R->alt_slow_mean, R->nalt, 1);
		num_or_null(tpo, "ratio_mean", R->ratio_mean, R->nalt, 1);
		num_or_null(tpo, "ratio_se", R->ratio_se, R->nalt, 2);
	}
	if (!(jobs = cJSON_AddArrayToObject(o, "jobs")))
		goto out;
	for (size_t i = 0; i < R->n; i++) {
		const tp_trace_price_t *p = &R->v[i].p;
		const char *id = tp_trace_job_id(t, R->v[i].job);
		cJSON *e = cJSON_CreateObject();
		if (!e || !cJSON_AddItemToArray(jobs, e)) {
			cJSON_Delete(e);
			goto out;
		}
		if (id)
			cJSON_AddStringToObject(e, "id", id);
		cJSON_AddNumberToObject(e, "line", t->jobs[R->v[i].job].line);
		cJSON_AddStringToObject(e, "nodes",
					tp_trace_job_nodes(t, R->v[i].job));
		cJSON_AddNumberToObject(e, "hosts", (double)p->nhosts);
		cJSON_AddNumberToObject(e, "gpus", (double)p->gpus);
		cJSON_AddStringToObject(e, "algo", tp_algo_name(p->algo));
		/* predicted_s: with the running jobs' traffic; alone_s:
		 * the hosts on idle links */
		cJSON_AddNumberToObject(e, "predicted_s", R->v[i].loaded_s);
		cJSON_AddNumberToObject(e, "alone_s", p->predicted_s);
		cJSON_AddNumberToObject(e, "ideal_s", p->ideal_s);
		cJSON_AddNumberToObject(
		    e, "slowdown",
		    p->ideal_s > 0 ? R->v[i].loaded_s / p->ideal_s : 1.0);
		cJSON_AddNumberToObject(e, "groups", (double)p->groups);
		cJSON_AddNumberToObject(e, "groups_min", (double)p->groups_min);
		const tp_trace_price_t *q = &R->alt[R->v[i].job];
		if (!isnan(q->predicted_s)) {
			cJSON *a = cJSON_AddObjectToObject(e, "pick");
			if (a) {
				cJSON_AddNumberToObject(a, "predicted_s",
							q->predicted_s);
				cJSON_AddStringToObject(a, "algo",
							tp_algo_name(q->algo));
				cJSON_AddNumberToObject(a, "groups",
							(double)q->groups);
			}
		}
	}
	return json_text(o, true);
out:
	return json_text(o, false);
}

int tp_cmd_trace(int argc, char **argv)
{
	enum { O_ASSUME = 256, O_PRICE, O_NBR, O_POLICY };
	static const struct option opts[] = {
	    {"assume-gpus", required_argument, NULL, O_ASSUME},
	    {"price", no_argument, NULL, O_PRICE},
	    {"nics-by-rate", no_argument, NULL, O_NBR},
	    {"policy", required_argument, NULL, O_POLICY},
	    {"fabric", required_argument, NULL, TP_CLI_OPT_FABRIC},
	    {"state", required_argument, NULL, TP_CLI_OPT_STATE},
	    {"output", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, TP_CLI_OPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tp_cli_args_t a = {.usage = usage};
	tp_trace_opts_t o = {.assume_gpus = -1};
	tp_trace_t t = {0};
	char *msg = NULL, *text = NULL, what[40] = "";
	price_run_t R = {0};
	bool price = false, nbr = false;
	const char *pname = NULL;
	tp_err_t err;
	long v;
	int c, rc;

	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "o:h", opts, &a)) != -1) {
		if (c == O_PRICE)
			price = true;
		if (c == O_NBR)
			nbr = true;
		if (c == O_POLICY)
			pname = optarg;
		if (c != O_ASSUME)
			continue;
		if (!strcmp(optarg, "all")) {
			o.assume_gpus = 0;
			snprintf(what, sizeof(what), "their hosts whole");
		} else {
			char *end;
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 1 ||
			    v > 1024) {
				tp_cli_err("trace: --assume-gpus: expected all "
					   "or an integer 1..1024, got '%s'",
					   optarg);
				return TP_EXIT_INPUT;
			}
			o.assume_gpus = (int)v;
			snprintf(what, sizeof(what), "%ld GPUs on each host",
				 v);
		}
	}
	if (a.exit >= 0)
		return a.exit;
	if (optind != argc - 1) {
		tp_cli_err("trace: give one FILE (see --help)");
		return TP_EXIT_INPUT;
	}
	if (price != (a.fabric != NULL) ||
	    ((a.state || nbr || pname) && !price)) {
		tp_cli_err("trace: --price needs --fabric, and --fabric, "
			   "--state, --nics-by-rate and --policy go with "
			   "--price");
		return TP_EXIT_INPUT;
	}
	const tp_policy_t *policy = tp_policy_find(pname ? pname : "topoplace");
	if (!policy) {
		tp_cli_err("trace: unknown policy '%s' (%s)", pname,
			   tp_policy_names());
		return TP_EXIT_INPUT;
	}
	pname = tp_policy_name(policy);
	if (!tp_cli_path_given("trace", argv[optind]))
		return TP_EXIT_INPUT;
	/* before the pricing, which can take long on a real history */
	if (tp_cli_check_output("trace: -o", a.output))
		return TP_EXIT_FAIL;
	if ((err = tp_trace_load_opts(argv[optind], &o, &t, &msg))) {
		tp_cli_err("trace: %s", msg ? msg : tp_strerror(err));
		tp_free(msg);
		return tp_cli_exit_code(err);
	}
	if (o.assume_gpus >= 0 && !strcmp(t.format, "csv")) {
		tp_cli_err(
		    "trace: --assume-gpus: %s is a CSV trace, whose rows "
		    "say their GPUs; it is for Slurm's records",
		    argv[optind]);
		rc = TP_EXIT_INPUT;
		goto out;
	}
	/* nothing to price: say so rather than report 0 jobs priced */
	if (price &&
	    !tp_cli_trace_has_nodes("trace: --price", argv[optind], &t)) {
		rc = TP_EXIT_INPUT;
		goto out;
	}
	if (price && (rc = price_jobs(&a, &t, nbr, policy, &R)) != TP_EXIT_OK)
		goto out;
	if (price)
		text = a.json
			   ? price_json(argv[optind], a.fabric, &t, &R, pname)
			   : price_text(argv[optind], a.fabric, &t, &R, pname);
	else
		text = a.json ? trace_json(argv[optind], &t)
			      : trace_csv(argv[optind], &t, what);
	if (text) {
		rc = tp_cli_write(a.output, text);
	} else {
		tp_cli_err("trace: out of memory");
		rc = TP_EXIT_FAIL;
	}
out:
	tp_free(text);
	tp_free(R.v);
	tp_free(R.alt);
	tp_free(R.loaded);
	tp_free(R.first_not);
	tp_free(R.first_over);
	tp_trace_free(&t);
	return rc;
}
