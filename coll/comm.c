/* comm.c - communicators: schedules from the plan, life cycle, and the
 * public collectives dispatching to algo/.
 *
 * Notes: the schedules are resolved into rank arrays once at init so a
 * call only walks arrays. AVG is reduced as SUM and divided once at the
 * end, by every rank on identical sums, so every rank ends with the same
 * bits. */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "coll_int.h"
#include "tp_runtime.h"

#define W TP__COLL_WINDOW

int64_t tp__coll_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int tp__coll_poll_ms(int64_t left_ns)
{
	if (left_ns <= 0)
		return 0;
	int64_t ms = left_ns / 1000000 + (left_ns % 1000000 != 0);
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

const char *tp__coll_peer_name(const tp_coll_comm_t *c, int peer, char *buf,
			       size_t len)
{
	int r = peer % c->size;

	snprintf(buf, len, "rank %d (host %s)", r,
		 c->host_of ? c->host_of[r] : "?");
	return buf;
}

/* ---- fork -------------------------------------------------------------
 *
 * A child forked after init (a DataLoader worker, a subprocess not yet
 * exec'ed) shares the communicator's sockets and wake-up FIFOs. Were it
 * to keep them open, a rank that dies would leave its connections open
 * in the child, and its peers would time out instead of seeing it gone
 * (PEER_LOST); were it to use them, its bytes would mix with the
 * parent's. The child closes its copies at once (close(), memcpy and
 * the unlock of the lock it inherited held: what a handler in a child of
 * a threaded process may call) and its communicators fail every call;
 * destroying them in the child frees its own memory only (the shared
 * memory names were unlinked at init). The list of live communicators is
 * locked across fork so the child sees it whole, and connections are
 * closed under the same lock (reg_remove, tp__coll_break), so a child
 * never sees one half closed or an fd number already reused.
 */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static tp_coll_comm_t *reg_head;
static const char forked_detail[] =
    "communicator used in a process forked after its init (its "
    "connections are the parent's)";

static void fork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void fork_child(void)
{
	for (tp_coll_comm_t *c = reg_head; c; c = c->reg_next) {
		for (int i = 0; c->peers && i < 2 * c->size; i++) {
			tp__coll_peer_t *p = &c->peers[i];
			tp__coll_tcp_close_peer(p); /* close() only */
			close_fd(&p->wake_rd);
			close_fd(&p->wake_wr);
		}
		c->broken = c->forked = true;
		c->call = NULL;
		memcpy(c->detail, forked_detail, sizeof(forked_detail));
	}
	pthread_mutex_unlock(&reg_lock);
}

static void reg_init(void)
{
	/* ENOMEM only; a communicator then works, a child keeps its
	 * sockets open as before */
	(void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void reg_add(tp_coll_comm_t *c)
{
	pthread_once(&reg_once, reg_init);
	pthread_mutex_lock(&reg_lock);
	c->reg_next = reg_head;
	if (reg_head)
		reg_head->reg_pprev = &c->reg_next;
	reg_head = c;
	c->reg_pprev = &reg_head;
	pthread_mutex_unlock(&reg_lock);
}

/* Out of the list, its connections closed first (under the list's lock:
 * a child forked meanwhile sees them open and closes its copies, or
 * closed; never half done, nor an fd number another thread reused). */
static void reg_remove(tp_coll_comm_t *c)
{
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; c->peers && i < 2 * c->size; i++) {
		tp__coll_tcp_close_peer(&c->peers[i]);
		tp__coll_shm_close(&c->peers[i]);
	}
	if (c->reg_pprev) {
		*c->reg_pprev = c->reg_next;
		if (c->reg_next)
			c->reg_next->reg_pprev = c->reg_pprev;
		c->reg_next = NULL;
		c->reg_pprev = NULL;
	}
	pthread_mutex_unlock(&reg_lock);
}

void tp__coll_break(tp_coll_comm_t *c)
{
	c->broken = true;
	if (!c->xp)
		return;
	pthread_mutex_lock(&reg_lock); /* as reg_remove */
	c->xp->close(c);
	pthread_mutex_unlock(&reg_lock);
}

tp_err_t tp__coll_broken_err(const tp_coll_comm_t *c)
{
	return c->forked ? TP_ERR_INVAL : TP_ERR_PEER_LOST;
}

tp_err_t tp__coll_fail(tp_coll_comm_t *c, tp_err_t err, const char *fmt, ...)
{
	char msg[480]; /* two call signatures fit (check_args) */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->detail, sizeof(c->detail), "%s: %s",
		 c->call ? c->call : "coll", msg);
	tp__log(TP_LOG_DEBUG, "coll rank %d: %s", c->rank, c->detail);
	if (err == TP_ERR_PEER_LOST || err == TP_ERR_TIMEOUT ||
	    err == TP_ERR_IO)
		tp__coll_break(c);
	return err;
}

void tp_coll_opts_defaults(tp_coll_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->timeout_s = 30.0;
	o->chunk_bytes = 256 << 10;
}

size_t tp_coll_dtype_size(tp_coll_dtype_t dt)
{
	static const size_t sz[TP_COLL_NDTYPES] = {4, 8, 2, 2, 4, 8};
	return (unsigned)dt < TP_COLL_NDTYPES ? sz[dt] : 0;
}

static const char *const algo_names[] = {"auto", "ring", "hierarchical",
					 "tree"};

const char *tp_coll_algo_name(tp_coll_algo_t a)
{
	return (unsigned)a < 4 ? algo_names[a] : NULL;
}

tp_err_t tp_coll_algo_parse(const char *name, tp_coll_algo_t *algo_p)
{
	for (int i = 0; name && i < 4; i++) {
		if (!strcasecmp(name, algo_names[i])) { /* as comp_parse */
			*algo_p = (tp_coll_algo_t)i;
			return TP_OK;
		}
	}
	return TP_ERR_INVAL;
}

/* ---- schedules ------------------------------------------------------------
 */

static tp_err_t ring_set(tp__coll_ring_t *r, int n)
{
	r->members = tp_calloc((size_t)n, sizeof(uint32_t));
	r->n = r->nseg = n;
	return r->members ? TP_OK : TP_ERR_NOMEM;
}

/* The node ring channel chan of a phase makes through node x: follow
 * the channel's edge out of each node (they all go to one node) until
 * back at x, then start at the smallest node so every member numbers the
 * ring alike. Nodes into ring (capacity n); count. */
static size_t node_ring(const tp_sched_phase_t *ph, uint32_t chan, uint32_t x,
			size_t n, uint32_t *ring)
{
	size_t k = 0, lo = 0;
	uint32_t y = x;

	do {
		uint32_t next = TP_SCHED_NONE;
		for (size_t e = 0; e < ph->nedges && next == TP_SCHED_NONE; e++)
			if (ph->edges[e].src == y && ph->edges[e].dst != y &&
			    ph->edges[e].chan == chan)
				next = ph->edges[e].dst;
		ring[k++] = y;
		if (ring[k - 1] < ring[lo])
			lo = k - 1;
		y = next;
	} while (y != TP_SCHED_NONE && y != x && k < n);
	/* rotate: ring[lo] first */
	for (size_t i = 0; i < lo; i++) {
		uint32_t t = ring[0];
		memmove(ring, ring + 1, (k - 1) * sizeof(uint32_t));
		ring[k - 1] = t;
	}
	return k;
}

/* A ring of ranks: local rank lr of each node of ring[0..k). */
static tp_err_t rank_ring(tp__coll_ring_t *r, const tp_plan_t *plan,
			  const uint32_t *ring, size_t k, uint32_t my_host,
			  uint32_t lr)
{
	if (ring_set(r, (int)k))
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < k; i++) {
		r->members[i] = tp_plan_host(plan, ring[i])->first_rank + lr;
		if (ring[i] == my_host)
			r->me = (int)i;
	}
	return TP_OK;
}

