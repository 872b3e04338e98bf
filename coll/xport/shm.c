/* shm.c - shared-memory byte streams between ranks of one host.
 *
 * Notes: each connected same-host pair (per channel) shares one POSIX
 * shared-memory segment holding two single-producer single-consumer
 * rings, one per direction, with free-running head/tail counters, and
 * two FIFOs next to it in /dev/shm for wake-ups. The lower rank creates
 * them under a unique name and sends the name over the pair's TCP
 * connection; the higher rank opens them and acks; the creator unlinks
 * them, so nothing is left in /dev/shm even if a rank dies later. A rank
 * that must wait sets its "asleep" flag in the ring, re-checks, and
 * sleeps in poll() on its FIFO; the other side, after moving its counter,
 * writes one byte to that FIFO when it finds the flag set (a FIFO costs
 * half what a byte over loopback TCP does; without FIFOs the byte goes
 * over the connection). Counter store and flag test are both sequentially
 * consistent on either side (Dekker), so a wake-up cannot be lost, and
 * nobody spins. The TCP connection stays open and polled: a dead peer
 * closes it, as for TCP. */
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

/* Bytes per direction, a power of two: 2 MiB, or TOPOPLACE_COLL_SHM_RING
 * (64 B .. 1 GiB; small values let the tests wrap and split elements).
 * The creator's choice travels as the segment's size. */
#define CAP_DEFAULT ((size_t)1 << 21)
#define NAME_LEN    64

/* How long a wait on same-host peers yields before it sleeps (the host
 * segment's Notes; the rings' too), or
 * TOPOPLACE_COLL_YIELD_US (0: sleep at once). Fitted at 8 ranks on 2
 * cores: 20, 50, 200 and 1000 us all measured the same (the waits of an
 * aligned call are shorter); 100 bounds the CPU a rank whose peers are
 * still computing hands round in yields before it sleeps. */
#define HOST_YIELD_US	  100
#define HOST_YIELD_US_MAX 1000000

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

#define HDR sizeof(tp__coll_shm_ring_t)

static tp_err_t lost(tp_coll_comm_t *c, int peer, int e)
{
	char who[160];

	tp__coll_peer_name(c, peer, who, sizeof(who));
	if (e == 0)
		return tp__coll_fail(c, TP_ERR_PEER_LOST,
				     "%s closed the connection", who);
	return tp__coll_fail(c, TP_ERR_PEER_LOST, "%s: %s", who, strerror(e));
}

/* Best effort: a peer that finished and left may still have a stale
 * flag set; a peer that died is found by poll() when we need it. */
