/*
 * jscan_int.h - private to topology/: a small, fast JSON reader for
 * fabric files. One pass turns the text into a flat token array (no
 * allocation per value); strings are unescaped in place in a private copy
 * of the text, numbers converted once. A 65,536-host fabric (~30 MB) reads
 * several times faster than through a DOM library.
 */
#ifndef TP_JSCAN_INT_H
#define TP_JSCAN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_common.h"

typedef enum tp__jtype {
	TP_J_OBJ,
	TP_J_ARR,
	TP_J_STR,
	TP_J_NUM,
	TP_J_TRUE,
	TP_J_FALSE,
	TP_J_NULL,
} tp__jtype_t;

/* 16 bytes: a 30 MB file makes a few million of these. */
typedef struct tp__jtok {
	uint32_t next;  /* token after this value's subtree */
	uint32_t size;  /* members (objects: key/value pairs), see TP__JSIZE */
	union {
		double num;
		uint32_t str; /* offset of the NUL-terminated text */
	} v;
} tp__jtok_t;

/* size packs the member count (low 27 bits), the type (bits 27-30) and,
 * while parsing, a "key read, value due" flag (bit 31). */
#define TP__JCOUNT(t) ((t)->size & 0x07ffffffu)
#define TP__JTYPE(t) (((t)->size >> 27) & 0xfu)

typedef struct tp__jdoc {
	char *text;      /* private copy, strings unescaped in place */
	tp__jtok_t *tok;
	size_t ntok, captok;
	size_t errline;  /* on failure: line of the error (1-based) */
	const char *errmsg; /* static */
} tp__jdoc_t;

#define TP_J_NONE UINT32_MAX

/* Parse len bytes of buf (need not be NUL-terminated). TP_ERR_PARSE
 * with errline/errmsg set, or TP_ERR_NOMEM. Free with tp__jdoc_free. */
tp_err_t tp__jdoc_parse(tp__jdoc_t *d, const char *buf, size_t len);
/* Same, taking ownership of buf (len + 1 bytes, allocated with
 * tp_malloc): no copy. buf is freed by tp__jdoc_free even on error. */
tp_err_t tp__jdoc_parse_owned(tp__jdoc_t *d, char *buf, size_t len);
void tp__jdoc_free(tp__jdoc_t *d);

static inline int tp__jtype(const tp__jdoc_t *d, uint32_t v)
{
	return v == TP_J_NONE ? -1 : (int)TP__JTYPE(&d->tok[v]);
}
static inline uint32_t tp__jcount(const tp__jdoc_t *d, uint32_t v)
{
	return TP__JCOUNT(&d->tok[v]);
}
/* First member (arrays: value; objects: key, whose value is key + 1). */
static inline uint32_t tp__jfirst(const tp__jdoc_t *d, uint32_t v)
{
	return TP__JCOUNT(&d->tok[v]) ? v + 1 : TP_J_NONE;
}
/* Next member after m inside the container that ends at end. */
static inline uint32_t tp__jnext(const tp__jdoc_t *d, uint32_t m, bool obj,
				 uint32_t container)
{
	uint32_t n = obj ? d->tok[m + 1].next : d->tok[m].next;
	return n < d->tok[container].next ? n : TP_J_NONE;
}
static inline const char *tp__jstr(const tp__jdoc_t *d, uint32_t v)
{
	return tp__jtype(d, v) == TP_J_STR ? d->text + d->tok[v].v.str : NULL;
}
/* Value of key in object obj, TP_J_NONE when absent or obj no object. */
uint32_t tp__jget(const tp__jdoc_t *d, uint32_t obj, const char *key);
/* The values of n keys in one pass over obj's members (TP_J_NONE for an
 * absent key); members in the order of keys[] match at the first try. */
void tp__jgetv(const tp__jdoc_t *d, uint32_t obj, const char *const *keys,
	       size_t n, uint32_t *vals);

#endif
