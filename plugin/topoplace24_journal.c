/*
 * topoplace24_journal.c - the decision journal: choices kept until their
 * job is seen running on them, then queued to a writer thread that
 * prices each and appends it (tp_decision_encode, tp_decision_append) to
 * StateSaveLocation/TP_DECISIONS_FILE (see the adapter's Notes).
 */
#include "topoplace24_int.h"

/* Decisions kept in StateSaveLocation/TP_DECISIONS_FILE: the last
 * DECISIONS_KEEP, the file trimmed once it holds twice as many lines. */
#define DECISIONS_KEEP 1000
/* Decisions waiting for their job to start (a ring: oldest dropped). */
#define PENDING_MAX 256
/* Confirmed decisions waiting for the writer thread (oldest dropped; the
 * ends of jobs never are: tp_wqueue_t). */
#define WRITE_MAX 1024
/* The writer looks at its queue every second (every LINKS_LOOK_MS while
 * it watches LinkState); after WRITER_NAPS empty looks without LinkState
 * it sleeps until a record wakes it. */
#define WRITER_NAPS 60
/* Running jobs whose traffic is background, at most (more run unseen). */
#define RUNNING_MAX 4096

static decision_t pending[PENDING_MAX];
/* pending[i].job_id again, 0 for a free slot: the scans of every slot
 * (each confirmation, each decision kept) read 1 KiB here instead of
 * the slots' 62 KiB */
static uint32_t pending_job[PENDING_MAX];
static size_t npending, pending_next;
/* Jobs whose traffic the writer holds as background: checked against the
 * job list at each confirmation, an end queued to the writer. */
static uint32_t *running;
static size_t nrunning, caprunning;

/* The writer thread and its queue, under wq_lock (never under any lock
 * of slurmctld's). Besides the queue the writer reads fabric, cost_ctx,
 * policy and decisions_path: these change only with state_lock held and
 * after writer_sync(), when it holds no record; journal.lines is the
 * writer's own, and so is the link state while ls_on holds (below). */
pthread_mutex_t wq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wq_work = PTHREAD_COND_INITIALIZER;
pthread_cond_t wq_idle = PTHREAD_COND_INITIALIZER;
static decision_t wq[WRITE_MAX]; /* payloads, by tp_wqueue_t slot */
static tp_wqueue_t *wq_q;	 /* created by the first push */
bool wq_busy;
static bool wq_stop, wq_asleep;
bool wq_running; /* under state_lock */
static pthread_t wq_thread;
/* The decisions file (path xmalloc'ed, NULL: none); its gid is
 * SlurmUser's group, which may read it (PrivateData=jobs hides the hosts
 * of other users' jobs from everyone else), -1 unknown. */
char *decisions_path;
tp_decision_journal_t journal = {
    .keep = DECISIONS_KEEP, .gid = -1, .lines = SIZE_MAX};

static void decision_free(decision_t *d)
{
	xfree(d->picks);
	tp_placement_free(&d->pl);
	memset(d, 0, sizeof(*d));
}

void pending_clear(void)
{
	for (size_t i = 0; i < PENDING_MAX; i++)
		decision_free(&pending[i]);
	memset(pending_job, 0, sizeof(pending_job));
	npending = pending_next = 0;
}

/* The ideal time per request shape: a property of the shape, the fabric
 * and the cost model only, so the writer works it out once per shape. The
 * writer's own, like journal.lines; writer_sync() empties it, and the
 * fabric and cost model change only after a writer_sync(). A controller
 * that runs for months meets new shapes without end: past IDEAL_MAX the
 * cache starts again (a lookup is a pass over it). */
#define IDEAL_MAX 256
static tp_ideal_cache_t *ideals;

static bool ideal_of(const tp_request_t *r, double *ideal_p)
{
	if (!ideals && !(ideals = tp_ideal_cache_create()))
		return false;
	if (tp_ideal_cache_size(ideals) >= IDEAL_MAX)
		tp_ideal_cache_clear(ideals);
	/* as `topoplace place` and `show` report it */
	return tp_place_ideal(fabric, r, NULL, cost_ctx, ideals, ideal_p) ==
	       TP_OK;
}

/* Predicted all-reduce on the hosts and on the best hosts of an empty
 * fabric, both on a healthy idle fabric (ring or hierarchical, the
 * faster). false when there is no cost model or it fails. */
