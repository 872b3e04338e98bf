/*
 * decision.c - topoplace-decision/1 records: the one codec the 24.11
 * plugin writes with and `topoplace show` reads with, and the journal
 * file they go to (append, trim, lock).
 *
 * Notes
 *
 * The encoder writes with printf-style formats, not cJSON's printer, so
 * the numbers keep the precision the file always had (%.9g seconds,
 * %.3f ms) and a record is built without a tree. The decoder is cJSON
 * over one line, then a table of members: strict mode is what the
 * fuzz target and the tests round-trip against, lenient mode what a
 * person reading an older or hand-edited file gets.
 *
 * The journal runs in slurmctld's writer thread: no Slurm calls, failures
 * logged at debug level through tp__log (the plugin routes it to Slurm's
 * log) and returned, so the plugin says what was lost. Two controllers
 * sharing StateSaveLocation (HA) both append and trim: a trim renames a
 * copy over the file, so without the lock on PATH.lock a record appended
 * to the old inode meanwhile would vanish.
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "placement_int.h"

/* Largest count or GPU number a record may carry (as cmd_show bounded). */
#define COUNT_MAX 1e9

void tp_decision_init(tp_decision_t *d)
{
	memset(d, 0, sizeof(*d));
	for (int l = 0; l < TP_SPAN_NLEVELS; l++)
		d->span[l] = d->min_free[l] = d->min_empty[l] =
		    TP_DECISION_NONE;
	d->decision_ms = -1;
}

void tp_decision_free(tp_decision_t *d)
{
	if (!d)
		return;
	tp_free(d->hosts);
	tp_hostlist_free(d->ring, d->nring);
	tp_free(d->gpus);
	tp_free(d->policy);
	tp_free(d->reason);
	tp_decision_init(d);
}

/* ---- encoding ---- */

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, at most U+10FFFF) and its code point; 0 when
 * the bytes are not one. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp_p)
{
	size_t n;
	uint32_t cp, min;

	if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07, min = 0x10000;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f, min = 0x80;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*cp_p = cp;
	return n;
}

/* A JSON string in printable ASCII: code points beyond it as \uXXXX
 * (surrogate pairs above U+FFFF), a byte that is no UTF-8 as U+FFFD. So
 * decoding and encoding again gives the same bytes. */
static void put_str(tp_strbuf_t *sb, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	tp_strbuf_append(sb, "\"", 1);
	while (*s) {
		uint32_t cp = *s;
		size_t n = 1;

		if (cp >= 0x80 && !(n = utf8_seq(s, &cp)))
			n = 1, cp = 0xfffd;
		s += n;
		if (cp == '"' || cp == '\\')
			tp_strbuf_printf(sb, "\\%c", (char)cp);
		else if (cp >= 0x20 && cp < 0x7f)
			tp_strbuf_append(sb, (const char *)s - 1, 1);
		else if (cp > 0xffff)
			tp_strbuf_printf(sb, "\\u%04x\\u%04x",
					 0xd800 + ((cp - 0x10000) >> 10),
					 0xdc00 + ((cp - 0x10000) & 0x3ff));
		else
			tp_strbuf_printf(sb, "\\u%04x", cp);
	}
	tp_strbuf_append(sb, "\"", 1);
}

