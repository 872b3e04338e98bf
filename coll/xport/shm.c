/* shm.c - shared-memory byte streams between ranks of one host.
 *
 * Notes: each connected same-host pair (per channel) shares one POSIX
 * shared-memory segment holding two single-producer single-consumer
 * rings, one per direction, with free-running head/tail counters. The
 * lower rank creates the segment under a unique name and sends the name
 * over the pair's TCP connection; the higher rank maps it and acks; the
 * creator unlinks it, so nothing is left in /dev/shm even if a rank dies
 * later. The TCP connection stays open: a rank that must wait sets its
 * "asleep" flag in the ring, re-checks, and sleeps in poll() on the
 * connection; the other side, after moving its counter, sends one byte
 * when it finds the flag set. Counter store and flag test are both
 * sequentially consistent on either side (Dekker), so a wake-up cannot be
 * lost, and nobody spins. A dead peer closes the connection, which poll()
 * reports as for TCP. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll_int.h"

#define CAP ((size_t)1 << 21) /* bytes per direction, power of two */
#define NAME_LEN 64

struct tp__coll_shm_ring {
	_Atomic uint64_t head; /* written by the sender */
	char pad0[56];
	_Atomic uint64_t tail; /* written by the receiver */
	char pad1[56];
	_Atomic uint32_t rsleep; /* receiver waits for data */
	char pad2[60];
	_Atomic uint32_t wsleep; /* sender waits for room */
	char pad3[60];
	char data[];
};

#define RING_BYTES (sizeof(tp__coll_shm_ring_t) + CAP)

static tp_err_t lost(tp_coll_comm_t *c, int peer, int e)
{
	char who[160];

	tp__coll_peer_name(c, peer, who, sizeof(who));
	if (e == 0)
		return tp__coll_fail(c, TP_ERR_PEER_LOST,
				     "%s closed the connection", who);
	return tp__coll_fail(c, TP_ERR_PEER_LOST, "%s: %s", who,
			     strerror(e));
}

/* Best effort: a peer that finished and left may still have a stale
 * flag set; a peer that died is found by poll() when we need it. */
