/* coll_int.h - private to coll/: communicator layout, transport ops table,
 * reduction kernel interface and the algorithms' entry points. */
#ifndef TP_COLL_INT_H
#define TP_COLL_INT_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "tp_coll.h"
#include "tp_cuda.h"
#include "tp_sched.h"

/* Requests in flight per direction of one ring / tree phase. */
#define TP__COLL_WINDOW 4
/* All-reduces of at most this many bytes on a single-host communicator
 * take the host segment's one exchange (xport/shm.c) under
 * TP_COLL_ALGO_AUTO and hierarchical, and for the barrier: the schedule
 * sched/ prices (TP_SCHED_HOST_SMALL). */
#define TP__COLL_SMALL ((size_t)TP_SCHED_HOST_SMALL)
/* Block of the host segment's large all-reduce, per rank and buffer. */
#define TP__COLL_HOST_BLOCK ((size_t)1 << 20)
/* Hierarchy levels: host, level-1 group, across groups. */
#define TP__COLL_MAX_LEVELS 3

/* One posted send or receive. Owned by the algorithm (in the
 * communicator's arrays); the transport links it into a peer's queue
 * until done. */
typedef struct tp__coll_req {
	struct tp__coll_req *next;
	char *buf;
	size_t len;
	size_t off;
	uint64_t seq; /* TCP: its place in the peer's queue, for the stripes */
	int peer;
	bool done;
	/* irecv_reduce: reduce the incoming bytes into acc (dt, op) instead
	 * of storing them; buf is a staging area the transport may use. */
	char *acc;
	tp_coll_dtype_t dt;
	tp_coll_op_t op;
} tp__coll_req_t;

typedef struct tp__coll_shm_ring tp__coll_shm_ring_t;
typedef struct tp__coll_host tp__coll_host_t;

/* TCP connections to one peer on another host (tp_coll_opts_t.sockets). */
#define TP__COLL_MAX_SOCKETS 8

/* One connection's place in a peer's queues: the request it moves (by
 * sequence number) and how far into its stripe. */
typedef struct tp__coll_stripe {
	uint64_t sseq, rseq;
	size_t soff, roff;
} tp__coll_stripe_t;

typedef struct tp__coll_peer {
	int fd; /* -1: not connected (not needed by any schedule) */
	tp__coll_req_t *sq_head, *sq_tail;
	tp__coll_req_t *rq_head, *rq_tail;
	uint64_t sq_seq, rq_seq; /* requests queued so far */
	/* TCP: messages striped over nconn connections (c->nsock to another
	 * host, else 1); fd is connection 0, xfd[i - 1] connection i. */
	int nconn;
	int xfd[TP__COLL_MAX_SOCKETS - 1];
	tp__coll_stripe_t st[TP__COLL_MAX_SOCKETS];
	/* Same-host peer over shared memory (xport/shm.c): the data moves
	 * through the rings, fd only carries wake-up bytes and tells when
	 * the peer is gone. NULL: bytes go over fd. */
	tp__coll_shm_ring_t *tx, *rx;
	void *map;
	size_t map_len;
	size_t ring_cap; /* bytes per direction */
	/* Wake-ups through a FIFO pair when /dev/shm takes them (half the
	 * cost of a byte over loopback TCP); -1: over fd. */
	int wake_rd, wake_wr;
	bool eof; /* shared memory: the peer closed; what it left in the ring
		   * can still be read */
} tp__coll_peer_t;

/*
 * The transport interface the algorithms see. isend/irecv queue r (which
 * must stay valid until r->done) and never block; progress moves bytes on
 * every queued request and, when none could move, sleeps in the
 * transport's wait (poll) until one can or the communicator's timeout
 * expires. Errors break the communicator (see tp__coll_fail()).
 */
