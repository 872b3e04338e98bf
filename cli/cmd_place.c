/* topoplace place | cost: one decision, one prediction. */
#include "config.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tp_placement.h"
#include "tp_sched.h"

static const char place_usage[] =
    "Usage: topoplace place --fabric F.json --request REQ [--state S.json]\n"
    "                       [--policy P] [--seed N] [--nics-by-rate] [--json]\n"
    "                       [--node-weights health|SLURM.CONF]\n"
    "\n"
    "Choose hosts for one job on the free part of the fabric and say why.\n"
    "  --request REQ   comma-separated items, each at most once:\n"
    "                  nodes=N, gpus-per-node=G, gpus=T: nodes= or gpus=\n"
    "                  is needed; any two give the third, which must come\n"
    "                  out whole (nodes=4,gpus=8: 2 GPUs on each of 4\n"
    "                  hosts); nodes=N alone: N whole hosts; gpus=T alone:\n"
    "                  T GPUs on hosts the policy picks\n"
    "                  exclusive | shared (default: hosts may hold others)\n"
    "                  bytes=SIZE (all-reduce size, default 1G, at most 1P)\n"
    "  --state S.json  allocation state (topoplace-state/1): busy GPUs, down\n"
    "                  hosts, degraded links, other jobs' traffic\n"
    "  --policy P      topoplace (default), slurm-tree (Slurm 24.11's\n"
    "                  topology/tree), slurm-tree-22.05, slurm-block,\n"
    "                  slurm-linear, first-fit, random\n"
    "  --seed N        for seeded policies (default 1)\n"
    "  --nics-by-rate  price as cost --nics-by-rate does (what slurmctld\n"
    "                  prices with NicsByRate=yes in topoplace.conf)\n"
    "  --node-weights W  Slurm's node weights (Weight=): 'health' gives\n"
    "                  the weakly cabled hosts (with --state, on its link\n"
    "                  health) Weight=100 and the rest 1, or a slurm.conf's\n"
    "                  NodeName= lines; default: all equal. slurm-tree,\n"
    "                  slurm-tree-22.05 and slurm-block order nodes by\n"
    "                  them as cons_tres does; topoplace as its native\n"
    "                  plugin does (the lightest hosts when they hold the\n"
    "                  job, else Slurm's tree selection); the other\n"
    "                  policies ignore them\n"
    "  --json          policy, placed (true), hosts (ring order), gpus,\n"
    "                  span, predicted_s, ideal_s, decision_s, explain; a\n"
    "                  job that does not fit: policy, placed (false),\n"
    "                  request, reason (the error line's, exit 1 or 2)\n"
    "  -h, --help      this text\n"
    "Exit status: 0 placed, 1 the job does not fit the free part now, 2 bad\n"
    "input or a job that can never fit.\n";

