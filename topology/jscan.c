/* Flat-token JSON reader for fabric files (see jscan_int.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jscan_int.h"

/* Nesting deeper than this is no fabric file (and would only serve to
 * exhaust memory on hostile input). */
#define MAX_DEPTH 64

static inline tp_err_t push_tok(tp__jdoc_t *d, uint8_t type, uint32_t *idx)
{
	if (d->ntok >= d->captok) {
		void *p = d->tok;
		if (d->ntok >= UINT32_MAX - 1 ||
		    tp_grow(&p, &d->captok, d->ntok + 1, sizeof(tp__jtok_t)))
			return TP_ERR_NOMEM;
		d->tok = p;
	}
	d->tok[d->ntok] = (tp__jtok_t){.size = (uint32_t)type << 27};
	*idx = (uint32_t)d->ntok++;
	return TP_OK;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Unescape the string starting after the quote at *pos, in place; the
 * decoded text never outgrows the escaped one. */
static bool scan_string(char *t, size_t len, size_t *pos)
{
	size_t i = *pos, o;

	/* most strings hold no escapes: skip to the first special byte */
	while (i < len && t[i] != '"' && t[i] != '\\' &&
	       (unsigned char)t[i] >= 0x20)
		i++;
	o = i;
	while (i < len && t[i] != '"') {
		unsigned char c = (unsigned char)t[i];
		if (c < 0x20)
			return false;
		if (c != '\\') {
			t[o++] = t[i++];
			continue;
		}
		if (++i >= len)
			return false;
		switch (t[i]) {
		case '"':
		case '\\':
		case '/':
			t[o++] = t[i++];
			break;
		case 'b':
			t[o++] = '\b';
			i++;
			break;
		case 'f':
			t[o++] = '\f';
			i++;
			break;
		case 'n':
			t[o++] = '\n';
			i++;
			break;
		case 'r':
			t[o++] = '\r';
			i++;
			break;
		case 't':
			t[o++] = '\t';
			i++;
			break;
		case 'u': {
			uint32_t cp = 0;
			if (i + 4 >= len)
				return false;
			for (int k = 1; k <= 4; k++) {
				int h = hexval(t[i + k]);
				if (h < 0)
					return false;
				cp = cp << 4 | (uint32_t)h;
			}
			i += 5;
			if (cp >= 0xd800 && cp < 0xdc00 && i + 5 < len &&
			    t[i] == '\\' && t[i + 1] == 'u') {
				uint32_t lo = 0;
				int k;
				for (k = 2; k <= 5; k++) {
					int h = hexval(t[i + k]);
					if (h < 0)
						break;
					lo = lo << 4 | (uint32_t)h;
				}
				if (k == 6 && lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					     (lo - 0xdc00);
					i += 6;
				}
			}
			if (cp == 0)
				return false; /* NUL would cut the string */
			o += put_utf8(t + o, cp);
			break;
		}
		default:
			return false;
		}
	}
	if (i >= len)
		return false;
	t[o] = '\0';
	*pos = i + 1;
	return true;
}

/* Past one or more decimal digits at *pos: false when there are none. */
static bool digits(const char *t, size_t len, size_t *pos)
{
	size_t i = *pos;

	while (i < len && t[i] >= '0' && t[i] <= '9')
		i++;
	if (i == *pos)
		return false;
	*pos = i;
	return true;
}

static bool scan_number(const char *t, size_t len, size_t *pos, double *v)
{
	size_t i = *pos;
	char num[64], *end;
	size_t n;
	bool neg = t[i] == '-';

	/* integers are most of a fabric file: convert them without strtod */
	if (neg)
		i++;
	if (i < len && t[i] >= '1' && t[i] <= '9') {
		size_t j = i;
		uint64_t x = 0;
		while (j < len && j - i < 15 && t[j] >= '0' && t[j] <= '9')
			x = x * 10 + (uint64_t)(t[j++] - '0');
		/* anything that may continue a number goes the slow way,
		 * which refuses "12-" at the number as it does "1.5-" */
		if (j >= len ||
		    (t[j] != '.' && t[j] != 'e' && t[j] != 'E' && t[j] != '+' &&
		     t[j] != '-' && (t[j] < '0' || t[j] > '9'))) {
			*v = neg ? -(double)x : (double)x;
			*pos = j;
			return true;
		}
	}
	/* JSON's grammar, stricter than strtod's: no leading zero ("01"),
	 * digits on both sides of a point ("1.", ".5" are not numbers) */
	i = *pos + neg;
	if (i < len && t[i] == '0')
		i++;
	else if (!digits(t, len, &i))
		return false;
	if (i < len && t[i] == '.') {
		i++;
		if (!digits(t, len, &i))
			return false;
	}
	if (i < len && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		if (i < len && (t[i] == '+' || t[i] == '-'))
			i++;
		if (!digits(t, len, &i))
			return false;
	}
	/* "01", "1.5.2": refused at the number, not at what follows */
	if (i < len &&
	    ((t[i] >= '0' && t[i] <= '9') || t[i] == '.' || t[i] == 'e' ||
	     t[i] == 'E' || t[i] == '+' || t[i] == '-'))
		return false;
	n = i - *pos;
	if (n >= sizeof(num))
		return false;
	memcpy(num, t + *pos, n);
	num[n] = '\0';
	*v = tp_strtod_c(num, &end);
	if (*end)
		return false;
	*pos = i;
	return true;
}

static bool literal(const char *t, size_t len, size_t *pos, const char *w)
{
	size_t n = strlen(w);

	if (len - *pos < n || memcmp(t + *pos, w, n))
		return false;
	*pos += n;
	return true;
}

tp_err_t tp__jdoc_parse(tp__jdoc_t *d, const char *buf, size_t len)
{
	char *copy;

	memset(d, 0, sizeof(*d));
	if (len >= UINT32_MAX)
		return TP_ERR_RANGE;
	if (!(copy = tp_malloc(len + 1)))
		return TP_ERR_NOMEM;
	memcpy(copy, buf, len);
	return tp__jdoc_parse_owned(d, copy, len);
}

static const char depth_msg[] = "nesting deeper than 64";
static const char twice_msg[] = "key given twice";

/* The token of a key that object obj (closed) names twice, else
 * TP_J_NONE. Pairwise for the few keys of a fabric item, through a hash
 * set for more (a hostile object of a million keys stays linear). */
static uint32_t twice_key(tp__jdoc_t *d, uint32_t obj, tp_err_t *err)
{
	uint32_t n = TP__JCOUNT(&d->tok[obj]), k = obj + 1, few[16];
	const char *text = d->text;
	tp_strmap_t seen = {0};

	*err = TP_OK;
	for (uint32_t i = 0; i < n; i++, k = d->tok[k + 1].next) {
		const char *name = text + d->tok[k].v.str;
		if (n <= 16) {
			for (uint32_t j = 0; j < i; j++) {
				const char *o = text + d->tok[few[j]].v.str;
				if (o[0] == name[0] && !strcmp(o, name))
					return k;
			}
			few[i] = k;
			continue;
		}
		if (tp_strmap_get(&seen, name) != TP_MAP_NONE)
			break;
		if (tp_strmap_put(&seen, name, k)) {
			*err = TP_ERR_NOMEM;
			break;
		}
	}
	tp_strmap_clear(&seen);
	return n > 16 && k != d->tok[obj].next && !*err ? k : TP_J_NONE;
}

/* Tokenise d->text (len bytes), reusing d->tok's capacity. */
static tp_err_t parse_text(tp__jdoc_t *d, size_t len)
{
	uint32_t stack[MAX_DEPTH];
	int depth = 0;
	size_t i = 0;
	/* counted as white space is skipped: a raw newline is nowhere else,
	 * and behind i strings are unescaped in place ("\\n" became a
	 * newline byte there) */
	size_t line = 1;
	bool want_value = true, done = false;
	char *t = d->text;
	tp_err_t err;

	d->ntok = 0;
	d->errline = d->erroff = 0;
	d->errmsg = "not valid JSON";
	d->errkey = TP_J_NONE;
	t[len] = '\0';
	for (;;) {
		while (i < len && (t[i] == ' ' || t[i] == '\t' ||
				   t[i] == '\n' || t[i] == '\r'))
			line += t[i++] == '\n';
		if (i >= len)
			break;
		if (done)
			goto bad;
		char c = t[i];
		uint32_t idx, top = depth ? stack[depth - 1] : TP_J_NONE;
		bool in_obj = depth && TP__JTYPE(&d->tok[top]) == TP_J_OBJ;
		if (c == '}' || c == ']') {
			if (!depth || (c == '}') != in_obj)
				goto bad;
			/* "[1,]" and "{"a":}" leave a value pending */
			if (want_value && (d->tok[top].size & 0x87ffffffu))
				goto bad;
			d->tok[top].next = (uint32_t)d->ntok;
			if (c == '}' && TP__JCOUNT(&d->tok[top]) > 1) {
				uint32_t k = twice_key(d, top, &err);
				if (err)
					return err;
				if (k != TP_J_NONE) {
					d->errmsg = twice_msg;
					d->errkey = d->tok[k].v.str;
					goto bad;
				}
			}
			depth--;
			i++;
			want_value = false;
			if (!depth)
				done = true;
			continue;
		}
		if (!want_value) {
			if (c != ',' || !depth)
				goto bad;
			i++;
			want_value = true;
			continue;
		}
		/* a value (or, inside an object, a key then ':') */
		/* the container's top size bit marks "key read, value due" */
		bool is_key = in_obj && !(d->tok[top].size & 0x80000000u);
		if (is_key && c != '"')
			goto bad;
		uint8_t type = c == '{'	  ? TP_J_OBJ
			       : c == '[' ? TP_J_ARR
			       : c == '"' ? TP_J_STR
			       : c == 't' ? TP_J_TRUE
			       : c == 'f' ? TP_J_FALSE
			       : c == 'n' ? TP_J_NULL
					  : TP_J_NUM;
		if ((err = push_tok(d, type, &idx)))
			return err;
		d->tok[idx].next = idx + 1;
		switch (type) {
		case TP_J_OBJ:
		case TP_J_ARR:
			if (depth == MAX_DEPTH) {
				d->errmsg = depth_msg;
				goto bad;
			}
			i++;
			break;
		case TP_J_STR: {
			size_t start = ++i;
			if (!scan_string(t, len, &i))
				goto bad;
			d->tok[idx].v.str = (uint32_t)start;
			break;
		}
		case TP_J_TRUE:
			if (!literal(t, len, &i, "true"))
				goto bad;
			break;
		case TP_J_FALSE:
			if (!literal(t, len, &i, "false"))
				goto bad;
			break;
		case TP_J_NULL:
			if (!literal(t, len, &i, "null"))
				goto bad;
			break;
		default:
			if (!scan_number(t, len, &i, &d->tok[idx].v.num))
				goto bad;
		}
		if (is_key) {
			while (i < len && (t[i] == ' ' || t[i] == '\t' ||
					   t[i] == '\n' || t[i] == '\r'))
				line += t[i++] == '\n';
			if (i >= len || t[i] != ':')
				goto bad;
			i++;
			/* flag: the key is read, its value comes next */
			d->tok[top].size |= 0x80000000u;
			want_value = true;
		} else {
			if (depth) {
				d->tok[top].size &= ~0x80000000u;
				if (TP__JCOUNT(&d->tok[top]) == 0x07ffffffu)
					goto bad;
				d->tok[top].size++;
			}
			want_value = false;
			if (type == TP_J_OBJ || type == TP_J_ARR) {
				stack[depth++] = idx;
				want_value = true;
			} else if (!depth) {
				done = true;
			}
		}
	}
	if (!done)
		goto bad;
	return TP_OK;
bad:
	d->errline = line;
	d->erroff = i;
	return TP_ERR_PARSE;
}

tp_err_t tp__jdoc_parse_owned(tp__jdoc_t *d, char *buf, size_t len)
{
	memset(d, 0, sizeof(*d));
	d->text = buf;
	if (len >= UINT32_MAX)
		return TP_ERR_RANGE;
	/* about one token per 8 bytes in fabric files: grow rarely */
	d->captok = len / 8 + 16;
	if (!(d->tok = tp_malloc(d->captok * sizeof(tp__jtok_t))))
		return TP_ERR_NOMEM;
	return parse_text(d, len);
}

void tp__jdoc_free(tp__jdoc_t *d)
{
	tp_free(d->text);
	tp_free(d->tok);
	memset(d, 0, sizeof(*d));
}

uint32_t tp__jget(const tp__jdoc_t *d, uint32_t obj, const char *key)
{
	if (tp__jtype(d, obj) != TP_J_OBJ)
		return TP_J_NONE;
	for (uint32_t k = tp__jfirst(d, obj); k != TP_J_NONE;
	     k = tp__jnext(d, k, true, obj)) {
		const char *name = d->text + d->tok[k].v.str;
		if (name[0] == key[0] && !strcmp(name, key))
			return k + 1;
	}
	return TP_J_NONE;
}

void tp__jgetv(const tp__jdoc_t *d, uint32_t obj, const char *const *keys,
	       size_t n, uint32_t *vals)
{
	size_t pos = 0;

	for (size_t i = 0; i < n; i++)
		vals[i] = TP_J_NONE;
	if (tp__jtype(d, obj) != TP_J_OBJ)
		return;
	for (uint32_t k = tp__jfirst(d, obj); k != TP_J_NONE;
	     k = tp__jnext(d, k, true, obj), pos++) {
		const char *name = d->text + d->tok[k].v.str;
		if (pos < n && !strcmp(name, keys[pos])) {
			vals[pos] = k + 1;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (name[0] == keys[i][0] && !strcmp(name, keys[i])) {
				vals[i] = k + 1;
				break;
			}
	}
}

/* ---- streaming ---- */

#define WIN_MIN 65536

static const char nul_msg[] = "binary data (NUL byte) in JSON";
static const char bad_msg[] = "not valid JSON";

void tp__jstream_mem(tp__jstream_t *s, const char *mem, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->mem = mem;
	s->memlen = s->wlen = len;
	s->size = len;
	s->line = 1;
}

void tp__jstream_fd(tp__jstream_t *s, int fd, uint64_t size)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->size = size;
	s->line = 1;
}

void tp__jstream_free(tp__jstream_t *s)
{
	tp_free(s->win);
	tp_free(s->item.text);
	tp_free(s->item.tok);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

static const char *sbuf(const tp__jstream_t *s)
{
	return s->fd < 0 ? s->mem : s->win;
}

/* More of the file after the window, keeping the bytes from pin on: the
 * byte at off, -1 at the end, -2 on a read error (ioerr). */
static int refill(tp__jstream_t *s)
{
	size_t drop = (size_t)(s->pin - s->woff);
	ssize_t n;

	if (s->fd < 0)
		return -1;
	if (drop) {
		memmove(s->win, s->win + drop, s->wlen - drop);
		s->woff += drop;
		s->wlen -= drop;
	}
	if (s->wlen == s->wcap) {
		void *p = s->win;
		if (tp_grow(&p, &s->wcap,
			    s->wlen < WIN_MIN ? WIN_MIN : s->wlen + 1, 1)) {
			s->ioerr = TP_ERR_NOMEM;
			return -2;
		}
		s->win = p;
	}
	do
		n = pread(s->fd, s->win + s->wlen, s->wcap - s->wlen,
			  (off_t)(s->woff + s->wlen));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		s->ioerr = TP_ERR_IO;
		return -2;
	}
	if (n == 0)
		return -1;
	s->wlen += (size_t)n;
	return (unsigned char)s->win[s->off - s->woff];
}

static inline int peek(tp__jstream_t *s)
{
	if (s->off - s->woff < s->wlen)
		return (unsigned char)sbuf(s)[s->off - s->woff];
	return refill(s);
}

/* Past white space; the next byte (peek's values). What lies before
 * is done with: the window may drop it. */
static int skip_ws(tp__jstream_t *s)
{
	int c;

	while ((c = peek(s)) == ' ' || c == '\t' || c == '\n' || c == '\r') {
		s->line += c == '\n';
		s->off++;
	}
	s->pin = s->off;
	return c;
}

static tp_err_t bad(tp__jstream_t *s, const char *msg)
{
	if (s->ioerr)
		return s->ioerr;
	s->errline = s->line;
	s->erroff = s->off;
	s->errmsg = peek(s) == 0 ? nul_msg : msg;
	s->errkey = NULL;
	return TP_ERR_PARSE;
}

/* Past the value at off, by its extent only (strings, bracket balance):
 * the parser checks it. *nitems_p (may be NULL): an array's members.
 * keep: the window keeps the value's bytes (else only the last one). */
static tp_err_t value_end(tp__jstream_t *s, size_t *nitems_p, bool keep)
{
	size_t depth, commas = 0;
	bool str, esc = false, empty = true, arr;
	int c = peek(s);

	if (nitems_p)
		*nitems_p = 0;
	if (c != '{' && c != '[' && c != '"') {
		/* a number or a literal: up to the next delimiter */
		while ((c = peek(s)) > 0 && !strchr(",]} \t\r\n", c))
			s->off++;
		if (c == 0)
			return bad(s, nul_msg);
		return s->off == s->pin || c == -2 ? bad(s, bad_msg) : TP_OK;
	}
	str = c == '"';
	arr = c == '[';
	depth = !str; /* a string value ends at depth 0 */
	s->off++;
	for (;;) {
		if (!keep)
			s->pin = s->off;
		if ((c = peek(s)) < 0)
			return bad(s, bad_msg); /* cut short */
		if (c == 0)
			return bad(s, nul_msg);
		s->off++;
		s->line += c == '\n';
		if (str) {
			if (esc) {
				esc = false;
			} else if (c == '\\') {
				esc = true;
			} else if (c == '"') {
				str = false;
				if (!depth)
					break; /* the value was this string */
			}
			continue;
		}
		switch (c) {
		case ' ':
		case '\t':
		case '\n':
		case '\r':
			continue;
		case '"':
			str = true;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (--depth == 0)
				goto done;
			break;
		case ',':
			commas += depth == 1;
			break;
		}
		empty = false;
	}
done:
	if (nitems_p && arr && !empty)
		*nitems_p = commas + 1;
	return TP_OK;
}

/* Read the value at off into s->item. */
static tp_err_t parse_value(tp__jstream_t *s)
{
	size_t line = s->line, len;
	uint64_t start = s->off;
	tp_err_t err;

	s->pin = start;
	if ((err = value_end(s, NULL, true)))
		return err;
	len = (size_t)(s->off - start);
	if (len >= UINT32_MAX)
		return TP_ERR_RANGE;
	if (len + 1 > s->itemcap) {
		void *p = s->item.text;
		if (tp_grow(&p, &s->itemcap, len + 1, 1))
			return TP_ERR_NOMEM;
		s->item.text = p;
	}
	memcpy(s->item.text, sbuf(s) + (start - s->woff), len);
	s->pin = s->off;
	err = parse_text(&s->item, len);
	if (err == TP_ERR_PARSE) {
		s->errline = line + s->item.errline - 1;
		s->erroff = start + s->item.erroff;
		s->errmsg = s->item.errmsg;
		s->errkey = s->item.errkey == TP_J_NONE
				? NULL
				: s->item.text + s->item.errkey;
	}
	return err;
}

static void seek(tp__jstream_t *s, const tp__jmark_t *m)
{
	s->off = s->pin = m->off;
	s->line = m->line;
	if (s->fd >= 0) {
		s->woff = m->off;
		s->wlen = 0;
	}
}

tp_err_t tp__jstream_value(tp__jstream_t *s, const tp__jmark_t *mark,
			   const tp__jdoc_t **d_p)
{
	tp_err_t err;

	seek(s, mark);
	if ((err = parse_value(s)))
		return err;
	*d_p = &s->item;
	return TP_OK;
}

static tp_err_t open_array(tp__jstream_t *s)
{
	if (peek(s) != '[')
		return s->ioerr ? s->ioerr : TP_ERR_FORMAT;
	s->off++;
	s->first = true;
	return TP_OK;
}

tp_err_t tp__jstream_array(tp__jstream_t *s, const tp__jmark_t *mark)
{
	seek(s, mark);
	return open_array(s);
}

tp_err_t tp__jstream_next(tp__jstream_t *s, const tp__jdoc_t **d_p)
{
	int c = skip_ws(s);
	tp_err_t err;

	*d_p = NULL;
	if (c == ']') {
		s->off++;
		return TP_OK;
	}
	if (!s->first) {
		if (c != ',')
			return bad(s, bad_msg);
		s->off++;
		skip_ws(s);
	}
	s->first = false;
	if ((err = parse_value(s)))
		return err;
	*d_p = &s->item;
	return TP_OK;
}

/* A member nobody reads: checked all the same, an array item by item. */
static tp_err_t check_value(tp__jstream_t *s)
{
	const tp__jdoc_t *d;
	tp_err_t err;

	if (open_array(s))
		return s->ioerr ? s->ioerr : parse_value(s);
	while (!(err = tp__jstream_next(s, &d)) && d)
		;
	return err;
}

/* A top-level key seen before (the other keys: copies in a set). */
typedef struct keyset {
	tp_strmap_t map;
	char **name;
	size_t n, cap;
} keyset_t;

static tp_err_t keyset_add(keyset_t *ks, const char *key, bool *twice_p)
{
	void *p = ks->name;
	char *copy;

	*twice_p = tp_strmap_get(&ks->map, key) != TP_MAP_NONE;
	if (*twice_p)
		return TP_OK;
	if (tp_grow(&p, &ks->cap, ks->n + 1, sizeof(char *)))
		return TP_ERR_NOMEM;
	ks->name = p;
	if (!(copy = tp_strdup(key)))
		return TP_ERR_NOMEM;
	ks->name[ks->n] = copy;
	if (tp_strmap_put(&ks->map, copy, (uint32_t)ks->n)) {
		tp_free(copy);
		return TP_ERR_NOMEM;
	}
	ks->n++;
	return TP_OK;
}

static void keyset_free(keyset_t *ks)
{
	tp_strmap_clear(&ks->map);
	for (size_t i = 0; i < ks->n; i++)
		tp_free(ks->name[i]);
	tp_free(ks->name);
}

/* The top-level object's members, from its first key on. */
static tp_err_t index_members(tp__jstream_t *s, const char *const *keys,
			      size_t n, tp__jmark_t *marks, keyset_t *others)
{
	tp_err_t err;
	int c = skip_ws(s);

	for (;;) {
		size_t k = 0, line = s->line;
		uint64_t at = s->off;
		bool twice;
		if (c != '"')
			return bad(s, bad_msg);
		if ((err = parse_value(s)))
			return err;
		const char *key = tp__jstr(&s->item, 0);
		while (k < n && strcmp(key, keys[k]))
			k++;
		if (k < n)
			twice = marks[k].found;
		else if ((err = keyset_add(others, key, &twice)))
			return err;
		if (twice) {
			s->errline = line;
			s->erroff = at;
			s->errmsg = twice_msg;
			s->errkey = key;
			return TP_ERR_PARSE;
		}
		if (skip_ws(s) != ':')
			return bad(s, bad_msg);
		s->off++;
		skip_ws(s);
		if (k < n) {
			marks[k] = (tp__jmark_t){s->off, 0, s->line, 0, true};
			err = value_end(s, &marks[k].nitems, false);
			marks[k].end = s->off;
		} else {
			err = check_value(s);
		}
		if (err)
			return err;
		if ((c = skip_ws(s)) == '}') {
			s->off++;
			return TP_OK;
		}
		if (c != ',')
			return bad(s, bad_msg);
		s->off++;
		c = skip_ws(s);
	}
}

/* Past a UTF-8 byte order mark at the start (a file saved by a Windows
 * editor), which the other readers and cJSON skip too. */
static void skip_bom(tp__jstream_t *s)
{
	static const unsigned char bom[] = {0xef, 0xbb, 0xbf};

	if (s->off)
		return;
	for (size_t k = 0; k < sizeof(bom); k++, s->off++)
		if (peek(s) != bom[k]) {
			s->off = 0;
			return;
		}
}

tp_err_t tp__jstream_index(tp__jstream_t *s, const char *const *keys, size_t n,
			   tp__jmark_t *marks)
{
	keyset_t others = {0};
	tp_err_t err;
	int c;

	memset(marks, 0, n * sizeof(*marks));
	skip_bom(s);
	if ((c = skip_ws(s)) != '{') {
		/* valid JSON but no object finds nothing */
		err = c < 0 ? bad(s, bad_msg) : parse_value(s);
	} else {
		s->off++;
		if (skip_ws(s) == '}') {
			s->off++;
			err = TP_OK;
		} else {
			err = index_members(s, keys, n, marks, &others);
		}
	}
	keyset_free(&others);
	if (err)
		return err;
	return skip_ws(s) == -1 ? TP_OK : bad(s, bad_msg);
}
