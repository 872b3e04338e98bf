/* topoplace discover: IB fabric + node data -> fabric JSON. */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: topoplace discover --ibnetdiscover FILE [FILE...] [OPTIONS] -o "
    "FABRIC.json\n"
    "       topoplace discover --live [--ca NAME] [--port N] [OPTIONS] -o "
    "FABRIC.json\n"
    "       topoplace discover --ibnd-cache FILE [FILE...] [OPTIONS] -o "
    "FABRIC.json\n"
    "\n"
    "Build the fabric model. Each ibnetdiscover file (plain, -s or -p output) "
    "or\n"
    "libibnetdisc cache is one subnet: give one per rail when rails are "
    "separate\n"
    "subnets.\n"
    "\n"
    "Sources (one kind):\n"
    "  --ibnetdiscover FILE...  ibnetdiscover text output\n"
    "  --ibnd-cache FILE...     libibnetdisc cache (ibnetdiscover --cache)\n"
    "  --live                   discover now through libibnetdisc\n"
    "  --ca NAME, --port N      local HCA and port for --live (default: "
    "the\n"
    "                           first CA, its first active port; N 1..254,\n"
    "                           0 the same as none)\n"
    "\n"
    "Node data and naming:\n"
    "  --node-xml DIR           hwloc XML per node: DIR/<host>.xml\n"
    "  --nvidia-smi DIR         'nvidia-smi topo -m' per node: DIR/<host>.txt\n"
    "                           (read after --node-xml: a host in both gets\n"
    "                           this file's GPUs, warned)\n"
    "  --guid-map FILE          'GUID hostname' lines naming CAs whose node\n"
    "                           description has no hostname ('GUID \"desc\"'\n"
    "                           lines of a node-name map work too)\n"
    "  --domain-map FILE        multi-node NVLink domains: 'name hostlist' "
    "lines\n"
    "  --gpus-per-host N        GPUs for hosts without node data (default 0)\n"
    "\n"
    "Output:\n"
    "  -o, --output FILE        fabric JSON (topoplace-fabric/1); '-' = "
    "stdout\n"
    "  -k, --keep-going         a node file that cannot be read is reported "
    "and\n"
    "                           its host keeps no node data; the fabric is\n"
    "                           still written (exit status 2 all the same)\n"
    "  -q, --quiet              do not print warnings or the summary\n"
    "  -h, --help               this text\n";