static bool price(const decision_t *d, double *pred_p, double *ideal_p)
{
	tp_cost_t c;

	if (!cost_ctx || !d->pl.nhosts ||
	    tp_cost_predict_best(cost_ctx, NULL, d->pl.hosts, d->pl.gpus,
				 d->pl.nhosts, tp_request_bytes(&d->req), NULL,
				 &c) != TP_OK ||
	    !ideal_of(&d->req, ideal_p))
		return false;
	*pred_p = c.seconds;
	return true;
}

/* The node list as slurmctld prints it (bitmap2node_name: sorted,
 * ranged), from the fabric's names of the nodes, which are slurm.conf's:
 * the writer reads no node table. */
static char *picks_hostlist(const decision_t *d)
{
	hostlist_t *hl = hostlist_create(NULL);
	char *s;

	for (size_t i = 0; i < d->npicks; i++)
		hostlist_push_host(
		    hl, tp_fabric_host(fabric, d->picks[i].host)->name);
	hostlist_sort(hl);
	s = hostlist_ranged_string_xmalloc(hl);
	hostlist_destroy(hl);
	return s;
}

/* The record of one decision (tp_decision_encode: topoplace-decision/1)
 * appended to the journal under its lock, whole or not at all. The
 * writer thread's (or, without one, writer_sync's caller's). */
static void decision_write(const decision_t *d)
{
	static tp_err_t last_err; /* the writer's own */
	const tp_placement_t *pl = &d->pl;
	tp_decision_t rec;
	char *hl = NULL, *line = NULL;
	size_t len;
	tp_err_t err = TP_ERR_NOMEM;

	if (!decisions_path)
		return;
	tp_decision_init(&rec);
	rec.job_id = d->job_id;
	rec.time = (int64_t)d->when;
	rec.hosts = hl = picks_hostlist(d);
	rec.nring = pl->nhosts;
	rec.ring = xcalloc(pl->nhosts + 1, sizeof(char *));
	for (size_t i = 0; i < pl->nhosts; i++)
		rec.ring[i] = tp_fabric_host(fabric, pl->hosts[i])->name;
	rec.gpus = pl->gpus;
	rec.span[TP_SPAN_GROUPS] = pl->span[TP_SPAN_GROUPS];
	rec.min_free[TP_SPAN_GROUPS] = pl->min_span_free[TP_SPAN_GROUPS];
	rec.min_empty[TP_SPAN_GROUPS] = pl->min_span_empty[TP_SPAN_GROUPS];
	rec.priced = price(d, &rec.predicted_s, &rec.ideal_s);
	rec.policy = (char *)tp_policy_name(policy);
	rec.decision_ms = d->ms;
	rec.reason = pl->explain ? pl->explain : "";
	journal.path = decisions_path;
	if ((err = tp_decision_encode(&rec, &line, &len)) ||
	    (err = tp_decision_append(&journal, line, len))) {
		/* a FIFO or directory in the file's place stays until someone
		 * removes it, a full disk or a file SlurmUser cannot write
		 * until someone acts: each kind of failure said once at error
		 * level (the first record lost), not at every record */
		if (err == TP_ERR_NOTREG && last_err != err)
			error("%s: %s: %s: decisions not recorded until it is "
			      "removed",
			      plugin_type, decisions_path,
			      tp_file_strerror(err));
		else if (last_err != err)
			error("%s: %s: record of JobId=%u not written: %s "
			      "(decisions not recorded until this is mended; "
			      "said once)",
			      plugin_type, decisions_path, d->job_id,
			      err == TP_ERR_NOMEM ? tp_strerror(err)
						  : tp_file_strerror(err));
		else
			debug("%s: %s: record of JobId=%u not written: %s",
			      plugin_type, decisions_path, d->job_id,
			      tp_strerror(err));
	} else if (last_err != TP_OK) {
		info("%s: %s: decisions recorded again", plugin_type,
		     decisions_path);
	}
	last_err = err;
	tp_free(line);
	xfree(rec.ring); /* the names are the fabric's */
	xfree(hl);
}

/* Write and free the oldest queued record; wq_lock held on entry and on
 * return, released while writing. false when the queue is empty. */