static void add_level(tp_coll_comm_t *c, tp__coll_ring_t *r)
{
	if (r->n > 1 && c->nlevels < TP__COLL_MAX_LEVELS)
		c->level[c->nlevels++] = *r;
	else
		tp_free(r->members);
}

/* The cross rings of the channels my node holds (see tp_sched.h: member
 * t of a unit of K holds [ceil(tC/K), ceil((t+1)C/K))), each the node
 * ring its CROSS edges make. */
static tp_err_t build_cross(tp_coll_comm_t *c, const tp_plan_t *plan,
			    const tp_sched_t *s, const tp_sched_phase_t *ph,
			    uint32_t my_host, uint32_t *ring)
{
	const uint32_t *mem;
	size_t nh = tp_plan_nhosts(plan);
	size_t K = tp_sched_group_nodes(s, tp_sched_group_of(s, my_host), &mem);
	size_t t = 0, C = (size_t)c->nchan, lo, hi;

	while (t < K && mem[t] != my_host)
		t++;
	lo = (t * C + K - 1) / K;
	hi = ((t + 1) * C + K - 1) / K;
	c->cross = tp_calloc(hi - lo + 1, sizeof(*c->cross));
	c->cross_chan = tp_calloc(hi - lo + 1, sizeof(int));
	if (!c->cross || !c->cross_chan)
		return TP_ERR_NOMEM;
	for (size_t ch = lo; ch < hi; ch++) {
		tp__coll_ring_t r = {0};
		size_t k = node_ring(ph, (uint32_t)ch, my_host, nh, ring);
		if (rank_ring(&r, plan, ring, k, my_host,
			      (uint32_t)c->local_rank))
			return TP_ERR_NOMEM;
		if (r.n < 2) {
			tp_free(r.members);
			continue;
		}
		c->cross_chan[c->ncross] = (int)ch;
		c->cross[c->ncross++] = r;
	}
	return TP_OK;
}

/* The plan's rank weights as running sums (c->host_wcum), which split
 * the host level; none when the plan has none. */
static tp_err_t host_weights(tp_coll_comm_t *c, const tp_plan_t *plan,
			     uint32_t g)
{
	uint32_t n;
	const uint32_t *w = tp_plan_rank_weights(plan, &n);

	if (!w || n != g)
		return TP_OK;
	if (!(c->host_wcum = tp_calloc(g + 1, sizeof(uint32_t))))
		return TP_ERR_NOMEM;
	for (uint32_t l = 0; l < g; l++)
		c->host_wcum[l + 1] = c->host_wcum[l] + w[l];
	return TP_OK;
}

/* Hierarchical levels from the plan's hierarchical schedule (sched/):
 * HOST_RS the host's ranks, GROUP_RS the ranks of our local rank on our
 * unit's members (its reduce-scatter leaves each member its channels'
 * sub-shards), CROSS the rings of our node's channels. The way back
 * mirrors them. A RING schedule (hosts with different rank counts)
 * leaves none: hierarchical runs the ring. */
static tp_err_t build_levels(tp_coll_comm_t *c, const tp_plan_t *plan,
			     const tp_sched_t *s, uint32_t my_host)
{
	size_t nh = tp_plan_nhosts(plan);
	const tp_plan_host_t *mh = tp_plan_host(plan, my_host);
	uint32_t lr = (uint32_t)c->local_rank, *ring;
	const uint32_t *mem0;
	tp_err_t err = TP_OK;

	c->group_lv = -1;
	c->nchan = (int)tp_sched_hier_channels(s);
	c->group_of = tp_calloc((size_t)c->size, sizeof(uint32_t));
	ring = tp_calloc(nh > mh->nranks ? nh : mh->nranks, sizeof(uint32_t));
	if (!ring || !c->group_of) {
		tp_free(ring);
		return TP_ERR_NOMEM;
	}
	for (size_t h = 0; h < nh; h++) {
		const tp_plan_host_t *ph = tp_plan_host(plan, h);
		for (uint32_t l = 0; l < ph->nranks; l++)
			c->group_of[ph->first_rank + l] =
			    tp_sched_group_of(s, h);
	}
	c->groups_even = true;
	c->nunits = tp_sched_ngroups(s);
	for (size_t g = 0; g < tp_sched_ngroups(s); g++)
		if (tp_sched_group_nodes(s, g, &mem0) !=
		    tp_sched_group_nodes(s, 0, &mem0))
			c->groups_even = false;
	for (size_t i = 0; i < tp_sched_nphases(s) && !err; i++) {
		const tp_sched_phase_t *ph = tp_sched_phase(s, i);
		tp__coll_ring_t r = {0};
		const uint32_t *mem;
		size_t k;

		if (ph->kind == TP_SCHED_PH_HOST_RS) {
			if (ring_set(&r, (int)mh->nranks) ||
			    (err = host_weights(c, plan, mh->nranks))) {
				tp_free(r.members);
				err = TP_ERR_NOMEM;
				break;
			}
			for (uint32_t l = 0; l < mh->nranks; l++)
				r.members[l] = mh->first_rank + l;
			r.me = (int)lr;
			r.wcum = c->host_wcum;
			c->host_lv = r.n > 1;
			add_level(c, &r);
		} else if (ph->kind == TP_SCHED_PH_GROUP_RS) {
			k = tp_sched_group_nodes(
			    s, tp_sched_group_of(s, my_host), &mem);
			if ((err = rank_ring(&r, plan, mem, k, my_host, lr)))
				break;
			if (c->nchan >= r.n)
				r.nseg = c->nchan;
			if (r.n > 1)
				c->group_lv = c->nlevels;
			add_level(c, &r);
		} else if (ph->kind == TP_SCHED_PH_CROSS) {
			err = build_cross(c, plan, s, ph, my_host, ring);
		}
	}
	tp_free(ring);
	return err;
}

