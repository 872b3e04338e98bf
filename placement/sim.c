/*
 * Trace-driven scheduling simulator: FCFS with EASY backfill (one
 * reservation, for the queue head only, BACKFILL_DEPTH jobs deep), with
 * any placement policy. Slurm's sched/backfill reserves for every job it
 * tests and cannot start (up to bf_max_job_test) and plans with time
 * limits; here every policy gets the simpler rule alike.
 * The blocked head is planned on hosts: running jobs end (in a copy of
 * the state) until the policy can place it, which gives its start time
 * (the shadow) and its hosts; a backfilled job that would still run then
 * must stay off those hosts. A head short of whole idle hosts while
 * enough GPUs are free is therefore not overtaken for ever, and a
 * policy that packs well is not penalised for it.
 *
 * A job's run time is its ideal run time with the communication share
 * stretched by predicted/ideal collective time on the hosts it got, so a
 * bad placement costs time here as it does on a cluster. Backfill
 * estimates a job's run time on the hosts it would get, stretched by
 * its predicted slowdown there, not on an ideal placement: judged by
 * its ideal time a slowed job would take the head's hosts and overrun
 * the head's start, which Slurm, planning with and killing at the time
 * limit, never lets happen (users' limits themselves would only blur
 * the comparison between policies).
 *
 * Contention: every running multi-node job loads the links its
 * collective crosses, each direction on its own as on a full-duplex
 * cable (tp_cost_link_load, with the algorithm the
 * placement's prediction chose, times its communication duty cycle) and
 * the sum is the state's background, so the policy choosing a job's hosts
 * and the prediction of its time both see the other jobs' traffic. The
 * ideal stays on the idle fabric: slowdown includes contention. Running
 * jobs are re-rated: when a job starts or ends, every running job that
 * shares a directed link with it is predicted again on the new background
 * (without its own traffic), keeps the progress it made at its old rate
 * and gets a new end time; a job that starts is then predicted once more
 * on their new traffic, or it would run faster than the jobs it joined,
 * having been priced against their traffic from before they slowed (one
 * pass each: the changed traffic does not re-rate others again, which
 * would not terminate in general; like jobs on the same links end up
 * close in rate but not equal: within about a percent on the 8:1 test
 * fabric, 6% apart for two rings sharing both up-links of a 2-leaf
 * tree, the first one's rate set before the second's). JCT is taken
 * when a job really ends.
 * The duty cycle is the share of the stretched run spent communicating,
 * f * x / ((1 - f) + f * x) for comm_frac f and slowdown x: the average
 * rate over the run then equals the bytes the job really moves.
 * Each job keeps only the links it loads (a few per host it spans), so
 * 10,000 jobs on a 16k-GPU fabric stay small; a per-link count of the
 * jobs loading it resets the background to exactly 0 when the last one
 * ends, so rounding never leaves ghost traffic behind.
 * A newcomer is not starved by whoever came first: the background it sees
 * on a link is capped at k/(k+1) of the link when k jobs load it, the
 * share max-min fairness would leave it among k + 1 competitors.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "placement_int.h"

/* Backfill looks this far down the queue per pass (Slurm's
 * bf_max_job_test, 500 by default, bounds its own search, though it
 * reserves for every job it tests). */
#define BACKFILL_DEPTH 64
#define MAX_SAMPLES    2000

typedef struct link_load {
	uint32_t res; /* directed link: 2 * link + direction */
	double gbps;
} link_load_t;

typedef struct running {
	double end;
	size_t job;
	int gpus;
	link_load_t *load; /* owned: the links this job loads */
	size_t nload;
	/* re-rating (multi-node jobs with a prediction): progress in ideal
	 * run seconds as of t_last, at `rate` ideal seconds per second */
	uint32_t *hosts; /* owned, ring order; NULL: never re-rated */
	int *hgpus;	 /* owned */
	size_t nhosts;
	tp_algo_t algo;
	double ideal_s; /* one collective on the idle ideal hosts */
	double progress, rate, t_last;
	double start;
} running_t;

typedef struct sim {
	const tp_fabric_t *f;
	const tp_trace_t *t;
	const tp_policy_t *policy;
	const tp_policy_params_t *pp;
	const tp_cost_ctx_t *ctx;
	uint64_t seed;
	tp_state_t *s;
	size_t total_gpus;
	int max_host_gpus;
	/* least[k]: the GPUs of the k hosts with the fewest (but some),
	 * k = 0 .. gpu_hosts (job_need) */
	size_t *least, gpu_hosts;
	/* min-heap of running jobs by end time */
	running_t *heap;
	size_t nheap;
	size_t *queue; /* pending jobs, FCFS */
	size_t nqueue;
	double *wait, *jct, *slow, *decide;
	double *job_jct; /* per trace job (NAN: not ended) */
	size_t nstarted, nslow, ndecide;
	size_t at_min, at_min_empty;
	double busy_gpu_s, useful_gpu_s, last_t, first_t, cross;
	/* the makespan: from the submit time of the first job that starts
	 * (first_t once one started; the earliest such) to the last job's
	 * end: a job dropped as never placeable, first or last in the trace,
	 * when it arrives or when a policy first refuses it, stretches
	 * neither */
	bool started;
	double end_t;
	double frag_now, frag_int; /* last sampled frag, its time integral */
	double class_jct[TP_SIM_NCLASSES], class_wait[TP_SIM_NCLASSES];
	double class_ideal[TP_SIM_NCLASSES];
	size_t class_n[TP_SIM_NCLASSES];
	tp_sim_sample_t *samples;
	size_t nsamples, capsamples;
	bool changed; /* resources freed since the last backfill pass */
	/* bumped at every job start and end: the running jobs, their end
	 * times and their traffic change only then */
	uint64_t epoch;
	/* the last plan for a blocked head (plan_head): job plan_job's
	 * shadow time and reserved hosts, made at epoch plan_epoch
	 * (plan_job SIZE_MAX: none) */
	size_t plan_job;
	uint64_t plan_epoch;
	double shadow;
	uint32_t *resv;
	size_t nresv;
	size_t unplaceable, first_unplaceable;
	size_t nended;
	uint32_t *mark; /* per directed link: stamp of the job that changed */
	uint32_t stamp;
	size_t rerated;	   /* re-predictions of running jobs */
	size_t nres;	   /* directed links: 2 per link */
	double *scratch;   /* nres zeroes between uses */
	uint32_t *bgcnt;   /* per directed link: running jobs loading it */
	double *loadsum;   /* per directed link: their summed average Gb/s */
	double *lbytes;	   /* nres zeroes: one routing's bytes per link */
	uint32_t *touched; /* the directed links it has bytes on */
	tp_ideal_cache_t own_ideal; /* a run's own cache of ... */
	tp_ideal_cache_t *ideal;    /* ideal time per request shape */
	tp_place_ws_t *ws; /* the decisions' buffers (NULL: one per decision) */
	/* where slowdowns come from (tp_sim_result_t.comm_static_mean,
	 * comm_free_best_mean, tp_sim_opts_t.sources): sums over nstatic
	 * multi-node jobs, and scratch (per host: fb_mine; need hosts:
	 * fb_set) */
	bool sources;
	double static_sum, best_sum;
	size_t nstatic;
	bool *fb_mine;
	uint32_t *fb_free, *fb_set;
	int *fb_gpus;
	/* the queue head since last_t: its class and why it waits (0: no
	 * head, 1: short of free GPUs, 2: GPUs free but not placed), and
	 * the time spent so per class */
	int head_cls, head_why;
	double head_t[TP_SIM_NCLASSES][3];
	/* the hold what-if (tp_sim_opts_t.hold_slowdown): per job, when a
	 * set it was offered first priced too slow (NAN: never) */
	double hold_slowdown, hold_s, *held_since;
	size_t held;
} sim_t;

