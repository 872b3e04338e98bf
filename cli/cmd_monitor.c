/* topoplace fabric health (one sweep) and topoplace monitor (the daemon). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tp_health.h"

static const char health_usage[] =
    "Usage: topoplace fabric health --fabric FABRIC.json [--ca NAME] [--port "
    "N]\n"
    "                               [--interval S] [--all] [--json]\n"
    "\n"
    "One sweep of the fabric through the local IB port: PortInfo (state,\n"
    "active width and speed) and the PMA counters of both ends of every\n"
    "link of FABRIC.json (LIDs from one discovery at start), turned into\n"
    "link health by the rules of topoplace(1) (section HEALTH RULES). Without "
    "--interval the error\n"
    "counters are totals since their last reset (as ibqueryerrors reads\n"
    "them); with --interval S a second sweep S seconds later gives deltas\n"
    "and utilisation. Needs a subnet manager: PortInfo and PMA queries are\n"
    "LID-routed (without LIDs the sweep fails, exit status 1).\n"
    "\n"
    "  --fabric FILE   the fabric model (topoplace discover --live -o FILE)\n"
    "  --ca NAME       local HCA (default: the first)\n"
    "  --port N        its port, 1..254 (default or 0: the first active)\n"
    "  --interval S    seconds between two sweeps (0: one sweep)\n"
    "  --all           list every link, not only those with an alarm\n"
    "  --json          "
    "{\"format\":\"topoplace-health/1\",\"seen\",\"alarms\",\n"
    "                  "
    "\"links\":[{\"link\",\"health\",\"reason\",\"deltas\",...}]}\n"
    "                  (without --interval, \"deltas\" holds the totals)\n"
    "  -h, --help      this text\n"
    "Exit status: 0 every link healthy, 3 some link alarmed, 2 bad input,\n"
    "1 the sweep failed.\n";

static const char monitor_usage[] =
    "Usage: topoplace monitor --fabric FABRIC.json --state-out FILE\n"
    "                         [--interval S] [--prom FILE] [--ca NAME]\n"
    "                         [--port N] [--rediscover S] [--diff-out FILE]\n"
    "                         [--once]\n"
    "\n"
    "Sweep the fabric every S seconds (default 60) and write link health:\n"
    "FILE is a topoplace-state/1 file whose \"links\" the monitor owns (other\n"
    "fields of an existing FILE are kept) - the state `topoplace place\n"
    "--state` and the 24.11 plugin's LinkState= read. --prom writes a\n"
    "Prometheus textfile (node_exporter --collector.textfile.directory).\n"
    "Both are replaced atomically (temporary file, fsync, rename), mode\n"
    "0644 whatever the umask (slurmctld and node_exporter read them). Changes\n"
    "of a link's health are logged on stderr. SIGTERM / SIGINT end it after\n"
    "the current sweep; SIGHUP walks the fabric again at once (as a topology\n"
    "check that found a change does) and goes on. Needs a subnet manager,\n"
    "as `fabric health` does\n"
    "(without LIDs it exits 1 at start).\n"
    "\n"
    "Topology changes: every S seconds of --rediscover (default 300, 0: off)\n"
    "the state of every switch port is read (one query per port); when it\n"
    "differs from the state after the last walk, the fabric is walked again:\n"
    "nodes unreachable before get their LIDs (a node it cannot reach, its\n"
    "cable down, keeps the last LID, so its link is swept when the cable\n"
    "is back), and the walk is compared with FABRIC.json (as `fabric\n"
    "diff`). Links gone and hosts moved get health 0\n"
    "in FILE (a moved host is logged with the advice to regenerate the\n"
    "fabric; FABRIC.json is never rewritten); gone, back, moved and new\n"
    "links and links at another rate are logged on stderr (the sweep's\n"
    "rate rule prices the last), and --diff-out FILE receives the last\n"
    "comparison as topoplace-diff/1 JSON. The walk at start is compared too.\n"
    "A link end up but not answering (rule 1b) is asked its GUID and LID by\n"
    "directed route every 2nd such sweep (a subnet manager may have given it\n"
    "a new LID; then it is taken at once, for a switch on all its ports),\n"
    "and the fabric is walked at once after 8, 16, 32 ... such sweeps in a\n"
    "row, or when the route reaches another node (unless --rediscover is 0).\n"
    "\n"
    "  --fabric FILE   the fabric model (topoplace discover --live -o FILE)\n"
    "  --state-out FILE  the topoplace-state/1 file whose links it writes\n"
    "  --interval S    seconds between sweeps (default 60, at least 1)\n"
    "  --prom FILE     a Prometheus textfile of link health and utilisation\n"
    "  --ca NAME       local HCA (default: the first)\n"
    "  --port N        its port, 1..254 (default or 0: the first active)\n"
    "  --rediscover S  seconds between topology checks (0: never)\n"
    "  --diff-out FILE the last topology comparison (JSON)\n"
    "  --once          one sweep, write the files, exit (port state, width\n"
    "                  and speed: counters need two sweeps)\n"
    "  -h, --help      this text\n";

enum {
	O_FABRIC = 256,
	O_CA,
	O_PORT,
	O_INTERVAL,
	O_ALL,
	O_JSON,
	O_STATE,
	O_PROM,
	O_ONCE,
	O_REDISCOVER,
	O_DIFF_OUT
};

static const struct option opts[] = {
    {"fabric", required_argument, NULL, O_FABRIC},
    {"ca", required_argument, NULL, O_CA},
    {"port", required_argument, NULL, O_PORT},
    {"interval", required_argument, NULL, O_INTERVAL},
    {"all", no_argument, NULL, O_ALL},
    {"json", no_argument, NULL, O_JSON},
    {"state-out", required_argument, NULL, O_STATE},
    {"prom", required_argument, NULL, O_PROM},
    {"once", no_argument, NULL, O_ONCE},
    {"rediscover", required_argument, NULL, O_REDISCOVER},
    {"diff-out", required_argument, NULL, O_DIFF_OUT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

typedef struct args {
	const char *fabric, *ca, *state, *prom, *diff_out;
	long port;
	double interval, rediscover;
	bool all, json, once, monitor;
} args_t;

/* Both commands' options; false (usage printed or error) ends the run. */
/* --state-out names a file this command may rewrite: none yet, or one
 * without another "format" than topoplace-state/1 (a fabric model given
 * by mistake would lose its cables); checked before the first sweep. An
 * unreadable file is left to the write, which names it. */
