/*
 * Allocation state: free GPUs per host, job shares, host health, link
 * health and other jobs' traffic.
 *
 * Shares are one flat array of (job, host, GPUs) rather than per-job
 * lists: the simulator allocates and releases tens of thousands of jobs,
 * and one compacting pass on release is cheaper than many small
 * allocations. Per-host counters (free GPUs, jobs) are kept up to date so
 * that the hot questions a policy asks are O(1).
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement_int.h"

/* Job ids travel through JSON as doubles: keep them exact. */
#define MAX_JOB_ID   ((uint64_t)1 << 53)
#define STATE_FORMAT "topoplace-state/1"

static int host_gpus(const tp_fabric_t *f, uint32_t h)
{
	return (int)tp_fabric_host(f, h)->ngpus;
}

/* Host of CA end e of link k, TP_ID_NONE when that end is no host's. */
static uint32_t end_host(const tp_fabric_t *f, const tp_link_t *k, int e)
{
	uint32_t h;

	if (k->kind[e] != TP_NODE_CA)
		return TP_ID_NONE;
	h = tp_fabric_ca(f, k->node[e])->host;
	return h < tp_fabric_nhosts(f) ? h : TP_ID_NONE;
}

/* Every host's cables, from one pass over the links. */
static bool cables_build(tp_state_t *s)
{
	const tp_fabric_t *f = s->f;
	size_t nh = tp_fabric_nhosts(f), nl = tp_fabric_nlinks(f);
	uint32_t *fill;

	s->hlink_off = tp_calloc(nh + 2, sizeof(uint32_t));
	s->hcap = tp_calloc(nh + 1, sizeof(double));
	s->hlive = tp_calloc(nh + 1, sizeof(uint32_t));
	if (!s->hlink_off || !s->hcap || !s->hlive)
		return false;
	for (size_t l = 0; l < nl; l++)
		for (int e = 0; e < 2; e++) {
			uint32_t h = end_host(f, tp_fabric_link(f, l), e);
			if (h != TP_ID_NONE)
				s->hlink_off[h + 1]++;
		}
	for (size_t h = 0; h < nh; h++)
		s->hlink_off[h + 1] += s->hlink_off[h];
	if (!(s->hlink = tp_malloc((s->hlink_off[nh] + 1) * sizeof(uint32_t))))
		return false;
	if (!(fill = tp_malloc((nh + 1) * sizeof(uint32_t))))
		return false;
	memcpy(fill, s->hlink_off, nh * sizeof(uint32_t));
	for (size_t l = 0; l < nl; l++)
		for (int e = 0; e < 2; e++) {
			uint32_t h = end_host(f, tp_fabric_link(f, l), e);
			if (h != TP_ID_NONE)
				s->hlink[fill[h]++] = (uint32_t)l;
		}
	tp_free(fill);
	tp__state_cables_all(s);
	return true;
}

static bool uplinks_build(tp_state_t *s)
{
	size_t nl = tp_fabric_nlinks(s->f), n = 0;
	uint32_t up[2];

	for (size_t l = 0; l < nl; l++)
		if (tp_fabric_link(s->f, l)->active)
			n += tp_fabric_link_upgroups(s->f, l, up);
	s->uplink = tp_malloc((n + 1) * sizeof(uint32_t));
	s->uplink_grp = tp_malloc((n + 1) * sizeof(uint32_t));
	if (!s->uplink || !s->uplink_grp)
		return false;
	for (size_t l = 0; l < nl; l++) {
		size_t m = tp_fabric_link(s->f, l)->active
			       ? tp_fabric_link_upgroups(s->f, l, up)
			       : 0;
		for (size_t i = 0; i < m; i++) {
			s->uplink[s->nuplink] = (uint32_t)l;
			s->uplink_grp[s->nuplink++] = up[i];
		}
	}
	return true;
}

/* A ring splits what a host sends evenly over its live cables, so the
 * slowest of them sets the pace: live cables x the slowest one's Gb/s;
 * with nics_by_rate each cable carries its share: their sum. */
static void cables_host(tp_state_t *s, uint32_t h)
{
	double slow = 0, sum = 0;
	uint32_t live = 0;

	for (uint32_t i = s->hlink_off[h]; i < s->hlink_off[h + 1]; i++) {
		const tp_link_t *k = tp_fabric_link(s->f, s->hlink[i]);
		double g = k->gbps * s->health[s->hlink[i]];
		if (!k->active || !(g > 0))
			continue;
		sum += g;
		if (!live++ || g < slow)
			slow = g;
	}
	s->hcap[h] = s->nics_by_rate ? sum : live * slow;
	s->hlive[h] = live;
}

static void cables_top(tp_state_t *s)
{
	size_t nh = tp_fabric_nhosts(s->f);

	s->cap_top = 0;
	s->ntop = 0;
	for (size_t h = 0; h < nh; h++)
		if (s->hcap[h] > s->cap_top)
			s->cap_top = s->hcap[h];
	for (size_t h = 0; h < nh; h++)
		s->ntop += s->hcap[h] == s->cap_top;
}

void tp__state_cables_all(tp_state_t *s)
{
	for (size_t h = 0; h < tp_fabric_nhosts(s->f); h++)
		cables_host(s, (uint32_t)h);
	cables_top(s);
}

