/*
 * topoplace-decision/1 records (tp_decision_*) and their journal file
 * (tp_decision_append / _trim): the codec the 24.11 plugin writes with and
 * `topoplace show` reads with, and the flock that keeps two controllers
 * sharing StateSaveLocation from losing each other's records.
 */
#include "tp_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tp_placement.h"

static char *ring_names[] = {"node003", "node001", "node002"};
static int ring_gpus[] = {4, 8, 2};

/* A record as the plugin fills one. */
static void sample(tp_decision_t *d, uint32_t job, const char *reason)
{
	tp_decision_init(d);
	d->job_id = job;
	d->time = 1764600000;
	d->hosts = "node[001-003]";
	d->ring = ring_names;
	d->gpus = ring_gpus;
	d->nring = 3;
	d->span[TP_SPAN_GROUPS] = 1;
	d->min_free[TP_SPAN_GROUPS] = 1;
	d->min_empty[TP_SPAN_GROUPS] = 1;
	d->priced = true;
	d->predicted_s = 0.0123456789;
	d->ideal_s = 0.01;
	d->policy = "topoplace";
	d->decision_ms = 0.25;
	d->reason = (char *)reason;
}

static char *encode(const tp_decision_t *d, size_t *len_p)
{
	char *line = NULL;

	assert_int_equal(tp_decision_encode(d, &line, len_p), TP_OK);
	assert_non_null(line);
	assert_int_equal(line[*len_p - 1], '\n');
	return line;
}

