/*
 * Job traces from Slurm's own records of the jobs that ran: `sacct
 * --parsable2` output and the job completion log of jobcomp/filetxt
 * (tp_trace_load in tp_placement.h has the rules).
 *
 * sacct -P prints a header of field names and then one row per job (and
 * per step unless -X), the fields split by '|' (a trailing one with
 * --parsable). jobcomp/filetxt writes one line per job as it ends,
 * "JobId=12 UserId=... Name=... JobState=COMPLETED ... StartTime=...
 * EndTime=... NodeList=... NodeCnt=2 ... Tres=cpu=2,node=2,gres/gpu=8
 * ... SubmitTime=...": the key=value pairs are read by key, the last of
 * each winning (a job name or work directory with spaces cannot then
 * stand in for a later field). Slurm writes "Unknown" or "None" for a
 * time a job never reached.
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "placement_int.h"

/* One parse: the file's name for messages, the jobs so far, the trace
 * that counts what is left out, the error line, the caller's options. */
typedef struct pctx {
	const char *path;
	/* the local zone's offset from UTC (seconds) in the last hour met,
	 * YYYYMMDDHH (0: none yet) */
	long tz_hour, tz_off;
	bool tz_gap; /* that hour does not exist there (clocks sprang on) */
	tp_job_spec_t *jobs;
	size_t cap, n;
	tp_trace_t *t;
	char **msg;
	int assume_gpus;
	tp_strbuf_t pool; /* ids and node lists; offset 0 is "none" */
	/* sacct: the JobIDs met (hash -> index into seen), each with its
	 * last row's start (hashed) and what became of it */
	tp_u64map_t ids;
	struct seen {
		uint64_t start;
		int out; /* enum outcome */
	} * seen;
	size_t nseen, capseen;
} pctx_t;

/* What became of a record: one of the counts it went to. */
enum outcome { O_KEPT, O_NOGPU, O_UNRUN, O_BACK, O_STEP };

/* A record before it becomes a job: absolute times, whole counts. */
typedef struct rec {
	const char *submit, *start, *end, *tres, *nodes, *jobid;
	const char *eligible; /* NULL: not recorded */
	const char *nodelist; /* NULL or "": none */
	bool unallocated; /* sacct: an empty AllocTRES */
} rec_t;

const char *tp__trace_kind(const char *buf)
{
	const char *p = buf, *eol;

	while (*p && isspace((unsigned char)*p))
		p++;
	eol = strchr(p, '\n');
	if (!strncmp(p, "JobId=", 6))
		return "jobcomp";
	const char *bar = strchr(p, '|');
	return bar && (!eol || bar < eol) && *p != '#' ? "sacct" : "csv";
}

/* Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian). */
static long days_from_civil(long y, int m, int d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	long yoe = y - era * 400;
	long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool digits(const char *s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		*v = *v * 10 + (s[i] - '0');
	}
	return true;
}

/* Days in month M (1-12) of year Y, leap years as the Gregorian
 * calendar has them. */
static int month_days(int Y, int M)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31};
	bool leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;

	return days[M - 1] + (M == 2 && leap);
}

/* Seconds the local zone (TZ) is ahead of UTC at the start of that
 * hour, through c's one-hour memo (records come mostly in time order);
 * *gap: the hour does not exist in the zone (skipped when clocks went
 * forward), so the file was written in another zone. */
static long zone_offset(pctx_t *c, int Y, int M, int D, int h, bool *gap)
{
	long key = ((Y * 100L + M) * 100 + D) * 100 + h;
	struct tm tm = {.tm_year = Y - 1900,
			.tm_mon = M - 1,
			.tm_mday = D,
			.tm_hour = h,
			.tm_isdst = -1};
	time_t local;

	if (key == c->tz_hour) {
		*gap = c->tz_gap;
		return c->tz_off;
	}
	local = mktime(&tm); /* a time in a spring-forward gap: moved on */
	c->tz_hour = key;
	c->tz_gap = local != (time_t)-1 && (tm.tm_hour != h || tm.tm_mday != D);
	*gap = c->tz_gap;
	c->tz_off = local == (time_t)-1
			? 0
			: (long)(days_from_civil(Y, M, D) * 86400 + h * 3600L -
				 (long)local);
	return c->tz_off;
}