static void wake(tp_coll_comm_t *c, int peer)
{
	const tp__coll_peer_t *p = &c->peers[peer];
	char b = 1;

	if (p->eof)
		return;
	if (p->wake_wr >= 0) /* full FIFO: the peer has a wake-up pending */
		(void)!write(p->wake_wr, &b, 1);
	else
		(void)!send(p->fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void finish_req(tp__coll_req_t **head, tp__coll_req_t **tail)
{
	tp__coll_req_t *r = *head;

	r->done = true;
	*head = r->next;
	if (!*head)
		*tail = NULL;
}

/* Messages occupy a multiple of 8 bytes in the ring, so every message
 * starts 8-aligned and no element of any dtype straddles the wrap: the
 * receiver can reduce straight out of the ring. */
static size_t padded(size_t len)
{
	return (len + 7) & ~(size_t)7;
}

static void to_ring(const tp__coll_peer_t *p, tp__coll_shm_ring_t *g,
		    uint64_t h, const char *src, size_t n)
{
	size_t pos = (size_t)h & (p->ring_cap - 1), first = p->ring_cap - pos;

	if (first > n)
		first = n;
	memcpy(g->data + pos, src, first);
	memcpy(g->data, src + first, n - first);
}

/* Copy or reduce n bytes at ring position t into r (at r->off). */
static void from_ring(tp_coll_comm_t *c, const tp__coll_peer_t *p,
		      tp__coll_shm_ring_t *g, uint64_t t, tp__coll_req_t *r,
		      size_t n)
{
	size_t pos = (size_t)t & (p->ring_cap - 1), first = p->ring_cap - pos;

	if (first > n)
		first = n;
	if (!r->acc) {
		memcpy(r->buf + r->off, g->data + pos, first);
		memcpy(r->buf + r->off + first, g->data, n - first);
		return;
	}
	size_t dsz = tp_coll_dtype_size(r->dt);
	c->kern->reduce(r->acc + r->off, g->data + pos, first / dsz, r->dt,
			r->op, NULL);
	if (n > first)
		c->kern->reduce(r->acc + r->off + first, g->data,
				(n - first) / dsz, r->dt, r->op, NULL);
}

static tp_err_t pump_send(tp_coll_comm_t *c, int peer, bool *moved_p)
{
	tp__coll_peer_t *p = &c->peers[peer];
	tp__coll_shm_ring_t *tx = p->tx;

	while (p->sq_head) {
		tp__coll_req_t *r = p->sq_head;
		uint64_t h =
		    atomic_load_explicit(&tx->head, memory_order_relaxed);
		uint64_t t =
		    atomic_load_explicit(&tx->tail, memory_order_acquire);
		size_t room = p->ring_cap - (size_t)(h - t);
		size_t n = padded(r->len) - r->off;
		if (room == 0)
			break;
		if (n > room)
			n = room;
		if (r->off < r->len) /* the pad bytes are never written */
			to_ring(p, tx, h, r->buf + r->off,
				n < r->len - r->off ? n : r->len - r->off);
		atomic_store(&tx->head, h + n);
		if (atomic_exchange(&tx->rsleep, 0))
			wake(c, peer);
		*moved_p = true;
		r->off += n;
		if (r->off == padded(r->len))
			finish_req(&p->sq_head, &p->sq_tail);
	}
	return TP_OK;
}

static tp_err_t pump_recv(tp_coll_comm_t *c, int peer, bool *moved_p)
{
	tp__coll_peer_t *p = &c->peers[peer];
	tp__coll_shm_ring_t *rx = p->rx;

	while (p->rq_head) {
		tp__coll_req_t *r = p->rq_head;
		uint64_t t =
		    atomic_load_explicit(&rx->tail, memory_order_relaxed);
		uint64_t h =
		    atomic_load_explicit(&rx->head, memory_order_acquire);
		size_t avail = (size_t)(h - t), take = 0;
		if (avail == 0)
			break;
		if (r->off < r->len) {
			size_t n = r->len - r->off;
			if (n > avail)
				n = avail;
			if (r->acc) /* whole elements only */
				n -= n % tp_coll_dtype_size(r->dt);
			if (n == 0)
				break;
			from_ring(c, p, rx, t, r, n);
			r->off += n;
			take = n;
		}
		if (r->off >= r->len) {
			size_t pad = padded(r->len) - r->off;
			if (pad > avail - take)
				pad = avail - take;
			r->off += pad;
			take += pad;
		}
		atomic_store(&rx->tail, t + take);
		if (atomic_exchange(&rx->wsleep, 0))
			wake(c, peer);
		*moved_p = true;
		if (r->off == padded(r->len))
			finish_req(&p->rq_head, &p->rq_tail);
	}
	return TP_OK;
}

tp_err_t tp__coll_shm_pump(tp_coll_comm_t *c, int peer, bool *moved_p)
{
	tp_err_t err = pump_send(c, peer, moved_p);
	return err ? err : pump_recv(c, peer, moved_p);
}

bool tp__coll_shm_arm(tp_coll_comm_t *c, int peer)
{
	tp__coll_peer_t *p = &c->peers[peer];
	bool ready = false;

	if (p->sq_head) {
		atomic_store(&p->tx->wsleep, 1);
		ready |= atomic_load(&p->tx->head) - atomic_load(&p->tx->tail) <
			 p->ring_cap;
	}
	if (p->rq_head) {
		const tp__coll_req_t *r = p->rq_head;
		atomic_store(&p->rx->rsleep, 1);
		size_t avail = (size_t)(atomic_load(&p->rx->head) -
					atomic_load(&p->rx->tail));
		/* A reducing receive needs a whole element: part of one
		 * is no reason to stay awake (it would spin until the
		 * sender writes the rest). */
		size_t need = 1;
		if (r->acc && r->off < r->len) {
			need = tp_coll_dtype_size(r->dt);
			if (need > r->len - r->off)
				need = r->len - r->off;
		}
		ready |= avail >= need;
	}
	return ready;
}

tp_err_t tp__coll_shm_check(tp_coll_comm_t *c, int peer)
{
	const tp__coll_peer_t *p = &c->peers[peer];

	return p->eof && (p->sq_head || p->rq_head) ? lost(c, peer, 0) : TP_OK;
}

tp_err_t tp__coll_shm_drain(tp_coll_comm_t *c, int peer, int fd)
{
	char buf[256];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0)
			continue;
		if (n == 0) {
			/* The connection (a FIFO we hold open for writing
			 * never ends). Data it wrote before leaving is still
			 * in the ring: progress fails only when nothing more
			 * can move. */
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
	if (p->wake_rd >= 0)
		close(p->wake_rd);
	if (p->wake_wr >= 0)
		close(p->wake_wr);
	p->map = NULL;
	p->tx = p->rx = NULL;
	p->wake_rd = p->wake_wr = -1;
}

/* ---- setup ------------------------------------------------------------- */

static tp_err_t xfer(int fd, void *buf, size_t len, bool out, int64_t deadline)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n =
		    out ? send(fd, (char *)buf + off, len - off,
			       MSG_NOSIGNAL | MSG_DONTWAIT)
			: recv(fd, (char *)buf + off, len - off, MSG_DONTWAIT);
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
		poll(&pf, 1, tp__coll_poll_ms(left));
	}
	return TP_OK;
}

/* The whole number in variable name, lo..hi, into *v_p: true; true with
 * *v_p untouched when it is unset or empty; false when it is anything
 * else (init refuses that, setup then keeps the default). */
static bool env_size_get(const char *name, size_t lo, size_t hi, size_t *v_p)
{
	const char *env = getenv(name);
	char *end;
	unsigned long long v;

	if (!env || !*env)
		return true;
	if (*env == '-')
		return false;
	errno = 0;
	v = strtoull(env, &end, 10);
	if (*end || errno || v < lo || v > hi)
		return false;
	*v_p = (size_t)v;
	return true;
}

/* Environment variable name as a number in [lo, hi], else def. */
static size_t env_size(const char *name, size_t lo, size_t hi, size_t def)
{
	size_t v = def;

	env_size_get(name, lo, hi, &v);
	return v;
}

/* "0" (off), "1" (on, as unset) or "nofifo"; NULL for anything else. */
static const char *shm_mode(void)
{
	static const char *const ok[] = {"0", "1", "nofifo"};
	const char *env = getenv("TOPOPLACE_COLL_SHM");

	if (!env || !*env)
		return "1";
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(env, ok[i]))
			return ok[i];
	return NULL;
}

