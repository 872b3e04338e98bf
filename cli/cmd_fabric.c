/* topoplace fabric: generate, show, hosts, topology-conf, ibsim-net. */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: topoplace fabric generate fat-tree|rail|nvl72 [PARAMS] -o "
    "FABRIC.json\n"
    "       topoplace fabric show FABRIC.json [--json]\n"
    "       topoplace fabric hosts FABRIC.json [--json]\n"
    "       topoplace fabric topology-conf FABRIC.json [--block] [-o FILE]\n"
    "       topoplace fabric ibsim-net FABRIC.json [--subnet N] [-o FILE]\n"
    "       topoplace fabric health --fabric FABRIC.json [--json] [...]\n"
    "       topoplace fabric diff --fabric FABRIC.json --live|--ibnetdiscover "
    "F\n"
    "\n"
    "generate: a deterministic synthetic fabric.\n"
    "  fat-tree  --leaves N (8) --spines N (4) --hosts-per-leaf N (16)\n"
    "            --uplinks N (parallel links leaf->each spine; default: as "
    "many\n"
    "            as keep each leaf at most 2:1 oversubscribed, rounded up\n"
    "            per spine) --interleave\n"
    "            (host i on leaf i mod leaves, so groups do not follow names)\n"
    "            --nics-per-host N (default one per GPU, as DGX-class hosts;\n"
    "            all on the host's leaf)\n"
    "            --degrade F (0: each cable down or at half width with\n"
    "            probability F; a host's last cable and a leaf's last\n"
    "            up-link only halved, the fabric kept in one piece)\n"
    "            --degrade-seed S (0: which cables)\n"
    "            --pods P (1): three levels: the leaves split evenly into P\n"
    "            pods, --spines spines each, and --cores N (as many as\n"
    "            spines a pod) core switches above, each spine cabled to\n"
    "            each core by --core-uplinks N (default: as many as keep\n"
    "            a spine non-blocking) links, never degraded\n"
    "  rail      --sus N (4) --hosts-per-su N (32) --rails N (8)\n"
    "            --spines-per-rail N (4); each rail is its own subnet\n"
    "  nvl72     --racks N (4) --hosts-per-rack N (18) --leaves-per-rack N "
    "(2,\n"
    "            at most --hosts-per-rack) --spines N (4); each rack is one\n"
    "            NVLink domain\n"
    "  all       --gpus-per-host N --link-gbps G --prefix NAME; a switch "
    "has at\n"
    "            most 65535 ports (a leaf: hosts x NICs + up-links)\n"
    "show:           counts, levels, groups, oversubscription, degraded\n"
    "                and weakly cabled hosts, warnings\n"
    "hosts:          one row per host: leaf switches, groups, GPUs; a\n"
    "                weakly cabled host's cables and ring Gb/s (a ring\n"
    "                runs at its weakest host's pace)\n"
    "topology-conf:  Slurm topology.conf (tree; --block: NVLink blocks, or\n"
    "                the level-1 switch groups, warned, on a fabric\n"
    "                without multi-node NVLink domains)\n"
    "ibsim-net:      net file for ibsim (one subnet)\n"
    "health:         one sweep of link health (see fabric health --help)\n"
    "diff:           links gone, hosts moved, new links, links at another\n"
    "                rate against the cables as they are (see fabric diff\n"
    "                --help)\n"
    "\n"
    "  --json        machine-readable output\n"
    "  -o FILE       output file ('-' = stdout)\n"
    "  -h, --help    this text\n";

/* ---- generate ---- */

enum {
	O_LEAVES = 256,
	O_SPINES,
	O_HPL,
	O_UPL,
	O_INTER,
	O_SUS,
	O_HPS,
	O_RAILS,
	O_SPR,
	O_RACKS,
	O_HPR,
	O_LPR,
	O_GPUS,
	O_GBPS,
	O_PREFIX,
	O_NICS,
	O_DEGRADE,
	O_DSEED,
	O_PODS,
	O_CORES,
	O_CUPL
};
enum { K_FT = 1, K_RAIL = 2, K_NVL = 4, K_ALL = 7 };