static bool write_one(void)
{
	struct timespec t0;
	decision_t d = {0};
	size_t dropped, slot;
	uint32_t job_id;
	bool links, track, joined;

	if (!wq_q)
		return false;
	switch (tp_wqueue_next(wq_q, &job_id, &slot, &track)) {
	case TP_WQUEUE_EMPTY:
		return false;
	case TP_WQUEUE_END:
		d.job_id = job_id;
		d.ended = true;
		break;
	case TP_WQUEUE_RECORD:
		d = wq[slot];
		memset(&wq[slot], 0, sizeof(d));
		d.track = track;
		break;
	}
	dropped = tp_wqueue_take_dropped(wq_q);
	links = ls_on;
	wq_busy = true;
	slurm_mutex_unlock(&wq_lock);
	if (dropped)
		error("%s: %zu decision records dropped: the writer of %s fell "
		      "behind (ends of jobs are kept: link state stays right)",
		      plugin_type, dropped,
		      decisions_path ? decisions_path : "-");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!d.ended)
		decision_write(&d);
	joined = links && links_job(&d);
	/* (says whether the traffic joined: a record whose job ended
	 * before the writer took it never joins, and gets no end) */
	debug2("%s: %s of JobId=%u in %.3f ms%s", plugin_type,
	       d.ended ? "end" : "record", d.job_id, ms_since(&t0),
	       joined ? "; its traffic joins" : "");
	decision_free(&d);
	slurm_mutex_lock(&wq_lock);
	wq_busy = false;
	if (!tp_wqueue_len(wq_q))
		slurm_cond_broadcast(&wq_idle);
	return true;
}

/* Wait on wq_work (wq_lock held) for at most ms milliseconds. */
static void nap_ms(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += ms % 1000 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	slurm_cond_timedwait(&wq_work, &wq_lock, &ts);
}

static void *writer_main(void *arg)
{
	struct sched_param sp = {0};

	/* background work on slurmctld's CPUs: the wake-ups of a SCHED_BATCH
	 * thread never preempt the thread running there (a normal one's
	 * would, mid-selection: measured). Not niced: a starved writer
	 * holding a malloc arena lock would stall the threads sharing it. */
	if ((errno = pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp)))
		debug("%s: decision writer: SCHED_BATCH: %m", plugin_type);
	slurm_mutex_lock(&wq_lock);
	for (int naps = 0;;) {
		bool wrote = write_one();

		/* between records too: a burst of them must not hold a
		 * LinkState change back */
		links_tick();
		if (wrote) {
			naps = 0;
			continue;
		}
		if (wq_stop)
			break;
		if (ls_on && ls_path) {
			nap_ms(LINKS_LOOK_MS);
			continue;
		}
		if (naps++ < WRITER_NAPS) {
			nap_ms(1000);
			continue;
		}
		wq_asleep = true;
		slurm_cond_wait(&wq_work, &wq_lock);
		wq_asleep = false;
		naps = 0;
	}
	slurm_mutex_unlock(&wq_lock);
	return NULL;
}

/* In slurmctld, once the daemon has forked (build_config), and again
 * from the selection while it failed (writer_retry). Signals stay with
 * slurmctld's own threads. Without a thread the records wait for the next
 * build_config (writer_sync) and LinkState is read there only. */
void writer_start(void)
{
	sigset_t all, old;
	int rc;

	if (wq_running)
		return;
	/* the writer's naps count on the monotonic clock: on the wall clock
	 * a step back would keep it asleep, unwoken, while records pile up
	 * (nobody waits on wq_work before the thread exists) */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&wq_work);
	pthread_cond_init(&wq_work, &ca);
	pthread_condattr_destroy(&ca);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&wq_thread, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		error("%s: decision writer thread: %s: records and LinkState "
		      "wait for a retry (each minute) or reconfigure",
		      plugin_type, strerror(rc));
		return;
	}
	wq_running = true;
}

/* Without a writer thread (pthread_create failed): another try, at most
 * once a minute, from the selection (state_lock held). The records are
 * not written here: that is file I/O (pricing, the journal's lock and
 * append, LinkState's re-read) in a decision, under slurmctld's job lock.
 * Until a thread runs they wait in the queue (the oldest dropped past
 * WRITE_MAX, counted) and build_config writes them (writer_sync). */
static void writer_retry(void)
{
	static struct timespec last;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (wq_running || (last.tv_sec && now.tv_sec - last.tv_sec < 60))
		return;
	last = now;
	writer_start();
}

/* Everything queued is in the file (or failed to be) and the writer holds
 * no record. */
void writer_sync(void)
{
	slurm_mutex_lock(&wq_lock);
	if (wq_running) {
		slurm_cond_signal(&wq_work);
		while ((wq_q && tp_wqueue_len(wq_q)) || wq_busy)
			slurm_cond_wait(&wq_idle, &wq_lock);
	} else {
		while (write_one())
			;
		links_tick();
	}
	/* the writer is idle: the fabric may change once this returns */
	tp_ideal_cache_clear(ideals);
	slurm_mutex_unlock(&wq_lock);
}

