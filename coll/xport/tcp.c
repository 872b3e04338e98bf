/* tcp.c - the TCP transport: per-peer FIFO queues of posted requests over
 * one non-blocking stream socket each, moved by progress().
 *
 * Notes: messages carry no header. The algorithms post matching sends and
 * receives in the same order on both ends of a connection, so a FIFO per
 * direction is the whole matching rule. progress() first moves what it
 * can without waiting; only when nothing moved does it sleep in poll(), so
 * a waiting rank costs no CPU. The timeout counts from the last byte that
 * moved, not from the start of the call. */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coll_int.h"

static void enqueue(tp__coll_req_t **head, tp__coll_req_t **tail,
		    tp__coll_req_t *r)
{
	r->next = NULL;
	if (*tail)
		(*tail)->next = r;
	else
		*head = r;
	*tail = r;
}

static void prep(tp__coll_req_t *r, int peer, const void *buf, size_t len)
{
	r->buf = (char *)buf;
	r->len = len;
	r->off = 0;
	r->peer = peer;
	r->done = len == 0;
	r->acc = NULL;
}

static void tcp_isend(tp_coll_comm_t *c, int peer, const void *buf, size_t len,
		      tp__coll_req_t *r)
{
	tp__coll_peer_t *p = &c->peers[peer];

	prep(r, peer, buf, len);
	c->sent[peer % c->size] += len;
	if (!r->done) {
		r->seq = p->sq_seq++;
		enqueue(&p->sq_head, &p->sq_tail, r);
	}
}

static void tcp_irecv(tp_coll_comm_t *c, int peer, void *buf, size_t len,
		      tp__coll_req_t *r)
{
	tp__coll_peer_t *p = &c->peers[peer];

	prep(r, peer, buf, len);
	if (!r->done) {
		r->seq = p->rq_seq++;
		enqueue(&p->rq_head, &p->rq_tail, r);
	}
}

static void tcp_irecv_reduce(tp_coll_comm_t *c, int peer, void *acc,
			     void *staging, size_t len, tp_coll_dtype_t dt,
			     tp_coll_op_t op, tp__coll_req_t *r)
{
	tcp_irecv(c, peer, staging, len, r);
	r->acc = acc;
	r->dt = dt;
	r->op = op;
}

static tp_err_t lost(tp_coll_comm_t *c, int peer, int e)
{
	char who[160];

	tp__coll_peer_name(c, peer, who, sizeof(who));
	if (e == 0)
		return tp__coll_fail(c, TP_ERR_PEER_LOST,
				     "%s closed the connection", who);
	return tp__coll_fail(c, TP_ERR_PEER_LOST, "%s: %s", who, strerror(e));
}

/* A received request is complete: reduce it if asked, pop it. */
static void recv_done(tp_coll_comm_t *c, tp__coll_peer_t *p)
{
	tp__coll_req_t *r = p->rq_head;

	if (r->acc)
		c->kern->reduce(r->acc, r->buf,
				r->len / tp_coll_dtype_size(r->dt), r->dt,
				r->op, NULL);
	r->done = true;
	p->rq_head = r->next;
	if (!p->rq_head)
		p->rq_tail = NULL;
}

static void send_done(tp__coll_peer_t *p)
{
	tp__coll_req_t *r = p->sq_head;

	r->done = true;
	p->sq_head = r->next;
	if (!p->sq_head)
		p->sq_tail = NULL;
}

/* ---- one or more connections per peer ----------------------------------
 *
 * Notes: connection k of n (tp__coll_peer_t.nconn) carries bytes [len k / n,
 * len (k+1) / n) of every request, in the queue's order, so each connection is
 * a FIFO of stripes and needs no header either. Each moves on its own: a
 * request is done when all its bytes are (the queue still completes in order,
 * since every connection finishes a request before it starts the next).
 */

static int conn_fd(const tp__coll_peer_t *p, int k)
{
	return k ? p->xfd[k - 1] : p->fd;
}

static void stripe(size_t len, int k, int n, size_t *lo_p, size_t *hi_p)
{
	*lo_p = len / (size_t)n * (size_t)k +
		len % (size_t)n * (size_t)k / (size_t)n;
	*hi_p = len / (size_t)n * (size_t)(k + 1) +
		len % (size_t)n * (size_t)(k + 1) / (size_t)n;
}

