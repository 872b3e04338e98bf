/*
 * Synthetic fabrics: a two-level fat tree, a rail-optimized SuperPOD-style
 * fabric (one subnet per rail) and NVL72 racks over a fat tree.
 *
 * Everything is derived from the parameters and creation order, never from
 * time or randomness, so two runs give the same GUIDs, names and ports and
 * tests can compare generated fabrics byte for byte.
 *
 * The generated hosts get their GPUs as node data (has_node_data): the
 * generator is the authority on them, exactly as hwloc would be.
 *
 * A parameter out of range is logged naming the `fabric generate` option
 * that sets it (the CLI is how people reach these), and a derived number
 * over its limit (hosts, cables, a switch's ports) names the options that
 * make it smaller: the caller has nothing to add.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "topology_int.h"

#define SW_GUID_BASE 0x0002c90300000000ULL
#define CA_GUID_BASE 0x0002c90400000000ULL

#define MAX_COUNT     65536
#define MAX_HOSTS     (1 << 20)
#define MAX_GPUS      64
#define MAX_RAILS     32
#define MAX_LINK_GBPS 3200.0
/* Bound memory: a typo in a parameter must not build a billion cables. */
#define MAX_LINKS (1 << 24)

typedef struct gen {
	tp_fabric_t *f;
	uint64_t next_sw, next_ca;
	int host_width; /* digits in host names */
	const char *prefix;
	int width; /* link lanes */
	double lane_gbps;
	uint64_t rng; /* splitmix64 state for degraded cables */
} gen_t;

static int digits(long long n)
{
	int d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

static int name_width(long long n, int min)
{
	int d = digits(n);
	return d < min ? min : d;
}

/* Names are short (widths come from counts capped above), so a fixed
 * buffer never truncates; vsnprintf keeps the compiler from assuming
 * arbitrary widths. */
static void fmt(char *buf, size_t len, const char *f, ...)
    __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
}