static const char cost_usage[] =
    "Usage: topoplace cost --fabric F.json --hosts LIST --bytes SIZE\n"
    "                      [--algo "
    "ring|hierarchical|tree|reduce-scatter|all-gather]\n"
    "                      [--gpus-per-host N] [--background S.json]\n"
    "                      [--nics-by-rate] [--segment SIZE] [--coll]\n"
    "                      [--json]\n"
    "\n"
    "The cost model's prediction for one collective over exactly these hosts\n"
    "in this order.\n"
    "  --fabric F.json      the fabric model\n"
    "  --hosts LIST         the hosts, in ring order (node[01-04],node09);\n"
    "                       NAME:G gives a host G ranks, 1 to 1024 (every\n"
    "                       host then, and no --gpus-per-host:\n"
    "                       node001:2,node002:4, or place's ring order line\n"
    "                       in quotes: blanks separate hosts too)\n"
    "  --bytes SIZE         the collective's size (256M, 1G, 4096)\n"
    "  --algo A             ring (default), hierarchical, tree,\n"
    "                       reduce-scatter or all-gather\n"
    "  --gpus-per-host N    ranks a host (default: its GPUs, 1 without;\n"
    "                       NAME:G in --hosts instead, per host)\n"
    "  --background S.json  degraded links and other jobs' traffic\n"
    "                       (topoplace-state/1)\n"
    "  --nics-by-rate       load each host's NICs in proportion to their\n"
    "                       rates, as NCCL's channel search does, and a\n"
    "                       hierarchical all-reduce's ranks by their NICs'\n"
    "                       rates, as libtopoplace-coll runs a plan made with\n"
    "                       plan --nics-by-rate (default: evenly, one ring\n"
    "                       channel per NIC pair; the slowest NIC paces the\n"
    "                       host)\n"
    "  --coll               rings and trees as libtopoplace-coll runs them,\n"
    "                       as plan prices them: a ring crosses between two\n"
    "                       hosts on one NIC pair (the last rank's to the\n"
    "                       next host's first), a tree joins hosts at their\n"
    "                       anchors' NICs (default: NCCL's channels, spread\n"
    "                       over the hosts' NIC pairs, as place prices)\n"
    "  --segment SIZE       with --algo hierarchical: also price\n"
    "                       libtopoplace-coll's pipeline in segments of at\n"
    "                       most SIZE bytes (16 segments at most)\n"
    "                       (TOPOPLACE_COLL_SEGMENT's; 1M is its default) and\n"
    "                       keep the faster of it and one piece, as a plan\n"
    "                       does (default 0: one piece, as place prices)\n"
    "  --json               seconds, bandwidth_s, latency_s, bottleneck_gbps,\n"
    "                       bottleneck_link (\"NVLink\" inside a host,\n"
    "                       \"none\" when nothing crosses a link),\n"
    "                       pipelined (hierarchical with --segment)\n"
    "  -h, --help           this text\n";

static cJSON *span_json(const tp_placement_t *p)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "hosts", (double)p->span[TP_SPAN_HOSTS]);
	cJSON_AddNumberToObject(o, "nvlink_domains",
				(double)p->span[TP_SPAN_NVDOMAINS]);
	cJSON_AddNumberToObject(o, "groups", (double)p->span[TP_SPAN_GROUPS]);
	cJSON_AddNumberToObject(o, "spine_groups",
				(double)p->span[TP_SPAN_SPINE_GROUPS]);
	cJSON_AddNumberToObject(o, "min_groups",
				(double)p->min_span_free[TP_SPAN_GROUPS]);
	cJSON_AddNumberToObject(o, "min_groups_empty",
				(double)p->min_span_empty[TP_SPAN_GROUPS]);
	cJSON_AddNumberToObject(o, "min_nvlink_domains",
				(double)p->min_span_free[TP_SPAN_NVDOMAINS]);
	cJSON_AddNumberToObject(o, "min_spine_groups",
				(double)p->min_span_free[TP_SPAN_SPINE_GROUPS]);
	return o;
}

/* topoplace place --json: the decision as one object. */
static void place_print_json(const tp_fabric_t *f, const tp_policy_t *policy,
			     const tp_placement_t *p)
{
	cJSON *o = cJSON_CreateObject(),
	      *h = cJSON_AddArrayToObject(o, "hosts"),
	      *g = cJSON_AddArrayToObject(o, "gpus");

	cJSON_AddStringToObject(o, "policy", tp_policy_name(policy));
	cJSON_AddBoolToObject(o, "placed", true);
	for (size_t i = 0; i < p->nhosts; i++) {
		cJSON_AddItemToArray(
		    h,
		    cJSON_CreateString(tp_fabric_host(f, p->hosts[i])->name));
		cJSON_AddItemToArray(g, cJSON_CreateNumber(p->gpus[i]));
	}
	cJSON_AddItemToObject(o, "span", span_json(p));
	cJSON_AddNumberToObject(o, "predicted_s", p->predicted_s);
	cJSON_AddStringToObject(o, "algo", tp_algo_name(p->algo));
	cJSON_AddNumberToObject(o, "ideal_s", p->ideal_s);
	cJSON_AddNumberToObject(o, "decision_s", p->decision_s);
	cJSON_AddStringToObject(o, "explain", p->explain ? p->explain : "");
	tp_cli_put_json(o);
}

/* topoplace place --json for a job that does not fit (why: the error
 * line's reason), so that a script reading stdout gets an object. */
