/*
 * Job traces: CSV files and built-in synthetic traces that follow
 * published job-size mixes.
 *
 * Sources of the mixes (GPUs per job):
 *  - philly: Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU
 *    Clusters for DNN Training Workloads", USENIX ATC'19 (Microsoft
 *    Philly: average 1.93 GPUs/job, median 1, max 128); shape of the
 *    small sizes from Gavel's Philly sampler (Narayanan et al., OSDI'20:
 *    1/2/4/8 GPUs at 70/10/15/5%).
 *  - helios: Hu et al., "Characterization and Prediction of Deep Learning
 *    Workloads in Large-Scale GPU Datacenters", SC'21 (SenseTime Helios:
 *    average 3.72 GPUs/job, max 2048).
 *  - llm: Hu et al., "Characterization of Large Language Model Development
 *    in the Datacenter", NSDI'24 (Shanghai AI Lab Acme, Kalos cluster:
 *    average 26.77 GPUs/job, max 1024).
 * The tails are ours: the papers give averages, medians and maxima, not
 * full histograms, so each table is a power-of-two histogram whose mean
 * lands near the published average (checked in the unit tests).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "placement_int.h"

typedef struct mix {
	const char *name;
	const char *source;
	double share[12]; /* GPUs 1, 2, 4, ..., 2048 */
	double run_median_s;
	double published_avg;
} mix_t;

static const mix_t mixes[] = {
    {"philly",
     "Jeon et al., USENIX ATC'19 (Philly: avg 1.93 GPUs/job, max 128); "
     "Gavel's sampler for 1-8 GPUs",
     {0.72, 0.10, 0.13, 0.04, 0.007, 0.002, 0.0007, 0.0003},
     1800,
     1.93},
    {"helios",
     "Hu et al., SC'21 (Helios: avg 3.72 GPUs/job, max 2048)",
     {0.64, 0.10, 0.12, 0.10, 0.025, 0.010, 0.004, 0.0015, 0.0006, 0.0002,
      0.00008, 0.00002},
     1200,
     3.72},
    {"llm",
     "Hu et al., NSDI'24 (Kalos LLM cluster: avg 26.77 GPUs/job, max 1024)",
     {0.34, 0.05, 0.08, 0.25, 0.08, 0.07, 0.06, 0.045, 0.018, 0.005, 0.0015},
     3600,
     26.77},
};

const char *tp_trace_synthetic_names(void)
{
	return "philly, helios, llm";
}

static const mix_t *mix_find(const char *name)
{
	for (size_t i = 0; i < sizeof(mixes) / sizeof(mixes[0]); i++)
		if (!strcmp(mixes[i].name, name))
			return &mixes[i];
	return NULL;
}

const char *tp_trace_synthetic_source(const char *name)
{
	const mix_t *m = mix_find(name);

	return m ? m->source : NULL;
}

void tp_trace_free(tp_trace_t *t)
{
	if (!t)
		return;
	tp_free(t->name);
	tp_free(t->jobs);
	tp_free(t->strings);
	memset(t, 0, sizeof(*t));
}