static void heap_push(sim_t *m, running_t r)
{
	size_t i = m->nheap++;

	m->heap[i] = r;
	while (i && m->heap[(i - 1) / 2].end > m->heap[i].end) {
		running_t tmp = m->heap[i];
		m->heap[i] = m->heap[(i - 1) / 2];
		m->heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static void sift_down(sim_t *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, min = i;
		if (l < m->nheap && m->heap[l].end < m->heap[min].end)
			min = l;
		if (r < m->nheap && m->heap[r].end < m->heap[min].end)
			min = r;
		if (min == i)
			return;
		running_t tmp = m->heap[i];
		m->heap[i] = m->heap[min];
		m->heap[min] = tmp;
		i = min;
	}
}

static running_t heap_pop(sim_t *m)
{
	running_t top = m->heap[0];

	m->heap[0] = m->heap[--m->nheap];
	sift_down(m, 0);
	return top;
}

static void running_free(running_t *r)
{
	tp_free(r->load);
	tp_free(r->hosts);
	tp_free(r->hgpus);
	r->load = NULL;
	r->hosts = NULL;
	r->hgpus = NULL;
	r->nload = 0;
}

/* The fewest GPUs job j can take: whole hosts (nodes alone) get all of
 * theirs, so at least the GPUs of its nodes smallest hosts (least[]);
 * none when fewer hosts have GPUs. Every gate compares this with the free
 * GPUs: exact where every host holds as many GPUs, a lower bound
 * elsewhere, where the policy's answer decides. (It was nodes x the
 * largest host's GPUs: on a fabric of 4- and 8-GPU hosts a job the
 * policies place was dropped as never placeable, and the head waited
 * while enough whole hosts were idle.) SIZE_MAX: it can never fit. */
static size_t job_need(const sim_t *m, const tp_job_spec_t *j)
{
	if (j->nodes > 0 && j->gpus_per_node == 0)
		return (size_t)j->nodes <= m->gpu_hosts ? m->least[j->nodes]
							: SIZE_MAX;
	return j->nodes > 0 ? (size_t)j->nodes * (size_t)j->gpus_per_node
			    : (size_t)j->gpus;
}

/* Free GPUs on s, in the count job_need uses. */
static size_t free_gpus(const sim_t *m, const tp_state_t *s)
{
	return m->total_gpus - tp_state_busy_gpus(s);
}

void tp__job_request(const tp_job_spec_t *j, tp_request_t *r)
{
	memset(r, 0, sizeof(*r));
	r->nodes = j->nodes;
	r->gpus_per_node = j->gpus_per_node;
	r->gpus = j->nodes > 0 ? 0 : j->gpus;
	r->exclusive = j->nodes > 1;
	r->bytes = j->bytes;
}

/* By the request, so a job is in the same class under every policy. */
static int job_class(const sim_t *m, const tp_job_spec_t *js)
{
	return tp_sim_class_of(
	    js->nodes > 0 ? (size_t)js->nodes
			  : (size_t)((js->gpus + m->max_host_gpus - 1) /
				     m->max_host_gpus));
}

/* What keeps the queue head waiting until the next event. */
static void head_note(sim_t *m)
{
	const tp_job_spec_t *js;

	m->head_why = 0;
	if (!m->nqueue)
		return;
	js = &m->t->jobs[m->queue[0]];
	m->head_cls = job_class(m, js);
	m->head_why = job_need(m, js) <= free_gpus(m, m->s) ? 2 : 1;
}

static void advance(sim_t *m, double now)
{
	if (now > m->last_t) {
		m->busy_gpu_s +=
		    (double)tp_state_busy_gpus(m->s) * (now - m->last_t);
		m->frag_int += m->frag_now * (now - m->last_t);
		m->head_t[m->head_cls][m->head_why] += now - m->last_t;
		m->last_t = now;
	}
}

/* Share of free GPUs that sit outside wholly free level-1 groups: the
 * capacity a large job can no longer get in one piece. */
static double fragmentation(const sim_t *m)
{
	const tp_fabric_t *f = m->f;
	size_t free_all = 0, free_whole = 0;

	for (size_t g = 0; g < tp_fabric_ngroups(f); g++) {
		const tp_group_t *gp = tp_fabric_group(f, g);
		size_t fr = 0, all = 0;
		if (gp->level != 1)
			continue;
		for (size_t i = 0; i < gp->nhosts; i++) {
			uint32_t h = gp->hosts[i];
			all += tp_fabric_host(f, h)->ngpus;
			if (tp_state_host_up(m->s, h))
				fr += (size_t)tp_state_free_gpus(m->s, h);
		}
		free_all += fr;
		if (fr == all)
			free_whole += fr;
	}
	return free_all ? 1.0 - (double)free_whole / (double)free_all : 0.0;
}

static void sample(sim_t *m, double now)
{
	void *p = m->samples;

	m->frag_now = fragmentation(m);
	if (!m->started) /* before the first start: no time axis yet */
		return;
	if (tp_grow(&p, &m->capsamples, m->nsamples + 1,
		    sizeof(tp_sim_sample_t)))
		return; /* a missing sample only thins the plot */
	m->samples = p;
	m->samples[m->nsamples++] =
	    (tp_sim_sample_t){now - m->first_t,
			      m->total_gpus ? (double)tp_state_busy_gpus(m->s) /
						  (double)m->total_gpus
					    : 0,
			      m->frag_now};
}

/* Background a new job meets on directed link r: the other jobs' load,
 * but no more than a fair share leaves (see the notes at the top). */
static void fair_background(sim_t *m, uint32_t r)
{
	double cap = tp_fabric_link(m->f, r / 2)->gbps * m->s->health[r / 2];

	m->s->bg[r] =
	    tp_traffic_fair_background(cap, m->loadsum[r], m->bgcnt[r]);
}

/* Predict a job's collective on hosts[0..n) on the current background,
 * routing it once for both its time (*c) and the links it loads
 * (m->lbytes over m->touched[0..*nt_p), for load_add). */
static tp_err_t predict_routed(sim_t *m, const uint32_t *hosts, const int *gpus,
			       size_t nh, double bytes, tp_algo_t algo,
			       tp_cost_t *c, size_t *nt_p)
{
	return tp__cost_predict_load(m->ctx, m->s, hosts, gpus, nh, bytes, algo,
				     m->lbytes, m->touched, nt_p, c);
}

/* Add the traffic of the job predict_routed just routed (err: what it
 * returned, seconds: its time) to the background at duty and keep the
 * links it loads in run (replacing what run kept). */
static tp_err_t load_add(sim_t *m, tp_err_t err, size_t nt, double seconds,
			 double duty, running_t *run)
{
	size_t n = 0, k = 0;

	tp_free(run->load);
	run->load = NULL;
	run->nload = 0;
	if (err || !(duty > 0)) {
		tp__cost_load_take(m->lbytes, m->touched, nt, 0, 0, m->scratch);
		/* no route now: the job cannot load what it cannot use */
		return err == TP_ERR_NOMEM && duty > 0 ? err : TP_OK;
	}
	tp__cost_load_take(m->lbytes, m->touched, nt, seconds, duty,
			   m->scratch);
	for (size_t i = 0; i < nt; i++)
		n += m->scratch[m->touched[i]] > 0;
	if (n && !(run->load = tp_malloc(n * sizeof(link_load_t)))) {
		for (size_t i = 0; i < nt; i++)
			m->scratch[m->touched[i]] = 0;
		return TP_ERR_NOMEM;
	}
	for (size_t i = 0; i < nt; i++) {
		uint32_t r = m->touched[i];
		if (!(m->scratch[r] > 0))
			continue;
		run->load[k++] = (link_load_t){r, m->scratch[r]};
		m->loadsum[r] += m->scratch[r];
		m->bgcnt[r]++;
		fair_background(m, r);
		m->scratch[r] = 0;
	}
	run->nload = k;
	return TP_OK;
}

/* Take the job's traffic off the background; run keeps its link list
 * (for rerate_sharing) until load_add or running_free. */
static void load_remove(sim_t *m, running_t *run)
{
	for (size_t i = 0; i < run->nload; i++) {
		uint32_t r = run->load[i].res;
		m->loadsum[r] -= run->load[i].gbps;
		if (!--m->bgcnt[r] || m->loadsum[r] < 0)
			m->loadsum[r] = 0;
		fair_background(m, r);
	}
}

/* Run time left at a communication slowdown x: the job's rate in ideal
 * seconds per second and the share of time it communicates. */
static void rate_of(double f, double x, double *rate_p, double *duty_p)
{
	double d = (1 - f) + f * x;

	*rate_p = 1 / d;
	*duty_p = f * x / d;
}

/* Re-rate a running job on the current background: its progress so far
 * at the old rate, then a new prediction without its own traffic. */
static tp_err_t rerate(sim_t *m, running_t *r, double now)
{
	const tp_job_spec_t *js = &m->t->jobs[r->job];
	double bytes = js->bytes > 0 ? js->bytes : TP__DEFAULT_BYTES;
	double x = 1, duty;
	size_t nt;
	tp_cost_t c;
	tp_err_t err;

	r->progress += (now - r->t_last) * r->rate;
	if (r->progress > js->run_s)
		r->progress = js->run_s;
	r->t_last = now;
	load_remove(m, r);
	err = predict_routed(m, r->hosts, r->hgpus, r->nhosts, bytes, r->algo,
			     &c, &nt);
	if (!err && r->ideal_s > 0)
		x = c.seconds / r->ideal_s;
	rate_of(js->comm_frac, x, &r->rate, &duty);
	r->end = now + (js->run_s - r->progress) / r->rate;
	m->rerated++;
	return load_add(m, err, nt, c.seconds, duty, r);
}

/* A job started or ended, changing the background on the links in
 * load[0..nload): re-rate every other running job that shares one of
 * them (one pass: the re-rated jobs' new traffic does not re-rate
 * others again), then a job that started once more, then restore the
 * heap order. The starter was priced against the others' traffic as it
 * was before they slowed for it; left so, a job that starts later runs
 * faster than one already on the same links for no reason but its
 * order. */
static tp_err_t rerate_sharing(sim_t *m, const link_load_t *load, size_t nload,
			       size_t job, double now)
{
	running_t *self = NULL;
	bool any = false;
	tp_err_t err;

	if (!nload || !m->ctx)
		return TP_OK;
	m->stamp++;
	for (size_t i = 0; i < nload; i++)
		m->mark[load[i].res] = m->stamp;
	for (size_t i = 0; i < m->nheap; i++) {
		running_t *r = &m->heap[i];
		bool shares = false;
		if (r->job == job)
			self = r;
		if (r->job == job || !r->hosts)
			continue;
		for (size_t k = 0; k < r->nload && !shares; k++)
			shares = m->mark[r->load[k].res] == m->stamp;
		if (!shares)
			continue;
		if ((err = rerate(m, r, now)))
			return err;
		any = true;
	}
	if (any && self && self->hosts && (err = rerate(m, self, now)))
		return err;
	for (size_t i = m->nheap / 2 + 1; any && i-- > 0;)
		sift_down(m, i);
	return TP_OK;
}

/* The idle-fabric time of the `need` best cabled of hosts fr[0..nf)
 * (largest ring rate first, index order among equals) with the job's GPUs
 * per host into *t_p; -1 when it cannot be priced. Reorders fr. Only
 * running out of memory fails. */
static tp_err_t best_cabled(sim_t *m, uint32_t *fr, size_t nf, size_t need,
			    const int *gpus, double bytes, double *t_p)
{
	tp_err_t err = tp__cabled_first(m->s, fr, nf, need);

	if (err)
		return err;
	for (size_t a = 0; a < need; a++) {
		m->fb_set[a] = fr[a];
		m->fb_gpus[a] = gpus[a];
	}
	/* priced as the ideal's sets are: in ring order */
	if (tp__price_ring(m->ctx, NULL, m->fb_set, m->fb_gpus, need, bytes,
			   t_p))
		*t_p = -1;
	return TP_OK;
}

/* A multi-node job just placed on pl (already in the state): its hosts on
 * the idle fabric against the ideal, and the best that the hosts idle at
 * its start offered (its own, each level-1 group's best cabled idle
 * hosts, the fabric's). Only running out of memory fails. */
static tp_err_t slowdown_sources(sim_t *m, const tp_placement_t *pl,
				 double bytes)
{
	const tp_fabric_t *f = m->f;
	size_t nh = tp_fabric_nhosts(f), ng = tp_fabric_ngroups(f);
	size_t need = pl->nhosts;
	double own, best;
	tp_cost_t c;

	if (!(pl->ideal_s > 0) ||
	    tp_cost_predict_best(m->ctx, NULL, pl->hosts, pl->gpus, need, bytes,
				 NULL, &c))
		return TP_OK;
	own = best = c.seconds;
	tp_err_t err = TP_OK;
	m->static_sum += own / pl->ideal_s;
	m->nstatic++;
	if (!m->fb_mine) {
		m->fb_mine = tp_calloc(nh + 1, sizeof(bool));
		m->fb_free = tp_malloc((nh + 1) * sizeof(uint32_t));
		m->fb_set = tp_malloc((nh + 1) * sizeof(uint32_t));
		m->fb_gpus = tp_malloc((nh + 1) * sizeof(int));
		if (!m->fb_mine || !m->fb_free || !m->fb_set || !m->fb_gpus)
			return TP_ERR_NOMEM;
	}
	for (size_t i = 0; i < need; i++)
		m->fb_mine[pl->hosts[i]] = true;
	/* each level-1 group, then the whole fabric (g == ng) */
	for (size_t g = 0; g <= ng; g++) {
		const uint32_t *hs;
		size_t nf = 0, n;
		if (!tp__cabled_scope(f, g, &hs, &n))
			continue;
		for (size_t i = 0; i < n; i++) {
			uint32_t h = hs ? hs[i] : (uint32_t)i;
			if (m->fb_mine[h] || tp_state_host_idle(m->s, h))
				m->fb_free[nf++] = h;
		}
		if (nf < need)
			continue;
		double t;
		if ((err = best_cabled(m, m->fb_free, nf, need, pl->gpus,
				       bytes, &t)))
			break;
		if (t > 0 && t < best)
			best = t;
	}
	for (size_t i = 0; i < need; i++)
		m->fb_mine[pl->hosts[i]] = false;
	if (!err)
		m->best_sum += best / pl->ideal_s;
	return err;
}

/* The hold what-if: true when job j, a multi-node job offered pl now,
 * waits for a better set instead (pl priced slower than hold_slowdown x
 * its ideal, less than hold_s after the first such offer, other jobs
 * running). */
static bool held(sim_t *m, size_t j, const tp_placement_t *pl, double now)
{
	/* nothing running: waiting cannot bring a better set */
	if (!m->held_since || !m->nheap || pl->nhosts < 2 ||
	    !(pl->ideal_s > 0) ||
	    !(pl->predicted_s > m->hold_slowdown * pl->ideal_s))
		return false;
	if (isnan(m->held_since[j])) {
		m->held_since[j] = now;
		m->held++;
	}
	return now < m->held_since[j] + m->hold_s;
}

/* The next time a held job's wait ends (INFINITY: none after now). */
static double hold_wake(const sim_t *m, double now)
{
	double w = INFINITY;

	for (size_t q = 0; m->held_since && q < m->nqueue; q++) {
		double e = m->held_since[m->queue[q]] + m->hold_s;
		if (e > now && e < w) /* NAN compares false */
			w = e;
	}
	return w;
}

/* Place and start job j now; false when it does not fit, or when on the
 * hosts it got it would end after `deadline` (*late_p then true, where
 * given): the end counts its predicted stretch, so a job slowed by a bad
 * set is not taken for a short one. The state's background holds the
 * running jobs' traffic, so both the policy and the prediction see it. */
static tp_err_t try_start(sim_t *m, size_t j, double now, double deadline,
			  bool *started, bool *late_p)
{
	const tp_job_spec_t *js = &m->t->jobs[j];
	running_t run = {.job = j, .start = now};
	tp_request_t r;
	tp_placement_t pl;
	tp_err_t err;
	double slowdown = 1.0;

	*started = false;
	if (late_p)
		*late_p = false;
	tp__job_request(js, &r);
	double bytes = tp_request_bytes(&r);
	memset(&pl, 0, sizeof(pl));
	err = tp_place_run_cached(m->policy, m->s, &r, m->pp, m->ctx,
				  m->seed + j, m->ideal, m->ws, &pl);
	if (err == TP_ERR_NOTFOUND)
		return TP_OK;
	if (err == TP_ERR_RANGE) {
		/* can never fit this fabric: counted and dropped by the caller
		 */
		return err;
	}
	if (err)
		return err;
	if (pl.nhosts > 1 && pl.ideal_s > 0 && pl.predicted_s > 0)
		slowdown = pl.predicted_s / pl.ideal_s;
	run.end =
	    now + js->run_s * ((1 - js->comm_frac) + js->comm_frac * slowdown);
	if (run.end > deadline) {
		if (late_p)
			*late_p = true;
		tp_placement_free(&pl);
		return TP_OK;
	}
	if (held(m, j, &pl, now)) {
		tp_placement_free(&pl);
		return TP_OK;
	}
	m->decide[m->ndecide++] = pl.decision_s;
	/* A job on several nodes is exclusive (tp__job_request): it holds
	 * its hosts whole for its life, as Slurm's exclusive allocation, so
	 * later jobs do not take the GPUs it leaves; its ranks stay
	 * pl.gpus. */
	int *held = pl.gpus;
	if (js->nodes > 1 && !(held = tp_malloc(pl.nhosts * sizeof(int)))) {
		tp_placement_free(&pl);
		return TP_ERR_NOMEM;
	}
	for (size_t i = 0; held != pl.gpus && i < pl.nhosts; i++)
		held[i] = tp_state_free_gpus(m->s, pl.hosts[i]);
	err = tp_state_alloc(m->s, j + 1, pl.hosts, held, pl.nhosts);
	if (held != pl.gpus)
		tp_free(held);
	m->epoch++;
	if (err) {
		tp_placement_free(&pl);
		return err;
	}
	if (!m->started) {
		m->started = true;
		m->first_t = m->end_t = js->submit_s;
	}
	m->first_t = fmin(m->first_t, js->submit_s);
	if (pl.nhosts > 1) {
		m->slow[m->nslow++] = slowdown;
		if (m->ctx && m->sources &&
		    (err = slowdown_sources(m, &pl, bytes))) {
			tp_state_release(m->s, j + 1);
			tp_placement_free(&pl);
			return err;
		}
		m->at_min +=
		    pl.span[TP_SPAN_GROUPS] <= pl.min_span_free[TP_SPAN_GROUPS];
		m->at_min_empty += pl.span[TP_SPAN_GROUPS] <=
				   pl.min_span_empty[TP_SPAN_GROUPS];
	}
	if (pl.nhosts > 1 && m->ctx && pl.predicted_s > 0) {
		double f = js->comm_frac;
		double duty = f * slowdown / ((1 - f) + f * slowdown);
		double steps = js->comm_frac * js->run_s / pl.ideal_s;

		size_t nt;
		tp_cost_t c;

		m->cross += steps * pl.cross_top_bytes;
		err = predict_routed(m, pl.hosts, pl.gpus, pl.nhosts, bytes,
				     pl.algo, &c, &nt);
		if ((err = load_add(m, err, nt, c.seconds, duty, &run))) {
			tp_state_release(m->s, j + 1);
			tp_placement_free(&pl);
			return err;
		}
		/* keep what a re-rating needs */
		run.hosts = pl.hosts;
		run.hgpus = pl.gpus;
		run.nhosts = pl.nhosts;
		run.algo = pl.algo;
		run.ideal_s = pl.ideal_s;
		run.t_last = now;
		rate_of(f, slowdown, &run.rate, &duty);
	}
	for (size_t i = 0; i < pl.nhosts; i++)
		run.gpus += pl.gpus[i];
	if (run.hosts) {
		pl.hosts = NULL;
		pl.gpus = NULL;
	}
	heap_push(m, run);
	m->wait[m->nstarted++] = now - js->submit_s;
	tp_placement_free(&pl);
	*started = true;
	/* its traffic slows the jobs already on its links */
	return rerate_sharing(m, run.load, run.nload, j, now);
}

/* Job j can never be placed: counted, left out of the figures. */
static void drop(sim_t *m, size_t j)
{
	m->unplaceable++;
	if (j < m->first_unplaceable)
		m->first_unplaceable = j;
}

static void queue_remove(sim_t *m, size_t qi)
{
	memmove(&m->queue[qi], &m->queue[qi + 1],
		(m->nqueue - qi - 1) * sizeof(size_t));
	m->nqueue--;
}

static int end_cmp(const void *x, const void *y)
{
	const running_t *a = x, *b = y;

	return a->end < b->end ? -1 : a->end > b->end;
}

/* Plan the blocked head job j on hosts: on a copy
 * of the state, end the running jobs in end-time order until the policy
 * places j; m->shadow = that time and m->resv (m->nresv hosts) the hosts
 * it would get, which jobs still running at the shadow time must leave
 * alone. The head can be short of whole idle hosts while enough GPUs are
 * free, so counting GPUs alone would let backfill keep it waiting for
 * ever. INFINITY and no hosts when it never fits. The plan depends on
 * the state and the running jobs' end times only, which change when a
 * job starts or ends: until then (a job submitted behind the same head)
 * the last plan stands, and is kept. */
bool tp__sim_replan;

static tp_err_t plan_head(sim_t *m, size_t j)
{
	if (m->plan_job == j && m->plan_epoch == m->epoch && !tp__sim_replan)
		return TP_OK;

	const tp_job_spec_t *js = &m->t->jobs[j];
	running_t *r = tp_malloc((m->nheap + 1) * sizeof(*r));
	tp_state_t *s = tp_state_clone(m->s);
	size_t need = job_need(m, js);
	tp_request_t req;
	tp_err_t err = TP_ERR_NOMEM;

	m->plan_job = SIZE_MAX;
	m->shadow = INFINITY;
	tp_free(m->resv);
	m->resv = NULL;
	m->nresv = 0;
	if (!r || !s)
		goto out;
	memcpy(r, m->heap, m->nheap * sizeof(*r));
	qsort(r, m->nheap, sizeof(*r), end_cmp);
	tp__job_request(js, &req);
	err = TP_OK;
	for (size_t i = 0; i < m->nheap; i++) {
		tp_placement_t pl;
		if ((err = tp_state_release(s, r[i].job + 1)))
			goto out;
		/* jobs ending together free their hosts together */
		if ((i + 1 < m->nheap && r[i + 1].end <= r[i].end) ||
		    free_gpus(m, s) < need)
			continue;
		memset(&pl, 0, sizeof(pl));
		err = tp__place_hosts(m->policy, s, &req, m->pp, m->seed + j,
				      m->ws, &pl);
		if (err == TP_ERR_NOTFOUND) {
			err = TP_OK;
			continue;
		}
		if (err == TP_ERR_RANGE) {
			err = TP_OK;
			break;
		}
		if (err)
			goto out;
		m->shadow = r[i].end;
		m->resv = pl.hosts;
		m->nresv = pl.nhosts;
		pl.hosts = NULL;
		tp_placement_free(&pl);
		break;
	}
	if (!err) {
		m->plan_job = j;
		m->plan_epoch = m->epoch;
	}
out:
	tp_state_destroy(s);
	tp_free(r);
	return err;
}

/* Try job j now on every host but the head's reserved ones. */
static tp_err_t try_start_around(sim_t *m, size_t j, double now,
				 const uint32_t *resv, size_t nresv,
				 bool *started)
{
	bool *was = nresv ? tp_malloc(nresv * sizeof(bool)) : NULL;
	tp_err_t err;

	if (nresv && !was)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < nresv; i++) {
		was[i] = m->s->up[resv[i]];
		m->s->up[resv[i]] = false;
	}
	err = try_start(m, j, now, INFINITY, started, NULL);
	for (size_t i = nresv; i-- > 0;)
		m->s->up[resv[i]] = was[i];
	tp_free(was);
	return err;
}

