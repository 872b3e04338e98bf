/*
 * topoplace.conf: one table drives defaults, parsing, validation and the
 * dump, so a key cannot be documented but not parsed or the reverse.
 *
 * Parsing fills a scratch struct and swaps it in only at the end: a bad
 * file leaves the caller's configuration as it was, which is what a
 * controller re-reading its files on `scontrol reconfigure` needs.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "tp_plugin.h"

#define OFF(field) offsetof(tp_pconf_t, field)
/* A topoplace.conf is a dozen lines; more than this is not one. */
#define PCONF_FILE_MAX (1u << 20)

static const tp_pconf_key_t keys[] = {
    {"FabricFile", TP_PCONF_STRING, NULL, 0, 0,
     "fabric JSON written by `topoplace discover` or `fabric generate`; "
     "unset: flat topology",
     OFF(fabric_file), NULL},
    {"RankNodes", TP_PCONF_BOOL, "yes", 0, 1,
     "order Slurm's node table by the fabric (task ranks follow it)",
     OFF(rank_nodes), NULL},
    {"NVLinkLevel", TP_PCONF_BOOL, "yes", 0, 1,
     "multi-node NVLink domains become the leaf switches", OFF(nvlink_level),
     NULL},
    {"SetSwitches", TP_PCONF_BOOL, "yes", 0, 1,
     "job_submit/topoplace sets --switches on multi-node jobs",
     OFF(set_switches), NULL},
    {"SwitchWait", TP_PCONF_UINT, "300", 0, 7 * 86400,
     "seconds a job may wait for its switch count (wait4switch)",
     OFF(switch_wait), NULL},
    {"MinNodes", TP_PCONF_UINT, "2", 2, 1000000,
     "smallest job (nodes) given --switches", OFF(min_nodes), NULL},
    {"MaxNodes", TP_PCONF_UINT, "0", 0, 1000000,
     "largest job (nodes) given --switches; 0: no limit", OFF(max_nodes), NULL},
    {"GpusPerNode", TP_PCONF_UINT, "0", 0, 1024,
     "GPUs per node for --gpus jobs; 0: from the nodes' Gres",
     OFF(gpus_per_node), NULL},
    {"Partitions", TP_PCONF_LIST, NULL, 0, 0,
     "partitions whose jobs job_submit/topoplace touches and the 24.11 "
     "selection takes (others: topology/tree's); unset: all",
     OFF(partitions), NULL},
    {"Selection", TP_PCONF_STRING, "engine", 0, 0,
     "who picks a job's nodes in native mode (Slurm 24.11); "
     "tree: every job goes to Slurm's own topology/tree selection on the "
     "same switch table, timed the same way, for comparing decision time",
     OFF(selection), "engine|tree"},
    {"LinkState", TP_PCONF_STRING, NULL, 0, 0,
     "topoplace-state/1 file (its links only: health, background_gbps) "
     "the native selection prices candidates with, re-read when it "
     "changes; Slurm 22.05 reads it on reconfigure and leaves hosts "
     "whose every cable is down out of the switch table; the SPANK "
     "plugin (conf=) prices each step's plan on it; unset: healthy "
     "links",
     OFF(link_state), NULL},
    {"CommShare", TP_PCONF_UINT, "30", 0, 100,
     "percent of a running multi-node job's time spent in all-reduce: "
     "its traffic is background for later choices; 0: none",
     OFF(comm_share), NULL},
    {"NicsByRate", TP_PCONF_BOOL, "no", 0, 1,
     "the SPANK plugin's plans split each host's data over its ranks by "
     "their NICs' cable rates (topoplace plan --nics-by-rate), so a NIC "
     "at half width carries half a share instead of setting the host's "
     "pace, and the native selection prices that (the cost model's "
     "--nics-by-rate); no: evenly",
     OFF(nics_by_rate), NULL},
    {"PlanMaxRanks", TP_PCONF_UINT, "131072", 1, 16777216,
     "the SPANK plugin's largest step (tasks) given a plan: a plan has an "
     "entry a task, which every node of the step builds and writes under "
     "basedir (131072: 16,384 hosts x 8, about 10 MB); a larger step runs "
     "without one (one info line)",
     OFF(plan_max_ranks), NULL},
    {"PlanPriceMaxHosts", TP_PCONF_UINT, "2048", 0, 1000000,
     "the SPANK plugin's largest step (hosts) whose plan carries the cost "
     "model's all-reduce predictions for its ranks (idle fabric, cables "
     "as the fabric file has them) and recommends the fastest algorithm "
     "per size, which libtopoplace-coll's auto runs (2048: 2,048 hosts x "
     "8 cost a node 60 ms and 54 MB at peak on a 16,384-host fabric, "
     "within the plugin's 64 MB; 16,384 hosts would not be); a larger "
     "step's plan, or every one with 0, recommends by rule (tree up to 1 "
     "MiB on more than two hosts, else hierarchical where a host's ranks "
     "drive several NICs, else ring)",
     OFF(plan_price_max_hosts), NULL},
    {"PriceBudget", TP_PCONF_UINT, "8", 0, 1000,
     "cost-model predictions a native selection may spend pricing "
     "candidate host sets (96: the simulator's, and the most one "
     "decision spends: more prices as 96); 0: the structural choice "
     "alone",
     OFF(price_budget), NULL},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

size_t tp_pconf_nkeys(void)
{
	return NKEYS;
}

const tp_pconf_key_t *tp_pconf_key(size_t i)
{
	return i < NKEYS ? &keys[i] : NULL;
}

static bool parse_bool(const char *v, bool *b_p)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*b_p = true;
			return true;
		}
		if (!strcasecmp(v, no[i])) {
			*b_p = false;
			return true;
		}
	}
	return false;
}

