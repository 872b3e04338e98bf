/* topoplace config: topoplace.conf from the plugins' own key table. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "tp_plugin.h"

static const char usage[] =
    "Usage: topoplace config --dump\n"
    "       topoplace config --check FILE\n"
    "\n"
    "topoplace.conf (beside slurm.conf) configures the Slurm plugins; see\n"
    "topoplace.conf(5).\n"
    "  --dump        every key with its type, default, range and meaning, as\n"
    "                a commented file of defaults (the table the plugins use)\n"
    "  --check FILE  read FILE, the fabric and the link state it names as\n"
    "                the plugins do, and match the fabric's hosts with\n"
    "                slurm.conf's nodes (SLURM_CONF's, or the slurm.conf\n"
    "                beside FILE when there is one) as they do: exit 0\n"
    "                and print the effective settings (a warning on\n"
    "                stderr for a key that does nothing, LinkState without\n"
    "                FabricFile, a SLURM_CONF it cannot read), or one\n"
    "                line FILE:LINE: error, exit 2\n"
    "  -h, --help    this text\n";

static const char *type_name(tp_pconf_type_t t)
{
	switch (t) {
	case TP_PCONF_STRING: return "string";
	case TP_PCONF_BOOL: return "yes|no";
	case TP_PCONF_UINT: return "integer";
	case TP_PCONF_LIST: return "list";
	}
	return "?";
}

static void dump_table(void)
{
	printf("# topoplace.conf - keys, defaults and meaning (topoplace.conf(5))\n");
	for (size_t i = 0; i < tp_pconf_nkeys(); i++) {
		const tp_pconf_key_t *k = tp_pconf_key(i);
		printf("\n# %s (%s", k->name,
		       k->choices ? k->choices : type_name(k->type));
		if (k->type == TP_PCONF_UINT)
			printf(", %u..%u", k->min, k->max);
		printf("): %s\n", k->doc);
		if (k->def)
			printf("#%s=%s\n", k->name, k->def);
		else
			printf("#%s=\n", k->name);
	}
}

/* The fabric's hosts against slurm.conf's nodes, as the plugins match
 * them (tp_stree_match: the same set, or a flat topology): slurm.conf is
 * SLURM_CONF's, else the one beside path (where the plugins find
 * topoplace.conf). Without one the nodes are not compared; with an
 * Include, whose files are not read, a line says they are not. */
static int check_nodes(const char *path, const tp_fabric_t *f,
		       const tp_stree_t *tree)
{
	const char *env = getenv("SLURM_CONF");
	char *sc =
	    env && *env ? tp_strdup(env) : tp_pconf_path(path, "slurm.conf");
	char **names = NULL, *why = NULL;
	size_t n = 0;
	bool include = false;
	int rc = TP_EXIT_OK;
	tp_err_t err;

	if (!sc)
		return TP_EXIT_FAIL;
	if (access(sc, R_OK)) {
		/* none to compare with: the fabric's own checks stand, but
		 * a SLURM_CONF the plugins would not find either is named */
		if (env && *env)
			tp_cli_err(
			    "note: SLURM_CONF=%s: %s: the fabric's hosts "
			    "not compared with slurm.conf's nodes",
			    sc, strerror(errno));
	} else if ((err =
			tp_slurm_conf_nodes(sc, &names, &n, &include, &why))) {
		tp_cli_err("%s", why ? why : tp_strerror(err));
		rc = err == TP_ERR_NOMEM ? TP_EXIT_FAIL : TP_EXIT_INPUT;
	} else if (include) {
		tp_cli_err("note: %s includes other files, which this does not "
			   "read: the fabric's hosts not compared with its "
			   "nodes",
			   sc);
	} else if (!tp_stree_match(tree, f, (const char *const *)names, n,
				   &why)) {
		tp_cli_err("%s: the fabric does not match %s: %s: the plugins "
			   "would use a flat topology, Slurm's selection",
			   path, sc, why ? why : "out of memory");
		rc = why ? TP_EXIT_INPUT : TP_EXIT_FAIL;
	}
	tp_hostlist_free(names, n);
	tp_free(why);
	tp_free(sc);
	return rc;
}

