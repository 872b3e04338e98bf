/* topoplace: the admins' and developers' front door. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "tp_sched.h"

bool tp_cli_quiet;

static const char usage[] =
    "Usage: topoplace COMMAND [ARGS]\n"
    "\n"
    "Topology-aware placement for Slurm on InfiniBand + NVLink GPU clusters.\n"
    "\n"
    "Commands:\n"
    "  discover        build a fabric model from ibnetdiscover dumps, live\n"
    "                  libibnetdisc discovery, node hwloc XML / nvidia-smi\n"
    "  fabric          generate, show, list hosts, write topology.conf,\n"
    "                  link health from the fabric's PMA counters\n"
    "  monitor         sweep link health every N s into the state file\n"
    "                  the placement reads, and a Prometheus textfile\n"
    "  place           choose hosts for one job and explain the choice\n"
    "  simulate        compare placement policies on a job trace\n"
    "  trace           a trace from sacct or a jobcomp log as\n"
    "                  simulate's CSV\n"
    "  cost            predict a collective's time on given hosts\n"
    "  draw            the fabric and its jobs as an SVG picture\n"
    "  plan            a job's ring, trees, groups, NIC affinity and\n"
    "                  recommended all-reduce per message size\n"
    "  show            what Slurm jobs got: span, predicted time, why\n"
    "  config          topoplace.conf: dump the keys, check a file\n"
    "  nccl-topo       node hwloc XML -> NCCL_TOPO_FILE per host\n"
    "  help [COMMAND]  show help for a command\n"
    "\n"
    "Options:\n"
    "  -h, --help      this text\n"
    "  -V, --version   print the version\n"
    "\n"
    "Run 'topoplace COMMAND --help' for a command's options; man "
    "topoplace(1).\n"
    "Environment: TOPOPLACE_COLL_SHM=0, as a job that runs libtopoplace-coll\n"
    "without its host segment sets it: every prediction prices the\n"
    "hierarchical all-reduce's host phases as rings, as the library runs\n"
    "them then; TOPOPLACE_COLL_SEGMENT (bytes, as the library reads it)\n"
    "sets the pipeline segment plan and show price a step's hierarchical\n"
    "all-reduce with.\n"
    "Exit status: 0 success; 1 a failure that is not the input's (out of\n"
    "memory, a write, sweep or Slurm query that failed) or, from place, a\n"
    "job that does not fit now; 2 bad input or usage, or, from place, a\n"
    "job that can never fit the fabric; 3 from fabric health when a link\n"
    "has an alarm, from fabric diff when the cabling or a link's rate\n"
    "changed.\n";

void tp_cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs("topoplace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

bool tp_cli_put_json(cJSON *o)
{
	char *txt = o ? cJSON_Print(o) : NULL;

	cJSON_Delete(o);
	if (txt)
		puts(txt);
	cJSON_free(txt);
	return txt != NULL;
}

int tp_cli_exit_code(tp_err_t err)
{
	switch (err) {
	case TP_OK:
		return TP_EXIT_OK;
	case TP_ERR_NOMEM:
		return TP_EXIT_FAIL;
	default:
		return TP_EXIT_INPUT;
	}
}

void tp_cli_cost_params(tp_cost_params_t *p)
{
	const char *shm = getenv("TOPOPLACE_COLL_SHM");

	tp_cost_params_defaults(p);
	p->host_ring = shm && !strcmp(shm, "0");
}

bool tp_cli_plan_segment(const char *cmd, tp_cost_params_t *p)
{
	const char *v = getenv("TOPOPLACE_COLL_SEGMENT");
	size_t seg;

	if (tp_sched_segment_parse(v, &seg)) {
		char q[128];
		tp_cli_err(
		    "%s: TOPOPLACE_COLL_SEGMENT='%s' is not a byte count "
		    "0..%zu",
		    cmd, tp_quote(q, sizeof(q), v, 100),
		    TP_SCHED_HIER_SEGMENT_MAX);
		return false;
	}
	p->hier_segment = (double)seg;
	return true;
}

size_t tp_cli_weak_hosts(const tp_fabric_t *f)
{
	tp_state_t *s = tp_state_create(f);
	size_t n = s ? tp_state_weak_hosts(s) : SIZE_MAX;

	tp_state_destroy(s);
	return n;
}

uint32_t *tp_cli_node_weights(const char *cmd, const tp_fabric_t *f,
			      const tp_state_t *s, const char *arg, int *rc_p)
{
	uint32_t *w = NULL;
	char *why = NULL;
	tp_err_t err;

	if (!strcmp(arg, "health")) {
		tp_state_t *own = s ? NULL : tp_state_create(f);
		err = s || own ? tp_node_weights_health(s ? s : own,
							TP_NODE_WEIGHT_WEAK, &w)
			       : TP_ERR_NOMEM;
		tp_state_destroy(own);
	} else {
		err = tp_node_weights_load(f, arg, &w, &why);
	}
	if (err) {
		tp_cli_err("%s: %s", cmd, why ? why : tp_strerror(err));
		*rc_p = tp_cli_exit_code(err);
	}
	tp_free(why);
	return err ? NULL : w;
}

bool tp_cli_path_given(const char *what, const char *path)
{
	if (path && *path)
		return true;
	tp_cli_err("%s: empty file name", what);
	return false;
}

tp_fabric_t *tp_cli_load(const char *path, int *rc_p)
{
	tp_fabric_t *f = NULL;
	char *msg = NULL;
	tp_err_t err;

	if (!tp_cli_path_given("fabric", path)) {
		*rc_p = TP_EXIT_INPUT;
		return NULL;
	}
	if ((err = tp_fabric_load_json(path, &f, &msg))) {
		tp_cli_err("%s", msg ? msg : tp_strerror(err));
		tp_free(msg);
		*rc_p = tp_cli_exit_code(err);
		return NULL;
	}
	return f;
}

int tp_cli_write(const char *path, const char *text)
{
	FILE *fp;
	size_t n = strlen(text);

	if (!path || strcmp(path, "-") == 0) {
		if (fwrite(text, 1, n, stdout) != n || fflush(stdout)) {
			tp_cli_err("stdout: %s", strerror(errno));
			return TP_EXIT_FAIL;
		}
		return TP_EXIT_OK;
	}
	fp = fopen(path, "w");
	if (!fp) {
		tp_cli_err("%s: cannot write: %s", path, strerror(errno));
		return TP_EXIT_FAIL;
	}
	if (fwrite(text, 1, n, fp) != n) {
		tp_cli_err("%s: write failed: %s", path, strerror(errno));
		fclose(fp);
		return TP_EXIT_FAIL;
	}
	if (fclose(fp)) {
		tp_cli_err("%s: write failed: %s", path, strerror(errno));
		return TP_EXIT_FAIL;
	}
	return TP_EXIT_OK;
}

int tp_cli_check_output(const char *opt, const char *path)
{
	struct stat st;
	char *dir;
	int ok;

	if (!path || !strcmp(path, "-"))
		return TP_EXIT_OK;
	if (!stat(path, &st)) {
		/* a directory is writable but is no file to write */
		if (S_ISDIR(st.st_mode)) {
			tp_cli_err("%s %s: cannot write: %s", opt, path,
				   strerror(EISDIR));
			return TP_EXIT_FAIL;
		}
		ok = !access(path, W_OK);
	} else {
		if (!(dir = tp_strdup(path)))
			return TP_EXIT_FAIL;
		char *slash = strrchr(dir, '/');
		if (slash == dir)
			dir[1] = '\0';
		else if (slash)
			*slash = '\0';
		ok = !access(slash ? dir : ".", W_OK | X_OK);
		tp_free(dir);
	}
	if (ok)
		return TP_EXIT_OK;
	tp_cli_err("%s %s: cannot write: %s", opt, path, strerror(errno));
	return TP_EXIT_FAIL;
}

