/* Replaceable allocator, strings and small buffers. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_common.h"

static tp_allocator_t alloc = {malloc, calloc, realloc, free};

void tp_alloc_set(const tp_allocator_t *a)
{
	if (a)
		alloc = *a;
	else
		alloc = (tp_allocator_t){malloc, calloc, realloc, free};
}

void *tp_malloc(size_t size)
{
	return alloc.malloc_fn(size ? size : 1);
}

void *tp_calloc(size_t n, size_t size)
{
	return alloc.calloc_fn(n ? n : 1, size ? size : 1);
}

void *tp_realloc(void *p, size_t size)
{
	return alloc.realloc_fn(p, size ? size : 1);
}

void tp_free(void *p)
{
	if (p)
		alloc.free_fn(p);
}

tp_err_t tp_grow(void **arr, size_t *cap_p, size_t need, size_t elem)
{
	size_t cap = *cap_p;
	void *p;

	if (need <= cap)
		return TP_OK;
	if (!elem)
		return TP_ERR_INVAL;
	/* no object is larger than PTRDIFF_MAX (malloc refuses it): checked
	 * first, so the doubling below cannot wrap */
	if (need > PTRDIFF_MAX / elem)
		return TP_ERR_NOMEM;
	if (cap < 8)
		cap = 8;
	while (cap < need)
		cap *= 2;
	if (cap > PTRDIFF_MAX / elem)
		cap = PTRDIFF_MAX / elem;
	p = tp_realloc(*arr, cap * elem);
	if (!p)
		return TP_ERR_NOMEM;
	*arr = p;
	*cap_p = cap;
	return TP_OK;
}