static tp_err_t schedule(sim_t *m, double now)
{
	bool started;
	tp_err_t err;
	size_t qi = 0;

	/* FCFS: start jobs from the head while they fit */
	while (qi < m->nqueue) {
		size_t j = m->queue[qi];
		started = false;
		if (job_need(m, &m->t->jobs[j]) <= free_gpus(m, m->s) &&
		    (err = try_start(m, j, now, INFINITY, &started, NULL))) {
			if (err != TP_ERR_RANGE)
				return err;
			drop(m, j);
			queue_remove(m, qi);
			continue;
		}
		if (!started)
			break;
		queue_remove(m, qi);
	}
	if (qi >= m->nqueue || !m->changed)
		return TP_OK;
	m->changed = false;

	/* EASY backfill behind the blocked head: a job that ends before the
	 * head's planned start, stretched as predicted on the hosts it would
	 * get, may go anywhere, a longer one only around the hosts the head
	 * is planned on (Slurm plans with the time limit and kills at it, so
	 * a backfilled job never overruns the head's start there either) */
	if ((err = plan_head(m, m->queue[0])))
		return err;
	double shadow = m->shadow;
	const uint32_t *resv = m->resv;
	size_t nresv = m->nresv;
	for (qi = 1; qi < m->nqueue && qi <= BACKFILL_DEPTH;) {
		size_t j = m->queue[qi];
		const tp_job_spec_t *js = &m->t->jobs[j];
		/* even a free network leaves it its compute share */
		bool late = now + js->run_s * (1 - js->comm_frac) > shadow;
		started = false;
		err = TP_OK;
		if (job_need(m, js) <= free_gpus(m, m->s)) {
			if (!late)
				err = try_start(m, j, now, shadow, &started,
						&late);
			if (!err && late)
				err = try_start_around(m, j, now, resv, nresv,
						       &started);
		}
		if (err) {
			if (err != TP_ERR_RANGE)
				return err;
			drop(m, j);
			queue_remove(m, qi);
			continue;
		}
		if (started)
			queue_remove(m, qi);
		else
			qi++;
	}
	return TP_OK;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(double), dbl_cmp);
	size_t i = (size_t)ceil(p * (double)n) - 1;
	return v[i >= n ? n - 1 : i];
}