char *tp__coll_shm_env_check(void)
{
	size_t cap = CAP_DEFAULT, yield;

	if (!shm_mode())
		return tp_asprintf("TOPOPLACE_COLL_SHM='%s' is not 0, 1 or "
				   "nofifo",
				   getenv("TOPOPLACE_COLL_SHM"));
	if (!env_size_get("TOPOPLACE_COLL_SHM_RING", 64, (size_t)1 << 30,
			  &cap) ||
	    (cap & (cap - 1)))
		return tp_asprintf("TOPOPLACE_COLL_SHM_RING='%s' is not a "
				   "power of two from 64 to 1073741824 bytes",
				   getenv("TOPOPLACE_COLL_SHM_RING"));
	if (!env_size_get("TOPOPLACE_COLL_YIELD_US", 0, HOST_YIELD_US_MAX,
			  &yield))
		return tp_asprintf("TOPOPLACE_COLL_YIELD_US='%s' is not a "
				   "number of microseconds from 0 to %d",
				   getenv("TOPOPLACE_COLL_YIELD_US"),
				   HOST_YIELD_US_MAX);
	return NULL;
}

static size_t ring_cap(void)
{
	size_t v = env_size("TOPOPLACE_COLL_SHM_RING", 64, (size_t)1 << 30,
			    CAP_DEFAULT);

	return v & (v - 1) ? CAP_DEFAULT : v;
}

static void *map_fd(int fd, size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void attach(tp__coll_peer_t *p, void *m, size_t len, bool creator)
{
	size_t cap = len / 2 - HDR;
	tp__coll_shm_ring_t *a = m, *b = (void *)((char *)m + HDR + cap);

	p->map = m;
	p->map_len = len;
	p->ring_cap = cap;
	p->tx = creator ? a : b;
	p->rx = creator ? b : a;
}

static bool same_host(const tp_coll_comm_t *c, int peer)
{
	return !strcmp(c->host_of[peer % c->size], c->host_of[c->rank]);
}

/* The pair's wake-up FIFOs live next to the segment: i = 0 wakes the
 * lower rank, 1 the higher. */
static void fifo_path(char *buf, size_t len, const char *name, int i)
{
	snprintf(buf, len, "/dev/shm%s.w%d", name, i);
}

/* Every segment's name starts so: name_ok() holds a peer's to it. */
#define SEG_PREFIX "/tpcoll-"

/* Whether a segment name a peer sent is one of ours (SEG_PREFIX and
 * digits, letters and '-', NUL-terminated within NAME_LEN): the name is
 * opened, unlinked and made FIFO paths of, so a peer's "/../x" must not
 * reach the file system. */
static bool name_ok(const char *name)
{
	static const char prefix[] = SEG_PREFIX;
	const char *end = memchr(name, '\0', NAME_LEN);

	if (!end || strncmp(name, prefix, sizeof(prefix) - 1))
		return false;
	for (const char *p = name + sizeof(prefix) - 1; p < end; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      *p == '-'))
			return false;
	return true;
}

static void unlink_all(const char *name)
{
	char path[NAME_LEN + 16];

	shm_unlink(name);
	for (int i = 0; i < 2; i++) {
		fifo_path(path, sizeof(path), name, i);
		unlink(path);
	}
}

/* Open the pair's FIFOs (lower: reads 0, writes 1); false if not. */
static bool open_fifos(tp__coll_peer_t *p, const char *name, bool lower,
		       bool create)
{
	char path[NAME_LEN + 16];
	int fd[2] = {-1, -1};

	for (int i = 0; i < 2; i++) {
		fifo_path(path, sizeof(path), name, i);
		if (create && mkfifo(path, 0600) < 0)
			break;
		/* O_RDWR: never blocks, never reads end-of-file */
		fd[i] = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd[i] < 0)
			break;
	}
	if (fd[0] < 0 || fd[1] < 0) {
		for (int i = 0; i < 2; i++)
			if (fd[i] >= 0)
				close(fd[i]);
		return false;
	}
	p->wake_rd = fd[lower ? 0 : 1];
	p->wake_wr = fd[lower ? 1 : 0];
	return true;
}

/* Lower rank of a pair: make and map a segment, its name into name
 * (empty when it could not: the pair stays on TCP); name's last byte
 * says whether wake-up FIFOs exist too. */
static void create_segment(tp_coll_comm_t *c, int peer, char *name, bool fifos)
{
	static _Atomic unsigned seq;
	void *m = NULL;

	snprintf(name, NAME_LEN, SEG_PREFIX "%d-%u-%d", (int)getpid(),
		 atomic_fetch_add(&seq, 1), peer);
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	size_t len = 2 * (HDR + ring_cap());
	if (fd < 0) {
		name[0] = '\0';
		return;
	}
	if (ftruncate(fd, (off_t)len) == 0)
		m = map_fd(fd, len); /* zero-filled: counters start at 0 */
	close(fd);
	if (m) {
		attach(&c->peers[peer], m, len, true);
		if (fifos && open_fifos(&c->peers[peer], name, true, true))
			name[NAME_LEN - 1] = 'f';
	} else {
		shm_unlink(name);
		name[0] = '\0';
	}
}

/* Higher rank of a pair: map the named segment; 0 when it could not,
 * 1 with wake-ups over the connection, 2 over the FIFOs. */
static char open_segment(tp_coll_comm_t *c, int peer, const char *name,
			 bool fifos)
{
	int fd = shm_open(name, O_RDWR, 0);
	struct stat st;
	void *m = NULL;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_size > (off_t)(2 * HDR))
		m = map_fd(fd, (size_t)st.st_size);
	close(fd);
	if (!m)
		return 0;
	attach(&c->peers[peer], m, (size_t)st.st_size, false);
	return fifos && open_fifos(&c->peers[peer], name, false, false) ? 2 : 1;
}