/* One link changed: its hosts again, and the top only when the last host
 * at it fell below (a pass over the hosts, not the links). */
void tp__state_cables_link(tp_state_t *s, uint32_t l)
{
	const tp_link_t *k = tp_fabric_link(s->f, l);

	for (int e = 0; e < 2; e++) {
		uint32_t h = end_host(s->f, k, e);
		if (h == TP_ID_NONE)
			continue;
		double old = s->hcap[h];
		cables_host(s, h);
		double now = s->hcap[h];
		if (now > s->cap_top) {
			s->cap_top = now;
			s->ntop = 1;
		} else if (now == s->cap_top && old != s->cap_top) {
			s->ntop++;
		} else if (old == s->cap_top && now < s->cap_top &&
			   !--s->ntop) {
			cables_top(s);
		}
	}
}

tp_state_t *tp_state_create(const tp_fabric_t *f)
{
	tp_state_t *s;
	size_t nh, nl;

	if (!f)
		return NULL;
	nh = tp_fabric_nhosts(f);
	nl = tp_fabric_nlinks(f);
	if (!(s = tp_calloc(1, sizeof(*s))))
		return NULL;
	s->f = f;
	s->free = tp_malloc((nh + 1) * sizeof(int));
	s->njobs = tp_calloc(nh + 1, sizeof(int));
	s->up = tp_malloc((nh + 1) * sizeof(bool));
	s->health = tp_malloc((nl + 1) * sizeof(double));
	s->bg = tp_calloc(2 * nl + 1, sizeof(double));
	if (!s->free || !s->njobs || !s->up || !s->health || !s->bg) {
		tp_state_destroy(s);
		return NULL;
	}
	for (size_t h = 0; h < nh; h++) {
		s->free[h] = host_gpus(f, (uint32_t)h);
		s->up[h] = true;
	}
	for (size_t l = 0; l < nl; l++)
		s->health[l] = 1.0;
	if (!cables_build(s) || !uplinks_build(s)) {
		tp_state_destroy(s);
		return NULL;
	}
	return s;
}

void tp_state_destroy(tp_state_t *s)
{
	if (!s)
		return;
	tp_free(s->free);
	tp_free(s->njobs);
	tp_free(s->up);
	tp_free(s->health);
	tp_free(s->bg);
	tp_free(s->share);
	tp_free(s->hlink_off);
	tp_free(s->hlink);
	tp_free(s->hcap);
	tp_free(s->hlive);
	tp_free(s->uplink);
	tp_free(s->uplink_grp);
	tp_free(s);
}

static void *dup_mem(const void *p, size_t n)
{
	void *q = tp_malloc(n ? n : 1);

	if (q && n)
		memcpy(q, p, n);
	return q;
}

tp_state_t *tp_state_clone(const tp_state_t *s)
{
	tp_state_t *c;
	size_t nh, nl;

	if (!s)
		return NULL;
	nh = tp_fabric_nhosts(s->f);
	nl = tp_fabric_nlinks(s->f);
	if (!(c = tp_calloc(1, sizeof(*c))))
		return NULL;
	c->f = s->f;
	c->free = dup_mem(s->free, nh * sizeof(int));
	c->njobs = dup_mem(s->njobs, nh * sizeof(int));
	c->up = dup_mem(s->up, nh * sizeof(bool));
	c->health = dup_mem(s->health, nl * sizeof(double));
	c->bg = dup_mem(s->bg, 2 * nl * sizeof(double));
	c->share = dup_mem(s->share, s->nshare * sizeof(tp__share_t));
	c->hlink_off = dup_mem(s->hlink_off, (nh + 1) * sizeof(uint32_t));
	c->hlink = dup_mem(s->hlink, s->hlink_off[nh] * sizeof(uint32_t));
	c->hcap = dup_mem(s->hcap, nh * sizeof(double));
	c->hlive = dup_mem(s->hlive, nh * sizeof(uint32_t));
	c->uplink = dup_mem(s->uplink, s->nuplink * sizeof(uint32_t));
	c->uplink_grp = dup_mem(s->uplink_grp, s->nuplink * sizeof(uint32_t));
	c->nuplink = s->nuplink;
	c->nics_by_rate = s->nics_by_rate;
	if (!c->free || !c->njobs || !c->up || !c->health || !c->bg ||
	    !c->share || !c->hlink_off || !c->hlink || !c->hcap || !c->hlive ||
	    !c->uplink || !c->uplink_grp) {
		tp_state_destroy(c);
		return NULL;
	}
	c->nshare = c->capshare = s->nshare;
	c->busy = s->busy;
	c->cap_top = s->cap_top;
	c->ntop = s->ntop;
	return c;
}

const tp_fabric_t *tp_state_fabric(const tp_state_t *s)
{
	return s ? s->f : NULL;
}

static bool host_ok(const tp_state_t *s, uint32_t host)
{
	return s && host < tp_fabric_nhosts(s->f);
}

int tp_state_free_gpus(const tp_state_t *s, uint32_t host)
{
	return host_ok(s, host) ? s->free[host] : 0;
}

bool tp_state_host_up(const tp_state_t *s, uint32_t host)
{
	return host_ok(s, host) && s->up[host];
}