typedef struct tp__coll_xport_ops {
	const char *name;
	void (*isend)(tp_coll_comm_t *c, int peer, const void *buf, size_t len,
		      tp__coll_req_t *r);
	void (*irecv)(tp_coll_comm_t *c, int peer, void *buf, size_t len,
		      tp__coll_req_t *r);
	/* Receive len bytes of dt and reduce them into acc (acc op= data);
	 * done once all are reduced. staging (len bytes) is the transport's
	 * until then: TCP lands the bytes there first, shared memory reduces
	 * straight out of the ring and never touches it. */
	void (*irecv_reduce)(tp_coll_comm_t *c, int peer, void *acc,
			     void *staging, size_t len, tp_coll_dtype_t dt,
			     tp_coll_op_t op, tp__coll_req_t *r);
	tp_err_t (*progress)(tp_coll_comm_t *c);
	/* Moves bytes on every queued request once, never waits; *moved_p:
	 * whether any moved. What a wait elsewhere (the host segment's)
	 * runs to keep the transport's other work going (c->bg). */
	tp_err_t (*poke)(tp_coll_comm_t *c, bool *moved_p);
	void (*close)(tp_coll_comm_t *c);
} tp__coll_xport_ops_t;

extern const tp__coll_xport_ops_t tp__coll_xport_tcp;

/* Shared memory between ranks of one host (xport/shm.c), driven by the
 * TCP transport's progress loop. setup turns every connected same-host
 * peer into a shared-memory peer (both ends agree over the connection;
 * either may refuse, e.g. TOPOPLACE_COLL_SHM=0, and the pair stays on
 * TCP). pump moves bytes without blocking; arm asks the peer to wake us
 * and returns true when there is work after all (no need to sleep);
 * drain eats wake-up bytes after poll() saw the fd readable. */
tp_err_t tp__coll_shm_setup(tp_coll_comm_t *c, int64_t deadline, char **err_p);
/* TOPOPLACE_COLL_SHM, _SHM_RING and _YIELD_US as setup will read them:
 * NULL when each is unset, empty or valid, else a one-line reason naming
 * the variable and its value (caller frees with tp_free()). Checked at
 * init, before the rendezvous, so a rank with a typo fails alone. */
char *tp__coll_shm_env_check(void);
tp_err_t tp__coll_shm_pump(tp_coll_comm_t *c, int peer, bool *moved_p);
bool tp__coll_shm_arm(tp_coll_comm_t *c, int peer);
tp_err_t tp__coll_shm_drain(tp_coll_comm_t *c, int peer, int fd);
/* PEER_LOST when the peer left with requests still queued to it (call
 * after a pump that moved nothing). */
tp_err_t tp__coll_shm_check(tp_coll_comm_t *c, int peer);
void tp__coll_shm_close(tp__coll_peer_t *p);
/* Close the peer's TCP connections (fd and the striping ones). */
void tp__coll_tcp_close_peer(tp__coll_peer_t *p);
/* The host segment of the ranks of this rank's host: all ranks of a
 * single-host communicator, else the hierarchical schedule's host level
 * (level[0] when host_lv). They agree over the connections between
 * neighbours; none when any refuses, e.g. TOPOPLACE_COLL_SHM=0: c->host,
 * or NULL. */
tp_err_t tp__coll_host_setup(tp_coll_comm_t *c, int64_t deadline, char **err_p);
/* All-reduce of at most TP__COLL_SMALL bytes through it: one wait per
 * rank. src NULL: in place. */
tp_err_t tp__coll_host_allreduce(tp_coll_comm_t *c, char *buf, const char *src,
				 size_t count, tp_coll_dtype_t dt,
				 tp_coll_op_t op);
/* Any size, in blocks through the same segment: the host reduce-scatter
 * and all-gather of the hierarchical schedule on a one-host job, two
 * waits per block of TP__COLL_HOST_BLOCK bytes (shm.c Notes). */
tp_err_t tp__coll_host_allreduce_large(tp_coll_comm_t *c, char *buf,
				       const char *src, size_t count,
				       tp_coll_dtype_t dt, tp_coll_op_t op);
/* The hierarchical schedule's host phases on a multi-host job, through
 * the same segment: the reduce-scatter leaves local rank l its shard
 * tp__coll_seg(count, ranks on the host, l) of buf reduced over the
 * host (src NULL: in place; the rest of buf is not written); the
 * all-gather copies every other rank's shard into buf. One wait per
 * round of TP__COLL_HOST_BLOCK bytes. */
tp_err_t tp__coll_host_reduce_scatter(tp_coll_comm_t *c, char *buf,
				      const char *src, size_t count,
				      tp_coll_dtype_t dt, tp_coll_op_t op);
tp_err_t tp__coll_host_allgather(tp_coll_comm_t *c, char *buf, size_t count,
				 tp_coll_dtype_t dt);
