/* Numbers in file formats, in the "C" locale.
 *
 * Notes: a process that embeds the libraries (a Python host after
 * locale.setlocale(LC_ALL, ""), a plugin in a daemon) may have set an
 * LC_NUMERIC whose decimal point is a comma; printf and strtod follow it,
 * JSON and our other formats do not. uselocale() switches the calling
 * thread only, so the caller's other threads keep their locale. glibc
 * makes the "C" locale object without allocating; should newlocale fail
 * anyway, numbers follow the process's locale as they did before. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_common.h"

static pthread_once_t c_once = PTHREAD_ONCE_INIT;
static locale_t c_locale = (locale_t)0;

static void c_locale_make(void)
{
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* Enter the "C" locale on this thread; the locale to give back to
 * c_leave, (locale_t)0 when nothing was switched. */
static locale_t c_enter(void)
{
	pthread_once(&c_once, c_locale_make);
	return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void c_leave(locale_t old)
{
	if (old)
		uselocale(old);
}

int tp_vsnprintf_c(char *buf, size_t size, const char *fmt, va_list ap)
{
	locale_t old = c_enter();
	int n = vsnprintf(buf, size, fmt, ap);

	c_leave(old);
	return n;
}

int tp_snprintf_c(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = tp_vsnprintf_c(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

double tp_strtod_c(const char *s, char **end_p)
{
	locale_t old = c_enter();
	double v = strtod(s, end_p);
	int e = errno; /* strtod's ERANGE, whatever uselocale does */

	c_leave(old);
	errno = e;
	return v;
}

void tp_strbuf_num(tp_strbuf_t *sb, double v)
{
	char buf[32];

	if (v == floor(v) && fabs(v) < 1e15) {
		tp_snprintf_c(buf, sizeof(buf), "%.0f", v);
	} else {
		tp_snprintf_c(buf, sizeof(buf), "%.15g", v);
		if (tp_strtod_c(buf, NULL) != v)
			tp_snprintf_c(buf, sizeof(buf), "%.17g", v);
	}
	tp_strbuf_append(sb, buf, strlen(buf));
}
