/* Flat-token JSON reader for fabric files (see jscan_int.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

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
		case '"': case '\\': case '/':
			t[o++] = t[i++];
			break;
		case 'b': t[o++] = '\b'; i++; break;
		case 'f': t[o++] = '\f'; i++; break;
		case 'n': t[o++] = '\n'; i++; break;
		case 'r': t[o++] = '\r'; i++; break;
		case 't': t[o++] = '\t'; i++; break;
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
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
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
		if (j >= len || (t[j] != '.' && t[j] != 'e' && t[j] != 'E' &&
				 (t[j] < '0' || t[j] > '9'))) {
			*v = neg ? -(double)x : (double)x;
			*pos = j;
			return true;
		}
	}
	i = *pos;
	if (t[i] == '-')
		i++;
	if (i >= len || t[i] < '0' || t[i] > '9')
		return false;
	while (i < len && ((t[i] >= '0' && t[i] <= '9') || t[i] == '.' ||
			   t[i] == 'e' || t[i] == 'E' || t[i] == '+' ||
			   t[i] == '-'))
		i++;
	n = i - *pos;
	if (n >= sizeof(num))
		return false;
	memcpy(num, t + *pos, n);
	num[n] = '\0';
	*v = strtod(num, &end);
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

tp_err_t tp__jdoc_parse_owned(tp__jdoc_t *d, char *buf, size_t len)
{
	uint32_t stack[MAX_DEPTH];
	int depth = 0;
	size_t i = 0;
	bool want_value = true, done = false;
	char *t = buf;
	tp_err_t err;

	memset(d, 0, sizeof(*d));
	d->text = buf;
	if (len >= UINT32_MAX)
		return TP_ERR_RANGE;
	t[len] = '\0';
	/* about one token per 8 bytes in fabric files: grow rarely */
	d->captok = len / 8 + 16;
	if (!(d->tok = tp_malloc(d->captok * sizeof(tp__jtok_t))))
		return TP_ERR_NOMEM;
	d->errmsg = "not valid JSON";
	for (;;) {
		while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' ||
				   t[i] == '\r'))
			i++;
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
		uint8_t type = c == '{' ? TP_J_OBJ : c == '[' ? TP_J_ARR
			       : c == '"' ? TP_J_STR : c == 't' ? TP_J_TRUE
			       : c == 'f' ? TP_J_FALSE : c == 'n' ? TP_J_NULL
			       : TP_J_NUM;
		if ((err = push_tok(d, type, &idx)))
			return err;
		d->tok[idx].next = idx + 1;
		switch (type) {
		case TP_J_OBJ:
		case TP_J_ARR:
			if (depth == MAX_DEPTH)
				goto bad;
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
				i++;
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
	d->errline = 1;
	/* strings were unescaped in place up to i, but never across lines */
	for (size_t k = 0; k < i && k < len; k++)
		d->errline += t[k] == '\n';
	return TP_ERR_PARSE;
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
