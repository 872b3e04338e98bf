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

/* Path of a file under ../shared/fixtures (TP_FIXTURES), or NULL when the
 * fixtures are not there; static buffer. Tests call skip() on NULL. */
static inline const char *tp_test_fixture(const char *rel)
{
	static char path[4096];
	const char *dir = getenv("TP_FIXTURES");

	if (!dir || !*dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return NULL;
	fclose(fp);
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

#define TP_FIXTURE_OR_SKIP(var, rel)                                           \
	const char *var = tp_test_fixture(rel);                                \
	if (!var)                                                              \
		skip()

#endif