static void place_print_json_unplaced(const tp_policy_t *policy,
				      const char *req, const char *why)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "policy", tp_policy_name(policy));
	cJSON_AddBoolToObject(o, "placed", false);
	cJSON_AddStringToObject(o, "request", req);
	cJSON_AddStringToObject(o, "reason", why);
	tp_cli_put_json(o);
}

/* topoplace place: the decision as lines. */
static void place_print_text(const tp_fabric_t *f, const tp_policy_t *policy,
			     const tp_placement_t *p)
{
	char **names = tp_calloc(p->nhosts + 1, sizeof(char *));

	for (size_t i = 0; names && i < p->nhosts; i++)
		names[i] = tp_fabric_host(f, p->hosts[i])->name;
	char *list =
	    names ? tp_hostlist_compress((const char *const *)names, p->nhosts)
		  : NULL;
	printf("policy     %s\n", tp_policy_name(policy));
	printf("hosts      %s\n", list ? list : "?");
	printf("ring order");
	for (size_t i = 0; i < p->nhosts; i++)
		printf(" %s:%d", tp_fabric_host(f, p->hosts[i])->name,
		       p->gpus[i]);
	printf("\nspan       %zu host%s, %zu NVLink domain%s, %zu group%s "
	       "(minimum %zu now, %zu on an empty fabric), %zu spine "
	       "group%s\n",
	       p->span[TP_SPAN_HOSTS], tp_cli_s(p->span[TP_SPAN_HOSTS]),
	       p->span[TP_SPAN_NVDOMAINS], tp_cli_s(p->span[TP_SPAN_NVDOMAINS]),
	       p->span[TP_SPAN_GROUPS], tp_cli_s(p->span[TP_SPAN_GROUPS]),
	       p->min_span_free[TP_SPAN_GROUPS],
	       p->min_span_empty[TP_SPAN_GROUPS], p->span[TP_SPAN_SPINE_GROUPS],
	       tp_cli_s(p->span[TP_SPAN_SPINE_GROUPS]));
	printf("all-reduce predicted %.3f ms (%s), ideal %.3f ms\n",
	       p->predicted_s * 1e3, tp_algo_name(p->algo), p->ideal_s * 1e3);
	printf("why        %s\n", p->explain ? p->explain : "");
	tp_free(list);
	tp_free(names);
}

/* The policy's hosts for request r (text req) on f (from the file fabric)
 * in state s, with Slurm's node weights (NULL: all equal), into *pl, priced;
 * TP_EXIT_OK or the exit code after an error line (TP_EXIT_FAIL: no fit now);
 * *unfit_p the reason when the job does not fit, now or ever, else NULL.
 */
static int place_decide(const tp_fabric_t *f, const char *fabric,
			const tp_state_t *s, const tp_policy_t *policy,
			const tp_request_t *r, const char *req, long seed,
			bool nics_by_rate, const uint32_t *weights,
			tp_placement_t *pl, const char **unfit_p)
{
	tp_cost_params_t cp;
	tp_policy_params_t pp;
	tp_cost_ctx_t *ctx;
	tp_err_t err;

	if (!tp_fabric_total_gpus(f)) {
		/* a job that can never fit: --json still prints an object */
		*unfit_p = "the fabric has no GPUs (discover with "
			   "--gpus-per-host N or node data)";
		tp_cli_err("place: %s: %s", fabric, *unfit_p);
		return TP_EXIT_INPUT;
	}
	tp_cli_cost_params(&cp);
	cp.nics_by_rate = nics_by_rate;
	if ((err = tp_cost_ctx_create(f, &cp, &ctx))) {
		tp_cli_err("place: cost model: %s", tp_strerror(err));
		return tp_cli_exit_code(err);
	}
	tp_policy_params_defaults(&pp);
	pp.node_weight = weights;
	pp.nnode_weight = weights ? tp_fabric_nhosts(f) : 0;
	err = tp_place_run(policy, s, r, &pp, ctx, (uint64_t)seed, pl);
	/* enough hosts and GPUs, but on a fabric in pieces no connected
	 * set of the shape even when idle (simulate's "never" too) */
	if (err == TP_ERR_NOTFOUND) {
		double ideal;
		tp_err_t e = tp_place_ideal(f, r, &pp, ctx, NULL, &ideal);
		if (e == TP_ERR_RANGE || e == TP_ERR_NOTFOUND)
			err = TP_ERR_RANGE; /* no set priced there either */
		else if (e == TP_ERR_NOMEM)
			err = e;
	}
	/* a shape Slurm's topology/block refuses at submit may fit the
	 * fabric: say whose refusal it is */
	double ideal;
	bool block_only = err == TP_ERR_RANGE &&
			  !strcmp(tp_policy_name(policy), "slurm-block") &&
			  tp_place_ideal(f, r, &pp, ctx, NULL, &ideal) == TP_OK;
	tp_cost_ctx_destroy(ctx);
	*unfit_p = NULL;
	if (!err)
		return TP_EXIT_OK;
	if (err == TP_ERR_NOTFOUND)
		*unfit_p = "does not fit the free part of the fabric now";
	else if (block_only)
		*unfit_p = "Slurm's topology/block would refuse it (no block "
			   "of the block sizes holds it), though it fits this "
			   "fabric";
	else if (err == TP_ERR_RANGE)
		*unfit_p = "can never fit this fabric";
	tp_cli_err("place: %s: %s", req,
		   *unfit_p ? *unfit_p : tp_strerror(err));
	return err == TP_ERR_NOTFOUND ? TP_EXIT_FAIL : tp_cli_exit_code(err);
}

