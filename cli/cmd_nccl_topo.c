/* topoplace nccl-topo: node hwloc XML -> NCCL_TOPO_FILE per host.
 *
 * Notes:
 * - The conversion runs here, offline, because hwloc's XML importer can
 *   crash on malformed input; the SPANK plugin only checks that
 *   topodir/<host>.xml has a <system> root.
 * - Each file is written to a temporary name and renamed, so a job
 *   starting during a rerun sees the old file or the new one, never half.
 * - One bad node file does not stop the others: it is reported and the
 *   exit status says so at the end.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
	"Usage: topoplace nccl-topo --node-xml DIR -o OUTDIR [--fabric FABRIC.json]\n"
	"\n"
	"Convert each node's hwloc XML (DIR/<host>.xml, as for 'discover\n"
	"--node-xml') into an NCCL topology file OUTDIR/<host>.xml, the\n"
	"NCCL_TOPO_FILE the SPANK plugin exports when its topodir= is OUTDIR.\n"
	"Written: CPUs per NUMA node, PCI bridges down to GPUs and InfiniBand\n"
	"NICs, NVLinks from hwloc's NVLinkBandwidth; NCCL fills the rest\n"
	"(device index, compute capability, NIC speed, GPUDirect) at run time.\n"
	"Files without GPUs or NICs (exported without I/O) are skipped.\n"
	"\n"
	"Options:\n"
	"  --node-xml DIR      hwloc XML per node: DIR/<host>.xml\n"
	"  -o, --output DIR    where to write <host>.xml (created if absent)\n"
	"  --fabric FILE       fabric JSON: skip hosts it does not hold\n"
	"  -q, --quiet         do not print warnings or the summary\n"
	"  -h, --help          this text\n";

/* Sorted <host>.xml names of regular files in dir (stem non-empty). */
static int list_xml(const char *dir, char ***names_p, size_t *n_p)
{
	tp_err_t err = tp_list_dir(dir, ".xml", names_p, n_p);

	if (err == TP_ERR_NOMEM) {
		tp_cli_err("%s: out of memory", dir);
		return TP_EXIT_FAIL;
	}
	if (err) {
		tp_cli_err("%s: cannot open directory: %s", dir,
			   strerror(errno));
		return TP_EXIT_INPUT;
	}
	return TP_EXIT_OK;
}

static int write_atomic(const char *outdir, const char *host, const char *xml)
{
	char *tmp = tp_asprintf("%s/.%s.xml.tmp", outdir, host);
	char *dst = tp_asprintf("%s/%s.xml", outdir, host);
	int rc = TP_EXIT_FAIL;

	if (!tmp || !dst) {
		tp_cli_err("out of memory");
		goto out;
	}
	rc = tp_cli_write(tmp, xml);
	if (rc != TP_EXIT_OK) {
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, dst) != 0) {
		tp_cli_err("%s: cannot rename to %s: %s", tmp, dst,
			   strerror(errno));
		unlink(tmp);
		rc = TP_EXIT_FAIL;
	}
out:
	tp_free(tmp);
	tp_free(dst);
	return rc;
}

