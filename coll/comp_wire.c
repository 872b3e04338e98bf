/* comp_wire.c - the compressed message format (comp_wire.h).
 *
 * Notes: the header is written byte by byte in little-endian order; the
 * payload arrays are the compressors' own, copied as they are (the
 * library supports little-endian hosts only; the build stops on others).
 * Top-k encodes straight into the message: the values land after the
 * header, the indices in the message's tail, and the varints are written
 * forward from the end of the values, never overtaking the index being
 * read (a varint is at most 5 bytes, one more than the index it replaces,
 * and the tail starts count-of-entries bytes further on). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "comp_wire.h"
#include "tp_kmath.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "comp_wire.c: the compressed wire format needs a little-endian host"
#endif

static const uint64_t p1 = 0x9e3779b185ebca87ull;
static const uint64_t p2 = 0xc2b2ae3d27d4eb4full;
static const uint64_t p3 = 0x165667b19e3779f9ull;

static uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint64_t round64(uint64_t acc, uint64_t w)
{
	return rotl(acc + w * p2, 31) * p1;
}

uint64_t tp__comp_hash(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p, *end = b + n;
	uint64_t h;

	if (n >= 32) {
		uint64_t a0 = seed + p1 + p2, a1 = seed + p2, a2 = seed,
			 a3 = seed - p1;
		for (; end - b >= 32; b += 32) {
			a0 = round64(a0, rd64(b));
			a1 = round64(a1, rd64(b + 8));
			a2 = round64(a2, rd64(b + 16));
			a3 = round64(a3, rd64(b + 24));
		}
		h = rotl(a0, 1) + rotl(a1, 7) + rotl(a2, 12) + rotl(a3, 18);
	} else {
		h = seed + p3;
	}
	h += (uint64_t)n;
	for (; end - b >= 8; b += 8)
		h = rotl(h ^ round64(0, rd64(b)), 27) * p1 + p3;
	for (; b < end; b++)
		h = rotl(h ^ (*b * p3), 11) * p1;
	h ^= h >> 33;
	h *= p2;
	h ^= h >> 29;
	h *= p3;
	h ^= h >> 32;
	return h;
}

static void put(unsigned char *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static size_t nblocks(size_t count, const tp_cuda_comp_opts_t *o)
{
	return tp_cuda_nblocks(count, o);
}

/* Payload bytes of an int8 or 1-bit message (fixed by count and block). */
static size_t dense_payload(int kind, size_t count,
			    const tp_cuda_comp_opts_t *o)
{
	size_t s = nblocks(count, o) * sizeof(float);

	return kind == TP__COMP_INT8 ? s + count
				     : s + tp_cuda_1bit_words(count) * 4;
}

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

size_t tp__comp_max_bytes(int kind, size_t count, const tp_cuda_comp_opts_t *o)
{
	size_t cap;

	switch (kind) {
	case TP__COMP_INT8:
	case TP__COMP_1BIT:
		return o->block ? TP__COMP_HDR + dense_payload(kind, count, o)
				: 0;
	case TP__COMP_TOPK:
		cap = tp_cuda_topk_capacity(count, o);
		/* values, varints (<= 5 bytes) and the index tail */
		return align4(TP__COMP_HDR + 5 * cap) + 4 * cap;
	default:
		return 0;
	}
}

static void write_header(unsigned char *m, int kind, uint32_t block,
			 uint32_t nnz, uint64_t count, uint64_t payload,
			 uint64_t seg)
{
	put(m, TP__COMP_MAGIC, 4);
	m[4] = TP__COMP_VERSION;
	m[5] = (unsigned char)kind;
	put(m + 6, 0, 2);
	put(m + 8, block, 4);
	put(m + 12, nnz, 4);
	put(m + 16, count, 8);
	put(m + 24, payload, 8);
	put(m + 32, seg, 8);
	put(m + TP__COMP_CHECK,
	    tp__comp_hash(m + TP__COMP_HDR, payload,
			  tp__comp_hash(m, TP__COMP_CHECK, 0)),
	    8);
}