bool tp_state_host_idle(const tp_state_t *s, uint32_t host)
{
	return host_ok(s, host) && s->njobs[host] == 0;
}

typedef struct cabled {
	double gbps;
	uint32_t h;
} cabled_t;

/* Best cabled first; tp_sort is stable, so equals keep their order. */
static int cabled_cmp(const void *pa, const void *pb)
{
	const cabled_t *a = pa, *b = pb;

	return (a->gbps < b->gbps) - (a->gbps > b->gbps);
}

tp_err_t tp__cabled_first(const tp_state_t *s, uint32_t *hosts, size_t n,
			  size_t need)
{
	cabled_t *v;

	if (need > n)
		need = n;
	if (!need)
		return TP_OK;
	if (!(v = tp_malloc(n * sizeof(*v))))
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = (cabled_t){.gbps = s->hcap[hosts[i]], .h = hosts[i]};
	tp_sort(v, n, sizeof(*v), cabled_cmp);
	for (size_t i = 0; i < n; i++)
		hosts[i] = v[i].h;
	tp_free(v);
	return TP_OK;
}

size_t tp_state_host_cables(const tp_state_t *s, uint32_t host,
			    double *ring_gbps_p, bool *weak_p)
{
	if (!host_ok(s, host))
		return 0;
	if (ring_gbps_p)
		*ring_gbps_p = s->hcap[host];
	if (weak_p)
		*weak_p = tp__state_weak(s, host);
	return s->hlive[host];
}

void tp_state_set_nics_by_rate(tp_state_t *s, bool on)
{
	if (!s || s->nics_by_rate == on)
		return;
	s->nics_by_rate = on;
	tp__state_cables_all(s);
}

size_t tp_state_weak_hosts(const tp_state_t *s)
{
	size_t n = 0;

	for (uint32_t h = 0; s && h < tp_fabric_nhosts(s->f); h++)
		n += tp__state_weak(s, h);
	return n;
}

tp_err_t tp_state_set_host_up(tp_state_t *s, uint32_t host, bool up)
{
	if (!s)
		return TP_ERR_INVAL;
	if (!host_ok(s, host))
		return TP_ERR_RANGE;
	/* jobs already there keep their GPUs: a node can fail under a job */
	s->up[host] = up;
	return TP_OK;
}

/* A health under a millionth is a dead link: a capacity that small
 * prices as infinite time (no finite answer) where a dead link is
 * routed around or refused. */
static double live_health(double h)
{
	return h < 1e-6 ? 0 : h;
}

tp_err_t tp_state_set_link(tp_state_t *s, uint32_t link, double health,
			   double background_gbps)
{
	if (!s)
		return TP_ERR_INVAL;
	if (link >= tp_fabric_nlinks(s->f) || !(health >= 0 && health <= 1) ||
	    !(background_gbps >= 0) || isinf(background_gbps))
		return TP_ERR_RANGE;
	s->health[link] = live_health(health);
	s->bg[2 * link] = s->bg[2 * link + 1] = background_gbps;
	tp__state_cables_link(s, link);
	return TP_OK;
}

double tp_state_link_health(const tp_state_t *s, uint32_t link)
{
	if (!s || link >= tp_fabric_nlinks(s->f))
		return 1.0;
	return s->health[link];
}

double tp_state_link_background(const tp_state_t *s, uint32_t link)
{
	if (!s || link >= tp_fabric_nlinks(s->f))
		return 0.0;
	return s->bg[2 * link] > s->bg[2 * link + 1] ? s->bg[2 * link]
						     : s->bg[2 * link + 1];
}

/* A new share of job on host h, without GPUs yet, in room the caller
 * made; its slot (1 + its index). */
static size_t share_push(tp_state_t *s, uint64_t job, uint32_t h)
{
	s->share[s->nshare] = (tp__share_t){.job = job, .host = h, .gpus = 0};
	s->njobs[h]++;
	return ++s->nshare;
}

/* gpus more GPUs to the share in slot, taken from its host. */
static void share_take(tp_state_t *s, size_t slot, int gpus)
{
	tp__share_t *sh = &s->share[slot - 1];

	sh->gpus += gpus;
	s->free[sh->host] -= gpus;
	s->busy += (size_t)gpus;
}

tp_err_t tp_state_alloc(tp_state_t *s, uint64_t job_id, const uint32_t *hosts,
			const int *gpus, size_t n)
{
	size_t nh, need;
	size_t *slot; /* per host: 1 + index of job_id's share there, 0: none */
	int *ask;
	tp_err_t err = TP_ERR_RANGE;

	if (!s || (n && (!hosts || !gpus)) || job_id == 0 ||
	    job_id > MAX_JOB_ID)
		return TP_ERR_INVAL;
	nh = tp_fabric_nhosts(s->f);
	ask = tp_calloc(nh + 1, sizeof(int));
	slot = tp_calloc(nh + 1, sizeof(size_t));
	if (!ask || !slot) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	/* the same host may appear twice in one call: check sums, not items,
	 * so that a refused call changes nothing */
	for (size_t i = 0; i < n; i++) {
		if (gpus[i] < 0) {
			err = TP_ERR_INVAL;
			goto out;
		}
		if (hosts[i] >= nh || !s->up[hosts[i]] ||
		    gpus[i] > s->free[hosts[i]] - ask[hosts[i]])
			goto out;
		ask[hosts[i]] += gpus[i];
	}
	/* one pass over the shares, not one per host: the simulator calls
	 * this for every job start */
	for (size_t i = 0; i < s->nshare; i++)
		if (s->share[i].job == job_id)
			slot[s->share[i].host] = i + 1;
	need = s->nshare;
	for (size_t i = 0; i < n; i++)
		if (!slot[hosts[i]] && ask[hosts[i]] >= 0) {
			need++;
			ask[hosts[i]] = -1; /* counted */
		}
	if (need > s->capshare) {
		void *arr = s->share;
		if (tp_grow(&arr, &s->capshare, need, sizeof(tp__share_t))) {
			err = TP_ERR_NOMEM;
			goto out;
		}
		s->share = arr;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t h = hosts[i];
		if (!slot[h])
			slot[h] = share_push(s, job_id, h);
		share_take(s, slot[h], gpus[i]);
	}
	err = TP_OK;
out:
	tp_free(ask);
	tp_free(slot);
	return err;
}

