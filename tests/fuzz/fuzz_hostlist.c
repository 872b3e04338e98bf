/* libFuzzer target: Slurm host lists. A list that expands must count the
 * same, and its compressed form must expand to the same set of names
 * (compression drops repeated names). */
#include "config.h"

#include <stdlib.h>

#include "fuzz_common.h"

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted distinct copy of the pointers; *n_p updated. */
static char **distinct(char **v, size_t *n_p)
{
	char **s = tp_malloc(*n_p * sizeof(*s));
	size_t k = 0;

	if (!s)
		return NULL;
	memcpy(s, v, *n_p * sizeof(*s));
	qsort(s, *n_p, sizeof(*s), by_name);
	for (size_t i = 0; i < *n_p; i++)
		if (k == 0 || strcmp(s[k - 1], s[i]) != 0)
			s[k++] = s[i];
	*n_p = k;
	return s;
}

static void roundtrip(char **v, size_t n)
{
	char *c = tp_hostlist_compress((const char *const *)v, n);
	char **w = NULL, **dv, **dw;
	size_t m = 0, dn = n, dm;

	if (!c)
		return;
	if (tp_hostlist_expand(c, &w, &m) != TP_OK)
		__builtin_trap();
	dm = m;
	dv = distinct(v, &dn);
	dw = distinct(w, &dm);
	if (dv && dw) {
		if (dn != dm)
			__builtin_trap();
		for (size_t i = 0; i < dn; i++)
			if (strcmp(dv[i], dw[i]) != 0)
				__builtin_trap();
	}
	tp_free(dv);
	tp_free(dw);
	tp_hostlist_free(w, m);
	tp_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_str(data, size);
	char **v = NULL;
	size_t n = 0, k = 0;

	if (!text)
		return 0;
	if (tp_hostlist_count(text, &k) == TP_OK && k <= 100000 &&
	    tp_hostlist_expand(text, &v, &n) == TP_OK) {
		if (n != k)
			__builtin_trap();
		if (n && n <= 1000)
			roundtrip(v, n);
		tp_hostlist_free(v, n);
	}
	tp_free(text);
	return 0;
}