static const struct option gen_opts[] = {
    {"leaves", required_argument, NULL, O_LEAVES},
    {"spines", required_argument, NULL, O_SPINES},
    {"hosts-per-leaf", required_argument, NULL, O_HPL},
    {"uplinks", required_argument, NULL, O_UPL},
    {"interleave", no_argument, NULL, O_INTER},
    {"sus", required_argument, NULL, O_SUS},
    {"hosts-per-su", required_argument, NULL, O_HPS},
    {"rails", required_argument, NULL, O_RAILS},
    {"spines-per-rail", required_argument, NULL, O_SPR},
    {"racks", required_argument, NULL, O_RACKS},
    {"hosts-per-rack", required_argument, NULL, O_HPR},
    {"leaves-per-rack", required_argument, NULL, O_LPR},
    {"gpus-per-host", required_argument, NULL, O_GPUS},
    {"link-gbps", required_argument, NULL, O_GBPS},
    {"prefix", required_argument, NULL, O_PREFIX},
    {"nics-per-host", required_argument, NULL, O_NICS},
    {"degrade", required_argument, NULL, O_DEGRADE},
    {"degrade-seed", required_argument, NULL, O_DSEED},
    {"pods", required_argument, NULL, O_PODS},
    {"cores", required_argument, NULL, O_CORES},
    {"core-uplinks", required_argument, NULL, O_CUPL},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The kinds each option shapes and, for an integer, the range it has on
 * its own, checked as the option is read. What depends on other options
 * (--leaves-per-rack at most --hosts-per-rack, hosts, cables, a switch's
 * ports) the generator checks, naming the options. An option another
 * kind ignores is an error. */
static const struct {
	int opt, kinds;
	long lo, hi; /* hi 0: not an integer */
} gen_spec[] = {
    {O_LEAVES, K_FT, 1, 65536}, {O_SPINES, K_FT | K_NVL, 1, 65536},
    {O_HPL, K_FT, 1, 65536},	{O_UPL, K_FT, 1, 256},
    {O_INTER, K_FT, 0, 0},	{O_SUS, K_RAIL, 1, 65536},
    {O_HPS, K_RAIL, 1, 65536},	{O_RAILS, K_RAIL, 1, 32},
    {O_SPR, K_RAIL, 1, 65536},	{O_RACKS, K_NVL, 1, 65536},
    {O_HPR, K_NVL, 1, 1024},	{O_LPR, K_NVL, 1, 1024},
    {O_GPUS, K_ALL, 0, 64},	{O_GBPS, K_ALL, 0, 0},
    {O_PREFIX, K_ALL, 0, 0},	{O_NICS, K_FT, 1, 64},
    {O_DEGRADE, K_FT, 0, 0},	{O_DSEED, K_FT, 0, 1L << 62},
    {O_PODS, K_FT, 1, 65536},	{O_CORES, K_FT, 1, 65536},
    {O_CUPL, K_FT, 1, 65535},
};

/* Option c of `fabric generate kind`: false, the error printed, when the
 * kind ignores it or its integer (*v_p) is out of range. */
static bool gen_option(const char *kind, int kbit, int c, long *v_p)
{
	char name[40];

	for (size_t i = 0; i < sizeof(gen_spec) / sizeof(gen_spec[0]); i++) {
		if (gen_spec[i].opt != c)
			continue;
		snprintf(name, sizeof(name), "--%s",
			 tp_cli_opt_name(gen_opts, c));
		if (!(gen_spec[i].kinds & kbit)) {
			tp_cli_err("fabric generate %s: %s does not apply to "
				   "%s (see --help)",
				   kind, name, kind);
			return false;
		}
		return !gen_spec[i].hi ||
		       tp_cli_int(name, optarg, gen_spec[i].lo, gen_spec[i].hi,
				  v_p);
	}
	return true;
}

static int cmd_generate(int argc, char **argv)
{
	tp_gen_fat_tree_t ft;
	tp_gen_rail_t rl;
	tp_gen_nvl72_t nv;
	const char *kind, *out = NULL;
	tp_fabric_t *f = NULL;
	char *json = NULL;
	int c, kbit, rc = TP_EXIT_INPUT;
	long v = 0;
	double d;
	tp_err_t err;

	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			fputs(usage, stdout);
			return TP_EXIT_OK;
		}
		tp_cli_err("fabric generate: give fat-tree, rail or nvl72");
		return TP_EXIT_INPUT;
	}
	kind = argv[1];
	kbit = !strcmp(kind, "fat-tree") ? K_FT
	       : !strcmp(kind, "rail")	 ? K_RAIL
	       : !strcmp(kind, "nvl72")	 ? K_NVL
					 : 0;
	if (!kbit) {
		tp_cli_err("fabric generate: unknown kind '%s' (fat-tree, rail, nvl72)", kind);
		return TP_EXIT_INPUT;
	}
	tp_gen_fat_tree_defaults(&ft);
	/* DGX-class hosts have one NIC per GPU; the up-links then follow
	 * (at most 2:1) unless --uplinks says otherwise */
	ft.nics_per_host = 0;
	ft.uplinks_per_spine = 0;
	tp_gen_rail_defaults(&rl);
	tp_gen_nvl72_defaults(&nv);
	optind = 1;
	argc--;
	argv++;
	while ((c = tp_cli_opt_next("fabric generate", argc, argv, "o:h",
				    gen_opts)) != -1) {
		if (!gen_option(kind, kbit, c, &v))
			return TP_EXIT_INPUT;
		switch (c) {
		case O_LEAVES: ft.leaves = (int)v; break;
		case O_SPINES: ft.spines = nv.spines = (int)v; break;
		case O_HPL: ft.hosts_per_leaf = (int)v; break;
		case O_UPL: ft.uplinks_per_spine = (int)v; break;
		case O_INTER: ft.interleave = true; break;
		case O_SUS: rl.sus = (int)v; break;
		case O_HPS: rl.hosts_per_su = (int)v; break;
		case O_RAILS: rl.rails = (int)v; break;
		case O_SPR: rl.spines_per_rail = (int)v; break;
		case O_RACKS: nv.racks = (int)v; break;
		case O_HPR: nv.hosts_per_rack = (int)v; break;
		case O_LPR: nv.leaves_per_rack = (int)v; break;
		case O_GPUS:
			ft.gpus_per_host = rl.gpus_per_host = nv.gpus_per_host = (int)v;
			break;
		case O_GBPS:
			if (!tp_cli_double("--link-gbps", optarg, 1, 3200, &d))
				return TP_EXIT_INPUT;
			ft.link_gbps = rl.link_gbps = nv.link_gbps = d;
			break;
		case O_PREFIX:
			ft.host_prefix = rl.host_prefix = nv.host_prefix = optarg;
			break;
		case O_NICS:
			ft.nics_per_host = (int)v;
			break;
		case O_DEGRADE:
			if (!tp_cli_double("--degrade", optarg, 0, 1, &d))
				return TP_EXIT_INPUT;
			ft.degrade = d;
			break;
		case O_DSEED:
			ft.degrade_seed = (uint64_t)v;
			break;
		case O_PODS:
			ft.pods = (int)v;
			break;
		case O_CORES:
			ft.cores = (int)v;
			break;
		case O_CUPL:
			ft.core_uplinks = (int)v;
			break;
		case 'o': out = optarg; break;
		case 'h': fputs(usage, stdout); return TP_EXIT_OK;
		default:
			return TP_EXIT_INPUT;
		}
	}
	if (!tp_cli_no_operand("fabric generate", argc, argv))
		return TP_EXIT_INPUT;
	if (!out) {
		tp_cli_err("fabric generate: -o FABRIC.json is required");
		return TP_EXIT_INPUT;
	}
	if (!strcmp(kind, "fat-tree"))
		err = tp_gen_fat_tree(&ft, &f);
	else if (!strcmp(kind, "rail"))
		err = tp_gen_rail(&rl, &f);
	else
		err = tp_gen_nvl72(&nv, &f);
	if (err) {
		/* the generator has named the parameter out of range */
		if (err != TP_ERR_RANGE)
			tp_cli_err("fabric generate %s: %s", kind,
				   tp_strerror(err));
		return tp_cli_exit_code(err);
	}
	if ((err = tp_fabric_to_json(f, &json))) {
		tp_cli_err("fabric generate: %s", tp_strerror(err));
		rc = tp_cli_exit_code(err);
	} else {
		rc = tp_cli_write(out, json);
	}
	tp_free(json);
	tp_fabric_destroy(f);
	return rc;
}