/* The ring: every rank in the order of the ring schedule's node ring
 * (the plan's ring order), local ranks in order inside each node. */
static tp_err_t build_ring(tp_coll_comm_t *c, const tp_plan_t *plan,
			   const tp_sched_t *s)
{
	size_t nh = tp_plan_nhosts(plan), k, at = 0;
	uint32_t *ring = tp_calloc(nh, sizeof(uint32_t));

	if (!ring || ring_set(&c->ring, c->size)) {
		tp_free(ring);
		return TP_ERR_NOMEM;
	}
	k = node_ring(tp_sched_phase(s, 0), 0, 0, nh, ring);
	for (size_t i = 0; i < k; i++) {
		const tp_plan_host_t *h = tp_plan_host(plan, ring[i]);
		for (uint32_t l = 0; l < h->nranks && at < (size_t)c->size;
		     l++) {
			if ((int)(h->first_rank + l) == c->rank)
				c->ring.me = (int)at;
			c->ring.members[at++] = h->first_rank + l;
		}
	}
	tp_free(ring);
	return at == (size_t)c->size ? TP_OK : TP_ERR_INVAL;
}

/* Rank at position q of host h's local tree t: tree 1 numbers the local
 * ranks from the other end, so the two trees' anchors (position 0, the
 * rank that talks to other hosts) and interior ranks differ. */
static int tree_rank(const tp_plan_host_t *h, int t, uint32_t q)
{
	return (int)(h->first_rank + (t ? h->nranks - 1 - q : q));
}

/* Parent of host h in tree t: the tree schedule's, or the plan's where
 * tp_plan_sched() cannot rebuild the trees (fabrics of more than two
 * group levels; the plan's are sched/'s all the same). */
static uint32_t parent_of(const tp_plan_t *plan, const tp_sched_t *s, int t,
			  size_t h)
{
	uint32_t p =
	    s ? tp_sched_tree_parent(s, t, h) : tp_plan_tree_parent(plan, t, h);
	return p == TP_PLAN_NONE ? TP_SCHED_NONE : p;
}

/* Tree t over ranks: the tree schedule's host tree between the hosts'
 * anchors, a chain of local ranks below each anchor, as sched/ builds and
 * prices it (2 (g - 1) local steps). Peers encoded as rank + t x size. */
static tp_err_t build_tree(tp_coll_comm_t *c, const tp_plan_t *plan,
			   const tp_sched_t *s, int t, uint32_t my_host)
{
	const tp_plan_host_t *mh = tp_plan_host(plan, my_host);
	tp__coll_tree_t *tr = &c->tree[t];
	size_t nh = tp_plan_nhosts(plan);
	int off = t * c->size;
	uint32_t L = mh->nranks;
	uint32_t q =
	    t ? L - 1 - (uint32_t)c->local_rank : (uint32_t)c->local_rank;

	tr->children = tp_calloc(nh + 2, sizeof(int));
	if (!tr->children)
		return TP_ERR_NOMEM;
	if (q > 0) {
		tr->parent = tree_rank(mh, t, q - 1) + off;
	} else {
		uint32_t ph = parent_of(plan, s, t, my_host);
		tr->parent =
		    ph == TP_SCHED_NONE
			? -1
			: tree_rank(tp_plan_host(plan, ph), t, 0) + off;
	}
	if (q + 1 < L)
		tr->children[tr->nchildren++] = tree_rank(mh, t, q + 1) + off;
	for (size_t h = 0; q == 0 && h < nh; h++)
		if (parent_of(plan, s, t, h) == my_host)
			tr->children[tr->nchildren++] =
			    tree_rank(tp_plan_host(plan, h), t, 0) + off;
	return TP_OK;
}

static tp_err_t build_schedules(tp_coll_comm_t *c, const tp_plan_t *plan)
{
	size_t nh = tp_plan_nhosts(plan);
	uint32_t my_host = 0;
	tp_err_t err;

	c->host_of = tp_calloc((size_t)c->size, sizeof(char *));
	if (!c->host_of)
		return TP_ERR_NOMEM;
	for (size_t h = 0; h < nh; h++) {
		const tp_plan_host_t *ph = tp_plan_host(plan, h);
		for (uint32_t l = 0; l < ph->nranks; l++) {
			c->host_of[ph->first_rank + l] = tp_strdup(ph->name);
			if (!c->host_of[ph->first_rank + l])
				return TP_ERR_NOMEM;
			if ((int)(ph->first_rank + l) == c->rank) {
				my_host = (uint32_t)h;
				c->local_rank = (int)l;
				if (ph->ranks[l].hca &&
				    !(c->hca = tp_strdup(ph->ranks[l].hca)))
					return TP_ERR_NOMEM;
			}
		}
	}
	/* One schedule, three consumers: the edges the cost model priced
	 * and the plan recorded are the ones run here. */
	for (int a = 0; a < 3; a++) {
		static const tp_sched_algo_t algos[3] = {
		    TP_SCHED_RING, TP_SCHED_HIER, TP_SCHED_TREE};
		tp_sched_t *s = NULL;
		err = tp_plan_sched(plan, algos[a], &s);
		if (err &&
		    !(err == TP_ERR_UNSUPPORTED && algos[a] == TP_SCHED_TREE))
			return err;
		if (algos[a] == TP_SCHED_RING)
			err = build_ring(c, plan, s);
		else if (algos[a] == TP_SCHED_HIER)
			err = build_levels(c, plan, s, my_host);
		else if (!(err = build_tree(c, plan, s, 0, my_host)))
			err = build_tree(c, plan, s, 1, my_host);
		tp_sched_destroy(s);
		if (err)
			return err;
	}
	c->max_children = 1;
	for (int t = 0; t < 2; t++)
		if (c->tree[t].nchildren > c->max_children)
			c->max_children = c->tree[t].nchildren;
	c->nsizes = tp_plan_nsizes(plan);
	c->sizes = tp_calloc(c->nsizes + 1, sizeof(double));
	c->recommend = tp_calloc(c->nsizes + 1, sizeof(tp_coll_algo_t));
	c->hier_pipe = tp_calloc(c->nsizes + 1, sizeof(int8_t));
	if (!c->sizes || !c->recommend || !c->hier_pipe)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < c->nsizes; i++) {
		tp_algo_t a = tp_plan_recommend(plan, i);
		c->sizes[i] = tp_plan_size(plan, i);
		c->hier_pipe[i] = (int8_t)tp_plan_hier_pipelined(plan, i);
		c->recommend[i] = a == TP_ALGO_TREE ? TP_COLL_ALGO_TREE
				  : a == TP_ALGO_HIERARCHICAL
				      ? TP_COLL_ALGO_HIERARCHICAL
				      : TP_COLL_ALGO_RING;
	}
	return TP_OK;
}

