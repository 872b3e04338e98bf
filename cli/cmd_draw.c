/*
 * topoplace draw: the fabric, its health and who holds what, as one SVG.
 *
 * Notes
 *
 * Rows of switches from the top level down to the leaves, level-1 groups
 * as boxes of host cells under their leaves. Cables are never drawn one
 * by one: parallel cables between two drawn switches are one line, and a
 * group's host cables to one leaf are one line, coloured by the worst
 * cable in it (health) or the busiest (utilisation), so a 16,384-host
 * fabric still gives a few thousand elements. Beyond ROW_MAX switches a
 * level is drawn as its groups, and beyond CELL_HOSTS hosts the groups
 * become bars of GPUs per job; the figure says what was aggregated.
 *
 * Utilisation is the busier direction of the state's background plus the
 * busier direction of the jobs' predicted load, over rate x health: a
 * bound when the two busier directions differ, exact otherwise.
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tp_placement.h"

static const char usage[] =
    "Usage: topoplace draw --fabric F.json [--state S.json] [--heat]\n"
    "                      [--bytes SIZE] [--duty F] -o FILE.svg\n"
    "\n"
    "The fabric as a picture: switches in rows by level with their cables,\n"
    "level-1 groups as boxes of hosts under their leaves, hosts coloured by\n"
    "the job holding most of their GPUs (legend of job ids; grey free, black\n"
    "down; outlined red: fewer rails cabled, orange: own cable below full\n"
    "health; both listed with the reason). Cables are\n"
    "coloured by health: the state's link health times the cable's rate\n"
    "over the best rate of its kind, so half width shows as 0.5 (grey\n"
    "healthy, yellow, orange, red as health falls, black dashed down).\n"
    "  --heat        colour cables by predicted utilisation instead: every\n"
    "                job of the state running one all-reduce over its hosts\n"
    "                (fastest algorithm the cost model finds) plus the\n"
    "                state's background traffic, over rate x health;\n"
    "                degraded cables dashed\n"
    "  --bytes SIZE  all-reduce size per job for --heat (default 1G)\n"
    "  --duty F      share of time each job communicates (default 1: all\n"
    "                at once, the peak)\n"
    "  -o, --output FILE.svg  where to write the picture ('-' = stdout)\n"
    "  -h, --help    this text\n"
    "Parallel cables are one line (its worst cable), arcing above the row\n"
    "when both ends are on one level; a level with more than\n"
    "96 switches is drawn as its groups; above 4096 hosts each group is a\n"
    "bar of its GPUs by job. The figure names what it aggregated.\n";

enum {
	ROW_MAX = 96,	   /* switches per row before a level is grouped */
	CELL_HOSTS = 4096, /* hosts drawn one by one up to this */
	CELL = 10,	   /* host cell pitch */
	ROW_H = 90,	   /* between switch rows */
	TOP = 84,	   /* first switch row */
	SW_H = 16,
	JOB_LEGEND = 24, /* jobs with their own colour; others share one */
	NOTES_MAX = 12,
	LEFT = 10,
};

#define FREE_COLOUR   "#dddddd"
#define DOWN_COLOUR   "#000000"
#define OTHER_JOBS    "#707070"
#define DEGRADED_HOST "#d62728"
#define WEAK_CABLE    "#ff7f0e" /* outline: the host's own cable */

/* ---- colour scales (legend order) ---- */

typedef struct bin {
	double below; /* upper bound of the bin (exclusive) */
	const char *colour, *label;
} bin_t;

static const bin_t health_bins[] = {
    {1e-9, "#000000", "down (health 0)"},
    {0.5, "#d62728", "health below 0.5"},
    {0.75, "#ff7f0e", "health 0.5 - 0.75"},
    {1.0 - 1e-9, "#e6c300", "health 0.75 - 1"},
    {INFINITY, "#9a9a9a", "healthy"},
};

static const bin_t util_bins[] = {
    {1e-9, "#c8c8c8", "idle"},
    {0.25, "#fed976", "below 25%"},
    {0.5, "#fd8d3c", "25 - 50%"},
    {0.75, "#e31a1c", "50 - 75%"},
    {1.0 + 1e-9, "#b10026", "75 - 100%"},
    {INFINITY, "#4a0014", "over 100% (demand beyond rate)"},
};

#define NBINS(b) (sizeof(b) / sizeof((b)[0]))

static size_t bin_of(const bin_t *b, size_t n, double v)
{
	size_t i = 0;

	while (i + 1 < n && !(v < b[i].below))
		i++;
	return i;
}

/* Jobs with a legend entry take these in ascending id order: distinct
 * at a glance, none grey, black or the degraded red. */
static const char *const job_palette[JOB_LEGEND] = {
    "#1f77b4", "#2ca02c", "#9467bd", "#ff9896", "#8c564b", "#e377c2",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5",
    "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#393b79", "#637939",
    "#8c6d31", "#7b4173", "#3182bd", "#31a354", "#756bb1", "#e6550d",
};

/* ---- what is drawn ---- */

/* A drawn switch: one switch, or a whole group of a crowded level. */
typedef struct dnode {
	int level;
	uint32_t sw;	/* switch index, or TP_ID_NONE when a group */
	uint32_t group; /* the switch's group at its level */
	size_t nsw;	/* switches it stands for */
	double x, y, w;
} dnode_t;

/* Cables between two drawn things (b < 0: a group box of hosts). */
typedef struct dlink {
	uint32_t a, b; /* dnode indices; b = TP_ID_NONE: hosts of box */
	uint32_t box;
	size_t ncables, ndegraded, ndown;
	double gbps, worst_health, worst_util;
	uint32_t worst_link;
	uint32_t links[8]; /* the first fabric link indices, for readers */
	size_t nlinks;
} dlink_t;