tp_err_t tp_decision_encode(const tp_decision_t *d, char **line_p,
			    size_t *len_p)
{
	tp_strbuf_t sb = {0};
	const size_t g = TP_SPAN_GROUPS;

	if (!d || !line_p || !len_p || !d->hosts || !d->policy || !d->reason ||
	    (d->nring && (!d->ring || !d->gpus)) ||
	    d->span[g] == TP_DECISION_NONE ||
	    d->min_free[g] == TP_DECISION_NONE ||
	    d->min_empty[g] == TP_DECISION_NONE || !isfinite(d->decision_ms) ||
	    d->decision_ms < 0)
		return TP_ERR_INVAL;
	for (size_t i = 0; i < d->nring; i++)
		if (!d->ring[i])
			return TP_ERR_INVAL;
	tp_strbuf_printf(&sb,
			 "{\"format\":\"" TP_DECISION_FORMAT
			 "\",\"job_id\":%" PRIu32 ",\"time\":%" PRId64
			 ",\"hosts\":",
			 d->job_id, d->time);
	put_str(&sb, d->hosts);
	tp_strbuf_append(&sb, ",\"ring\":[", 9);
	for (size_t i = 0; i < d->nring; i++) {
		if (i)
			tp_strbuf_append(&sb, ",", 1);
		put_str(&sb, d->ring[i]);
	}
	tp_strbuf_append(&sb, "],\"gpus\":[", 10);
	for (size_t i = 0; i < d->nring; i++)
		tp_strbuf_printf(&sb, "%s%d", i ? "," : "", d->gpus[i]);
	tp_strbuf_printf(&sb,
			 "],\"span_groups\":%zu,\"min_groups\":%zu,"
			 "\"min_groups_empty\":%zu,",
			 d->span[g], d->min_free[g], d->min_empty[g]);
	/* NaN or infinity is no JSON number: unpriced then */
	if (d->priced && isfinite(d->predicted_s) && isfinite(d->ideal_s))
		tp_strbuf_printf(&sb, "\"predicted_s\":%.9g,\"ideal_s\":%.9g,",
				 d->predicted_s, d->ideal_s);
	tp_strbuf_append(&sb, "\"policy\":", 9);
	put_str(&sb, d->policy);
	tp_strbuf_printf(&sb,
			 ",\"decision_ms\":%.3f,\"reason\":", d->decision_ms);
	put_str(&sb, d->reason);
	tp_strbuf_append(&sb, "}\n", 2);
	if (sb.failed) {
		tp_free(sb.buf);
		return TP_ERR_NOMEM;
	}
	if (sb.len > TP_DECISION_LINE_MAX) {
		tp_free(sb.buf);
		return TP_ERR_RANGE;
	}
	*line_p = sb.buf;
	*len_p = sb.len;
	return TP_OK;
}

/* ---- decoding ---- */

/* The members of format /1, in the order the encoder writes them. */
enum {
	M_FORMAT,
	M_JOB_ID,
	M_TIME,
	M_HOSTS,
	M_RING,
	M_GPUS,
	M_SPAN_GROUPS,
	M_MIN_GROUPS,
	M_MIN_GROUPS_EMPTY,
	M_PREDICTED,
	M_IDEAL,
	M_POLICY,
	M_DECISION_MS,
	M_REASON,
	M_SPAN, /* lenient only, as below */
	M_MIN_SPAN,
	M_COUNT
};

static const char *const member_names[M_COUNT] = {
    "format",	   "job_id",	 "time",
    "hosts",	   "ring",	 "gpus",
    "span_groups", "min_groups", "min_groups_empty",
    "predicted_s", "ideal_s",	 "policy",
    "decision_ms", "reason",	 "span",
    "min_span"};

/* Members strict mode needs (all but the priced pair and the lenient
 * extras). */
#define STRICT_NEEDED                                                          \
	(((1u << M_PREDICTED) - 1) | 1u << M_POLICY | 1u << M_DECISION_MS |    \
	 1u << M_REASON)

static int member_of(const char *key)
{
	for (int m = 0; m < M_COUNT; m++)
		if (!strcmp(key, member_names[m]))
			return m;
	return -1;
}

/* A whole number in [lo, hi]. */
static bool int_in(const cJSON *v, double lo, double hi, double *out)
{
	double x;

	if (!cJSON_IsNumber(v))
		return false;
	x = v->valuedouble;
	if (!(x >= lo && x <= hi) || x != floor(x))
		return false;
	*out = x;
	return true;
}

static bool count_of(const cJSON *v, size_t *out)
{
	double x;

	if (!int_in(v, 0, COUNT_MAX, &x))
		return false;
	*out = (size_t)x;
	return true;
}

static bool seconds_of(const cJSON *v, double *out)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < 0)
		return false;
	*out = v->valuedouble;
	return true;
}

/* Names: the fabric's rule, so a record cannot smuggle a newline or a
 * bracket into what `show` prints or expands. */
static tp_err_t names_of(const cJSON *arr, char ***names_p, size_t *n_p)
{
	const cJSON *e;
	size_t n = 0, cap = (size_t)cJSON_GetArraySize(arr);
	char **names;

	if (!(names = tp_calloc(cap + 1, sizeof(char *))))
		return TP_ERR_NOMEM;
	cJSON_ArrayForEach(e, arr)
	{
		if (!cJSON_IsString(e) || !tp_fabric_name_ok(e->valuestring)) {
			tp_hostlist_free(names, n);
			return TP_ERR_PARSE;
		}
		if (!(names[n] = tp_strdup(e->valuestring))) {
			tp_hostlist_free(names, n);
			return TP_ERR_NOMEM;
		}
		n++;
	}
	*names_p = names;
	*n_p = n;
	return TP_OK;
}