static void test_round_trip(void **state)
{
	/* newline, quote, escape, UTF-8 (2 and 4 bytes), a stray 0xff */
	static const char hostile[] =
	    "a\nb\"c\x1b[31m \xc3\xa9 \xf0\x9f\x9a\x80 "
	    "\xff end";
	tp_decision_t d, e;
	char *line, *line2;
	size_t len, len2;

	(void)state;
	sample(&d, 4711, hostile);
	line = encode(&d, &len);
	/* one printable ASCII line whatever the strings held */
	for (size_t i = 0; i + 1 < len; i++)
		assert_true(line[i] >= 0x20 && line[i] < 0x7f);
	assert_int_equal(
	    tp_decision_decode(line, len, TP_DECISION_STRICT, &e, NULL), TP_OK);
	assert_int_equal(e.job_id, 4711);
	assert_int_equal(e.time, 1764600000);
	assert_string_equal(e.hosts, "node[001-003]");
	assert_int_equal(e.nring, 3);
	assert_string_equal(e.ring[0], "node003");
	assert_int_equal(e.gpus[2], 2);
	assert_int_equal(e.span[TP_SPAN_GROUPS], 1);
	assert_int_equal(e.span[TP_SPAN_HOSTS], TP_DECISION_NONE);
	assert_true(e.priced);
	assert_true(e.predicted_s == 0.0123456789);
	assert_true(e.decision_ms == 0.25);
	/* valid UTF-8 comes back as it was; the stray byte as U+FFFD */
	assert_string_equal(e.reason,
			    "a\nb\"c\x1b[31m \xc3\xa9 \xf0\x9f\x9a\x80 "
			    "\xef\xbf\xbd end");
	line2 = encode(&e, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(line, line2, len);
	tp_decision_free(&e);
	tp_free(line);
	tp_free(line2);

	/* unpriced: both times absent, and read so */
	sample(&d, 1, "r");
	d.priced = false;
	line = encode(&d, &len);
	assert_null(strstr(line, "predicted_s"));
	assert_int_equal(
	    tp_decision_decode(line, len, TP_DECISION_STRICT, &e, NULL), TP_OK);
	assert_false(e.priced);
	tp_decision_free(&e);
	tp_free(line);

	/* what cannot be encoded */
	sample(&d, 1, "r");
	d.hosts = NULL;
	assert_int_equal(tp_decision_encode(&d, &line, &len), TP_ERR_INVAL);
	sample(&d, 1, "r");
	d.span[TP_SPAN_GROUPS] = TP_DECISION_NONE;
	assert_int_equal(tp_decision_encode(&d, &line, &len), TP_ERR_INVAL);
}

/* Strict decoding fails with a one-line reason naming the member. */
static void strict_fails(const char *line, const char *why_part)
{
	tp_decision_t d;
	char *why = NULL;

	assert_int_not_equal(tp_decision_decode(line, strlen(line),
						TP_DECISION_STRICT, &d, &why),
			     TP_OK);
	assert_non_null(why);
	if (!strstr(why, why_part))
		fail_msg("'%s': reason '%s' lacks '%s'", line, why, why_part);
	assert_null(strchr(why, '\n'));
	tp_free(why);
}

#define REC_HEAD "{\"format\":\"topoplace-decision/1\",\"job_id\":7,"
#define REC_TAIL                                                               \
	"\"span_groups\":1,\"min_groups\":1,\"min_groups_empty\":1,"           \
	"\"policy\":\"topoplace\",\"decision_ms\":1.000,\"reason\":\"r\"}"
#define REC_BODY "\"time\":5,\"hosts\":\"n[1-2]\",\"ring\":[\"n1\",\"n2\"],"

static void test_strict_rejects(void **state)
{
	tp_decision_t d;
	const char *good = REC_HEAD REC_BODY "\"gpus\":[1,1]," REC_TAIL;

	(void)state;
	assert_int_equal(tp_decision_decode(good, strlen(good),
					    TP_DECISION_STRICT, &d, NULL),
			 TP_OK);
	tp_decision_free(&d);
	strict_fails(REC_HEAD REC_BODY REC_TAIL, "gpus: missing");
	strict_fails(REC_HEAD REC_BODY "\"gpus\":[1]," REC_TAIL, "gpus");
	strict_fails(REC_HEAD REC_BODY "\"gpus\":[1,-1]," REC_TAIL, "gpus");
	strict_fails(REC_HEAD REC_BODY "\"gpus\":[1,1],\"x\":1," REC_TAIL,
		     "unknown member x");
	strict_fails(REC_HEAD REC_BODY "\"gpus\":[1,1],\"job_id\":8," REC_TAIL,
		     "job_id: given twice");
	strict_fails(REC_HEAD REC_BODY
		     "\"gpus\":[1,1],\"predicted_s\":1," REC_TAIL,
		     "predicted_s");
	strict_fails(
	    "{\"format\":\"topoplace-decision/1\",\"job_id\":0," REC_BODY
	    "\"gpus\":[1,1]," REC_TAIL,
	    "job_id");
	strict_fails("{\"format\":\"topoplace-decision/"
		     "1\",\"job_id\":4294967296," REC_BODY
		     "\"gpus\":[1,1]," REC_TAIL,
		     "job_id");
	strict_fails(
	    "{\"format\":\"topoplace-decision/2\",\"job_id\":7," REC_BODY
	    "\"gpus\":[1,1]," REC_TAIL,
	    "format");
	/* a name that would inject a line wherever it is printed */
	strict_fails(REC_HEAD
		     "\"time\":5,\"hosts\":\"n[1-2]\",\"ring\":[\"n1\","
		     "\"n2\\nSwitchName=evil\"],\"gpus\":[1,1]," REC_TAIL,
		     "ring");
	/* bytes cJSON would take: a raw control byte in a name (kept in
	 * the string), one before the object (skipped as white space), and
	 * a \u0000 escape (the name cut at it) */
	strict_fails(REC_HEAD
		     "\"time\":5,\"hosts\":\"n[1-2]\",\"ring\":[\"n1\","
		     "\"n2\x01\"],\"gpus\":[1,1]," REC_TAIL,
		     "control byte 0x01");
	strict_fails("\x02" REC_HEAD REC_BODY "\"gpus\":[1,1]," REC_TAIL,
		     "control byte 0x02");
	strict_fails(REC_HEAD
		     "\"time\":5,\"hosts\":\"n[1-2]\",\"ring\":[\"n1\","
		     "\"n2\\u0000n3\"],\"gpus\":[1,1]," REC_TAIL,
		     "\\u0000 in a string");
	strict_fails(REC_HEAD "\"time\":5,\"hosts\":\"n[1-\",\"ring\":[],"
			      "\"gpus\":[]," REC_TAIL,
		     "hosts");
	strict_fails(REC_HEAD REC_BODY "\"gpus\":[1,1]," REC_TAIL "x",
		     "text after");
	strict_fails(REC_HEAD REC_BODY "\"gpus\":[1,1],", "not JSON");
	strict_fails("[1]", "not a JSON object");
}

static void test_lenient(void **state)
{
	/* what slurm_show.sh writes by hand: hosts as an array, no ring */
	static const char hand[] =
	    "{\"format\":\"topoplace-decision/1\",\"job_id\": 12, \"hosts\": "
	    "[\"node001\",\"node002\"], \"span_groups\": 1, \"min_groups\": 1, "
	    "\"min_groups_empty\": 1e300, \"predicted_s\": 0.5, \"ideal_s\": "
	    "0.25, \"policy\": \"topoplace\", \"reason\": \"test record\"}";
	static const char spans[] =
	    "{\"job_id\":3,\"span\":{\"hosts\":2,\"groups\":2,"
	    "\"min_groups\":1},\"min_span\":{\"hosts\":2},\"extra\":[1]}";
	tp_decision_t d;
	char *why = NULL;

	(void)state;
	assert_int_equal(tp_decision_decode(hand, sizeof(hand) - 1,
					    TP_DECISION_LENIENT, &d, NULL),
			 TP_OK);
	assert_int_equal(d.job_id, 12);
	assert_string_equal(d.hosts, "node001,node002");
	assert_null(d.ring);
	assert_true(d.priced);
	/* out of range: not recorded, rather than (size_t)1e300 */
	assert_int_equal(d.min_empty[TP_SPAN_GROUPS], TP_DECISION_NONE);
	assert_true(d.decision_ms < 0);
	tp_decision_free(&d);
	assert_int_not_equal(tp_decision_decode(hand, sizeof(hand) - 1,
						TP_DECISION_STRICT, &d, NULL),
			     TP_OK);

	assert_int_equal(tp_decision_decode(spans, sizeof(spans) - 1,
					    TP_DECISION_LENIENT, &d, NULL),
			 TP_OK);
	assert_int_equal(d.span[TP_SPAN_GROUPS], 2);
	assert_int_equal(d.min_free[TP_SPAN_GROUPS], 1);
	assert_int_equal(d.min_free[TP_SPAN_HOSTS], 2);
	assert_false(d.priced);
	tp_decision_free(&d);

	/* no job, another format, a host name that is no name: no record */
	assert_int_equal(tp_decision_decode("{\"hosts\":\"n1\"}", 14,
					    TP_DECISION_LENIENT, &d, &why),
			 TP_ERR_PARSE);
	assert_string_equal(why, "job_id: missing");
	tp_free(why);
	assert_int_equal(tp_decision_decode("{\"format\":\"x/2\",\"job_id\":1}",
					    27, TP_DECISION_LENIENT, &d, NULL),
			 TP_ERR_PARSE);
	assert_int_equal(
	    tp_decision_decode("{\"job_id\":1,\"hosts\":[\"a,b[1-9]\"]}", 33,
			       TP_DECISION_LENIENT, &d, NULL),
	    TP_ERR_PARSE);
}

static char tmpdir[64];

static int make_tmpdir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tp-decision-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void append_rec(tp_decision_journal_t *j, uint32_t job,
		       const char *reason)
{
	tp_decision_t d;
	char *line;
	size_t len;

	sample(&d, job, reason);
	line = encode(&d, &len);
	assert_int_equal(tp_decision_append(j, line, len), TP_OK);
	tp_free(line);
}

static void test_read_file(void **state)
{
	char path[128], *why = NULL;
	tp_decision_journal_t j = {.keep = 100, .gid = -1, .lines = SIZE_MAX};
	tp_decision_t *recs = NULL;
	size_t n = 0, bad = 0;
	struct stat st;
	FILE *fp;

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", tmpdir, TP_DECISIONS_FILE);
	j.path = path;
	append_rec(&j, 1, "one");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	/* an edit and a write cut short */
	fp = fopen(path, "a");
	assert_non_null(fp);
	fputs("\n  \n{\"job_id\":2,\"hosts\":\"n[1-\"}\n{\"format\":\"topo",
	      fp);
	fclose(fp);
	assert_int_equal(
	    tp_decisions_read(path, TP_DECISION_LENIENT, &recs, &n, &bad, &why),
	    TP_OK);
	assert_int_equal(n, 1);
	assert_int_equal(bad, 2);
	assert_non_null(strstr(why, ":4: hosts"));
	tp_free(why);
	tp_decisions_free(recs, n);
	/* the next append, the first of a new writer, drops the cut line
	 * before writing (or the record would be glued to it) */
	j.lines = SIZE_MAX;
	append_rec(&j, 3, "three");
	assert_int_equal(
	    tp_decisions_read(path, TP_DECISION_STRICT, &recs, &n, &bad, NULL),
	    TP_OK);
	assert_int_equal(n, 2);
	assert_int_equal(bad, 1); /* the edited line stays */
	assert_int_equal(recs[1].job_id, 3);
	tp_decisions_free(recs, n);
	unlink(path);
}

/* A lock another keeps (here: another open file description of this
 * process) is waited for TP_DECISION_LOCK_WAIT_MS once, not for ever nor
 * once a record: the records are written without it, the file's other
 * lines left alone (no trim past 2 x keep), and once the lock is free
 * again the next append takes it and trims (slurmctld waits for its
 * writer's queue under its own locks). */
static void test_lock_held(void **state)
{
	char path[128], lp[160];
	tp_decision_journal_t j = {.keep = 1, .gid = -1, .lines = SIZE_MAX};
	tp_decision_t *recs = NULL;
	size_t n = 0, bad = 0;
	struct timespec t0, t1;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/locked.jsonl", tmpdir);
	snprintf(lp, sizeof(lp), "%s.lock", path);
	j.path = path;
	fd = open(lp, O_RDWR | O_CREAT, 0640);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t k = 1; k <= 4; k++)
		append_rec(&j, k, "written without the lock");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) +
		   (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(s >= TP_DECISION_LOCK_WAIT_MS / 1000.0 * 0.9);
	assert_true(s < 2 * TP_DECISION_LOCK_WAIT_MS / 1000.0);
	assert_true(j.lock_missed);
	assert_int_equal(
	    tp_decisions_read(path, TP_DECISION_STRICT, &recs, &n, &bad, NULL),
	    TP_OK);
	assert_int_equal(n, 4); /* nothing trimmed under another's lock */
	assert_int_equal(recs[0].job_id, 1);
	tp_decisions_free(recs, n);
	close(fd);
	/* free again: taken at once, and the trim keeps the last record */
	append_rec(&j, 5, "the lock had");
	assert_false(j.lock_missed);
	assert_int_equal(
	    tp_decisions_read(path, TP_DECISION_STRICT, &recs, &n, &bad, NULL),
	    TP_OK);
	assert_true(n <= 2);
	assert_int_equal(recs[n - 1].job_id, 5);
	tp_decisions_free(recs, n);
	unlink(path);
	unlink(lp);
}