static tp_err_t wake(tp_coll_comm_t *c, int peer)
{
	char b = 1;

	if (!c->peers[peer].eof)
		(void)!send(c->peers[peer].fd, &b, 1,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
	return TP_OK;
}

static void finish_req(tp__coll_req_t **head, tp__coll_req_t **tail)
{
	tp__coll_req_t *r = *head;

	r->done = true;
	*head = r->next;
	if (!*head)
		*tail = NULL;
}

tp_err_t tp__coll_shm_pump(tp_coll_comm_t *c, int peer, bool *moved_p)
{
	tp__coll_peer_t *p = &c->peers[peer];
	tp__coll_shm_ring_t *tx = p->tx, *rx = p->rx;
	tp_err_t err;

	while (p->sq_head) {
		tp__coll_req_t *r = p->sq_head;
		uint64_t h = atomic_load_explicit(&tx->head, memory_order_relaxed);
		uint64_t t = atomic_load_explicit(&tx->tail, memory_order_acquire);
		size_t room = CAP - (size_t)(h - t), n = r->len - r->off;
		if (room == 0)
			break;
		if (n > room)
			n = room;
		size_t pos = (size_t)h & (CAP - 1), first = CAP - pos;
		if (first > n)
			first = n;
		memcpy(tx->data + pos, r->buf + r->off, first);
		memcpy(tx->data, r->buf + r->off + first, n - first);
		atomic_store(&tx->head, h + n);
		if (atomic_exchange(&tx->rsleep, 0) && (err = wake(c, peer)))
			return err;
		*moved_p = true;
		r->off += n;
		if (r->off == r->len)
			finish_req(&p->sq_head, &p->sq_tail);
	}
	while (p->rq_head) {
		tp__coll_req_t *r = p->rq_head;
		uint64_t t = atomic_load_explicit(&rx->tail, memory_order_relaxed);
		uint64_t h = atomic_load_explicit(&rx->head, memory_order_acquire);
		size_t avail = (size_t)(h - t), n = r->len - r->off;
		if (avail == 0)
			break;
		if (n > avail)
			n = avail;
		size_t pos = (size_t)t & (CAP - 1), first = CAP - pos;
		if (first > n)
			first = n;
		memcpy(r->buf + r->off, rx->data + pos, first);
		memcpy(r->buf + r->off + first, rx->data, n - first);
		atomic_store(&rx->tail, t + n);
		if (atomic_exchange(&rx->wsleep, 0) && (err = wake(c, peer)))
			return err;
		*moved_p = true;
		r->off += n;
		if (r->off == r->len)
			finish_req(&p->rq_head, &p->rq_tail);
	}
	return TP_OK;
}

bool tp__coll_shm_arm(tp_coll_comm_t *c, int peer)
{
	tp__coll_peer_t *p = &c->peers[peer];
	bool ready = false;

	if (p->sq_head) {
		atomic_store(&p->tx->wsleep, 1);
		ready |= atomic_load(&p->tx->head) - atomic_load(&p->tx->tail) <
			 CAP;
	}
	if (p->rq_head) {
		atomic_store(&p->rx->rsleep, 1);
		ready |= atomic_load(&p->rx->head) != atomic_load(&p->rx->tail);
	}
	return ready;
}

tp_err_t tp__coll_shm_check(tp_coll_comm_t *c, int peer)
{
	const tp__coll_peer_t *p = &c->peers[peer];

	return p->eof && (p->sq_head || p->rq_head) ? lost(c, peer, 0) : TP_OK;
}

tp_err_t tp__coll_shm_drain(tp_coll_comm_t *c, int peer)
{
	char buf[256];

	for (;;) {
		ssize_t n = recv(c->peers[peer].fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			continue;
		if (n == 0) {
			/* Data it wrote before leaving is still in the ring:
			 * progress fails only when nothing more can move. */
			c->peers[peer].eof = true;
			return TP_OK;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return TP_OK;
		return lost(c, peer, errno);
	}
}

void tp__coll_shm_close(tp__coll_peer_t *p)
{
	if (p->map)
		munmap(p->map, p->map_len);
	p->map = NULL;
	p->tx = p->rx = NULL;
}

/* ---- setup ------------------------------------------------------------- */

static tp_err_t xfer(int fd, void *buf, size_t len, bool out,
		     int64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = out ? send(fd, (char *)buf + off, len - off,
				       MSG_NOSIGNAL | MSG_DONTWAIT)
				: recv(fd, (char *)buf + off, len - off,
				       MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == 0)
			return TP_ERR_PEER_LOST;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return TP_ERR_PEER_LOST;
		int64_t left = deadline - tp__coll_now_ns();
		if (left <= 0)
			return TP_ERR_TIMEOUT;
		struct pollfd pf = {.fd = fd, .events = out ? POLLOUT : POLLIN};
		poll(&pf, 1, (int)(left / 1000000) + 1);
	}
	return TP_OK;
}

static void *map_fd(int fd)
{
	void *m = mmap(NULL, 2 * RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void attach(tp__coll_peer_t *p, void *m, bool creator)
{
	tp__coll_shm_ring_t *a = m, *b = (void *)((char *)m + RING_BYTES);

	p->map = m;
	p->map_len = 2 * RING_BYTES;
	p->tx = creator ? a : b;
	p->rx = creator ? b : a;
}

static bool same_host(const tp_coll_comm_t *c, int peer)
{
	return !strcmp(c->host_of[peer % c->size], c->host_of[c->rank]);
}

/* Lower rank of a pair: make and map a segment, its name into name
 * (empty when it could not: the pair stays on TCP). */
static void create_segment(tp_coll_comm_t *c, int peer, char *name)
{
	static _Atomic unsigned seq;
	void *m = NULL;

	snprintf(name, NAME_LEN, "/tpcoll-%d-%u-%d", (int)getpid(),
		 atomic_fetch_add(&seq, 1), peer);
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0) {
		name[0] = '\0';
		return;
	}
	if (ftruncate(fd, (off_t)(2 * RING_BYTES)) == 0)
		m = map_fd(fd); /* zero-filled: counters start at 0 */
	close(fd);
	if (m) {
		attach(&c->peers[peer], m, true);
	} else {
		shm_unlink(name);
		name[0] = '\0';
	}
}

/* Higher rank of a pair: map the named segment; 1 when it did. */
static char open_segment(tp_coll_comm_t *c, int peer, const char *name)
{
	int fd = shm_open(name, O_RDWR, 0);
	void *m = fd >= 0 ? map_fd(fd) : NULL;

	if (fd >= 0)
		close(fd);
	if (!m)
		return 0;
	attach(&c->peers[peer], m, false);
	return 1;
}

tp_err_t tp__coll_shm_setup(tp_coll_comm_t *c, int64_t deadline, char **err_p)
{
	const char *env = getenv("TOPOPLACE_COLL_SHM");
	bool enabled = !(env && !strcmp(env, "0"));
	char (*names)[NAME_LEN] = tp_calloc(2 * (size_t)c->size, NAME_LEN);
	tp_err_t err = TP_OK;

	if (!names)
		return TP_ERR_NOMEM;
	/* 1: the lower rank of each pair creates and names the segment
	 * (an empty name refuses); sends never block on 64 bytes. */
	for (int i = 0; i < c->nactive && !err; i++) {
		int peer = c->active[i];
		if (!same_host(c, peer) || peer % c->size < c->rank)
			continue;
		if (enabled)
			create_segment(c, peer, names[peer]);
		err = xfer(c->peers[peer].fd, names[peer], NAME_LEN, true,
			   deadline);
	}
	/* 2: map what the lower ranks named; ack 1 (mapped) or 0. */
	for (int i = 0; i < c->nactive && !err; i++) {
		int peer = c->active[i];
		char name[NAME_LEN], ack = 0;
		if (!same_host(c, peer) || peer % c->size > c->rank)
			continue;
		err = xfer(c->peers[peer].fd, name, NAME_LEN, false, deadline);
		if (err)
			break;
		name[NAME_LEN - 1] = '\0';
		if (enabled && name[0])
			ack = open_segment(c, peer, name);
		err = xfer(c->peers[peer].fd, &ack, 1, true, deadline);
	}
	/* 3: collect the acks, unlink the names. */
	for (int i = 0; i < c->nactive && !err; i++) {
		int peer = c->active[i];
		char ack = 0;
		if (!same_host(c, peer) || peer % c->size < c->rank)
			continue;
		err = xfer(c->peers[peer].fd, &ack, 1, false, deadline);
		if (names[peer][0])
			shm_unlink(names[peer]);
		names[peer][0] = '\0';
		if (!err && !ack)
			tp__coll_shm_close(&c->peers[peer]);
	}
	if (err && err_p && !*err_p)
		*err_p = tp_asprintf("rank %d: shared-memory setup on host %s: %s",
				     c->rank, c->host_of[c->rank],
				     tp_strerror(err));
	/* A failed setup may leave names behind: remove them. */
	for (int i = 0; err && i < 2 * c->size; i++)
		if (names[i][0])
			shm_unlink(names[i]);
	tp_free(names);
	return err;
}