char *tp_strndup(const char *s, size_t n)
{
	char *d = tp_malloc(n + 1);

	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *tp_strdup(const char *s)
{
	return s ? tp_strndup(s, strlen(s)) : NULL;
}

char *tp_vasprintf(const char *fmt, va_list ap)
{
	va_list ap2;
	int n;
	char *s;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return NULL;
	s = tp_malloc((size_t)n + 1);
	if (!s)
		return NULL;
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

/* A UTF-8 character that breaks or steers a line: C1 controls (U+0080
 * .. U+009F, NEL and CSI among them) and the line and paragraph
 * separators U+2028 / U+2029. */
static bool utf8_control(const unsigned char *p, size_t n)
{
	return (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) ||
	       (n == 3 && p[0] == 0xe2 && p[1] == 0x80 &&
		(p[2] == 0xa8 || p[2] == 0xa9));
}

char *tp_oneline(char *s)
{
	for (char *p = s; p && *p; p++) {
		size_t n = tp_utf8_len(p);
		if (n > 1 && utf8_control((const unsigned char *)p, n)) {
			/* each byte a '?': the string keeps its length */
			memset(p, '?', n);
			p += n - 1;
		} else if (n > 1) {
			p += n - 1;
		} else if (!n || (unsigned char)*p < 0x20 || *p == 0x7f) {
			*p = '?';
		}
	}
	return s;
}

const char *tp_excerpt(const char *s, char *buf, size_t size)
{
	size_t i;

	for (i = 0; i + 4 < size && s[i]; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (s[i] && size >= 4) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

tp_err_t tp_first_error(char **slot, const char *name, tp_err_t err,
			const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (*slot)
		return err;
	va_start(ap, fmt);
	msg = tp_vasprintf(fmt, ap);
	va_end(ap);
	*slot = tp_oneline(msg ? tp_asprintf("%s: %s", name, msg) : NULL);
	tp_free(msg);
	return err;
}

tp_err_t tp_fail(char **err_p, tp_err_t err, const char *fmt, ...)
{
	va_list ap;

	if (err_p) {
		va_start(ap, fmt);
		*err_p = tp_oneline(tp_vasprintf(fmt, ap));
		va_end(ap);
	}
	return err;
}

char *tp_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = tp_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

void tp_strbuf_append(tp_strbuf_t *sb, const char *s, size_t n)
{
	void *buf = sb->buf;

	if (sb->failed)
		return;
	if (n > SIZE_MAX - sb->len - 1 ||
	    tp_grow(&buf, &sb->cap, sb->len + n + 1, 1) != TP_OK) {
		sb->failed = true;
		return;
	}
	sb->buf = buf;
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void tp_strbuf_printf(tp_strbuf_t *sb, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	if (sb->failed)
		return;
	va_start(ap, fmt);
	n = tp_vsnprintf_c(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		sb->failed = true;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		tp_strbuf_append(sb, small, (size_t)n);
		return;
	}
	char *big = tp_malloc((size_t)n + 1);
	if (!big) {
		sb->failed = true;
		return;
	}
	va_start(ap, fmt);
	tp_vsnprintf_c(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	tp_strbuf_append(sb, big, (size_t)n);
	tp_free(big);
}

char *tp_strtrim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
			 e[-1] == '\n'))
		e--;
	*e = '\0';
	return s;
}

bool tp_parse_guid(const char *s, uint64_t *guid_p)
{
	uint64_t v = 0;
	int nd = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++, nd++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		if (nd >= 16)
			return false;
		v = (v << 4) | (uint64_t)d;
	}
	if (nd == 0)
		return false;
	*guid_p = v;
	return true;
}

bool tp_parse_bytes(const char *s, double lo, double hi, double *v_p)
{
	static const char units[] = "KMGTP";
	const char *u;
	char *end;
	double v;

	/* a digit first: strtod would take spaces, signs, "inf" and ".5";
	 * and decimal: it would take hexadecimal too */
	if (!isdigit((unsigned char)*s) ||
	    (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
		return false;
	errno = 0;
	v = tp_strtod_c(s, &end);
	if (errno || end == s)
		return false;
	if (*end && (u = strchr(units, toupper((unsigned char)*end)))) {
		for (; u >= units; u--)
			v *= 1024.0; /* exact: a power of two */
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	/* whole bytes: 1.5G is a size, 0.4 is not */
	if (*end || !(v >= lo) || v > hi || v != floor(v))
		return false;
	*v_p = v;
	return true;
}

size_t tp_utf8_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (u[0] < 0x80)
		return u[0] != 0;
	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		n = 2;
	else if (u[0] >= 0xe0 && u[0] <= 0xef)
		n = 3;
	else if (u[0] >= 0xf0 && u[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (u[0] == 0xe0)
		lo = 0xa0;
	else if (u[0] == 0xed)
		hi = 0x9f;
	else if (u[0] == 0xf0)
		lo = 0x90;
	else if (u[0] == 0xf4)
		hi = 0x8f;
	if (u[1] < lo || u[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if (u[k] < 0x80 || u[k] > 0xbf)
			return 0;
	return n;
}

size_t tp_utf8_copy(char *dst, size_t size, const char *src)
{
	size_t o = 0;

	if (!dst || !size)
		return 0;
	for (; src && *src; src++) {
		size_t n = tp_utf8_len(src);
		const char *from = n ? src : TP_UTF8_REPLACEMENT;
		size_t len = n ? n : sizeof(TP_UTF8_REPLACEMENT) - 1;
		if (o + len >= size)
			break;
		memcpy(dst + o, from, len);
		o += len;
		if (n)
			src += n - 1;
	}
	dst[o] = '\0';
	return o;
}

char *tp_quote(char *dst, size_t len, const char *src, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i = 0;

	if (!dst || !len)
		return dst;
	if (!src)
		src = "";
	for (; src[i] && i < max; i++) {
		unsigned char c = (unsigned char)src[i];
		bool plain =
		    c >= 0x20 && c < 0x7f && c != '\\' && c != '"' && c != '\'';
		size_t need = plain ? 1 : 4;
		if (o + need + 4 > len) /* room for "..." and the NUL */
			break;
		if (plain) {
			dst[o++] = (char)c;
		} else {
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		}
	}
	if (src[i] && o + 4 <= len) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o < len ? o : len - 1] = '\0';
	return dst;
}
