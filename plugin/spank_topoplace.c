/*
 * spank_topoplace: at step start, the plan for the hosts the step got,
 * in a job-private file, plus the environment that points the job's
 * processes at it (public <slurm/spank.h> only).
 *
 * plugstack.conf:
 *   optional /path/spank_topoplace.so fabric=/PATH | conf=/PATH
 *            [basedir=/DIR] [mode=auto|off|verbose] [topodir=/DIR]
 *            [sysfs=DIR]
 * fabric= names the fabric JSON, conf= a topoplace.conf whose FabricFile
 * does (a relative one beside that file, as slurmctld reads it); basedir
 * (default /run/topoplace) holds one directory per job, "%h" in it is
 * this host's hostname (several slurmd on one machine, each with a
 * hostname of its own, as network namespaces give them; nodes that share
 * one NodeHostname would share the directory, and one node's step exit
 * would remove the plan another still reads);
 * topodir holds NCCL topology files as <host>.xml; sysfs (default /sys,
 * "%h" as in basedir, for tests) is where this node's InfiniBand devices
 * are listed (class/infiniband/<dev>/node_guid). Users override the
 * mode with srun/sbatch --topoplace=auto|off|verbose.
 *
 * Environment of every task of an srun step (never of the batch script):
 *   TOPOPLACE_PLAN        the plan file (topoplace-plan/1 JSON)
 *   TOPOPLACE_NODE_RANK   this host's position in the plan's ring
 *   TOPOPLACE_RANK        global rank in plan order: the tasks of the
 *                         hosts before this one in the ring (the step's
 *                         real layout, SLURM_STEP_TASKS_PER_NODE) plus
 *   TOPOPLACE_LOCAL_RANK  the task's local id on this host
 *   TOPOPLACE_COLL_HCA    a task whose GPU (SLURM_STEP_GPUS: its own, or
 *                         the local-th of the step's here) is not the one
 *                         the plan gave its local rank: that GPU's
 *                         nearest HCA, which libtopoplace-coll leaves by
 *   TOPOPLACE_WORLD_SIZE  the step's task count
 *   NCCL_IB_HCA           "=dev,dev,...": this host's HCAs in rail order,
 *                         exact names ("mlx5_1" alone would also match
 *                         mlx5_10..mlx5_17), as the node's kernel names
 *                         them: the fabric's CAs found by node GUID under
 *                         sysfs; unset (one info line) when none is
 *   NCCL_CROSS_NIC        0 on a rail-optimized fabric (rails > 1: a
 *                         ring or tree must stay on its rail); 1 when the
 *                         step's hosts have several HCAs (the plan's
 *                         rails) on one fat tree (any NIC reaches any
 *                         peer alike), whatever this host has; unset when
 *                         they have one
 *   NCCL_TOPO_FILE        topodir/<host>.xml when that file is an NCCL
 *                         topology (<system> root) whose <net> devices
 *                         are all on the node, and some HCA is; an hwloc
 *                         XML is not converted
 *   TOPOPLACE_COLL_HCA_NAMES  fabric=local for this host's ranks' HCAs
 *                         the node names otherwise than the fabric (the
 *                         plan file keeps the fabric's: every rank checks
 *                         it is the same plan), for libtopoplace-coll
 *   TOPOPLACE_STEP        "<job>.<step>": the step these were set for
 *   TOPOPLACE_SET         the names of the above the plugin set there
 * A variable already in the step's environment is kept (one info line),
 * except what another step's plugin set (TOPOPLACE_STEP names another
 * step: an srun run from inside a task inherits its step's values, and
 * its own step gets fresh ones, or none where no plan is made for it).
 * The ranks and values are computed by runtime/ (tp_plan_step_env, unit
 * tested without Slurm); this file reads Slurm's items, writes the plan
 * file and sets what that returns.
 *
 * Notes:
 * - Remote context only. The plan is built in init_post_opt, which
 *   slurmstepd calls as root before it drops privileges and forks the
 *   tasks: the directory can be made and chowned, and spank_setenv there
 *   reaches every task. Per-task ranks are set in task_init, inside each
 *   task's process just before exec.
 * - The batch step (and extern/interactive steps) is skipped: srun copies
 *   the batch script's environment into its steps, where per-node values
 *   of the batch host would then pass for the user's own.
 * - SLURMD_NODENAME is not in a step's environment at this point; this
 *   host is the S_JOB_NODEID-th name of SLURM_STEP_NODELIST.
 * - Files: basedir is root's (created 0711 when missing; refused when a
 *   symlink, not root's, or writable by others); basedir/job<ID> is
 *   root's, 0711 (the user can neither list it nor add files: /run is a
 *   small tmpfs of the node's daemons); plan-step<STEP>.json in it 0600,
 *   the user's. Everything below basedir goes through directory
 *   descriptors with O_NOFOLLOW, and the file with O_CREAT|O_EXCL, so a
 *   link planted by the user is never followed. The step's file goes at
 *   step exit, the directory with the last step; the job epilog sweeps
 *   what a crashed step left (our file names only).
 * - Never fails or delays a job: every callback returns 0; any problem
 *   is one slurmd log line and the environment is left as it was.
 * - Option callbacks may run more than once: they only store the value.
 *   A bad --topoplace value is refused by srun/sbatch (local context,
 *   before anything is submitted); in slurmstepd it is ignored.
 * - The plan file's ranks are the step's, whatever its layout: each host
 *   has as many as it runs tasks (tp_plan_opts_t.ranks; tasks past a
 *   host's GPUs have none), so libtopoplace-coll accepts the plan with
 *   TOPOPLACE_WORLD_SIZE.
 * - Cost per node and step: reading the fabric JSON (40-50 ms for a
 *   1,024-host 8-rail fabric of 2.7 MB on the 2-core test box, ~1 ms for
 *   8 hosts), the plan (~1 ms at 1,024 hosts) and, for a step of at most
 *   PlanPriceMaxHosts hosts (2,048 by default), the cost model's context
 *   and three predictions (~50 ms for 1,024 hosts x 8 on a 16,384-host
 *   fabric, tp_runtime.h; at 2,048 x 8 there a 54 MB peak in all,
 *   runtime/test_step_mem_16k).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(default)
#include <slurm/spank.h>
SPANK_PLUGIN(topoplace, 1);
#pragma GCC visibility pop

#include "tp_plugin.h"
#include "tp_runtime.h"

#define TP_EXPORT __attribute__((visibility("default")))

/* slurm.h's: step ids above this are batch, extern, interactive, ... */
#define MAX_NORMAL_STEP_ID 0xfffffff0u
#define DEFAULT_BASEDIR	   "/run/topoplace"
#define DEFAULT_SYSFS	   "/sys"
#define PLUGIN		   "spank/topoplace"