int tp_cmd_discover(int argc, char **argv)
{
	enum { O_IBN = 256, O_CACHE, O_LIVE, O_CA, O_PORT, O_XML, O_SMI,
	       O_GMAP, O_DMAP, O_GPUS };
	static const struct option opts[] = {
		{"ibnetdiscover", required_argument, NULL, O_IBN},
		{"ibnd-cache", required_argument, NULL, O_CACHE},
		{"live", no_argument, NULL, O_LIVE},
		{"ca", required_argument, NULL, O_CA},
		{"port", required_argument, NULL, O_PORT},
		{"node-xml", required_argument, NULL, O_XML},
		{"nvidia-smi", required_argument, NULL, O_SMI},
		{"guid-map", required_argument, NULL, O_GMAP},
		{"domain-map", required_argument, NULL, O_DMAP},
		{"gpus-per-host", required_argument, NULL, O_GPUS},
		{"output", required_argument, NULL, 'o'},
		{"keep-going", no_argument, NULL, 'k'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char **files = NULL;
	size_t nfiles = 0;
	int kind = 0; /* O_IBN, O_CACHE or O_LIVE */
	const char *ca = NULL, *xml = NULL, *smi = NULL, *gmap = NULL,
		   *dmap = NULL;
	tp_cli_args_t a = {.usage = usage};
	long port = 0, gpus = 0;
	int c, rc = TP_EXIT_INPUT, node_rc = TP_EXIT_OK;
	bool keep = false, port_given = false;
	tp_fabric_t *f = NULL;
	tp_err_t err;
	char *json = NULL;

	files = tp_calloc((size_t)argc + 1, sizeof(char *));
	if (!files)
		return TP_EXIT_FAIL;
	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "o:kqh", opts, &a)) != -1) {
		switch (c) {
		case O_IBN:
		case O_CACHE:
		case O_LIVE:
			if (kind && kind != c) {
				tp_cli_err("discover: give one source kind: --ibnetdiscover, --ibnd-cache or --live");
				goto out;
			}
			kind = c;
			if (c != O_LIVE)
				files[nfiles++] = optarg;
			break;
		case O_CA:
			ca = optarg;
			break;
		case O_PORT:
			if (!tp_cli_int("--port", optarg, 0, 254, &port))
				goto out;
			port_given = true;
			break;
		case O_XML:
			xml = optarg;
			break;
		case O_SMI:
			smi = optarg;
			break;
		case O_GMAP:
			gmap = optarg;
			break;
		case O_DMAP:
			dmap = optarg;
			break;
		case O_GPUS:
			if (!tp_cli_int("--gpus-per-host", optarg, 0, 1024, &gpus))
				goto out;
			break;
		case 'k':
			keep = true;
			break;
		case 'q':
			tp_cli_quiet = true;
			break;
		}
	}
	if (a.exit >= 0) {
		rc = a.exit;
		goto out;
	}
	/* "--ibnetdiscover a b c": the extra files arrive as operands */
	for (; optind < argc; optind++) {
		if (kind != O_IBN && kind != O_CACHE) {
			tp_cli_err("discover: unexpected argument '%s'", argv[optind]);
			goto out;
		}
		if (!tp_cli_path_given("discover", argv[optind]))
			goto out;
		files[nfiles++] = argv[optind];
	}
	if (!kind) {
		tp_cli_err("discover: no source: give --ibnetdiscover FILE, --ibnd-cache FILE or --live");
		goto out;
	}
	if (!a.output) {
		tp_cli_err("discover: -o FABRIC.json is required");
		goto out;
	}
	/* before a walk or a large dump's parse */
	if (tp_cli_check_output("discover: -o", a.output)) {
		rc = TP_EXIT_FAIL;
		goto out;
	}
	if ((ca || port_given) && kind != O_LIVE) {
		tp_cli_err("discover: --ca/--port apply to --live only");
		goto out;
	}
	if (!(f = tp_fabric_create())) {
		rc = TP_EXIT_FAIL;
		goto out;
	}
	if (gmap && (err = tp_fabric_read_guid_map(f, gmap)))
		goto fail;
	/* a walk that fails is not the input's (no device, no access, no
	 * answer): exit 1, as fabric diff --live */
	if (kind == O_LIVE &&
	    (err = tp_fabric_discover_live(f, ca, (int)port))) {
		tp_cli_err("%s", *tp_fabric_error(f) ? tp_fabric_error(f)
						     : tp_strerror(err));
		rc = err == TP_ERR_UNSUPPORTED ? TP_EXIT_INPUT : TP_EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < nfiles; i++) {
		err = kind == O_IBN ? tp_fabric_read_ibnetdiscover(f, files[i])
				    : tp_fabric_read_ibnd_cache(f, files[i]);
		if (err)
			goto fail;
	}
	if (dmap && (err = tp_fabric_read_domain_map(f, dmap)))
		goto fail;
	if ((err = tp_fabric_finalize(f, NULL)))
		goto fail;
	/* Every bad node file is named (warnings) whatever -k says; with -k the
	 * fabric is written without those hosts' node data. */
	for (int pass = 0; pass < 2; pass++) {
		const char *d = pass ? smi : xml;
		if (!d || !(err = tp_fabric_read_node_dir(f, d, !pass)))
			continue;
		if (!keep || err == TP_ERR_NOMEM)
			goto fail;
		tp_cli_err("%s", tp_fabric_error(f));
		node_rc = tp_cli_exit_code(err);
	}
	tp_finalize_opts_t fo = {.default_gpus = (int)gpus};
	if ((err = tp_fabric_finalize(f, &fo)))
		goto fail;
	if ((err = tp_fabric_to_json(f, &json)))
		goto fail;
	rc = tp_cli_write(a.output, json);
	if (rc == TP_EXIT_OK && strcmp(a.output, "-") != 0 && !tp_cli_quiet)
		fprintf(stderr,
			"topoplace: wrote %s: %zu host%s, %zu switch%s, %zu "
			"link%s, %zu GPU%s, %d rail%s\n",
			a.output, tp_fabric_nhosts(f),
			tp_cli_s(tp_fabric_nhosts(f)), tp_fabric_nswitches(f),
			tp_fabric_nswitches(f) == 1 ? "" : "es",
			tp_fabric_nlinks(f), tp_cli_s(tp_fabric_nlinks(f)),
			tp_fabric_total_gpus(f),
			tp_cli_s(tp_fabric_total_gpus(f)), tp_fabric_rails(f),
			tp_fabric_rails(f) == 1 ? "" : "s");
	if (rc == TP_EXIT_OK)
		rc = node_rc;
	goto out;
fail:
	tp_cli_err("%s", *tp_fabric_error(f) ? tp_fabric_error(f)
					     : tp_strerror(err));
	rc = tp_cli_exit_code(err);
out:
	tp_free(json);
	tp_fabric_destroy(f);
	tp_free(files);
	return rc;
}