static void test_trim(void **state)
{
	char path[128];
	tp_decision_journal_t j = {.keep = 10, .gid = -1, .lines = SIZE_MAX};
	tp_decision_t *recs = NULL;
	size_t n = 0, bad = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/trim.jsonl", tmpdir);
	j.path = path;
	for (uint32_t i = 1; i <= 21; i++)
		append_rec(&j, i, "r");
	/* the 21st passed 2 * keep: the last 10 kept */
	assert_int_equal(j.lines, 10);
	assert_int_equal(
	    tp_decisions_read(path, TP_DECISION_STRICT, &recs, &n, &bad, NULL),
	    TP_OK);
	assert_int_equal(n, 10);
	assert_int_equal(bad, 0);
	assert_int_equal(recs[0].job_id, 12);
	assert_int_equal(recs[9].job_id, 21);
	tp_decisions_free(recs, n);
	unlink(path);
}

/* A journal holding one line as long as the file (a file of zeros put in
 * its place, 256 MiB, sparse): the trim reads it in pieces, so with the
 * address space held to 64 MiB over what the process has it still drops
 * the line cut short and the append leaves just its record (reading a
 * whole line took memory the size of the file, and with the limit the
 * trim gave up, left the zeros, and the record followed them). Under
 * AddressSanitizer, whose shadow memory no such limit allows, the trim
 * runs without it. */
