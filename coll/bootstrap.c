/* bootstrap.c - rendezvous through rank 0 and the direct peer connections.
 *
 * Notes: every socket is non-blocking from the start and every wait goes
 * through poll() against a deadline timeout_s after the last progress (a
 * connection accepted, bytes moved), so init fails with TP_ERR_TIMEOUT
 * instead of hanging on a rank that never comes. Rank 0 waits timeout_s
 * after the last rank arrived; while it waits it sends the ranks already
 * there a WAIT reply every timeout_s / 4, their progress, so ranks that
 * start over a longer span than timeout_s, each within it of the one
 * before, still meet. The higher rank connects
 * to the lower one: a connect completes in the listener's backlog before
 * the lower rank calls accept(), so the order in which ranks reach the
 * accept loop cannot deadlock. The wire structs are host-endian: the
 * hello's magic catches a peer of another byte order or protocol. */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coll_int.h"

/* "tpc6": changes with any wire format, the compressed messages' too
 * (TP__COMP_VERSION 2), so ranks of two library versions fail at init
 * instead of at their first compressed call (3: the WAIT reply; 4: the
 * plan hash is tp_hash_str's FNV-1a, another value for the same plan; 5:
 * the hash leaves out the model's part of the plan, whose
 * recommendations rank 0 sends after the table; 6: the hello carries
 * the hierarchical pipeline's segment) */
#define MAGIC	 0x74706336u
#define SOCK_BUF (4 << 20)
/* The default rendezvous port, 20000 + (job + STEP_STRIDE x step) mod
 * 10000: a prime stride, so a job's first 10,000 steps get distinct ports
 * and consecutive jobs' steps seldom meet. */
#define STEP_STRIDE 7919

typedef struct hello {
	uint32_t magic;
	int32_t rank;
	int32_t size;
	uint32_t channel;
	uint64_t hash;
	uint64_t chunk;
	uint32_t addr; /* network order */
	uint16_t port; /* network order */
	uint16_t sock; /* which of a peer's connections this is */
	uint32_t sockets;
	uint32_t flags; /* HELLO_CHECK; 0 from libraries before it */
	uint64_t segment; /* TOPOPLACE_COLL_SEGMENT (c->seg_bytes) */
} hello_t;

/* the rank runs with TOPOPLACE_COLL_CHECK=1: each call starts with an
 * exchange the other ranks must make too */
#define HELLO_CHECK 1u

typedef struct reply {
	uint32_t magic;
	int32_t status; /* TP_OK, an error, or BOOT_WAIT */
	char why[248];
} reply_t;

/* reply_t.status of rank 0's "still gathering, wait on" */
#define BOOT_WAIT 1

typedef struct entry {
	uint32_t addr;
	uint16_t port;
	uint16_t pad;
} entry_t;

typedef struct boot {
	tp_coll_comm_t *c;
	int64_t deadline;
	char **err_p;
} boot_t;

static tp_err_t bfail(boot_t *b, tp_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static tp_err_t bfail(boot_t *b, tp_err_t err, const char *fmt, ...)
{
	va_list ap;

	if (b->err_p && !*b->err_p) {
		char *m;
		va_start(ap, fmt);
		m = tp_vasprintf(fmt, ap);
		va_end(ap);
		*b->err_p = tp_asprintf("rank %d: %s", b->c->rank, m ? m : "?");
		tp_free(m);
	}
	return err;
}

/* Drop the reason recorded so far, for a better one (or none). */
static void bforget(boot_t *b)
{
	if (b->err_p) {
		tp_free(*b->err_p);
		*b->err_p = NULL;
	}
}

/* Something moved: the wait starts again. */
static void progress(boot_t *b)
{
	b->deadline = tp__coll_now_ns() + b->c->timeout_ns;
}

static int left_ms(const boot_t *b)
{
	return tp__coll_poll_ms(b->deadline - tp__coll_now_ns());
}

static int new_socket(void)
{
	return socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/* Wait for ev on fd until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(const boot_t *b, int fd, short ev)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = ev};
		int ms = left_ms(b);
		if (ms == 0)
			return 0;
		int n = poll(&p, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -1 : n;
	}
}

/* Send or receive exactly len bytes before the deadline. */
static tp_err_t xfer(boot_t *b, int fd, void *buf, size_t len, bool out,
		     const char *what)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n =
		    out ? send(fd, (char *)buf + off, len - off, MSG_NOSIGNAL)
			: recv(fd, (char *)buf + off, len - off, 0);
		if (n > 0) {
			off += (size_t)n;
			progress(b);
			continue;
		}
		if (n == 0)
			return bfail(b, TP_ERR_PEER_LOST,
				     "%s: connection closed", what);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return bfail(b, TP_ERR_PEER_LOST, "%s: %s", what,
				     strerror(errno));
		int r = wait_fd(b, fd, out ? POLLOUT : POLLIN);
		if (r == 0)
			return bfail(b, TP_ERR_TIMEOUT,
				     "%s: timed out after %g s", what,
				     b->c->timeout_s);
		if (r < 0)
			return bfail(b, TP_ERR_IO, "%s: poll: %s", what,
				     strerror(errno));
	}
	return TP_OK;
}

/* Connect to sa before the deadline; with retry, a refused connection
 * (listener not up yet) is tried again every 20 ms. */