/* ---- show ---- */

/* Worst (highest) down:up ratio among the groups of a level. */
static double level_oversub(const tp_fabric_t *f, int level)
{
	double worst = 0;

	for (size_t i = 0; i < tp_fabric_ngroups(f); i++) {
		const tp_group_t *g = tp_fabric_group(f, i);
		if (g->level == level && g->up_gbps > 0 &&
		    g->down_gbps / g->up_gbps > worst)
			worst = g->down_gbps / g->up_gbps;
	}
	return worst;
}

static size_t multi_node_domains(const tp_fabric_t *f)
{
	size_t n = 0;

	for (size_t i = 0; i < tp_fabric_nnvdomains(f); i++)
		n += tp_fabric_nvdomain(f, i)->multi_node;
	return n;
}

/* The most host CAs (NICs) any host has: the rails a plan runs. */
static size_t max_nics(const tp_fabric_t *f)
{
	size_t m = 0;

	for (uint32_t h = 0; h < tp_fabric_nhosts(f); h++)
		if (tp_fabric_host(f, h)->ncas > m)
			m = tp_fabric_host(f, h)->ncas;
	return m;
}

static const char *switch_name(const tp_fabric_t *f, uint32_t s, char *buf,
			       size_t n)
{
	const tp_switch_t *sw = tp_fabric_switch(f, s);

	if (sw->desc[0])
		return sw->desc;
	snprintf(buf, n, "0x%016llx", (unsigned long long)sw->guid);
	return buf;
}