static double mean(const double *v, size_t n)
{
	double s = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : 0;
}

int tp_sim_class_of(size_t nhosts)
{
	return nhosts <= 1 ? 0 : nhosts <= 8 ? 1 : nhosts <= 32 ? 2 : 3;
}

const char *tp_sim_class_name(int cls)
{
	static const char *const names[TP_SIM_NCLASSES] = {"1", "2-8", "9-32",
							   ">32"};

	return cls >= 0 && cls < TP_SIM_NCLASSES ? names[cls] : "?";
}

void tp_sim_result_free(tp_sim_result_t *r)
{
	if (!r)
		return;
	tp_free(r->slowdowns);
	tp_free(r->samples);
	tp_free(r->job_jct_s);
	memset(r, 0, sizeof(*r));
}

/* Keep at most MAX_SAMPLES evenly spread samples for reports. */
static void thin_samples(sim_t *m)
{
	if (m->nsamples <= MAX_SAMPLES)
		return;
	for (size_t i = 0; i < MAX_SAMPLES; i++)
		m->samples[i] = m->samples[i * m->nsamples / MAX_SAMPLES];
	m->nsamples = MAX_SAMPLES;
}

tp_err_t tp_sim_run(const tp_fabric_t *f, const tp_trace_t *t,
		    const tp_policy_t *policy, const tp_policy_params_t *pp,
		    const tp_cost_ctx_t *ctx, uint64_t seed,
		    tp_sim_result_t *out)
{
	return tp_sim_run_opts(f, t, policy, pp, ctx, seed, NULL, out);
}