typedef struct draw {
	const tp_fabric_t *f;
	const tp_state_t *s;
	bool heat, cells;
	double *util;	      /* per fabric link */
	size_t *box_of_group; /* level-1 group -> box */
	uint32_t *boxes;      /* box -> level-1 group, in drawing order */
	size_t nboxes;
	double *box_x, box_w, box_h, box_y;
	int cols;
	dnode_t *nodes;
	size_t nnodes;
	uint32_t *node_of_sw;
	dlink_t *links;
	size_t nlinks;
	tp_u64map_t link_map;
	tp_state_job_t *jobs;
	size_t njobs;
	uint64_t *legend_jobs; /* jobs with their own colour, ascending */
	size_t nlegend;
	bool aggregated_level[TP_MAX_LEVELS + 1];
	double *health;	     /* per fabric link, as drawn */
	double *host_health; /* per host, its worst cable */
	uint32_t *host_link;
	double width;
	const char *fabric_name, *state_name; /* as given, for the title */
	double bytes, duty;		      /* of each job's all-reduce */
	size_t unrouted;		      /* jobs without a live route */
} draw_t;

/* What the state says is left of a cable's rate (0 when inactive). */
static double link_health(const draw_t *d, uint32_t l)
{
	return tp_fabric_link(d->f, l)->active ? tp_state_link_health(d->s, l)
					       : 0.0;
}

static bool host_cable(const tp_link_t *lk)
{
	return lk->kind[0] == TP_NODE_CA || lk->kind[1] == TP_NODE_CA;
}

/* The health drawn: the state's, times the cable's rate over the best
 * rate of its kind (host or switch cables), so a cable trained at half
 * width shows at 0.5 even when no state says so. */
static tp_err_t shown_health(draw_t *d)
{
	size_t nl = tp_fabric_nlinks(d->f);
	double best[2] = {0, 0};

	if (!(d->health = tp_malloc((nl + 1) * sizeof(double))))
		return TP_ERR_NOMEM;
	for (size_t l = 0; l < nl; l++) {
		const tp_link_t *lk = tp_fabric_link(d->f, l);
		best[host_cable(lk)] = fmax(best[host_cable(lk)], lk->gbps);
	}
	for (size_t l = 0; l < nl; l++) {
		const tp_link_t *lk = tp_fabric_link(d->f, l);
		double b = best[host_cable(lk)];
		d->health[l] = link_health(d, (uint32_t)l) *
			       (b > 0 ? fmin(1.0, lk->gbps / b) : 1.0);
	}
	return TP_OK;
}

/* Compare two groups at the same level by their ancestors, top first. */
static int group_cmp_at(const tp_fabric_t *f, uint32_t a, uint32_t b)
{
	const tp_group_t *ga = tp_fabric_group(f, a),
			 *gb = tp_fabric_group(f, b);

	if (a == b)
		return 0;
	if (ga->parent != TP_ID_NONE && gb->parent != TP_ID_NONE &&
	    ga->parent != gb->parent) {
		int c = group_cmp_at(f, ga->parent, gb->parent);
		if (c)
			return c;
	}
	return a < b ? -1 : 1;
}

static const tp_fabric_t *sort_fabric; /* qsort has no context argument */

static int group_cmp(const void *x, const void *y)
{
	return group_cmp_at(sort_fabric, *(const uint32_t *)x,
			    *(const uint32_t *)y);
}

static int dnode_cmp(const void *x, const void *y)
{
	const dnode_t *a = x, *b = y;
	int c;

	if (a->level != b->level)
		return a->level > b->level ? -1 : 1;
	if (a->group != b->group && a->group != TP_ID_NONE &&
	    b->group != TP_ID_NONE &&
	    (c = group_cmp_at(sort_fabric, a->group, b->group)))
		return c;
	return a->sw < b->sw ? -1 : a->sw > b->sw;
}

/* Level-1 groups in the order of their ancestors: the boxes. */
static tp_err_t layout_boxes(draw_t *d)
{
	const tp_fabric_t *f = d->f;
	size_t ng = tp_fabric_ngroups(f), nh = tp_fabric_nhosts(f), maxh = 1;

	d->boxes = tp_calloc(ng + 1, sizeof(uint32_t));
	d->box_of_group = tp_calloc(ng + 1, sizeof(size_t));
	d->box_x = tp_calloc(ng + 1, sizeof(double));
	if (!d->boxes || !d->box_of_group || !d->box_x)
		return TP_ERR_NOMEM;
	for (size_t g = 0; g < ng; g++)
		if (tp_fabric_group(f, g)->level == 1)
			d->boxes[d->nboxes++] = (uint32_t)g;
	qsort(d->boxes, d->nboxes, sizeof(uint32_t), group_cmp);
	for (size_t b = 0; b < d->nboxes; b++) {
		const tp_group_t *gp = tp_fabric_group(f, d->boxes[b]);
		d->box_of_group[d->boxes[b]] = b;
		if (gp->nhosts > maxh)
			maxh = gp->nhosts;
	}
	d->cells = nh <= CELL_HOSTS;
	if (d->cells) {
		d->cols = maxh <= 16 ? 4 : maxh <= 64 ? 8 : 16;
		d->box_w = d->cols * CELL + 12;
		d->box_h = (double)((maxh + d->cols - 1) / d->cols) * CELL + 26;
	} else {
		d->box_w = 14;
		d->box_h = 110;
	}
	/* room for a group's leaves side by side above its box */
	for (size_t b = 0; b < d->nboxes; b++) {
		double need =
		    84.0 * (double)tp_fabric_group(f, d->boxes[b])->nswitches;
		if (d->cells && need > d->box_w && need <= 840)
			d->box_w = need;
	}
	for (size_t b = 0; b < d->nboxes; b++)
		d->box_x[b] = LEFT + (double)b * (d->box_w + 6);
	d->box_y = TOP + (double)tp_fabric_nlevels(f) * ROW_H - 30;
	d->width = LEFT + (double)d->nboxes * (d->box_w + 6) + LEFT;
	return TP_OK;
}