/* The fabric and link state that conf (read from path) names, read as
 * the plugins read them: the fabric and its switch tree through
 * tp_pconf_load_fabric, as show does, the link state through
 * tp_state_load_json_regular, neither blocking on a FIFO. A LinkState
 * file that does not exist yet is only noted: the plugins price the links
 * healthy until it appears. */
static int check_files(const char *path, tp_pconf_t *conf)
{
	tp_fabric_t *f = NULL;
	tp_state_t *st = NULL;
	tp_stree_t tree;
	char *why = NULL, *ls = NULL;
	int rc = TP_EXIT_OK;
	tp_err_t err = tp_pconf_load_fabric(path, TP_SWITCH_TABLE_MAX, conf, &f,
					    &tree, &why);

	if (err) {
		/* the fabric's errors name the file and line already */
		if (why && !strncmp(why, path, strlen(path)))
			tp_cli_err("%s", why);
		else
			tp_cli_err("%s: %s", path,
				   why ? why : tp_strerror(err));
		rc = err == TP_ERR_NOMEM ? TP_EXIT_FAIL : TP_EXIT_INPUT;
		goto out;
	}
	rc = check_nodes(path, f, &tree);
	tp_stree_free(&tree);
	if (rc != TP_EXIT_OK || !conf->link_state)
		goto out;
	if (!(ls = tp_pconf_path(path, conf->link_state))) {
		rc = TP_EXIT_FAIL;
		goto out;
	}
	err = tp_state_load_json_regular(f, ls, &st, &why);
	if (err == TP_ERR_NOTFOUND) {
		tp_cli_err("warning: %s:%zu: LinkState %s: no such file (yet): "
			   "the plugins price the links healthy until it "
			   "appears",
			   path, conf->link_state_line, ls);
	} else if (err) {
		/* why names the file */
		tp_cli_err("%s:%zu: LinkState: %s", path, conf->link_state_line,
			   why ? why : tp_strerror(err));
		rc = err == TP_ERR_NOMEM ? TP_EXIT_FAIL : TP_EXIT_INPUT;
	}
out:
	tp_state_destroy(st);
	tp_fabric_destroy(f);
	tp_free(ls);
	tp_free(why);
	return rc;
}

int tp_cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{"dump", no_argument, NULL, 'd'},
		{"check", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *check = NULL;
	bool dump = false;
	int c;

	optind = 1;
	while ((c = tp_cli_opt_next("config", argc, argv, "h", opts)) != -1) {
		switch (c) {
		case 'd': dump = true; break;
		case 'c': check = optarg; break;
		case 'h': fputs(usage, stdout); return TP_EXIT_OK;
		default: return TP_EXIT_INPUT;
		}
	}
	if (optind < argc || dump == (check != NULL)) {
		tp_cli_err("config: give --dump or --check FILE (see --help)");
		return TP_EXIT_INPUT;
	}
	if (dump) {
		dump_table();
		return TP_EXIT_OK;
	}
	tp_pconf_t conf;
	char *msg = NULL, *text;
	tp_pconf_defaults(&conf);
	tp_err_t err = tp_pconf_load(check, &conf, &msg);
	if (err) {
		if (err == TP_ERR_NOTFOUND && !msg)
			tp_cli_err("%s: no such file", check);
		else
			tp_cli_err("%s", msg ? msg : tp_strerror(err));
		tp_free(msg);
		tp_pconf_free(&conf);
		return tp_cli_exit_code(err);
	}
	/* the links it prices are the fabric's: a flat topology has none */
	if (conf.link_state && !conf.fabric_file)
		tp_cli_err("warning: %s: LinkState does nothing without "
			   "FabricFile",
			   check);
	int rc = conf.fabric_file ? check_files(check, &conf) : TP_EXIT_OK;
	if (rc != TP_EXIT_OK) {
		tp_pconf_free(&conf);
		return rc;
	}
	text = tp_pconf_dump(&conf);
	tp_pconf_free(&conf);
	if (!text)
		return TP_EXIT_FAIL;
	fputs(text, stdout);
	tp_free(text);
	return TP_EXIT_OK;
}