/* least[] and gpu_hosts (sim_t); false when out of memory. */
static bool least_build(sim_t *m)
{
	size_t nh = tp_fabric_nhosts(m->f), k = 0;
	uint32_t *g = tp_malloc((nh + 1) * sizeof(uint32_t));

	if (!g || !(m->least = tp_malloc((nh + 1) * sizeof(size_t)))) {
		tp_free(g);
		return false;
	}
	for (size_t h = 0; h < nh; h++)
		if (tp_fabric_host(m->f, h)->ngpus > 0)
			g[k++] = (uint32_t)tp_fabric_host(m->f, h)->ngpus;
	tp_sort(g, k, sizeof(*g), tp_u32_cmp);
	m->least[0] = 0;
	for (size_t i = 0; i < k; i++)
		m->least[i + 1] = m->least[i] + g[i];
	m->gpu_hosts = k;
	tp_free(g);
	return true;
}

/* m's arrays for a trace of n jobs; false when out of memory (what was
 * allocated is freed by sim_free). */
static bool sim_alloc(sim_t *m, size_t n)
{
	if (!least_build(m))
		return false;
	m->s = tp_state_create(m->f);
	tp__state_match_cost(m->s, m->ctx);
	m->heap = tp_malloc(n * sizeof(running_t));
	m->queue = tp_malloc(n * sizeof(size_t));
	m->wait = tp_malloc(n * sizeof(double));
	m->jct = tp_malloc(n * sizeof(double));
	if ((m->job_jct = tp_malloc(n * sizeof(double))))
		for (size_t i = 0; i < n; i++)
			m->job_jct[i] = NAN;
	m->slow = tp_malloc(n * sizeof(double));
	m->decide = tp_malloc(n * sizeof(double));
	m->nres = 2 * tp_fabric_nlinks(m->f);
	m->scratch = tp_calloc(m->nres + 1, sizeof(double));
	m->bgcnt = tp_calloc(m->nres + 1, sizeof(uint32_t));
	m->loadsum = tp_calloc(m->nres + 1, sizeof(double));
	m->mark = tp_calloc(m->nres + 1, sizeof(uint32_t));
	m->lbytes = tp_calloc(m->nres + 1, sizeof(double));
	m->touched = tp_malloc((m->nres + 1) * sizeof(uint32_t));
	m->ws = tp_place_ws_create(); /* without it each decision makes its
				       * own */
	if (m->hold_slowdown > 0 && m->hold_s > 0) {
		if (!(m->held_since = tp_malloc(n * sizeof(double))))
			return false;
		for (size_t i = 0; i < n; i++)
			m->held_since[i] = NAN;
	}
	return m->s && m->heap && m->queue && m->wait && m->jct && m->job_jct &&
	       m->slow && m->decide && m->scratch && m->bgcnt && m->loadsum &&
	       m->mark && m->lbytes && m->touched;
}