/* Whether leaf group g has no capacity up while its subnet has switches
 * above the leaves: with no cable up, its hosts reach no other leaf, a
 * fabric split in pieces that placement would take for one (a cable or
 * port down on a real fabric, an edit to a written one); cables up whose
 * speed no end gave are priced by finalize's assumption (its warning), so
 * cables up that carry nothing should not occur. A lone leaf switch is
 * fine. */
static bool leaf_no_up_gbps(const tp_fabric_t *f, const tp_group_t *g)
{
	int subnet;

	if (g->level != 1 || g->up_gbps > 0 || !g->nswitches)
		return false;
	subnet = tp_fabric_switch(f, g->switches[0])->subnet;
	for (size_t s = 0; s < tp_fabric_nswitches(f); s++) {
		const tp_switch_t *sw = tp_fabric_switch(f, s);
		if (sw->subnet == subnet && sw->level > 1)
			return true;
	}
	return false;
}

/* The cables that are group gi's way up (tp_fabric_link_upgroups). */
static size_t group_uplinks(const tp_fabric_t *f, size_t gi)
{
	uint32_t up[2];
	size_t n = 0;

	for (size_t l = 0; l < tp_fabric_nlinks(f); l++) {
		size_t k = tp_fabric_link_upgroups(f, l, up);
		for (size_t i = 0; i < k; i++)
			n += up[i] == gi;
	}
	return n;
}

/* The warning for a leaf group without capacity up, into buf. */
static const char *no_up_warning(const tp_fabric_t *f, size_t gi, char *buf,
				 size_t n)
{
	const tp_group_t *g = tp_fabric_group(f, gi);
	size_t nup = group_uplinks(f, gi);
	char name[32];
	const char *leaf = switch_name(f, g->switches[0], name, sizeof(name));

	if (nup)
		snprintf(buf, n,
			 "leaf %s: its %zu up-link%s carr%s 0 Gb/s in the "
			 "model",
			 leaf, nup, nup == 1 ? "" : "s",
			 nup == 1 ? "ies" : "y");
	else
		snprintf(buf, n,
			 "leaf %s: no up-link, its %zu host%s reach%s no "
			 "other leaf (the fabric is in pieces)",
			 leaf, g->nhosts, g->nhosts == 1 ? "" : "s",
			 g->nhosts == 1 ? "es" : "");
	return buf;
}

/* Every warning show reports: the fabric's own, then each leaf's without
 * capacity up, handed to fn one at a time. */
static void each_warning(const tp_fabric_t *f,
			 void (*fn)(const char *w, void *arg), void *arg)
{
	char buf[320];

	for (size_t i = 0; i < tp_fabric_nwarnings(f); i++)
		fn(tp_fabric_warning(f, i), arg);
	for (size_t i = 0; i < tp_fabric_ngroups(f); i++)
		if (leaf_no_up_gbps(f, tp_fabric_group(f, i)))
			fn(no_up_warning(f, i, buf, sizeof(buf)), arg);
}

static void warning_json(const char *w, void *arg)
{
	cJSON_AddItemToArray(arg, cJSON_CreateString(w));
}

static void warning_text(const char *w, void *arg)
{
	bool *head = arg;

	printf("%s  %s\n", *head ? "" : "warnings:\n", w);
	*head = true;
}