/* NULL when v is a list of names, else why not (static). Blanks are
 * refused: Slurm's partition names have none, so "gpu, cpu" (quoted)
 * would keep an item " cpu" that never matches. */
static const char *list_bad(const char *v)
{
	if (!*v || *v == ',')
		return "empty item in list";
	for (; *v; v++) {
		if (*v == ',' && (v[1] == ',' || v[1] == '\0'))
			return "empty item in list";
		if (*v == ' ' || *v == '\t')
			return "blank in list (items are separated by ',' "
			       "alone)";
	}
	return NULL;
}

/* v among k->choices ("a|b"), without case; *canon_p gets the table's
 * spelling. */
static bool choice_ok(const tp_pconf_key_t *k, const char *v,
		      const char **canon_p, size_t *len_p)
{
	const char *p = k->choices;
	size_t vlen = strlen(v);

	while (p && *p) {
		size_t n = strcspn(p, "|");
		if (n == vlen && n && !strncasecmp(p, v, n)) {
			*canon_p = p;
			*len_p = n;
			return true;
		}
		p += n;
		if (*p == '|')
			p++;
	}
	return false;
}

/* Store one value; *why_p gets a static reason on failure. */
static tp_err_t set_value(tp_pconf_t *c, const tp_pconf_key_t *k, const char *v,
			  const char **why_p)
{
	void *field = (char *)c + k->offset;
	unsigned long long n;
	char *end, *s;

	switch (k->type) {
	case TP_PCONF_STRING:
	case TP_PCONF_LIST:
		if (!*v) {
			*why_p = "empty value";
			return TP_ERR_PARSE;
		}
		if (k->type == TP_PCONF_LIST && (*why_p = list_bad(v)))
			return TP_ERR_PARSE;
		if (k->type == TP_PCONF_STRING && k->choices) {
			const char *canon;
			size_t len;

			if (!choice_ok(k, v, &canon, &len)) {
				*why_p = "expected one of ";
				return TP_ERR_PARSE;
			}
			if (!(s = tp_malloc(len + 1)))
				return TP_ERR_NOMEM;
			memcpy(s, canon, len);
			s[len] = '\0';
		} else if (!(s = tp_strdup(v))) {
			return TP_ERR_NOMEM;
		}
		tp_free(*(char **)field);
		*(char **)field = s;
		return TP_OK;
	case TP_PCONF_BOOL:
		if (!parse_bool(v, (bool *)field)) {
			*why_p = "expected yes or no";
			return TP_ERR_PARSE;
		}
		return TP_OK;
	case TP_PCONF_UINT:
		if (!isdigit((unsigned char)*v)) {
			*why_p = "expected a non-negative integer";
			return TP_ERR_PARSE;
		}
		errno = 0;
		n = strtoull(v, &end, 10);
		if (*end) {
			*why_p = "expected a non-negative integer";
			return TP_ERR_PARSE;
		}
		if (errno || n < k->min || n > k->max) {
			*why_p = "out of range";
			return TP_ERR_RANGE;
		}
		*(uint32_t *)field = (uint32_t)n;
		return TP_OK;
	}
	*why_p = "bad key type";
	return TP_ERR_INVAL;
}