static bool state_out_ours(const char *cmd, const char *path)
{
	char *old = NULL, *fmt = NULL;
	size_t len;
	bool ok = true;

	if (!tp_file_read(path, &old, &len) &&
	    tp_health_state_check(old, &fmt) == TP_ERR_FORMAT) {
		tp_cli_err("%s: --state-out %s: a %s file, not "
			   "topoplace-state/1: not overwritten",
			   cmd, path, fmt ? fmt : "foreign");
		ok = false;
	}
	tp_free(fmt);
	tp_free(old);
	return ok;
}

static bool parse(int argc, char **argv, args_t *a, int *rc_p)
{
	const char *usage = a->monitor ? monitor_usage : health_usage;
	const char *cmd = a->monitor ? "monitor" : "fabric health";
	int c;

	optind = 1;
	while ((c = tp_cli_opt_next(cmd, argc, argv, "h", opts)) != -1) {
		switch (c) {
		case O_FABRIC:
			a->fabric = optarg;
			break;
		case O_CA:
			a->ca = optarg;
			break;
		case O_PORT:
			if (!tp_cli_int("--port", optarg, 0, 254, &a->port))
				return false;
			break;
		case O_INTERVAL:
			if (!tp_cli_double("--interval", optarg, 0, 86400,
					   &a->interval))
				return false;
			break;
		case O_ALL:
			a->all = true;
			break;
		case O_JSON:
			a->json = true;
			break;
		case O_STATE:
			a->state = optarg;
			break;
		case O_PROM:
			a->prom = optarg;
			break;
		case O_ONCE:
			a->once = true;
			break;
		case O_REDISCOVER:
			if (!tp_cli_double("--rediscover", optarg, 0, 86400,
					   &a->rediscover))
				return false;
			break;
		case O_DIFF_OUT:
			a->diff_out = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			*rc_p = TP_EXIT_OK;
			return false;
		default:
			return false;
		}
		/* each command takes only its own options */
		bool mine = a->monitor
				? c != O_ALL && c != O_JSON
				: c != O_STATE && c != O_PROM && c != O_ONCE &&
				      c != O_REDISCOVER && c != O_DIFF_OUT;
		if (!mine) {
			tp_cli_err("%s: --%s is an option of %s (see --help)",
				   cmd, tp_cli_opt_name(opts, c),
				   a->monitor ? "fabric health" : "monitor");
			return false;
		}
	}
	if (!tp_cli_no_operand(cmd, argc, argv))
		return false;
	if (!a->fabric || (a->monitor && !a->state)) {
		tp_cli_err(
		    a->monitor
			? "monitor: --fabric and --state-out are required"
			: "fabric health: --fabric is required");
		return false;
	}
	if (a->monitor && !(a->interval >= 1)) {
		tp_cli_err("--interval: expected at least 1 s for monitor");
		return false;
	}
	return !a->state || state_out_ours(cmd, a->state);
}