void tp__coll_host_close(tp_coll_comm_t *c);
/* This rank's transport moved bytes: counted in the host segment, so
 * local ranks waiting on it there see it is alive (host_wait). */
void tp__coll_host_moved(tp_coll_comm_t *c);

/*
 * Reduction kernels: dst[i] = dst[i] op src[i]; scale divides by n (the
 * second half of AVG). `stream` is for a device implementation (CUDA
 * stream); the CPU kernels ignore it. op is never AVG here (the
 * algorithms reduce AVG as SUM and scale at the end).
 */
typedef struct tp__coll_kernel {
	const char *name;
	void (*reduce)(void *dst, const void *src, size_t count,
		       tp_coll_dtype_t dtype, tp_coll_op_t op, void *stream);
	void (*scale)(void *buf, size_t count, tp_coll_dtype_t dtype, int n,
		      void *stream);
} tp__coll_kernel_t;

extern const tp__coll_kernel_t tp__coll_kernel_cpu;

/* A ring over a subset of ranks: members[0..n), me = my index. Its
 * reduce-scatter splits the data into nseg (>= n) equal sub-shards,
 * member i ending with the run [ceil(i nseg / n), ceil((i+1) nseg / n))
 * of them (one each when nseg == n): a unit's members and the channels
 * they hold in the hierarchical schedule (tp_sched.h). */
typedef struct tp__coll_ring {
	uint32_t *members;
	int n;
	int me;
	int nseg;
	/* member i's segment by weight (the host level of a plan with rank
	 * weights, tp__coll_wseg), n + 1 running sums; NULL: as above */
	const uint32_t *wcum;
} tp__coll_ring_t;

/* One tree over ranks (parent -1 at the root). Parent and children are
 * transport peer indices: rank + t x size for tree t (see peers). */
typedef struct tp__coll_tree {
	int parent;
	int nchildren;
	int *children;
} tp__coll_tree_t;

/* Words of one rank's call signature (TOPOPLACE_COLL_CHECK). */
#define TP__COLL_SIG_WORDS 13

/* The calls a signature names. */
typedef enum tp__coll_call {
	TP__COLL_CALL_ALLREDUCE,
	TP__COLL_CALL_REDUCE_SCATTER,
	TP__COLL_CALL_ALLGATHER,
	TP__COLL_CALL_BROADCAST,
	TP__COLL_CALL_BARRIER,
	TP__COLL_CALL_COMPRESSED,
	TP__COLL_NCALLS
} tp__coll_call_t;

struct tp_coll_comm {
	int rank;
	int size;
	int nhosts;
	int local_rank;
	double timeout_s;
	int64_t timeout_ns; /* timeout_s, at most TP__COLL_TIMEOUT_MAX_S */
	size_t chunk_bytes;
	/* the hierarchical all-reduce's pipeline segment in bytes (0:
	 * none; algo/hier.c), TOPOPLACE_COLL_SEGMENT */
	size_t seg_bytes;
	int nsock; /* TCP connections per peer on another host */
	/* A rank waiting only on same-host peers yields this long before
	 * it sleeps (TOPOPLACE_COLL_YIELD_US, xport/shm.c Notes). */
	int64_t yield_ns;
	uint64_t plan_hash;

	/* Schedules, from the plan at init. */
	char **host_of;	      /* [rank] host name (for error lines) */
	tp__coll_ring_t ring; /* all ranks, plan order */
	/* Hierarchical (the plan's schedule): the host and group levels
	 * (one-member levels left out), then per channel this rank's node
	 * holds a ring all-reduce of its sub-shard across the groups. None
	 * of either: hierarchical runs the ring. */
	tp__coll_ring_t level[TP__COLL_MAX_LEVELS];
	int nlevels;
	bool host_lv;		/* level[0] is the host's ranks */
	/* the plan's rank weights as running sums (host ranks + 1 of them,
	 * from 0), which split the host level (tp__coll_wseg); NULL: even */
	uint32_t *host_wcum;
	int group_lv;		/* index of the group level, -1: none */
	int nchan;		/* the schedule's channels C */
	tp__coll_ring_t *cross; /* [ncross] */
	int *cross_chan;	/* channel of each */
	int ncross;
	tp__coll_tree_t tree[2];
	int max_children;
	/* Recommendation per plan size. */
	size_t nsizes;
	double *sizes;
	tp_coll_algo_t *recommend;
	/* [nsizes] the hierarchical all-reduce at that size: 1 pipelined,
	 * 0 one piece, -1 the rule (tp_plan_hier_pipelined; rank 0's) */
	int8_t *hier_pipe;