/* Slurm's ISO 8601 time, YYYY-MM-DDTHH:MM:SS, local time as sacct and
 * jobcomp/filetxt print it, into seconds since the epoch (the zone is
 * TZ's, so a job that ran over a daylight-saving change gets its real
 * run time). 1: a time; 0: a time never reached ("Unknown", "None",
 * empty); -1: not a time; -2: no time in the local zone (an hour the
 * clocks skipped). */
static int iso_time(pctx_t *c, const char *s, double *t)
{
	int Y, M, D, h, m, sec;
	bool gap;

	if (!*s || !strcasecmp(s, "Unknown") || !strcasecmp(s, "None"))
		return 0;
	if (strlen(s) != 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
	    s[13] != ':' || s[16] != ':' || !digits(s, 4, &Y) ||
	    !digits(s + 5, 2, &M) || !digits(s + 8, 2, &D) ||
	    !digits(s + 11, 2, &h) || !digits(s + 14, 2, &m) ||
	    !digits(s + 17, 2, &sec) || M < 1 || M > 12 || D < 1 ||
	    D > month_days(Y, M) || h > 23 || m > 59 || sec > 60 || Y < 1970)
		return -1;
	*t = (double)days_from_civil(Y, M, D) * 86400.0 + h * 3600.0 +
	     m * 60.0 + sec - (double)zone_offset(c, Y, M, D, h, &gap);
	return gap ? -2 : 1;
}

/* A count as Slurm prints TRES: digits, then an optional K/M/G/T
 * (powers of 1024). */
static bool tres_count(const char *s, size_t len, double *v)
{
	double x = 0, unit = 1;
	size_t i;

	for (i = 0; i < len && isdigit((unsigned char)s[i]); i++)
		x = x * 10 + (s[i] - '0');
	if (!i || x > 1e9)
		return false;
	if (i < len) {
		const char *u = strchr("KMGT", toupper((unsigned char)s[i]));
		if (!u || !*u || i + 1 != len)
			return false;
		unit = pow(1024.0, (double)(u - "KMGT" + 1));
	}
	*v = x * unit;
	return true;
}

/* GPUs and nodes of a TRES string ("cpu=16,gres/gpu=8,mem=64G,node=2"):
 * gres/gpu, or the sum of the typed counts (gres/gpu:a100=8) when the
 * plain one is missing; node= (0 when absent). false: a malformed pair
 * among those. */
static bool tres_gpus(const char *s, double *gpus, double *nodes)
{
	double plain = -1, typed = 0, v;

	*nodes = 0;
	while (*s) {
		size_t len = strcspn(s, ",");
		const char *eq = memchr(s, '=', len);
		if (eq) {
			size_t klen = (size_t)(eq - s), vlen = len - klen - 1;
			bool is_plain = klen == 8 && !strncmp(s, "gres/gpu", 8);
			bool is_typed = klen > 9 && !strncmp(s, "gres/gpu:", 9);
			bool is_node = klen == 4 && !strncmp(s, "node", 4);
			if (is_plain || is_typed || is_node) {
				if (!tres_count(eq + 1, vlen, &v))
					return false;
				if (is_plain)
					plain = v;
				else if (is_typed)
					typed += v;
				else
					*nodes = v;
			}
		}
		s += len;
		if (*s == ',')
			s++;
	}
	*gpus = plain >= 0 ? plain : typed;
	return true;
}

/* s (NULL, "" or "(null)": none, 0) into c's pool: its offset. */
static uint32_t pool_add(pctx_t *c, const char *s)
{
	uint32_t at;

	if (!s || !*s || !strcmp(s, "(null)"))
		return 0;
	if (!c->pool.len)
		tp_strbuf_append(&c->pool, "", 1);
	if (c->pool.len > UINT32_MAX - strlen(s) - 1) {
		c->pool.failed = true;
		return 0;
	}
	at = (uint32_t)c->pool.len;
	tp_strbuf_append(&c->pool, s, strlen(s) + 1);
	return c->pool.failed ? 0 : at;
}

/* Record r of line lineno into c->jobs (submit_s absolute for now), or
 * counted as left out in c->t; *out_p says which (enum outcome). */