tp_err_t tp_state_release(tp_state_t *s, uint64_t job_id)
{
	size_t w = 0;
	bool found = false;

	if (!s)
		return TP_ERR_INVAL;
	for (size_t i = 0; i < s->nshare; i++) {
		tp__share_t *sh = &s->share[i];
		if (sh->job != job_id) {
			s->share[w++] = *sh;
			continue;
		}
		found = true;
		s->free[sh->host] += sh->gpus;
		s->njobs[sh->host]--;
		s->busy -= (size_t)sh->gpus;
	}
	s->nshare = w;
	return found ? TP_OK : TP_ERR_NOTFOUND;
}

uint64_t tp_state_host_job(const tp_state_t *s, uint32_t host)
{
	uint64_t best = 0;
	int most = -1;

	if (!host_ok(s, host) || !s->njobs[host])
		return 0;
	/* ties go to the lower id so pictures do not flicker */
	for (size_t i = 0; i < s->nshare; i++) {
		const tp__share_t *sh = &s->share[i];
		if (sh->host != host)
			continue;
		if (sh->gpus > most || (sh->gpus == most && sh->job < best)) {
			most = sh->gpus;
			best = sh->job;
		}
	}
	return best;
}

size_t tp_state_busy_gpus(const tp_state_t *s)
{
	return s ? s->busy : 0;
}

/* ---- JSON ---- */

static bool add(cJSON *obj, const char *key, cJSON *item)
{
	return item && cJSON_AddItemToObject(obj, key, item);
}

static bool push(cJSON *arr, cJSON *item)
{
	return item && cJSON_AddItemToArray(arr, item);
}

static int share_cmp(const void *x, const void *y)
{
	const tp__share_t *a = x, *b = y;

	if (a->job != b->job)
		return a->job < b->job ? -1 : 1;
	return a->host < b->host ? -1 : a->host > b->host;
}

/* Jobs by ascending id, hosts by index: the same state always writes the
 * same text, whatever order the jobs arrived in. */