	/* Transport. */
	const tp__coll_xport_ops_t *xp;
	const tp__coll_kernel_t *kern;
	void *stream; /* CUDA stream for device buffers (device.c) */
	/* [channel x size + rank]: channel 0 carries the ring, hierarchical
	 * and tree 0 traffic, channel 1 tree 1's. Both trees may use one
	 * pair of ranks at once, in orders that depend on timing; a stream
	 * each keeps every stream's sends and receives in the same order. */
	tp__coll_peer_t *peers;
	int *active; /* connected peers */
	int nactive;
	struct pollfd *pfd;   /* [nactive] */
	int *pfd_peer;	      /* peer of each pfd entry */
	int64_t last_move_ns; /* last time a byte moved */
	bool broken;
	/* This process was forked from the one that made the communicator
	 * (comm.c, fork_child): its connections are closed here and every
	 * call fails with TP_ERR_INVAL. */
	bool forked;
	/* The list of live communicators fork_child walks. */
	struct tp_coll_comm *reg_next, **reg_pprev;
	const char *call; /* name of the call in progress */
	char detail[512];
	/* TOPOPLACE_COLL_CHECK=1: each call first compares its arguments
	 * with every rank's (comm.c, check_args); sig holds size x
	 * TP__COLL_SIG_WORDS of them, seq counts the calls */
	bool check;
	/* device.c runs a device call's host copy through the public call:
	 * its begin() neither compares nor looks up the buffers again */
	bool staged;
	int64_t *sig;
	int64_t seq;

	/* Scratch: slots of chunk_bytes, W x max_children per tree (the
	 * tree's child receives; the ring's TCP staging uses the first W);
	 * work buffer for reduce-scatter (grown on demand). */
	char *slots;
	size_t nslots;
	tp__coll_req_t *reqs; /* carved by each algorithm */
	size_t nreqs;
	char *work;
	size_t work_cap;
	uint64_t *sent; /* [rank] bytes posted to it (stats) */
	uint64_t phase_ns[TP_COLL_PHASES]; /* (stats) */
	/* This rank's HCA (the plan's, NULL: none) and its IPv4 address
	 * (network order, 0: none) that its peer connections use. */
	char *hca;
	uint32_t hca_addr;
	/* The host segment of this rank's host (the host level's ranks,
	 * or all ranks on a one-host communicator); NULL: none. */
	tp__coll_host_t *host;

	/* Compressed all-reduce (compress.c): level-1 group of each rank
	 * (the hierarchical schedule's), error-feedback state per key, and
	 * the message buffers, one per stage (grown on demand), so the
	 * group level's stages can run while the cross exchange holds its. */
	uint32_t *group_of; /* [rank] */
	bool groups_even;   /* every group has as many hosts */
	size_t nunits;	    /* the schedule's level-1 units (groups) */
	struct tp__coll_ef *ef;
	/* compressed calls without error-feedback state so far: their
	 * stochastic rounding's call number (every rank makes the same) */
	uint64_t comp_calls;
	char *cmsg[2];
	size_t cmsg_cap[2];
	/* Work run behind the ring phases (compress.c's pipeline): the ring
	 * loops and the compressed stages run to their end call bg(c,
	 * bg_arg) before they wait on the transport. */
	tp_err_t (*bg)(tp_coll_comm_t *c, void *arg);
	void *bg_arg;
};

/* Monotonic clock in ns. */
int64_t tp__coll_now_ns(void);
/* Longest timeout kept (about 31 years): longer ones, INFINITY
 * included, wait as long, and deadlines (now + timeout) stay far from
 * INT64_MAX. */
#define TP__COLL_TIMEOUT_MAX_S 1e9
/* A poll() timeout for left_ns nanoseconds: rounded up, at most INT_MAX
 * ms (a longer wait polls again), 0 when left_ns <= 0. */
int tp__coll_poll_ms(int64_t left_ns);
/* Break c: later calls fail at once, its connections close (so its
 * neighbours fail too, naming this rank). */
void tp__coll_break(tp_coll_comm_t *c);
/* What a call on a broken communicator returns: TP_ERR_PEER_LOST, or
 * TP_ERR_INVAL in a forked child. */