static tp_err_t add_rec(pctx_t *c, int lineno, const rec_t *r, int *out_p)
{
	const char *path = c->path;
	tp_trace_t *t = c->t;
	char **msg = c->msg;
	double submit = 0, start = 0, end = 0, gpus = 0, tnodes = 0, nodes = 0;
	double eligible = 0;
	tp_err_t err;

	*out_p = O_KEPT;
	if (r->jobid && strchr(r->jobid, '.')) {
		t->left_steps++;
		*out_p = O_STEP;
		return TP_OK;
	}
	const char *what = NULL, *val = NULL;
	int sub_ok = iso_time(c, r->submit, &submit), s_ok = 0, e_ok = 0;
	int el_ok = 0;
	if (sub_ok < 0)
		what = "submit time", val = r->submit;
	else if ((s_ok = iso_time(c, r->start, &start)) < 0)
		what = "start time", val = r->start;
	else if ((e_ok = iso_time(c, r->end, &end)) < 0)
		what = "end time", val = r->end;
	else if (r->eligible &&
		 (el_ok = iso_time(c, r->eligible, &eligible)) < 0)
		what = "eligible time", val = r->eligible;
	else if (!tres_gpus(r->tres, &gpus, &tnodes))
		what = "TRES", val = r->tres;
	else if (r->nodes && *r->nodes &&
		 !tres_count(r->nodes, strlen(r->nodes), &nodes))
		what = "node count", val = r->nodes;
	if (what && (sub_ok == -2 || s_ok == -2 || e_ok == -2 || el_ok == -2)) {
		const char *tz = getenv("TZ");
		*msg = tp_asprintf("%s:%d: %s '%s' does not exist in this time "
				   "zone (TZ=%s: the clocks skipped it): read "
				   "the file with the TZ it was written in",
				   path, lineno, what, val,
				   tz && *tz ? tz : "unset, the system's");
		return TP_ERR_PARSE;
	}
	if (what) {
		*msg = tp_asprintf("%s:%d: %s: not valid ('%s')", path, lineno,
				   what, val);
		return TP_ERR_PARSE;
	}
	bool tracked = strstr(r->tres, "gres/gpu") != NULL;
	if (tracked)
		t->gpu_tres = true;
	/* sacct's and jobcomp's words for no node (a job that never ran) */
	bool no_node = r->nodelist && (!strcmp(r->nodelist, "None assigned") ||
				       !strcmp(r->nodelist, "(null)"));
	/* a job cancelled while pending: jobcomp gives it the cancel time
	 * as start and end but no node, sacct no allocated TRES (and with
	 * ReqTRES alone, "None assigned" for its nodes) */
	if (!s_ok || !e_ok || r->unallocated || no_node ||
	    (r->nodes && *r->nodes && nodes < 1)) {
		t->left_unrun++;
		*out_p = O_UNRUN;
		return TP_OK;
	}
	if (end < start) {
		t->left_backwards++;
		*out_p = O_BACK;
		return TP_OK;
	}
	if (nodes < 1)
		nodes = tnodes;
	/* GPUs not tracked: assumed on each host, if the caller says so */
	bool assumed = gpus < 1 && !tracked && c->assume_gpus >= 0;
	if (gpus < 1 && !assumed) {
		t->left_nogpu++;
		*out_p = O_NOGPU;
		return TP_OK;
	}
	if (nodes < 1 || nodes > 1e6) {
		*msg = tp_asprintf("%s:%d: %s node count", path, lineno,
				   nodes < 1 ? "no" : "an impossible");
		return TP_ERR_PARSE;
	}
	if (gpus > 1e7) {
		*msg = tp_asprintf("%s:%d: %.0f GPUs: more than 10000000", path,
				   lineno, gpus);
		return TP_ERR_PARSE;
	}
	/* the node list, where it is one, must hold the nodes counted (a
	 * record that says 3 nodes and lists 2 is priced on neither) */
	size_t listed;
	if (r->nodelist && *r->nodelist) {
		bool bad = true;
		if (tp_hostlist_count(r->nodelist, &listed))
			*msg = tp_asprintf("%s:%d: node list '%s': not a host "
					   "list",
					   path, lineno, r->nodelist);
		else if ((double)listed != nodes)
			*msg = tp_asprintf("%s:%d: node list '%s' names %zu "
					   "host%s, the record %g",
					   path, lineno, r->nodelist, listed,
					   listed == 1 ? "" : "s", nodes);
		else
			bad = false;
		if (bad)
			return TP_ERR_PARSE;
	}
	/* the CSV's run_s limit, which the trace it writes must meet (an
	 * End far in the future is a wrong record, not a long job) */
	if (end - start > TP__TRACE_RUN_MAX) {
		*msg = tp_asprintf("%s:%d: ran %.0f s, over 1e9 (from its "
				   "start to its end)",
				   path, lineno, end - start);
		return TP_ERR_PARSE;
	}
	if ((err = tp__trace_grow(path, lineno, &c->jobs, &c->cap, c->n, msg)))
		return err;
	tp_job_spec_t *j = &c->jobs[c->n];
	int gpn = assumed ? c->assume_gpus : (int)ceil(gpus / nodes);
	if (gpn > 1024) {
		*msg = tp_asprintf("%s:%d: %g GPUs on %g hosts: more than "
				   "1024 a host",
				   path, lineno, gpus, nodes);
		return TP_ERR_PARSE;
	}
	if (assumed)
		t->assumed++;
	else if ((double)gpn * nodes != gpus)
		t->rounded++;
	j->line = lineno;
	j->submit_s = sub_ok ? submit : start;
	/* a job held, waiting on a dependency or told to begin later
	 * arrives when it became eligible: its wait before that was its
	 * owner's, which no placement shortens */
	if (el_ok > 0 && eligible > j->submit_s && eligible <= start) {
		j->submit_s = eligible;
		t->eligible_later++;
	}
	j->start_s = start;
	j->run_s = end - start;
	j->nodes = (int)nodes;
	j->gpus_per_node = gpn;
	j->gpus = j->nodes * gpn;
	j->comm_frac = j->nodes > 1 ? 0.3 : 0.1;
	j->bytes = TP__DEFAULT_BYTES;
	j->id_at = pool_add(c, r->jobid);
	j->nodes_at = pool_add(c, r->nodelist);
	c->n++;
	return c->pool.failed ? TP_ERR_NOMEM : TP_OK;
}

