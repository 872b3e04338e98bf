/* topoplace fabric diff: the fabric model against the cables as they are. */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"
#include "tp_health.h"

static const char usage[] =
    "Usage: topoplace fabric diff --fabric FABRIC.json\n"
    "                             (--live [--ca NAME] [--port N] |\n"
    "                              --ibnetdiscover FILE) [--json]\n"
    "\n"
    "Compare the fabric model with the fabric as it is cabled now: a walk\n"
    "through the local IB port (--live, as discover --live does) or an\n"
    "ibnetdiscover dump. Links are matched by node GUID and port. Reports\n"
    "links gone (not cabled while one of their nodes is there), hosts\n"
    "moved (their port cabled to another switch port: regenerate the\n"
    "fabric, it is never rewritten here), new links and links in place at\n"
    "another width or lane rate than the model's (\"rate\": a cable trained\n"
    "down, with both rates; a width or rate unknown on either side is no\n"
    "change). Links neither of whose nodes was found, or of a subnet none\n"
    "of whose switches was found (another subnet), are counted as unseen.\n"
    "\n"
    "  --fabric FILE         the fabric model\n"
    "  --live                walk the fabric through the local port\n"
    "  --ca NAME, --port N   that port (default: the first CA, its first\n"
    "                        active port; N 1..254, 0 the same as none)\n"
    "  --ibnetdiscover FILE  an ibnetdiscover dump instead of a walk\n"
    "  --json                {\"format\":\"topoplace-diff/1\",\"changed\",\n"
    "                        \"gone\",\"back\",\"moved\",\"new\",\"rate\",\n"
    "                        \"unseen\"}\n"
    "  -h, --help            this text\n"
    "Exit status: 0 no change, 3 a change, 2 bad input (also a walk or\n"
    "dump holding none of the model's switches and CAs), 1 the walk "
    "failed.\n";

/* The live side: a walk or a dump, finalized; NULL with the error
 * printed and *rc_p set. */
static tp_fabric_t *read_live(const tp_fabric_t *model, const char *dump,
			      const char *ca, long port, int *rc_p)
{
	tp_fabric_t *live = tp_fabric_create();
	tp_err_t err;

	if (!live) {
		tp_cli_err("out of memory");
		*rc_p = TP_EXIT_FAIL;
		return NULL;
	}
	/* a walk names CAs as the model does (an ibnetdiscover -p dump's
	 * by port GUID); a dump names them as it was taken */
	bool by_port = tp_fabric_port_guid_cas(model) > 0;
	tp_fabric_set_port_guid_cas(live, by_port);
	err = dump ? tp_fabric_read_ibnetdiscover(live, dump)
		   : tp_fabric_discover_live(live, ca, (int)port);
	if (!err)
		err = tp_fabric_finalize(live, NULL);
	if (err) {
		tp_cli_err("%s", tp_fabric_error(live));
		*rc_p = dump || err == TP_ERR_UNSUPPORTED ? TP_EXIT_INPUT
							  : TP_EXIT_FAIL;
		tp_fabric_destroy(live);
		return NULL;
	}
	if (dump && by_port != (tp_fabric_port_guid_cas(live) > 0))
		tp_cli_err(
		    "warning: fabric diff: the fabric file names CAs by %s "
		    "GUID, %s by %s GUID (%s): a CA whose port GUID "
		    "is not its node GUID (ConnectX-3 and older) reads "
		    "as gone and new; compare dumps of one form, or "
		    "--live",
		    by_port ? "port" : "node", dump, by_port ? "node" : "port",
		    by_port ? "the file was read from an ibnetdiscover "
			      "-p dump"
			    : "an ibnetdiscover -p dump");
	return live;
}

int tp_cmd_fabric_diff(int argc, char **argv)
{
	enum { O_FABRIC = 256, O_LIVE, O_CA, O_PORT, O_DUMP, O_JSON };
	static const struct option opts[] = {
	    {"fabric", required_argument, NULL, O_FABRIC},
	    {"live", no_argument, NULL, O_LIVE},
	    {"ca", required_argument, NULL, O_CA},
	    {"port", required_argument, NULL, O_PORT},
	    {"ibnetdiscover", required_argument, NULL, O_DUMP},
	    {"json", no_argument, NULL, O_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *fabric = NULL, *ca = NULL, *dump = NULL;
	bool live_walk = false, json = false, port_given = false;
	long port = 0;
	int c, rc = TP_EXIT_INPUT;
	tp_fabric_t *model = NULL, *live = NULL;
	tp_health_diff_t d = {0};
	tp_err_t err;
	char *out = NULL;

	optind = 1;
	while ((c = tp_cli_opt_next("fabric diff", argc, argv, "h", opts)) !=
	       -1) {
		switch (c) {
		case O_FABRIC:
			fabric = optarg;
			break;
		case O_LIVE:
			live_walk = true;
			break;
		case O_CA:
			ca = optarg;
			break;
		case O_PORT:
			if (!tp_cli_int("--port", optarg, 0, 254, &port))
				return TP_EXIT_INPUT;
			port_given = true;
			break;
		case O_DUMP:
			dump = optarg;
			break;
		case O_JSON:
			json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return TP_EXIT_OK;
		default:
			return TP_EXIT_INPUT;
		}
	}
	if (!tp_cli_no_operand("fabric diff", argc, argv))
		return TP_EXIT_INPUT;
	if (!fabric || live_walk == (dump != NULL)) {
		tp_cli_err("fabric diff: --fabric and one of --live, "
			   "--ibnetdiscover are required");
		return TP_EXIT_INPUT;
	}
	if ((ca || port_given) && !live_walk) {
		tp_cli_err("fabric diff: --ca/--port apply to --live only");
		return TP_EXIT_INPUT;
	}
	if (!(model = tp_cli_load(fabric, &rc)) ||
	    !(live = read_live(model, dump, ca, port, &rc)))
		goto out;
	if ((err = tp_health_diff(model, live, &d)) == TP_ERR_MISMATCH) {
		/* as the monitor says it of its first walk */
		if (dump)
			tp_cli_err("fabric diff: %s: none of the fabric file's "
				   "switches and CAs is in %s: a file of "
				   "another fabric?",
				   fabric, dump);
		else
			tp_cli_err("fabric diff: %s: none of the fabric file's "
				   "switches and CAs is on the fabric walked "
				   "through %s: a file of another fabric?",
				   fabric, ca ? ca : "the default CA");
		rc = TP_EXIT_INPUT;
		goto out;
	}
	if (err || (json ? tp_health_diff_json(model, live, &d, NULL, &out)
			 : tp_health_diff_text(model, live, &d, NULL, &out))) {
		tp_cli_err("out of memory");
		rc = TP_EXIT_FAIL;
		goto out;
	}
	if (json)
		puts(out);
	else
		printf("%s%zu gone, %zu moved, %zu new, %zu at another rate, "
		       "%zu unseen of %zu links\n",
		       out, d.ngone, d.nmoved, d.nfresh, d.nrate, d.nunseen,
		       d.nlinks);
	rc = tp_health_diff_changed(&d) ? TP_EXIT_CHANGED : TP_EXIT_OK;
out:
	tp_free(out);
	tp_health_diff_free(&d);
	tp_fabric_destroy(live);
	tp_fabric_destroy(model);
	return rc;
}