tp_err_t tp__coll_shm_setup(tp_coll_comm_t *c, int64_t deadline, char **err_p)
{
	/* "0": no shared memory; "nofifo": wake-ups over the connection
	 * (init refused any other value) */
	const char *mode = shm_mode();
	bool enabled = !mode || strcmp(mode, "0");
	bool fifos_ok = !mode || strcmp(mode, "nofifo");
	char(*names)[NAME_LEN] = tp_calloc(2 * (size_t)c->size, NAME_LEN);
	tp_err_t err = TP_OK;

	c->yield_ns = (int64_t)env_size("TOPOPLACE_COLL_YIELD_US", 0,
					HOST_YIELD_US_MAX, HOST_YIELD_US) *
		      1000;

	if (!names)
		return TP_ERR_NOMEM;
	/* 1: the lower rank of each pair creates and names the segment
	 * (an empty name refuses); sends never block on 64 bytes. */
	for (int i = 0; i < c->nactive && !err; i++) {
		int peer = c->active[i];
		if (!same_host(c, peer) || peer % c->size < c->rank)
			continue;
		if (enabled)
			create_segment(c, peer, names[peer], fifos_ok);
		err = xfer(c->peers[peer].fd, names[peer], NAME_LEN, true,
			   deadline);
	}
	/* 2: map what the lower ranks named; ack 0 (no), 1 (mapped), 2
	 * (mapped, FIFOs open). */
	for (int i = 0; i < c->nactive && !err; i++) {
		int peer = c->active[i];
		char name[NAME_LEN], ack = 0;
		if (!same_host(c, peer) || peer % c->size > c->rank)
			continue;
		err = xfer(c->peers[peer].fd, name, NAME_LEN, false, deadline);
		if (err)
			break;
		bool fifos = name[NAME_LEN - 1] == 'f';
		name[NAME_LEN - 1] = '\0';
		if (!name_ok(name))
			name[0] = '\0'; /* refused: the pair stays on TCP */
		if (enabled && name[0]) {
			ack = open_segment(c, peer, name, fifos && fifos_ok);
			/* both ends hold it now: the names can go, so none
			 * stays behind should the lower rank die before its
			 * unlink in step 3 (a job cancelled during init) */
			unlink_all(name);
		}
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
			unlink_all(names[peer]);
		names[peer][0] = '\0';
		tp__coll_peer_t *p = &c->peers[peer];
		if (!err && !ack)
			tp__coll_shm_close(p);
		if (!err && ack == 1 && p->wake_rd >= 0) {
			close(p->wake_rd); /* the peer could not open them */
			close(p->wake_wr);
			p->wake_rd = p->wake_wr = -1;
		}
	}
	if (err && err_p && !*err_p)
		*err_p =
		    tp_asprintf("rank %d: shared-memory setup on host %s: %s",
				c->rank, c->host_of[c->rank], tp_strerror(err));
	/* A failed setup may leave names behind: remove them. */
	for (int i = 0; err && i < 2 * c->size; i++)
		if (names[i][0])
			unlink_all(names[i]);
	tp_free(names);
	return err;
}

/* ---- one segment per host: the small all-reduce ----------------------- */

/*
 * Notes: a single-host communicator maps one more segment, shared by all
 * its ranks: a slot per rank, two result buffers and three counters. A
 * rank copies its input into its slot and adds one to `arrived`; the
 * last to arrive reduces the slots in local rank order into the result
 * buffer of the round's parity, resets `arrived`, bumps `gen` and wakes
 * every waiter with one FUTEX_WAKE; the others sleep on `gen` in
 * FUTEX_WAIT and copy the result. One wait per rank per call where the
 * ring needs 2(P-1) dependent steps. Two result buffers
 * suffice: round k+2 cannot finish before every rank has left round k+1,
 * hence stopped reading round k's. The sleep is cut into 50 ms slices to
 * notice a neighbour whose connection closed (a rank that failed closes
 * its connections) and the communicator's timeout, naming the ranks that
 * never arrived. The segment is set up along the chain of ranks (each
 * connected to the next by the ring): the name goes down, the ranks' yes
 * or no comes back up (all or none use it), the verdict goes down again.
 *
 * Larger all-reduces (the hierarchical schedule's host reduce-scatter and
 * all-gather on a one-host job) go through the same segment in blocks of
 * up to TP__COLL_HOST_BLOCK bytes, two block buffers used in turn, each a
 * slot per rank and a result. Per block a rank copies its input into its
 * slot (all but its own 1/n, which only it reads), waits for all slots,
 * reduces its 1/n from every slot into the result and its own output,
 * waits for all parts, copies the rest of the result out. Three
 * counters per buffer only grow (n per block), so "all arrived" is a
 * comparison and the last arrival wakes the rest with one FUTEX_WAKE; a
 * buffer is written again only when every rank copied out what it held
 * two blocks before. Two waits per block where the ring has 2(n-1)
 * dependent steps: with more ranks than cores each step costs a round of
 * the scheduler (measured at 8 ranks on 2 cores, 1 MiB: ring 3.6 ms).
 * The pages stay untouched (tmpfs allocates on first write) until a
 * large call uses them.
 *
 * Every wait first yields the CPU in a loop (sched_yield, then a look at
 * the counter) for up to HOST_YIELD_US, and only then sleeps in
 * FUTEX_WAIT. With more ranks than cores (8 on 2 here) the rank we wait
 * for is runnable but has no CPU: a yield hands it ours at the price of
 * a context switch, where a sleep costs the futex round trip and a
 * wake-up through the scheduler for every waiter, one after another
 * (8-byte all-reduce at 8 ranks: 40 us sleeping at once, 17-22 us
 * yielding first; np=4 19 vs 9 us). With a core per rank the yield
 * returns at once and the loop polls like a spin; a pause-loop spin
 * measured worse on these VMs even at 2 ranks (100 pauses first: 9.4
 * against 4.4 us), so there is none. Waiters count themselves in
 * `sleepers` before FUTEX_WAIT and the arrival that completes a counter
 * calls FUTEX_WAKE only when some sleep (a sequentially consistent
 * store then load on both sides: no lost wake-up), so a round whose
 * waiters all yielded makes no wake-up system call.
 */

#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <sys/syscall.h>

