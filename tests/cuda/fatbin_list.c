/* fatbin_list.c - list the images of a raw .nv_fatbin section (as
 * `objcopy -O binary --only-section=.nv_fatbin` writes it), one line each:
 * "sm_90" for a cubin, "compute_100" for PTX. There is no cuobjdump on these
 * machines and nvcc compresses the images, so the names are read from the
 * image headers. Layout (little endian), as the bytes show:
 *   container: u32 magic 0xba55ed50, u16 version, u16 header size,
 *              u64 size of the images that follow;
 *   image:     u16 kind (1 PTX, 2 cubin), u16 version, u32 header size,
 *              u64 payload size, ..., u32 architecture at offset 28.
 * Exit 1 on a malformed section. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int main(int argc, char **argv)
{
	static unsigned char buf[64 << 20];
	FILE *fp = argc == 2 ? fopen(argv[1], "rb") : NULL;
	size_t len, off = 0;
	int nimg = 0;

	if (!fp) {
		fprintf(stderr, "usage: fatbin_list SECTION.bin\n");
		return 2;
	}
	len = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	while (off + 16 <= len) {
		uint64_t hs = le(buf + off + 6, 2), fs = le(buf + off + 8, 8);
		size_t p, end;

		if (le(buf + off, 4) == 0) { /* alignment padding */
			off += 8;
			continue;
		}
		if (le(buf + off, 4) != 0xba55ed50u || hs < 16 ||
		    fs > len - off - hs) {
			fprintf(stderr, "bad container at %zu\n", off);
			return 1;
		}
		p = off + hs;
		end = p + fs;
		while (p + 32 <= end) {
			uint64_t kind = le(buf + p, 2),
				 ehs = le(buf + p + 4, 4);
			uint64_t ps = le(buf + p + 8, 8);
			uint64_t arch = le(buf + p + 28, 4);

			if (ehs < 32 || ehs + ps > end - p) {
				fprintf(stderr, "bad image at %zu\n", p);
				return 1;
			}
			printf("%s_%llu\n", kind == 1 ? "compute" : "sm",
			       (unsigned long long)arch);
			nimg++;
			p += ehs + ps;
		}
		off = end;
	}
	return nimg ? 0 : 1;
}