static double uniform(uint64_t *x)
{
	return ((tp__rand_next(x) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double normal(uint64_t *x)
{
	/* Box-Muller; one value per call keeps the stream simple */
	return sqrt(-2.0 * log(uniform(x))) * cos(2 * M_PI * uniform(x));
}

int tp__dix_cmp(const void *a, const void *b)
{
	const tp__dix_t *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Sort jobs[0..n) by submit time, stably; TP_ERR_NOMEM leaves them. */
static tp_err_t sort_jobs(tp_job_spec_t *jobs, size_t n)
{
	tp__dix_t *ix;
	tp_job_spec_t *tmp;
	size_t i;

	for (i = 1; i < n && jobs[i - 1].submit_s <= jobs[i].submit_s; i++)
		;
	if (i >= n)
		return TP_OK;
	ix = tp_malloc(n * sizeof(*ix));
	tmp = tp_malloc(n * sizeof(*tmp));
	if (!ix || !tmp) {
		tp_free(ix);
		tp_free(tmp);
		return TP_ERR_NOMEM;
	}
	for (i = 0; i < n; i++)
		ix[i] = (tp__dix_t){jobs[i].submit_s, i};
	/* submit time, then file order (qsort is not stable) */
	qsort(ix, n, sizeof(*ix), tp__dix_cmp);
	for (i = 0; i < n; i++)
		tmp[i] = jobs[ix[i].i];
	memcpy(jobs, tmp, n * sizeof(*tmp));
	tp_free(ix);
	tp_free(tmp);
	return TP_OK;
}

/* Jobs larger than a host ask for whole hosts, as multi-node training
 * does (-N n --gpus-per-node=G); smaller ones ask for GPUs on one host
 * (-N 1 --gpus-per-node=g), the way such jobs are submitted in practice. */
static void shape_job(tp_job_spec_t *j, int gpus, int gpus_per_host)
{
	j->gpus = gpus;
	if (gpus_per_host > 0 && gpus > gpus_per_host) {
		j->nodes = (gpus + gpus_per_host - 1) / gpus_per_host;
		j->gpus_per_node = gpus_per_host;
		j->gpus = j->nodes * gpus_per_host;
	} else if (gpus_per_host > 0) {
		j->nodes = 1;
		j->gpus_per_node = gpus;
	} else {
		j->nodes = 0;
		j->gpus_per_node = 0;
	}
}

tp_err_t tp_trace_synthetic(const char *name, size_t njobs, uint64_t seed,
			    int max_gpus, int gpus_per_host, double load,
			    tp_trace_t *t)
{
	const mix_t *m = mix_find(name ? name : "");
	uint64_t x = seed ^ 0x5eed5eed5eedULL;
	double total = 0, work = 0, now = 0, rate;
	tp_job_spec_t *jobs;

	if (!t)
		return TP_ERR_INVAL;
	memset(t, 0, sizeof(*t));
	if (!m || !njobs || njobs > TP_TRACE_MAX_JOBS || max_gpus < 1 ||
	    load <= 0 || load > 10 || gpus_per_host < 0)
		return TP_ERR_INVAL;
	for (int k = 0; k < 12; k++)
		total += m->share[k];
	if (!(jobs = tp_calloc(njobs, sizeof(*jobs))))
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < njobs; i++) {
		tp_job_spec_t *j = &jobs[i];
		double u = uniform(&x) * total, acc = 0;
		int gpus = 1;
		for (int k = 0; k < 12; k++) {
			acc += m->share[k];
			if (u <= acc) {
				gpus = 1 << k;
				break;
			}
		}
		while (gpus > max_gpus)
			gpus /= 2;
		shape_job(j, gpus, gpus_per_host);
		/* bigger jobs run longer (both papers), log-normal spread */
		j->run_s = exp(log(m->run_median_s) + 0.25 * log2(gpus) +
			       1.0 * normal(&x));
		if (j->run_s < 60)
			j->run_s = 60;
		if (j->run_s > 7 * 86400)
			j->run_s = 7 * 86400;
		j->comm_frac = j->nodes > 1 ? 0.15 + 0.3 * uniform(&x)
					    : 0.05 + 0.1 * uniform(&x);
		j->bytes =
		    (double)(256u << (tp__rand_next(&x) % 5)) * 1048576.0;
		work += j->gpus * j->run_s;
	}
	/* Poisson arrivals at the rate that offers `load` of the GPUs */
	rate = load * max_gpus / (work / (double)njobs);
	for (size_t i = 0; i < njobs; i++) {
		jobs[i].submit_s = now;
		now += -log(uniform(&x)) / rate;
	}
	t->name = tp_strdup(m->name);
	if (!t->name) {
		tp_free(jobs);
		return TP_ERR_NOMEM;
	}
	t->format = "synthetic";
	t->jobs = jobs;
	t->njobs = njobs;
	return TP_OK;
}

/* ---- CSV ---- */

size_t tp__trace_max_jobs = TP_TRACE_MAX_JOBS;

enum { C_SUBMIT, C_GPUS, C_NODES, C_GPN, C_RUN, C_FRAC, C_BYTES, C_N };
static const char *const colnames[C_N] = {
    "submit_s", "gpus",	     "nodes",	    "gpus_per_node",
    "run_s",	"comm_frac", "model_bytes",
};

int tp__trace_split(char *line, char sep, char **cell, int max)
{
	int n = 0;

	for (char *p = line;; p++) {
		if (n < max)
			cell[n] = p;
		n++;
		p = strchr(p, sep);
		if (!p)
			break;
		*p = '\0';
	}
	for (int i = 0; i < n && i < max; i++)
		cell[i] = tp_strtrim(cell[i]);
	return n;
}

/* A decimal number (strtod also reads hex, "0x10", which no trace
 * means) in lo .. hi. */
static bool num(const char *s, double lo, double hi, double *v)
{
	char *end;

	errno = 0;
	*v = tp_strtod_c(s, &end);
	return *s && !*end && !errno && !strpbrk(s, "xX") && *v >= lo &&
	       *v <= hi;
}

/* One cell of column c into *v (a size with K/M/G/T/P for model_bytes):
 * NULL, or what is wrong with it. */
static const char *cell_num(const char *s, int c, double *v)
{
	/* model_bytes: at least a byte (none would be priced as the
	 * default's 1 GiB), at most 1P */
	static const double lo[C_N] = {0, 0, 0, 0, 0, 0, 1},
			    hi[C_N] = {1e12,
				       1e6,
				       1e6,
				       1024,
				       TP__TRACE_RUN_MAX,
				       1,
				       1125899906842624.0};
	static const char *const range[C_N] = {
	    "0 .. 1e12", "0 .. 1000000", "0 .. 1000000", "0 .. 1024",
	    "0 .. 1e9",	 "0 .. 1",	 "1 .. 1P"};
	char *end;

	if (c == C_BYTES ? tp_parse_bytes(s, lo[c], hi[c], v)
			 : num(s, lo[c], hi[c], v))
		return NULL;
	if (c == C_BYTES) /* 1P is a size, only too large */
		return tp_parse_bytes(s, 0, 1e300, v)
			   ? range[c]
			   : "not a size (a whole number, or with K, M, G, T, "
			     "P)";
	errno = 0;
	double x = tp_strtod_c(s, &end);
	if (!*s || *end || isnan(x) || strpbrk(s, "xX"))
		return "not a number";
	return range[c];
}

/* The file at path into *buf (NUL-terminated, no NUL inside); on error
 * *msg names the file. */
static tp_err_t read_trace(const char *path, char **buf, char **msg)
{
	size_t len;
	tp_err_t err = tp_file_read(path, buf, &len);

	if (err) {
		*msg = tp_asprintf("%s: cannot read: %s", path,
				   tp_file_strerror(err));
		return err;
	}
	if (strlen(*buf) != len) {
		*msg = tp_asprintf("%s: binary data (NUL byte)", path);
		return TP_ERR_PARSE;
	}
	/* a spreadsheet's "CSV UTF-8" starts with a byte-order mark: an
	 * invisible part of the first column's name otherwise */
	size_t bom = tp_text_bom(*buf, len);
	if (bom)
		memmove(*buf, *buf + bom, len - bom + 1);
	return TP_OK;
}

/* The next non-blank line of *pos, cut and trimmed, its number in
 * *lineno; NULL at the end. */
char *tp__trace_line(char **pos, int *lineno)
{
	while (*pos) {
		char *line = *pos, *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		*pos = next;
		++*lineno;
		char *l = tp_strtrim(line);
		if (*l)
			return l;
	}
	return NULL;
}

tp_err_t tp__trace_grow(const char *path, int lineno, tp_job_spec_t **jobs,
			size_t *cap, size_t n, char **msg)
{
	void *p = *jobs;

	if (n >= tp__trace_max_jobs) {
		*msg = tp_asprintf("%s:%d: more than %zu jobs (the limit)",
				   path, lineno, tp__trace_max_jobs);
		return TP_ERR_RANGE;
	}
	if (tp_grow(&p, cap, n + 1, sizeof(**jobs)))
		return TP_ERR_NOMEM;
	*jobs = p;
	memset(&(*jobs)[n], 0, sizeof(**jobs));
	return TP_OK;
}

tp_err_t tp__trace_finish(const char *path, const char *format,
			  tp_job_spec_t **jobs, size_t n, tp_trace_t *t,
			  char **msg)
{
	tp_err_t err;

	if (!n) {
		*msg = tp_asprintf("%s: no jobs", path);
		return TP_ERR_PARSE;
	}
	if ((err = sort_jobs(*jobs, n)))
		return err;
	const char *base = strrchr(path, '/');
	if (!(t->name = tp_strdup(base ? base + 1 : path)))
		return TP_ERR_NOMEM;
	t->format = format;
	t->jobs = *jobs;
	t->njobs = n;
	*jobs = NULL;
	return TP_OK;
}

/* Our CSV in buf (path names it in messages) into *t. */
static tp_err_t parse_csv(const char *path, char *buf, tp_trace_t *t,
			  char **msg)
{
	char *line, *pos = buf, *cell[32];
	size_t cap = 0, n = 0;
	int col[C_N], lineno = 0, ncols = 0;
	tp_job_spec_t *jobs = NULL;
	tp_err_t err = TP_OK;

	for (int c = 0; c < C_N; c++)
		col[c] = -1;
	while ((line = tp__trace_line(&pos, &lineno))) {
		if (*line == '#')
			continue;
		int nc = tp__trace_split(line, ',', cell, 32);
		if (nc > 32) {
			err = TP_ERR_PARSE;
			*msg = tp_asprintf("%s:%d: more than 32 columns", path,
					   lineno);
			goto out;
		}
		if (!ncols) {
			for (int i = 0; i < nc; i++) {
				int c;
				for (c = 0;
				     c < C_N && strcmp(cell[i], colnames[c]);
				     c++)
					;
				if (c == C_N && nc == 1 &&
				    strstr(cell[i], "Submit")) {
					/* sacct's columns, not its -P form */
					err = TP_ERR_PARSE;
					*msg = tp_asprintf(
					    "%s:%d: sacct's output without "
					    "-P (--parsable2): its fields "
					    "need '|' between them",
					    path, lineno);
					goto out;
				}
				if (c == C_N) {
					err = TP_ERR_PARSE;
					*msg = tp_asprintf(
					    "%s:%d: unknown column '%s' "
					    "(known: submit_s, gpus, nodes, "
					    "gpus_per_node, run_s, comm_frac, "
					    "model_bytes)",
					    path, lineno, cell[i]);
					goto out;
				}
				if (col[c] >= 0) {
					err = TP_ERR_PARSE;
					*msg = tp_asprintf(
					    "%s:%d: column '%s' given twice",
					    path, lineno, cell[i]);
					goto out;
				}
				col[c] = i;
			}
			ncols = nc;
			if (col[C_SUBMIT] < 0 || col[C_RUN] < 0 ||
			    (col[C_GPUS] < 0 && col[C_NODES] < 0)) {
				err = TP_ERR_PARSE;
				*msg =
				    tp_asprintf("%s:%d: header needs submit_s, "
						"run_s and gpus or nodes",
						path, lineno);
				goto out;
			}
			continue;
		}
		if (nc != ncols) {
			err = TP_ERR_PARSE;
			*msg = tp_asprintf("%s:%d: %d fields, header has %d",
					   path, lineno, nc, ncols);
			goto out;
		}
		if ((err = tp__trace_grow(path, lineno, &jobs, &cap, n, msg)))
			goto out;
		tp_job_spec_t *j = &jobs[n];
		double val[C_N] = {0};
		bool has[C_N] = {false};
		for (int c = 0; c < C_N; c++) {
			const char *bad;
			if (col[c] < 0 || !*cell[col[c]]) {
				if (c == C_SUBMIT || c == C_RUN) {
					err = TP_ERR_PARSE;
					*msg = tp_asprintf("%s:%d: %s: empty",
							   path, lineno,
							   colnames[c]);
					goto out;
				}
				continue;
			}
			if ((bad = cell_num(cell[col[c]], c, &val[c]))) {
				err = TP_ERR_PARSE;
				*msg = tp_asprintf("%s:%d: %s: '%s': %s%s",
						   path, lineno, colnames[c],
						   cell[col[c]],
						   isdigit((unsigned char)*bad)
						       ? "out of range "
						       : "",
						   bad);
				goto out;
			}
			has[c] = true;
		}
		double nodes = val[C_NODES], gpn = val[C_GPN],
		       gpus = val[C_GPUS];
		j->submit_s = val[C_SUBMIT];
		j->run_s = val[C_RUN];
		j->comm_frac = val[C_FRAC];
		if (nodes != floor(nodes) || gpus != floor(gpus) ||
		    gpn != floor(gpn) || (nodes < 1 && gpus < 1)) {
			err = TP_ERR_PARSE;
			*msg = tp_asprintf(
			    "%s:%d: a job needs whole gpus >= 1 or nodes >= 1",
			    path, lineno);
			goto out;
		}
		/* gpus with gpus_per_node and no nodes: that many a node, as
		 * a request reads them (tp_request_parse) */
		if (nodes < 1 && gpn >= 1) {
			if (fmod(gpus, gpn) != 0) {
				err = TP_ERR_PARSE;
				*msg = tp_asprintf(
				    "%s:%d: gpus %.0f is not a multiple of "
				    "gpus_per_node %.0f",
				    path, lineno, gpus, gpn);
				goto out;
			}
			nodes = gpus / gpn;
		}
		/* gpus beside nodes: the GPUs a node (they must divide), or
		 * with gpus_per_node as well, its product */
		if (nodes >= 1 && gpus >= 1) {
			if (gpn > 0 && gpus != nodes * gpn) {
				err = TP_ERR_PARSE;
				*msg = tp_asprintf(
				    "%s:%d: gpus %.0f is not nodes %.0f x "
				    "gpus_per_node %.0f",
				    path, lineno, gpus, nodes, gpn);
				goto out;
			}
			if (gpus / nodes > 1024) {
				err = TP_ERR_PARSE;
				*msg = tp_asprintf(
				    "%s:%d: gpus %.0f on nodes %.0f: more than "
				    "1024 a node",
				    path, lineno, gpus, nodes);
				goto out;
			}
			if (fmod(gpus, nodes) != 0) {
				err = TP_ERR_PARSE;
				*msg = tp_asprintf(
				    "%s:%d: gpus %.0f do not split evenly over "
				    "nodes %.0f (give gpus_per_node, or gpus "
				    "alone)",
				    path, lineno, gpus, nodes);
				goto out;
			}
			gpn = gpus / nodes;
		}
		j->line = lineno;
		j->nodes = (int)nodes;
		j->gpus_per_node = (int)gpn;
		j->gpus =
		    nodes >= 1 ? (int)(nodes * (gpn > 0 ? gpn : 0)) : (int)gpus;
		j->bytes = has[C_BYTES] ? val[C_BYTES] : TP__DEFAULT_BYTES;
		if (!has[C_FRAC])
			j->comm_frac = j->nodes > 1 ? 0.3 : 0.1;
		n++;
	}
	err = tp__trace_finish(path, "csv", &jobs, n, t, msg);
out:
	tp_free(jobs);
	return err;
}

/* Runs the parser for path's contents; the error line into *err_p.
 * any: Slurm's records too, read with o (NULL: the defaults). */
static tp_err_t load(const char *path, bool any, const tp_trace_opts_t *o,
		     tp_trace_t *t, char **err_p)
{
	char *buf = NULL, *msg = NULL;
	tp_err_t err;

	memset(t, 0, sizeof(*t));
	if (!(err = read_trace(path, &buf, &msg))) {
		const char *kind = any ? tp__trace_kind(buf) : "csv";
		if (strcmp(kind, "csv"))
			err = tp__trace_parse_slurm(
			    path, buf, !strcmp(kind, "jobcomp"),
			    o ? o->assume_gpus : -1, t, &msg);
		else
			err = parse_csv(path, buf, t, &msg);
	}
	tp_free(buf);
	if (err && err_p)
		*err_p = tp_oneline(msg ? msg : tp_strdup(tp_strerror(err)));
	else
		tp_free(msg);
	return err;
}

tp_err_t tp_trace_load_csv(const char *path, tp_trace_t *t, char **err_p)
{
	return load(path, false, NULL, t, err_p);
}

tp_err_t tp_trace_load(const char *path, tp_trace_t *t, char **err_p)
{
	return load(path, true, NULL, t, err_p);
}

tp_err_t tp_trace_load_opts(const char *path, const tp_trace_opts_t *o,
			    tp_trace_t *t, char **err_p)
{
	if (o && (o->assume_gpus < -1 || o->assume_gpus > 1024)) {
		memset(t, 0, sizeof(*t));
		if (err_p)
			*err_p = tp_strdup("assume_gpus: -1, 0 or 1..1024");
		return TP_ERR_INVAL;
	}
	return load(path, true, o, t, err_p);
}
