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
	if (!r->done)
		enqueue(&p->sq_head, &p->sq_tail, r);
}

static void tcp_irecv(tp_coll_comm_t *c, int peer, void *buf, size_t len,
		      tp__coll_req_t *r)
{
	tp__coll_peer_t *p = &c->peers[peer];

	prep(r, peer, buf, len);
	if (!r->done)
		enqueue(&p->rq_head, &p->rq_tail, r);
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

/* Move bytes on one peer until the kernel would block; *moved_p set when
 * any byte moved. */
static tp_err_t pump(tp_coll_comm_t *c, int peer, bool *moved_p)
{
	tp__coll_peer_t *p = &c->peers[peer];

	if (p->tx)
		return tp__coll_shm_pump(c, peer, moved_p);

	while (p->sq_head) {
		tp__coll_req_t *r = p->sq_head;
		ssize_t n = send(p->fd, r->buf + r->off, r->len - r->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			if (errno == EINTR)
				continue;
			return lost(c, peer, errno);
		}
		*moved_p = true;
		r->off += (size_t)n;
		if (r->off == r->len) {
			r->done = true;
			p->sq_head = r->next;
			if (!p->sq_head)
				p->sq_tail = NULL;
		}
	}
	while (p->rq_head) {
		tp__coll_req_t *r = p->rq_head;
		ssize_t n =
		    recv(p->fd, r->buf + r->off, r->len - r->off, MSG_DONTWAIT);
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
		r->off += (size_t)n;
		if (r->off == r->len) {
			if (r->acc)
				c->kern->reduce(r->acc, r->buf,
						r->len /
						    tp_coll_dtype_size(r->dt),
						r->dt, r->op, NULL);
			r->done = true;
			p->rq_head = r->next;
			if (!p->rq_head)
				p->rq_tail = NULL;
		}
	}
	return TP_OK;
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
			return TP_OK;
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
		int64_t left =
		    c->last_move_ns + (int64_t)(c->timeout_s * 1e9) - now;
		if (left <= 0)
			return timed_out(c);
		int ms = (int)((left + 999999) / 1000000);
		int n = poll(c->pfd, (nfds_t)np, ms);
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

static void tcp_close(tp_coll_comm_t *c)
{
	for (int i = 0; i < c->nactive; i++) {
		tp__coll_peer_t *p = &c->peers[c->active[i]];
		if (p->fd >= 0)
			close(p->fd);
		p->fd = -1;
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
    .close = tcp_close,
};
