/* The multi-rank harness of the libtopoplace-coll tests (coll_harness.h). */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coll_harness.h"
#include "tp_test_fabric.h"

tp_fabric_t *coll_fabric(void)
{
	static tp_fabric_t *f;

	if (!f) /* 4 hosts: two level-1 groups of two */
		f = tp_test_fat_tree(2, 2, 2, 1, 4, true);
	return f;
}

tp_fabric_t *coll_fabric_nics(void)
{
	static tp_fabric_t *f;

	if (!f) {
		f = tp_test_fat_tree_try(2, 2, 2, 1, 4, true, 0);
		assert_non_null(f);
	}
	return f;
}

tp_plan_t *plan_of(int nh, int L, int first)
{
	return plan_on(coll_fabric(), nh, L, first);
}

bool plan_by_rate;

tp_plan_t *plan_on(tp_fabric_t *f, int nh, int L, int first)
{
	const char *names[8];
	tp_plan_opts_t o;
	tp_plan_t *p = NULL;
	char *msg = NULL;

	for (int i = 0; i < nh; i++)
		names[i] = tp_fabric_host(f, (size_t)(first + i))->name;
	tp_plan_opts_defaults(&o);
	o.gpus_per_host = L;
	o.predict = false;
	o.nics_by_rate = plan_by_rate;
	if (tp_plan_build(f, NULL, names, (size_t)nh, &o, &p, &msg))
		fail_msg("plan: %s", msg);
	return p;
}

/* Whether nobody on this machine listens on (or holds) 127.0.0.1:port:
 * two suites running at once (the sanitizer build's beside distcheck's)
 * draw from the same range, and a rank joining the other suite's rank 0
 * fails both. (The range is below the shell tests' 21000-29999.) */
static bool port_free(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok;

	if (fd < 0)
		return true;
	/* as rank 0 binds: a port in TIME_WAIT is free to it */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

int next_port(void)
{
	static int k;
	int port = 0;

	for (int tries = 0; tries < 64; tries++) {
		port = 10000 + (int)((getpid() * 131 + 97 * k++) % 10000);
		if (port_free(port))
			break;
	}
	return port;
}

void opts_for(tp_coll_opts_t *o, int port, double timeout_s, size_t chunk)
{
	tp_coll_opts_defaults(o);
	o->master_addr = "127.0.0.1";
	o->master_port = port;
	o->timeout_s = timeout_s;
	o->chunk_bytes = chunk;
}

int refuse_shm_rank = -1;
const char *shm_value = "0";
int join_delay_ms;

/* Child: join, run fn, exit with its status (99: init failed). */
static void child(const tp_plan_t *p, int rank, const tp_coll_opts_t *o,
		  rank_fn fn, void *arg)
{
	tp_coll_comm_t *c = NULL;
	char *why = NULL;

	if (rank == refuse_shm_rank)
		setenv("TOPOPLACE_COLL_SHM", shm_value, 1);
	if (join_delay_ms > 0)
		usleep((useconds_t)join_delay_ms * 1000 * (useconds_t)rank);
	if (tp_coll_comm_init(p, rank, o, &c, &why)) {
		fprintf(stderr, "# rank %d: init: %s\n", rank, why);
		_exit(99);
	}
	int rc = fn(c, arg);
	tp_coll_comm_destroy(c);
	_exit(rc);
}

double run_ranks(const tp_plan_t *p, const tp_coll_opts_t *o, rank_fn fn,
		 void *arg, double limit_s, int *st)
{
	int n = (int)tp_plan_world_size(p), left = n;
	pid_t pid[16];
	struct timespec t0, t1;

	assert_true(n <= 16);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fflush(NULL);
	for (int r = 0; r < n; r++) {
		pid[r] = fork();
		assert_true(pid[r] >= 0);
		if (pid[r] == 0)
			child(p, r, o, fn, arg);
		st[r] = -1;
	}
	while (left > 0) {
		int ws;
		pid_t w = waitpid(-1, &ws, WNOHANG);
		if (w > 0) {
			for (int r = 0; r < n; r++)
				if (pid[r] == w)
					st[r] = WIFEXITED(ws)
						    ? WEXITSTATUS(ws)
						    : 128 + WTERMSIG(ws);
			left--;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if ((double)(t1.tv_sec - t0.tv_sec) +
			(double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 >
		    limit_s) {
			for (int r = 0; r < n; r++)
				if (st[r] == -1)
					kill(pid[r], SIGKILL);
			while (waitpid(-1, NULL, 0) > 0)
				;
			break;
		}
		usleep(2000);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}

void expect_ranks_ok(const tp_plan_t *p, const int *st, const char *what)
{
	int n = (int)tp_plan_world_size(p);

	for (int r = 0; r < n; r++)
		if (st[r] != 0)
			fail_msg("%s: rank %d exit %d", what, r, st[r]);
}

void run_ranks_ok(const tp_plan_t *p, double timeout_s, size_t chunk,
		  rank_fn fn, void *arg, double limit_s, const char *what)
{
	tp_coll_opts_t o;
	int st[16];

	opts_for(&o, next_port(), timeout_s, chunk);
	run_ranks(p, &o, fn, arg, limit_s, st);
	expect_ranks_ok(p, st, what);
}