static void sim_free(sim_t *m)
{
	for (size_t i = 0; i < m->nheap; i++)
		running_free(&m->heap[i]);
	tp_state_destroy(m->s);
	tp__ideal_cache_free(&m->own_ideal);
	tp_place_ws_destroy(m->ws);
	tp_free(m->least);
	tp_free(m->fb_mine);
	tp_free(m->held_since);
	tp_free(m->resv);
	tp_free(m->fb_free);
	tp_free(m->fb_set);
	tp_free(m->fb_gpus);
	tp_free(m->scratch);
	tp_free(m->bgcnt);
	tp_free(m->loadsum);
	tp_free(m->mark);
	tp_free(m->lbytes);
	tp_free(m->touched);
	tp_free(m->heap);
	tp_free(m->queue);
	tp_free(m->wait);
	tp_free(m->jct);
	tp_free(m->job_jct);
	tp_free(m->slow);
	tp_free(m->decide);
	tp_free(m->samples);
}

/* The jobs that end by now: their figures, their load off the links
 * (re-rating the jobs that shared them) and their hosts back. */
static tp_err_t end_jobs(sim_t *m, double now)
{
	while (m->nheap && m->heap[0].end <= now) {
		running_t r = heap_pop(m);
		const tp_job_spec_t *js = &m->t->jobs[r.job];
		int cls = job_class(m, js);
		tp_err_t err;
		m->jct[m->nended++] = r.end - js->submit_s;
		m->end_t = fmax(m->end_t, r.end);
		m->job_jct[r.job] = r.end - js->submit_s;
		m->class_jct[cls] += r.end - js->submit_s;
		m->class_wait[cls] += r.start - js->submit_s;
		m->class_ideal[cls] += js->run_s;
		m->class_n[cls]++;
		/* the work it came for: its ideal run time, but never more
		 * than it held (a placement the cost model prices below the
		 * ideal one) */
		m->useful_gpu_s += r.gpus * fmin(js->run_s, r.end - r.start);
		load_remove(m, &r);
		err = rerate_sharing(m, r.load, r.nload, r.job, now);
		running_free(&r);
		m->epoch++;
		if (err || (err = tp_state_release(m->s, r.job + 1)))
			return err;
		m->changed = true;
	}
	return TP_OK;
}