/* Everything one sweep loop holds. */
typedef struct run {
	tp_fabric_t *f;
	tp_health_sweep_t *sw;
	size_t nl;
	tp_health_port_t *prev, *cur;
	bool *seen;
	tp_health_link_t *links;
	double *last_health;
	bool have_prev;
	struct timespec t_prev;
	tp_health_diff_t diff; /* model against the last walk */
	bool have_diff;
	bool diff_failed; /* the last comparison's --diff-out not written */
	bool check_now; /* the diff looked stale: check at the next sweep */
	double state_s; /* the last sweep's first pass, seconds */
	struct timespec t_check;
	bool once; /* monitor --once: one sweep judges no counter */
} run_t;

static void run_free(run_t *r)
{
	tp_health_sweep_destroy(r->sw);
	tp_fabric_destroy(r->f);
	free(r->prev);
	free(r->cur);
	free(r->seen);
	free(r->links);
	free(r->last_health);
	tp_health_diff_free(&r->diff);
}

static int run_init(run_t *r, const args_t *a)
{
	char *msg = NULL;
	int rc = TP_EXIT_INPUT;
	tp_err_t err;

	/* a file size limit fails the write (EFBIG, said and retried next
	 * interval) instead of killing the daemon */
	signal(SIGXFSZ, SIG_IGN);
	memset(r, 0, sizeof(*r));
	if (!(r->f = tp_cli_load(a->fabric, &rc)))
		return rc;
	r->nl = tp_fabric_nlinks(r->f);
	r->prev = calloc(2 * r->nl + 1, sizeof(*r->prev));
	r->cur = calloc(2 * r->nl + 1, sizeof(*r->cur));
	r->seen = calloc(2 * r->nl + 1, sizeof(*r->seen));
	r->links = calloc(r->nl + 1, sizeof(*r->links));
	r->last_health = malloc((r->nl + 1) * sizeof(*r->last_health));
	if (!r->prev || !r->cur || !r->seen || !r->links || !r->last_health) {
		tp_cli_err("out of memory");
		return TP_EXIT_FAIL;
	}
	for (size_t l = 0; l < r->nl; l++)
		r->last_health[l] = 1;
	err = tp_health_sweep_create(r->f, a->ca, (int)a->port, &r->sw, &msg);
	if (err) {
		tp_cli_err("%s", msg ? msg : tp_strerror(err));
		tp_free(msg);
		/* another fabric's file is bad input */
		return err == TP_ERR_UNSUPPORTED || err == TP_ERR_MISMATCH
			   ? TP_EXIT_INPUT
			   : TP_EXIT_FAIL;
	}
	return TP_EXIT_OK;
}

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static int sweep_failed(const run_t *r, tp_err_t err)
{
	tp_cli_err("%s", *tp_health_sweep_error(r->sw)
			     ? tp_health_sweep_error(r->sw)
			     : tp_strerror(err));
	return TP_EXIT_FAIL;
}

