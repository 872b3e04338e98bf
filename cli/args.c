/* The options most commands share, read in one place. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The long option arg (after "--", up to any '=') abbreviates: the unique
 * one, else NULL; *nmatch_p: how many it abbreviates. */
static const struct option *long_opt(const struct option *opts, const char *arg,
				     int *nmatch_p)
{
	size_t len = strcspn(arg, "=");
	const struct option *hit = NULL;

	*nmatch_p = 0;
	for (; opts->name; opts++) {
		if (strncmp(opts->name, arg, len))
			continue;
		if (strlen(opts->name) == len) {
			*nmatch_p = 1;
			return opts;
		}
		hit = opts;
		++*nmatch_p;
	}
	return *nmatch_p == 1 ? hit : NULL;
}

/* What getopt_long (opterr 0) refused, said in one line. An unknown short
 * option inside a cluster leaves optind on its word, so the word before
 * is named only when it is the long option getopt_long stopped at. */
static void bad_option(const char *cmd, char **argv, const char *shortopts,
		       const struct option *opts)
{
	const char *arg = argv[optind - 1];
	const struct option *o = NULL;
	int nmatch = 0, len;

	if (!strncmp(arg, "--", 2))
		o = long_opt(opts, arg + 2, &nmatch);
	len = (int)strcspn(arg, "=");
	fprintf(stderr, "topoplace %s: ", cmd);
	if (nmatch > 1)
		fprintf(stderr, "ambiguous option '%.*s'", len, arg);
	else if (!optopt && !strncmp(arg, "--", 2))
		fprintf(stderr, "unrecognized option '%.*s'", len, arg);
	else if (o && o->val == optopt && arg[len])
		fprintf(stderr, "option '%.*s' takes no argument", len, arg);
	else if (o && o->val == optopt)
		fprintf(stderr, "option '%s' requires an argument", arg);
	else if (strchr(shortopts, optopt))
		fprintf(stderr, "option '-%c' requires an argument", optopt);
	else
		fprintf(stderr, "unrecognized option '-%c'", optopt);
	fputs(" (see --help)\n", stderr);
}

int tp_cli_opt_next(const char *cmd, int argc, char **argv,
		    const char *shortopts, const struct option *opts)
{
	int c;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, opts, NULL);
	if (c == '?' || c == ':')
		bad_option(cmd, argv, shortopts, opts);
	else if (c != -1 && optarg && !*optarg) {
		/* "--fabric ''" or "--fabric=": no option takes an empty
		 * value, and the file error it would reach names nothing */
		const char *word = argv[optind - 1];
		if (!*word && optind >= 2)
			word = argv[optind - 2];
		fprintf(stderr,
			"topoplace %s: option '%.*s' has an empty value (see "
			"--help)\n",
			cmd, (int)strcspn(word, "="), word);
		return '?';
	}
	return c == ':' ? '?' : c;
}

const char *tp_cli_opt_name(const struct option *opts, int c)
{
	for (; opts->name; opts++)
		if (opts->val == c)
			return opts->name;
	return "";
}

bool tp_cli_no_operand(const char *cmd, int argc, char **argv)
{
	if (optind >= argc)
		return true;
	tp_cli_err("%s: unexpected argument '%s' (see --help)", cmd,
		   argv[optind]);
	return false;
}

int tp_cli_getopt(int argc, char **argv, const char *shortopts,
		  const struct option *opts, tp_cli_args_t *a)
{
	int c;

	a->exit = -1;
	while ((c = tp_cli_opt_next(a->name ? a->name : argv[0], argc, argv,
				    shortopts, opts)) != -1) {
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
			a->exit = TP_EXIT_INPUT;
			return -1;
		default:
			return c;
		}
	}
	return -1;
}
