/* topoplace show, built without libslurm (configure --with-libslurm=no or
 * no libslurm-dev): the command exists and says why it cannot work. */
#include "config.h"

#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: topoplace show job JOBID [--json] [--fabric F.json] [--timeout S]\n"
    "       topoplace show jobs [--json] [--fabric F.json] [--timeout S]\n"
    "\n"
    "What Slurm jobs got, asked of slurmctld through libslurm. This\n"
    "topoplace was built without libslurm: the command exits 1 (install\n"
    "libslurm-dev and reconfigure).\n";

int tp_cmd_show(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage, stdout);
			return TP_EXIT_OK;
		}
	tp_cli_err("show: built without libslurm (install libslurm-dev and "
		   "reconfigure)");
	return TP_EXIT_FAIL;
}