static tp_err_t connect_to(boot_t *b, const struct sockaddr_in *sa, bool retry,
			   const char *what, int *fd_p)
{
	for (;;) {
		int fd = new_socket(), e = 0;
		if (fd < 0)
			return bfail(b, TP_ERR_IO, "%s: socket: %s", what,
				     strerror(errno));
		/* peer connections leave from this rank's HCA address */
		if (!retry && b->c->hca_addr) {
			struct sockaddr_in src = {.sin_family = AF_INET};
			src.sin_addr.s_addr = b->c->hca_addr;
			if (bind(fd, (struct sockaddr *)&src, sizeof(src)) <
			    0) {
				e = errno;
				close(fd);
				return bfail(b, TP_ERR_IO, "%s: bind: %s", what,
					     strerror(e));
			}
		}
		if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
			e = errno;
			if (e == EINPROGRESS) {
				socklen_t sl = sizeof(e);
				int r = wait_fd(b, fd, POLLOUT);
				if (r <= 0) {
					close(fd);
					return bfail(
					    b, TP_ERR_TIMEOUT,
					    "%s: connect timed out after %g s",
					    what, b->c->timeout_s);
				}
				e = 0;
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl);
			}
		}
		if (e == 0) {
			*fd_p = fd;
			return TP_OK;
		}
		close(fd);
		if (!retry ||
		    (e != ECONNREFUSED && e != ECONNRESET && e != ETIMEDOUT))
			return bfail(b, TP_ERR_PEER_LOST, "%s: connect: %s",
				     what, strerror(e));
		if (left_ms(b) <= 20)
			return bfail(b, TP_ERR_TIMEOUT,
				     "%s: nobody listening after %g s (%s)",
				     what, b->c->timeout_s, strerror(e));
		poll(NULL, 0, 20);
	}
}

static tp_err_t listen_on(boot_t *b, struct sockaddr_in *sa, int *fd_p,
			  const char *host)
{
	int fd = new_socket(), one = 1;
	char ip[INET_ADDRSTRLEN];

	if (fd < 0)
		return bfail(b, TP_ERR_IO, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof(ip));
	if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0) {
		int e = errno;
		close(fd);
		if (e == EADDRINUSE)
			return bfail(b, TP_ERR_ADDRINUSE,
				     "rendezvous port %d on %s is in use",
				     ntohs(sa->sin_port), ip);
		if (e == EADDRNOTAVAIL)
			return bfail(b, TP_ERR_INVAL,
				     "rank 0 must run on the master host %s "
				     "(%s is not a local address)",
				     host, ip);
		return bfail(b, TP_ERR_IO, "bind %s:%d: %s", ip,
			     ntohs(sa->sin_port), strerror(e));
	}
	if (listen(fd, SOMAXCONN) < 0) {
		int e = errno;
		close(fd);
		if (e == EADDRINUSE)
			return bfail(b, TP_ERR_ADDRINUSE, "port %d in use",
				     ntohs(sa->sin_port));
		return bfail(b, TP_ERR_IO, "listen: %s", strerror(e));
	}
	socklen_t sl = sizeof(*sa);
	getsockname(fd, (struct sockaddr *)sa, &sl);
	*fd_p = fd;
	return TP_OK;
}

/* Rank 0's WAIT to the ranks in fds[0..n) when a quarter of timeout_s
 * has passed since the last (*last_ns): best effort, a rank gone is
 * found by the reply. */
static void tick(boot_t *b, const int *fds, int n, int64_t *last_ns)
{
	reply_t w = {.magic = MAGIC, .status = BOOT_WAIT};
	int64_t now = tp__coll_now_ns();

	if (!fds || now - *last_ns < b->c->timeout_ns / 4)
		return;
	*last_ns = now;
	for (int i = 0; i < n; i++) {
		size_t off = 0;
		while (off < sizeof(w)) {
			ssize_t k =
			    send(fds[i], (char *)&w + off, sizeof(w) - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (k > 0) {
				off += (size_t)k;
				continue;
			}
			if (k < 0 && errno == EINTR)
				continue;
			/* a full buffer: skip this tick, unless a part went
			 * (the rest must follow, or the stream is torn) */
			if (k < 0 && off &&
			    (errno == EAGAIN || errno == EWOULDBLOCK) &&
			    wait_fd(b, fds[i], POLLOUT) > 0)
				continue;
			break;
		}
	}
}

/* How long a connection has from its accept to its whole hello: a rank
 * sends it as it connects, so one silent this long is a probe or a stuck
 * process, not a rank. */
#define HELLO_WINDOW_NS (10 * 1000000000LL)
/* Connections read side by side before their hellos are whole. */
#define PEND_MAX 64
/* With every slot taken, the oldest connection silent this long gives its
 * slot to the next (a rank's hello is there as it is accepted). */
#define PEND_EVICT_NS (1000000000LL)

/* The connections accepted and not yet answered by a whole hello. */
typedef struct pend {
	int fd;
	size_t off;
	int64_t since, until; /* its accept, its window's end */
	hello_t h;
} pend_t;

typedef struct gather {
	pend_t p[PEND_MAX];
	int n;
	int64_t last_tick; /* rank 0's last WAIT, across calls (0: none) */
} gather_t;

static void pend_drop(gather_t *g, int i)
{
	close(g->p[i].fd);
	g->p[i] = g->p[--g->n];
}

static void gather_close(gather_t *g)
{
	while (g->n > 0)
		pend_drop(g, g->n - 1);
}

/* When there is a slot for one more connection: 0 when one is free,
 * else when the oldest silent connection (*old_p) may give it up
 * (PEND_EVICT_NS after its accept); INT64_MAX when every one has begun
 * its hello. */
static int64_t room_at(const gather_t *g, int *old_p)
{
	int old = -1;

	if (g->n < PEND_MAX)
		return 0;
	for (int i = 0; i < g->n; i++)
		if (!g->p[i].off &&
		    (old < 0 || g->p[i].since < g->p[old].since))
			old = i;
	*old_p = old;
	return old < 0 ? INT64_MAX : g->p[old].since + PEND_EVICT_NS;
}

/* A slot for one more connection now (room_at), the old one dropped;
 * false when none. */
static bool pend_room(gather_t *g, int64_t now)
{
	int old = -1;

	if (room_at(g, &old) > now)
		return false;
	if (old >= 0)
		pend_drop(g, old);
	return true;
}

/* Accept what lfd has waiting, while there is room (pend_room). */
static tp_err_t gather_accept(boot_t *b, int lfd, gather_t *g, const char *what)
{
	while (pend_room(g, tp__coll_now_ns())) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return TP_OK;
			return bfail(b, TP_ERR_IO, "%s: accept: %s%s", what,
				     strerror(errno),
				     errno == EMFILE || errno == ENFILE
					 ? " (ulimit -n)"
					 : "");
		}
		int64_t win = b->c->timeout_ns < HELLO_WINDOW_NS
				  ? b->c->timeout_ns
				  : HELLO_WINDOW_NS;
		int64_t now = tp__coll_now_ns();
		g->p[g->n++] =
		    (pend_t){.fd = fd, .since = now, .until = now + win};
	}
	return TP_OK;
}