/* Rows evenly spread, except a group's leaves over its box. */
static void place_nodes(draw_t *d)
{
	int nlev = tp_fabric_nlevels(d->f);

	for (size_t k = 0, first = 0; k <= d->nnodes; k++) {
		if (k < d->nnodes && d->nodes[k].level == d->nodes[first].level)
			continue;
		size_t n = k - first;
		for (size_t j = first; j < k; j++) {
			dnode_t *dn = &d->nodes[j];
			dn->y = TOP + (double)(nlev - dn->level) * ROW_H;
			dn->x = LEFT + (d->width - 2 * LEFT) *
					   ((double)(j - first) + 0.5) /
					   (double)n;
			dn->w = fmin((d->width - 2 * LEFT) / (double)n - 4, 84);
		}
		first = k;
	}
	for (size_t b = 0; b < d->nboxes; b++) {
		const tp_group_t *gp = tp_fabric_group(d->f, d->boxes[b]);
		size_t n = gp->nswitches, seen = 0;
		for (size_t j = 0; j < n; j++) {
			uint32_t k = d->node_of_sw[gp->switches[j]];
			if (k == TP_ID_NONE || d->nodes[k].sw == TP_ID_NONE)
				continue;
			d->nodes[k].x = d->box_x[b] + d->box_w *
							  ((double)seen + 0.5) /
							  (double)n;
			d->nodes[k].w = fmin(d->box_w / (double)n - 4, 84);
			seen++;
		}
	}
}

/* Switches (or their groups) in rows, leaves above their boxes. */
static tp_err_t layout_switches(draw_t *d)
{
	const tp_fabric_t *f = d->f;
	size_t ns = tp_fabric_nswitches(f);
	int nlev = tp_fabric_nlevels(f);
	tp_u64map_t grp = {0};
	tp_err_t err = TP_OK;

	d->nodes = tp_calloc(ns + 1, sizeof(dnode_t));
	d->node_of_sw = tp_calloc(ns + 1, sizeof(uint32_t));
	if (!d->nodes || !d->node_of_sw)
		return TP_ERR_NOMEM;
	for (int l = 1; l <= nlev && l <= TP_MAX_LEVELS; l++)
		d->aggregated_level[l] =
		    tp_fabric_switches_at(f, l) > ROW_MAX &&
		    (l > 1 || !d->cells);
	for (size_t i = 0; i < ns; i++) {
		const tp_switch_t *sw = tp_fabric_switch(f, i);
		if (sw->level < 1 || sw->level > TP_MAX_LEVELS)
			continue;
		if (!d->aggregated_level[sw->level] || sw->group == TP_ID_NONE)
			d->nodes[d->nnodes++] = (dnode_t){.level = sw->level,
							  .sw = (uint32_t)i,
							  .group = sw->group,
							  .nsw = 1};
		else if (tp_u64map_get(&grp, sw->group) == TP_MAP_NONE) {
			if ((err = tp_u64map_put(&grp, sw->group, 0)))
				goto out;
			d->nodes[d->nnodes++] = (dnode_t){.level = sw->level,
							  .sw = TP_ID_NONE,
							  .group = sw->group};
		}
	}
	qsort(d->nodes, d->nnodes, sizeof(dnode_t), dnode_cmp);
	tp_u64map_clear(&grp);
	for (size_t k = 0; k < d->nnodes; k++)
		if (d->nodes[k].sw == TP_ID_NONE &&
		    (err = tp_u64map_put(&grp, d->nodes[k].group, (uint32_t)k)))
			goto out;
	for (size_t i = 0; i < ns; i++) {
		const tp_switch_t *sw = tp_fabric_switch(f, i);
		d->node_of_sw[i] = TP_ID_NONE;
		if (sw->level < 1 || sw->level > TP_MAX_LEVELS)
			continue;
		if (d->aggregated_level[sw->level] && sw->group != TP_ID_NONE) {
			uint32_t k = tp_u64map_get(&grp, sw->group);
			d->node_of_sw[i] = k;
			d->nodes[k].nsw++;
		}
	}
	for (size_t k = 0; k < d->nnodes; k++)
		if (d->nodes[k].sw != TP_ID_NONE)
			d->node_of_sw[d->nodes[k].sw] = (uint32_t)k;
	place_nodes(d);
out:
	tp_u64map_clear(&grp);
	return err;
}

/* The drawn line a cable belongs to, created on first use. */
static dlink_t *dlink_get(draw_t *d, uint32_t a, uint32_t b, uint32_t box)
{
	uint64_t key =
	    b == TP_ID_NONE
		? ((uint64_t)1 << 63) | ((uint64_t)box << 32) | a
		: ((uint64_t)(a < b ? a : b) << 32) | (a < b ? b : a);
	uint32_t k = tp_u64map_get(&d->link_map, key);

	if (k != TP_MAP_NONE)
		return &d->links[k];
	k = (uint32_t)d->nlinks++;
	if (tp_u64map_put(&d->link_map, key, k))
		return NULL;
	d->links[k] = (dlink_t){.a = a,
				.b = b,
				.box = box,
				.worst_health = INFINITY,
				.worst_util = -1,
				.worst_link = TP_ID_NONE};
	return &d->links[k];
}

static void dlink_add(draw_t *d, dlink_t *dl, uint32_t l)
{
	double h = d->health[l], u = d->util[l];

	dl->ncables++;
	dl->gbps += tp_fabric_link(d->f, l)->gbps;
	dl->ndegraded += h < 1.0;
	dl->ndown += !(h > 0);
	if (dl->nlinks < 8)
		dl->links[dl->nlinks++] = l;
	/* the worst cable names the line: lowest health, then busiest */
	if (h < dl->worst_health ||
	    (h == dl->worst_health && u > dl->worst_util))
		dl->worst_link = l;
	if (h < dl->worst_health)
		dl->worst_health = h;
	if (u > dl->worst_util)
		dl->worst_util = u;
}