int tp_cmd_place(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"fabric", required_argument, NULL, TP_CLI_OPT_FABRIC},
	    {"state", required_argument, NULL, TP_CLI_OPT_STATE},
	    {"request", required_argument, NULL, 'r'},
	    {"policy", required_argument, NULL, 'p'},
	    {"seed", required_argument, NULL, 'S'},
	    {"nics-by-rate", no_argument, NULL, 'N'},
	    {"node-weights", required_argument, NULL, 'W'},
	    {"json", no_argument, NULL, TP_CLI_OPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tp_cli_args_t a = {.usage = place_usage};
	bool nics_by_rate = false;
	const char *req = NULL, *pname = "topoplace", *wname = NULL;
	uint32_t *w = NULL;
	long seed = 1;
	int c, rc = TP_EXIT_INPUT;
	tp_fabric_t *f = NULL;
	tp_state_t *s = NULL;
	tp_placement_t pl;
	tp_request_t r;
	char *msg = NULL;
	tp_err_t err;

	memset(&pl, 0, sizeof(pl));
	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "h", opts, &a)) != -1) {
		switch (c) {
		case 'r':
			req = optarg;
			break;
		case 'p':
			pname = optarg;
			break;
		case 'S':
			if (!tp_cli_int("--seed", optarg, 0, 1L << 62, &seed))
				return TP_EXIT_INPUT;
			break;
		case 'N':
			nics_by_rate = true;
			break;
		case 'W':
			wname = optarg;
			break;
		}
	}
	if (a.exit >= 0)
		return a.exit;
	if (!tp_cli_no_operand("place", argc, argv))
		return TP_EXIT_INPUT;
	if (!a.fabric || !req) {
		tp_cli_err(
		    "place: --fabric and --request are required (see --help)");
		return TP_EXIT_INPUT;
	}
	const tp_policy_t *policy = tp_policy_find(pname);
	if (!policy) {
		tp_cli_err("place: unknown policy '%s' (%s)", pname,
			   tp_policy_names());
		return TP_EXIT_INPUT;
	}
	if ((err = tp_request_parse(req, &r, &msg))) {
		tp_cli_err("place: --request: %s",
			   msg ? msg : tp_strerror(err));
		tp_free(msg);
		return TP_EXIT_INPUT;
	}
	if (!(f = tp_cli_load(a.fabric, &rc)) ||
	    !(s = tp_cli_load_state(f, a.state, &rc)))
		goto out;
	tp_state_set_nics_by_rate(s, nics_by_rate);
	if (wname && !(w = tp_cli_node_weights("place: --node-weights", f, s,
					       wname, &rc)))
		goto out;
	const char *unfit = NULL;
	if ((rc = place_decide(f, a.fabric, s, policy, &r, req, seed,
			       nics_by_rate, w, &pl, &unfit))) {
		if (a.json && unfit)
			place_print_json_unplaced(policy, req, unfit);
		goto out;
	}
	if (a.json)
		place_print_json(f, policy, &pl);
	else
		place_print_text(f, policy, &pl);
	rc = TP_EXIT_OK;