static tp_err_t gpus_of(const cJSON *arr, size_t n, int **gpus_p)
{
	const cJSON *e;
	size_t i = 0;
	int *gpus;

	if ((size_t)cJSON_GetArraySize(arr) != n)
		return TP_ERR_PARSE;
	if (!(gpus = tp_calloc(n + 1, sizeof(int))))
		return TP_ERR_NOMEM;
	cJSON_ArrayForEach(e, arr)
	{
		double x;
		if (!int_in(e, 0, 1e6, &x)) {
			tp_free(gpus);
			return TP_ERR_PARSE;
		}
		gpus[i++] = (int)x;
	}
	*gpus_p = gpus;
	return TP_OK;
}

/* A host list given as an array of names, joined with commas (the names
 * hold none: names_of checked them). */
static tp_err_t hosts_of_array(const cJSON *arr, char **hosts_p)
{
	tp_strbuf_t sb = {0};
	char **names;
	size_t n;
	tp_err_t err;

	if ((err = names_of(arr, &names, &n)))
		return err;
	for (size_t i = 0; i < n; i++)
		tp_strbuf_printf(&sb, "%s%s", i ? "," : "", names[i]);
	tp_hostlist_free(names, n);
	if (sb.failed || !n) {
		tp_free(sb.buf);
		return n ? TP_ERR_NOMEM : TP_ERR_PARSE;
	}
	*hosts_p = sb.buf;
	return TP_OK;
}

/* "span"/"min_span" objects of older records: {"hosts":N,"groups":N,...}
 * with min_ prefixes, or a bare number for the group count. */
static void spans_of(const cJSON *o, const char *prefix, bool plain,
		     size_t span[TP_SPAN_NLEVELS])
{
	static const char *const keys[TP_SPAN_NLEVELS] = {
	    "hosts", "nvlink_domains", "groups", "spine_groups"};
	char k[64];

	if (cJSON_IsNumber(o)) {
		count_of(o, &span[TP_SPAN_GROUPS]);
		return;
	}
	for (int l = 0; l < TP_SPAN_NLEVELS; l++) {
		const cJSON *v;
		snprintf(k, sizeof(k), "%s%s", prefix, keys[l]);
		v = cJSON_GetObjectItemCaseSensitive(o, k);
		if (!v && plain)
			v = cJSON_GetObjectItemCaseSensitive(o, keys[l]);
		count_of(v, &span[l]);
	}
}

/* A host list of names by the fabric's rule: their bytes and the
 * brackets, commas and dashes of ranges, nothing else (tp_hostlist_count
 * takes any byte in a name). */