static cJSON *state_json(const tp_state_t *s, tp__share_t *sorted)
{
	const tp_fabric_t *f = s->f;
	cJSON *root = cJSON_CreateObject(), *arr, *job = NULL, *hosts = NULL;
	char digest[TP_LINKS_DIGEST_LEN];

	tp_fabric_links_digest_hex(f, digest);
	if (!root || !add(root, "format", cJSON_CreateString(STATE_FORMAT)) ||
	    !add(root, "links_digest", cJSON_CreateString(digest)) ||
	    !add(root, "down", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t h = 0; h < tp_fabric_nhosts(f); h++)
		if (!s->up[h] &&
		    !push(arr, cJSON_CreateString(tp_fabric_host(f, h)->name)))
			goto fail;
	if (!add(root, "jobs", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t i = 0; i < s->nshare; i++) {
		const tp__share_t *sh = &sorted[i];
		if (!i || sh->job != sorted[i - 1].job) {
			job = cJSON_CreateObject();
			if (!push(arr, job) ||
			    !add(job, "id",
				 cJSON_CreateNumber((double)sh->job)) ||
			    !add(job, "hosts", hosts = cJSON_CreateObject()))
				goto fail;
		}
		if (!add(hosts, tp_fabric_host(f, sh->host)->name,
			 cJSON_CreateNumber(sh->gpus)))
			goto fail;
	}
	if (!add(root, "links", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t l = 0; l < tp_fabric_nlinks(f); l++) {
		cJSON *o, *bg;
		double b0 = s->bg[2 * l], b1 = s->bg[2 * l + 1];
		/* traffic over a link's capacity (tp_traffic_apply's fair
		 * shares on a full link) prices as the full link: the file
		 * says that, which the loader takes */
		double cap = tp_fabric_link(f, l)->gbps;
		b0 = b0 > cap ? cap : b0;
		b1 = b1 > cap ? cap : b1;
		if (s->health[l] == 1.0 && b0 == 0.0 && b1 == 0.0)
			continue;
		o = cJSON_CreateObject();
		/* one number when both directions carry the same */
		bg = b0 == b1
			 ? cJSON_CreateNumber(b0)
			 : cJSON_CreateDoubleArray((const double[]){b0, b1}, 2);
		if (!push(arr, o) ||
		    !add(o, "link", cJSON_CreateNumber((double)l)) ||
		    !add(o, "health", cJSON_CreateNumber(s->health[l])) ||
		    !add(o, "background_gbps", bg))
			goto fail;
	}
	return root;
fail:
	cJSON_Delete(root);
	return NULL;
}

void tp_state_jobs_free(tp_state_job_t *jobs, size_t n)
{
	for (size_t i = 0; jobs && i < n; i++) {
		tp_free(jobs[i].hosts);
		tp_free(jobs[i].gpus);
	}
	tp_free(jobs);
}

tp_err_t tp_state_jobs(const tp_state_t *s, tp_state_job_t **jobs_p,
		       size_t *n_p)
{
	tp__share_t *sorted;
	tp_state_job_t *jobs = NULL;
	size_t n = 0;

	if (!s || !jobs_p || !n_p)
		return TP_ERR_INVAL;
	if (!(sorted = dup_mem(s->share, s->nshare * sizeof(tp__share_t))))
		return TP_ERR_NOMEM;
	qsort(sorted, s->nshare, sizeof(*sorted), share_cmp);
	for (size_t i = 0; i < s->nshare; i++)
		n += !i || sorted[i].job != sorted[i - 1].job;
	if (n && !(jobs = tp_calloc(n, sizeof(*jobs))))
		goto nomem;
	for (size_t i = 0, j = 0; i < s->nshare; j++) {
		size_t k = i;
		while (k < s->nshare && sorted[k].job == sorted[i].job)
			k++;
		tp_state_job_t *jb = &jobs[j];
		jb->id = sorted[i].job;
		jb->hosts = tp_malloc((k - i) * sizeof(uint32_t));
		jb->gpus = tp_malloc((k - i) * sizeof(int));
		if (!jb->hosts || !jb->gpus)
			goto nomem;
		for (; i < k; i++) {
			jb->hosts[jb->nhosts] = sorted[i].host;
			jb->gpus[jb->nhosts++] = sorted[i].gpus;
			jb->total_gpus += (size_t)sorted[i].gpus;
		}
	}
	tp_free(sorted);
	*jobs_p = jobs;
	*n_p = n;
	return TP_OK;
nomem:
	tp_free(sorted);
	tp_state_jobs_free(jobs, n);
	return TP_ERR_NOMEM;
}

tp_err_t tp_state_to_json(const tp_state_t *s, char **json_p)
{
	tp__share_t *sorted;
	cJSON *root;
	char *text;

	if (!s || !json_p)
		return TP_ERR_INVAL;
	if (!(sorted = dup_mem(s->share, s->nshare * sizeof(tp__share_t))))
		return TP_ERR_NOMEM;
	if (s->nshare)
		qsort(sorted, s->nshare, sizeof(*sorted), share_cmp);
	root = state_json(s, sorted);
	tp_free(sorted);
	if (!root)
		return TP_ERR_NOMEM;
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!text)
		return TP_ERR_NOMEM;
	/* cJSON allocates with its own hooks; hand back our allocation */
	*json_p = tp_strdup(text);
	cJSON_free(text);
	return *json_p ? TP_OK : TP_ERR_NOMEM;
}

typedef struct loader {
	const char *name;
	const tp_fabric_t *f;
	tp_state_t *s;
	char *err;
	/* per host: 1 + the index of the last job that listed it, so a
	 * host repeated in one job is found without a scan of the job */
	size_t *host_job;
	/* per link: 1 + the index in "links" of its first entry */
	size_t *link_at;
} loader_t;

/* The loader's first error, "name: message" (tp_first_error). */
#define lfail(ld_, code_, ...)                                                 \
	tp_first_error(&(ld_)->err, (ld_)->name, (code_), __VA_ARGS__)

/* Strict: a misspelt key would otherwise silently mean "healthy" or
 * "free", which is the wrong way to fail for a placement input; a key
 * given twice (cJSON takes the first) leaves unknown which was meant. */
static tp_err_t only_keys(loader_t *ld, const cJSON *o, const char *where,
			  const char *const *keys)
{
	const cJSON *it;
	uint32_t seen = 0;

	cJSON_ArrayForEach(it, o)
	{
		size_t k = 0;
		while (keys[k] && strcmp(it->string, keys[k]) != 0)
			k++;
		if (!keys[k])
			return lfail(ld, TP_ERR_PARSE, "%s%s%s: unknown key",
				     where, *where ? "." : "", it->string);
		if (seen & 1u << k)
			return lfail(ld, TP_ERR_PARSE,
				     "%s%s%s: key given twice", where,
				     *where ? "." : "", it->string);
		seen |= 1u << k;
	}
	return TP_OK;
}

static bool whole(const cJSON *it, double lo, double hi)
{
	return cJSON_IsNumber(it) &&
	       it->valuedouble == floor(it->valuedouble) &&
	       it->valuedouble >= lo && it->valuedouble <= hi;
}

static tp_err_t load_down(loader_t *ld, const cJSON *arr)
{
	const cJSON *it;
	int i = 0;

	if (!cJSON_IsArray(arr))
		return lfail(ld, TP_ERR_PARSE,
			     "down: expected an array of host names");
	cJSON_ArrayForEach(it, arr)
	{
		uint32_t h;
		if (!cJSON_IsString(it))
			return lfail(ld, TP_ERR_PARSE,
				     "down[%d]: expected a host name", i);
		h = tp_fabric_host_find(ld->f, it->valuestring);
		if (h == TP_ID_NONE)
			return lfail(ld, TP_ERR_PARSE,
				     "down[%d].%s: unknown host", i,
				     it->valuestring);
		ld->s->up[h] = false;
		i++;
	}
	return TP_OK;
}

typedef struct job_ref {
	uint64_t id;
	int index;
} job_ref_t;

static int ref_cmp(const void *x, const void *y)
{
	const job_ref_t *a = x, *b = y;

	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->index - b->index;
}

/* Shape and id of jobs[i]; the hosts are loaded by load_job. */
static tp_err_t check_job(loader_t *ld, const cJSON *o, int i, uint64_t *id_p)
{
	static const char *const keys[] = {"id", "hosts", NULL};
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(o, "hosts");
	char where[32];

	snprintf(where, sizeof(where), "jobs[%d]", i);
	if (!cJSON_IsObject(o))
		return lfail(ld, TP_ERR_PARSE, "%s: expected an object", where);
	if (only_keys(ld, o, where, keys))
		return TP_ERR_PARSE;
	if (!whole(id, 1, (double)MAX_JOB_ID))
		return lfail(ld, TP_ERR_PARSE,
			     "%s.id: expected an integer 1..2^53", where);
	if (!cJSON_IsObject(hosts))
		return lfail(ld, TP_ERR_PARSE,
			     "%s.hosts: expected an object {\"host\": GPUs}",
			     where);
	*id_p = (uint64_t)id->valuedouble;
	return TP_OK;
}

/* Ids first, so a repeated id is reported as such and not as whatever
 * its merged hosts would trip over. Sorting keeps big files linear-ish. */
static tp_err_t check_jobs(loader_t *ld, const cJSON *jobs)
{
	int n = cJSON_GetArraySize(jobs), i = 0, dup = -1;
	job_ref_t *v = tp_malloc(((size_t)n + 1) * sizeof(job_ref_t));
	const cJSON *it;
	tp_err_t err = TP_OK;

	if (!v)
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	cJSON_ArrayForEach(it, jobs)
	{
		if ((err = check_job(ld, it, i, &v[i].id)))
			goto out;
		v[i].index = i;
		i++;
	}
	qsort(v, (size_t)n, sizeof(*v), ref_cmp);
	for (i = 1; i < n; i++)
		if (v[i].id == v[i - 1].id &&
		    (dup < 0 || v[i].index < v[dup].index))
			dup = i;
	if (dup >= 0)
		err = lfail(ld, TP_ERR_EXISTS,
			    "jobs[%d].id: job %llu appears twice", v[dup].index,
			    (unsigned long long)v[dup].id);
out:
	tp_free(v);
	return err;
}

/* The job's shares appended directly: its id is new (check_jobs), each
 * host is listed once and has the GPUs free (checked here), and no host
 * is down yet (load_root reads "down" after the jobs). One pass over the
 * job's hosts: tp_state_alloc per host would look at every share and
 * every host each time, quadratic in a big LinkState's jobs. */
static tp_err_t load_job(loader_t *ld, const cJSON *o, int i)
{
	const cJSON *hosts = cJSON_GetObjectItemCaseSensitive(o, "hosts");
	uint64_t job =
	    (uint64_t)cJSON_GetObjectItemCaseSensitive(o, "id")->valuedouble;
	tp_state_t *s = ld->s;
	void *arr = s->share;
	const cJSON *it;
	size_t k = 0;

	cJSON_ArrayForEach(it, hosts) k++;
	if (tp_grow(&arr, &s->capshare, s->nshare + k, sizeof(tp__share_t)))
		return lfail(ld, TP_ERR_NOMEM, "out of memory");
	s->share = arr;
	cJSON_ArrayForEach(it, hosts)
	{
		uint32_t h = tp_fabric_host_find(ld->f, it->string);
		int n;

		if (h == TP_ID_NONE)
			return lfail(ld, TP_ERR_PARSE,
				     "jobs[%d].hosts.%s: unknown host", i,
				     it->string);
		if (!whole(it, 0, 1 << 20))
			return lfail(ld, TP_ERR_PARSE,
				     "jobs[%d].hosts.%s: expected a GPU count",
				     i, it->string);
		n = (int)it->valuedouble;
		if (ld->host_job[h] == (size_t)i + 1)
			return lfail(ld, TP_ERR_EXISTS,
				     "jobs[%d].hosts.%s: host listed twice", i,
				     it->string);
		ld->host_job[h] = (size_t)i + 1;
		if (n > s->free[h])
			return lfail(
			    ld, TP_ERR_RANGE,
			    "jobs[%d].hosts.%s: %d GPUs asked, %d free of %d",
			    i, it->string, n, s->free[h], host_gpus(ld->f, h));
		share_take(s, share_push(s, job, h), n);
	}
	return TP_OK;
}

static bool gbps_ok(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	       isfinite(v->valuedouble);
}

/* background_gbps: one number for both directions, or one per direction
 * in the link's node order. */
static bool gbps_pair(const cJSON *b, double out[2])
{
	if (gbps_ok(b)) {
		out[0] = out[1] = b->valuedouble;
		return true;
	}
	if (!cJSON_IsArray(b) || cJSON_GetArraySize(b) != 2 ||
	    !gbps_ok(cJSON_GetArrayItem(b, 0)) ||
	    !gbps_ok(cJSON_GetArrayItem(b, 1)))
		return false;
	out[0] = cJSON_GetArrayItem(b, 0)->valuedouble;
	out[1] = cJSON_GetArrayItem(b, 1)->valuedouble;
	return true;
}

static tp_err_t load_link(loader_t *ld, const cJSON *o, int i)
{
	/* "reason": the monitor's words for a person; not read. */
	static const char *const keys[] = {"link", "health", "background_gbps",
					   "reason", NULL};
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "link");
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "health");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "background_gbps");
	size_t nl = tp_fabric_nlinks(ld->f);
	char where[32];
	uint32_t li;

	snprintf(where, sizeof(where), "links[%d]", i);
	if (!cJSON_IsObject(o))
		return lfail(ld, TP_ERR_PARSE, "%s: expected an object", where);
	if (only_keys(ld, o, where, keys))
		return TP_ERR_PARSE;
	if (!nl || !whole(l, 0, (double)nl - 1))
		return lfail(ld, TP_ERR_RANGE,
			     "%s.link: expected a link index 0..%zu", where,
			     nl ? nl - 1 : 0);
	li = (uint32_t)l->valuedouble;
	/* two entries for one link: which one the writer meant is unknown */
	if (ld->link_at[li])
		return lfail(ld, TP_ERR_EXISTS,
			     "%s.link: link %u already given in links[%zu]",
			     where, li, ld->link_at[li] - 1);
	ld->link_at[li] = (size_t)i + 1;
	if (h &&
	    !(cJSON_IsNumber(h) && h->valuedouble >= 0 && h->valuedouble <= 1))
		return lfail(ld, TP_ERR_RANGE,
			     "%s.health: expected a number 0..1", where);
	double bg[2] = {0, 0}, cap = tp_fabric_link(ld->f, li)->gbps;
	if (b && !gbps_pair(b, bg))
		return lfail(
		    ld, TP_ERR_RANGE,
		    "%s.background_gbps: expected a finite number >= 0 "
		    "or a pair of them",
		    where);
	/* as health above 1: more traffic than the cable carries is a
	 * broken writer, not a measurement to price with */
	if (bg[0] > cap || bg[1] > cap)
		return lfail(ld, TP_ERR_RANGE,
			     "%s.background_gbps: %g Gb/s is more than link "
			     "%u's %g Gb/s",
			     where, bg[0] > cap ? bg[0] : bg[1], li, cap);
	ld->s->health[li] = h ? live_health(h->valuedouble) : 1.0;
	ld->s->bg[2 * li] = bg[0];
	ld->s->bg[2 * li + 1] = bg[1];
	return TP_OK;
}