/* TOPOPLACE_COLL_SOCKETS: 1 when unset, -1 when not 1..max. */
static int sockets_from_env(void)
{
	const char *v = getenv("TOPOPLACE_COLL_SOCKETS");
	char *end;

	if (!v || !*v)
		return 1;
	long x = strtol(v, &end, 10);
	return *end || x < 1 || x > TP__COLL_MAX_SOCKETS ? -1 : (int)x;
}

/* TOPOPLACE_COLL_CHECK: 0 when unset, empty or "0", 1 when "1", -1
 * otherwise. */
static int check_from_env(void)
{
	const char *v = getenv("TOPOPLACE_COLL_CHECK");

	if (!v || !*v || strcmp(v, "0") == 0)
		return 0;
	return strcmp(v, "1") == 0 ? 1 : -1;
}

/* TOPOPLACE_COLL_HCA (the SPANK plugin's, where the task's GPU is not
 * the one the plan gave its local rank): the HCA this rank's sockets
 * leave by, by the plan's (fabric's) name. NULL when unset or empty;
 * *bad when it is not a device name (tp_hca_name_ok). */
static const char *hca_from_env(bool *bad)
{
	const char *v = getenv("TOPOPLACE_COLL_HCA");

	*bad = v && *v && !tp_hca_name_ok(v);
	return v && *v ? v : NULL;
}

static tp_err_t alloc_scratch(tp_coll_comm_t *c)
{
	/* a peer's connections, its wake-up FIFO, for both channels */
	size_t npfd = 2 * (size_t)c->size * (size_t)(c->nsock + 1);

	size_t mc = (size_t)c->max_children;

	/* at least two lanes of W slots and 2 W requests for two ring
	 * phases at once (tp__coll_ring_phase_init) */
	c->nslots = 2 * W * mc;
	c->nreqs = 2 * W * (2 * mc + 2);
	c->slots = tp_malloc(c->nslots * c->chunk_bytes);
	c->reqs = tp_calloc(c->nreqs, sizeof(tp__coll_req_t));
	c->peers = tp_calloc(2 * (size_t)c->size, sizeof(tp__coll_peer_t));
	/* no connection yet, before anything can fail: destroy closes what
	 * is >= 0 (zeroed, it closed fd 0, the process's stdin, after a
	 * failed init) */
	for (int i = 0; c->peers && i < 2 * c->size; i++) {
		tp__coll_peer_t *p = &c->peers[i];
		p->fd = p->wake_rd = p->wake_wr = -1;
		for (int k = 0; k < TP__COLL_MAX_SOCKETS - 1; k++)
			p->xfd[k] = -1;
	}
	c->active = tp_calloc(2 * (size_t)c->size, sizeof(int));
	c->pfd = tp_calloc(npfd, sizeof(struct pollfd));
	c->pfd_peer = tp_calloc(npfd, sizeof(int));
	c->sent = tp_calloc((size_t)c->size, sizeof(uint64_t));
	if (!c->slots || !c->reqs || !c->peers || !c->active || !c->pfd ||
	    !c->pfd_peer || !c->sent)
		return TP_ERR_NOMEM;
	return TP_OK;
}

/* ---- life cycle ------------------------------------------------------------
 */