static bool hostlist_chars_ok(const char *s)
{
	return s[strspn(s,
			"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			"0123456789-_.[],")] == '\0';
}

static tp_err_t string_of(const cJSON *v, char **out)
{
	if (!cJSON_IsString(v))
		return TP_ERR_PARSE;
	return (*out = tp_strdup(v->valuestring)) ? TP_OK : TP_ERR_NOMEM;
}

/* One member into d. TP_ERR_PARSE: wrong type or out of range (strict
 * mode fails the record; lenient leaves the member unrecorded, but for
 * hosts and job_id, without which a record is no record). */
static tp_err_t read_member(int m, const cJSON *v, bool strict,
			    tp_decision_t *d)
{
	const size_t g = TP_SPAN_GROUPS;
	size_t n;
	double x;

	switch (m) {
	case M_FORMAT:
		return cJSON_IsString(v) &&
			       !strcmp(v->valuestring, TP_DECISION_FORMAT)
			   ? TP_OK
			   : TP_ERR_PARSE;
	case M_JOB_ID:
		if (!int_in(v, 1, UINT32_MAX, &x))
			return TP_ERR_PARSE;
		d->job_id = (uint32_t)x;
		return TP_OK;
	case M_TIME:
		if (!int_in(v, 0, 9007199254740992.0, &x))
			return TP_ERR_PARSE;
		d->time = (int64_t)x;
		return TP_OK;
	case M_HOSTS:
		if (cJSON_IsArray(v) && !strict)
			return hosts_of_array(v, &d->hosts);
		if (!cJSON_IsString(v) || !hostlist_chars_ok(v->valuestring) ||
		    tp_hostlist_count(v->valuestring, &n) || !n)
			return TP_ERR_PARSE;
		return string_of(v, &d->hosts);
	case M_RING:
		if (!cJSON_IsArray(v))
			return TP_ERR_PARSE;
		return names_of(v, &d->ring, &d->nring);
	case M_GPUS: /* after the ring: the encoder's order, checked */
		if (!cJSON_IsArray(v) || !d->ring)
			return TP_ERR_PARSE;
		return gpus_of(v, d->nring, &d->gpus);
	case M_SPAN_GROUPS:
		return count_of(v, &d->span[g]) ? TP_OK : TP_ERR_PARSE;
	case M_MIN_GROUPS:
		return count_of(v, &d->min_free[g]) ? TP_OK : TP_ERR_PARSE;
	case M_MIN_GROUPS_EMPTY:
		return count_of(v, &d->min_empty[g]) ? TP_OK : TP_ERR_PARSE;
	case M_PREDICTED:
		return seconds_of(v, &d->predicted_s) ? TP_OK : TP_ERR_PARSE;
	case M_IDEAL:
		return seconds_of(v, &d->ideal_s) ? TP_OK : TP_ERR_PARSE;
	case M_POLICY:
		return string_of(v, &d->policy);
	case M_DECISION_MS:
		return seconds_of(v, &d->decision_ms) ? TP_OK : TP_ERR_PARSE;
	case M_REASON:
		return string_of(v, &d->reason);
	case M_SPAN:
		spans_of(v, "", false, d->span);
		if (cJSON_IsObject(v))
			spans_of(v, "min_", false, d->min_free);
		return TP_OK;
	case M_MIN_SPAN:
		spans_of(v, "min_", true, d->min_free);
		return TP_OK;
	}
	return TP_ERR_PARSE;
}

static tp_err_t decode_object(const cJSON *root, bool strict, tp_decision_t *d,
			      char **why_p)
{
	const cJSON *v;
	unsigned seen = 0, got = 0;
	char q[80];
	tp_err_t err;

	if (!cJSON_IsObject(root))
		return tp_first_error(why_p, "record", TP_ERR_PARSE,
				      "not a JSON object");
	cJSON_ArrayForEach(v, root)
	{
		int m = member_of(v->string);
		if (m < 0 || (strict && m >= M_SPAN)) {
			if (!strict)
				continue;
			return tp_first_error(
			    why_p, "record", TP_ERR_PARSE, "unknown member %s",
			    tp_quote(q, sizeof(q), v->string, 40));
		}
		if (seen & 1u << m)
			return tp_first_error(why_p, member_names[m],
					      TP_ERR_PARSE, "given twice");
		seen |= 1u << m;
		err = read_member(m, v, strict, d);
		if (err == TP_ERR_NOMEM)
			return err;
		got |= err ? 0 : 1u << m;
		if (err &&
		    (strict || m == M_FORMAT || m == M_JOB_ID || m == M_HOSTS))
			return tp_first_error(why_p, member_names[m], err,
					      "wrong type or out of range");
	}
	if (strict && (seen & STRICT_NEEDED) != STRICT_NEEDED) {
		for (int m = 0; m < M_COUNT; m++)
			if (STRICT_NEEDED & ~seen & 1u << m)
				return tp_first_error(why_p, member_names[m],
						      TP_ERR_PARSE, "missing");
	}
	if (!strict && !(seen & 1u << M_JOB_ID))
		return tp_first_error(why_p, "job_id", TP_ERR_PARSE, "missing");
	if (!!(seen & 1u << M_PREDICTED) != !!(seen & 1u << M_IDEAL)) {
		if (strict)
			return tp_first_error(why_p, "predicted_s",
					      TP_ERR_PARSE,
					      "given without ideal_s or "
					      "the other way round");
	} else {
		d->priced = (got & 1u << M_PREDICTED) && (got & 1u << M_IDEAL);
	}
	/* lenient: a ring whose GPUs did not read is no ring */
	if (d->ring && !d->gpus) {
		tp_hostlist_free(d->ring, d->nring);
		d->ring = NULL;
		d->nring = 0;
	}
	return TP_OK;
}

/* Decode into *d; the reason into *why (never NULL here). */
static tp_err_t decode(const char *line, size_t len, bool strict,
		       tp_decision_t *d, char **why)
{
	const char *end = NULL;
	cJSON *root;
	char bad[64];
	tp_err_t err;

	if (len > TP_DECISION_LINE_MAX)
		return tp_first_error(why, "record", TP_ERR_RANGE,
				      "longer than %zu bytes",
				      TP_DECISION_LINE_MAX);
	if (tp_json_bad_text(line, len, bad, sizeof(bad)))
		return tp_first_error(why, "record", TP_ERR_PARSE, "%s", bad);
	if (!(root = cJSON_ParseWithLengthOpts(line, len, &end, false)))
		return tp_first_error(why, "record", TP_ERR_PARSE,
				      "not JSON (a write cut short?)");
	/* one object per line: nothing but white space after it */
	for (; end < line + len; end++)
		if (!strchr(" \t\r\n", *end)) {
			cJSON_Delete(root);
			return tp_first_error(why, "record", TP_ERR_PARSE,
					      "text after the object");
		}
	err = decode_object(root, strict, d, why);
	cJSON_Delete(root);
	return err;
}

tp_err_t tp_decision_decode(const char *line, size_t len,
			    tp_decision_mode_t mode, tp_decision_t *d,
			    char **why_p)
{
	tp_decision_t out;
	char *why = NULL;
	tp_err_t err;

	if (!line || !d)
		return TP_ERR_INVAL;
	tp_decision_init(&out);
	err = decode(line, len, mode == TP_DECISION_STRICT, &out, &why);
	if (err) {
		tp_decision_free(&out);
		if (why_p)
			*why_p = why;
		else
			tp_free(why);
		return err;
	}
	tp_free(why);
	*d = out;
	return TP_OK;
}

void tp_decisions_free(tp_decision_t *recs, size_t n)
{
	for (size_t i = 0; recs && i < n; i++)
		tp_decision_free(&recs[i]);
	tp_free(recs);
}

tp_err_t tp_decisions_read(const char *path, tp_decision_mode_t mode,
			   tp_decision_t **recs_p, size_t *n_p, size_t *bad_p,
			   char **why_p)
{
	char *buf = NULL, *line, *next, *first = NULL;
	tp_decision_t *recs = NULL;
	size_t len, n = 0, cap = 0, bad = 0, lineno = 0;
	tp_err_t err;

	if (!path || !recs_p || !n_p || !bad_p)
		return TP_ERR_INVAL;
	if ((err = tp_file_read(path, &buf, &len)))
		return err;
	for (line = buf; line < buf + len; line = next) {
		char *why = NULL, *nl = memchr(line, '\n', buf + len - line);
		size_t ll =
		    nl ? (size_t)(nl - line) : (size_t)(buf + len - line);

		next = line + ll + 1;
		lineno++;
		if (!ll || strspn(line, " \t\r") >= ll)
			continue;
		if (tp_grow((void **)&recs, &cap, n + 1, sizeof(*recs))) {
			err = TP_ERR_NOMEM;
			break;
		}
		err = tp_decision_decode(line, ll, mode, &recs[n], &why);
		if (err == TP_ERR_NOMEM) {
			tp_free(why);
			break;
		}
		if (err) {
			if (!bad++ && why_p)
				first =
				    tp_asprintf("%s:%zu: %s", path, lineno,
						why ? why : tp_strerror(err));
			tp_free(why);
			err = TP_OK;
			continue;
		}
		n++;
	}
	tp_free(buf);
	if (err) {
		tp_decisions_free(recs, n);
		tp_free(first);
		return err;
	}
	*recs_p = recs;
	*n_p = n;
	*bad_p = bad;
	if (why_p)
		*why_p = tp_oneline(first);
	else
		tp_free(first);
	return TP_OK;
}

/* ---- the journal file ---- */

/* 0640 and the journal's group: the records name every job's hosts.
 * An older plugin's 0644 file is mended at its next write. */
static void protect(const tp_decision_journal_t *j, int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return;
	if (j->gid >= 0 && st.st_gid != (gid_t)j->gid &&
	    fchown(fd, (uid_t)-1, (gid_t)j->gid) != 0)
		tp__log(TP_LOG_DEBUG, "%s: chgrp: %s", j->path,
			strerror(errno));
	if ((st.st_mode & 07777) != 0640 && fchmod(fd, 0640) != 0)
		tp__log(TP_LOG_DEBUG, "%s: chmod: %s", j->path,
			strerror(errno));
}

/* The descriptor holding the lock (close it to release), -1 when none
 * could be had: the caller goes on without (one controller is the common
 * case, and a record is worth more than the lock). A lock another holds
 * is waited for TP_DECISION_LOCK_WAIT_MS at most, in steps, and after one
 * such wait ran out the next calls try once without waiting until they
 * get it (j->lock_missed): slurmctld waits for its writer's whole queue
 * under its own locks (a reconfigure), so a lock someone else keeps (a
 * controller hung on a shared StateSaveLocation, an admin's flock(1))
 * must not stall it by a wait a record. *busy_p: the lock was another's
 * (the caller then leaves the file's other lines alone: no trim). */
static int lock_take(tp_decision_journal_t *j, bool *busy_p)
{
	char *lp = tp_asprintf("%s.lock", j->path);
	int fd, ms = j->lock_missed ? TP_DECISION_LOCK_WAIT_MS : 0;

	*busy_p = false;
	if (!lp)
		return -1;
	fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		tp__log(TP_LOG_DEBUG, "%s: %s", lp, strerror(errno));
	} else {
		protect(j, fd);
		while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			struct timespec step = {0, 10 * 1000000L};
			if (errno == EINTR)
				continue;
			if (errno != EWOULDBLOCK ||
			    ms >= TP_DECISION_LOCK_WAIT_MS) {
				*busy_p = errno == EWOULDBLOCK;
				tp__log(TP_LOG_DEBUG, "%s: flock: %s%s", lp,
					strerror(errno),
					*busy_p ? " (another holds it: written "
						  "without it, no trim)"
						: "");
				close(fd);
				fd = -1;
				break;
			}
			nanosleep(&step, NULL);
			ms += 10;
		}
		j->lock_missed = *busy_p;
	}
	tp_free(lp);
	return fd;
}

