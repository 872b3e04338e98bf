/* step_gpus.c - which HCA a task drives when its GPU is not the one the
 * plan gave its local rank.
 *
 * Notes: a plan's local rank l drives GPU l and that GPU's nearest HCA
 * (tp_host_rank_ca). A step given other GPUs of a node (a node shared
 * with another job, --gpus-per-task) runs its task l on the step's l-th
 * GPU, whose nearest HCA may be another: without this the two jobs'
 * ranks would share the first HCAs and leave the others idle. The
 * schedule stays the plan's (every node builds the same plan and knows
 * only its own GPUs); what changes is the HCA a rank's sockets leave by
 * (libtopoplace-coll's TOPOPLACE_COLL_HCA). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "runtime_int.h"

struct tp_step_gpus {
	char **gpu_hca; /* [GPU index]: its nearest HCA, or NULL */
	size_t ngpu;
	char **rank_hca; /* [local rank]: the plan's, or NULL */
	size_t nrank;
};

void tp_step_gpus_destroy(tp_step_gpus_t *g)
{
	if (!g)
		return;
	tp_names_free(g->gpu_hca, g->ngpu);
	tp_names_free(g->rank_hca, g->nrank);
	tp_free(g);
}

/* A copy of s, or NULL for NULL; false on NOMEM. */
static bool dup_or_null(const char *s, char **out)
{
	*out = s ? tp_strdup(s) : NULL;
	return !s || *out;
}

/* Whether the plan names dev for host ph (tp__plan_host_hca: a rank's
 * HCA or one of its HCAs). */
static bool plan_names(const tp_plan_t *plan, const tp_plan_host_t *ph,
		       const char *dev)
{
	const char *o;
	int nrails = tp_plan_nrails(plan);

	for (size_t i = 0; i < tp__plan_host_nhca(ph, nrails); i++)
		if ((o = tp__plan_host_hca(ph, nrails, i)) && !strcmp(o, dev))
			return true;
	return false;
}

tp_err_t tp_step_gpus_create(const tp_fabric_t *f, const tp_plan_t *plan,
			     const char *host, tp_step_gpus_t **g_p)
{
	uint32_t hi, node;
	const tp_host_t *h;
	const tp_plan_host_t *ph;
	tp_step_gpus_t *g;

	if (!f || !plan || !host || !g_p)
		return TP_ERR_INVAL;
	if ((hi = tp_fabric_host_find(f, host)) == TP_ID_NONE ||
	    (node = tp_plan_rank_of(plan, host)) == TP_PLAN_NONE)
		return TP_ERR_NOTFOUND;
	h = tp_fabric_host(f, hi);
	ph = tp_plan_host(plan, node);
	if (!(g = tp_calloc(1, sizeof(*g))))
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < h->ngpus; i++)
		if (h->gpus[i].index >= 0 &&
		    (size_t)h->gpus[i].index >= g->ngpu)
			g->ngpu = (size_t)h->gpus[i].index + 1;
	/* more GPU indices than a host can have are not an index */
	if (g->ngpu > TP_STEP_GPUS_MAX)
		g->ngpu = TP_STEP_GPUS_MAX;
	g->nrank = ph->nranks;
	if ((g->ngpu && !(g->gpu_hca = tp_calloc(g->ngpu, sizeof(char *)))) ||
	    (g->nrank && !(g->rank_hca = tp_calloc(g->nrank, sizeof(char *)))))
		goto nomem;
	for (size_t i = 0; i < h->ngpus; i++) {
		const tp_gpu_t *gp = &h->gpus[i];
		const char *dev;
		if (gp->index < 0 || (size_t)gp->index >= g->ngpu ||
		    gp->hca < 0 || (size_t)gp->hca >= h->ncas)
			continue;
		/* only a name the step's variables carry and map to the
		 * node's own (TOPOPLACE_COLL_HCA_NAMES: the plan's names of
		 * the host) */
		dev = tp_fabric_ca(f, h->cas[gp->hca])->dev;
		if (!tp_hca_name_ok(dev) || !plan_names(plan, ph, dev))
			continue;
		tp_free(g->gpu_hca[gp->index]); /* an index given twice */
		if (!dup_or_null(dev, &g->gpu_hca[gp->index]))
			goto nomem;
	}
	for (size_t l = 0; l < g->nrank; l++)
		if (!dup_or_null(ph->ranks[l].hca, &g->rank_hca[l]))
			goto nomem;
	*g_p = g;
	return TP_OK;
nomem:
	tp_step_gpus_destroy(g);
	return TP_ERR_NOMEM;
}

/* "4,5,6" into gpus[0..*n_p) (at most max); false when malformed: an
 * empty item, a sign, white space, anything but digits and commas, or a
 * value of TP_STEP_GPUS_MAX or more. */
static bool parse_list(const char *s, int *gpus, size_t max, size_t *n_p)
{
	size_t n = 0;

	for (const char *p = s;;) {
		long v = 0;
		const char *q = p;
		while (*q >= '0' && *q <= '9' && v < TP_STEP_GPUS_MAX)
			v = v * 10 + (*q++ - '0');
		if (q == p || v >= TP_STEP_GPUS_MAX || (*q && *q != ',') ||
		    n == max)
			return false;
		gpus[n++] = (int)v;
		if (!*q)
			break;
		p = q + 1;
	}
	*n_p = n;
	return true;
}

const char *tp_step_gpus_hca(const tp_step_gpus_t *g, uint32_t local,
			     const char *step_gpus, const char *task_gpus)
{
	int gpus[TP_STEP_GPUS_MAX];
	size_t n;
	int gpu;

	if (!g || !task_gpus || !*task_gpus ||
	    !parse_list(task_gpus, gpus, TP_STEP_GPUS_MAX, &n))
		return NULL;
	/* the task's own GPUs (Slurm bound them: not the step's list) or
	 * one GPU: the first; the step's several: the local rank's among
	 * them, as frameworks pick their device among those visible */
	if (n == 1 || (step_gpus && strcmp(step_gpus, task_gpus)))
		gpu = gpus[0];
	else
		gpu = local < n ? gpus[local] : -1;
	if (gpu < 0 || (size_t)gpu >= g->ngpu || !g->gpu_hca[gpu])
		return NULL;
	if (local < g->nrank && g->rank_hca[local] &&
	    !strcmp(g->rank_hca[local], g->gpu_hca[gpu]))
		return NULL;
	return g->gpu_hca[gpu];
}
