/*
 * tp_fmt: snprintf for the few conversions a placement's explanation
 * uses, with the same output and return value as snprintf.
 *
 * Why not snprintf: inside slurmctld every decision starts with cold
 * caches, and glibc's vfprintf with its floating-point path is some 70
 * cache lines of code (callgrind over bench_place_cold, 2026-12-04),
 * about 8% of a cold decision's time, for one or two sentences that only
 * a person reads. This is a few lines of code; a %.3g that lies too
 * close to a rounding tie for a double's arithmetic to decide it goes to
 * snprintf, so the digits are always printf's.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tp_common.h"

typedef struct out {
	char *buf;
	size_t len; /* the buffer's size */
	size_t n;   /* characters produced so far (written or not) */
} out_t;

static void put(out_t *o, const char *s, size_t n)
{
	if (o->n < o->len) {
		size_t room = o->len - 1 - o->n;
		memcpy(o->buf + o->n, s, n < room ? n : room);
	}
	o->n += n;
}

static void put_u(out_t *o, unsigned long long v, bool neg)
{
	char d[24];
	size_t i = sizeof(d);

	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (neg)
		d[--i] = '-';
	put(o, d + i, sizeof(d) - i);
}

static void put_i(out_t *o, long long v)
{
	put_u(o, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v,
	      v < 0);
}

/* printf's %.3g of v, or false when v is not a plain double this can
 * round as printf does (not finite, very large or small, or within a
 * hair of a rounding tie). */
static bool put_g3(out_t *o, double v)
{
	static const double p10[] = {1e0,  1e1,	 1e2,  1e3,  1e4,  1e5,	 1e6,
				     1e7,  1e8,	 1e9,  1e10, 1e11, 1e12, 1e13,
				     1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20};
	char d[32];
	size_t k = 0;
	double a = fabs(v), m;
	int e, s;
	long q;

	if (v == 0) {
		put(o, signbit(v) ? "-0" : "0", signbit(v) ? 2 : 1);
		return true;
	}
	if (!isfinite(v) || a < 1e-17 || a >= 1e17)
		return false;
	e = (int)floor(log10(a));
	/* a scaled to three digits before the point, a power of ten
	 * multiplying or dividing exactly (10^k is exact up to 10^22) */
	for (int tries = 0; tries < 2; tries++) {
		s = 2 - e;
		m = s >= 0 ? a * p10[s] : a / p10[-s];
		if (m < 100)
			e--;
		else if (m >= 1000)
			e++;
		else
			break;
	}
	if (m < 100 || m >= 1000)
		return false;
	double fl = floor(m), fr = m - fl;
	if (fabs(fr - 0.5) < 1e-7) /* a tie, or too near one to tell */
		return false;
	q = (long)fl + (fr > 0.5);
	if (q == 1000) {
		q = 100;
		e++;
	}
	if (v < 0)
		d[k++] = '-';
	int dig[3] = {(int)(q / 100), (int)(q / 10 % 10), (int)(q % 10)};
	int last = dig[2] ? 2 : dig[1] ? 1 : 0; /* trailing zeros dropped */
	if (e < -4 || e >= 3) {
		d[k++] = (char)('0' + dig[0]);
		if (last) {
			d[k++] = '.';
			for (int i = 1; i <= last; i++)
				d[k++] = (char)('0' + dig[i]);
		}
		d[k++] = 'e';
		d[k++] = e < 0 ? '-' : '+';
		int ae = e < 0 ? -e : e;
		d[k++] = (char)('0' + ae / 10);
		d[k++] = (char)('0' + ae % 10);
	} else if (e >= 0) {
		/* e + 1 digits before the point */
		for (int i = 0; i <= e; i++)
			d[k++] = (char)('0' + dig[i]);
		if (last > e) {
			d[k++] = '.';
			for (int i = e + 1; i <= last; i++)
				d[k++] = (char)('0' + dig[i]);
		}
	} else {
		d[k++] = '0';
		d[k++] = '.';
		for (int i = -1; i > e; i--)
			d[k++] = '0';
		for (int i = 0; i <= last; i++)
			d[k++] = (char)('0' + dig[i]);
	}
	put(o, d, k);
	return true;
}

static void put_g3_printf(out_t *o, double v)
{
	char d[32];
	int n = snprintf(d, sizeof(d), "%.3g", v);

	if (n > 0)
		put(o, d, (size_t)n < sizeof(d) ? (size_t)n : sizeof(d) - 1);
}

int tp_vfmt(char *buf, size_t len, const char *fmt, va_list ap)
{
	out_t o = {buf, buf ? len : 0, 0};
	const char *p = fmt, *lit = fmt;

	while (*p) {
		if (*p != '%') {
			p++;
			continue;
		}
		put(&o, lit, (size_t)(p - lit));
		p++;
		if (*p == '%') {
			put(&o, "%", 1);
		} else if (*p == 's') {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			put(&o, s, strlen(s));
		} else if (*p == 'd') {
			put_i(&o, va_arg(ap, int));
		} else if (*p == 'u') {
			put_u(&o, va_arg(ap, unsigned), false);
		} else if (p[0] == 'z' && p[1] == 'u') {
			put_u(&o, va_arg(ap, size_t), false);
			p++;
		} else if (p[0] == 'l' && p[1] == 'u') {
			put_u(&o, va_arg(ap, unsigned long), false);
			p++;
		} else if (p[0] == 'l' && p[1] == 'l' && p[2] == 'u') {
			put_u(&o, va_arg(ap, unsigned long long), false);
			p += 2;
		} else if (p[0] == '.' && p[1] == '3' && p[2] == 'g') {
			double v = va_arg(ap, double);
			if (!put_g3(&o, v))
				put_g3_printf(&o, v);
			p += 2;
		} else {
			/* not a conversion tp_fmt knows: what came before */
			o.n = o.n < o.len ? o.n : o.len ? o.len - 1 : 0;
			if (o.len)
				o.buf[o.n] = '\0';
			return -1;
		}
		lit = ++p;
	}
	put(&o, lit, (size_t)(p - lit));
	if (o.len)
		o.buf[o.n < o.len ? o.n : o.len - 1] = '\0';
	return o.n > INT32_MAX ? -1 : (int)o.n;
}

int tp_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = tp_vfmt(buf, len, fmt, ap);
	va_end(ap);
	return n;
}