/* The journal is read in pieces of this size, never a line whole: a
 * line may be as long as the file (a file put in its place). */
#define TRIM_CHUNK 16384

/* From in's start, up to max whole lines: how many into *n_p, and where
 * the last of them ends (-1: read error). */
static off_t scan_lines(FILE *in, size_t max, size_t *n_p)
{
	char buf[TRIM_CHUNK];
	off_t pos = 0, at = 0;
	size_t n, k = 0;

	rewind(in);
	while (k < max && (n = fread(buf, 1, sizeof(buf), in)) > 0) {
		for (const char *p = buf, *nl;
		     k < max && (nl = memchr(p, '\n', (size_t)(buf + n - p)));
		     p = nl + 1) {
			k++;
			at = pos + (nl + 1 - buf);
		}
		pos += (off_t)n;
	}
	*n_p = k;
	return ferror(in) ? -1 : at;
}

/* The records after the first skip, up to whole (the end of the last
 * whole line), into a new file renamed over the journal. */
static tp_err_t copy_tail(tp_decision_journal_t *j, FILE *in, size_t skip,
			  off_t whole)
{
	char *tmp = tp_asprintf("%s.XXXXXX", j->path), buf[TRIM_CHUNK];
	size_t k;
	off_t at = scan_lines(in, skip, &k);
	FILE *out;
	int fd;
	bool ok;

	if (!tmp)
		return TP_ERR_NOMEM;
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		tp_free(tmp);
		return TP_ERR_IO;
	}
	protect(j, fd);
	if (!(out = fdopen(fd, "w"))) {
		close(fd);
		unlink(tmp);
		tp_free(tmp);
		return TP_ERR_IO;
	}
	ok = at >= 0 && fseeko(in, at, SEEK_SET) == 0;
	while (ok && at < whole) {
		size_t want = whole - at < (off_t)sizeof(buf)
				  ? (size_t)(whole - at)
				  : sizeof(buf),
		       n = fread(buf, 1, want, in);
		ok = n > 0 && fwrite(buf, 1, n, out) == n;
		at += (off_t)n;
	}
	ok = ok && !ferror(in) && fflush(out) == 0 && fsync(fileno(out)) == 0;
	if (fclose(out) != 0 || !ok || rename(tmp, j->path) != 0) {
		unlink(tmp);
		ok = false;
	}
	tp_free(tmp);
	return ok ? TP_OK : TP_ERR_IO;
}