/* Read what pending connection i has: true when its hello is whole, or
 * its first 4 bytes are not our magic (another protocol, refused at once:
 * its hello may be shorter); a connection closed or failed is dropped
 * (the last moves to i). */
static bool pend_read(gather_t *g, int i)
{
	pend_t *q = &g->p[i];

	for (;;) {
		ssize_t k = recv(q->fd, (char *)&q->h + q->off,
				 sizeof(q->h) - q->off, 0);
		if (k > 0) {
			q->off += (size_t)k;
			if ((q->off >= sizeof(q->h.magic) &&
			     q->h.magic != MAGIC) ||
			    q->off == sizeof(q->h))
				return true;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		pend_drop(g, i);
		return false;
	}
}

/* The next connection on lfd with its hello, before the deadline
 * (TP_ERR_TIMEOUT, saying `what`): connections are accepted and read side
 * by side, so one that says nothing (a port probe, a health check, a
 * stuck process) holds no other back and is dropped when its window
 * ends, or, with PEND_MAX waiting, when a newer one needs its slot
 * (pend_room); one that closes is dropped at once. Neither is progress:
 * the caller calls progress() for a hello it takes. Rank 0 (fds given)
 * ticks the n ranks already there meanwhile, a quarter of the timeout
 * apart across calls (ranks that keep coming must not starve the first
 * ones of their WAITs). */
static tp_err_t next_hello(boot_t *b, int lfd, gather_t *g, const int *fds,
			   int n, const char *what, int *fd_p, hello_t *h)
{
	if (!g->last_tick)
		g->last_tick = tp__coll_now_ns();
	for (;;) {
		struct pollfd pf[PEND_MAX + 1];
		int64_t now = tp__coll_now_ns(), wait = b->deadline - now;
		int np = 0;

		for (int i = 0; i < g->n; i++) {
			if (now >= g->p[i].until) {
				pend_drop(g, i--);
				continue;
			}
			if (g->p[i].until - now < wait)
				wait = g->p[i].until - now;
			pf[np++] =
			    (struct pollfd){.fd = g->p[i].fd, .events = POLLIN};
		}
		if (b->deadline <= now)
			return bfail(b, TP_ERR_TIMEOUT,
				     "%s: timed out after %g s", what,
				     b->c->timeout_s);
		if (fds && wait > b->c->timeout_ns / 4)
			wait = b->c->timeout_ns / 4;
		/* full, none old enough to give way: until the first is */
		int old;
		int64_t room = room_at(g, &old);
		if (room <= now)
			pf[np++] = (struct pollfd){.fd = lfd, .events = POLLIN};
		else if (room - now < wait)
			wait = room - now;
		int r = poll(pf, (nfds_t)np, tp__coll_poll_ms(wait));
		if (r < 0 && errno != EINTR)
			return bfail(b, TP_ERR_IO, "%s: poll: %s", what,
				     strerror(errno));
		tick(b, fds, n, &g->last_tick);
		if (r <= 0)
			continue;
		/* pf[i] is g->p[i] for i < g->n as polled; from the last,
		 * so a drop's move brings one read already */
		for (int i = g->n - 1; i >= 0; i--) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (pend_read(g, i)) {
				*fd_p = g->p[i].fd;
				*h = g->p[i].h;
				g->p[i] = g->p[--g->n];
				return TP_OK;
			}
		}
		tp_err_t err = gather_accept(b, lfd, g, what);
		if (err)
			return err;
	}
}

static tp_err_t resolve(boot_t *b, const char *host, int port,
			struct sockaddr_in *sa)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);

	if (rc != 0 || !res)
		return bfail(b, TP_ERR_NOTFOUND,
			     "master address '%s' does not resolve: %s", host,
			     gai_strerror(rc));
	memcpy(sa, res->ai_addr, sizeof(*sa));
	sa->sin_port = htons((uint16_t)port);
	freeaddrinfo(res);
	return TP_OK;
}

static void hello_fill(const tp_coll_comm_t *c, hello_t *h, int channel)
{
	memset(h, 0, sizeof(*h));
	h->magic = MAGIC;
	h->rank = c->rank;
	h->size = c->size;
	h->channel = (uint32_t)channel;
	h->hash = c->plan_hash;
	h->chunk = c->chunk_bytes;
	h->sockets = (uint32_t)c->nsock;
	h->flags = c->check ? HELLO_CHECK : 0;
	h->segment = c->seg_bytes;
}