static tp_err_t load_root(loader_t *ld, const cJSON *root)
{
	static const char *const keys[] = {"format", "links_digest", "down",
					   "jobs",   "links",	     NULL};
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
	const cJSON *dig =
	    cJSON_GetObjectItemCaseSensitive(root, "links_digest");
	char here[TP_LINKS_DIGEST_LEN];
	const cJSON *down = cJSON_GetObjectItemCaseSensitive(root, "down");
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
	const cJSON *links = cJSON_GetObjectItemCaseSensitive(root, "links");
	const cJSON *it;
	tp_err_t err;
	int i;

	if (!cJSON_IsObject(root))
		return lfail(ld, TP_ERR_PARSE, "expected a JSON object");
	if (!cJSON_IsString(fmt))
		return lfail(ld, TP_ERR_FORMAT,
			     "format: missing; expected \"%s\"", STATE_FORMAT);
	if (strcmp(fmt->valuestring, STATE_FORMAT) != 0) {
		char ex[TP_EXCERPT_SIZE];
		return lfail(ld, TP_ERR_FORMAT, "format: \"%s\" is not \"%s\"",
			     tp_excerpt(fmt->valuestring, ex, sizeof(ex)),
			     STATE_FORMAT);
	}
	if ((err = only_keys(ld, root, "", keys)))
		return err;
	/* link indices mean this fabric's links only when the file was
	 * written for it (a regenerated fabric numbers its links anew) */
	tp_fabric_links_digest_hex(ld->f, here);
	if (dig && !cJSON_IsString(dig))
		return lfail(ld, TP_ERR_PARSE,
			     "links_digest: expected a string");
	if (dig && strcmp(dig->valuestring, here) != 0)
		return lfail(ld, TP_ERR_FORMAT,
			     "links_digest: written for another fabric (%.20s, "
			     "this one's is %s): its link numbers are not "
			     "this fabric's",
			     dig->valuestring, here);
	/* jobs before down: a job may sit on a host that failed under it,
	 * and allocation refuses down hosts */
	if (jobs) {
		if (!cJSON_IsArray(jobs))
			return lfail(ld, TP_ERR_PARSE,
				     "jobs: expected an array");
		if ((err = check_jobs(ld, jobs)))
			return err;
		i = 0;
		cJSON_ArrayForEach(
		    it, jobs) if ((err = load_job(ld, it, i++))) return err;
	}
	if (down && (err = load_down(ld, down)))
		return err;
	if (links) {
		if (!cJSON_IsArray(links))
			return lfail(ld, TP_ERR_PARSE,
				     "links: expected an array");
		i = 0;
		cJSON_ArrayForEach(
		    it, links) if ((err = load_link(ld, it, i++))) return err;
	}
	return TP_OK;
}