/* Group the fabric's cables into lines between drawn things. */
static tp_err_t collect_links(draw_t *d)
{
	const tp_fabric_t *f = d->f;
	size_t nl = tp_fabric_nlinks(f);

	if (!(d->links = tp_calloc(nl + 1, sizeof(dlink_t))) ||
	    tp_u64map_reserve(&d->link_map, nl + 1))
		return TP_ERR_NOMEM;
	for (size_t l = 0; l < nl; l++) {
		const tp_link_t *lk = tp_fabric_link(f, l);
		uint32_t end[2] = {TP_ID_NONE, TP_ID_NONE}, box = TP_ID_NONE;
		for (int e = 0; e < 2; e++) {
			if (lk->kind[e] == TP_NODE_SWITCH)
				end[e] = d->node_of_sw[lk->node[e]];
			else {
				const tp_ca_t *ca =
				    tp_fabric_ca(f, lk->node[e]);
				if (ca->role == TP_CA_HOST)
					box = tp_fabric_host(f, ca->host)
						  ->group[0];
			}
		}
		dlink_t *dl = NULL;
		if (end[0] != TP_ID_NONE && end[1] != TP_ID_NONE) {
			if (end[0] == end[1])
				continue; /* inside one drawn group */
			dl = dlink_get(d, end[0], end[1], TP_ID_NONE);
		} else if (box != TP_ID_NONE &&
			   (end[0] != TP_ID_NONE || end[1] != TP_ID_NONE)) {
			dl = dlink_get(
			    d, end[0] != TP_ID_NONE ? end[0] : end[1],
			    TP_ID_NONE, (uint32_t)d->box_of_group[box]);
		} else
			continue; /* SHArP nodes, unplaced switches */
		if (!dl)
			return TP_ERR_NOMEM;
		dlink_add(d, dl, (uint32_t)l);
	}
	return TP_OK;
}

/* Per-link utilisation: background plus the jobs' predicted load. */
static tp_err_t compute_util(draw_t *d)
{
	size_t nl = tp_fabric_nlinks(d->f);
	double *load = tp_calloc(2 * nl + 1, sizeof(double));
	tp_cost_ctx_t *ctx = NULL;
	tp_cost_params_t cp;
	tp_err_t err;

	if (!load || !(d->util = tp_calloc(nl + 1, sizeof(double)))) {
		tp_free(load);
		return TP_ERR_NOMEM;
	}
	tp_cli_cost_params(&cp);
	err = d->heat ? tp_cost_ctx_create(d->f, &cp, &ctx) : TP_OK;
	if (ctx)
		err = tp_state_jobs_link_load(ctx, d->s, d->bytes, d->duty,
					      load, &d->unrouted);
	for (size_t l = 0; !err && l < nl; l++) {
		double cap = tp_fabric_link(d->f, (uint32_t)l)->gbps *
			     link_health(d, (uint32_t)l);
		double use = tp_state_link_background(d->s, (uint32_t)l) +
			     fmax(load[2 * l], load[2 * l + 1]);
		d->util[l] = use > 0 ? (cap > 0 ? use / cap : INFINITY) : 0;
	}
	tp_cost_ctx_destroy(ctx);
	tp_free(load);
	return err;
}

/* Jobs with a legend entry: the most GPUs first, then ascending id. */
static int job_size_cmp(const void *x, const void *y)
{
	const tp_state_job_t *a = x, *b = y;

	if (a->total_gpus != b->total_gpus)
		return a->total_gpus > b->total_gpus ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static tp_err_t pick_legend_jobs(draw_t *d)
{
	tp_err_t err = tp_state_jobs(d->s, &d->jobs, &d->njobs);

	if (err || !d->njobs)
		return err;
	qsort(d->jobs, d->njobs, sizeof(tp_state_job_t), job_size_cmp);
	d->nlegend = d->njobs < JOB_LEGEND ? d->njobs : JOB_LEGEND;
	if (!(d->legend_jobs = tp_calloc(d->nlegend, sizeof(uint64_t))))
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < d->nlegend; i++)
		d->legend_jobs[i] = d->jobs[i].id;
	qsort(d->legend_jobs, d->nlegend, sizeof(uint64_t), u64_cmp);
	return TP_OK;
}

/* A job's colour: its legend entry's, or the one of the unlisted. */
static const char *job_fill(const draw_t *d, uint64_t job)
{
	const uint64_t *at = bsearch(&job, d->legend_jobs, d->nlegend,
				     sizeof(uint64_t), u64_cmp);

	return at ? job_palette[at - d->legend_jobs] : OTHER_JOBS;
}

static void host_fill(const draw_t *d, uint32_t h, char buf[8])
{
	uint64_t job = tp_state_host_job(d->s, h);

	if (!tp_state_host_up(d->s, h))
		snprintf(buf, 8, DOWN_COLOUR);
	else if (!job)
		snprintf(buf, 8, FREE_COLOUR);
	else
		snprintf(buf, 8, "%s", job_fill(d, job));
}

/* ---- drawing ---- */

/* Characters every drawn switch's name starts (*pre_p) and ends
 * (*suf_p) with, where there are two or more: what tells them apart is
 * between ("MF0;A09-P1-IBLEAF-04-08:MQM9701/U1"). */
static void common_ends(const draw_t *d, size_t *pre_p, size_t *suf_p)
{
	const char *first = NULL;
	size_t pre = 0, suf = 0, flen = 0, nsw = 0;

	for (size_t k = 0; k < d->nnodes; k++) {
		if (d->nodes[k].sw == TP_ID_NONE)
			continue;
		const char *s = tp_fabric_switch(d->f, d->nodes[k].sw)->desc;
		size_t len = strlen(s), i = 0;
		if (!nsw++) {
			first = s;
			pre = suf = flen = len;
			continue;
		}
		while (i < pre && i < len && s[i] == first[i])
			i++;
		pre = i;
		for (i = 0; i < suf && i < len &&
			    s[len - 1 - i] == first[flen - 1 - i];
		     i++)
			;
		suf = i;
	}
	/* one switch, or names one inside another: nothing cut */
	if (nsw < 2 || pre + suf >= flen)
		pre = suf = 0;
	*pre_p = pre;
	*suf_p = suf;
}

/* desc in at most n characters without its first pre and last suf (the
 * parts every switch's name shares: common_ends), cut in the middle:
 * switch names differ at both ends ("su01-rail1-leaf"). */
static void short_label(const char *desc, size_t pre, size_t suf, size_t n,
			char *buf, size_t cap)
{
	size_t len = strlen(desc);

	if (pre + suf < len) {
		desc += pre;
		len -= pre + suf;
	}
	if (len <= n || n < 5) {
		snprintf(buf, cap, "%.*s", (int)(len < n ? len : n), desc);
		return;
	}
	size_t head = (n - 1) / 2, tail = n - 1 - head;
	snprintf(buf, cap, "%.*s~%.*s", (int)head, desc, (int)tail,
		 desc + len - tail);
}