/* Why rank 0 refuses h, or NULL. *foreign: h is not of this plan (another
 * protocol, world size or plan: another step or job that met this port),
 * which refuses that peer only; otherwise a rank of this plan disagrees,
 * which fails every rank. */
static char *check_hello(const tp_coll_comm_t *c, const hello_t *h,
			 const bool *seen, bool *foreign)
{
	*foreign = true;
	if (h->magic != MAGIC)
		return tp_asprintf("a peer speaks another protocol "
				   "(magic 0x%08x)",
				   h->magic);
	if (h->size != c->size)
		return tp_asprintf("rank %d has world size %d, rank 0 has %d "
				   "(another plan?)",
				   h->rank, h->size, c->size);
	if (h->rank <= 0 || h->rank >= c->size)
		return tp_asprintf("a peer claims rank %d of %d", h->rank,
				   c->size);
	if (h->hash != c->plan_hash)
		return tp_asprintf("rank %d brought another plan (hash "
				   "%016llx, rank 0 has %016llx)",
				   h->rank, (unsigned long long)h->hash,
				   (unsigned long long)c->plan_hash);
	*foreign = false;
	if (seen[h->rank])
		return tp_asprintf("rank %d joined twice", h->rank);
	if (h->chunk != c->chunk_bytes)
		return tp_asprintf("rank %d uses chunk_bytes %llu, rank 0 %zu",
				   h->rank, (unsigned long long)h->chunk,
				   c->chunk_bytes);
	if (h->sockets != (uint32_t)c->nsock)
		return tp_asprintf("rank %d uses %u sockets per peer, rank 0 "
				   "%d (TOPOPLACE_COLL_SOCKETS)",
				   h->rank, h->sockets, c->nsock);
	if (h->segment != c->seg_bytes)
		return tp_asprintf("rank %d cuts hierarchical calls into %llu "
				   "bytes, rank 0 into %zu "
				   "(TOPOPLACE_COLL_SEGMENT)",
				   h->rank, (unsigned long long)h->segment,
				   c->seg_bytes);
	if ((h->flags & HELLO_CHECK) != (c->check ? HELLO_CHECK : 0))
		return tp_asprintf("rank %d has TOPOPLACE_COLL_CHECK=%d, rank "
				   "0 has %d: set it alike on every rank",
				   h->rank, (h->flags & HELLO_CHECK) ? 1 : 0,
				   c->check ? 1 : 0);
	return NULL;
}

/* Replace a rendezvous timeout's reason with the ranks that never came
 * and, when rank 0 turned a peer away (foreign: why, or NULL), that
 * reason: a rank of this plan started with another one fails so too. */
static tp_err_t missing(boot_t *b, const bool *seen, const char *foreign)
{
	const tp_coll_comm_t *c = b->c;
	char buf[512];
	int n = 0, shown = 0;
	size_t off;

	for (int r = 1; r < c->size; r++)
		n += !seen[r];
	off = (size_t)snprintf(buf, sizeof(buf),
			       "rendezvous: waiting for the other ranks: %d of "
			       "%d never came (",
			       n, c->size - 1);
	for (int r = 1; r < c->size && shown < 4 && off < sizeof(buf); r++)
		if (!seen[r])
			off += (size_t)snprintf(buf + off, sizeof(buf) - off,
						"%s%d", shown++ ? ", " : "", r);
	if (off < sizeof(buf))
		off += (size_t)snprintf(buf + off, sizeof(buf) - off,
					"%s) after %g s", n > 4 ? ", ..." : "",
					c->timeout_s);
	if (foreign && off < sizeof(buf))
		snprintf(buf + off, sizeof(buf) - off, "; turned away: %s",
			 foreign);
	bforget(b);
	return bfail(b, foreign ? TP_ERR_MISMATCH : TP_ERR_TIMEOUT, "%s", buf);
}

/* Rank 0's refusal to fd, best effort (a reply_t fits an empty socket
 * buffer; a peer gone finds the connection closed): no deadline, no
 * reason recorded. */