/* arrived, gen at 0 and 64; the large path's counters (in, red, out per
 * buffer) at 128 + 64 i, i < 6; sleepers at 512; stamps at 576.. */
#define HOST_SLEEPERS 512
#define HOST_HDR      576

struct tp__coll_host {
	void *map;
	size_t len;
	int n, me, first; /* ranks, my local rank, global rank of local 0 */
	int64_t yield_ns; /* yield this long before sleeping */
	uint32_t seq, bseq, arrivals;
	_Atomic uint32_t *arrived, *gen, *stamp;
	_Atomic uint32_t *moved;    /* per local rank: its transport's moves */
	_Atomic uint32_t *sleepers; /* ranks in FUTEX_WAIT */
	_Atomic uint32_t *in[2], *red[2], *out[2];
	char *result, *slots; /* [2][SMALL], [n][SMALL] */
	char *block[2];	      /* [n + 1][TP__COLL_HOST_BLOCK]: slots, result */
};

/* Each local rank's arrival stamp and moves counter. */
static size_t host_stamps(int n)
{
	return (2 * (size_t)n * sizeof(uint32_t) + 63) & ~(size_t)63;
}

static size_t host_small_len(int n)
{
	return HOST_HDR + host_stamps(n) + (2 + (size_t)n) * TP__COLL_SMALL;
}

static size_t host_len(int n)
{
	return host_small_len(n) + 2 * (1 + (size_t)n) * TP__COLL_HOST_BLOCK;
}

static tp__coll_host_t *host_attach(void *m, int n, int me, int first,
				    int64_t yield_ns)
{
	tp__coll_host_t *h = tp_calloc(1, sizeof(*h));
	char *b = m;

	if (!h)
		return NULL;
	h->map = m;
	h->len = host_len(n);
	h->n = n;
	h->me = me;
	h->first = first;
	h->yield_ns = yield_ns;
	h->arrived = (_Atomic uint32_t *)b;
	h->gen = (_Atomic uint32_t *)(b + 64);
	for (int d = 0; d < 2; d++) {
		h->in[d] = (_Atomic uint32_t *)(b + 128 + 64 * (3 * d));
		h->red[d] = (_Atomic uint32_t *)(b + 128 + 64 * (3 * d + 1));
		h->out[d] = (_Atomic uint32_t *)(b + 128 + 64 * (3 * d + 2));
		h->block[d] = b + host_small_len(n) +
			      (size_t)d * (1 + (size_t)n) * TP__COLL_HOST_BLOCK;
	}
	h->sleepers = (_Atomic uint32_t *)(b + HOST_SLEEPERS);
	h->stamp = (_Atomic uint32_t *)(b + HOST_HDR);
	h->moved = h->stamp + n;
	h->result = b + HOST_HDR + host_stamps(n);
	h->slots = h->result + 2 * TP__COLL_SMALL;
	return h;
}

void tp__coll_host_close(tp_coll_comm_t *c)
{
	if (!c->host)
		return;
	munmap(c->host->map, c->host->len);
	tp_free(c->host);
	c->host = NULL;
}

/* Local rank 0: a fresh zero-filled segment and its name ("" if none). */
static void *host_create(int n, char *name)
{
	static _Atomic unsigned seq;
	void *m = NULL;
	int fd;

	snprintf(name, NAME_LEN, SEG_PREFIX "h-%d-%u", (int)getpid(),
		 atomic_fetch_add(&seq, 1));
	fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0) {
		name[0] = '\0';
		return NULL;
	}
	if (ftruncate(fd, (off_t)host_len(n)) == 0)
		m = map_fd(fd, host_len(n));
	close(fd);
	if (!m) {
		shm_unlink(name);
		name[0] = '\0';
	}
	return m;
}

static void *host_open(int n, const char *name)
{
	struct stat st;
	void *m = NULL;
	int fd = name[0] ? shm_open(name, O_RDWR, 0) : -1;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size == host_len(n))
		m = map_fd(fd, host_len(n));
	close(fd);
	return m;
}

/* xfer() with peer, which *who names when it fails (the first to). */
static tp_err_t xfer_with(int fd, int peer, void *buf, size_t len, bool out,
			  int64_t deadline, int *who)
{
	tp_err_t err = xfer(fd, buf, len, out, deadline);

	if (err && *who < 0)
		*who = peer;
	return err;
}

tp_err_t tp__coll_host_setup(tp_coll_comm_t *c, int64_t deadline, char **err_p)
{
	const char *mode = shm_mode();
	bool enabled = !mode || strcmp(mode, "0");
	int n = c->size, me = c->rank, first = 0, who = -1;
	const uint32_t *mem = NULL;
	char name[NAME_LEN] = "", ok, all = 1;
	void *m = NULL;
	tp_err_t err = TP_OK;

	if (c->nhosts != 1) { /* the host level's ranks, if any */
		if (!c->host_lv)
			return TP_OK;
		mem = c->level[0].members;
		n = c->level[0].n;
		me = c->level[0].me;
		first = (int)mem[0];
	}
	if (n < 2)
		return TP_OK;
	int up = me > 0 ? c->peers[first + me - 1].fd : -1;
	int dn = me + 1 < n ? c->peers[first + me + 1].fd : -1;
	int pu = first + me - 1, pd = first + me + 1;
	if ((me > 0 && up < 0) || (dn < 0 && me + 1 < n))
		return TP_OK; /* cannot happen: the ring links them */
	if (me == 0 && enabled)
		m = host_create(n, name);
	else if (me > 0)
		err = xfer_with(up, pu, name, NAME_LEN, false, deadline, &who);
	if (me > 0 && !name_ok(name))
		name[0] = '\0'; /* none, or not ours: this rank opens none */
	if (!err && me > 0 && enabled)
		m = host_open(n, name);
	/* the last of the chain opens it after every other rank: its name
	 * can go (rank 0 unlinks it too, later, should it live) */
	if (me + 1 == n && name[0])
		shm_unlink(name);
	if (!err && dn >= 0)
		err = xfer_with(dn, pd, name, NAME_LEN, true, deadline, &who);
	ok = m != NULL;
	/* up: all or none */
	if (!err && dn >= 0)
		err = xfer_with(dn, pd, &all, 1, false, deadline, &who);
	all = (char)(all && ok);
	if (!err && up >= 0)
		err = xfer_with(up, pu, &all, 1, true, deadline, &who);
	if (me == 0 && name[0])
		shm_unlink(name);
	/* down: the verdict */
	if (!err && up >= 0)
		err = xfer_with(up, pu, &all, 1, false, deadline, &who);
	if (!err && dn >= 0)
		err = xfer_with(dn, pd, &all, 1, true, deadline, &who);
	if (!err && all &&
	    !(c->host = host_attach(m, n, me, first, c->yield_ns)))
		err = TP_ERR_NOMEM;
	if (m && !c->host)
		munmap(m, host_len(n));
	if (err && name[0]) /* a rank of the chain died: leave nothing */
		shm_unlink(name);
	if (err && err_p && !*err_p) {
		char peer[96] = "";
		if (who >= 0)
			tp__coll_peer_name(c, who, peer, sizeof(peer));
		*err_p =
		    tp_asprintf("rank %d: host segment setup: %s%s%s", c->rank,
				peer, *peer ? ": " : "", tp_strerror(err));
	}
	return err;
}