static void draw_switches(const draw_t *d, tp_strbuf_t *sb)
{
	size_t pre, suf;

	common_ends(d, &pre, &suf);
	for (size_t k = 0; k < d->nnodes; k++) {
		const dnode_t *dn = &d->nodes[k];
		char label[64], name[160];
		if (dn->sw != TP_ID_NONE) {
			const char *desc = tp_fabric_switch(d->f, dn->sw)->desc;
			snprintf(name, sizeof(name), "switch %s", desc);
			short_label(desc, pre, suf,
				    (size_t)fmax(0, (dn->w - 4) / 4.8), label,
				    sizeof(label));
		} else {
			char gname[80];
			tp_fabric_group_name(d->f, dn->group, gname,
					     sizeof(gname));
			snprintf(name, sizeof(name), "%zu switches", dn->nsw);
			snprintf(label, sizeof(label), "%.40s x%zu", gname,
				 dn->nsw);
		}
		char gname[80]; /* a group's name: at most 64 bytes */
		tp_fabric_group_name(d->f, dn->group, gname, sizeof(gname));
		tp_strbuf_printf(sb, "<g><title>level %d: ", dn->level);
		tp_svg_escape(sb, name);
		tp_strbuf_printf(sb, " (group ");
		tp_svg_escape(sb, *gname ? gname : "none");
		tp_strbuf_printf(sb,
				 ")</title><rect x='%.1f' y='%.1f' "
				 "width='%.1f' height='%d' fill='#f4f4f4' "
				 "stroke='#555555'/>",
				 dn->x - dn->w / 2, dn->y - SW_H / 2.0, dn->w,
				 SW_H);
		if (dn->w >= 20)
			tp_svg_text(sb, dn->x, dn->y + 3,
				    "font-size='8' text-anchor='middle'", "%s",
				    label);
		tp_strbuf_printf(sb, "</g>\n");
	}
}

static const char *dlink_colour(const draw_t *d, const dlink_t *dl)
{
	if (!(dl->worst_health > 0))
		return health_bins[0].colour;
	if (d->heat)
		return util_bins[bin_of(util_bins, NBINS(util_bins),
					dl->worst_util)]
		    .colour;
	return health_bins[bin_of(health_bins, NBINS(health_bins),
				  dl->worst_health)]
	    .colour;
}

/* Severity for the drawing order: problems are drawn last, on top. */
static double dlink_rank(const draw_t *d, const dlink_t *dl)
{
	return d->heat ? dl->worst_util + (dl->worst_health < 1 ? 1e6 : 0)
		       : 1 - dl->worst_health;
}

static const draw_t *rank_draw;

static int dlink_cmp(const void *x, const void *y)
{
	double a = dlink_rank(rank_draw, *(const dlink_t *const *)x),
	       b = dlink_rank(rank_draw, *(const dlink_t *const *)y);

	return a < b ? -1 : a > b;
}

static void draw_one_link(const draw_t *d, tp_strbuf_t *sb, const dlink_t *dl)
{
	const dnode_t *a = &d->nodes[dl->a];
	double x2, y2;

	if (dl->b != TP_ID_NONE) {
		x2 = d->nodes[dl->b].x;
		y2 = d->nodes[dl->b].y + (d->nodes[dl->b].level > a->level
					      ? SW_H / 2.0
					      : -SW_H / 2.0);
	} else {
		x2 = d->box_x[dl->box] + d->box_w / 2;
		y2 = d->box_y;
	}
	double y1 =
	    a->y + (dl->b == TP_ID_NONE || d->nodes[dl->b].level < a->level
			? SW_H / 2.0
			: -SW_H / 2.0);
	bool dashed =
	    !(dl->worst_health > 0) || (d->heat && dl->worst_health < 1);
	/* a cable between two switches of one row (a leaf hanging off
	 * another) arcs above the row instead of running along its top */
	bool arc = dl->b != TP_ID_NONE && d->nodes[dl->b].level == a->level;
	if (arc) {
		/* its top h above the row: higher for longer spans, but
		 * within most of the gap to the row above and below the
		 * header over the top row */
		double h =
		    fmin(12 + 0.075 * fabs(x2 - a->x), 0.6 * (ROW_H - SW_H));
		h = fmin(h, y1 - (TOP - 20));
		tp_strbuf_printf(sb,
				 "<path d='M %.1f %.1f Q %.1f %.1f %.1f %.1f' "
				 "fill='none' ",
				 a->x, y1, (a->x + x2) / 2, y1 - 2 * h, x2, y2);
	} else
		tp_strbuf_printf(sb,
				 "<line x1='%.1f' y1='%.1f' x2='%.1f' "
				 "y2='%.1f' ",
				 a->x, y1, x2, y2);
	tp_strbuf_printf(sb, "stroke='%s' stroke-width='3'%s data-links='",
			 dlink_colour(d, dl),
			 dashed ? " stroke-dasharray='8,3'" : "");
	for (size_t i = 0; i < dl->nlinks; i++)
		tp_strbuf_printf(sb, "%s%u", i ? "," : "", dl->links[i]);
	tp_strbuf_printf(sb,
			 "'><title>%zu cable%s, %.0f Gb/s; %zu degraded, %zu "
			 "down; worst: link %u at health %.2f, "
			 "utilisation %.0f%%</title></%s>\n",
			 dl->ncables, dl->ncables == 1 ? "" : "s", dl->gbps,
			 dl->ndegraded, dl->ndown, dl->worst_link,
			 dl->worst_health, 100 * dl->worst_util,
			 arc ? "path" : "line");
}

static tp_err_t draw_links(const draw_t *d, tp_strbuf_t *sb)
{
	const dlink_t **order = tp_calloc(d->nlinks + 1, sizeof(*order));

	if (!order)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < d->nlinks; i++)
		order[i] = &d->links[i];
	rank_draw = d;
	qsort(order, d->nlinks, sizeof(*order), dlink_cmp);
	for (size_t i = 0; i < d->nlinks; i++)
		draw_one_link(d, sb, order[i]);
	tp_free(order);
	return TP_OK;
}