static cJSON *show_json(const tp_fabric_t *f, size_t weak)
{
	cJSON *o = cJSON_CreateObject(), *a;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "format", "topoplace-fabric-summary/1");
	cJSON_AddNumberToObject(o, "hosts", (double)tp_fabric_nhosts(f));
	cJSON_AddNumberToObject(o, "switches", (double)tp_fabric_nswitches(f));
	cJSON_AddNumberToObject(o, "links", (double)tp_fabric_nlinks(f));
	cJSON_AddNumberToObject(o, "cas", (double)tp_fabric_ncas(f));
	cJSON_AddNumberToObject(o, "sharp_cas", (double)tp_fabric_sharp_cas(f));
	cJSON_AddNumberToObject(o, "subnets", tp_fabric_nsubnets(f));
	a = cJSON_AddArrayToObject(o, "switch_levels");
	for (int l = 1; a && l <= tp_fabric_nlevels(f); l++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)tp_fabric_switches_at(f, l)));
	cJSON_AddNumberToObject(o, "rails", tp_fabric_rails(f));
	cJSON_AddNumberToObject(o, "nics_per_host_max", (double)max_nics(f));
	a = cJSON_AddArrayToObject(o, "groups");
	for (int l = 1; a && l <= tp_fabric_ngroup_levels(f); l++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)tp_fabric_groups_at(f, l)));
	a = cJSON_AddArrayToObject(o, "oversubscription");
	for (int l = 1; a && l <= tp_fabric_ngroup_levels(f); l++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(level_oversub(f, l)));
	cJSON_AddNumberToObject(o, "gpus", (double)tp_fabric_total_gpus(f));
	cJSON_AddNumberToObject(o, "nvlink_domains", (double)tp_fabric_nnvdomains(f));
	cJSON_AddNumberToObject(o, "multi_node_nvlink_domains", (double)multi_node_domains(f));
	cJSON_AddNumberToObject(o, "unnamed_cas", (double)tp_fabric_unnamed_cas(f));
	cJSON_AddNumberToObject(o, "degraded_hosts", (double)tp_fabric_degraded_hosts(f));
	cJSON_AddNumberToObject(o, "weak_hosts", (double)weak);
	if ((a = cJSON_AddArrayToObject(o, "warnings")))
		each_warning(f, warning_json, a);
	return o;
}

static void show_text(const tp_fabric_t *f, const char *path, size_t weak)
{
	printf("fabric %s\n", path);
	printf("  hosts          %zu (%zu GPUs, %zu degraded, %zu weakly cabled)\n",
	       tp_fabric_nhosts(f), tp_fabric_total_gpus(f), tp_fabric_degraded_hosts(f), weak);
	printf("  switches       %zu", tp_fabric_nswitches(f));
	size_t leveled = 0;
	for (int l = 1; l <= tp_fabric_nlevels(f); l++) {
		printf("%slevel %d: %zu", l == 1 ? " (" : ", ", l, tp_fabric_switches_at(f, l));
		leveled += tp_fabric_switches_at(f, l);
	}
	/* switches the levels do not reach (no cable towards a host: an
	 * unused switch in a dump) are counted so the figures add up */
	if (leveled < tp_fabric_nswitches(f))
		printf("%sno level: %zu", tp_fabric_nlevels(f) ? ", " : " (",
		       tp_fabric_nswitches(f) - leveled);
	printf("%s\n", tp_fabric_nlevels(f) || leveled < tp_fabric_nswitches(f)
			   ? ")"
			   : "");
	printf("  CAs            %zu (%zu SHArP, %zu without hostname)\n", tp_fabric_ncas(f),
	       tp_fabric_sharp_cas(f), tp_fabric_unnamed_cas(f));
	printf("  links          %zu\n", tp_fabric_nlinks(f));
	printf("  subnets        %d\n", tp_fabric_nsubnets(f));
	printf("  rails          %d (the most leaves a host is cabled to; up "
	       "to %zu NICs a host, "
	       "a plan's rails)\n",
	       tp_fabric_rails(f), max_nics(f));
	for (int l = 1; l <= tp_fabric_ngroup_levels(f); l++) {
		double os = level_oversub(f, l);
		printf("  level %d groups %zu", l, tp_fabric_groups_at(f, l));
		if (os > 0)
			printf(" (oversubscription up to %.2f:1)", os);
		printf("\n");
	}
	printf("  NVLink domains %zu (%zu multi-node)\n", tp_fabric_nnvdomains(f),
	       multi_node_domains(f));
	bool head = false;
	each_warning(f, warning_text, &head);
}