bool tp_cli_int(const char *opt, const char *s, long lo, long hi, long *v_p)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		tp_cli_err("%s: expected an integer %ld..%ld, got '%s'", opt, lo,
			   hi, s);
		return false;
	}
	*v_p = v;
	return true;
}

bool tp_cli_double(const char *opt, const char *s, double lo, double hi,
		   double *v_p)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		tp_cli_err("%s: expected a number %g..%g, got '%s'", opt, lo, hi,
			   s);
		return false;
	}
	*v_p = v;
	return true;
}

bool tp_cli_bytes(const char *opt, const char *s, double lo, double *v_p)
{
	if (!tp_parse_bytes(s, lo, TP_BYTES_MAX, v_p)) {
		tp_cli_err("%s: expected a size %g .. 1P such as 1G or 262144 "
			   "(binary units K, M, G, T, P), got '%s'",
			   opt, lo, s);
		return false;
	}
	return true;
}

tp_state_t *tp_cli_load_state(const tp_fabric_t *f, const char *path, int *rc_p)
{
	tp_state_t *s = NULL;
	char *msg = NULL;
	tp_err_t err;

	if (!path)
		return tp_state_create(f);
	if ((err = tp_state_load_json(f, path, &s, &msg))) {
		tp_cli_err("%s", msg ? msg : tp_strerror(err));
		tp_free(msg);
		*rc_p = tp_cli_exit_code(err);
		return NULL;
	}
	return s;
}

