/* Shared helpers for the CMocka unit tests (header-only). */
#ifndef TP_TEST_H
#define TP_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

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

/* Path of a file under tests/topology/data (TP_TESTDATA). */
static inline const char *tp_test_data(const char *rel)
{
	static char path[4096];
	const char *dir = getenv("TP_TESTDATA");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/topology/data",
		 rel);
	return path;
}

#define TP_FIXTURE_OR_SKIP(var, rel)                                           \
	const char *var = tp_test_fixture(rel);                                \
	if (!var)                                                              \
		skip()

#endif