static size_t varint(unsigned char *p, uint32_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

static tp_err_t encode_topk(const float *g, float *r, size_t count,
			    const tp_cuda_comp_opts_t *o, uint64_t seg,
			    unsigned char *m, size_t *len_p)
{
	size_t cap = tp_cuda_topk_capacity(count, o), nnz, w;
	float *val = (float *)(void *)(m + TP__COMP_HDR);
	uint32_t *idx =
	    (uint32_t *)(void *)(m + align4(TP__COMP_HDR + 5 * cap));
	uint32_t prev = 0;
	tp_err_t err;

	err = tp_cuda_cpu_topk_compress(g, r, count, o, idx, val, &nnz);
	if (err)
		return err;
	w = TP__COMP_HDR + nnz * sizeof(float);
	for (size_t j = 0; j < nnz; j++) {
		uint32_t ix = idx[j];
		w += varint(m + w, j ? ix - prev : ix);
		prev = ix;
	}
	write_header(m, TP__COMP_TOPK, 0, (uint32_t)nnz, count,
		     w - TP__COMP_HDR, seg);
	*len_p = w;
	return TP_OK;
}

tp_err_t tp__comp_encode(int kind, const float *g, float *r, size_t count,
			 const tp_cuda_comp_opts_t *o, uint64_t seg, void *msg,
			 size_t cap, size_t *len_p)
{
	unsigned char *m = msg;
	size_t need = tp__comp_max_bytes(kind, count, o), nb, pl;
	tp_err_t err;

	if (!need || cap < need || !msg || ((uintptr_t)msg & 7) ||
	    o->block > UINT32_MAX)
		return TP_ERR_INVAL;
	if (kind == TP__COMP_TOPK)
		return encode_topk(g, r, count, o, seg, m, len_p);
	nb = nblocks(count, o);
	float *scales = (float *)(void *)(m + TP__COMP_HDR);
	if (kind == TP__COMP_INT8)
		err = tp_cuda_cpu_int8_compress(
		    g, r, count, o, (int8_t *)(void *)(scales + nb), scales);
	else
		err = tp_cuda_cpu_1bit_compress(
		    g, r, count, o, (uint32_t *)(void *)(scales + nb), scales);
	if (err)
		return err;
	pl = dense_payload(kind, count, o);
	write_header(m, kind, (uint32_t)o->block, 0, count, pl, seg);
	*len_p = TP__COMP_HDR + pl;
	return TP_OK;
}

void tp__comp_encode_call(int kind, size_t count, const tp_cuda_comp_opts_t *o,
			  uint64_t seg, void *msg)
{
	write_header(msg, kind, kind == TP__COMP_TOPK ? 0 : (uint32_t)o->block,
		     0, count, 0, seg);
}

/* err, with why (NULL: none) set to the printf-style text: the one place
 * the messages the tests match are formatted. */
static tp_err_t bad(char *why, size_t why_len, tp_err_t err, const char *fmt,
		    ...) __attribute__((format(printf, 4, 5)));

static tp_err_t bad(char *why, size_t why_len, tp_err_t err, const char *fmt,
		    ...)
{
	va_list ap;

	if (why && why_len) {
		va_start(ap, fmt);
		vsnprintf(why, why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* Magic, version, flags and the fields that must agree, in the order
 * comp_wire.h gives; fills *h. */
static tp_err_t check_fields(const unsigned char *m, const char *what, int kind,
			     size_t count, const tp_cuda_comp_opts_t *o,
			     uint64_t seg, tp__comp_hdr_t *h, char *why,
			     size_t why_len)
{
	uint64_t block = kind == TP__COMP_TOPK ? 0 : o->block;

	if (get(m, 4) != TP__COMP_MAGIC || m[4] != TP__COMP_VERSION ||
	    get(m + 6, 2) != 0)
		return bad(why, why_len, TP_ERR_FORMAT,
			   "not a compressed message of version 2");
	h->kind = m[5];
	h->block = (uint32_t)get(m + 8, 4);
	h->nnz = (uint32_t)get(m + 12, 4);
	h->count = get(m + 16, 8);
	h->payload = get(m + 24, 8);
	h->segment = get(m + 32, 8);
	/* the sender's value of each, and this rank's */
	const struct {
		const char *name;
		uint64_t theirs, ours;
	} f[] = {{"kind", (uint64_t)h->kind, (uint64_t)kind},
		 {"block", h->block, block},
		 {"segment", h->segment, seg},
		 {"count", h->count, count}};
	static const char *const kinds[] = {"?", "int8", "1bit", "topk"};
	if (h->kind != kind)
		return bad(
		    why, why_len, TP_ERR_MISMATCH,
		    "%s with kind %s, this rank's %s", what,
		    kinds[h->kind <= TP__COMP_TOPK ? h->kind : 0],
		    kinds[kind >= 0 && kind <= TP__COMP_TOPK ? kind : 0]);
	for (size_t i = 1; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].theirs != f[i].ours)
			return bad(why, why_len, TP_ERR_MISMATCH,
				   "%s with %s %llu, this rank's %llu", what,
				   f[i].name, (unsigned long long)f[i].theirs,
				   (unsigned long long)f[i].ours);
	return TP_OK;
}

tp_err_t tp__comp_check_header(const void *msg, size_t len, int kind,
			       size_t count, const tp_cuda_comp_opts_t *o,
			       uint64_t seg, tp__comp_hdr_t *h, char *why,
			       size_t why_len)
{
	const unsigned char *m = msg;
	size_t max = tp__comp_max_bytes(kind, count, o);
	tp_err_t err;

	if (len < TP__COMP_HDR)
		return bad(why, why_len, TP_ERR_PARSE,
			   "compressed message truncated in its header");
	err = check_fields(m, "compressed message", kind, count, o, seg, h, why,
			   why_len);
	if (err)
		return err;
	if (!max || h->payload > max - TP__COMP_HDR ||
	    (kind != TP__COMP_TOPK &&
	     (h->nnz || h->payload != dense_payload(kind, count, o))) ||
	    (kind == TP__COMP_TOPK &&
	     (h->nnz > tp_cuda_topk_capacity(count, o) ||
	      h->payload < (uint64_t)h->nnz * 5 ||
	      h->payload > (uint64_t)h->nnz * 9)))
		return bad(why, why_len, TP_ERR_PARSE,
			   "compressed message with impossible lengths");
	return TP_OK;
}

/* Indices of a top-k payload: strictly increasing, below count, exactly
 * nnz varints filling the bytes, each in its shortest form (a last byte
 * of 0 after others would spell the same gap longer: one message, one
 * encoding). apply: accumulate val into out. */
static tp_err_t walk_topk(const unsigned char *p, size_t n, uint32_t nnz,
			  const float *val, size_t count, float *out, int apply)
{
	size_t at = 0;
	uint64_t ix = 0;

	for (uint32_t j = 0; j < nnz; j++) {
		uint64_t d = 0;
		int sh = 0;
		for (;;) {
			if (at >= n || sh > 28)
				return TP_ERR_PARSE;
			d |= (uint64_t)(p[at] & 0x7f) << sh;
			sh += 7;
			if (!(p[at++] & 0x80)) {
				if (sh > 7 && p[at - 1] == 0)
					return TP_ERR_PARSE;
				break;
			}
		}
		if (j && d == 0)
			return TP_ERR_PARSE;
		ix += d;
		if (ix >= count)
			return TP_ERR_PARSE;
		if (apply)
			out[ix] = tp_km_add(out[ix], val[j]);
	}
	return at == n ? TP_OK : TP_ERR_PARSE;
}

tp_err_t tp__comp_decode(const void *msg, size_t len, int kind, size_t count,
			 const tp_cuda_comp_opts_t *o, uint64_t seg, float *out,
			 int overwrite, char *why, size_t why_len)
{
	const unsigned char *m = msg;
	tp__comp_hdr_t h;
	tp_err_t err;

	if (!msg || ((uintptr_t)msg & 3) || (count && !out))
		return bad(why, why_len, TP_ERR_INVAL, "bad arguments");
	err = tp__comp_check_header(msg, len, kind, count, o, seg, &h, why,
				    why_len);
	if (err)
		return err;
	if (len - TP__COMP_HDR != h.payload)
		return bad(why, why_len, TP_ERR_PARSE,
			   "compressed message truncated or too long");
	if (get(m + TP__COMP_CHECK, 8) !=
	    tp__comp_hash(m + TP__COMP_HDR, h.payload,
			  tp__comp_hash(m, TP__COMP_CHECK, 0)))
		return bad(why, why_len, TP_ERR_PARSE,
			   "compressed message fails its checksum");
	const float *f = (const float *)(const void *)(m + TP__COMP_HDR);
	if (kind == TP__COMP_TOPK) {
		const unsigned char *vp = m + TP__COMP_HDR + 4 * (size_t)h.nnz;
		size_t vn = h.payload - 4 * (size_t)h.nnz;
		if (walk_topk(vp, vn, h.nnz, f, count, out, 0))
			return bad(why, why_len, TP_ERR_PARSE,
				   "compressed message with bad indices");
		if (overwrite)
			memset(out, 0, count * sizeof(float));
		return walk_topk(vp, vn, h.nnz, f, count, out, 1);
	}
	if (overwrite)
		memset(out, 0, count * sizeof(float));
	size_t nb = nblocks(count, o);
	if (kind == TP__COMP_INT8)
		return tp_cuda_cpu_int8_decompress_acc(
		    (const int8_t *)(const void *)(f + nb), f, count, o, out);
	return tp_cuda_cpu_1bit_decompress_acc(
	    (const uint32_t *)(const void *)(f + nb), f, count, o, out);
}

tp_err_t tp__comp_check_call(const void *msg, int kind, size_t count,
			     const tp_cuda_comp_opts_t *o, uint64_t seg,
			     char *why, size_t why_len)
{
	const unsigned char *m = msg;
	tp__comp_hdr_t h;
	tp_err_t err;

	err = check_fields(m, "call header", kind, count, o, seg, &h, why,
			   why_len);
	if (err)
		return err;
	if (h.nnz || h.payload ||
	    get(m + TP__COMP_CHECK, 8) !=
		tp__comp_hash(m + TP__COMP_HDR, 0,
			      tp__comp_hash(m, TP__COMP_CHECK, 0)))
		return bad(why, why_len, TP_ERR_PARSE,
			   "call header with a payload or a bad checksum");
	return TP_OK;
}