/* A sweep's first pass (tp_health_sweep_states) into r->cur, started at
 * *t0_p. */
static int sweep_states(run_t *r, struct timespec *t0_p)
{
	struct timespec t1;
	tp_err_t err;

	clock_gettime(CLOCK_MONOTONIC, t0_p);
	if ((err = tp_health_sweep_states(r->sw, r->cur, r->seen)))
		return sweep_failed(r, err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->state_s = since(t0_p, &t1);
	return TP_EXIT_OK;
}

/* The second pass (counters) and the rules; *secs_p the whole sweep's
 * time. totals: one sweep (see tp_health.h): counters as totals, or not
 * judged (r->once). */
static int sweep_finish(run_t *r, bool totals, const struct timespec *t0,
			double *secs_p)
{
	struct timespec t1;
	double interval = 0;
	tp_err_t err;

	if ((err = tp_health_sweep_counters(r->sw, r->cur, r->seen)))
		return sweep_failed(r, err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*secs_p = since(t0, &t1);
	for (size_t i = 0; i < 2 * r->nl; i++)
		tp_health_saturated_since(r->have_prev ? &r->prev[i] : NULL,
					  &r->cur[i]);
	if (totals && !r->have_prev) {
		/* one sweep judges no silence (rules 1b and 1c want two):
		 * the made-up previous one saw every end, with counters at
		 * zero (fabric health: totals, as ibqueryerrors reads them)
		 * or, for monitor --once, at what they are now: their
		 * lifetime totals (one LinkDowned since the last clear, a
		 * symbol counter at its maximum for months) would price
		 * links the daemon finds healthy into the state file the
		 * placement reads */
		for (size_t i = 0; i < 2 * r->nl; i++) {
			r->prev[i] = r->cur[i];
			if (!r->once)
				memset(r->prev[i].c, 0, sizeof(r->prev[i].c));
			r->prev[i].seen = true;
		}
	} else if (r->have_prev) {
		interval = since(&r->t_prev, t0);
	}
	for (size_t l = 0; l < r->nl; l++)
		tp_health_eval(NULL, tp_fabric_link(r->f, l),
			       r->have_prev || totals ? &r->prev[2 * l] : NULL,
			       &r->cur[2 * l], &r->seen[2 * l], interval,
			       &r->links[l]);
	tp_health_port_t *t = r->prev;
	r->prev = r->cur;
	r->cur = t;
	r->have_prev = true;
	r->t_prev = *t0;
	return TP_EXIT_OK;
}

/* One sweep and the rules (both passes). */
static int sweep(run_t *r, bool totals, double *secs_p)
{
	struct timespec t0;
	int rc = sweep_states(r, &t0);

	return rc ? rc : sweep_finish(r, totals, &t0, secs_p);
}

static bool port_state_moved(const tp_health_port_t *a,
			     const tp_health_port_t *b)
{
	return a->seen != b->seen || a->up != b->up || a->width != b->width ||
	       a->lane_gbps != b->lane_gbps;
}

/* After the first pass: the links whose state (seen, up, width, speed)
 * moved since the last sweep are judged on it at once, with their last
 * counters (no deltas: rules 1, 1b and 2), and true is returned when
 * there are any; the others keep the last sweep's verdict until the
 * counters are in. */
static bool judge_moved_links(run_t *r, const struct timespec *t0)
{
	bool any = false;

	if (!r->have_prev)
		return false;
	for (size_t l = 0; l < r->nl; l++) {
		const tp_health_port_t *prev = &r->prev[2 * l];
		tp_health_port_t cur[2];

		if (!port_state_moved(&r->cur[2 * l], &prev[0]) &&
		    !port_state_moved(&r->cur[2 * l + 1], &prev[1]))
			continue;
		for (int e = 0; e < 2; e++) {
			cur[e] = r->cur[2 * l + e];
			cur[e].counters = prev[e].counters;
			cur[e].wide_data = prev[e].wide_data;
			memcpy(cur[e].c, prev[e].c, sizeof(cur[e].c));
		}
		tp_health_eval(NULL, tp_fabric_link(r->f, l), prev, cur,
			       &r->seen[2 * l], since(&r->t_prev, t0),
			       &r->links[l]);
		any = true;
	}
	return any;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	nanosleep(&ts, NULL);
}

/* A health as the state file has it, at least two decimals: 1.00, 0.75,
 * 0.125 (the 1x-of-8x rule; "%.2f" printed 0.12). */
static const char *health_str(double h, char *buf, size_t len)
{
	snprintf(buf, len, "%.2f", h);
	if (fabs(strtod(buf, NULL) - h) > 1e-9)
		snprintf(buf, len, "%.6g", h);
	return buf;
}

static void print_table(const run_t *r, bool all)
{
	size_t seen = 0, alarms = 0;

	printf("%-6s %6s  %-32s %-32s %s\n", "link", "health", "a", "b",
	       "reason");
	for (size_t l = 0; l < r->nl; l++) {
		const tp_health_link_t *h = &r->links[l];
		const tp_link_t *k = tp_fabric_link(r->f, l);
		char a[96], b[96];

		if (!h->seen)
			continue;
		seen++;
		alarms += h->alarm;
		if (!h->alarm && !all)
			continue;
		for (int e = 0; e < 2; e++) {
			const char *d =
			    k->kind[e] == TP_NODE_SWITCH
				? tp_fabric_switch(r->f, k->node[e])->desc
				: tp_fabric_ca(r->f, k->node[e])->desc;
			snprintf(e ? b : a, sizeof(a), "%s:%d", d, k->port[e]);
		}
		char hs[32];
		printf("%-6zu %6s  %-32s %-32s %s\n", l,
		       health_str(h->health, hs, sizeof(hs)), a, b, h->reason);
	}
	printf("%zu of %zu links seen, %zu with alarms\n", seen, r->nl, alarms);
}

int tp_cmd_fabric_health(int argc, char **argv)
{
	args_t a = {0};
	run_t r;
	int rc = TP_EXIT_INPUT;
	double secs;
	char *json = NULL;
	bool alarm = false;

	if (!parse(argc, argv, &a, &rc))
		return rc;
	if ((rc = run_init(&r, &a)) == TP_EXIT_OK &&
	    (rc = sweep(&r, a.interval <= 0, &secs)) == TP_EXIT_OK &&
	    a.interval > 0) {
		sleep_s(a.interval);
		rc = sweep(&r, false, &secs);
	}
	if (rc == TP_EXIT_OK) {
		for (size_t l = 0; l < r.nl; l++)
			alarm |= r.links[l].alarm;
		if (!a.json) {
			print_table(&r, a.all);
		} else if (tp_health_links_json(r.f, r.links, &json)) {
			tp_cli_err("out of memory");
			rc = TP_EXIT_FAIL;
		} else {
			puts(json);
		}
		if (rc == TP_EXIT_OK && alarm)
			rc = TP_EXIT_CHANGED;
	}
	tp_free(json);
	run_free(&r);
	return rc;
}

/* Replace path with text atomically: readers see the old file or the new
 * one, never a half-written one. */
static bool write_atomic(const char *path, const char *text)
{
	/* a unique name: monitors on several hosts may share a directory
	 * (NFS), where process ids repeat */
	char *tmp = tp_asprintf("%s.tmp.XXXXXX", path);
	size_t n = strlen(text);
	int fd;
	bool ok;

	if (!tmp)
		return false;
	fd = mkstemp(tmp);
	ok = fd >= 0 && fchmod(fd, 0644) == 0;
	/* a short write (a file size limit, a full disk) leaves errno as it
	 * was: say ENOSPC then, not the last call's "Success" */
	for (size_t done = 0; ok && done < n;) {
		ssize_t w = write(fd, text + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			ok = false;
		} else {
			done += (size_t)w;
		}
	}
	ok = ok && fsync(fd) == 0;
	if (fd >= 0 && close(fd))
		ok = false;
	if (ok && rename(tmp, path))
		ok = false;
	if (!ok) {
		tp_cli_err("%s: cannot write: %s", path, strerror(errno));
		unlink(tmp);
	}
	tp_free(tmp);
	return ok;
}

static bool write_state_locked(const run_t *r, const char *path);

/* Monitors of several rails may share one state file, each rewriting its
 * own links' entries: the read, merge and rename run under an exclusive
 * lock on PATH.lock, so one monitor's update is not undone by another's
 * written from the file as it was before. Without a lock file (it cannot
 * be made, or is a symbolic link: never followed, as root) the update
 * goes on unlocked. */
static bool write_state(const run_t *r, const char *path)
{
	char *lock = tp_asprintf("%s.lock", path);
	int fd =
	    lock ? open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)
		 : -1;
	bool ok;

	if (fd >= 0)
		while (flock(fd, LOCK_EX) && errno == EINTR)
			;
	ok = write_state_locked(r, path);
	if (fd >= 0)
		close(fd); /* releases the lock */
	tp_free(lock);
	return ok;
}

static bool write_state_locked(const run_t *r, const char *path)
{
	char *old = NULL, *json = NULL;
	size_t len;
	struct stat st;
	tp_err_t err;
	bool ok;

	/* as root: never read through a link planted where others can
	 * write (its target's keys would be copied into a 0644 file), nor
	 * wait on a FIFO */
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		tp_cli_err("%s: a symbolic link: not followed (the state file "
			   "is replaced by rename, so give its real path)",
			   path);
		return false;
	}
	err = tp_file_read_regular(path, TP_FILE_MAX, &old, &len);
	if (err && err != TP_ERR_NOTFOUND) {
		tp_cli_err("%s: %s", path, tp_file_strerror(err));
		return false;
	}
	if (tp_health_state_other_fabric(old, r->f))
		tp_cli_err("warning: %s: written for another fabric: its link "
			   "entries dropped",
			   path);
	err = tp_health_state_json(old, r->f, r->links, &json);
	if (err == TP_ERR_FORMAT) {
		tp_free(old);
		tp_cli_err("%s: another format than topoplace-state/1: not "
			   "overwritten",
			   path);
		return false;
	}
	if (err == TP_ERR_PARSE) {
		/* Not ours to repair, but the placement must not keep stale
		 * health: start the file afresh and say so. */
		tp_cli_err("warning: %s: not one JSON object with unique "
			   "keys; rewritten with link health only",
			   path);
		err = tp_health_state_json(NULL, r->f, r->links, &json);
	}
	if (err) {
		tp_free(old);
		tp_cli_err("%s: %s", path, tp_strerror(err));
		return false;
	}
	/* Unchanged health leaves the file alone: readers that re-read on
	 * change (the 24.11 plugin's LinkState=) see a new file only when a
	 * link's health moved. */
	ok = (old && !strcmp(old, json)) || write_atomic(path, json);
	tp_free(old);
	tp_free(json);
	return ok;
}