/* Open the journal (flags: O_RDONLY, or O_WRONLY with O_APPEND|O_CREAT)
 * without waiting and only when it is a regular file: a FIFO put in its
 * place would block slurmctld's writer (or, without one, a selection)
 * until someone opened the other end. TP_ERR_NOTREG for a FIFO (ENXIO:
 * one with no reader), device or directory (EISDIR for writing);
 * TP_ERR_NOTFOUND, TP_ERR_IO. */
static tp_err_t open_regular(const char *path, int flags, int *fd_p)
{
	struct stat st;
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW, 0640);

	if (fd < 0)
		return errno == ENOENT			   ? TP_ERR_NOTFOUND
		       : errno == ENXIO || errno == EISDIR ? TP_ERR_NOTREG
							   : TP_ERR_IO;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return TP_ERR_NOTREG;
	}
	*fd_p = fd;
	return TP_OK;
}

/* The trim, with the lock held. A last line without its newline is a
 * write cut short (disk full, a process killed mid-record): cut off in
 * place first (truncate needs no space), or the next record would be
 * glued to it. j->lines gets the count whatever happens to the copy, so
 * a failed one is retried at the next 2x mark, not at every record. */
static tp_err_t trim_locked(tp_decision_journal_t *j)
{
	size_t total;
	off_t pos, whole;
	FILE *in;
	int fd;
	tp_err_t err;

	if ((err = open_regular(j->path, O_RDONLY, &fd)) == TP_ERR_NOTFOUND)
		j->lines = 0;
	if (err)
		return err;
	if (!(in = fdopen(fd, "r"))) {
		close(fd);
		return TP_ERR_IO;
	}
	whole = scan_lines(in, SIZE_MAX, &total);
	pos = ftello(in);
	if (whole < 0 || pos < 0) {
		fclose(in);
		return TP_ERR_IO;
	}
	if (pos > whole && truncate(j->path, whole) != 0)
		tp__log(TP_LOG_DEBUG, "%s: cannot drop a record cut short: %s",
			j->path, strerror(errno));
	j->lines = total;
	if (total > j->keep &&
	    !(err = copy_tail(j, in, total - j->keep, whole)))
		j->lines = j->keep;
	fclose(in);
	return err;
}