/* JSON values in buf, about (one a container and one after each comma,
 * strings skipped): what the parser allocates a node for. */
static size_t json_values(const char *buf, size_t len)
{
	size_t n = 1;
	bool str = false;

	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		if (str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				str = false;
		} else if (c == '"') {
			str = true;
		} else if (c == ',' || c == '[' || c == '{') {
			n++;
		}
	}
	return n;
}

/* The most values a state file of f needs: a link's object holds at most
 * 7 (link, health, reason, a background pair), a job's id, hosts and a
 * GPU count a host (a host holds at most a job a GPU, or one), down a
 * name a host; twice that and some, for the room an honest file takes.
 * The parser takes about 64 bytes a value, so a file of little values
 * (a long array of zeros) is refused before it takes gigabytes. */
static size_t values_max(const tp_fabric_t *f)
{
	return 1024 + 16 * tp_fabric_nlinks(f) +
	       16 * (tp_fabric_nhosts(f) + tp_fabric_total_gpus(f));
}

/* The text in buf (len bytes, read from ld->name) into *s_p. */
static tp_err_t load_text(loader_t *ld, const char *buf, size_t len,
			  tp_state_t **s_p)
{
	const char *end = NULL;
	char bad[64];
	size_t at;
	cJSON *root;
	tp_err_t err;

	/* bytes cJSON would skip or cut a name at */
	if (tp_json_bad_text(buf, len, bad, sizeof(bad)))
		return lfail(ld, TP_ERR_PARSE, "%s", bad);
	size_t nv = json_values(buf, len), most = values_max(ld->f);
	if (nv > most)
		return lfail(ld, TP_ERR_RANGE,
			     "%zu JSON values, more than a state file of this "
			     "fabric holds (%zu)",
			     nv, most);
	/* the parser stops after the first value: text after it is no
	 * state file either (two writers' files run together) */
	root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
	if (root)
		at += tp_json_space(buf + at, len - at);
	if (!root || at < len) {
		cJSON_Delete(root);
		return lfail(ld, TP_ERR_PARSE, "not valid JSON near byte %zu",
			     at);
	}
	ld->s = tp_state_create(ld->f);
	ld->host_job = tp_calloc(tp_fabric_nhosts(ld->f) + 1, sizeof(size_t));
	ld->link_at = tp_calloc(tp_fabric_nlinks(ld->f) + 1, sizeof(size_t));
	if (!ld->s || !ld->host_job || !ld->link_at)
		err = lfail(ld, TP_ERR_NOMEM, "out of memory");
	else
		err = load_root(ld, root);
	if (!err) {
		tp__state_cables_all(ld->s);
		*s_p = ld->s;
		ld->s = NULL;
	}
	tp_state_destroy(ld->s);
	ld->s = NULL;
	tp_free(ld->host_job);
	tp_free(ld->link_at);
	cJSON_Delete(root);
	return err;
}

