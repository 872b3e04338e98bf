/*
 * comp_wire.h - private to coll/ (and its tests, bench and fuzz target):
 * the wire format of one compressed message of libtopoplace-coll's
 * compressed all-reduce, built on tp_cuda.h's CPU compressors.
 *
 * A message is a 48-byte header, then the payload. Header, little-endian:
 *   0  magic   u32  0x5a435054 ("TPCZ")
 *   4  version u8   2 (1: 40 bytes, no segment)
 *   5  kind    u8   1 int8, 2 1-bit, 3 top-k (tp_coll_comp_t's values)
 *   6  flags   u16  0
 *   8  block   u32  int8/1-bit elements per scale; 0 for top-k
 *  12  nnz     u32  top-k entries; 0 otherwise
 *  16  count   u64  elements the message describes
 *  24  payload u64  bytes after the header
 *  32  segment u64  the sender's pipeline segment in elements (0: none)
 *  40  check   u64  tp__comp_hash(payload, seed = tp__comp_hash(bytes 0-39))
 * Payload (host order; the library runs on little-endian hosts):
 *   int8   fp32 scales[ceil(count / block)], int8 q[count]
 *   1-bit  fp32 scales[ceil(count / block)], u32 bits[ceil(count / 32)]
 *   top-k  fp32 values[nnz], then the nnz indices as LEB128 varints: the
 *          first index, then each gap to the previous one (>= 1).
 * A decoder accepts a message only when every field agrees with what the
 * receiver expects (kind, block, segment, count), the lengths are exactly those
 * the fields imply, the checksum matches and, for top-k, the indices are
 * strictly increasing and below count: a corrupt or truncated message is
 * an error, never a wrong gradient. Stateless, thread-safe.
 */
#ifndef TP_COMP_WIRE_H
#define TP_COMP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"
#include "tp_cuda.h"

#define TP__COMP_HDR	 48u
#define TP__COMP_CHECK	 40u /* where the checksum is */
#define TP__COMP_MAGIC	 0x5a435054u
#define TP__COMP_VERSION 2u
#define TP__COMP_INT8	 1
#define TP__COMP_1BIT	 2
#define TP__COMP_TOPK	 3

typedef struct tp__comp_hdr {
	int kind;
	uint32_t block;
	uint32_t nnz;
	uint64_t count;
	uint64_t payload;
	uint64_t segment;
} tp__comp_hdr_t;

/* 64-bit hash of n bytes (four 64-bit lanes, multiply-rotate rounds and a
 * final avalanche, in the manner of xxHash64; not cryptographic). */
uint64_t tp__comp_hash(const void *p, size_t n, uint64_t seed);

/* Most bytes (header included) a message of kind for count elements may
 * take, and the size of the buffer tp__comp_encode() needs. 0 for a bad
 * kind. */
size_t tp__comp_max_bytes(int kind, size_t count, const tp_cuda_comp_opts_t *o);

/* Compress g (+ residual r, updated in place; NULL: no error feedback)
 * into msg (cap >= tp__comp_max_bytes(), 8-byte aligned); *len_p bytes
 * written. seg: the sender's pipeline segment, carried in the header so
 * that a receiver cut differently refuses the message (the segment
 * decides which values each rank sends). TP_ERR_INVAL, TP_ERR_NOMEM
 * (top-k scratch). */
tp_err_t tp__comp_encode(int kind, const float *g, float *r, size_t count,
			 const tp_cuda_comp_opts_t *o, uint64_t seg, void *msg,
			 size_t cap, size_t *len_p);

/* Check the first TP__COMP_HDR bytes of a message (len >= TP__COMP_HDR)
 * against the expected kind, block, segment and count, and that its
 * payload length is possible for them; fill *h. TP_ERR_FORMAT (magic,
 * version, flags), TP_ERR_MISMATCH (kind, block, segment or count other
 * than expected, checked in that order: a segment that differs moves the
 * count too, and is the cause to name), TP_ERR_PARSE (impossible
 * lengths). why (NULL: none) gets a phrase naming the field and both
 * values. */
tp_err_t tp__comp_check_header(const void *msg, size_t len, int kind,
			       size_t count, const tp_cuda_comp_opts_t *o,
			       uint64_t seg, tp__comp_hdr_t *h, char *why,
			       size_t why_len);

/* The call's header alone (TP__COMP_HDR bytes into msg, 8-byte aligned;
 * no payload, nnz 0): what ranks that run a dense stage together swap
 * before it (algo/comp.c), since a dense stage carries no header and
 * ranks that cut the buffer differently would wait there for bytes that
 * never come. */
void tp__comp_encode_call(int kind, size_t count, const tp_cuda_comp_opts_t *o,
			  uint64_t seg, void *msg);

/* Check a call header (TP__COMP_HDR bytes) as tp__comp_check_header()
 * does, naming it "call header"; TP_ERR_PARSE for a payload or a bad
 * checksum. */
tp_err_t tp__comp_check_call(const void *msg, int kind, size_t count,
			     const tp_cuda_comp_opts_t *o, uint64_t seg,
			     char *why, size_t why_len);

/* Check a whole message (len bytes, 4-byte aligned) as above plus its
 * length, checksum and indices; then out[i] += its value i (overwrite:
 * out[i] = value i). Nothing is written unless the whole message is
 * good. */
tp_err_t tp__comp_decode(const void *msg, size_t len, int kind, size_t count,
			 const tp_cuda_comp_opts_t *o, uint64_t seg, float *out,
			 int overwrite, char *why, size_t why_len);

#endif