static tp_err_t init_fail(char **err_p, tp_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tp_err_t init_fail(char **err_p, tp_err_t err, const char *fmt, ...)
{
	va_list ap;

	if (err_p && !*err_p) {
		va_start(ap, fmt);
		*err_p = tp_oneline(tp_vasprintf(fmt, ap)); /* env values */
		va_end(ap);
	}
	return err;
}

/* The plan's predictions priced the hierarchical host phases one way
 * (through each host's segment, or as rings), this host set up the
 * other: say so once per host, from its first rank (every rank of a
 * host agrees on the segment). */
static void check_segment(const tp_coll_comm_t *c, const tp_plan_t *plan)
{
	bool hostlv = c->nhosts == 1 ? c->size > 1 : c->host_lv;
	bool priced = tp_plan_host_segment(plan);

	if (!hostlv || c->local_rank != 0 || priced == (c->host != NULL) ||
	    isnan(tp_plan_predict_s(plan, 0, TP_ALGO_HIERARCHICAL)))
		return;
	if (priced)
		tp__log(TP_LOG_WARN,
			"host %s: no shared-memory host segment "
			"(TOPOPLACE_COLL_SHM=0, or a rank refused it): the "
			"hierarchical host phases run as rings, slower than "
			"the plan predicts, and `auto` may pick hierarchical "
			"where it is not the fastest; build the plan with "
			"TOPOPLACE_COLL_SHM=0 to price the rings",
			c->host_of[c->rank]);
	else
		tp__log(TP_LOG_WARN,
			"host %s: the plan priced the hierarchical host phases "
			"as rings (built with TOPOPLACE_COLL_SHM=0) but they "
			"run through the host segment, faster than predicted",
			c->host_of[c->rank]);
}

tp_err_t tp_coll_comm_init(const tp_plan_t *plan, int rank,
			   const tp_coll_opts_t *opts, tp_coll_comm_t **comm_p,
			   char **err_p)
{
	tp_coll_opts_t o;
	tp_coll_comm_t *c = NULL;
	char *json = NULL, *why = NULL;
	tp_err_t err;

	if (opts)
		o = *opts;
	else
		tp_coll_opts_defaults(&o);
	if (!plan || !comm_p)
		return init_fail(err_p, TP_ERR_INVAL, "no plan or no comm_p");
	size_t world = tp_plan_world_size(plan);
	if (world == 0 || world > INT32_MAX / 2)
		return init_fail(err_p, TP_ERR_INVAL, "plan has %zu ranks",
				 world);
	if (rank < 0 || (size_t)rank >= world)
		return init_fail(err_p, TP_ERR_INVAL,
				 "rank %d is not in the plan (world size %zu)",
				 rank, world);
	/* a zeroed struct is the defaults, as for master_port and sockets */
	if (o.timeout_s == 0)
		o.timeout_s = 30.0;
	if (o.chunk_bytes == 0)
		o.chunk_bytes = 256 << 10;
	if (o.sockets == 0 && (o.sockets = sockets_from_env()) < 0)
		return init_fail(err_p, TP_ERR_INVAL,
				 "TOPOPLACE_COLL_SOCKETS='%s' is not 1..%d",
				 getenv("TOPOPLACE_COLL_SOCKETS"),
				 TP__COLL_MAX_SOCKETS);
	/* the one that is wrong, named with what it may be */
	if (!(o.timeout_s > 0))
		return init_fail(err_p, TP_ERR_INVAL,
				 "timeout_s %g: must be above 0", o.timeout_s);
	if (o.chunk_bytes < 8 || o.chunk_bytes > (1u << 30))
		return init_fail(err_p, TP_ERR_INVAL,
				 "chunk_bytes %zu: not 8..%u", o.chunk_bytes,
				 1u << 30);
	if (o.master_port < 0 || o.master_port > 65535)
		return init_fail(err_p, TP_ERR_INVAL,
				 "master_port %d: not 0..65535", o.master_port);
	if (o.sockets < 1 || o.sockets > TP__COLL_MAX_SOCKETS)
		return init_fail(err_p, TP_ERR_INVAL, "sockets %d: not 1..%d",
				 o.sockets, TP__COLL_MAX_SOCKETS);
	if ((why = tp__coll_shm_env_check())) {
		init_fail(err_p, TP_ERR_INVAL, "rank %d: %s", rank, why);
		tp_free(why);
		return TP_ERR_INVAL;
	}
	int check = check_from_env();
	if (check < 0)
		return init_fail(err_p, TP_ERR_INVAL,
				 "rank %d: TOPOPLACE_COLL_CHECK='%s' is not 0 "
				 "or 1",
				 rank, getenv("TOPOPLACE_COLL_CHECK"));
	bool bad_hca;
	const char *hca = hca_from_env(&bad_hca);
	if (bad_hca)
		return init_fail(err_p, TP_ERR_INVAL,
				 "rank %d: TOPOPLACE_COLL_HCA='%.64s' is not a "
				 "device name",
				 rank, getenv("TOPOPLACE_COLL_HCA"));
	size_t seg_bytes;
	if (tp_sched_segment_parse(getenv("TOPOPLACE_COLL_SEGMENT"),
				   &seg_bytes))
		return init_fail(err_p, TP_ERR_INVAL,
				 "rank %d: TOPOPLACE_COLL_SEGMENT='%s' is not "
				 "a byte count 0..1073741824",
				 rank, getenv("TOPOPLACE_COLL_SEGMENT"));
	c = tp_calloc(1, sizeof(*c));
	if (!c)
		return init_fail(err_p, TP_ERR_NOMEM, "out of memory");
	c->seg_bytes = seg_bytes;
	c->rank = rank;
	c->size = (int)world;
	c->nhosts = (int)tp_plan_nhosts(plan);
	c->timeout_s = o.timeout_s;
	c->timeout_ns = (int64_t)((o.timeout_s < TP__COLL_TIMEOUT_MAX_S
				       ? o.timeout_s
				       : TP__COLL_TIMEOUT_MAX_S) *
				  1e9);
	c->chunk_bytes = o.chunk_bytes & ~(size_t)7;
	c->nsock = o.sockets;
	c->check = check == 1;
	c->xp = &tp__coll_xport_tcp;
	c->kern = &tp__coll_kernel_cpu;
	c->call = "init";
	/* the schedule, not the model's part: the recommendations are
	 * rank 0's for every rank (bootstrap.c adopt) */
	err = tp_plan_to_json_schedule(plan, &json);
	if (!err) {
		c->plan_hash = tp_hash_str(json);
		tp_free(json);
		err = build_schedules(c, plan);
	}
	/* the task's own GPU's HCA wins over the plan's for its local
	 * rank */
	if (!err && hca) {
		tp_free(c->hca);
		if (!(c->hca = tp_strdup(hca)))
			err = TP_ERR_NOMEM;
	}
	if (!err)
		err = alloc_scratch(c);
	if (!err && c->check &&
	    !(c->sig = tp_calloc((size_t)c->size * TP__COLL_SIG_WORDS,
				 sizeof(int64_t))))
		err = TP_ERR_NOMEM;
	if (err) {
		tp_coll_comm_destroy(c);
		return init_fail(err_p, err, "rank %d: %s", rank,
				 tp_strerror(err));
	}
	err = tp__coll_connect(c, &o, tp_plan_host(plan, 0)->name, &why);
	if (err) {
		tp_coll_comm_destroy(c);
		if (err_p)
			*err_p = tp_oneline(why);
		else
			tp_free(why);
		return err;
	}
	check_segment(c, plan);
	c->call = NULL;
	reg_add(c);
	*comm_p = c;
	return TP_OK;
}

tp_err_t tp_coll_comm_init_file(const char *path, int rank,
				const tp_coll_opts_t *opts,
				tp_coll_comm_t **comm_p, char **err_p)
{
	tp_plan_t *plan = NULL;
	char *why = NULL;
	tp_err_t err;

	if (!path)
		return init_fail(err_p, TP_ERR_INVAL, "no plan file");
	err = tp_plan_load_json(path, &plan, &why);
	if (err) {
		init_fail(err_p, err, "%s", why ? why : tp_strerror(err));
		tp_free(why);
		return err;
	}
	err = tp_coll_comm_init(plan, rank, opts, comm_p, err_p);
	tp_plan_destroy(plan);
	return err;
}

/* A non-negative integer variable; -1 when unset, -2 when malformed. */
static long env_int(const char *name)
{
	const char *v = getenv(name);
	char *end;

	if (!v || !*v)
		return -1;
	long x = strtol(v, &end, 10);
	return (*end || x < 0 || x > INT32_MAX) ? -2 : x;
}

/* Local rank of rank in plan, -1 when out of range. */
static long local_of(const tp_plan_t *plan, long rank)
{
	for (size_t h = 0; h < tp_plan_nhosts(plan); h++) {
		const tp_plan_host_t *ph = tp_plan_host(plan, h);
		if (rank >= ph->first_rank &&
		    rank < ph->first_rank + ph->nranks)
			return rank - (long)ph->first_rank;
	}
	return -1;
}

tp_err_t tp_coll_comm_init_env(const tp_coll_opts_t *opts,
			       tp_coll_comm_t **comm_p, char **err_p)
{
	const char *path = getenv("TOPOPLACE_PLAN");
	long rank = env_int("TOPOPLACE_RANK");
	long world = env_int("TOPOPLACE_WORLD_SIZE");
	long local = env_int("TOPOPLACE_LOCAL_RANK");
	tp_plan_t *plan = NULL;
	char *why = NULL;
	tp_err_t err;

	if (!path || !*path)
		return init_fail(err_p, TP_ERR_INVAL,
				 "TOPOPLACE_PLAN is not set");
	if (rank == -1)
		return init_fail(err_p, TP_ERR_INVAL,
				 "TOPOPLACE_RANK is not set");
	if (rank < 0)
		return init_fail(err_p, TP_ERR_INVAL,
				 "TOPOPLACE_RANK='%s' is not a rank",
				 getenv("TOPOPLACE_RANK"));
	if (world == -2 || local == -2) {
		const char *var = world == -2 ? "TOPOPLACE_WORLD_SIZE"
					      : "TOPOPLACE_LOCAL_RANK";
		return init_fail(err_p, TP_ERR_INVAL,
				 "%s='%s' is not a whole number >= 0", var,
				 getenv(var));
	}
	err = tp_plan_load_json(path, &plan, &why);
	if (err) {
		init_fail(err_p, err, "%s", why ? why : tp_strerror(err));
		tp_free(why);
		return err;
	}
	/* Checked before the rendezvous, so a wrong step fails alone. */
	long lr = local_of(plan, rank);
	if (world >= 0 && (size_t)world != tp_plan_world_size(plan))
		err = init_fail(err_p, TP_ERR_MISMATCH,
				"TOPOPLACE_WORLD_SIZE=%ld but the plan %s has "
				"%zu ranks",
				world, path, tp_plan_world_size(plan));
	else if (local >= 0 && lr >= 0 && local != lr)
		err =
		    init_fail(err_p, TP_ERR_MISMATCH,
			      "TOPOPLACE_LOCAL_RANK=%ld but rank %ld is local "
			      "rank %ld in the plan %s",
			      local, rank, lr, path);
	else
		err = tp_coll_comm_init(plan, (int)rank, opts, comm_p, err_p);
	tp_plan_destroy(plan);
	return err;
}

void tp_coll_comm_destroy(tp_coll_comm_t *c)
{
	if (!c)
		return;
	reg_remove(c);
	tp__coll_host_close(c);
	tp__coll_comp_free(c);
	tp_free(c->group_of);
	tp_free(c->host_wcum);
	if (c->host_of)
		for (int r = 0; r < c->size; r++)
			tp_free(c->host_of[r]);
	tp_free(c->host_of);
	tp_free(c->ring.members);
	for (int l = 0; l < c->nlevels; l++)
		tp_free(c->level[l].members);
	for (int k = 0; k < c->ncross; k++)
		tp_free(c->cross[k].members);
	tp_free(c->cross);
	tp_free(c->cross_chan);
	for (int t = 0; t < 2; t++)
		tp_free(c->tree[t].children);
	tp_free(c->sizes);
	tp_free(c->hier_pipe);
	tp_free(c->recommend);
	tp_free(c->slots);
	tp_free(c->reqs);
	tp_free(c->peers);
	tp_free(c->active);
	tp_free(c->pfd);
	tp_free(c->pfd_peer);
	tp_free(c->work);
	tp_free(c->sent);
	tp_free(c->hca);
	tp_free(c->sig);
	tp_free(c);
}

int tp_coll_comm_rank(const tp_coll_comm_t *c)
{
	return c ? c->rank : -1;
}

int tp_coll_comm_size(const tp_coll_comm_t *c)
{
	return c ? c->size : 0;
}

int tp_coll_comm_nhosts(const tp_coll_comm_t *c)
{
	return c ? c->nhosts : 0;
}

const char *tp_coll_comm_detail(const tp_coll_comm_t *c)
{
	return c ? c->detail : "no communicator (NULL)";
}

uint64_t tp_coll_comm_sent_bytes(const tp_coll_comm_t *c, int peer)
{
	return c && peer >= 0 && peer < c->size ? c->sent[peer] : 0;
}

void tp_coll_comm_stats_reset(tp_coll_comm_t *c)
{
	if (!c)
		return;
	memset(c->sent, 0, (size_t)c->size * sizeof(uint64_t));
	memset(c->phase_ns, 0, sizeof(c->phase_ns));
}

uint64_t tp_coll_comm_phase_ns(const tp_coll_comm_t *c, tp_coll_phase_t p)
{
	return c && (unsigned)p < TP_COLL_PHASES ? c->phase_ns[p] : 0;
}

/* The plan's size that covers a call of `bytes`: the first at least as
 * large, else the largest; nsizes (none) when the plan has no sizes. */
static size_t size_index(const tp_coll_comm_t *c, size_t bytes)
{
	for (size_t i = 0; i < c->nsizes; i++)
		if ((double)bytes <= c->sizes[i])
			return i;
	return c->nsizes ? c->nsizes - 1 : 0;
}

/* The plan's recommendation at size index si; ring without sizes. */
static tp_coll_algo_t recommend_at(const tp_coll_comm_t *c, size_t si)
{
	return c->nsizes ? c->recommend[si] : TP_COLL_ALGO_RING;
}

tp_coll_algo_t tp_coll_algo_select(const tp_coll_comm_t *c, size_t bytes)
{
	return c ? recommend_at(c, size_index(c, bytes)) : TP_COLL_ALGO_RING;
}

/* ---- collectives ------------------------------------------------------------
 */

/* ---- argument check (TOPOPLACE_COLL_CHECK=1) -------------------------------
 */

enum {
	SIG_MAGIC,
	SIG_SEQ,
	SIG_CALL,
	SIG_COUNT,
	SIG_DTYPE,
	SIG_OP,
	SIG_ALGO,
	SIG_ROOT,
	SIG_COMP,  /* compressor << 8 | levels, -1: not compressed */
	SIG_BLOCK, /* the compressed call's block, top-k fraction (its */
	SIG_TOPK,  /* bits) and pipeline segment (top bit: overlap) */
	SIG_SEG,
	SIG_ERR
};
#define SIG_MAGIC_WORD 0x7470636865636b31ll /* "tpcheck1" */
_Static_assert(SIG_ERR + 1 <= TP__COLL_SIG_WORDS, "signature words");

static const char *const call_names[TP__COLL_NCALLS] = {
    "allreduce", "reduce_scatter", "allgather",
    "broadcast", "barrier",	   "allreduce_compressed"};
static const char *const dtype_names[] = {"fp32", "fp64",  "fp16",
					  "bf16", "int32", "int64"};
static const char *const op_names[TP_COLL_NOPS] = {"sum", "avg", "max", "min"};

/* One signature for humans: "allreduce #7 (count 100, fp32, sum, ring)". */
static void sig_str(const int64_t *w, char *buf, size_t len)
{
	size_t off;

	if (w[SIG_MAGIC] != SIG_MAGIC_WORD) {
		snprintf(buf, len, "something else than a checked call");
		return;
	}
	off = (size_t)snprintf(buf, len, "%s #%lld (count %lld",
			       (uint64_t)w[SIG_CALL] < TP__COLL_NCALLS
				   ? call_names[w[SIG_CALL]]
				   : "?",
			       (long long)w[SIG_SEQ], (long long)w[SIG_COUNT]);
#define SIG_PUT(...)                                                           \
	do {                                                                   \
		if (off < len)                                                 \
			off += (size_t)snprintf(buf + off, len - off,          \
						__VA_ARGS__);                  \
	} while (0)
	if ((uint64_t)w[SIG_DTYPE] < sizeof(dtype_names) / sizeof(*dtype_names))
		SIG_PUT(", %s", dtype_names[w[SIG_DTYPE]]);
	if ((uint64_t)w[SIG_OP] < TP_COLL_NOPS)
		SIG_PUT(", %s", op_names[w[SIG_OP]]);
	if (w[SIG_ALGO] >= 0 && tp_coll_algo_name((tp_coll_algo_t)w[SIG_ALGO]))
		SIG_PUT(", %s", tp_coll_algo_name((tp_coll_algo_t)w[SIG_ALGO]));
	if (w[SIG_ROOT] >= 0)
		SIG_PUT(", root %lld", (long long)w[SIG_ROOT]);
	if (w[SIG_COMP] >= 0) {
		const char *kind = tp_coll_comp_name(
		    (tp_coll_comp_t)(w[SIG_COMP] >> 8 & 0xff));
		double frac;
		memcpy(&frac, &w[SIG_TOPK], sizeof(frac));
		/* compress.c zeroes what the kind does not use */
		SIG_PUT(", %s on levels %lld", kind ? kind : "?",
			(long long)(w[SIG_COMP] & 0xff));
		if (w[SIG_BLOCK])
			SIG_PUT(", block %lld", (long long)w[SIG_BLOCK]);
		if (frac > 0.0)
			SIG_PUT(", top-k %g%s", frac,
				w[SIG_COMP] >> 16 ? " exact" : " sampled");
		if (w[SIG_SEG])
			SIG_PUT(", segment %llu%s",
				(unsigned long long)(w[SIG_SEG] & INT64_MAX),
				w[SIG_SEG] < 0 ? " overlapped" : "");
	}
	if (w[SIG_ERR])
		SIG_PUT(", refused by that rank: %s",
			tp_strerror((tp_err_t)w[SIG_ERR]));
	SIG_PUT(")");
#undef SIG_PUT
}

tp_err_t tp__coll_check_args(tp_coll_comm_t *c, tp__coll_call_t call,
			     uint64_t count, int dt, int op, int algo, int root,
			     const tp_coll_comp_opts_t *co, tp_err_t local_err)
{
	int64_t *mine, w = TP__COLL_SIG_WORDS;
	char a[200], b[200];
	tp_err_t err;

	if (!c->check) {
		/* unchecked, the other ranks went on into the call, and
		 * this rank's next call would pair with it (TP_OK, wrong
		 * data): break, so they fail naming this rank instead */
		if (local_err)
			tp__coll_break(c);
		return local_err;
	}
	/* the all-gather fills the other ranks' words */
	mine = c->sig + (size_t)c->rank * (size_t)w;
	memset(mine, 0, (size_t)w * sizeof(*mine));
	mine[SIG_MAGIC] = SIG_MAGIC_WORD;
	mine[SIG_SEQ] = ++c->seq;
	mine[SIG_CALL] = call;
	mine[SIG_COUNT] = (int64_t)count;
	mine[SIG_DTYPE] = dt;
	mine[SIG_OP] = op;
	mine[SIG_ALGO] = algo;
	mine[SIG_ROOT] = root;
	mine[SIG_COMP] = -1;
	if (co) {
		mine[SIG_COMP] = (int64_t)co->topk_exact << 16 |
				 (int64_t)co->kind << 8 | (co->levels & 0xff);
		mine[SIG_BLOCK] = co->block;
		memcpy(&mine[SIG_TOPK], &co->topk_fraction, sizeof(double));
		mine[SIG_SEG] = (int64_t)(co->segment & (size_t)INT64_MAX) |
				(co->overlap ? INT64_MIN : 0);
	}
	mine[SIG_ERR] = local_err;
	/* a rank's own refusal keeps its reason in detail: the all-gather
	 * writes there only when it fails */
	err = tp__coll_ring_allgather(c, &c->ring, (char *)c->sig,
				      (size_t)c->size * (size_t)w,
				      TP_COLL_INT64, c->rank);
	if (err)
		return err;
	for (int r = 0; r < c->size; r++) {
		const int64_t *o = c->sig + (size_t)r * (size_t)w;
		/* the error word differs only where a rank refused: it is
		 * compared like the rest */
		if (r == c->rank || !memcmp(o, mine, (size_t)w * sizeof(*o)))
			continue;
		if (local_err)
			return local_err; /* this rank's reason first */
		sig_str(o, a, sizeof(a));
		sig_str(mine, b, sizeof(b));
		return tp__coll_fail(c, TP_ERR_MISMATCH,
				     "ranks disagree (TOPOPLACE_COLL_CHECK): "
				     "rank %d called %s; this rank %s",
				     r, a, b);
	}
	return local_err;
}

/* Common entry checks; names the call for the detail string. With
 * TOPOPLACE_COLL_CHECK every rank then compares its call with the
 * others', its own refusal included. *dev_p (when given): the buffers
 * are device memory, found before that comparison so a refusal there
 * (one buffer on each side) is compared too. The host copy of a device
 * call (c->staged, device.c) is neither compared again nor looked up:
 * every rank compared the call the user made. */
static tp_err_t begin(tp_coll_comm_t *c, tp__coll_call_t call, size_t count,
		      const void *a, const void *b, tp_coll_dtype_t dt,
		      tp_coll_op_t op, int algo, int root, bool *dev_p)
{
	tp_err_t err = TP_OK;

	if (dev_p)
		*dev_p = false;

	if (!c)
		return TP_ERR_INVAL;
	c->call = call_names[call];
	if (c->broken)
		return tp__coll_broken_err(c); /* detail keeps the cause */
	c->detail[0] = '\0';
	if (tp_coll_dtype_size(dt) == 0 || (unsigned)op >= TP_COLL_NOPS)
		err = tp__coll_fail(c, TP_ERR_INVAL, "bad dtype %d or op %d",
				    (int)dt, (int)op);
	else if (count > 0 && (!a || !b))
		err = tp__coll_fail(c, TP_ERR_INVAL, "NULL buffer");
	else if (count > SIZE_MAX / 8 / (size_t)c->size)
		err = tp__coll_fail(c, TP_ERR_INVAL, "count %zu too large",
				    count);
	else if (call == TP__COLL_CALL_ALLREDUCE &&
		 (unsigned)algo > TP_COLL_ALGO_TREE)
		err = tp__coll_fail(c, TP_ERR_INVAL, "bad algorithm %d", algo);
	else if (call == TP__COLL_CALL_BROADCAST &&
		 (root < 0 || root >= c->size))
		err = tp__coll_fail(c, TP_ERR_INVAL, "root %d out of range",
				    root);
	c->last_move_ns = tp__coll_now_ns();
	if (c->staged)
		return err;
	if (!err && dev_p && count > 0)
		err = tp__coll_on_device(c, a, b, dev_p);
	return tp__coll_check_args(c, call, count, (int)dt,
				   call == TP__COLL_CALL_ALLGATHER ||
					   call == TP__COLL_CALL_BROADCAST
				       ? -1
				       : (int)op,
				   algo, root, NULL, err);
}

/* A call that fails once every rank went into it (out of memory for
 * scratch, a CUDA error staging a device buffer) breaks the
 * communicator, as an unchecked refusal does: this rank's next call
 * would pair with the others' current one. */
static tp_err_t finish(tp_coll_comm_t *c, tp_err_t err)
{
	if (err && !c->detail[0])
		tp__coll_fail(c, err, "%s", tp_strerror(err));
	if (err && !c->staged)
		tp__coll_break(c);
	return err;
}

tp_err_t tp_coll_allreduce(tp_coll_comm_t *c, const void *sendbuf,
			   void *recvbuf, size_t count, tp_coll_dtype_t dt,
			   tp_coll_op_t op, tp_coll_algo_t algo)
{
	bool dev;
	tp_err_t err = begin(c, TP__COLL_CALL_ALLREDUCE, count, sendbuf,
			     recvbuf, dt, op, (int)algo, -1, &dev);
	size_t dsz = tp_coll_dtype_size(dt);
	tp_coll_op_t rop = op == TP_COLL_AVG ? TP_COLL_SUM : op;

	if (err)
		return err;
	if (count == 0)
		return TP_OK;
	int64_t t0 = tp__coll_now_ns();
	if (dev)
		return finish(c, tp__coll_device_allreduce(
				     c, sendbuf, recvbuf, count, dt, op, algo));
	const char *src = sendbuf != recvbuf ? sendbuf : NULL;
	/* the plan's size this call falls under (nsizes 0: none) */
	size_t si = size_index(c, count * dsz);
	if (algo == TP_COLL_ALGO_AUTO && c->host && c->nhosts == 1 &&
	    count * dsz <= TP__COLL_SMALL) {
		err = tp__coll_host_allreduce(c, recvbuf, src, count, dt, rop);
		algo = TP_COLL_ALGO_AUTO;
	} else if (algo == TP_COLL_ALGO_AUTO) {
		algo = recommend_at(c, si);
	}
	switch (algo) {
	case TP_COLL_ALGO_AUTO:
		break;
	case TP_COLL_ALGO_TREE:
		if (src)
			memcpy(recvbuf, src, count * dsz);
		err = tp__coll_tree_allreduce(c, recvbuf, count, dt, rop);
		break;
	case TP_COLL_ALGO_HIERARCHICAL:
		/* pipelined or in one piece as the plan found faster at
		 * this size (the rule without a prediction) */
		err =
		    tp__coll_hier_allreduce(c, recvbuf, src, count, dt, rop,
					    c->nsizes ? c->hier_pipe[si] : -1);
		break;
	default:
		err = tp__coll_ring_allreduce(c, &c->ring, recvbuf, src, count,
					      dt, rop);
		break;
	}
	if (!err && op == TP_COLL_AVG)
		c->kern->scale(recvbuf, count, dt, c->size, NULL);
	tp__coll_lap(c, TP_COLL_PHASE_CALL, t0);
	return finish(c, err);
}

tp_err_t tp_coll_reduce_scatter(tp_coll_comm_t *c, const void *sendbuf,
				void *recvbuf, size_t recvcount,
				tp_coll_dtype_t dt, tp_coll_op_t op)
{
	bool dev;
	tp_err_t err = begin(c, TP__COLL_CALL_REDUCE_SCATTER, recvcount,
			     sendbuf, recvbuf, dt, op, -1, -1, &dev);
	size_t dsz = tp_coll_dtype_size(dt);

	if (err)
		return err;
	if (recvcount == 0)
		return TP_OK;
	if (dev)
		return finish(c, tp__coll_device_reduce_scatter(
				     c, sendbuf, recvbuf, recvcount, dt, op));
	size_t total = recvcount * (size_t)c->size, bytes = total * dsz;
	if (bytes > c->work_cap) {
		char *w = tp_realloc(c->work, bytes);
		if (!w)
			return finish(c, tp__coll_fail(c, TP_ERR_NOMEM,
						       "scratch of %zu bytes",
						       bytes));
		c->work = w;
		c->work_cap = bytes;
	}
	err = tp__coll_ring_reduce_scatter(
	    c, &c->ring, c->work, sendbuf, total, dt,
	    op == TP_COLL_AVG ? TP_COLL_SUM : op, c->size - 1);
	if (!err) {
		const char *mine = c->size > 1 ? c->work : sendbuf;
		memcpy(recvbuf, mine + (size_t)c->rank * recvcount * dsz,
		       recvcount * dsz);
		if (op == TP_COLL_AVG)
			c->kern->scale(recvbuf, recvcount, dt, c->size, NULL);
	}
	return finish(c, err);
}

tp_err_t tp_coll_allgather(tp_coll_comm_t *c, const void *sendbuf,
			   void *recvbuf, size_t sendcount, tp_coll_dtype_t dt)
{
	bool dev;
	tp_err_t err = begin(c, TP__COLL_CALL_ALLGATHER, sendcount, sendbuf,
			     recvbuf, dt, TP_COLL_SUM, -1, -1, &dev);
	size_t dsz = tp_coll_dtype_size(dt);

	if (err)
		return err;
	if (sendcount == 0)
		return TP_OK;
	if (dev)
		return finish(c, tp__coll_device_allgather(c, sendbuf, recvbuf,
							   sendcount, dt));
	char *mine = (char *)recvbuf + (size_t)c->rank * sendcount * dsz;
	if (sendbuf != mine)
		memcpy(mine, sendbuf, sendcount * dsz);
	err = tp__coll_ring_allgather(c, &c->ring, recvbuf,
				      sendcount * (size_t)c->size, dt, c->rank);
	return finish(c, err);
}

tp_err_t tp_coll_broadcast(tp_coll_comm_t *c, void *buf, size_t count,
			   tp_coll_dtype_t dt, int root)
{
	bool dev;
	tp_err_t err = begin(c, TP__COLL_CALL_BROADCAST, count, buf, buf, dt,
			     TP_COLL_SUM, -1, root, &dev);

	if (err)
		return err;
	if (dev)
		return finish(
		    c, tp__coll_device_broadcast(c, buf, count, dt, root));
	err = tp__coll_ring_broadcast(c, buf, count * tp_coll_dtype_size(dt),
				      root);
	return finish(c, err);
}

tp_err_t tp_coll_barrier(tp_coll_comm_t *c)
{
	int32_t token = 0;
	tp_err_t err = begin(c, TP__COLL_CALL_BARRIER, 1, &token, &token,
			     TP_COLL_INT32, TP_COLL_SUM, -1, -1, NULL);

	if (err)
		return err;
	/* One element: the tree carrying it reduces at the root and sends
	 * back down (the host segment's last arrival wakes everyone), so
	 * nobody leaves before everybody arrived. */
	if (c->host && c->nhosts == 1)
		err = tp__coll_host_allreduce(c, (char *)&token, NULL, 1,
					      TP_COLL_INT32, TP_COLL_SUM);
	else
		err = tp__coll_tree_allreduce(c, (char *)&token, 1,
					      TP_COLL_INT32, TP_COLL_SUM);
	return finish(c, err);
}