/* Drains the queue, then joins the thread. */
void writer_stop(void)
{
	if (!wq_running) {
		writer_sync();
	} else {
		slurm_mutex_lock(&wq_lock);
		wq_stop = true;
		slurm_cond_signal(&wq_work);
		slurm_mutex_unlock(&wq_lock);
		pthread_join(wq_thread, NULL);
		wq_running = false;
		wq_stop = false;
	}
	/* no writer left to use them */
	tp_ideal_cache_destroy(ideals);
	ideals = NULL;
	slurm_mutex_lock(&wq_lock);
	tp_wqueue_destroy(wq_q);
	wq_q = NULL;
	slurm_mutex_unlock(&wq_lock);
}

/* The queue, created at the first push (wq_lock held). Without memory
 * for it no record is queued, so the writer holds no job's traffic and
 * no end is needed. */
static bool wq_ready(void)
{
	static bool said;

	if (!wq_q && !(wq_q = tp_wqueue_create(WRITE_MAX, RUNNING_MAX)) &&
	    !said) {
		error("%s: decision queue: out of memory: decisions not "
		      "recorded, running jobs' traffic not priced",
		      plugin_type);
		said = true;
	}
	return wq_q;
}

/* Queue a confirmed decision for the writer. Takes d's members. No
 * wake-up (a futex call, and the woken writer competing for the CPU)
 * unless the writer has been idle for a minute: it looks every second. */
static void writer_push(decision_t *d)
{
	bool dropped;
	size_t slot;

	slurm_mutex_lock(&wq_lock);
	if (!wq_ready()) {
		slurm_mutex_unlock(&wq_lock);
		decision_free(d);
		return;
	}
	slot = tp_wqueue_push(wq_q, d->job_id, d->track, &dropped);
	if (dropped)
		decision_free(&wq[slot]);
	wq[slot] = *d;
	if (wq_asleep)
		slurm_cond_signal(&wq_work);
	slurm_mutex_unlock(&wq_lock);
	memset(d, 0, sizeof(*d));
}

/* A job whose traffic the writer may hold ended: never dropped
 * (tp_wqueue_end). */
static void writer_push_end(uint32_t job_id)
{
	slurm_mutex_lock(&wq_lock);
	if (wq_q) {
		tp_wqueue_end(wq_q, job_id);
		if (wq_asleep)
			slurm_cond_signal(&wq_work);
	}
	slurm_mutex_unlock(&wq_lock);
}

/* The job runs on exactly the nodes the decision committed. */
static bool runs_on(job_record_t *job_ptr, const decision_t *d)
{
	bitstr_t *b = job_ptr->node_bitmap;

	/* select_nodes takes its "now" before the hook stamps the decision:
	 * a second boundary between them is not another start */
	if (!b || job_ptr->start_time + 2 < d->when ||
	    bit_set_count(b) != (int64_t)d->npicks)
		return false;
	for (size_t i = 0; i < d->npicks; i++)
		if (d->picks[i].node >= bit_size(b) ||
		    !bit_test(b, d->picks[i].node))
			return false;
	return true;
}

/* d's GPUs per host as Slurm allocated them (job lock held): a per-job
 * count (--gpus) is filled greedily in node order, not split as the
 * engine split it, and the record and the job's traffic should say what
 * runs. Left as the engine's when the allocation does not match d's
 * nodes (no GPUs, or counts for another node set). */
static void take_alloc_gpus(job_record_t *job_ptr, decision_t *d)
{
	uint32_t gpu_id = gres_get_gpu_plugin_id();
	uint64_t *sum;
	list_itr_t *it;
	gres_state_t *gs;
	bool any = false;

	if (!job_ptr->gres_list_alloc || !d->npicks || !d->pl.gpus)
		return;
	sum = xcalloc(d->npicks, sizeof(uint64_t));
	it = list_iterator_create(job_ptr->gres_list_alloc);
	while ((gs = list_next(it))) {
		gres_job_state_t *js = gs->gres_data;
		if (gs->plugin_id != gpu_id || !js || !js->gres_cnt_node_alloc)
			continue;
		if (js->node_cnt != d->npicks) {
			any = false;
			break;
		}
		for (size_t k = 0; k < d->npicks; k++)
			sum[k] += js->gres_cnt_node_alloc[k];
		any = true;
	}
	list_iterator_destroy(it);
	/* picks are in node order, as the job's nodes; the ring's order
	 * differs */
	for (size_t k = 0; any && k < d->npicks; k++)
		for (size_t j = 0; j < d->pl.nhosts; j++)
			if (d->pl.hosts[j] == d->picks[k].host)
				d->pl.gpus[j] =
				    (int)MIN(sum[k], (uint64_t)INT_MAX);
	xfree(sum);
}