/* sacct's fields this reads, by name (any case). */
enum {
	S_JOBID,
	S_JOBIDRAW,
	S_SUBMIT,
	S_START,
	S_END,
	S_NNODES,
	S_ALLOC,
	S_REQ,
	S_NODELIST,
	S_ELIGIBLE,
	S_N
};
static const char *const sacct_names[S_N] = {
    "JobID",  "JobIDRaw",  "Submit",  "Start",	  "End",
    "NNodes", "AllocTRES", "ReqTRES", "NodeList", "Eligible",
};

/* A header line (concatenated dumps repeat theirs): cells naming JobID
 * or JobIDRaw, Start and End, which no one record holds (a job may be
 * named "jobid"; its times are times). */
static bool sacct_header(char *const *cell, int nc)
{
	bool id = false, start = false, end = false;

	for (int i = 0; i < nc; i++) {
		id |= !strcasecmp(cell[i], "JobID") ||
		      !strcasecmp(cell[i], "JobIDRaw");
		start |= !strcasecmp(cell[i], "Start");
		end |= !strcasecmp(cell[i], "End");
	}
	return id && start && end;
}

/* The count an outcome went to. */
static size_t *outcome_count(pctx_t *c, int out)
{
	switch (out) {
	case O_NOGPU:
		return &c->t->left_nogpu;
	case O_UNRUN:
		return &c->t->left_unrun;
	case O_BACK:
		return &c->t->left_backwards;
	case O_STEP:
		return &c->t->left_steps;
	default:
		return NULL;
	}
}

/* Record r of line lineno, once per job: concatenated dumps (sacct -S/-E
 * windows) list a job in every window it ran in. A row whose JobID was
 * met with the same start is the same record: read once (a job kept,
 * counted in t->repeated), or (a job left out then: running, pending)
 * read again, the earlier count undone. A JobID with another start is
 * another run of the job (requeued; sacct -D lists each). */