int tp_cmd_nccl_topo(int argc, char **argv)
{
	enum { O_XML = 256 };
	static const struct option opts[] = {
		{"node-xml", required_argument, NULL, O_XML},
		{"fabric", required_argument, NULL, TP_CLI_OPT_FABRIC},
		{"output", required_argument, NULL, 'o'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	tp_cli_args_t a = {.usage = usage};
	const char *dir = NULL;
	size_t n = 0, wrote = 0, skipped = 0, failed = 0;
	tp_fabric_t *f = NULL;
	char **names = NULL;
	int c, rc = TP_EXIT_INPUT;

	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "o:qh", opts, &a)) != -1) {
		switch (c) {
		case O_XML:
			dir = optarg;
			break;
		case 'q':
			tp_cli_quiet = true;
			break;
		}
	}
	if (a.exit >= 0)
		return a.exit;
	if (!tp_cli_no_operand("nccl-topo", argc, argv))
		return TP_EXIT_INPUT;
	if (!dir || !a.output) {
		tp_cli_err("nccl-topo: --node-xml DIR and -o OUTDIR are required");
		return TP_EXIT_INPUT;
	}
	if (!strcmp(a.output, "-")) {
		tp_cli_err("nccl-topo: -o -: OUTDIR is a directory (a file per "
			   "host), not stdout");
		return TP_EXIT_INPUT;
	}
	if (a.fabric && !(f = tp_cli_load(a.fabric, &rc)))
		return rc;
	if ((rc = list_xml(dir, &names, &n)) != TP_EXIT_OK)
		goto out;
	if (mkdir(a.output, 0755) != 0 && errno != EEXIST) {
		tp_cli_err("%s: cannot create directory: %s", a.output,
			   strerror(errno));
		rc = TP_EXIT_FAIL;
		goto out;
	}
	struct stat st, in;
	if (stat(a.output, &st) != 0 || !S_ISDIR(st.st_mode)) {
		tp_cli_err("nccl-topo: -o %s: not a directory", a.output);
		rc = TP_EXIT_INPUT;
		goto out;
	}
	/* both hold <host>.xml: writing there would replace the hwloc
	 * exports the next run (and discover --node-xml) reads */
	if (stat(dir, &in) == 0 && in.st_dev == st.st_dev &&
	    in.st_ino == st.st_ino) {
		tp_cli_err("nccl-topo: -o %s is the --node-xml directory %s: "
			   "its hwloc files would be overwritten",
			   a.output, dir);
		rc = TP_EXIT_INPUT;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char *host = tp_strndup(names[i], strlen(names[i]) - 4);
		char *path = tp_asprintf("%s/%s", dir, names[i]);
		char *xml = NULL, *msg = NULL;
		tp_err_t err;

		if (!host || !path) {
			tp_free(host);
			tp_free(path);
			tp_cli_err("out of memory");
			rc = TP_EXIT_FAIL;
			goto out;
		}
		if (f && tp_fabric_host_find(f, host) == TP_ID_NONE) {
			if (!tp_cli_quiet)
				tp_cli_err("warning: %s: host %s is not in "
					   "%s; skipped",
					   path, host, a.fabric);
			skipped++;
		} else if ((err = tp_file_check_regular(path))) {
			/* a FIFO would block the reader: named, not read */
			tp_cli_err("%s: cannot read: %s", path,
				   tp_file_strerror(err));
			failed++;
		} else if ((err = tp_node_nccl_topo_from_hwloc(path, &xml,
							       &msg))) {
			if (err == TP_ERR_NOMEM) {
				tp_cli_err("%s", msg ? msg : tp_strerror(err));
				rc = TP_EXIT_FAIL;
			} else if (err == TP_ERR_NOTFOUND) {
				if (!tp_cli_quiet)
					tp_cli_err("warning: %s; skipped", msg);
				skipped++;
			} else {
				tp_cli_err("%s", msg ? msg : tp_strerror(err));
				failed++;
			}
		} else {
			rc = write_atomic(a.output, host, xml);
			if (rc == TP_EXIT_OK)
				wrote++;
		}
		tp_free(msg);
		tp_free(xml);
		tp_free(host);
		tp_free(path);
		/* Out of memory or an unwritable OUTDIR: the rest would fail
		 * the same way. */
		if (rc != TP_EXIT_OK)
			goto out;
	}
	if (n == 0 && !tp_cli_quiet)
		tp_cli_err("warning: %s: no *.xml node files", dir);
	if (!tp_cli_quiet)
		fprintf(stderr,
			"topoplace: wrote %zu NCCL topology file%s to %s "
			"(%zu skipped, %zu failed)\n",
			wrote, wrote == 1 ? "" : "s", a.output, skipped, failed);
	rc = failed ? TP_EXIT_INPUT : TP_EXIT_OK;
	if (!wrote && !failed) {
		/* every file skipped, or none there: nothing for NCCL */
		tp_cli_err("nccl-topo: %s: no node file gave a topology%s", dir,
			   f ? " (none names a host of the fabric with GPUs)"
			     : "");
		rc = TP_EXIT_INPUT;
	}
out:
	tp_names_free(names, n);
	tp_fabric_destroy(f);
	return rc;
}