/* Each host's worst cable (health and link), for the notes. */
static tp_err_t host_cables(draw_t *d)
{
	const tp_fabric_t *f = d->f;
	size_t nh = tp_fabric_nhosts(f);

	d->host_health = tp_malloc((nh + 1) * sizeof(double));
	d->host_link = tp_malloc((nh + 1) * sizeof(uint32_t));
	if (!d->host_health || !d->host_link)
		return TP_ERR_NOMEM;
	for (size_t h = 0; h < nh; h++) {
		d->host_health[h] = 1.0;
		d->host_link[h] = TP_ID_NONE;
	}
	for (size_t l = 0; l < tp_fabric_nlinks(f); l++) {
		const tp_link_t *lk = tp_fabric_link(f, l);
		double hl = d->health[l];
		for (int e = 0; e < 2; e++) {
			uint32_t h = lk->kind[e] == TP_NODE_CA
					 ? tp_fabric_ca(f, lk->node[e])->host
					 : TP_ID_NONE;
			if (h != TP_ID_NONE && hl < d->host_health[h]) {
				d->host_health[h] = hl;
				d->host_link[h] = (uint32_t)l;
			}
		}
	}
	return TP_OK;
}

static void draw_cells(const draw_t *d, tp_strbuf_t *sb, size_t b)
{
	const tp_group_t *gp = tp_fabric_group(d->f, d->boxes[b]);
	double x0 = d->box_x[b] + 6, y0 = d->box_y + 20;

	for (size_t i = 0; i < gp->nhosts; i++) {
		uint32_t h = gp->hosts[i];
		const tp_host_t *hp = tp_fabric_host(d->f, h);
		char fill[8];
		const char *outline = "none";
		host_fill(d, h, fill);
		if (hp->degraded)
			outline = DEGRADED_HOST;
		else if (d->host_health[h] < 1.0)
			outline = WEAK_CABLE;
		tp_strbuf_printf(
		    sb,
		    "<rect id='host-%s' x='%.1f' y='%.1f' width='%d' "
		    "height='%d' fill='%s' stroke='%s' stroke-width='%s'>"
		    "<title>%s: %d of %zu GPUs free, job %llu%s</title>"
		    "</rect>\n",
		    hp->name, x0 + (double)(i % (size_t)d->cols) * CELL,
		    y0 + (double)(i / (size_t)d->cols) * CELL, CELL - 2,
		    CELL - 2, fill, outline,
		    strcmp(outline, "none") ? "2" : "0", hp->name,
		    tp_state_free_gpus(d->s, h), hp->ngpus,
		    (unsigned long long)tp_state_host_job(d->s, h),
		    hp->degraded ? ", degraded" : "");
	}
}

/* A group as one bar: GPUs of legend jobs, other jobs, free, down. */
static void draw_bar(const draw_t *d, tp_strbuf_t *sb, size_t b)
{
	const tp_group_t *gp = tp_fabric_group(d->f, d->boxes[b]);
	double total = 0, y = d->box_y + d->box_h - 4, x = d->box_x[b] + 2;
	double seg[JOB_LEGEND + 3] = {0}; /* legend jobs, other, free, down */
	size_t ndeg = 0;

	for (size_t i = 0; i < gp->nhosts; i++) {
		uint32_t h = gp->hosts[i];
		const tp_host_t *hp = tp_fabric_host(d->f, h);
		double g = (double)hp->ngpus, fr = tp_state_free_gpus(d->s, h);
		uint64_t job = tp_state_host_job(d->s, h);
		uint64_t *at = job ? bsearch(&job, d->legend_jobs, d->nlegend,
					     sizeof(uint64_t), u64_cmp)
				   : NULL;
		ndeg += hp->degraded;
		total += g;
		if (!tp_state_host_up(d->s, h)) {
			seg[JOB_LEGEND + 2] += g;
			continue;
		}
		seg[JOB_LEGEND + 1] += fr;
		seg[at ? (size_t)(at - d->legend_jobs) : JOB_LEGEND] += g - fr;
	}
	double scale = total > 0 ? (d->box_h - 24) / total : 0;
	for (size_t k = 0; k < JOB_LEGEND + 3; k++) {
		char c[8];
		if (!(seg[k] > 0))
			continue;
		if (k < d->nlegend)
			snprintf(c, sizeof(c), "%s", job_palette[k]);
		else
			snprintf(c, sizeof(c), "%s",
				 k == JOB_LEGEND       ? OTHER_JOBS
				 : k == JOB_LEGEND + 1 ? FREE_COLOUR
						       : DOWN_COLOUR);
		y -= seg[k] * scale;
		tp_strbuf_printf(sb,
				 "<rect x='%.1f' y='%.2f' width='%.1f' "
				 "height='%.2f' fill='%s'/>\n",
				 x, y, d->box_w - 4, seg[k] * scale, c);
	}
	if (ndeg)
		tp_strbuf_printf(sb,
				 "<rect x='%.1f' y='%.1f' width='%.1f' "
				 "height='4' fill='" DEGRADED_HOST
				 "'><title>%zu degraded hosts</title></rect>\n",
				 x, d->box_y + 14, d->box_w - 4, ndeg);
}

static void draw_boxes(const draw_t *d, tp_strbuf_t *sb)
{
	for (size_t b = 0; b < d->nboxes; b++) {
		const tp_group_t *gp = tp_fabric_group(d->f, d->boxes[b]);
		char name[80], label[80]; /* a group's name: at most 64 bytes */
		tp_fabric_group_name(d->f, d->boxes[b], name, sizeof(name));
		tp_strbuf_printf(sb, "<g><title>level-1 group ");
		tp_svg_escape(sb, name);
		tp_strbuf_printf(
		    sb,
		    ": %zu hosts, %zu leaves, up %.0f Gb/s, down %.0f "
		    "Gb/s</title><rect x='%.1f' y='%.1f' width='%.1f' "
		    "height='%.1f' fill='none' stroke='#555555'/></g>\n",
		    gp->nhosts, gp->nswitches, gp->up_gbps, gp->down_gbps,
		    d->box_x[b], d->box_y, d->box_w, d->box_h);
		if (d->cells) {
			short_label(name, 0, 0,
				    (size_t)fmax(0, (d->box_w - 6) / 6), label,
				    sizeof(label));
			tp_svg_text(sb, d->box_x[b] + 3, d->box_y + 12,
				    "font-size='10'", "%s", label);
			draw_cells(d, sb, b);
		} else
			draw_bar(d, sb, b);
	}
}

