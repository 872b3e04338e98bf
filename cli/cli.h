/* Shared pieces of the topoplace command line. */
#ifndef TP_CLI_H
#define TP_CLI_H

#include <stdbool.h>
#include <stdio.h>

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
/* cmd_show.c through libslurm, or cmd_show_none.c without it. */
int tp_cmd_show(int argc, char **argv);

#endif