static volatile sig_atomic_t stop, hup;

/* SIGHUP (systemctl reload, a terminal gone): walk the fabric again at
 * once, as a topology check that found a change does, and go on (the
 * default action ended the monitor silently, exit 129, which systemd's
 * Restart=on-failure takes for a clean stop). */
static void on_hup(int sig)
{
	(void)sig;
	hup = 1;
}

/* The first signal ends the loop after the current sweep; a second one
 * ends the process at once (a sweep blocked on a fabric that stopped
 * answering). */
static void on_signal(int sig)
{
	if (stop)
		_exit(128 + sig);
	stop = 1;
}

static void log_changes(run_t *r)
{
	for (size_t l = 0; l < r->nl; l++) {
		const tp_health_link_t *h = &r->links[l];
		if (!h->seen || h->health == r->last_health[l])
			continue;
		char from[32], to[32];
		fprintf(stderr,
			"topoplace monitor: link %zu health %s -> %s: %s\n", l,
			health_str(r->last_health[l], from, sizeof(from)),
			health_str(h->health, to, sizeof(to)), h->reason);
		r->last_health[l] = h->health;
	}
}

/* Both files from one sweep; false when either could not be written (the
 * reason is on stderr). */
static bool write_outputs(const run_t *r, const args_t *a, double secs)
{
	struct timespec now;
	char *prom = NULL;
	bool ok = write_state(r, a->state);

	clock_gettime(CLOCK_REALTIME, &now);
	if (a->prom) {
		if (tp_health_prom_text(r->f, r->links, secs, r->state_s,
					(double)now.tv_sec + now.tv_nsec / 1e9,
					&prom)) {
			tp_cli_err("%s: out of memory", a->prom);
			ok = false;
		} else if (!write_atomic(a->prom, prom)) {
			ok = false;
		}
	}
	tp_free(prom);
	return ok;
}