static void test_trim_long_line(void **state)
{
	char path[128];
	tp_decision_journal_t j = {.keep = 10, .gid = -1, .lines = SIZE_MAX};
	struct stat st;
	pid_t pid;
	int fd, status;

	(void)state;
	snprintf(path, sizeof(path), "%s/long.jsonl", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)256 << 20), 0);
	close(fd);
	j.path = path;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
#if !defined(__SANITIZE_ADDRESS__)
		struct rlimit rl;
		FILE *f = fopen("/proc/self/statm", "r");
		unsigned long pages = 0;
		if (!f || fscanf(f, "%lu", &pages) != 1)
			_exit(3);
		fclose(f);
		rl.rlim_cur = rl.rlim_max =
		    pages * (unsigned long)sysconf(_SC_PAGESIZE) + (64UL << 20);
		if (setrlimit(RLIMIT_AS, &rl))
			_exit(4);
#endif
		append_rec(&j, 7, "r");
		_exit(j.lines == 1 ? 0 : 5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size > 0 && st.st_size < 4096);
	unlink(path);
}

/* Two processes append to and trim the same file, as two controllers
 * sharing StateSaveLocation do: every record of each is either trimmed
 * away as one of the oldest or in the file, whole. Each writer's records
 * that are left form an unbroken run ending at its last one; a trim that
 * raced an append (its rename over a record written meanwhile) would cut
 * a hole in one, or lose a last record. */