out:
	tp_placement_free(&pl);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	tp_free(w);
	return rc;
}

/* The bottleneck link l's ends; "NVLink" for a flow inside a host, "none"
 * when nothing moves (one rank). */
static void link_name(const tp_fabric_t *f, const tp_cost_t *c, char *buf,
		      size_t n)
{
	const tp_link_t *lk = tp_fabric_link(f, c->bottleneck_link);
	char end[2][96];

	if (!lk) {
		snprintf(buf, n, "%s",
			 c->bottleneck_gbps > 0 ? "NVLink" : "none");
		return;
	}
	for (int e = 0; e < 2; e++) {
		const char *d = lk->kind[e] == TP_NODE_SWITCH
				    ? tp_fabric_switch(f, lk->node[e])->desc
				    : tp_fabric_ca(f, lk->node[e])->desc;
		snprintf(end[e], sizeof(end[e]), "%.80s/%d", d, lk->port[e]);
	}
	snprintf(buf, n, "%s - %s", end[0], end[1]);
}

/* A name's trailing ":G" (place's ring order prints node001:4): G into
 * *g_p and the name cut there; 0 without one, -1 (after an error line)
 * for a count that is not 1 to 1024 in decimal digits. */
static int rank_suffix(char *name, int *g_p)
{
	char *c = strrchr(name, ':');
	long g = 0;
	size_t k = 1;

	*g_p = 0;
	if (!c)
		return 0;
	while (isdigit((unsigned char)c[k]) && g <= 1024)
		g = 10 * g + (c[k++] - '0');
	if (c == name || k == 1 || c[k] || g < 1 || g > 1024) {
		char q[160];
		tp_cli_err("cost: --hosts: '%s': a host's ranks are NAME:G, G "
			   "from 1 to 1024",
			   tp_quote(q, sizeof(q), name, 100));
		return -1;
	}
	*c = '\0';
	*g_p = (int)g;
	return 1;
}

/* The fabric's index (hv) and the GPUs (gv) of each host named, checked
 * as `plan` checks them; an exit code, the error printed. */
static int cost_hosts(const tp_fabric_t *f, const char *fabric,
		      char *const *names, size_t n, int gph, uint32_t *hv,
		      int *gv)
{
	size_t bad = 0, counted = 0;

	for (size_t i = 0; i < n; i++) {
		int r = rank_suffix(names[i], &gv[i]);
		if (r < 0)
			return TP_EXIT_INPUT;
		counted += (size_t)r;
	}
	if (counted && (counted < n || gph)) {
		tp_cli_err("cost: --hosts: give every host its ranks (NAME:G) "
			   "or none%s",
			   gph ? ", and not with --gpus-per-host" : "");
		return TP_EXIT_INPUT;
	}
	switch (
	    tp_fabric_hosts_find(f, (const char *const *)names, n, hv, &bad)) {
	case TP_OK:
		break;
	case TP_ERR_EXISTS:
		tp_cli_err("cost: host '%s' listed twice", names[bad]);
		return TP_EXIT_INPUT;
	case TP_ERR_NOMEM:
		tp_cli_err("cost: out of memory");
		return TP_EXIT_FAIL;
	default: {
		char q[160];
		tp_cli_err("cost: %s: host %s is not in the fabric", fabric,
			   tp_quote(q, sizeof(q), names[bad], 100));
		return TP_EXIT_INPUT;
	}
	}
	for (size_t i = 0; i < n; i++) {
		const tp_host_t *h = tp_fabric_host(f, hv[i]);
		int want = counted ? gv[i] : gph;
		if (want && h->ngpus && (size_t)want > h->ngpus) {
			tp_cli_err("cost: host '%s' has %zu GPU%s, %d asked "
				   "for",
				   h->name, h->ngpus, tp_cli_s(h->ngpus), want);
			return TP_EXIT_INPUT;
		}
		gv[i] = want ? want : (int)h->ngpus;
		if (gv[i] < 1)
			gv[i] = 1;
	}
	return TP_EXIT_OK;
}

