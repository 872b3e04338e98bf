/* topoplace plan: what a job's processes should do on the hosts it got. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tp_runtime.h"

static const char plan_usage[] =
    "Usage: topoplace plan --fabric F.json --nodes LIST [--gpus-per-host N]\n"
    "                      [--no-predict] [--nics-by-rate] [--state S.json]\n"
    "                      [--json] [-o FILE]\n"
    "\n"
    "The job-start plan for these hosts (LIST: gpu[001-016], any order):\n"
    "ring order with the fewest group crossings, hierarchical double binary\n"
    "trees, groups with leaders (and one leader per rail), ranks, each GPU's\n"
    "nearest HCA (--json; the text gives each host's HCAs in rail order),\n"
    "and the cost model's all-reduce prediction and\n"
    "recommendation for 64 KiB .. 1 GiB (hierarchical: pipelined or in one\n"
    "piece, the faster, as libtopoplace-coll then runs it; the pipeline's\n"
    "segment from TOPOPLACE_COLL_SEGMENT, as the library reads it).\n"
    "  --gpus-per-host N  ranks per host (default: the host's GPUs, 1 "
    "without)\n"
    "  --no-predict       skip the cost model (recommendation by rule)\n"
    "  --nics-by-rate     split each host's data over its ranks by their\n"
    "                     NICs' cable rates (hierarchical all-reduce), so a\n"
    "                     NIC at half width carries half a share instead of\n"
    "                     setting the host's pace; predicted so too (the\n"
    "                     cost model's --nics-by-rate). Default: evenly\n"
    "  --state S.json     price on this state's links (topoplace-state/1:\n"
    "                     health and other traffic, as LinkState= in\n"
    "                     topoplace.conf gives the SPANK plugin; its jobs\n"
    "                     and down hosts are checked, not used). The "
    "predictions\n"
    "                     and recommendations change, not the schedule.\n"
    "                     Default: every link healthy and idle\n"
    "  --json             the plan as topoplace-plan/1 JSON\n"
    "  -o, --output FILE  output file ('-' = stdout)\n"
    "  -h, --help         this text\n";

/* A group's hosts in Slurm's bracket form. */
static char *members(const tp_plan_t *p, const tp_plan_group_t *g)
{
	const char **names = tp_malloc(g->nhosts * sizeof(char *));
	char *s;

	if (!names)
		return NULL;
	for (uint32_t i = 0; i < g->nhosts; i++)
		names[i] = tp_plan_host(p, g->first + i)->name;
	s = tp_hostlist_compress(names, g->nhosts);
	tp_free(names);
	return s;
}

static void put_size(tp_strbuf_t *sb, double b)
{
	char buf[32];

	tp_strbuf_printf(sb, "%-10s", tp_cli_size(b, buf, sizeof(buf)));
}

static void put_time(tp_strbuf_t *sb, double s)
{
	char buf[32];

	if (isnan(s))
		snprintf(buf, sizeof(buf), "-");
	else if (s < 1e-3)
		snprintf(buf, sizeof(buf), "%.1f us", s * 1e6);
	else if (s < 1)
		snprintf(buf, sizeof(buf), "%.3f ms", s * 1e3);
	else
		snprintf(buf, sizeof(buf), "%.3f s", s);
	tp_strbuf_printf(sb, "%-14s", buf);
}

static void tree_stats(const tp_plan_t *p, int t, size_t *depth_p,
		       size_t *cross_p)
{
	size_t depth = 0, cross = 0;

	for (size_t r = 0; r < tp_plan_nhosts(p); r++) {
		size_t d = 0;
		uint32_t up = tp_plan_tree_parent(p, t, r);
		if (up != TP_PLAN_NONE &&
		    tp_plan_host(p, up)->group != tp_plan_host(p, r)->group)
			cross++;
		for (size_t x = r;
		     (up = tp_plan_tree_parent(p, t, x)) != TP_PLAN_NONE &&
		     d <= tp_plan_nhosts(p);
		     x = up)
			d++;
		if (d > depth)
			depth = d;
	}
	*depth_p = depth;
	*cross_p = cross;
}

