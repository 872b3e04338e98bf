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
	uint32_t next; /* token after this value's subtree */
	uint32_t size; /* members (objects: key/value pairs), see TP__JSIZE */
	union {
		double num;
		uint32_t str; /* offset of the NUL-terminated text */
	} v;
} tp__jtok_t;

/* size packs the member count (low 27 bits), the type (bits 27-30) and,
 * while parsing, a "key read, value due" flag (bit 31). */
#define TP__JCOUNT(t) ((t)->size & 0x07ffffffu)
#define TP__JTYPE(t)  (((t)->size >> 27) & 0xfu)

typedef struct tp__jdoc {
	char *text; /* private copy, strings unescaped in place */
	tp__jtok_t *tok;
	size_t ntok, captok;
	size_t errline;	    /* on failure: line of the error (1-based) */
	size_t erroff;	    /* on failure: its byte offset in the text */
	const char *errmsg; /* static */
	uint32_t errkey;    /* a key given twice in one object: its text
			     * offset (errmsg says so), else TP_J_NONE */
} tp__jdoc_t;

#define TP_J_NONE UINT32_MAX

/* Parse len bytes of buf (need not be NUL-terminated). TP_ERR_PARSE
 * with errline/erroff/errmsg (and errkey) set, or TP_ERR_NOMEM; an
 * object naming one key twice is a parse error (which was meant is
 * unknown). Free with tp__jdoc_free. */
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

/* ---- streaming: one top-level object, its big arrays item by item ----
 *
 * A fabric file is one object whose arrays (cables, CAs, hosts) are most
 * of it. The stream never holds more than one member's item: a first pass
 * (tp__jstream_index) finds where the wanted members start and checks
 * the rest, then the caller seeks to each member in the order it needs
 * and reads it one item at a time, each as a small document of its own.
 * So a 16,384-host fabric loads in a few hundred KiB beyond the fabric
 * itself, where the whole text and its tokens took ~150 MB (the SPANK
 * plugin loads one per step, as root in slurmstepd). */

/* Where a wanted member's value starts; items counted for arrays. */
typedef struct tp__jmark {
	uint64_t off, end; /* the value's bytes: [off, end) */
	size_t line;
	size_t nitems; /* members of an array value, else 0 */
	bool found;
} tp__jmark_t;

typedef struct tp__jstream {
	int fd;		 /* a regular file read with pread, or -1: mem */
	const char *mem; /* the whole text (fd -1) */
	size_t memlen;
	char *win; /* fd: bytes from woff, wlen of them */
	size_t wcap, wlen;
	uint64_t woff, off, pin; /* pin: start of the value being read */
	uint64_t size;
	size_t line;	 /* line of off (1-based) */
	bool first;	 /* inside an array: no item read yet */
	tp__jdoc_t item; /* the last value read; buffers reused */
	size_t itemcap;
	tp_err_t ioerr;
	size_t errline;	    /* on TP_ERR_PARSE: the line, */
	uint64_t erroff;    /* the byte offset in the file, */
	const char *errmsg; /* what (static), */
	const char *errkey; /* a key given twice, or NULL (borrowed from
			     * item or keys, valid until the next call) */
} tp__jstream_t;

/* Over len bytes of mem (borrowed) or over a regular file's fd (borrowed,
 * size bytes). Free with tp__jstream_free. */
void tp__jstream_mem(tp__jstream_t *s, const char *mem, size_t len);
void tp__jstream_fd(tp__jstream_t *s, int fd, uint64_t size);
void tp__jstream_free(tp__jstream_t *s);
/* The first pass: the text must be one object; for each of the n keys
 * its member's place into marks[i] (found false when absent). Other
 * members are checked in full; wanted ones only for balance (the caller
 * reads them). A key given twice at the top level is TP_ERR_PARSE with
 * errkey set. TP_ERR_PARSE (errline, erroff, errmsg), NOMEM, IO. A text
 * that is valid JSON but no object finds nothing. A UTF-8 byte order mark
 * before the object is skipped (erroff still counts its bytes). */
tp_err_t tp__jstream_index(tp__jstream_t *s, const char *const *keys, size_t n,
			   tp__jmark_t *marks);
/* Read the value at mark as one document into *d_p (borrowed until the
 * next call). */
tp_err_t tp__jstream_value(tp__jstream_t *s, const tp__jmark_t *mark,
			   const tp__jdoc_t **d_p);
/* Start reading the array at mark: TP_ERR_FORMAT when the value is no
 * array. Then tp__jstream_next gives each item as a document (root token
 * 0) into *d_p, NULL after the last. */
tp_err_t tp__jstream_array(tp__jstream_t *s, const tp__jmark_t *mark);
tp_err_t tp__jstream_next(tp__jstream_t *s, const tp__jdoc_t **d_p);

#endif