/* The job record d was decided for: an array task's own, found by its
 * array and task ids once it has a job id of its own (the array's record
 * holds the tasks still pending). */
static job_record_t *decision_job(const decision_t *d)
{
	job_record_t *job_ptr;

	if (!d->array_job_id)
		return find_job_record(d->job_id);
	/* a will-run test (backfill) on the array's record decides for no
	 * task (NO_VAL): that record may be the last task's by now */
	job_ptr = d->array_task_id == NO_VAL
		      ? find_job_record(d->job_id)
		      : find_job_array_rec(d->array_job_id, d->array_task_id);
	if (job_ptr && job_ptr->array_task_id != d->array_task_id)
		return NULL; /* another task's record */
	return job_ptr;
}

/* Remember a job whose traffic the writer will hold; false when
 * RUNNING_MAX are already. */
static bool running_add(uint32_t job_id)
{
	for (size_t i = 0; i < nrunning; i++)
		if (running[i] == job_id)
			return true;
	if (nrunning == RUNNING_MAX)
		return false;
	if (nrunning == caprunning) {
		caprunning = caprunning ? 2 * caprunning : 64;
		xrecalloc(running, caprunning, sizeof(uint32_t));
	}
	running[nrunning++] = job_id;
	return true;
}

/* No job's traffic held (with the selection's working set, after
 * links_stop freed the writer's). */
void running_clear(void)
{
	xfree(running);
	nrunning = caprunning = 0;
	slurm_mutex_lock(&wq_lock);
	if (wq_q)
		tp_wqueue_forget(wq_q);
	slurm_mutex_unlock(&wq_lock);
}

/* Hand the decisions whose job now runs on exactly the chosen nodes to
 * the writer; drop those of jobs gone or running elsewhere. Needs the job
 * read lock (held by every caller in slurmctld). force: at reconfigure. */
void decisions_confirm(bool force)
{
	static struct timespec last;
	struct timespec now;
	size_t pushed = 0;

	/* a scan of every slot per selection would cost each job more than
	 * its own decision: once a second is soon enough for a record, or
	 * at once when the slots run short */
	if (!npending && !nrunning)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!force && npending < PENDING_MAX / 2 &&
	    now.tv_sec - last.tv_sec < 1)
		return;
	last = now;
	for (size_t i = 0; i < PENDING_MAX && npending; i++) {
		decision_t *d = &pending[i];
		job_record_t *job_ptr;

		if (!pending_job[i])
			continue;
		job_ptr = decision_job(d);
		if (job_ptr && IS_JOB_PENDING(job_ptr))
			continue;
		if (job_ptr && runs_on(job_ptr, d)) {
			d->job_id = job_ptr->job_id;
			take_alloc_gpus(job_ptr, d);
			d->track = d->npicks > 1 && pconf.comm_share &&
				   running_add(d->job_id);
			writer_push(d);
			pushed++;
		} else {
			decision_free(d);
		}
		pending_job[i] = 0;
		npending--;
	}
	/* jobs gone, or no longer running (ended, requeued, suspended):
	 * their traffic leaves the background, queued after the records
	 * pushed before it */
	for (size_t i = 0; i < nrunning;) {
		job_record_t *job_ptr = find_job_record(running[i]);

		if (job_ptr && IS_JOB_RUNNING(job_ptr)) {
			i++;
			continue;
		}
		writer_push_end(running[i]);
		pushed++;
		running[i] = running[--nrunning];
	}
	if (pushed && !wq_running && !force)
		writer_retry();
}

/* Remember a choice (the last one per job, or array task, wins). Takes
 * d's members. */
void decision_keep(decision_t *d)
{
	size_t slot = PENDING_MAX, free_slot = PENDING_MAX;

	for (size_t i = 0; i < PENDING_MAX; i++) {
		if (pending_job[i] == d->job_id &&
		    pending[i].array_task_id == d->array_task_id) {
			slot = i;
			break;
		}
		if (free_slot == PENDING_MAX && !pending_job[i])
			free_slot = i;
	}
	/* a free slot before evicting anyone: selections for jobs that do
	 * not start (submit-time tests, backfill's will-run checks) come in
	 * bursts between two confirmations */
	if (slot == PENDING_MAX && free_slot < PENDING_MAX) {
		slot = free_slot;
		npending++;
	} else if (slot == PENDING_MAX) {
		slot = pending_next;
		pending_next = (pending_next + 1) % PENDING_MAX;
	}
	decision_free(&pending[slot]);
	pending[slot] = *d;
	pending_job[slot] = d->job_id;
	memset(d, 0, sizeof(*d));
}