/* The last walk against the model: changes logged (against the previous
 * comparison, so that links back are named) and --diff-out written. */
static void compare_walk(run_t *r, const args_t *a)
{
	const tp_fabric_t *live = tp_health_sweep_live(r->sw);
	const tp_health_diff_t *prev = r->have_diff ? &r->diff : NULL;
	tp_health_diff_t d;
	char *text = NULL, *json = NULL;
	tp_err_t err;

	if (!live)
		return;
	if ((err = tp_health_diff(r->f, live, &d)) ||
	    tp_health_diff_text(r->f, live, &d, prev, &text) ||
	    (a->diff_out && tp_health_diff_json(r->f, live, &d, prev, &json))) {
		/* a walk sharing no node with the model fails before this
		 * (tp_health_sweep_create, _rediscover) */
		tp_cli_err("topology diff: %s",
			   err == TP_ERR_MISMATCH
			       ? "none of the fabric file's switches and CAs "
				 "is on the fabric walked"
			       : "out of memory");
		r->diff_failed = a->diff_out != NULL;
		tp_health_diff_free(&d);
		tp_free(text);
		/* the old comparison indexes the previous walk's links */
		tp_health_diff_free(&r->diff);
		r->have_diff = false;
		return;
	}
	for (char *line = text, *nl; *line; line = nl + 1) {
		if (!(nl = strchr(line, '\n')))
			break;
		*nl = '\0';
		fprintf(stderr, "topoplace monitor: %s\n", line);
	}
	r->diff_failed = a->diff_out && !write_atomic(a->diff_out, json);
	tp_health_diff_free(&r->diff);
	r->diff = d;
	r->have_diff = true;
	tp_free(text);
	tp_free(json);
}

