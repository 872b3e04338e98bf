/* topoplace trace: a job trace (CSV, sacct output, a jobcomp log) as the
 * CSV simulate reads, with what was left out, so an admin can replay the
 * cluster's own jobs and edit what Slurm does not record (comm_frac,
 * model_bytes). */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: topoplace trace FILE [--assume-gpus all|N] [-o OUT] [--json]\n"
    "\n"
    "Read a job trace and print it as the CSV 'simulate --trace' reads:\n"
    "submit_s,gpus,nodes,gpus_per_node,run_s,comm_frac,model_bytes, one\n"
    "job a line in submit order, after a '#' line that says what was read\n"
    "and left out. FILE is any trace simulate takes:\n"
    "  - our CSV (simulate --help has its columns);\n"
    "  - sacct's parsable output with its header, e.g.\n"
    "      sacct -a -X -P -S 2026-11-01 -E now \\\n"
    "        --format=JobID,Submit,Start,End,NNodes,AllocTRES,State\n"
    "    (Submit, Start, End and AllocTRES or ReqTRES needed; NNodes or\n"
    "    TRES node= gives the hosts; other fields are ignored);\n"
    "  - the job completion log of JobCompType=jobcomp/filetxt (the file\n"
    "    JobCompLoc names: JobId=... lines).\n"
    "From Slurm's records a job is submitted at Submit (seconds after the\n"
    "first job's), runs End - Start on NNodes hosts with the GPUs of its\n"
    "TRES (gres/gpu, or its typed counts) split evenly over them (rounded\n"
    "up when they do not divide), comm_frac 0.3 on several hosts and 0.1\n"
    "on one, model_bytes 1 GiB (Slurm records neither: edit the CSV for\n"
    "the jobs you know). Left out and counted: jobs without GPUs, jobs\n"
    "that never started or had not ended, job steps (rows whose JobID has\n"
    "a '.'; sacct -X prints none). Times are Slurm's YYYY-MM-DDTHH:MM:SS\n"
    "local times, taken as written. sacct -r PARTITION keeps one\n"
    "partition's jobs, as the fabric you simulate may hold only its nodes.\n"
    "Slurm tracks GPUs in TRES only with AccountingStorageTRES=gres/gpu in\n"
    "slurm.conf (which needs slurmdbd); without it no record names a GPU and\n"
    "the file is refused, unless --assume-gpus says what such jobs held.\n"
    "\n"
    "Options:\n"
    "  --assume-gpus all|N\n"
    "                    a record whose TRES names no GPU held all the\n"
    "                    GPUs of its hosts (all: whole hosts, as where GPU\n"
    "                    jobs get whole nodes) or N on each (default: such\n"
    "                    jobs are left out as jobs without GPUs; gres/gpu=0\n"
    "                    is one either way)\n"
    "  -o, --output OUT  write there instead of stdout\n"
    "  --json            the jobs and the counts as JSON\n"
    "                    (format topoplace-trace/1)\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit status: 0 done; 1 out of memory or a failed write; 2 bad usage,\n"
    "or a file that cannot be read or holds no job that ran on GPUs (the\n"
    "error names FILE:LINE and the field).\n";

/* x printed short but exact: %.15g when it reads back the same. */
static void num(tp_strbuf_t *sb, double x)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%.15g", x);
	if (strtod(buf, NULL) != x)
		snprintf(buf, sizeof(buf), "%.17g", x);
	tp_strbuf_printf(sb, "%s", buf);
}

static char *trace_csv(const char *path, const tp_trace_t *t,
		       const char *assume_what)
{
	tp_strbuf_t sb = {0};

	tp_strbuf_printf(&sb, "# topoplace trace: %s (%s): %zu jobs", path,
			 t->format, t->njobs);
	if (t->left_nogpu || t->left_unrun || t->left_steps)
		tp_strbuf_printf(&sb,
				 "; left out %zu without GPUs, %zu that never "
				 "ran or had not ended, %zu job steps",
				 t->left_nogpu, t->left_unrun, t->left_steps);
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
	tp_strbuf_printf(&sb, "\nsubmit_s,gpus,nodes,gpus_per_node,run_s,"
			      "comm_frac,model_bytes\n");
	for (size_t i = 0; i < t->njobs; i++) {
		const tp_job_spec_t *j = &t->jobs[i];
		num(&sb, j->submit_s);
		tp_strbuf_printf(&sb, ",%d,", j->gpus);
		if (j->nodes > 0)
			tp_strbuf_printf(&sb, "%d,%d", j->nodes,
					 j->gpus_per_node);
		else
			tp_strbuf_printf(&sb, ",");
		tp_strbuf_printf(&sb, ",");
		num(&sb, j->run_s);
		tp_strbuf_printf(&sb, ",");
		num(&sb, j->comm_frac);
		tp_strbuf_printf(&sb, ",");
		num(&sb, j->bytes);
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
	char *txt = NULL;

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
	}
	cJSON_AddNumberToObject(o, "rounded", (double)t->rounded);
	cJSON_AddNumberToObject(o, "assumed", (double)t->assumed);
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
	txt = cJSON_Print(o);
out:
	cJSON_Delete(o);
	if (!txt)
		return NULL;
	char *withnl = tp_asprintf("%s\n", txt);
	free(txt);
	return withnl;
}

int tp_cmd_trace(int argc, char **argv)
{
	enum { O_ASSUME = 256 };
	static const struct option opts[] = {
	    {"assume-gpus", required_argument, NULL, O_ASSUME},
	    {"output", required_argument, NULL, 'o'},
	    {"json", no_argument, NULL, TP_CLI_OPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tp_cli_args_t a = {.usage = usage};
	tp_trace_opts_t o = {.assume_gpus = -1};
	tp_trace_t t = {0};
	char *msg = NULL, *text, what[40] = "";
	tp_err_t err;
	long v;
	int c, rc;

	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "o:h", opts, &a)) != -1) {
		if (c != O_ASSUME)
			continue;
		if (!strcmp(optarg, "all")) {
			o.assume_gpus = 0;
			snprintf(what, sizeof(what), "their hosts whole");
		} else if (tp_cli_int("--assume-gpus", optarg, 1, 1024, &v)) {
			o.assume_gpus = (int)v;
			snprintf(what, sizeof(what), "%ld GPUs on each host",
				 v);
		} else {
			return TP_EXIT_INPUT;
		}
	}
	if (a.exit >= 0)
		return a.exit;
	if (optind != argc - 1) {
		tp_cli_err("trace: give one FILE (see --help)");
		return TP_EXIT_INPUT;
	}
	if ((err = tp_trace_load_opts(argv[optind], &o, &t, &msg))) {
		tp_cli_err("trace: %s", msg ? msg : tp_strerror(err));
		tp_free(msg);
		return tp_cli_exit_code(err);
	}
	text = a.json ? trace_json(argv[optind], &t)
		      : trace_csv(argv[optind], &t, what);
	if (text) {
		rc = tp_cli_write(a.output, text);
	} else {
		tp_cli_err("trace: out of memory");
		rc = TP_EXIT_FAIL;
	}
	tp_free(text);
	tp_trace_free(&t);
	return rc;
}