static int hosts_out(const tp_fabric_t *f, bool json)
{
	char buf[32];
	cJSON *arr = json ? cJSON_CreateArray() : NULL;
	int levels = tp_fabric_ngroup_levels(f);
	tp_state_t *s = tp_state_create(f), *sr = tp_state_create(f);

	/* sr: the same cables with NICs loaded by rate (--nics-by-rate,
	 * NicsByRate=yes): their sum */
	tp_state_set_nics_by_rate(sr, true);
	if ((json && !arr) || !s || !sr) {
		cJSON_Delete(arr);
		tp_state_destroy(s);
		tp_state_destroy(sr);
		tp_cli_err("fabric hosts: %s", tp_strerror(TP_ERR_NOMEM));
		return TP_EXIT_FAIL;
	}
	double best = 0; /* the best-cabled host's ring Gb/s */
	for (size_t i = 0; i < tp_fabric_nhosts(f); i++) {
		double ring = 0;
		tp_state_host_cables(s, (uint32_t)i, &ring, NULL);
		if (ring > best)
			best = ring;
	}
	if (!json)
		printf("%-24s %-5s %-20s %s\n", "HOST", "GPUS", "GROUPS", "LEAVES");
	for (size_t i = 0; i < tp_fabric_nhosts(f); i++) {
		const tp_host_t *h = tp_fabric_host(f, i);
		double ring = 0, by_rate = 0;
		bool weak = false;
		size_t cables = tp_state_host_cables(s, (uint32_t)i, &ring, &weak);
		tp_state_host_cables(sr, (uint32_t)i, &by_rate, NULL);
		if (json) {
			cJSON *o = cJSON_CreateObject(), *a;
			cJSON_AddItemToArray(arr, o);
			cJSON_AddStringToObject(o, "name", h->name);
			cJSON_AddNumberToObject(o, "gpus", (double)h->ngpus);
			a = cJSON_AddArrayToObject(o, "leaves");
			for (size_t l = 0; a && l < h->nleaves; l++)
				cJSON_AddItemToArray(a, cJSON_CreateString(switch_name(f, h->leaves[l], buf, sizeof(buf))));
			a = cJSON_AddArrayToObject(o, "groups");
			for (int l = 0; a && l < levels; l++)
				cJSON_AddItemToArray(a, h->group[l] == TP_ID_NONE ? cJSON_CreateNull() : cJSON_CreateNumber(h->group[l]));
			cJSON_AddBoolToObject(o, "degraded", h->degraded);
			cJSON_AddNumberToObject(o, "cables", (double)cables);
			cJSON_AddNumberToObject(o, "ring_gbps", ring);
			cJSON_AddNumberToObject(o, "ring_gbps_by_rate",
						by_rate);
			cJSON_AddBoolToObject(o, "weak", weak);
			if (h->nvdomain != TP_ID_NONE)
				cJSON_AddStringToObject(o, "nvlink_domain", tp_fabric_nvdomain(f, h->nvdomain)->name);
			continue;
		}
		char groups[128] = "";
		size_t gl = 0;
		for (int l = 0; l < levels && gl < sizeof(groups) - 16; l++) {
			if (h->group[l] == TP_ID_NONE)
				gl += (size_t)snprintf(groups + gl, sizeof(groups) - gl, "%s-", l ? "/" : "");
			else
				gl += (size_t)snprintf(groups + gl, sizeof(groups) - gl, "%s%u", l ? "/" : "", h->group[l]);
		}
		printf("%-24s %-5zu %-20s ", h->name, h->ngpus, gl ? groups : "-");
		for (size_t l = 0; l < h->nleaves; l++)
			printf("%s%s", l ? "," : "", switch_name(f, h->leaves[l], buf, sizeof(buf)));
		printf("%s", h->degraded ? " (degraded)" : "");
		if (weak)
			printf(" (weakly cabled: %zu cable%s, a ring %g of %g "
			       "Gb/s%s",
			       cables, cables == 1 ? "" : "s", ring, best,
			       by_rate != ring ? "" : ")");
		if (weak && by_rate != ring)
			printf("; %g by rate)", by_rate);
		printf("\n");
	}
	tp_state_destroy(s);
	tp_state_destroy(sr);
	if (json && !tp_cli_put_json(arr))
		return TP_EXIT_FAIL;
	return TP_EXIT_OK;
}