static void send_refusal(int fd, tp_err_t status, const char *why)
{
	reply_t rep = {.magic = MAGIC, .status = (int32_t)status};

	snprintf(rep.why, sizeof(rep.why), "%s", why);
	(void)send(fd, &rep, sizeof(rep), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Rank 0: tell a peer that is not of this plan why, and forget it. */
static void turn_away(int fd, const char *why)
{
	send_refusal(fd, TP_ERR_MISMATCH, why);
	close(fd);
}

/* The plan's recommendation per size on the wire: rank 0 sends its own
 * after the table, and every rank runs those (the hash leaves them out:
 * two nodes' fabric files can price alike plans otherwise, and a node
 * that could not price plans by rule). */
/* One word a size: the algorithm, and above it (the hierarchical
 * all-reduce pipelined, in one piece or by rule: 1, 0, -1) + 1 << 8. */
static int32_t *recs_of(const tp_coll_comm_t *c)
{
	int32_t *rec = tp_calloc(c->nsizes, sizeof(*rec));

	for (size_t i = 0; rec && i < c->nsizes; i++)
		rec[i] = (int32_t)c->recommend[i] |
			 (int32_t)(c->hier_pipe[i] + 1) << 8;
	return rec;
}

/* Rank > 0: take rank 0's recommendations, saying once (the library's
 * log) when they are not this rank's. */
static tp_err_t adopt(boot_t *b, const int32_t *rec)
{
	tp_coll_comm_t *c = b->c;
	size_t differ = 0;

	for (size_t i = 0; i < c->nsizes; i++) {
		int32_t a = rec[i] & 0xff, pipe = (rec[i] >> 8) - 1;
		if ((a != TP_COLL_ALGO_RING && a != TP_COLL_ALGO_HIERARCHICAL &&
		     a != TP_COLL_ALGO_TREE) ||
		    pipe < -1 || pipe > 1)
			return bfail(b, TP_ERR_MISMATCH,
				     "rank 0 recommends algorithm %d, "
				     "hierarchical pipelined %d, at size %zu",
				     (int)a, (int)pipe, i);
	}
	for (size_t i = 0; i < c->nsizes; i++) {
		tp_coll_algo_t a = (tp_coll_algo_t)(rec[i] & 0xff);
		int8_t pipe = (int8_t)((rec[i] >> 8) - 1);
		differ += a != c->recommend[i] || pipe != c->hier_pipe[i];
		c->recommend[i] = a;
		c->hier_pipe[i] = pipe;
	}
	if (differ && c->local_rank == 0) /* once a host */
		tp__log(TP_LOG_WARN,
			"coll rank %d: %zu of the plan's %zu recommendations "
			"differ from rank 0's, which it runs (the nodes' "
			"fabric files or topoplace.conf differ, or a node "
			"planned by rule: its slurmd log says why)",
			c->rank, differ, c->nsizes);
	return TP_OK;
}

/* Descriptors a process has open besides rank 0's connections (a
 * training script's files, sockets and libraries), for fds_for(). */
#define FD_SPARE 256

/* Rank 0 holds a connection from every rank until it sends the table:
 * raise the soft open-file limit towards the hard one when the world
 * needs more (as a process needing many descriptors should: 1,024 is a
 * common soft limit, Slurm passes the user's on), never lowering it. An
 * accept past the limit then fails naming ulimit -n. */
static void fds_for(int ranks)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)ranks + FD_SPARE;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need
			  ? rl.rlim_max
			  : need;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
}

/* Rank 0, failing before its reply: tell the ranks there why (best
 * effort: a rank that cannot take it now finds the connection closed). */
static void refuse_all(boot_t *b, const int *fds, int n, tp_err_t err)
{
	const char *why = b->err_p && *b->err_p ? *b->err_p : tp_strerror(err);

	for (int i = 0; i < n; i++)
		send_refusal(fds[i], err, why);
}

/* Rank 0: collect every hello, answer with the table or the refusal. */
static tp_err_t master(boot_t *b, struct sockaddr_in *msa, const char *host,
		       uint16_t peer_port, entry_t *tab)
{
	tp_coll_comm_t *c = b->c;
	int lfd = -1, *fds = tp_calloc((size_t)c->size, sizeof(int));
	bool *seen = tp_calloc((size_t)c->size, sizeof(bool));
	int32_t *rec = c->nsizes ? recs_of(c) : NULL;
	char *why = NULL, *foreign = NULL;
	tp_err_t err = TP_ERR_NOMEM;
	int nfd = 0;
	gather_t g = {.n = 0};

	if (!fds || !seen || (c->nsizes && !rec))
		goto out;
	fds_for(c->size);
	err = listen_on(b, msa, &lfd, host);
	if (err)
		goto out;
	for (int i = 1; i < c->size && !why; i++) {
		hello_t h;
		int fd;
		/* (a connection that closes or stays silent before a whole
		 * hello, a port probe or a rank that died, is not a rank:
		 * named if it never comes) */
		err = next_hello(b, lfd, &g, fds, nfd, "rendezvous", &fd, &h);
		if (err == TP_ERR_TIMEOUT)
			err = missing(b, seen, foreign);
		if (err) {
			refuse_all(b, fds, nfd, err);
			goto out;
		}
		bool other;
		why = check_hello(c, &h, seen, &other);
		if (why && other) {
			/* another step's or job's rank on this port (the
			 * default port is per job and step, modulo 10000):
			 * refuse it alone, keep waiting for ours */
			turn_away(fd, why);
			tp_free(foreign);
			foreign = why;
			why = NULL;
			i--;
			continue;
		}
		fds[nfd++] = fd;
		if (!why) {
			progress(b); /* a rank came: the wait starts again */
			seen[h.rank] = true;
			tab[h.rank].addr = h.addr;
			tab[h.rank].port = h.port;
		}
		if (i == 1) {
			struct sockaddr_in me;
			socklen_t sl = sizeof(me);
			getsockname(fd, (struct sockaddr *)&me, &sl);
			tab[0].addr =
			    c->hca_addr ? c->hca_addr : me.sin_addr.s_addr;
		}
	}
	tab[0].port = peer_port;
	reply_t rep = {.magic = MAGIC, .status = why ? TP_ERR_MISMATCH : TP_OK};
	if (why)
		snprintf(rep.why, sizeof(rep.why), "%s", why);
	for (int i = 0; i < nfd; i++) {
		/* A refused rank may be gone already: best effort. */
		tp_err_t e = xfer(b, fds[i], &rep, sizeof(rep), true,
				  "rendezvous reply");
		if (!e && !why)
			e = xfer(b, fds[i], tab, (size_t)c->size * sizeof(*tab),
				 true, "rendezvous table");
		if (!e && !why && c->nsizes)
			e = xfer(b, fds[i], rec, c->nsizes * sizeof(*rec), true,
				 "rendezvous recommendations");
		if (e && !why) {
			err = e;
			goto out;
		}
	}
	err = why ? bfail(b, TP_ERR_MISMATCH, "%s", why) : TP_OK;
out:
	gather_close(&g);
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
	if (lfd >= 0)
		close(lfd);
	tp_free(why);
	tp_free(foreign);
	tp_free(fds);
	tp_free(seen);
	tp_free(rec);
	return err;
}

