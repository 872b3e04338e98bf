/*
 * libFuzzer target for the compressed-message decoder (coll/comp_wire.h):
 * any bytes must decode or fail with an error code, never crash, and a
 * failed decode must leave the output untouched. Input: byte 0 picks the
 * kind (low bits) and, with bit 7, has the target rewrite the checksum
 * so the fuzzer reaches the payload checks behind it; bytes 1-2 the
 * expected count (little-endian), byte 3 the block (32 x (1 + b % 8));
 * the rest is the message, expected with pipeline segment 0. Each input is also
 * compressed as fp32 values and must decode back. Build: configure CC=clang
 * --enable-fuzz && make -C tests fuzz.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fix_check(unsigned char *m, size_t len)
{
	uint64_t h;

	if (len < TP__COMP_HDR)
		return;
	h = tp__comp_hash(m + TP__COMP_HDR, len - TP__COMP_HDR,
			  tp__comp_hash(m, TP__COMP_CHECK, 0));
	memcpy(m + TP__COMP_CHECK, &h, 8);
}

/* The input's bytes as fp32 values must survive encode + decode. */
static void roundtrip(int kind, const uint8_t *p, size_t n,
		      const tp_cuda_comp_opts_t *o)
{
	size_t count = n / 4, len, cap = tp__comp_max_bytes(kind, count, o);
	float *g = malloc(count * 4 + 4), *out = calloc(count + 1, 4);
	uint64_t *m = malloc(cap + 8);

	if (g && out && m) {
		memcpy(g, p, count * 4);
		if (tp__comp_encode(kind, g, NULL, count, o, n, m, cap, &len) ||
		    tp__comp_decode(m, len, kind, count, o, n, out, 1, NULL, 0))
			__builtin_trap();
	}
	free(g);
	free(out);
	free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tp_cuda_comp_opts_t o;
	size_t count, len;
	int kind;
	uint64_t *msg;
	float *out, *ref;

	if (size < 4)
		return 0;
	tp_cuda_comp_opts_defaults(&o);
	kind = TP__COMP_INT8 + data[0] % 3;
	count = (size_t)data[1] | (size_t)data[2] << 8;
	o.block = 32u * (1u + data[3] % 8);
	len = size - 4;
	msg = malloc(len + 8);
	out = malloc(count * 4 + 4);
	ref = malloc(count * 4 + 4);
	if (msg && out && ref) {
		memcpy(msg, data + 4, len);
		if (data[0] & 0x80)
			fix_check((unsigned char *)msg, len);
		for (size_t i = 0; i < count; i++)
			out[i] = ref[i] = (float)i;
		if (tp__comp_decode(msg, len, kind, count, &o, 0, out, 0, NULL,
				    0) != TP_OK &&
		    memcmp(out, ref, count * 4))
			__builtin_trap();
	}
	free(msg);
	free(out);
	free(ref);
	roundtrip(kind, data + 4, size - 4 < 4096 ? size - 4 : 4096, &o);
	return 0;
}