/* Every --rediscover seconds: a walk when the switch ports changed (the
 * cheap check) or the last comparison was found stale by a sweep; at
 * once when the sweeps want one (an end silent for long, see
 * tp_health_sweep_walk_wanted). */
static void maybe_rediscover(run_t *r, const args_t *a, bool stale)
{
	struct timespec now;
	bool asked = hup, wanted = tp_health_sweep_walk_wanted(r->sw);
	bool changed = stale || wanted || asked;
	tp_err_t err;

	hup = 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!asked && (a->rediscover <= 0 ||
		       (!wanted && since(&r->t_check, &now) < a->rediscover)))
		return;
	r->t_check = now;
	if (!changed && (err = tp_health_sweep_changed(r->sw, &changed)))
		tp_cli_err("warning: topology check: %s", tp_strerror(err));
	if (!changed)
		return;
	if (asked)
		fprintf(stderr, "topoplace monitor: SIGHUP: walking the "
				"fabric again\n");
	else if (wanted)
		fprintf(stderr,
			"topoplace monitor: walking the fabric: a link "
			"end silent for %d+ sweeps, or its directed route "
			"reaching another node\n",
			TP_HEALTH_WALK_MISSES);
	const tp_fabric_t *live = tp_health_sweep_live(r->sw);
	if ((err = tp_health_sweep_rediscover(r->sw))) {
		bool walked = tp_health_sweep_live(r->sw) != live;
		tp_cli_err("warning: re-discovery failed: %s%s",
			   *tp_health_sweep_error(r->sw)
			       ? tp_health_sweep_error(r->sw)
			       : tp_strerror(err),
			   walked ? "" : "; the last walk's LIDs kept");
		/* the walk went through (the port's reopening failed): the
		 * comparison must index the new live fabric */
		if (walked)
			compare_walk(r, a);
		return;
	}
	compare_walk(r, a);
}