enum mode { MODE_AUTO = 0, MODE_OFF = 1, MODE_VERBOSE = 2 };

/* plugstack.conf arguments, parsed in slurm_spank_init */
static struct {
	bool ok;
	const char *fabric;
	const char *conf;
	const char *basedir;
	const char *topodir;
	const char *sysfs;
	int mode;
} args;

/* --topoplace, -1 when not given */
static int user_mode = -1;

/* What init_post_opt left for task_init and exit (one step per process). */
static struct {
	bool active;
	bool keep_rank, keep_local, keep_hca;
	/* this host's GPUs' HCAs and the plan's per local rank: a task whose
	 * GPU is not its local rank's gets its own (TOPOPLACE_COLL_HCA);
	 * the step's SLURM_STEP_GPUS here, before Slurm binds any per task
	 * (NULL: none) */
	tp_step_gpus_t *gpus;
	char *step_gpus;
	bool verbose;
	uint32_t rank_base;
	uint32_t jobid, stepid;
	bool wrote;
	char *summary;
} cur;

static int parse_mode(const char *s)
{
	if (!s || !strcmp(s, "auto"))
		return MODE_AUTO;
	if (!strcmp(s, "off"))
		return MODE_OFF;
	if (!strcmp(s, "verbose"))
		return MODE_VERBOSE;
	return -1;
}

static int opt_cb(int val, const char *arg, int remote)
{
	int m = parse_mode(arg);

	if (m < 0) {
		if (remote) /* never fails a job: the default applies */
			return 0;
		slurm_error("--topoplace=%s: expected auto, off or verbose",
			    arg);
		return -1;
	}
	user_mode = m;
	return 0;
}

static struct spank_option topoplace_opt = {
    .name = "topoplace",
    .arginfo = "auto|off|verbose",
    .usage = "topology-aware plan and NCCL settings at step start "
	     "(verbose: print them on each node's first task)",
    .has_arg = 2,
    .val = 0,
    .cb = opt_cb,
};

/* The core's messages: debug only, the adapter logs the one line. */
static void log_sink(tp_log_level_t level, const char *msg, void *arg)
{
	slurm_debug("%s: %s", PLUGIN, msg);
}

static bool parse_args(int ac, char **av)
{
	args.mode = MODE_AUTO;
	args.basedir = DEFAULT_BASEDIR;
	args.sysfs = DEFAULT_SYSFS;
	for (int i = 0; i < ac; i++) {
		const char *a = av[i];

		/* paths absolute: slurmstepd's working directory is the
		 * user's (a relative NCCL_TOPO_FILE would be theirs too) */
		if (!strncmp(a, "fabric=", 7) && a[7] == '/')
			args.fabric = a + 7;
		else if (!strncmp(a, "conf=", 5) && a[5] == '/')
			args.conf = a + 5;
		else if (!strncmp(a, "basedir=", 8) && a[8] == '/')
			args.basedir = a + 8;
		else if (!strncmp(a, "topodir=", 8) && a[8] == '/')
			args.topodir = a + 8;
		else if (!strncmp(a, "sysfs=", 6) && a[6] == '/')
			args.sysfs = a + 6;
		else if (!strncmp(a, "mode=", 5) && parse_mode(a + 5) >= 0)
			args.mode = parse_mode(a + 5);
		else {
			slurm_error("%s: plugstack.conf: bad argument '%s' "
				    "(fabric=/PATH conf=/PATH basedir=/DIR "
				    "mode=auto|off|verbose topodir=/DIR "
				    "sysfs=/DIR): "
				    "inactive",
				    PLUGIN, a);
			return false;
		}
	}
	if (!args.fabric == !args.conf) {
		slurm_error("%s: plugstack.conf: give one of fabric= and "
			    "conf=: inactive",
			    PLUGIN);
		return false;
	}
	return true;
}

TP_EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR ||
	    ctx == S_CTX_REMOTE) {
		if (spank_option_register(sp, &topoplace_opt) != ESPANK_SUCCESS)
			slurm_error("%s: cannot register --topoplace", PLUGIN);
	}
	if (ctx == S_CTX_REMOTE) {
		tp_log_set(log_sink, NULL);
		args.ok = parse_args(ac, av);
	}
	return ESPANK_SUCCESS;
}

/* ---- environment --------------------------------------------------------- */

/* A job environment variable into a new string (NULL: unset, error or
 * longer than 1 MiB: the step's variables come from the client, and a
 * node list or task layout of a real step is a few KB). */
static char *getenv_dup(spank_t sp, const char *name)
{
	size_t len = 4096;

	for (;;) {
		char *buf = malloc(len);
		spank_err_t rc;

		if (!buf)
			return NULL;
		rc = spank_getenv(sp, name, buf, (int)len);
		if (rc == ESPANK_SUCCESS)
			return buf;
		free(buf);
		if (rc != ESPANK_NOSPACE || len >= (1u << 20))
			return NULL;
		len *= 2;
	}
}

static bool env_has(spank_t sp, const char *name)
{
	char c[1];
	spank_err_t rc = spank_getenv(sp, name, c, sizeof(c));

	return rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE;
}

/* ---- variables another step set ----------------------------------------
 *
 * srun copies its environment into the step it starts, so a step started
 * from inside a task (srun in a script run by srun, srun --overlap from a
 * task, srun in `srun --pty bash`) inherits its outer step's variables:
 * its plan path, world size and ranks. Each step's variables name the
 * step (TOPOPLACE_STEP) and list what the plugin set (TOPOPLACE_SET); a
 * step that finds another step's mark drops those before it starts. What
 * the user set, which the outer step kept, is not in the list and stays.
 */