const char *tp_cli_size(double bytes, char *buf, size_t len)
{
	static const char *const unit[] = {"B",	  "KiB", "MiB",
					   "GiB", "TiB", "PiB"};
	int u = 0;

	while (bytes >= 1024 && u < 5) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, len, "%g %s", bytes, unit[u]);
	return buf;
}

bool tp_cli_trace_has_nodes(const char *what, const char *path,
			    const tp_trace_t *t)
{
	for (size_t j = 0; j < t->njobs; j++)
		if (tp_trace_job_nodes(t, j))
			return true;
	if (!strcmp(t->format, "csv") || !strcmp(t->format, "synthetic"))
		tp_cli_err("%s: %s is %s, not Slurm's records with node lists "
			   "(sacct -P with NodeList, or a jobcomp log)",
			   what, path, t->format);
	else
		tp_cli_err("%s: %s (%s) records no job's node list (add "
			   "NodeList to sacct's --format)",
			   what, path, t->format);
	return false;
}

static void log_stderr(tp_log_level_t level, const char *msg, void *arg)
{
	(void)arg;
	if (level <= TP_LOG_WARN && !tp_cli_quiet)
		fprintf(stderr, "topoplace: %s%s\n",
			level == TP_LOG_WARN ? "warning: " : "", msg);
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} cmds[] = {
    {"discover", tp_cmd_discover}, {"fabric", tp_cmd_fabric},
    {"place", tp_cmd_place},	   {"simulate", tp_cmd_simulate},
    {"cost", tp_cmd_cost},	   {"draw", tp_cmd_draw},
    {"plan", tp_cmd_plan},	   {"show", tp_cmd_show},
    {"config", tp_cmd_config},	   {"nccl-topo", tp_cmd_nccl_topo},
    {"trace", tp_cmd_trace},	   {"monitor", tp_cmd_monitor},
};

/* What went to stdout, flushed: a write that failed (a full disk, a
 * closed pipe) is the command's failure, not a silent success. */
static int finish(int rc)
{
	if ((fflush(stdout) || ferror(stdout)) && rc == TP_EXIT_OK) {
		tp_cli_err("stdout: %s",
			   errno ? strerror(errno) : "write failed");
		return TP_EXIT_FAIL;
	}
	return rc; /* a command that failed said why */
}

static int run(int argc, char **argv)
{
	const char *cmd;

	tp_log_set(log_stderr, NULL);
	if (argc < 2) {
		fputs(usage, stderr);
		return TP_EXIT_INPUT;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		fputs(usage, stdout);
		return TP_EXIT_OK;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf("topoplace %s\n", PACKAGE_VERSION);
		return TP_EXIT_OK;
	}
	if (!strcmp(cmd, "help")) {
		/* help's own --help, as every command has one */
		if (argc < 3 || !strcmp(argv[2], "-h") ||
		    !strcmp(argv[2], "--help")) {
			fputs(usage, stdout);
			return TP_EXIT_OK;
		}
		char *hargv[] = {argv[2], "--help", NULL};
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (!strcmp(argv[2], cmds[i].name))
				return cmds[i].fn(2, hargv);
		tp_cli_err("help: unknown command '%s'", argv[2]);
		return TP_EXIT_INPUT;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmd, cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	tp_cli_err("unknown command '%s' (see topoplace --help)", cmd);
	return TP_EXIT_INPUT;
}

int main(int argc, char **argv)
{
	int rc = run(argc, argv);

	errno = 0;
	return finish(rc);
}
