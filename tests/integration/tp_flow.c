/*
 * Helper of integration/emu_fabric.sh: one TCP flow, its goodput measured at
 * the receiver.
 *
 *   tp_flow recv PORT [TIMEOUT_S]   accept one connection, print "<bytes>
 * <seconds> <Mbit/s>" tp_flow send ADDR PORT SECONDS  send as fast as the path
 * allows for SECONDS, then close
 *
 * The receiver times from the first byte to the sender's close, so connection
 * set-up and the launch skew between the two ends do not count.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int do_recv(int port, int timeout)
{
	static char buf[1 << 16];
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port)};
	int one = 1, ls, s;
	double t0 = 0, t1;
	long long bytes = 0;
	ssize_t n;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 ||
	    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		fprintf(stderr, "tp_flow recv: port %d: %s\n", port,
			strerror(errno));
		return 1;
	}
	alarm((unsigned)timeout);
	s = accept(ls, NULL, NULL);
	if (s < 0) {
		fprintf(stderr, "tp_flow recv: accept: %s\n", strerror(errno));
		return 1;
	}
	while ((n = read(s, buf, sizeof(buf))) > 0) {
		if (!bytes)
			t0 = now();
		bytes += n;
	}
	t1 = now();
	if (n < 0 || !bytes || t1 <= t0) {
		fprintf(stderr, "tp_flow recv: nothing measured (%s)\n",
			n < 0 ? strerror(errno) : "");
		return 1;
	}
	printf("%lld %.3f %.1f\n", bytes, t1 - t0,
	       (double)bytes * 8 / (t1 - t0) / 1e6);
	close(s);
	close(ls);
	return 0;
}

static int do_send(const char *addr, int port, double seconds)
{
	static char buf[1 << 16];
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port)};
	double end;
	int s, tries;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "tp_flow send: '%s': not an IPv4 address\n",
			addr);
		return 1;
	}
	/* The receiver may still be starting: retry for up to 5 s. */
	for (tries = 0;; tries++) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s >= 0 && !connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		if (s >= 0)
			close(s);
		if (tries == 50) {
			fprintf(stderr, "tp_flow send: %s:%d: %s\n", addr, port,
				strerror(errno));
			return 1;
		}
		usleep(100000);
	}
	memset(buf, 0x5a, sizeof(buf));
	end = now() + seconds;
	while (now() < end)
		if (write(s, buf, sizeof(buf)) < 0) {
			fprintf(stderr, "tp_flow send: %s\n", strerror(errno));
			return 1;
		}
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "recv"))
		return do_recv(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 30);
	if (argc == 5 && !strcmp(argv[1], "send"))
		return do_send(argv[2], atoi(argv[3]), atof(argv[4]));
	fprintf(
	    stderr,
	    "usage: tp_flow recv PORT [TIMEOUT_S] | send ADDR PORT SECONDS\n");
	return 2;
}
