/* The options most commands share, read in one place. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>

#include "cli.h"

int tp_cli_getopt(int argc, char **argv, const char *shortopts,
		  const struct option *opts, tp_cli_args_t *a)
{
	int c;

	a->exit = -1;
	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		switch (c) {
		case TP_CLI_OPT_FABRIC:
			a->fabric = optarg;
			break;
		case TP_CLI_OPT_STATE:
			a->state = optarg;
			break;
		case TP_CLI_OPT_JSON:
			a->json = true;
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'h':
			fputs(a->usage, stdout);
			a->exit = TP_EXIT_OK;
			return -1;
		case '?':
		case ':':
			/* getopt_long has said what was wrong */
			fputs(a->usage, stderr);
			a->exit = TP_EXIT_INPUT;
			return -1;
		default:
			return c;
		}
	}
	return -1;
}