/* topoplace cost: the prediction as lines, or one object (json). */
static void cost_print(const tp_fabric_t *f, tp_algo_t algo, double bytes,
		       size_t n, const tp_cost_t *out, int pipelined, bool json)
{
	char lname[256];

	link_name(f, out, lname, sizeof(lname));
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "algo", tp_algo_name(algo));
		cJSON_AddNumberToObject(o, "hosts", (double)n);
		cJSON_AddNumberToObject(o, "bytes", bytes);
		cJSON_AddNumberToObject(o, "seconds", out->seconds);
		cJSON_AddNumberToObject(o, "bandwidth_s", out->bandwidth_s);
		cJSON_AddNumberToObject(o, "latency_s", out->latency_s);
		cJSON_AddNumberToObject(o, "bottleneck_gbps",
					out->bottleneck_gbps);
		cJSON_AddStringToObject(o, "bottleneck_link", lname);
		if (out->bottleneck_link != TP_ID_NONE)
			cJSON_AddNumberToObject(o, "bottleneck_link_index",
						out->bottleneck_link);
		cJSON_AddNumberToObject(o, "cross_top_bytes",
					out->cross_top_bytes);
		if (pipelined >= 0)
			cJSON_AddBoolToObject(o, "pipelined", pipelined);
		tp_cli_put_json(o);
	} else {
		printf("%s of %.0f bytes over %zu hosts: %.6f s (bandwidth "
		       "%.6f s, latency %.6f s)\n",
		       tp_algo_name(algo), bytes, n, out->seconds,
		       out->bandwidth_s, out->latency_s);
		if (pipelined >= 0)
			printf("%s\n", pipelined ? "pipelined in segments"
						 : "in one piece");
		if (out->bottleneck_gbps > 0)
			printf("bottleneck %.1f Gb/s on %s\n",
			       out->bottleneck_gbps, lname);
		else
			printf("no bottleneck: nothing crosses a link\n");
	}
}

/* The fabric and background files loaded, the named hosts found and the
 * collective predicted and printed; the exit code. */
static int cost_run(const tp_cli_args_t *a, const char *bg, char *const *names,
		    size_t n, int gph, double bytes, tp_algo_t algo,
		    bool nics_by_rate, bool coll, double seg)
{
	int pipelined = -1;
	int rc = TP_EXIT_INPUT;
	tp_fabric_t *f = NULL;
	tp_state_t *s = NULL;
	tp_cost_ctx_t *ctx = NULL;
	uint32_t *hv = NULL;
	int *gv = NULL;
	tp_cost_params_t cp;
	tp_cost_t out;
	tp_err_t err;

	if (!(f = tp_cli_load(a->fabric, &rc)) ||
	    !(s = tp_cli_load_state(f, bg, &rc)))
		goto out;
	hv = tp_calloc(n, sizeof(*hv));
	gv = tp_calloc(n, sizeof(*gv));
	if (!hv || !gv) {
		rc = TP_EXIT_FAIL;
		goto out;
	}
	if ((rc = cost_hosts(f, a->fabric, names, n, gph, hv, gv)))
		goto out;
	tp_cli_cost_params(&cp);
	cp.nics_by_rate = nics_by_rate;
	cp.coll_rings = coll;
	cp.hier_segment = seg;
	tp_state_set_nics_by_rate(s, nics_by_rate);
	if ((err = tp_cost_ctx_create(f, &cp, &ctx)) ||
	    (err = tp_cost_predict(ctx, s, hv, gv, n, bytes, algo, &out))) {
		if (err == TP_ERR_NOTFOUND)
			tp_cli_err("cost: no route between two of the hosts "
				   "(no common subnet, no switch path up and "
				   "down between them, or every cable between "
				   "them down or at health 0 in %s)",
				   bg ? bg : "the fabric");
		else
			tp_cli_err("cost: %s", tp_strerror(err));
		rc = tp_cli_exit_code(err);
		goto out;
	}
	/* a pipelined prediction: the faster of it and one piece, as the
	 * plan keeps per size (tp_plan_hier_pipelined) */
	if (out.pipe_seg > 0) {
		double one = tp_cost_one_piece_at(&out, bytes, bytes);
		pipelined = out.seconds < one;
		if (!pipelined) {
			out.seconds = one;
			out.bandwidth_s = one - out.latency_s;
		}
	} else if (algo == TP_ALGO_HIERARCHICAL && seg > 0) {
		pipelined = 0; /* one segment, or no groups to overlap */
	}
	cost_print(f, algo, bytes, n, &out, pipelined, a->json);
	rc = TP_EXIT_OK;
out:
	tp_free(hv);
	tp_free(gv);
	tp_cost_ctx_destroy(ctx);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	return rc;
}

