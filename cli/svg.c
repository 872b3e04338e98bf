/*
 * svg.c - the few SVG pieces `topoplace draw` and the simulate report
 * share: escaped text, legend swatches, and line charts with axes.
 *
 * Notes
 *
 * Colours are always "#rrggbb": the picture tests read a legend's colour
 * from the SVG and look for exactly that colour in the rendered PNG, which
 * hsl() or named colours would make them convert first.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

void tp_svg_begin(tp_strbuf_t *sb, int width, int height)
{
	tp_strbuf_printf(
	    sb,
	    "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
	    "font-family='sans-serif' font-size='11'>\n"
	    "<rect width='100%%' height='100%%' fill='#ffffff'/>\n",
	    width, height);
}

void tp_svg_escape(tp_strbuf_t *sb, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<':
			tp_strbuf_printf(sb, "&lt;");
			break;
		case '>':
			tp_strbuf_printf(sb, "&gt;");
			break;
		case '&':
			tp_strbuf_printf(sb, "&amp;");
			break;
		case '\'':
			tp_strbuf_printf(sb, "&apos;");
			break;
		case '"':
			tp_strbuf_printf(sb, "&quot;");
			break;
		default:
			/* control bytes are not XML */
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				tp_strbuf_append(sb, s, 1);
			break;
		}
	}
}

void tp_svg_text(tp_strbuf_t *sb, double x, double y, const char *attrs,
		 const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tp_strbuf_printf(sb, "<text x='%.1f' y='%.1f' %s>", x, y,
			 attrs ? attrs : "");
	tp_svg_escape(sb, buf);
	tp_strbuf_printf(sb, "</text>\n");
}

void tp_svg_swatch(tp_strbuf_t *sb, double x, double y, const char *id,
		   const char *colour, bool line, const char *label)
{
	if (line)
		tp_strbuf_printf(sb,
				 "<line id='%s' x1='%.1f' y1='%.1f' x2='%.1f' "
				 "y2='%.1f' stroke='%s' stroke-width='4'/>\n",
				 id, x, y - 4, x + 18, y - 4, colour);
	else
		tp_strbuf_printf(sb,
				 "<rect id='%s' x='%.1f' y='%.1f' width='12' "
				 "height='12' fill='%s' stroke='#444444' "
				 "stroke-width='0.5'/>\n",
				 id, x, y - 10, colour);
	tp_svg_text(sb, x + (line ? 24 : 16), y, NULL, "%s", label);
}

/* A round step of about span / 5: 1, 2 or 5 times a power of ten. */
static double tick_step(double span)
{
	double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

void tp_svg_axes(tp_strbuf_t *sb, const tp_svg_chart_t *c)
{
	double step;

	tp_svg_text(sb, c->x, c->y - 10, "font-size='13'", "%s", c->title);
	tp_strbuf_printf(sb,
			 "<rect x='%d' y='%d' width='%d' height='%d' "
			 "fill='none' stroke='#999999'/>\n",
			 c->x, c->y, c->w, c->h);
	step = tick_step(c->xmax - c->xmin);
	for (double v = ceil(c->xmin / step) * step; v <= c->xmax * 1.0001;
	     v += step) {
		double px = c->x + c->w * (v - c->xmin) / (c->xmax - c->xmin);
		tp_strbuf_printf(sb,
				 "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' "
				 "stroke='#999999'/>\n",
				 px, c->y + c->h, px, c->y + c->h + 4);
		tp_svg_text(sb, px, c->y + c->h + 15, "text-anchor='middle'",
			    "%g", v);
	}
	step = tick_step(c->ymax);
	for (double v = 0; v <= c->ymax * 1.0001; v += step) {
		double py = c->y + c->h * (1 - v / c->ymax);
		tp_strbuf_printf(sb,
				 "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' "
				 "stroke='#e5e5e5'/>\n",
				 c->x, py, c->x + c->w, py);
		tp_svg_text(sb, c->x - 5, py + 4, "text-anchor='end'", "%g%s",
			    v, c->yunit ? c->yunit : "");
	}
	tp_svg_text(sb, c->x + c->w / 2.0, c->y + c->h + 30,
		    "text-anchor='middle'", "%s", c->xlabel);
}

void tp_svg_series(tp_strbuf_t *sb, const tp_svg_chart_t *c, const double *x,
		   const double *y, size_t n, const char *colour)
{
	tp_strbuf_printf(sb,
			 "<polyline fill='none' stroke='%s' "
			 "stroke-width='2' points='",
			 colour);
	for (size_t k = 0; k < n; k++) {
		double vx = fmin(fmax(x[k], c->xmin), c->xmax),
		       vy = fmin(fmax(y[k], 0), c->ymax);
		tp_strbuf_printf(sb, "%.1f,%.1f ",
				 c->x + c->w * (vx - c->xmin) /
					    (c->xmax - c->xmin),
				 c->y + c->h * (1 - vy / c->ymax));
	}
	tp_strbuf_printf(sb, "'/>\n");
}

int tp_svg_finish(tp_strbuf_t *sb, const char *path)
{
	tp_strbuf_printf(sb, "</svg>\n");
	if (sb->failed) {
		tp_cli_err("%s: out of memory drawing the picture",
			   path ? path : "-");
		return TP_EXIT_FAIL;
	}
	return tp_cli_write(path, sb->buf);
}