#define STEP_VAR "TOPOPLACE_STEP"
#define SET_VAR	 "TOPOPLACE_SET"
#define SET_LEN_MAX 4096 /* its longest value read */
#define SET_MAX	    64	 /* its most entries read */

/* A name the plugin may have set: TOPOPLACE_* or NCCL_*, [A-Z0-9_]. */
static bool our_var(const char *name, size_t len)
{
	if (len == 0 || len > 64 ||
	    (strncmp(name, "TOPOPLACE_", 10) && strncmp(name, "NCCL_", 5)))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
			return false;
	return true;
}

/* The value's mark in TOPOPLACE_SET (32-bit FNV-1a, 8 hex digits: the
 * marks a running older plugin wrote too): a value the user set again
 * inside the task differs from it. */
static void value_mark(const char *v, char out[9])
{
	uint32_t h = 2166136261u;

	for (; *v; v++)
		h = (h ^ (unsigned char)*v) * 16777619u;
	snprintf(out, 9, "%08x", h);
}

/* TOPOPLACE_SET's entries: NAME:MARK (the value set), or NAME alone for
 * the per-task ranks. An entry whose variable now holds another value
 * (the user set it again inside the task) stays: what the user sets
 * wins. */
static void drop_inherited(spank_t sp, uint32_t jobid, uint32_t stepid)
{
	char mark[32], *prev = getenv_dup(sp, STEP_VAR), set[SET_LEN_MAX];
	char dropped[512] = "";

	snprintf(mark, sizeof(mark), "%u.%u", jobid, stepid);
	if (!prev || !strcmp(prev, mark)) {
		free(prev);
		return;
	}
	/* The plugin writes a few hundred bytes and a few names: a longer
	 * list, or entries past SET_MAX, are the client's, not ours (each
	 * entry reads a value of up to 1 MiB: a list of thousands would
	 * keep slurmstepd busy for minutes) */
	if (spank_getenv(sp, SET_VAR, set, SET_LEN_MAX) != ESPANK_SUCCESS)
		set[0] = '\0';
	int entries = 0;
	for (const char *p = set; *p && entries < SET_MAX; entries++) {
		size_t len = strcspn(p, ","), nlen = strcspn(p, ",:");
		char name[65], want[9], got[9];
		if (our_var(p, nlen)) {
			char *v;
			memcpy(name, p, nlen);
			name[nlen] = '\0';
			/* NAME alone (the ranks), or NAME:MARK of 8 hex
			 * digits; anything else is not ours: kept */
			bool bare = nlen == len, marked = len - nlen == 9;
			want[0] = '\0';
			if (marked) {
				memcpy(want, p + nlen + 1, 8);
				want[8] = '\0';
			}
			v = bare || marked ? getenv_dup(sp, name) : NULL;
			if (v && marked)
				value_mark(v, got);
			if (v && (bare || !strcmp(got, want)) &&
			    spank_unsetenv(sp, name) == ESPANK_SUCCESS) {
				size_t l = strlen(dropped);
				snprintf(dropped + l, sizeof(dropped) - l,
					 "%s%s", l ? "," : "", name);
			}
			free(v);
		}
		p += len;
		p += *p == ',';
	}
	spank_unsetenv(sp, STEP_VAR);
	spank_unsetenv(sp, SET_VAR);
	/* prev is the client's text: digits and a dot, or it is not ours */
	slurm_info("%s: job %u step %u: dropped what step %s set (%s): "
		   "started from inside its task",
		   PLUGIN, jobid, stepid,
		   strspn(prev, "0123456789.") == strlen(prev) &&
			   strlen(prev) <= 24
		       ? prev
		       : "(another)",
		   dropped[0] ? dropped : "none");
	free(prev);
}

/* ---- the job directory ------------------------------------------------- */

/* tmpl with %h expanded into buf (size 4096); "" when too long. */
static const char *expand_host(const char *tmpl, char *buf)
{
	char host[256] = "";
	size_t o = 0;

	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	for (const char *p = tmpl; *p; p++) {
		const char *add = p;
		size_t len = 1;

		if (p[0] == '%' && p[1] == 'h') {
			add = host;
			len = strlen(host);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			p++;
		}
		if (o + len >= 4096) {
			buf[0] = '\0';
			return buf;
		}
		memcpy(buf + o, add, len);
		o += len;
	}
	buf[o] = '\0';
	return buf;
}

/* args.basedir with %h expanded, once per process ("" when too long).
 * Not inlined: messages print it with %s into short buffers, cut. */
static __attribute__((noinline)) const char *basedir(void)
{
	static char buf[4096];
	static bool done;

	if (!done)
		expand_host(args.basedir, buf);
	done = true;
	return buf;
}

/* args.sysfs the same way. */
static __attribute__((noinline)) const char *sysfs_root(void)
{
	static char buf[4096];
	static bool done;

	if (!done)
		expand_host(args.sysfs, buf);
	done = true;
	return buf;
}

/* basedir, made when missing; must be root's and not writable by others.
 * Writing, it is made searchable by all (mode | 0111): made under a umask
 * that strips that (init_post_opt runs before Slurm sets the user's
 * umask, under slurmd's), by this step or a concurrent one still before
 * its chmod, or by an older plugin, it would leave the job's user unable
 * to reach the plan TOPOPLACE_PLAN names. */