/* Rank > 0: say who we are and where peers reach us; get the table. */
static tp_err_t join(boot_t *b, const struct sockaddr_in *msa,
		     uint16_t peer_port, entry_t *tab)
{
	tp_coll_comm_t *c = b->c;
	char what[128], ip[INET_ADDRSTRLEN];
	struct sockaddr_in me;
	socklen_t sl = sizeof(me);
	hello_t h;
	reply_t rep;
	int32_t *rec = NULL;
	int fd;

	inet_ntop(AF_INET, &msa->sin_addr, ip, sizeof(ip));
	snprintf(what, sizeof(what), "rendezvous with rank 0 at %s:%d", ip,
		 ntohs(msa->sin_port));
	tp_err_t err = connect_to(b, msa, true, what, &fd);
	if (err)
		return err;
	getsockname(fd, (struct sockaddr *)&me, &sl);
	hello_fill(c, &h, 0);
	h.addr = c->hca_addr ? c->hca_addr : me.sin_addr.s_addr;
	h.port = peer_port;
	err = xfer(b, fd, &h, sizeof(h), true, what);
	/* rank 0's WAITs while it gathers the others: each one progress */
	do
		err = err ? err : xfer(b, fd, &rep, sizeof(rep), false, what);
	while (!err && rep.magic == MAGIC && rep.status == BOOT_WAIT);
	if (!err && rep.magic != MAGIC)
		err = bfail(b, TP_ERR_MISMATCH, "%s: bad reply", what);
	if (!err && rep.status != TP_OK) {
		rep.why[sizeof(rep.why) - 1] = '\0';
		err = bfail(b, (tp_err_t)rep.status, "rank 0 refused: %s",
			    rep.why);
	}
	if (!err)
		err = xfer(b, fd, tab, (size_t)c->size * sizeof(*tab), false,
			   what);
	if (!err && c->nsizes && !(rec = tp_calloc(c->nsizes, sizeof(*rec))))
		err = bfail(b, TP_ERR_NOMEM, "out of memory");
	if (!err && c->nsizes)
		err = xfer(b, fd, rec, c->nsizes * sizeof(*rec), false, what);
	close(fd);
	if (!err)
		err = adopt(b, rec);
	tp_free(rec);
	return err;
}