static long futex(_Atomic uint32_t *w, int op, uint32_t v,
		  const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, v, ts, NULL, 0);
}

/* A neighbour on this host (a rank of h) whose connection closed (it
 * failed, died, or left after this round): its peer index and errno (0:
 * closed), or -1. A rank on another host is not looked at: it may have
 * ended this call and left while a rank here is still behind (its data
 * is all here), and a rank here that needs one that died finds out and
 * fails, which this rank then sees, or its own timeout. */
static int host_closed(const tp_coll_comm_t *c, const tp__coll_host_t *h,
		       int *errno_p)
{
	for (int i = 0; i < c->nactive; i++) {
		int peer = c->active[i], fd = c->peers[peer].fd;
		int r = peer % c->size;
		char b;
		if (fd < 0 || r < h->first || r >= h->first + h->n)
			continue;
		ssize_t k = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		*errno_p = k < 0 ? errno : 0;
		if (k == 0 || (k < 0 && errno != EAGAIN &&
			       errno != EWOULDBLOCK && errno != EINTR))
			return peer;
	}
	return -1;
}

static bool reached(_Atomic uint32_t *w, uint32_t target)
{
	return (int32_t)(atomic_load(w) - target) >= 0;
}

void tp__coll_host_moved(tp_coll_comm_t *c)
{
	if (c->host)
		atomic_fetch_add_explicit(&c->host->moved[c->host->me], 1,
					  memory_order_relaxed);
}

/* What the other local ranks' transports have moved, summed (wraps). */
static uint32_t others_moved(const tp__coll_host_t *h)
{
	uint32_t sum = 0;

	for (int l = 0; l < h->n; l++)
		if (l != h->me)
			sum += atomic_load_explicit(&h->moved[l],
						    memory_order_relaxed);
	return sum;
}

/* How long host_wait sleeps between its checks for a dead or late
 * peer. */
#define SLICE_NS (50 * 1000 * 1000L)

/* How long a wait with work behind it (c->bg) sleeps between its turns
 * at that work. */
#define BG_SLICE_NS (200 * 1000L)

/* The work behind this call (c->bg: the pipelined hierarchical
 * all-reduce's exchange across groups) and the transport, once, without
 * waiting: a rank waiting here for its host's ranks keeps its exchange
 * going. *moved_p: whether the transport moved bytes. */
static tp_err_t serve_bg(tp_coll_comm_t *c, bool *moved_p)
{
	tp_err_t err = c->bg(c, c->bg_arg);

	*moved_p = false;
	return err ? err : c->xp->poke(c, moved_p);
}

/* Sleep until counter w reaches target (wrap-safe). On timeout, names
 * the local rank that arrived least often, if behind us. The timeout
 * counts from this rank's last move or the last move of another rank
 * here, whichever is later: a rank still moving bytes on its own link
 * (a slower rail, a cross-group ring) is waited for as long as it moves,
 * as tp_coll.h promises of a transfer. */
