/*
 * Shared by the libFuzzer targets: readers that take a path get the input
 * through a memfd (/proc/self/fd/N), and every error detail must be one
 * printable line (the readers quote and cut what they echo).
 */
#ifndef TP_FUZZ_COMMON_H
#define TP_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp_common.h"
#include "tp_test_fabric.h"
#include "tp_topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a regular file's path (one memfd per process, rewritten). */
static inline const char *fuzz_path(const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz", 0);
		if (fd < 0)
			__builtin_trap();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 ||
	    (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		__builtin_trap();
	return path;
}

/* The input as a NUL-terminated string (caller tp_free()s). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = tp_malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

/* A small fat tree: hosts node001..node008, 8 GPUs each; NULL on NOMEM. */
static inline tp_fabric_t *fuzz_fat_tree(void)
{
	return tp_test_fat_tree_try(2, 1, 4, 2, 8, false, 1);
}

/* An error detail: present on error, one line, no raw control bytes. */
static inline void fuzz_check_msg(tp_err_t err, const char *msg)
{
	if (err == TP_OK || err == TP_ERR_NOMEM || !msg)
		return;
	for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
		if (*p < 0x20 && *p != '\t') {
			fprintf(stderr, "raw control byte in: %s\n", msg);
			__builtin_trap();
		}
}

#endif