#define WRITERS	   2
#define PER_WRITER 500

static void test_two_writers(void **state)
{
	char path[128];
	tp_decision_t *recs = NULL;
	size_t n = 0, bad = 0;
	pid_t pid[WRITERS];
	uint32_t next[WRITERS];

	(void)state;
	snprintf(path, sizeof(path), "%s/two.jsonl", tmpdir);
	for (int w = 0; w < WRITERS; w++) {
		pid[w] = fork();
		assert_true(pid[w] >= 0);
		if (pid[w] == 0) {
			tp_decision_journal_t j = {.path = path,
						   .keep = 150,
						   .gid = -1,
						   .lines = SIZE_MAX};
			int rc = 0;
			/* a long reason: the copy in a trim takes a while */
			char reason[4096];
			memset(reason, 'x', sizeof(reason) - 1);
			reason[sizeof(reason) - 1] = '\0';
			for (uint32_t i = 0; i < PER_WRITER && !rc; i++) {
				tp_decision_t d;
				char *line = NULL;
				size_t len;
				sample(&d, (uint32_t)(w + 1) * 100000 + i,
				       reason);
				rc = tp_decision_encode(&d, &line, &len) ||
				     tp_decision_append(&j, line, len);
				tp_free(line);
			}
			_exit(rc);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int st;
		assert_int_equal(waitpid(pid[w], &st, 0), pid[w]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(
	    tp_decisions_read(path, TP_DECISION_STRICT, &recs, &n, &bad, NULL),
	    TP_OK);
	assert_int_equal(bad, 0); /* nothing torn */
	assert_true(n >= 150);
	for (int w = 0; w < WRITERS; w++)
		next[w] = UINT32_MAX;
	for (size_t i = 0; i < n; i++) {
		int w = (int)(recs[i].job_id / 100000) - 1;
		uint32_t seq = recs[i].job_id % 100000;
		assert_true(w >= 0 && w < WRITERS);
		if (next[w] != UINT32_MAX && seq != next[w])
			fail_msg("writer %d: record %u follows %u: %u..%u lost",
				 w, seq, next[w] - 1, next[w], seq - 1);
		next[w] = seq + 1;
	}
	/* the last record of each is there (none was trimmed after it
	 * unless the other wrote 20 after it) */
	for (int w = 0; w < WRITERS; w++)
		if (next[w] != UINT32_MAX && next[w] != PER_WRITER)
			fail_msg("writer %d: last record %u lost", w,
				 PER_WRITER - 1);
	tp_decisions_free(recs, n);
	unlink(path);
}

/* A FIFO or directory in the journal's place: refused at once, with or
 * without a reader at the other end (alarm: a hang fails the test), and
 * nothing is written into the FIFO. */
static void test_not_regular(void **state)
{
	char path[128], buf[64];
	tp_decision_journal_t j = {.keep = 10, .gid = -1, .lines = SIZE_MAX};
	tp_decision_t d;
	char *line;
	size_t len;
	int rd;

	(void)state;
	snprintf(path, sizeof(path), "%s/fifo.jsonl", tmpdir);
	j.path = path;
	sample(&d, 1, "r");
	line = encode(&d, &len);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(10);
	assert_int_equal(tp_decision_append(&j, line, len), TP_ERR_NOTREG);
	assert_int_equal(tp_decision_trim(&j), TP_ERR_NOTREG);
	rd = open(path, O_RDONLY | O_NONBLOCK);
	assert_true(rd >= 0);
	j.lines = 0; /* no trim first: straight to the append's own open */
	assert_int_equal(tp_decision_append(&j, line, len), TP_ERR_NOTREG);
	alarm(0);
	assert_int_equal(read(rd, buf, sizeof(buf)), 0); /* nothing came */
	close(rd);
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	j.lines = SIZE_MAX;
	assert_int_equal(tp_decision_append(&j, line, len), TP_ERR_NOTREG);
	assert_int_equal(rmdir(path), 0);
	tp_free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_strict_rejects),
	    cmocka_unit_test(test_lenient),
	    cmocka_unit_test(test_read_file),
	    cmocka_unit_test(test_lock_held),
	    cmocka_unit_test(test_trim),
	    cmocka_unit_test(test_trim_long_line),
	    cmocka_unit_test(test_two_writers),
	    cmocka_unit_test(test_not_regular),
	};
	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