static tp_err_t refuse(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static tp_err_t refuse(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tp__log(TP_LOG_ERROR, "%s", msg);
	return TP_ERR_RANGE;
}

/* opt: the option that sets v ("--leaves") */
static tp_err_t check_count(const char *what, const char *opt, long long v,
			    long long lo, long long hi)
{
	if (v < lo || v > hi)
		return refuse("%s: %s %lld out of range %lld..%lld", what, opt,
			      v, lo, hi);
	return TP_OK;
}

/* A derived number over its limit: "fat tree: 4294967296 hosts, at most
 * 1048576: fewer --leaves or --hosts-per-leaf". */
static tp_err_t check_total(const char *what, const char *thing, long long v,
			    long long hi, const char *fewer)
{
	if (v > hi)
		return refuse("%s: %lld %s, at most %lld: %s", what, v, thing,
			      hi, fewer);
	return TP_OK;
}

/* Host names become node descriptions ("<host> mlx5_0") and Slurm node
 * names, so the prefix must be one token of hostname characters. */
static tp_err_t check_prefix(const char *what, const char *p)
{
	if (!p || !*p || strlen(p) > 48)
		goto bad;
	for (const char *s = p; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' &&
		    *s != '.')
			goto bad;
	return TP_OK;
bad:
	return refuse("%s: --prefix \"%s\" is not a hostname prefix (1-48 "
		      "letters, digits, '-', '_', '.')",
		      what, p ? p : "(null)");
}

static tp_err_t check_gbps(const char *what, double g)
{
	if (!(g > 0 && g <= MAX_LINK_GBPS))
		return refuse("%s: --link-gbps %g out of range (0, %g]", what,
			      g, MAX_LINK_GBPS);
	return TP_OK;
}

static tp_err_t gen_start(gen_t *g, const char *prefix, long long nhosts,
			  double link_gbps)
{
	memset(g, 0, sizeof(*g));
	g->f = tp_fabric_create();
	if (!g->f)
		return TP_ERR_NOMEM;
	g->next_sw = 1;
	g->next_ca = 1;
	g->host_width = name_width(nhosts, 3);
	g->prefix = prefix;
	g->width = 4;
	g->lane_gbps = link_gbps / 4;
	return TP_OK;
}

static tp_err_t add_switch(gen_t *g, int subnet, const char *desc, int nports,
			   uint32_t *idx_p)
{
	return tp__fabric_add_switch(g->f, subnet, SW_GUID_BASE | g->next_sw++,
				     desc, nports, idx_p);
}

static tp_err_t link_sw(gen_t *g, uint32_t a, int pa, uint32_t b, int pb)
{
	return tp__fabric_add_link(g->f, TP_NODE_SWITCH, a, pa, TP_NODE_SWITCH,
				   b, pb, g->width, g->lane_gbps, true, NULL);
}

static void host_name(const gen_t *g, long long i, char *buf, size_t len)
{
	fmt(buf, len, "%s%0*lld", g->prefix, g->host_width, i + 1);
}

/* One CA of host i on (leaf, port), device mlx5_<dev>. */
static tp_err_t add_host_ca(gen_t *g, int subnet, long long i, int dev,
			    uint32_t leaf, int port)
{
	char host[80], desc[96];
	uint32_t ca;
	tp_err_t err;

	host_name(g, i, host, sizeof(host));
	fmt(desc, sizeof(desc), "%s mlx5_%d", host, dev);
	err = tp__fabric_add_ca(g->f, subnet, CA_GUID_BASE | g->next_ca++, desc,
				1, &ca);
	if (err)
		return err;
	return tp__fabric_add_link(g->f, TP_NODE_SWITCH, leaf, port, TP_NODE_CA,
				   ca, 1, g->width, g->lane_gbps, true, NULL);
}

/* Whether the next cable is degraded, from the generator's own seeded
 * stream: 0 healthy, 1 down (missing), 2 half width. */
static int degrade_pick(gen_t *g, double share)
{
	uint64_t z;
	double u;

	if (!(share > 0))
		return 0;
	z = (g->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	u = (double)(z >> 11) / 9007199254740992.0;
	if (u >= share)
		return 0;
	return u < share / 2 ? 1 : 2;
}

/* add_host_ca with a degraded cable: kind 1 leaves the CA uncabled (it
 * is not in the fabric, as a dump would not show it), 2 halves the width. */
static tp_err_t add_host_ca_deg(gen_t *g, int subnet, long long i, int dev,
				uint32_t leaf, int port, int kind)
{
	int w = g->width;
	tp_err_t err;

	if (kind == 1)
		return TP_OK;
	if (kind == 2)
		g->width = w / 2;
	err = add_host_ca(g, subnet, i, dev, leaf, port);
	g->width = w;
	return err;
}

/* GPUs of host i; GPU k's nearest NIC spreads the GPUs over the HCAs. */
static tp_err_t add_host_gpus(gen_t *g, long long i, int ngpus, int ncas)
{
	char host[80];
	tp_gpu_t *gpus;
	uint32_t h;
	tp_err_t err;

	host_name(g, i, host, sizeof(host));
	if ((err = tp__fabric_host_get(g->f, host, true, &h)))
		return err;
	if (!ngpus)
		return TP_OK;
	gpus = tp_calloc((size_t)ngpus, sizeof(*gpus));
	if (!gpus)
		return TP_ERR_NOMEM;
	for (int k = 0; k < ngpus; k++) {
		tp_gpu_t *gp = &gpus[k];
		gp->index = k;
		gp->numa = -1;
		gp->hca = -1;
		gp->model = tp_strdup("generated");
		gp->nic = tp_asprintf("mlx5_%d", k * ncas / ngpus);
		if (!gp->model || !gp->nic) {
			for (int j = 0; j <= k; j++)
				tp__gpu_free_strings(&gpus[j]);
			tp_free(gpus);
			return TP_ERR_NOMEM;
		}
	}
	return tp__fabric_host_set_gpus(g->f, h, gpus, (size_t)ngpus);
}

static tp_err_t gen_finish(gen_t *g, const char *what, tp_err_t err,
			   tp_fabric_t **f_p)
{
	if (!err)
		err = tp_fabric_finalize(g->f, NULL);
	if (err) {
		if (err == TP_ERR_NOMEM)
			tp__log(TP_LOG_ERROR, "%s: out of memory", what);
		else if (*tp_fabric_error(g->f))
			/* a builder failure; range errors were logged where
			 * they were found */
			tp__log(TP_LOG_ERROR, "%s: %s", what,
				tp_fabric_error(g->f));
		tp_fabric_destroy(g->f);
		return err;
	}
	*f_p = g->f;
	return TP_OK;
}

/* ---- fat tree ---- */

void tp_gen_fat_tree_defaults(tp_gen_fat_tree_t *p)
{
	/* 16 hosts down, 4 spines x 2 cables up per leaf: 2:1 oversubscribed,
	 * the common cost-saving choice, so placement has something to avoid */
	memset(p, 0, sizeof(*p));
	p->leaves = 8;
	p->spines = 4;
	p->hosts_per_leaf = 16;
	p->uplinks_per_spine = 2;
	p->gpus_per_host = 8;
	p->link_gbps = 400;
	p->host_prefix = "node";
	p->interleave = false;
	p->nics_per_host = 1;
}

/* Union-find root of x in comp[] (path halving). */
static uint32_t comp_root(uint32_t *comp, uint32_t x)
{
	while (comp[x] != x) {
		comp[x] = comp[comp[x]];
		x = comp[x];
	}
	return x;
}

/* kinds[(l * spines + s) * up + u]: the draw of leaf l's cable u to spine
 * s (1 down). Leaves whose live cables do not reach leaf 0's part of the
 * fabric get their last cable to a spine of that part back at half width
 * (2), until every leaf does; comp: room for leaves + spines. */
static void keep_connected(signed char *kinds, uint32_t *comp, int leaves,
			   int spines, int up)
{
	uint32_t n = (uint32_t)(leaves + spines);

	for (uint32_t x = 0; x < n; x++)
		comp[x] = x;
	for (int l = 0; l < leaves; l++)
		for (int s = 0; s < spines; s++)
			for (int u = 0; u < up; u++)
				if (kinds[((size_t)l * spines + s) * up + u] !=
				    1)
					comp[comp_root(comp, (uint32_t)l)] =
					    comp_root(comp,
						      (uint32_t)(leaves + s));
	for (int l = 1; l < leaves; l++) {
		uint32_t home = comp_root(comp, 0);
		if (comp_root(comp, (uint32_t)l) == home)
			continue;
		/* leaf 0 keeps a cable: some spine is in its part */
		for (int s = spines - 1; s >= 0; s--)
			if (comp_root(comp, (uint32_t)(leaves + s)) == home) {
				kinds[((size_t)l * spines + s) * up + up - 1] =
				    2;
				comp[comp_root(comp, (uint32_t)l)] = home;
				break;
			}
	}
}

tp_err_t tp_gen_fat_tree(const tp_gen_fat_tree_t *p, tp_fabric_t **f_p)
{
	const char *what = "fat tree";
	int nics, up, pods, lpp, nsp, cores, cu;
	long long nhosts;
	uint32_t *leaf = NULL, *spine = NULL, *core = NULL, *comp = NULL;
	signed char *kinds = NULL;
	char desc[64];
	gen_t g;
	tp_err_t err;
	int lw, sw, sub;

	if (!p || !f_p)
		return TP_ERR_INVAL;
	if ((err = check_count(what, "--leaves", p->leaves, 1, MAX_COUNT)) ||
	    (err = check_count(what, "--spines", p->spines, 1, MAX_COUNT)) ||
	    (err = check_count(what, "--hosts-per-leaf", p->hosts_per_leaf, 1,
			       MAX_COUNT)) ||
	    (err = check_count(what, "--uplinks", p->uplinks_per_spine, 0,
			       256)) ||
	    (err = check_count(what, "--nics-per-host", p->nics_per_host, 0,
			       64)) ||
	    (err = check_count(what, "--gpus-per-host", p->gpus_per_host, 0,
			       MAX_GPUS)) ||
	    (err = check_count(what, "--pods", p->pods, 0, MAX_COUNT)) ||
	    (err = check_count(what, "--cores", p->cores, 0, MAX_COUNT)) ||
	    (err = check_count(what, "--core-uplinks", p->core_uplinks, 0,
			       TP__PORTS_MAX)) ||
	    (err = check_gbps(what, p->link_gbps)) ||
	    (err = check_prefix(what, p->host_prefix)))
		return err;
	pods = p->pods > 1 ? p->pods : 1;
	if (p->leaves % pods)
		return refuse("%s: --leaves %d do not split evenly into "
			      "--pods %d",
			      what, p->leaves, pods);
	if (pods == 1 && (p->cores > 0 || p->core_uplinks > 0))
		return refuse("%s: --cores and --core-uplinks need --pods 2 "
			      "or more",
			      what);
	lpp = p->leaves / pods;
	if ((err = check_total(what, "spines (--pods x --spines)",
			       (long long)pods * p->spines, MAX_COUNT,
			       "fewer --pods or --spines")))
		return err;
	nsp = pods * p->spines;
	cores = pods == 1 ? 0 : p->cores > 0 ? p->cores : p->spines;
	if (!(p->degrade >= 0 && p->degrade <= 1))
		return refuse("%s: --degrade %g out of range [0, 1]", what,
			      p->degrade);
	nics = p->nics_per_host > 0   ? p->nics_per_host
	       : p->gpus_per_host > 0 ? p->gpus_per_host
				      : 1;
	up = p->uplinks_per_spine > 0
		 ? p->uplinks_per_spine
		 : (int)(((long long)p->hosts_per_leaf * nics / 2 + p->spines -
			  1) /
			 p->spines);
	if (up < 1)
		up = 1;
	cu = !cores ? 0
	     : p->core_uplinks > 0
		 ? p->core_uplinks
		 : (int)(((long long)lpp * up + cores - 1) / cores);
	nhosts = (long long)p->leaves * p->hosts_per_leaf;
	if ((err = check_total(what, "hosts", nhosts, MAX_HOSTS,
			       "fewer --leaves or --hosts-per-leaf")) ||
	    (err = check_total(what, "up-links",
			       (long long)p->leaves * p->spines * up, MAX_LINKS,
			       "fewer --leaves, --spines or --uplinks")) ||
	    (err = check_total(what, "host cables", nhosts * nics, MAX_LINKS,
			       "fewer hosts or --nics-per-host")) ||
	    (err = check_total(what, "core links", (long long)nsp * cores * cu,
			       MAX_LINKS,
			       "fewer --pods, --spines, --cores or "
			       "--core-uplinks")))
		return err;
	long long leaf_ports =
	    (long long)p->hosts_per_leaf * nics + (long long)p->spines * up;
	if (leaf_ports > TP__PORTS_MAX)
		return refuse("%s: a leaf needs %lld ports, at most %d: fewer "
			      "--hosts-per-leaf x --nics-per-host (%d x %d) or "
			      "--spines x --uplinks (%d x %d)",
			      what, leaf_ports, TP__PORTS_MAX,
			      p->hosts_per_leaf, nics, p->spines, up);
	if ((long long)lpp * up + (long long)cores * cu > TP__PORTS_MAX)
		return refuse("%s: a spine needs %lld ports, at most %d: fewer "
			      "--leaves x --uplinks (%d x %d)%s",
			      what, (long long)lpp * up + (long long)cores * cu,
			      TP__PORTS_MAX, lpp, up,
			      cores ? " a pod, or --cores x --core-uplinks"
				    : "");
	if ((long long)nsp * cu > TP__PORTS_MAX)
		return refuse(
		    "%s: a core needs %lld ports, at most %d: fewer "
		    "--pods x --spines x --core-uplinks (%d x %d x %d)",
		    what, (long long)nsp * cu, TP__PORTS_MAX, pods, p->spines,
		    cu);
	if ((err = gen_start(&g, p->host_prefix, nhosts, p->link_gbps)))
		return err;
	g.rng = p->degrade_seed ^ 0xdec0de5eedULL;
	leaf = tp_malloc((size_t)p->leaves * sizeof(uint32_t));
	spine = tp_malloc((size_t)nsp * sizeof(uint32_t));
	core = tp_malloc((size_t)(cores ? cores : 1) * sizeof(uint32_t));
	if (!leaf || !spine || !core) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	sub = tp__fabric_new_subnet(g.f);
	lw = name_width(p->leaves, 2);
	sw = name_width(nsp, 2);
	for (int l = 0; l < p->leaves; l++) {
		fmt(desc, sizeof(desc), "leaf%0*d", lw, l + 1);
		if ((err = add_switch(&g, sub, desc,
				      p->hosts_per_leaf * nics + p->spines * up,
				      &leaf[l])))
			goto out;
	}
	for (int s = 0; s < nsp; s++) {
		fmt(desc, sizeof(desc), "spine%0*d", sw, s + 1);
		if ((err = add_switch(&g, sub, desc, lpp * up + cores * cu,
				      &spine[s])))
			goto out;
	}
	for (int k = 0; k < cores; k++) {
		fmt(desc, sizeof(desc), "core%0*d", name_width(cores, 2),
		    k + 1);
		if ((err = add_switch(&g, sub, desc, nsp * cu, &core[k])))
			goto out;
	}
	for (long long i = 0; i < nhosts; i++) {
		long long l =
		    p->interleave ? i % p->leaves : i / p->hosts_per_leaf;
		long long slot =
		    p->interleave ? i / p->leaves : i % p->hosts_per_leaf;
		int cabled = 0;

		for (int n = 0; n < nics && !err; n++) {
			int port = (int)slot * nics + n + 1;
			int kind = degrade_pick(&g, p->degrade);
			/* never strand a host: its last NIC is only halved */
			if (kind == 1 && n == nics - 1 && !cabled)
				kind = 2;
			if (kind != 1)
				cabled++;
			err =
			    add_host_ca_deg(&g, sub, i, n, leaf[l], port, kind);
		}
		if (err || (err = add_host_gpus(&g, i, p->gpus_per_host, nics)))
			goto out;
	}
	size_t nup = (size_t)p->leaves * (size_t)p->spines * (size_t)up;
	kinds = tp_malloc(nup ? nup : 1);
	comp = tp_malloc((size_t)(p->leaves + p->spines) * sizeof(uint32_t));
	if (!kinds || !comp) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	for (int l = 0; l < p->leaves; l++) {
		int cabled = 0;

		for (int s = 0; s < p->spines; s++)
			for (int u = 0; u < up; u++) {
				int kind = degrade_pick(&g, p->degrade);
				/* never cut a leaf off the spines; as for
				 * hosts, the draw is kept so other cables
				 * degrade as before */
				if (kind == 1 && s == p->spines - 1 &&
				    u == up - 1 && !cabled)
					kind = 2;
				cabled += kind != 1;
				kinds[((size_t)l * p->spines + s) * up + u] =
				    (signed char)kind;
			}
	}
	/* Each leaf keeps a cable, but leaves left only on different spines
	 * could still not reach each other: a leaf apart from its pod's first
	 * leaf's part of the pod gets its last cable to a spine of that part
	 * back, at half width (a connected draw is kept as it is). The cores
	 * join every spine, so the pods then reach each other. */
	for (int q = 0; q < pods; q++)
		keep_connected(kinds + (size_t)q * lpp * p->spines * up, comp,
			       lpp, p->spines, up);
	for (int l = 0; l < p->leaves; l++)
		for (int s = 0; s < p->spines; s++)
			for (int u = 0; u < up; u++) {
				int lp =
				    p->hosts_per_leaf * nics + s * up + u + 1;
				int sp = l % lpp * up + u + 1;
				uint32_t to = spine[l / lpp * p->spines + s];
				int kind =
				    kinds[((size_t)l * p->spines + s) * up + u];
				if (kind == 1)
					continue;
				if ((err = tp__fabric_add_link(
					 g.f, TP_NODE_SWITCH, leaf[l], lp,
					 TP_NODE_SWITCH, to, sp,
					 kind == 2 ? g.width / 2 : g.width,
					 g.lane_gbps, true, NULL)))
					goto out;
			}
	for (int s = 0; s < nsp; s++)
		for (int k = 0; k < cores; k++)
			for (int u = 0; u < cu; u++)
				if ((err = tp__fabric_add_link(
					 g.f, TP_NODE_SWITCH, spine[s],
					 lpp * up + k * cu + u + 1,
					 TP_NODE_SWITCH, core[k],
					 s * cu + u + 1, g.width, g.lane_gbps,
					 true, NULL)))
					goto out;
out:
	tp_free(leaf);
	tp_free(spine);
	tp_free(core);
	tp_free(kinds);
	tp_free(comp);
	return gen_finish(&g, what, err, f_p);
}

/* ---- rail-optimized ---- */

void tp_gen_rail_defaults(tp_gen_rail_t *p)
{
	/* DGX SuperPOD shape: 32 nodes per SU, 8 compute rails */
	memset(p, 0, sizeof(*p));
	p->sus = 4;
	p->hosts_per_su = 32;
	p->rails = 8;
	p->spines_per_rail = 4;
	p->gpus_per_host = 8;
	p->link_gbps = 400;
	p->host_prefix = "dgx";
}

tp_err_t tp_gen_rail(const tp_gen_rail_t *p, tp_fabric_t **f_p)
{
	const char *what = "rail fabric";
	long long nhosts;
	uint32_t *leaf = NULL, *spine = NULL;
	char desc[64];
	gen_t g;
	tp_err_t err;
	int suw, spw, up;

	if (!p || !f_p)
		return TP_ERR_INVAL;
	if ((err = check_count(what, "--sus", p->sus, 1, MAX_COUNT)) ||
	    (err = check_count(what, "--hosts-per-su", p->hosts_per_su, 1,
			       MAX_COUNT)) ||
	    (err = check_count(what, "--rails", p->rails, 1, MAX_RAILS)) ||
	    (err = check_count(what, "--spines-per-rail", p->spines_per_rail, 1,
			       MAX_COUNT)) ||
	    (err = check_count(what, "--gpus-per-host", p->gpus_per_host, 0,
			       MAX_GPUS)) ||
	    (err = check_gbps(what, p->link_gbps)) ||
	    (err = check_prefix(what, p->host_prefix)))
		return err;
	nhosts = (long long)p->sus * p->hosts_per_su;
	/* non-blocking leaves: as much capacity up as down, spread evenly
	 * (rounded up when the spines do not divide the hosts) */
	up = (p->hosts_per_su + p->spines_per_rail - 1) / p->spines_per_rail;
	long long leaf_ports =
	    p->hosts_per_su + (long long)p->spines_per_rail * up;
	if ((err = check_total(what, "hosts", nhosts, MAX_HOSTS,
			       "fewer --sus or --hosts-per-su")) ||
	    (err = check_total(
		 what, "cables", (long long)p->rails * p->sus * leaf_ports,
		 MAX_LINKS, "fewer --rails, --sus or --hosts-per-su")))
		return err;
	if (leaf_ports > TP__PORTS_MAX)
		return refuse("%s: a leaf needs %lld ports (%d hosts down, "
			      "%lld cables up), at most %d: fewer "
			      "--hosts-per-su",
			      what, leaf_ports, p->hosts_per_su,
			      leaf_ports - p->hosts_per_su, TP__PORTS_MAX);
	if ((long long)p->sus * up > TP__PORTS_MAX)
		return refuse("%s: a spine needs %lld ports (%d leaves x %d "
			      "up-link%s), at most %d: fewer --sus or "
			      "--hosts-per-su, or more --spines-per-rail",
			      what, (long long)p->sus * up, p->sus, up,
			      up == 1 ? "" : "s", TP__PORTS_MAX);
	if ((err = gen_start(&g, p->host_prefix, nhosts, p->link_gbps)))
		return err;
	leaf = tp_malloc((size_t)p->rails * p->sus * sizeof(uint32_t));
	spine =
	    tp_malloc((size_t)p->rails * p->spines_per_rail * sizeof(uint32_t));
	if (!leaf || !spine) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	suw = name_width(p->sus, 2);
	spw = name_width(p->spines_per_rail, 2);
	/* each rail is a separate subnet, as on a real SuperPOD */
	for (int r = 0; r < p->rails; r++) {
		int sub = tp__fabric_new_subnet(g.f);

		for (int s = 0; s < p->sus; s++) {
			fmt(desc, sizeof(desc), "su%0*d-rail%d-leaf", suw,
			    s + 1, r + 1);
			if ((err = add_switch(&g, sub, desc,
					      p->hosts_per_su +
						  p->spines_per_rail * up,
					      &leaf[r * p->sus + s])))
				goto out;
		}
		for (int k = 0; k < p->spines_per_rail; k++) {
			fmt(desc, sizeof(desc), "rail%d-spine%0*d", r + 1, spw,
			    k + 1);
			if ((err = add_switch(
				 &g, sub, desc, p->sus * up,
				 &spine[r * p->spines_per_rail + k])))
				goto out;
		}
	}
	for (long long i = 0; i < nhosts; i++) {
		int s = (int)(i / p->hosts_per_su);
		int slot = (int)(i % p->hosts_per_su);

		for (int r = 0; r < p->rails; r++)
			if ((err = add_host_ca(&g, r, i, r,
					       leaf[r * p->sus + s], slot + 1)))
				goto out;
		if ((err = add_host_gpus(&g, i, p->gpus_per_host, p->rails)))
			goto out;
	}
	for (int r = 0; r < p->rails; r++)
		for (int s = 0; s < p->sus; s++)
			for (int k = 0; k < p->spines_per_rail; k++)
				for (int u = 0; u < up; u++) {
					int lp =
					    p->hosts_per_su + k * up + u + 1;
					int sp = s * up + u + 1;
					if ((err = link_sw(
						 &g, leaf[r * p->sus + s], lp,
						 spine[r * p->spines_per_rail +
						       k],
						 sp)))
						goto out;
				}
out:
	tp_free(leaf);
	tp_free(spine);
	return gen_finish(&g, what, err, f_p);
}

/* ---- NVL72 ---- */

void tp_gen_nvl72_defaults(tp_gen_nvl72_t *p)
{
	/* GB200 NVL72: 18 compute trays x 4 GPUs per rack */
	memset(p, 0, sizeof(*p));
	p->racks = 4;
	p->hosts_per_rack = 18;
	p->gpus_per_host = 4;
	p->leaves_per_rack = 2;
	p->spines = 4;
	p->link_gbps = 400;
	p->host_prefix = "nvl";
}

tp_err_t tp_gen_nvl72(const tp_gen_nvl72_t *p, tp_fabric_t **f_p)
{
	const char *what = "NVL72 fabric";
	long long nhosts, nleaves;
	uint32_t *leaf = NULL, *spine = NULL;
	char desc[64], host[80], dom[32];
	gen_t g;
	tp_err_t err;
	int rw, spw, down, up, sub;

	if (!p || !f_p)
		return TP_ERR_INVAL;
	if ((err = check_count(what, "--racks", p->racks, 1, MAX_COUNT)) ||
	    (err = check_count(what, "--hosts-per-rack", p->hosts_per_rack, 1,
			       1024)) ||
	    (err = check_count(what, "--gpus-per-host", p->gpus_per_host, 0,
			       MAX_GPUS)) ||
	    (err = check_count(what, "--leaves-per-rack", p->leaves_per_rack, 1,
			       1024)) ||
	    (err = check_count(what, "--spines", p->spines, 1, MAX_COUNT)) ||
	    (err = check_gbps(what, p->link_gbps)) ||
	    (err = check_prefix(what, p->host_prefix)))
		return err;
	if (p->leaves_per_rack > p->hosts_per_rack)
		return refuse("%s: --leaves-per-rack %d, at most "
			      "--hosts-per-rack (%d): a leaf without hosts",
			      what, p->leaves_per_rack, p->hosts_per_rack);
	nhosts = (long long)p->racks * p->hosts_per_rack;
	nleaves = (long long)p->racks * p->leaves_per_rack;
	down =
	    (p->hosts_per_rack + p->leaves_per_rack - 1) / p->leaves_per_rack;
	up = (down + p->spines - 1) / p->spines;
	if ((err = check_total(what, "hosts", nhosts, MAX_HOSTS,
			       "fewer --racks or --hosts-per-rack")) ||
	    (err = check_total(what, "leaves", nleaves, MAX_COUNT,
			       "fewer --racks or --leaves-per-rack")) ||
	    (err = check_total(what, "up-links", nleaves * p->spines * up,
			       MAX_LINKS,
			       "fewer --racks, --leaves-per-rack or --spines")))
		return err;
	/* down <= 1024 hosts and spines x up < down + spines: only
	 * --spines makes a leaf too wide */
	if (down + (long long)p->spines * up > TP__PORTS_MAX)
		return refuse("%s: a leaf needs %lld ports (%d hosts, %d "
			      "spines x %d up-link%s), at most %d: fewer "
			      "--spines",
			      what, down + (long long)p->spines * up, down,
			      p->spines, up, up == 1 ? "" : "s", TP__PORTS_MAX);
	if (nleaves * up > TP__PORTS_MAX)
		return refuse("%s: a spine needs %lld ports (%lld leaves x %d "
			      "up-link%s), at most %d: fewer --racks or "
			      "--leaves-per-rack, or more --spines",
			      what, nleaves * up, nleaves, up,
			      up == 1 ? "" : "s", TP__PORTS_MAX);
	if ((err = gen_start(&g, p->host_prefix, nhosts, p->link_gbps)))
		return err;
	leaf = tp_malloc((size_t)nleaves * sizeof(uint32_t));
	spine = tp_malloc((size_t)p->spines * sizeof(uint32_t));
	if (!leaf || !spine) {
		err = TP_ERR_NOMEM;
		goto out;
	}
	sub = tp__fabric_new_subnet(g.f);
	rw = name_width(p->racks, 2);
	spw = name_width(p->spines, 2);
	for (int r = 0; r < p->racks; r++)
		for (int l = 0; l < p->leaves_per_rack; l++) {
			fmt(desc, sizeof(desc), "rack%0*d-leaf%d", rw, r + 1,
			    l + 1);
			if ((err = add_switch(
				 &g, sub, desc, down + p->spines * up,
				 &leaf[r * p->leaves_per_rack + l])))
				goto out;
		}
	for (int s = 0; s < p->spines; s++) {
		fmt(desc, sizeof(desc), "spine%0*d", spw, s + 1);
		if ((err = add_switch(&g, sub, desc, (int)nleaves * up,
				      &spine[s])))
			goto out;
	}
	for (long long i = 0; i < nhosts; i++) {
		int r = (int)(i / p->hosts_per_rack);
		int j = (int)(i % p->hosts_per_rack);
		/* contiguous trays share a leaf, as cabled in the rack */
		int l = j * p->leaves_per_rack / p->hosts_per_rack;
		int first = (l * p->hosts_per_rack + p->leaves_per_rack - 1) /
			    p->leaves_per_rack;

		if ((err = add_host_ca(&g, sub, i, 0,
				       leaf[r * p->leaves_per_rack + l],
				       j - first + 1)) ||
		    (err = add_host_gpus(&g, i, p->gpus_per_host, 1)))
			goto out;
		host_name(&g, i, host, sizeof(host));
		fmt(dom, sizeof(dom), "rack%0*d", rw, r + 1);
		if ((err = tp__fabric_domain_add(g.f, dom, host)))
			goto out;
	}
	for (long long l = 0; l < nleaves; l++)
		for (int s = 0; s < p->spines; s++)
			for (int u = 0; u < up; u++) {
				int lp = down + s * up + u + 1;
				int sp = (int)l * up + u + 1;
				if ((err = link_sw(&g, leaf[l], lp, spine[s],
						   sp)))
					goto out;
			}
out:
	tp_free(leaf);
	tp_free(spine);
	return gen_finish(&g, what, err, f_p);
}
