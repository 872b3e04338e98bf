/*
 * topoplace24_links.c - the link state the selection prices with:
 * LinkState's file plus the running jobs' traffic, built by the writer
 * thread and published to the selection (see the adapter's Notes).
 */
#include "topoplace24_int.h"

/* The links the selection prices with. ls_pub (and ls_gen) under ls_lock:
 * the writer swaps a new one in, the selection copies it into sel_state
 * when ls_gen moved. The rest is the writer's while ls_on (under wq_lock)
 * holds, allocated with the selection's working set: LinkState's path
 * and last look, the file's links (NULL: healthy), the running jobs'
 * traffic, and the next snapshot being built. */
static pthread_mutex_t ls_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_state_t *ls_pub;
static uint64_t ls_gen;
bool ls_on;
char *ls_path;
static tp_filesig_t ls_sig;
static int64_t ls_looked_ms; /* monotonic time of the last stat */
static tp_state_t *ls_file;
static tp_traffic_t *ls_traffic;
static tp_state_t *ls_work;
static double ls_duty;
static bool ls_dirty; /* ls_pub is behind */

/* Re-read LinkState when it changed (tp_filesig_update), or at every
 * look while it cannot be read (EIO, EACCES may pass): its links become
 * ls_file; a removed file means healthy links. A bad file, or a path that
 * cannot be looked at (a directory on it not searchable, a link loop),
 * keeps the last good links (healthy when none was read) and is logged
 * once per distinct failure (ls_sig.err), and its recovery once, which
 * reads the file again. A FIFO or device is refused without opening it for
 * good (tp_state_load_json_regular): a FIFO would block the writer, and
 * writer_sync (build_config, with slurmctld's locks held) waits for it.
 * The writer's, or build_config's with the writer idle. */
static void links_read(void)
{
	tp_state_t *st = NULL;
	size_t nl = tp_fabric_nlinks(fabric), weak = 0, busy = 0;
	char *why = NULL;
	tp_err_t err;

	if (!ls_path)
		return;
	bool changed = tp_filesig_update(ls_path, &ls_sig);
	if (ls_sig.look_errno) {
		char eb[128]; /* strerror's buffer is not the thread's own */
		why =
		    tp_asprintf("LinkState %s: cannot look at it: %s", ls_path,
				strerror_r(ls_sig.look_errno, eb, sizeof(eb)));
		if (tp_filesig_log(&ls_sig, TP_ERR_IO, why))
			error("%s: %s: %s", plugin_type,
			      why ? why : "LinkState: cannot look at it",
			      ls_file ? "last good link state kept"
				      : "links priced healthy");
		tp_free(why);
		return;
	}
	if (!changed && ls_sig.err != TP_ERR_IO)
		return;
	if (!ls_sig.exists) {
		info("%s: LinkState %s: no such file: links healthy",
		     plugin_type, ls_path);
		(void)tp_filesig_log(&ls_sig, TP_OK, NULL);
		tp_state_destroy(ls_file);
		ls_file = NULL;
		ls_dirty = true;
		return;
	}
	if ((err = tp_state_load_json_regular(fabric, ls_path, &st, &why))) {
		/* why names the file */
		if (tp_filesig_log(&ls_sig, err, why))
			error("%s: LinkState %s: last good link state kept",
			      plugin_type, why ? why : tp_strerror(err));
		tp_free(why);
		return;
	}
	for (size_t l = 0; l < nl; l++) {
		weak += tp_state_link_health(st, (uint32_t)l) < 1;
		busy += tp_state_link_background(st, (uint32_t)l) > 0;
	}
	/* a recovery, logged: from a file that could not be read (EIO,
	 * EACCES, a path not to be looked at) or from a bad one */
	tp_err_t was = ls_sig.err;
	info("%s: LinkState %s: %s%zu of %zu links degraded, %zu with "
	     "background traffic",
	     plugin_type, ls_path,
	     !tp_filesig_log(&ls_sig, TP_OK, NULL) ? ""
	     : was == TP_ERR_IO			   ? "readable again: "
						   : "good again: ",
	     weak, nl, busy);
	tp_state_destroy(ls_file);
	ls_file = st;
	ls_dirty = true;
}

/* The file's links plus the running jobs' traffic into ls_work, swapped
 * in as ls_pub. */
static void links_publish(void)
{
	tp_state_t *t;

	if (!ls_work || tp_traffic_apply(ls_traffic, ls_file, ls_work))
		return;
	slurm_mutex_lock(&ls_lock);
	t = ls_pub;
	ls_pub = ls_work;
	ls_work = t;
	__atomic_store_n(&ls_gen, ls_gen + 1, __ATOMIC_RELEASE);
	slurm_mutex_unlock(&ls_lock);
	ls_dirty = false;
}