static tp_err_t add_once(pctx_t *c, int lineno, const rec_t *r)
{
	tp_trace_t *t = c->t;
	uint64_t id = tp_hash_str(r->jobid), start = tp_hash_str(r->start);
	uint32_t k =
	    r->jobid && *r->jobid ? tp_u64map_get(&c->ids, id) : TP_MAP_NONE;
	int out;
	tp_err_t err;

	if (k != TP_MAP_NONE && c->seen[k].out == O_KEPT &&
	    c->seen[k].start == start) {
		t->repeated++;
		return TP_OK;
	}
	if ((err = add_rec(c, lineno, r, &out)))
		return err;
	if (!r->jobid || !*r->jobid)
		return TP_OK;
	if (k != TP_MAP_NONE) {
		/* the earlier row: superseded, unless it ran and this is
		 * another run */
		size_t *was = outcome_count(c, c->seen[k].out);
		if (was && *was)
			(*was)--;
		c->seen[k] = (struct seen){start, out};
		return TP_OK;
	}
	void *sa = c->seen;
	if (tp_grow(&sa, &c->capseen, c->nseen + 1, sizeof(*c->seen)))
		return TP_ERR_NOMEM;
	c->seen = sa;
	if (tp_u64map_put(&c->ids, id, (uint32_t)c->nseen))
		return TP_ERR_NOMEM;
	c->seen[c->nseen++] = (struct seen){start, out};
	return TP_OK;
}

#define MAXF 128

static tp_err_t parse_sacct(pctx_t *c, char *buf)
{
	const char *path = c->path;
	char **msg = c->msg;
	char *line, *pos = buf, *cell[MAXF];
	int col[S_N], lineno = 0, ncols = 0;
	tp_err_t err;

	for (int f = 0; f < S_N; f++)
		col[f] = -1;
	while ((line = tp__trace_line(&pos, &lineno))) {
		int nc = tp__trace_split(line, '|', cell, MAXF);
		if (nc > MAXF) {
			*msg = tp_asprintf("%s:%d: more than %d fields", path,
					   lineno, MAXF);
			return TP_ERR_PARSE;
		}
		/* the first line, or another dump's header: its fields */
		if (!ncols || sacct_header(cell, nc)) {
			for (int f = 0; f < S_N; f++)
				col[f] = -1;
			for (int i = 0; i < nc; i++)
				for (int f = 0; f < S_N; f++)
					if (!strcasecmp(cell[i],
							sacct_names[f]))
						col[f] = i;
			ncols = nc;
			/* job steps are told by their ids (101.batch) */
			if (col[S_JOBID] < 0)
				col[S_JOBID] = col[S_JOBIDRAW];
			if (col[S_JOBID] < 0 || col[S_SUBMIT] < 0 ||
			    col[S_START] < 0 || col[S_END] < 0 ||
			    (col[S_ALLOC] < 0 && col[S_REQ] < 0)) {
				*msg = tp_asprintf(
				    "%s:%d: sacct's header needs JobID (or "
				    "JobIDRaw: job steps are told by it), "
				    "Submit, Start, End and AllocTRES or "
				    "ReqTRES (sacct -P "
				    "--format=JobID,Submit,Start,End,NNodes,"
				    "AllocTRES, without --noheader)",
				    path, lineno);
				return TP_ERR_PARSE;
			}
			continue;
		}
		if (nc != ncols) {
			*msg = tp_asprintf("%s:%d: %d fields, sacct's header "
					   "has %d (a '|' inside a field?)",
					   path, lineno, nc, ncols);
			return TP_ERR_PARSE;
		}
		rec_t r = {
		    .submit = cell[col[S_SUBMIT]],
		    .start = cell[col[S_START]],
		    .end = cell[col[S_END]],
		    .nodes = col[S_NNODES] >= 0 ? cell[col[S_NNODES]] : NULL,
		    .jobid = col[S_JOBID] >= 0 ? cell[col[S_JOBID]] : NULL,
		    .nodelist =
			col[S_NODELIST] >= 0 ? cell[col[S_NODELIST]] : NULL,
		    .eligible =
			col[S_ELIGIBLE] >= 0 ? cell[col[S_ELIGIBLE]] : NULL,
		};
		r.tres =
		    col[S_ALLOC] >= 0 ? cell[col[S_ALLOC]] : cell[col[S_REQ]];
		r.unallocated = col[S_ALLOC] >= 0 && !*r.tres;
		if ((err = add_once(c, lineno, &r)))
			return err;
	}
	return TP_OK;
}