/* state: the file the predictions priced links on, or NULL. */
static char *plan_text(const tp_plan_t *p, bool by_rate, const char *state)
{
	tp_strbuf_t sb = {0};
	size_t n = tp_plan_nhosts(p), ng = tp_plan_ngroups(p);
	int nrails = tp_plan_nrails(p);

	tp_strbuf_printf(
	    &sb, "plan: %zu host%s, %zu rank%s, %zu group%s, %d rail%s\n", n,
	    n == 1 ? "" : "s", tp_plan_world_size(p),
	    tp_plan_world_size(p) == 1 ? "" : "s", ng, ng == 1 ? "" : "s",
	    nrails, nrails == 1 ? "" : "s");
	uint32_t nw;
	const uint32_t *w = tp_plan_rank_weights(p, &nw);
	for (uint32_t l = 0; l < nw; l++)
		tp_strbuf_printf(&sb, "%s%" PRIu32 "%s",
				 l ? " " : "rank weights (by NIC rate): ", w[l],
				 l + 1 < nw ? "" : "\n");
	if (by_rate && !nw)
		tp_strbuf_printf(&sb,
				 "rank weights (by NIC rate): none, an even "
				 "split (every rank's NIC alike, hosts with "
				 "different rank counts, or a rank without "
				 "a cabled NIC)\n");
	tp_strbuf_printf(&sb, "ring:");
	for (size_t g = 0; g < ng; g++) {
		char *m = members(p, tp_plan_group(p, g));
		tp_strbuf_printf(&sb, "%s%s", g ? "," : " ", m ? m : "?");
		tp_free(m);
	}
	tp_strbuf_printf(&sb,
			 "\n\ngroups (leader: lowest rank)\n"
			 "  %-5s %-7s %-7s %-6s %-16s %s\n",
			 "GROUP", "FABRIC", "SPINE", "HOSTS", "LEADER",
			 "MEMBERS");
	for (size_t g = 0; g < ng; g++) {
		const tp_plan_group_t *gp = tp_plan_group(p, g);
		char id[16] = "-", sp[16] = "-";
		char *m = members(p, gp);
		if (gp->id != TP_ID_NONE)
			snprintf(id, sizeof(id), "%u", gp->id);
		if (gp->spine != TP_ID_NONE)
			snprintf(sp, sizeof(sp), "%u", gp->spine);
		tp_strbuf_printf(
		    &sb, "  %-5zu %-7s %-7s %-6u %-16s %s\n", g, id, sp,
		    gp->nhosts, tp_plan_host(p, gp->leader)->name, m ? m : "?");
		tp_free(m);
		if (gp->nrail_leaders)
			tp_strbuf_printf(
			    &sb,
			    "        rail leaders (rail host/local rank hca):");
		for (size_t i = 0; i < gp->nrail_leaders; i++) {
			const tp_plan_rail_leader_t *rl = &gp->rail_leaders[i];
			const tp_plan_host_t *h =
			    tp_plan_host(p, rl->node_rank);
			const char *hca = h->ranks[rl->local_rank].hca;
			tp_strbuf_printf(
			    &sb, "%s %d %s/%u %s", i % 4 ? "," : "\n         ",
			    rl->rail, h->name, rl->local_rank, hca ? hca : "?");
		}
		if (gp->nrail_leaders)
			tp_strbuf_printf(&sb, "\n");
	}
	tp_strbuf_printf(&sb, "\ntrees (double binary, built per group then "
			      "across groups)\n");
	for (int t = 0; t < 2; t++) {
		size_t depth, cross;
		tree_stats(p, t, &depth, &cross);
		tp_strbuf_printf(&sb,
				 "  tree %d: root %s, depth %zu, %zu edge%s "
				 "across groups\n",
				 t,
				 tp_plan_host(p, tp_plan_tree_root(p, t))->name,
				 depth, cross, cross == 1 ? "" : "s");
	}
	tp_strbuf_printf(&sb, "\nhosts\n  %-6s %-20s %-13s %s\n", "RANK",
			 "HOST", "GLOBAL RANKS", "HCAS (rail order)");
	for (size_t r = 0; r < n; r++) {
		const tp_plan_host_t *h = tp_plan_host(p, r);
		char rk[32];
		snprintf(rk, sizeof(rk), "%u-%u", h->first_rank,
			 h->first_rank + h->nranks - 1);
		tp_strbuf_printf(&sb, "  %-6zu %-20s %-13s ", r, h->name, rk);
		for (int i = 0; i < nrails; i++) {
			tp_strbuf_printf(&sb, "%s%s", i ? "," : "",
					 h->hcas[i] ? h->hcas[i] : "-");
			/* the rail's others (a subnet of several) */
			for (uint32_t m = 0; m < h->nmore_hcas; m++)
				if (h->more_hcas[m].rail == i)
					tp_strbuf_printf(&sb, "+%s",
							 h->more_hcas[m].dev);
		}
		tp_strbuf_printf(&sb, "%s\n", nrails ? "" : "-");
	}
	tp_strbuf_printf(&sb,
			 "\nall-reduce as libtopoplace-coll runs it (%s%s)\n"
			 "  %-10s%-14s%-14s%-14s%s\n",
			 !tp_plan_predicted(p)
			     ? "no predictions: recommendation by rule"
			 : state ? "cost model, the links of "
				 : "cost model, the fabric's cables, no other "
				   "jobs",
			 tp_plan_predicted(p) && state ? state : "", "SIZE",
			 "RING", "HIERARCHICAL", "TREE", "RECOMMEND");
	for (size_t i = 0; i < tp_plan_nsizes(p); i++) {
		tp_strbuf_printf(&sb, "  ");
		put_size(&sb, tp_plan_size(p, i));
		for (int a = 0; a < TP_PLAN_NALGOS; a++)
			put_time(&sb, tp_plan_predict_s(p, i, (tp_algo_t)a));
		tp_strbuf_printf(&sb, "%s (%s)\n",
				 tp_algo_name(tp_plan_recommend(p, i)),
				 tp_plan_recommend_basis(p, i));
	}
	/* which hierarchical predictions are the pipeline's */
	size_t k = 0;
	for (size_t i = 0; i < tp_plan_nsizes(p); i++) {
		char buf[32];
		if (tp_plan_hier_pipelined(p, i) == 1)
			tp_strbuf_printf(
			    &sb, "%s%s",
			    k++ ? ", " : "  hierarchical pipelined at ",
			    tp_cli_size(tp_plan_size(p, i), buf, sizeof(buf)));
	}
	if (k)
		tp_strbuf_printf(&sb, " (in one piece at the other sizes)\n");
	if (sb.failed) {
		tp_free(sb.buf);
		return NULL;
	}
	return sb.buf;
}