int tp_cmd_cost(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"fabric", required_argument, NULL, TP_CLI_OPT_FABRIC},
	    {"hosts", required_argument, NULL, 'H'},
	    {"bytes", required_argument, NULL, 'b'},
	    {"algo", required_argument, NULL, 'a'},
	    {"gpus-per-host", required_argument, NULL, 'g'},
	    {"background", required_argument, NULL, 'B'},
	    {"nics-by-rate", no_argument, NULL, 'N'},
	    {"segment", required_argument, NULL, 'S'},
	    {"coll", no_argument, NULL, 'C'},
	    {"json", no_argument, NULL, TP_CLI_OPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tp_cli_args_t a = {.usage = cost_usage};
	bool nics_by_rate = false, coll = false;
	const char *hosts = NULL, *bg = NULL;
	double bytes = -1, seg = 0;
	tp_algo_t algo = TP_ALGO_RING;
	long gph = 0;
	int c, rc;
	char **names = NULL;
	size_t n = 0;
	tp_err_t err;

	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "h", opts, &a)) != -1) {
		switch (c) {
		case 'H':
			hosts = optarg;
			break;
		case 'b':
			if (!tp_cli_bytes("cost: --bytes", optarg, 1, &bytes))
				return TP_EXIT_INPUT;
			break;
		case 'a':
			if (tp_algo_parse(optarg, &algo)) {
				tp_cli_err(
				    "cost: --algo: unknown algorithm '%s'",
				    optarg);
				return TP_EXIT_INPUT;
			}
			break;
		case 'g':
			if (!tp_cli_int("--gpus-per-host", optarg, 1, 1024,
					&gph))
				return TP_EXIT_INPUT;
			break;
		case 'B':
			bg = optarg;
			break;
		case 'N':
			nics_by_rate = true;
			break;
		case 'C':
			coll = true;
			break;
		case 'S':
			if (!tp_cli_bytes("cost: --segment", optarg, 0, &seg))
				return TP_EXIT_INPUT;
			if (seg > (double)TP_SCHED_HIER_SEGMENT_MAX) {
				tp_cli_err("cost: --segment: %s is over 1 GiB",
					   optarg);
				return TP_EXIT_INPUT;
			}
			break;
		}
	}
	if (a.exit >= 0)
		return a.exit;
	if (!tp_cli_no_operand("cost", argc, argv))
		return TP_EXIT_INPUT;
	if (!a.fabric || !hosts || bytes < 0) {
		tp_cli_err("cost: --fabric, --hosts and --bytes are required "
			   "(see --help)");
		return TP_EXIT_INPUT;
	}
	if (seg > 0 && algo != TP_ALGO_HIERARCHICAL) {
		tp_cli_err("cost: --segment pipelines the hierarchical "
			   "all-reduce: add --algo hierarchical");
		return TP_EXIT_INPUT;
	}
	if ((err = tp_hostlist_expand(hosts, &names, &n)) || !n) {
		char q[160];
		if (!err)
			tp_hostlist_free(names, n); /* an empty list */
		tp_cli_err("cost: --hosts: not a host list: \"%s\"",
			   tp_quote(q, sizeof(q), hosts, 100));
		return TP_EXIT_INPUT;
	}
	rc = cost_run(&a, bg, names, n, (int)gph, bytes, algo, nics_by_rate,
		      coll, seg);
	tp_hostlist_free(names, n);
	return rc;
}