void tp_pconf_defaults(tp_pconf_t *c)
{
	const char *why;

	memset(c, 0, sizeof(*c));
	/* defaults are literals of the table; only NOMEM can fail, and then
	 * the string keys stay unset, which is their default anyway */
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].def)
			(void)set_value(c, &keys[i], keys[i].def, &why);
}

void tp_pconf_free(tp_pconf_t *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].type == TP_PCONF_STRING ||
		    keys[i].type == TP_PCONF_LIST) {
			char **p = (char **)((char *)c + keys[i].offset);
			tp_free(*p);
			*p = NULL;
		}
	memset(c, 0, sizeof(*c));
}

static const tp_pconf_key_t *find_key(const char *name, size_t n)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strlen(keys[i].name) == n &&
		    !strncasecmp(keys[i].name, name, n))
			return &keys[i];
	return NULL;
}

static tp_err_t failf(char **err_p, tp_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tp_err_t failf(char **err_p, tp_err_t err, const char *fmt, ...)
{
	va_list ap;

	if (err_p && err != TP_ERR_NOMEM) {
		va_start(ap, fmt);
		*err_p = tp_oneline(tp_vasprintf(fmt, ap));
		va_end(ap);
	}
	return err;
}

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* The '=' of a "Key=" (blanks before '=' allowed) at p, the key's length
 * in *klen_p; NULL when p holds none. */
static char *key_eq(char *p, size_t *klen_p)
{
	char *k = p;

	while (*p && *p != '=' && !blank(*p) && *p != '#')
		p++;
	*klen_p = (size_t)(p - k);
	while (blank(*p))
		p++;
	return *p == '=' && *klen_p ? p : NULL;
}

/* One "Key=Value" at *pp; advances *pp past it. seen[key]: the line it
 * was given on, 0 when not yet. */
static tp_err_t parse_pair(const char *name, size_t lineno, char **pp,
			   tp_pconf_t *c, size_t *seen, char **err_p)
{
	const tp_pconf_key_t *k;
	const char *why = "";
	char *p = *pp, *key = p, *val, *vend, save;
	size_t klen;
	tp_err_t err;

	/* blanks around '=', as Slurm's key-value expression takes them */
	char *eq = key_eq(p, &klen);
	if (!eq) {
		p += klen;
		while (*p && !blank(*p))
			p++;
		return failf(err_p, TP_ERR_PARSE,
			     "%s:%zu: '%.*s': expected "
			     "Key=Value",
			     name, lineno, (int)(p - key), key);
	}
	p = eq;
	k = find_key(key, klen);
	if (!k)
		return failf(err_p, TP_ERR_PARSE, "%s:%zu: unknown key '%.*s'",
			     name, lineno, (int)klen, key);
	if (seen[k - keys])
		return failf(err_p, TP_ERR_PARSE, "%s:%zu: %s given twice",
			     name, lineno, k->name);
	seen[k - keys] = lineno;
	p++;
	/* blanks after '=' lead to the value, unless the next word is a
	 * pair of its own ("FabricFile= RankNodes=no": empty) */
	char *v = p;
	size_t vlen;
	while (blank(*v))
		v++;
	if (!key_eq(v, &vlen))
		p = v;
	if (*p == '"') {
		val = ++p;
		if (!(vend = strchr(p, '"')))
			return failf(err_p, TP_ERR_PARSE,
				     "%s:%zu: %s: unterminated quote", name,
				     lineno, k->name);
		p = vend + 1;
		if (*p && !blank(*p) && *p != '#')
			return failf(err_p, TP_ERR_PARSE,
				     "%s:%zu: %s: text after closing quote",
				     name, lineno, k->name);
	} else {
		val = p;
		while (*p && !blank(*p) && *p != '#')
			p++;
		vend = p;
	}
	save = *vend;
	*vend = '\0';
	err = set_value(c, k, val, &why);
	if (err == TP_ERR_RANGE)
		err = failf(err_p, err, "%s:%zu: %s=%s: %s %u..%u", name,
			    lineno, k->name, val, why, k->min, k->max);
	else if (err)
		err = failf(err_p, err, "%s:%zu: %s=%s: %s%s", name, lineno,
			    k->name, val, why,
			    k->type == TP_PCONF_STRING && k->choices &&
				    err == TP_ERR_PARSE && *val
				? k->choices
				: "");
	*vend = save;
	*pp = p;
	return err;
}

tp_err_t tp_pconf_parse(const char *name, const char *text, tp_pconf_t *c,
			char **err_p)
{
	tp_pconf_t tmp;
	size_t seen[NKEYS] = {0};
	char *buf, *line, *next;
	size_t lineno = 0;
	tp_err_t err = TP_OK;

	if (!text || !c)
		return TP_ERR_INVAL;
	if (!name)
		name = "topoplace.conf";
	if (!(buf = tp_strdup(text)))
		return TP_ERR_NOMEM;
	tp_pconf_defaults(&tmp);
	for (line = buf; line && !err; line = next) {
		char *p = line;

		lineno++;
		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		while (!err) {
			while (blank(*p))
				p++;
			if (!*p || *p == '#')
				break;
			err = parse_pair(name, lineno, &p, &tmp, seen, err_p);
		}
	}
	tp_free(buf);
	/* each key is in range alone; together they must leave some job.
	 * The line is the later key's (one of them was given: the defaults
	 * agree) */
	if (!err && tmp.max_nodes && tmp.min_nodes > tmp.max_nodes) {
		size_t lmin = seen[find_key("MinNodes", 8) - keys];
		size_t lmax = seen[find_key("MaxNodes", 8) - keys];
		err = failf(err_p, TP_ERR_RANGE,
			    "%s:%zu: MinNodes=%u is above MaxNodes=%u (0: no "
			    "limit): no job would be touched",
			    name, lmin > lmax ? lmin : lmax, tmp.min_nodes,
			    tmp.max_nodes);
	}
	if (err) {
		tp_pconf_free(&tmp);
		return err;
	}
	tmp.fabric_line = seen[find_key("FabricFile", 10) - keys];
	tmp.link_state_line = seen[find_key("LinkState", 9) - keys];
	tp_pconf_free(c);
	*c = tmp;
	return TP_OK;
}

tp_err_t tp_pconf_load(const char *path, tp_pconf_t *c, char **err_p)
{
	char *buf = NULL;
	size_t len = 0;
	tp_err_t err;

	if (!path || !c)
		return TP_ERR_INVAL;
	/* as the daemons read it, `topoplace config --check` too: a FIFO
	 * would block slurmctld's (re)configuration */
	err = tp_file_read_regular(path, PCONF_FILE_MAX, &buf, &len);
	if (err == TP_ERR_RANGE) {
		if (err_p)
			*err_p = tp_asprintf("%s: larger than %u KiB", path,
					     PCONF_FILE_MAX >> 10);
		return err;
	}
	if (err) {
		if (err_p)
			*err_p =
			    tp_asprintf("%s: %s", path, tp_file_strerror(err));
		return err;
	}
	if (strlen(buf) != len) {
		tp_free(buf);
		if (err_p)
			*err_p = tp_asprintf("%s: NUL byte in file", path);
		return TP_ERR_PARSE;
	}
	err = tp_pconf_parse(path, buf, c, err_p);
	tp_free(buf);
	return err;
}

char *tp_pconf_path(const char *conf_path, const char *value)
{
	const char *slash = conf_path ? strrchr(conf_path, '/') : NULL;

	if (!value)
		return NULL;
	if (value[0] == '/' || !slash)
		return tp_strdup(value);
	return tp_asprintf("%.*s/%s", (int)(slash - conf_path), conf_path,
			   value);
}

bool tp_pconf_select_tree(const tp_pconf_t *c)
{
	return c && c->selection && !strcmp(c->selection, "tree");
}

bool tp_pconf_partition_enabled(const tp_pconf_t *c, const char *partition)
{
	const char *p;

	if (!c || !c->partitions)
		return true;
	if (!partition || !*partition)
		return false;
	/* any job partition that appears in the configured list */
	for (p = partition; *p;) {
		size_t n = strcspn(p, ",");
		const char *q = c->partitions;

		while (*q) {
			size_t m = strcspn(q, ",");
			if (m == n && n && !strncmp(p, q, n))
				return true;
			q += m;
			if (*q == ',')
				q++;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

char *tp_pconf_dump(const tp_pconf_t *c)
{
	tp_strbuf_t sb = {0};

	for (size_t i = 0; c && i < NKEYS; i++) {
		const void *field = (const char *)c + keys[i].offset;
		const char *s;

		switch (keys[i].type) {
		case TP_PCONF_STRING:
		case TP_PCONF_LIST:
			s = *(char *const *)field;
			if (!s)
				tp_strbuf_printf(&sb, "#%s=\n", keys[i].name);
			else if (strpbrk(s, " \t#"))
				tp_strbuf_printf(&sb, "%s=\"%s\"\n",
						 keys[i].name, s);
			else
				tp_strbuf_printf(&sb, "%s=%s\n", keys[i].name,
						 s);
			break;
		case TP_PCONF_BOOL:
			tp_strbuf_printf(&sb, "%s=%s\n", keys[i].name,
					 *(const bool *)field ? "yes" : "no");
			break;
		case TP_PCONF_UINT:
			tp_strbuf_printf(&sb, "%s=%u\n", keys[i].name,
					 *(const uint32_t *)field);
			break;
		}
	}
	tp_strbuf_append(&sb, "", 0);
	if (sb.failed) {
		tp_free(sb.buf);
		return NULL;
	}
	return sb.buf;
}

bool tp_filesig_log(tp_filesig_t *sig, tp_err_t err, const char *why)
{
	uint64_t h = tp_hash_str(why);

	if (err == sig->err && (!err || h == sig->err_hash))
		return false;
	sig->err = err;
	sig->err_hash = err ? h : 0;
	return true;
}

static bool sig_same(const tp_filesig_t *a, const tp_filesig_t *b)
{
	return a->exists == b->exists && a->regular == b->regular &&
	       a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns &&
	       a->ctime_s == b->ctime_s && a->ctime_ns == b->ctime_ns;
}

bool tp_filesig_update(const char *path, tp_filesig_t *sig)
{
	tp_filesig_t now;
	struct stat st;

	if (!path || !sig)
		return false;
	memset(&now, 0, sizeof(now));
	if (stat(path, &st) != 0) {
		if (errno != ENOENT && errno != ENOTDIR) {
			sig->look_errno = errno;
			return false;
		}
	} else {
		now.exists = true;
		now.regular = S_ISREG(st.st_mode);
		now.dev = (uint64_t)st.st_dev;
		now.ino = (uint64_t)st.st_ino;
		now.size = (int64_t)st.st_size;
		now.mtime_s = (int64_t)st.st_mtim.tv_sec;
		now.mtime_ns = (int64_t)st.st_mtim.tv_nsec;
		now.ctime_s = (int64_t)st.st_ctim.tv_sec;
		now.ctime_ns = (int64_t)st.st_ctim.tv_nsec;
	}
	sig->look_errno = 0;
	if (sig_same(&now, sig))
		return false;
	now.err = sig->err;
	now.err_hash = sig->err_hash;
	*sig = now;
	return true;
}

tp_err_t tp_pconf_load_fabric(const char *conf_path, size_t max_switches,
			      tp_pconf_t *c, tp_fabric_t **f_p, tp_stree_t *t,
			      char **why_p)
{
	char *msg = NULL, *fpath = NULL, *at = NULL;
	tp_fabric_t *f = NULL;
	tp_pconf_t conf;
	tp_err_t err;

	*why_p = NULL;
	memset(&conf, 0, sizeof(conf));
	err = tp_pconf_load(conf_path, &conf, &msg);
	if (err) {
		*why_p = err == TP_ERR_NOTFOUND
			     ? tp_asprintf("%s not found", conf_path)
			     : tp_strdup(msg ? msg : tp_strerror(err));
		goto out;
	}
	tp_pconf_free(c);
	*c = conf;
	if (!c->fabric_file) {
		err = TP_ERR_NOTFOUND;
		*why_p = tp_asprintf("%s sets no FabricFile", conf_path);
		goto out;
	}
	fpath = tp_pconf_path(conf_path, c->fabric_file);
	/* where the fabric's errors point: the line that names it */
	at = fpath ? tp_asprintf("%s:%zu: FabricFile %s", conf_path,
				 c->fabric_line, fpath)
		   : NULL;
	if (!at) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	/* every level-1 group is a switch of the tree: a fabric with more
	 * than the table takes is refused before the tree is built (its
	 * build grows with the square of the switches: 12 s for 64,000
	 * groups, with slurmctld's locks held) */
	if (!(err = tp_fabric_load_json_regular(fpath, &f, &msg)) &&
	    tp_fabric_groups_at(f, 1) > max_switches) {
		err = TP_ERR_RANGE;
		*why_p =
		    tp_asprintf("%s: %zu level-1 groups, more "
				"switches than %zu (Slurm's switch table "
				"grows with their square)",
				at, tp_fabric_groups_at(f, 1), max_switches);
		goto out;
	}
	if (err || (err = tp_stree_build(f, c->nvlink_level, t, &msg))) {
		/* the loader's message names the file itself */
		const char *m = msg ? msg : tp_strerror(err);
		*why_p = strncmp(m, fpath, strlen(fpath))
			     ? tp_asprintf("%s: %s", at, m)
			     : tp_asprintf("%s:%zu: FabricFile: %s", conf_path,
					   c->fabric_line, m);
		goto out;
	}
	if (t->nsw > max_switches) {
		err = TP_ERR_RANGE;
		*why_p = tp_asprintf("%s: %zu switches in its switch "
				     "tree, more than %zu (Slurm's switch "
				     "table grows with their square)",
				     at, t->nsw, max_switches);
		tp_stree_free(t);
		goto out;
	}
	*f_p = f;
	f = NULL;
out:
	if (err == TP_ERR_NOMEM && !*why_p)
		*why_p = tp_strdup(tp_strerror(err));
	tp_fabric_destroy(f);
	tp_free(fpath);
	tp_free(at);
	tp_free(msg);
	return err;
}