/* The jobs submitted by now into the queue, from *next_p on. */
static void admit_jobs(sim_t *m, size_t *next_p, double now)
{
	const tp_trace_t *t = m->t;

	while (*next_p < t->njobs && t->jobs[*next_p].submit_s <= now) {
		/* a job bigger than the fabric would block FCFS forever */
		if (job_need(m, &t->jobs[*next_p]) > m->total_gpus) {
			drop(m, *next_p);
		} else {
			m->queue[m->nqueue++] = *next_p;
			m->changed = true;
		}
		(*next_p)++;
	}
}

/* The finished run's figures into *out (which takes the slowdowns and
 * the samples from m). */
static void sim_results(sim_t *m, tp_sim_result_t *out)
{
	memset(out, 0, sizeof(*out));
	out->policy = tp_policy_name(m->policy);
	out->jobs = m->nstarted;
	out->multi_node_jobs = m->nslow;
	out->unplaceable = m->unplaceable;
	out->first_unplaceable = m->first_unplaceable;
	out->makespan_s = m->started ? m->end_t - m->first_t : 0;
	out->useful_util =
	    out->makespan_s > 0
		? m->useful_gpu_s / ((double)m->total_gpus * out->makespan_s)
		: 0;
	out->gpu_util =
	    out->makespan_s > 0
		? m->busy_gpu_s / ((double)m->total_gpus * out->makespan_s)
		: 0;
	out->mean_wait_s = mean(m->wait, m->nstarted);
	out->p50_wait_s = pct(m->wait, m->nstarted, 0.5);
	out->p95_wait_s = pct(m->wait, m->nstarted, 0.95);
	out->mean_jct_s = mean(m->jct, m->nended);
	out->p50_jct_s = pct(m->jct, m->nended, 0.5);
	out->p95_jct_s = pct(m->jct, m->nended, 0.95);
	out->rerated = m->rerated;
	out->held_jobs = m->held;
	out->comm_slowdown_mean = m->nslow ? mean(m->slow, m->nslow) : 1.0;
	out->comm_static_mean =
	    m->nstatic ? m->static_sum / (double)m->nstatic : 0;
	out->comm_free_best_mean =
	    m->nstatic ? m->best_sum / (double)m->nstatic : 0;
	out->min_span_fraction =
	    m->nslow ? (double)m->at_min / (double)m->nslow : 1.0;
	out->min_span_empty_fraction =
	    m->nslow ? (double)m->at_min_empty / (double)m->nslow : 1.0;
	out->cross_spine_bytes = m->cross;
	out->frag_time_mean =
	    out->makespan_s > 0 ? m->frag_int / out->makespan_s : 0;
	for (int c = 0; c < TP_SIM_NCLASSES; c++) {
		out->class_jobs[c] = m->class_n[c];
		double k = m->class_n[c] ? (double)m->class_n[c] : 1;
		out->class_jct_mean_s[c] = m->class_jct[c] / k;
		out->class_wait_mean_s[c] = m->class_wait[c] / k;
		out->class_run_mean_s[c] =
		    (m->class_jct[c] - m->class_wait[c]) / k;
		out->class_ideal_run_mean_s[c] = m->class_ideal[c] / k;
		if (out->makespan_s > 0) {
			out->class_head_short[c] =
			    m->head_t[c][1] / out->makespan_s;
			out->class_head_shape[c] =
			    m->head_t[c][2] / out->makespan_s;
		}
	}
	out->decision_p99_s = pct(m->decide, m->ndecide, 0.99);
	/* slowdowns: keep a sorted copy for plots; p95 sorts in place */
	out->comm_slowdown_p95 = m->nslow ? pct(m->slow, m->nslow, 0.95) : 1.0;
	out->slowdowns = m->slow;
	m->slow = NULL;
	out->samples = m->samples;
	out->nsamples = m->nsamples;
	m->samples = NULL;
	out->job_jct_s = m->job_jct;
	out->njob_jct = m->t->njobs;
	m->job_jct = NULL;
}