static int open_base(bool create, char *why, size_t whylen)
{
	const char *dir = basedir();
	struct stat st;
	int fd;

	if (create && mkdir(dir, 0711) < 0 && errno != EEXIST) {
		snprintf(why, whylen, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s: %s", dir,
			 errno == ELOOP ? "a symlink" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		snprintf(why, whylen,
			 "%s: not root's or writable by others: refused", dir);
		close(fd);
		return -1;
	}
	if (create && (st.st_mode & 0111) != 0111 &&
	    fchmod(fd, (st.st_mode & 07777) | 0111) < 0) {
		snprintf(why, whylen, "chmod %s: %s", dir, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* basedir/job<ID>: root's, 0711: the job's processes reach their plan
 * file by its name and can neither list the directory nor put files in
 * it (/run is a small tmpfs slurmd and munge share, and what a user left
 * there would outlive the job). One the user owns (an older plugin's)
 * is taken back. */
static int open_jobdir(int base, uint32_t jobid, uid_t uid, char *why,
		       size_t whylen)
{
	char name[32];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "job%u", jobid);
	if (mkdirat(base, name, 0711) < 0 && errno != EEXIST) {
		snprintf(why, whylen, "mkdir %s/%s: %s", basedir(), name,
			 strerror(errno));
		return -1;
	}
	fd =
	    openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s/%s: %s", basedir(), name,
			 errno == ELOOP || errno == ENOTDIR
			     ? "not a directory: refused"
			     : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || (st.st_uid != 0 && st.st_uid != uid)) {
		snprintf(why, whylen, "%s/%s: owned by uid %u: refused",
			 basedir(), name, (unsigned)st.st_uid);
		close(fd);
		return -1;
	}
	if ((st.st_uid != 0 || st.st_gid != 0) && fchown(fd, 0, 0) < 0) {
		snprintf(why, whylen, "chown %s/%s: %s", basedir(), name,
			 strerror(errno));
		close(fd);
		return -1;
	}
	if ((st.st_mode & 07777) != 0711 && fchmod(fd, 0711) < 0) {
		snprintf(why, whylen, "chmod %s/%s: %s", basedir(), name,
			 strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static bool write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0)
			errno = EIO; /* no error of its own: not a stale one */
		if (w <= 0)
			return false;
		buf += w;
		len -= (size_t)w;
	}
	return true;
}

/* The plan as basedir/job<ID>/plan-step<STEP>.json, the user's, 0600.
 * A concurrent step's exit may remove the (empty) directory between our
 * mkdir and create: ENOENT is retried. */
static bool write_plan(uint32_t jobid, uint32_t stepid, uid_t uid, gid_t gid,
		       const char *json, char *path, size_t pathlen, char *why,
		       size_t whylen)
{
	char name[48];

	snprintf(name, sizeof(name), "plan-step%u.json", stepid);
	for (int attempt = 0; attempt < 3; attempt++) {
		int base = open_base(true, why, whylen), dir, fd;
		bool ok;

		if (base < 0)
			return false;
		dir = open_jobdir(base, jobid, uid, why, whylen);
		close(base);
		if (dir < 0)
			return false;
		fd = openat(
		    dir, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST) {
			/* a requeued job's leftover (or a planted link:
			 * unlinkat removes the link, not its target) */
			unlinkat(dir, name, 0);
			fd = openat(dir, name,
				    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC,
				    0600);
		}
		if (fd < 0) {
			int e = errno;

			close(dir);
			snprintf(why, whylen, "create %s/job%u/%s: %s",
				 basedir(), jobid, name, strerror(e));
			if (e == ENOENT)
				continue;
			return false;
		}
		ok = write_all(fd, json, strlen(json)) &&
		     fchown(fd, uid, gid) == 0 && fchmod(fd, 0600) == 0;
		if (close(fd) < 0)
			ok = false;
		if (!ok) {
			snprintf(why, whylen, "write %s/job%u/%s: %s",
				 basedir(), jobid, name, strerror(errno));
			unlinkat(dir, name, 0);
			close(dir);
			return false;
		}
		int w = snprintf(path, pathlen, "%s/job%u/%s", basedir(), jobid,
				 name);
		if (w < 0 || (size_t)w >= pathlen) {
			/* what is wrong first: basedir alone may fill why */
			snprintf(why, whylen,
				 "plan path too long (%d bytes, at most %zu) "
				 "under %.200s...",
				 w, pathlen - 1, basedir());
			unlinkat(dir, name, 0);
			close(dir);
			return false;
		}
		close(dir);
		return true;
	}
	return false;
}

static bool our_file(const char *name)
{
	unsigned step;
	int n = 0;

	return sscanf(name, "plan-step%u.json%n", &step, &n) == 1 &&
	       name[n] == '\0';
}

/* Remove our files (one step's, or all with stepid == UINT32_MAX) and the
 * job directory when that leaves it empty (only root can put others
 * there: they stay, and so does the directory then). */
static void remove_plan(uint32_t jobid, uint32_t stepid)
{
	char why[256], jname[32];
	int base = open_base(false, why, sizeof(why)), dir;

	if (base < 0)
		return;
	snprintf(jname, sizeof(jname), "job%u", jobid);
	dir = openat(base, jname,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir >= 0) {
		if (stepid != UINT32_MAX) {
			char name[48];

			snprintf(name, sizeof(name), "plan-step%u.json",
				 stepid);
			unlinkat(dir, name, 0);
		} else {
			int dup_fd = dup(dir);
			DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
			struct dirent *e;

			if (!d && dup_fd >= 0)
				close(dup_fd);
			while (d && (e = readdir(d)))
				if (our_file(e->d_name))
					unlinkat(dir, e->d_name, 0);
			if (d)
				closedir(d);
		}
		close(dir);
		if (unlinkat(base, jname, AT_REMOVEDIR) < 0 &&
		    errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
			slurm_debug("%s: rmdir %s/%s: %s", PLUGIN, basedir(),
				    jname, strerror(errno));
	}
	close(base);
}

/* ---- step start ------------------------------------------------------------
 */

/* A real NCCL topology file is a few KB; more is not one. */
#define TOPO_FILE_MAX (1 << 20)

/* topodir/<host>.xml when it is an NCCL topology file (root <system>)
 * whose <net> devices are all on this node. */
static char *nccl_topo_file(const char *host, const tp_hca_map_t *map)
{
	char *path, *text;
	ssize_t n = 0, r = 0;
	int fd;

	if (!args.topodir ||
	    !(path = tp_asprintf("%s/%s.xml", args.topodir, host)))
		return NULL;
	if (!(text = tp_malloc(TOPO_FILE_MAX + 1))) {
		tp_free(path);
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	while (fd >= 0 && n < TOPO_FILE_MAX &&
	       (r = read(fd, text + n, (size_t)(TOPO_FILE_MAX - n))) > 0)
		n += r;
	if (fd >= 0)
		close(fd);
	text[n] = '\0';
	if (n > 0 && r >= 0 && n < TOPO_FILE_MAX &&
	    tp_hca_map_topo_root_ok(text)) {
		if (tp_hca_map_topo_ok(map, text)) {
			tp_free(text);
			return path;
		}
		slurm_info("%s: %s names InfiniBand devices this node does "
			   "not have: NCCL_TOPO_FILE not set",
			   PLUGIN, path);
	} else if (n > 0) {
		slurm_debug("%s: %s is not an NCCL topology file (an hwloc "
			    "XML is not converted): NCCL_TOPO_FILE not set",
			    PLUGIN, path);
	}
	tp_free(text);
	tp_free(path);
	return NULL;
}

static long msec_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1000L +
	       (t1.tv_nsec - t0->tv_nsec) / 1000000L;
}

/* One step start's inputs and what it builds, freed by step_free(). */
typedef struct step {
	uint32_t jobid, stepid, nodeid, ntasks, nnodes;
	uid_t uid;
	gid_t gid;
	char *nodelist, *tpn; /* SLURM_STEP_NODELIST, _TASKS_PER_NODE */
	char **names;	      /* the step's hosts, n of them */
	size_t n;
	uint32_t *counts; /* tasks per host */
	const char *me;	  /* names[nodeid] */
	tp_pconf_t conf;
	char *conf_fabric; /* FabricFile resolved beside the conf */
	char *links;	   /* LinkState, resolved, when the plan is priced
			    * on it */
	tp_step_gpus_t *gpus; /* for task_init (moved to cur) */
	tp_fabric_t *f;
	tp_plan_t *plan;
	tp_hca_map_t *hcas;
	char *topo, *json, *msg;
	tp_step_env_t env;
	bool host_ring; /* the job's TOPOPLACE_COLL_SHM=0: host phases as
			 * rings, and the plan priced so */
	size_t seg;	/* the job's TOPOPLACE_COLL_SEGMENT, as the library
			 * reads it (its default when unset or refused: the
			 * library then fails init naming it) */
	bool skip;	/* why is no fault: said at info level */
	char why[512], path[4096];
} step_t;

static void step_free(step_t *st)
{
	tp_step_env_free(&st->env);
	tp_hca_map_destroy(st->hcas);
	tp_free(st->topo);
	tp_free(st->json);
	tp_free(st->msg);
	tp_plan_destroy(st->plan);
	tp_fabric_destroy(st->f);
	tp_pconf_free(&st->conf);
	tp_free(st->conf_fabric);
	tp_free(st->links);
	tp_step_gpus_destroy(st->gpus);
	tp_free(st->counts);
	free(st->tpn);
	free(st->nodelist);
	if (st->names)
		tp_hostlist_free(st->names, st->n);
}

/* The step's hosts and tasks per host from the client's environment,
 * held to Slurm's own node count; false with st->why. */
static bool step_hosts(spank_t sp, step_t *st)
{
	char q[420];
	tp_err_t err;

	if (!(st->nodelist = getenv_dup(sp, "SLURM_STEP_NODELIST"))) {
		snprintf(st->why, sizeof(st->why), "no SLURM_STEP_NODELIST");
		return false;
	}
	/* the list is the client's: count it (bounded, nothing built) and
	 * hold it to Slurm's own node count before expanding it */
	if (spank_get_item(sp, S_JOB_NNODES, &st->nnodes) != ESPANK_SUCCESS)
		st->nnodes = 0;
	/* a heterogeneous step: the STEP_ variables name every component's
	 * nodes and tasks, Slurm's items this component's */
	char *num = getenv_dup(sp, "SLURM_STEP_NUM_NODES");
	unsigned long nn = num ? strtoul(num, NULL, 10) : 0;
	free(num);
	if (st->nnodes && nn && nn != st->nnodes) {
		snprintf(st->why, sizeof(st->why),
			 "a heterogeneous step (%lu nodes, this component's "
			 "%u): no plan for it",
			 nn, st->nnodes);
		st->skip = true;
		return false;
	}
	if ((err = tp_hostlist_count(st->nodelist, &st->n)) || !st->n ||
	    st->nodeid >= st->n || (st->nnodes && st->n > st->nnodes)) {
		snprintf(st->why, sizeof(st->why),
			 "SLURM_STEP_NODELIST \"%s\": %s (node id %u of %u)",
			 tp_quote(q, sizeof(q), st->nodelist, 200),
			 err ? tp_strerror(err)
			 : st->n > st->nnodes
			     ? "more hosts than the step's nodes"
			     : "too short",
			 st->nodeid, st->nnodes);
		return false;
	}
	if ((err = tp_hostlist_expand(st->nodelist, &st->names, &st->n))) {
		snprintf(st->why, sizeof(st->why), "SLURM_STEP_NODELIST: %s",
			 tp_strerror(err));
		return false;
	}
	st->me = st->names[st->nodeid];
	if (!(st->counts = tp_calloc(st->n, sizeof(*st->counts))) ||
	    !(st->tpn = getenv_dup(sp, "SLURM_STEP_TASKS_PER_NODE")) ||
	    tp_step_tasks_parse(st->tpn, st->counts, st->n)) {
		snprintf(st->why, sizeof(st->why),
			 "SLURM_STEP_TASKS_PER_NODE \"%s\" does not cover "
			 "%zu hosts",
			 tp_quote(q, sizeof(q), st->tpn, 100), st->n);
		return false;
	}
	/* the counts are the client's too: held to Slurm's task count
	 * before a plan is built for them (a plan of 4096 ranks a host
	 * is hundreds of MiB in root's slurmstepd) */
	uint64_t sum = 0;
	for (size_t i = 0; i < st->n; i++)
		sum += st->counts[i];
	if (st->ntasks && sum != st->ntasks) {
		snprintf(st->why, sizeof(st->why),
			 "SLURM_STEP_TASKS_PER_NODE \"%s\": %llu tasks, the "
			 "step has %u",
			 tp_quote(q, sizeof(q), st->tpn, 100),
			 (unsigned long long)sum, st->ntasks);
		return false;
	}
	/* the same on every node: the job's environment */
	char shm[2];
	st->host_ring = spank_getenv(sp, "TOPOPLACE_COLL_SHM", shm,
				     sizeof(shm)) == ESPANK_SUCCESS &&
			!strcmp(shm, "0");
	char seg[32];
	if (spank_getenv(sp, "TOPOPLACE_COLL_SEGMENT", seg, sizeof(seg)) !=
		ESPANK_SUCCESS ||
	    tp_sched_segment_parse(seg, &st->seg))
		st->seg = TP_SCHED_HIER_SEGMENT;
	return true;
}

/* The fabric: the plugin's fabric= file, or the conf's FabricFile (a
 * relative one beside the conf, as slurmctld reads it: slurmstepd's
 * working directory is not that), for a step of at most PlanMaxRanks
 * tasks and TP_PLAN_MAX_HOST_RANKS a host; false with st->why. */
static bool step_fabric(step_t *st)
{
	const char *path = args.fabric;
	tp_err_t err;

	if (!args.conf)
		tp_pconf_defaults(&st->conf); /* PlanMaxRanks, NicsByRate */
	else {
		if ((err = tp_pconf_load(args.conf, &st->conf, &st->msg))) {
			snprintf(st->why, sizeof(st->why), "%s",
				 st->msg ? st->msg : tp_strerror(err));
			return false;
		}
		if (!st->conf.fabric_file) {
			snprintf(st->why, sizeof(st->why), "%s: no FabricFile",
				 args.conf);
			return false;
		}
		if (!(path = st->conf_fabric =
			  tp_pconf_path(args.conf, st->conf.fabric_file))) {
			snprintf(st->why, sizeof(st->why), "%s: out of memory",
				 args.conf);
			return false;
		}
	}
	/* before the fabric: a step over the cap pays for neither */
	uint64_t ranks = 0;
	for (size_t i = 0; i < st->n; i++)
		ranks += st->counts[i];
	if (ranks > st->conf.plan_max_ranks) {
		/* an entry a task, built and written on every node: a CPU
		 * step of 16,384 x 512 tasks would be ~630 MB in /run */
		snprintf(st->why, sizeof(st->why),
			 "%llu tasks, more than PlanMaxRanks (%u): no plan "
			 "for it",
			 (unsigned long long)ranks, st->conf.plan_max_ranks);
		st->skip = true;
		return false;
	}
	/* a plan's own limit a host (srun --overcommit may go past it):
	 * expected as the cap above is, so said at info level too */
	if ((err = tp_step_tasks_check((const char *const *)st->names,
				       st->counts, st->n, &st->msg))) {
		snprintf(st->why, sizeof(st->why), "%s",
			 st->msg ? st->msg : tp_strerror(err));
		st->skip = err == TP_ERR_RANGE;
		return false;
	}
	if ((err = tp_fabric_load_json_regular(path, &st->f, &st->msg))) {
		if (st->msg) /* names the file */
			snprintf(st->why, sizeof(st->why), "fabric %s",
				 st->msg);
		else
			snprintf(st->why, sizeof(st->why), "fabric %s: %s",
				 path, tp_strerror(err));
		return false;
	}
	return true;
}

/* LinkState (topoplace.conf): the links the plan is priced on, as the
 * selection prices its candidates (health and traffic; not the running
 * jobs', which slurmctld alone knows). NULL without one, or when it
 * cannot be read or is larger than TP_STEP_LINKSTATE_MAX (the step
 * start's memory): one slurmd log line, and the plan priced on healthy,
 * idle links. Every rank runs rank 0's recommendations, so nodes that
 * read the file at different moments still agree. */
static tp_state_t *step_links(step_t *st)
{
	char *path, *why = NULL;
	tp_state_t *s = NULL;
	tp_err_t err;

	if (!st->conf.link_state)
		return NULL;
	if (!(path = tp_pconf_path(args.conf, st->conf.link_state)))
		return NULL;
	err = tp_state_load_json_capped(st->f, path, TP_STEP_LINKSTATE_MAX, &s,
					&why);
	/* why names the file */
	if (err == TP_ERR_NOTFOUND)
		slurm_info("%s: job %u step %u: LinkState %s: plan priced on "
			   "healthy links",
			   PLUGIN, st->jobid, st->stepid,
			   why ? why : tp_strerror(err));
	else if (err)
		slurm_error("%s: job %u step %u: LinkState %s: plan priced "
			    "on healthy links",
			    PLUGIN, st->jobid, st->stepid,
			    why ? why : tp_strerror(err));
	else
		st->links = path, path = NULL;
	tp_free(why);
	tp_free(path);
	return err ? NULL : s;
}

/* The plan, this node's environment and the plan file written; false
 * with st->why. */
static bool step_plan(step_t *st)
{
	char q[420];
	tp_step_in_t in;
	tp_cost_ctx_t *ctx = NULL;
	tp_state_t *links = NULL;
	tp_err_t err;

	/* PlanPriceMaxHosts: the model recommends each size's all-reduce
	 * (auto). The ranks' rendezvous compares the plans without the
	 * model's part and every rank runs rank 0's recommendations, so a
	 * node that cannot price (out of memory) plans by rule, says so,
	 * and its ranks still join. Not for a step whose hosts are not all
	 * in the fabric (a CPU partition: the plan fails below anyway). */
	bool price = st->n <= st->conf.plan_price_max_hosts;
	for (size_t i = 0; price && i < st->n; i++)
		price = tp_fabric_host_find(st->f, st->names[i]) != TP_ID_NONE;
	if (price) {
		tp_cost_params_t cp;
		tp_cost_params_defaults(&cp);
		cp.nics_by_rate = st->conf.nics_by_rate;
		cp.coll_rings = true; /* what the plan's auto runs */
		cp.host_ring = st->host_ring;
		cp.hier_segment = (double)st->seg;
		if ((err = tp_cost_ctx_create(st->f, &cp, &ctx))) {
			slurm_error("%s: job %u step %u: cost model: %s: plan "
				    "by rule, not priced",
				    PLUGIN, st->jobid, st->stepid,
				    tp_strerror(err));
			ctx = NULL;
		} else {
			links = step_links(st);
		}
	}
	err = tp_plan_build_step(
	    st->f, ctx, links, (const char *const *)st->names, st->n,
	    st->counts, st->conf.nics_by_rate, &st->plan, &st->msg);
	if (err == TP_ERR_NOMEM && ctx) {
		slurm_error("%s: job %u step %u: building the priced plan: "
			    "out of memory: plan by rule, not priced",
			    PLUGIN, st->jobid, st->stepid);
		tp_free(st->msg);
		st->msg = NULL;
		tp_free(st->links); /* not priced on it after all */
		st->links = NULL;
		err = tp_plan_build_step(
		    st->f, NULL, NULL, (const char *const *)st->names, st->n,
		    st->counts, st->conf.nics_by_rate, &st->plan, &st->msg);
	}
	tp_cost_ctx_destroy(ctx);
	tp_state_destroy(links);
	if (err) {
		/* the list is the client's: a line break in it (a hostlist
		 * separator) must not start a line of slurmd's log; 240
		 * bytes of it leave room for the reason */
		snprintf(st->why, sizeof(st->why), "plan for \"%s\": %s",
			 tp_quote(q, 240, st->nodelist, 200),
			 st->msg ? st->msg : tp_strerror(err));
		/* hosts not in the fabric (a CPU partition sharing
		 * plugstack.conf): expected, said at info level */
		st->skip = err == TP_ERR_NOTFOUND;
		return false;
	}
	snprintf(st->path, sizeof(st->path), "%s/job%u/plan-step%u.json",
		 basedir(), st->jobid, st->stepid);
	if ((err = tp_hca_map_read(st->f, st->me, sysfs_root(), &st->hcas))) {
		snprintf(st->why, sizeof(st->why), "%s/class/infiniband: %s",
			 sysfs_root(), tp_strerror(err));
		return false;
	}
	st->topo = nccl_topo_file(st->me, st->hcas);
	in = (tp_step_in_t){
	    .hosts = (const char *const *)st->names,
	    .tasks = st->counts,
	    .n = st->n,
	    .node_id = st->nodeid,
	    .ntasks = st->ntasks,
	    .fabric_rails = tp_fabric_rails(st->f),
	    .fabric_subnets = tp_fabric_nsubnets(st->f),
	    .plan_path = st->path,
	    .topo_file = st->topo,
	    .hca_map = st->hcas,
	};
	/* which HCA each GPU of this host is nearest, for tasks given GPUs
	 * other than their local rank's (none when it cannot: the plan's
	 * HCAs then, as before) */
	if ((err = tp_step_gpus_create(st->f, st->plan, st->me, &st->gpus)))
		slurm_debug("%s: job %u step %u: GPUs' HCAs: %s", PLUGIN,
			    st->jobid, st->stepid, tp_strerror(err));
	/* the plan holds all the rest needs: the fabric is the largest
	 * thing a step start holds, so it goes before the plan's text */
	tp_fabric_destroy(st->f);
	st->f = NULL;
	if ((err = tp_plan_step_env(st->plan, &in, &st->env, &st->msg))) {
		if (err == TP_ERR_RANGE)
			snprintf(st->why, sizeof(st->why),
				 "SLURM_STEP_TASKS_PER_NODE '%.100s': %s",
				 st->tpn, st->msg ? st->msg : tp_strerror(err));
		else
			snprintf(st->why, sizeof(st->why), "%s",
				 st->msg ? st->msg : tp_strerror(err));
		return false;
	}
	if (st->env.hcas_unmapped)
		slurm_info(
		    "%s: job %u step %u: none of %s's HCAs in the "
		    "fabric (by node GUID) is under %s/class/infiniband: "
		    "NCCL_IB_HCA and NCCL_TOPO_FILE not set",
		    PLUGIN, st->jobid, st->stepid, st->me, sysfs_root());
	else if (st->env.hcas_missing)
		slurm_info("%s: job %u step %u: %u of %s's HCAs in the fabric "
			   "(by node GUID) not under %s/class/infiniband: "
			   "left out of NCCL_IB_HCA (a card replaced since "
			   "the fabric was discovered?)",
			   PLUGIN, st->jobid, st->stepid, st->env.hcas_missing,
			   st->me, sysfs_root());
	if ((err = tp_plan_to_json(st->plan, &st->json))) {
		snprintf(st->why, sizeof(st->why), "plan JSON: %s",
			 tp_strerror(err));
		return false;
	}
	return write_plan(st->jobid, st->stepid, st->uid, st->gid, st->json,
			  st->path, sizeof(st->path), st->why, sizeof(st->why));
}

/* name onto the comma list buf (size len) */
static void list_add(char *buf, size_t len, const char *name)
{
	size_t l = strlen(buf);

	snprintf(buf + l, len - l, "%s%s", l ? "," : "", name);
}

/* Set what the plan gives this node, never overwriting what the job set
 * itself (listed in one log line), and mark them as this step's
 * (TOPOPLACE_STEP, TOPOPLACE_SET: under 350 bytes for the 9 names the
 * plugin sets); cannot fail. */
static void step_setenv(spank_t sp, step_t *st)
{
	char kept[512] = "", set[512] = "", mark[32];

	for (size_t i = 0; i < st->env.nvars; i++) {
		const tp_step_var_t *v = &st->env.vars[i];
		if (env_has(sp, v->name)) {
			list_add(kept, sizeof(kept), v->name);
			continue;
		}
		if (spank_setenv(sp, v->name, v->value, 1) != ESPANK_SUCCESS) {
			slurm_debug("%s: setenv %s failed", PLUGIN, v->name);
		} else {
			char item[80], vm[9];
			value_mark(v->value, vm);
			snprintf(item, sizeof(item), "%s:%s", v->name, vm);
			list_add(set, sizeof(set), item);
		}
	}
	cur.keep_rank = env_has(sp, "TOPOPLACE_RANK");
	cur.keep_local = env_has(sp, "TOPOPLACE_LOCAL_RANK");
	list_add(cur.keep_rank ? kept : set,
		 cur.keep_rank ? sizeof(kept) : sizeof(set), "TOPOPLACE_RANK");
	list_add(cur.keep_local ? kept : set,
		 cur.keep_local ? sizeof(kept) : sizeof(set),
		 "TOPOPLACE_LOCAL_RANK");
	/* per task where its GPU is not its local rank's (task_init) */
	cur.keep_hca = env_has(sp, "TOPOPLACE_COLL_HCA");
	if (cur.gpus)
		list_add(cur.keep_hca ? kept : set,
			 cur.keep_hca ? sizeof(kept) : sizeof(set),
			 "TOPOPLACE_COLL_HCA");
	snprintf(mark, sizeof(mark), "%u.%u", st->jobid, st->stepid);
	spank_setenv(sp, STEP_VAR, mark, 1);
	spank_setenv(sp, SET_VAR, set, 1);
	if (kept[0])
		slurm_info("%s: job %u step %u: kept the job's own %s", PLUGIN,
			   st->jobid, st->stepid, kept);
}

/* Everything up to the first setenv may fail (one log line, nothing set);
 * the environment is only touched once the plan file is in place. The
 * ranks and values are runtime/'s (tp_plan_step_env): this adapter only
 * reads Slurm's items and sets what it returns. */
static void step_start(spank_t sp, bool verbose)
{
	step_t st;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(&st, 0, sizeof(st));
	if (spank_get_item(sp, S_JOB_ID, &st.jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &st.stepid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &st.nodeid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &st.ntasks) !=
		ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &st.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &st.gid) != ESPANK_SUCCESS) {
		slurm_error("%s: job items not available: environment "
			    "unchanged",
			    PLUGIN);
		return;
	}
	/* every step: a batch script run by sbatch from inside a task of
	 * another job inherits that task's variables too */
	drop_inherited(sp, st.jobid, st.stepid);
	if (st.stepid > MAX_NORMAL_STEP_ID)
		return; /* batch, extern, interactive: see the notes */
	if (!step_hosts(sp, &st) || !step_fabric(&st) || !step_plan(&st)) {
		if (st.skip)
			slurm_info("%s: job %u step %u: %s: environment "
				   "unchanged",
				   PLUGIN, st.jobid, st.stepid, st.why);
		else
			slurm_error("%s: job %u step %u: %s: environment "
				    "unchanged",
				    PLUGIN, st.jobid, st.stepid, st.why);
		step_free(&st);
		return;
	}
	cur.wrote = true;
	cur.jobid = st.jobid;
	cur.stepid = st.stepid;
	cur.gpus = st.gpus;
	st.gpus = NULL;
	if (cur.gpus)
		cur.step_gpus = getenv_dup(sp, "SLURM_STEP_GPUS");

	/* ---- from here on: set, never fail ---- */
	step_setenv(sp, &st);
	cur.active = true;
	cur.rank_base = tp_step_task_rank(&st.env, 0);
	cur.verbose = verbose;
	if (verbose) {
		const char *hca = tp_step_env_get(&st.env, "NCCL_IB_HCA");
		const char *cross = tp_step_env_get(&st.env, "NCCL_CROSS_NIC");
		cur.summary = tp_asprintf(
		    "topoplace: %s node %u/%zu ranks %u.. world %llu plan "
		    "%s%s%s NCCL_IB_HCA=%s NCCL_CROSS_NIC=%s (%ld ms)",
		    st.me, st.env.node_rank, st.n, st.env.rank_base,
		    (unsigned long long)st.env.world, st.path,
		    st.links ? " priced on " : "", st.links ? st.links : "",
		    hca ? hca : "-", cross ? cross : "-", msec_since(&t0));
	}
	slurm_debug("%s: job %u step %u: %s node rank %u, plan %s in %ld ms",
		    PLUGIN, st.jobid, st.stepid, st.me, st.env.node_rank,
		    st.path, msec_since(&t0));
	step_free(&st);
}

TP_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	int mode;

	if (spank_context() != S_CTX_REMOTE || !args.ok)
		return ESPANK_SUCCESS;
	mode = user_mode >= 0 ? user_mode : args.mode;
	if (mode != MODE_OFF) {
		step_start(sp, mode == MODE_VERBOSE);
	} else {
		/* off sets nothing, and leaves no other step's plan to a
		 * step started from inside its task */
		uint32_t jobid, stepid;
		if (spank_get_item(sp, S_JOB_ID, &jobid) == ESPANK_SUCCESS &&
		    spank_get_item(sp, S_JOB_STEPID, &stepid) ==
			ESPANK_SUCCESS)
			drop_inherited(sp, jobid, stepid);
	}
	return ESPANK_SUCCESS;
}

/* In each task's process, after fork, before exec. */
TP_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	int local;
	char buf[16];

	if (!cur.active || spank_context() != S_CTX_REMOTE ||
	    spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS ||
	    local < 0)
		return ESPANK_SUCCESS;
	if (!cur.keep_rank) {
		snprintf(buf, sizeof(buf), "%u",
			 cur.rank_base + (uint32_t)local);
		spank_setenv(sp, "TOPOPLACE_RANK", buf, 1);
	}
	if (!cur.keep_local) {
		snprintf(buf, sizeof(buf), "%d", local);
		spank_setenv(sp, "TOPOPLACE_LOCAL_RANK", buf, 1);
	}
	if (cur.gpus && !cur.keep_hca) {
		/* Slurm's GPUs for this task (bound) or step on this node */
		char g[1024];
		const char *hca =
		    spank_getenv(sp, "SLURM_STEP_GPUS", g, sizeof(g)) ==
			    ESPANK_SUCCESS
			? tp_step_gpus_hca(cur.gpus, (uint32_t)local,
					   cur.step_gpus, g)
			: NULL;
		if (hca)
			spank_setenv(sp, "TOPOPLACE_COLL_HCA", hca, 1);
	}
	if (cur.verbose && local == 0 && cur.summary)
		fprintf(stderr, "%s\n", cur.summary);
	return ESPANK_SUCCESS;
}

/* slurmstepd, as root again, after the step's tasks are gone. */
TP_EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return ESPANK_SUCCESS;
	if (cur.wrote)
		remove_plan(cur.jobid, cur.stepid);
	tp_free(cur.summary);
	tp_step_gpus_destroy(cur.gpus);
	free(cur.step_gpus);
	memset(&cur, 0, sizeof(cur));
	return ESPANK_SUCCESS;
}

/* A private slurmstepd of slurmd's, on every node of the job at its end:
 * what a crashed step left. slurm_spank_init is not called there (22.05
 * calls job_epilog alone), so the arguments are parsed here. */
TP_EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	uint32_t jobid;

	tp_log_set(log_sink, NULL);
	if (!parse_args(ac, av) ||
	    spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		return ESPANK_SUCCESS;
	remove_plan(jobid, UINT32_MAX);
	return ESPANK_SUCCESS;
}