/* The value of the last " key=" pair in line (NUL-terminated in place
 * only by the caller's copy: returned as a length). */
static const char *jc_field(const char *line, const char *key, size_t *len)
{
	size_t klen = strlen(key);
	const char *found = NULL;

	for (const char *p = line; (p = strstr(p, key)); p += klen)
		if ((p == line || p[-1] == ' ') && p[klen] == '=')
			found = p + klen + 1;
	if (found)
		*len = strcspn(found, " ");
	return found;
}

static tp_err_t parse_jobcomp(pctx_t *c, char *buf)
{
	const char *path = c->path;
	char **msg = c->msg;
	/* the last three may be missing */
	static const char *const keys[] = {
	    "SubmitTime", "StartTime", "EndTime",  "Tres",
	    "NodeCnt",	  "JobId",     "NodeList", "EligibleTime"};
	enum { NK = sizeof(keys) / sizeof(keys[0]), NOPT = 3 };
	char *line, *pos = buf, *val[NK];
	int lineno = 0;
	tp_err_t err = TP_OK;

	while ((line = tp__trace_line(&pos, &lineno))) {
		memset(val, 0, sizeof(val));
		if (strncmp(line, "JobId=", 6)) {
			*msg = tp_asprintf("%s:%d: not a jobcomp/filetxt "
					   "record (no JobId= first)",
					   path, lineno);
			return TP_ERR_PARSE;
		}
		for (int k = 0; k < NK; k++) {
			size_t len;
			const char *v = jc_field(line, keys[k], &len);
			if (!v && k < NK - NOPT) {
				*msg = tp_asprintf("%s:%d: no %s= in the "
						   "jobcomp record",
						   path, lineno, keys[k]);
				err = TP_ERR_PARSE;
				goto next;
			}
			if (v && !(val[k] = tp_strndup(v, len))) {
				err = TP_ERR_NOMEM;
				goto next;
			}
		}
		rec_t r = {.submit = val[0],
			   .start = val[1],
			   .end = val[2],
			   .tres = val[3],
			   .nodes = val[4],
			   .jobid = val[5],
			   .nodelist = val[6],
			   .eligible = val[7]};
		if (!strcasecmp(r.submit, "unknown"))
			r.submit = r.start;
		int out;
		err = add_rec(c, lineno, &r, &out);
	next:
		for (int k = 0; k < NK; k++)
			tp_free(val[k]);
		if (err)
			return err;
	}
	return TP_OK;
}

tp_err_t tp__trace_parse_slurm(const char *path, char *buf, bool jobcomp,
			       int assume_gpus, tp_trace_t *t, char **msg)
{
	pctx_t c = {
	    .path = path, .t = t, .msg = msg, .assume_gpus = assume_gpus};
	tp_err_t err;

	err = jobcomp ? parse_jobcomp(&c, buf) : parse_sacct(&c, buf);
	if (!err && !c.n && !t->gpu_tres && t->left_nogpu)
		*msg = tp_asprintf(
		    "%s: no job's TRES counts GPUs (no gres/gpu): Slurm "
		    "records them with AccountingStorageTRES=gres/gpu in "
		    "slurm.conf (or: topoplace trace --assume-gpus)",
		    path);
	else if (!err && !c.n)
		*msg = tp_asprintf(
		    "%s: no job that ran on GPUs (%zu without GPUs, %zu "
		    "that never ran or had not ended, %zu that ended before "
		    "they started)",
		    path, t->left_nogpu, t->left_unrun, t->left_backwards);
	if (!err && !c.n)
		err = TP_ERR_PARSE;
	if (!err) {
		double first = c.jobs[0].submit_s;
		for (size_t i = 1; i < c.n; i++)
			if (c.jobs[i].submit_s < first)
				first = c.jobs[i].submit_s;
		for (size_t i = 0; i < c.n; i++)
			c.jobs[i].submit_s -= first, c.jobs[i].start_s -= first;
		err = tp__trace_finish(path, jobcomp ? "jobcomp" : "sacct",
				       &c.jobs, c.n, t, msg);
	}
	if (!err) {
		t->strings = c.pool.buf;
		c.pool.buf = NULL;
	}
	tp_free(c.pool.buf);
	tp_free(c.jobs);
	tp_free(c.seen);
	tp_u64map_clear(&c.ids);
	return err;
}