tp_err_t tp_sim_run_opts(const tp_fabric_t *f, const tp_trace_t *t,
			 const tp_policy_t *policy,
			 const tp_policy_params_t *pp, const tp_cost_ctx_t *ctx,
			 uint64_t seed, const tp_sim_opts_t *opts,
			 tp_sim_result_t *out)
{
	sim_t m = {.f = f,
		   .t = t,
		   .policy = policy,
		   .pp = pp,
		   .ctx = ctx,
		   .seed = seed,
		   .sources = opts && opts->sources,
		   .hold_slowdown = opts ? opts->hold_slowdown : 0,
		   .hold_s = opts ? opts->hold_s : 0,
		   .ideal = opts ? opts->ideal : NULL,
		   .first_unplaceable = SIZE_MAX,
		   .plan_job = SIZE_MAX};
	size_t next = 0, n;
	tp_err_t err = TP_ERR_NOMEM;

	if (!f || !t || !policy || !out || !(n = t->njobs) || !t->jobs ||
	    m.hold_slowdown < 0 || m.hold_s < 0 || isnan(m.hold_slowdown) ||
	    isnan(m.hold_s))
		return TP_ERR_INVAL;
	if (!m.ideal)
		m.ideal = &m.own_ideal;
	m.total_gpus = tp_fabric_total_gpus(f);
	for (size_t h = 0; h < tp_fabric_nhosts(f); h++)
		if ((int)tp_fabric_host(f, h)->ngpus > m.max_host_gpus)
			m.max_host_gpus = (int)tp_fabric_host(f, h)->ngpus;
	if (!m.total_gpus)
		return TP_ERR_INVAL;
	if (!sim_alloc(&m, n))
		goto out;
	m.first_t = m.last_t = t->jobs[0].submit_s;

	while (next < n || m.nheap || m.nqueue) {
		double now;
		if (next < n &&
		    (!m.nheap || t->jobs[next].submit_s <= m.heap[0].end))
			now = t->jobs[next].submit_s;
		else if (m.nheap)
			now = m.heap[0].end;
		else
			now =
			    m.last_t; /* idle fabric, queued jobs: retry now */
		double wake = hold_wake(&m, m.last_t);
		if (wake < now) {
			now = wake;
			m.changed = true; /* a held job may start */
		}
		advance(&m, now);
		if ((err = end_jobs(&m, now)))
			goto out;
		admit_jobs(&m, &next, now);
		if ((err = schedule(&m, now)))
			goto out;
		/* a head job no policy can ever place (e.g. more whole hosts of
		 * one size than exist) would stall the queue: drop it */
		if (m.nqueue && !m.nheap && next >= n) {
			drop(&m, m.queue[0]);
			queue_remove(&m, 0);
			m.changed = true;
		}
		sample(&m, now);
		head_note(&m);
	}
	thin_samples(&m);
	sim_results(&m, out);
	err = TP_OK;
out:
	sim_free(&m);
	return err;
}