/* Legends side by side under the boxes; returns the y below them. */
static double draw_legends(const draw_t *d, tp_strbuf_t *sb, double y)
{
	const bin_t *bins = d->heat ? util_bins : health_bins;
	size_t nb = d->heat ? NBINS(util_bins) : NBINS(health_bins);
	double x = LEFT, bottom = y;
	char id[48], label[96];

	tp_svg_text(sb, x, y, "font-size='12' font-weight='bold'", "%s",
		    d->heat ? "Cables: predicted utilisation (busiest cable "
			      "of a line)"
			    : "Cables: health (worst cable of a line)");
	for (size_t i = 0; i < nb; i++) {
		snprintf(id, sizeof(id), "legend-%s-%zu",
			 d->heat ? "util" : "health", i);
		tp_svg_swatch(sb, x, y + 18 + 16 * (double)i, id,
			      bins[i].colour, true, bins[i].label);
	}
	if (d->heat)
		tp_svg_text(sb, x, y + 18 + 16 * (double)nb, NULL,
			    "dashed: a degraded or down cable in the line");
	bottom = fmax(bottom, y + 18 + 16 * (double)(nb + 1));
	x += 370;
	tp_svg_text(sb, x, y, "font-size='12' font-weight='bold'", "Hosts");
	tp_svg_swatch(sb, x, y + 18, "legend-free", FREE_COLOUR, false, "free");
	tp_svg_swatch(sb, x, y + 34, "legend-down", DOWN_COLOUR, false,
		      "down (state)");
	tp_svg_swatch(sb, x, y + 50, "legend-degraded", DEGRADED_HOST, false,
		      "red outline: degraded (fewer rails cabled)");
	tp_svg_swatch(sb, x, y + 66, "legend-weak", WEAK_CABLE, false,
		      "orange outline: its own cable below full health");
	if (d->njobs > d->nlegend)
		tp_svg_swatch(sb, x, y + 82, "legend-other", OTHER_JOBS, false,
			      "other jobs (smaller, not listed)");
	bottom = fmax(bottom, y + 98);
	x += 360;
	tp_svg_text(sb, x, y, "font-size='12' font-weight='bold'",
		    "Jobs (%zu; GPUs held)", d->njobs);
	for (size_t i = 0; i < d->nlegend; i++) {
		size_t gpus = 0;
		for (size_t j = 0; j < d->njobs; j++)
			if (d->jobs[j].id == d->legend_jobs[i])
				gpus = d->jobs[j].total_gpus;
		snprintf(id, sizeof(id), "legend-job-%llu",
			 (unsigned long long)d->legend_jobs[i]);
		snprintf(label, sizeof(label), "job %llu (%zu GPUs)",
			 (unsigned long long)d->legend_jobs[i], gpus);
		tp_svg_swatch(sb, x + 150 * (double)(i / 8),
			      y + 18 + 16 * (double)(i % 8), id, job_palette[i],
			      false, label);
	}
	if (!d->njobs)
		tp_svg_text(sb, x, y + 18, NULL, "none");
	return fmax(bottom,
		    y + 18 + 16 * (double)(d->nlegend < 8 ? d->nlegend : 8)) +
	       10;
}

/* Degraded hosts and cables, in words. Returns the y below. */
static double draw_notes(const draw_t *d, tp_strbuf_t *sb, double y)
{
	const tp_fabric_t *f = d->f;
	size_t shown = 0, more = 0;

	tp_svg_text(sb, LEFT, y, "font-size='12' font-weight='bold'",
		    "Degraded hosts and cables");
	for (size_t h = 0; h < tp_fabric_nhosts(f); h++) {
		const tp_host_t *hp = tp_fabric_host(f, h);
		uint32_t l = d->host_link[h];
		double hh = d->host_health[h];
		if (!hp->degraded && hh >= 1.0 && tp_state_host_up(d->s, h))
			continue;
		if (shown == NOTES_MAX) {
			more++;
			continue;
		}
		char why[160] = "";
		size_t n = 0;
		if (hp->degraded)
			n += (size_t)snprintf(
			    why + n, sizeof(why) - n,
			    "cabled to %zu of the fabric's %d rails; ",
			    hp->nleaves, tp_fabric_rails(f));
		if (hh < 1.0 && n < sizeof(why))
			n += (size_t)snprintf(why + n, sizeof(why) - n,
					      "cable (link %u) at health "
					      "%.2f (state x rate); ",
					      l, hh);
		if (!tp_state_host_up(d->s, h) && n < sizeof(why))
			snprintf(why + n, sizeof(why) - n,
				 "down in the state; ");
		why[strlen(why) > 2 ? strlen(why) - 2 : 0] = '\0';
		tp_svg_text(sb, LEFT, y + 16 * (double)(++shown), NULL,
			    "%s: %s", hp->name, why);
	}
	size_t sw_bad = 0;
	for (size_t l = 0; l < tp_fabric_nlinks(f); l++) {
		sw_bad +=
		    !host_cable(tp_fabric_link(f, l)) && d->health[l] < 1.0;
	}
	if (more)
		tp_svg_text(sb, LEFT, y + 16 * (double)(++shown), NULL,
			    "... and %zu more hosts", more);
	tp_svg_text(sb, LEFT, y + 16 * (double)(++shown), NULL,
		    "%zu switch-to-switch cables below full health", sw_bad);
	return y + 16 * (double)(shown + 1);
}