/* max: 0 any file (tp_file_read), else a regular file of at most max
 * bytes. */
static tp_err_t load_file(const tp_fabric_t *f, const char *path, size_t max,
			  tp_state_t **s_p, char **err_p)
{
	loader_t ld = {.name = path, .f = f};
	char *buf = NULL;
	size_t len;
	tp_err_t err;

	if (!f || !path || !s_p)
		return TP_ERR_INVAL;
	err = max ? tp_file_read_regular(path, max, &buf, &len)
		  : tp_file_read(path, &buf, &len);
	if (err == TP_ERR_RANGE && max == TP_STATE_FILE_MAX)
		lfail(&ld, err, "larger than %zu MiB (TP_STATE_FILE_MAX)",
		      TP_STATE_FILE_MAX >> 20);
	else if (err == TP_ERR_RANGE && max)
		lfail(&ld, err, "larger than %zu bytes", max);
	else if (err)
		lfail(&ld, err, "%s", tp_file_strerror(err));
	else
		err = load_text(&ld, buf, len, s_p);
	if (err && err_p) {
		*err_p = ld.err;
		ld.err = NULL;
	}
	tp_free(ld.err);
	tp_free(buf);
	return err;
}

tp_err_t tp_state_load_json(const tp_fabric_t *f, const char *path,
			    tp_state_t **s_p, char **err_p)
{
	return load_file(f, path, 0, s_p, err_p);
}

tp_err_t tp_state_load_json_regular(const tp_fabric_t *f, const char *path,
				    tp_state_t **s_p, char **err_p)
{
	return load_file(f, path, TP_STATE_FILE_MAX, s_p, err_p);
}

tp_err_t tp_state_load_json_capped(const tp_fabric_t *f, const char *path,
				   size_t max, tp_state_t **s_p, char **err_p)
{
	if (!max || max > TP_STATE_FILE_MAX)
		return TP_ERR_INVAL;
	return load_file(f, path, max, s_p, err_p);
}