tp_err_t tp__coll_broken_err(const tp_coll_comm_t *c);
/* Record a failure in c->detail ("<call>: <what>") and return err.
 * Transport errors (PEER_LOST, TIMEOUT, IO) also break c and close its
 * connections. */
tp_err_t tp__coll_fail(tp_coll_comm_t *c, tp_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "rank 3 (host node07)" into buf. */
const char *tp__coll_peer_name(const tp_coll_comm_t *c, int rank, char *buf,
			       size_t len);

/* Device buffers (device.c, through tp_cuda.h): *dev_p set when a or b is
 * CUDA device memory (both must be); the device_* calls stage them
 * through host memory and run the host collective on the copies. */
tp_err_t tp__coll_on_device(tp_coll_comm_t *c, const void *a, const void *b,
			    bool *dev_p);
tp_err_t tp__coll_device_allreduce(tp_coll_comm_t *c, const void *sendbuf,
				   void *recvbuf, size_t count,
				   tp_coll_dtype_t dt, tp_coll_op_t op,
				   tp_coll_algo_t algo);
tp_err_t tp__coll_device_reduce_scatter(tp_coll_comm_t *c, const void *sendbuf,
					void *recvbuf, size_t recvcount,
					tp_coll_dtype_t dt, tp_coll_op_t op);
tp_err_t tp__coll_device_allgather(tp_coll_comm_t *c, const void *sendbuf,
				   void *recvbuf, size_t sendcount,
				   tp_coll_dtype_t dt);
tp_err_t tp__coll_device_broadcast(tp_coll_comm_t *c, void *buf, size_t count,
				   tp_coll_dtype_t dt, int root);

/* Bootstrap (bootstrap.c): rendezvous and peer connections. */
tp_err_t tp__coll_connect(tp_coll_comm_t *c, const tp_coll_opts_t *o,
			  const char *default_host, char **err_p);

/* Segment i of count elements split over n: offset and count. */
static inline void tp__coll_seg(size_t count, int n, int i, size_t *off_p,
				size_t *cnt_p)
{
	size_t base = count / (size_t)n, rem = count % (size_t)n;
	size_t ui = (size_t)i;

	*off_p = ui * base + (ui < rem ? ui : rem);
	*cnt_p = base + (ui < rem ? 1 : 0);
}

/* Segment i of count elements split over n by weight: part i runs from
 * floor(count x wcum[i] / wcum[n]) to the next one's start (wcum: n + 1
 * running sums of the weights, wcum[0] = 0); NULL: tp__coll_seg. */
static inline size_t tp__coll_wpos(size_t count, uint32_t x, uint32_t w)
{
	/* count x / w exactly, without the product overflowing */
	return count / w * x + count % w * x / w;
}

static inline void tp__coll_wseg(const uint32_t *wcum, size_t count, int n,
				 int i, size_t *off_p, size_t *cnt_p)
{
	if (!wcum) {
		tp__coll_seg(count, n, i, off_p, cnt_p);
		return;
	}
	*off_p = tp__coll_wpos(count, wcum[i], wcum[n]);
	*cnt_p = tp__coll_wpos(count, wcum[i + 1], wcum[n]) - *off_p;
}

/* The largest of tp__coll_wseg()'s n parts: ceil(count / n) when even. */
static inline size_t tp__coll_wseg_max(const uint32_t *wcum, size_t count,
				       int n)
{
	size_t most = 0, off, cnt;

	if (!wcum)
		return (count + (size_t)n - 1) / (size_t)n;
	for (int i = 0; i < n; i++) {
		tp__coll_wseg(wcum, count, n, i, &off, &cnt);
		most = cnt > most ? cnt : most;
	}
	return most;
}

/* Segment of member i of ring r: its run of sub-shards. */
static inline void tp__coll_ring_seg(const tp__coll_ring_t *r, size_t count,
				     int i, size_t *off_p, size_t *cnt_p)
{
	size_t lo, hi, end, x;

	if (r->wcum || r->nseg == r->n) {
		tp__coll_wseg(r->wcum, count, r->n, i, off_p, cnt_p);
		return;
	}
	lo = ((size_t)i * (size_t)r->nseg + (size_t)r->n - 1) / (size_t)r->n;
	hi = ((size_t)(i + 1) * (size_t)r->nseg + (size_t)r->n - 1) /
	     (size_t)r->n;
	tp__coll_seg(count, r->nseg, (int)lo, off_p, &x);
	if (hi < (size_t)r->nseg)
		tp__coll_seg(count, r->nseg, (int)hi, &end, &x);
	else
		end = count;
	*cnt_p = end - *off_p;
}

/* Most elements any member's segment of ring r holds. */
static inline size_t tp__coll_ring_maxseg(const tp__coll_ring_t *r,
					  size_t count)
{
	if (r->wcum)
		return tp__coll_wseg_max(r->wcum, count, r->n);
	size_t per = ((size_t)r->nseg + (size_t)r->n - 1) / (size_t)r->n;
	return per * ((count + (size_t)r->nseg - 1) / (size_t)r->nseg);
}

/* Where the hierarchical schedule's levels work on count elements:
 * level l reduce-scatters [off[l], off[l] + cnt[l]) (this rank ending
 * with [off[l+1], ...)); the channels split [*soff_p, + *scnt_p), the
 * group level's input (or all the host level left, with no group
 * level). */
static inline void tp__coll_hier_spans(const tp_coll_comm_t *c, size_t count,
				       size_t *off, size_t *cnt, size_t *soff_p,
				       size_t *scnt_p)
{
	int s = c->group_lv >= 0 ? c->group_lv : c->nlevels;

	off[0] = 0;
	cnt[0] = count;
	for (int l = 0; l < c->nlevels; l++) {
		size_t so;
		tp__coll_ring_seg(&c->level[l], cnt[l], c->level[l].me, &so,
				  &cnt[l + 1]);
		off[l + 1] = off[l] + so;
	}
	*soff_p = off[s];
	*scnt_p = cnt[s];
}

/* Algorithms (algo/). op is never AVG. buf is the result; src (NULL: buf
 * itself) is the input of the ones that take it, read chunk by chunk so
 * an out-of-place call needs no up-front copy. */
tp_err_t tp__coll_ring_reduce_scatter(tp_coll_comm_t *c,
				      const tp__coll_ring_t *r, char *buf,
				      const char *src, size_t count,
				      tp_coll_dtype_t dt, tp_coll_op_t op,
				      int shift);
/* With c->check: one all-gather of this call's signature (what call,
 * count, dtype, op, algorithm, root; -1 where it does not apply; co: the
 * compressed all-reduce's options that shape its messages, NULL for the
 * others; local_err: this rank's own verdict on its arguments,
 * TP_OK or the error it is about to return), so every rank fails alike,
 * naming a rank whose call differs, instead of hanging or reducing
 * mismatched buffers. TP_ERR_MISMATCH then, the communicator still
 * usable; local_err without c->check. */
tp_err_t tp__coll_check_args(tp_coll_comm_t *c, tp__coll_call_t call,
			     uint64_t count, int dt, int op, int algo, int root,
			     const tp_coll_comp_opts_t *co, tp_err_t local_err);

tp_err_t tp__coll_ring_allgather(tp_coll_comm_t *c, const tp__coll_ring_t *r,
				 char *buf, size_t count, tp_coll_dtype_t dt,
				 int own);
/* One ring reduce-scatter (ag false) or all-gather as a state machine,
 * so that one can run behind another (the pipelined hierarchical
 * schedule's exchange across groups behind its in-group stages). base:
 * the segment this rank sends first (the reduce-scatter's me + shift, the
 * all-gather's own). lane 0 or 1: which window of c->reqs and c->slots it
 * uses (comm.c sizes both for two lanes); two phases running at once
 * take different lanes. pump posts and completes what it can without
 * blocking and says whether anything moved; the caller drives the
 * transport (xp->progress) when nothing did. */
typedef struct tp__coll_ring_phase {
	const tp__coll_ring_t *r;
	bool ag;
	char *buf;
	const char *src;
	size_t count, dsz, ce, nch, nunits;
	tp_coll_dtype_t dt;
	tp_coll_op_t op;
	int base, prev, next;
	tp__coll_req_t *rq, *sq;
	char *slots;
	size_t rpost, rdone, spost, sdone;
} tp__coll_ring_phase_t;
void tp__coll_ring_phase_init(tp_coll_comm_t *c, tp__coll_ring_phase_t *p,
			      const tp__coll_ring_t *r, bool ag, char *buf,
			      const char *src, size_t count, tp_coll_dtype_t dt,
			      tp_coll_op_t op, int base, int lane);
bool tp__coll_ring_phase_pump(tp_coll_comm_t *c, tp__coll_ring_phase_t *p);
static inline bool tp__coll_ring_phase_done(const tp__coll_ring_phase_t *p)
{
	return p->rdone == p->nunits && p->sdone == p->nunits;
}
tp_err_t tp__coll_ring_allreduce(tp_coll_comm_t *c, const tp__coll_ring_t *r,
				 char *buf, const char *src, size_t count,
				 tp_coll_dtype_t dt, tp_coll_op_t op);
tp_err_t tp__coll_ring_broadcast(tp_coll_comm_t *c, char *buf, size_t bytes,
				 int root);
tp_err_t tp__coll_tree_allreduce(tp_coll_comm_t *c, char *buf, size_t count,
				 tp_coll_dtype_t dt, tp_coll_op_t op);
/* pipe: 1 pipelined in segments of at least c->seg_bytes, 0 in one
 * piece, -1 the rule (pipelined above one segment); algo/hier.c. */
tp_err_t tp__coll_hier_allreduce(tp_coll_comm_t *c, char *buf, const char *src,
				 size_t count, tp_coll_dtype_t dt,
				 tp_coll_op_t op, int pipe);

/* Where cross ring x works in the call's elements [a, a + n) (a segment
 * of the hierarchical schedule): *at_p (in the call's buffer) and
 * *cnt_p elements. */
void tp__coll_cross_span(const tp_coll_comm_t *c, size_t a, size_t n, int x,
			 size_t *at_p, size_t *cnt_p);
/* The pipelined hierarchical schedules' exchanges across the units, a
 * queue of segments run behind the foreground (algo/hier.c; dense there,
 * compressed in compress.c). The segments are seg elements of count (the
 * last shorter). The reduce-scatters push each segment as they finish it
 * (queued); the head segment runs each cross ring's reduce-scatter, then
 * its all-gather, in channel order; done segments are back. How a phase
 * runs is the owner's: start begins cross ring q->x's reduce-scatter (q->ag
 * false) or all-gather on the call's elements [at, at + n); pump moves it
 * on without blocking and sets *fin once it has ended. Embed the queue as
 * the first member of the owner's state. */
typedef struct tp__coll_xq tp__coll_xq_t;
struct tp__coll_xq {
	size_t count, seg, queued, done;
	int x;
	bool ag, active;
	tp_err_t (*start)(tp_coll_comm_t *c, tp__coll_xq_t *q, size_t at,
			  size_t n);
	tp_err_t (*pump)(tp_coll_comm_t *c, tp__coll_xq_t *q, bool *fin);
};
/* Segment i's length. */
static inline size_t tp__coll_xq_len(const tp__coll_xq_t *q, size_t i)
{
	return q->count - i * q->seg < q->seg ? q->count - i * q->seg : q->seg;
}
/* Runs the queue behind the call (c->bg = tp__coll_xq_poll, c->bg_arg =
 * q) until tp__coll_xq_end. */
void tp__coll_xq_begin(tp_coll_comm_t *c, tp__coll_xq_t *q);
/* Moves the queue on without blocking (c->bg's signature). */
tp_err_t tp__coll_xq_poll(tp_coll_comm_t *c, void *q);
/* The next segment's reduce-scatters are done: queue its exchange. */
tp_err_t tp__coll_xq_push(tp_coll_comm_t *c, tp__coll_xq_t *q);
/* Waits until segment i is back (the time not hidden: CROSS). */
tp_err_t tp__coll_xq_wait(tp_coll_comm_t *c, tp__coll_xq_t *q, size_t i);
/* The call ends with err: the queue stops running behind it; after an
 * error with phases still posted (their requests point into the owner's
 * state) the communicator is broken. Returns err. */
tp_err_t tp__coll_xq_end(tp_coll_comm_t *c, tp__coll_xq_t *q, tp_err_t err);

/* Adds the time since t0 to phase; returns now (the next phase's t0). */
static inline int64_t tp__coll_lap(tp_coll_comm_t *c, tp_coll_phase_t phase,
				   int64_t t0)
{
	int64_t now = tp__coll_now_ns();

	c->phase_ns[phase] += (uint64_t)(now - t0);
	return now;
}

/* One compressed all-reduce (compress.c, algo/comp.c). kind is a
 * TP__COMP_* (comp_wire.h); o carries block, rounding and top-k options
 * (o.seed: this call's, varied per hop). res[s][0] and res[s][1]: the
 * reduce-scatter's (top-k: the only) and the all-gather's residuals of
 * stage s (0 the flat or cross rings, 1 the group level), each indexed
 * like the call's buffer; NULL without error feedback. vel: top-k's
 * velocity, indexed the same (NULL without momentum), vel_mask: clear it
 * where this rank sent. seg: the call's pipeline segment (0: none),
 * carried in every message's header: ranks cut differently must fail,
 * not sum values of other places. */
typedef struct tp__coll_comp_call {
	int kind;
	tp_cuda_comp_opts_t o;
	uint64_t seg;
	float *res[2][2];
	float *vel, momentum;
	bool vel_mask;
} tp__coll_comp_call_t;

/* Before a dense stage of ring r (the host level of a hierarchical
 * compressed call): swap the call's header (kind, block, segment, count;
 * comp_wire.h) with both neighbours on r and check theirs, so that ranks
 * that cut the buffer differently fail here with TP_ERR_MISMATCH naming
 * the field, both values and the peer (and break the communicator), not
 * wait in the dense stage for bytes that never come. One message each
 * way per neighbour per call. */
tp_err_t tp__coll_comp_agree(tp_coll_comm_t *c, const tp__coll_ring_t *r,
			     const tp__coll_comp_call_t *k, size_t count);
/* Compressed all-reduce of buf[0..count) around ring r in stage st
 * (buf and the residuals offset by `at` elements of the call's buffer). */
tp_err_t tp__coll_comp_ring_allreduce(tp_coll_comm_t *c,
				      const tp__coll_ring_t *r,
				      tp__coll_comp_call_t *k, int st,
				      float *buf, size_t at, size_t count);
/* Its two halves for int8 / 1-bit, run to their end: the reduce-scatter
 * (ag 0) leaves member i segment i (tp__coll_ring_seg) reduced; the
 * all-gather (ag 1) spreads them. */
tp_err_t tp__coll_comp_ring_stage(tp_coll_comm_t *c, const tp__coll_ring_t *r,
				  tp__coll_comp_call_t *k, int st, int ag,
				  float *buf, size_t at, size_t count);
/* A compressed ring phase's neighbours and message slots: slots of cap
 * bytes in stage st's message buffer m (c->cmsg[st]). */
typedef struct tp__coll_hop {
	int prev, next;
	int from; /* the rank whose message the next receive carries (an
		   * all-gather forwards others'), named when it is
		   * refused; -1: prev's own */
	size_t cap;
	char *m;
} tp__coll_hop_t;
/* A compressed ring stage's states (tp__coll_comp_op_t.state). */
enum { TP__OP_HDR = 1, TP__OP_PAYLOAD = 2, TP__OP_DONE = 3 };
/* The int8 / 1-bit reduce-scatter (ag 0) or all-gather (ag 1) of ring r
 * as a step machine, for running it behind other transfers: start posts
 * its first step, poll moves it on when that step's messages are done
 * (call it, then the transport's progress, until done). It holds stage
 * st's message buffer (c->cmsg[st]) until done: one at a time per stage,
 * and no other compressed stage of st meanwhile. */
typedef struct tp__coll_comp_op {
	const tp__coll_ring_t *r;
	tp__coll_comp_call_t *k;
	int st, ag, step, state;
	tp__coll_hop_t h; /* two slots */
	float *buf;
	size_t at, count, slen, len[2], ro, rc;
	char *rslot;
	tp__coll_req_t sq, pq, rq; /* send: header, payload; receive */
} tp__coll_comp_op_t;
tp_err_t tp__coll_comp_op_start(tp_coll_comm_t *c, tp__coll_comp_op_t *op,
				const tp__coll_ring_t *r,
				tp__coll_comp_call_t *k, int st, int ag,
				float *buf, size_t at, size_t count);
tp_err_t tp__coll_comp_op_poll(tp_coll_comm_t *c, tp__coll_comp_op_t *op);
static inline bool tp__coll_comp_op_done(const tp__coll_comp_op_t *op)
{
	return op->state == TP__OP_DONE;
}
void tp__coll_comp_free(tp_coll_comm_t *c);

#endif