static void draw_header(const draw_t *d, tp_strbuf_t *sb)
{
	const tp_fabric_t *f = d->f;
	size_t down = 0, nlev = 0;
	char agg[256] = "";

	for (size_t h = 0; h < tp_fabric_nhosts(f); h++)
		down += !tp_state_host_up(d->s, h);
	tp_svg_text(sb, LEFT, 18, "font-size='14' font-weight='bold'",
		    "Fabric %s: %zu hosts, %zu switches in %d levels, %zu "
		    "level-1 groups",
		    d->fabric_name, tp_fabric_nhosts(f), tp_fabric_nswitches(f),
		    tp_fabric_nlevels(f), d->nboxes);
	tp_svg_text(
	    sb, LEFT, 36, "font-size='12'",
	    "State %s: %zu of %zu GPUs busy, %zu jobs, %zu hosts down",
	    d->state_name ? d->state_name : "(none: all free, all healthy)",
	    tp_state_busy_gpus(d->s), tp_fabric_total_gpus(f), d->njobs, down);
	if (d->heat) {
		char size[32];
		/* "at once" is the peak, duty 1 alone */
		tp_svg_text(sb, LEFT, 52, "font-size='11'",
			    "Heat: every job's all-reduce of %s%s (duty %.2f, "
			    "fastest algorithm) plus the state's background; "
			    "%zu jobs without a live route left out",
			    tp_cli_size(d->bytes, size, sizeof(size)),
			    d->duty < 1 ? "" : " at once", d->duty,
			    d->unrouted);
	}
	for (int l = 1; l <= TP_MAX_LEVELS; l++)
		if (d->aggregated_level[l])
			nlev += (size_t)snprintf(
			    agg + nlev, sizeof(agg) - nlev,
			    "level %d's %zu switches drawn as their groups; ",
			    l, tp_fabric_switches_at(f, l));
	tp_svg_text(sb, LEFT, 68, "font-size='11' fill='#555555'",
		    "Aggregated: parallel cables as one line, each group's "
		    "host cables per leaf as one line; %s%s",
		    agg,
		    d->cells ? "hosts one by one"
			     : "hosts as one bar of GPUs per group");
}

/* The whole picture: the body first, as the height is known only at
 * its end. */
static int render(draw_t *d, const char *out)
{
	tp_strbuf_t sb = {0}, body = {0};
	int rc;

	if (d->width < 1000)
		d->width = 1000;
	draw_header(d, &body);
	if (draw_links(d, &body))
		body.failed = true;
	draw_switches(d, &body);
	draw_boxes(d, &body);
	double y = draw_legends(d, &body, d->box_y + d->box_h + 30);
	y = draw_notes(d, &body, y + 10);
	tp_svg_begin(&sb, (int)d->width, (int)y + 10);
	if (body.failed)
		sb.failed = true;
	else
		tp_strbuf_append(&sb, body.buf, body.len);
	rc = tp_svg_finish(&sb, out);
	tp_free(body.buf);
	tp_free(sb.buf);
	return rc;
}

static void draw_free(draw_t *d)
{
	tp_free(d->util);
	tp_free(d->boxes);
	tp_free(d->box_of_group);
	tp_free(d->box_x);
	tp_free(d->nodes);
	tp_free(d->node_of_sw);
	tp_free(d->links);
	tp_u64map_clear(&d->link_map);
	tp_state_jobs_free(d->jobs, d->njobs);
	tp_free(d->legend_jobs);
	tp_free(d->health);
	tp_free(d->host_health);
	tp_free(d->host_link);
}

int tp_cmd_draw(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"fabric", required_argument, NULL, TP_CLI_OPT_FABRIC},
	    {"state", required_argument, NULL, TP_CLI_OPT_STATE},
	    {"output", required_argument, NULL, 'o'},
	    {"heat", no_argument, NULL, 'H'},
	    {"bytes", required_argument, NULL, 'b'},
	    {"duty", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	tp_cli_args_t a = {.usage = usage};
	double bytes = tp_request_bytes(&(const tp_request_t){0}), duty = 1.0;
	const char *heat_only = NULL; /* --bytes or --duty: they shape --heat */
	int c, rc = TP_EXIT_INPUT;
	tp_fabric_t *f = NULL;
	tp_state_t *s = NULL;
	draw_t d;
	tp_err_t err;

	memset(&d, 0, sizeof(d));
	optind = 1;
	while ((c = tp_cli_getopt(argc, argv, "o:h", opts, &a)) != -1) {
		switch (c) {
		case 'H':
			d.heat = true;
			break;
		case 'b':
			if (!tp_cli_bytes("draw: --bytes", optarg, 0, &bytes))
				return TP_EXIT_INPUT;
			heat_only = "--bytes";
			break;
		case 'd':
			if (!tp_cli_double("--duty", optarg, 0, 1, &duty))
				return TP_EXIT_INPUT;
			heat_only = "--duty";
			break;
		}
	}
	if (a.exit >= 0)
		return a.exit;
	if (heat_only && !d.heat) {
		tp_cli_err("draw: %s applies to --heat only (see --help)",
			   heat_only);
		return TP_EXIT_INPUT;
	}
	if (!tp_cli_no_operand("draw", argc, argv))
		return TP_EXIT_INPUT;
	if (!a.fabric || !a.output) {
		tp_cli_err(
		    "draw: --fabric and -o FILE.svg are required (see --help)");
		return TP_EXIT_INPUT;
	}
	if (!(f = tp_cli_load(a.fabric, &rc)) ||
	    !(s = tp_cli_load_state(f, a.state, &rc)))
		goto out;
	d.f = f;
	d.s = s;
	d.fabric_name = a.fabric;
	d.state_name = a.state;
	d.bytes = bytes;
	d.duty = duty;
	sort_fabric = f;
	if ((err = shown_health(&d)) || (err = layout_boxes(&d)) ||
	    (err = layout_switches(&d)) || (err = compute_util(&d)) ||
	    (err = collect_links(&d)) || (err = pick_legend_jobs(&d)) ||
	    (err = host_cables(&d))) {
		tp_cli_err("draw: %s: %s", a.fabric, tp_strerror(err));
		rc = tp_cli_exit_code(err);
		goto out;
	}
	rc = render(&d, a.output);
out:
	draw_free(&d);
	tp_state_destroy(s);
	tp_fabric_destroy(f);
	return rc;
}
