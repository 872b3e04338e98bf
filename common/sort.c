/*
 * tp_sort: a stable sort. glibc's qsort happens to be a merge sort (stable)
 * while its buffer fits in memory, but it allocates that buffer on every
 * call, and other libcs (and glibc from 2.37) sort unstably. A placement
 * decision sorts short arrays (a job's hosts, a group's children) dozens
 * of times: insertion sort there, in place; a merge sort through one
 * buffer above TP_SORT_SHORT elements, or insertion sort again when that
 * buffer cannot be had.
 */
#include "config.h"

#include <string.h>

#include "tp_common.h"

typedef int (*cmp_fn)(const void *, const void *);

/* Insertion sort of n elements, tmp: room for one. */
static void insertion(unsigned char *a, size_t n, size_t size, cmp_fn cmp,
		      unsigned char *tmp)
{
	for (size_t i = 1; i < n; i++) {
		unsigned char *x = a + i * size;
		size_t j = i;
		if (cmp(x - size, x) <= 0)
			continue;
		memcpy(tmp, x, size);
		while (j > 0 && cmp(a + (j - 1) * size, tmp) > 0)
			j--;
		memmove(a + (j + 1) * size, a + j * size, (i - j) * size);
		memcpy(a + j * size, tmp, size);
	}
}

/* Merge sort of a[0..n) through buf (n elements), runs of TP_SORT_SHORT
 * sorted by insertion first; tmp: room for one element. */
static void merge(unsigned char *a, size_t n, size_t size, cmp_fn cmp,
		  unsigned char *buf, unsigned char *tmp)
{
	for (size_t lo = 0; lo < n; lo += TP_SORT_SHORT)
		insertion(a + lo * size,
			  n - lo < TP_SORT_SHORT ? n - lo : TP_SORT_SHORT, size,
			  cmp, tmp);
	for (size_t w = TP_SORT_SHORT; w < n; w *= 2) {
		for (size_t lo = 0; lo + w < n; lo += 2 * w) {
			size_t mid = lo + w,
			       hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, o = 0;
			while (i < mid && j < hi) {
				/* the left one on a tie: stable */
				if (cmp(a + j * size, a + i * size) < 0)
					memcpy(buf + o++ * size, a + j++ * size,
					       size);
				else
					memcpy(buf + o++ * size, a + i++ * size,
					       size);
			}
			memcpy(buf + o * size, a + i * size, (mid - i) * size);
			o += mid - i;
			memcpy(buf + o * size, a + j * size, (hi - j) * size);
			o += hi - j;
			memcpy(a + lo * size, buf, o * size);
		}
	}
}

/* Insertion sort by adjacent swaps: no room needed (out of memory). */
static void swaps(unsigned char *a, size_t n, size_t size, cmp_fn cmp)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i;
		     j > 0 && cmp(a + (j - 1) * size, a + j * size) > 0; j--)
			for (size_t b = 0; b < size; b++) {
				unsigned char c = a[(j - 1) * size + b];
				a[(j - 1) * size + b] = a[j * size + b];
				a[j * size + b] = c;
			}
}

int tp_u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

void tp_sort(void *base, size_t n, size_t size, cmp_fn cmp)
{
	unsigned char small[256], *tmp = small, *buf = NULL;

	if (n < 2 || !size || !base || !cmp)
		return;
	if (size > sizeof(small) && !(tmp = tp_malloc(size))) {
		swaps(base, n, size, cmp);
		return;
	}
	if (n > TP_SORT_SHORT && n <= (size_t)-1 / size)
		buf = tp_malloc(n * size);
	if (buf)
		merge(base, n, size, cmp, buf, tmp);
	else /* short, or no memory for the merge: quadratic but sorted */
		insertion(base, n, size, cmp, tmp);
	tp_free(buf);
	if (tmp != small)
		tp_free(tmp);
}