/* The request of the queue at head with sequence number seq, or NULL. */
static tp__coll_req_t *find(tp__coll_req_t *head, uint64_t seq)
{
	while (head && head->seq != seq)
		head = head->next;
	return head;
}

/* Move connection k's stripes one way until the kernel would block. */
static tp_err_t pump_conn(tp_coll_comm_t *c, int peer, int k, bool out,
			  bool *moved_p)
{
	tp__coll_peer_t *p = &c->peers[peer];
	tp__coll_stripe_t *st = &p->st[k];
	uint64_t *seq = out ? &st->sseq : &st->rseq;
	size_t *off = out ? &st->soff : &st->roff, lo, hi;
	tp__coll_req_t *r;
	int fd = conn_fd(p, k);

	while ((r = find(out ? p->sq_head : p->rq_head, *seq))) {
		stripe(r->len, k, p->nconn, &lo, &hi);
		if (*off < hi - lo) {
			char *at = r->buf + lo + *off;
			ssize_t n =
			    out ? send(fd, at, hi - lo - *off,
				       MSG_NOSIGNAL | MSG_DONTWAIT)
				: recv(fd, at, hi - lo - *off, MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				if (errno == EINTR)
					continue;
				return lost(c, peer, errno);
			}
			if (n == 0)
				return lost(c, peer, 0);
			*moved_p = true;
			*off += (size_t)n;
			r->off += (size_t)n;
			if (*off < hi - lo)
				continue;
		}
		(*seq)++;
		*off = 0;
	}
	return TP_OK;
}

static tp_err_t pump_striped(tp_coll_comm_t *c, int peer, bool *moved_p)
{
	tp__coll_peer_t *p = &c->peers[peer];

	for (int k = 0; k < p->nconn; k++) {
		tp_err_t err = pump_conn(c, peer, k, true, moved_p);
		if (!err)
			err = pump_conn(c, peer, k, false, moved_p);
		if (err)
			return err;
	}
	while (p->sq_head && p->sq_head->off == p->sq_head->len)
		send_done(p);
	while (p->rq_head && p->rq_head->off == p->rq_head->len)
		recv_done(c, p);
	return TP_OK;
}

/* Poll entries for a TCP peer: each connection that has a stripe to move
 * (one with nothing queued would wake poll for nothing). */
static int arm_striped(tp_coll_comm_t *c, int peer, int np)
{
	tp__coll_peer_t *p = &c->peers[peer];

	for (int k = 0; k < p->nconn; k++) {
		short ev = (find(p->sq_head, p->st[k].sseq) ? POLLOUT : 0) |
			   (find(p->rq_head, p->st[k].rseq) ? POLLIN : 0);
		if (!ev)
			continue;
		c->pfd[np].fd = conn_fd(p, k);
		c->pfd[np].events = ev;
		c->pfd[np].revents = 0;
		c->pfd_peer[np++] = peer;
	}
	return np;
}

void tp__coll_tcp_close_peer(tp__coll_peer_t *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	for (int k = 0; k < TP__COLL_MAX_SOCKETS - 1; k++) {
		if (p->xfd[k] >= 0)
			close(p->xfd[k]);
		p->xfd[k] = -1;
	}
}

/* Move bytes on one peer until the kernel would block; *moved_p set when
 * any byte moved. */
static tp_err_t pump(tp_coll_comm_t *c, int peer, bool *moved_p)
{
	tp__coll_peer_t *p = &c->peers[peer];

	if (p->tx)
		return tp__coll_shm_pump(c, peer, moved_p);
	return pump_striped(c, peer, moved_p);
}

static tp_err_t timed_out(tp_coll_comm_t *c)
{
	char who[160];

	for (int i = 0; i < c->nactive; i++) {
		int peer = c->active[i];
		tp__coll_peer_t *p = &c->peers[peer];

		if (p->sq_head || p->rq_head) {
			tp__coll_peer_name(c, peer, who, sizeof(who));
			return tp__coll_fail(
			    c, TP_ERR_TIMEOUT,
			    "no progress for %.3g s waiting for %s",
			    c->timeout_s, who);
		}
	}
	return tp__coll_fail(c, TP_ERR_TIMEOUT, "no progress for %.3g s",
			     c->timeout_s);
}