/* Faster of ring and hierarchical on the file's links, as the engine's
 * prediction picks (ring when neither can be priced). */
static tp_algo_t faster_algo(const tp_placement_t *pl, double bytes)
{
	tp_algo_t algo = TP_ALGO_RING;

	if (tp_cost_predict_best(cost_ctx, ls_file, pl->hosts, pl->gpus,
				 pl->nhosts, bytes, &algo, NULL))
		return TP_ALGO_RING;
	return algo;
}

/* A running job's traffic joins the background (true when it did), or
 * an ended one's leaves it. The writer's (ls_on held when the record was
 * taken). */
bool links_job(const decision_t *d)
{
	double bytes = tp_request_bytes(&d->req);
	tp_err_t err;

	if (!ls_traffic)
		return false;
	if (d->ended) {
		if (tp_traffic_remove(ls_traffic, d->job_id) == TP_OK)
			ls_dirty = true;
		return false;
	}
	if (!d->track || !cost_ctx || d->pl.nhosts < 2 || !(ls_duty > 0))
		return false;
	err = tp_traffic_add(ls_traffic, d->job_id, cost_ctx, ls_file,
			     d->pl.hosts, d->pl.gpus, d->pl.nhosts, bytes,
			     faster_algo(&d->pl, bytes), ls_duty);
	ls_dirty = true; /* on error too: its old load is gone */
	if (err)
		debug("%s: JobId=%u: traffic not priced: %s", plugin_type,
		      d->job_id, tp_strerror(err));
	return !err;
}

/* Every LINKS_LOOK_MS: LinkState looked at (one stat), and a new
 * snapshot published when anything changed. wq_lock held on entry and on
 * return, released while working (wq_busy set, so writer_sync and
 * links_stop wait for it). */
void links_tick(void)
{
	struct timespec now;
	int64_t now_ms;
	bool look;

	if (!ls_on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	look = ls_path && now_ms - ls_looked_ms >= LINKS_LOOK_MS;
	if (!look && !ls_dirty)
		return;
	wq_busy = true;
	slurm_mutex_unlock(&wq_lock);
	if (look) {
		ls_looked_ms = now_ms;
		links_read();
	}
	if (ls_dirty)
		links_publish();
	slurm_mutex_lock(&wq_lock);
	wq_busy = false;
	slurm_cond_broadcast(&wq_idle);
}

/* With the selection's working set (build_config, writer idle): the
 * file read and the first snapshot published before any selection. */
void links_start(void)
{
	char *conf = get_extra_conf_path("topoplace.conf");

	ls_path = tp_pconf_path(conf, pconf.link_state);
	xfree(conf);
	ls_duty = pconf.comm_share / 100.0;
	memset(&ls_sig, 0, sizeof(ls_sig));
	ls_looked_ms = 0;
	ls_traffic = tp_traffic_create(fabric);
	ls_work = tp_state_create(fabric);
	slurm_mutex_lock(&ls_lock);
	ls_pub = tp_state_create(fabric);
	slurm_mutex_unlock(&ls_lock);
	if (!ls_traffic || !ls_work || !ls_pub ||
	    (pconf.link_state && !ls_path)) {
		error("%s: link state: out of memory: links priced healthy",
		      plugin_type);
		links_stop();
		return;
	}
	links_read();
	links_publish();
	slurm_mutex_lock(&wq_lock);
	ls_on = true;
	slurm_mutex_unlock(&wq_lock);
}

/* The writer done with the link state (it may be in links_tick), then
 * all of it freed. */
void links_stop(void)
{
	slurm_mutex_lock(&wq_lock);
	ls_on = false;
	while (wq_running && wq_busy)
		slurm_cond_wait(&wq_idle, &wq_lock);
	slurm_mutex_unlock(&wq_lock);
	tp_state_destroy(ls_file);
	ls_file = NULL;
	tp_traffic_destroy(ls_traffic);
	ls_traffic = NULL;
	tp_state_destroy(ls_work);
	ls_work = NULL;
	tp_free(ls_path);
	ls_path = NULL;
	ls_dirty = false;
	slurm_mutex_lock(&ls_lock);
	tp_state_destroy(ls_pub);
	ls_pub = NULL;
	slurm_mutex_unlock(&ls_lock);
}

/* The selection's copy of the links, when the writer published a newer
 * one: a load and, rarely, a copy of every link's health and
 * background. state_lock held. */
void links_take(void)
{
	if (!sel_state || __atomic_load_n(&ls_gen, __ATOMIC_ACQUIRE) == sel_gen)
		return;
	slurm_mutex_lock(&ls_lock);
	if (ls_pub)
		(void)tp_traffic_apply(NULL, ls_pub, sel_state);
	sel_gen = ls_gen;
	slurm_mutex_unlock(&ls_lock);
}