static void tune(int fd)
{
	int one = 1, buf = SOCK_BUF;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

/* Connections to peer p: c->nsock to another host, else one. */
static int conns(const tp_coll_comm_t *c, int p)
{
	return strcmp(c->host_of[p], c->host_of[c->rank]) ? c->nsock : 1;
}

/* Where connection k to peer idx goes. */
static int *conn_slot(tp_coll_comm_t *c, int idx, int k)
{
	return k ? &c->peers[idx].xfd[k - 1] : &c->peers[idx].fd;
}

/* Replace a peer-connection timeout's reason with the higher ranks that
 * never connected (the ones mesh() waits for), by rank and host. */
static tp_err_t unconnected(boot_t *b, const uint8_t *want)
{
	tp_coll_comm_t *c = b->c;
	char buf[400], who[160];
	int n = 0, shown = 0;
	size_t off = 0;

	for (int p = c->rank + 1; p < c->size; p++) {
		bool late = false;
		for (int ch = 0; ch < 2; ch++)
			for (int k = 0;
			     want[ch * c->size + p] && k < conns(c, p); k++)
				late |= *conn_slot(c, ch * c->size + p, k) < 0;
		if (!late)
			continue;
		n++;
		if (shown < 3 && off < sizeof(buf)) {
			tp__coll_peer_name(c, p, who, sizeof(who));
			off +=
			    (size_t)snprintf(buf + off, sizeof(buf) - off,
					     "%s%s", shown++ ? ", " : "", who);
		}
	}
	if (n == 0)
		return TP_ERR_TIMEOUT; /* keep next_hello()'s reason */
	bforget(b);
	return bfail(b, TP_ERR_TIMEOUT,
		     "waiting for peer connections: %s%s never connected "
		     "after %g s",
		     buf, n > shown ? ", ..." : "", c->timeout_s);
}

/* Connect to the wanted lower ranks, accept the wanted higher ones. */
static tp_err_t mesh(boot_t *b, int lfd, const entry_t *tab,
		     const uint8_t *want)
{
	tp_coll_comm_t *c = b->c;
	int expect = 0;
	char what[200], who[160];

	for (int ch = 0; ch < 2; ch++) {
		for (int p = 0; p < c->size; p++) {
			if (!want[ch * c->size + p])
				continue;
			if (p > c->rank) {
				expect += conns(c, p);
				continue;
			}
			struct sockaddr_in sa = {.sin_family = AF_INET,
						 .sin_addr.s_addr = tab[p].addr,
						 .sin_port = tab[p].port};
			snprintf(what, sizeof(what), "connecting to %s",
				 tp__coll_peer_name(c, p, who, sizeof(who)));
			for (int k = 0; k < conns(c, p); k++) {
				hello_t h;
				int fd;
				tp_err_t err =
				    connect_to(b, &sa, false, what, &fd);
				if (err)
					return err;
				*conn_slot(c, ch * c->size + p, k) = fd;
				hello_fill(c, &h, ch);
				h.sock = (uint16_t)k;
				err = xfer(b, fd, &h, sizeof(h), true, what);
				if (err)
					return err;
			}
		}
	}
	gather_t g = {.n = 0};
	tp_err_t err = TP_OK;
	while (!err && expect-- > 0) {
		hello_t h;
		int fd;
		err = next_hello(b, lfd, &g, NULL, 0,
				 "waiting for peer connections", &fd, &h);
		if (err == TP_ERR_TIMEOUT)
			err = unconnected(b, want);
		if (err)
			break;
		/* another protocol or plan: a probe or another job's rank
		 * on this port, not a peer: the next */
		if (h.magic != MAGIC || h.hash != c->plan_hash) {
			close(fd);
			expect++;
			continue;
		}
		/* the slot is computed from the hello's fields only once they
		 * are in range: a peer's bytes must not overflow it */
		bool in_range =
		    h.channel <= 1 && h.rank > c->rank && h.rank < c->size;
		int idx = in_range ? (int)h.channel * c->size + h.rank : 0;
		if (!in_range || !want[idx] || h.sock >= conns(c, h.rank) ||
		    *conn_slot(c, idx, h.sock) >= 0) {
			close(fd);
			err = bfail(b, TP_ERR_MISMATCH,
				    "unexpected peer hello (rank %d channel "
				    "%u connection %u)",
				    h.rank, h.channel, h.sock);
			break;
		}
		*conn_slot(c, idx, h.sock) = fd;
		progress(b);
	}
	gather_close(&g);
	return err;
}

/* Which peers (channel x size + rank) our schedules use. */
static void wanted(const tp_coll_comm_t *c, uint8_t *want)
{
	int n = c->size;

	if (n <= 1)
		return;
	for (int l = -1; l < c->nlevels + c->ncross; l++) {
		const tp__coll_ring_t *r = l < 0 ? &c->ring
					   : l < c->nlevels
					       ? &c->level[l]
					       : &c->cross[l - c->nlevels];
		want[r->members[(r->me + 1) % r->n]] = 1;
		want[r->members[(r->me + r->n - 1) % r->n]] = 1;
	}
	for (int t = 0; t < 2; t++) {
		const tp__coll_tree_t *tr = &c->tree[t];
		if (tr->parent >= 0)
			want[tr->parent] = 1;
		for (int k = 0; k < tr->nchildren; k++)
			want[tr->children[k]] = 1;
	}
	want[c->rank] = want[n + c->rank] = 0;
}

/* In env ("key=value,key=value,..."), key's value: *v_p and its length
 * *n_p; false when no entry has that key. */
static bool env_value(const char *env, const char *key, const char **v_p,
		      size_t *n_p)
{
	size_t kl = strlen(key);

	for (const char *p = env; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n > kl + 1 && !strncmp(p, key, kl) && p[kl] == '=') {
			*v_p = p + kl + 1;
			*n_p = n - kl - 1;
			return true;
		}
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* IPv4 address of an HCA, network order, 0 when none. The override
 * TOPOPLACE_COLL_HCA_ADDRS="dev=ip,..." wins ("0" turns the lookup off);
 * else the first IPv4 address of a network interface of the device in
 * sysfs (IPoIB or RoCE: /sys/class/infiniband/DEV/device/net/IF). */
static uint32_t hca_lookup(const char *dev)
{
	const char *env = getenv("TOPOPLACE_COLL_HCA_ADDRS"), *v;
	char path[PATH_MAX];
	struct ifaddrs *ifa = NULL;
	struct dirent *de;
	uint32_t addr = 0;
	size_t vn;
	DIR *d;

	if (env && !strcmp(env, "0"))
		return 0;
	if (env_value(env, dev, &v, &vn)) {
		char ip[INET_ADDRSTRLEN] = "";
		struct in_addr a;
		if (vn < sizeof(ip))
			memcpy(ip, v, vn);
		return inet_pton(AF_INET, ip, &a) == 1 ? a.s_addr : INADDR_NONE;
	}
	if (env && *env) /* an explicit list names only its devices */
		return 0;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/net",
		 dev);
	if (!(d = opendir(path)))
		return 0;
	if (getifaddrs(&ifa) < 0)
		ifa = NULL;
	while (!addr && (de = readdir(d))) {
		for (struct ifaddrs *i = ifa; i && !addr; i = i->ifa_next)
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			    !strcmp(i->ifa_name, de->d_name))
				addr = ((struct sockaddr_in *)i->ifa_addr)
					   ->sin_addr.s_addr;
	}
	closedir(d);
	if (ifa)
		freeifaddrs(ifa);
	return addr;
}

/* Every entry of TOPOPLACE_COLL_HCA_ADDRS is DEV=IPv4 (or the whole
 * value is "0"): a typo would otherwise match no device and quietly turn
 * the rails off on every rank. */
static tp_err_t hca_env_check(boot_t *b)
{
	const char *env = getenv("TOPOPLACE_COLL_HCA_ADDRS");

	if (!env || !*env || !strcmp(env, "0"))
		return TP_OK;
	for (const char *p = env; p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', n);
		char ip[INET_ADDRSTRLEN] = "";
		struct in_addr a;
		size_t il = eq ? n - (size_t)(eq + 1 - p) : 0;
		if (eq && il < sizeof(ip))
			memcpy(ip, eq + 1, il);
		/* an empty entry ("d=1.2.3.4,") names nothing: no error */
		if (n > 0 &&
		    (!eq || eq == p || inet_pton(AF_INET, ip, &a) != 1))
			return bfail(b, TP_ERR_INVAL,
				     "TOPOPLACE_COLL_HCA_ADDRS: '%.*s' is not "
				     "DEV=IPv4 (in '%s')",
				     (int)(n > 64 ? 64 : n), p, env);
		p = end ? end + 1 : NULL;
	}
	return TP_OK;
}

