/* Shared pieces of the topoplace command line. */
#ifndef TP_CLI_H
#define TP_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "tp_placement.h"
#include "tp_topology.h"

/* Exit codes: 0 success, 1 internal failure, 2 bad input or usage. */
enum { TP_EXIT_OK = 0, TP_EXIT_FAIL = 1, TP_EXIT_INPUT = 2 };

extern bool tp_cli_quiet;

/* "topoplace: <msg>" on stderr. */
void tp_cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit code for a library error (input errors -> 2). */
int tp_cli_exit_code(tp_err_t err);
/* Load a fabric JSON, printing the one-line error; NULL on failure. */
tp_fabric_t *tp_cli_load(const char *path, int *rc_p);
/* Write text to path ("-" or NULL: stdout). */
int tp_cli_write(const char *path, const char *text);
/* Parse a non-negative integer option; prints the error. */
bool tp_cli_int(const char *opt, const char *s, long lo, long hi, long *v_p);
bool tp_cli_double(const char *opt, const char *s, double lo, double hi,
		   double *v_p);
/* A size in bytes: "512M", "1G", "1048576" (k, M, G, T are powers of
 * 1024, an optional B after); prints "opt: ..." on error. */
bool tp_cli_bytes(const char *opt, const char *s, double *v_p);
/* A state file for f (topoplace-state/1), or a fresh one when path is
 * NULL; prints the loader's one-line error and sets *rc_p on failure. */
tp_state_t *tp_cli_load_state(const tp_fabric_t *f, const char *path,
			      int *rc_p);

/* ---- SVG pieces shared by draw and the simulate report (svg.c) ---- */

/* Opens the document with a white background. */
void tp_svg_begin(tp_strbuf_t *sb, int width, int height);
/* s with XML's special characters escaped (control bytes dropped). */
void tp_svg_escape(tp_strbuf_t *sb, const char *s);
/* <text x y attrs>printf(fmt, ...)</text>, the text escaped. */
void tp_svg_text(tp_strbuf_t *sb, double x, double y, const char *attrs,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A legend entry at baseline y: a filled square (or a line), its id, then
 * the label. colour is "#rrggbb". */
void tp_svg_swatch(tp_strbuf_t *sb, double x, double y, const char *id,
		   const char *colour, bool line, const char *label);

/* A line chart: the plot area (pixels), data ranges (y from 0), labels. */
typedef struct tp_svg_chart {
	int x, y, w, h;
	double xmin, xmax, ymax;
	const char *title, *xlabel, *yunit;
} tp_svg_chart_t;
/* Frame, title, round ticks with labels on both axes, horizontal grid. */
void tp_svg_axes(tp_strbuf_t *sb, const tp_svg_chart_t *c);
/* One series as a polyline, points clamped to the chart. */
void tp_svg_series(tp_strbuf_t *sb, const tp_svg_chart_t *c, const double *x,
		   const double *y, size_t n, const char *colour);
/* Closes the document and writes it to path ("-": stdout); an exit code. */
int tp_svg_finish(tp_strbuf_t *sb, const char *path);

int tp_cmd_discover(int argc, char **argv);
int tp_cmd_fabric(int argc, char **argv);
int tp_cmd_place(int argc, char **argv);
int tp_cmd_cost(int argc, char **argv);
int tp_cmd_draw(int argc, char **argv);
int tp_cmd_simulate(int argc, char **argv);
int tp_cmd_plan(int argc, char **argv);
int tp_cmd_config(int argc, char **argv);
int tp_cmd_nccl_topo(int argc, char **argv);
/* cmd_monitor.c: `fabric health` and `monitor` */
int tp_cmd_fabric_health(int argc, char **argv);
int tp_cmd_monitor(int argc, char **argv);
/* cmd_diff.c: `fabric diff` */
int tp_cmd_fabric_diff(int argc, char **argv);
/* cmd_show.c through libslurm, or cmd_show_none.c without it. */
int tp_cmd_show(int argc, char **argv);

#endif