static int cmd_view(const char *sub, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"block", no_argument, NULL, 'b'},
		{"subnet", required_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false, block = false;
	const char *out = NULL;
	long subnet = -1;
	int c, rc = TP_EXIT_OK;
	tp_fabric_t *f;
	char *text = NULL;
	tp_err_t err;

	char cmd[32];

	snprintf(cmd, sizeof(cmd), "fabric %s", sub);
	optind = 1;
	while ((c = tp_cli_opt_next(cmd, argc, argv, "o:h", opts)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'b': block = true; break;
		case 's':
			if (!tp_cli_int("--subnet", optarg, 0, 1024, &subnet))
				return TP_EXIT_INPUT;
			break;
		case 'o': out = optarg; break;
		case 'h': fputs(usage, stdout); return TP_EXIT_OK;
		default:
			return TP_EXIT_INPUT;
		}
	}
	if (optind != argc - 1) {
		tp_cli_err("fabric %s: give exactly one FABRIC.json", sub);
		return TP_EXIT_INPUT;
	}
	bool is_show = !strcmp(sub, "show"), is_hosts = !strcmp(sub, "hosts");
	const char *stray = NULL; /* an option this subcommand ignores */
	if (json && !is_show && !is_hosts)
		stray = "--json";
	else if (block && strcmp(sub, "topology-conf"))
		stray = "--block";
	else if (subnet >= 0 && strcmp(sub, "ibsim-net"))
		stray = "--subnet";
	else if (out && (is_show || is_hosts))
		stray = "-o/--output";
	if (stray) {
		tp_cli_err("fabric %s: %s does not apply to %s (see --help)",
			   sub, stray, sub);
		return TP_EXIT_INPUT;
	}
	if (!(f = tp_cli_load(argv[optind], &rc)))
		return rc;
	if (is_show) {
		size_t weak = tp_cli_weak_hosts(f);
		if (weak == SIZE_MAX) {
			tp_cli_err("fabric show: %s", tp_strerror(TP_ERR_NOMEM));
			rc = TP_EXIT_FAIL;
		} else if (json) {
			if (!tp_cli_put_json(show_json(f, weak)))
				rc = TP_EXIT_FAIL;
		} else {
			show_text(f, argv[optind], weak);
		}
	} else if (is_hosts) {
		rc = hosts_out(f, json);
	} else if (!strcmp(sub, "topology-conf") && !tp_fabric_nhosts(f)) {
		tp_cli_err("%s: no hosts in the fabric, so no topology.conf to "
			   "write",
			   argv[optind]);
		rc = TP_EXIT_INPUT;
	} else {
		/* blocks fall back to the leaf groups: say so, as the file
		 * says it only in a comment */
		if (block && !multi_node_domains(f))
			fprintf(stderr,
				"topoplace: warning: %s: no multi-node NVLink "
				"domains, so the blocks are the level-1 switch "
				"groups\n",
				argv[optind]);
		err = !strcmp(sub, "topology-conf")
			      ? tp_fabric_topology_conf(f, block, &text)
			      : tp_fabric_ibsim_net(f, (int)subnet, &text);
		if (err) {
			tp_cli_err("%s: %s", argv[optind],
				   *tp_fabric_error(f) ? tp_fabric_error(f) : tp_strerror(err));
			rc = tp_cli_exit_code(err);
		} else {
			rc = tp_cli_write(out, text);
		}
	}
	tp_free(text);
	tp_fabric_destroy(f);
	return rc;
}

int tp_cmd_fabric(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub || !strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		fputs(usage, sub ? stdout : stderr);
		return sub ? TP_EXIT_OK : TP_EXIT_INPUT;
	}
	if (!strcmp(sub, "generate"))
		return cmd_generate(argc - 1, argv + 1);
	if (!strcmp(sub, "health"))
		return tp_cmd_fabric_health(argc - 1, argv + 1);
	if (!strcmp(sub, "diff"))
		return tp_cmd_fabric_diff(argc - 1, argv + 1);
	if (!strcmp(sub, "show") || !strcmp(sub, "hosts") ||
	    !strcmp(sub, "topology-conf") || !strcmp(sub, "ibsim-net"))
		return cmd_view(sub, argc - 1, argv + 1);
	tp_cli_err("fabric: unknown subcommand '%s' (generate, show, hosts, topology-conf, ibsim-net, health, diff)", sub);
	return TP_EXIT_INPUT;
}