/* TOPOPLACE_COLL_HCA_NAMES="fabric=local,..." (the SPANK plugin's, where
 * this node names its HCAs otherwise than the fabric, found by GUID):
 * each entry two device names; a broken one fails init naming it. */
static tp_err_t names_env_check(boot_t *b)
{
	const char *env = getenv("TOPOPLACE_COLL_HCA_NAMES");

	for (const char *p = env && *env ? env : NULL; p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', n);
		if (!eq || eq == p || eq + 1 == p + n || n >= 2 * 64 ||
		    memchr(p, '/', n) ||
		    memchr(eq + 1, '=', n - (size_t)(eq + 1 - p)))
			return bfail(b, TP_ERR_INVAL,
				     "TOPOPLACE_COLL_HCA_NAMES: '%.*s' is not "
				     "FABRIC_DEV=LOCAL_DEV (in '%.200s')",
				     (int)(n > 64 ? 64 : n), p, env);
		p = end ? end + 1 : NULL;
	}
	return TP_OK;
}

/* The local name of the plan's device dev (TOPOPLACE_COLL_HCA_NAMES), in
 * buf; dev itself when it has none. */
static const char *local_name(const char *dev, char *buf, size_t len)
{
	const char *v;
	size_t vn;

	if (!env_value(getenv("TOPOPLACE_COLL_HCA_NAMES"), dev, &v, &vn) ||
	    vn >= len)
		return dev;
	memcpy(buf, v, vn);
	buf[vn] = '\0';
	return buf;
}

/* This rank's HCA address (c->hca_addr), checked to be local. */
static tp_err_t hca_setup(boot_t *b, const char *dev)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char ip[INET_ADDRSTRLEN], lname[128];
	int fd, e = 0;
	tp_err_t err;

	b->c->hca_addr = 0;
	if ((err = hca_env_check(b)) || (err = names_env_check(b)))
		return err;
	if (dev)
		dev = local_name(dev, lname, sizeof(lname));
	if (!dev || !(sa.sin_addr.s_addr = hca_lookup(dev)))
		return TP_OK;
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	if (sa.sin_addr.s_addr == INADDR_NONE)
		return bfail(b, TP_ERR_INVAL,
			     "TOPOPLACE_COLL_HCA_ADDRS: bad address for %s",
			     dev);
	if ((fd = new_socket()) < 0)
		return bfail(b, TP_ERR_IO, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		e = errno;
	close(fd);
	if (e)
		return bfail(b, TP_ERR_INVAL, "address %s of HCA %s: %s", ip,
			     dev, strerror(e));
	b->c->hca_addr = sa.sin_addr.s_addr;
	return TP_OK;
}

tp_err_t tp__coll_connect(tp_coll_comm_t *c, const tp_coll_opts_t *o,
			  const char *default_host, char **err_p)
{
	boot_t b = {.c = c, .err_p = err_p};
	const char *host = o->master_addr;
	const char *env;
	int port = o->master_port, lfd = -1;
	struct sockaddr_in msa, psa = {.sin_family = AF_INET};
	entry_t *tab = NULL;
	uint8_t *want = NULL;
	tp_err_t err;

	b.deadline = tp__coll_now_ns() + c->timeout_ns;
	if (c->size == 1)
		return TP_OK;
	if ((err = hca_setup(&b, c->hca)))
		return err;
	if (!host)
		host =
		    (env = getenv("MASTER_ADDR")) && *env ? env : default_host;
	if (port == 0 && (env = getenv("MASTER_PORT")) && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (*end || v <= 0 || v > 65535)
			return bfail(&b, TP_ERR_INVAL,
				     "MASTER_PORT='%s' is not a port", env);
		port = (int)v;
	}
	if (port == 0 && (env = getenv("SLURM_JOB_ID")) && *env) {
		/* per job and step: concurrent steps of a job (srun ... &)
		 * must not meet on one port */
		const char *st = getenv("SLURM_STEP_ID");
		unsigned long j = strtoul(env, NULL, 10) % 10000,
			      s = st ? strtoul(st, NULL, 10) % 10000 : 0;
		port = 20000 + (int)((j + STEP_STRIDE * s) % 10000);
	}
	if (port == 0)
		port = 29500;
	err = resolve(&b, host, port, &msa);
	if (err)
		return err;
	tab = tp_calloc((size_t)c->size, sizeof(*tab));
	want = tp_calloc(2 * (size_t)c->size, 1);
	if (!tab || !want) {
		err = bfail(&b, TP_ERR_NOMEM, "out of memory");
		goto out;
	}
	err = listen_on(&b, &psa, &lfd, host);
	if (err)
		goto out;
	err = c->rank == 0 ? master(&b, &msa, host, psa.sin_port, tab)
			   : join(&b, &msa, psa.sin_port, tab);
	if (err)
		goto out;
	wanted(c, want);
	err = mesh(&b, lfd, tab, want);
	if (err)
		goto out;
	for (int i = 0; i < 2 * c->size; i++) {
		if (c->peers[i].fd < 0)
			continue;
		c->peers[i].nconn = conns(c, i % c->size);
		for (int k = 0; k < c->peers[i].nconn; k++)
			tune(*conn_slot(c, i, k));
		c->active[c->nactive++] = i;
	}
	progress(&b);
	err = tp__coll_shm_setup(c, b.deadline, err_p);
	if (!err)
		err = tp__coll_host_setup(c, tp__coll_now_ns() + c->timeout_ns,
					  err_p);
out:
	if (lfd >= 0)
		close(lfd);
	tp_free(tab);
	tp_free(want);
	return err;
}