static tp_err_t host_wait(tp_coll_comm_t *c, tp__coll_host_t *h,
			  _Atomic uint32_t *w, uint32_t target)
{
	/* with work behind the wait, shorter sleeps and that work between */
	const struct timespec slice = {0, c->bg ? BG_SLICE_NS : SLICE_NS};
	int64_t deadline = c->last_move_ns + c->timeout_ns;
	int64_t t0 = tp__coll_now_ns(), check;
	uint32_t seen = others_moved(h);
	bool moved;
	tp_err_t err;

	while (!reached(w, target) && tp__coll_now_ns() - t0 < h->yield_ns) {
		if (c->bg && (err = serve_bg(c, &moved)))
			return err;
		sched_yield();
	}
	/* the checks run a slice apart by the clock, whatever the futex
	 * said: a signal every few ms (a handler without SA_RESTART, as
	 * Python installs its own) ends every wait early with EINTR, and
	 * checking only after a whole slice asleep never checked */
	check = tp__coll_now_ns() + SLICE_NS;
	while (!reached(w, target)) {
		uint32_t v = atomic_load(w);
		int e, dead, last = h->me;
		if (c->bg) {
			if ((err = serve_bg(c, &moved)))
				return err;
			if (moved || reached(w, target))
				continue;
		}
		atomic_fetch_add(h->sleepers, 1);
		if ((int32_t)(v - target) < 0)
			(void)futex(w, FUTEX_WAIT, v, &slice);
		atomic_fetch_sub(h->sleepers, 1);
		if (reached(w, target) || tp__coll_now_ns() < check)
			continue;
		check = tp__coll_now_ns() + SLICE_NS;
		/* probe first, then look at the counter: a peer that left
		 * after the round ended is no failure */
		dead = host_closed(c, h, &e);
		uint32_t now_moved = others_moved(h);
		if (now_moved != seen) {
			seen = now_moved;
			deadline = tp__coll_now_ns() + c->timeout_ns;
		}
		bool late = tp__coll_now_ns() >= deadline;
		if (reached(w, target))
			break;
		if (dead >= 0)
			return lost(c, dead, e);
		if (!late)
			continue;
		for (int l = 0; l < h->n; l++)
			if ((int32_t)(atomic_load(&h->stamp[l]) -
				      atomic_load(&h->stamp[last])) < 0)
				last = l;
		if (last != h->me) {
			char who[160];
			tp__coll_peer_name(c, h->first + last, who,
					   sizeof(who));
			return tp__coll_fail(
			    c, TP_ERR_TIMEOUT,
			    "no progress for %.3g s waiting for %s",
			    c->timeout_s, who);
		}
		return tp__coll_fail(c, TP_ERR_TIMEOUT,
				     "no progress for %.3g s", c->timeout_s);
	}
	c->last_move_ns = tp__coll_now_ns();
	return TP_OK;
}

/* After a store to w that ends a wait: wake its sleepers, if any. */
static void wake_all(tp__coll_host_t *h, _Atomic uint32_t *w)
{
	if (atomic_load(h->sleepers))
		futex(w, FUTEX_WAKE, INT_MAX, NULL);
}

/* Add one to counter w; the arrival that makes it reach target wakes the
 * waiters. */
static void host_arrive(tp__coll_host_t *h, _Atomic uint32_t *w,
			uint32_t target)
{
	atomic_store(&h->stamp[h->me], ++h->arrivals);
	if (atomic_fetch_add(w, 1) + 1 == target)
		wake_all(h, w);
}

tp_err_t tp__coll_host_allreduce(tp_coll_comm_t *c, char *buf, const char *src,
				 size_t count, tp_coll_dtype_t dt,
				 tp_coll_op_t op)
{
	tp__coll_host_t *h = c->host;
	size_t bytes = count * tp_coll_dtype_size(dt);
	uint32_t seq = h->seq++;
	char *res = h->result + (seq & 1) * TP__COLL_SMALL;

	memcpy(h->slots + (size_t)h->me * TP__COLL_SMALL, src ? src : buf,
	       bytes);
	atomic_store(&h->stamp[h->me], ++h->arrivals);
	if (atomic_fetch_add(h->arrived, 1) == (uint32_t)h->n - 1) {
		memcpy(res, h->slots, bytes);
		for (int l = 1; l < h->n; l++)
			c->kern->reduce(res,
					h->slots + (size_t)l * TP__COLL_SMALL,
					count, dt, op, NULL);
		atomic_store(h->arrived, 0);
		atomic_store(h->gen, seq + 1);
		wake_all(h, h->gen);
	} else {
		tp_err_t err = host_wait(c, h, h->gen, seq + 1);
		if (err)
			return err;
	}
	memcpy(buf, res, bytes);
	return TP_OK;
}

#define TILE 16384

/* Take the next block buffer once every rank is done with what it held
 * two rounds ago: its index, the arrival target of this round. */
static tp_err_t host_take(tp_coll_comm_t *c, tp__coll_host_t *h, uint32_t *d_p,
			  uint32_t *target_p)
{
	uint32_t s = h->bseq++, n = (uint32_t)h->n;

	*d_p = s & 1;
	*target_p = n * ((s >> 1) + 1);
	return host_wait(c, h, h->out[*d_p], *target_p - n);
}

/* Done with buffer d: the counters stay in step with host_block's. */
static void host_done(tp__coll_host_t *h, uint32_t d, uint32_t target)
{
	host_arrive(h, h->red[d], target);
	host_arrive(h, h->out[d], target);
}

/* One block of the large all-reduce: len bytes at buf (input at src). */
static tp_err_t host_block(tp_coll_comm_t *c, char *buf, const char *src,
			   size_t len, tp_coll_dtype_t dt, tp_coll_op_t op)
{
	tp__coll_host_t *h = c->host;
	size_t dsz = tp_coll_dtype_size(dt), off, cnt;
	uint32_t d, target;
	tp_err_t err = host_take(c, h, &d, &target);
	char *slot = h->block[d], *res = slot + h->n * TP__COLL_HOST_BLOCK;
	char *mine;

	if (err)
		return err;
	/* our own part is read from src by us alone: not copied */
	tp__coll_seg(len / dsz, h->n, h->me, &off, &cnt);
	off *= dsz;
	cnt *= dsz;
	mine = slot + (size_t)h->me * TP__COLL_HOST_BLOCK;
	memcpy(mine, src, off);
	memcpy(mine + off + cnt, src + off + cnt, len - off - cnt);
	host_arrive(h, h->in[d], target);
	if ((err = host_wait(c, h, h->in[d], target)))
		return err;
	/* a tile at a time, so the sum stays in cache while every slot is
	 * added to it in local rank order (the same order for every part) */
	for (size_t at = off; at < off + cnt; at += TILE) {
		size_t k = off + cnt - at < TILE ? off + cnt - at : TILE;
		for (int l = 0; l < h->n; l++) {
			const char *from =
			    l == h->me
				? src + at
				: slot + (size_t)l * TP__COLL_HOST_BLOCK + at;
			if (l == 0)
				memcpy(res + at, from, k);
			else
				c->kern->reduce(res + at, from, k / dsz, dt, op,
						NULL);
		}
		memcpy(buf + at, res + at, k);
	}
	host_arrive(h, h->red[d], target);
	if ((err = host_wait(c, h, h->red[d], target)))
		return err;
	memcpy(buf, res, off);
	memcpy(buf + off + cnt, res + off + cnt, len - off - cnt);
	host_arrive(h, h->out[d], target);
	return TP_OK;
}

