/*
 * Run a function in a forked child with a time limit and collect its
 * output over a pipe.
 *
 * Notes:
 * - For third-party code that may crash or loop on hostile input (hwloc
 *   2.9's XML importer segfaults on some malformed files): a crash or a
 *   hang then costs one file, not the process.
 * - The child leaves with _exit(): no atexit handlers, no stdio flush of
 *   buffers it inherited, no leak check of memory the parent owns.
 * - fork() in a threaded process is only safe when the function uses
 *   nothing another thread may hold locked (malloc included): callers are
 *   single-threaded tools (the CLI).
 * - The child restores the default action of fatal signals, so a crash
 *   ends it even where a test framework or a sanitizer installed its own
 *   handler, and the parent sees the signal.
 * - The exit status carries the function's tp_err_t (small negatives).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp_common.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static _Noreturn void child_main(int fd, tp_child_fn_t fn, void *arg)
{
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	tp_strbuf_t sb = {0};
	tp_err_t err;

	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], SIG_DFL);
	err = fn(arg, &sb);

	if (sb.failed)
		err = TP_ERR_NOMEM;
	else if (sb.len && !write_all(fd, sb.buf, sb.len))
		err = TP_ERR_IO;
	_exit((int)-err);
}

/* Read the child's output until EOF or the deadline. */
static tp_err_t collect(int fd, int64_t deadline, tp_strbuf_t *out)
{
	char buf[65536];

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - now_ms();
		ssize_t r;
		int rc;

		if (left <= 0)
			return TP_ERR_TIMEOUT;
		rc = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return TP_ERR_IO;
		if (rc == 0)
			continue;
		r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return TP_ERR_IO;
		if (r == 0)
			return TP_OK;
		if (out->len + (size_t)r > TP_FILE_MAX)
			return TP_ERR_RANGE;
		tp_strbuf_append(out, buf, (size_t)r);
		if (out->failed)
			return TP_ERR_NOMEM;
	}
}

static tp_err_t reap(pid_t pid, bool kill_it, int *sig_p)
{
	int status;
	pid_t r;

	if (kill_it)
		kill(pid, SIGKILL);
	while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return TP_ERR_IO;
	if (WIFSIGNALED(status)) {
		*sig_p = WTERMSIG(status);
		return TP_ERR_IO;
	}
	if (!WIFEXITED(status))
		return TP_ERR_IO;
	return (tp_err_t)-WEXITSTATUS(status);
}

tp_err_t tp_child_run(tp_child_fn_t fn, void *arg, unsigned limit_ms,
		      tp_strbuf_t *out, int *sig_p)
{
	int64_t deadline = now_ms() + limit_ms;
	int fds[2];
	pid_t pid;
	tp_err_t err;

	*sig_p = 0;
	if (pipe(fds) != 0)
		return TP_ERR_IO;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return TP_ERR_IO;
	}
	if (pid == 0) {
		close(fds[0]);
		child_main(fds[1], fn, arg);
	}
	close(fds[1]);
	err = collect(fds[0], deadline, out);
	close(fds[0]);
	if (err) {
		reap(pid, true, sig_p);
		*sig_p = 0;
		return err;
	}
	return reap(pid, false, sig_p);
}
