/* Shared pieces of the topoplace command line. */
#ifndef TP_CLI_H
#define TP_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "tp_placement.h"
#include "tp_topology.h"

/* Exit codes (topoplace --help and topoplace(1) EXIT STATUS list them):
 * 0 success; 1 a failure that is not the input's (out of memory, a write,
 * sweep or Slurm query that failed) and place's "does not fit now"; 2 bad
 * input or usage; 3 fabric health: a link alarmed, fabric diff: the
 * cabling or a link's rate changed. */
enum {
	TP_EXIT_OK = 0,
	TP_EXIT_FAIL = 1,
	TP_EXIT_INPUT = 2,
	TP_EXIT_CHANGED = 3
};

extern bool tp_cli_quiet;

/* "s" after a count that is not 1 ("1 group", "2 groups"). */
static inline const char *tp_cli_s(size_t n)
{
	return n == 1 ? "" : "s";
}

/* "topoplace: <msg>" on stderr. */
void tp_cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print o as a JSON document on stdout and free it; false when there is
 * none to print (o NULL, or no memory to print it). */
struct cJSON;
bool tp_cli_put_json(struct cJSON *o);
/* Exit code for a library error (input errors -> 2). */
int tp_cli_exit_code(tp_err_t err);
/* Load a fabric JSON, printing the one-line error; NULL on failure. */
tp_fabric_t *tp_cli_load(const char *path, int *rc_p);
/* Whether path names a file (not NULL, not ""); false with "WHAT: empty
 * file name" printed (an operand: an option's empty value is refused by
 * the option parser). */
bool tp_cli_path_given(const char *what, const char *path);
/* Hosts a ring runs slower through than through the best-cabled one on
 * the fabric's own link health (tp_state_weak_hosts); SIZE_MAX on
 * NOMEM. */
size_t tp_cli_weak_hosts(const tp_fabric_t *f);
/* Slurm's node weights for the Slurm models (tp_policy_params_t
 * .node_weight, as many as f has hosts) from an option's value: "health"
 * (TP_NODE_WEIGHT_WEAK on the hosts weakly cabled on s, or on the
 * fabric's own link health when s is NULL; 1 on the rest) or a
 * slurm.conf's NodeName= lines. NULL after the error line (cmd's), *rc_p
 * its exit code. Caller frees with tp_free(). */
uint32_t *tp_cli_node_weights(const char *cmd, const tp_fabric_t *f,
			      const tp_state_t *s, const char *arg, int *rc_p);
/* Cost model defaults, pricing the collective library as it will run in
 * this environment: TOPOPLACE_COLL_SHM=0 (no host segment) makes the
 * hierarchical host phases rings (tp_cost_params_t.host_ring). Every
 * command that prices starts from these, so place, cost, simulate, trace
 * --price, plan, draw --heat and show agree on the same hosts. */
void tp_cli_cost_params(tp_cost_params_t *p);
/* For the plans (plan, show's plan), which predict what the library will
 * run: p->hier_segment from TOPOPLACE_COLL_SEGMENT, as the library reads
 * it (its default when unset; the placement's figures stay unpipelined).
 * false with the one-line error printed (cmd: the command) for a value
 * the library would refuse. */
bool tp_cli_plan_segment(const char *cmd, tp_cost_params_t *p);
/* Whether some job of t (read from path) has the hosts Slurm gave it
 * (a record's NodeList), as what prices those hosts needs (trace
 * --price, simulate --deflate-runs, named by what); false with the
 * one-line error printed. */
bool tp_cli_trace_has_nodes(const char *what, const char *path,
			    const tp_trace_t *t);
/* bytes in the largest binary unit it fills ("0 B", "64 KiB",
 * "1.5 GiB", %g's digits) into buf; buf. */
const char *tp_cli_size(double bytes, char *buf, size_t len);
/* Write text to path ("-" or NULL: stdout). */
int tp_cli_write(const char *path, const char *text);
/* Whether path (an output, "-" or NULL: stdout) can be written, checked
 * before long work: TP_EXIT_OK, or the line printed (naming opt) and
 * TP_EXIT_FAIL. */
int tp_cli_check_output(const char *opt, const char *path);
/* Parse a non-negative integer option; prints the error. */
bool tp_cli_int(const char *opt, const char *s, long lo, long hi, long *v_p);
bool tp_cli_double(const char *opt, const char *s, double lo, double hi,
		   double *v_p);
/* A size in bytes, lo .. TP_BYTES_MAX (1 PiB): "512M", "1G", "1048576"
 * (tp_parse_bytes: K, M, G, T, P are powers of 1024, an optional B
 * after); prints "opt: ..." on error. */
bool tp_cli_bytes(const char *opt, const char *s, double lo, double *v_p);
/* A state file for f (topoplace-state/1), or a fresh one when path is
 * NULL; prints the loader's one-line error and sets *rc_p on failure. */
tp_state_t *tp_cli_load_state(const tp_fabric_t *f, const char *path,
			      int *rc_p);

/* ---- options most commands share (args.c) ----
 * A command lists the ones it takes in its getopt_long table with these
 * codes (and 'o' for -o/--output, 'h' for -h/--help, letters that stay in
 * its short option string), then reads its own through tp_cli_getopt. */
enum {
	TP_CLI_OPT_FABRIC = 0x200, /* --fabric F.json */
	TP_CLI_OPT_STATE,	   /* --state S.json */
	TP_CLI_OPT_JSON,	   /* --json */
};

typedef struct tp_cli_args {
	const char *name;  /* for error lines; NULL: argv[0], the command */
	const char *usage; /* the command's --help text */
	const char *fabric, *state, *output;
	bool json;
	int exit; /* -1: go on; else the exit code (see tp_cli_getopt) */
} tp_cli_args_t;

/* getopt_long (the caller sets optind = 1 first) that reports a bad
 * option itself, on one line naming the command: "topoplace fabric
 * generate: unrecognized option '--x' (see --help)"; '?' then. */
int tp_cli_opt_next(const char *cmd, int argc, char **argv,
		    const char *shortopts, const struct option *opts);
/* After the options: true when no operand follows, else false with
 * "topoplace: CMD: unexpected argument 'X' (see --help)" printed. */
bool tp_cli_no_operand(const char *cmd, int argc, char **argv);

/* The long name ("fabric") of the option that returns c; "" if none. */
const char *tp_cli_opt_name(const struct option *opts, int c);

/* tp_cli_opt_next over argv that stores the shared options in a and
 * returns the next option that is the command's own, or -1. At -1,
 * a->exit is -1 when the options are all read (optind: the first
 * operand), or the exit code the command returns at once: TP_EXIT_OK
 * after -h printed a->usage on stdout, TP_EXIT_INPUT after a bad option
 * was reported. The caller sets optind = 1 before the first call. */
int tp_cli_getopt(int argc, char **argv, const char *shortopts,
		  const struct option *opts, tp_cli_args_t *a);

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
int tp_cmd_trace(int argc, char **argv);
/* cmd_monitor.c: `fabric health` and `monitor` */
int tp_cmd_fabric_health(int argc, char **argv);
int tp_cmd_monitor(int argc, char **argv);
/* cmd_diff.c: `fabric diff` */
int tp_cmd_fabric_diff(int argc, char **argv);
/* cmd_show.c through libslurm, or cmd_show_none.c without it. */
int tp_cmd_show(int argc, char **argv);

#endif
