/* Shared helpers for the CMocka unit tests (header-only). */
#ifndef TP_TEST_H
#define TP_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Path of a fixture: under ../shared/fixtures (TP_FIXTURES), else the few
 * small ones kept in tests/fixtures (TP_TESTFIXTURES); NULL, saying so on
 * stderr (the test's log), when neither has it. Static buffer. Tests call
 * skip() on NULL. */
static inline const char *tp_test_fixture(const char *rel)
{
	static char path[4096];
	const char *dirs[] = {getenv("TP_FIXTURES"), getenv("TP_TESTFIXTURES")};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		FILE *fp;

		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirs[i], rel);
		if ((fp = fopen(path, "r"))) {
			fclose(fp);
			return path;
		}
	}
	fprintf(stderr, "# fixture %s: not in TP_FIXTURES nor tests/fixtures\n",
		rel);
	return NULL;
}

/* A new file under /tmp holding text; its path, in a static buffer the
 * next call overwrites. The caller unlinks it. */
static inline char *tp_test_write_tmp(const char *text)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/tp-test-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* Path of a file under tests/topology/data (TP_TESTDATA). */
static inline const char *tp_test_data(const char *rel)
{
	static char path[4096];
	const char *dir = getenv("TP_TESTDATA");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/topology/data",
		 rel);
	return path;
}

/* The temporary LOCPATH of tp_test_comma_locale, removed at exit. */
static char tp_test_locdir[4096];

static inline void tp_test_locdir_remove(void)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tp_test_locdir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", tp_test_locdir);
}

/* Switch the whole process (setlocale LC_ALL) to de_DE.UTF-8, whose
 * decimal point is a comma, for tests that file formats do not follow
 * LC_NUMERIC. The machine need not have the locale: the first call builds
 * it with localedef (~3 s) into a temporary directory named by LOCPATH,
 * which is set before the program's first setlocale() call (call this
 * before any other). False, saying why on stderr, when localedef or the
 * de_DE source is missing, or the locale still has a '.': callers skip()
 * then. tp_test_c_locale() goes back. */
static inline bool tp_test_comma_locale(void)
{
	static int state; /* 0: not tried, 1: built, -1: not available */

	if (!state) {
		const char *tmp = getenv("TMPDIR");
		char cmd[4400];

		state = -1;
		snprintf(tp_test_locdir, sizeof(tp_test_locdir),
			 "%s/tp-locale-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(tp_test_locdir)) {
			fprintf(stderr, "# comma locale: mkdtemp failed\n");
			return false;
		}
		atexit(tp_test_locdir_remove);
		snprintf(cmd, sizeof(cmd),
			 "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' "
			 ">/dev/null 2>&1",
			 tp_test_locdir);
		if (system(cmd) != 0)
			fprintf(stderr, "# comma locale: localedef failed\n");
		setenv("LOCPATH", tp_test_locdir, 1);
		state = 1;
	}
	if (state < 0 || !setlocale(LC_ALL, "de_DE.UTF-8")) {
		fprintf(stderr, "# comma locale: de_DE.UTF-8 not available\n");
		state = -1;
		return false;
	}
	if (strcmp(localeconv()->decimal_point, ",") != 0) {
		fprintf(stderr, "# comma locale: decimal point is not ','\n");
		setlocale(LC_ALL, "C");
		return false;
	}
	return true;
}

static inline void tp_test_c_locale(void)
{
	setlocale(LC_ALL, "C");
}

#define TP_FIXTURE_OR_SKIP(var, rel)                                           \
	const char *var = tp_test_fixture(rel);                                \
	if (!var)                                                              \
		skip()

#endif
