/* topoplace show, built without libslurm (configure --with-libslurm=no or
 * no libslurm-dev): the command exists and says why it cannot work. */
#include "config.h"

#include "cli.h"

int tp_cmd_show(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	tp_cli_err("show: built without libslurm (install libslurm-dev and "
		   "reconfigure)");
	return TP_EXIT_FAIL;
}