tp_err_t tp_decision_trim(tp_decision_journal_t *j)
{
	int lock;
	bool busy;
	tp_err_t err = TP_OK;

	if (!j || !j->path)
		return TP_ERR_INVAL;
	lock = lock_take(j, &busy);
	if (!busy)
		err = trim_locked(j);
	if (lock >= 0)
		close(lock); /* releases the flock */
	return err;
}

tp_err_t tp_decision_append(tp_decision_journal_t *j, const char *line,
			    size_t len)
{
	tp_err_t err = TP_OK;
	ssize_t w = -1;
	int fd, lock;
	bool busy;

	if (!j || !j->path || !line)
		return TP_ERR_INVAL;
	lock = lock_take(j, &busy);
	if (j->lines == SIZE_MAX && !busy)
		(void)trim_locked(j);
	if ((err = open_regular(j->path, O_WRONLY | O_APPEND | O_CREAT, &fd))) {
		tp__log(TP_LOG_DEBUG, "%s: %s", j->path, tp_file_strerror(err));
		j->lines = SIZE_MAX;
		goto out;
	}
	protect(j, fd);
	do {
		w = write(fd, line, len);
	} while (w < 0 && errno == EINTR);
	if (close(fd) == 0 && w == (ssize_t)len) {
		if (j->lines != SIZE_MAX)
			j->lines++;
	} else {
		/* a part may be there: the next append's trim drops it */
		j->lines = SIZE_MAX;
		err = TP_ERR_IO;
	}
	if (j->lines != SIZE_MAX && j->lines > 2 * j->keep && !busy)
		(void)trim_locked(j);
out:
	if (lock >= 0)
		close(lock);
	return err;
}