/* Every peer with requests queued is a shared-memory one. */
static bool shm_only(const tp_coll_comm_t *c)
{
	for (int i = 0; i < c->nactive; i++) {
		const tp__coll_peer_t *p = &c->peers[c->active[i]];
		if (!p->tx && (p->sq_head || p->rq_head))
			return false;
	}
	return true;
}

static tp_err_t tcp_progress(tp_coll_comm_t *c)
{
	if (c->broken)
		return TP_ERR_PEER_LOST;
	for (;;) {
		bool moved = false;
		int np = 0;

		for (int i = 0; i < c->nactive; i++) {
			tp_err_t err = pump(c, c->active[i], &moved);
			if (err)
				return err;
		}
		int64_t now = tp__coll_now_ns();
		if (moved) {
			c->last_move_ns = now;
			tp__coll_host_moved(c);
			return TP_OK;
		}
		/* only same-host peers to wait for: yield a while first */
		if (now - c->last_move_ns < c->yield_ns && shm_only(c)) {
			sched_yield();
			continue;
		}
		bool ready = false;
		for (int i = 0; i < c->nactive; i++) {
			tp__coll_peer_t *p = &c->peers[c->active[i]];
			short ev = (p->sq_head ? POLLOUT : 0) |
				   (p->rq_head ? POLLIN : 0);
			if (!ev)
				continue;
			if (p->tx) {
				tp_err_t err =
				    tp__coll_shm_check(c, c->active[i]);
				if (err)
					return err;
				/* shared memory: sleep on the wake-up bytes,
				 * and on fd for a peer that dies */
				ready |= tp__coll_shm_arm(c, c->active[i]);
				ev = POLLIN;
				if (p->wake_rd >= 0) {
					c->pfd[np].fd = p->wake_rd;
					c->pfd[np].events = POLLIN;
					c->pfd[np].revents = 0;
					c->pfd_peer[np++] = c->active[i];
				}
			}
			if (!p->tx) {
				np = arm_striped(c, c->active[i], np);
				continue;
			}
			c->pfd[np].fd = p->fd;
			c->pfd[np].events = ev;
			c->pfd[np].revents = 0;
			c->pfd_peer[np] = c->active[i];
			np++;
		}
		if (np == 0)
			return TP_OK; /* nothing queued: caller's step is local
				       */
		if (ready)
			continue;
		int64_t left = c->last_move_ns + c->timeout_ns - now;
		if (left <= 0)
			return timed_out(c);
		int n = poll(c->pfd, (nfds_t)np, tp__coll_poll_ms(left));
		if (n < 0 && errno != EINTR)
			return tp__coll_fail(c, TP_ERR_IO, "poll: %s",
					     strerror(errno));
		for (int i = 0; i < np && n > 0; i++) {
			if (!c->pfd[i].revents || !c->peers[c->pfd_peer[i]].tx)
				continue;
			tp_err_t err =
			    tp__coll_shm_drain(c, c->pfd_peer[i], c->pfd[i].fd);
			if (err)
				return err;
		}
	}
}

static tp_err_t tcp_poke(tp_coll_comm_t *c, bool *moved_p)
{
	bool moved = false;

	if (c->broken)
		return TP_ERR_PEER_LOST;
	for (int i = 0; i < c->nactive; i++) {
		tp_err_t err = pump(c, c->active[i], &moved);
		if (err)
			return err;
	}
	if (moved) {
		c->last_move_ns = tp__coll_now_ns();
		tp__coll_host_moved(c);
	}
	*moved_p = moved;
	return TP_OK;
}

static void tcp_close(tp_coll_comm_t *c)
{
	for (int i = 0; i < c->nactive; i++) {
		tp__coll_peer_t *p = &c->peers[c->active[i]];
		tp__coll_tcp_close_peer(p);
		tp__coll_shm_close(p);
		p->sq_head = p->sq_tail = p->rq_head = p->rq_tail = NULL;
	}
	c->nactive = 0;
}

const tp__coll_xport_ops_t tp__coll_xport_tcp = {
    .name = "tcp",
    .isend = tcp_isend,
    .irecv = tcp_irecv,
    .irecv_reduce = tcp_irecv_reduce,
    .progress = tcp_progress,
    .poke = tcp_poke,
    .close = tcp_close,
};