int tp_cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"fabric", required_argument, NULL, TP_CLI_OPT_FABRIC},
	    {"nodes", required_argument, NULL, 'n'},
	    {"gpus-per-host", required_argument, NULL, 'g'},
	    {"no-predict", no_argument, NULL, 'P'},
	    {"nics-by-rate", no_argument, NULL, 'N'},
	    {"state", required_argument, NULL, TP_CLI_OPT_STATE},
	    {"json", no_argument, NULL, TP_CLI_OPT_JSON},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tp_cli_args_t a = {.usage = plan_usage};
	const char *nodes = NULL;
	long gph = 0;
	int c, rc = TP_EXIT_INPUT;
	tp_plan_opts_t po;
	tp_fabric_t *f = NULL;
	tp_cost_ctx_t *ctx = NULL;
	tp_state_t *s = NULL;
	tp_plan_t *plan = NULL;
	char **names = NULL, *msg = NULL, *text = NULL;
	size_t n = 0;
	tp_err_t err;

	tp_plan_opts_defaults(&po);
	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "ho:", opts, &a)) != -1) {
		switch (c) {
		case 'n':
			nodes = optarg;
			break;
		case 'g':
			if (!tp_cli_int("--gpus-per-host", optarg, 1, 1024,
					&gph))
				return TP_EXIT_INPUT;
			break;
		case 'P':
			po.predict = false;
			break;
		case 'N':
			po.nics_by_rate = true;
			break;
		}
	}
	if (a.exit >= 0)
		return a.exit;
	if (!tp_cli_no_operand("plan", argc, argv))
		return TP_EXIT_INPUT;
	if (!a.fabric || !nodes) {
		tp_cli_err(
		    "plan: --fabric and --nodes are required (see --help)");
		return TP_EXIT_INPUT;
	}
	po.gpus_per_host = (int)gph;
	if (a.state && !po.predict) {
		tp_cli_err("plan: --state prices the plan: not with "
			   "--no-predict");
		return TP_EXIT_INPUT;
	}
	if (tp_cli_check_output("plan: -o", a.output))
		return TP_EXIT_FAIL;
	if ((err = tp_hostlist_expand(nodes, &names, &n))) {
		tp_cli_err("plan: --nodes '%s': %s", nodes, tp_strerror(err));
		return tp_cli_exit_code(err);
	}
	if (!(f = tp_cli_load(a.fabric, &rc)))
		goto out;
	if (a.state && !(s = tp_cli_load_state(f, a.state, &rc)))
		goto out;
	po.state = s;
	tp_cost_params_t cp;
	tp_cli_cost_params(&cp);
	cp.nics_by_rate = po.nics_by_rate;
	cp.coll_rings = true; /* what the plan's auto runs */
	if (!tp_cli_plan_segment("plan", &cp)) {
		rc = TP_EXIT_INPUT;
		goto out;
	}
	if (po.predict && (err = tp_cost_ctx_create(f, &cp, &ctx))) {
		tp_cli_err("plan: cost model: %s", tp_strerror(err));
		rc = tp_cli_exit_code(err);
		goto out;
	}
	err = tp_plan_build(f, ctx, (const char *const *)names, n, &po, &plan,
			    &msg);
	if (err) {
		tp_cli_err("plan: %s", msg ? msg : tp_strerror(err));
		rc = tp_cli_exit_code(err);
		goto out;
	}
	if (a.json) {
		if ((err = tp_plan_to_json(plan, &text))) {
			tp_cli_err("plan: %s", tp_strerror(err));
			rc = TP_EXIT_FAIL;
			goto out;
		}
	} else if (!(text = plan_text(plan, po.nics_by_rate, a.state))) {
		tp_cli_err("plan: %s", tp_strerror(TP_ERR_NOMEM));
		rc = TP_EXIT_FAIL;
		goto out;
	}
	rc = tp_cli_write(a.output, text);
out:
	tp_free(text);
	tp_free(msg);
	tp_plan_destroy(plan);
	tp_cost_ctx_destroy(ctx);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	tp_hostlist_free(names, n);
	return rc;
}