/* A daemon outlives a bad sweep or a full disk: the failure is logged,
 * the files keep their last good content, the next interval tries again.
 * Only --once reports it in the exit status. */
static int monitor_loop(run_t *r, const args_t *a)
{
	struct sigaction sa;
	struct timespec t0, now;
	double secs;
	int rc = TP_EXIT_OK;
	bool stale = false;

	/* before the first walk, which can take a while: a SIGHUP then
	 * ended the monitor silently */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the sleep ends */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	compare_walk(r, a);
	clock_gettime(CLOCK_MONOTONIC, &r->t_check);
	r->once = a->once;
	while (!stop) {
		maybe_rediscover(r, a, stale);
		rc = sweep_states(r, &t0);
		/* a link gone down or slower is in the state file a third of
		 * a sweep in, not after the counters: the worst case from a
		 * change to the file is one interval plus the first pass (a
		 * failed write is said on stderr and tried again below) */
		if (!rc && judge_moved_links(r, &t0)) {
			/* the last walk's verdicts first: a moved host's
			 * link, re-judged up, must not read healthy until
			 * the end of the sweep puts it at 0 again (the
			 * 24.11 plugin re-reads the file within 250 ms) */
			if (r->have_diff)
				tp_health_diff_apply(
				    r->f, tp_health_sweep_live(r->sw), &r->diff,
				    r->cur, r->links, NULL);
			(void)write_state(r, a->state);
		}
		if (!rc)
			rc = sweep_finish(r, a->once, &t0, &secs);
		if (!rc) {
			/* r->prev: this sweep's ports (sweep() swapped) */
			stale = false;
			if (r->have_diff)
				tp_health_diff_apply(
				    r->f, tp_health_sweep_live(r->sw), &r->diff,
				    r->prev, r->links, &stale);
			log_changes(r);
			if (!write_outputs(r, a, secs) || r->diff_failed)
				rc = TP_EXIT_FAIL;
		}
		if (a->once)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		double left = a->interval - since(&t0, &now);
		if (left > 0 && !stop)
			sleep_s(left);
	}
	return a->once ? rc : TP_EXIT_OK;
}

int tp_cmd_monitor(int argc, char **argv)
{
	args_t a = {.interval = 60, .rediscover = 300, .monitor = true};
	run_t r;
	int rc = TP_EXIT_INPUT;

	if (!parse(argc, argv, &a, &rc))
		return rc;
	if ((rc = run_init(&r, &a)) == TP_EXIT_OK)
		rc = monitor_loop(&r, &a);
	run_free(&r);
	return rc;
}