tp_err_t tp__coll_host_allreduce_large(tp_coll_comm_t *c, char *buf,
				       const char *src, size_t count,
				       tp_coll_dtype_t dt, tp_coll_op_t op)
{
	size_t bytes = count * tp_coll_dtype_size(dt);

	for (size_t at = 0; at < bytes; at += TP__COLL_HOST_BLOCK) {
		size_t len = bytes - at < TP__COLL_HOST_BLOCK
				 ? bytes - at
				 : TP__COLL_HOST_BLOCK;
		tp_err_t err = host_block(c, buf + at, (src ? src : buf) + at,
					  len, dt, op);
		if (err)
			return err;
	}
	return TP_OK;
}

/* Round k of the host phases: shard j's piece of up to `pe` elements,
 * at element *at_p of the call's buffer; false when the shard has no
 * piece k. The shards split count evenly or by the plan's rank weights
 * (c->host_wcum): a heavier shard takes more rounds. */
static bool host_piece(const tp_coll_comm_t *c, size_t count, size_t pe,
		       size_t k, int j, size_t *at_p, size_t *cnt_p)
{
	size_t off, cnt;

	tp__coll_wseg(c->host_wcum, count, c->host->n, j, &off, &cnt);
	if (k * pe >= cnt)
		return false;
	*at_p = off + k * pe;
	*cnt_p = cnt - k * pe < pe ? cnt - k * pe : pe;
	return true;
}

/* Rounds of pieces a block buffer holds: slot l keeps rank l's piece of
 * every shard at [j x pe], the result area every rank's own. */
static size_t host_rounds(const tp_coll_comm_t *c, size_t count, size_t dsz,
			  size_t *pe_p)
{
	const tp__coll_host_t *h = c->host;
	size_t per = tp__coll_wseg_max(c->host_wcum, count, h->n);

	*pe_p = TP__COLL_HOST_BLOCK / (size_t)h->n / dsz;
	return (per + *pe_p - 1) / *pe_p;
}

tp_err_t tp__coll_host_reduce_scatter(tp_coll_comm_t *c, char *buf,
				      const char *src, size_t count,
				      tp_coll_dtype_t dt, tp_coll_op_t op)
{
	tp__coll_host_t *h = c->host;
	size_t dsz = tp_coll_dtype_size(dt), pe, at, cnt;
	size_t rounds = host_rounds(c, count, dsz, &pe);
	const char *in = src ? src : buf;
	tp_err_t err;

	for (size_t k = 0; k < rounds; k++) {
		uint32_t d, target;
		if ((err = host_take(c, h, &d, &target)))
			return err;
		char *slot = h->block[d];
		char *mine = slot + (size_t)h->me * TP__COLL_HOST_BLOCK;
		char *acc = slot + (size_t)h->n * TP__COLL_HOST_BLOCK +
			    (size_t)h->me * pe * dsz;
		for (int j = 0; j < h->n; j++)
			if (j != h->me &&
			    host_piece(c, count, pe, k, j, &at, &cnt))
				memcpy(mine + (size_t)j * pe * dsz,
				       in + at * dsz, cnt * dsz);
		host_arrive(h, h->in[d], target);
		if ((err = host_wait(c, h, h->in[d], target)))
			return err;
		if (host_piece(c, count, pe, k, h->me, &at, &cnt)) {
			/* rank l's copy of my piece: my input, or its slot */
			const char *own = in + at * dsz;
			size_t col = (size_t)h->me * pe * dsz, len = cnt * dsz;
			/* in local rank order, as every rank sums its part */
			for (size_t t = 0; t < len; t += TILE) {
				size_t b = len - t < TILE ? len - t : TILE;
				for (int l = 0; l < h->n; l++) {
					const char *from =
					    (l == h->me
						 ? own
						 : slot +
						       (size_t)l *
							   TP__COLL_HOST_BLOCK +
						       col) +
					    t;
					if (l == 0)
						memcpy(acc + t, from, b);
					else
						c->kern->reduce(acc + t, from,
								b / dsz, dt, op,
								NULL);
				}
				memcpy(buf + at * dsz + t, acc + t, b);
			}
		}
		host_done(h, d, target);
	}
	return TP_OK;
}

tp_err_t tp__coll_host_allgather(tp_coll_comm_t *c, char *buf, size_t count,
				 tp_coll_dtype_t dt)
{
	tp__coll_host_t *h = c->host;
	size_t dsz = tp_coll_dtype_size(dt), pe, at, cnt;
	size_t rounds = host_rounds(c, count, dsz, &pe);
	tp_err_t err;

	for (size_t k = 0; k < rounds; k++) {
		uint32_t d, target;

		if ((err = host_take(c, h, &d, &target)))
			return err;
		char *res = h->block[d] + (size_t)h->n * TP__COLL_HOST_BLOCK;
		if (host_piece(c, count, pe, k, h->me, &at, &cnt))
			memcpy(res + (size_t)h->me * pe * dsz, buf + at * dsz,
			       cnt * dsz);
		host_arrive(h, h->in[d], target);
		if ((err = host_wait(c, h, h->in[d], target)))
			return err;
		for (int j = 0; j < h->n; j++)
			if (j != h->me &&
			    host_piece(c, count, pe, k, j, &at, &cnt))
				memcpy(buf + at * dsz,
				       res + (size_t)j * pe * dsz, cnt * dsz);
		host_done(h, d, target);
	}
	return TP_OK;
}
